//! One emulation from start to end: load the scenario, build its network and plan its hosts,
//! wire the namespaces, run the link and the endpoints on one clock, tear down, and gather
//! what they measured.

use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};

use millinet_bpfcc::Registration;
use millinet_network::output::Table;
use millinet_network::series::{Goodput, Has, Series};
use millinet_network::Network;
use millinet_proxyd::{DaemonConfig, Datapath, Ipv4Network, SplitCounters, SplitRelay, SplitSockets, Upstream};
use millinet_transport::app::AppSpec;

use crate::capture::Capture;
use crate::clock::{make_realtime, RunClock};
use crate::connections::Connections;
use crate::endpoint::{download, Carrier, Delivered, FlowReport, Served, Server};
use crate::error::EmuError;
use crate::iperf::Iperf3Server;
use crate::link::{Classifier, Host, Link, LinkReport, ProxyStage};
use crate::mptcp::Transport;
use crate::netns::Namespaces;
use crate::plan::Plan;
use crate::programs::{exit_code, Credentials, Program, Programs, EXIT_DURATION_REACHED, LISTEN_TIMEOUT};
use crate::telemetry::TelemetryPublisher;
use crate::testbed::{self, in_namespace};

#[derive(Clone, Debug, Default)]
pub struct EmulateOptions {
    pub seed: Option<u64>,
    pub overrides: Vec<String>,
    /// Where `<node>.pcap` files go, for each node of `pcap_nodes` (hosts of the run).
    pub pcap_dir: Option<PathBuf>,
    pub pcap_nodes: Vec<String>,
    pub client: Client,
    /// A Unix datagram socket to publish the UEs' telemetry to (docs/telemetry.md), every
    /// `proxy.t_info_s`, delivered `proxy.d_info_s` after sampling.
    pub telemetry_socket: Option<PathBuf>,
}

/// Which endpoints carry the flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Client {
    /// The project's server and client, with TCP_INFO every sample step.
    #[default]
    Own,
    /// iperf3 at both ends (crate::iperf).
    Iperf3,
    /// The user's own programs instead of the scenario's flows (crate::programs).
    Programs(Programs),
}

/// What one emulation measured: summary.json, the time series in the simulator's tables, and
/// each flow's own report.
pub struct Emulation {
    pub summary: serde_json::Value,
    /// With users' programs: the UE command's exit status (EXIT_DURATION_REACHED when the run
    /// reached its duration first).
    pub exit_status: Option<i32>,
    pub tables: Vec<Table>,
    pub flows: Vec<FlowReport>,
    pub link: LinkReport,
}

/// Runs a scenario file in the emulator. `progress(elapsed_s, duration_s)` is called every
/// 100 ms; when it returns false the run stops early (Ctrl-C) with an error.
pub fn emulate_file(path: &Path, opts: &EmulateOptions, progress: &mut dyn FnMut(f64, f64) -> bool) -> Result<Emulation, EmuError> {
    let loaded = millinet_scenario::load(path, &opts.overrides, opts.seed)?;
    let s = &loaded.scenario;
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    let mut network = Network::new(s, &loaded.base_dir)?;
    let mut plan = Plan::new(s, &network, &available)?;
    let captured = capture_hosts(&plan, &opts.pcap_nodes)?;
    let iperf3_runs = |f: &crate::endpoint::FlowPlan| {
        f.carrier == Carrier::Stream(Transport::Tcp) && matches!(f.app, AppSpec::Bulk | AppSpec::File { .. })
    };
    if opts.client == Client::Iperf3 && (plan.flows.len() != 1 || !iperf3_runs(&plan.flows[0])) {
        return Err(EmuError::unsupported(
            "client",
            "iperf3 runs one TCP flow, bulk or file, here (this Debian's iperf3 has no --mptcp); the own client runs the rest",
        ));
    }
    if opts.telemetry_socket.is_some() && !network.has_cells() {
        return Err(EmuError::unsupported("telemetry", "a wired path has no RAN to report on"));
    }
    let site = match &plan.milliproxy {
        Some((node, _)) => Some(network.add_site(node)?),
        None => None,
    };
    check_root()?;
    // The project's BPF congestion controls, registered under names of this run's own until
    // the registration is dropped (or this process dies: the loader then unregisters them).
    let bpf = match plan.bpf_cc.iter().position(Option::is_some) {
        Some(i) => {
            let registration = Registration::new(&millinet_bpfcc::default_dir()).map_err(|e| {
                EmuError::unsupported(
                    format!("flows.{i}.cc"),
                    format!("`{}` is the project's BPF congestion control, not available here: {e}", s.flows[i].cc),
                )
            })?;
            for (flow, cc) in plan.flows.iter_mut().zip(&plan.bpf_cc) {
                if let Some(cc) = cc {
                    flow.cc = registration.name(*cc).to_string();
                    if cc.echoes_every_mark() {
                        flow.ue_cc = Some(flow.cc.clone());
                    }
                }
            }
            Some(registration)
        }
        None => None,
    };
    let ns = Namespaces::create(&testbed::roles(&plan))?;
    let devices = testbed::wire(&ns, &plan)?;
    // The servers: the own listening sockets, or iperf3 server processes (kept until the run
    // ends, then stopped).
    let (servers, iperf3_servers) = match opts.client {
        Client::Own => {
            // A UDP flow's source binds when it starts sending.
            let bind = |i: usize| match plan.flows[i].carrier {
                Carrier::Datagrams(_) => Ok(None),
                _ => in_namespace(ns.name(plan.flow_hosts[i].0), || Server::bind(&plan.flows[i]).map(Some)),
            };
            ((0..plan.flows.len()).map(bind).collect::<Result<Vec<_>, _>>()?, Vec::new())
        }
        Client::Iperf3 => {
            let start = |i: usize| Iperf3Server::start(ns.name(plan.flow_hosts[i].0), &plan.flows[i]);
            (Vec::new(), (0..plan.flows.len()).map(start).collect::<Result<Vec<_>, _>>()?)
        }
        Client::Programs(_) => (Vec::new(), Vec::new()),
    };
    // Users' programs: flow 0's ends are the server and the UE; the server command listens
    // before the UE's starts.
    let programs = match &opts.client {
        Client::Programs(p) => Some(p),
        _ => None,
    };
    let (server_host, ue_host) = plan.flow_hosts[0];
    let user = Credentials::of_sudo_user();
    let server_address = plan.hosts[server_host].addresses[0];
    let mut environment = [
        ("MILLINET_SERVER", server_address.to_string()),
        ("MILLINET_UE", plan.flows[0].bind.to_string()),
        ("MILLINET_SCENARIO", loaded.name.clone()),
    ];
    let server_program = match programs.and_then(|p| p.server.as_ref()) {
        Some(line) => {
            let mut program = Program::start_shell("server", ns.name(server_host), line, &environment, user.as_ref())?;
            program.wait_listening(LISTEN_TIMEOUT)?;
            Some(program)
        }
        None => None,
    };
    // The split proxy listens before the UEs can connect: a relay per flow it takes, or, for
    // users' programs on flow 0's path, one per port the server command listens on, the UE's
    // command being told the proxy's address as the server's.
    let relay_points: Vec<(SocketAddrV4, SocketAddrV4, Option<u32>)> = match (&plan.split, programs) {
        (Some(split), None) => split.relays.iter().map(|r| (r.listen, plan.flows[r.flow].server, r.max_segment_bytes)).collect(),
        (Some(split), Some(_)) => match (split.relays.iter().find(|r| r.flow == 0), &server_program) {
            (Some(r), Some(program)) => {
                environment[0].1 = r.listen.ip().to_string();
                let at = |address, port| SocketAddrV4::new(address, port);
                program
                    .listening_tcp_ports()
                    .into_iter()
                    .map(|port| (at(*r.listen.ip(), port), at(server_address, port), r.max_segment_bytes))
                    .collect()
            }
            _ => Vec::new(),
        },
        (None, _) => Vec::new(),
    };
    let relays: Vec<(SplitRelay, SocketAddrV4)> = match &plan.split {
        Some(split) => in_namespace(ns.name(split.host), || {
            (relay_points.iter())
                .map(|&(listen, server, max_segment_bytes)| {
                    let sockets = SplitSockets { cc: split.cc.clone(), max_segment_bytes, transparent: false };
                    let relay = SplitRelay::bind(listen, &sockets)
                        .map_err(|e| EmuError::System(format!("split proxy: cannot listen on {listen}: {e}")))?;
                    Ok((relay, server))
                })
                .collect::<Result<_, _>>()
        })?,
        None => Vec::new(),
    };
    let dir = opts.pcap_dir.clone().unwrap_or_default();
    let captures: Vec<Capture> = captured
        .iter()
        .map(|&h| Capture::start(ns.name(h), testbed::DEVICE, &dir.join(format!("{}.pcap", plan.hosts[h].name))))
        .collect::<Result<_, _>>()?;
    let hosts =
        devices.into_iter().zip(&plan.hosts).map(|(device, h)| Host { node: h.node, device, threaded: h.sender.is_some() }).collect();
    let first = &plan.flows[0];
    let (end_ns, sample_step_ns, goodput_bin_ns) = (first.end_ns, first.sample_step_ns, first.goodput_bin_ns);
    let classifier = match programs {
        Some(_) => Classifier::Connections(Connections::new(goodput_bin_ns)),
        None => Classifier::ServerPorts(plan.flows.len()),
    };
    let mut link = Link::new(network, hosts, sample_step_ns, classifier);
    let duration_s = end_ns as f64 / 1e9;

    let clock = RunClock::start();
    // The channel's time 0 is the UE command's start.
    let mut ue_program = match programs {
        Some(p) => Some(Program::start("UE", ns.name(ue_host), &p.ue, &environment, user.as_ref())?),
        None => None,
    };
    let mut command_status = None;
    let mut program_error = None;
    // The own or iperf3 endpoints, one pair per flow (none with users' programs).
    let endpoints = if programs.is_some() { 0 } else { plan.flows.len() };
    if let (Some(site), Some((_, mss1))) = (site, &plan.milliproxy) {
        let middlebox =
            DaemonConfig::from_spec(s.proxy.clone()).build(Some(*mss1)).map_err(|e| EmuError::unsupported("proxy", e.to_string()))?;
        // The UE side: every address a flow ends at.
        let ue_side: Vec<Ipv4Network> = plan
            .flow_hosts
            .iter()
            .flat_map(|&(_, client)| plan.hosts[client].addresses.clone())
            .map(|address| Ipv4Network { address, prefix_len: 32 })
            .collect();
        link.set_proxy(ProxyStage { datapath: Datapath::new(middlebox, ue_side), site, monotonic_start_ns: clock.monotonic_start_ns });
    }
    if link.network.has_cells() && (opts.telemetry_socket.is_some() || link.proxy().is_some()) {
        let (period, delay) = (seconds_ns(s.proxy.t_info_s), seconds_ns(s.proxy.d_info_s));
        link.set_telemetry(TelemetryPublisher::new(opts.telemetry_socket.clone(), period, delay, clock.monotonic_start_ns)?);
    }
    let now = || clock.now_ns();
    let delivered: Vec<Delivered> = plan.flows.iter().map(|_| Delivered::default()).collect();
    let (served, received, linked, realtime, relayed) = std::thread::scope(|scope| {
        let link_thread = scope.spawn(|| {
            let realtime = make_realtime();
            let result = link.run(&now, end_ns);
            if result.is_err() {
                clock.stop();
            }
            (result, realtime)
        });
        let server_threads: Vec<_> = (servers.iter().enumerate())
            .map(|(i, server)| {
                let (namespace, flow, delivered) = (ns.name(plan.flow_hosts[i].0), &plan.flows[i], &delivered[i]);
                scope.spawn(move || {
                    crate::netns::enter(namespace)?;
                    match (server, flow.carrier) {
                        (Some(server), _) => server.serve(flow, &now, delivered).map(Some),
                        (None, Carrier::Datagrams(rate)) => {
                            crate::datagrams::send(flow, rate, &now).map(|sent| Some(Served::datagrams(sent)))
                        }
                        (None, _) => Ok(None),
                    }
                })
            })
            .collect();
        let relay_threads: Vec<_> = (relays.iter())
            .map(|(relay, server)| {
                let (namespace, server) = (ns.name(plan.split.as_ref().expect("relays come from it").host), *server);
                scope.spawn(move || -> Result<u64, EmuError> {
                    crate::netns::enter(namespace)?;
                    relay
                        .serve(Upstream::Fixed(server), usize::MAX, &|_| true, &|| now() < end_ns)
                        .map_err(|e| EmuError::System(format!("split proxy: {e}")))?;
                    Ok(SplitCounters::get(&relay.counters().bytes_to_ue))
                })
            })
            .collect();
        let client_threads: Vec<_> = (0..endpoints)
            .map(|i| {
                let (namespace, flow, delivered) = (ns.name(plan.flow_hosts[i].1), &plan.flows[i], &delivered[i]);
                scope.spawn(move || match &opts.client {
                    Client::Programs(_) => unreachable!("no endpoints run beside users' programs"),
                    Client::Own => {
                        crate::netns::enter(namespace)?;
                        match flow.carrier {
                            Carrier::Datagrams(_) => crate::datagrams::receive(flow, &now),
                            _ => download(flow, &now, delivered),
                        }
                    }
                    Client::Iperf3 => crate::iperf::download(namespace, flow, &now),
                })
            })
            .collect();
        let all_finished = || {
            let endpoints = server_threads.iter().all(|t| t.is_finished()) && client_threads.iter().all(|t| t.is_finished());
            endpoints && link_thread.is_finished() && relay_threads.iter().all(|t| t.is_finished())
        };
        while !all_finished() {
            // A user's command is watched closely: its exit ends the run.
            std::thread::sleep(std::time::Duration::from_millis(if ue_program.is_some() { 10 } else { 100 }));
            if !clock.stopped() && !progress((clock.now_ns() as f64 / 1e9).min(duration_s), duration_s) {
                clock.stop();
            }
            if let (Some(program), None) = (&mut ue_program, command_status) {
                match program.exited() {
                    Ok(status) => command_status = status,
                    Err(e) => {
                        program_error.get_or_insert(e);
                        clock.stop();
                    }
                }
                if command_status.is_some() {
                    clock.end();
                }
            }
        }
        let (linked, realtime) = link_thread.join().expect("the link does not panic");
        let relayed: Result<u64, EmuError> = relay_threads.into_iter().map(|t| t.join().expect("the split proxy does not panic")).sum();
        let served: Vec<_> = server_threads.into_iter().map(|t| t.join().expect("a server does not panic")).collect();
        let received: Vec<_> = client_threads.into_iter().map(|t| t.join().expect("a UE does not panic")).collect();
        (served, received, linked, realtime, relayed)
    });
    let interrupted = clock.stopped();
    // The programs end with the run; the UE command's status is the run's, or timeout(1)'s
    // when the run reached its duration first and ended it.
    let exit_status = match ue_program {
        Some(mut program) => Some(match program.exited()? {
            Some(status) => exit_code(status),
            None => {
                program.stop()?;
                EXIT_DURATION_REACHED
            }
        }),
        None => None,
    };
    if let Some(program) = server_program {
        program.stop()?;
    }
    if let Some(e) = program_error {
        return Err(e);
    }
    let measured_ns = clock.ended_at_ns().unwrap_or(end_ns).min(end_ns);
    let captured: Result<Vec<()>, EmuError> = captures.into_iter().map(Capture::stop).collect();
    drop(iperf3_servers);
    drop(ns);
    drop(bpf);
    captured?;
    linked?;
    let relayed_bytes = relayed?;
    if interrupted {
        return Err(EmuError::System("the emulation was interrupted".into()));
    }
    let mut flows = received.into_iter().collect::<Result<Vec<FlowReport>, EmuError>>()?;
    for (i, served) in served.into_iter().enumerate() {
        if let Some(served) = served? {
            let flow = &mut flows[i];
            flow.samples = served.samples;
            flow.downloads = served.downloads;
            flow.datagrams_sent = served.datagrams_sent;
            // The counter is the namespace's: a flow's own only where its server sends no other.
            let server_host = plan.flow_hosts[i].0;
            if plan.flow_hosts.iter().filter(|(host, _)| *host == server_host).count() == 1 {
                flow.tail_loss_probes = served.namespace_loss_probes;
            }
            flow.last_info = served.last.first().map(|(_, info)| *info).unwrap_or_default();
            if plan.flows[i].is_mptcp() {
                flow.last_subflows = served.last;
            }
        }
    }
    let proxy = match (link.proxy(), &plan.split) {
        (Some(p), _) => Some(crate::summary::proxy(&s.proxy.node, &p.datapath)),
        (None, Some(split)) => Some(crate::summary::split_proxy(&s.proxy.node, split, relayed_bytes)),
        _ => None,
    };
    let (mut network, report, series) = link.finish();
    let has = Has {
        ues: network.ues() > 0,
        proxy: !s.proxy.node.is_empty(),
        mptcp: plan.flows.iter().any(|f| f.is_mptcp()),
        interference: network.has_interference(),
    };
    let (summary_flows, goodput_bins): (_, Vec<&[u64]>) = match programs {
        Some(_) => {
            let goodput = report.connections.iter().map(|c| c.delivered_to_ue_per_bin.as_slice());
            (crate::summary::connection_flows(s, &report.connections, &network, measured_ns), goodput.collect())
        }
        None => (
            crate::summary::scenario_flows(s, &plan, &opts.client, &flows, &network),
            flows.iter().map(|f| f.received_per_bin.as_slice()).collect(),
        ),
    };
    let tables = tables(&network, series, &flows, &goodput_bins, has, goodput_bin_ns);
    let mut summary = crate::summary::summary(&loaded.name, s, &plan, summary_flows, &mut network, &report, realtime);
    summary["proxy"] = proxy.into();
    if let (Some(p), Some(status)) = (programs, exit_status) {
        // The scenario's own flows did not run: the programs' connections stand in `flows`.
        summary["programs"] = serde_json::json!({
            "command": p.ue,
            "server_command": p.server,
            "exit_status": status,
            "ended_by": if status == EXIT_DURATION_REACHED && command_status.is_none() { "duration" } else { "command" },
            "measured_s": measured_ns as f64 / 1e9,
            "user": user.as_ref().map(Credentials::name),
        });
    }
    Ok(Emulation { summary, exit_status, tables, flows, link: report })
}

/// The run's tables, as the simulator writes them: the network's rows (queues, UEs, the
/// proxy's) sampled by the link, the flows' from their senders' TCP_INFO, goodput from the
/// bytes per bin of each flow (what the UEs' applications read; with users' programs, the IP
/// bytes each connection delivered to the UE), the handovers.
fn tables(
    network: &Network,
    mut series: Series,
    flows: &[FlowReport],
    goodput_bins: &[&[u64]],
    has: Has,
    goodput_bin_ns: u64,
) -> Vec<Table> {
    for (i, flow) in flows.iter().enumerate() {
        for x in &flow.samples {
            series.push_flow_row(x.t_ns as f64 / 1e9, i as u32, x.subflow, &x.info.flow_row());
        }
    }
    let mut goodput = Goodput::default();
    let bin_s = goodput_bin_ns as f64 / 1e9;
    for (i, bins) in goodput_bins.iter().enumerate() {
        for (b, &bytes) in bins.iter().enumerate() {
            goodput.t.push(b as f64 * bin_s);
            goodput.flow.push(i as u32);
            goodput.goodput_bps.push(bytes as f64 * 8.0 / bin_s);
        }
    }
    series.take_chunk(goodput, network.mobility_rows(), has)
}

fn seconds_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// The hosts to capture at: each must be one (the link's devices are theirs).
fn capture_hosts(plan: &Plan, nodes: &[String]) -> Result<Vec<usize>, EmuError> {
    nodes
        .iter()
        .map(|node| {
            plan.host_on(node).ok_or_else(|| {
                let hosts: Vec<String> = plan.hosts.iter().map(|h| format!("`{}`", h.name)).collect();
                EmuError::unsupported("pcap", format!("it captures at the hosts, {}, not at `{node}`", hosts.join(", ")))
            })
        })
        .collect()
}

/// Namespaces and TUN devices need root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
fn check_root() -> Result<(), EmuError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::System("the emulator needs root: it makes network namespaces and TUN devices".into()));
    }
    Ok(())
}
