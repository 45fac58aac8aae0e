//! A script's socket calls on one millinet TCP endpoint. How each maps onto the sans-IO
//! `TcpConnection` (also in docs/validation.md, "packetdrill scripts"):
//!
//! | call | on the endpoint |
//! |---|---|
//! | `socket` | a `TcpConfig` (a scenario flow's defaults, the script's options, `--cc`); descriptor 3 |
//! | `setsockopt` | before `listen`/`connect`: `TCP_CONGESTION` sets `cc` (-1 ENOENT for a name not in the registry), `SO_RCVBUF` sets `rcv_buf_bytes`; `SO_REUSEADDR`, `SO_SNDBUF` and `TCP_NODELAY [1]` are accepted and change nothing |
//! | `bind`, `fcntl(F_SETFL)` | nothing: the addresses are the runner's, every socket is non-blocking |
//! | `listen` | `TcpConnection::listen` |
//! | `accept` | descriptor 4 once the handshake has completed, else -1 EAGAIN |
//! | `connect` | `TcpConnection::connect`, which sends the SYN; -1 EINPROGRESS |
//! | `write(N)` | `send(N)`; returns N (the send buffer is unbounded) |
//! | `read(N)` | `read(N)`: the bytes read, 0 after the peer's FIN, else -1 EAGAIN |
//! | `close` | `close` (FIN after the data written) |
//! | `getsockopt` | `TCP_CONGESTION`, `TCP_NODELAY` (1), `SO_ERROR` |
//!
//! Reads are application-paced (`TcpConfig::app_paced_reads`): data stays in the receive
//! buffer, and shrinks the advertised window, until the script reads it, as in a kernel.

use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_transport::cc::CcFactory;
use millinet_transport::{TcpConfig, TcpConnection, TcpState};
use millinet_wire::{Packet, TcpFlags};

use crate::calls::{Call, GetOption, SetOption};
use crate::error::ErrorKind;
use crate::mapping::LOCAL_ISN;
use crate::script::{CallResult, Errno};
use crate::tcpinfo::Snapshot;

/// The descriptors packetdrill's scripts expect: the first socket, then the accepted one.
const SOCKET_FD: i64 = 3;
const ACCEPTED_FD: i64 = 4;
/// packetdrill's default addresses: the endpoint on 192.168.0.1, the scripted peer on
/// 192.0.2.1 (RFC 5737 documentation range); the server side on port 8080.
const LOCAL_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
const REMOTE_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const SERVER_PORT: u16 = 8080;
const CLIENT_PORT: u16 = 49152;
/// RFC 9293 §3.7.1: the MSS assumed for a peer whose SYN announces none.
const DEFAULT_PEER_MSS: u16 = 536;
/// The receive buffer of a scenario flow by default (`rcv_buf_bytes`,
/// docs/models/transport.md §2): the largest window a shift of 14 can advertise.
const DEFAULT_RCV_BUF_BYTES: u64 = 65_535 << 14;
/// Linux's errno values, for `SO_ERROR`.
const ECONNRESET: i64 = 104;
const ETIMEDOUT: i64 = 110;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Unopened,
    Socket,
    Listening,
    Connecting,
}

/// A call's result, and for `getsockopt` the value the script expects beside the one read.
pub(crate) struct Returned {
    pub result: CallResult,
    pub value: Option<(String, String)>,
}

impl Returned {
    fn ok(value: i64) -> Returned {
        Returned { result: CallResult::ok(value), value: None }
    }

    fn err(errno: Errno) -> Returned {
        Returned { result: CallResult::err(errno), value: None }
    }

    fn option_value(expected: String, actual: String) -> Returned {
        Returned { result: CallResult::ok(0), value: Some((expected, actual)) }
    }
}

pub(crate) struct Endpoint {
    cfg: TcpConfig,
    role: Role,
    conn: Option<TcpConnection>,
    socket_open: bool,
    accepted_open: bool,
    accepted: bool,
    /// The application closed the connection's descriptor.
    app_closed: bool,
    /// The handshake has completed (the connection may have closed since).
    synchronized: bool,
    /// The MSS option of the peer's SYN or SYN-ACK, once one arrived.
    peer_mss: Option<Option<u16>>,
}

/// A setting the connection took when it was created.
fn fixed_at_creation(what: &str) -> ErrorKind {
    ErrorKind::Unsupported {
        what: format!("{what} after listen or connect"),
        supported: format!("{what} before listen or connect (a millinet connection keeps what it was created with)"),
    }
}

impl Endpoint {
    pub fn new(cc: &str) -> Endpoint {
        let cfg = TcpConfig {
            cc: cc.to_string(),
            iss: LOCAL_ISN,
            rcv_buf_bytes: DEFAULT_RCV_BUF_BYTES,
            app_paced_reads: true,
            ..TcpConfig::default()
        };
        Endpoint {
            cfg,
            role: Role::Unopened,
            conn: None,
            socket_open: false,
            accepted_open: false,
            accepted: false,
            app_closed: false,
            synchronized: false,
            peer_mss: None,
        }
    }

    pub fn config_mut(&mut self) -> &mut TcpConfig {
        &mut self.cfg
    }

    /// (the endpoint's address, the scripted peer's), once it listens or connects.
    pub fn addresses(&self) -> Option<(SocketAddrV4, SocketAddrV4)> {
        match self.role {
            Role::Listening => Some((SocketAddrV4::new(LOCAL_IP, SERVER_PORT), SocketAddrV4::new(REMOTE_IP, CLIENT_PORT))),
            Role::Connecting => Some((SocketAddrV4::new(LOCAL_IP, CLIENT_PORT), SocketAddrV4::new(REMOTE_IP, SERVER_PORT))),
            Role::Unopened | Role::Socket => None,
        }
    }

    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.conn.as_ref()?.next_deadline_ns()
    }

    pub fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if let Some(conn) = &mut self.conn {
            conn.on_timeout(now_ns, out);
        }
        self.note_state();
    }

    /// A packet from the scripted peer (to the addresses `addresses` gives).
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        let Some(conn) = &mut self.conn else { return };
        if let Some(header) = pkt.tcp_header().filter(|h| h.flags.contains(TcpFlags::SYN)) {
            self.peer_mss = Some(header.options.mss);
        }
        conn.on_packet(now_ns, pkt, out);
        self.note_state();
    }

    /// Records that the handshake has completed (`accept` and `write` wait for it), however
    /// the connection goes on.
    fn note_state(&mut self) {
        let state = self.conn.as_ref().map(TcpConnection::state);
        if !matches!(state, None | Some(TcpState::Listen | TcpState::SynSent | TcpState::SynReceived | TcpState::Closed)) {
            self.synchronized = true;
        }
    }

    /// What `TCP_INFO` reads, once there is a connection.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let conn = self.conn.as_ref()?;
        // The MSS both ends use: min(own, peer's), as the connection negotiates it.
        let mss = match self.peer_mss {
            Some(peer) => self.cfg.mss_bytes.min(peer.unwrap_or(DEFAULT_PEER_MSS).max(1) as u32),
            None => self.cfg.mss_bytes,
        };
        Some(Snapshot { stats: conn.stats(), state: conn.state(), mss_bytes: mss as u64 })
    }

    /// The descriptor of the connection, while the application holds it.
    fn connection_fd(&self) -> Option<i64> {
        match self.role {
            Role::Listening if self.accepted_open => Some(ACCEPTED_FD),
            Role::Connecting if self.socket_open => Some(SOCKET_FD),
            _ => None,
        }
    }

    fn is_open(&self, fd: i64) -> bool {
        (fd == SOCKET_FD && self.socket_open) || (fd == ACCEPTED_FD && self.accepted_open)
    }

    /// The connection behind `fd`, if the application holds it.
    fn connection(&mut self, fd: i64) -> Option<&mut TcpConnection> {
        if self.connection_fd() == Some(fd) {
            self.conn.as_mut()
        } else {
            None
        }
    }

    pub fn call(&mut self, now_ns: u64, call: &Call, out: &mut Vec<Packet>) -> Result<Returned, ErrorKind> {
        let returned = self.dispatch(now_ns, call, out);
        self.note_state();
        returned
    }

    fn dispatch(&mut self, now_ns: u64, call: &Call, out: &mut Vec<Packet>) -> Result<Returned, ErrorKind> {
        Ok(match *call {
            Call::Socket => {
                if self.role != Role::Unopened {
                    return Err(ErrorKind::Unsupported {
                        what: "a second socket".into(),
                        supported: "one socket per script (and the connection accept returns)".into(),
                    });
                }
                self.role = Role::Socket;
                self.socket_open = true;
                Returned::ok(SOCKET_FD)
            }
            Call::Bind { fd } | Call::SetFileFlags { fd } if !self.is_open(fd) => Returned::err(Errno::EBADF),
            Call::Bind { .. } | Call::SetFileFlags { .. } => Returned::ok(0),
            Call::Listen { fd } => self.listen(fd)?,
            Call::Accept { fd } => self.accept(fd),
            Call::Connect { fd } => self.connect(now_ns, fd, out)?,
            Call::Write { fd, bytes } => self.write(now_ns, fd, bytes, out),
            Call::Read { fd, bytes } => self.read(now_ns, fd, bytes, out),
            Call::Close { fd } => self.close(now_ns, fd, out),
            Call::SetSockOpt { fd, .. } | Call::GetSockOpt { fd, .. } if !self.is_open(fd) => Returned::err(Errno::EBADF),
            Call::SetSockOpt { ref option, .. } => self.set_option(option)?,
            Call::GetSockOpt { ref option, .. } => self.get_option(option),
        })
    }

    fn listen(&mut self, fd: i64) -> Result<Returned, ErrorKind> {
        if fd != SOCKET_FD || !self.socket_open {
            return Ok(Returned::err(Errno::EBADF));
        }
        match self.role {
            Role::Listening => return Ok(Returned::ok(0)),
            Role::Connecting => return Ok(Returned::err(Errno::EINVAL)),
            Role::Unopened | Role::Socket => {}
        }
        self.role = Role::Listening;
        let (local, _) = self.addresses().ok_or_else(|| ErrorKind::Invalid("no address to listen on".into()))?;
        self.conn = Some(TcpConnection::listen(self.cfg.clone(), local).map_err(|e| ErrorKind::Invalid(e.to_string()))?);
        Ok(Returned::ok(0))
    }

    fn accept(&mut self, fd: i64) -> Returned {
        if fd != SOCKET_FD || !self.socket_open {
            return Returned::err(Errno::EBADF);
        }
        if self.role != Role::Listening {
            return Returned::err(Errno::EINVAL);
        }
        // One connection per script; it is accepted once its handshake has completed.
        if self.accepted || !self.synchronized {
            return Returned::err(Errno::EAGAIN);
        }
        self.accepted = true;
        self.accepted_open = true;
        Returned::ok(ACCEPTED_FD)
    }

    fn connect(&mut self, now_ns: u64, fd: i64, out: &mut Vec<Packet>) -> Result<Returned, ErrorKind> {
        if fd != SOCKET_FD || !self.socket_open {
            return Ok(Returned::err(Errno::EBADF));
        }
        if self.role != Role::Socket {
            return Ok(Returned::err(Errno::EINVAL));
        }
        self.role = Role::Connecting;
        let (local, remote) = self.addresses().ok_or_else(|| ErrorKind::Invalid("no address to connect to".into()))?;
        self.conn =
            Some(TcpConnection::connect(self.cfg.clone(), local, remote, now_ns, out).map_err(|e| ErrorKind::Invalid(e.to_string()))?);
        Ok(Returned::err(Errno::EINPROGRESS))
    }

    fn write(&mut self, now_ns: u64, fd: i64, bytes: u64, out: &mut Vec<Packet>) -> Returned {
        let synchronized = self.synchronized;
        let Some(conn) = self.connection(fd) else { return Returned::err(Errno::EBADF) };
        if conn.state() == TcpState::Closed {
            return Returned::err(Errno::EPIPE);
        }
        if !synchronized {
            return Returned::err(Errno::EAGAIN);
        }
        conn.send(now_ns, bytes, out);
        Returned::ok(bytes as i64)
    }

    fn read(&mut self, now_ns: u64, fd: i64, bytes: u64, out: &mut Vec<Packet>) -> Returned {
        let Some(conn) = self.connection(fd) else { return Returned::err(Errno::EBADF) };
        let got = conn.read(now_ns, bytes, out);
        if !got.is_empty() {
            return Returned::ok((got.end - got.start) as i64);
        }
        match conn.state() {
            // The peer's FIN: end of stream.
            TcpState::CloseWait | TcpState::Closing | TcpState::LastAck | TcpState::TimeWait => Returned::ok(0),
            TcpState::Closed => Returned::err(Errno::ECONNRESET),
            _ => Returned::err(Errno::EAGAIN),
        }
    }

    fn close(&mut self, now_ns: u64, fd: i64, out: &mut Vec<Packet>) -> Returned {
        let closes_connection = match fd {
            SOCKET_FD if self.socket_open => {
                self.socket_open = false;
                // A listener closed before accept takes its connection with it.
                self.role == Role::Connecting || (self.role == Role::Listening && !self.accepted)
            }
            ACCEPTED_FD if self.accepted_open => {
                self.accepted_open = false;
                true
            }
            _ => return Returned::err(Errno::EBADF),
        };
        if let Some(conn) = self.conn.as_mut().filter(|_| closes_connection) {
            conn.close(now_ns, out);
            self.app_closed = true;
        }
        Returned::ok(0)
    }

    fn set_option(&mut self, option: &SetOption) -> Result<Returned, ErrorKind> {
        Ok(match option {
            SetOption::ReuseAddr | SetOption::NoDelay | SetOption::SndBuf(_) => Returned::ok(0),
            SetOption::Congestion(name) if CcFactory::by_name(name).is_err() => Returned::err(Errno::ENOENT),
            SetOption::Congestion(_) if self.conn.is_some() => return Err(fixed_at_creation("TCP_CONGESTION")),
            SetOption::RcvBuf(_) if self.conn.is_some() => return Err(fixed_at_creation("SO_RCVBUF")),
            SetOption::Congestion(name) => {
                self.cfg.cc = name.clone();
                Returned::ok(0)
            }
            SetOption::RcvBuf(bytes) => {
                self.cfg.rcv_buf_bytes = *bytes;
                Returned::ok(0)
            }
        })
    }

    fn get_option(&self, option: &GetOption) -> Returned {
        match option {
            GetOption::NoDelay(expected) => Returned::option_value(format!("[{expected}]"), "[1]".to_string()),
            GetOption::Congestion(expected) => Returned::option_value(format!("{expected:?}"), format!("{:?}", self.cfg.cc)),
            GetOption::Error(expected) => {
                let closed_under_it = self.conn.as_ref().is_some_and(|c| c.state() == TcpState::Closed) && !self.app_closed;
                let error = match (closed_under_it, self.synchronized) {
                    (false, _) => 0,
                    (true, true) => ECONNRESET,
                    (true, false) => ETIMEDOUT,
                };
                Returned::option_value(format!("[{expected}]"), format!("[{error}]"))
            }
        }
    }
}
