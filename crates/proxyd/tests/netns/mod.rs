//! The daemon's test bench: namespaces `ue` — `router` — `server` made by the test (names
//! carry the test process's id), veth pairs, the operator's NFQUEUE rule in the router's
//! FORWARD chain, the daemon started in the router with `ip netns exec`, and kernel TCP
//! transfers between threads that entered the end namespaces. Every guard removes what it
//! made when dropped, so a failing test leaves nothing behind: deleting a namespace removes
//! its veth ends, addresses, routes and iptables rules. What a killed test process left is
//! removed by the next bench.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 88, 1, 2);
pub const UE: Ipv4Addr = Ipv4Addr::new(10, 88, 2, 2);
pub const UE_NET: &str = "10.88.2.0/24";
/// Every socket operation of a test gives up after this.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// Why these tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: namespaces, NFQUEUE and raw sockets need it".into());
    }
    for tool in ["ip", "iptables"] {
        if Command::new(tool).arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Some(format!("{tool} is missing (make deps)"));
        }
    }
    None
}

/// One bench at a time: the tests measure rates on a small shared machine.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Namespaces of test processes that no longer run (killed before their guards could act),
/// with whatever still runs in them.
fn remove_orphans() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(pid) = name.strip_prefix("mnpd-").and_then(|rest| rest.split('-').next()) else { continue };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let pids = Command::new("ip").args(["netns", "pids", name]).output().map(|o| o.stdout).unwrap_or_default();
        for pid in String::from_utf8_lossy(&pids).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill(2); the process runs in a namespace only these tests make.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = Command::new("ip").args(["netns", "del", name]).status();
    }
}

/// A bench of its own for the calling test, and the lock that keeps the others out; None
/// (the reason printed, the test passing) where these tests cannot run.
pub fn bench(ue_mtu: u32) -> Option<(MutexGuard<'static, ()>, Topology)> {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let lock = exclusive();
    Some((lock, Topology::new(ue_mtu)))
}

/// Moves the calling thread into namespace `ns`.
fn enter(ns: &str) {
    let path = format!("/var/run/netns/{ns}");
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: setns on a namespace descriptor we hold; it moves only this thread.
    assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns {path}");
}

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().expect("a command that runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub struct Topology {
    prefix: String,
    /// One topology at a time in this process: two would share the two cores, and the SYN
    /// flood's sending rate and the transfers' timing would depend on each other.
    _host: std::sync::MutexGuard<'static, ()>,
}

impl Topology {
    /// The three namespaces, linked and routed; the UE side's link has `ue_mtu`.
    pub fn new(ue_mtu: u32) -> Topology {
        static BENCHES: AtomicU32 = AtomicU32::new(0);
        static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let host = HOST.lock().unwrap_or_else(|e| e.into_inner());
        remove_orphans();
        let prefix = format!("mnpd-{}-{}", std::process::id(), BENCHES.fetch_add(1, Ordering::Relaxed));
        let topo = Topology { prefix, _host: host };
        for role in ["ue", "router", "server"] {
            run(&["ip", "netns", "add", &topo.ns(role)]);
            run(&["ip", "-n", &topo.ns(role), "link", "set", "lo", "up"]);
        }
        let (ue, router, server) = (topo.ns("ue"), topo.ns("router"), topo.ns("server"));
        run(&["ip", "link", "add", "s0", "netns", &server, "type", "veth", "peer", "name", "r1", "netns", &router]);
        run(&["ip", "link", "add", "u0", "netns", &ue, "type", "veth", "peer", "name", "r2", "netns", &router]);
        let mtu = ue_mtu.to_string();
        for (ns, dev, addr, mtu) in [
            (&server, "s0", "10.88.1.2/24", "1500"),
            (&router, "r1", "10.88.1.1/24", "1500"),
            (&router, "r2", "10.88.2.1/24", &mtu),
            (&ue, "u0", "10.88.2.2/24", &mtu),
        ] {
            run(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            run(&["ip", "-n", ns, "link", "set", dev, "mtu", mtu, "up"]);
        }
        run(&["ip", "-n", &server, "route", "add", "default", "via", "10.88.1.1"]);
        run(&["ip", "-n", &ue, "route", "add", "default", "via", "10.88.2.1"]);
        run(&["ip", "netns", "exec", &router, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        // The operator's rule (docs/proxyd.md): packets pass while no daemon is bound.
        topo.iptables("router", &["-A", "FORWARD", "-p", "tcp", "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"]);
        topo
    }

    pub fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.prefix)
    }

    pub fn iptables(&self, role: &str, rule: &[&str]) {
        let ns = self.ns(role);
        let mut args = vec!["ip", "netns", "exec", &ns, "iptables"];
        args.extend_from_slice(rule);
        run(&args);
    }

    /// `ip ARGS` in `role`'s namespace.
    pub fn ip(&self, role: &str, args: &[&str]) {
        let ns = self.ns(role);
        let mut all = vec!["ip", "-n", &ns];
        all.extend_from_slice(args);
        run(&all);
    }

    /// Runs `f` on a thread inside `role`'s namespace.
    pub fn spawn_in<T: Send + 'static>(&self, role: &str, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
        let ns = self.ns(role);
        std::thread::spawn(move || {
            enter(&ns);
            f()
        })
    }

    pub fn in_ns<T: Send + 'static>(&self, role: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        self.spawn_in(role, f).join().expect("the namespace thread")
    }

    /// The daemon in the router, `--ue-net` the UE side, plus `extra` flags; returns once its
    /// metrics answer.
    pub fn start_daemon(&self, extra: &[&str]) -> Daemon {
        let log = std::env::temp_dir().join(format!("{}-daemon-{}.log", self.prefix, Instant::now().elapsed().as_nanos()));
        let router = self.ns("router");
        let child = Command::new("ip")
            .args(["netns", "exec", &router, env!("CARGO_BIN_EXE_millinet-proxyd"), "--ue-net", UE_NET])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("a log file"))
            .spawn()
            .expect("the daemon starts");
        let mut daemon = Daemon { child, log, router };
        let start = Instant::now();
        while daemon.try_metrics().is_none() {
            assert!(daemon.child.try_wait().expect("wait").is_none(), "the daemon exited: {}", daemon.log_text());
            assert!(start.elapsed() < Duration::from_secs(10), "no metrics after 10 s: {}", daemon.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
        daemon
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for role in ["ue", "router", "server"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(role)]).stderr(Stdio::null()).status();
        }
    }
}

/// A running daemon; killed when dropped (its log printed if the test is failing).
pub struct Daemon {
    pub child: Child,
    log: PathBuf,
    router: String,
}

impl Daemon {
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    fn try_metrics(&self) -> Option<HashMap<String, f64>> {
        let router = self.router.clone();
        std::thread::spawn(move || {
            enter(&router);
            let mut s = TcpStream::connect_timeout(&"127.0.0.1:9464".parse().unwrap(), Duration::from_secs(2)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
            let mut text = String::new();
            s.read_to_string(&mut text).ok()?;
            let body = text.split_once("\r\n\r\n")?.1;
            Some(
                body.lines()
                    .filter(|l| !l.starts_with('#'))
                    .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
                    .collect(),
            )
        })
        .join()
        .ok()?
    }

    /// The daemon's metrics by sample name (`millinet_proxy_` removed).
    pub fn metrics(&self) -> HashMap<String, f64> {
        let m = self.try_metrics().unwrap_or_else(|| panic!("GET /metrics failed: {}", self.log_text()));
        m.into_iter().map(|(k, v)| (k.trim_start_matches("millinet_proxy_").to_string(), v)).collect()
    }

    /// Peak resident memory (VmHWM), KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("the daemon's status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), signal) };
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("daemon log:\n{}", self.log_text());
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The transfer's content: byte `i` of the stream, from a hash of `i` (any shift or lost
/// byte shows).
fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
    }
}

/// The largest segment the socket has received (tcpi_rcv_mss).
fn rcv_mss(s: &TcpStream) -> u32 {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: as above, on a socket we own.
    let r =
        unsafe { libc::getsockopt(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut libc::tcp_info).cast(), &mut len) };
    assert_eq!(r, 0, "TCP_INFO");
    info.tcpi_rcv_mss
}

/// The server's side of a transfer: listens on `port`; returns its local address.
pub struct Transfer {
    server: JoinHandle<()>,
    ue: JoinHandle<Result<u64, String>>,
    /// The UE socket's port, once connected.
    pub ue_port: std::sync::mpsc::Receiver<u16>,
    /// The address the server's accepted connection came from.
    pub server_peer: std::sync::mpsc::Receiver<SocketAddr>,
    /// The UE socket's receive MSS (TCP_INFO), once the transfer ended.
    pub ue_rcv_mss: std::sync::mpsc::Receiver<u32>,
}

impl Transfer {
    /// `bytes` from the server to the UE over kernel TCP; the server writes 64 KiB every
    /// `pace` (none: as fast as it can).
    pub fn start(topo: &Topology, port: u16, bytes: u64, pace: Option<Duration>) -> Transfer {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (peer_tx, server_peer) = std::sync::mpsc::channel();
        let server = topo.spawn_in("server", move || {
            let listener = TcpListener::bind(SocketAddrV4::new(SERVER, port)).expect("bind");
            ready_tx.send(()).unwrap();
            let (mut s, peer) = listener.accept().expect("accept");
            let _ = peer_tx.send(peer);
            s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut sent = 0;
            while sent < bytes {
                let n = (bytes - sent).min(buf.len() as u64) as usize;
                pattern(sent, &mut buf[..n]);
                s.write_all(&buf[..n]).expect("the server writes");
                sent += n as u64;
                if let Some(p) = pace {
                    std::thread::sleep(p);
                }
            }
        });
        ready_rx.recv_timeout(Duration::from_secs(5)).expect("the server listens");
        let (port_tx, ue_port) = std::sync::mpsc::channel();
        let (mss_tx, ue_rcv_mss) = std::sync::mpsc::channel();
        let ue = topo.spawn_in("ue", move || {
            let mut s = TcpStream::connect_timeout(&SocketAddrV4::new(SERVER, port).into(), Duration::from_secs(10))
                .map_err(|e| format!("connect: {e}"))?;
            let _ = port_tx.send(s.local_addr().unwrap().port());
            s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            let (mut got, mut buf, mut expected) = (0u64, vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
            loop {
                let n = s.read(&mut buf).map_err(|e| format!("read after {got} bytes: {e}"))?;
                if n == 0 {
                    let _ = mss_tx.send(rcv_mss(&s));
                    return Ok(got);
                }
                pattern(got, &mut expected[..n]);
                if let Some(k) = (0..n).find(|&k| buf[k] != expected[k]) {
                    return Err(format!("byte {} differs: {} instead of {}", got + k as u64, buf[k], expected[k]));
                }
                got += n as u64;
            }
        });
        Transfer { server, ue, ue_port, server_peer, ue_rcv_mss }
    }

    /// Bytes received intact by the UE, all of them.
    pub fn finish(self) -> Result<u64, String> {
        let got = self.ue.join().map_err(|_| "the UE thread panicked".to_string())?;
        self.server.join().map_err(|_| "the server thread panicked".to_string())?;
        got
    }

    pub fn run(topo: &Topology, port: u16, bytes: u64) -> u64 {
        let got = Transfer::start(topo, port, bytes, None).finish().expect("an intact transfer");
        assert_eq!(got, bytes, "the UE got {got} of {bytes} bytes");
        got
    }
}
