//! What the emulator builds from a scenario, and a clear refusal of what it cannot host yet.
//!
//! The testbed has three namespaces: `server` (the flow's source), `gnb` (the link emulator,
//! which carries every wired hop of the path and the radio) and `ue` (the flow's destination).
//! The path is the scenario's chain of wired links from the source node, ending at the UE's
//! cell node and then over the radio, or at the destination itself for a wired-only path.

use std::net::Ipv4Addr;

use millinet_bpfcc::Cc;
use millinet_scenario::{App, FlowKind, LinkSpec, ProxyKind, Scenario};

use crate::endpoint::{server_address, FlowPlan, Workload};
use crate::error::EmuError;

/// One wired link of the path (scenario link `link`), oriented from the server.
#[derive(Clone, Debug)]
pub struct HopPlan {
    pub link: usize,
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub hops: Vec<HopPlan>,
    /// The path ends over the radio of scenario UE 0 (else at a wired node).
    pub radio: bool,
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
        _ => None,
    }
}

impl Plan {
    pub fn new(s: &Scenario, available_cc: &str) -> Result<Plan, EmuError> {
        if s.flows.len() != 1 {
            return Err(EmuError::unsupported("flows", format!("it runs exactly one flow, the scenario has {}", s.flows.len())));
        }
        let f = &s.flows[0];
        if f.kind != FlowKind::Tcp {
            return Err(EmuError::unsupported(
                "flows.0.kind",
                format!("it runs TCP flows (kernel MPTCP and UDP are not built yet), not {:?}", f.kind).to_lowercase(),
            ));
        }
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
                    format!("the kernel offers `{}` and the project's BPF `highspeed`, not `{}`", available_cc.trim(), f.cc),
                ))
            }
        };
        if s.cells.len() > 1 || s.ues.len() > 1 {
            return Err(EmuError::unsupported(
                "cells",
                "it hosts one UE on one cell; several cells, handover and dual connectivity are not built yet",
            ));
        }
        let radio = match s.ues.first() {
            Some(u) if u.node == f.dst => true,
            Some(_) => return Err(EmuError::unsupported("flows.0.dst", "the flow must end at the UE's node")),
            None => false,
        };
        let end = if radio { s.cells[0].node.clone() } else { f.dst.clone() };
        let hops = wired_path(&s.links, &f.src, &end)?;
        let mtu_bytes = f.mss_bytes + 40 + if f.timestamps { 12 } else { 0 };
        if f.mss_bytes < LINUX_MIN_MSS_BYTES || mtu_bytes > 65_535 {
            return Err(EmuError::unsupported(
                "flows.0.mss_bytes",
                format!("{} gives an MTU of {mtu_bytes}; allowed an MSS of at least {LINUX_MIN_MSS_BYTES} (Linux's smallest) and an MTU up to 65535", f.mss_bytes),
            ));
        }
        let proxy_stage = proxy_stage(s, &hops, &end)?;
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
        Ok(Plan {
            hops,
            radio,
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

/// The chain of links from `from` to `to`, each oriented along the way. A node on the path
/// has exactly the links of the chain: the emulator carries one path, not a network.
fn wired_path(links: &[LinkSpec], from: &str, to: &str) -> Result<Vec<HopPlan>, EmuError> {
    let mut hops = Vec::new();
    let mut at = from.to_string();
    let mut used = vec![false; links.len()];
    while at != to {
        let next = links.iter().enumerate().find(|(i, l)| !used[*i] && (l.a == at || l.b == at));
        let Some((i, l)) = next else {
            return Err(EmuError::unsupported("links", format!("no chain of links leads from `{from}` to `{to}` (stuck at `{at}`)")));
        };
        used[i] = true;
        let next = if l.a == at { l.b.clone() } else { l.a.clone() };
        hops.push(HopPlan { link: i, from: at.clone(), to: next.clone() });
        at = next;
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(EmuError::unsupported(format!("links.{i}"), "a link off the flow's path; the emulator carries one path"));
    }
    Ok(hops)
}
