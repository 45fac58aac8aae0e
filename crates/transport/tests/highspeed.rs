//! HighSpeed TCP (RFC 3649, docs/models/transport.md §6): a(w) and b(w), and the per-RTT increase
//! and decrease measured on the algorithm, against every row of the RFC's Appendix B table
//! (bpf/rfc3649_appendix_b.csv); standard TCP (Reno) behaviour up to Low_Window = 38
//! segments.

use millinet_transport::cc::highspeed::{self, HighSpeed};
use millinet_transport::cc::newreno::NewReno;
use millinet_transport::cc::{AckSample, CcInit, CongestionControl, CongestionEvent, CubicVariant, HystartMode};

const MSS: u64 = 1000;

/// A row of RFC 3649 Appendix B: window w (segments), a(w) (segments per RTT, printed as an
/// integer), b(w) (printed to two decimals).
struct Row {
    w: u64,
    a: f64,
    b: f64,
}

/// Every row of RFC 3649 Appendix B, from bpf/rfc3649_appendix_b.csv (its header says where the
/// rows were typed from; the BPF HighSpeed's table is built from the same file, and
/// tests/test_highspeed_table.py holds it to the rows).
fn appendix_b() -> Vec<Row> {
    let rows: Vec<Row> = include_str!("../../../bpf/rfc3649_appendix_b.csv")
        .lines()
        .filter(|line| !line.starts_with('#') && *line != "w,a,b")
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), 3, "{line}");
            Row { w: fields[0].parse().expect(line), a: fields[1].parse().expect(line), b: fields[2].parse().expect(line) }
        })
        .collect();
    // From Low_Window (a = 1) one row per integer a(w).
    assert_eq!(rows.len(), 73);
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row.a, (k + 1) as f64, "row {k}");
    }
    rows
}

fn ack(acked_bytes: u64) -> AckSample {
    AckSample { acked_bytes, cwnd_limited: true, ..AckSample::default() }
}

fn init(cwnd_segments: u64) -> CcInit {
    CcInit { mss_bytes: MSS, initial_cwnd_bytes: cwnd_segments * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux }
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
    let keep = 1.0 - highspeed::b(start as f64);
    let flight = ((w * MSS) as f64 / keep).ceil() as u64;
    cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, flight);
    cc.on_recovery_exit(0);
    assert!(cc.cwnd_bytes().abs_diff(w * MSS) <= 1, "{} vs {}", cc.cwnd_bytes(), w * MSS);
    cc
}

/// RFC 3649 §5's a(w) and b(w), as the simulator computes them (`cc::highspeed::a`, `b`), at
/// the window of every row of Appendix B. The RFC prints a(w) rounded to an integer and b(w)
/// rounded to two decimals, so the exact values at a row's window lie within 0.5 and 0.005 of
/// the printed ones; 1e-9 absorbs the binary representation of the printed decimals.
#[test]
fn a_and_b_match_every_row_of_the_rfc_table() {
    for row in appendix_b() {
        let (a, b) = (highspeed::a(row.w as f64), highspeed::b(row.w as f64));
        assert!((a - row.a).abs() <= 0.5 + 1e-9, "w = {}: a(w) = {a:.4}, RFC {}", row.w, row.a);
        assert!((b - row.b).abs() <= 0.005 + 1e-9, "w = {}: b(w) = {b:.5}, RFC {}", row.w, row.b);
    }
}

#[test]
fn increase_per_rtt_and_decrease_factor_match_the_rfc_table() {
    // The sender applies a(w) and b(w): the same rows, measured on ACKs and a loss.
    for Row { w, a: a_table, b: b_table } in appendix_b() {
        // Decrease: a loss at window w with w segments in flight keeps (1 − b(w))·w.
        let mut cc = HighSpeed::new(&init(w));
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, w * MSS);
        let b = 1.0 - cc.ssthresh_bytes() as f64 / (w * MSS) as f64;
        assert_eq!(cc.cwnd_bytes(), cc.ssthresh_bytes());
        // The table rounds b to two decimals.
        assert!((b - b_table).abs() <= 0.005 + 1e-6, "w = {w}: b = {b:.4}, table {b_table}");
        // Increase: one RTT of ACKs in congestion avoidance at window w adds a(w) segments,
        // less a hair: the window grows during the RTT, by up to a²/(2w) < 0.03 segments.
        // At the table's rows a(w) is within 0.05 of its integers (the test above allows the
        // rounding, 0.5), so the measured growth is within 0.1 of the table.
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
