//! End-to-end runs over the radio access network: physics and protocol
//! behaviour that the study scenarios rely on.

mod common;

use common::{num, run};
use millinet_engine::{ColumnData, RunOutput};
use serde_json::Value;

fn column<'a>(out: &'a RunOutput, table: &str, name: &str) -> &'a ColumnData {
    let t = out.tables.iter().find(|t| t.name == table).unwrap();
    &t.columns.iter().find(|c| c.name == name).unwrap().data
}

/// Static UE held in NLOS 150 m from the gNB (SINR below the spectral-efficiency
/// cap, where the BLER model bites), saturating UDP: the RAN is the bottleneck.
const SATURATED_UDP: &[&str] = &[
    "duration_s=2",
    "ues.0.forced_events=[{ start_s = 0.0, duration_s = 100.0, kind = \"nlos\" }]",
    "flows.0.kind=udp",
    "flows.0.udp_rate_bps=5e9",
];

/// Tables equal bit for bit (NaN marks "no sample" and must compare equal to itself).
fn same_tables(a: &RunOutput, b: &RunOutput) -> bool {
    let bits = |d: &ColumnData| -> Vec<u64> {
        match d {
            ColumnData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            ColumnData::U32(v) => v.iter().map(|&x| x as u64).collect(),
            ColumnData::U64(v) => v.clone(),
        }
    };
    a.tables.len() == b.tables.len()
        && a.tables.iter().zip(&b.tables).all(|(x, y)| {
            x.name == y.name && x.columns.iter().zip(&y.columns).all(|(c, d)| c.name == d.name && bits(&c.data) == bits(&d.data))
        })
}

#[test]
fn ideal_harq_delivers_the_achievable_rate_and_never_more() {
    let out = run("e2e-outage", &[SATURATED_UDP, &["cells.0.harq=ideal"]].concat());
    let ue = &out.summary["ues"][0];
    assert!(num(&ue["mean_rate_bps"]) < 2.5e9, "the test needs a rate below the 3.2 Gbit/s cap");
    let utilization = num(&ue["utilization"]);
    // UDP payload is 1400 of 1428 IP bytes (98%); the first 20 ms are the path delay.
    assert!((0.95..=1.0).contains(&utilization), "utilization {utilization}");
    assert_eq!(ue["downlink"]["harq_failures"].as_u64(), Some(0));
}

#[test]
fn with_harq_the_shortfall_matches_the_bler() {
    let out = run("e2e-outage", &[SATURATED_UDP, &["cells.0.harq=on"]].concat());
    let ue = &out.summary["ues"][0];
    let dl = &ue["downlink"];
    let failed_share = num(&dl["harq_failures"]) / num(&dl["harq_tx"]);
    // First transmissions fail with BLER 10% when the CQI is accurate (docs/models/ran.md#harq).
    assert!((0.05..0.15).contains(&failed_share), "failed share {failed_share}");
    let expected = 1400.0 / 1428.0 * (1.0 - failed_share);
    let utilization = num(&ue["utilization"]);
    assert!((utilization - expected).abs() < 0.02, "utilization {utilization}, expected {expected}");
}

#[test]
fn an_outage_longer_than_the_rto_causes_a_timeout_and_a_shorter_one_does_not() {
    // min RTO 1 s (docs/studies.md#e2e, e2e-outage). A 500 Mbit/s source and a large RLC
    // buffer keep losses away, so the outage is the only thing that can time out. The RTO
    // runs from the last ACK, or with RACK-TLP (the default) from the tail loss probe, sent
    // 2·SRTT + 2 ms after the last transmission (RFC 8985 §7.3: the RTO restarts then, as in
    // Linux): a 1.2 s outage times out without the probe and not with it.
    let quiet = ["duration_s=6", "cells.0.harq=ideal", "flows.0.app=rate", "flows.0.app_rate_bps=5e8", "ues.0.rlc_buffer_bytes=200000000"];
    let cases =
        [(0.4, "rfc6675", false), (1.2, "rfc6675", true), (0.4, "rack-tlp", false), (1.2, "rack-tlp", false), (1.8, "rack-tlp", true)];
    for (duration_s, loss_detection, expect_rto) in cases {
        let event = format!("ues.0.forced_events=[{{ start_s = 3.0, duration_s = {duration_s}, kind = \"outage\" }}]");
        let detection = format!("flows.0.loss_detection=\"{loss_detection}\"");
        let out = run("e2e-outage", &[&quiet[..], &[event.as_str(), detection.as_str()]].concat());
        let flow = &out.summary["flows"][0];
        let (rtos, probes) = (flow["rtos"].as_u64().unwrap(), flow["tail_loss_probes"].as_u64().unwrap());
        assert_eq!(rtos > 0, expect_rto, "{loss_detection}: outage {duration_s} s gave {rtos} RTOs");
        assert_eq!(probes, (loss_detection == "rack-tlp" && duration_s > 0.4) as u64, "{loss_detection}: outage {duration_s} s");
        if !expect_rto {
            // The probe is new data: no retransmission.
            assert_eq!(flow["retransmits"].as_u64(), Some(0), "the short outage must cost no retransmission");
        }
    }
}

#[test]
fn capacity_collapses_in_nlos_and_the_rlc_buffer_fills() {
    let out = run("e2e-buildings", &["duration_s=12"]);
    let (ColumnData::F64(rate), ColumnData::U32(los), ColumnData::U64(rlc)) =
        (column(&out, "ues", "rate_bps"), column(&out, "ues", "los"), column(&out, "ues", "rlc_bytes"))
    else {
        panic!("unexpected column types")
    };
    let mean = |keep: u32| {
        let v: Vec<f64> = rate.iter().zip(los).filter(|(_, &l)| l == keep).map(|(r, _)| *r).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (los_rate, nlos_rate) = (mean(1), mean(0));
    assert!(nlos_rate < 0.5 * los_rate, "LOS {los_rate} NLOS {nlos_rate}");
    // A 1 Gbit/s source above the NLOS capacity fills the RLC buffer (bufferbloat).
    assert!(*rlc.iter().max().unwrap() > 1_000_000);
    let flow = &out.summary["flows"][0];
    assert!(num(&flow["ran_latency_ms"]["p99"]) > 10.0 * num(&flow["ran_latency_ms"]["p50"]));
}

#[test]
fn random_obstacles_are_reproducible_and_change_with_the_seed() {
    let a = run("milliproxy", &["duration_s=3"]);
    let b = run("milliproxy", &["duration_s=3"]);
    let c = run("milliproxy", &["duration_s=3", "seed=2"]);
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    assert_eq!(strip(&a.summary), strip(&b.summary));
    assert!(same_tables(&a, &b));
    assert_ne!(column(&a, "ues", "sinr_db"), column(&c, "ues", "sinr_db"));
}

#[test]
fn rlc_um_without_harq_loses_packets_and_am_with_harq_does_better() {
    let um = run("lower-layer", &["duration_s=3", "ues.0.rlc_mode=um", "cells.0.harq=off"]);
    let am = run("lower-layer", &["duration_s=3", "ues.0.rlc_mode=am", "cells.0.harq=on"]);
    assert!(um.summary["ues"][0]["downlink"]["um_losses"].as_u64().unwrap() > 0);
    assert_eq!(am.summary["ues"][0]["downlink"]["um_losses"].as_u64(), Some(0));
    // Every UM loss reaches TCP, which retransmits end to end and backs off.
    assert!(um.summary["flows"][0]["retransmits"].as_u64().unwrap() > 0);
    let goodput = |o: &RunOutput| num(&o.summary["flows"][0]["goodput_bps"]);
    assert!(goodput(&am) > 2.0 * goodput(&um), "AM {} vs UM {}", goodput(&am), goodput(&um));
}
