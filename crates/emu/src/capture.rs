//! Packet captures at the endpoints: tcpdump on an endpoint namespace's interface, headers
//! only (128 bytes a packet), written as pcap that tshark and Wireshark read. The kernel hands
//! tcpdump TSO frames before segmentation, so a capture shows frames of several segments, as
//! a capture on any Linux host does.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::EmuError;

/// How long tcpdump may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Capture {
    tcpdump: Child,
}

impl Capture {
    /// Starts capturing on `interface` of namespace `namespace` into `path`; returns once
    /// tcpdump listens, so the run's first packets are in the file.
    pub fn start(namespace: &str, interface: &str, path: &Path) -> Result<Capture, EmuError> {
        let file = path.to_str().ok_or_else(|| EmuError::System(format!("pcap path {} is not UTF-8", path.display())))?;
        let mut tcpdump = Command::new("ip")
            .args(["netns", "exec", namespace, "tcpdump", "-i", interface, "-s", "128", "-U", "-n", "-w", file])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| EmuError::System(format!("cannot run tcpdump through ip netns exec: {e}")))?;
        let stderr = tcpdump.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // tcpdump says "listening on ..." once the capture runs; its stderr is then drained
        // so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut said = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(Ok(()));
                } else if said.len() < 5 {
                    said.push(line);
                }
            }
            let _ = tx.send(Err(said.join("; ")));
        });
        let started = Instant::now();
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(())) => Ok(Capture { tcpdump }),
            outcome => {
                let _ = tcpdump.kill();
                let _ = tcpdump.wait();
                let why = match outcome {
                    Ok(Err(said)) if said.contains("tcpdump") && said.contains("No such file") || said.is_empty() => {
                        "tcpdump is not installed (`make deps` installs it)".to_string()
                    }
                    Ok(Err(said)) => said,
                    _ => format!("tcpdump did not start listening within {:?}", started.elapsed()),
                };
                Err(EmuError::System(format!("cannot capture on {interface} in {namespace}: {why}")))
            }
        }
    }

    /// Stops the capture; tcpdump writes what it holds and closes the file.
    pub fn stop(mut self) -> Result<(), EmuError> {
        // SAFETY: signalling our own child, which has not been waited for yet.
        unsafe { libc::kill(self.tcpdump.id() as i32, libc::SIGTERM) };
        self.tcpdump.wait().map_err(|e| EmuError::System(format!("tcpdump: {e}")))?;
        Ok(())
    }
}
