//! Transport test 6: handshake option negotiation, window scaling of the advertised window,
//! persist timer, delayed ACK timing, configuration errors.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use common::*;
use millinet_transport::{DelayedAck, LimitedBy, TcpConfig, TcpConnection, TcpError, TcpState};
use millinet_wire::{Packet, TcpFlags};

const MSS: u64 = 1400;

fn syn_of(h: &Harness, from: Side) -> Packet {
    h.sent().iter().find(|s| s.from == from && s.packet.tcp_header().unwrap().flags.contains(TcpFlags::SYN)).expect("SYN").packet
}

#[test]
fn features_are_used_only_when_both_ends_offer_them() {
    let client_cfg = TcpConfig { mss_bytes: 1000, sack: false, timestamps: true, rcv_buf_bytes: 1 << 20, ..TcpConfig::default() };
    let server_cfg = TcpConfig { mss_bytes: 1400, sack: true, timestamps: false, ..TcpConfig::default() };
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&[3000], server_cfg.iss));
    let mut h = Harness::new(server_cfg, client_cfg, down, Link::new(10 * MS), 200_000, true).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let syn = syn_of(&h, Side::Client).tcp_header().unwrap().options;
    assert_eq!((syn.mss, syn.window_scale, syn.sack_permitted, syn.timestamps.is_some()), (Some(1000), Some(5), false, true));
    let syn_ack = syn_of(&h, Side::Server).tcp_header().unwrap().options;
    // The SYN-ACK offers only what the SYN offered and the server enables.
    assert_eq!((syn_ack.mss, syn_ack.window_scale, syn_ack.sack_permitted, syn_ack.timestamps), (Some(1400), Some(14), false, None));
    for s in h.sent().iter().filter(|s| !s.packet.tcp_header().unwrap().flags.contains(TcpFlags::SYN)) {
        let o = s.packet.tcp_header().unwrap().options;
        assert!(o.timestamps.is_none() && o.sack_count == 0, "no timestamps or SACK blocks when not negotiated: {o:?}");
        assert!(s.packet.payload_bytes <= 1000, "effective MSS is the smaller one");
    }
    assert_eq!(h.server_data().map(|s| s.packet.payload_bytes).max(), Some(1000));
    assert_eq!(h.server.stats().fast_retransmits, 1, "the loss is repaired by NewReno without SACK");
}

#[test]
fn negotiated_sack_and_timestamps_appear_on_the_wire() {
    let server_cfg = TcpConfig::default();
    let down = Link::new(10 * MS).with_filter(drop_first_transmission_of(&[2 * MSS], server_cfg.iss));
    let mut h = Harness::new(server_cfg, TcpConfig::default(), down, Link::new(10 * MS), 100 * MSS, true).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let after_handshake = || h.sent().iter().filter(|s| !s.packet.tcp_header().unwrap().flags.contains(TcpFlags::SYN));
    assert!(after_handshake().all(|s| s.packet.tcp_header().unwrap().options.timestamps.is_some()), "TSopt on every segment");
    let sack_acks: Vec<_> =
        after_handshake().filter(|s| s.from == Side::Client && s.packet.tcp_header().unwrap().options.sack_count > 0).collect();
    assert!(sack_acks.len() >= 3, "the hole is reported in SACK blocks");
    let iss = h.server_iss;
    let first = sack_acks[0].packet.tcp_header().unwrap().options.sack()[0];
    assert_eq!((first.left, first.right), (iss.wrapping_add(1 + 3 * MSS as u32), iss.wrapping_add(1 + 4 * MSS as u32)));
    // Header bytes count on the wire: 20 IP + 20 TCP + 12 timestamps + SACK option.
    let p = &sack_acks[0].packet;
    assert_eq!(p.wire_bytes(), 20 + 20 + 12 + 4 + 8);
}

#[test]
fn advertised_window_is_the_free_buffer_scaled() {
    // 100 000 bytes need one bit of shift (RFC 7323: the smallest that fits 16 bits).
    let client_cfg = TcpConfig { rcv_buf_bytes: 100_000, ..TcpConfig::default() };
    let down = Link::new(10 * MS).with_rate(100_000_000, 10_000);
    let mut h = Harness::new(TcpConfig::default(), client_cfg, down, Link::new(10 * MS), 3_000_000, true).recording();
    assert!(h.run_to_completion(60_000 * MS));
    let syn = syn_of(&h, Side::Client);
    let syn_h = syn.tcp_header().unwrap();
    assert_eq!((syn_h.window, syn_h.options.window_scale), (65_535, Some(1)), "the SYN window is never scaled");
    let acks: Vec<u16> = h
        .sent()
        .iter()
        .filter(|s| s.from == Side::Client && s.packet.payload_bytes == 0)
        .skip(1)
        .map(|s| s.packet.tcp_header().unwrap().window)
        .collect();
    assert!(acks.iter().all(|&w| w == 50_000), "no loss: the whole buffer is free, scaled by 2");
    let max_in_flight = h.server_log().iter().map(|e| e.stats.bytes_in_flight).max().unwrap();
    assert!(max_in_flight <= 100_000 && max_in_flight > 90_000, "the sender fills but never exceeds rwnd: {max_in_flight}");
    let limited = h.server.stats().limited_ns;
    assert!(limited[LimitedBy::Rwnd as usize] > limited[LimitedBy::Cwnd as usize], "limited by rwnd: {limited:?}");

    // Scaling refused by the server: the window field caps the buffer at 65 535 bytes.
    let server_cfg = TcpConfig { window_scaling: false, ..TcpConfig::default() };
    let client_cfg = TcpConfig { rcv_buf_bytes: 1 << 20, ..TcpConfig::default() };
    let down = Link::new(10 * MS).with_rate(100_000_000, 10_000);
    let mut h = Harness::new(server_cfg, client_cfg, down, Link::new(10 * MS), 3_000_000, true).recording();
    assert!(h.run_to_completion(60_000 * MS));
    assert_eq!(syn_of(&h, Side::Server).tcp_header().unwrap().options.window_scale, None);
    assert!(h.server_log().iter().all(|e| e.stats.bytes_in_flight <= 65_535));
}

#[test]
fn persist_timer_probes_a_zero_window_with_backoff_and_resumes() {
    // A middlebox (as the proxy may) advertises a zero window from 0.5 s to 8 s.
    let zero_window: Filter = Box::new(|now, pkt| {
        if (500 * MS..8_000 * MS).contains(&now) {
            pkt.tcp_header_mut().unwrap().window = 0;
        }
        true
    });
    let down = Link::new(10 * MS).with_rate(10_000_000, 1_000);
    let mut h =
        Harness::new(TcpConfig::default(), TcpConfig::default(), down, Link::new(10 * MS).with_filter(zero_window), 2_000_000, false)
            .recording();
    assert!(h.run_to_completion(60_000 * MS), "the transfer resumes when the window opens");
    let probes: Vec<&Sent> =
        h.sent().iter().filter(|s| s.from == Side::Server && s.time_ns > 400 * MS && s.packet.payload_bytes == 0).collect();
    assert!(probes.len() >= 4, "zero-window probes were sent: {}", probes.len());
    let acked_at_probe = |s: &Sent| h.server_log().iter().rev().find(|e| e.time_ns <= s.time_ns).unwrap().stats.acked_bytes;
    for p in &probes {
        // SND.UNA − 1: an already acknowledged sequence number that elicits an ACK.
        let una = h.server_iss.wrapping_add(1).wrapping_add(acked_at_probe(p) as u32);
        assert_eq!(p.packet.tcp_header().unwrap().seq, una.wrapping_sub(1));
    }
    let gaps: Vec<u64> = probes.windows(2).map(|w| w[1].time_ns - w[0].time_ns).collect();
    for g in gaps.windows(2) {
        assert_eq!(g[1], 2 * g[0], "exponential backoff between probes: {gaps:?}");
    }
    let resumed = h.server_data().find(|s| s.time_ns >= 8_000 * MS).expect("data after the window opened");
    assert!(resumed.time_ns < 8_000 * MS + gaps.last().unwrap() * 2 + 100 * MS);
    let s = h.server.stats();
    assert_eq!((s.rtos, s.retransmitted_segments), (0, 0), "probing is not a timeout");
}

#[test]
fn delayed_ack_waits_40_ms_or_acks_every_second_segment() {
    let client_cfg = TcpConfig { delayed_ack: DelayedAck::Rfc5681, ..TcpConfig::default() };
    let mut h = Harness::new(TcpConfig::default(), client_cfg, Link::new(10 * MS), Link::new(10 * MS), MSS, false).recording();
    assert!(h.run_to_completion(1_000 * MS));
    assert!(h.run_until(2_000 * MS, |h| h.server.stats().acked_bytes == MSS));
    let data = h.server_data().next().unwrap().time_ns;
    let acks = |h: &Harness, after: u64| -> Vec<u64> {
        h.sent().iter().filter(|s| s.from == Side::Client && s.time_ns > after && s.packet.payload_bytes == 0).map(|s| s.time_ns).collect()
    };
    assert_eq!(acks(&h, data), vec![data + 10 * MS + 40 * MS], "a lone segment is ACKed after the 40 ms timer");
    // Three more segments in one burst: the second is ACKed on arrival, the third after 40 ms.
    let t = h.now_ns();
    h.server_send(3 * MSS);
    assert!(h.run_until(t + 1_000 * MS, |h| h.server.stats().acked_bytes == 4 * MSS));
    assert_eq!(acks(&h, t), vec![t + 10 * MS, t + 10 * MS + 40 * MS]);
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto() {
    let mut first = true;
    let drop_first_syn: Filter = Box::new(move |_, _| !std::mem::take(&mut first));
    let mut h = Harness::new(
        TcpConfig::default(),
        TcpConfig::default(),
        Link::new(10 * MS),
        Link::new(10 * MS).with_filter(drop_first_syn),
        10 * MSS,
        true,
    );
    assert!(h.run_until(5_000 * MS, |h| h.client.state() == TcpState::Established));
    assert_eq!(h.now_ns(), 1_000 * MS + 20 * MS, "SYN again after 1 s, SYN-ACK one RTT later");
    assert!(h.run_to_completion(10_000 * MS));
}

#[test]
fn configuration_errors_are_reported() {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 1);
    for (mss, ok) in [(99, false), (100, true), (65_000, true), (65_001, false)] {
        let cfg = TcpConfig { mss_bytes: mss, ..TcpConfig::default() };
        let listened = TcpConnection::listen(cfg.clone(), addr);
        let connected = TcpConnection::connect(cfg, addr, addr, 0, &mut Vec::new());
        assert_eq!((listened.is_ok(), connected.is_ok()), (ok, ok), "mss {mss}");
        if !ok {
            let err = listened.err().unwrap();
            assert_eq!(err, TcpError::MssOutOfRange { mss_bytes: mss });
            assert_eq!(err.to_string(), format!("mss_bytes = {mss}: out of range; allowed: 100..=65000"));
        }
    }
    let cfg = TcpConfig { cc: "reno2".to_string(), ..TcpConfig::default() };
    let err = TcpConnection::listen(cfg, addr).err().expect("unknown cc");
    assert!(matches!(&err, TcpError::UnknownCc(e) if e.name == "reno2"), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("\"reno2\"") && message.contains("\"newreno\"") && message.contains("\"cubic\""), "{message}");
}
