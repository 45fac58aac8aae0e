//! L4S in the RAN end to end (docs/models/transport.md §10, §12): DualPI2 on a UE's RLC buffer
//! and scalable and classic senders with Accurate ECN, on a cell of constant rate (no
//! blockage, no shadowing, a static UE) of 320 Mbit/s, so the queue's dynamics are the
//! senders' and the AQM's alone.

mod common;

use common::{num, run};
use millinet_engine::RunOutput;

/// A static UE in line of sight of a 100 MHz cell (320 Mbit/s peak), Accurate ECN, DualPI2.
const CONSTANT_CELL: [&str; 6] = [
    "ues.0.blockage=none",
    "ues.0.speed_mps=0",
    "ues.0.shadowing=false",
    "cells.0.bandwidth_hz=1e8",
    "cells.0.peak_rate_bps=3.2e8",
    "ues.0.rlc_aqm=dualpi2",
];

fn flow_latency_ms(out: &RunOutput, flow: usize, key: &str) -> f64 {
    num(&out.summary["flows"][flow]["ran_latency_ms"][key])
}

/// The L4S step sets the queue's sojourn: a Prague flow's p99 RAN latency (the sojourn plus the
/// slot and HARQ time after it, about 0.5 ms here) rises with the step and stays within three
/// times it plus 0.5 ms, for steps of 1 and 3 ms (as Linux's CWR state does, PRR lets the queue
/// overshoot while the window comes down over a round trip); drop-tail lets the same flow fill
/// the buffer to over a hundred milliseconds. The classic target is set out of the way (10 s),
/// so the step is the only signal; D_RS 20 ms puts Prague above its 25 ms reference RTT, where
/// its additive increase is one segment per round.
#[test]
fn the_l4s_step_sets_the_sojourn() {
    let base = [
        &CONSTANT_CELL[..],
        &["duration_s=10", "links.0.delay_s=0.02", "flows.0.cc=prague", "flows.0.ecn=accurate", "ues.0.rlc_dualpi2_target_s=10"],
    ]
    .concat();
    let mut p99s = Vec::new();
    for step_ms in [1.0, 3.0] {
        let step = format!("ues.0.rlc_dualpi2_step_s={}", step_ms / 1e3);
        let out = run("milliproxy", &[&base[..], &[step.as_str()]].concat());
        let p99 = flow_latency_ms(&out, 0, "p99");
        assert!(p99 <= 3.0 * step_ms + 0.5, "step {step_ms} ms: p99 RAN latency {p99} ms");
        assert!(out.summary["ues"][0]["downlink"]["aqm_marks"].as_u64().unwrap() > 100);
        assert_eq!(out.summary["ues"][0]["downlink"]["drops_aqm"].as_u64(), Some(0), "L4S packets are marked, not dropped");
        p99s.push(p99);
    }
    assert!(p99s[1] > p99s[0] + 1.0, "the step sets the level: p99 {p99s:?} ms for steps of 1 and 3 ms");
    let droptail: Vec<&str> = base.iter().copied().filter(|o| !o.starts_with("ues.0.rlc_aqm")).collect();
    let out = run("milliproxy", &droptail);
    assert!(flow_latency_ms(&out, 0, "p99") > 100.0);
}

/// RFC 9332 §2.4's coupling on one RLC queue: a CUBIC flow (classic, ECT(0)) and a Prague flow
/// (L4S, ECT(1)) to one UE, the step set out of the way so that every L4S mark is a coupled
/// one. The fractions of bytes each flow's receiver reported CE-marked obey p_C = (p_L/k)²
/// with k = 2, up to the variance of p′ (E[p′²] ≥ E[p′]², so p_C is at least the squared term
/// and, over 20 s, at most 4 times it); neither flow starves (each at least a fifth of the
/// goodput).
#[test]
fn classic_and_l4s_flows_on_one_rlc_queue_get_the_coupled_marking() {
    let overrides = [
        &CONSTANT_CELL[..],
        &["duration_s=20", "flows.0.ecn=accurate", "flows.1.ecn=accurate", "flows.1.cc=prague", "ues.0.rlc_dualpi2_step_s=10"],
    ]
    .concat();
    let out = run("multiflow", &overrides);
    let flows = &out.summary["flows"];
    assert_eq!((flows[0]["cc"].as_str(), flows[1]["cc"].as_str()), (Some("cubic"), Some("prague")));
    let fraction = |k: usize| num(&flows[k]["ce_bytes"]) / num(&flows[k]["delivered_bytes"]);
    let (p_classic, p_l4s) = (fraction(0), fraction(1));
    let coupled = (p_l4s / 2.0).powi(2);
    assert!(p_l4s > 0.001, "the L4S flow was marked: {p_l4s}");
    assert!((0.8 * coupled..=4.0 * coupled).contains(&p_classic), "p_C {p_classic}, (p_L/2)² {coupled}");
    let goodput = |k: usize| num(&flows[k]["goodput_bps"]);
    let total = goodput(0) + goodput(1);
    assert!(goodput(0) > total / 5.0 && goodput(1) > total / 5.0, "CUBIC {} and Prague {} bit/s", goodput(0), goodput(1));
}
