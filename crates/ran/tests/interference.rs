//! Inter-cell interference (docs/models/ran.md#interference) against a hand computation: two
//! cells on a line, UEs standing still at the cells' height (every direction horizontal), no
//! shadowing, no obstacles, so each link's SNR is the budget minus TR 38.901's UMi LOS path
//! loss and each beam's gain is the array factor of an 8-wide row of elements.

mod common;

use std::f64::consts::PI;

use common::packet;
use millinet_channel::{CqiConfig, CqiReporter, LinkChannel, LinkConfig, LinkRngs, MobilityConfig, Point2};
use millinet_ran::{CellConfig, CellId, Direction, LegRadio, Ran, RanOutput, UeConfig, UeId};
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

const MS: u64 = 1_000_000;
const HEIGHT_M: f64 = 10.0;
const CELL_A: Point2 = Point2::new(0.0, 0.0);
const CELL_B: Point2 = Point2::new(200.0, 0.0);

fn link(cell: Point2, ue: Point2, seed: u64) -> LegRadio {
    let cfg = LinkConfig {
        cell_position: cell,
        h_ut_m: HEIGHT_M,
        mobility: MobilityConfig::Static(ue),
        shadowing: false,
        ..LinkConfig::default()
    };
    let rngs = LinkRngs::from_stream(Xoshiro256PlusPlus::seed_from_u64(seed));
    LegRadio { channel: LinkChannel::new(&cfg, rngs).unwrap(), cqi: CqiReporter::new(CqiConfig::default()).unwrap() }
}

/// SNR by hand: 30 dBm + 10 log10(64·16) − PL − (−174 + 90 + 7) dBm, with TR 38.901 UMi LOS
/// PL = 32.4 + 21 log10(d3D) + 20 log10(28).
fn snr_by_hand(d_m: f64) -> f64 {
    30.0 + 10.0 * 1024f64.log10() - (32.4 + 21.0 * d_m.log10() + 20.0 * 28f64.log10()) + 77.0
}

/// Gain below the peak of a facing 8 × 8 panel (λ/2) steered at azimuth `steer`, toward
/// azimuth `toward`, both horizontal: the vertical factor is at its peak; the horizontal one
/// is sin²(8ψ/2) / (8 sin²(ψ/2)) with ψ = π (sin φ' − 0), φ' = toward − steer; the element
/// adds −min(12 (φ'/65°)², 30) dB.
fn below_peak_by_hand(toward_rad: f64, steer_rad: f64) -> f64 {
    let mut phi = toward_rad - steer_rad;
    phi = (phi + PI).rem_euclid(2.0 * PI) - PI;
    let psi = PI * phi.sin();
    let af = if psi.abs() < 1e-12 { 8.0 } else { (4.0 * psi).sin().powi(2) / (8.0 * (psi / 2.0).sin().powi(2)) };
    let element = -(12.0 * (phi.to_degrees() / 65.0).powi(2)).min(30.0);
    10.0 * (af / 8.0).log10() + element
}

fn azimuth(from: Point2, to: Point2) -> f64 {
    (to.y_m - from.y_m).atan2(to.x_m - from.x_m)
}

/// UE 0 (the victim) served by cell A, UE 1 served by cell B; each UE hears the other cell.
fn two_cells(victim: Point2, other: Point2, interfere: bool) -> Ran<Xoshiro256PlusPlus> {
    let mut ran = Ran::new();
    let a = ran.add_cell(CellConfig::default(), Xoshiro256PlusPlus::seed_from_u64(1)).unwrap();
    let b = ran.add_cell(CellConfig::default(), Xoshiro256PlusPlus::seed_from_u64(2)).unwrap();
    for (k, (at, serving, neighbour)) in [(victim, (a, CELL_A), (b, CELL_B)), (other, (b, CELL_B), (a, CELL_A))].into_iter().enumerate() {
        let ue = ran.add_ue();
        ran.attach(ue, serving.0, UeConfig::default(), link(serving.1, at, 10 + k as u64)).unwrap();
        ran.add_neighbour(ue, neighbour.0, link(neighbour.1, at, 20 + k as u64)).unwrap();
    }
    if interfere {
        ran.share_carrier(&[a, b]).unwrap();
    }
    ran
}

/// Full buffers for the UEs in `busy` and run 2 ms (CQI reports arrive after 0.5 ms); the
/// victim's SINR parts at the last slot.
fn run(ran: &mut Ran<Xoshiro256PlusPlus>, busy: &[UeId]) -> millinet_ran::SlotSinr {
    let mut out = RanOutput::default();
    for (k, &ue) in busy.iter().enumerate() {
        for n in 0..2000 {
            assert!(ran.enqueue_downlink(0, ue, packet(k as u64 * 10_000 + n, 1500)));
        }
    }
    ran.advance_to(2 * MS, &mut out);
    ran.slot_sinr(UeId(0)).unwrap()
}

#[test]
fn interference_and_sinr_equal_the_hand_computation() {
    // The victim stands beyond cell A, so cell B lies behind its serving cell, in front of its
    // beam; B's UE stands 20° off B's line toward the victim, in a side lobe of B's beam.
    let victim = Point2::new(-50.0, 0.0);
    let off_line = 160f64.to_radians();
    let other = Point2::new(200.0 + 60.0 * off_line.cos(), 60.0 * off_line.sin());
    let mut ran = two_cells(victim, other, true);
    let got = run(&mut ran, &[UeId(0), UeId(1)]);
    let (start, direction, beams) = ran.cell(CellId(1)).beams().unwrap();
    assert_eq!((start, direction), (2 * MS, Direction::Downlink));
    assert_eq!((beams.len(), beams[0].ue, beams[0].share), (1, UeId(1), 1.0), "B points one beam at its UE for the whole slot");

    let snr = snr_by_hand(50.0);
    let transmit = below_peak_by_hand(azimuth(CELL_B, victim), azimuth(CELL_B, other));
    let receive = below_peak_by_hand(azimuth(victim, CELL_B), azimuth(victim, CELL_A));
    assert_eq!(receive, 0.0, "B is straight ahead of the victim's beam");
    let inr = snr_by_hand(250.0) + transmit + receive;
    assert!((got.inr_db - inr).abs() < 1e-9, "INR {} against {inr} by hand", got.inr_db);
    assert!((got.sir_db - (snr - inr)).abs() < 1e-9);
    let sinr = snr - 10.0 * (1.0 + 10f64.powf(inr / 10.0)).log10();
    assert!((got.sinr_db - sinr).abs() < 1e-9, "SINR {} against {sinr} by hand", got.sinr_db);
    assert!(inr > 0.0 && transmit < -10.0, "a case where the side lobe matters: INR {inr} dB, {transmit} dB below the peak");
}

#[test]
fn a_beam_steered_away_interferes_less_by_the_array_factor() {
    let victim = Point2::new(-50.0, 0.0);
    // B's UE on the line toward the victim (B's beam points at it) or 60° off it.
    let toward = Point2::new(150.0, 0.0);
    let away = Point2::new(200.0 - 60.0 * (PI / 3.0).cos(), 60.0 * (PI / 3.0).sin());
    let at = run(&mut two_cells(victim, toward, true), &[UeId(0), UeId(1)]);
    let off = run(&mut two_cells(victim, away, true), &[UeId(0), UeId(1)]);
    let by_hand = below_peak_by_hand(azimuth(CELL_B, victim), azimuth(CELL_B, away));
    assert!(by_hand < -10.0, "{by_hand}");
    assert!((off.inr_db - at.inr_db - by_hand).abs() < 1e-9, "{} − {} against {by_hand}", off.inr_db, at.inr_db);
    assert!((at.inr_db - snr_by_hand(250.0)).abs() < 1e-9, "a beam on the victim: the whole link SNR");
}

#[test]
fn an_idle_neighbour_and_the_serving_cell_add_nothing() {
    let victim = Point2::new(-50.0, 0.0);
    let other = Point2::new(150.0, 0.0);
    // B has nothing to send: the victim's SINR is its SNR, though A transmits to it.
    let mut ran = two_cells(victim, other, true);
    let alone = run(&mut ran, &[UeId(0)]);
    assert!(ran.cell(CellId(1)).beams().unwrap().2.is_empty(), "B scheduled nothing");
    assert!((alone.sinr_db - snr_by_hand(50.0)).abs() < 1e-9);
    assert_eq!((alone.sir_db, alone.inr_db), (f64::INFINITY, f64::NEG_INFINITY));
    // B busy, A's own beam on the victim: only B counts.
    let both = run(&mut two_cells(victim, other, true), &[UeId(0), UeId(1)]);
    assert!((both.inr_db - snr_by_hand(250.0)).abs() < 1e-9);
    // Without a shared carrier nothing interferes at all.
    let apart = run(&mut two_cells(victim, other, false), &[UeId(0), UeId(1)]);
    assert!((apart.sinr_db - snr_by_hand(50.0)).abs() < 1e-9);
    assert!(both.sinr_db < apart.sinr_db - 1.0);
}
