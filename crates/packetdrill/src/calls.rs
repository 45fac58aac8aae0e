//! The socket calls a script may make, read from packetdrill's call syntax
//! (`setsockopt(3, SOL_TCP, TCP_CONGESTION, "reno", 4)`) into typed calls. Arguments that only
//! the kernel interprets (addresses, lengths, backlog) may be anything, usually `...`; the ones
//! millinet acts on are checked here, so that an unsupported call is refused before the run.

use crate::error::{ErrorKind, ScriptError};
use crate::lexer::Pos;

/// A call argument as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExprKind {
    Ellipsis,
    Int(i64),
    Word(String),
    Str(String),
    /// `[1]`
    Array(Vec<Expr>),
    /// `O_RDWR|O_NONBLOCK`
    Or(Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Socket,
    Bind {
        fd: i64,
    },
    Listen {
        fd: i64,
    },
    Accept {
        fd: i64,
    },
    Connect {
        fd: i64,
    },
    Write {
        fd: i64,
        bytes: u64,
    },
    Read {
        fd: i64,
        bytes: u64,
    },
    Close {
        fd: i64,
    },
    SetSockOpt {
        fd: i64,
        option: SetOption,
    },
    GetSockOpt {
        fd: i64,
        option: GetOption,
    },
    /// `fcntl(fd, F_SETFL, ...)`
    SetFileFlags {
        fd: i64,
    },
}

/// `setsockopt` options millinet maps (docs/validation.md, "packetdrill scripts").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOption {
    ReuseAddr,
    /// `TCP_NODELAY [1]`: millinet has no Nagle algorithm, so this is its only behaviour.
    NoDelay,
    Congestion(String),
    RcvBuf(u64),
    SndBuf(u64),
}

/// `getsockopt` options, with the value the script expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetOption {
    NoDelay(i64),
    Congestion(String),
    Error(i64),
}

const SUPPORTED_CALLS: &str = "socket, bind, listen, accept, connect, write, read, close, setsockopt, getsockopt, fcntl(fd, F_SETFL, ...)";
const SUPPORTED_SETSOCKOPT: &str =
    "SOL_SOCKET SO_REUSEADDR, SO_RCVBUF, SO_SNDBUF; SOL_TCP (or IPPROTO_TCP) TCP_NODELAY [1], TCP_CONGESTION \"name\"";
const SUPPORTED_GETSOCKOPT: &str = "SOL_SOCKET SO_ERROR; SOL_TCP (or IPPROTO_TCP) TCP_NODELAY, TCP_CONGESTION";

impl Call {
    pub fn name(&self) -> &'static str {
        match self {
            Call::Socket => "socket",
            Call::Bind { .. } => "bind",
            Call::Listen { .. } => "listen",
            Call::Accept { .. } => "accept",
            Call::Connect { .. } => "connect",
            Call::Write { .. } => "write",
            Call::Read { .. } => "read",
            Call::Close { .. } => "close",
            Call::SetSockOpt { .. } => "setsockopt",
            Call::GetSockOpt { .. } => "getsockopt",
            Call::SetFileFlags { .. } => "fcntl",
        }
    }
}

fn error(pos: Pos, kind: ErrorKind) -> ScriptError {
    ScriptError::new(pos.line, pos.column, kind)
}

fn unsupported(pos: Pos, what: String, supported: &str) -> ScriptError {
    error(pos, ErrorKind::Unsupported { what, supported: supported.to_string() })
}

fn expected(expr: &Expr, what: &str) -> ScriptError {
    let found = match &expr.kind {
        ExprKind::Ellipsis => "`...`".to_string(),
        ExprKind::Int(n) => format!("`{n}`"),
        ExprKind::Word(w) => format!("`{w}`"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Array(_) => "an array".to_string(),
        ExprKind::Or(_) => "an `|` expression".to_string(),
    };
    error(expr.pos, ErrorKind::Expected { expected: what.to_string(), found })
}

fn int(expr: &Expr, what: &str) -> Result<i64, ScriptError> {
    match expr.kind {
        ExprKind::Int(n) => Ok(n),
        _ => Err(expected(expr, what)),
    }
}

fn count(expr: &Expr, what: &str) -> Result<u64, ScriptError> {
    let n = int(expr, what)?;
    u64::try_from(n).map_err(|_| {
        error(expr.pos, ErrorKind::OutOfRange { what: what.to_string(), value: n.to_string(), allowed: "0 or more".to_string() })
    })
}

fn word<'a>(expr: &'a Expr, what: &str) -> Result<&'a str, ScriptError> {
    match &expr.kind {
        ExprKind::Word(w) => Ok(w),
        _ => Err(expected(expr, what)),
    }
}

/// `[N]`: the integer an option's value points to.
fn boxed_int(expr: &Expr, what: &str) -> Result<i64, ScriptError> {
    match &expr.kind {
        ExprKind::Array(items) if items.len() == 1 => int(&items[0], what),
        _ => Err(expected(expr, &format!("[{what}]"))),
    }
}

fn string(expr: &Expr, what: &str) -> Result<String, ScriptError> {
    match &expr.kind {
        ExprKind::Str(s) => Ok(s.clone()),
        _ => Err(expected(expr, what)),
    }
}

/// Checks the argument count and returns the arguments.
fn args<'a, const N: usize>(name: &str, pos: Pos, args: &'a [Expr]) -> Result<&'a [Expr; N], ScriptError> {
    args.try_into().map_err(|_| {
        error(pos, ErrorKind::Invalid(format!("{name} takes {N} argument{}, found {}", if N == 1 { "" } else { "s" }, args.len())))
    })
}

/// The level of a socket option: TCP's or the socket's.
#[derive(PartialEq)]
enum Level {
    Socket,
    Tcp,
}

fn level(expr: &Expr) -> Result<Level, ScriptError> {
    match word(expr, "SOL_SOCKET, SOL_TCP or IPPROTO_TCP")? {
        "SOL_SOCKET" => Ok(Level::Socket),
        "SOL_TCP" | "IPPROTO_TCP" => Ok(Level::Tcp),
        other => Err(unsupported(expr.pos, format!("option level {other}"), "SOL_SOCKET, SOL_TCP, IPPROTO_TCP")),
    }
}

fn set_option(level: Level, name: &Expr, value: &Expr) -> Result<SetOption, ScriptError> {
    let option = word(name, "an option name")?;
    match (level, option) {
        (Level::Socket, "SO_REUSEADDR") => boxed_int(value, "0 or 1").map(|_| SetOption::ReuseAddr),
        (Level::Socket, "SO_RCVBUF") => Ok(SetOption::RcvBuf(bytes_value(value)?)),
        (Level::Socket, "SO_SNDBUF") => Ok(SetOption::SndBuf(bytes_value(value)?)),
        (Level::Tcp, "TCP_NODELAY") => match boxed_int(value, "1")? {
            0 => Err(unsupported(
                value.pos,
                "TCP_NODELAY [0] (Nagle's algorithm)".to_string(),
                "TCP_NODELAY [1]: millinet never delays a short segment",
            )),
            _ => Ok(SetOption::NoDelay),
        },
        (Level::Tcp, "TCP_CONGESTION") => Ok(SetOption::Congestion(string(value, "a congestion control name")?)),
        (_, other) => Err(unsupported(name.pos, format!("setsockopt {other}"), SUPPORTED_SETSOCKOPT)),
    }
}

fn bytes_value(value: &Expr) -> Result<u64, ScriptError> {
    let n = boxed_int(value, "a byte count")?;
    u64::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
        error(
            value.pos,
            ErrorKind::OutOfRange { what: "buffer size".to_string(), value: n.to_string(), allowed: "1 or more bytes".to_string() },
        )
    })
}

fn get_option(level: Level, name: &Expr, value: &Expr) -> Result<GetOption, ScriptError> {
    let option = word(name, "an option name")?;
    match (level, option) {
        (Level::Socket, "SO_ERROR") => Ok(GetOption::Error(boxed_int(value, "the error expected")?)),
        (Level::Tcp, "TCP_NODELAY") => Ok(GetOption::NoDelay(boxed_int(value, "the value expected")?)),
        (Level::Tcp, "TCP_CONGESTION") => Ok(GetOption::Congestion(string(value, "the name expected")?)),
        (_, other) => Err(unsupported(name.pos, format!("getsockopt {other}"), SUPPORTED_GETSOCKOPT)),
    }
}

fn socket(pos: Pos, args: &[Expr]) -> Result<Call, ScriptError> {
    let [domain, kind, protocol] = self::args::<3>("socket", pos, args)?;
    if !matches!(&domain.kind, ExprKind::Ellipsis) && word(domain, "AF_INET")? != "AF_INET" {
        return Err(unsupported(domain.pos, format!("domain {}", word(domain, "AF_INET")?), "AF_INET (IPv4)"));
    }
    if word(kind, "SOCK_STREAM")? != "SOCK_STREAM" {
        return Err(unsupported(kind.pos, format!("socket type {}", word(kind, "SOCK_STREAM")?), "SOCK_STREAM"));
    }
    match &protocol.kind {
        ExprKind::Int(0) => Ok(Call::Socket),
        ExprKind::Word(w) if w == "IPPROTO_TCP" => Ok(Call::Socket),
        _ => Err(expected(protocol, "IPPROTO_TCP or 0")),
    }
}

/// The call `name(args)` written at `pos`.
pub(crate) fn call(name: &str, pos: Pos, args: &[Expr]) -> Result<Call, ScriptError> {
    let fd = |expr: &Expr| int(expr, "a file descriptor");
    Ok(match name {
        "socket" => socket(pos, args)?,
        "bind" => Call::Bind { fd: fd(&self::args::<3>(name, pos, args)?[0])? },
        "listen" => Call::Listen { fd: fd(&self::args::<2>(name, pos, args)?[0])? },
        "accept" => Call::Accept { fd: fd(&self::args::<3>(name, pos, args)?[0])? },
        "connect" => Call::Connect { fd: fd(&self::args::<3>(name, pos, args)?[0])? },
        "write" | "read" => {
            let [file, _, bytes] = self::args::<3>(name, pos, args)?;
            let (fd, bytes) = (fd(file)?, count(bytes, "a byte count")?);
            if name == "write" {
                Call::Write { fd, bytes }
            } else {
                Call::Read { fd, bytes }
            }
        }
        "close" => Call::Close { fd: fd(&self::args::<1>(name, pos, args)?[0])? },
        "setsockopt" => {
            let [file, lvl, option, value, _] = self::args::<5>(name, pos, args)?;
            Call::SetSockOpt { fd: fd(file)?, option: set_option(level(lvl)?, option, value)? }
        }
        "getsockopt" => {
            let [file, lvl, option, value, _] = self::args::<5>(name, pos, args)?;
            Call::GetSockOpt { fd: fd(file)?, option: get_option(level(lvl)?, option, value)? }
        }
        "fcntl" => match args.get(1).map(|command| (command, word(command, "F_SETFL"))) {
            Some((_, Ok("F_SETFL"))) => Call::SetFileFlags { fd: fd(&self::args::<3>(name, pos, args)?[0])? },
            Some((command, Ok(other))) => return Err(unsupported(command.pos, format!("fcntl {other}"), "fcntl(fd, F_SETFL, ...)")),
            Some((_, Err(e))) => return Err(e),
            None => return Err(error(pos, ErrorKind::Invalid("fcntl takes a descriptor and a command".to_string()))),
        },
        other => return Err(unsupported(pos, format!("the call {other}"), SUPPORTED_CALLS)),
    })
}
