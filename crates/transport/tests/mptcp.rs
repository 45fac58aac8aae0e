//! MP-TCP data level (RFC 8684) end to end: a client and a server, each one
//! `MptcpConnection`, joined by two paths of different delays and rates (one link per
//! direction per path). The client writes a fixed amount; the server's application must get
//! it exactly once and in order, and every byte it gets must have arrived in a data segment
//! whose DSS mapping (decoded from the packet) maps it to that data sequence number. The
//! client closes after writing; the server closes once the client's stream ended.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;

mod common;

use common::{random_loss, Filter, Link, MS};
use millinet_testkit::{Driver, Outbox, Port, Station};
use millinet_transport::mptcp::{idsn, MptcpConfig, MptcpConnection, MptcpStats, Scheduler};
use millinet_transport::{TcpConfig, TcpConnection, TcpState};
use millinet_wire::mptcp::{CapableForm, DataSeq, Dss, MpCapable, MpJoin, MptcpOption};
use millinet_wire::{Packet, TcpFlags, TcpOptions};

const PATHS: usize = 2;
const TOTAL_BYTES: u64 = 6_000_000;
const END_NS: u64 = 60_000 * MS;

fn client_addr(path: usize) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 0, path as u8, 2), 40_000 + path as u16)
}

fn server_addr(path: usize) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 0, path as u8, 1), 80)
}

/// The data-level stream as the server's application sees it, checked against the DSS
/// mappings of the segments that arrived.
#[derive(Default)]
struct DataCheck {
    /// Peer ISN of each subflow, by the peer's address.
    isn: HashMap<SocketAddrV4, u32>,
    /// The peer's first data sequence number (its IDSN + 1), from its key in MP_CAPABLE.
    dsn_base: Option<u32>,
    /// DSN ranges that arrived in data segments, as their mappings say (may overlap).
    arrived: Vec<Range<u64>>,
    delivered_bytes: u64,
    dss_segments: u64,
}

impl DataCheck {
    fn on_arrival(&mut self, pkt: &Packet) {
        let Some(h) = pkt.tcp_header() else { return };
        let from = SocketAddrV4::new(pkt.src, h.src_port);
        if h.flags.contains(TcpFlags::SYN) {
            self.isn.insert(from, h.seq);
            return;
        }
        for option in h.options.mptcp_options() {
            if let Ok(MptcpOption::MpCapable(MpCapable { form: CapableForm::Ack { sender_key, .. }, .. })) = option {
                self.dsn_base = Some(idsn(sender_key).wrapping_add(1) as u32);
            }
        }
        if pkt.payload_bytes == 0 {
            return;
        }
        let isn = self.isn[&from];
        let offset = u64::from(h.seq.wrapping_sub(isn).wrapping_sub(1));
        let segment = offset..offset + u64::from(pkt.payload_bytes);
        for option in h.options.mptcp_options() {
            // The first data may go on MP_CAPABLE, which maps it from subflow sequence number
            // 1 and the IDSN + 1 (RFC 8684 §3.1).
            let (map_start, dsn, len) = match option {
                Ok(MptcpOption::MpCapable(MpCapable { form: CapableForm::Data { sender_key, data_level_length, .. }, .. })) => {
                    let base = idsn(sender_key).wrapping_add(1) as u32;
                    self.dsn_base = Some(base);
                    (0, base, data_level_length)
                }
                Ok(MptcpOption::Dss(dss)) => {
                    let m = dss.mapping.expect("a data segment carries its mapping");
                    let DataSeq::U32(dsn) = m.data_sequence_number else { panic!("32-bit DSNs expected") };
                    (u64::from(m.subflow_sequence_number) - 1, dsn, m.data_level_length)
                }
                other => panic!("a data segment with {other:?}"),
            };
            self.dss_segments += 1;
            let dsn = dsn.wrapping_sub(self.dsn_base.expect("the peer's key came before its data"));
            let mapped = map_start..map_start + u64::from(len);
            assert!(mapped.start <= segment.start && segment.start < mapped.end, "the mapping covers the first byte");
            let end = segment.end.min(mapped.end);
            let dsn_start = u64::from(dsn) + (segment.start - mapped.start);
            self.arrived.push(dsn_start..dsn_start + (end - segment.start));
        }
    }

    fn on_delivery(&mut self, range: Range<u64>) {
        assert_eq!(range.start, self.delivered_bytes, "data-level delivery continues where it stopped");
        let mut at = range.start;
        while at < range.end {
            let reach = self.arrived.iter().filter(|r| r.start <= at && at < r.end).map(|r| r.end).max();
            at = reach.unwrap_or_else(|| panic!("byte {at} delivered but no DSS mapped it in an arriving segment"));
        }
        self.delivered_bytes = range.end;
        // Keep the check linear in the window, not the transfer.
        self.arrived.retain(|r| r.end > range.end);
    }
}

/// One endpoint: port k is path k; a packet leaves by the port of its source address.
struct Endpoint {
    conn: MptcpConnection,
    local_ips: [Ipv4Addr; PATHS],
    check: DataCheck,
    scratch: Vec<Packet>,
    /// The application closes once the peer's stream ended (and has not yet).
    close_after_peer: bool,
}

impl Endpoint {
    fn flush(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        let delivered = self.conn.take_delivered();
        self.check.on_delivery(delivered);
        if self.close_after_peer && self.conn.stats().peer_finished {
            self.close_after_peer = false;
            self.conn.close(now_ns, &mut self.scratch);
        }
        for pkt in self.scratch.drain(..) {
            let port = self.local_ips.iter().position(|ip| *ip == pkt.src).expect("a local address");
            out.send(port, pkt);
        }
    }
}

impl Station for Endpoint {
    fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, out: &mut Outbox<'_>) {
        self.check.on_arrival(&packet);
        self.conn.on_packet(now_ns, &packet, &mut self.scratch);
        self.flush(now_ns, out);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        self.conn.on_timeout(now_ns, &mut self.scratch);
        self.flush(now_ns, out);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.next_deadline_ns()
    }
}

/// One direction of path k: delay, rate, and a filter.
struct PathSpec {
    one_way_ns: u64,
    rate_bps: u64,
    /// Filters of the client-to-server and server-to-client links.
    filters: Option<(Filter, Filter)>,
}

fn path(one_way_ms: u64, rate_mbps: u64) -> PathSpec {
    PathSpec { one_way_ns: one_way_ms * MS, rate_bps: rate_mbps * 1_000_000, filters: None }
}

struct Run {
    client: MptcpStats,
    server: MptcpStats,
    delivered_bytes: u64,
    /// At each checkpoint given to `run`: bytes delivered, and bytes handed to each of the
    /// client's subflows.
    at_checkpoints: Vec<(u64, Vec<u64>)>,
    dss_segments: u64,
    /// States of the client's subflows and the server's at the end.
    states: (Vec<TcpState>, Vec<TcpState>),
}

/// Runs to END_NS, stopping at each checkpoint; at the checkpoint `fail_at`, if any, the
/// client declares subflow 0 failed.
fn run(cfg: MptcpConfig, paths: [PathSpec; PATHS], checkpoints_ns: &[u64], fail_at: Option<usize>) -> Run {
    let mut syns = Vec::new();
    let addrs: Vec<_> = (0..PATHS).map(|k| (client_addr(k), server_addr(k))).collect();
    let mut client_conn =
        MptcpConnection::connect(MptcpConfig { seed: cfg.seed + 1, ..cfg.clone() }, &addrs, 0, &mut syns).expect("valid configuration");
    client_conn.send(0, TOTAL_BYTES, &mut syns);
    client_conn.close(0, &mut syns);
    let endpoint = |conn, local_ips, close_after_peer| Endpoint {
        conn,
        local_ips,
        check: DataCheck::default(),
        scratch: Vec::new(),
        close_after_peer,
    };
    let mut client = endpoint(client_conn, [*client_addr(0).ip(), *client_addr(1).ip()], false);
    let server_conn = MptcpConnection::listen(cfg).expect("valid configuration");
    let mut server = endpoint(server_conn, [*server_addr(0).ip(), *server_addr(1).ip()], true);
    let mut net = Driver::new();
    for (k, spec) in paths.into_iter().enumerate() {
        let (c, s) = (Port { station: 0, port: k }, Port { station: 1, port: k });
        let link = || Link::new(spec.one_way_ns).with_rate(spec.rate_bps, 200);
        let (up, down) = match spec.filters {
            Some((up, down)) => (link().with_filter(up), link().with_filter(down)),
            None => (link(), link()),
        };
        net.connect(c, s, up);
        net.connect(s, c, down);
    }
    net.inject(Port { station: 0, port: 0 }, &mut syns);
    let mut at_checkpoints = Vec::new();
    for (i, &limit) in checkpoints_ns.iter().chain([END_NS].iter()).enumerate() {
        while net.step(limit, &mut [&mut client, &mut server]) {}
        at_checkpoints.push((server.check.delivered_bytes, client.conn.stats().subflow_bytes));
        if fail_at == Some(i) {
            let mut sent = Vec::new();
            client.conn.fail_subflow(0, limit, &mut sent);
            for pkt in sent {
                let port = client.local_ips.iter().position(|ip| *ip == pkt.src).expect("a local address");
                net.inject(Port { station: 0, port }, &mut vec![pkt]);
            }
        }
    }
    at_checkpoints.pop();
    Run {
        client: client.conn.stats(),
        server: server.conn.stats(),
        delivered_bytes: server.check.delivered_bytes,
        at_checkpoints,
        dss_segments: server.check.dss_segments,
        states: (states(&client.conn), states(&server.conn)),
    }
}

fn states(conn: &MptcpConnection) -> Vec<TcpState> {
    (0..conn.subflow_count()).filter_map(|i| conn.subflow(i)).map(|s| s.state()).collect()
}

fn config(cc: &str, scheduler: Scheduler, seed: u64) -> MptcpConfig {
    MptcpConfig { tcp: TcpConfig { cc: cc.to_string(), ..TcpConfig::default() }, scheduler, seed, ..MptcpConfig::default() }
}

fn assert_complete(r: &Run) {
    assert_eq!(r.delivered_bytes, TOTAL_BYTES, "every byte delivered once, in order");
    assert_eq!(r.client.data_acked_bytes, TOTAL_BYTES, "the sender saw every byte DATA_ACKed");
    assert_eq!(r.client.send_buffer_bytes, 0);
    assert_eq!(r.server.rcv_occupancy_bytes, 0);
    assert_eq!(r.client.option_errors + r.server.option_errors, 0);
    assert!(r.dss_segments > TOTAL_BYTES / 1400, "every data segment carried a DSS");
}

/// Complete, and closed at both levels: each side's DATA_FIN reached the other, which
/// DATA_ACKed it; only then did the subflows exchange FINs, all of which arrived (over paths
/// that work at the end), and every subflow is closed (the client's after TIME-WAIT).
fn assert_finished(r: &Run) {
    assert_complete(r);
    assert!(r.client.data_fin_acked && r.server.peer_finished, "the client's DATA_FIN was received and DATA_ACKed");
    assert!(r.server.data_fin_acked && r.client.peer_finished, "the server's DATA_FIN was received and DATA_ACKed");
    assert_eq!(r.states, (vec![TcpState::Closed; PATHS], vec![TcpState::Closed; PATHS]));
}

#[test]
fn two_paths_deliver_every_byte_once_in_order_and_both_carry_data() {
    let r = run(config("cubic", Scheduler::LowestRtt, 7), [path(10, 20), path(30, 10)], &[], None);
    assert_finished(&r);
    assert_eq!(r.client.subflow_bytes.len(), PATHS);
    assert!(r.client.subflow_bytes.iter().all(|&b| b > TOTAL_BYTES / 10), "both subflows carry data: {:?}", r.client.subflow_bytes);
}

#[test]
fn random_loss_on_one_path_still_delivers_everything() {
    let lossy = PathSpec { filters: Some((random_loss(0.02, 3), random_loss(0.02, 4))), ..path(30, 10) };
    let r = run(config("cubic", Scheduler::LowestRtt, 11), [path(10, 20), lossy], &[], None);
    assert_finished(&r);
}

#[test]
fn a_path_that_fails_for_a_while_is_bypassed_by_reinjection() {
    const DOWN: Range<u64> = 300 * MS..1_500 * MS;
    let outage = || -> Filter { Box::new(|now, _| !DOWN.contains(&now)) };
    let failing = PathSpec { filters: Some((outage(), outage())), ..path(10, 20) };
    let checkpoints = [DOWN.start + 200 * MS, DOWN.end, DOWN.end + 1_000 * MS];
    let r = run(config("cubic", Scheduler::LowestRtt, 5), [failing, path(30, 10)], &checkpoints, None);
    let [(early, _), (end_of_outage, at_end), (later, after)] = &r.at_checkpoints[..] else { unreachable!() };
    // The other path alone carries about 10 Mbit/s: over 1 s, some 1.2 MB (without
    // reinjection, none: the data level waits for the bytes stuck on the failed path).
    let during = end_of_outage - early;
    assert!(during > 600_000, "data kept flowing during the outage: {during} bytes in 1 s");
    assert!(*later < TOTAL_BYTES, "the transfer outlasts the outage");
    assert!(r.client.reinjected_bytes > 0, "the failed subflow's data was reinjected");
    assert!(after[0] > at_end[0] + 1_000_000, "the path came back into use: {at_end:?} then {after:?}");
    assert_finished(&r);
}

#[test]
fn a_subflow_declared_failed_gets_no_more_data_and_its_data_goes_on_the_other() {
    const DOWN_FROM: u64 = 300 * MS;
    let dead = || -> Filter { Box::new(|now, _| now < DOWN_FROM) };
    let failing = PathSpec { filters: Some((dead(), dead())), ..path(10, 20) };
    let r = run(config("cubic", Scheduler::LowestRtt, 5), [failing, path(30, 10)], &[DOWN_FROM + 50 * MS], Some(0));
    assert_complete(&r);
    let handed_at_failure = r.at_checkpoints[0].1[0];
    assert_eq!(r.client.subflow_bytes[0], handed_at_failure, "nothing more was handed to the failed subflow");
    assert!(r.client.reinjected_bytes > 0);
}

#[test]
fn lowest_rtt_puts_more_bytes_on_the_faster_path_and_round_robin_delivers_too() {
    let lowest = run(config("cubic", Scheduler::LowestRtt, 1), [path(5, 20), path(40, 20)], &[], None);
    assert_finished(&lowest);
    let [fast, slow] = [lowest.client.subflow_bytes[0], lowest.client.subflow_bytes[1]];
    assert!(fast > slow, "lowest RTT first: fast path {fast} bytes, slow path {slow}");
    let rr = run(config("cubic", Scheduler::RoundRobin, 1), [path(5, 20), path(40, 20)], &[], None);
    assert_finished(&rr);
    assert!(rr.client.subflow_bytes.iter().all(|&b| b > 0));
}

#[test]
fn coupled_lia_over_two_subflows_delivers_everything() {
    let r = run(config("lia", Scheduler::LowestRtt, 9), [path(10, 20), path(30, 10)], &[], None);
    assert_finished(&r);
    assert!(r.client.subflow_bytes.iter().all(|&b| b > 0));
}

#[test]
fn same_seed_same_run() {
    let lossy = || PathSpec { filters: Some((random_loss(0.01, 8), random_loss(0.01, 9))), ..path(30, 10) };
    let a = run(config("cubic", Scheduler::LowestRtt, 21), [path(10, 20), lossy()], &[1_000 * MS], None);
    let b = run(config("cubic", Scheduler::LowestRtt, 21), [path(10, 20), lossy()], &[1_000 * MS], None);
    assert_eq!(a.client, b.client);
    assert_eq!(a.server, b.server);
    assert_eq!(a.at_checkpoints, b.at_checkpoints);
}

/// A SYN from `from` to server path 0, as a plain TCP client sends it, with `option` added.
fn syn_with(from: SocketAddrV4, option: Option<MptcpOption>) -> Packet {
    let mut out = Vec::new();
    TcpConnection::connect(TcpConfig::default(), from, server_addr(0), 0, &mut out).expect("valid configuration");
    let mut syn = out.pop().expect("a SYN");
    if let Some(option) = option {
        syn.tcp_header_mut().expect("TCP").options.push_mptcp(&option).expect("room in a SYN");
    }
    syn
}

#[test]
fn the_listener_accepts_mp_capable_then_only_joins_with_its_token_once_it_has_the_key() {
    let mut server = MptcpConnection::listen(MptcpConfig::default()).expect("valid configuration");
    let mut out = Vec::new();
    let join = |token| MptcpOption::MpJoin(MpJoin::Syn { backup: false, address_id: 1, receiver_token: token, sender_random_number: 5 });
    // Neither a plain SYN nor a join can open the connection.
    server.on_packet(0, &syn_with(client_addr(0), None), &mut out);
    server.on_packet(0, &syn_with(client_addr(0), Some(join(server.local_token()))), &mut out);
    assert_eq!((server.subflow_count(), out.len()), (0, 0));
    let mut syns = Vec::new();
    let client_cfg = MptcpConfig { seed: 1, ..MptcpConfig::default() };
    let mut client = MptcpConnection::connect(client_cfg, &[(client_addr(0), server_addr(0))], 0, &mut syns).expect("valid");
    server.on_packet(0, &syns[0], &mut out);
    assert_eq!(server.subflow_count(), 1);
    let syn_ack = out.pop().expect("a SYN-ACK");
    let options = syn_ack.tcp_header().expect("TCP").options.mptcp_options().collect::<Vec<_>>();
    assert!(matches!(options[..], [Ok(MptcpOption::MpCapable(MpCapable { form: CapableForm::SynAck { .. }, .. }))]));
    // Until the third ACK brings the client's key, no join can be authenticated.
    server.on_packet(0, &syn_with(client_addr(1), Some(join(server.local_token()))), &mut out);
    assert_eq!((server.subflow_count(), out.len()), (1, 0));
    let mut third_ack = Vec::new();
    client.on_packet(0, &syn_ack, &mut third_ack);
    server.on_packet(0, &third_ack[0], &mut out);
    // A join naming another connection is ignored; one with our token is answered.
    server.on_packet(0, &syn_with(client_addr(1), Some(join(server.local_token() ^ 1))), &mut out);
    assert_eq!((server.subflow_count(), out.len()), (1, 0));
    server.on_packet(0, &syn_with(client_addr(1), Some(join(server.local_token()))), &mut out);
    assert_eq!(server.subflow_count(), 2);
    let syn_ack = out.pop().expect("a SYN-ACK").tcp_header().expect("TCP").options.mptcp_options().collect::<Vec<_>>();
    assert!(matches!(syn_ack[..], [Ok(MptcpOption::MpJoin(MpJoin::SynAck { .. }))]));
}

fn is_join_syn(pkt: &Packet) -> bool {
    let Some(h) = pkt.tcp_header() else { return false };
    h.flags.contains(TcpFlags::SYN) && h.options.mptcp_options().any(|o| matches!(o, Ok(MptcpOption::MpJoin(MpJoin::Syn { .. }))))
}

#[test]
fn the_initiator_joins_only_once_fully_established() {
    // §3.1: the connection is fully established once a DATA_ACK shows the listener has the
    // initiator's key. A join sent earlier could overtake the third ACK on a faster path,
    // reach a listener that cannot check its HMAC and be ignored (test above).
    let mut syn = Vec::new();
    let mut client = connect_client(&mut syn);
    let mut server = MptcpConnection::listen(MptcpConfig::default()).expect("valid configuration");
    let mut wire = Vec::new();
    server.on_packet(0, &syn[0], &mut wire);
    let syn_ack = wire.pop().expect("a SYN-ACK");
    let mut from_client = Vec::new();
    client.on_packet(0, &syn_ack, &mut from_client);
    assert!(!from_client.is_empty(), "the third ACK");
    assert!(!from_client.iter().any(is_join_syn), "no join before a DATA_ACK: {from_client:?}");
    // The server gets the third ACK and sends data: its DSS carries the DATA_ACK.
    let mut from_server = Vec::new();
    for pkt in &from_client {
        server.on_packet(0, pkt, &mut from_server);
    }
    server.send(0, 10_000, &mut from_server);
    let mut after = Vec::new();
    for pkt in &from_server {
        client.on_packet(0, pkt, &mut after);
    }
    assert!(after.iter().any(is_join_syn), "the join once fully established: {after:?}");
}

/// The DSS of a segment, if it has one.
fn dss_of(pkt: &Packet) -> Option<Dss> {
    pkt.tcp_header()?.options.mptcp_options().find_map(|o| match o {
        Ok(MptcpOption::Dss(dss)) => Some(dss),
        _ => None,
    })
}

/// Drops the first `n` segments for which `pick` holds.
fn drop_first(mut n: usize, pick: impl Fn(&Packet) -> bool + 'static) -> Filter {
    Box::new(move |_, pkt| {
        let drop = n > 0 && pick(pkt);
        n -= usize::from(drop);
        !drop
    })
}

fn has_data_fin(pkt: &Packet) -> bool {
    dss_of(pkt).and_then(|d| d.mapping).is_some_and(|m| m.data_fin)
}

/// Whether a segment's DATA_ACK covers the DATA_FIN of a client run with `seed` (the octet
/// after its last byte; its data sequence numbers start after the IDSN of its key).
fn acks_client_data_fin(seed: u64) -> impl Fn(&Packet) -> bool {
    let client = MptcpConfig { seed: seed + 1, ..MptcpConfig::default() };
    let client_key = MptcpConnection::listen(client).expect("valid configuration").local_key();
    let fin_ack = DataSeq::U32(idsn(client_key).wrapping_add(1 + TOTAL_BYTES + 1) as u32);
    move |pkt| dss_of(pkt).and_then(|d| d.data_ack) == Some(fin_ack)
}

#[test]
fn lost_data_fins_and_data_acks_are_signalled_again_until_both_sides_closed() {
    const SEED: u64 = 13;
    let fast = PathSpec { filters: Some((drop_first(2, has_data_fin), drop_first(3, acks_client_data_fin(SEED)))), ..path(10, 20) };
    let slow = PathSpec { filters: Some((drop_first(1, has_data_fin), drop_first(1, has_data_fin))), ..path(30, 10) };
    let r = run(config("cubic", Scheduler::LowestRtt, SEED), [fast, slow], &[], None);
    assert_finished(&r);
}

#[test]
fn the_sender_keeps_within_the_data_level_receive_window() {
    const BUF_BYTES: u64 = 64 * 1024;
    const AT_NS: u64 = 1_000 * MS;
    let paths = || [path(10, 100), path(30, 50)];
    let small = MptcpConfig { rcv_buf_bytes: BUF_BYTES, ..config("cubic", Scheduler::LowestRtt, 3) };
    let r = run(small, paths(), &[AT_NS], None);
    assert_finished(&r);
    assert!(r.server.max_rcv_occupancy_bytes <= BUF_BYTES, "the buffer overfilled: {}", r.server.max_rcv_occupancy_bytes);
    // At most a window per shortest round trip (20 ms) is DATA_ACKed.
    let early = r.at_checkpoints[0].0;
    assert!(early <= BUF_BYTES * (AT_NS / (20 * MS)), "{early} bytes in 1 s exceed the window's pace");
    let unlimited = run(config("cubic", Scheduler::LowestRtt, 3), paths(), &[AT_NS], None);
    assert!(unlimited.at_checkpoints[0].0 > 2 * early, "the window, not the paths, limited the transfer");
}

/// What the zero-delay exchange drives at each end: an MP-TCP connection, or a plain TCP
/// one (whose peer "finished" once its FIN arrived).
trait End {
    fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>);
    fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>);
    fn next_deadline_ns(&self) -> Option<u64>;
    fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>);
    fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>);
    fn take_delivered(&mut self) -> Range<u64>;
    fn peer_finished(&self) -> bool;
}

macro_rules! end_by_delegation {
    ($t:ty, $peer_finished:expr) => {
        impl End for $t {
            fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
                <$t>::on_packet(self, now_ns, pkt, out)
            }
            fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
                <$t>::on_timeout(self, now_ns, out)
            }
            fn next_deadline_ns(&self) -> Option<u64> {
                <$t>::next_deadline_ns(self)
            }
            fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>) {
                <$t>::send(self, now_ns, bytes, out)
            }
            fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
                <$t>::close(self, now_ns, out)
            }
            fn take_delivered(&mut self) -> Range<u64> {
                <$t>::take_delivered(self)
            }
            fn peer_finished(&self) -> bool {
                $peer_finished(self)
            }
        }
    };
}

end_by_delegation!(MptcpConnection, |c: &MptcpConnection| c.stats().peer_finished);
end_by_delegation!(TcpConnection, |c: &TcpConnection| matches!(
    c.state(),
    TcpState::CloseWait | TcpState::LastAck | TcpState::TimeWait | TcpState::Closed
));

/// Two ends (client, server) joined by links without delay: each packet goes at once to the
/// end whose address it is sent to, through `tamper` (false: dropped), and timers fire in
/// time order, to `END_NS`. `written` is what each end writes at the start before closing;
/// an end that writes nothing closes once the other's stream ended. Returns the bytes each
/// delivered to its application.
fn pump(mut ends: [&mut dyn End; 2], written: [u64; 2], wire: &mut Vec<Packet>, mut tamper: impl FnMut(&mut Packet) -> bool) -> [u64; 2] {
    let mut delivered = [0; 2];
    let mut closed = written.map(|bytes| bytes > 0);
    for (end, bytes) in ends.iter_mut().zip(written).filter(|(_, bytes)| *bytes > 0) {
        end.send(0, bytes, wire);
        end.close(0, wire);
    }
    let mut now_ns = 0;
    loop {
        while !wire.is_empty() {
            let mut pkt = wire.remove(0);
            if tamper(&mut pkt) {
                let to_server = (0..PATHS).any(|k| *server_addr(k).ip() == pkt.dst);
                ends[usize::from(to_server)].on_packet(now_ns, &pkt, wire);
            }
            for (i, end) in ends.iter_mut().enumerate() {
                let range = end.take_delivered();
                delivered[i] += range.end - range.start;
                if !closed[i] && end.peer_finished() {
                    closed[i] = true;
                    end.close(now_ns, wire);
                }
            }
        }
        let Some(next_ns) = ends.iter().filter_map(|e| e.next_deadline_ns()).min() else { break };
        if next_ns > END_NS {
            break;
        }
        now_ns = now_ns.max(next_ns);
        for end in ends.iter_mut() {
            end.on_timeout(now_ns, wire);
        }
    }
    delivered
}

/// An MP-TCP client over both paths and an MP-TCP server, through `pump`.
struct Exchange {
    client: MptcpConnection,
    server: MptcpConnection,
    /// Bytes delivered to the client's application and to the server's.
    delivered: [u64; 2],
}

fn exchange(written: [u64; 2], tamper: impl FnMut(&mut Packet) -> bool) -> Exchange {
    let mut wire = Vec::new();
    let mut client = connect_client(&mut wire);
    let mut server = MptcpConnection::listen(MptcpConfig::default()).expect("valid configuration");
    let delivered = pump([&mut client, &mut server], written, &mut wire, tamper);
    Exchange { client, server, delivered }
}

fn connect_client(wire: &mut Vec<Packet>) -> MptcpConnection {
    let addrs: Vec<_> = (0..PATHS).map(|k| (client_addr(k), server_addr(k))).collect();
    MptcpConnection::connect(MptcpConfig { seed: 2, ..MptcpConfig::default() }, &addrs, 0, wire).expect("valid configuration")
}

#[test]
fn a_plain_tcp_server_gets_the_stream_over_the_first_path_as_plain_tcp() {
    let mut wire = Vec::new();
    let mut client = connect_client(&mut wire);
    let mut server = TcpConnection::listen(TcpConfig::default(), server_addr(0)).expect("valid configuration");
    let mut mptcp_options_after_syn = 0;
    let mut to_other_paths = 0;
    let delivered = pump([&mut client, &mut server], [EXCHANGE_BYTES, 0], &mut wire, |pkt| {
        let header = pkt.tcp_header().expect("TCP");
        let syn = header.flags.contains(TcpFlags::SYN) && !header.flags.contains(TcpFlags::ACK);
        mptcp_options_after_syn += usize::from(!syn && header.options.mptcp_options().next().is_some());
        to_other_paths += usize::from(pkt.dst != *server_addr(0).ip() && pkt.dst != *client_addr(0).ip());
        true
    });
    assert_eq!(delivered, [0, EXCHANGE_BYTES]);
    assert_eq!((mptcp_options_after_syn, to_other_paths), (0, 0), "plain TCP, on the first path only");
    let stats = client.stats();
    assert!(stats.fallback && stats.data_fin_acked && stats.peer_finished);
    assert_eq!((stats.data_acked_bytes, client.subflow_count()), (EXCHANGE_BYTES, 1));
    assert_eq!((client.subflow(0).map(TcpConnection::state), server.state()), (Some(TcpState::Closed), TcpState::Closed));
}

/// Changes the first option of `pkt` that `change` picks; true if it did.
fn tamper_option(pkt: &mut Packet, change: impl Fn(MptcpOption) -> Option<MptcpOption>) -> bool {
    let Some(header) = pkt.tcp_header_mut() else { return false };
    let Some(changed) = header.options.mptcp_options().find_map(|o| o.ok().and_then(&change)) else { return false };
    // Our segments carry one MP-TCP option: the others are rebuilt without raw options.
    let base = header.options;
    let mut options = TcpOptions { sack_count: 0, area: TcpOptions::default().area, ..base };
    assert!(options.set_sack(base.sack()));
    options.push_mptcp(&changed).expect("as long as the original");
    header.options = options;
    true
}

const EXCHANGE_BYTES: u64 = 300_000;

#[test]
fn a_join_whose_syn_ack_hmac_is_wrong_is_refused_and_carries_nothing() {
    let bad_syn_ack = |o| match o {
        MptcpOption::MpJoin(MpJoin::SynAck { backup, address_id, sender_truncated_hmac, sender_random_number }) => {
            Some(MptcpOption::MpJoin(MpJoin::SynAck {
                backup,
                address_id,
                sender_truncated_hmac: sender_truncated_hmac ^ 1,
                sender_random_number,
            }))
        }
        _ => None,
    };
    let x = exchange([EXCHANGE_BYTES, 0], |pkt| {
        tamper_option(pkt, bad_syn_ack);
        true
    });
    assert_eq!(x.delivered, [0, EXCHANGE_BYTES], "everything went over the first subflow");
    assert_eq!(x.client.stats().refused_joins, 1);
    assert_eq!(x.client.stats().subflow_bytes, vec![EXCHANGE_BYTES, 0]);
}

#[test]
fn a_join_whose_third_ack_hmac_is_wrong_is_refused_and_carries_nothing() {
    let bad_ack = |o| match o {
        MptcpOption::MpJoin(MpJoin::Ack { mut sender_hmac }) => {
            sender_hmac[19] ^= 1;
            Some(MptcpOption::MpJoin(MpJoin::Ack { sender_hmac }))
        }
        _ => None,
    };
    let x = exchange([EXCHANGE_BYTES, 0], |pkt| {
        tamper_option(pkt, bad_ack);
        true
    });
    assert_eq!(x.delivered, [0, EXCHANGE_BYTES]);
    assert_eq!(x.server.stats().refused_joins, 1);
    assert_eq!(x.client.stats().subflow_bytes, vec![EXCHANGE_BYTES, 0]);
    let untampered = exchange([EXCHANGE_BYTES, 0], |_| true);
    assert!(untampered.client.stats().subflow_bytes[1] > 0, "an authentic join carries data");
}

/// The third ACK of subflow 0, MP_CAPABLE with both keys (RFC 8684 §3.1).
fn is_capable_ack(pkt: &Packet) -> bool {
    let Some(header) = pkt.tcp_header() else { return false };
    header.options.mptcp_options().any(|o| matches!(o, Ok(MptcpOption::MpCapable(MpCapable { form: CapableForm::Ack { .. }, .. }))))
}

#[test]
fn a_lost_mp_capable_third_ack_is_repeated_until_the_server_sending_first_has_the_key() {
    let mut dropped = 0;
    let x = exchange([0, EXCHANGE_BYTES], |pkt| {
        let drop = dropped == 0 && is_capable_ack(pkt);
        dropped += usize::from(drop);
        !drop
    });
    assert_eq!(dropped, 1);
    assert_eq!(x.delivered, [EXCHANGE_BYTES, 0]);
    // The client's DATA_FIN means something to the server only with the client's key.
    assert!(x.server.stats().peer_finished && x.client.stats().data_fin_acked);
    assert!(x.server.stats().data_fin_acked && x.client.stats().peer_finished);
}

#[test]
fn a_lost_mp_capable_third_ack_is_made_up_for_by_mp_capable_on_the_client_s_first_data() {
    let lost_third_ack = PathSpec { filters: Some((drop_first(1, is_capable_ack), Box::new(|_, _| true))), ..path(10, 20) };
    let r = run(config("cubic", Scheduler::LowestRtt, 17), [lost_third_ack, path(30, 10)], &[], None);
    assert_finished(&r);
}

#[test]
fn a_lost_fourth_ack_of_a_join_is_made_up_for_by_repeating_the_third() {
    let is_syn = |pkt: &Packet| pkt.tcp_header().is_some_and(|h| h.flags.contains(TcpFlags::SYN));
    // The server's first segment on the join after its SYN/ACK is the fourth ACK.
    let lost_fourth_ack = PathSpec { filters: Some((Box::new(|_, _| true), drop_first(1, move |p| !is_syn(p)))), ..path(30, 10) };
    let r = run(config("cubic", Scheduler::LowestRtt, 19), [path(10, 20), lost_fourth_ack], &[], None);
    assert_finished(&r);
    assert!(r.client.subflow_bytes[1] > TOTAL_BYTES / 10, "the join carried data: {:?}", r.client.subflow_bytes);
}
