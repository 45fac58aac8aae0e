//! The coupled congestion controls of MP-TCP (docs/models/coupled-cc.md): LIA (RFC 6356), OLIA
//! (Khalili et al., ToN 2013) and BALIA (Peng et al., ToN 2016). Their increase and decrease
//! rules against values worked out by hand from the RFC's and the papers' formulas, first
//! as functions of the subflows' published views, then through subflows built by one
//! `CcFactory` (each sees the others' windows and RTTs); the fractions of a byte that small
//! increases add up to; and a subflow alone behaving as NewReno.
//!
//! Units: windows and MSS in bytes, RTTs in seconds in the arithmetic. Every rule's
//! increase is a factor g: one ACK of `acked` bytes adds g·acked·MSS bytes (standard TCP:
//! g = 1/cwnd). The ACKs here acknowledge one MSS = 1000 bytes, so they add g·10⁶ bytes.

use millinet_transport::cc::balia::{self, Balia};
use millinet_transport::cc::coupled::Coupling;
use millinet_transport::cc::lia::{self, Lia};
use millinet_transport::cc::newreno::NewReno;
use millinet_transport::cc::olia::{self, Olia};
use millinet_transport::cc::{AckSample, CcFactory, CcInit, CongestionControl, CongestionEvent, CubicVariant, HystartMode, SubflowView};

const MSS: u64 = 1000;
const MS: u64 = 1_000_000;

fn view(cwnd_bytes: u64, srtt_ms: u64, inter_loss_bytes: u64) -> SubflowView {
    SubflowView { cwnd_bytes, srtt_ns: srtt_ms * MS, acked_since_loss_bytes: inter_loss_bytes, ..SubflowView::default() }
}

/// The bytes one ACK of one MSS adds under increase factor g.
fn per_ack(g: f64) -> f64 {
    g * (MSS * MSS) as f64
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!((actual - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{what}: {actual} vs {expected}");
}

/// An ACK of `acked_bytes` carrying the subflow's smoothed RTT.
fn ack(acked_bytes: u64, srtt_ms: u64) -> AckSample {
    AckSample { acked_bytes, srtt_ns: srtt_ms * MS, cwnd_limited: true, ..AckSample::default() }
}

/// A subflow of `factory`'s connection in congestion avoidance at `cwnd_bytes`, which has
/// published its RTT and `inter_loss_bytes` acknowledged since its (only) loss.
fn subflow_at(factory: &CcFactory, cwnd_bytes: u64, srtt_ms: u64, inter_loss_bytes: u64) -> Box<dyn CongestionControl> {
    let mut cc = factory.build(&CcInit {
        mss_bytes: MSS,
        initial_cwnd_bytes: 2 * cwnd_bytes,
        hystart: HystartMode::Off,
        cubic: CubicVariant::Linux,
    });
    // A loss with 2·cwnd in flight: ssthresh = cwnd = FlightSize/2 (RFC 5681 eq. (4)).
    cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 2 * cwnd_bytes);
    cc.on_recovery_exit(0);
    // An ACK while not cwnd-limited counts toward ℓ and publishes the RTT, but grows nothing.
    cc.on_ack(&AckSample { cwnd_limited: false, ..ack(inter_loss_bytes, srtt_ms) });
    assert_eq!((cc.cwnd_bytes(), cc.ssthresh_bytes()), (cwnd_bytes, cwnd_bytes));
    cc
}

/// One ACK of one MSS on `cc` changes its window by `expected` bytes, to the byte (the
/// window reads in whole bytes).
fn assert_grows(cc: &mut dyn CongestionControl, srtt_ms: u64, expected: f64, what: &str) {
    let before = cc.cwnd_bytes() as f64;
    cc.on_ack(&ack(MSS, srtt_ms));
    let grown = cc.cwnd_bytes() as f64 - before;
    assert!((grown - expected).abs() <= 1.0, "{what}: grew by {grown} bytes, expected {expected}");
}

// LIA, RFC 6356 §3, for subflow 1: cwnd 10 000 B, rtt 10 ms; subflow 2: 100 000 B, 100 ms.
//   cwnd_i/rtt_i²:  10⁴/0.01² = 10⁸,   10⁵/0.1² = 10⁷             → max 10⁸
//   cwnd_i/rtt_i:   10⁴/0.01 = 10⁶,    10⁵/0.1 = 10⁶              → Σ = 2·10⁶, Σ² = 4·10¹²
//   cwnd_total = 110 000
//   eq. (2): alpha = 110 000 · 10⁸ / (4·10¹²) = 2.75
//   eq. (1), bytes_acked = MSS = 1000:
//     subflow 1: min(2.75·10⁶/110 000, 10⁶/10 000)  = min(25, 100) = 25 bytes
//     subflow 2: min(25, 10⁶/100 000) = min(25, 10) = 10 bytes (TCP's increase caps it)
const LIA_PATHS: [(u64, u64); 2] = [(10_000, 10), (100_000, 100)];

#[test]
fn lia_alpha_and_increase_match_rfc_6356_by_hand() {
    let views = LIA_PATHS.map(|(cwnd, rtt)| view(cwnd, rtt, 0));
    assert_close(lia::alpha(&views), 2.75, "alpha");
    assert_close(per_ack(Lia::increase(&views, 0)), 25.0, "subflow 1");
    assert_close(per_ack(Lia::increase(&views, 1)), 10.0, "subflow 2, capped at TCP's increase");

    let factory = CcFactory::by_name("lia").expect("registered");
    let mut subflows = LIA_PATHS.map(|(cwnd, rtt)| subflow_at(&factory, cwnd, rtt, 0));
    assert_grows(subflows[0].as_mut(), 10, 25.0, "subflow 1");
    assert_grows(subflows[1].as_mut(), 100, 10.0, "subflow 2");
}

// OLIA for three paths, n = 3 (windows in bytes, ℓ = bytes acknowledged since the loss):
//   A: w = 30 000, rtt 100 ms, ℓ = 100 000    ℓ/rtt² = 10⁷      w/rtt = 300 000
//   B: w = 10 000, rtt  50 ms, ℓ = 200 000    ℓ/rtt² = 8·10⁷    w/rtt = 200 000
//   C: w = 20 000, rtt 100 ms, ℓ =  50 000    ℓ/rtt² = 5·10⁶    w/rtt = 200 000
//   M (largest window) = {A}; best paths = {B}; B∖M = {B}, not empty, so
//   α_A = −1/(3·1), α_B = +1/(3·1), α_C = 0 (in neither set).
//   (Σ w/rtt)² = 700 000² = 4.9·10¹¹. Per ACK of 1000 bytes, ×10⁶:
//   A: (30 000/0.1²)/4.9·10¹¹ − (1/3)/30 000  = 300/49 − 100/9  = −2200/441 ≈ −4.989 bytes
//   B: (10 000/0.05²)/4.9·10¹¹ + (1/3)/10 000 = 400/49 + 100/3  =  6100/147 ≈ 41.497 bytes
//   C: (20 000/0.1²)/4.9·10¹¹ + 0             = 200/49           ≈ 4.082 bytes
// (Ranking the paths by ℓ²/rtt, as some write-ups of the paper do, picks B as well.)
const OLIA_PATHS: [(u64, u64, u64); 3] = [(30_000, 100, 100_000), (10_000, 50, 200_000), (20_000, 100, 50_000)];

#[test]
fn olia_increase_for_max_window_best_and_other_paths_matches_the_paper_by_hand() {
    let views = OLIA_PATHS.map(|(cwnd, rtt, ell)| view(cwnd, rtt, ell));
    let (a, b, c) = (0, 1, 2);
    assert_close(olia::alpha(&views, a), -1.0 / 3.0, "α of the max-window path");
    assert_close(olia::alpha(&views, b), 1.0 / 3.0, "α of the best path");
    assert_eq!(olia::alpha(&views, c), 0.0, "α of a path in neither set");
    assert_close(per_ack(Olia::increase(&views, a)), -2200.0 / 441.0, "A");
    assert_close(per_ack(Olia::increase(&views, b)), 6100.0 / 147.0, "B");
    assert_close(per_ack(Olia::increase(&views, c)), 200.0 / 49.0, "C");

    // Through the algorithm (each ACK adds 1000 bytes to its path's ℓ: the sets stay).
    let factory = CcFactory::by_name("olia").expect("registered");
    let mut subflows = OLIA_PATHS.map(|(cwnd, rtt, ell)| subflow_at(&factory, cwnd, rtt, ell));
    // A shrinks by 4.99 bytes to 29 995.01, and its ssthresh follows it down.
    assert_grows(subflows[a].as_mut(), 100, -2200.0 / 441.0, "A");
    assert_eq!(subflows[a].ssthresh_bytes(), 29_995);
    assert_grows(subflows[b].as_mut(), 50, 6100.0 / 147.0, "B");
    assert_grows(subflows[c].as_mut(), 100, 200.0 / 49.0, "C");
}

#[test]
fn olia_moves_no_window_when_the_best_path_has_the_largest_window() {
    // B is both the best path and the only max-window path: B∖M is empty, every α_r = 0,
    // and each path grows by the coupled term alone.
    let views = [view(10_000, 100, 50_000), view(30_000, 100, 100_000)];
    assert_eq!((olia::alpha(&views, 0), olia::alpha(&views, 1)), (0.0, 0.0));
    // (Σ w/rtt)² = 400 000² = 1.6·10¹¹: A 10⁶/1.6·10¹¹ ·10⁶ = 6.25 bytes, B 3·10⁶/... = 18.75.
    assert_close(per_ack(Olia::increase(&views, 0)), 6.25, "A");
    assert_close(per_ack(Olia::increase(&views, 1)), 18.75, "B");
}

// BALIA, x_k = w_k/τ_k: A: w = 20 000, τ = 100 ms, x = 200 000 B/s;
//                       B: w = 10 000, τ =  25 ms, x = 400 000 B/s.   Σx = 600 000.
//   α_A = 400 000/200 000 = 2, α_B = 1.
//   increase per ACK of 1000 bytes, ×10⁶:
//     A: 200 000/(0.1·3.6·10¹¹) · (3/2)·(6/5) = 5.556·10⁻⁶·1.8 ·10⁶ = 10 bytes
//     B: 400 000/(0.025·3.6·10¹¹) · 1 · 1 = 4.444·10⁻⁵ ·10⁶ = 400/9 ≈ 44.44 bytes
//   decrease, FlightSize 20 000: A keeps 1 − min(2, 1.5)/2 = 1/4 → 5 000;
//                                B keeps 1 − min(1, 1.5)/2 = 1/2 → 10 000.
const BALIA_PATHS: [(u64, u64); 2] = [(20_000, 100), (10_000, 25)];

#[test]
fn balia_increase_and_decrease_match_the_paper_by_hand() {
    let views = BALIA_PATHS.map(|(cwnd, rtt)| view(cwnd, rtt, 0));
    assert_close(balia::alpha(&views, 0), 2.0, "α_A");
    assert_close(balia::alpha(&views, 1), 1.0, "α_B");
    assert_close(per_ack(Balia::increase(&views, 0)), 10.0, "A");
    assert_close(per_ack(Balia::increase(&views, 1)), 400.0 / 9.0, "B");
    assert_eq!(Balia::kept_flight_bytes(20_000, &views, 0), 5_000);
    assert_eq!(Balia::kept_flight_bytes(20_000, &views, 1), 10_000);
    // Between the bounds: x = 200 000 against 250 000 (10 000 B over 40 ms), α = 1.25,
    // keeps 1 − 1.25/2 = 0.375 of 16 000 = 6 000.
    let closer = [view(20_000, 100, 0), view(10_000, 40, 0)];
    assert_close(balia::alpha(&closer, 0), 1.25, "α");
    assert_eq!(Balia::kept_flight_bytes(16_000, &closer, 0), 6_000);

    let factory = CcFactory::by_name("balia").expect("registered");
    let mut subflows = BALIA_PATHS.map(|(cwnd, rtt)| subflow_at(&factory, cwnd, rtt, 0));
    assert_grows(subflows[0].as_mut(), 100, 10.0, "A");
    // A's 10 more bytes change Σx by 0.02 %.
    assert_grows(subflows[1].as_mut(), 25, 400.0 / 9.0, "B");
    // B's loss first (A then still slower, α_A = 2); ssthresh = cwnd = the kept FlightSize.
    subflows[1].on_congestion_event(CongestionEvent::FastRetransmit, 0, 20_000);
    assert_eq!((subflows[1].ssthresh_bytes(), subflows[1].cwnd_bytes()), (10_000, 10_000));
    subflows[0].on_congestion_event(CongestionEvent::FastRetransmit, 0, 20_000);
    assert_eq!((subflows[0].ssthresh_bytes(), subflows[0].cwnd_bytes()), (5_000, 5_000));
}

#[test]
fn lia_and_olia_halve_the_window_of_the_subflow_that_saw_the_loss() {
    for name in ["lia", "olia"] {
        let factory = CcFactory::by_name(name).expect("registered");
        let mut subflows = BALIA_PATHS.map(|(cwnd, rtt)| subflow_at(&factory, cwnd, rtt, 0));
        subflows[0].on_congestion_event(CongestionEvent::FastRetransmit, 0, 20_000);
        assert_eq!((subflows[0].ssthresh_bytes(), subflows[0].cwnd_bytes()), (10_000, 10_000), "{name}");
        assert_eq!(subflows[1].cwnd_bytes(), 10_000, "{name}: the other subflow keeps its window");
    }
}

#[test]
fn fractions_of_a_byte_per_ack_add_up() {
    // Two subflows at 1 000 000 bytes, 50 ms each. Every rule gives subflow A
    // g = 1/(4w) here: LIA alpha/cwnd_total = (w/rtt²)/(2w/rtt)² (cap 1/w not binding);
    // OLIA the same first term and α = 0 (A is both best and max-window); BALIA α = 1 and
    // x/(τ·(2x)²) = 1/(4w). Per ACK of 1000 bytes: 10⁶/(4·10⁶) = 0.25 byte, which a
    // window rounded to whole bytes on every ACK would never gain. 1000 ACKs: 250 bytes
    // (A's own growth changes g by 0.01 %).
    for name in ["lia", "olia", "balia"] {
        let factory = CcFactory::by_name(name).expect("registered");
        let (mut a, _b) = (subflow_at(&factory, 1_000_000, 50, 0), subflow_at(&factory, 1_000_000, 50, 0));
        for _ in 0..1000 {
            a.on_ack(&ack(MSS, 50));
        }
        let gained = a.cwnd_bytes() - 1_000_000;
        assert!((247..=253).contains(&gained), "{name}: {gained} bytes, expected 250 within 1 %");
    }
}

/// The same events for `cc` and for NewReno; the windows never differ by a segment or more.
/// NewReno adds one MSS per cwnd of acknowledged bytes (RFC 3465 §2.1), a coupled rule
/// alone adds acked·MSS/cwnd per ACK (RFC 5681 eq. (3)): over k increments the latter
/// falls short by under MSS/2, so with NewReno's steps the gap stays below one MSS; every
/// loss sets both to the same ssthresh.
fn compare_with_newreno(name: &str) {
    let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
    let factory = CcFactory::by_name(name).expect("registered");
    let mut coupled = factory.build(&init);
    let mut reno = NewReno::new(&init);
    let both = |coupled: &mut Box<dyn CongestionControl>, reno: &mut NewReno, event: &dyn Fn(&mut dyn CongestionControl)| {
        event(coupled.as_mut());
        event(reno);
        let gap = coupled.cwnd_bytes().abs_diff(reno.cwnd_bytes());
        assert!(gap < MSS, "{name}: cwnd {} vs NewReno {}", coupled.cwnd_bytes(), reno.cwnd_bytes());
        assert_eq!(coupled.ssthresh_bytes(), reno.ssthresh_bytes(), "{name}");
    };
    let acks = |coupled: &mut Box<dyn CongestionControl>, reno: &mut NewReno, count: usize, acked: u64| {
        for _ in 0..count {
            both(coupled, reno, &|cc| cc.on_ack(&ack(acked, 40)));
        }
    };
    // Slow start to 30 segments, a fast retransmit with all of them in flight.
    acks(&mut coupled, &mut reno, 20, MSS);
    both(&mut coupled, &mut reno, &|cc| cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 30 * MSS));
    assert_eq!(coupled.cwnd_bytes(), 15 * MSS);
    both(&mut coupled, &mut reno, &|cc| cc.on_recovery_exit(0));
    // Congestion avoidance with single and delayed (two-segment) ACKs: about 25 RTTs.
    acks(&mut coupled, &mut reno, 400, MSS);
    acks(&mut coupled, &mut reno, 200, 2 * MSS);
    let flight = reno.cwnd_bytes();
    both(&mut coupled, &mut reno, &|cc| cc.on_congestion_event(CongestionEvent::Rto, 0, flight));
    assert_eq!(coupled.cwnd_bytes(), MSS);
    // Slow start again up to ssthresh, then congestion avoidance.
    acks(&mut coupled, &mut reno, 600, MSS);
    assert!(reno.cwnd_bytes() > reno.ssthresh_bytes() + 10 * MSS, "reached congestion avoidance");
}

#[test]
fn a_single_subflow_behaves_as_newreno() {
    for name in ["lia", "olia", "balia"] {
        compare_with_newreno(name);
    }
}
