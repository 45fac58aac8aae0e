//! Scripts in packetdrill's language, run against one millinet TCP endpoint in virtual time
//! (docs/validation.md, "packetdrill scripts").
//!
//! A script injects the peer's packets (`<`), makes socket calls, expects the endpoint's
//! packets (`>`) field by field at given times, and checks `TCP_INFO` fields. This crate
//! parses the part of the language TCP scripts use and refuses the rest with its line and
//! column (`parse`, `ScriptError`), then drives a `TcpConnection` through it (`run`): the
//! socket calls map onto the sans-IO connection (`sockets`), time jumps from event to event
//! and to the connection's timers, and the first difference fails the script with its line
//! (`Failure`).
//!
//! Layout: `lexer` (tokens) → `parser` (grammar; `calls` types the socket calls, `code` the
//! `%{ assert }%` blocks, `settings` the option lines) → `script` (what a parsed script is);
//! `runner` (the virtual-time loop) over `sockets` (the endpoint), `mapping` (script numbers
//! ↔ wire numbers), `verify` (packet against expectation), `tcpinfo` (TCP_INFO fields);
//! `render` writes packets back in the script's notation; `error` and `failure` are the two
//! ways a script does not pass.

mod calls;
mod code;
mod error;
mod failure;
mod lexer;
mod mapping;
mod parser;
mod render;
mod runner;
mod script;
mod settings;
mod sockets;
mod tcpinfo;
mod verify;

use std::path::Path;

pub use error::{ErrorKind, ScriptError};
pub use failure::{Expected, Failure, FailureKind};
pub use parser::parse;
pub use runner::{run, OptionsError, Report, RunError, RunOptions, DEFAULT_TOLERANCE_NS};
pub use script::Script;

/// Why a script file could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Io(std::io::Error),
    Script(ScriptError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read: {e}"),
            LoadError::Script(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads and parses a script file.
pub fn load(path: &Path) -> Result<Script, LoadError> {
    let text = std::fs::read_to_string(path).map_err(LoadError::Io)?;
    parse(&text).map_err(LoadError::Script)
}
