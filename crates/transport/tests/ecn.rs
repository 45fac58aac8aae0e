//! ECN across a connection (docs/models/transport.md §12): a router's CE mark reaches the data
//! receiver, its feedback reaches the sender's congestion control exactly once per window, as
//! RFC 3168 §6.1 and RFC 9768 §3.2 have it; packets carry the codepoint the agreement and the
//! congestion control call for.

mod common;

use std::cell::RefCell;

use common::*;
use millinet_transport::cc::{newreno, AckSample, CcFactory, CcInit, CongestionControl, CongestionEvent, Constructor, Window};
use millinet_transport::{ConnectionParts, DelayedAck, EcnMode, TcpConfig, TcpConnection};
use millinet_wire::{Packet, TcpFlags, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT};

const MSS: u64 = 1400;

/// What the server's congestion control was told.
#[derive(Default)]
struct Told {
    ecn_echoes: u64,
    losses: u64,
    ce_bytes: u64,
}

thread_local! {
    static TOLD: RefCell<Told> = RefCell::default();
    static L4S: RefCell<bool> = const { RefCell::new(false) };
}

/// NewReno that writes down what it is told.
struct Recording(Box<dyn CongestionControl>);

impl CongestionControl for Recording {
    fn on_ack(&mut self, ack: &AckSample) {
        TOLD.with(|t| t.borrow_mut().ce_bytes += ack.ce_bytes);
        self.0.on_ack(ack);
    }
    fn on_congestion_event(&mut self, kind: CongestionEvent, now_ns: u64, flight_size_bytes: u64) {
        TOLD.with(|t| match kind {
            CongestionEvent::EcnEcho => t.borrow_mut().ecn_echoes += 1,
            _ => t.borrow_mut().losses += 1,
        });
        self.0.on_congestion_event(kind, now_ns, flight_size_bytes);
    }
    fn on_recovery_exit(&mut self, now_ns: u64) {
        self.0.on_recovery_exit(now_ns);
    }
    fn undo(&mut self, prior: Window) {
        self.0.undo(prior);
    }
    fn cwnd_bytes(&self) -> u64 {
        self.0.cwnd_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.0.ssthresh_bytes()
    }
    fn l4s(&self) -> bool {
        L4S.with(|l| *l.borrow())
    }
}

fn recording(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(Recording(newreno::construct(init)))
}

/// A router that CE-marks the ECN-capable data segments at these stream offsets (and counts the
/// Not-ECT ones it was asked to mark: those it would drop).
fn mark_ce_at(offsets: &'static [u64], server_iss: u32) -> Filter {
    Box::new(move |_, pkt: &mut Packet| {
        let offset = pkt.tcp_header().unwrap().seq.wrapping_sub(server_iss.wrapping_add(1)) as u64;
        if pkt.payload_bytes > 0 && offsets.contains(&offset) && pkt.ecn != ECN_NOT_ECT {
            pkt.ecn = ECN_CE;
        }
        true
    })
}

fn run(ecn: EcnMode, l4s: bool, marks: &'static [u64], app_bytes: u64) -> Harness {
    run_with(ecn, l4s, DelayedAck::Linux, marks, app_bytes)
}

fn run_with(ecn: EcnMode, l4s: bool, delayed_ack: DelayedAck, marks: &'static [u64], app_bytes: u64) -> Harness {
    TOLD.with(|t| *t.borrow_mut() = Told::default());
    L4S.with(|l| *l.borrow_mut() = l4s);
    let cfg = TcpConfig { ecn, delayed_ack, ..TcpConfig::default() };
    let parts = ConnectionParts { cc: CcFactory::new(Constructor::Uncoupled(recording)), hooks: None };
    let server = TcpConnection::listen_with(cfg.clone(), parts, SERVER).unwrap();
    let mut syn = Vec::new();
    let client = TcpConnection::connect(cfg.clone(), CLIENT, SERVER, 0, &mut syn).unwrap();
    let down = Link::new(10 * MS).with_filter(mark_ce_at(marks, cfg.iss));
    let mut h = Harness::with_connections(server, cfg.iss, client, syn, down, Link::new(10 * MS), app_bytes, true).recording();
    assert!(h.run_to_completion(10_000 * MS));
    h
}

/// The codepoints of the server's data segments as they left the router (CE where it marked).
fn data_codepoints(h: &Harness) -> Vec<u8> {
    let mut codepoints: Vec<u8> = h.server_data().filter(|s| s.packet.payload_bytes > 0).map(|s| s.packet.ecn).collect();
    codepoints.sort_unstable();
    codepoints.dedup();
    codepoints
}

fn told() -> (u64, u64, u64) {
    TOLD.with(|t| {
        let t = t.borrow();
        (t.ecn_echoes, t.losses, t.ce_bytes)
    })
}

/// RFC 3168: two marks in one window are one reduction; ECE on the client's ACKs from the mark
/// until the server's CWR, which goes on exactly one segment; no retransmission.
#[test]
fn rfc3168_one_reduction_per_window_and_one_cwr() {
    let h = run(EcnMode::Rfc3168, false, &[20 * MSS, 22 * MSS], 200 * MSS);
    let (echoes, losses, _) = told();
    assert_eq!((echoes, losses), (1, 0), "one reduction for marks within one window, no loss");
    assert_eq!(h.server.stats().ecn_reductions, 1);
    assert_eq!(h.server.stats().retransmitted_segments, 0);
    let data = h.server_data().filter(|s| s.packet.payload_bytes > 0);
    let cwr: Vec<_> = data.filter(|s| s.packet.tcp_header().unwrap().flags.contains(TcpFlags::CWR)).collect();
    assert_eq!(cwr.len(), 1, "CWR on one segment");
    let ece_acks = h.sent().iter().filter(|s| s.from == Side::Client && s.packet.tcp_header().unwrap().flags.contains(TcpFlags::ECE));
    let first_ece = ece_acks.clone().map(|s| s.time_ns).min().expect("the client echoes the mark");
    let last_ece = ece_acks.map(|s| s.time_ns).max().unwrap();
    assert!(first_ece < cwr[0].time_ns && last_ece <= cwr[0].time_ns + 10 * MS + 1, "ECE until the CWR arrives");
    // New data is ECT(0), retransmissions and pure ACKs Not-ECT (RFC 3168 §6.1.4–§6.1.5).
    assert_eq!(data_codepoints(&h), [ECN_ECT0, ECN_CE]);
    assert!(h.sent().iter().filter(|s| s.from == Side::Client).all(|s| s.packet.ecn == ECN_NOT_ECT));
}

/// The ACKs sent before the CWR segment arrived still carry ECE, the last of them acknowledging
/// everything up to that segment: none of them is a new signal (RFC 3168 §6.1.2, "before the
/// ACK for the CWR-marked segment"). Every segment ACKed, so every such ACK is seen.
#[test]
fn rfc3168_echoes_of_one_mark_are_one_reduction() {
    for delayed_ack in [DelayedAck::Off, DelayedAck::Linux] {
        run_with(EcnMode::Rfc3168, false, delayed_ack, &[30 * MSS], 400 * MSS);
        assert_eq!(told().0, 1, "{delayed_ack:?}");
    }
}

/// Marks in two windows are two reductions.
#[test]
fn rfc3168_marks_a_window_apart_are_two_reductions() {
    run(EcnMode::Rfc3168, false, &[20 * MSS, 400 * MSS], 600 * MSS);
    assert_eq!(told().0, 2);
}

/// Accurate ECN: the CE bytes reach the congestion control exactly, from the option's counter,
/// and the reduction happens once.
#[test]
fn accurate_ecn_reports_the_marked_bytes_exactly_once() {
    let marks: &[u64] = &[20 * MSS, 21 * MSS, 22 * MSS];
    let h = run(EcnMode::Accurate, false, marks, 200 * MSS);
    let (echoes, losses, ce_bytes) = told();
    assert_eq!((echoes, losses), (1, 0));
    assert_eq!(ce_bytes, 3 * MSS, "every marked byte, once");
    assert_eq!(h.server.stats().ce_bytes, 3 * MSS);
    // The ACE field of the client's last ACK: 5 + 3 marks.
    let last = h.sent().iter().rev().find(|s| s.from == Side::Client).unwrap();
    assert_eq!(last.packet.tcp_header().unwrap().flags.ace(), (5 + 3) % 8);
    assert_eq!(data_codepoints(&h), [ECN_ECT0, ECN_CE]);
}

/// An L4S congestion control over Accurate ECN marks its packets ECT(1); over RFC 3168 it may
/// not (RFC 9331 §4.3), and without ECN nothing is ECN-capable.
#[test]
fn the_codepoint_follows_the_agreement_and_the_congestion_control() {
    for (mode, l4s, codepoints) in [
        (EcnMode::Accurate, true, vec![ECN_ECT1, ECN_CE]),
        (EcnMode::Accurate, false, vec![ECN_ECT0, ECN_CE]),
        (EcnMode::Rfc3168, true, vec![ECN_ECT0, ECN_CE]),
        (EcnMode::Off, true, vec![ECN_NOT_ECT]),
    ] {
        let h = run(mode, l4s, &[10 * MSS], 50 * MSS);
        assert_eq!(data_codepoints(&h), codepoints, "{mode:?}, L4S {l4s}");
        if mode == EcnMode::Off {
            assert_eq!(told(), (0, 0, 0), "a Not-ECT packet is never marked");
        }
    }
}

/// RFC 8257 §3.2 across a connection: between two DCTCP ends under RFC 3168's feedback, ECE
/// follows each mark, so the CE bytes the sender counts are the marked ones (one more segment
/// at most per mark, the other half of a delayed ACK); between RFC 3168's ends, ECE holds for
/// a round trip and every byte it acknowledges counts.
#[test]
fn dctcp_ends_echo_each_mark_under_rfc3168() {
    let marks: &'static [u64] = &[40 * MSS, 41 * MSS, 120 * MSS];
    let ce_bytes = |cc: &str| {
        let cfg = TcpConfig { cc: cc.into(), ecn: EcnMode::Rfc3168, ..TcpConfig::default() };
        let down = Link::new(10 * MS).with_filter(mark_ce_at(marks, cfg.iss));
        let mut h = Harness::new(cfg.clone(), cfg, down, Link::new(10 * MS), 400 * MSS, true);
        assert!(h.run_to_completion(10_000 * MS));
        h.server.stats().ce_bytes
    };
    let dctcp = ce_bytes("dctcp");
    assert!((3 * MSS..=6 * MSS).contains(&dctcp), "DCTCP counted {dctcp} bytes for 3 marked segments");
    assert!(ce_bytes("newreno") > 20 * MSS, "RFC 3168's echo holds ECE for a round trip");
}

/// Linux's CWR state: with PRR, an ECN reduction is spread over the round trip, the sender
/// sending about one segment per two delivered while the flight drains toward ssthresh (its
/// longest silence in the 40 ms after the echo: under 4 ms); without PRR the window drops at
/// once and the sender falls silent until the flight is below it (about 20 ms here, behind a
/// 100 Mbit/s bottleneck with a queue from slow start).
#[test]
fn an_ecn_reduction_is_spread_over_the_round_trip_with_prr() {
    let longest_silence_after_the_echo_ms = |prr: bool| {
        let cfg = TcpConfig { cc: "newreno".into(), ecn: EcnMode::Rfc3168, prr, ..TcpConfig::default() };
        let down = Link::new(10 * MS).with_rate(100_000_000, 1000).with_filter(mark_ce_at(&[300 * MSS], cfg.iss));
        let mut h = Harness::new(cfg.clone(), cfg, down, Link::new(10 * MS), 20_000 * MSS, true).recording();
        assert!(h.run_to_completion(10_000 * MS));
        let echo = |s: &&Sent| {
            let flags = s.packet.tcp_header().unwrap().flags;
            s.from == Side::Client && flags.contains(TcpFlags::ECE) && !flags.contains(TcpFlags::SYN)
        };
        let echo_ns = h.sent().iter().find(echo).expect("an echo").time_ns;
        let end_ns = echo_ns + 40 * MS;
        let mut times = vec![echo_ns];
        times.extend(h.server_data().map(|s| s.time_ns).filter(|&t| t >= echo_ns && t < end_ns));
        times.push(end_ns);
        times.windows(2).map(|w| w[1] - w[0]).max().unwrap() as f64 / MS as f64
    };
    let with_prr = longest_silence_after_the_echo_ms(true);
    let without = longest_silence_after_the_echo_ms(false);
    assert!(with_prr < 4.0, "with PRR the sender paused {with_prr} ms (without: {without} ms)");
    assert!(without > 10.0, "without PRR it paused only {without} ms");
}
