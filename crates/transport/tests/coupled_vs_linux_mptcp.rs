//! millinet's coupled congestion controls against the ones the published MP-TCP evaluations
//! ran: the out-of-tree Linux MPTCP kernel (multipath-tcp.org, v0.9x), files
//! net/mptcp/mptcp_coupled.c (LIA, registered as "lia"), net/mptcp/mptcp_olia.c and
//! net/mptcp/mptcp_balia.c of github.com/multipath-tcp/mptcp (docs/models/coupled-cc.md,
//! "Against Linux MPTCP (out-of-tree, v0.9x)", names the versions read). Their arithmetic is
//! re-expressed below as small reference functions, written for this test from what those
//! functions compute; each names the kernel function it follows.
//!
//! For hand-set states of two subflows, each test derives by hand (in the comments) what one
//! ACK adds and what one loss leaves under the paper's or RFC's rule — which millinet's
//! `CongestionControl` objects, built through a `CcFactory` and fed `AckSample`s, must
//! apply — and under the kernel's integer arithmetic; then it asserts the two agree within
//! the bound the kernel's rounding explains, or, where they differ by design, the documented
//! difference.
//!
//! Units. MSS = 1000 bytes. millinet keeps windows in bytes; the kernel in segments
//! (snd_cwnd, snd_ssthresh), its smoothed RTT as srtt_us = 8 × the RTT in µs, OLIA's loss
//! distances in bytes (differences of snd_una). An increase is given in bytes per
//! acknowledged segment. The kernel adds whole segments: a counter advances once per ACK and
//! the window gains one segment when it passes a threshold, so its increase per ACK is MSS
//! divided by the ACKs one segment takes.

use millinet_transport::cc::balia::{self, Balia};
use millinet_transport::cc::coupled::Coupling;
use millinet_transport::cc::lia::Lia;
use millinet_transport::cc::olia::{self, Olia};
use millinet_transport::cc::{AckSample, CcFactory, CcInit, CongestionControl, CongestionEvent, CubicVariant, HystartMode, SubflowView};

const MSS: u64 = 1000;
const MS: u64 = 1_000_000;

// ---------------------------------------------------------------------------------------
// The states: what each subflow is when the ACK or the loss comes.

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// After a loss and its recovery: cwnd = ssthresh, so every ACK is congestion avoidance.
    Avoidance,
    /// Still in the initial slow start (ssthresh unbounded).
    SlowStart,
    /// Just recovered from a fast retransmit with twice this window in flight, after
    /// `ell_bytes` acknowledged since the loss before: ℓ_1r = `ell_bytes`, ℓ_2r = 0.
    JustLost,
}

#[derive(Clone, Copy, Debug)]
struct State {
    cwnd_segments: u64,
    rtt_ms: u64,
    /// OLIA's ℓ: bytes acknowledged since the subflow's last loss (ℓ_2r), or, `JustLost`,
    /// between its last two (ℓ_1r).
    ell_bytes: u64,
    phase: Phase,
}

const fn avoiding(cwnd_segments: u64, rtt_ms: u64, ell_bytes: u64) -> State {
    State { cwnd_segments, rtt_ms, ell_bytes, phase: Phase::Avoidance }
}

/// Equal paths: 20 segments and 20 ms each. A has seen more bytes since its last loss.
/// A named state, its subflows, the subflow looked at, then three expected values.
type Case<'a, A, B, C> = (&'a str, &'a [State], usize, A, B, C);
/// OLIA's: millinet by hand, the kernel's ε, its counter step, its ACKs per segment.
type OliaCase<'a> = (&'a str, &'a [State], usize, f64, (i64, u64), i64, u64);

const EQUAL: [State; 2] = [avoiding(20, 20, 2_000_000), avoiding(20, 20, 1_000_000)];

/// A fast short-RTT path (A: 40 segments, 20 ms, lossy: ℓ = 100 kB) and a slow long-RTT
/// one (B: 10 segments, 100 ms, ℓ = 10 MB).
const FAST_SLOW: [State; 2] = [avoiding(40, 20, 100_000), avoiding(10, 100, 10_000_000)];

/// A still in its initial slow start (8 segments, 10 ms, 50 kB acknowledged so far), B in
/// congestion avoidance (40 segments, 40 ms, ℓ = 1 MB).
const ONE_IN_SLOW_START: [State; 2] =
    [State { cwnd_segments: 8, rtt_ms: 10, ell_bytes: 50_000, phase: Phase::SlowStart }, avoiding(40, 40, 1_000_000)];

/// After a loss on one path: the equal paths, A (ℓ = 2 MB) just halved to 10 segments.
const AFTER_LOSS: [State; 2] =
    [State { cwnd_segments: 10, rtt_ms: 20, ell_bytes: 2_000_000, phase: Phase::JustLost }, avoiding(20, 20, 1_000_000)];

// ---------------------------------------------------------------------------------------
// millinet: subflows of one connection built by one factory, driven through the public API.

fn ack(acked_bytes: u64, rtt_ms: u64) -> AckSample {
    AckSample { acked_bytes, srtt_ns: rtt_ms * MS, cwnd_limited: true, ..AckSample::default() }
}

/// An ACK while not cwnd-limited: it counts toward ℓ and publishes the RTT, grows nothing.
fn count_toward_ell(cc: &mut dyn CongestionControl, state: State) {
    cc.on_ack(&AckSample { cwnd_limited: false, ..ack(state.ell_bytes, state.rtt_ms) });
}

/// A fast retransmit with `flight_bytes` in flight, and the end of its recovery.
fn lose(cc: &mut dyn CongestionControl, flight_bytes: u64) {
    cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, flight_bytes);
    cc.on_recovery_exit(0);
}

/// A subflow of `factory`'s connection in `state`, with its RTT and ℓ published.
fn subflow(factory: &CcFactory, state: State) -> Box<dyn CongestionControl> {
    let cwnd_bytes = state.cwnd_segments * MSS;
    let build = |initial_cwnd_bytes| {
        factory.build(&CcInit { mss_bytes: MSS, initial_cwnd_bytes, hystart: HystartMode::Off, cubic: CubicVariant::Linux })
    };
    let cc = match state.phase {
        Phase::Avoidance => {
            // A loss with 2·cwnd in flight: ssthresh = cwnd = FlightSize/2 (a first loss
            // closes no inter-loss distance: nothing was acknowledged before it).
            let mut cc = build(2 * cwnd_bytes);
            lose(cc.as_mut(), 2 * cwnd_bytes);
            count_toward_ell(cc.as_mut(), state);
            cc
        }
        Phase::SlowStart => {
            let mut cc = build(cwnd_bytes);
            count_toward_ell(cc.as_mut(), state);
            cc
        }
        Phase::JustLost => {
            // In congestion avoidance at 2·cwnd, ℓ acknowledged, then the loss: half of it.
            let mut cc = build(4 * cwnd_bytes);
            lose(cc.as_mut(), 4 * cwnd_bytes);
            count_toward_ell(cc.as_mut(), state);
            lose(cc.as_mut(), 2 * cwnd_bytes);
            cc
        }
    };
    assert_eq!(cc.cwnd_bytes(), cwnd_bytes);
    if let Phase::Avoidance | Phase::JustLost = state.phase {
        assert_eq!(cc.ssthresh_bytes(), cwnd_bytes);
    }
    cc
}

fn connection(name: &str, states: &[State]) -> Vec<Box<dyn CongestionControl>> {
    let factory = CcFactory::by_name(name).expect("registered");
    states.iter().map(|&state| subflow(&factory, state)).collect()
}

/// The bytes millinet adds per acknowledged segment on `states[own]`: a fresh connection in
/// `states`, one ACK of `segments` segments on `own`, the growth divided by `segments`.
/// millinet evaluates its rule once per ACK and scales it by the bytes acknowledged (RFC 3465
/// byte counting, RFC 6356 §3's bytes_acked), so this reads the rule of the state to within
/// 1/`segments` byte (the window reads in whole bytes). The ACK adds `segments`·MSS to own's
/// ℓ; every state below keeps its OLIA sets with that.
fn millinet_bytes_per_segment(name: &str, states: &[State], own: usize, segments: u64) -> f64 {
    let mut subflows = connection(name, states);
    let before = subflows[own].cwnd_bytes() as f64;
    subflows[own].on_ack(&ack(segments * MSS, states[own].rtt_ms));
    (subflows[own].cwnd_bytes() as f64 - before) / segments as f64
}

/// (ssthresh, cwnd) in bytes after a fast retransmit on `states[loser]` with its whole
/// window in flight (FlightSize = cwnd, as for a cwnd-limited sender).
fn millinet_after_loss(name: &str, states: &[State], loser: usize) -> (u64, u64) {
    let mut subflows = connection(name, states);
    let flight = states[loser].cwnd_segments * MSS;
    subflows[loser].on_congestion_event(CongestionEvent::FastRetransmit, 0, flight);
    (subflows[loser].ssthresh_bytes(), subflows[loser].cwnd_bytes())
}

fn assert_near(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!((actual - expected).abs() <= tolerance, "{what}: {actual} vs {expected} (±{tolerance})");
}

/// millinet's measured increase equals the rule's value derived by hand, to the 1/100 byte
/// a 100-segment ACK reads it to.
fn assert_millinet(name: &str, states: &[State], own: usize, expected_bytes: f64) -> f64 {
    let measured = millinet_bytes_per_segment(name, states, own, 100);
    assert_near(measured, expected_bytes, 0.011, &format!("{name}: millinet, subflow {own}"));
    measured
}

/// The kernel's increase (bytes per ACK) is within `bound` (relative) of millinet's.
fn assert_within(linux: f64, millinet: f64, bound: f64, what: &str) {
    let relative = (linux - millinet) / millinet.abs();
    assert!(relative.abs() <= bound, "{what}: Linux {linux} vs millinet {millinet} bytes per ACK: {relative:+.4} beyond ±{bound:.4}");
}

// ---------------------------------------------------------------------------------------
// Linux MPTCP v0.9x, re-expressed. One subflow as the kernel's coupled controls see it.

#[derive(Clone, Copy, Debug)]
struct Kernel {
    /// snd_cwnd (segments); for OLIA the "current" window, which is snd_ssthresh while the
    /// subflow is in fast recovery (mptcp_get_crt_cwnd).
    cwnd: u64,
    /// srtt_us: 8 × the smoothed RTT in µs.
    srtt_us: u64,
    /// OLIA's max(loss3 − loss2, loss2 − loss1): bytes between or since losses.
    ell: u64,
}

fn kernel(state: &State) -> Kernel {
    Kernel { cwnd: state.cwnd_segments, srtt_us: state.rtt_ms * 8000, ell: state.ell_bytes }
}

fn kernels(states: &[State]) -> Vec<Kernel> {
    states.iter().map(kernel).collect()
}

/// Bytes per ACK of a kernel rule that adds one segment every `acks` ACKs.
fn per_ack(acks: u64) -> f64 {
    MSS as f64 / acks as f64
}

/// LIA's alpha as mptcp_coupled.c's mptcp_ccc_recalc_alpha computes it: an integer standing
/// for 2^12 · alpha/cwnd_total of RFC 6356 (windows in segments). The "best" path is the one
/// with the largest cwnd·2^32/srtt_us², each value truncated to an integer, a tie going to
/// the subflow walked last; then alpha = best_cwnd·2^32 / (Σ_p cwnd_p·2^10·best_srtt/srtt_p)²,
/// each term of the sum truncated, and never below 1. `subflows` are in the order the kernel
/// walks them (the connection list, newest subflow first).
fn linux_lia_alpha(subflows: &[Kernel]) -> u64 {
    let mut best = subflows[0];
    let mut best_value = 0;
    for s in subflows {
        let value = (s.cwnd << 32) / (s.srtt_us * s.srtt_us);
        if value >= best_value {
            best_value = value;
            best = *s;
        }
    }
    let sum: u64 = subflows.iter().map(|s| (s.cwnd << 10) * best.srtt_us / s.srtt_us).sum();
    ((best.cwnd << 32) / (sum * sum)).max(1)
}

/// ACKs LIA takes to add one segment to `subflows[own]` in congestion avoidance
/// (mptcp_ccc_cong_avoid): the threshold is max(2^12/alpha, cwnd), and snd_cwnd_cnt, which
/// counts ACKs, must reach it and then see one more ACK, which adds the segment and resets it.
fn linux_lia_acks_per_segment(subflows: &[Kernel], own: usize) -> u64 {
    (4096 / linux_lia_alpha(subflows)).max(subflows[own].cwnd) + 1
}

/// OLIA's ε_r = α_r as a fraction (numerator, denominator), mptcp_get_epsilon: M are the
/// subflows whose window equals the largest, the best the one with the largest ℓ/srtt_us²
/// compared as ℓ_p·srtt_q² ≥ ℓ_q·srtt_p² in u64 arithmetic (which wraps), a tie going to the
/// subflow walked later; n is the number of established subflows.
fn linux_olia_epsilon(subflows: &[Kernel], own: usize) -> (i64, u64) {
    let max_cwnd = subflows.iter().map(|s| s.cwnd).max().unwrap_or_default();
    let (mut best_ell, mut best_rtt2) = (0u64, 1u64);
    for s in subflows {
        let rtt2 = s.srtt_us * s.srtt_us;
        if s.ell.wrapping_mul(best_rtt2) >= best_ell.wrapping_mul(rtt2) {
            (best_ell, best_rtt2) = (s.ell, rtt2);
        }
    }
    let is_best = |s: &Kernel| s.ell.wrapping_mul(best_rtt2) == best_ell.wrapping_mul(s.srtt_us * s.srtt_us);
    let in_max = subflows.iter().filter(|s| s.cwnd == max_cwnd).count() as u64;
    let best_not_max = subflows.iter().filter(|s| s.cwnd != max_cwnd && is_best(s)).count() as u64;
    let n = subflows.len() as u64;
    let r = &subflows[own];
    if best_not_max == 0 {
        (0, 1)
    } else if r.cwnd < max_cwnd && is_best(r) {
        (1, n * best_not_max)
    } else if r.cwnd == max_cwnd {
        (-1, n * in_max)
    } else {
        (0, 1)
    }
}

/// What one ACK adds to OLIA's counter mptcp_snd_cwnd_cnt (mptcp_olia_cong_avoid with
/// mptcp_get_rate): 2^10 · (w_r/(Σ_p w_p·rtt_r/rtt_p)² + ε_r/w_r) in the kernel's integers —
/// rate = (1 + Σ_p ⌊w_p·2^10·srtt_r/srtt_p⌋)², the window scaled by 2^10, the quotient
/// truncated toward zero. The window gains (loses) a segment when the counter reaches +1023
/// (−1023), and the counter restarts from 0.
fn linux_olia_step(subflows: &[Kernel], own: usize) -> i64 {
    let r = subflows[own];
    let (num, den) = linux_olia_epsilon(subflows, own);
    let sum: u64 = 1 + subflows.iter().map(|s| (s.cwnd << 10) * r.srtt_us / s.srtt_us).sum::<u64>();
    let rate = sum * sum;
    let scaled2 = (r.cwnd << 10) * (r.cwnd << 10);
    let divisor = (den * r.cwnd * rate).max(1);
    if num == -1 {
        if den * scaled2 < rate {
            -((((rate - den * scaled2) << 10) / divisor) as i64)
        } else {
            (((den * scaled2 - rate) << 10) / divisor) as i64
        }
    } else {
        ((((num as u64) * rate + den * scaled2) << 10) / divisor) as i64
    }
}

/// ACKs OLIA takes to move the window by one segment at counter step `step`, or None when the
/// step is 0 (the window never moves).
fn linux_olia_acks_per_segment(step: i64) -> Option<u64> {
    (step != 0).then(|| 1023u64.div_ceil(step.unsigned_abs()))
}

/// BALIA's figures as mptcp_balia_recalc_ai leaves them for `subflows[own]` (commit
/// 773f0e58 of mptcp_balia.c, the v0.9x one): rates x_k = mss·cwnd_k·8·10^6/srtt_us_k in
/// bytes/s with the own subflow's MSS for all, shifted right 5 bits at a time while the
/// largest exceeds 2^25; α = ⌊max/x_r⌋, an integer; ai = ⌊⌊(Σx)²·10/(x_r + max)⌋·w_r/(4x_r + max)⌋;
/// md = ⌊⌊w_r/2⌋ · min(α·2^10, 1.5·2^10) / 2^10⌋.
#[derive(Debug, PartialEq, Eq)]
struct LinuxBalia {
    alpha: u64,
    ai: u64,
    md: u64,
}

fn linux_balia(subflows: &[Kernel], own: usize) -> LinuxBalia {
    let rates: Vec<u64> = subflows.iter().map(|s| MSS * s.cwnd * 8_000_000 / s.srtt_us).collect();
    let mut rate = rates[own];
    let mut max = *rates.iter().max().expect("a subflow");
    let mut sum: u64 = rates.iter().sum();
    let alpha = max / rate;
    let mut shifts = 0;
    while max > 1 << 25 {
        max >>= 5;
        shifts += 5;
    }
    if shifts > 0 {
        sum = rates.iter().map(|x| x >> shifts).sum();
        rate >>= shifts;
    }
    let w = subflows[own].cwnd;
    let ai = match sum * sum * 10 / (rate + max) * w / (4 * rate + max) {
        0 => w,
        ai => ai,
    };
    let md = ((w / 2) * (alpha << 10).min(1536)) >> 10;
    LinuxBalia { alpha, ai, md }
}

/// ACKs BALIA takes to add one segment (mptcp_balia_cong_avoid): snd_cwnd_cnt counts ACKs to
/// ai, and one more ACK adds the segment.
fn linux_balia_acks_per_segment(subflows: &[Kernel], own: usize) -> u64 {
    linux_balia(subflows, own).ai + 1
}

/// ssthresh (segments) after a loss under LIA and OLIA: tcp_reno_ssthresh
/// (net/ipv4/tcp_cong.c), half the window rounded down, at least 2.
fn linux_reno_ssthresh(cwnd: u64) -> u64 {
    (cwnd / 2).max(2)
}

/// ssthresh (segments) after a loss under BALIA: mptcp_balia_ssthresh, cwnd − md, at least 1.
fn linux_balia_ssthresh(cwnd: u64, md: u64) -> u64 {
    cwnd.saturating_sub(md).max(1)
}

/// Slow start on one ACK of `acked` segments (tcp_slow_start, kernels from 4.3 on, which the
/// three modules call and then return): every acknowledged segment, up to ssthresh.
fn linux_slow_start(cwnd: u64, ssthresh: u64, acked: u64) -> u64 {
    (cwnd + acked).min(ssthresh)
}

// ---------------------------------------------------------------------------------------
// LIA

// Equal paths, w = 20, rtt = 20 ms each. RFC 6356: Σ w/rtt = 2·1000 = 2000 segments/s,
// max w/rtt² = 20/0.0004 = 50 000, alpha/cwnd_total = 50 000/2000² = 1/80 (the cap 1/w = 1/20
// does not bind): 1000/80 = 12.5 bytes per segment, both paths.
// Kernel: srtt_us = 160 000; cwnd·2^32/srtt_us² = 85 899 345 920/2.56·10^10 = 3.36 → 3 for
// both, the tie to the later one (identical anyway); Σ = 2·20·2^10 = 40 960;
// alpha = 20·2^32/40 960² = 85 899 345 920/1 677 721 600 = 51.2 → 51;
// 2^12/51 = 80.3 → 80 = max(80, 20): 81 ACKs per segment, 12.35 bytes per ACK.
//
// Fast/slow: A 40 segments at 20 ms, B 10 at 100 ms. Σ w/rtt = 2000 + 100 = 2100, squared
// 4.41·10^6; max w/rtt² = 40/0.0004 = 10^5 (A; B has 10/0.01 = 1000):
// alpha/cwnd_total = 10^5/4.41·10^6 = 1/44.1 → 22.676 bytes, both paths (caps 1/40 and 1/10).
// Kernel: srtt_us 160 000 and 800 000; best values ⌊40·2^32/2.56·10^10⌋ = 6 and
// ⌊10·2^32/6.4·10^11⌋ = 0 → A; Σ = 40 960 + ⌊10 240·160 000/800 000⌋ = 40 960 + 2048 = 43 008;
// alpha = ⌊171 798 691 840/1 849 688 064⌋ = ⌊92.88⌋ = 92; 2^12/92 = 44.5 → 44
// (max with 40 and with 10: 44): 45 ACKs per segment on each, 22.22 bytes per ACK.
//
// One in slow start: A 8 segments at 10 ms (slow start), B 40 at 40 ms; B's increase.
// Σ w/rtt = 800 + 1000 = 1800, squared 3.24·10^6; max w/rtt² = 8/0.0001 = 80 000 (A: a path
// in slow start counts as soon as it has an RTT, in both); 80 000/3.24·10^6 = 1/40.5 (the cap
// 1/40 just does not bind) → 24.691 bytes.
// Kernel: srtt_us 80 000 and 320 000; best values ⌊8·2^32/6.4·10^9⌋ = 5, ⌊40·2^32/1.024·10^11⌋
// = 1 → A; Σ = 8192 + ⌊40 960·80 000/320 000⌋ = 8192 + 10 240 = 18 432;
// alpha = ⌊34 359 738 368/339 738 624⌋ = ⌊101.1⌋ = 101; 2^12/101 = 40.6 → 40 = max(40, 40):
// 41 ACKs, 24.39 bytes per ACK.
//
// After a loss on one path: equal paths at 20 ms, A (ℓ = 2 MB) halves to 10 (below); then
// Σ w/rtt = 500 + 1000 = 1500, squared 2.25·10^6; max w/rtt² = 20/0.0004 = 50 000 (B):
// 1/45 → 22.222 bytes on both (caps 1/10, 1/20).
// Kernel: best values ⌊10·2^32/2.56·10^10⌋ = 1, ⌊20·2^32/2.56·10^10⌋ = 3 → B;
// Σ = 10 240 + 20 480 = 30 720; alpha = ⌊85 899 345 920/943 718 400⌋ = ⌊91.02⌋ = 91;
// 2^12/91 = 45.01 → 45: 46 ACKs, 21.74 bytes per ACK.
//
// Where they should agree: with an unbinding cap the kernel's increase is 1/(⌊2^12/alpha⌋ + 1)
// against the RFC's alpha_exact/2^12 with alpha_exact in [alpha, alpha + 1): never faster,
// slower by at most 1/thr (the extra ACK) + 1/alpha (alpha's truncation); with the cap binding,
// 1/(cwnd + 1) against 1/cwnd.

#[test]
fn lia_increase_matches_linux_to_the_kernel_s_rounding() {
    let cases: [Case<f64, u64, u64>; 7] = [
        // (state, subflows, own, millinet bytes/segment by hand, kernel alpha, kernel ACKs)
        ("equal paths, A", &EQUAL, 0, 12.5, 51, 81),
        ("equal paths, B", &EQUAL, 1, 12.5, 51, 81),
        ("fast path", &FAST_SLOW, 0, 1000.0 / 44.1, 92, 45),
        ("slow path", &FAST_SLOW, 1, 1000.0 / 44.1, 92, 45),
        ("next to a path in slow start", &ONE_IN_SLOW_START, 1, 1000.0 / 40.5, 101, 41),
        ("after its loss, A", &AFTER_LOSS, 0, 1000.0 / 45.0, 91, 46),
        ("after A's loss, B", &AFTER_LOSS, 1, 1000.0 / 45.0, 91, 46),
    ];
    for (what, states, own, by_hand, alpha, acks) in cases {
        let millinet = assert_millinet("lia", states, own, by_hand);
        let subflows = kernels(states);
        assert_eq!(linux_lia_alpha(&subflows), alpha, "{what}: kernel alpha");
        assert_eq!(linux_lia_acks_per_segment(&subflows, own), acks, "{what}: kernel ACKs per segment");
        let linux = per_ack(acks);
        let bound = 1.0 / (acks - 1) as f64 + 1.0 / alpha as f64;
        assert!(linux <= millinet, "{what}: the kernel is never faster here");
        assert_within(linux, millinet, bound, what);
    }
}

// Large windows (the mmWave scale: a 2 Gbit/s path at 20 ms holds about 3500 segments of
// 1448 bytes). Two equal paths at 20 ms.
// w = 600 each: the RFC gives alpha/cwnd_total = 1/(4·600) = 1/2400 → 0.4167 bytes per segment.
// Kernel: Σ = 2·600·2^10 = 1 228 800; alpha = 600·2^32/1 228 800² = 2 576 980 377 600/
// 1 509 949 440 000 = 1.71 → 1; threshold max(2^12/1, 600) = 4096: 4097 ACKs, 0.2441 bytes:
// 41 % slower (alpha's 2^12 scale leaves it one significant bit).
// w = 5000 each: the RFC gives 1/20 000 → 0.05 bytes. Kernel: alpha = 5000·2^32/10 240 000²
// = 0.2048 → 0, raised to 1; threshold max(4096, 5000) = 5000: 5001 ACKs, 0.19996 bytes: four
// times the RFC's increase, each subflow as aggressive as one Reno flow (no coupling left).
#[test]
fn linux_lia_loses_its_alpha_to_integer_truncation_at_large_windows() {
    for (w, millinet_by_hand, alpha, acks) in [(600, 1000.0 / 2400.0, 1, 4097), (5000, 1000.0 / 20_000.0, 1, 5001)] {
        let states = [avoiding(w, 20, 1_000_000), avoiding(w, 20, 1_000_000)];
        // A 100 000-segment ACK reads the rule to 10^-5 byte.
        let millinet = millinet_bytes_per_segment("lia", &states, 0, 100_000);
        assert_near(millinet, millinet_by_hand, 2e-5, &format!("millinet at w = {w}"));
        let subflows = kernels(&states);
        assert_eq!(linux_lia_alpha(&subflows), alpha, "w = {w}");
        assert_eq!(linux_lia_acks_per_segment(&subflows, 0), acks, "w = {w}");
        let ratio = per_ack(acks) / millinet;
        match w {
            600 => assert_near(ratio, 2400.0 / 4097.0, 1e-3, "w = 600: the kernel at 0.586 of the RFC's increase"),
            _ => assert_near(ratio, 20_000.0 / 5001.0, 2e-3, "w = 5000: the kernel at 4.0 times the RFC's increase"),
        }
    }
}

// Long RTTs, small windows: A 30 segments at 60 ms, B 10 at 120 ms. RFC: w/rtt = 500 and
// 250/3 (Σ = 1750/3, squared 3 062 500/9); max w/rtt² = 30/0.0036 = 25 000/3 (A);
// alpha/cwnd_total = (25 000/3)·9/3 062 500 = 6/245 → 24.49 bytes per segment on both (caps
// 1/30, 1/10). Kernel: srtt_us 480 000 and 960 000; the best values ⌊30·2^32/2.304·10^11⌋ =
// ⌊0.56⌋ and ⌊10·2^32/9.216·10^11⌋ = ⌊0.047⌋ are both 0, so the "best" path is whichever the
// kernel walks last — the connection's first subflow (the list is newest first):
// - B walked last: Σ = ⌊30 720·960 000/480 000⌋ + 10 240 = 71 680; alpha = ⌊10·2^32/71 680²⌋ =
//   ⌊42 949 672 960/5 138 022 400⌋ = ⌊8.36⌋ = 8; threshold 2^12/8 = 512: 513 ACKs, 1.95 bytes,
//   12.6 times slower than the RFC;
// - A walked last: Σ = 30 720 + ⌊10 240·480 000/960 000⌋ = 35 840; alpha = ⌊30·2^32/35 840²⌋ =
//   ⌊128 849 018 880/1 284 505 600⌋ = ⌊100.3⌋ = 100; threshold max(40, 30) = 40: 41 ACKs,
//   24.39 bytes, the RFC's to the counter's rounding.
#[test]
fn linux_lia_picks_its_best_path_by_walk_order_when_rtts_are_long() {
    let states = [avoiding(30, 60, 0), avoiding(10, 120, 0)];
    let millinet = assert_millinet("lia", &states, 0, 6000.0 / 245.0);
    let a_first = kernels(&states);
    let b_first = [a_first[1], a_first[0]];
    assert_eq!((linux_lia_alpha(&a_first), linux_lia_acks_per_segment(&a_first, 0)), (8, 513), "B walked last");
    assert_eq!((linux_lia_alpha(&b_first), linux_lia_acks_per_segment(&b_first, 1)), (100, 41), "A walked last");
    assert_near(millinet / per_ack(513), 513.0 * 6.0 / 245.0, 0.01, "12.6 times slower with B taken as best");
    assert_within(per_ack(41), millinet, 1.0 / 40.0 + 1.0 / 100.0, "A taken as best");
}

// Delayed ACKs: an ACK of two segments. millinet (RFC 6356 §3, bytes_acked; RFC 3465) adds
// twice what one segment adds: 2·12.5 = 25 bytes on equal paths. The kernel's snd_cwnd_cnt
// counts ACKs, not segments, in all three modules (tcp_reno_cong_avoid, which they replace,
// counts segments): the ACK advances it by one, as an ACK of one segment, 12.35 bytes per ACK
// on average — with delayed ACKs the kernel's coupled subflows grow at half the RFC's rate
// per RTT (and slower still with stretch ACKs: GRO/LRO).
#[test]
fn linux_counts_acks_where_millinet_counts_acknowledged_bytes() {
    // What one ACK of one and of two segments adds, to the byte the window reads in.
    let one = millinet_bytes_per_segment("lia", &EQUAL, 0, 1);
    let two = 2.0 * millinet_bytes_per_segment("lia", &EQUAL, 0, 2);
    assert_near(one, 12.5, 1.0, "one segment");
    assert_near(two, 25.0, 1.0, "two segments");
    // The same per segment, read finely: an ACK of two adds 2·12.5 bytes.
    let per_segment = assert_millinet("lia", &EQUAL, 0, 12.5);
    let linux_per_ack = per_ack(linux_lia_acks_per_segment(&kernels(&EQUAL), 0));
    assert_near(2.0 * per_segment / linux_per_ack, 2.0 * 81.0 / 80.0, 0.01, "a two-segment ACK: millinet against the kernel");
}

// ---------------------------------------------------------------------------------------
// OLIA
//
// The paper's increase per ACK (segments): (w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + α_r/w_r.
// The kernel's counter step s = ⌊2^10 · that⌋ (rounded toward zero), one segment per
// ⌈1023/|s|⌉ ACKs. Against the paper it is off by up to 1/|s| (the truncation) plus
// (|s| + 1)/1023 (the whole ACKs and the threshold 1023 for 1024): the bound asserted.
//
// Equal paths: M = {A, B} (equal windows), so B∖M is empty and α = 0. First term
// (20/0.0004)/2000² = 1/80 → 12.5 bytes. Kernel: rate = (1 + 2·20 480)² = 40 961² =
// 1 677 803 521; (20·2^10)² = 419 430 400; s = ⌊419 430 400·2^10/(20·1 677 803 521)⌋ =
// ⌊12.80⌋ = 12; ⌈1023/12⌉ = 86 ACKs (85·12 = 1020): 11.63 bytes per ACK, 7 % slower.
//
// Fast/slow: ℓ/rtt²: A 10^5/0.0004 = 2.5·10^8, B 10^7/0.01 = 10^9 → the best path is B, the
// largest window A: M = {A}, B∖M = {B}, n = 2: α_A = −1/2, α_B = +1/2.
// A: 10^5/4.41·10^6 − 0.5/40 = 0.022676 − 0.0125 = 0.010176 → 10.176 bytes.
// B: 1000/4.41·10^6 + 0.5/10 = 0.000227 + 0.05 = 0.050227 → 50.227 bytes.
// Kernel A: rate = (1 + 40 960 + ⌊10 240·160 000/800 000⌋)² = 43 009² = 1 849 774 081; ε = −1/2;
// 2·40 960² = 3 355 443 200 ≥ rate, so s = +⌊(3 355 443 200 − 1 849 774 081)·2^10/(2·40·rate)⌋
// = ⌊1 541 805 177 856/147 981 926 480⌋ = ⌊10.42⌋ = 10: 103 ACKs, 9.71 bytes.
// Kernel B: rate = (1 + ⌊40 960·800 000/160 000⌋ + 10 240)² = 215 041² = 46 242 631 681; ε = +1/2;
// s = ⌊(rate + 2·10 240²)·2^10/(2·10·rate)⌋ = ⌊51.43⌋ = 51: ⌈1023/51⌉ = 21 ACKs, 47.62 bytes.
//
// One in slow start, B's increase: ℓ/rtt²: A 5·10^4/0.0001 = 5·10^8, B 10^6/0.0016 = 6.25·10^8:
// B is best and has the largest window, α = 0. 25 000/3.24·10^6 = 0.0077160 → 7.716 bytes.
// Kernel: rate = (1 + ⌊8192·320 000/80 000⌋ + 40 960)² = 73 729² = 5 435 965 441;
// s = ⌊40 960²·2^10/(40·rate)⌋ = ⌊1 717 986 918 400/217 438 617 640⌋ = ⌊7.90⌋ = 7:
// ⌈1023/7⌉ = 147 ACKs, 6.80 bytes, 12 % slower.
//
// After a loss on A (ℓ_1A = 2 MB, ℓ_2A = 0, window 20 → 10): ℓ_A = 2·10^6, ℓ/rtt²
// 5·10^9 against B's 2.5·10^9: A is best, B has the largest window: α_A = +1/2, α_B = −1/2.
// A: (10/0.0004)/1500² + 0.5/10 = 0.011111 + 0.05 = 0.061111 → 61.111 bytes.
// B: (20/0.0004)/1500² − 0.5/20 = 0.022222 − 0.025 = −0.0027778 → −2.778 bytes.
// Kernel A: rate = (1 + 10 240 + 20 480)² = 30 721² = 943 779 841; s = ⌊(rate + 2·10 240²)·2^10/
// (2·10·rate)⌋ = ⌊1 181 178 921 984/18 875 596 820⌋ = ⌊62.58⌋ = 62: ⌈1023/62⌉ = 17 ACKs, 58.82 bytes.
// Kernel B: 2·20 480² = 838 860 800 < rate, so s = −⌊(943 779 841 − 838 860 800)·2^10/(2·20·rate)⌋
// = −⌊2.85⌋ = −2: 512 ACKs per segment lost, −1.953 bytes per ACK (30 % less than the paper's:
// a step of 2 has one significant bit).

#[test]
fn olia_increase_matches_linux_to_the_kernel_s_rounding() {
    let cases: [OliaCase; 7] = [
        // (state, subflows, own, millinet bytes/segment by hand, kernel ε, step, ACKs)
        ("equal paths, A", &EQUAL, 0, 12.5, (0, 1), 12, 86),
        ("equal paths, B", &EQUAL, 1, 12.5, (0, 1), 12, 86),
        ("fast path, largest window", &FAST_SLOW, 0, 1000.0 * (1.0 / 44.1 - 0.0125), (-1, 2), 10, 103),
        ("slow path, best", &FAST_SLOW, 1, 1000.0 * (1000.0 / 4.41e6 + 0.05), (1, 2), 51, 21),
        ("next to a path in slow start", &ONE_IN_SLOW_START, 1, 1000.0 * 25_000.0 / 3.24e6, (0, 1), 7, 147),
        ("after its loss, best", &AFTER_LOSS, 0, 1000.0 * (1.0 / 90.0 + 0.05), (1, 2), 62, 17),
        ("after A's loss, largest window", &AFTER_LOSS, 1, 1000.0 * (1.0 / 45.0 - 0.025), (-1, 2), -2, 512),
    ];
    for (what, states, own, by_hand, epsilon, step, acks) in cases {
        let millinet = assert_millinet("olia", states, own, by_hand);
        // After A's loss the kernel's view of A: the halved window, ℓ = max(ℓ_1, ℓ_2).
        let subflows = kernels(states);
        assert_eq!(linux_olia_epsilon(&subflows, own), epsilon, "{what}: kernel ε");
        assert_eq!(linux_olia_step(&subflows, own), step, "{what}: kernel counter step");
        assert_eq!(linux_olia_acks_per_segment(step), Some(acks), "{what}: kernel ACKs per segment");
        let linux = per_ack(acks) * step.signum() as f64;
        let bound = 1.0 / step.unsigned_abs() as f64 + (step.unsigned_abs() + 1) as f64 / 1023.0;
        assert_within(linux, millinet, bound, what);
    }
    // millinet's α_r is the kernel's ε_r in every state above.
    for (states, own, epsilon) in
        [(&FAST_SLOW, 0, -0.5), (&FAST_SLOW, 1, 0.5), (&AFTER_LOSS, 0, 0.5), (&AFTER_LOSS, 1, -0.5), (&EQUAL, 0, 0.0)]
    {
        let views = views(states);
        assert_eq!(olia::alpha(&views, own), epsilon);
    }
}

/// What each subflow of `states` publishes (its ℓ as the larger of ℓ_1r and ℓ_2r, which is
/// all OLIA reads).
fn views(states: &[State]) -> Vec<SubflowView> {
    states
        .iter()
        .map(|s| SubflowView {
            cwnd_bytes: s.cwnd_segments * MSS,
            srtt_ns: s.rtt_ms * MS,
            acked_since_loss_bytes: s.ell_bytes,
            ..SubflowView::default()
        })
        .collect()
}

// Large windows, two equal paths at 20 ms (α = 0): the paper's increase is w/(2w)² = 1/(4w)
// segments per ACK. The kernel's step ⌊2^30·w/(1 + 2·2^10·w)²⌋ ≈ ⌊2^10/(4w)⌋ is 0 from
// w = 256 on: its OLIA stops growing in congestion avoidance at 256 segments per path (1024
// for a single path) — 370 kB per path at MSS 1448, 148 Mbit/s per path at 20 ms.
// w = 255: rate = (1 + 2·261 120)² = 522 241² = 272 735 662 081; (261 120)² = 68 183 654 400;
// s = ⌊68 183 654 400·2^10/(255·rate)⌋ = ⌊1.0039⌋ = 1: 1023 ACKs, 0.978 bytes against the paper's
// 1000/1020 = 0.980.
// w = 256: rate = 524 289² = 274 878 955 521; s = ⌊2^36·2^10/(256·rate)⌋ = ⌊0.999996⌋ = 0.
// w = 600: s = ⌊0.4267⌋ = 0, while millinet adds 1000/2400 = 0.4167 bytes per segment.
#[test]
fn linux_olia_stops_growing_at_a_few_hundred_segments() {
    for (w, step) in [(255, 1), (256, 0), (600, 0)] {
        let states = [avoiding(w, 20, 1_000_000), avoiding(w, 20, 1_000_000)];
        let millinet = millinet_bytes_per_segment("olia", &states, 0, 100_000);
        assert_near(millinet, 1000.0 / (4 * w) as f64, 2e-5, &format!("millinet at w = {w}"));
        assert_eq!(linux_olia_step(&kernels(&states), 0), step, "w = {w}");
        match linux_olia_acks_per_segment(step) {
            Some(acks) => assert_within(per_ack(acks), millinet, 0.01, "w = 255"),
            None => assert!(millinet > 0.4, "w = {w}: the kernel's window does not grow, millinet's does"),
        }
    }
}

// The kernel ranks paths by comparing ℓ_p·srtt_q² with ℓ_q·srtt_p² in u64, which wraps once
// ℓ·srtt_us² passes 2^64 ≈ 1.845·10^19: at 50 ms (srtt_us = 400 000, squared 1.6·10^11) from
// ℓ = 115 MB on — a few hundred milliseconds of a Gbit/s path without loss.
// A: 30 segments at 50 ms, ℓ = 120 MB; B: 20 at 50 ms, ℓ = 10 MB. ℓ/rtt²: A 4.8·10^10,
// B 4·10^9: A is the best path and has the largest window, so B∖M is empty: α = 0 for both
// (millinet). Kernel: A first, best = A (ℓ·1 ≥ 0); then B: 10^7·1.6·10^11 = 1.6·10^18 against
// 1.2·10^8·1.6·10^11 = 1.92·10^19, which wraps to 1.92·10^19 − 2^64 = 7.53·10^17: B "wins",
// lies outside M, so ε_B = +1/2 and ε_A = −1/2 — the kernel moves window from the better path
// to the worse.
#[test]
fn linux_olia_ranking_wraps_for_long_inter_loss_distances() {
    let states = [avoiding(30, 50, 120_000_000), avoiding(20, 50, 10_000_000)];
    let views = views(&states);
    assert_eq!((olia::alpha(&views, 0), olia::alpha(&views, 1)), (0.0, 0.0));
    let subflows = kernels(&states);
    assert_eq!((linux_olia_epsilon(&subflows, 0), linux_olia_epsilon(&subflows, 1)), ((-1, 2), (1, 2)));
}

// The window OLIA's negative term shrinks. After A's loss, B (20 segments = its ssthresh,
// largest window, not best) loses 1/512 segment per ACK in the kernel (above). The kernel
// leaves snd_ssthresh alone: at 19 segments cwnd < ssthresh, and the next ACK is slow start,
// back to min(19 + 1, 20) = 20 — the kernel's M path never goes below its last ssthresh by
// more than one segment: 700 ACKs take it to 19 after 512, back to 20 on the 513th, and the
// remaining 187 move the counter to −374 only. millinet lowers ssthresh with the window (the
// paper has no ssthresh; docs/models/coupled-cc.md, "OLIA's negative increase"), so B keeps
// giving window to A: its change per ACK, w/(10 + w)² − 1/(2w) segments with A at 10, is
// −1/360 at w = 20 (20/900 − 1/40) and more negative below (−0.0048 at 18, −0.021 at 11),
// so 700 ACKs take it below 20 − 700/360 = 18.06 segments. (Over 700 ACKs B's ℓ grows to
// 1.7 MB, still below A's 2 MB: the sets stay.)
#[test]
fn olia_moves_window_below_ssthresh_where_linux_slow_starts_back() {
    let mut b_cwnd = 20u64;
    let mut counter = 0i64;
    let step = linux_olia_step(&kernels(&AFTER_LOSS), 1);
    let mut lowest = b_cwnd;
    for _ in 0..700 {
        if b_cwnd < 20 {
            b_cwnd = linux_slow_start(b_cwnd, 20, 1);
            continue;
        }
        counter += step;
        if counter <= -1023 {
            b_cwnd = (b_cwnd - 1).max(1);
            counter = 0;
        }
        lowest = lowest.min(b_cwnd);
    }
    assert_eq!((lowest, b_cwnd, counter), (19, 20, -374), "the kernel dips one segment below ssthresh, then slow starts back");

    let mut subflows = connection("olia", &AFTER_LOSS);
    for _ in 0..700 {
        subflows[1].on_ack(&ack(MSS, 20));
    }
    assert!(subflows[1].cwnd_bytes() < 18_060, "millinet: {}", subflows[1].cwnd_bytes());
    assert_eq!(subflows[1].ssthresh_bytes(), subflows[1].cwnd_bytes(), "ssthresh follows");
}

// The fix. A lost everything and timed out (window one segment, slow start) but is the best
// path (ℓ = 5 MB); B has 2 segments in congestion avoidance, the largest window: α_B = −1/2.
// With equal RTTs B's change per acknowledged segment is w_B/(1 + w_B)² − 1/(2w_B): at 2
// segments 2/9 − 1/4 = −0.028, at 1.1 segments 1.1/4.41 − 1/2.2 = −0.21, so B's window went
// below one segment (to 753 bytes over 300 ACKs of one segment) before the rule kept a
// segment; the kernel keeps one (max(1, cwnd − 1) in mptcp_olia_cong_avoid) and, with B's
// ssthresh at 2, slow starts it back to 2.
#[test]
fn olia_never_shrinks_a_window_below_one_segment() {
    let factory = CcFactory::by_name("olia").expect("registered");
    let mut a =
        factory.build(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 4 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux });
    a.on_congestion_event(CongestionEvent::Rto, 0, 4 * MSS);
    a.on_ack(&AckSample { cwnd_limited: false, ..ack(5_000_000, 20) });
    assert_eq!(a.cwnd_bytes(), MSS);
    let mut b = subflow(&factory, avoiding(2, 20, 100_000));
    let mut lowest = u64::MAX;
    for _ in 0..300 {
        b.on_ack(&ack(MSS, 20));
        lowest = lowest.min(b.cwnd_bytes());
    }
    assert!(lowest < 2 * MSS, "B gave window to A ({lowest})");
    assert_eq!(lowest, MSS, "but kept one segment");
    assert!(b.ssthresh_bytes() >= MSS);
}

// ---------------------------------------------------------------------------------------
// BALIA
//
// The paper's increase per ACK (segments): x_r/(τ_r(Σx)²)·((1 + α_r)/2)·((4 + α_r)/5) with
// x = w/τ, α_r = max_k x_k/x_r. The kernel's ai is its inverse (times the w_r that x_r² hides:
// 1/ai = (x_r + x_max)(4x_r + x_max)/(10(Σx)²w_r)), truncated twice; one segment per ai + 1
// ACKs: slower by at most 1/ai, never faster (plus the rates' truncation, < 10^-3).
//
// Equal paths: x = 1000 segments/s each, α = 1: 1000/(0.02·2000²) = 1/80 → 12.5 bytes.
// Kernel: x = 1000·20·8·10^6/160 000 = 10^6 bytes/s each (below 2^25); ai = ⌊⌊(2·10^6)²·10/
// (2·10^6)⌋·20/(4·10^6 + 10^6)⌋ = ⌊2·10^7·20/5·10^6⌋ = 80: 81 ACKs, 12.35 bytes.
// Fast/slow: x_A = 2000, x_B = 100 segments/s; α_A = 1, α_B = 20.
// A: 2000/(0.02·2100²) = 1/44.1 → 22.676 bytes; B: 100/(0.1·2100²)·10.5·4.8 = 1/87.5 → 11.429.
// Kernel: x_A = 2·10^6, x_B = 10^5 bytes/s. A: ai = ⌊⌊4.41·10^13/4·10^6⌋·40/(8·10^6 + 2·10^6)⌋
// = ⌊11 025 000·40/10^7⌋ = ⌊44.1⌋ = 44: 45 ACKs, 22.22 bytes. B: ai = ⌊⌊4.41·10^13/2.1·10^6⌋·10/
// (4·10^5 + 2·10^6)⌋ = ⌊21 000 000·10/2.4·10^6⌋ = ⌊87.5⌋ = 87: 88 ACKs, 11.36 bytes.
// One in slow start, B: x_A = 800, x_B = 1000 → α_B = 1: 1000/(0.04·1800²) = 0.0077160 → 7.716.
// Kernel: x = 8·10^5 and 10^6; ai = ⌊⌊3.24·10^12·10/2·10^6⌋·40/5·10^6⌋ = ⌊16 200 000·40/5·10^6⌋ =
// ⌊129.6⌋ = 129: 130 ACKs, 7.69 bytes.
// After A's loss: x_A = 500, x_B = 1000: α_A = 2, α_B = 1. A: 500/(0.02·1500²)·1.5·1.2 = 0.02
// → 20 bytes; B: 1000/(0.02·1500²) = 1/45 → 22.222. Kernel: x = 5·10^5, 10^6. A: ai =
// ⌊⌊2.25·10^13/1.5·10^6⌋·10/(2·10^6 + 10^6)⌋ = ⌊1.5·10^7·10/3·10^6⌋ = 50: 51 ACKs, 19.61 bytes.
// B: ai = ⌊⌊2.25·10^13/2·10^6⌋·20/5·10^6⌋ = ⌊11 250 000·20/5·10^6⌋ = 45: 46 ACKs, 21.74 bytes.
// Large windows, two equal paths of 5000 segments at 20 ms: the paper's 1/20 000 → 0.05 bytes.
// Kernel: x = 1000·5000·8·10^6/160 000 = 2.5·10^8 > 2^25, shifted once: 7 812 500 each;
// ai = ⌊⌊(1.5625·10^7)²·10/1.5625·10^7⌋·5000/(3.125·10^7 + 7.8125·10^6)⌋ = 20 000: 20 001 ACKs.
// BALIA's rates keep their precision: unlike LIA's and OLIA's, its kernel increase stays
// the paper's at any window.

#[test]
fn balia_increase_matches_linux_to_the_kernel_s_rounding() {
    let cases: [Case<f64, u64, u64>; 7] = [
        // (state, subflows, own, millinet bytes/segment by hand, kernel α, kernel ai)
        ("equal paths, A", &EQUAL, 0, 12.5, 1, 80),
        ("equal paths, B", &EQUAL, 1, 12.5, 1, 80),
        ("fast path", &FAST_SLOW, 0, 1000.0 / 44.1, 1, 44),
        ("slow path", &FAST_SLOW, 1, 1000.0 / 87.5, 20, 87),
        ("next to a path in slow start", &ONE_IN_SLOW_START, 1, 1000.0 * 1000.0 / (0.04 * 1800.0 * 1800.0), 1, 129),
        ("after its loss", &AFTER_LOSS, 0, 20.0, 2, 50),
        ("after A's loss, B", &AFTER_LOSS, 1, 1000.0 / 45.0, 1, 45),
    ];
    for (what, states, own, by_hand, alpha, ai) in cases {
        let millinet = assert_millinet("balia", states, own, by_hand);
        let subflows = kernels(states);
        let figures = linux_balia(&subflows, own);
        assert_eq!((figures.alpha, figures.ai), (alpha, ai), "{what}: kernel α and ai");
        let linux = per_ack(linux_balia_acks_per_segment(&subflows, own));
        assert!(linux <= millinet * 1.001, "{what}: the kernel is never faster");
        assert_within(linux, millinet, 1.0 / ai as f64 + 1e-3, what);
    }
    let large = [avoiding(5000, 20, 0), avoiding(5000, 20, 0)];
    let millinet = millinet_bytes_per_segment("balia", &large, 0, 100_000);
    assert_near(millinet, 0.05, 2e-5, "millinet at 5000 segments");
    assert_eq!(linux_balia(&kernels(&large), 0).ai, 20_000);
    assert_within(per_ack(20_001), millinet, 5e-4, "5000 segments");
}

// ---------------------------------------------------------------------------------------
// Decreases: one fast retransmit with the whole window in flight.
//
// LIA and OLIA: the kernel's tcp_reno_ssthresh halves snd_cwnd in whole segments; millinet
// halves FlightSize in bytes (RFC 5681 eq. (4)), which is the window for a cwnd-limited
// sender. Equal for even windows (20 → 10, 40 → 20, 10 → 5); an odd window of 21 segments
// keeps 10 in the kernel, 10.5 (10 500 bytes) in millinet. After the recovery both set cwnd to
// ssthresh (the kernel's PRR ends there, tcp_end_cwnd_reduction; millinet is there at once).
// A timeout: cwnd = 1 segment in both.
//
// BALIA: ssthresh = w − (w/2)·min(α, 1.5). The kernel's α is ⌊x_max/x_r⌋, so only a path at half
// the fastest rate or less gets the 1.5; millinet's α is real (the paper's):
// - equal paths (α = 1): 20 → 10 in both;
// - fast/slow, B (α = 20): millinet keeps (1 − 0.75)·10 000 = 2500 bytes; the kernel
//   md = ⌊⌊10/2⌋·1536/1024⌋ = ⌊7.5⌋ = 7 → 10 − 7 = 3 segments;
// - fast/slow, A (α = 1): 40 → 20 in both;
// - after A's loss, A again (α = 2, window 10): millinet 2500 bytes, the kernel 10 − 7 = 3;
// - A 30 segments at 40 ms (x = 750), B 16 at 40 ms (x = 400), B's loss: α_B = 1.875.
//   millinet: min(1.875, 1.5) = 1.5, keeps 1/4: 4000 bytes. Kernel: α = ⌊750 000/400 000⌋ = 1,
//   md = ⌊16/2⌋ = 8 → 8 segments: twice millinet's — for a path between half and all of the
//   fastest rate the kernel halves, where the paper backs off to a quarter.
#[test]
fn decreases_against_linux() {
    for name in ["lia", "olia"] {
        for (what, states, loser) in
            [("equal", &EQUAL, 0), ("fast", &FAST_SLOW, 0), ("slow", &FAST_SLOW, 1), ("after A's loss, A", &AFTER_LOSS, 0)]
        {
            let cwnd = states[loser].cwnd_segments;
            let linux = linux_reno_ssthresh(cwnd) * MSS;
            assert_eq!(millinet_after_loss(name, states, loser), (linux, linux), "{name}, {what}");
        }
        let odd = [avoiding(21, 20, 0), avoiding(21, 20, 0)];
        assert_eq!(linux_reno_ssthresh(21), 10);
        assert_eq!(millinet_after_loss(name, &odd, 0), (10_500, 10_500), "{name}: half a segment above the kernel");
        let mut subflows = connection(name, &EQUAL);
        subflows[0].on_congestion_event(CongestionEvent::Rto, 0, 20 * MSS);
        assert_eq!((subflows[0].ssthresh_bytes(), subflows[0].cwnd_bytes()), (linux_reno_ssthresh(20) * MSS, MSS), "{name}: RTO");
    }

    let mid = [avoiding(30, 40, 0), avoiding(16, 40, 0)];
    let cases: [Case<u64, u64, u64>; 5] = [
        // (state, subflows, loser, kernel α, kernel ssthresh in segments, millinet ssthresh in bytes)
        ("equal paths", &EQUAL, 0, 1, 10, 10_000),
        ("fast path", &FAST_SLOW, 0, 1, 20, 20_000),
        ("slow path", &FAST_SLOW, 1, 20, 3, 2_500),
        ("after its loss, again", &AFTER_LOSS, 0, 2, 3, 2_500),
        ("α = 1.875", &mid, 1, 1, 8, 4_000),
    ];
    for (what, states, loser, alpha, linux_segments, millinet_bytes) in cases {
        let subflows = kernels(states);
        // (md: the kernel's multiplicative decrease, in segments.)
        let LinuxBalia { alpha: kernel_alpha, md, .. } = linux_balia(&subflows, loser);
        assert_eq!(kernel_alpha, alpha, "{what}");
        assert_eq!(linux_balia_ssthresh(subflows[loser].cwnd, md), linux_segments, "{what}: kernel");
        assert_eq!(millinet_after_loss("balia", states, loser), (millinet_bytes, millinet_bytes), "{what}: millinet");
    }
    // millinet's real α on the 1.875 state, which the kernel truncates to 1.
    assert_eq!(balia::alpha(&views(&mid), 1), 1.875);
    assert_eq!(Balia::kept_flight_bytes(16_000, &views(&mid), 1), 4_000);
}

// ---------------------------------------------------------------------------------------
// Slow start: one subflow in slow start (A: 8 segments), the other in congestion avoidance.
// An ACK of one segment adds one in both. An ACK of three (a stretch ACK): millinet adds 2
// (RFC 3465's limit L = 2·SMSS, `ack_growth` in cc/mod.rs, shared with NewReno and CUBIC);
// the kernel's tcp_slow_start adds all 3 (kernels since 3.8 have no L), up to ssthresh. Both
// coupled rules leave slow start alone; the kernel's LIA and BALIA recompute their alpha / ai
// on every slow-start ACK, millinet on every congestion-avoidance ACK.
#[test]
fn slow_start_against_linux() {
    for name in ["lia", "olia", "balia"] {
        for (segments, linux_segments, millinet_bytes) in [(1, 9, 9_000), (3, 11, 10_000)] {
            let mut subflows = connection(name, &ONE_IN_SLOW_START);
            subflows[0].on_ack(&ack(segments * MSS, 10));
            assert_eq!(linux_slow_start(8, u64::from(u32::MAX >> 1), segments), linux_segments);
            assert_eq!(subflows[0].cwnd_bytes(), millinet_bytes, "{name}: {segments} segments acknowledged");
        }
    }
    // The path in slow start counts in the other's coupled increase in both (it has an RTT):
    // LIA's best path for B is A (above). Through the public rules, the same figure:
    let views = views(&ONE_IN_SLOW_START);
    assert_near(Lia::increase(&views, 1) * (MSS * MSS) as f64, 1000.0 / 40.5, 1e-9, "LIA, B");
    assert_near(Olia::increase(&views, 1) * (MSS * MSS) as f64, 1000.0 * 25_000.0 / 3.24e6, 1e-9, "OLIA, B");
}
