//! Transport test 7: the scoreboard work per ACK does not grow with the window. Not a timed
//! test: the model counts its own work units (segments and ranges visited, binary-search
//! comparisons), and a window of 10 000 segments with SACK holes must cost about as much
//! per ACK as a window of 10.

mod common;

use common::*;
use millinet_transport::{DelayedAck, TcpConfig};

const MSS: u64 = 1400;

/// Steps per ACK for a 20 000-segment transfer with `window` segments in flight and 1 %
/// random loss (so the scoreboard holds many SACKed ranges and holes).
fn steps_per_ack(window: u64, sack: bool) -> f64 {
    let server_cfg = TcpConfig { cc: "newreno".into(), initial_window_segments: window as u32, sack, ..TcpConfig::default() };
    // An ACK per segment: a compressed ACK (Linux's receiver) legitimately reports many
    // segments at once, and this test is about the cost of one segment's news.
    let client_cfg = TcpConfig { rcv_buf_bytes: window * MSS, sack, delayed_ack: DelayedAck::Off, ..TcpConfig::default() };
    let down = Link::new(10 * MS).with_filter(random_loss(0.01, 7));
    let mut h = Harness::new(server_cfg, client_cfg, down, Link::new(10 * MS), 20_000 * MSS, false);
    assert!(h.run_to_completion(3_600_000 * MS), "window {window}");
    let s = h.server.stats();
    assert!(s.retransmitted_segments >= 150, "window {window}: losses were repaired ({})", s.retransmitted_segments);
    h.server.scoreboard_steps() as f64 / h.acks_to_server() as f64
}

#[test]
fn per_ack_work_is_independent_of_the_window() {
    for sack in [true, false] {
        let small = steps_per_ack(10, sack);
        let large = steps_per_ack(10_000, sack);
        println!("sack={sack}: {small:.1} steps per ACK with a 10-segment window, {large:.1} with 10 000");
        // A linear scan per ACK would cost thousands of steps with 10 000 segments.
        assert!(large < 40.0, "sack={sack}: {large:.1} steps per ACK with a 10 000-segment window");
        // Binary searches cost log2(n) comparisons: allow the growth of about three
        // searches per ACK from n = 10 to n = 10 000 (3 · 10 steps), nothing more.
        let log_growth = (10_000f64).log2() - (10f64).log2();
        assert!(large - small < 3.0 * log_growth, "sack={sack}: window 10 costs {small:.1}, window 10 000 costs {large:.1} steps per ACK");
    }
}
