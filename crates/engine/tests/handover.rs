//! Several cells (docs/models/ran.md#handover-and-dual-connectivity, issue 13): handover by the A3 rule along a road of evenly spaced
//! gNBs, lossless forwarding at the handover and at dual-connectivity bearer switches, the
//! LTE cell against its link abstraction, UDP as the upper bound of TCP, determinism.

mod common;

use std::path::Path;

use common::num;
use millinet_engine::output::ColumnData;
use millinet_engine::{run_file, RunOptions, RunOutput};
use serde_json::Value;

fn run_path(path: &Path, overrides: &[&str]) -> RunOutput {
    let opts = RunOptions { overrides: overrides.iter().map(|s| s.to_string()).collect(), ..RunOptions::default() };
    run_file(path, &opts, &mut |_, _| {}).unwrap()
}

fn corridor(overrides: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corridor.toml");
    run_path(&path, overrides).summary
}

fn mobility(summary: &Value) -> Vec<(f64, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap().to_string();
    summary["mobility"].as_array().unwrap().iter().map(|m| (num(&m["t_s"]), s(&m["kind"]), s(&m["from"]), s(&m["to"]))).collect()
}

#[test]
fn a_ue_driving_past_evenly_spaced_gnbs_hands_over_to_each_in_sequence_after_the_time_to_trigger() {
    let events = mobility(&corridor(&[]));
    let cells: Vec<(&str, &str)> = events.iter().map(|(_, _, from, to)| (from.as_str(), to.as_str())).collect();
    assert_eq!(cells, [("gnb1", "gnb2"), ("gnb2", "gnb3"), ("gnb3", "gnb4")], "{events:?}");
    // The UE passes each midpoint at 5, 15, 25 s, where both cells measure alike. The target
    // is 3 dB better once the path-loss ratio 21·log10(d_serving/d_target) reaches 3 dB (some
    // 16 m, 0.8 s, past the midpoint), and the handover follows 40 ms later.
    for ((t, kind, _, _), midpoint_s) in events.iter().zip([5.0, 15.0, 25.0]) {
        assert_eq!(kind, "handover");
        assert!(*t > midpoint_s + 0.5 && *t < midpoint_s + 1.2, "handover at {t} s, midpoint at {midpoint_s} s");
    }
    // A longer time-to-trigger delays each handover by the difference, to the millisecond.
    let later = mobility(&corridor(&["handover.time_to_trigger_s=0.3"]));
    for (a, b) in events.iter().zip(&later) {
        assert!((b.0 - a.0 - 0.26).abs() < 1.5e-3, "TTT 40 ms: {} s, 300 ms: {} s", a.0, b.0);
    }
    // A 10 dB hysteresis needs the distance ratio 10^(10/21) ≈ 3: some 50 m past the
    // midpoint instead of 16 m, each handover 1.5 s or more later, same sequence.
    let wider = mobility(&corridor(&["handover.hysteresis_db=10"]));
    assert_eq!(wider.len(), 3, "{wider:?}");
    for (a, b) in events.iter().zip(&wider) {
        assert!(b.0 - a.0 > 1.5 && b.0 - a.0 < 2.5, "3 dB: {} s, 10 dB: {} s", a.0, b.0);
    }
    assert!(mobility(&corridor(&["handover.enabled=false"])).is_empty());
}

/// A TCP download whose window (2 MB) stays below every buffer on the way, so that a single
/// lost packet, or packets delivered out of order (which SACK takes for losses), would show as
/// a retransmission.
const NO_OVERFLOW: [&str; 2] = ["flows.0.rcv_buf_bytes=2000000", "flows.0.cc=cubic"];

fn assert_lossless(summary: &Value, what: &str) {
    let flow = &summary["flows"][0];
    assert_eq!(num(&flow["retransmits"]), 0.0, "{what}: a packet was lost: {flow}");
    assert_eq!(num(&flow["rtos"]), 0.0, "{what}: {flow}");
    let dl = &summary["ues"][0]["downlink"];
    assert_eq!(num(&dl["drops_overflow"]), 0.0, "{what}: {dl}");
    for q in summary["queues"].as_array().unwrap() {
        assert_eq!(num(&q["dropped_packets"]), 0.0, "{what}: {q}");
    }
}

#[test]
fn a_hard_handover_loses_nothing_from_the_core_or_the_source_cell() {
    let mut overrides = vec!["duration_s=22"];
    overrides.extend(NO_OVERFLOW);
    let summary = common::run("handover", &overrides).summary;
    let events = summary["mobility"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_lossless(&summary, "handover");
    // Packets still on their way to the source cell at the route switch cross the X2 link.
    let x2 = summary["queues"].as_array().unwrap().iter().find(|q| q["name"] == "x2 gnb1->gnb2").expect("an X2 link");
    assert!(num(&x2["delivered_packets"]) > 0.0, "{x2}");
    assert!(num(&summary["flows"][0]["goodput_bps"]) > 300e6);
}

#[test]
fn bearer_switches_to_the_lte_anchor_and_back_lose_nothing() {
    let mut overrides = vec!["duration_s=38"];
    overrides.extend(NO_OVERFLOW);
    let summary = common::run("train", &overrides).summary;
    let kinds: Vec<String> = mobility(&summary).into_iter().map(|e| e.1).collect();
    assert!(kinds.iter().any(|k| k == "switch_to_anchor"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "switch_from_anchor"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "handover"), "{kinds:?}");
    // Every switch to the anchor is followed by one back (or the run ends on LTE).
    let mut on_anchor = false;
    for k in &kinds {
        match k.as_str() {
            "switch_to_anchor" => assert!(!std::mem::replace(&mut on_anchor, true), "{kinds:?}"),
            "switch_from_anchor" => assert!(std::mem::replace(&mut on_anchor, false), "{kinds:?}"),
            _ => assert!(!on_anchor, "a mmWave handover while the bearer is on LTE: {kinds:?}"),
        }
    }
    assert_lossless(&summary, "train");
}

#[test]
fn a_saturated_lte_cell_delivers_its_link_abstraction_rate() {
    // One static UE 200 m from one eNB, no shadowing: a constant SINR, and a UDP source far
    // above the cell's rate. Goodput is the abstraction's rate R(SINR) less the IP/UDP headers.
    let summary = common::run(
        "train-lte",
        &[
            "duration_s=5",
            "handover.enabled=false",
            "ues.0.route_m=[[200.0, 0.0]]",
            "ues.0.speed_mps=0",
            "ues.0.shadowing=false",
            "ues.0.fading=false",
            "cells.0.harq=\"ideal\"",
            "flows.0.kind=udp",
            "flows.0.udp_rate_bps=400e6",
            "ues.0.rlc_buffer_bytes=1000000",
        ],
    )
    .summary;
    let rate_bps = num(&summary["ues"][0]["mean_rate_bps"]);
    assert!(rate_bps > 100e6 && rate_bps < 300e6, "an LTE rate: {rate_bps}");
    let payload_share = 1400.0 / (1400.0 + 28.0);
    let goodput_bps = num(&summary["flows"][0]["goodput_bps"]);
    let expected = rate_bps * payload_share;
    assert!((goodput_bps / expected - 1.0).abs() < 0.05, "goodput {goodput_bps}, abstraction {expected}");
}

#[test]
fn the_udp_reference_is_not_below_the_best_tcp_by_more_than_headers() {
    let base = ["duration_s=20"];
    let goodput = |extra: &[&str]| {
        let overrides: Vec<&str> = base.iter().chain(extra).copied().collect();
        num(&common::run("train-lte", &overrides).summary["flows"][0]["goodput_bps"])
    };
    let udp = goodput(&["flows.0.kind=udp", "flows.0.udp_rate_bps=400e6"]);
    let best_tcp = ["newreno", "cubic", "highspeed", "bbr"].iter().map(|cc| goodput(&[&format!("flows.0.cc={cc}")])).fold(0.0, f64::max);
    // Per 1400 payload bytes TCP carries 52 header bytes (with timestamps), UDP 28.
    assert!(udp >= best_tcp * (1.0 - 52.0 / 1452.0), "UDP {udp}, best TCP {best_tcp}");
    assert!(best_tcp > 0.5 * udp, "TCP works at all on LTE: {best_tcp} vs {udp}");
}

#[test]
fn a_run_with_handovers_and_bearer_switches_is_deterministic() {
    let overrides = ["duration_s=37", "flows.0.kind=udp", "flows.0.udp_rate_bps=500e6"];
    let a = common::run("train", &overrides);
    let b = common::run("train", &overrides);
    let strip = |mut s: Value| {
        s.as_object_mut().unwrap().remove("sim");
        s
    };
    assert!(a.summary["mobility"].as_array().unwrap().len() >= 3);
    assert_eq!(strip(a.summary), strip(b.summary));
    // Debug text: NaN (a sample step without deliveries) equals itself there.
    assert_eq!(format!("{:?}", a.tables), format!("{:?}", b.tables));
}

#[test]
fn a_device_with_two_radios_has_an_address_and_a_bearer_on_each() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two-radios.toml");
    let summary = run_path(&path, &[]).summary;
    let (flows, ues) = (&summary["flows"], &summary["ues"]);
    let (mmwave, lte) = (num(&flows[0]["goodput_bps"]), num(&flows[1]["goodput_bps"]));
    assert!(mmwave > 1e9, "flow 0 over the 28 GHz radio: {mmwave}");
    assert!(lte > 50e6 && lte < 150e6, "flow 1 over the LTE radio: {lte}");
    // Each radio's bearer carried its own flow's data, and its ACKs: the device sends what
    // leaves from an address over that address's radio.
    assert_eq!(num(&ues[0]["goodput_bps"]), mmwave);
    assert_eq!(num(&ues[1]["goodput_bps"]), lte);
    let delivered = |k: usize, dir: &str| num(&ues[k][dir]["bytes_delivered"]);
    assert!(delivered(1, "downlink") > 0.9 * lte * 3.0 / 8.0 && delivered(1, "downlink") < 1.2 * lte * 3.0 / 8.0);
    assert!(delivered(1, "uplink") > 0.0, "flow 1's ACKs crossed the LTE uplink");
    // Two radios of different carriers hear no common cell: nothing is handed over.
    assert!(summary["mobility"].as_array().unwrap().is_empty());
    // The LTE flow's RTT carries LTE's slower RAN (1 ms TTI, 8 ms HARQ), the other not.
    assert!(num(&flows[1]["rtt_ms"]["p50"]) > num(&flows[0]["rtt_ms"]["p50"]));
}

#[test]
fn an_mptcp_flow_runs_a_subflow_over_each_radio_of_the_device() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two-radios.toml");
    // Flow 1 (plain TCP over LTE) starts at the end: flow 0 has the device to itself.
    let run = run_path(&path, &["flows.0.kind=mptcp", "flows.1.start_s=3.0"]);
    let mptcp = run.summary;
    let single = run_path(&path, &["flows.1.start_s=3.0"]).summary;
    let flow = &mptcp["flows"][0];
    assert_eq!(flow["kind"], "mptcp");
    let subflows = flow["mptcp"]["subflows"].as_array().unwrap();
    assert_eq!(subflows.len(), 2, "{flow}");
    assert!(subflows.iter().all(|s| num(&s["sent_bytes"]) > 0.0), "both paths carry data: {subflows:?}");
    // Each subflow names its path: the radio at its far end and that radio's cell.
    let mut paths: Vec<_> = subflows.iter().map(|s| (s["ue"].as_u64().unwrap(), s["cell"].as_str().unwrap())).collect();
    paths.sort();
    assert_eq!(paths, [(0, "gnb"), (1, "enb")]);
    // A subflow's peer acknowledges no more than it was sent; together they acknowledged what
    // the application received, less what was in flight at the end (under 1 % here).
    assert!(subflows.iter().all(|s| num(&s["acked_bytes"]) <= num(&s["sent_bytes"])), "{subflows:?}");
    let acked: f64 = subflows.iter().map(|s| num(&s["acked_bytes"])).sum();
    let delivered = num(&flow["delivered_bytes"]);
    assert!((acked / delivered - 1.0).abs() < 0.01, "{acked} acked, {delivered} delivered");
    // The flows table has a row per subflow and sample; the mptcp table the data level's.
    let column = |table: &str, name: &str| {
        let t = run.tables.iter().find(|t| t.name == table).unwrap_or_else(|| panic!("no {table} table"));
        t.columns.iter().find(|c| c.name == name).unwrap().data.clone()
    };
    let (ColumnData::U32(flow_ids), ColumnData::U32(subflow_ids)) = (column("flows", "flow"), column("flows", "subflow")) else { panic!() };
    let rows = |sub: u32| flow_ids.iter().zip(&subflow_ids).filter(|&(&f, &s)| f == 0 && s == sub).count();
    let ColumnData::F64(mptcp_t) = column("mptcp", "t") else { panic!() };
    // 3 s sampled every 1 ms; the joined subflow starts an RTT or so after the first.
    assert!(rows(0) > 2900 && rows(1) > 2900 && rows(1) < rows(0), "{} and {} rows", rows(0), rows(1));
    assert!(mptcp_t.len() > rows(0), "one data-level row per sample, from before the first subflow");
    let ColumnData::U64(reorder) = column("mptcp", "reorder_bytes") else { panic!() };
    let max = reorder.iter().max().copied().unwrap();
    // The summary's maximum is over the whole run, the table's over the samples.
    assert!(num(&flow["mptcp"]["reorder_buffer_bytes"]["max"]) >= max as f64);
    assert!(max > 0, "paths of different delays make the receiver reorder");
    // Every data-level byte reached the application once and in order (the engine asserts the
    // order on delivery); both radios' bearers delivered part of it.
    let dl = |k: usize| num(&mptcp["ues"][k]["downlink"]["bytes_delivered"]);
    assert!(dl(0) > 0.0 && dl(1) > 0.0);
    // The LTE path adds to the mmWave path rather than slowing it below single-path TCP by much.
    let (both, alone) = (num(&flow["goodput_bps"]), num(&single["flows"][0]["goodput_bps"]));
    assert!(both > 0.8 * alone, "MP-TCP {both} vs TCP over 28 GHz alone {alone}");
}
