//! Connection hooks (the extension points an MP-TCP subflow needs): options added to the
//! SYN exchange reach the peer's hook on SYN and SYN-ACK only, the per-segment hooks see
//! every data segment in both directions of the path, and a receive-window cap bounds
//! what the sender keeps in flight.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use millinet_transport::cc::CcFactory;
use millinet_transport::{ConnectionHooks, ConnectionParts, TcpConfig, TcpConnection};
use millinet_wire::{TcpFlags, TcpHeader};

/// What one side's hook saw.
#[derive(Default)]
struct Seen {
    /// Markers found on incoming SYN-flagged segments, and the flags of those segments.
    syn_markers: Vec<(u32, TcpFlags)>,
    /// Incoming segments without SYN, and how many of them carried a marker.
    segments_in: u64,
    markers_in_segments: u64,
    data_segments_in: u64,
    data_segments_out: u64,
    syns_in_segment_out: u64,
}

/// The hook's extra SYN option is shaped like MPTCP's MP_CAPABLE (kind 30, subtype 0, RFC 8684
/// §3.1) with the mark as its key: a kind the connection does not model, so only the hooks
/// look at it, carried as raw option bytes.
struct Marker {
    mark: u32,
    cap_bytes: Option<u64>,
    seen: Rc<RefCell<Seen>>,
}

const MPTCP_KIND: u8 = 30;

impl Marker {
    fn option(mark: u32) -> [u8; 12] {
        let mut option = [0u8; 12];
        option[..4].copy_from_slice(&[MPTCP_KIND, 12, 0x01, 0x81]);
        option[8..].copy_from_slice(&mark.to_be_bytes());
        option
    }

    fn marker_of(header: &TcpHeader) -> Option<u32> {
        let raw = header.options.raw();
        let bytes = raw.as_bytes();
        (bytes.len() >= 12 && bytes[0] == MPTCP_KIND).then(|| u32::from_be_bytes(bytes[8..12].try_into().unwrap()))
    }
}

impl ConnectionHooks for Marker {
    fn syn_out(&mut self, header: &mut TcpHeader) {
        header.options.push_raw(&Marker::option(self.mark)).expect("room for one MPTCP option in a SYN");
    }

    fn syn_in(&mut self, header: &TcpHeader) {
        if let Some(mark) = Marker::marker_of(header) {
            self.seen.borrow_mut().syn_markers.push((mark, header.flags));
        }
    }

    fn segment_out(&mut self, header: &mut TcpHeader, payload_bytes: u32) {
        let mut seen = self.seen.borrow_mut();
        seen.data_segments_out += (payload_bytes > 0) as u64;
        seen.syns_in_segment_out += header.flags.contains(TcpFlags::SYN) as u64;
    }

    fn segment_in(&mut self, header: &TcpHeader, payload_bytes: u32) {
        let mut seen = self.seen.borrow_mut();
        seen.segments_in += 1;
        seen.markers_in_segments += Marker::marker_of(header).is_some() as u64;
        seen.data_segments_in += (payload_bytes > 0) as u64;
    }

    fn rcv_window_cap_bytes(&self) -> Option<u64> {
        self.cap_bytes
    }
}

const SERVER_MARK: u32 = 0x5e5e;
const CLIENT_MARK: u32 = 0xc1c1;

fn parts(cfg: &TcpConfig, mark: u32, cap_bytes: Option<u64>, seen: &Rc<RefCell<Seen>>) -> ConnectionParts {
    let hooks = Marker { mark, cap_bytes, seen: Rc::clone(seen) };
    ConnectionParts { cc: CcFactory::by_name(&cfg.cc).expect("known cc"), hooks: Some(Box::new(hooks)) }
}

/// A harness whose two connections carry hooks; `client_cap_bytes` caps the client's window.
fn hooked(
    server_cfg: TcpConfig,
    client_cfg: TcpConfig,
    down: Link,
    app_bytes: u64,
    client_cap_bytes: Option<u64>,
) -> (Harness, Rc<RefCell<Seen>>, Rc<RefCell<Seen>>) {
    let (server_seen, client_seen) = (Rc::default(), Rc::default());
    let server_iss = server_cfg.iss;
    let server_parts = parts(&server_cfg, SERVER_MARK, None, &server_seen);
    let server = TcpConnection::listen_with(server_cfg, server_parts, SERVER).expect("server config");
    let mut syn = Vec::new();
    let client_parts = parts(&client_cfg, CLIENT_MARK, client_cap_bytes, &client_seen);
    let client = TcpConnection::connect_with(client_cfg, client_parts, CLIENT, SERVER, 0, &mut syn).expect("client config");
    let h = Harness::with_connections(server, server_iss, client, syn, down, Link::new(10 * MS), app_bytes, true);
    (h, server_seen, client_seen)
}

fn config() -> TcpConfig {
    TcpConfig { iss: 1000, ..TcpConfig::default() }
}

#[test]
fn a_syn_option_from_a_hook_reaches_the_peers_hook_on_syn_and_syn_ack_only() {
    let (h, server_seen, client_seen) = hooked(config(), config(), Link::new(10 * MS), 300_000, None);
    let mut h = h.recording();
    assert!(h.run_to_completion(5_000 * MS));
    let (server, client) = (server_seen.borrow(), client_seen.borrow());
    assert_eq!(server.syn_markers, [(CLIENT_MARK, TcpFlags::SYN)], "the server's hook sees the client's SYN option");
    assert_eq!(client.syn_markers, [(SERVER_MARK, TcpFlags::SYN | TcpFlags::ACK)], "the client's hook sees the SYN-ACK's");
    assert!(server.segments_in > 10 && client.segments_in > 10);
    assert_eq!((server.markers_in_segments, client.markers_in_segments), (0, 0), "no SYN option on later segments");
    // The option rides in the SYN's raw options (counted in its header) and nowhere else.
    let syn = h.sent()[0].packet.tcp_header().unwrap();
    assert_eq!(Marker::marker_of(syn), Some(CLIENT_MARK));
    assert_eq!(syn.header_bytes(), 20 + 20 + 12, "MSS, SACK-permitted, timestamps, window scale (20 bytes) + the 12-byte option");
    assert!(h.server_data().all(|s| s.packet.tcp_header().unwrap().options.raw().is_empty()));
}

#[test]
fn segment_hooks_see_every_data_segment_sent_and_received() {
    let down = Link::new(10 * MS).with_rate(50_000_000, 40).with_filter(random_loss(0.01, 7));
    let (h, server_seen, client_seen) = hooked(config(), config(), down, 3_000_000, None);
    let mut h = h.recording();
    assert!(h.run_to_completion(20_000 * MS));
    let sent = h.server_data().count() as u64;
    let arrived = h.server_data().filter(|s| !s.dropped).count() as u64;
    assert!(sent > arrived, "the path must lose some data segments for the test to mean anything");
    let (server, client) = (server_seen.borrow(), client_seen.borrow());
    assert_eq!(server.data_segments_out, sent, "every data segment, retransmissions included, passes the sender's hook");
    assert_eq!(client.data_segments_in, arrived, "every data segment that arrives passes the receiver's hook");
    assert_eq!((server.syns_in_segment_out, client.syns_in_segment_out), (0, 0), "SYNs go through syn_out");
}

#[test]
fn a_receive_window_cap_bounds_the_senders_flight() {
    const CAP_BYTES: u64 = 30_000;
    // 100 ms RTT (90 ms down, 10 ms up), no bottleneck: cwnd alone would put megabytes in flight.
    let client_cfg = TcpConfig { rcv_buf_bytes: 4 << 20, ..config() };
    let run = |cap: Option<u64>| {
        let (h, _, _) = hooked(config(), client_cfg.clone(), Link::new(90 * MS), 2_000_000, cap);
        let mut h = h.recording();
        assert!(h.run_to_completion(60_000 * MS));
        let max_flight = h.server_log().iter().map(|s| s.stats.bytes_in_flight).max().unwrap();
        let max_window =
            h.sent().iter().filter(|s| s.from == Side::Client).skip(1).map(|s| s.packet.tcp_header().unwrap().window).max().unwrap();
        (max_flight, max_window as u64)
    };
    let (uncapped_flight, _) = run(None);
    assert!(uncapped_flight > 4 * CAP_BYTES, "without the cap the sender puts {uncapped_flight} bytes in flight");
    let (capped_flight, capped_window_field) = run(Some(CAP_BYTES));
    assert!(capped_flight <= CAP_BYTES, "{capped_flight} bytes in flight over a {CAP_BYTES}-byte cap");
    assert!(capped_flight > CAP_BYTES / 2, "the sender uses the capped window: {capped_flight}");
    // 4 MB of buffer: window scale 7 (RFC 7323 §2.3).
    assert!(capped_window_field << 7 <= CAP_BYTES, "advertised {} bytes", capped_window_field << 7);
}
