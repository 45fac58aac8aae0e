//! What can stop a registration, typed: a missing build, the loader failing to start, the
//! kernel refusing (the loader's own message), or a loader that says something unexpected.

use std::path::PathBuf;
use std::process::ExitStatus;

#[derive(Debug)]
pub enum BpfCcError {
    /// A file `make bpf` builds is not there.
    NotBuilt { path: PathBuf },
    /// The loader could not be started or talked to.
    Loader { path: PathBuf, source: std::io::Error },
    /// The loader stopped before registering: its exit status and standard error.
    Refused { status: ExitStatus, stderr: String },
    /// A line of the loader's output that is none of `<stem> <name>` with a known stem, or
    /// `ready`.
    Protocol { line: String, allowed: String },
    /// The loader finished without registering this control.
    Unregistered { stem: &'static str },
}

impl std::fmt::Display for BpfCcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BpfCcError::NotBuilt { path } => write!(f, "{} is not built: run `make bpf`", path.display()),
            BpfCcError::Loader { path, source } => write!(f, "cannot run the loader {}: {source}", path.display()),
            BpfCcError::Refused { status, stderr } => write!(f, "the loader stopped ({status}) before registering: {}", stderr.trim()),
            BpfCcError::Protocol { line, allowed } => write!(f, "the loader printed `{line}`; allowed: {allowed}"),
            BpfCcError::Unregistered { stem } => write!(f, "the loader did not register the congestion control `{stem}`"),
        }
    }
}

impl std::error::Error for BpfCcError {}
