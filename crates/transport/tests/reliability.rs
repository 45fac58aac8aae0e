//! Transport test 1: every byte reaches the application exactly once and in order, under
//! random and burst losses (both directions), with SACK on and off, delayed ACK on and off,
//! for a finite transfer, including sequence numbers that wrap.

mod common;

use common::*;
use millinet_transport::{DelayedAck, TcpState};

const FILE_BYTES: u64 = 1_500_000;

#[derive(Clone, Copy, Debug)]
enum Loss {
    Random(f64),
    Burst,
}

fn transfer(cc: &str, loss: Loss, sack: bool, delayed_ack: DelayedAck, iss: u32, seed: u64) {
    let mut server_cfg = config(cc, sack, delayed_ack);
    server_cfg.iss = iss;
    let mut client_cfg = config(cc, sack, delayed_ack);
    client_cfg.iss = iss.wrapping_add(77_777);
    let (down_filter, up_filter) = match loss {
        Loss::Random(p) => (random_loss(p, seed), random_loss(p / 2.0, seed + 1)),
        Loss::Burst => (burst_loss(150, 6), burst_loss(97, 3)),
    };
    let down = Link::new(10 * MS).with_rate(20_000_000, 60).with_filter(down_filter);
    let up = Link::new(10 * MS).with_filter(up_filter);
    let mut h = Harness::new(server_cfg, client_cfg, down, up, FILE_BYTES, true);
    let label = format!("{cc} {loss:?} sack={sack} delayed_ack={delayed_ack:?} iss={iss}");
    assert!(h.run_to_completion(600_000 * MS), "{label}: delivered {} of {FILE_BYTES}", h.delivered_bytes());
    // The stream ends: the client sees the FIN, and the server's FIN is acknowledged.
    assert!(
        h.run_until(700_000 * MS, |h| h.client.state() == TcpState::CloseWait && h.server.state() == TcpState::FinWait2),
        "{label}: teardown"
    );
    let s = h.server.stats();
    assert_eq!(s.acked_bytes, FILE_BYTES, "{label}");
    assert_eq!(h.client.stats().delivered_bytes, FILE_BYTES, "{label}");
    assert!(s.retransmitted_segments > 0, "{label}: the loss pattern must have caused retransmissions");
}

/// SACK or not, with each receiver's ACK timing.
const COMBINATIONS: [(bool, DelayedAck); 6] = [
    (true, DelayedAck::Off),
    (true, DelayedAck::Rfc5681),
    (true, DelayedAck::Linux),
    (false, DelayedAck::Off),
    (false, DelayedAck::Rfc5681),
    (false, DelayedAck::Linux),
];

#[test]
fn random_loss_one_percent_all_feature_combinations() {
    for (i, (sack, delayed_ack)) in COMBINATIONS.into_iter().enumerate() {
        transfer("newreno", Loss::Random(0.01), sack, delayed_ack, 1_000 + i as u32, 11 + i as u64);
        transfer("cubic", Loss::Random(0.01), sack, delayed_ack, 3_000_000_000, 21 + i as u64);
    }
}

#[test]
fn random_loss_five_percent_all_feature_combinations() {
    for (i, (sack, delayed_ack)) in COMBINATIONS.into_iter().enumerate() {
        transfer("newreno", Loss::Random(0.05), sack, delayed_ack, 7, 31 + i as u64);
        transfer("cubic", Loss::Random(0.05), sack, delayed_ack, u32::MAX - 5_000, 41 + i as u64);
    }
}

#[test]
fn burst_loss_all_feature_combinations() {
    for (sack, delayed_ack) in COMBINATIONS {
        transfer("newreno", Loss::Burst, sack, delayed_ack, 0, 0);
        transfer("cubic", Loss::Burst, sack, delayed_ack, u32::MAX - 5_000, 0);
    }
}

#[test]
fn sequence_numbers_wrap_during_the_transfer() {
    // ISS = 2^32 − 5000: the stream crosses the wrap after 5000 bytes.
    transfer("cubic", Loss::Random(0.02), true, DelayedAck::Linux, u32::MAX - 4_999, 99);
    transfer("newreno", Loss::Random(0.02), false, DelayedAck::Off, u32::MAX - 4_999, 98);
}

#[test]
fn clean_path_fills_the_bottleneck_and_tears_down() {
    let down = Link::new(10 * MS).with_rate(20_000_000, 100_000);
    let mut h = Harness::new(
        config("cubic", true, DelayedAck::Rfc5681),
        config("cubic", true, DelayedAck::Rfc5681),
        down,
        Link::new(10 * MS),
        5_000_000,
        true,
    );
    assert!(h.run_to_completion(60_000 * MS));
    let s = h.server.stats().clone();
    assert_eq!((s.retransmitted_segments, s.rtos), (0, 0));
    // 5 MB at 20 Mbit/s is 2 s of payload; headers and slow start add a little.
    let elapsed_s = h.delivered_at_ns().expect("completed") as f64 / 1e9;
    assert!(elapsed_s > 2.0 && elapsed_s < 2.6, "took {elapsed_s} s");
    // Both sides close: the client enters LAST-ACK, the server TIME-WAIT, then CLOSED.
    let mut out = Vec::new();
    let now = h.now_ns();
    h.client.close(now, &mut out);
    assert!(!out.is_empty(), "the client's FIN goes out");
    let emitted = std::mem::take(&mut out);
    for pkt in &emitted {
        h.server.on_packet(now + 10 * MS, pkt, &mut out);
    }
    assert_eq!(h.server.state(), TcpState::TimeWait);
    for pkt in &out {
        h.client.on_packet(now + 20 * MS, pkt, &mut Vec::new());
    }
    assert_eq!(h.client.state(), TcpState::Closed);
    let deadline = h.server.next_deadline_ns().expect("TIME-WAIT timer");
    assert!(deadline <= now + 10 * MS + 1_000 * MS);
    h.server.on_timeout(deadline, &mut Vec::new());
    assert_eq!(h.server.state(), TcpState::Closed);
    assert_eq!(h.server.next_deadline_ns(), None, "a closed connection has no timers");
}
