//! The split-TCP baseline (docs/proxy.md#split-tcp) on real packets: every flow is two kernel TCP
//! connections, the one the UE opened (accepted here) and one opened here to the server, with
//! the bytes copied between them. Each side is the kernel's TCP, so the server's data is
//! acknowledged by this host's stack as it arrives (early ACKs) and sent on toward the UE with
//! the proxy's own congestion control and MSS; what waits in between is the two sockets'
//! buffers and one copy buffer per direction. The proxy crate's split model carries lengths,
//! not bytes, and a real split proxy is two real TCPs, so the real one is the kernel's
//! (docs/proxyd.md, "The split-TCP baseline").
//!
//! Two ways to reach it: the emulator's explicit proxy (the UE connects to the relay, which
//! connects to one configured server) and the daemon's transparent one (an iptables TPROXY
//! rule hands it the UE's connections: the accepted socket's local address is the server the
//! UE asked for, and the connection to it leaves from the UE's own address and port, so
//! neither end sees this host's address).
//!
//! One thread, one epoll set, non-blocking sockets: a flow costs two copy buffers and four
//! socket buffers, not threads, so `max_flows` bounds the memory.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Bytes one direction of a flow copies per read: what one read of a busy socket returns.
const COPY_BUFFER_BYTES: usize = 1 << 16;
/// How often the loop looks at `running` when nothing happens.
const POLL_MS: i32 = 20;
/// The epoll token of the listener; flows use `2 × slot + side`.
const LISTENER: u64 = u64::MAX;

/// How the proxy's TCP toward the UE is set up (the accepted sockets inherit it).
#[derive(Clone, Debug)]
pub struct SplitSockets {
    /// The kernel's name of the congestion control toward the UE (`proxy.split_cc`).
    pub cc: String,
    /// TCP_MAXSEG toward the UE, when the proxy's MSS (`proxy.split_mss_bytes`) is below the
    /// path's (Linux subtracts the timestamp option from the value it is given).
    pub max_segment_bytes: Option<u32>,
    /// Intercepted by TPROXY (IP_TRANSPARENT on the listener and on the upstream sockets).
    pub transparent: bool,
}

/// Where the connection toward the server goes.
#[derive(Clone, Copy, Debug)]
pub enum Upstream {
    /// One server, whatever the UE connected to (the emulator's explicit proxy).
    Fixed(SocketAddrV4),
    /// The address the UE connected to, from the UE's own address and port (TPROXY).
    OriginalDestination,
}

/// Counters and gauges, readable while the relay runs.
#[derive(Debug, Default)]
pub struct SplitCounters {
    pub flows_accepted: AtomicU64,
    /// Flows whose two connections are still open.
    pub flows_active: AtomicU64,
    /// Connections closed at once because `max_flows` flows were open.
    pub flows_refused_limit: AtomicU64,
    /// Connections closed at once because they came from outside the UE networks, or straight
    /// to the relay's own port rather than through the TPROXY rule.
    pub flows_refused_not_ue: AtomicU64,
    /// Flows whose connection toward the server failed (refused, unreachable, timed out).
    pub upstream_connect_failures: AtomicU64,
    /// Flows ended by a reset or another socket error on either side.
    pub flows_reset: AtomicU64,
    pub bytes_to_ue: AtomicU64,
    pub bytes_to_server: AtomicU64,
}

impl SplitCounters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// Which connection of a flow.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Ue = 0,
    Server = 1,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Ue => Side::Server,
            Side::Server => Side::Ue,
        }
    }
}

/// One direction's bytes read from one side and not yet written to the other.
struct Direction {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The reading side ended its stream (read returned 0).
    ended: bool,
    /// The FIN was passed on (shutdown of the writing side's sending half).
    passed_on: bool,
}

impl Direction {
    fn new() -> Direction {
        Direction { buf: vec![0u8; COPY_BUFFER_BYTES].into_boxed_slice(), start: 0, end: 0, ended: false, passed_on: false }
    }

    fn wants_read(&self) -> bool {
        !self.ended && self.end < self.buf.len()
    }

    fn wants_write(&self) -> bool {
        self.start < self.end
    }
}

struct Flow {
    sockets: [TcpStream; 2],
    /// `toward[s]`: the bytes going to side `s`.
    toward: [Direction; 2],
    /// The connection toward the server is established.
    connected: bool,
    /// The epoll events each socket is registered for (None: not registered, nothing to wait
    /// for on it until the other side moves).
    interest: [Option<u32>; 2],
}

/// Why a flow ends.
enum End {
    Done,
    Reset,
    ConnectFailed,
}

pub struct SplitRelay {
    listener: TcpListener,
    port: u16,
    transparent: bool,
    counters: SplitCounters,
}

impl SplitRelay {
    /// Listens on `at` in the calling thread's namespace.
    pub fn bind(at: SocketAddrV4, sockets: &SplitSockets) -> io::Result<SplitRelay> {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_tcp_congestion(sockets.cc.as_bytes()).map_err(|e| context(e, &format!("congestion control `{}`", sockets.cc)))?;
        if sockets.transparent {
            socket.set_ip_transparent(true)?;
        }
        if let Some(max_segment) = sockets.max_segment_bytes {
            socket.set_mss(max_segment).map_err(|e| context(e, &format!("TCP_MAXSEG {max_segment}")))?;
        }
        socket.bind(&SockAddr::from(at))?;
        socket.listen(1024)?;
        socket.set_nonblocking(true)?;
        let listener: TcpListener = socket.into();
        let port = listener.local_addr()?.port();
        Ok(SplitRelay { listener, port, transparent: sockets.transparent, counters: SplitCounters::default() })
    }

    pub fn counters(&self) -> &SplitCounters {
        &self.counters
    }

    /// Relays every connection `admit` lets in, at most `max_flows` at once, until `running()`
    /// turns false; then closes every flow's two connections.
    pub fn serve(
        &self,
        upstream: Upstream,
        max_flows: usize,
        admit: &dyn Fn(Ipv4Addr) -> bool,
        running: &dyn Fn() -> bool,
    ) -> io::Result<()> {
        let epoll = Epoll::new()?;
        epoll.add(self.listener.as_raw_fd(), libc::EPOLLIN as u32, LISTENER)?;
        let mut flows: Vec<Option<Flow>> = Vec::new();
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        while running() {
            let n = epoll.wait(&mut events, POLL_MS)?;
            for event in &events[..n] {
                let token = event.u64;
                if token == LISTENER {
                    self.accept_all(&epoll, &mut flows, upstream, max_flows, admit)?;
                    continue;
                }
                let slot = (token / 2) as usize;
                let side = if token % 2 == 0 { Side::Ue } else { Side::Server };
                let Some(flow) = flows[slot].as_mut() else { continue };
                let end = self.on_ready(flow, side, event.events);
                let end = match end {
                    None => update_interest(&epoll, flow, slot).err().map(|_| End::Reset),
                    end => end,
                };
                if let Some(end) = end {
                    let flow = flows[slot].take().expect("the flow is there");
                    self.close(&epoll, flow, end);
                }
            }
        }
        for flow in flows.into_iter().flatten() {
            self.close(&epoll, flow, End::Done);
        }
        Ok(())
    }

    fn accept_all(
        &self,
        epoll: &Epoll,
        flows: &mut Vec<Option<Flow>>,
        upstream: Upstream,
        max_flows: usize,
        admit: &dyn Fn(Ipv4Addr) -> bool,
    ) -> io::Result<()> {
        loop {
            let (ue_side, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                // The UE gave up before the accept (ECONNABORTED), or a passing lack of
                // descriptors or memory: that connection is lost, the relay goes on (and
                // tries again at the next wait).
                Err(_) => {
                    SplitCounters::add(&self.counters.flows_reset, 1);
                    return Ok(());
                }
            };
            let (SocketAddr::V4(peer), Ok(SocketAddr::V4(asked))) = (peer, ue_side.local_addr()) else { continue };
            if !admit(*peer.ip()) || (self.transparent && asked.port() == self.port) {
                SplitCounters::add(&self.counters.flows_refused_not_ue, 1);
                continue;
            }
            let active = SplitCounters::get(&self.counters.flows_active);
            if active as usize >= max_flows {
                SplitCounters::add(&self.counters.flows_refused_limit, 1);
                continue;
            }
            let server = match upstream {
                Upstream::Fixed(server) => server,
                Upstream::OriginalDestination => asked,
            };
            let Ok(server_side) = self.connect(server, peer) else {
                SplitCounters::add(&self.counters.upstream_connect_failures, 1);
                continue;
            };
            if ue_side.set_nonblocking(true).is_err() {
                continue;
            }
            let slot = flows.iter().position(Option::is_none).unwrap_or_else(|| {
                flows.push(None);
                flows.len() - 1
            });
            let mut flow = Flow {
                sockets: [ue_side, server_side],
                toward: [Direction::new(), Direction::new()],
                connected: false,
                interest: [None, None],
            };
            if update_interest(epoll, &mut flow, slot).is_err() {
                continue;
            }
            flows[slot] = Some(flow);
            SplitCounters::add(&self.counters.flows_accepted, 1);
            SplitCounters::add(&self.counters.flows_active, 1);
        }
    }

    /// A non-blocking connect toward `server`; from `ue`'s address and port when transparent.
    fn connect(&self, server: SocketAddrV4, ue: SocketAddrV4) -> io::Result<TcpStream> {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        if self.transparent {
            socket.set_ip_transparent(true)?;
            socket.set_reuse_address(true)?;
            socket.bind(&SockAddr::from(ue))?;
        }
        socket.set_nonblocking(true)?;
        match socket.connect(&SockAddr::from(server)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        Ok(socket.into())
    }

    /// Handles `events` on `side`'s socket; Some when the flow ends.
    fn on_ready(&self, flow: &mut Flow, side: Side, events: u32) -> Option<End> {
        if side == Side::Server && !flow.connected {
            // Writable (or in error) once the handshake is over: SO_ERROR says which.
            match flow.sockets[1].take_error() {
                Ok(None) if events & (libc::EPOLLOUT as u32) != 0 => flow.connected = true,
                Ok(None) => return None,
                _ => return Some(End::ConnectFailed),
            }
        }
        if let Err(end) = self.copy(flow, side, events) {
            return Some(end);
        }
        flow.toward.iter().all(|d| d.passed_on).then_some(End::Done)
    }

    /// Reads what `side` has, writes what waits toward it, and writes what was just read.
    fn copy(&self, flow: &mut Flow, side: Side, events: u32) -> Result<(), End> {
        let readable = events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        let writable = events & (libc::EPOLLOUT | libc::EPOLLERR) as u32 != 0;
        if readable && flow.toward[side.other() as usize].wants_read() {
            self.read(flow, side)?;
        }
        if writable {
            self.write(flow, side)?;
        }
        // Bytes just read are written at once: the other side is writable most of the time.
        self.write(flow, side.other())
    }

    /// Reads what `from` has into the direction toward the other side.
    fn read(&self, flow: &mut Flow, from: Side) -> Result<(), End> {
        let d = &mut flow.toward[from.other() as usize];
        while d.wants_read() {
            match (&flow.sockets[from as usize]).read(&mut d.buf[d.end..]) {
                Ok(0) => d.ended = true,
                Ok(n) => d.end += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(End::Reset),
            }
        }
        Ok(())
    }

    /// Writes what waits toward `to`; passes the FIN on once the stream ended and all is
    /// written.
    fn write(&self, flow: &mut Flow, to: Side) -> Result<(), End> {
        if to == Side::Server && !flow.connected {
            return Ok(());
        }
        let d = &mut flow.toward[to as usize];
        let counter = match to {
            Side::Ue => &self.counters.bytes_to_ue,
            Side::Server => &self.counters.bytes_to_server,
        };
        while d.wants_write() {
            match (&flow.sockets[to as usize]).write(&d.buf[d.start..d.end]) {
                Ok(n) => {
                    d.start += n;
                    SplitCounters::add(counter, n as u64);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(End::Reset),
            }
        }
        if d.start == d.end {
            (d.start, d.end) = (0, 0);
            if d.ended && !d.passed_on {
                d.passed_on = true;
                // The peer may already be gone; the flow ends with its other direction.
                let _ = flow.sockets[to as usize].shutdown(Shutdown::Write);
            }
        }
        Ok(())
    }

    fn close(&self, epoll: &Epoll, flow: Flow, end: End) {
        for (socket, interest) in flow.sockets.iter().zip(flow.interest) {
            if interest.is_some() {
                epoll.delete(socket.as_raw_fd());
            }
        }
        match end {
            End::Done => {}
            End::Reset => SplitCounters::add(&self.counters.flows_reset, 1),
            End::ConnectFailed => SplitCounters::add(&self.counters.upstream_connect_failures, 1),
        }
        if !matches!(end, End::Done) {
            // The other end learns at once (a reset) rather than waiting on a half-open
            // connection.
            for socket in &flow.sockets {
                let _ = socket2::SockRef::from(socket).set_linger(Some(std::time::Duration::ZERO));
            }
        }
        self.counters.flows_active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Registers each socket for what its directions need now.
fn update_interest(epoll: &Epoll, flow: &mut Flow, slot: usize) -> io::Result<()> {
    for side in [Side::Ue, Side::Server] {
        let mut want = 0u32;
        if flow.toward[side.other() as usize].wants_read() {
            want |= libc::EPOLLIN as u32;
        }
        let waiting_connect = side == Side::Server && !flow.connected;
        if flow.toward[side as usize].wants_write() || waiting_connect {
            want |= libc::EPOLLOUT as u32;
        }
        let fd = flow.sockets[side as usize].as_raw_fd();
        let token = 2 * slot as u64 + side as u64;
        let want = (want != 0).then_some(want);
        match (flow.interest[side as usize], want) {
            (old, new) if old == new => {}
            (None, Some(new)) => epoll.add(fd, new, token)?,
            (Some(_), Some(new)) => epoll.modify(fd, new, token)?,
            (Some(_), None) => epoll.delete(fd),
            (None, None) => {}
        }
        flow.interest[side as usize] = want;
    }
    Ok(())
}

/// Level-triggered epoll. A socket is registered only while one of its flow's directions
/// waits on it: a hung-up socket left registered would be reported at every wait.
struct Epoll {
    fd: RawFd,
}

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes flags only.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll { fd })
    }

    fn control(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` is a valid epoll_event for the call's duration.
        if unsafe { libc::epoll_ctl(self.fd, op, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    fn delete(&self, fd: RawFd) {
        // Closing the socket would remove it too; a failure here changes nothing.
        let _ = self.control(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    /// Ready events into `events`, waiting at most `timeout_ms`; 0 when interrupted.
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: `events` is a writable array of its length.
        let n = unsafe { libc::epoll_wait(self.fd, events.as_mut_ptr(), events.len() as libc::c_int, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == ErrorKind::Interrupted { Ok(0) } else { Err(e) };
        }
        Ok(n as usize)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}
