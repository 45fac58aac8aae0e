//! HARQ and AMC as seen from the outside: BLER at the reported SINR, exact
//! bytes per slot with ideal HARQ, and the goodput shortfall HARQ errors cause.

mod common;

use common::*;
use millinet_ran::{CellConfig, Direction, HarqConfig, HarqMode, RlcMode, TddConfig, UeConfig};

/// One downlink-saturated UE at 20 dB reported and actual SINR (no uplink data).
fn saturated(harq: HarqConfig, rlc_mode: RlcMode, slots: u64, seed: u64) -> (Sim, u64) {
    let cfg = CellConfig { harq, ..CellConfig::default() };
    let ue = UeConfig { rlc_mode, ..UeConfig::default() };
    let mut sim = Sim::new(cfg, &[ue], seed);
    let mut uid = 0;
    for _ in 0..slots {
        while sim.cell.rlc_bytes(Sim::ue(0), Direction::Downlink) < 500_000 {
            sim.enqueue_downlink(sim.now_ns, Sim::ue(0), packet(uid, 1500));
            uid += 1;
        }
        sim.step();
    }
    (sim, uid)
}

#[test]
fn ideal_harq_delivers_exactly_the_achievable_rate() {
    let slots = 8000; // 1 s
    let (sim, _) = saturated(HarqConfig { mode: HarqMode::Ideal, ..HarqConfig::default() }, RlcMode::Am, slots, 1);
    let rate = sim.cell.telemetry(sim.now_ns, Sim::ue(0)).rate_bps;
    let per_slot = (rate * 125e-6 / 8.0).floor() as u64;
    let st = sim.cell.ue_stats(Sim::ue(0)).downlink;
    assert_eq!(st.harq_tx, slots);
    assert_eq!(st.harq_tx_bytes, per_slot * slots, "bytes per slot exact");
    let ideal = rate * 1.0 / 8.0;
    let got = st.bytes_delivered as f64;
    assert!(got <= ideal && got >= 0.99 * ideal, "delivered {got} of {ideal}");
}

#[test]
fn harq_errors_cost_the_bler() {
    let slots = 16_000;
    let (sim, _) = saturated(HarqConfig::default(), RlcMode::Am, slots, 2);
    let rate = sim.cell.telemetry(sim.now_ns, Sim::ue(0)).rate_bps;
    let st = sim.cell.ue_stats(Sim::ue(0)).downlink;
    let fraction = st.bytes_delivered as f64 / (rate * slots as f64 * 125e-6 / 8.0);
    // Each TB needs 1 + 0.1 + 0.1·BLER(+3 dB) + … ≈ 1.1001 full slots on
    // average, so the goodput is 1/1.1001 = 0.909 of the rate.
    assert!((fraction - 0.909).abs() < 0.01, "goodput fraction {fraction}");
    assert_eq!(st.harq_give_ups, 0);
}

#[test]
fn first_attempt_bler_is_ten_percent_in_a_cell() {
    // No retransmissions: every failure is a first attempt.
    let harq = HarqConfig { max_retx: 0, ..HarqConfig::default() };
    let (sim, _) = saturated(harq, RlcMode::Um, 20_000, 3);
    let st = sim.cell.ue_stats(Sim::ue(0)).downlink;
    let bler = st.harq_failures as f64 / st.harq_tx as f64;
    assert!((bler - 0.1).abs() < 0.007, "BLER {bler} over {} TBs", st.harq_tx);
    assert!(st.um_losses > 0);
}

#[test]
fn fixed_pattern_splits_downlink_and_uplink() {
    let cfg = CellConfig {
        tdd: TddConfig::pattern("DDDSU").unwrap(),
        harq: HarqConfig { mode: HarqMode::Ideal, ..HarqConfig::default() },
        ..CellConfig::default()
    };
    let mut sim = Sim::new(cfg, &[UeConfig::default()], 4);
    let ue = Sim::ue(0);
    let mut uid = 0;
    let mut ul_slots = 0;
    for _ in 0..1000 {
        for dir in [Direction::Downlink, Direction::Uplink] {
            while sim.cell.rlc_bytes(ue, dir) < 200_000 {
                match dir {
                    Direction::Downlink => sim.enqueue_downlink(sim.now_ns, ue, packet(uid, 1500)),
                    Direction::Uplink => sim.enqueue_uplink(sim.now_ns, ue, packet(uid, 1500)),
                };
                uid += 1;
            }
        }
        if sim.step().direction == Direction::Uplink {
            ul_slots += 1;
        }
    }
    assert_eq!(ul_slots, 200);
    let st = sim.cell.ue_stats(ue);
    let rate = sim.cell.telemetry(sim.now_ns, ue).rate_bps;
    let full = (rate * 125e-6 / 8.0).floor() as u64;
    let special = (rate * 125e-6 * millinet_ran::SPECIAL_DL_SHARE / 8.0).floor() as u64;
    assert_eq!(st.downlink.harq_tx_bytes, 600 * full + 200 * special);
    // Slot 4, the first U slot, starts exactly when the scheduling-request
    // delay (0.5 ms) of the data queued at time 0 has passed.
    let ul = (rate * 0.5 * 125e-6 / 8.0).floor() as u64;
    assert_eq!(st.uplink.harq_tx_bytes, 200 * ul);
    assert_eq!(st.downlink.slots_scheduled, 800);
}

#[test]
fn mcs_mode_sizes_tbs_from_the_cqi_table_with_the_matching_sinr_target() {
    // 12 dB: SE 2.947 is quantized down to 2.7305, which needs 11.21 dB, so
    // a TB sent at 12 dB fails with BLER(+0.79 dB) ≈ 3.3 %.
    let mut cfg = CellConfig { harq: HarqConfig { max_retx: 0, ..HarqConfig::default() }, ..CellConfig::default() };
    cfg.link.mcs = true;
    let mut sim = Sim::new(cfg, &[UeConfig { rlc_mode: RlcMode::Um, ..UeConfig::default() }], 9);
    sim.radio[0] = radio(12.0, 12.0);
    let ue = Sim::ue(0);
    let mut uid = 0;
    for _ in 0..20_000 {
        while sim.cell.rlc_bytes(ue, Direction::Downlink) < 100_000 {
            sim.enqueue_downlink(sim.now_ns, ue, packet(uid, 1500));
            uid += 1;
        }
        sim.step();
    }
    let st = sim.cell.ue_stats(ue).downlink;
    let per_slot = (1e9 * millinet_channel::link::DEFAULT_ETA_OH * 2.7305 * 125e-6 / 8.0).floor() as u64;
    assert_eq!(st.harq_tx_bytes, per_slot * st.harq_tx);
    let bler = st.harq_failures as f64 / st.harq_tx as f64;
    let expected = millinet_ran::harq::bler(12.0, millinet_channel::sinr_required_db(2.7305));
    assert!((bler - expected).abs() < 0.004, "BLER {bler}, expected {expected}");
}
