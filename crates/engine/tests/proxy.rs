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
