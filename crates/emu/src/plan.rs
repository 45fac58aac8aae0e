//! What the emulator builds from a scenario, and a clear refusal of what it cannot host yet.
//!
//! The path is the network layer's (`millinet_network::Network`), the very one the simulator
//! drives: every node, link, cell, UE radio, handover and route. What the emulator adds are
//! the hosts: each node where a flow starts or ends (and the split proxy's node) is a network
//! namespace of its own with real Linux TCP, whose one TUN device carries the node's
//! addresses (those of the network layer, 10.0.0.x, a device with several radios one per
//! radio) and leads into the network at that node. Nodes that only forward are the network's
//! alone.

use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_bpfcc::Cc;
use millinet_network::{Network, NodeId};
use millinet_scenario::{CubicVariantSpec, DelayedAckSpec, EcnSpec, FlowKind, HystartSpec, LossDetectionSpec, ProxyKind, Scenario};

use millinet_scenario::translate::app_spec;

use crate::datagrams::DatagramRate;
use crate::endpoint::{Carrier, FlowPlan};
use crate::error::EmuError;
use crate::mptcp::Transport;

/// A node with endpoints: a namespace with its kernel TCP.
#[derive(Clone, Debug)]
pub struct HostPlan {
    pub node: NodeId,
    /// The scenario's name of the node.
    pub name: String,
    /// The node's addresses, its first interface's first: a device with several radios has
    /// one per radio.
    pub addresses: Vec<Ipv4Addr>,
    /// The MTU of its device: its flows' segments carry exactly their `mss_bytes` of payload,
    /// and a UE's room for milliProxy's coalesced segments (docs/emulator.md, "milliProxy in the link").
    pub mtu_bytes: u32,
    /// Its kernel's TCP settings, from its TCP flows (the kernel's own without any).
    pub tcp: Option<TcpSettings>,
    /// It sends a flow's data: its route carries the flows' minimum RTO and initial window.
    pub sender: Option<SenderRoute>,
    /// It receives a flow without delayed ACKs: its route ACKs at once.
    pub quickack: bool,
    /// It opens MPTCP subflows from its further addresses.
    pub mptcp: bool,
}

/// A host's TCP options, one kernel's sysctls: its flows must agree on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSettings {
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    /// RACK-TLP (`net.ipv4.tcp_recovery` 1 and `tcp_early_retrans` 3, the kernel's defaults)
    /// or neither (0 and 0: duplicate-ACK loss marking, no probe).
    pub rack_tlp: bool,
    /// The ECN feedback it asks for and accepts (`net.ipv4.tcp_ecn`).
    pub ecn: EcnSpec,
}

/// The per-route TCP settings of a sending host (ip-route(8)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderRoute {
    pub min_rto_ms: u64,
    pub initial_window_segments: u32,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub hosts: Vec<HostPlan>,
    /// Per scenario flow: its endpoints.
    pub flows: Vec<FlowPlan>,
    /// Per flow: the host it starts at (its server) and the one it ends at (its UE).
    pub flow_hosts: Vec<(usize, usize)>,
    /// Per flow: the project's BPF congestion control it runs, if any: its `cc` is set to the
    /// registered name by the run.
    pub bpf_cc: Vec<Option<Cc>>,
    /// milliProxy's node (the network's middlebox site), with the MSS it clamps the servers
    /// to.
    pub milliproxy: Option<(String, u32)>,
    pub split: Option<SplitPlan>,
}

/// The split-TCP baseline (docs/proxy.md, "The split-TCP baseline") as a real proxy: Linux TCP both ways, a host of
/// its own at its node, relaying bytes between each flow's two connections. Each relayed
/// flow's UE connects to it.
#[derive(Clone, Debug)]
pub struct SplitPlan {
    /// Its host.
    pub host: usize,
    /// The kernel's name of its congestion control toward the UE.
    pub cc: String,
    /// Its MSS toward the UE: the payload of its segments (at most the path's).
    pub mss_bytes: u32,
    /// One per TCP flow whose path crosses its node, as the simulator's transparent proxy
    /// takes every such flow.
    pub relays: Vec<RelayPlan>,
}

/// The split proxy's relay of one flow.
#[derive(Clone, Copy, Debug)]
pub struct RelayPlan {
    pub flow: usize,
    /// Where it listens (its own address, the flow's server port); it connects to the flow's
    /// server.
    pub listen: SocketAddrV4,
    /// TCP_MAXSEG for the proxy's MSS, when it is below the flow's: Linux subtracts the
    /// timestamp option (12 bytes) from the MSS it is given.
    pub max_segment_bytes: Option<u32>,
}

/// How a scenario's congestion control runs in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KernelCc {
    /// One the kernel has, by its name.
    Builtin(&'static str),
    /// One of the project's BPF congestion controls (crates/bpfcc), registered for the run.
    Bpf(Cc),
}

fn kernel_cc(name: &str) -> Option<KernelCc> {
    match name {
        "newreno" | "reno" => Some(KernelCc::Builtin("reno")),
        "cubic" => Some(KernelCc::Builtin("cubic")),
        "bbr" => Some(KernelCc::Builtin("bbr")),
        "highspeed" => Some(KernelCc::Bpf(Cc::HighSpeed)),
        "lia" => Some(KernelCc::Bpf(Cc::Lia)),
        "olia" => Some(KernelCc::Bpf(Cc::Olia)),
        "balia" => Some(KernelCc::Bpf(Cc::Balia)),
        "dctcp" => Some(KernelCc::Bpf(Cc::Dctcp)),
        "prague" => Some(KernelCc::Bpf(Cc::Prague)),
        _ => None,
    }
}

/// Linux never sends segments smaller than this (TCP_MIN_MSS, include/net/tcp.h).
const LINUX_MIN_MSS_BYTES: u32 = 88;

/// The smallest MTU an IPv4 device may have (RFC 791's 68 bytes, IPV4_MIN_MTU).
const LINUX_MIN_MTU_BYTES: u32 = 68;

/// The port flow i's server listens on.
pub fn server_port(flow: usize) -> u16 {
    5201 + flow as u16
}

impl Plan {
    pub fn new(s: &Scenario, network: &Network, available_cc: &str) -> Result<Plan, EmuError> {
        if s.flows.is_empty() {
            return Err(EmuError::unsupported("flows", "it runs the scenario's flows, and there are none"));
        }
        let mut hosts: Vec<HostPlan> = Vec::new();
        let host_at = |node: NodeId, hosts: &mut Vec<HostPlan>| -> usize {
            if let Some(h) = hosts.iter().position(|h| h.node == node) {
                return h;
            }
            let radios = network.radios_of(node);
            hosts.push(HostPlan {
                node,
                name: network.topology().name(node).to_string(),
                addresses: (0..radios).map(|r| network.receiver_address(node, r)).collect(),
                mtu_bytes: 0,
                tcp: None,
                sender: None,
                quickack: false,
                mptcp: false,
            });
            hosts.len() - 1
        };
        let mut flows = Vec::new();
        let mut flow_hosts = Vec::new();
        let mut bpf_cc = Vec::new();
        for (i, f) in s.flows.iter().enumerate() {
            let field = |name: &str| format!("flows.{i}.{name}");
            let carrier = match f.kind {
                FlowKind::Tcp => Carrier::Stream(Transport::Tcp),
                FlowKind::Mptcp => Carrier::Stream(Transport::Mptcp),
                FlowKind::Udp => {
                    Carrier::Datagrams(DatagramRate { rate_bps: f.udp_rate_bps.round() as u64, payload_bytes: f.packet_bytes })
                }
            };
            let mptcp = carrier == Carrier::Stream(Transport::Mptcp);
            let (cc, bpf) = match kernel_cc(&f.cc) {
                // A UDP flow has no congestion control.
                _ if matches!(carrier, Carrier::Datagrams(_)) => (String::new(), None),
                Some(KernelCc::Builtin(cc)) if available_cc.split_whitespace().any(|a| a == cc) => (cc.to_string(), None),
                // Its name is the registration's, known when the run registers it.
                Some(KernelCc::Bpf(cc)) => (String::new(), Some(cc)),
                _ => {
                    return Err(EmuError::unsupported(
                        field("cc"),
                        format!(
                            "the kernel offers `{}` and the project's BPF `highspeed`, `lia`, `olia` and `balia`, not `{}`",
                            available_cc.trim(),
                            f.cc
                        ),
                    ))
                }
            };
            if cc == "cubic" && f.hystart != HystartSpec::Linux {
                // tcp_cubic's `hystart` is a module parameter, one for the whole host: the
                // testbed does not change the host's settings.
                return Err(EmuError::unsupported(
                    field("hystart"),
                    "the kernel's CUBIC runs its own HyStart (a module parameter for the whole host, which the testbed leaves alone); allowed: \"linux\"".to_string(),
                ));
            }
            if cc == "cubic" && f.cubic_variant != CubicVariantSpec::Linux {
                return Err(EmuError::unsupported(
                    field("cubic_variant"),
                    "the kernel's CUBIC is Linux's (RFC 9438's text differs in its Reno-friendly increase and the RTT its target looks ahead by); allowed: \"linux\"".to_string(),
                ));
            }
            if !f.prr && !matches!(carrier, Carrier::Datagrams(_)) && cc != "bbr" {
                // Linux runs PRR in every recovery of an algorithm without its own
                // `cong_control` (BBR has one): there is no switch to turn it off.
                return Err(EmuError::unsupported(
                    field("prr"),
                    "the kernel's TCP always reduces its window by PRR in fast recovery (BBR excepted); allowed: true".to_string(),
                ));
            }
            if f.delayed_ack == DelayedAckSpec::Rfc5681 && !matches!(carrier, Carrier::Datagrams(_)) {
                // The kernel's receiver delays its ACKs its own way (quick ACKs first, SACK
                // compression); a route's `quickack` only turns delaying off.
                return Err(EmuError::unsupported(
                    field("delayed_ack"),
                    "the kernel's receiver delays ACKs as Linux does, or not at all (the route's quickack); allowed: \"linux\", \"off\""
                        .to_string(),
                ));
            }
            if bpf.is_some_and(|cc| matches!(cc, Cc::Lia | Cc::Olia | Cc::Balia)) && !mptcp {
                // They would run as Reno on a plain TCP socket, which is not what the scenario asks.
                return Err(EmuError::unsupported(
                    field("cc"),
                    format!("`{}` couples the subflows of an MP-TCP flow; this flow is TCP", f.cc),
                ));
            }
            let (src, dst) = (network.node(&f.src)?, network.node(&f.dst)?);
            let radios = network.radios_of(dst);
            if mptcp && network.ues() > 0 && radios < 2 {
                return Err(EmuError::unsupported(
                    field("dst"),
                    format!("an MP-TCP flow needs 2 radios on its device (`[[ues]]` entries on `{}`), it has {radios}", f.dst),
                ));
            }
            let mtu_bytes = match carrier {
                // A datagram crosses whole: IPv4 and UDP headers and the payload.
                Carrier::Datagrams(rate) => (rate.payload_bytes + 28).max(LINUX_MIN_MTU_BYTES),
                _ => f.mss_bytes + 40 + if f.timestamps { 12 } else { 0 },
            };
            let tcp = !matches!(carrier, Carrier::Datagrams(_));
            if tcp && f.mss_bytes < LINUX_MIN_MSS_BYTES || mtu_bytes > 65_535 {
                return Err(EmuError::unsupported(
                    field(if tcp { "mss_bytes" } else { "packet_bytes" }),
                    format!("it gives an MTU of {mtu_bytes}; allowed an MSS of at least {LINUX_MIN_MSS_BYTES} (Linux's smallest) and an MTU up to 65535"),
                ));
            }
            let (server, client) = (host_at(src, &mut hosts), host_at(dst, &mut hosts));
            for h in [server, client] {
                let host = &mut hosts[h];
                host.mtu_bytes = host.mtu_bytes.max(mtu_bytes);
                if !tcp {
                    continue;
                }
                let settings = TcpSettings {
                    sack: f.sack,
                    timestamps: f.timestamps,
                    window_scaling: f.window_scaling,
                    rack_tlp: f.loss_detection == LossDetectionSpec::RackTlp,
                    ecn: f.ecn,
                };
                if host.tcp.is_some_and(|t| t != settings) {
                    return Err(EmuError::unsupported(
                        field("sack"),
                        format!(
                            "`{}` runs one kernel TCP: its flows must agree on sack, timestamps, window_scaling, loss_detection and ecn",
                            host.name
                        ),
                    ));
                }
                host.tcp = Some(settings);
            }
            if tcp {
                let route = SenderRoute {
                    min_rto_ms: (f.min_rto_s * 1e3).round().max(1.0) as u64,
                    initial_window_segments: f.initial_window_segments,
                };
                if hosts[server].sender.is_some_and(|r| r != route) {
                    return Err(EmuError::unsupported(
                        field("min_rto_s"),
                        format!(
                            "`{}` sends every flow it serves with one route: they must agree on min_rto_s and initial_window_segments",
                            f.src
                        ),
                    ));
                }
                hosts[server].sender = Some(route);
                hosts[client].quickack |= f.delayed_ack == DelayedAckSpec::Off;
            }
            hosts[client].mptcp |= mptcp;
            let server_address = SocketAddrV4::new(network.address(src), server_port(i));
            let ue_ips: Vec<Ipv4Addr> = match mptcp {
                true => (0..radios).map(|r| network.receiver_address(dst, r)).collect(),
                false => vec![network.receiver_address(dst, f.dst_radio)],
            };
            flows.push(FlowPlan {
                cc,
                ue_cc: None,
                server: server_address,
                connect_to: server_address,
                bind: ue_ips[0],
                app: app_spec(f),
                start_ns: seconds_ns(f.start_s),
                end_ns: seconds_ns(s.duration_s),
                sample_step_ns: seconds_ns(s.outputs.sample_step_s).max(1),
                goodput_bin_ns: seconds_ns(s.outputs.goodput_bin_s).max(1),
                carrier,
                ue_ips,
            });
            flow_hosts.push((server, client));
            bpf_cc.push(bpf);
        }
        let mut plan = Plan { hosts, flows, flow_hosts, bpf_cc, milliproxy: None, split: None };
        if !s.proxy.node.is_empty() {
            let proxy = network.node(&s.proxy.node).map_err(|e| EmuError::unsupported("proxy.node", e.to_string()))?;
            if plan.hosts.iter().any(|h| h.node == proxy) {
                return Err(EmuError::unsupported(
                    "proxy.node",
                    format!("`{}` is not a node between the flows' servers and their UEs: a flow starts or ends there", s.proxy.node),
                ));
            }
            match s.proxy.kind {
                ProxyKind::Milliproxy => {
                    // The clamp toward the server is the server side's own MSS, so the server
                    // sends the scenario's segments (Linux advertises MTU − 40 and fits its
                    // options inside); the UEs' devices take the coalesced segments, which
                    // carry the server segments' options too (40 bytes at most).
                    let mss1 = plan.hosts[plan.flow_hosts[0].0].mtu_bytes - 40;
                    for &(_, client) in &plan.flow_hosts {
                        let host = &mut plan.hosts[client];
                        host.mtu_bytes = host.mtu_bytes.max(s.proxy.mss2_bytes + 40 + 40).min(65_535);
                    }
                    plan.milliproxy = Some((s.proxy.node.clone(), mss1));
                }
                ProxyKind::Split => plan.split = Some(split_plan(s, network, proxy, &mut plan, available_cc)?),
            }
        }
        Ok(plan)
    }

    /// The host on `node`, if it is one.
    pub fn host_on(&self, node: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == node)
    }
}

fn seconds_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// The kernel split proxy: a host on its node, a congestion control the kernel has, and an MSS
/// the path's MTU carries; a relay for each TCP flow through its node, whose UE connects to it.
fn split_plan(s: &Scenario, network: &Network, node: NodeId, plan: &mut Plan, available_cc: &str) -> Result<SplitPlan, EmuError> {
    if s.cells.iter().any(|c| c.node == s.proxy.node) {
        return Err(EmuError::unsupported(
            "proxy.node",
            format!("the split proxy sits on a node between two wired links, not at the cell `{}`", s.proxy.node),
        ));
    }
    let cc = match kernel_cc(&s.proxy.split_cc) {
        Some(KernelCc::Builtin(cc)) if available_cc.split_whitespace().any(|a| a == cc) => cc.to_string(),
        _ => {
            return Err(EmuError::unsupported(
                "proxy.split_cc",
                format!("the split proxy runs one of the kernel's `{}`, not `{}`", available_cc.trim(), s.proxy.split_cc),
            ))
        }
    };
    let address = network.address(node);
    let mut relays = Vec::new();
    let mut host: Option<HostPlan> = None;
    for (i, f) in s.flows.iter().enumerate() {
        let (server, _) = plan.flow_hosts[i];
        if f.kind == FlowKind::Udp || !network.route_crosses(plan.hosts[server].node, plan.flows[i].bind, node) {
            continue;
        }
        if f.kind == FlowKind::Mptcp {
            return Err(EmuError::unsupported(
                format!("flows.{i}.kind"),
                format!("the split proxy on `{}` relays TCP flows; this MP-TCP flow crosses it", s.proxy.node),
            ));
        }
        if !(LINUX_MIN_MSS_BYTES..=f.mss_bytes).contains(&s.proxy.split_mss_bytes) {
            return Err(EmuError::unsupported(
                "proxy.split_mss_bytes",
                format!(
                    "{} does not fit flow {i}'s path: allowed {LINUX_MIN_MSS_BYTES} to its MSS, {}",
                    s.proxy.split_mss_bytes, f.mss_bytes
                ),
            ));
        }
        // The proxy's one kernel terminates every relayed flow: their TCP options must agree,
        // as on any host.
        let server_host = &plan.hosts[server];
        let proxy_host = host.get_or_insert_with(|| HostPlan {
            node,
            name: s.proxy.node.clone(),
            addresses: vec![address],
            quickack: false,
            mptcp: false,
            ..server_host.clone()
        });
        if proxy_host.tcp != server_host.tcp || proxy_host.sender != server_host.sender {
            return Err(EmuError::unsupported(
                format!("flows.{i}.src"),
                format!(
                    "the split proxy on `{}` runs one kernel TCP: the flows it relays must agree on sack, timestamps, window_scaling, loss_detection, ecn, min_rto_s and initial_window_segments",
                    s.proxy.node
                ),
            ));
        }
        proxy_host.mtu_bytes = proxy_host.mtu_bytes.max(server_host.mtu_bytes);
        proxy_host.quickack |= f.delayed_ack == DelayedAckSpec::Off;
        let listen = SocketAddrV4::new(address, server_port(i));
        plan.flows[i].connect_to = listen;
        let max_segment_bytes =
            (s.proxy.split_mss_bytes < f.mss_bytes).then_some(s.proxy.split_mss_bytes + if f.timestamps { 12 } else { 0 });
        relays.push(RelayPlan { flow: i, listen, max_segment_bytes });
    }
    let Some(host) = host else {
        return Err(EmuError::unsupported(
            "proxy.node",
            format!("no TCP flow's path crosses `{}`: the split proxy there would relay nothing", s.proxy.node),
        ));
    };
    plan.hosts.push(host);
    Ok(SplitPlan { host: plan.hosts.len() - 1, cc, mss_bytes: s.proxy.split_mss_bytes, relays })
}
