//! What the kernel tests share: when to skip; a sender, a router and a receiver namespace
//! made for the test, whose router holds a token-bucket bottleneck and, when asked, a delay
//! line with random loss; a bulk transfer over it sampled through TCP_INFO, with the window
//! growth in congestion avoidance it shows; and two transfers sharing it.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use millinet_emu::mptcp;
pub use millinet_emu::mptcp::Transport;
use millinet_emu::tcp_info::TcpInfo;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Why the kernel tests cannot run here, if they cannot: registering a congestion control
/// needs root (CAP_BPF and CAP_NET_ADMIN) and BPF struct_ops needs the kernel's BTF.
pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: registering BPF congestion controls needs CAP_BPF and CAP_NET_ADMIN".into());
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("no /sys/kernel/btf/vmlinux: this kernel cannot load BPF struct_ops".into());
    }
    None
}

/// Prints why a test is skipped and returns true, or returns false.
pub fn skipped(test: &str) -> bool {
    match skip_reason() {
        Some(reason) => {
            println!("{test}: skipped: {reason}");
            true
        }
        None => false,
    }
}

/// The congestion controls the kernel offers now.
pub fn available() -> Vec<String> {
    let list = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").expect("tcp_available_congestion_control");
    list.split_whitespace().map(str::to_string).collect()
}

/// The bottleneck: a router between the sender and the receiver forwards the data through a
/// token bucket of this rate and queue, which turns a bulk transfer into congestion avoidance
/// cycles between losses. (On the sender's own device TCP small queues would keep the queue
/// below a millisecond of data: it would never fill.)
pub struct Bottleneck {
    pub rate_mbit: u32,
    pub queue_packets: u32,
    /// Held back by the router before the queue (a delay line on NFQUEUE: this kernel has no
    /// netem), so that round trips are not only queueing delay.
    pub delay_ms: u32,
    /// The delay line drops each segment toward the receiver with this probability,
    /// independently of the others (before the queue).
    pub random_loss: f64,
}

const MTU: u32 = 1500;
const PORT: u16 = 5001;

/// One transfer at a time: they share the two cores, and the growth they measure must not
/// depend on whether another runs.
static TRANSFERS: Mutex<()> = Mutex::new(());

fn sh(script: &str) {
    let out = Command::new("sh").args(["-c", script]).output().expect("sh");
    assert!(out.status.success(), "`{script}` failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn write_sysctl(key: &str, value: &str) {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
}

/// A network namespace made for the test. It has no name: it lives while this handle (an open
/// descriptor of it) or a socket in it does, and goes however the test ends, with its devices.
struct Netns(File);

impl Netns {
    fn new() -> Netns {
        let file = std::thread::spawn(|| {
            // SAFETY: unshare(CLONE_NEWNET) moves only this short-lived thread.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: {}", std::io::Error::last_os_error());
            File::open("/proc/thread-self/ns/net").expect("the new namespace")
        });
        let ns = Netns(file.join().expect("namespace thread"));
        ns.run(|| sh("ip link set lo up"));
        ns
    }

    /// What `ip ... netns` takes to name it.
    fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.0.as_raw_fd())
    }

    /// Runs `f` on a thread inside the namespace: sockets it makes live there.
    fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // SAFETY: setns on a namespace descriptor we hold; it moves only this thread.
                    assert_eq!(
                        unsafe { libc::setns(self.0.as_raw_fd(), libc::CLONE_NEWNET) },
                        0,
                        "setns: {}",
                        std::io::Error::last_os_error()
                    );
                    f()
                })
                .join()
                .expect("namespace thread")
        })
    }
}

/// Socket buffers that never limit the sender or the receiver's window below the queue.
const BUFFERS: &str = "4096 131072 67108864";

/// The receiver's address.
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 79, 2, 1);

/// The sender's namespace, the router's and the receiver's:
/// 10.79.1.1 (s0) -- (m0) 10.79.1.2 and 10.79.3.1 (s1) -- (m2) 10.79.3.2, the router,
/// 10.79.2.2 (m1, the bottleneck) -- (r0) 10.79.2.1. An MPTCP connection's second subflow
/// leaves by s1; everything meets in m1's queue.
struct Testbed {
    /// Stopped before the namespaces go.
    _delay_line: Option<DelayLine>,
    sender: Netns,
    receiver: Netns,
    /// The router has no socket: its handle keeps it.
    _router: Netns,
}

/// A connection over the testbed.
struct Connection {
    sender: TcpStream,
    receiver: TcpStream,
    /// MPTCP's joining subflows arrive at the listener (RFC 8684 §3.2).
    _listener: TcpListener,
}

impl Testbed {
    fn new(bottleneck: &Bottleneck) -> Testbed {
        let (sender, router, receiver) = (Netns::new(), Netns::new(), Netns::new());
        let (router_path, receiver_path) = (router.path(), receiver.path());
        sender.run(|| {
            sh(&format!(
                "ip link add s0 mtu {MTU} type veth peer name m0 mtu {MTU} netns {router_path} && \
                 ip link add s1 mtu {MTU} type veth peer name m2 mtu {MTU} netns {router_path} && \
                 ip link add r0 mtu {MTU} netns {receiver_path} type veth peer name m1 mtu {MTU} netns {router_path} && \
                 ip addr add 10.79.1.1/24 dev s0 && ip link set s0 up && ip route add default via 10.79.1.2 && \
                 ip addr add 10.79.3.1/24 dev s1 && ip link set s1 up && ip route add default via 10.79.3.2 dev s1 metric 100 && \
                 ip mptcp limits set subflows 2 && ip mptcp endpoint add 10.79.3.1 dev s1 subflow"
            ));
            write_sysctl("net.ipv4.tcp_wmem", BUFFERS);
        });
        router.run(|| {
            write_sysctl("net.ipv4.ip_forward", "1");
            sh(&format!(
                "ip addr add 10.79.1.2/24 dev m0 && ip link set m0 up && ip addr add 10.79.3.2/24 dev m2 && ip link set m2 up && \
                 ip addr add 10.79.2.2/24 dev m1 && ip link set m1 up && \
                 tc qdisc add dev m1 root tbf rate {}mbit burst 64kb limit {}",
                bottleneck.rate_mbit,
                bottleneck.queue_packets * MTU
            ));
        });
        receiver.run(|| {
            sh("ip addr add 10.79.2.1/24 dev r0 && ip link set r0 up && ip route add default via 10.79.2.2 && ip mptcp limits set subflows 2");
            write_sysctl("net.ipv4.tcp_rmem", BUFFERS);
        });
        let delay_line = (bottleneck.delay_ms > 0 || bottleneck.random_loss > 0.0)
            .then(|| DelayLine::start(&router, Duration::from_millis(bottleneck.delay_ms.into()), bottleneck.random_loss));
        Testbed { _delay_line: delay_line, sender, receiver, _router: router }
    }

    /// A connection to `port` of the receiver with congestion control `cc` at the sender.
    fn connect(&self, cc: &str, transport: Transport, port: u16) -> Connection {
        let address = SocketAddrV4::new(RECEIVER, port);
        let listener = self.receiver.run(|| mptcp::listen(transport, address).unwrap_or_else(|e| panic!("{e}")));
        let sender = self.sender.run(|| {
            let stream =
                mptcp::connect(transport, Ipv4Addr::UNSPECIFIED, address, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
            set_congestion_control(&stream, cc);
            stream
        });
        let receiver = listener.accept().expect("accept").0;
        if transport == Transport::Mptcp {
            // The second subflow joins once the connection is fully established (RFC 8684
            // §3.1: after data was acknowledged), before the bulk data: its SYN must not meet
            // a queue the first subflow already filled.
            { &sender }.write_all(&[0; 1000]).expect("first data");
            let deadline = Instant::now() + Duration::from_secs(3);
            while subflow_infos(sender.as_raw_fd()).len() < 2 {
                assert!(Instant::now() < deadline, "the second MPTCP subflow did not join within 3 s");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        sender.set_write_timeout(Some(Duration::from_millis(20))).expect("SO_SNDTIMEO");
        receiver.set_read_timeout(Some(Duration::from_millis(20))).expect("SO_RCVTIMEO");
        Connection { sender, receiver, _listener: listener }
    }
}

/// The router's delay line: an iptables rule queues every packet toward the receiver to
/// NFQUEUE, and a thread in the router's namespace accepts each one `delay` after it arrived,
/// or drops it with probability `loss`. The queue is bound without NFQA_CFG_F_GSO, so the
/// kernel hands it segments: a loss is one segment's, not a whole GSO burst's (as iptables'
/// statistic match would drop).
struct DelayLine {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DelayLine {
    const QUEUE: u16 = 79;

    fn start(router: &Netns, delay: Duration, loss: f64) -> DelayLine {
        router.run(|| sh(&format!("iptables -A FORWARD -o m1 -j NFQUEUE --queue-num {}", Self::QUEUE)));
        let namespace = router.0.try_clone().expect("the router's namespace descriptor");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                // SAFETY: setns on a namespace descriptor we hold; it moves only this thread.
                assert_eq!(unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
                let mut queue = nfq::Queue::open().expect("NFQUEUE socket");
                queue.bind(Self::QUEUE).expect("bind the delay line's queue");
                queue.set_nonblocking(true);
                bound_tx.send(()).expect("the starting thread waits");
                let mut held: std::collections::VecDeque<(Instant, nfq::Message)> = std::collections::VecDeque::new();
                let mut random = Xoshiro256PlusPlus::seed_from_u64(79);
                while !stop.load(Ordering::Relaxed) {
                    while let Ok(mut message) = queue.recv() {
                        if random.random_bool(loss) {
                            message.set_verdict(nfq::Verdict::Drop);
                            queue.verdict(message).expect("NFQUEUE verdict");
                        } else {
                            held.push_back((Instant::now() + delay, message));
                        }
                    }
                    let now = Instant::now();
                    while held.front().is_some_and(|(due, _)| *due <= now) {
                        let (_, mut message) = held.pop_front().expect("a front");
                        message.set_verdict(nfq::Verdict::Accept);
                        queue.verdict(message).expect("NFQUEUE verdict");
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
        });
        bound_rx.recv().expect("the delay line bound its queue");
        DelayLine { stop, thread: Some(thread) }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn set_congestion_control(stream: &TcpStream, cc: &str) {
    // SAFETY: TCP_CONGESTION reads `len` bytes of the name.
    let r = unsafe {
        libc::setsockopt(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr().cast(), cc.len() as libc::socklen_t)
    };
    assert_eq!(r, 0, "TCP_CONGESTION {cc}: {}", std::io::Error::last_os_error());
}

/// TCP_INFO of every subflow of an MPTCP socket.
fn subflow_infos(fd: i32) -> Vec<TcpInfo> {
    mptcp::subflows(fd).unwrap_or_else(|e| panic!("{e}")).into_iter().map(|s| s.info).collect()
}

/// Keeps the connection's sender writing and its receiver reading until `stop`, counting the
/// bytes read in `received`.
fn pump<'s>(scope: &'s std::thread::Scope<'s, '_>, connection: &'s Connection, stop: &'s AtomicBool, received: &'s AtomicU64) {
    scope.spawn(move || {
        let chunk = vec![0u8; 1 << 20];
        while !stop.load(Ordering::Relaxed) {
            let _ = { &connection.sender }.write(&chunk);
        }
    });
    scope.spawn(move || {
        let mut buf = vec![0u8; 1 << 20];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(n) = { &connection.receiver }.read(&mut buf) {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    });
}

/// A bulk transfer of `seconds` with congestion control `cc`: every millisecond, the TCP_INFO
/// of the sender's socket (Tcp) or of each of its subflows (Mptcp).
pub fn bulk(cc: &str, transport: Transport, bottleneck: &Bottleneck, seconds: f64) -> Vec<Vec<TcpInfo>> {
    let _one_at_a_time = TRANSFERS.lock().unwrap_or_else(|e| e.into_inner());
    let testbed = Testbed::new(bottleneck);
    let connection = testbed.connect(cc, transport, PORT);
    let (stop, received) = (AtomicBool::new(false), AtomicU64::new(0));
    let mut samples = Vec::new();
    std::thread::scope(|scope| {
        pump(scope, &connection, &stop, &received);
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        while Instant::now() < end {
            let fd = connection.sender.as_raw_fd();
            samples.push(match transport {
                Transport::Tcp => vec![TcpInfo::read(fd).expect("TCP_INFO")],
                Transport::Mptcp => subflow_infos(fd),
            });
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
    });
    samples
}

/// Two bulk transfers through the one bottleneck from the same start: a connection over
/// `transport` (MPTCP: two subflows) with `cc` on each subflow, and a TCP connection with
/// `tcp_cc`. Returns the bytes each received after the first `warmup_s`, until `seconds`.
pub fn share(cc: &str, transport: Transport, tcp_cc: &str, bottleneck: &Bottleneck, warmup_s: f64, seconds: f64) -> (u64, u64) {
    let _one_at_a_time = TRANSFERS.lock().unwrap_or_else(|e| e.into_inner());
    let testbed = Testbed::new(bottleneck);
    let multipath = testbed.connect(cc, transport, PORT);
    let single = testbed.connect(tcp_cc, Transport::Tcp, PORT + 1);
    let (stop, multipath_bytes, single_bytes) = (AtomicBool::new(false), AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|scope| {
        let start = Instant::now();
        pump(scope, &multipath, &stop, &multipath_bytes);
        pump(scope, &single, &stop, &single_bytes);
        std::thread::sleep(Duration::from_secs_f64(warmup_s));
        let at_warmup = (multipath_bytes.load(Ordering::Relaxed), single_bytes.load(Ordering::Relaxed));
        std::thread::sleep((start + Duration::from_secs_f64(seconds)).saturating_duration_since(Instant::now()));
        let at_end = (multipath_bytes.load(Ordering::Relaxed), single_bytes.load(Ordering::Relaxed));
        stop.store(true, Ordering::Relaxed);
        (at_end.0 - at_warmup.0, at_end.1 - at_warmup.1)
    })
}

/// The window growth a transfer showed in congestion avoidance, for windows in [lo, hi).
#[derive(Debug)]
pub struct Growth {
    pub lo: u32,
    pub hi: u32,
    /// Windows of data acknowledged: Σ delivered segments / cwnd.
    pub windows: f64,
    /// Segments the window grew by.
    pub increase: u32,
}

impl Growth {
    /// Segments of growth per window of acknowledged data: per round trip when the window is
    /// full, what RFC 3649 calls a(w) (and standard TCP's 1).
    pub fn per_window(&self) -> f64 {
        self.increase as f64 / self.windows
    }
}

/// Whether the window went from sample p to sample q by congestion avoidance alone: both in
/// congestion avoidance (state Open, cwnd ≥ ssthresh), and nothing in between that is not (a
/// loss, recovery, a new ssthresh, time limited by a socket buffer or the receiver's window).
pub fn avoiding(p: &TcpInfo, q: &TcpInfo) -> bool {
    let in_avoidance = |s: &TcpInfo| s.ca_state == 0 && s.snd_cwnd >= s.snd_ssthresh;
    in_avoidance(p)
        && in_avoidance(q)
        && p.snd_ssthresh == q.snd_ssthresh
        && p.total_retrans == q.total_retrans
        && p.sndbuf_limited == q.sndbuf_limited
        && p.rwnd_limited == q.rwnd_limited
        && q.snd_cwnd >= p.snd_cwnd
}

/// Segments acknowledged between two samples.
pub fn delivered(p: &TcpInfo, q: &TcpInfo) -> u32 {
    q.delivered.wrapping_sub(p.delivered)
}

/// Sums, over consecutive samples `avoiding`, how much the window grew and how many windows
/// of data were acknowledged, by the window at the first sample.
pub fn growth(samples: &[TcpInfo], lo: u32, hi: u32) -> Growth {
    let mut g = Growth { lo, hi, windows: 0.0, increase: 0 };
    for pair in samples.windows(2) {
        let (p, q) = (&pair[0], &pair[1]);
        if avoiding(p, q) && (lo..hi).contains(&p.snd_cwnd) {
            g.windows += delivered(p, q) as f64 / p.snd_cwnd as f64;
            g.increase += q.snd_cwnd - p.snd_cwnd;
        }
    }
    g
}
