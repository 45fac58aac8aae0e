//! Deterministic two-endpoint harness on the shared driver (millinet-testkit): a server
//! (listens, then sends the application's data) and a client (connects and receives), joined
//! by one link per direction with a one-way delay, an optional bottleneck rate with a
//! drop-tail queue, and a programmable filter (losses, header rewriting).
//!
//! Independently of the model, the client's application is checked to receive the stream
//! contiguous from 0, exactly once, and only bytes that actually arrived.

#![allow(dead_code)] // each test file uses a different part of the harness

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::{Deref, DerefMut};

use millinet_testkit::{Driver, LinkId, Outbox, Port, SplitMix64, Station, StreamCheck};
use millinet_transport::{DelayedAck, TcpConfig, TcpConnection, TcpState, TcpStats};
use millinet_wire::Packet;

pub use millinet_testkit::{Filter, Link, Sent, MS};

pub const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
pub const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 40_000);

pub fn no_loss() -> Filter {
    Box::new(|_, _| true)
}

/// Independent random loss with probability `p`.
pub fn random_loss(p: f64, seed: u64) -> Filter {
    let mut rng = SplitMix64::new(seed);
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
        if pkt.payload_bytes == 0 {
            return true;
        }
        match pending.iter().position(|&o| o == offset(pkt, server_iss)) {
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

/// Stream offset of a server data segment.
fn offset(pkt: &Packet, server_iss: u32) -> u64 {
    pkt.tcp_header().expect("tcp").seq.wrapping_sub(server_iss.wrapping_add(1)) as u64
}

/// The two stations, by their index in the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Server = 0,
    Client = 1,
}

/// So that a record's sender reads `s.from == Side::Client`.
impl PartialEq<Side> for usize {
    fn eq(&self, side: &Side) -> bool {
        *self == *side as usize
    }
}

/// The server's state right after it processed something.
#[derive(Clone, Debug)]
pub struct ServerSnapshot {
    pub time_ns: u64,
    pub next_deadline_ns: Option<u64>,
    pub stats: TcpStats,
    /// The server processed an ACK whose acknowledgment number is this (None: a timeout).
    pub ack: Option<u32>,
}

/// The server and its application: it writes `app_bytes` once established, then closes if
/// asked.
pub struct Server {
    conn: TcpConnection,
    app_bytes: u64,
    app_close: bool,
    app_started: bool,
    /// Log every step (memory grows with the run).
    record: bool,
    log: Vec<ServerSnapshot>,
    acks_received: u64,
    scratch: Vec<Packet>,
}

impl Server {
    fn after(&mut self, now_ns: u64, ack: Option<u32>, out: &mut Outbox<'_>) {
        out.send_all(0, &mut self.scratch);
        if !self.app_started && self.conn.state() == TcpState::Established {
            self.app_started = true;
            self.conn.send(now_ns, self.app_bytes, &mut self.scratch);
            if self.app_close {
                self.conn.close(now_ns, &mut self.scratch);
            }
            out.send_all(0, &mut self.scratch);
        }
        if self.record {
            let stats = self.conn.stats().clone();
            self.log.push(ServerSnapshot { time_ns: now_ns, next_deadline_ns: self.conn.next_deadline_ns(), stats, ack });
        }
    }
}

impl Station for Server {
    fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, out: &mut Outbox<'_>) {
        self.acks_received += 1;
        self.conn.on_packet(now_ns, &packet, &mut self.scratch);
        self.after(now_ns, packet.tcp_header().map(|h| h.ack), out);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        self.conn.on_timeout(now_ns, &mut self.scratch);
        self.after(now_ns, None, out);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.next_deadline_ns()
    }
}

/// The client and its application, which reads everything at once and is checked.
pub struct Client {
    conn: TcpConnection,
    stream: StreamCheck,
    /// What the server's application has written: the client can never get more.
    written_bytes: u64,
    delivered_at_ns: Option<u64>,
    scratch: Vec<Packet>,
}

impl Client {
    fn after(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        out.send_all(0, &mut self.scratch);
        let range = self.conn.take_delivered();
        let new_data = !range.is_empty();
        self.stream.on_delivery(range);
        assert!(self.stream.delivered_bytes() <= self.written_bytes, "more bytes delivered than written");
        if new_data && self.stream.delivered_bytes() == self.written_bytes {
            self.delivered_at_ns = Some(now_ns);
        }
    }
}

impl Station for Client {
    fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, out: &mut Outbox<'_>) {
        self.stream.on_arrival(&packet);
        self.conn.on_packet(now_ns, &packet, &mut self.scratch);
        self.after(now_ns, out);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        self.conn.on_timeout(now_ns, &mut self.scratch);
        self.after(now_ns, out);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.next_deadline_ns()
    }
}

macro_rules! deref_to_connection {
    ($station:ty) => {
        impl Deref for $station {
            type Target = TcpConnection;
            fn deref(&self) -> &TcpConnection {
                &self.conn
            }
        }

        impl DerefMut for $station {
            fn deref_mut(&mut self) -> &mut TcpConnection {
                &mut self.conn
            }
        }
    };
}

deref_to_connection!(Server);
deref_to_connection!(Client);

const SERVER_PORT: Port = Port { station: Side::Server as usize, port: 0 };
const CLIENT_PORT: Port = Port { station: Side::Client as usize, port: 0 };

pub struct Harness {
    pub server: Server,
    pub client: Client,
    pub server_iss: u32,
    net: Driver,
    down: LinkId,
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
        let mut net = Driver::new();
        let down = net.connect(SERVER_PORT, CLIENT_PORT, down);
        net.connect(CLIENT_PORT, SERVER_PORT, up);
        // The SYN is always kept in `sent`, so that `recording()` after `new` sees it.
        net.record = true;
        net.inject(CLIENT_PORT, &mut syn);
        net.record = false;
        Harness {
            server: Server {
                conn: server,
                app_bytes,
                app_close,
                app_started: false,
                record: false,
                log: Vec::new(),
                acks_received: 0,
                scratch: Vec::new(),
            },
            client: Client {
                conn: client,
                stream: StreamCheck::new(),
                written_bytes: app_bytes,
                delivered_at_ns: None,
                scratch: Vec::new(),
            },
            server_iss,
            net,
            down,
        }
    }

    /// Record every packet sent and every server step (memory grows with the run).
    pub fn recording(mut self) -> Harness {
        self.net.record = true;
        self.server.record = true;
        self
    }

    /// Runs until `done` holds or the next event is after `limit_ns`. Returns whether
    /// `done` held.
    pub fn run_until(&mut self, limit_ns: u64, mut done: impl FnMut(&Harness) -> bool) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if !self.net.step(limit_ns, &mut [&mut self.server, &mut self.client]) {
                return false;
            }
        }
    }

    /// Runs until the client's application received everything written (or the limit).
    pub fn run_to_completion(&mut self, limit_ns: u64) -> bool {
        let total = self.client.written_bytes;
        self.run_until(limit_ns, |h| h.delivered_bytes() >= total)
    }

    /// The server's application writes `bytes` more now.
    pub fn server_send(&mut self, bytes: u64) {
        let mut out = Vec::new();
        let now_ns = self.now_ns();
        self.client.written_bytes += bytes;
        self.server.send(now_ns, bytes, &mut out);
        self.net.inject(SERVER_PORT, &mut out);
    }

    pub fn now_ns(&self) -> u64 {
        self.net.now_ns()
    }

    /// Bytes the server's application has written.
    pub fn app_bytes(&self) -> u64 {
        self.client.written_bytes
    }

    pub fn delivered_bytes(&self) -> u64 {
        self.client.stream.delivered_bytes()
    }

    /// When the client's application last caught up with everything written.
    pub fn delivered_at_ns(&self) -> Option<u64> {
        self.client.delivered_at_ns
    }

    /// Packets that reached the server (ACKs, and the client's SYN).
    pub fn acks_to_server(&self) -> u64 {
        self.server.acks_received
    }

    /// Every server step, while recording.
    pub fn server_log(&self) -> &[ServerSnapshot] {
        &self.server.log
    }

    /// Every packet sent, while recording (the client's SYN always).
    pub fn sent(&self) -> &[Sent] {
        self.net.sent()
    }

    /// The server → client link.
    pub fn down(&self) -> &Link {
        self.net.link(self.down)
    }

    pub fn down_mut(&mut self) -> &mut Link {
        self.net.link_mut(self.down)
    }

    /// Data segments the server sent (first transmissions and retransmissions).
    pub fn server_data(&self) -> impl Iterator<Item = &Sent> {
        self.sent().iter().filter(|s| s.from == Side::Server && s.packet.payload_bytes > 0)
    }

    /// Stream offset of a server data segment.
    pub fn offset_of(&self, pkt: &Packet) -> u64 {
        offset(pkt, self.server_iss)
    }
}

/// A configuration with the given congestion control and feature switches.
pub fn config(cc: &str, sack: bool, delayed_ack: DelayedAck) -> TcpConfig {
    TcpConfig { cc: cc.to_string(), sack, delayed_ack, ..TcpConfig::default() }
}
