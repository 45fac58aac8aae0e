//! What the emulator builds from a scenario, and a clear refusal of what it cannot host yet.
//!
//! The testbed has three namespaces: `server` (the flow's source), `gnb` (the link emulator,
//! which carries every wired hop of the path and the radio) and `ue` (the flow's destination).
//! A path is the scenario's chain of wired links from the source node, ending at a UE radio's
//! cell node and then over the radio, or at the destination itself for a wired-only path.
//! An MP-TCP flow has one path per radio of its device (the `[[ues]]` entries on its node),
//! each with a UE address of its own; the paths share the wired links they have in common.

use std::net::Ipv4Addr;

use millinet_bpfcc::Cc;
use millinet_scenario::translate::radio::measured_cells;
use millinet_scenario::{App, FlowKind, LinkSpec, ProxyKind, Scenario};

use crate::endpoint::{server_address, FlowPlan, Workload};
use crate::error::EmuError;
use crate::mptcp::Transport;

/// One wired link of the path (scenario link `link`), oriented from the server.
#[derive(Clone, Debug)]
pub struct HopPlan {
    pub link: usize,
    pub from: String,
    pub to: String,
}

/// One way from the server to the UE.
#[derive(Clone, Debug)]
pub struct PathPlan {
    /// Its wired hops from the server: indices into `Plan::hops`.
    pub hops: Vec<usize>,
    /// The scenario UE (its `[[ues]]` entry) whose radio ends the path; None on a wired path.
    pub ue: Option<usize>,
    /// The UE's address on this path: its traffic is routed by it.
    pub ue_ip: Ipv4Addr,
}

#[derive(Clone, Debug)]
pub struct Plan {
    /// Every wired link the paths cross, once, oriented from the server.
    pub hops: Vec<HopPlan>,
    /// The flow's paths: one, or one per radio for MP-TCP.
    pub paths: Vec<PathPlan>,
    /// The paths end over radios (else at a wired node).
    pub radio: bool,
    pub transport: Transport,
    pub flow: FlowPlan,
    /// The flow's congestion control is one of the project's BPF programs: `flow.cc` is set to
    /// its registered name by the run.
    pub bpf_cc: Option<Cc>,
    /// The MTU of every interface: the flow's segments carry exactly `mss_bytes` of payload.
    pub mtu_bytes: u32,
    /// The MTU between the gNB and the UE: `mtu_bytes`, or room for milliProxy's coalesced
    /// segments of up to MSS2 payload bytes (emulation.md §2: the UE-side MTU must allow them).
    pub ue_side_mtu_bytes: u32,
    /// A proxy at the node where downlink stage `proxy_stage` begins (wired hop `proxy_stage`,
    /// or the radio when it equals the number of hops): milliProxy in the link, or with
    /// `split` the kernel split proxy of its own namespace.
    pub proxy_stage: Option<usize>,
    pub split: Option<SplitPlan>,
    pub sack: bool,
    pub timestamps: bool,
    pub window_scaling: bool,
    pub delayed_ack: bool,
    pub min_rto_ms: u64,
    pub initial_window_segments: u32,
}

/// The split-TCP baseline (milliproxy.md §5) as a real proxy: Linux TCP both ways, in a
/// namespace of its own at its node, relaying bytes between its two connections.
#[derive(Clone, Debug)]
pub struct SplitPlan {
    /// The kernel's name of its congestion control toward the UE.
    pub cc: String,
    /// Its MSS toward the UE: the payload of its segments (at most the path's).
    pub mss_bytes: u32,
    /// TCP_MAXSEG for that payload, when it is below the path's: Linux subtracts the
    /// timestamp option (12 bytes) from the MSS it is given.
    pub max_segment_bytes: Option<u32>,
}

/// The testbed's own private addresses: the server side and the UE side of the gNB, and the
/// split proxy with its side of the gNB.
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
pub const PROXY_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 1);
pub const GNB_PROXY_SIDE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 2);
pub const GNB_SERVER_SIDE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 2);
pub const UE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 1);
pub const GNB_UE_SIDE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 2);

/// The UE's address on path `path` (path 0's is `UE_IP`), and the gNB's on that side.
pub fn ue_ip(path: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 2 + 2 * path as u8, 1)
}

pub fn gnb_ue_side_ip(path: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 2 + 2 * path as u8, 2)
}

/// Radio paths an MP-TCP flow may have: the testbed has UE addresses for this many.
pub const MAX_PATHS: usize = 2;

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
        _ => None,
    }
}

impl Plan {
    pub fn new(s: &Scenario, available_cc: &str) -> Result<Plan, EmuError> {
        if s.flows.len() != 1 {
            return Err(EmuError::unsupported("flows", format!("it runs exactly one flow, the scenario has {}", s.flows.len())));
        }
        let f = &s.flows[0];
        let transport = match f.kind {
            FlowKind::Tcp => Transport::Tcp,
            FlowKind::Mptcp => Transport::Mptcp,
            FlowKind::Udp => {
                return Err(EmuError::unsupported("flows.0.kind", "it runs TCP and MP-TCP flows (UDP is not built yet), not udp"))
            }
        };
        let workload = match f.app {
            App::Bulk => Workload::Bulk,
            App::File => Workload::File { bytes: f.file_bytes },
            other => {
                return Err(EmuError::unsupported(
                    "flows.0.app",
                    format!("it runs `bulk` and `file` applications, not `{}`", format!("{other:?}").to_lowercase()),
                ))
            }
        };
        let (cc, bpf_cc) = match kernel_cc(&f.cc) {
            Some(KernelCc::Builtin(cc)) if available_cc.split_whitespace().any(|a| a == cc) => (cc.to_string(), None),
            // Its name is the registration's, known when the run registers it.
            Some(KernelCc::Bpf(cc)) => (String::new(), Some(cc)),
            _ => {
                return Err(EmuError::unsupported(
                    "flows.0.cc",
                    format!(
                        "the kernel offers `{}` and the project's BPF `highspeed`, `lia`, `olia` and `balia`, not `{}`",
                        available_cc.trim(),
                        f.cc
                    ),
                ))
            }
        };
        // The device's radios (the `[[ues]]` entries on the flow's destination, in order) the
        // flow ends at: its `dst_radio`, or each of them for MP-TCP.
        let device: Vec<usize> = (0..s.ues.len()).filter(|&k| s.ues[k].node == f.dst).collect();
        let radio_ues: Vec<usize> = match transport {
            Transport::Tcp => device.get(f.dst_radio as usize).copied().into_iter().collect(),
            Transport::Mptcp => device,
        };
        if transport == Transport::Mptcp && !(2..=MAX_PATHS).contains(&radio_ues.len()) {
            return Err(EmuError::unsupported(
                "flows.0.dst",
                format!(
                    "an MP-TCP flow needs {MAX_PATHS} radios on its device (`[[ues]]` entries on `{}`), it has {}",
                    f.dst,
                    radio_ues.len()
                ),
            ));
        }
        // The device's other radios may stay idle (a TCP flow over one of them); other users'
        // UEs and handover are not hosted.
        if let Some(k) = (0..s.ues.len()).find(|&k| s.ues[k].node != f.dst) {
            return Err(EmuError::unsupported(format!("ues.{k}"), "a UE other than the flow's device: several users are not built yet"));
        }
        if let Some(k) = (0..s.ues.len()).find(|&k| measured_cells(s, &s.ues[k]).len() > 1) {
            return Err(EmuError::unsupported(
                format!("ues.{k}"),
                "it measures other cells for handover; handover and dual connectivity are not built yet",
            ));
        }
        if bpf_cc.is_some_and(|cc| cc != Cc::HighSpeed) && transport != Transport::Mptcp {
            // They would run as Reno on a plain TCP socket, which is not what the scenario asks.
            return Err(EmuError::unsupported(
                "flows.0.cc",
                format!("`{}` couples the subflows of an MP-TCP flow; this flow is TCP", f.cc),
            ));
        }
        let radio = !radio_ues.is_empty();
        let ends: Vec<(Option<usize>, String)> = match radio {
            true => radio_ues.iter().map(|&k| (Some(k), s.ues[k].cell.clone())).collect(),
            false => vec![(None, f.dst.clone())],
        };
        let mut hops: Vec<HopPlan> = Vec::new();
        let mut paths = Vec::new();
        for (i, (ue, end)) in ends.into_iter().enumerate() {
            let mut route = Vec::new();
            for hop in wired_path(&s.links, &f.src, &end)? {
                route.push(match hops.iter().position(|h| h.link == hop.link) {
                    Some(known) if hops[known].from == hop.from => known,
                    Some(_) => {
                        return Err(EmuError::unsupported(format!("links.{}", hop.link), "the paths cross it in opposite directions"))
                    }
                    None => {
                        hops.push(hop);
                        hops.len() - 1
                    }
                });
            }
            paths.push(PathPlan { hops: route, ue, ue_ip: ue_ip(i) });
        }
        // Links off the paths (to a radio the flow leaves idle) carry nothing: not emulated.
        if paths.len() > 1 && !s.proxy.node.is_empty() {
            return Err(EmuError::unsupported("proxy.node", "a proxy on an MP-TCP flow's paths is not built yet"));
        }
        let mtu_bytes = f.mss_bytes + 40 + if f.timestamps { 12 } else { 0 };
        if f.mss_bytes < LINUX_MIN_MSS_BYTES || mtu_bytes > 65_535 {
            return Err(EmuError::unsupported(
                "flows.0.mss_bytes",
                format!("{} gives an MTU of {mtu_bytes}; allowed an MSS of at least {LINUX_MIN_MSS_BYTES} (Linux's smallest) and an MTU up to 65535", f.mss_bytes),
            ));
        }
        let route: Vec<HopPlan> = paths[0].hops.iter().map(|&h| hops[h].clone()).collect();
        let end = match paths[0].ue {
            Some(k) => &s.ues[k].cell,
            None => &f.dst,
        };
        let proxy_stage = proxy_stage(s, &route, end)?;
        let split = match s.proxy.kind {
            ProxyKind::Split if proxy_stage.is_some() => Some(split_plan(s, available_cc)?),
            _ => None,
        };
        // The coalesced segments carry the server segments' options too (40 bytes at most).
        let ue_side_mtu_bytes = match proxy_stage {
            Some(_) if split.is_none() => mtu_bytes.max(s.proxy.mss2_bytes + 40 + 40).min(65_535),
            _ => mtu_bytes,
        };
        let seconds = |s: f64| (s * 1e9).round() as u64;
        let ue_ips = paths.iter().map(|p| p.ue_ip).collect();
        Ok(Plan {
            hops,
            paths,
            radio,
            transport,
            bpf_cc,
            flow: FlowPlan {
                cc,
                server: server_address(SERVER_IP),
                connect_to: server_address(if split.is_some() { PROXY_IP } else { SERVER_IP }),
                workload,
                start_ns: seconds(f.start_s),
                end_ns: seconds(s.duration_s),
                sample_step_ns: seconds(s.outputs.sample_step_s).max(1),
                goodput_bin_ns: seconds(s.outputs.goodput_bin_s).max(1),
                transport,
                ue_ips,
            },
            mtu_bytes,
            ue_side_mtu_bytes,
            proxy_stage,
            split,
            sack: f.sack,
            timestamps: f.timestamps,
            window_scaling: f.window_scaling,
            delayed_ack: f.delayed_ack,
            min_rto_ms: (f.min_rto_s * 1e3).round().max(1.0) as u64,
            initial_window_segments: f.initial_window_segments,
        })
    }
}

/// Where on the path milliProxy sits: the downlink stage that begins at `proxy.node`.
fn proxy_stage(s: &Scenario, hops: &[HopPlan], end: &str) -> Result<Option<usize>, EmuError> {
    let node = &s.proxy.node;
    if node.is_empty() {
        return Ok(None);
    }
    if node == end {
        if s.proxy.kind == ProxyKind::Split {
            return Err(EmuError::unsupported(
                "proxy.node",
                format!("the split proxy sits on a node between two wired links, not at `{node}`"),
            ));
        }
        return Ok(Some(hops.len()));
    }
    match hops.iter().position(|h| h.from == *node) {
        Some(0) | None => Err(EmuError::unsupported(
            "proxy.node",
            format!("`{node}` is not a node between the flow's server and its UE on the emulated path"),
        )),
        Some(stage) => Ok(Some(stage)),
    }
}

/// Linux never sends segments smaller than this (TCP_MIN_MSS, include/net/tcp.h).
const LINUX_MIN_MSS_BYTES: u32 = 88;

/// The kernel split proxy's TCP toward the UE: a congestion control the kernel has, and an MSS
/// the path's MTU carries.
fn split_plan(s: &Scenario, available_cc: &str) -> Result<SplitPlan, EmuError> {
    let cc = match kernel_cc(&s.proxy.split_cc) {
        Some(KernelCc::Builtin(cc)) if available_cc.split_whitespace().any(|a| a == cc) => cc.to_string(),
        _ => {
            return Err(EmuError::unsupported(
                "proxy.split_cc",
                format!("the split proxy runs one of the kernel's `{}`, not `{}`", available_cc.trim(), s.proxy.split_cc),
            ))
        }
    };
    let path_mss = s.flows[0].mss_bytes;
    if !(LINUX_MIN_MSS_BYTES..=path_mss).contains(&s.proxy.split_mss_bytes) {
        return Err(EmuError::unsupported(
            "proxy.split_mss_bytes",
            format!("{} does not fit the path: allowed {LINUX_MIN_MSS_BYTES} to the flow's MSS, {path_mss}", s.proxy.split_mss_bytes),
        ));
    }
    let options = if s.flows[0].timestamps { 12 } else { 0 };
    let max_segment_bytes = (s.proxy.split_mss_bytes < path_mss).then_some(s.proxy.split_mss_bytes + options);
    Ok(SplitPlan { cc, mss_bytes: s.proxy.split_mss_bytes, max_segment_bytes })
}

/// The shortest chain of links from `from` to `to` (breadth first), each oriented along the
/// way.
fn wired_path(links: &[LinkSpec], from: &str, to: &str) -> Result<Vec<HopPlan>, EmuError> {
    // How each node was first reached: the link and the node it came from.
    let mut reached: Vec<(String, Option<(usize, String)>)> = vec![(from.to_string(), None)];
    let mut next = 0;
    while next < reached.len() && !reached.iter().any(|(n, _)| n == to) {
        let at = reached[next].0.clone();
        next += 1;
        for (i, l) in links.iter().enumerate() {
            let other = match (l.a == at, l.b == at) {
                (true, _) => &l.b,
                (_, true) => &l.a,
                _ => continue,
            };
            if !reached.iter().any(|(n, _)| n == other) {
                reached.push((other.clone(), Some((i, at.clone()))));
            }
        }
    }
    let mut hops = Vec::new();
    let mut at = to.to_string();
    while at != from {
        let Some((_, Some((link, previous)))) = reached.iter().find(|(n, _)| *n == at) else {
            return Err(EmuError::unsupported("links", format!("no chain of links leads from `{from}` to `{to}`")));
        };
        hops.insert(0, HopPlan { link: *link, from: previous.clone(), to: at.clone() });
        at = previous.clone();
    }
    Ok(hops)
}
