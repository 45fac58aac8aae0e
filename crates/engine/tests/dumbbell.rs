//! End-to-end runs of the shipped dumbbell: physical invariants and determinism.

mod common;

use common::{num, run};
use serde_json::Value;

/// arrived = dropped + queued + transmitting + propagating + delivered, on every queue.
fn assert_conservation(summary: &Value) {
    for q in summary["queues"].as_array().unwrap() {
        let n = |k: &str| q[k].as_u64().unwrap();
        assert_eq!(
            n("arrived_packets"),
            n("dropped_packets")
                + n("queued_packets_at_end")
                + n("transmitting_packets_at_end")
                + n("propagating_packets_at_end")
                + n("delivered_packets"),
            "packets not conserved on {}",
            q["name"]
        );
    }
}

#[test]
fn cubic_fills_a_1_gbit_bottleneck_with_a_bdp_queue() {
    // BDP = 1 Gbit/s × 22 ms = 2.75 MB.
    let out = run("dumbbell", &["links.1.queue_bytes=2750000"]);
    let flow = &out.summary["flows"][0];
    let goodput = num(&flow["goodput_bps"]);
    assert!((0.90e9..=1.0e9).contains(&goodput), "goodput {goodput}");
    assert!(flow["delivered_bytes"].as_u64().unwrap() > 0);
    assert_conservation(&out.summary);
}

#[test]
fn goodput_never_exceeds_the_bottleneck_and_bins_add_up() {
    let out = run("dumbbell", &["duration_s=3", "links.1.rate_bps=1e8", "links.1.queue_bytes=100000"]);
    let flow = &out.summary["flows"][0];
    // Payload can never exceed the link rate times the payload share of a full packet.
    let cap = 1e8 * 1400.0 / (1400.0 + 52.0);
    assert!(num(&flow["goodput_bps"]) <= cap, "{} > {cap}", flow["goodput_bps"]);
    assert!(flow["retransmits"].as_u64().unwrap() > 0, "a 100 kB queue must overflow");
    assert_conservation(&out.summary);
    let goodput = out.tables.iter().find(|t| t.name == "goodput").unwrap();
    let bps = match &goodput.columns.iter().find(|c| c.name == "goodput_bps").unwrap().data {
        millinet_engine::ColumnData::F64(v) => v.clone(),
        _ => unreachable!(),
    };
    let bytes: f64 = bps.iter().map(|b| b * 0.01 / 8.0).sum();
    assert!((bytes - flow["delivered_bytes"].as_f64().unwrap()).abs() < 1.0);
}

/// A column of the flows table.
fn flows_column(out: &millinet_engine::RunOutput, name: &str) -> millinet_engine::ColumnData {
    let flows = out.tables.iter().find(|t| t.name == "flows").unwrap();
    flows.columns.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no column {name}")).data.clone()
}

#[test]
fn the_flows_table_has_the_kernels_min_rtt_delivery_rate_and_retransmits() {
    // 100 Mbit/s behind 10 and 1 ms: a round trip is at least 22 ms of propagation; no
    // delivery-rate sample exceeds the bottleneck; retransmissions only accumulate.
    let out = run("dumbbell", &["duration_s=3", "links.1.rate_bps=1e8", "links.1.queue_bytes=100000"]);
    let millinet_engine::ColumnData::F64(min_rtt_ms) = flows_column(&out, "min_rtt_ms") else { panic!("min_rtt_ms is f64") };
    let millinet_engine::ColumnData::F64(rate_bps) = flows_column(&out, "delivery_rate_bps") else { panic!("f64") };
    let millinet_engine::ColumnData::U64(retransmits) = flows_column(&out, "retransmits") else { panic!("u64") };
    assert!(min_rtt_ms[0].is_nan(), "no RTT sample before the connection exists");
    let sampled: Vec<f64> = min_rtt_ms.iter().copied().filter(|v| !v.is_nan()).collect();
    assert!(sampled.iter().all(|&ms| ms >= 22.0) && sampled.windows(2).all(|w| w[1] <= w[0]), "min RTT {sampled:?}");
    assert!(rate_bps.iter().all(|&bps| bps <= 1e8 * 1.001) && rate_bps.iter().any(|&bps| bps > 0.8e8), "delivery rate");
    assert!(retransmits.windows(2).all(|w| w[1] >= w[0]));
    assert_eq!(*retransmits.last().unwrap(), out.summary["flows"][0]["retransmits"].as_u64().unwrap());
}

#[test]
fn newreno_and_switching_bottleneck_deliver_in_order() {
    // The engine asserts in-order, exactly-once delivery on every delivery.
    for cc in ["newreno", "cubic"] {
        let out = run("dumbbell-switching", &["duration_s=4", &format!("flows.0.cc={cc}"), "links.1.queue_bytes=300000"]);
        assert!(out.summary["flows"][0]["delivered_bytes"].as_u64().unwrap() > 10_000_000, "{cc}");
        assert_conservation(&out.summary);
    }
}

#[test]
fn file_download_completes_with_a_download_time() {
    let out = run("dumbbell", &["duration_s=2", "flows.0.app=file", "flows.0.file_bytes=10000000"]);
    let flow = &out.summary["flows"][0];
    assert_eq!(flow["delivered_bytes"].as_u64(), Some(10_000_000));
    let d = num(&flow["download_time_s"]);
    // At least 80 ms (10 MB at 1 Gbit/s) plus the handshake; slow start takes longer.
    assert!(d > 0.08 + 0.044 && d < 2.0, "download time {d}");
}

#[test]
fn repeated_downloads_report_each_download_time() {
    let sizes_bytes = [2_000_000u64, 5_000_000, 1_000_000];
    let out = run("dumbbell", &["duration_s=2", "flows.0.app=repeated", "flows.0.sizes_bytes=[2000000, 5000000, 1000000]"]);
    let flow = &out.summary["flows"][0];
    assert_eq!(flow["delivered_bytes"].as_u64(), Some(sizes_bytes.iter().sum()));
    let times_s: Vec<f64> = flow["download_times_s"].as_array().expect("per-download times").iter().map(num).collect();
    assert_eq!(times_s.len(), sizes_bytes.len());
    for (&size, &t) in sizes_bytes.iter().zip(&times_s) {
        // Never faster than the 1 Gbit/s bottleneck plus the 11 ms one-way path delay.
        assert!(t > size as f64 * 8.0 / 1e9 + 0.011, "{size} bytes in {t} s");
    }
    // The first download includes the handshake: the later ones start on a warm connection
    // and, per byte, are faster.
    assert!(times_s[1] / 5.0 < times_s[0] / 2.0, "{times_s:?}");
    // Downloads follow each other from the connection start: their times add up to the total.
    let total_s = num(&flow["download_time_s"]);
    assert!((times_s.iter().sum::<f64>() - total_s).abs() < 1e-6, "{times_s:?} vs {total_s}");
}

#[test]
fn only_repeated_downloads_list_download_times() {
    let out = run("dumbbell", &["duration_s=1", "flows.0.app=file", "flows.0.file_bytes=1000000"]);
    assert!(out.summary["flows"][0].get("download_times_s").is_none());
}

#[test]
fn application_limited_flow_reports_app_limitation() {
    let out = run("dumbbell", &["duration_s=2", "flows.0.app=rate", "flows.0.app_rate_bps=1e8"]);
    let flow = &out.summary["flows"][0];
    let goodput = num(&flow["goodput_bps"]);
    assert!((0.9e8..=1.0e8).contains(&goodput), "goodput {goodput}");
    assert!(num(&flow["limited_by"]["app"]) > 0.8, "{}", flow["limited_by"]);
}

#[test]
fn same_seed_same_outputs() {
    let a = run("dumbbell", &["duration_s=1", "links.1.queue_bytes=500000"]);
    let b = run("dumbbell", &["duration_s=1", "links.1.queue_bytes=500000"]);
    let strip = |v: &Value| {
        let mut v = v.clone();
        v["sim"].as_object_mut().unwrap().remove("wall_s");
        v["sim"].as_object_mut().unwrap().remove("events_per_s");
        v
    };
    assert_eq!(strip(&a.summary), strip(&b.summary));
    // Bit for bit: a NaN (no sample yet) equals itself.
    let bits = |out: &millinet_engine::RunOutput| -> Vec<(&str, &str, Vec<u64>)> {
        let column = |data: &millinet_engine::ColumnData| match data {
            millinet_engine::ColumnData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            millinet_engine::ColumnData::U32(v) => v.iter().map(|&x| u64::from(x)).collect(),
            millinet_engine::ColumnData::U64(v) => v.clone(),
        };
        out.tables.iter().flat_map(|t| t.columns.iter().map(move |c| (t.name, c.name, column(&c.data)))).collect()
    };
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.resolved_toml, b.resolved_toml);
}

#[test]
fn saturating_udp_gets_the_bottleneck_rate_and_never_more() {
    let out = run("dumbbell", &["duration_s=2", "flows.0.kind=udp", "flows.0.udp_rate_bps=2e9", "links.1.queue_bytes=1000000"]);
    let flow = &out.summary["flows"][0];
    // Payload share of a 1428-byte datagram at 1 Gbit/s; the first packet arrives after 11 ms.
    let cap = 1e9 * 1400.0 / 1428.0;
    let goodput = num(&flow["goodput_bps"]);
    assert!(goodput <= cap && goodput > 0.98 * cap, "goodput {goodput} vs {cap}");
    assert!(flow["lost_packets"].as_u64().unwrap() > 0);
    assert_conservation(&out.summary);
}

/// Mean of the `queues` series of queue `id` from `from_s` on.
fn mean_queue_bytes(out: &millinet_engine::RunOutput, id: u32, from_s: f64) -> f64 {
    let table = out.tables.iter().find(|t| t.name == "queues").unwrap();
    let column = |name: &str| &table.columns.iter().find(|c| c.name == name).unwrap().data;
    let (millinet_engine::ColumnData::F64(t), millinet_engine::ColumnData::U32(queue), millinet_engine::ColumnData::U64(bytes)) =
        (column("t"), column("queue"), column("bytes"))
    else {
        unreachable!()
    };
    let kept: Vec<f64> = (0..t.len()).filter(|&i| queue[i] == id && t[i] >= from_s).map(|i| bytes[i] as f64).collect();
    kept.iter().sum::<f64>() / kept.len() as f64
}

#[test]
fn codel_holds_the_standing_queue_near_its_target_where_drop_tail_bloats() {
    // 10 MB at 1 Gbit/s is 80 ms of buffer. After slow start, drop-tail keeps most of it
    // full; CoDel (RFC 8289, target 5 ms = 625 kB here) keeps the standing queue below about
    // its target, by dropping at dequeue, without losing goodput.
    let args = ["duration_s=4", "links.1.queue_bytes=10000000"];
    let droptail = run("dumbbell", &args);
    let codel = run("dumbbell", &[args[0], args[1], "links.1.aqm=codel"]);
    let bottleneck = 2; // router->client
    assert_eq!(codel.summary["queues"][bottleneck]["name"], "router->client");
    let (q_droptail, q_codel) = (mean_queue_bytes(&droptail, bottleneck as u32, 2.0), mean_queue_bytes(&codel, bottleneck as u32, 2.0));
    assert!(q_droptail > 5e6, "drop-tail standing queue {q_droptail}");
    assert!(q_codel < 0.8e6, "CoDel standing queue {q_codel}");
    assert!(codel.summary["queues"][bottleneck]["aqm_dropped_packets"].as_u64().unwrap() > 0);
    let (goodput_codel, goodput_droptail) =
        (num(&codel.summary["flows"][0]["goodput_bps"]), num(&droptail.summary["flows"][0]["goodput_bps"]));
    assert!(goodput_codel > 0.9 * goodput_droptail, "CoDel {goodput_codel} against drop-tail {goodput_droptail} bit/s");
    assert_conservation(&codel.summary);
}
