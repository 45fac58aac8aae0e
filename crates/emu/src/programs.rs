//! Users' own programs on the emulated path (docs/emulator.md, "Your own programs"): a command
//! in the UE's namespace, optionally a server command in the server's, both started by the
//! emulation and stopped with it. Whatever they send crosses the network as the scenario's
//! flows would; the watchdog of `netns` kills anything of theirs still running when the
//! emulation ends by any route.

use std::ffi::CString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::error::EmuError;
use crate::testbed::in_namespace;

/// What runs instead of the scenario's own endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Programs {
    /// The command in the UE's namespace (program and arguments): the run lasts while it runs.
    pub ue: Vec<String>,
    /// A shell command in the server's namespace, started first; the UE's starts once it
    /// listens.
    pub server: Option<String>,
}

/// How long a server command may take to open its listening socket.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);

/// The exit status a command gets when the run reached its duration first (timeout(1)'s).
pub const EXIT_DURATION_REACHED: i32 = 124;

/// The user the programs run as: the one who ran millinet through sudo (so files they write
/// are theirs), or root's own credentials otherwise.
#[derive(Clone, Debug)]
pub struct Credentials {
    uid: libc::uid_t,
    gid: libc::gid_t,
    groups: Vec<libc::gid_t>,
    name: String,
    home: String,
}

impl Credentials {
    /// The invoking user from sudo's SUDO_UID, SUDO_GID and SUDO_USER, if millinet was started
    /// that way by someone other than root.
    pub fn of_sudo_user() -> Option<Credentials> {
        let uid: libc::uid_t = std::env::var("SUDO_UID").ok()?.parse().ok()?;
        let gid: libc::gid_t = std::env::var("SUDO_GID").ok()?.parse().ok()?;
        let name = std::env::var("SUDO_USER").ok()?;
        if uid == 0 {
            return None;
        }
        let c_name = CString::new(name.clone()).ok()?;
        let mut groups = vec![0 as libc::gid_t; 256];
        let mut count = groups.len() as libc::c_int;
        // SAFETY: getgrouplist writes at most `count` group ids into `groups` and the number
        // it found into `count`.
        if unsafe { libc::getgrouplist(c_name.as_ptr(), gid, groups.as_mut_ptr(), &mut count) } < 0 {
            count = 0;
        }
        groups.truncate(count.max(0) as usize);
        Some(Credentials { uid, gid, groups, home: home_of(uid).unwrap_or_else(|| "/".into()), name })
    }
}

impl Credentials {
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The home directory of `uid` from the password database.
fn home_of(uid: libc::uid_t) -> Option<String> {
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buffer = vec![0 as libc::c_char; 4096];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r fills `entry` with pointers into `buffer`, both ours and large enough
    // (or it returns ERANGE), and sets `found` to `entry` on success.
    let r = unsafe { libc::getpwuid_r(uid, &mut entry, buffer.as_mut_ptr(), buffer.len(), &mut found) };
    if r != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points to a NUL-terminated string inside `buffer`.
    Some(unsafe { std::ffi::CStr::from_ptr(entry.pw_dir) }.to_string_lossy().into_owned())
}

/// A program the emulation started in one of its namespaces.
pub struct Program {
    child: Child,
    /// How it is named in messages.
    label: &'static str,
    started: Instant,
}

impl Program {
    /// Starts `argv` in namespace `namespace` with `env` added to millinet's environment, as
    /// `user` when given. It shares millinet's terminal, so a shell is interactive.
    pub fn start(
        label: &'static str,
        namespace: &str,
        argv: &[String],
        env: &[(&str, String)],
        user: Option<&Credentials>,
    ) -> Result<Program, EmuError> {
        let (program, args) = argv.split_first().ok_or_else(|| EmuError::System(format!("the {label} command is empty")))?;
        let mut command = Command::new(program);
        command.args(args).envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        if let Some(user) = user.cloned() {
            command.env("USER", &user.name).env("LOGNAME", &user.name).env("HOME", &user.home);
            // SAFETY: only async-signal-safe calls (setgroups, setgid, setuid) between fork
            // and exec; the group list was read before the fork.
            unsafe {
                command.pre_exec(move || {
                    if libc::setgroups(user.groups.len(), user.groups.as_ptr()) != 0
                        || libc::setgid(user.gid) != 0
                        || libc::setuid(user.uid) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        // A child forked from a thread inside the namespace lives in it.
        let child = in_namespace(namespace, || {
            command.spawn().map_err(|e| EmuError::System(format!("cannot start the {label} command `{program}`: {e}")))
        })?;
        Ok(Program { child, label, started: Instant::now() })
    }

    /// Starts a shell command line (`sh -c LINE`).
    pub fn start_shell(
        label: &'static str,
        namespace: &str,
        line: &str,
        env: &[(&str, String)],
        user: Option<&Credentials>,
    ) -> Result<Program, EmuError> {
        Program::start(label, namespace, &["sh".into(), "-c".into(), line.into()], env, user)
    }

    /// Waits until the program (or a process it started) has a listening TCP socket or a
    /// bound UDP socket in its namespace, for at most `timeout`.
    pub fn wait_listening(&mut self, timeout: Duration) -> Result<(), EmuError> {
        let pid = self.child.id();
        while self.started.elapsed() < timeout {
            if let Some(status) = self.exited()? {
                return Err(EmuError::System(format!(
                    "the {} command ended (exit status {}) before it listened on a socket",
                    self.label,
                    exit_code(status)
                )));
            }
            if listening(pid) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(EmuError::System(format!("the {} command did not listen on a TCP or UDP socket within {} s", self.label, timeout.as_secs())))
    }

    /// The TCP ports listening in its namespace.
    pub fn listening_tcp_ports(&self) -> Vec<u16> {
        let mut found = ports(self.child.id(), "tcp", LISTEN);
        found.extend(ports(self.child.id(), "tcp6", LISTEN));
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Its exit status, if it has ended.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>, EmuError> {
        self.child.try_wait().map_err(|e| EmuError::System(format!("the {} command: {e}", self.label)))
    }

    /// Ends it if it still runs (SIGTERM, then SIGKILL after a second) and returns its status.
    pub fn stop(mut self) -> Result<ExitStatus, EmuError> {
        if let Some(status) = self.exited()? {
            return Ok(status);
        }
        // SAFETY: signalling our own child, which has not been reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Some(status) = self.exited()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().map_err(|e| EmuError::System(format!("the {} command: {e}", self.label)))
    }
}

/// A shell's convention: the exit code, or 128 + the signal that ended it.
pub fn exit_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Whether the namespace of process `pid` has a listening TCP socket or a bound UDP one.
fn listening(pid: u32) -> bool {
    [("tcp", LISTEN), ("tcp6", LISTEN), ("udp", UDP_BOUND), ("udp6", UDP_BOUND)]
        .iter()
        .any(|&(table, state)| !ports(pid, table, state).is_empty())
}

/// TCP's LISTEN state, and the state a bound UDP socket shows, in `/proc/net/{tcp,udp}`.
const LISTEN: &str = "0A";
const UDP_BOUND: &str = "07";

/// The local ports of the sockets in `state` of table `table` (`tcp`, `udp6`, ...) of the
/// namespace of process `pid` (`/proc/PID/net/*` shows the sockets of its namespace).
fn ports(pid: u32, table: &str, state: &str) -> Vec<u16> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
    let port = |local: &str| local.rsplit(':').next().and_then(|hex| u16::from_str_radix(hex, 16).ok());
    let mut found: Vec<u16> = (text.lines().skip(1))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(3) == Some(&state)).then(|| fields.get(1).and_then(|local| port(local))).flatten()
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}
