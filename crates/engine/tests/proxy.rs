//! milliProxy in the simulated path: it must cut the RLC bufferbloat of the
//! same run (same seed, same channel) without breaking the byte stream.

mod common;

use common::{num, run, scenario};
use millinet_engine::{run_file, RunOptions, RunOutput};

#[test]
fn milliproxy_at_the_gnb_cuts_ran_latency_on_the_same_channel() {
    let base = ["duration_s=5"];
    let without = run("milliproxy", &base);
    let with = run("milliproxy", &[&base[..], &["proxy.node=gnb"]].concat());
    let lat = |o: &RunOutput, k: &str| num(&o.summary["ues"][0]["ran_latency_ms"][k]);
    assert!(lat(&with, "p99") < 0.5 * lat(&without, "p99"), "p99 {} vs {}", lat(&with, "p99"), lat(&without, "p99"));
    assert!(lat(&with, "mean") < lat(&without, "mean"));
    // Same channel realisation: the proxy changes the traffic, never the radio.
    assert_eq!(with.summary["ues"][0]["los_fraction"], without.summary["ues"][0]["los_fraction"]);
    let proxy = &with.summary["proxy"];
    assert_eq!(proxy["flows_created"].as_u64(), Some(1));
    assert!(proxy["acks_relayed"].as_u64().unwrap() > 1000);
    // The engine asserts in-order, exactly-once delivery; the stream must flow.
    assert!(with.summary["flows"][0]["delivered_bytes"].as_u64().unwrap() > 100_000_000);
    assert!(with.tables.iter().any(|t| t.name == "proxy"));
}

#[test]
fn a_flow_on_an_unhandled_port_passes_through_untouched() {
    let out = run("milliproxy", &["duration_s=1", "proxy.node=gnb", "proxy.server_ports=[80]"]);
    let proxy = &out.summary["proxy"];
    assert_eq!(proxy["flows_created"].as_u64(), Some(0));
    assert!(proxy["packets_passed_through"].as_u64().unwrap() > 1000);
    assert!(out.summary["flows"][0]["delivered_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn bad_proxy_settings_are_named() {
    let opts = RunOptions { overrides: vec!["proxy.node=gnb".into(), "proxy.policy=magic".into()], ..RunOptions::default() };
    let err = run_file(&scenario("milliproxy"), &opts, &mut |_, _| {}).err().unwrap().to_string();
    assert!(err.contains("proxy.policy") && err.contains("magic") && err.contains("bdp"), "{err}");
}

#[test]
fn split_tcp_at_the_edge_acknowledges_early_and_hides_the_radio_from_the_server() {
    let base = ["duration_s=3"];
    let without = run("milliproxy", &base);
    let split = run("milliproxy", &[&base[..], &["proxy.node=pgw", "proxy.kind=split"]].concat());
    let proxy = &split.summary["proxy"];
    assert_eq!(proxy["kind"].as_str(), Some("split"));
    assert_eq!(proxy["flows_created"].as_u64(), Some(1));
    // Early ACKs: nearly every delivered byte was acknowledged before the UE had it.
    let delivered = split.summary["flows"][0]["delivered_bytes"].as_u64().unwrap();
    assert!(delivered > 100_000_000);
    assert!(proxy["bytes_acked_early"].as_u64().unwrap() > delivered / 2, "{proxy}");
    // The server only sees the wired path (2 × 10 ms + serialization), not the RLC queue.
    let rtt = |o: &RunOutput| num(&o.summary["flows"][0]["rtt_ms"]["p95"]);
    assert!(rtt(&split) < 22.0 && rtt(&split) < rtt(&without), "server RTT p95 {} vs {}", rtt(&split), rtt(&without));
    // Its own packets toward the UE still count as the flow's: RAN latency per flow.
    assert!(num(&split.summary["flows"][0]["ran_latency_ms"]["mean"]) > 0.0);
    let buffered = split.tables.iter().find(|t| t.name == "proxy").expect("proxy table");
    assert!(buffered.columns.iter().any(|c| c.name == "buffered_bytes"));
}

#[test]
fn bad_split_settings_are_named() {
    for (set, key, allowed) in [("proxy.kind=splice", "kind", "split"), ("proxy.split_cc=vegas", "proxy.split_cc", "cubic")] {
        let opts = RunOptions { overrides: vec!["proxy.node=pgw".into(), set.into()], ..RunOptions::default() };
        let err = run_file(&scenario("milliproxy"), &opts, &mut |_, _| {}).err().unwrap().to_string();
        assert!(err.contains(key) && err.contains(allowed), "{set}: {err}");
    }
}

/// Mean of `column` over the rows of `table` with t ≥ `from_s`.
fn mean_after(out: &RunOutput, table: &str, column: &str, from_s: f64) -> f64 {
    use millinet_engine::output::ColumnData;
    let t = out.tables.iter().find(|t| t.name == table).unwrap();
    let col = |name: &str| &t.columns.iter().find(|c| c.name == name).unwrap().data;
    let (ColumnData::F64(time), ColumnData::U64(values)) = (col("t"), col(column)) else { panic!("column types") };
    let picked: Vec<f64> = time.iter().zip(values).filter(|(&t, _)| t >= from_s).map(|(_, &v)| v as f64).collect();
    picked.iter().sum::<f64>() / picked.len() as f64
}

#[test]
fn after_a_capacity_step_from_3_gbit_to_300_mbit_the_proxy_keeps_the_rlc_lower() {
    let trace = format!("ues.0.trace=\"{}/tests/data/capacity-step.csv\"", env!("CARGO_MANIFEST_DIR"));
    let base = ["duration_s=4", "flows.0.cc=\"newreno\"", "links.0.delay_s=0.010", &trace];
    let without = run("e2e-trace", &base);
    let with = run("e2e-trace", &[&base[..], &["proxy.node=gnb"]].concat());
    let rlc = |o: &RunOutput| mean_after(o, "ues", "rlc_bytes", 2.0);
    assert!(rlc(&with) < 0.5 * rlc(&without), "RLC after the step: {} B with the proxy vs {} B without", rlc(&with), rlc(&without));
    // Both still use the reduced capacity.
    let goodput = |o: &RunOutput| num(&o.summary["flows"][0]["goodput_bps"]);
    assert!(goodput(&with) > 0.3 * goodput(&without), "{} vs {}", goodput(&with), goodput(&without));
}
