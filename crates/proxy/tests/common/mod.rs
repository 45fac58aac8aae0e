//! Deterministic harness: a real TCP server and UE (millinet-transport) with the proxy between
//! them. server ⇄ proxy links have a one-way delay; the proxy → UE link has a delay, an
//! optional rate (FIFO queue, whose backlog is reported as RLC bytes in the telemetry fed
//! every T_info) and a loss filter. Every packet is checked on the way:
//! - segments toward the UE are ≤ MSS2 and exactly concatenations of the server's segments;
//! - relayed ACKs never acknowledge beyond the UE's highest cumulative ACK;
//! - relayed windows never exceed the UE's own advertised window.
//! The split-TCP baseline runs in the same harness: the ACK check then counts instead of
//! failing (`acks_beyond_ue`), which shows that the check can fail.

#![allow(dead_code)] // each test file uses a different part of the harness

pub mod scripted;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_proxy::{Direction, Middlebox, NoPayloads, Proxy, ProxyConfig, SplitConfig, SplitProxy, Telemetry};
use millinet_transport::{TcpConfig, TcpConnection};
use millinet_wire::{seq, Packet};

pub const MS: u64 = 1_000_000;
pub const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
pub const UE: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 40_000);

/// Decides whether the n-th packet entering the proxy → UE link survives.
pub type LinkFilter = Box<dyn FnMut(u64, &Packet) -> bool>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Dest {
    ProxyFromServer,
    ProxyFromUe,
    Server,
    Ue,
}

pub struct Setup<P = ProxyConfig> {
    pub proxy: P,
    pub server: TcpConfig,
    pub ue: TcpConfig,
    pub server_side_delay_ns: u64,
    pub ue_side_delay_ns: u64,
    /// Rate of the proxy → UE link (None: infinite).
    pub ue_link_rate_bps: Option<u64>,
    /// Decides whether the n-th packet entering the proxy → UE link survives.
    pub ue_link_filter: LinkFilter,
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
pub fn drop_data_packets(which: Vec<u64>) -> LinkFilter {
    let mut n = 0;
    Box::new(move |_, p| {
        if p.payload_bytes == 0 {
            return true;
        }
        n += 1;
        !which.contains(&n)
    })
}

/// Drops data packets with probability `p` (splitmix64, seeded).
pub fn random_data_loss(p: f64, seed: u64) -> LinkFilter {
    let mut state = seed;
    Box::new(move |_, pkt| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        pkt.payload_bytes == 0 || u >= p
    })
}

pub struct Sim<P: Middlebox = Proxy> {
    /// Keeps end-to-end semantics: the harness fails on an ACK beyond the UE's.
    end_to_end: bool,
    /// Segments toward the UE are checked against this (None: not a coalescing proxy).
    mss2_bytes: Option<u64>,
    pub now_ns: u64,
    pub server: TcpConnection,
    pub ue: TcpConnection,
    pub proxy: P,
    events: BTreeMap<(u64, u64), (Dest, Packet)>,
    counter: u64,
    server_side_delay_ns: u64,
    ue_side_delay_ns: u64,
    ue_link_rate_bps: Option<u64>,
    ue_link_free_ns: u64,
    /// (release time, bytes) of packets queued on the proxy → UE link.
    ue_link_queue: std::collections::VecDeque<(u64, u64)>,
    ue_link_filter: LinkFilter,
    ue_link_packets: u64,
    telemetry_rate_bps: Option<fn(u64) -> u64>,
    next_telemetry_ns: u64,
    /// Server's data segments by stream offset: offset → length.
    pub server_segments: BTreeMap<u64, u64>,
    pub server_isn: Option<u32>,
    /// Highest cumulative ACK the UE sent that reached the proxy, and its latest window field.
    ue_max_ack: Option<u32>,
    ue_window_field: u16,
    pub delivered: u64,
    pub coalesced_segments: u64,
    pub max_segment_bytes: u64,
    pub relayed_acks: u64,
    /// ACKs toward the server beyond the UE's highest cumulative ACK (fails at once if
    /// the middlebox claims end-to-end semantics).
    pub acks_beyond_ue: u64,
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
        let mut out = Vec::new();
        let ue = TcpConnection::connect(setup.ue, UE, SERVER, 0, &mut out).unwrap();
        let mut server = TcpConnection::listen(setup.server, SERVER).unwrap();
        server.send(0, setup.bytes, &mut Vec::new());
        let end_to_end = setup.proxy.end_to_end();
        let mss2_bytes = setup.proxy.mss2_bytes();
        let mut sim = Sim {
            end_to_end,
            mss2_bytes,
            now_ns: 0,
            server,
            ue,
            proxy: setup.proxy.build(),
            events: BTreeMap::new(),
            counter: 0,
            server_side_delay_ns: setup.server_side_delay_ns,
            ue_side_delay_ns: setup.ue_side_delay_ns,
            ue_link_rate_bps: setup.ue_link_rate_bps,
            ue_link_free_ns: 0,
            ue_link_queue: Default::default(),
            ue_link_filter: setup.ue_link_filter,
            ue_link_packets: 0,
            telemetry_rate_bps: setup.telemetry_rate_bps,
            next_telemetry_ns: 0,
            server_segments: BTreeMap::new(),
            server_isn: None,
            ue_max_ack: None,
            ue_window_field: 0,
            delivered: 0,
            coalesced_segments: 0,
            max_segment_bytes: 0,
            relayed_acks: 0,
            acks_beyond_ue: 0,
        };
        sim.on_ue_output(out);
        sim
    }

    fn schedule(&mut self, at: u64, dest: Dest, p: Packet) {
        self.counter += 1;
        self.events.insert((at, self.counter), (dest, p));
    }

    fn on_ue_output(&mut self, out: Vec<Packet>) {
        for p in out {
            self.schedule(self.now_ns + self.ue_side_delay_ns, Dest::ProxyFromUe, p);
        }
    }

    fn on_server_output(&mut self, out: Vec<Packet>) {
        for p in out {
            let h = p.tcp_header().unwrap();
            if h.flags.0 & 0x02 != 0 {
                self.server_isn = Some(h.seq);
            } else if p.payload_bytes > 0 {
                let off = h.seq.wrapping_sub(self.server_isn.unwrap().wrapping_add(1)) as u64;
                if let Some(&len) = self.server_segments.get(&off) {
                    assert_eq!(len, p.payload_bytes as u64, "server resegmented a retransmission");
                }
                self.server_segments.insert(off, p.payload_bytes as u64);
            }
            self.schedule(self.now_ns + self.server_side_delay_ns, Dest::ProxyFromServer, p);
        }
    }

    /// Routes the proxy's outputs by destination address and checks them.
    fn on_proxy_output(&mut self, out: Vec<Packet>) {
        for p in out {
            let h = *p.tcp_header().unwrap();
            if p.dst == *UE.ip() {
                if p.payload_bytes > 0 {
                    self.max_segment_bytes = self.max_segment_bytes.max(p.payload_bytes as u64);
                    self.check_coalesced(h.seq, p.payload_bytes as u64);
                }
                self.ue_link_packets += 1;
                if !(self.ue_link_filter)(self.ue_link_packets, &p) {
                    continue;
                }
                let at = match self.ue_link_rate_bps {
                    Some(rate) => {
                        let start = self.ue_link_free_ns.max(self.now_ns);
                        self.ue_link_free_ns = start + p.wire_bytes() as u64 * 8 * 1_000_000_000 / rate;
                        self.ue_link_queue.push_back((self.ue_link_free_ns, p.wire_bytes() as u64));
                        self.ue_link_free_ns
                    }
                    None => self.now_ns,
                };
                self.schedule(at + self.ue_side_delay_ns, Dest::Ue, p);
            } else {
                assert_eq!(p.dst, *SERVER.ip());
                if h.flags.0 & 0x10 != 0 && h.flags.0 & 0x02 == 0 {
                    let beyond = self.ue_max_ack.is_none_or(|max| seq::lt(max, h.ack));
                    self.acks_beyond_ue += beyond as u64;
                    if self.end_to_end {
                        assert!(!beyond, "relayed ack {} beyond the UE's cumulative ack {:?}", h.ack, self.ue_max_ack);
                        assert!(h.window <= self.ue_window_field, "relayed window {} above the UE's {}", h.window, self.ue_window_field);
                    }
                    self.relayed_acks += 1;
                }
                self.schedule(self.now_ns + self.server_side_delay_ns, Dest::Server, p);
            }
        }
    }

    fn check_coalesced(&mut self, seq_no: u32, len: u64) {
        let Some(mss2) = self.mss2_bytes else { return };
        assert!(len <= mss2, "segment of {len} bytes above MSS2");
        let start = seq_no.wrapping_sub(self.server_isn.unwrap().wrapping_add(1)) as u64;
        let mut cursor = start;
        while cursor < start + len {
            let seg = self.server_segments.get(&cursor).unwrap_or_else(|| panic!("segment at {start} (+{len}) does not follow server boundaries at {cursor}"));
            cursor += seg;
        }
        assert_eq!(cursor, start + len, "segment at {start} cuts a server segment");
        self.coalesced_segments += 1;
    }

    fn rlc_bytes(&mut self) -> u64 {
        while self.ue_link_queue.front().is_some_and(|&(t, _)| t <= self.now_ns) {
            self.ue_link_queue.pop_front();
        }
        self.ue_link_queue.iter().map(|&(_, b)| b).sum()
    }

    /// Both applications close (FIN from each side).
    pub fn close_both(&mut self) {
        let mut out = Vec::new();
        self.server.close(self.now_ns, &mut out);
        self.on_server_output(std::mem::take(&mut out));
        self.ue.close(self.now_ns, &mut out);
        self.on_ue_output(out);
    }

    /// Runs until `until_ns`, until the UE received `bytes`, or until nothing is left to do.
    pub fn run(&mut self, until_ns: u64, bytes: u64) {
        while self.delivered < bytes {
            let next = [
                self.events.keys().next().map(|&(t, _)| t),
                self.server.next_timeout_ns(),
                self.ue.next_timeout_ns(),
                self.proxy.next_timeout_ns(),
                self.telemetry_rate_bps.map(|_| self.next_telemetry_ns),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(mut next) = next else { return };
            next = next.max(self.now_ns);
            if next > until_ns {
                self.now_ns = until_ns;
                return;
            }
            self.now_ns = next;
            let mut out = Vec::new();
            if let Some(rate) = self.telemetry_rate_bps.filter(|_| self.next_telemetry_ns <= next) {
                let rec = Telemetry { t_ns: next, rlc_bytes: self.rlc_bytes(), rate_bps: rate(next) as f64, sinr_db: 20.0, outage: false };
                self.proxy.on_telemetry(next, *UE.ip(), rec, &mut NoPayloads, &mut out);
                self.next_telemetry_ns += MS;
                self.on_proxy_output(std::mem::take(&mut out));
            }
            if self.proxy.next_timeout_ns().is_some_and(|t| t <= next) {
                self.proxy.on_timeout(next, &mut NoPayloads, &mut out);
                self.on_proxy_output(std::mem::take(&mut out));
            }
            if self.server.next_timeout_ns().is_some_and(|t| t <= next) {
                self.server.on_timeout(next, &mut out);
                self.on_server_output(std::mem::take(&mut out));
            }
            if self.ue.next_timeout_ns().is_some_and(|t| t <= next) {
                self.ue.on_timeout(next, &mut out);
                self.on_ue_output(std::mem::take(&mut out));
            }
            while let Some(entry) = self.events.first_entry() {
                if entry.key().0 > next {
                    break;
                }
                let (dest, p) = entry.remove();
                match dest {
                    Dest::ProxyFromServer => {
                        self.proxy.on_packet(next, p, Direction::FromServer, &mut NoPayloads, &mut out);
                        self.on_proxy_output(std::mem::take(&mut out));
                    }
                    Dest::ProxyFromUe => {
                        let h = p.tcp_header().unwrap();
                        if h.flags.0 & 0x10 != 0 {
                            self.ue_max_ack = Some(self.ue_max_ack.map_or(h.ack, |m| seq::max(m, h.ack)));
                            self.ue_window_field = h.window;
                        }
                        self.proxy.on_packet(next, p, Direction::FromUe, &mut NoPayloads, &mut out);
                        self.on_proxy_output(std::mem::take(&mut out));
                    }
                    Dest::Server => {
                        self.server.on_packet(next, &p, &mut out);
                        self.on_server_output(std::mem::take(&mut out));
                    }
                    Dest::Ue => {
                        self.ue.on_packet(next, &p, &mut out);
                        let got = self.ue.take_delivered();
                        assert_eq!(got.start, self.delivered, "UE delivery not contiguous");
                        self.delivered = got.end.max(self.delivered);
                        self.on_ue_output(std::mem::take(&mut out));
                    }
                }
            }
        }
    }
}
