//! A registration: the loader process (`target/bpf/mn-bpfcc-loader`), which holds the BPF
//! links that keep the congestion controls registered. Its standard input is a pipe whose only
//! writer is this process: dropping the [`Registration`] closes it and waits for the loader to
//! exit, and if this process dies, even by SIGKILL, the pipe closes all the same; either way
//! the kernel unregisters the controls when the loader's link descriptors close.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread::JoinHandle;

use crate::error::BpfCcError;

/// The project's BPF congestion controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cc {
    /// HighSpeed TCP, RFC 3649 (bpf/highspeed.bpf.c).
    HighSpeed,
    /// LIA, RFC 6356 (bpf/coupled.bpf.c).
    Lia,
    /// OLIA, Khalili et al. 2013 (bpf/coupled.bpf.c).
    Olia,
    /// BALIA, Peng et al. 2016 (bpf/coupled.bpf.c).
    Balia,
    /// DCTCP, RFC 8257 (bpf/scalable.bpf.c).
    Dctcp,
    /// TCP Prague, draft-briscoe-iccrg-prague-congestion-control-04 (bpf/scalable.bpf.c).
    Prague,
}

impl Cc {
    pub const ALL: [Cc; 6] = [Cc::HighSpeed, Cc::Lia, Cc::Olia, Cc::Balia, Cc::Dctcp, Cc::Prague];

    /// The stem of its name in the BPF source (MN_CC_NAME); the kernel's name is
    /// `mn<loader pid>_<stem>`.
    pub fn stem(self) -> &'static str {
        match self {
            Cc::HighSpeed => "hs",
            Cc::Lia => "lia",
            Cc::Olia => "olia",
            Cc::Balia => "balia",
            Cc::Dctcp => "dctcp",
            Cc::Prague => "pragu",
        }
    }

    /// Its receiver echoes the CE state of every packet (RFC 8257 §3.2), which needs the
    /// receiving socket to run it too.
    pub fn echoes_every_mark(self) -> bool {
        matches!(self, Cc::Dctcp | Cc::Prague)
    }

    fn object(self) -> &'static str {
        match self {
            Cc::HighSpeed => "highspeed.bpf.o",
            Cc::Lia | Cc::Olia | Cc::Balia => "coupled.bpf.o",
            Cc::Dctcp | Cc::Prague => "scalable.bpf.o",
        }
    }
}

const LOADER: &str = "mn-bpfcc-loader";

/// Where `make bpf` puts the objects and the loader: this workspace's `target/bpf`.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bpf")
}

/// Every control registered, until dropped.
pub struct Registration {
    loader: Child,
    /// Closing it tells the loader to unregister and exit.
    stdin: Option<ChildStdin>,
    stderr: Option<JoinHandle<String>>,
    names: Vec<(Cc, String)>,
}

impl Registration {
    /// Registers every [`Cc`] from the objects and loader in `dir` (see [`default_dir`]).
    pub fn new(dir: &Path) -> Result<Registration, BpfCcError> {
        let loader = dir.join(LOADER);
        let mut objects: Vec<PathBuf> = Cc::ALL.iter().map(|cc| dir.join(cc.object())).collect();
        objects.dedup();
        for path in std::iter::once(&loader).chain(&objects) {
            if !path.is_file() {
                return Err(BpfCcError::NotBuilt { path: path.clone() });
            }
        }
        let mut child = Command::new(&loader)
            .args(&objects)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| BpfCcError::Loader { path: loader.clone(), source })?;
        // Standard error is drained meanwhile: a long verifier log must not block the loader.
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut registration = Registration { stdin: child.stdin.take(), loader: child, stderr: Some(stderr), names: Vec::new() };
        registration.read_names(stdout, &loader)?;
        Ok(registration)
    }

    /// The kernel's name of `cc` (what TCP_CONGESTION takes).
    pub fn name(&self, cc: Cc) -> &str {
        &self.names.iter().find(|(c, _)| *c == cc).expect("every Cc is registered (checked by new)").1
    }

    /// The loader's process id: the controls stay registered while it lives.
    pub fn loader_pid(&self) -> u32 {
        self.loader.id()
    }

    /// Reads `<stem> <name>` lines up to `ready`.
    fn read_names(&mut self, stdout: impl Read, loader: &Path) -> Result<(), BpfCcError> {
        let allowed = || format!("`<stem> <name>` with stem one of {:?}, or `ready`", Cc::ALL.map(Cc::stem));
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|source| BpfCcError::Loader { path: loader.to_path_buf(), source })?;
            if line == "ready" {
                return match Cc::ALL.iter().find(|cc| !self.names.iter().any(|(c, _)| c == *cc)) {
                    Some(cc) => Err(BpfCcError::Unregistered { stem: cc.stem() }),
                    None => Ok(()),
                };
            }
            let cc = line.split_once(' ').and_then(|(stem, name)| Some((Cc::ALL.into_iter().find(|cc| cc.stem() == stem)?, name)));
            let Some((cc, name)) = cc else { return Err(BpfCcError::Protocol { line, allowed: allowed() }) };
            self.names.push((cc, name.to_string()));
        }
        // End of output before `ready`: the loader failed; its status and message say why.
        drop(self.stdin.take());
        let status = self.loader.wait().map_err(|source| BpfCcError::Loader { path: loader.to_path_buf(), source })?;
        let stderr = self.stderr.take().map(|t| t.join().unwrap_or_default()).unwrap_or_default();
        Err(BpfCcError::Refused { status, stderr })
    }
}

impl Drop for Registration {
    /// Closes the loader's standard input and waits for it to exit, which unregisters.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.loader.wait();
        if let Some(stderr) = self.stderr.take() {
            let _ = stderr.join();
        }
    }
}
