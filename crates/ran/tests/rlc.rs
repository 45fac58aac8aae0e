//! RLC behaviour under HARQ losses: AM loses nothing and keeps order, UM loses
//! what HARQ gave up on and keeps order; overflow and conservation.

mod common;

use common::*;
use millinet_ran::{CellConfig, Direction, DropReason, RlcMode, UeConfig};
use rand_xoshiro::rand_core::RngCore;

struct Outcome {
    delivered: Vec<u64>,
    dropped: Vec<(u64, DropReason)>,
    offered: u64,
    sim: Sim,
}

/// Feed `n` SDUs of mixed sizes into one UE while its actual SINR sits 4–14 dB
/// below the reported one, then let it drain. Checks conservation every slot.
fn lossy_run(mode: RlcMode, n: u64, seed: u64) -> Outcome {
    let ue_cfg = UeConfig { rlc_mode: mode, ..UeConfig::default() };
    let mut sim = Sim::new(CellConfig::default(), &[ue_cfg], seed);
    let ue = Sim::ue(0);
    let mut sizes = rng(seed ^ 0x5eed);
    let mut offered = 0;
    let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
    for _ in 0..200_000 {
        // Arrivals: a burst of up to 4 SDUs of 40..1500 bytes per slot.
        for _ in 0..(sizes.next_u32() % 5) {
            if offered < n {
                let size = 40 + sizes.next_u32() % 1461;
                let now_ns = sim.now_ns;
                assert!(sim.enqueue_downlink(now_ns, ue, packet(offered, size)));
                offered += 1;
            }
        }
        let gap = 4.0 + (sizes.next_u32() % 1000) as f64 / 100.0;
        sim.radio[0] = radio(5.0, 5.0 - gap);
        let out = sim.step();
        delivered.extend(out.downlink.iter().map(|d| d.packet.meta.uid));
        dropped.extend(out.dropped.iter().map(|d| (d.packet.meta.uid, d.reason)));
        let st = sim.cell.ue_stats(ue).downlink;
        assert_eq!(
            st.sdus_offered,
            st.sdus_delivered + st.sdus_dropped() + sim.cell.held_sdus(ue, Direction::Downlink) as u64,
            "conservation"
        );
        if offered == n && sim.cell.is_idle(sim.now_ns) {
            break;
        }
    }
    assert!(sim.cell.is_idle(sim.now_ns), "drained");
    Outcome { delivered, dropped, offered, sim }
}

fn strictly_increasing(v: &[u64]) -> bool {
    v.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn am_delivers_everything_in_order_under_heavy_harq_failure() {
    let o = lossy_run(RlcMode::Am, 20_000, 11);
    let st = o.sim.cell.ue_stats(Sim::ue(0)).downlink;
    assert!(st.harq_give_ups > 500, "the test must actually stress ARQ: {st:?}");
    assert!(st.rlc_retx_segments >= st.harq_give_ups);
    assert!(o.dropped.is_empty());
    assert_eq!(o.delivered, (0..o.offered).collect::<Vec<_>>());
}

#[test]
fn um_loses_what_harq_gave_up_on_and_keeps_order() {
    let o = lossy_run(RlcMode::Um, 20_000, 12);
    let st = o.sim.cell.ue_stats(Sim::ue(0)).downlink;
    assert!(st.harq_give_ups > 500);
    assert_eq!(st.rlc_retx_segments, 0);
    assert!(strictly_increasing(&o.delivered));
    assert!(!o.dropped.is_empty() && o.dropped.iter().all(|d| d.1 == DropReason::UmLoss));
    assert_eq!(st.um_losses, o.dropped.len() as u64);
    // Every SDU is delivered or lost, exactly once.
    let mut all: Vec<u64> = o.delivered.iter().copied().chain(o.dropped.iter().map(|d| d.0)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..o.offered).collect::<Vec<_>>());
}

#[test]
fn overflow_drops_exactly_what_does_not_fit() {
    let ue_cfg = UeConfig { dl_buffer_bytes: 10_000, ..UeConfig::default() };
    let mut sim = Sim::new(CellConfig::default(), &[ue_cfg], 5);
    let ue = Sim::ue(0);
    for uid in 0..6 {
        assert!(sim.enqueue_downlink(0, ue, packet(uid, 1500)));
    }
    assert!(!sim.enqueue_downlink(0, ue, packet(6, 1500)), "10 500 > 10 000");
    assert!(sim.enqueue_downlink(0, ue, packet(7, 1000)), "exactly 10 000 fits");
    assert!(!sim.enqueue_downlink(0, ue, packet(8, 40)));
    assert_eq!(sim.cell.rlc_bytes(ue, Direction::Downlink), 10_000);
    let st = sim.cell.ue_stats(ue).downlink;
    assert_eq!((st.sdus_offered, st.drops_overflow), (9, 2));
    let mut got = Vec::new();
    for _ in 0..100 {
        got.extend(sim.step().downlink.iter().map(|d| d.packet.meta.uid));
    }
    assert_eq!(got, [0, 1, 2, 3, 4, 5, 7]);
    assert_eq!(sim.cell.rlc_bytes(ue, Direction::Downlink), 0);
}

#[test]
fn delivered_packets_carry_their_entry_stamp_and_wait_at_least_a_slot() {
    let mut sim = Sim::new(CellConfig::default(), &[UeConfig::default()], 6);
    let ue = Sim::ue(0);
    let mut entry = Vec::new();
    let mut seen = 0;
    for k in 0..2000u64 {
        if k % 3 == 0 {
            // Arrivals between slot boundaries.
            let t = sim.now_ns + 7_000;
            sim.enqueue_downlink(t, ue, packet(k, 1200));
            entry.push((k, t));
        }
        let out = sim.step();
        for d in &out.downlink {
            let (uid, t) = entry.iter().copied().find(|e| e.0 == d.packet.meta.uid).unwrap();
            assert_eq!(d.packet.meta.ran_entry_ns, t, "uid {uid}");
            assert!(out.at_ns - t >= SLOT_NS - 7_000);
            seen += 1;
        }
    }
    assert!(seen > 600);
}

#[test]
fn same_seed_same_outputs() {
    let a = lossy_run(RlcMode::Am, 3000, 21);
    let b = lossy_run(RlcMode::Am, 3000, 21);
    assert_eq!(a.delivered, b.delivered);
    assert_eq!(a.sim.now_ns, b.sim.now_ns);
    assert_eq!(a.sim.cell.cell_stats(), b.sim.cell.cell_stats());
    let c = lossy_run(RlcMode::Am, 3000, 22);
    assert_ne!(a.sim.cell.cell_stats(), c.sim.cell.cell_stats());
}
