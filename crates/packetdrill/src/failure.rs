//! How a well-formed script fails: the endpoint did something else than the script says. Each
//! failure names the script line and, for packets, the expected and the actual packet in the
//! script's notation and numbers.

use std::fmt;

use crate::render::seconds;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub line: u32,
    pub kind: FailureKind,
}

/// When a `>` line expects its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Within ± tolerance of `start`, or of `start..=end` for a range.
    Window { start_ns: u64, end_ns: u64, tolerance_ns: u64 },
    /// `*`
    Any,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The packet the endpoint sent differs in `field`.
    WrongPacket { expected: String, actual: String, at_ns: u64, field: &'static str, expected_value: String, actual_value: String },
    /// The right packet, early or late.
    WrongTime { expected: String, when: Expected, at_ns: u64 },
    /// Nothing was sent in time; `next` is what the endpoint sent later, if anything.
    Missing { expected: String, when: Expected, next: Option<(u64, String)> },
    /// A packet no `>` line expects: sent before line `line` (or after the last line).
    Unexpected { actual: String, at_ns: u64, after_last_line: bool },
    /// A call returned something else, or `getsockopt` read another value.
    CallResult { call: &'static str, expected: String, actual: String },
    /// A `%{ assert }%` that does not hold, with the values of its fields.
    Assertion { text: String, values: String },
    /// The endpoint asked to be woken at `at_ns` and did nothing then: a millinet bug.
    Stuck { at_ns: u64 },
    /// The endpoint sent something that cannot be read as a TCP packet: a millinet bug.
    Unreadable { message: String },
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Expected::Window { start_ns, end_ns, tolerance_ns } if start_ns == end_ns => {
                write!(f, "at {} s ± {} s", seconds(start_ns), seconds(tolerance_ns))
            }
            Expected::Window { start_ns, end_ns, tolerance_ns } => {
                write!(f, "in {}~{} s ± {} s", seconds(start_ns), seconds(end_ns), seconds(tolerance_ns))
            }
            Expected::Any => f.write_str("at any time"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match &self.kind {
            FailureKind::WrongPacket { expected, actual, at_ns, field, expected_value, actual_value } => write!(
                f,
                "bad {field}: expected {expected_value}, actual {actual_value}; expected `{expected}`, the endpoint sent `{actual}` at {} s",
                seconds(*at_ns)
            ),
            FailureKind::WrongTime { expected, when, at_ns } => {
                write!(f, "timing: expected `{expected}` {when}, the endpoint sent it at {} s", seconds(*at_ns))
            }
            FailureKind::Missing { expected, when, next } => {
                write!(f, "missing packet: expected `{expected}` {when}, the endpoint sent nothing")?;
                match next {
                    Some((at_ns, packet)) => write!(f, " (its next packet: `{packet}` at {} s)", seconds(*at_ns)),
                    None => Ok(()),
                }
            }
            FailureKind::Unexpected { actual, at_ns, after_last_line } => {
                let place = if *after_last_line { "after the last line" } else { "before this line" };
                write!(f, "unexpected packet: the endpoint sent `{actual}` at {} s, {place}, and no `>` line expects it", seconds(*at_ns))
            }
            FailureKind::CallResult { call, expected, actual } => write!(f, "{call}: expected {expected}, actual {actual}"),
            FailureKind::Assertion { text, values } => write!(f, "assertion failed: {text} ({values})"),
            FailureKind::Unreadable { message } => write!(f, "the endpoint sent a packet that cannot be read ({message}; a millinet bug)"),
            FailureKind::Stuck { at_ns } => write!(f, "the endpoint asked to be woken at {} s and then did nothing (a millinet bug)", seconds(*at_ns)),
        }
    }
}

impl std::error::Error for Failure {}
