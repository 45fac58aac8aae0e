//! The testbed's network namespaces, and the guarantee that they go away.
//!
//! Namespaces are named `mn-<pid>-<n>-<role>`, n counting the emulations of the process
//! (`ip netns` names, so a user can look inside a
//! running emulation with `ip netns exec`). Before the first one is made, a watchdog is
//! started in a session of its own: a shell that waits for its standard input to close, then
//! kills whatever still runs in the namespaces and deletes them. Standard input is a pipe
//! whose only writer is this process, so it closes when the emulation ends by any route — a
//! normal end, an error, Ctrl-C, or SIGKILL — and one cleanup path serves them all. Deleting a
//! namespace destroys its veth ends and routes; the TUN devices go with this process's file
//! descriptors.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::EmuError;

/// The prefix of every namespace an emulation makes.
pub const PREFIX: &str = "mn-";

pub struct Namespaces {
    names: Vec<String>,
    watchdog: Option<Child>,
}

impl Namespaces {
    /// Makes one namespace per role (a host's name), with loopback up.
    pub fn create(roles: &[String]) -> Result<Namespaces, EmuError> {
        static EMULATIONS: AtomicU32 = AtomicU32::new(0);
        let (pid, n) = (std::process::id(), EMULATIONS.fetch_add(1, Ordering::Relaxed));
        let names: Vec<String> = roles.iter().map(|r| format!("{PREFIX}{pid}-{n}-{r}")).collect();
        let watchdog = spawn_watchdog(&names)?;
        let ns = Namespaces { names, watchdog: Some(watchdog) };
        for name in &ns.names {
            run("ip", &["netns", "add", name])?;
            run("ip", &["-n", name, "link", "set", "lo", "up"])?;
        }
        Ok(ns)
    }

    /// The namespace of the `k`-th role given to `create`.
    pub fn name(&self, k: usize) -> &str {
        &self.names[k]
    }
}

impl Drop for Namespaces {
    /// Closes the watchdog's pipe and waits for it to remove everything.
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// Moves the calling thread into the named namespace.
pub fn enter(name: &str) -> Result<(), EmuError> {
    let file = File::open(format!("/var/run/netns/{name}")).map_err(|e| EmuError::System(format!("cannot open namespace {name}: {e}")))?;
    // SAFETY: setns on a namespace file descriptor we own; it affects only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(EmuError::os(&format!("cannot enter namespace {name}")));
    }
    Ok(())
}

/// A `TcpExt` counter (e.g. `TCPLossProbes`) of the calling thread's namespace, from its
/// `/proc/thread-self/net/netstat`; None if the kernel does not have it.
pub fn tcp_ext_counter(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/net/netstat").ok()?;
    netstat_counter(&text, "TcpExt:", name)
}

/// `netstat`'s format: for each group a line of names and a line of values, both starting
/// with the group's prefix.
fn netstat_counter(text: &str, group: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(group));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        let position = names.split_whitespace().position(|n| n == name);
        if let Some(k) = position {
            return values.split_whitespace().nth(k)?.parse().ok();
        }
    }
    None
}

fn spawn_watchdog(names: &[String]) -> Result<Child, EmuError> {
    let script = format!(
        "trap '' INT TERM HUP; read _; for ns in {}; do ip netns pids $ns 2>/dev/null | xargs -r kill -9; ip netns del $ns 2>/dev/null; done; exit 0",
        names.join(" ")
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; a session of its own keeps the watchdog out of
    // the terminal's process group, so Ctrl-C reaches the emulation but not its cleanup.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command.spawn().map_err(|e| EmuError::System(format!("cannot start the cleanup watchdog (sh): {e}")))
}

/// Runs a command to completion; its standard error becomes the message when it fails.
pub fn run(program: &str, args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EmuError::System(format!("cannot run {program}: {e}")))?;
    if !out.status.success() {
        return Err(EmuError::System(format!("`{program} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(())
}

/// Removes what killed emulations left: namespaces named by [`PREFIX`] whose process is gone
/// (their watchdog was killed too, or the host rebooted in between). Returns their names.
pub fn cleanup_stale() -> Result<Vec<String>, EmuError> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir("/var/run/netns") else { return Ok(removed) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|rest| rest.split('-').next()).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if alive {
            continue;
        }
        let pids = Command::new("ip").args(["netns", "pids", &name]).output().map(|o| o.stdout).unwrap_or_default();
        for p in String::from_utf8_lossy(&pids).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: killing a process left inside a namespace of a dead emulation.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        run("ip", &["netns", "del", &name])?;
        removed.push(name);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::netstat_counter;

    #[test]
    fn a_counter_is_read_from_its_group_by_name() {
        let text =
            "TcpExt: SyncookiesSent TCPLossProbes TCPLossProbeRecovery\nTcpExt: 0 17 3\nIpExt: InNoRoutes TCPLossProbes\nIpExt: 5 99\n";
        assert_eq!(netstat_counter(text, "TcpExt:", "TCPLossProbes"), Some(17));
        assert_eq!(netstat_counter(text, "IpExt:", "TCPLossProbes"), Some(99));
        assert_eq!(netstat_counter(text, "TcpExt:", "TCPSackRecovery"), None);
    }
}
