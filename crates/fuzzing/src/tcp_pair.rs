//! Two TCP connections with a seeded fault injector between them.

use std::net::{Ipv4Addr, SocketAddrV4};

use arbitrary::{Arbitrary, Unstructured};
use millinet_testkit::{Driver, FaultCounts, FaultInjector, Faults, Link, Outbox, Port, Station, StreamCheck, MS};
use millinet_transport::{TcpConfig, TcpConnection, TcpState};
use millinet_wire::Packet;

const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(1, 1, 1, 1), 80);
const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 40_000);
/// Simulated time a transfer may take: the worst loss patterns back the RTO off to
/// `MAX_RTO_NS` many times over.
const TIME_LIMIT_NS: u64 = 3_600_000 * MS;
const MAX_RTO_NS: u64 = 4_000 * MS;
/// Events a transfer may take: a model that livelocks (e.g. a timer that keeps firing at
/// one instant) stops the run here.
const MAX_EVENTS: u64 = 2_000_000;

/// One transfer: the client opens, the server sends `bytes` and closes.
#[derive(Clone, Debug, PartialEq)]
pub struct PairSetup {
    pub server: TcpConfig,
    pub client: TcpConfig,
    pub bytes: u64,
    /// One-way delay of each of the two links (server–injector, injector–client).
    pub link_delay_ns: u64,
    pub faults: Faults,
    pub seed: u64,
}

/// How a transfer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairOutcome {
    /// The handshake did not complete before an end gave up on its SYN or SYN-ACK (RFC 9293
    /// allows it; no byte can have been delivered then).
    pub handshake_abandoned: bool,
    pub delivered_bytes: u64,
    pub counts: FaultCounts,
}

/// Runs `setup` and checks that the client's application receives the stream in order, once,
/// only bytes that arrived (`StreamCheck`), and completely unless the handshake was given
/// up; panics otherwise.
pub fn run_pair(setup: &PairSetup) -> PairOutcome {
    let mut out = Vec::new();
    let mut client = Endpoint {
        conn: TcpConnection::connect(setup.client.clone(), CLIENT, SERVER, 0, &mut out).expect("a valid client configuration"),
        to_send: 0,
        check: Some(StreamCheck::new()),
    };
    let mut server = Endpoint {
        conn: TcpConnection::listen(setup.server.clone(), SERVER).expect("a valid server configuration"),
        to_send: setup.bytes,
        check: None,
    };
    let mut injector = FaultInjector::new(setup.faults, setup.seed);
    let port = |station| Port { station, port: 0 };
    let (server_at, injector_at, client_at) = (port(0), port(1), port(2));
    let injector_client_side = Port { station: 1, port: 1 };
    let mut driver = Driver::new();
    driver.connect(server_at, injector_at, Link::new(setup.link_delay_ns));
    driver.connect(injector_at, server_at, Link::new(setup.link_delay_ns));
    driver.connect(client_at, injector_client_side, Link::new(setup.link_delay_ns));
    driver.connect(injector_client_side, client_at, Link::new(setup.link_delay_ns));
    driver.inject(client_at, &mut out);

    let mut events = 0u64;
    while client.delivered_bytes() < setup.bytes {
        // The server writes its bytes the moment it is established, and only then.
        let server_established = server.to_send == 0;
        let progressed = driver.step(TIME_LIMIT_NS, &mut [&mut server, &mut injector, &mut client]);
        if !progressed && !server_established {
            // Either end gave up on the handshake after its SYN retries (the client on its
            // SYN, or the server on its SYN-ACK while the client, with nothing to send, sits
            // established): no data can have flowed.
            assert_eq!(client.delivered_bytes(), 0);
            return PairOutcome { handshake_abandoned: true, delivered_bytes: 0, counts: injector.counts };
        }
        events += 1;
        assert!(
            progressed,
            "{} of {} bytes delivered when nothing was left to happen: server {:?} {:?}, client {:?} {:?} ({setup:?})",
            client.delivered_bytes(),
            setup.bytes,
            server.conn.state(),
            server.conn.stats(),
            client.conn.state(),
            client.conn.stats()
        );
        assert!(events < MAX_EVENTS, "{events} events at {} ns: livelock? ({setup:?})", driver.now_ns());
    }
    PairOutcome { handshake_abandoned: false, delivered_bytes: client.delivered_bytes(), counts: injector.counts }
}

/// A TCP connection as a station; the server's application writes its bytes and closes as
/// soon as the connection is established, the client's reads all it gets.
struct Endpoint {
    conn: TcpConnection,
    to_send: u64,
    check: Option<StreamCheck>,
}

impl Endpoint {
    fn delivered_bytes(&self) -> u64 {
        self.check.as_ref().map_or(0, StreamCheck::delivered_bytes)
    }

    fn after(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if self.to_send > 0 && self.conn.state() == TcpState::Established {
            self.conn.send(now_ns, self.to_send, out);
            self.conn.close(now_ns, out);
            self.to_send = 0;
        }
        if let Some(check) = &mut self.check {
            check.on_delivery(self.conn.take_delivered());
        }
    }
}

impl Station for Endpoint {
    fn on_packet(&mut self, now_ns: u64, _port: usize, packet: Packet, out: &mut Outbox<'_>) {
        if let Some(check) = &mut self.check {
            check.on_arrival(&packet);
        }
        let mut sent = Vec::new();
        self.conn.on_packet(now_ns, &packet, &mut sent);
        self.after(now_ns, &mut sent);
        out.send_all(0, &mut sent);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        let mut sent = Vec::new();
        self.conn.on_timeout(now_ns, &mut sent);
        self.after(now_ns, &mut sent);
        out.send_all(0, &mut sent);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.next_deadline_ns()
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u64,
    /// Fault probabilities in 1/256 of their caps (below), and the longest extra delay in ms.
    drop: u8,
    corrupt: u8,
    duplicate: u8,
    delay: u8,
    max_extra_delay_ms: u8,
    link_delay_ms: u8,
    cc: u8,
    mss: u16,
    /// The transfer's length in 128-byte units.
    length: u8,
    sack: bool,
    timestamps: bool,
    window_scaling: bool,
    /// Each side's ACK timing (`delayed_ack`).
    server_delayed_ack: u8,
    client_delayed_ack: u8,
    /// The client's receive buffer above 4 KiB, in 128-byte units.
    client_rcv_buf: u8,
    server_iss: u32,
    client_iss: u32,
}

/// Fault caps: a connection must still get through, so loss stays moderate.
const MAX_DROP: f64 = 0.3;
const MAX_CORRUPT: f64 = 0.1;
const MAX_DUPLICATE: f64 = 0.3;
const MAX_DELAY: f64 = 0.5;

/// A transfer of up to 32 KiB over a path whose faults, configuration and seed come from
/// the fuzzer's bytes: the stream arrives complete, once and in order (`run_pair`). Short
/// transfers (a few to a few hundred segments) reach every recovery path a long one does
/// (handshake and FIN losses, RTO backoff, SACK, reordering, receive-window stalls with the
/// client's 4–36 KiB buffer) at a tenth of the cost of the 255 KiB ones this target drew
/// first, so many more loss patterns are tried per CPU hour.
pub fn tcp_pair_faults(data: &[u8]) {
    let Ok(i) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let share = |x: u8, cap: f64| f64::from(x) / 256.0 * cap;
    let config = |iss, delayed_ack, rcv_buf_bytes| TcpConfig {
        cc: ["newreno", "cubic", "bbr", "highspeed"][usize::from(i.cc % 4)].to_string(),
        mss_bytes: 100 + u32::from(i.mss) % 1400,
        sack: i.sack,
        timestamps: i.timestamps,
        window_scaling: i.window_scaling,
        delayed_ack,
        max_rto_ns: MAX_RTO_NS,
        rcv_buf_bytes,
        iss,
        ..TcpConfig::default()
    };
    let setup = PairSetup {
        server: config(i.server_iss, crate::delayed_ack(i.server_delayed_ack), 1 << 20),
        client: config(i.client_iss, crate::delayed_ack(i.client_delayed_ack), 4096 + u64::from(i.client_rcv_buf) * 128),
        bytes: u64::from(i.length) * 128 + 1,
        link_delay_ns: u64::from(i.link_delay_ms % 50 + 1) * MS,
        faults: Faults {
            drop: share(i.drop, MAX_DROP),
            corrupt: share(i.corrupt, MAX_CORRUPT),
            duplicate: share(i.duplicate, MAX_DUPLICATE),
            delay: share(i.delay, MAX_DELAY),
            max_extra_delay_ns: u64::from(i.max_extra_delay_ms) * MS,
        },
        seed: i.seed,
    };
    run_pair(&setup);
}
