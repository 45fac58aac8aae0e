//! The daemon's one event loop: ppoll(2) on the queue, the telemetry sockets, the metrics
//! requests and the signal pipe, with the nearest of the proxy's timer, the next replayed
//! record and the next progress report as the timeout. Time is CLOCK_MONOTONIC in ns, the
//! clock local telemetry publishers stamp records with; sealed records from across the
//! network carry CLOCK_REALTIME, converted on arrival (docs/telemetry.md).

use std::io::ErrorKind;
use std::os::fd::AsRawFd;

use log::{info, warn};
use millinet_proxyd::{push_counter, render_metrics, DaemonConfig, Datapath, Emitted};
use millinet_scenario::translate::proxy::milliproxy_config;

use crate::control::{poll_fd, Control};
use crate::nfqueue::{input_of, NfQueue, QUEUE_MAX_LEN};
use crate::output::Output;
use crate::telemetry_source::{load_replay, load_telemetry_key, Replay, SealedTelemetrySocket, TelemetrySocket};
use crate::Args;

/// How often the progress line is logged.
const REPORT_PERIOD_NS: u64 = 10_000_000_000;
/// Queued packets handled before the loop looks at its other sources again.
const BATCH: usize = 256;

/// The daemon's own counters (the datapath's and the core's are in `render_metrics`).
#[derive(Clone, Copy, Default)]
struct LoopStats {
    queued: u64,
    /// Of those, GSO packets (several TCP segments in one).
    queued_gso: u64,
    verdict_failures: u64,
}

/// What the progress line compares with the last one.
#[derive(Clone, Copy, Default)]
struct Snapshot {
    queued: u64,
    raw_send_failures: u64,
    telemetry_malformed: u64,
    telemetry_forged: u64,
    telemetry_replayed: u64,
    flows_refused_limit: u64,
    buffer_full_drops: u64,
    telemetry_expired: u64,
}

pub struct Daemon {
    datapath: Datapath,
    queue: NfQueue,
    out: Output,
    mss1: u16,
    telemetry: Option<TelemetrySocket>,
    sealed: Option<SealedTelemetrySocket>,
    replay: Option<Replay>,
    control: Control,
    stats: LoopStats,
    last: Snapshot,
    next_report_ns: u64,
}

pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now: what moves a sealed record's time onto the
/// daemon's clock.
fn realtime_minus_monotonic_ns() -> i128 {
    i128::from(clock_ns(libc::CLOCK_REALTIME)) - i128::from(monotonic_ns())
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec; both clocks used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn counter(datapath: &Datapath, name: &str) -> u64 {
    datapath.proxy().summary().counters.iter().find(|(n, _)| *n == name).map_or(0, |c| c.1)
}

impl Daemon {
    /// Everything that can fail for a reason the operator must fix, before the first packet.
    pub fn start(args: &Args, config: &DaemonConfig) -> Result<Daemon, String> {
        let replay_records = args.telemetry_replay.as_deref().map(load_replay).transpose().map_err(|e| e.to_string())?;
        let key = args.telemetry_key.as_deref().map(load_telemetry_key).transpose()?;
        let proxy = config.build(None).map_err(|e| e.to_string())?;
        let mss1 = milliproxy_config(&config.spec).mss1_bytes as u16;
        // The queue first: its descriptor is found as the lowest free one, before other threads.
        let queue = NfQueue::bind(args.queue)?;
        let out = Output::open(args.ue_gso)?;
        let telemetry = args.telemetry.as_deref().map(TelemetrySocket::bind).transpose()?;
        let sealed = args.telemetry_udp.map(SealedTelemetrySocket::bind).transpose()?;
        let control = Control::start(args.metrics)?;
        let now = monotonic_ns();
        let spec = &config.spec;
        let ue_nets: Vec<String> = args.ue_nets.iter().map(|n| format!("{}/{}", n.address, n.prefix_len)).collect();
        info!(
            "millinet-proxyd {}: NFQUEUE {} (GSO, fail-open), UE side {}, policy {}, MSS1 {} B, MSS2 {} B, max_flows {}, flow buffer {} B, \
             server ports {}, telemetry max age {} s; telemetry: {}{}; metrics http://{}/metrics",
            env!("CARGO_PKG_VERSION"),
            args.queue,
            ue_nets.join(" "),
            spec.policy,
            mss1,
            spec.mss2_bytes,
            spec.max_flows,
            spec.flow_buffer_bytes,
            if spec.server_ports.is_empty() { "all".to_string() } else { format!("{:?}", spec.server_ports) },
            spec.telemetry_max_age_s,
            match (&args.telemetry, args.telemetry_udp) {
                (None, None) => "no socket".to_string(),
                (unix, udp) => [unix.as_ref().map(|p| format!("socket {}", p.display())), udp.map(|a| format!("sealed over UDP at {a}"))]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", "),
            },
            match (&args.telemetry_replay, &replay_records) {
                (Some(p), Some(r)) => format!(", replay of {} ({} records)", p.display(), r.len()),
                _ => String::new(),
            },
            args.metrics
        );
        let datapath = Datapath::new(proxy, args.ue_nets.clone());
        Ok(Daemon {
            datapath: match key {
                Some(key) => datapath.with_telemetry_key(key),
                None => datapath,
            },
            queue,
            out,
            mss1,
            telemetry,
            sealed,
            replay: replay_records.map(|r| Replay::new(r, now)),
            control,
            stats: LoopStats::default(),
            last: Snapshot::default(),
            next_report_ns: now + REPORT_PERIOD_NS,
        })
    }

    /// Until SIGTERM or SIGINT; then the queue is unbound.
    pub fn run(mut self) -> Result<(), String> {
        let mut telemetry_buf = vec![0u8; 2048];
        let mut fds =
            vec![poll_fd(self.control.signals.as_raw_fd()), poll_fd(self.queue.fd()), poll_fd(self.control.metrics_wake.as_raw_fd())];
        // The telemetry sockets' places in `fds`, where there are any.
        let mut push = |fd: i32| {
            fds.push(poll_fd(fd));
            fds.len() - 1
        };
        let unix_at = self.telemetry.as_ref().map(|t| push(t.socket.as_raw_fd()));
        let sealed_at = self.sealed.as_ref().map(|t| push(t.socket.as_raw_fd()));
        loop {
            let now = monotonic_ns();
            self.on_time(now);
            let deadline =
                [self.datapath.next_deadline_ns(), self.replay.as_ref().and_then(Replay::next_deadline_ns), Some(self.next_report_ns)]
                    .into_iter()
                    .flatten()
                    .min()
                    .expect("the report is always due");
            fds.iter_mut().for_each(|f| f.revents = 0);
            let wait = deadline.saturating_sub(now);
            let timeout =
                libc::timespec { tv_sec: (wait / 1_000_000_000) as libc::time_t, tv_nsec: (wait % 1_000_000_000) as libc::c_long };
            // SAFETY: `fds` is a valid array of its length; no signal mask is changed.
            let n = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("poll: {e}"));
            }
            let ready = |i: usize| fds.get(i).is_some_and(|f| f.revents != 0);
            let ready_at = |i: Option<usize>| i.is_some_and(ready);
            if ready(0) {
                // Unbinding drops what the queue still holds: those packets are handled first
                // (as many as it holds at most, so that traffic that goes on cannot hold the
                // daemon back).
                for _ in 0..QUEUE_MAX_LEN as usize / BATCH + 1 {
                    if !self.on_queue()? {
                        break;
                    }
                }
                info!("signal received: unbinding NFQUEUE; packets now pass through the rule's --queue-bypass");
                self.report(monotonic_ns());
                return self.queue.unbind().map_err(|e| format!("cannot unbind the queue: {e}"));
            }
            if ready(1) {
                self.on_queue()?;
            }
            if ready(2) {
                let Daemon { control, datapath, out, stats, .. } = &mut self;
                control.answer_metrics(&mut || metrics_text(datapath, out, stats, monotonic_ns()));
            }
            if ready_at(unix_at) {
                self.on_telemetry(&mut telemetry_buf)?;
            }
            if ready_at(sealed_at) {
                self.on_sealed_telemetry(&mut telemetry_buf)?;
            }
        }
    }

    fn on_time(&mut self, now: u64) {
        let Daemon { datapath, out, replay, .. } = self;
        datapath.on_timeout(now, &mut |e| out.send(now, e));
        if let Some(replay) = replay {
            replay.due(now, &mut |record| datapath.on_telemetry(now, record, &mut |e| out.send(now, e)));
        }
        out.flush();
        if now >= self.next_report_ns {
            self.report(now);
            self.next_report_ns = now + REPORT_PERIOD_NS;
        }
    }

    /// Up to `BATCH` queued packets; true if more may wait.
    fn on_queue(&mut self) -> Result<bool, String> {
        for _ in 0..BATCH {
            let Some(msg) = self.queue.recv().map_err(|e| format!("NFQUEUE receive: {e}"))? else {
                self.out.flush();
                return Ok(false);
            };
            let now = monotonic_ns();
            self.stats.queued += 1;
            self.stats.queued_gso += msg.is_seg_offloaded() as u64;
            let mut accept = false;
            let Daemon { datapath, out, .. } = self;
            datapath.on_datagram(now, input_of(&msg, self.mss1), &mut |e| match e {
                Emitted::Original => accept = true,
                made => out.send(now, made),
            });
            if accept {
                // What was made before it leaves first.
                self.out.flush();
            }
            if self.queue.verdict(msg, accept).is_err() {
                // The kernel still holds the packet; fail-open does not cover it. Counted and
                // logged with the progress line.
                self.stats.verdict_failures += 1;
            }
        }
        self.out.flush();
        Ok(true)
    }

    fn on_telemetry(&mut self, buf: &mut [u8]) -> Result<(), String> {
        let Daemon { datapath, out, telemetry, .. } = self;
        let Some(socket) = telemetry else { return Ok(()) };
        let drained = socket.drain(buf, &mut |record| {
            let now = monotonic_ns();
            datapath.on_telemetry(now, record, &mut |e| out.send(now, e))
        });
        out.flush();
        drained.map_err(|e| format!("telemetry socket: {e}"))
    }

    fn on_sealed_telemetry(&mut self, buf: &mut [u8]) -> Result<(), String> {
        let Daemon { datapath, out, sealed, .. } = self;
        let Some(socket) = sealed else { return Ok(()) };
        let drained = socket.drain(buf, &mut |datagram| {
            let now = monotonic_ns();
            datapath.on_sealed_telemetry(now, realtime_minus_monotonic_ns(), datagram, &mut |e| out.send(now, e))
        });
        out.flush();
        drained.map_err(|e| format!("telemetry UDP socket: {e}"))
    }

    /// The progress line, and a warning for each limit hit since the last one.
    fn report(&mut self, now: u64) {
        let st = &self.datapath.stats;
        let d = &self.datapath;
        let snap = Snapshot {
            queued: self.stats.queued,
            raw_send_failures: self.out.stats.send_failures,
            telemetry_malformed: st.telemetry_malformed,
            telemetry_forged: st.telemetry_forged,
            telemetry_replayed: st.telemetry_replayed,
            flows_refused_limit: counter(d, "flows_refused_limit"),
            buffer_full_drops: counter(d, "buffer_full_drops"),
            telemetry_expired: counter(d, "telemetry_expired"),
        };
        let age = st.newest_telemetry_t_ns.map_or("none".to_string(), |t| format!("{:.1} s old", now.saturating_sub(t) as f64 / 1e9));
        info!(
            "flows {}; from server {} pkts {} B, from UE {} pkts {} B, made toward UE {} pkts {} B, toward server {} pkts; \
             unchanged {}; malformed {}, bad checksum {}, buffer-full drops {}, refused flows {}, send failures {}; telemetry {} ({})",
            d.proxy().flow_samples(now).len(),
            st.datagrams_from_server,
            st.bytes_from_server,
            st.datagrams_from_ue,
            st.bytes_from_ue,
            st.datagrams_emitted_toward_ue,
            st.bytes_emitted_toward_ue,
            st.datagrams_emitted_toward_server,
            st.datagrams_forwarded_unchanged,
            st.malformed,
            st.bad_checksum,
            snap.buffer_full_drops,
            snap.flows_refused_limit,
            snap.raw_send_failures,
            st.telemetry_received,
            age
        );
        let last = std::mem::replace(&mut self.last, snap);
        if snap.queued == 0 {
            warn!("no packet from NFQUEUE yet: is the iptables rule in place (docs/proxyd.md)?");
        }
        let limits = [
            (snap.flows_refused_limit - last.flows_refused_limit, "new flows passed through unproxied: proxy.max_flows reached"),
            (snap.buffer_full_drops - last.buffer_full_drops, "server segments dropped: proxy.flow_buffer_bytes or the total buffer full"),
            (snap.telemetry_malformed - last.telemetry_malformed, "telemetry datagrams malformed (docs/telemetry.md), ignored"),
            (
                snap.telemetry_forged - last.telemetry_forged,
                "sealed telemetry datagrams failed their HMAC (another key, or altered), ignored",
            ),
            (
                snap.telemetry_replayed - last.telemetry_replayed,
                "sealed telemetry datagrams replayed (sequence number already passed), ignored",
            ),
            (
                snap.telemetry_expired - last.telemetry_expired,
                "telemetry records older than proxy.telemetry_max_age_s: their flows pass through",
            ),
            (snap.raw_send_failures - last.raw_send_failures, "datagrams could not be sent (is proxy.mss2_bytes above the UE side's MTU?)"),
        ];
        for (n, what) in limits {
            if n > 0 {
                warn!("{n} {what}");
            }
        }
    }
}

/// The datapath's and core's metrics, then the loop's own.
fn metrics_text(datapath: &Datapath, out: &Output, s: &LoopStats, now: u64) -> String {
    let mut text = render_metrics(datapath, now);
    for (name, help, value) in [
        ("nfqueue_packets_total", "Packets received from NFQUEUE.", s.queued),
        ("nfqueue_gso_packets_total", "Of those, GSO packets carrying several TCP segments.", s.queued_gso),
        ("nfqueue_verdict_failures_total", "Verdicts the kernel refused.", s.verdict_failures),
        (
            "raw_send_failures_total",
            "Datagrams (or GSO packets) made here that the kernel would not send (e.g. larger than the route's MTU).",
            out.stats.send_failures,
        ),
        ("ue_gso_packets_total", "GSO packets sent toward UEs (--ue-gso).", out.stats.gso_packets),
        ("ue_gso_segments_total", "TCP segments those GSO packets carried.", out.stats.gso_segments),
    ] {
        push_counter(&mut text, name, help, value);
    }
    text
}
