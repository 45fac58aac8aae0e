//! A script the runner refuses: bad syntax, or a part of packetdrill's language that millinet
//! does not run. Every error names the line and column (1-based) where the problem starts, so
//! that the command can print one `error:` line (docs/cli.md, "Errors").

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    pub line: u32,
    pub column: u32,
    pub kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A character no token starts with.
    UnexpectedCharacter(char),
    /// A comment, string or code block that never ends.
    Unterminated(&'static str),
    /// The grammar wanted something else here.
    Expected { expected: String, found: String },
    /// Part of packetdrill's language (or of a socket API) that millinet does not run.
    Unsupported { what: String, supported: String },
    /// A number outside what its field holds.
    OutOfRange { what: String, value: String, allowed: String },
    /// Well-formed but contradictory: `1:1001(999)`, time going backward, `ack` without the
    /// ACK flag, a call on a socket in the wrong state.
    Invalid(String),
}

impl ScriptError {
    pub(crate) fn new(line: u32, column: u32, kind: ErrorKind) -> ScriptError {
        ScriptError { line, column, kind }
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.kind)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnexpectedCharacter(c) => write!(f, "unexpected character {c:?}"),
            ErrorKind::Unterminated(what) => write!(f, "unterminated {what}"),
            ErrorKind::Expected { expected, found } => write!(f, "expected {expected}, found {found}"),
            ErrorKind::Unsupported { what, supported } => write!(f, "{what} is not supported; supported: {supported}"),
            ErrorKind::OutOfRange { what, value, allowed } => write!(f, "{what} = {value}: out of range; allowed: {allowed}"),
            ErrorKind::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ScriptError {}
