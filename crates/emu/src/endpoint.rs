//! The endpoints: real Linux TCP or MPTCP sockets in the server's and the UE's namespaces.
//! The UE opens the connection and reads (a download, as in the simulator); the server
//! writes what the flow's application asks — the simulator's own sans-IO `Application`
//! (bulk, file, repeated downloads, rate), driven by the real clock and told what the UE's
//! application has read — with the scenario's congestion control set on its socket
//! (TCP_CONGESTION), and a sampler reads the server socket's TCP_INFO (each subflow's, for
//! MPTCP) every sample step into the `flows` table.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use millinet_transport::app::{AppAction, AppSpec, Download};

use crate::datagrams::DatagramRate;
use crate::error::EmuError;
use crate::mptcp::{self, Transport};
use crate::tcp_info::TcpInfo;

#[derive(Clone, Debug)]
pub struct FlowPlan {
    /// The kernel's name of the congestion control (`reno`, `cubic`, `bbr`).
    pub cc: String,
    /// The UE socket's too, where the control needs both ends (DCTCP's echo of every CE mark,
    /// RFC 8257 §3.2); else the UE keeps the kernel's default.
    pub ue_cc: Option<String>,
    /// Where the server listens.
    pub server: SocketAddrV4,
    /// Where the UE connects: the server, or the split proxy that connects to it.
    pub connect_to: SocketAddrV4,
    /// The UE's address it connects from (its radio's, for a device with several).
    pub bind: Ipv4Addr,
    /// What the server's application writes (the simulator's).
    pub app: AppSpec,
    pub start_ns: u64,
    pub end_ns: u64,
    pub sample_step_ns: u64,
    pub goodput_bin_ns: u64,
    /// What its endpoints exchange.
    pub carrier: Carrier,
    /// The UE's address on each path: an MPTCP subflow's path is the one of its far end.
    pub ue_ips: Vec<Ipv4Addr>,
}

/// What a flow's endpoints exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// A TCP or MPTCP connection.
    Stream(Transport),
    /// Datagrams at a rate (crate::datagrams).
    Datagrams(DatagramRate),
}

impl FlowPlan {
    /// The transport of a stream flow (an error for a UDP flow, which has no connection).
    pub fn stream(&self) -> Result<Transport, EmuError> {
        match self.carrier {
            Carrier::Stream(transport) => Ok(transport),
            Carrier::Datagrams(_) => Err(EmuError::System("a UDP flow has no stream socket".into())),
        }
    }

    pub fn is_mptcp(&self) -> bool {
        self.carrier == Carrier::Stream(Transport::Mptcp)
    }
}

/// TCP_INFO of each path's subflow (of the socket, path 0, for TCP), by path.
pub type PathInfos = Vec<(u32, TcpInfo)>;

/// One row of the `flows` table, from the server socket's TCP_INFO.
#[derive(Clone, Copy, Debug)]
pub struct TcpSample {
    pub t_ns: u64,
    /// The path of the MPTCP subflow (0 for TCP).
    pub subflow: u32,
    pub info: TcpInfo,
}

#[derive(Debug, Default)]
pub struct FlowReport {
    pub samples: Vec<TcpSample>,
    /// TCP_INFO when the server stopped writing: an MPTCP flow's first path's subflow.
    pub last_info: TcpInfo,
    /// An MPTCP flow's subflows then, by path.
    pub last_subflows: PathInfos,
    /// Bytes the UE's application read, per goodput bin.
    pub received_per_bin: Vec<u64>,
    pub received_bytes: u64,
    /// From the connection request to the last byte read, for a file.
    pub download_time_ns: Option<u64>,
    /// The client's own measured interval, when it has one (iperf3's transfer time); else
    /// goodput is over the run from the flow's start.
    pub measured_ns: Option<u64>,
    /// The own client checks every byte against what the server sent (`StreamPattern`):
    /// the stream offset of the first read that differed, if any (None for iperf3 too).
    pub first_corrupt_offset: Option<u64>,
    /// The downloads the server's application saw completed (repeated downloads).
    pub downloads: Vec<Download>,
    /// A UDP flow: datagrams the server sent, and those the UE received.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// The kernel's tail loss probes of this flow's server, when its namespace sends no other
    /// flow (the counter is the namespace's).
    pub tail_loss_probes: Option<u64>,
}

/// What the UE's application has read of the stream, told to the server's application as
/// the simulator tells it (`Application::on_delivered`): the request of a repeated download's
/// next object, in a real application.
#[derive(Debug, Default)]
pub struct Delivered(AtomicU64);

impl Delivered {
    fn set(&self, bytes: u64) {
        self.0.store(bytes, Ordering::Release);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// What the server's socket reported, and its application's downloads; a UDP source's
/// datagrams.
#[derive(Default)]
pub struct Served {
    pub samples: Vec<TcpSample>,
    pub last: PathInfos,
    pub downloads: Vec<Download>,
    pub datagrams_sent: u64,
    /// The server's namespace's tail loss probes at the end (`TcpExt: TCPLossProbes`).
    pub namespace_loss_probes: Option<u64>,
}

impl Served {
    /// A UDP source that sent `sent` datagrams.
    pub fn datagrams(sent: u64) -> Served {
        Served { datagrams_sent: sent, ..Served::default() }
    }
}

/// The bytes the own server sends: a fixed pseudo-random block repeated, of a prime length
/// that no segment size divides, so that a byte moved, lost or zeroed anywhere on the path
/// (a proxy that coalesces or retransmits wrongly) shows at the UE.
struct StreamPattern {
    /// The block, then its first `MAX_WINDOW_BYTES` again: any window is one slice.
    bytes: Vec<u8>,
}

impl StreamPattern {
    const PERIOD_BYTES: usize = 65_521;
    const MAX_WINDOW_BYTES: usize = 1 << 20;

    fn new() -> StreamPattern {
        // xorshift32 (Marsaglia 2003): fixed, so both ends make the same bytes.
        let mut x: u32 = 0x9e37_79b9;
        let block: Vec<u8> = (0..Self::PERIOD_BYTES)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect();
        let bytes = block.iter().copied().cycle().take(Self::PERIOD_BYTES + Self::MAX_WINDOW_BYTES).collect();
        StreamPattern { bytes }
    }

    /// The stream's bytes [offset, offset + len), len ≤ MAX_WINDOW_BYTES.
    fn window(&self, offset: u64, len: usize) -> &[u8] {
        let start = (offset % Self::PERIOD_BYTES as u64) as usize;
        &self.bytes[start..start + len.min(Self::MAX_WINDOW_BYTES)]
    }
}

/// The server: listening before the run starts (`bind` in the server namespace).
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Binds in the calling thread's namespace with the flow's congestion control, which
    /// accepted sockets inherit.
    pub fn bind(plan: &FlowPlan) -> Result<Server, EmuError> {
        let listener = mptcp::listen(plan.stream()?, plan.server)?;
        set_congestion_control(listener.as_raw_fd(), &plan.cc)?;
        Ok(Server { listener })
    }

    /// Accepts the UE's connection and runs the application until it is done or the run
    /// ends; a second thread samples TCP_INFO meanwhile. Returns the samples, the last
    /// TCP_INFO of each path's subflow and the application's downloads.
    pub fn serve(&self, plan: &FlowPlan, clock: &(dyn Fn() -> u64 + Sync), delivered: &Delivered) -> Result<Served, EmuError> {
        let (stream, _) = accept_by(&self.listener, plan.end_ns, clock)?;
        if plan.is_mptcp() {
            // For the connection's subflows, the joining ones too (the listener's setting
            // reaches only the first).
            set_congestion_control(stream.as_raw_fd(), &plan.cc)?;
        }
        let stream = Arc::new(stream);
        // Writes give up after a while so the end of the run is noticed.
        stream.set_write_timeout(Some(Duration::from_millis(20))).map_err(|e| EmuError::System(format!("SO_SNDTIMEO: {e}")))?;
        std::thread::scope(|scope| {
            let sampler = scope.spawn(|| sample(&stream, plan, clock));
            let downloads = run_application(&stream, plan, clock, delivered);
            let samples = sampler.join().expect("the sampler does not panic")?;
            let downloads = downloads?;
            let last = infos(&stream, plan)?;
            abort_on_close(&stream)?;
            // The thread serves from the flow's namespace: its counters are the server's.
            let namespace_loss_probes = crate::netns::tcp_ext_counter("TCPLossProbes");
            Ok(Served { samples, last, downloads, datagrams_sent: 0, namespace_loss_probes })
        })
    }
}

fn accept_by(listener: &TcpListener, end_ns: u64, clock: &dyn Fn() -> u64) -> Result<(TcpStream, std::net::SocketAddr), EmuError> {
    listener.set_nonblocking(true).map_err(|e| EmuError::System(format!("listener: {e}")))?;
    loop {
        match listener.accept() {
            Ok((stream, addr)) => {
                stream.set_nonblocking(false).map_err(|e| EmuError::System(format!("accepted socket: {e}")))?;
                return Ok((stream, addr));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if clock() >= end_ns {
                    return Err(EmuError::System("the UE never connected to the server: the path does not carry its SYN".into()));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(e) => return Err(EmuError::System(format!("accept: {e}"))),
        }
    }
}

/// Drives the flow's application on the real clock: it is told the connection is up, its
/// deadlines and what the UE has read, and the server writes what it asks (the pattern's
/// bytes) and closes when it says. Returns its downloads.
fn run_application(
    mut stream: &TcpStream,
    plan: &FlowPlan,
    clock: &dyn Fn() -> u64,
    delivered: &Delivered,
) -> Result<Vec<Download>, EmuError> {
    let pattern = StreamPattern::new();
    let mut app = plan.app.build(plan.start_ns);
    // Bytes asked for so far (u64::MAX: unlimited), written so far, whether to close after.
    let (mut asked, mut written, mut close, mut closed) = (0u64, 0u64, false, false);
    let apply = |action: AppAction, asked: &mut u64, close: &mut bool| {
        if let Some(bytes) = action.write_bytes {
            *asked = asked.saturating_add(bytes);
        }
        *close |= action.close;
    };
    apply(app.on_established(clock()), &mut asked, &mut close);
    let mut told = 0;
    loop {
        let now = clock();
        if now >= plan.end_ns || (closed && app.completed_ns().is_some()) {
            break;
        }
        if app.next_deadline_ns().is_some_and(|t| t <= now) {
            apply(app.on_deadline(now), &mut asked, &mut close);
        }
        let read = delivered.get();
        if read > told {
            told = read;
            apply(app.on_delivered(now, read), &mut asked, &mut close);
        }
        if written < asked {
            let n = (asked - written).min(StreamPattern::MAX_WINDOW_BYTES as u64) as usize;
            match stream.write(pattern.window(written, n)) {
                Ok(n) => written += n as u64,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                // The UE closed its end when the run ended.
                Err(e) if matches!(e.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset) => break,
                Err(e) => return Err(EmuError::System(format!("server write: {e}"))),
            }
            continue;
        }
        if close && !closed {
            let _ = stream.shutdown(std::net::Shutdown::Write);
            closed = true;
        }
        // Nothing to write: wait for the next deadline or what the UE reads, a ms at most.
        let wake = app.next_deadline_ns().unwrap_or(u64::MAX).min(now + 1_000_000).min(plan.end_ns);
        std::thread::sleep(Duration::from_nanos(wake.saturating_sub(now).max(1)));
    }
    Ok(app.downloads().to_vec())
}

/// The TCP_INFO of the connection's subflow on each path (of the socket, for TCP), by path.
fn infos(stream: &TcpStream, plan: &FlowPlan) -> Result<PathInfos, EmuError> {
    if !plan.is_mptcp() {
        return Ok(vec![(0, TcpInfo::read(stream.as_raw_fd())?)]);
    }
    let mut infos: Vec<(u32, TcpInfo)> = mptcp::subflows(stream.as_raw_fd())?
        .into_iter()
        .filter_map(|s| Some((plan.ue_ips.iter().position(|ip| ip == s.remote.ip())? as u32, s.info)))
        .collect();
    infos.sort_by_key(|(path, _)| *path);
    Ok(infos)
}

/// TCP_INFO every sample step, at step boundaries of the run's clock, until the run ends.
fn sample(stream: &TcpStream, plan: &FlowPlan, clock: &dyn Fn() -> u64) -> Result<Vec<TcpSample>, EmuError> {
    let mut samples = Vec::with_capacity((plan.end_ns / plan.sample_step_ns) as usize + 1);
    let mut next = clock().div_ceil(plan.sample_step_ns) * plan.sample_step_ns;
    while next < plan.end_ns {
        let now = clock();
        if now < next {
            std::thread::sleep(Duration::from_nanos(next - now));
            continue;
        }
        samples.extend(infos(stream, plan)?.into_iter().map(|(subflow, info)| TcpSample { t_ns: next, subflow, info }));
        next += plan.sample_step_ns * ((now - next) / plan.sample_step_ns + 1);
    }
    Ok(samples)
}

/// The UE: connects at the flow's start and reads until the run ends or the server closes,
/// telling the server's application what it has read.
pub fn download(plan: &FlowPlan, clock: &dyn Fn() -> u64, delivered: &Delivered) -> Result<FlowReport, EmuError> {
    let now = clock();
    if plan.start_ns > now {
        std::thread::sleep(Duration::from_nanos(plan.start_ns - now));
    }
    let requested_ns = clock();
    let remaining = Duration::from_nanos(plan.end_ns.saturating_sub(requested_ns).max(1));
    let mut stream =
        mptcp::connect(plan.stream()?, plan.bind, plan.connect_to, remaining).map_err(|e| EmuError::System(format!("the UE: {e}")))?;
    if let Some(cc) = &plan.ue_cc {
        set_congestion_control(stream.as_raw_fd(), cc)?;
    }
    stream.set_read_timeout(Some(Duration::from_millis(20))).map_err(|e| EmuError::System(format!("SO_RCVTIMEO: {e}")))?;
    let bins = plan.end_ns.div_ceil(plan.goodput_bin_ns) as usize;
    let mut report = FlowReport { received_per_bin: vec![0; bins], ..FlowReport::default() };
    let pattern = StreamPattern::new();
    let mut buf = vec![0u8; StreamPattern::MAX_WINDOW_BYTES];
    loop {
        let now = clock();
        if now >= plan.end_ns {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                report.download_time_ns = Some(clock() - requested_ns);
                break;
            }
            Ok(n) => {
                let now = clock().min(plan.end_ns - 1);
                if report.first_corrupt_offset.is_none() && buf[..n] != *pattern.window(report.received_bytes, n) {
                    report.first_corrupt_offset = Some(report.received_bytes);
                }
                report.received_per_bin[(now / plan.goodput_bin_ns) as usize] += n as u64;
                report.received_bytes += n as u64;
                delivered.set(report.received_bytes);
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(EmuError::System(format!("UE read: {e}"))),
        }
    }
    abort_on_close(&stream)?;
    Ok(report)
}

/// Makes closing the socket reset the connection (SO_LINGER 0) instead of sending what is
/// still queued: at the end of a run the link is gone, and an orphaned socket would hold its
/// queued megabytes, retransmitting into nothing, for minutes. That memory counts against the
/// host's `tcp_mem`, and above its first threshold no socket's send buffer grows (Linux's
/// tcp_should_expand_sndbuf): back-to-back runs stalled at a few dozen Mbit/s.
fn abort_on_close(stream: &TcpStream) -> Result<(), EmuError> {
    socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO)).map_err(|e| EmuError::System(format!("SO_LINGER: {e}")))
}

pub(crate) fn set_congestion_control(fd: i32, cc: &str) -> Result<(), EmuError> {
    // SAFETY: TCP_CONGESTION reads `len` bytes of the name.
    let r = unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr().cast(), cc.len() as libc::socklen_t) };
    if r != 0 {
        return Err(EmuError::os(&format!("cannot set congestion control {cc}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_of_the_pattern_is_the_stream_at_that_offset() {
        let p = StreamPattern::new();
        let whole: Vec<u8> = p.window(0, StreamPattern::MAX_WINDOW_BYTES).to_vec();
        for offset in [0u64, 1, 65_520, 65_521, 100_000, 1_000_000] {
            let tail = StreamPattern::MAX_WINDOW_BYTES - offset as usize;
            assert_eq!(p.window(offset, tail), &whole[offset as usize..], "offset {offset}");
        }
        // A shift by one segment is visible: the block's period is not a multiple of it.
        assert_ne!(p.window(0, 1448), p.window(1448, 1448));
    }
}
