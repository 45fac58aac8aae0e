//! CUBIC's slow-start exit on a path with a drop-tail bottleneck: 100 Mbit/s, 20 ms of
//! propagation RTT (BDP 250 kB), a queue of one BDP. Standard slow start doubles the window
//! every round until the queue overflows; Linux's HyStart ends slow start once the ACK train
//! spans half the minimum RTT, a window of about the BDP, before any loss.

mod common;

use common::*;
use millinet_transport::cc::HystartMode;
use millinet_transport::{DelayedAck, TcpConfig, TcpStats};

const MSS: u64 = 1400;
const RATE_BPS: u64 = 100_000_000;
const BDP_BYTES: u64 = RATE_BPS / 8 * 20 / 1000;

/// Ten seconds of a bulk CUBIC transfer; the server's state after each event.
fn transfer(hystart: HystartMode) -> Harness {
    let server_cfg = TcpConfig { hystart, ..config("cubic", true, DelayedAck::Off) };
    let queue_packets = (BDP_BYTES / (MSS + 52)) as usize;
    let down = Link::new(10 * MS).with_rate(RATE_BPS, queue_packets);
    let mut h = Harness::new(server_cfg, config("cubic", true, DelayedAck::Off), down, Link::new(10 * MS), 1 << 40, false).recording();
    h.run_until(10_000 * MS, |_| false);
    h
}

/// The server's stats when slow start ended (ssthresh first set).
fn slow_start_end(h: &Harness) -> &TcpStats {
    &h.server_log().iter().find(|s| s.stats.ssthresh_bytes != u64::MAX).expect("slow start ends").stats
}

#[test]
fn linux_hystart_leaves_slow_start_near_the_bdp_without_a_loss() {
    let h = transfer(HystartMode::Linux);
    let end = slow_start_end(&h);
    assert_eq!(end.retransmitted_segments, 0, "left before the queue overflowed");
    // ssthresh = cwnd as the kernel sets it; the same ACK then grows cwnd by CUBIC's rule.
    assert!((end.ssthresh_bytes..end.ssthresh_bytes + MSS).contains(&end.cwnd_bytes), "{end:?}");
    // The ACK train of a round lasts (the previous round's window)/rate: it passes half the
    // minimum RTT once that window passes BDP/2, and the window at most doubled since.
    assert!((BDP_BYTES / 2..=2 * BDP_BYTES).contains(&end.ssthresh_bytes), "exit at {} B, BDP {BDP_BYTES} B", end.ssthresh_bytes);
    // Congestion avoidance from there never needs the burst of retransmissions slow start's
    // overshoot costs (below).
    let overshoot = transfer(HystartMode::Off);
    let without = slow_start_end(&overshoot);
    assert_eq!(without.fast_retransmits, 1, "standard slow start ends on a loss: the queue overflowed: {without:?}");
    let (with_rtx, without_rtx) = (h.server.stats().retransmitted_segments, overshoot.server.stats().retransmitted_segments);
    assert!(with_rtx * 4 < without_rtx, "retransmissions over 10 s: {with_rtx} with HyStart, {without_rtx} without");
    // The goodput is not paid for it.
    assert!(h.delivered_bytes() as f64 >= 0.95 * overshoot.delivered_bytes() as f64);
}

#[test]
fn without_a_queue_to_fill_hystart_changes_nothing_before_the_first_loss() {
    // A window below 16 segments never triggers it: a 2 Mbit/s path whose BDP is 5 kB
    // overflows its queue of 3 packets before the window reaches 16 segments.
    let run = |hystart| {
        let server_cfg = TcpConfig { hystart, ..config("cubic", true, DelayedAck::Off) };
        let down = Link::new(10 * MS).with_rate(2_000_000, 3);
        let mut h = Harness::new(server_cfg, config("cubic", true, DelayedAck::Off), down, Link::new(10 * MS), 400 * MSS, false);
        assert!(h.run_to_completion(60_000 * MS));
        h.server.stats().clone()
    };
    let (on, off) = (run(HystartMode::Linux), run(HystartMode::Off));
    assert_eq!(
        (on.retransmitted_segments, on.fast_retransmits, on.acked_bytes),
        (off.retransmitted_segments, off.fast_retransmits, off.acked_bytes)
    );
}
