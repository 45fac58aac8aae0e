//! Sharing the slots: round robin, proportional fair, TDMA, outage, HARQ
//! process limits, dynamic TDD with ACK-like uplink traffic, telemetry, AQM.

mod common;

use common::*;
use millinet_ran::{Aqm, CellConfig, Direction, DropReason, HarqConfig, HarqMode, UeConfig, UeId, UeRadio, Verdict};
use millinet_wire::{ECN_CE, ECN_ECT1, ECN_NOT_ECT};

fn ideal(scheduler: &str) -> CellConfig {
    CellConfig {
        scheduler: scheduler.to_string(),
        harq: HarqConfig { mode: HarqMode::Ideal, ..HarqConfig::default() },
        ..CellConfig::default()
    }
}

/// Keep the downlink buffers of `ues` above 300 kB for `slots` slots.
fn saturate_some(sim: &mut Sim, slots: u64, ues: &[u32]) {
    let mut uid = 1_000_000;
    for _ in 0..slots {
        for &i in ues {
            while sim.cell.rlc_bytes(UeId(i), Direction::Downlink) < 300_000 {
                sim.enqueue_downlink(sim.now_ns, UeId(i), packet(uid, 1500));
                uid += 1;
            }
        }
        sim.step();
    }
}

/// Keep every UE's downlink buffer above 300 kB for `slots` slots.
fn saturate(sim: &mut Sim, slots: u64) {
    let all: Vec<u32> = (0..sim.cell.num_ues() as u32).collect();
    saturate_some(sim, slots, &all);
}

#[test]
fn round_robin_splits_equally_between_equal_ues() {
    let mut sim = Sim::new(ideal("round_robin"), &[UeConfig::default(); 2], 1);
    saturate(&mut sim, 4000);
    let (a, b) = (sim.cell.ue_stats(UeId(0)).downlink, sim.cell.ue_stats(UeId(1)).downlink);
    assert!((a.slot_share - 2000.0).abs() < 1e-6 && (b.slot_share - 2000.0).abs() < 1e-6);
    assert_eq!(a.harq_tx_bytes, b.harq_tx_bytes);
}

#[test]
fn round_robin_gives_a_light_ue_only_what_it_needs() {
    let mut sim = Sim::new(ideal("round_robin"), &[UeConfig::default(); 2], 1);
    // UE 1 has one small packet; UE 0 is saturated.
    sim.enqueue_downlink(0, UeId(1), packet(0, 100));
    saturate_some(&mut sim, 1, &[0]);
    let rate = sim.cell.telemetry(0, UeId(0)).rate_bps;
    let full = (rate * 125e-6 / 8.0).floor() as u64;
    let (a, b) = (sim.cell.ue_stats(UeId(0)).downlink, sim.cell.ue_stats(UeId(1)).downlink);
    assert_eq!(b.harq_tx_bytes, 100);
    assert!(a.harq_tx_bytes >= full - 101 && a.harq_tx_bytes <= full - 100);
}

#[test]
fn proportional_fair_converges_to_equal_time_shares() {
    let mut sim = Sim::new(ideal("proportional_fair"), &[UeConfig::default(); 2], 1);
    sim.radio = vec![radio(25.0, 25.0), radio(3.0, 3.0)];
    saturate(&mut sim, 16_000); // 2 s = 20 time constants
    let (a, b) = (sim.cell.ue_stats(UeId(0)).downlink, sim.cell.ue_stats(UeId(1)).downlink);
    let share = a.slot_share / (a.slot_share + b.slot_share);
    assert!((share - 0.5).abs() < 0.01, "time share of the strong UE {share}");
    assert!(a.bytes_delivered > 3 * b.bytes_delivered, "each keeps its own rate");
}

#[test]
fn tdma_gives_whole_slots_in_turn() {
    let mut sim = Sim::new(ideal("tdma"), &[UeConfig::default(); 3], 1);
    saturate(&mut sim, 300);
    for i in 0..3 {
        let st = sim.cell.ue_stats(UeId(i)).downlink;
        assert_eq!((st.slots_scheduled, st.slot_share), (100, 100.0));
    }
}

#[test]
fn a_ue_in_outage_gets_nothing_and_keeps_its_data() {
    let mut sim = Sim::new(CellConfig::default(), &[UeConfig::default(); 2], 1);
    sim.radio[1] = UeRadio::OUTAGE;
    for uid in 0..100 {
        sim.enqueue_downlink(0, UeId(1), packet(uid, 1500));
    }
    saturate_some(&mut sim, 800, &[0]);
    let st = sim.cell.ue_stats(UeId(1)).downlink;
    assert_eq!((st.harq_tx, st.bytes_delivered), (0, 0));
    assert_eq!(sim.cell.rlc_bytes(UeId(1), Direction::Downlink), 150_000);
    let t = sim.cell.telemetry(sim.now_ns, UeId(1));
    assert!(t.outage && t.rate_bps == 0.0 && t.rlc_bytes == 150_000);
    assert!((sim.cell.ue_stats(UeId(0)).downlink.slot_share - 800.0).abs() < 1e-6);
    // Coming back, it drains.
    sim.radio[1] = radio(20.0, 20.0);
    for _ in 0..40 {
        sim.step();
    }
    assert_eq!(sim.cell.ue_stats(UeId(1)).downlink.sdus_delivered, 100);
}

#[test]
fn a_ue_with_all_harq_processes_busy_waits() {
    let cfg = CellConfig { harq: HarqConfig { processes: 1, ..ideal("round_robin").harq }, ..ideal("round_robin") };
    let mut sim = Sim::new(cfg, &[UeConfig::default()], 1);
    saturate(&mut sim, 80);
    // One process, 1 ms RTT = 8 slots: one TB every 8 slots.
    assert_eq!(sim.cell.ue_stats(UeId(0)).downlink.slots_scheduled, 10);
}

#[test]
fn acks_get_through_after_the_scheduling_request_delay() {
    let mut sim = Sim::new(CellConfig::default(), &[UeConfig::default()], 1);
    let ue = UeId(0);
    // Idle downlink: the ACK goes up as soon as the SR delay has passed.
    let t0 = 3 * SLOT_NS + 10_000;
    let mut arrival = None;
    for _ in 0..20 {
        if sim.now_ns == 3 * SLOT_NS {
            sim.enqueue_uplink(t0, ue, packet(1, 52));
        }
        let out = sim.step();
        if let Some(d) = out.uplink.first() {
            assert_eq!(d.packet.meta.ran_entry_ns, t0);
            arrival.get_or_insert(out.at_ns);
        }
    }
    let a = arrival.expect("ACK delivered");
    let sr_done = t0 + 500_000;
    assert!(a > sr_done && a <= sr_done + 2 * SLOT_NS, "arrived at {a}, SR done at {sr_done}");

    // Saturated downlink: an uplink slot comes at least every ul_every (5) slots.
    let mut sim = Sim::new(CellConfig::default(), &[UeConfig::default()], 2);
    let mut uid = 0;
    let mut waits = Vec::new();
    for k in 0..4000u64 {
        while sim.cell.rlc_bytes(ue, Direction::Downlink) < 300_000 {
            sim.enqueue_downlink(sim.now_ns, ue, packet(uid, 1500));
            uid += 1;
        }
        if k % 8 == 0 {
            sim.enqueue_uplink(sim.now_ns, ue, packet(uid, 52));
            uid += 1;
        }
        let out = sim.step();
        waits.extend(out.uplink.iter().map(|d| out.at_ns - d.packet.meta.ran_entry_ns));
    }
    assert!(waits.len() > 450);
    let max = *waits.iter().max().unwrap();
    // SR delay + up to 4 downlink slots + the uplink slot itself (+ an
    // occasional HARQ retransmission, 1 ms).
    assert!(waits.iter().filter(|&&w| w <= 500_000 + 5 * SLOT_NS).count() as f64 > 0.85 * waits.len() as f64);
    assert!(max <= 500_000 + 5 * SLOT_NS + 4 * 1_000_000, "max wait {max}");
    let st = sim.cell.ue_stats(ue);
    let dl_slots = st.downlink.slots_scheduled as f64;
    assert!(dl_slots / 4000.0 > 0.9, "the downlink keeps most slots: {dl_slots}");
}

#[test]
fn telemetry_reports_occupancy_and_full_buffer_rate() {
    let mut sim = Sim::new(CellConfig::default(), &[UeConfig::default(); 2], 1);
    sim.enqueue_downlink(0, UeId(0), packet(0, 1500));
    sim.step();
    let idle = sim.cell.telemetry(sim.now_ns, UeId(1));
    let busy = sim.cell.telemetry(sim.now_ns, UeId(0));
    assert_eq!(idle.rate_bps, busy.rate_bps, "R_e does not depend on load");
    assert!((busy.rate_bps - 3.07e9).abs() < 0.01e9, "R(20 dB) = {}", busy.rate_bps);
    assert_eq!((busy.t_ns, busy.sinr_db, busy.outage), (SLOT_NS, 20.0, false));
    for uid in 1..=50 {
        sim.enqueue_downlink(sim.now_ns, UeId(0), packet(uid, 1500));
    }
    assert_eq!(sim.cell.telemetry(sim.now_ns, UeId(0)).rlc_bytes, 75_000);
}

/// Signals on every other SDU at dequeue: a drop, or a CE mark for an ECN-capable packet.
struct EveryOther(bool);

impl Aqm for EveryOther {
    fn on_dequeue(&mut self, _now_ns: u64, _sojourn_ns: u64, _backlog_bytes: u64, ecn: u8) -> Verdict {
        self.0 = !self.0;
        match (self.0, ecn) {
            (false, _) => Verdict::Deliver,
            (true, ECN_NOT_ECT) => Verdict::Drop,
            (true, _) => Verdict::Mark,
        }
    }
}

#[test]
fn an_aqm_drops_at_dequeue() {
    let mut sim = Sim::new(ideal("round_robin"), &[UeConfig::default()], 1);
    sim.cell.set_aqm(UeId(0), Direction::Downlink, Box::new(EveryOther(false)));
    for uid in 0..10 {
        sim.enqueue_downlink(0, UeId(0), packet(uid, 1500));
    }
    let mut got = Vec::new();
    let mut dropped = Vec::new();
    for _ in 0..5 {
        let out = sim.step();
        got.extend(out.downlink.iter().map(|d| d.packet.meta.uid));
        dropped.extend(out.dropped.iter().map(|d| (d.packet.meta.uid, d.reason)));
    }
    assert_eq!(got, [1, 3, 5, 7, 9]);
    assert_eq!(dropped, [0, 2, 4, 6, 8].map(|u| (u, DropReason::Aqm)));
    assert_eq!(sim.cell.ue_stats(UeId(0)).downlink.drops_aqm, 5);
}

#[test]
fn an_aqm_marks_ecn_capable_packets_and_delivers_them() {
    let mut sim = Sim::new(ideal("round_robin"), &[UeConfig::default()], 1);
    sim.cell.set_aqm(UeId(0), Direction::Downlink, Box::new(EveryOther(false)));
    for uid in 0..10 {
        let mut p = packet(uid, 1500);
        p.ecn = ECN_ECT1;
        sim.enqueue_downlink(0, UeId(0), p);
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(sim.step().downlink.iter().map(|d| (d.packet.meta.uid, d.packet.ecn)));
    }
    let expected: Vec<(u64, u8)> = (0..10).map(|u| (u, if u % 2 == 0 { ECN_CE } else { ECN_ECT1 })).collect();
    assert_eq!(got, expected, "every packet delivered, every other one CE");
    let stats = sim.cell.ue_stats(UeId(0)).downlink;
    assert_eq!((stats.aqm_marks, stats.drops_aqm), (5, 0));
}

#[test]
fn bad_configuration_names_the_field() {
    let e = millinet_ran::Cell::new(CellConfig { scheduler: "fifo".into(), ..CellConfig::default() }).err().unwrap();
    assert_eq!(e.field, "scheduler");
    assert!(e.to_string().contains("round_robin, proportional_fair, tdma"));
    let e = millinet_ran::Cell::new(CellConfig { ul_fraction: 0.0, ..CellConfig::default() }).err().unwrap();
    assert_eq!(e.field, "ul_fraction");
}
