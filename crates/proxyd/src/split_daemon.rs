//! `proxy.kind = "split"`: the split-TCP baseline on a router, transparent behind an iptables
//! TPROXY rule (docs/proxyd.md, "The split-TCP baseline"). The relay runs on its own thread;
//! this loop waits for a signal or a metrics request. A split proxy holds its flows' state in
//! its own sockets, so it cannot fail open: SIGTERM closes the relayed connections, and while
//! no daemon listens the rule's new connections find no socket.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use log::info;
use millinet_proxyd::{render_split_metrics, DaemonConfig, Ipv4Network, SplitCounters, SplitRelay, SplitSockets, Upstream};

use crate::control::{poll_fd, Control};
use crate::Args;

/// How often the progress line is logged, ms.
const REPORT_PERIOD_MS: i32 = 10_000;
/// Linux subtracts the timestamp option from the TCP_MAXSEG it is given.
const TIMESTAMP_OPTION_BYTES: u32 = 12;

pub struct SplitDaemon {
    relay: SplitRelay,
    ue_nets: Vec<Ipv4Network>,
    max_flows: usize,
    control: Control,
}

impl SplitDaemon {
    pub fn start(args: &Args, config: &DaemonConfig) -> Result<SplitDaemon, String> {
        let spec = &config.spec;
        // The kernel's name of the scenario's NewReno.
        let cc = if spec.split_cc == "newreno" { "reno".to_string() } else { spec.split_cc.clone() };
        let sockets = SplitSockets { cc, max_segment_bytes: Some(spec.split_mss_bytes + TIMESTAMP_OPTION_BYTES), transparent: true };
        let at = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, args.split_port);
        let relay = SplitRelay::bind(at, &sockets).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::PermissionDenied => " (IP_TRANSPARENT needs root: CAP_NET_ADMIN)".to_string(),
                // TCP_CONGESTION with a name the kernel does not have.
                std::io::ErrorKind::NotFound => {
                    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
                    format!(" (proxy.split_cc = \"{}\"; this kernel has: {})", spec.split_cc, available.trim())
                }
                _ => String::new(),
            };
            format!("--split-port {}: cannot listen: {e}{hint}", args.split_port)
        })?;
        let control = Control::start(args.metrics)?;
        let ue_nets: Vec<String> = args.ue_nets.iter().map(|n| format!("{}/{}", n.address, n.prefix_len)).collect();
        info!(
            "millinet-proxyd {}: split-TCP relay on TPROXY port {}, UE side {}, toward the UE {} with MSS {} B, max_flows {}; \
             metrics http://{}/metrics",
            env!("CARGO_PKG_VERSION"),
            args.split_port,
            ue_nets.join(" "),
            sockets.cc,
            spec.split_mss_bytes,
            spec.max_flows,
            args.metrics
        );
        Ok(SplitDaemon { relay, ue_nets: args.ue_nets.clone(), max_flows: spec.max_flows as usize, control })
    }

    /// Until SIGTERM or SIGINT; then every relayed connection is closed.
    pub fn run(mut self) -> Result<(), String> {
        let running = AtomicBool::new(true);
        let SplitDaemon { relay, ue_nets, max_flows, control } = &mut self;
        let relay = &*relay;
        std::thread::scope(|scope| {
            let relay_thread = scope.spawn(|| {
                let admit = |ip: Ipv4Addr| ue_nets.iter().any(|n| n.contains(ip));
                let served = relay.serve(Upstream::OriginalDestination, *max_flows, &admit, &|| running.load(Ordering::Relaxed));
                // A broken relay ends the daemon too.
                running.store(false, Ordering::Relaxed);
                served
            });
            let mut fds = [poll_fd(control.signals.as_raw_fd()), poll_fd(control.metrics_wake.as_raw_fd())];
            let mut last_report = std::time::Instant::now();
            while running.load(Ordering::Relaxed) {
                fds.iter_mut().for_each(|f| f.revents = 0);
                // SAFETY: `fds` is a valid array of its length.
                let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
                if n > 0 && fds[0].revents != 0 {
                    info!("signal received: closing the relayed connections");
                    running.store(false, Ordering::Relaxed);
                }
                if n > 0 && fds[1].revents != 0 {
                    control.answer_metrics(&mut || render_split_metrics(relay.counters()));
                }
                if last_report.elapsed().as_millis() >= REPORT_PERIOD_MS as u128 {
                    report(relay.counters());
                    last_report = std::time::Instant::now();
                }
            }
            report(relay.counters());
            relay_thread.join().expect("the relay does not panic").map_err(|e| format!("split relay: {e}"))
        })
    }
}

fn report(c: &SplitCounters) {
    let get = SplitCounters::get;
    info!(
        "flows {} open, {} created; {} B toward the UE, {} B toward the server; refused: {} at max_flows, {} not from the UE side; \
         {} server connections failed, {} flows reset",
        get(&c.flows_active),
        get(&c.flows_accepted),
        get(&c.bytes_to_ue),
        get(&c.bytes_to_server),
        get(&c.flows_refused_limit),
        get(&c.flows_refused_not_ue),
        get(&c.upstream_connect_failures),
        get(&c.flows_reset)
    );
}
