//! Deterministic harness on the shared driver (millinet-testkit): a real TCP server and UE
//! (millinet-transport) with the proxy between them. server ⇄ proxy links have a one-way
//! delay; the proxy → UE link has a delay, an optional rate (FIFO queue, whose backlog is
//! reported as RLC bytes in the telemetry fed every T_info) and a loss filter. Every packet
//! is checked on the way:
//! - segments toward the UE are ≤ MSS2 and exactly concatenations of the server's segments;
//! - relayed ACKs never acknowledge beyond the UE's highest cumulative ACK;
//! - relayed windows never exceed the UE's own advertised window;
//! - the UE's application gets the stream in order, once, and only bytes that arrived.
//!
//! The split-TCP baseline runs in the same harness: the ACK check then counts instead of
//! failing (`acks_beyond_ue`), which shows that the check can fail.

#![allow(dead_code)] // each test file uses a different part of the harness

pub mod scripted;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::{Deref, DerefMut};

use millinet_proxy::{Direction, Middlebox, NoPayloads, Proxy, ProxyConfig, SplitConfig, SplitProxy, Telemetry};
use millinet_testkit::{Driver, Filter, Link, Outbox, Port, SplitMix64, Station, StreamCheck};
use millinet_transport::{TcpConfig, TcpConnection};
use millinet_wire::{seq, Packet, TcpFlags};

pub use millinet_testkit::MS;
pub const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
pub const UE: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 40_000);

pub struct Setup<P = ProxyConfig> {
    pub proxy: P,
    pub server: TcpConfig,
    pub ue: TcpConfig,
    pub server_side_delay_ns: u64,
    pub ue_side_delay_ns: u64,
    /// Rate of the proxy → UE link (None: infinite).
    pub ue_link_rate_bps: Option<u64>,
    /// Decides whether each packet entering the proxy → UE link survives.
    pub ue_link_filter: Filter,
    pub bytes: u64,
    /// Feed telemetry every T_info with the achievable rate this gives at each time (None: no telemetry).
    pub telemetry_rate_bps: Option<fn(u64) -> u64>,
}

impl Setup {
    pub fn new(bytes: u64) -> Setup {
        Setup::with_proxy(ProxyConfig::default(), bytes)
    }
}

impl<P> Setup<P> {
    pub fn with_proxy(proxy: P, bytes: u64) -> Setup<P> {
        Setup {
            proxy,
            server: TcpConfig { mss_bytes: 1400, ..TcpConfig::default() },
            ue: TcpConfig { mss_bytes: 20_000, rcv_buf_bytes: 8 << 20, ..TcpConfig::default() },
            server_side_delay_ns: 10 * MS,
            ue_side_delay_ns: 5 * MS,
            ue_link_rate_bps: None,
            ue_link_filter: Box::new(|_, _| true),
            bytes,
            telemetry_rate_bps: None,
        }
    }
}

/// Drops exactly the listed data packets (1-based count of data packets entering the link).
pub fn drop_data_packets(which: Vec<u64>) -> Filter {
    let mut n = 0;
    Box::new(move |_, p| {
        if p.payload_bytes == 0 {
            return true;
        }
        n += 1;
        !which.contains(&n)
    })
}

/// Drops data packets with probability `p` (one draw per packet, seeded).
pub fn random_data_loss(p: f64, seed: u64) -> Filter {
    let mut rng = SplitMix64::new(seed);
    Box::new(move |_, pkt| {
        let u = rng.unit();
        pkt.payload_bytes == 0 || u >= p
    })
}

/// The middlebox as a station, with the checks of what crosses it. Port 0 faces the server,
/// port 1 the UE.
pub struct Checked<P> {
    inner: P,
    /// Keeps end-to-end semantics: the harness fails on an ACK beyond the UE's.
    end_to_end: bool,
    /// Segments toward the UE are checked against this (None: not a coalescing proxy).
    mss2_bytes: Option<u64>,
    telemetry_rate_bps: Option<fn(u64) -> u64>,
    next_telemetry_ns: u64,
    /// Server's data segments that reached the proxy, by stream offset: offset → length.
    server_segments: BTreeMap<u64, u64>,
    server_isn: Option<u32>,
    /// Highest cumulative ACK the UE sent that reached the proxy, and its latest window field.
    ue_max_ack: Option<u32>,
    ue_window_field: u16,
    pub coalesced_segments: u64,
    pub max_segment_bytes: u64,
    pub relayed_acks: u64,
    /// ACKs toward the server beyond the UE's highest cumulative ACK (fails at once if
    /// the middlebox claims end-to-end semantics).
    pub acks_beyond_ue: u64,
    scratch: Vec<Packet>,
}

const SERVER_SIDE: usize = 0;
const UE_SIDE: usize = 1;

impl<P: Middlebox> Checked<P> {
    fn note_server_segment(&mut self, p: &Packet) {
        let h = p.tcp_header().unwrap();
        if h.flags.contains(TcpFlags::SYN) {
            self.server_isn = Some(h.seq);
        } else if p.payload_bytes > 0 {
            let off = h.seq.wrapping_sub(self.server_isn.unwrap().wrapping_add(1)) as u64;
            if let Some(&len) = self.server_segments.get(&off) {
                assert_eq!(len, p.payload_bytes as u64, "server resegmented a retransmission");
            }
            self.server_segments.insert(off, p.payload_bytes as u64);
        }
    }

    /// Routes the proxy's outputs by destination address and checks them.
    fn route(&mut self, out: &mut Outbox<'_>) {
        for p in std::mem::take(&mut self.scratch).drain(..) {
            let h = *p.tcp_header().unwrap();
            if p.dst == *UE.ip() {
                if p.payload_bytes > 0 {
                    self.max_segment_bytes = self.max_segment_bytes.max(p.payload_bytes as u64);
                    self.check_coalesced(h.seq, p.payload_bytes as u64);
                }
                out.send(UE_SIDE, p);
            } else {
                assert_eq!(p.dst, *SERVER.ip());
                if h.flags.contains(TcpFlags::ACK) && !h.flags.contains(TcpFlags::SYN) {
                    let beyond = self.ue_max_ack.is_none_or(|max| seq::lt(max, h.ack));
                    self.acks_beyond_ue += beyond as u64;
                    if self.end_to_end {
                        assert!(!beyond, "relayed ack {} beyond the UE's cumulative ack {:?}", h.ack, self.ue_max_ack);
                        assert!(h.window <= self.ue_window_field, "relayed window {} above the UE's {}", h.window, self.ue_window_field);
                    }
                    self.relayed_acks += 1;
                }
                out.send(SERVER_SIDE, p);
            }
        }
    }

    fn check_coalesced(&mut self, seq_no: u32, len: u64) {
        let Some(mss2) = self.mss2_bytes else { return };
        assert!(len <= mss2, "segment of {len} bytes above MSS2");
        let start = seq_no.wrapping_sub(self.server_isn.unwrap().wrapping_add(1)) as u64;
        let mut cursor = start;
        while cursor < start + len {
            let seg = self
                .server_segments
                .get(&cursor)
                .unwrap_or_else(|| panic!("segment at {start} (+{len}) does not follow server boundaries at {cursor}"));
            cursor += seg;
        }
        assert_eq!(cursor, start + len, "segment at {start} cuts a server segment");
        self.coalesced_segments += 1;
    }
}

impl<P: Middlebox> Station for Checked<P> {
    fn on_packet(&mut self, now_ns: u64, port: usize, p: Packet, out: &mut Outbox<'_>) {
        let direction = if port == SERVER_SIDE {
            self.note_server_segment(&p);
            Direction::FromServer
        } else {
            let h = p.tcp_header().unwrap();
            if h.flags.contains(TcpFlags::ACK) {
                self.ue_max_ack = Some(self.ue_max_ack.map_or(h.ack, |m| seq::max(m, h.ack)));
                self.ue_window_field = h.window;
            }
            Direction::FromUe
        };
        self.inner.on_packet(now_ns, p, direction, &mut NoPayloads, &mut self.scratch);
        self.route(out);
    }

    /// Telemetry first (every T_info = 1 ms, the UE link's backlog as RLC bytes), then the
    /// proxy's own timer.
    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        if let Some(rate) = self.telemetry_rate_bps.filter(|_| self.next_telemetry_ns <= now_ns) {
            let rec = Telemetry {
                t_ns: now_ns,
                rlc_bytes: out.queued_bytes(UE_SIDE),
                rate_bps: rate(now_ns) as f64,
                sinr_db: 20.0,
                outage: false,
            };
            self.inner.on_telemetry(now_ns, *UE.ip(), rec, &mut NoPayloads, &mut self.scratch);
            self.next_telemetry_ns += MS;
            self.route(out);
        }
        if self.inner.next_deadline_ns().is_some_and(|t| t <= now_ns) {
            self.inner.on_timeout(now_ns, &mut NoPayloads, &mut self.scratch);
            self.route(out);
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let telemetry_ns = self.telemetry_rate_bps.map(|_| self.next_telemetry_ns);
        [self.inner.next_deadline_ns(), telemetry_ns].into_iter().flatten().min()
    }
}

impl<P> Deref for Checked<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.inner
    }
}

/// A TCP endpoint whose application reads everything at once, checked.
pub struct Endpoint {
    conn: TcpConnection,
    stream: StreamCheck,
    scratch: Vec<Packet>,
}

impl Endpoint {
    fn new(conn: TcpConnection) -> Endpoint {
        Endpoint { conn, stream: StreamCheck::new(), scratch: Vec::new() }
    }

    fn after(&mut self, out: &mut Outbox<'_>) {
        out.send_all(0, &mut self.scratch);
        self.stream.on_delivery(self.conn.take_delivered());
    }
}

impl Station for Endpoint {
    fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, out: &mut Outbox<'_>) {
        self.stream.on_arrival(&packet);
        self.conn.on_packet(now_ns, &packet, &mut self.scratch);
        self.after(out);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        self.conn.on_timeout(now_ns, &mut self.scratch);
        self.after(out);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.next_deadline_ns()
    }
}

impl Deref for Endpoint {
    type Target = TcpConnection;
    fn deref(&self) -> &TcpConnection {
        &self.conn
    }
}

impl DerefMut for Endpoint {
    fn deref_mut(&mut self) -> &mut TcpConnection {
        &mut self.conn
    }
}

/// Station indices: at equal times their deadlines fire in this order.
const PROXY_STATION: usize = 0;
const SERVER_STATION: usize = 1;
const UE_STATION: usize = 2;

pub struct Sim<P: Middlebox = Proxy> {
    pub proxy: Checked<P>,
    pub server: Endpoint,
    pub ue: Endpoint,
    net: Driver,
}

/// Builds the middlebox from its configuration, with what the harness checks of it.
pub trait Build {
    type Box: Middlebox;
    /// Keeps end-to-end semantics.
    fn end_to_end(&self) -> bool;
    fn mss2_bytes(&self) -> Option<u64>;
    fn build(self) -> Self::Box;
}

impl Build for ProxyConfig {
    type Box = Proxy;
    fn end_to_end(&self) -> bool {
        true
    }
    fn mss2_bytes(&self) -> Option<u64> {
        Some(self.mss2_bytes as u64)
    }
    fn build(self) -> Proxy {
        Proxy::new(self).unwrap()
    }
}

impl Build for SplitConfig {
    type Box = SplitProxy;
    fn end_to_end(&self) -> bool {
        false
    }
    fn mss2_bytes(&self) -> Option<u64> {
        None
    }
    fn build(self) -> SplitProxy {
        SplitProxy::new(self).unwrap()
    }
}

/// Either proxy behind the crate's one interface, chosen at run time.
pub enum AnyProxy {
    Milli(ProxyConfig),
    Split(SplitConfig),
}

impl Build for AnyProxy {
    type Box = Box<dyn Middlebox>;
    fn end_to_end(&self) -> bool {
        match self {
            AnyProxy::Milli(c) => c.end_to_end(),
            AnyProxy::Split(c) => c.end_to_end(),
        }
    }
    fn mss2_bytes(&self) -> Option<u64> {
        match self {
            AnyProxy::Milli(c) => c.mss2_bytes(),
            AnyProxy::Split(c) => c.mss2_bytes(),
        }
    }
    fn build(self) -> Box<dyn Middlebox> {
        match self {
            AnyProxy::Milli(c) => Box::new(c.build()),
            AnyProxy::Split(c) => Box::new(c.build()),
        }
    }
}

impl<P: Middlebox> Sim<P> {
    pub fn new<C: Build<Box = P>>(setup: Setup<C>) -> Sim<P> {
        let mut syn = Vec::new();
        let ue = TcpConnection::connect(setup.ue, UE, SERVER, 0, &mut syn).unwrap();
        let mut server = TcpConnection::listen(setup.server, SERVER).unwrap();
        server.send(0, setup.bytes, &mut Vec::new());
        let proxy = Checked {
            end_to_end: setup.proxy.end_to_end(),
            mss2_bytes: setup.proxy.mss2_bytes(),
            inner: setup.proxy.build(),
            telemetry_rate_bps: setup.telemetry_rate_bps,
            next_telemetry_ns: 0,
            server_segments: BTreeMap::new(),
            server_isn: None,
            ue_max_ack: None,
            ue_window_field: 0,
            coalesced_segments: 0,
            max_segment_bytes: 0,
            relayed_acks: 0,
            acks_beyond_ue: 0,
            scratch: Vec::new(),
        };
        let port = |station, port| Port { station, port };
        let mut net = Driver::new();
        let server_side = Link::new(setup.server_side_delay_ns);
        net.connect(port(SERVER_STATION, 0), port(PROXY_STATION, SERVER_SIDE), server_side);
        net.connect(port(PROXY_STATION, SERVER_SIDE), port(SERVER_STATION, 0), Link::new(setup.server_side_delay_ns));
        let mut toward_ue = Link::new(setup.ue_side_delay_ns).with_filter(setup.ue_link_filter);
        toward_ue.rate_bps = setup.ue_link_rate_bps;
        net.connect(port(PROXY_STATION, UE_SIDE), port(UE_STATION, 0), toward_ue);
        net.connect(port(UE_STATION, 0), port(PROXY_STATION, UE_SIDE), Link::new(setup.ue_side_delay_ns));
        net.inject(port(UE_STATION, 0), &mut syn);
        Sim { proxy, server: Endpoint::new(server), ue: Endpoint::new(ue), net }
    }

    pub fn now_ns(&self) -> u64 {
        self.net.now_ns()
    }

    /// Bytes the UE's application received.
    pub fn delivered(&self) -> u64 {
        self.ue.stream.delivered_bytes()
    }

    /// Both applications close (FIN from each side).
    pub fn close_both(&mut self) {
        let mut out = Vec::new();
        let now_ns = self.now_ns();
        self.server.close(now_ns, &mut out);
        self.net.inject(Port { station: SERVER_STATION, port: 0 }, &mut out);
        self.ue.close(now_ns, &mut out);
        self.net.inject(Port { station: UE_STATION, port: 0 }, &mut out);
    }

    /// Runs until `until_ns`, until the UE received `bytes`, or until nothing is left to do.
    pub fn run(&mut self, until_ns: u64, bytes: u64) {
        while self.delivered() < bytes && self.net.step(until_ns, &mut [&mut self.proxy, &mut self.server, &mut self.ue]) {}
    }
}
