//! A parsed script: its settings and its events, each with the line it came from. Sequence
//! numbers, acknowledgment numbers and SACK blocks are the script's, relative to the initial
//! sequence numbers (packetdrill's convention); the runner maps them to the wire.

use std::fmt;

use crate::calls::Call;
use crate::code::Assertion;
use crate::settings::Settings;

#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub settings: Settings,
    pub events: Vec<Event>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub line: u32,
    pub column: u32,
    pub time: EventTime,
    pub action: Action,
}

/// When an event happens, in nanoseconds of script time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventTime {
    /// `0.100`
    Absolute(u64),
    /// `+0.1`: after the previous event (see `runner` for what "after" means).
    Relative(u64),
    /// `0.1~0.2` (outbound packets only)
    AbsoluteRange(u64, u64),
    /// `+0.1~+0.2` (outbound packets only)
    RelativeRange(u64, u64),
    /// `*`: whenever it comes (outbound packets only)
    Any,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Packet(PacketSpec),
    Call(CallSpec),
    /// `%{ assert ... }%`
    Assert(Vec<Assertion>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `<`: injected into the endpoint.
    Inbound,
    /// `>`: expected from the endpoint.
    Outbound,
}

/// The TCP flags a script can name (RFC 9293 §3.1): `S`, `F`, `R`, `P` and `.` (ACK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub psh: bool,
    pub ack: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PacketSpec {
    pub direction: Direction,
    pub flags: Flags,
    /// Start of the segment's sequence space and its payload length.
    pub seq: u32,
    pub len: u32,
    /// Given exactly when the ACK flag is.
    pub ack: Option<u32>,
    /// The raw 16-bit window field; None: not checked (outbound only).
    pub win: Option<u16>,
    /// In wire order, padding included; None: `<...>`, not checked (outbound only).
    pub options: Option<Vec<TcpOption>>,
}

/// One TCP option as a script writes it (RFC 9293 §3.2, RFC 2018, RFC 7323).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpOption {
    Nop,
    Eol,
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    Timestamp {
        val: u32,
        ecr: u32,
    },
    /// SACK blocks `left:right`, right exclusive.
    Sack(Vec<(u32, u32)>),
    /// An option kind no script can write, seen in a packet the endpoint sent.
    Other {
        kind: u8,
    },
}

impl TcpOption {
    /// Bytes on the wire (kind, length, data).
    pub fn wire_bytes(&self) -> usize {
        match self {
            TcpOption::Nop | TcpOption::Eol => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Timestamp { .. } => 10,
            TcpOption::Sack(blocks) => 2 + 8 * blocks.len(),
            TcpOption::Other { .. } => 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallSpec {
    pub call: Call,
    /// What the script says the call returns.
    pub expected: CallResult,
}

/// A socket call's result: a value, and an errno name when the value is -1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallResult {
    pub value: i64,
    pub errno: Option<Errno>,
}

impl CallResult {
    pub fn ok(value: i64) -> CallResult {
        CallResult { value, errno: None }
    }

    pub fn err(errno: Errno) -> CallResult {
        CallResult { value: -1, errno: Some(errno) }
    }
}

impl fmt::Display for CallResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errno {
            Some(errno) => write!(f, "{} {}", self.value, errno.name()),
            None => write!(f, "{}", self.value),
        }
    }
}

/// The errors the calls millinet runs can return, under Linux's names as scripts write them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Errno {
    /// Nothing to accept, read or write yet (every socket behaves as non-blocking).
    EAGAIN,
    /// The descriptor is not open.
    EBADF,
    /// `read` on a connection the peer reset.
    ECONNRESET,
    /// `connect` sent the SYN and returned.
    EINPROGRESS,
    /// The call does not fit the socket's state (e.g. `listen` on a connected socket).
    EINVAL,
    /// `setsockopt(TCP_CONGESTION)` with a name not in millinet's registry.
    ENOENT,
    /// `write` on a connection that is gone.
    EPIPE,
}

impl Errno {
    pub const ALL: [Errno; 7] =
        [Errno::EAGAIN, Errno::EBADF, Errno::ECONNRESET, Errno::EINPROGRESS, Errno::EINVAL, Errno::ENOENT, Errno::EPIPE];

    pub fn name(self) -> &'static str {
        match self {
            Errno::EAGAIN => "EAGAIN",
            Errno::EBADF => "EBADF",
            Errno::ECONNRESET => "ECONNRESET",
            Errno::EINPROGRESS => "EINPROGRESS",
            Errno::EINVAL => "EINVAL",
            Errno::ENOENT => "ENOENT",
            Errno::EPIPE => "EPIPE",
        }
    }

    pub fn by_name(name: &str) -> Option<Errno> {
        // EWOULDBLOCK is EAGAIN on Linux.
        let name = if name == "EWOULDBLOCK" { "EAGAIN" } else { name };
        Errno::ALL.into_iter().find(|e| e.name() == name)
    }
}
