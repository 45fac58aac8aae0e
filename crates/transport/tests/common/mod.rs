//! Deterministic two-endpoint harness: a server (listens, then sends the application's data)
//! and a client (connects and receives), joined by one link per direction with a one-way
//! delay, an optional bottleneck rate with a drop-tail queue, and a programmable filter
//! (losses, header rewriting). The loop always runs the earliest of: a packet arrival,
//! either side's `next_timeout_ns`.
//!
//! Independently of the model, the harness records which stream bytes were carried by data
//! segments that reached the client, and checks every range the client's application
//! receives: contiguous from 0, and only bytes that actually arrived.

#![allow(dead_code)] // each test file uses a different part of the harness

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;

use millinet_transport::{TcpConfig, TcpConnection, TcpState, TcpStats};
use millinet_wire::Packet;

pub const MS: u64 = 1_000_000;
pub const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
pub const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 40_000);

/// splitmix64: a tiny seeded generator, enough for loss patterns.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Decides the fate of each packet entering a link: return false to drop it; it may also
/// rewrite the packet (e.g. the advertised window, as a proxy would).
pub type Filter = Box<dyn FnMut(u64, &mut Packet) -> bool>;

pub fn no_loss() -> Filter {
    Box::new(|_, _| true)
}

/// Independent random loss with probability `p`.
pub fn random_loss(p: f64, seed: u64) -> Filter {
    let mut rng = Rng::new(seed);
    Box::new(move |_, _| rng.unit() >= p)
}

/// Bursts: after every `period` packets, the next `burst` packets are dropped.
pub fn burst_loss(period: u64, burst: u64) -> Filter {
    let mut n = 0u64;
    Box::new(move |_, _| {
        n += 1;
        n % (period + burst) < period
    })
}

/// Drops the first transmission of the data segments starting at these stream offsets
/// (the server's ISS must be given to map sequence numbers to offsets).
pub fn drop_first_transmission_of(offsets: &[u64], server_iss: u32) -> Filter {
    drop_first_transmissions_of(offsets, 1, server_iss)
}

/// Drops the first `times` transmissions of the data segments at these stream offsets.
pub fn drop_first_transmissions_of(offsets: &[u64], times: usize, server_iss: u32) -> Filter {
    let mut pending: Vec<u64> = offsets.iter().flat_map(|&o| std::iter::repeat_n(o, times)).collect();
    Box::new(move |_, pkt| {
        let h = pkt.tcp_header().expect("tcp");
        if pkt.payload_bytes == 0 {
            return true;
        }
        let offset = h.seq.wrapping_sub(server_iss.wrapping_add(1)) as u64;
        match pending.iter().position(|&o| o == offset) {
            Some(i) => {
                pending.swap_remove(i);
                false
            }
            None => true,
        }
    })
}

/// Drops every data segment sent at or after `from_ns` (a black hole for data).
pub fn drop_data_after(from_ns: u64) -> Filter {
    Box::new(move |now, pkt| !(now >= from_ns && pkt.payload_bytes > 0))
}

/// One direction of the path.
pub struct Link {
    pub delay_ns: u64,
    pub rate_bps: Option<u64>,
    pub queue_limit_packets: usize,
    pub filter: Filter,
    /// Departure times of packets queued or in transmission.
    departures: VecDeque<u64>,
    pub dropped_by_filter: u64,
    pub dropped_by_queue: u64,
}

impl Link {
    pub fn new(delay_ns: u64) -> Link {
        Link {
            delay_ns,
            rate_bps: None,
            queue_limit_packets: usize::MAX,
            filter: no_loss(),
            departures: VecDeque::new(),
            dropped_by_filter: 0,
            dropped_by_queue: 0,
        }
    }

    pub fn with_rate(mut self, rate_bps: u64, queue_limit_packets: usize) -> Link {
        self.rate_bps = Some(rate_bps);
        self.queue_limit_packets = queue_limit_packets;
        self
    }

    pub fn with_filter(mut self, filter: Filter) -> Link {
        self.filter = filter;
        self
    }

    /// Packets queued or in transmission at `now_ns` (the drop-tail queue's occupancy).
    pub fn queued_packets(&self, now_ns: u64) -> usize {
        self.departures.iter().filter(|&&d| d > now_ns).count()
    }

    /// Arrival time at the far end, or None if dropped.
    fn admit(&mut self, now_ns: u64, pkt: &mut Packet) -> Option<u64> {
        if !(self.filter)(now_ns, pkt) {
            self.dropped_by_filter += 1;
            return None;
        }
        let Some(rate) = self.rate_bps else { return Some(now_ns + self.delay_ns) };
        while self.departures.front().is_some_and(|&d| d <= now_ns) {
            self.departures.pop_front();
        }
        if self.departures.len() >= self.queue_limit_packets {
            self.dropped_by_queue += 1;
            return None;
        }
        let start = self.departures.back().copied().unwrap_or(now_ns).max(now_ns);
        let departure = start + pkt.wire_bytes() as u64 * 8 * 1_000_000_000 / rate;
        self.departures.push_back(departure);
        Some(departure + self.delay_ns)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

/// One packet as it left an endpoint.
#[derive(Clone, Debug)]
pub struct Sent {
    pub time_ns: u64,
    pub from: Side,
    pub packet: Packet,
    pub dropped: bool,
}

/// The server's state right after it processed something.
#[derive(Clone, Debug)]
pub struct ServerSnapshot {
    pub time_ns: u64,
    pub next_timeout_ns: Option<u64>,
    pub stats: TcpStats,
    /// The server processed an ACK whose acknowledgment number is this (None: a timeout).
    pub ack: Option<u32>,
}

pub struct Harness {
    pub now_ns: u64,
    pub server: TcpConnection,
    pub client: TcpConnection,
    pub down: Link,
    pub up: Link,
    pub server_iss: u32,
    /// Bytes the server's application writes once established, and whether it then closes.
    pub app_bytes: u64,
    pub app_close: bool,
    app_started: bool,
    /// Record every packet sent and every server step (memory grows with the run).
    pub record: bool,
    pub sent: Vec<Sent>,
    pub server_log: Vec<ServerSnapshot>,
    arrivals: BinaryHeap<Reverse<(u64, u64)>>,
    in_flight: Vec<Option<(Side, Packet)>>,
    free_slots: Vec<usize>,
    next_id: u64,
    /// Stream ranges carried by data segments that reached the client (sorted, merged).
    received: Vec<Range<u64>>,
    pub delivered_bytes: u64,
    pub delivered_at_ns: Option<u64>,
    pub acks_to_server: u64,
}

impl Harness {
    /// The client connects at t = 0; the server starts writing `app_bytes` when established.
    pub fn new(server_cfg: TcpConfig, client_cfg: TcpConfig, down: Link, up: Link, app_bytes: u64, app_close: bool) -> Harness {
        let server_iss = server_cfg.iss;
        let server = TcpConnection::listen(server_cfg, SERVER).expect("server config");
        let mut out = Vec::new();
        let client = TcpConnection::connect(client_cfg, CLIENT, SERVER, 0, &mut out).expect("client config");
        Harness::with_connections(server, server_iss, client, out, down, up, app_bytes, app_close)
    }

    /// Like `new`, with connections built by the caller: a server listening on SERVER and
    /// a client that connected from CLIENT at t = 0, emitting `syn`.
    #[allow(clippy::too_many_arguments)]
    pub fn with_connections(
        server: TcpConnection,
        server_iss: u32,
        client: TcpConnection,
        mut syn: Vec<Packet>,
        down: Link,
        up: Link,
        app_bytes: u64,
        app_close: bool,
    ) -> Harness {
        let mut h = Harness {
            now_ns: 0,
            server,
            client,
            down,
            up,
            server_iss,
            app_bytes,
            app_close,
            app_started: false,
            record: false,
            sent: Vec::new(),
            server_log: Vec::new(),
            arrivals: BinaryHeap::new(),
            in_flight: Vec::new(),
            free_slots: Vec::new(),
            next_id: 0,
            received: Vec::new(),
            delivered_bytes: 0,
            delivered_at_ns: None,
            acks_to_server: 0,
        };
        // The SYN is always kept in `sent`, so that `recording()` after `new` sees it.
        h.record = true;
        h.emit(Side::Client, &mut syn);
        h.record = false;
        h
    }

    pub fn recording(mut self) -> Harness {
        self.record = true;
        self
    }

    fn emit(&mut self, from: Side, out: &mut Vec<Packet>) {
        for mut pkt in out.drain(..) {
            let link = match from {
                Side::Server => &mut self.down,
                Side::Client => &mut self.up,
            };
            let arrival = link.admit(self.now_ns, &mut pkt);
            if self.record {
                self.sent.push(Sent {
                    time_ns: self.now_ns,
                    from,
                    packet: pkt,
                    dropped: arrival.is_none(),
                });
            }
            if let Some(t) = arrival {
                let slot = match self.free_slots.pop() {
                    Some(s) => {
                        self.in_flight[s] = Some((from, pkt));
                        s
                    }
                    None => {
                        self.in_flight.push(Some((from, pkt)));
                        self.in_flight.len() - 1
                    }
                };
                // Ties leave in send order: the id grows; the slot rides in the low bits.
                self.arrivals.push(Reverse((t, (self.next_id << 24) | slot as u64)));
                self.next_id += 1;
            }
        }
    }

    fn next_event_ns(&self) -> Option<u64> {
        let arrival = self.arrivals.peek().map(|r| r.0 .0);
        [arrival, self.server.next_timeout_ns(), self.client.next_timeout_ns()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs until `done` holds or the next event is after `limit_ns`. Returns whether
    /// `done` held.
    pub fn run_until(&mut self, limit_ns: u64, mut done: impl FnMut(&Harness) -> bool) -> bool {
        let mut out = Vec::new();
        loop {
            if done(self) {
                return true;
            }
            let Some(t) = self.next_event_ns().filter(|&t| t <= limit_ns) else {
                self.now_ns = self.now_ns.max(limit_ns);
                return false;
            };
            if t > limit_ns {
                self.now_ns = limit_ns;
                return false;
            }
            assert!(t >= self.now_ns, "time went backwards: {t} < {}", self.now_ns);
            self.now_ns = t;
            if let Some(&Reverse((at, key))) = self.arrivals.peek() {
                if at == t {
                    self.arrivals.pop();
                    let slot = (key & 0xFF_FFFF) as usize;
                    let (from, pkt) = self.in_flight[slot].take().expect("packet in flight");
                    self.free_slots.push(slot);
                    match from {
                        Side::Server => {
                            self.note_data_arrival(&pkt);
                            self.client.on_packet(t, &pkt, &mut out);
                            self.after(Side::Client, &mut out, None);
                        }
                        Side::Client => {
                            self.acks_to_server += 1;
                            self.server.on_packet(t, &pkt, &mut out);
                            let ack = pkt.tcp_header().map(|h| h.ack);
                            self.after(Side::Server, &mut out, ack);
                        }
                    }
                    continue;
                }
            }
            if self.server.next_timeout_ns().is_some_and(|d| d <= t) {
                self.server.on_timeout(t, &mut out);
                self.after(Side::Server, &mut out, None);
            }
            if self.client.next_timeout_ns().is_some_and(|d| d <= t) {
                self.client.on_timeout(t, &mut out);
                self.after(Side::Client, &mut out, None);
            }
        }
    }

    /// Runs until the client's application received `app_bytes` (or the limit).
    pub fn run_to_completion(&mut self, limit_ns: u64) -> bool {
        let total = self.app_bytes;
        self.run_until(limit_ns, |h| h.delivered_bytes >= total)
    }

    fn after(&mut self, side: Side, out: &mut Vec<Packet>, ack: Option<u32>) {
        self.emit(side, out);
        if side == Side::Server {
            if !self.app_started && self.server.state() == TcpState::Established {
                self.app_started = true;
                self.server.send(self.now_ns, self.app_bytes, out);
                if self.app_close {
                    self.server.close(self.now_ns, out);
                }
                self.emit(Side::Server, out);
            }
            if self.record {
                self.server_log.push(ServerSnapshot {
                    time_ns: self.now_ns,
                    next_timeout_ns: self.server.next_timeout_ns(),
                    stats: self.server.stats().clone(),
                    ack,
                });
            }
        } else {
            let range = self.client.take_delivered();
            self.check_delivery(range);
        }
    }

    fn note_data_arrival(&mut self, pkt: &Packet) {
        if pkt.payload_bytes == 0 {
            return;
        }
        let h = pkt.tcp_header().expect("tcp");
        let start = h.seq.wrapping_sub(self.server_iss.wrapping_add(1)) as u64;
        let mut range = start..start + pkt.payload_bytes as u64;
        // Merge into the sorted list of received ranges (test code: linear is fine).
        let mut merged = Vec::with_capacity(self.received.len() + 1);
        for r in self.received.drain(..) {
            if r.end < range.start || r.start > range.end {
                merged.push(r);
            } else {
                range = r.start.min(range.start)..r.end.max(range.end);
            }
        }
        merged.push(range);
        merged.sort_by_key(|r| r.start);
        self.received = merged;
    }

    /// The application must receive the stream in order, exactly once, and only bytes
    /// that really arrived in data segments.
    fn check_delivery(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        assert_eq!(range.start, self.delivered_bytes, "delivery must continue where it stopped");
        assert!(
            self.received.iter().any(|r| r.start <= range.start && range.end <= r.end),
            "delivered {range:?} but the client only received {:?}",
            self.received
        );
        self.delivered_bytes = range.end;
        assert!(self.delivered_bytes <= self.app_bytes, "more bytes delivered than written");
        if self.delivered_bytes == self.app_bytes {
            self.delivered_at_ns = Some(self.now_ns);
        }
    }

    /// The server's application writes `bytes` more now.
    pub fn server_send(&mut self, bytes: u64) {
        let mut out = Vec::new();
        self.app_bytes += bytes;
        self.server.send(self.now_ns, bytes, &mut out);
        self.emit(Side::Server, &mut out);
    }

    /// Data segments the server sent (first transmissions and retransmissions).
    pub fn server_data(&self) -> impl Iterator<Item = &Sent> {
        self.sent.iter().filter(|s| s.from == Side::Server && s.packet.payload_bytes > 0)
    }

    /// Stream offset of a server data segment.
    pub fn offset_of(&self, pkt: &Packet) -> u64 {
        pkt.tcp_header().expect("tcp").seq.wrapping_sub(self.server_iss.wrapping_add(1)) as u64
    }
}

/// A configuration with the given congestion control and feature switches.
pub fn config(cc: &str, sack: bool, delayed_ack: bool) -> TcpConfig {
    TcpConfig {
        cc: cc.to_string(),
        sack,
        delayed_ack,
        ..TcpConfig::default()
    }
}
