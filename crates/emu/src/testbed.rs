//! The testbed's wiring: one network namespace per host of the plan, each with one TUN
//! device, `tun0`, that carries all the host's addresses (the network layer's) and its default
//! route. What the host's kernel sends goes into `tun0`, where the link reads it and hands it
//! to the network at the host's node; what the network delivers to the node the link writes
//! into `tun0`. Nothing else joins the namespaces: the link is their only way to each other,
//! and the nodes that only forward are the network's alone.
//!
//! A device with several radios has one address per radio on its `tun0`; the network routes
//! what leaves from each address over that radio. Kernel MPTCP opens a subflow from each
//! further address (`ip mptcp endpoint ... subflow`).

use millinet_scenario::EcnSpec;

use crate::error::EmuError;
use crate::netns::{self, run, Namespaces};
use crate::plan::{HostPlan, Plan};
use crate::tun::Tun;

/// The TUN device of every host.
pub const DEVICE: &str = "tun0";

/// Largest socket buffer the endpoints may autotune to: several BDPs of a 3.2 Gbit/s path
/// with 100 ms of queueing.
const MAX_SOCKET_BUFFER_BYTES: u64 = 256 << 20;

/// The namespace name of each host: its node's name where that is safe in a file name.
pub fn roles(plan: &Plan) -> Vec<String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '_';
    plan.hosts.iter().enumerate().map(|(i, h)| if h.name.chars().all(safe) { h.name.clone() } else { format!("host{i}") }).collect()
}

/// Runs `f` on a thread inside namespace `name` (the caller's thread stays where it is).
pub fn in_namespace<T: Send>(name: &str, f: impl FnOnce() -> Result<T, EmuError> + Send) -> Result<T, EmuError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                netns::enter(name)?;
                f()
            })
            .join()
            .expect("a namespace setup thread does not panic")
    })
}

/// Writes sysctls of the calling thread's namespace (`/proc/sys/net` is per namespace).
fn write_sysctls(settings: &[(&str, String)]) -> Result<(), EmuError> {
    for (key, value) in settings {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        std::fs::write(&path, value).map_err(|e| EmuError::System(format!("cannot set {key}={value}: {e}")))?;
    }
    Ok(())
}

/// Builds every host's namespace; returns their TUN devices, by host.
pub fn wire(ns: &Namespaces, plan: &Plan) -> Result<Vec<Tun>, EmuError> {
    let mptcp_subflows = plan.hosts.iter().map(|h| h.addresses.len() - 1).max().unwrap_or(0);
    let any_mptcp = plan.hosts.iter().any(|h| h.mptcp);
    plan.hosts.iter().enumerate().map(|(k, host)| wire_host(ns.name(k), host, any_mptcp.then_some(mptcp_subflows))).collect()
}

fn wire_host(name: &str, host: &HostPlan, mptcp_subflows: Option<usize>) -> Result<Tun, EmuError> {
    let flag = |on: bool| if on { "1".to_string() } else { "0".to_string() };
    let buffers = |default: u64| format!("4096 {default} {MAX_SOCKET_BUFFER_BYTES}");
    let tun = in_namespace(name, || {
        write_sysctls(&[
            ("net.ipv4.conf.all.rp_filter", "0".into()),
            ("net.ipv4.conf.default.rp_filter", "0".into()),
            ("net.ipv4.tcp_rmem", buffers(131_072)),
            ("net.ipv4.tcp_wmem", buffers(16_384)),
            // Each run starts from scratch, not from what an earlier connection learnt.
            ("net.ipv4.tcp_no_metrics_save", "1".into()),
        ])?;
        if let Some(tcp) = host.tcp {
            write_sysctls(&[
                ("net.ipv4.tcp_sack", flag(tcp.sack)),
                ("net.ipv4.tcp_timestamps", flag(tcp.timestamps)),
                ("net.ipv4.tcp_window_scaling", flag(tcp.window_scaling)),
                // RACK loss detection (bit 0 of tcp_recovery) and TLP (tcp_early_retrans 3).
                ("net.ipv4.tcp_recovery", flag(tcp.rack_tlp)),
                ("net.ipv4.tcp_early_retrans", if tcp.rack_tlp { "3".into() } else { "0".into() }),
            ])?;
            // Ask for and accept nothing (0), RFC 3168 (1) or Accurate ECN (3), as both ends of
            // a simulated flow do. A kernel without Accurate ECN (6.18 has 0 to 2) refuses 3.
            let ecn = match tcp.ecn {
                EcnSpec::Off => "0",
                EcnSpec::Rfc3168 => "1",
                EcnSpec::Accurate => "3",
            };
            write_sysctls(&[("net.ipv4.tcp_ecn", ecn.into())]).map_err(|e| match tcp.ecn {
                EcnSpec::Accurate => EmuError::unsupported(
                    "flows.N.ecn",
                    "ecn = \"accurate\" needs Accurate ECN, which this kernel lacks (it refuses net.ipv4.tcp_ecn = 3); allowed here: \"off\", \"rfc3168\"",
                ),
                _ => e,
            })?;
        }
        Tun::create(DEVICE)
    })?;
    let mtu = host.mtu_bytes.to_string();
    for address in &host.addresses {
        run("ip", &["-n", name, "addr", "add", &format!("{address}/32"), "dev", DEVICE])?;
    }
    // The link drains the device continuously; a long transmit queue absorbs its pauses.
    run("ip", &["-n", name, "link", "set", DEVICE, "mtu", &mtu, "txqueuelen", "10000", "up"])?;
    // Per-route TCP settings (ip-route(8)): a sender's minimum RTO and initial window, a
    // receiver's immediate ACKs when the scenario turns delayed ACKs off.
    let first = host.addresses[0].to_string();
    let mut route = vec!["-n", name, "route", "add", "default", "dev", DEVICE, "src", &first];
    let (rto_min, initcwnd);
    if let Some(sender) = host.sender {
        rto_min = format!("{}ms", sender.min_rto_ms);
        initcwnd = sender.initial_window_segments.to_string();
        route.extend(["rto_min", &rto_min, "initcwnd", &initcwnd]);
    }
    if host.quickack {
        route.extend(["quickack", "1"]);
    }
    run("ip", &route)?;
    if let Some(subflows) = mptcp_subflows {
        run("ip", &["-n", name, "mptcp", "limits", "set", "subflows", &subflows.to_string(), "add_addr_accepted", "0"])?;
    }
    if host.mptcp {
        for address in &host.addresses[1..] {
            run("ip", &["-n", name, "mptcp", "endpoint", "add", &address.to_string(), "dev", DEVICE, "subflow"])?;
        }
    }
    Ok(tun)
}
