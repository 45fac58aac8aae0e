//! HighSpeed TCP (RFC 3649, docs/models/transport.md §6): per-RTT increase a(w) and decrease b(w)
//! measured on the algorithm against the RFC's Appendix B table, and standard TCP (Reno)
//! behaviour up to Low_Window = 38 segments.

use millinet_transport::cc::highspeed::HighSpeed;
use millinet_transport::cc::newreno::NewReno;
use millinet_transport::cc::{AckSample, CcInit, CongestionControl, CongestionEvent};

const MSS: u64 = 1000;

/// RFC 3649 Appendix B: window w (segments), a(w) (segments per RTT), b(w).
const TABLE: [(u64, f64, f64); 22] = [
    (38, 1.0, 0.50),
    (118, 2.0, 0.44),
    (221, 3.0, 0.41),
    (347, 4.0, 0.38),
    (495, 5.0, 0.37),
    (663, 6.0, 0.35),
    (851, 7.0, 0.34),
    (1058, 8.0, 0.33),
    (1284, 9.0, 0.32),
    (1529, 10.0, 0.31),
    (1793, 11.0, 0.30),
    (2076, 12.0, 0.29),
    (2378, 13.0, 0.28),
    (2699, 14.0, 0.28),
    (3039, 15.0, 0.27),
    (3399, 16.0, 0.27),
    (3778, 17.0, 0.26),
    (4177, 18.0, 0.26),
    (4596, 19.0, 0.25),
    (5036, 20.0, 0.25),
    (5497, 21.0, 0.24),
    (84035, 71.0, 0.10),
];

fn ack(acked_bytes: u64) -> AckSample {
    AckSample { acked_bytes, cwnd_limited: true, ..AckSample::default() }
}

fn init(cwnd_segments: u64) -> CcInit {
    CcInit { mss_bytes: MSS, initial_cwnd_bytes: cwnd_segments * MSS }
}

/// One round trip: a window's worth of one-segment ACKs.
fn one_rtt(cc: &mut dyn CongestionControl) {
    for _ in 0..cc.cwnd_bytes() / MSS {
        cc.on_ack(&ack(MSS));
    }
}

/// A HighSpeed sender in congestion avoidance at exactly `w` segments: it starts at a
/// window `start` segments and a loss with the FlightSize that leaves ssthresh = w.
fn in_congestion_avoidance_at(w: u64, start: u64) -> HighSpeed {
    let mut cc = HighSpeed::new(&init(start));
    let keep = 1.0 - millinet_transport::cc::highspeed::b(start as f64);
    let flight = ((w * MSS) as f64 / keep).ceil() as u64;
    cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, flight);
    cc.on_recovery_exit(0);
    assert!(cc.cwnd_bytes().abs_diff(w * MSS) <= 1, "{} vs {}", cc.cwnd_bytes(), w * MSS);
    cc
}

#[test]
fn increase_per_rtt_and_decrease_factor_match_the_rfc_table() {
    for (w, a_table, b_table) in TABLE {
        // Decrease: a loss at window w with w segments in flight keeps (1 − b(w))·w.
        let mut cc = HighSpeed::new(&init(w));
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, w * MSS);
        let b = 1.0 - cc.ssthresh_bytes() as f64 / (w * MSS) as f64;
        assert_eq!(cc.cwnd_bytes(), cc.ssthresh_bytes());
        // The table rounds b to two decimals.
        assert!((b - b_table).abs() <= 0.005 + 1e-6, "w = {w}: b = {b:.4}, table {b_table}");
        // Increase: one RTT of ACKs in congestion avoidance at window w adds a(w)
        // segments (less a hair: the window grows during the RTT); the table rounds a.
        let mut cc = in_congestion_avoidance_at(w, w);
        let before = cc.cwnd_bytes();
        one_rtt(&mut cc);
        let a = (cc.cwnd_bytes() - before) as f64 / MSS as f64;
        assert!((a - a_table).abs() < 0.1, "w = {w}: a = {a:.3}, table {a_table}");
    }
}

#[test]
fn reno_up_to_low_window() {
    // The same losses and ACKs given to HighSpeed and NewReno, all below 38 segments.
    let mut hs = HighSpeed::new(&init(10));
    let mut reno = NewReno::new(&init(10));
    let ccs: [&mut dyn CongestionControl; 2] = [&mut hs, &mut reno];
    let mut trace = [Vec::new(), Vec::new()];
    for (cc, trace) in ccs.into_iter().zip(trace.iter_mut()) {
        // Slow start from 10 to 30 segments, then a loss with 30 in flight: halved.
        for _ in 0..20 {
            cc.on_ack(&ack(MSS));
        }
        trace.push(cc.cwnd_bytes());
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 30 * MSS);
        trace.push(cc.ssthresh_bytes());
        cc.on_recovery_exit(0);
        // Congestion avoidance: 1 segment per RTT for 8 RTTs (15 → 23 segments).
        for _ in 0..8 {
            one_rtt(cc);
            trace.push(cc.cwnd_bytes());
        }
        // A timeout: one segment, ssthresh = FlightSize / 2.
        cc.on_congestion_event(CongestionEvent::Rto, 0, 20 * MSS);
        trace.push(cc.cwnd_bytes());
        trace.push(cc.ssthresh_bytes());
    }
    let [hs_trace, reno_trace] = trace;
    assert_eq!(&hs_trace[..2], &[30 * MSS, 15 * MSS]);
    assert_eq!(&hs_trace[..2], &reno_trace[..2], "slow start and b = 0.5");
    assert_eq!(&hs_trace[10..], &[MSS, 10 * MSS]);
    assert_eq!(&hs_trace[10..], &reno_trace[10..], "RTO as Reno");
    // RFC 3465 counting adds exactly 1 segment per window (NewReno); RFC 3649's a(w)/w per
    // ACK (a = 1) adds a little less per window of ACKs as the window grows within it.
    let mut prev = 15 * MSS;
    for (k, (h, r)) in hs_trace[2..10].iter().zip(&reno_trace[2..10]).enumerate() {
        assert_eq!(*r, (16 + k as u64) * MSS, "NewReno: +1 segment per RTT");
        assert!((MSS * 9 / 10..=MSS).contains(&(h - prev)), "RTT {k}: highspeed grew {} bytes", h - prev);
        prev = *h;
    }
}

#[test]
fn large_windows_grow_faster_and_back_off_less_than_reno() {
    let mut hs = in_congestion_avoidance_at(1000, 1000);
    let mut reno = NewReno::new(&init(1000));
    reno.on_congestion_event(CongestionEvent::FastRetransmit, 0, 2000 * MSS);
    reno.on_recovery_exit(0);
    for _ in 0..10 {
        one_rtt(&mut hs);
        one_rtt(&mut reno);
    }
    assert_eq!(reno.cwnd_bytes(), 1010 * MSS);
    // a(w) goes from 7.7 (w = 1000) to 8.1 (w = 1079) segments per RTT.
    let grown = (hs.cwnd_bytes() - 1000 * MSS) as f64 / MSS as f64;
    assert!((77.0..81.0).contains(&grown), "{grown}");
    let before = hs.cwnd_bytes();
    hs.on_congestion_event(CongestionEvent::FastRetransmit, 0, before);
    let kept = hs.ssthresh_bytes() as f64 / before as f64;
    // 1 − b(1079) ≈ 0.674, where Reno keeps 0.5.
    assert!((0.67..0.68).contains(&kept), "{kept}");
}
