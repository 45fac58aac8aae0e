//! One emulation from start to end: load the scenario, plan the testbed, wire it, run the
//! link and the endpoints on one clock, tear down, and gather what they measured.

use std::path::{Path, PathBuf};

use millinet_bpfcc::Registration;
use millinet_proxyd::{DaemonConfig, Datapath, Ipv4Network, SplitCounters, SplitRelay, SplitSockets, Upstream};
use millinet_ran::{CellId, UeId, UeStats};
use millinet_scenario::translate::radio::{build_ran, measured_cells};
use millinet_scenario::translate::{link_params, LinkRate};
use millinet_transport::link::QueueStats;

use crate::capture::Capture;
use crate::clock::{make_realtime, RunClock};
use crate::endpoint::{download, FlowReport, Server};
use crate::error::EmuError;
use crate::hop::Hop;
use crate::iperf::Iperf3Server;
use crate::link::{self, Link, LinkReport, ProxyStage, Radio, SplitStage};
use crate::mptcp::Transport;
use crate::netns::Namespaces;
use crate::plan::Plan;
use crate::telemetry::TelemetryPublisher;
use crate::testbed::{self, in_namespace};

#[derive(Clone, Debug, Default)]
pub struct EmulateOptions {
    pub seed: Option<u64>,
    pub overrides: Vec<String>,
    /// Where `<node>.pcap` files go, for each node of `pcap_nodes` (the flow's endpoints).
    pub pcap_dir: Option<PathBuf>,
    pub pcap_nodes: Vec<String>,
    pub client: Client,
    /// A Unix datagram socket to publish the UE's telemetry to (docs/telemetry.md), every
    /// `proxy.t_info_s`, delivered `proxy.d_info_s` after sampling.
    pub telemetry_socket: Option<PathBuf>,
}

/// Which endpoints carry the flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    /// The project's server and client, with TCP_INFO every sample step.
    #[default]
    Own,
    /// iperf3 at both ends (crate::iperf).
    Iperf3,
}

/// What one emulation measured, and the summary.json made of it.
pub struct Emulation {
    pub summary: serde_json::Value,
    pub flow: FlowReport,
    pub link: LinkReport,
    pub sample_step_ns: u64,
    pub goodput_bin_ns: u64,
}

/// Queue names and counters of the path's wired hops, in the simulator's order.
pub(crate) struct QueueSummary {
    pub name: String,
    pub stats: QueueStats,
}

/// Runs a scenario file in the emulator. `progress(elapsed_s, duration_s)` is called every
/// 100 ms; when it returns false the run stops early (Ctrl-C) with an error.
pub fn emulate_file(path: &Path, opts: &EmulateOptions, progress: &mut dyn FnMut(f64, f64) -> bool) -> Result<Emulation, EmuError> {
    let loaded = millinet_scenario::load(path, &opts.overrides, opts.seed)?;
    let s = &loaded.scenario;
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    let mut plan = Plan::new(s, &available)?;
    let roles = capture_roles(s, &opts.pcap_nodes)?;
    if plan.transport == Transport::Mptcp && opts.client == Client::Iperf3 {
        return Err(EmuError::unsupported(
            "client",
            "iperf3 runs TCP here (this Debian's iperf3 has no --mptcp); the own client runs MPTCP",
        ));
    }
    let radio = match plan.radio {
        true => {
            let ues: Vec<usize> = plan.paths.iter().map(|p| p.ue.expect("a radio path has its UE")).collect();
            // Its serving cell, the first it measures (the plan refused UEs that measure more).
            let cell = |k: usize| CellId(measured_cells(s, &s.ues[k])[0] as u32);
            Some(Radio {
                ran: build_ran(s, &loaded.base_dir)?.0,
                ues: ues.iter().map(|&k| UeId(k as u32)).collect(),
                cells: ues.iter().map(|&k| cell(k)).collect(),
            })
        }
        false => None,
    };
    let mut down = Vec::new();
    let mut up = Vec::new();
    for h in &plan.hops {
        let spec = &s.links[h.link];
        // Hops are numbered by the link process alone: `to_node` means nothing here.
        let rate = |a_to_b: bool| LinkRate::new(h.link, spec, a_to_b, s.seed, &loaded.base_dir);
        down.push(Hop::new(link_params(spec, format!("{}->{}", h.from, h.to), 0), rate(h.from == spec.a)?));
        up.push(Hop::new(link_params(spec, format!("{}->{}", h.to, h.from), 0), rate(h.to == spec.a)?));
    }
    check_root()?;
    // The project's BPF congestion control, registered under a name of this run's own until
    // the registration is dropped (or this process dies: the loader then unregisters it).
    let bpf = match plan.bpf_cc {
        Some(cc) => {
            let registration = Registration::new(&millinet_bpfcc::default_dir()).map_err(|e| {
                EmuError::unsupported(
                    "flows.0.cc",
                    format!("`{}` is the project's BPF congestion control, not available here: {e}", s.flows[0].cc),
                )
            })?;
            plan.flow.cc = registration.name(cc).to_string();
            Some(registration)
        }
        None => None,
    };
    let ns = Namespaces::create(testbed::roles(&plan))?;
    let devices = testbed::wire(&ns, &plan)?;
    // The split proxy listens before the UE can connect.
    let relay = match &plan.split {
        Some(split) => {
            let sockets = SplitSockets { cc: split.cc.clone(), max_segment_bytes: split.max_segment_bytes, transparent: false };
            let at = plan.flow.connect_to;
            Some(in_namespace(ns.name("proxy"), || {
                SplitRelay::bind(at, &sockets).map_err(|e| EmuError::System(format!("split proxy: cannot listen on {at}: {e}")))
            })?)
        }
        None => None,
    };
    // The server side: the own listening socket, or the iperf3 server process (kept until the
    // run ends, then stopped).
    let (server, iperf3_server) = match opts.client {
        Client::Own => (Some(in_namespace(ns.name("server"), || Server::bind(&plan.flow))?), None),
        Client::Iperf3 => (None, Some(Iperf3Server::start(ns.name("server"), &plan.flow)?)),
    };
    let dir = opts.pcap_dir.clone().unwrap_or_default();
    let captures: Vec<Capture> = roles
        .iter()
        .map(|(node, role)| {
            // The UE of several paths is captured on all its devices.
            let device = if *role == "ue" && plan.paths.len() > 1 { "any" } else { "eth0" };
            Capture::start(ns.name(role), device, &dir.join(format!("{node}.pcap")))
        })
        .collect::<Result<_, _>>()?;
    let paths =
        plan.paths.iter().zip(devices.ue_sides).map(|(p, device)| link::Path { hops: p.hops.clone(), ue_ip: p.ue_ip, device }).collect();
    let mut link = Link::new(devices.server_side, paths, down, up, radio, plan.flow.sample_step_ns);
    if let (Some(device), Some(down_stage)) = (devices.proxy_side, plan.proxy_stage) {
        link.split = Some(SplitStage { device, down_stage });
    }
    let end_ns = plan.flow.end_ns;
    let duration_s = end_ns as f64 / 1e9;

    let clock = RunClock::start();
    if opts.telemetry_socket.is_some() && link.radio().is_none() {
        return Err(EmuError::unsupported("telemetry", "a wired path has no RAN to report on"));
    }
    if let (Some(down_stage), None) = (plan.proxy_stage, &plan.split) {
        // The clamp toward the server is the server side's own MSS, so the server sends the
        // scenario's segments (Linux advertises MTU − 40 and fits its options inside).
        let mss1 = plan.mtu_bytes - 40;
        let middlebox =
            DaemonConfig::from_spec(s.proxy.clone()).build(Some(mss1)).map_err(|e| EmuError::unsupported("proxy", e.to_string()))?;
        let ue_side = Ipv4Network { address: crate::plan::UE_IP, prefix_len: 32 };
        link.proxy = Some(ProxyStage {
            datapath: Datapath::new(middlebox, vec![ue_side]),
            down_stage,
            monotonic_start_ns: clock.monotonic_start_ns,
        });
    }
    if link.radio().is_some() && (opts.telemetry_socket.is_some() || link.proxy.is_some()) {
        let (period, delay) = (seconds_ns(s.proxy.t_info_s), seconds_ns(s.proxy.d_info_s));
        let to = opts.telemetry_socket.clone();
        link.telemetry = Some(TelemetryPublisher::new(to, crate::plan::UE_IP, period, delay, clock.monotonic_start_ns)?);
    }
    let now = || clock.now_ns();
    let (served, received, linked, realtime, relayed) = std::thread::scope(|scope| {
        let link_thread = scope.spawn(|| {
            let realtime = make_realtime();
            let result = link.run(&now, end_ns);
            if result.is_err() {
                clock.stop();
            }
            (result, realtime)
        });
        let server_ns = ns.name("server");
        let server_thread = scope.spawn(|| match &server {
            Some(server) => {
                crate::netns::enter(server_ns)?;
                server.serve(&plan.flow, &now).map(Some)
            }
            None => Ok(None),
        });
        let proxy_ns = relay.as_ref().map(|_| ns.name("proxy"));
        let relay_thread = scope.spawn(move || -> Result<Option<u64>, EmuError> {
            match (&relay, proxy_ns) {
                (Some(relay), Some(proxy_ns)) => {
                    crate::netns::enter(proxy_ns)?;
                    relay
                        .serve(Upstream::Fixed(plan.flow.server), usize::MAX, &|_| true, &|| now() < end_ns)
                        .map_err(|e| EmuError::System(format!("split proxy: {e}")))?;
                    Ok(Some(SplitCounters::get(&relay.counters().bytes_to_ue)))
                }
                _ => Ok(None),
            }
        });
        let ue_ns = ns.name("ue");
        let ue_thread = scope.spawn(|| match opts.client {
            Client::Own => {
                crate::netns::enter(ue_ns)?;
                download(&plan.flow, &now)
            }
            Client::Iperf3 => crate::iperf::download(ue_ns, &plan.flow, &now),
        });
        while !(link_thread.is_finished() && server_thread.is_finished() && ue_thread.is_finished() && relay_thread.is_finished()) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if !clock.stopped() && !progress((clock.now_ns() as f64 / 1e9).min(duration_s), duration_s) {
                clock.stop();
            }
        }
        let (linked, realtime) = link_thread.join().expect("the link does not panic");
        let relayed = relay_thread.join().expect("the split proxy does not panic");
        (
            server_thread.join().expect("the server does not panic"),
            ue_thread.join().expect("the UE does not panic"),
            linked,
            realtime,
            relayed,
        )
    });
    let interrupted = clock.stopped();
    let captured: Result<Vec<()>, EmuError> = captures.into_iter().map(Capture::stop).collect();
    drop(iperf3_server);
    drop(ns);
    drop(bpf);
    captured?;
    linked?;
    let relayed_bytes = relayed?;
    if interrupted {
        return Err(EmuError::System("the emulation was interrupted".into()));
    }
    let mut flow = received?;
    if let Some((samples, last)) = served? {
        flow.samples = samples;
        flow.last_info = last.first().map(|(_, info)| *info).unwrap_or_default();
        if plan.transport == Transport::Mptcp {
            flow.last_subflows = last;
        }
    }
    if let Some(t) = &link.telemetry {
        (link.report.telemetry_sent, link.report.telemetry_unsent) = (t.sent, t.unsent);
    }
    let queues = queue_summaries(&link);
    let ue_stats: Vec<UeStats> = link.radio().map(|r| r.ues.iter().map(|&ue| r.ran.ue_stats(ue)).collect()).unwrap_or_default();
    let proxy = match (&link.proxy, &plan.split, relayed_bytes) {
        (Some(p), ..) => Some(crate::summary::proxy(&s.proxy.node, &p.datapath)),
        (None, Some(split), Some(bytes)) => Some(crate::summary::split_proxy(&s.proxy.node, split, bytes)),
        _ => None,
    };
    let mut summary = crate::summary::summary(&loaded.name, s, &plan, opts.client, &flow, &link.report, &queues, &ue_stats, realtime);
    summary["proxy"] = proxy.into();
    Ok(Emulation {
        summary,
        flow,
        link: std::mem::take(&mut link.report),
        sample_step_ns: plan.flow.sample_step_ns,
        goodput_bin_ns: plan.flow.goodput_bin_ns,
    })
}

fn seconds_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

fn queue_summaries(link: &Link) -> Vec<QueueSummary> {
    let (down, up) = link.hops();
    let mut queues = Vec::new();
    for (hop, back) in down.iter().zip(up) {
        queues.push(QueueSummary { name: hop.link.name.clone(), stats: hop.link.stats.clone() });
        queues.push(QueueSummary { name: back.link.name.clone(), stats: back.link.stats.clone() });
    }
    queues
}

/// The endpoint namespace of each node to capture at: the flow's source is `server`, its
/// destination `ue`.
fn capture_roles(s: &millinet_scenario::Scenario, nodes: &[String]) -> Result<Vec<(String, &'static str)>, EmuError> {
    let flow = &s.flows[0];
    nodes
        .iter()
        .map(|node| match node {
            n if *n == flow.src => Ok((n.clone(), "server")),
            n if *n == flow.dst => Ok((n.clone(), "ue")),
            n => Err(EmuError::unsupported(
                "pcap",
                format!("it captures at the flow's endpoints, `{}` and `{}`, not at `{n}`", flow.src, flow.dst),
            )),
        })
        .collect()
}

/// Namespaces, veths and TUN devices need root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
fn check_root() -> Result<(), EmuError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::System("the emulator needs root: it makes network namespaces, veth pairs and TUN devices".into()));
    }
    Ok(())
}
