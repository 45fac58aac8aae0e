//! The multi-cell drive: `Ran::advance_to` over channels, and bearers that move
//! between cells by detach and attach (docs/models/ran.md#attach-detach-and-forwarding) without losing, duplicating
//! or reordering an SDU.

mod common;

use common::{packet, ran_port, RanStation, Script};
use millinet_channel::{
    BlockageConfig, CqiConfig, CqiReporter, ForcedEvent, ForcedKind, LinkChannel, LinkConfig, LinkRngs, MobilityConfig, Point2,
};
use millinet_ran::{CellConfig, CellId, DirStats, Direction, HarqConfig, HarqMode, LegRadio, Ran, RanOutput, RlcMode, UeConfig, UeId};
use millinet_testkit::{Driver, Link, Port};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const MS: u64 = 1_000_000;

/// The link from a UE at (60, 0) m to a cell at (`cell_x_m`, 0), at 0 dBm so
/// that its SINR (7.5 dB) is below the top of the rate curve: AMC then picks a
/// rate that fails one first attempt in ten (docs/models/ran.md#harq).
fn leg(cell_x_m: f64, seed: u64) -> LegRadio {
    let cfg = LinkConfig {
        cell_position: Point2::new(cell_x_m, 0.0),
        mobility: MobilityConfig::Static(Point2::new(60.0, 0.0)),
        p_tx_dbm: 0.0,
        ..LinkConfig::default()
    };
    let rngs = LinkRngs::from_stream(Xoshiro256PlusPlus::seed_from_u64(seed));
    LegRadio { channel: LinkChannel::new(&cfg, rngs).unwrap(), cqi: CqiReporter::new(CqiConfig::default()).unwrap() }
}

/// Default cell with HARQ errors (docs/models/ran.md#harq).
fn cell_config() -> CellConfig {
    CellConfig { harq: HarqConfig { mode: HarqMode::Errors, ..HarqConfig::default() }, ..CellConfig::default() }
}

fn stream(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Two cells on different slot grids, three UEs (AM and UM) with HARQ errors.
fn network() -> Ran<Xoshiro256PlusPlus> {
    let mut ran = Ran::new();
    let a = ran.add_cell(cell_config(), stream(1)).unwrap();
    let b = ran.add_cell(CellConfig { slot_ns: 250_000, ..cell_config() }, stream(2)).unwrap();
    let um = UeConfig { rlc_mode: RlcMode::Um, ..UeConfig::default() };
    for (i, (cell, cfg)) in [(a, UeConfig::default()), (a, um), (b, UeConfig::default())].into_iter().enumerate() {
        let ue = ran.add_ue();
        ran.attach(ue, cell, cfg, leg(0.0, 10 + i as u64)).unwrap();
    }
    ran
}

/// Packets offered over `end_ns`: (time, UE, direction, uid), in time order.
fn arrivals(end_ns: u64) -> Vec<(u64, UeId, Direction, u64)> {
    let mut r = stream(7);
    let mut t = 0;
    let mut uid = 0;
    let mut v = Vec::new();
    while t < end_ns {
        t += u64::from(r.next_u32() % 40_000);
        let ue = UeId(r.next_u32() % 3);
        let dir = if r.next_u32() % 4 == 0 { Direction::Uplink } else { Direction::Downlink };
        v.push((t, ue, dir, uid));
        uid += 1;
    }
    v
}

type Seen = (Vec<(u32, u32, u64, u64)>, Vec<(u32, u64, u64)>);

/// Drives the network over the arrivals on the shared test driver, calling
/// `advance_to` at each of `calls` (sorted) and at each arrival before
/// enqueueing it (the contract: slots starting at or before an arrival run
/// before it; later ones after). Returns the outputs and the final counters.
fn run(calls: &[u64], end_ns: u64) -> (Seen, Vec<(millinet_ran::UeStats, millinet_ran::RadioStats)>) {
    let script = arrivals(end_ns).into_iter().map(|(t, ue, dir, uid)| (t, ran_port(ue, dir), packet(uid, 1500))).collect::<Vec<_>>();
    let ports = script.iter().map(|s| s.1).max().unwrap_or(0);
    let mut source = Script::new(script);
    let mut station = RanStation::new(network(), calls);
    let mut net = Driver::new();
    for port in 0..=ports {
        // No delay: each packet reaches the RAN at its arrival time.
        net.connect(Port { station: 0, port }, Port { station: 1, port }, Link::new(0));
    }
    while net.step(u64::MAX, &mut [&mut source, &mut station]) {}
    station.advance_to(end_ns);
    let stats = (0..3).map(|i| (station.ran.ue_stats(UeId(i)), station.ran.radio_stats(UeId(i)))).collect();
    let seen = (
        station.delivered.iter().map(|d| (d.ue.0, d.cell.0, d.at_ns, d.packet.meta.uid)).collect(),
        station.dropped.iter().map(|d| (d.ue.0, d.at_ns, d.packet.meta.uid)).collect(),
    );
    (seen, stats)
}

#[test]
fn advance_to_at_irregular_instants_gives_the_same_outputs_as_one_call_per_slot() {
    let end_ns = 60 * MS;
    // One call per slot start of the 125 µs grid (the 250 µs grid's are among them).
    let per_slot: Vec<u64> = (0..=end_ns / 125_000).map(|k| k * 125_000).collect();
    let (reference, stats) = run(&per_slot, end_ns);
    assert!(reference.0.len() > 1000, "traffic got through: {}", reference.0.len());
    assert!(stats.iter().all(|(s, _)| s.downlink.harq_failures > 0), "HARQ errors on every UE");
    assert!(stats[0].1.slots > 0 && stats[0].1.rate_bps_sum > 0.0);

    let mut r = stream(99);
    for round in 0..3 {
        // Irregular instants: bursts of close calls, long gaps of many slots.
        let mut calls = Vec::new();
        let mut t = 0;
        while t < end_ns {
            t += match r.next_u32() % 3 {
                0 => u64::from(r.next_u32() % 1000),
                1 => u64::from(r.next_u32() % 300_000),
                _ => u64::from(r.next_u32() % 3_000_000),
            };
            calls.push(t.min(end_ns));
        }
        let (seen, s) = run(&calls, end_ns);
        // (Not assert_eq: the vectors are thousands long.)
        assert!(seen == reference, "round {round}: deliveries and drops with their times differ");
        assert!(s == stats, "round {round}: counters differ");
    }
}

/// Conservation over all legs a bearer has had.
fn conserved(st: &DirStats, held: usize) -> bool {
    st.sdus_offered == st.sdus_delivered + st.sdus_dropped() + st.sdus_forwarded + held as u64
}

#[test]
fn a_bearer_moved_between_cells_delivers_every_sdu_once_and_in_order() {
    const X2_DELAY_NS: u64 = MS;
    let mut ran = Ran::new();
    // No HARQ retransmissions: every failed TB is RLC AM's to recover.
    let harq = HarqConfig { max_retx: 0, ..HarqConfig::default() };
    let cells = [
        ran.add_cell(CellConfig { harq, ..cell_config() }, stream(1)).unwrap(),
        ran.add_cell(CellConfig { harq, ..cell_config() }, stream(2)).unwrap(),
    ];
    let ue = ran.add_ue();
    let cfg = UeConfig::default(); // RLC AM
    ran.attach(ue, cells[0], cfg, leg(0.0, 3)).unwrap();
    ran.add_neighbour(ue, cells[1], leg(120.0, 99)).unwrap();

    let mut out = RanOutput::default();
    let (mut dl, mut ul) = (Vec::new(), Vec::new());
    let mut accepted = [Vec::new(), Vec::new()];
    // (time the target gets them, SDUs) for forwarded downlink SDUs in transit over X2.
    let mut x2 = None;
    let mut serving = 0;
    let mut uid = 0;
    let mut handovers = 0;
    let end_ns = 400 * MS;
    for k in 0..end_ns / 125_000 {
        let now = k * 125_000;
        // Heavy downlink, ACK-like uplink: the RLC window is full of SDUs in
        // HARQ and complete ones behind holes when a handover comes.
        for dir in [Direction::Downlink, Direction::Downlink, Direction::Uplink] {
            let p = packet(uid, if dir == Direction::Uplink { 52 } else { 1500 });
            let ok = match dir {
                Direction::Downlink => ran.enqueue_downlink(now, ue, p),
                Direction::Uplink => ran.enqueue_uplink(now, ue, p),
            };
            if ok {
                accepted[(dir == Direction::Uplink) as usize].push(uid);
            }
            uid += 1;
        }
        if x2.as_ref().is_some_and(|(at, _)| *at <= now) {
            let (_, sdus): (u64, Vec<_>) = x2.take().unwrap();
            ran.adopt(now, ue, Direction::Downlink, &sdus).unwrap();
        }
        ran.advance_to(now, &mut out);
        if now > 0 && now < end_ns - 100 * MS && now % (37 * MS) == 0 {
            // Break before make: the source leg ends, the target leg starts;
            // the UE's PDCP sends its uplink SDUs again, X2 brings the
            // downlink ones a little later. Every other time in one call, over
            // the neighbour's radio link, with a 20 ms interruption during which
            // the target buffers but schedules nothing.
            let detached = if handovers % 2 == 0 {
                let detached = ran.detach(now, ue, cells[serving], &mut out).unwrap();
                assert!(ran.cells_of(ue).is_empty());
                assert!(!ran.enqueue_downlink(now, ue, packet(u64::MAX, 1500)), "no leg");
                serving = 1 - serving;
                ran.attach(ue, cells[serving], cfg, leg(120.0 * serving as f64, 4 + k)).unwrap();
                detached
            } else {
                serving = 1 - serving;
                ran.hand_over(now, ue, cells[serving], 20 * MS, &mut out).unwrap()
            };
            ran.adopt(now, ue, Direction::Uplink, &detached.uplink).unwrap();
            x2 = Some((now + X2_DELAY_NS, detached.downlink));
            handovers += 1;
        }
        for d in out.downlink.drain(..) {
            assert!(d.at_ns <= now + 125_000);
            dl.push(d.packet.meta.uid);
        }
        ul.extend(out.uplink.drain(..).map(|d| d.packet.meta.uid));
        assert!(out.dropped.iter().all(|d| d.reason == millinet_ran::DropReason::Duplicate));
        out.dropped.clear();
    }
    // Stop offering and drain.
    let mut now = end_ns;
    while ran.held_sdus(ue, Direction::Downlink) + ran.held_sdus(ue, Direction::Uplink) > 0 {
        now += 125_000;
        assert!(now < end_ns + 200 * MS, "drained");
        ran.advance_to(now, &mut out);
        dl.extend(out.downlink.drain(..).map(|d| d.packet.meta.uid));
        ul.extend(out.uplink.drain(..).map(|d| d.packet.meta.uid));
        out.dropped.clear();
    }

    assert!(handovers >= 8);
    assert_eq!(dl, accepted[0], "downlink: every accepted SDU once, in order");
    assert_eq!(ul, accepted[1], "uplink: every accepted SDU once, in order");
    let st = ran.ue_stats(ue);
    assert!(st.downlink.harq_failures > 0 && st.downlink.rlc_retx_segments > 0, "{st:?}");
    assert!(st.downlink.sdus_forwarded > 0, "handovers forwarded undelivered SDUs");
    assert!(st.downlink.duplicates_discarded > 0, "copies of SDUs the UE already had reached PDCP and were discarded: {st:?}");
    assert_eq!(st.downlink.sdus_delivered, dl.len() as u64);
    assert!(conserved(&st.downlink, 0) && conserved(&st.uplink, 0), "{st:?}");
    assert_eq!(ran.radio_stats(ue).slots, now / 125_000 + 1, "counted on one cell at a time");
}

#[test]
fn attach_and_detach_report_bookkeeping_errors() {
    let mut ran = network();
    let (a, b) = (CellId(0), CellId(1));
    let mut out = RanOutput::default();
    let e = ran.attach(UeId(0), a, UeConfig::default(), leg(0.0, 1)).unwrap_err();
    assert_eq!(e.to_string(), "UE 0 is already attached to cell 0");
    let e = ran.detach(0, UeId(0), b, &mut out).unwrap_err();
    assert_eq!(e, millinet_ran::RanError::NotAttached { ue: UeId(0), cell: b });
    assert!(ran.attach(UeId(9), a, UeConfig::default(), leg(0.0, 1)).is_err());
    let bad = UeConfig { dl_buffer_bytes: 0, ..UeConfig::default() };
    let e = ran.attach(UeId(0), b, bad, leg(0.0, 1)).unwrap_err();
    assert!(matches!(e, millinet_ran::RanError::Config(_)), "{e}");
    let e = ran.hand_over(0, UeId(0), b, 0, &mut out).unwrap_err();
    assert_eq!(e.to_string(), "UE 0 has no neighbour radio link to cell 1");
    let e = ran.add_neighbour(UeId(0), a, leg(0.0, 1)).unwrap_err();
    assert_eq!(e.to_string(), "UE 0 has a radio link to cell 0 already");
    assert_eq!(ran.add_neighbour(UeId(0), CellId(7), leg(0.0, 1)).unwrap_err().to_string(), "no cell 7");
    ran.detach(0, UeId(0), a, &mut out).unwrap();
    let e = ran.add_neighbour(UeId(0), a, leg(0.0, 1)).unwrap_err();
    assert_eq!(e.to_string(), "UE 0 has a radio link to cell 0 already", "a detached leg's radio stays a neighbour");
    assert_eq!(ran.adopt(0, UeId(0), Direction::Downlink, &[]).unwrap_err().to_string(), "UE 0 is attached to no cell");
}

/// A UE walking from 20 m to 400 m in and out of LOS (a Markov chain), with a forced outage
/// and a forced NLOS period: its radio changes at geometry steps and at event boundaries. The
/// outage starts and ends off the slot grid and between CQI instants, each by a different
/// number of slots, so a missed boundary shows in the counts.
fn walker_config() -> LinkConfig {
    LinkConfig {
        cell_position: Point2::new(0.0, 0.0),
        mobility: MobilityConfig::Route { waypoints: vec![Point2::new(20.0, 5.0), Point2::new(400.0, 5.0)], speed_mps: 150.0 },
        blockage: BlockageConfig::Markov { lambda_per_s: 20.0 },
        forced_events: vec![
            ForcedEvent { start_ns: 300 * MS + 60_000, duration_ns: 70 * MS + 300_000, kind: ForcedKind::Outage },
            ForcedEvent { start_ns: 900 * MS, duration_ns: 200 * MS, kind: ForcedKind::Nlos },
        ],
        ..LinkConfig::default()
    }
}

/// The RAN visits a leg only when its radio may change (docs/models/ran.md#cost); its radio
/// counters must still be those of a visit every slot. Reference: an independent copy of
/// the same channel and CQI reporter, asked at every slot, and the rate AMC gives each
/// slot's reported SINR.
#[test]
fn idle_ues_counted_between_visits_equal_a_count_of_every_slot() {
    let mut ran: Ran<Xoshiro256PlusPlus> = Ran::new();
    let cell = ran.add_cell(cell_config(), stream(1)).unwrap();
    let radio = |seed| LegRadio {
        channel: LinkChannel::new(&walker_config(), LinkRngs::from_stream(stream(seed))).unwrap(),
        cqi: CqiReporter::new(CqiConfig::default()).unwrap(),
    };
    // One UE with traffic now and then, three idle.
    let ues: Vec<UeId> = (0..4).map(|_| ran.add_ue()).collect();
    for (i, &ue) in ues.iter().enumerate() {
        ran.attach(ue, cell, UeConfig::default(), radio(20 + i as u64)).unwrap();
    }
    let end_ns = 2_000 * MS;
    let mut out = RanOutput::default();
    for (uid, t) in (0..end_ns).step_by(7 * MS as usize).enumerate() {
        ran.advance_to(t, &mut out);
        ran.enqueue_downlink(t, ues[0], packet(uid as u64, 1500));
        out.downlink.clear();
        out.dropped.clear();
    }
    ran.advance_to(end_ns, &mut out);
    let link = cell_config().link;
    let slots = end_ns / 125_000 + 1;
    for (i, &ue) in ues.iter().enumerate() {
        let LegRadio { mut channel, mut cqi } = radio(20 + i as u64);
        let (mut los, mut outage, mut rate_bps_sum) = (0, 0, 0.0);
        let mut reported = f64::NEG_INFINITY;
        for k in 0..slots {
            let state = channel.state(k * 125_000);
            if let Some(r) = cqi.update(k * 125_000, state.sinr_db) {
                reported = r;
            }
            los += state.los as u64;
            outage += state.outage as u64;
            let usable = reported >= cell_config().outage_sinr_db && link.se(reported) > 0.0;
            rate_bps_sum += if usable { link.rate_bps(reported) } else { 0.0 };
        }
        let got = ran.radio_stats(ue);
        assert_eq!((got.slots, got.los_slots, got.outage_slots), (slots, los, outage), "UE {i}");
        assert_eq!(got.rate_bps_sum, rate_bps_sum, "UE {i}: the same sum, bit for bit");
        assert!(0 < los && los < slots && 0 < outage, "the walk changes the radio: {los} LOS and {outage} outage slots of {slots}");
    }
}
