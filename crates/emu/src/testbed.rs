//! The testbed's wiring: veth pairs from the gNB namespace to the server and the UE, the
//! TUN pair of the link emulator, addresses, routes and each namespace's TCP settings.
//!
//! In the gNB namespace, policy routing by incoming interface hands every packet to the
//! link: from the server's veth into the server-side TUN device (the link reads it), and what
//! the link writes to the UE-side device is routed by the main table out to the UE's veth;
//! the reverse likewise. The TUN devices carry no address: they are the link's two ends.
//!
//! With the split proxy (`Plan::split`) a fourth namespace, `proxy`, hangs off the gNB on its
//! own veth, and a third TUN device is the link's door to it: what the link writes there is
//! routed to the proxy by the main table, and what the proxy sends comes back into it.

use crate::error::EmuError;
use crate::netns::{self, run, Namespaces};
use crate::plan::{Plan, GNB_PROXY_SIDE_IP, GNB_SERVER_SIDE_IP, GNB_UE_SIDE_IP, PROXY_IP, SERVER_IP, UE_IP};
use crate::tun::Tun;

pub const SERVER_SIDE_TUN: &str = "tsrv";
pub const UE_SIDE_TUN: &str = "tue";
pub const PROXY_SIDE_TUN: &str = "tpx";

/// The namespaces a plan needs.
pub fn roles(plan: &Plan) -> &'static [&'static str] {
    match plan.split {
        Some(_) => &["server", "gnb", "ue", "proxy"],
        None => &["server", "gnb", "ue"],
    }
}

/// The link's devices: toward the server, the UE and, with a split proxy, the proxy.
pub struct Devices {
    pub server_side: Tun,
    pub ue_side: Tun,
    pub proxy_side: Option<Tun>,
}

/// Largest socket buffer the endpoints may autotune to: several BDPs of a 3.2 Gbit/s path
/// with 100 ms of queueing.
const MAX_SOCKET_BUFFER_BYTES: u64 = 256 << 20;

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

/// Builds the wiring; returns the link's TUN devices.
pub fn wire(ns: &Namespaces, plan: &Plan) -> Result<Devices, EmuError> {
    let gnb = ns.name("gnb");
    let mtu = plan.mtu_bytes.to_string();
    let ue_mtu = plan.ue_side_mtu_bytes.to_string();
    // Per endpoint namespace: its veth's gNB end, the gNB's address there, the endpoint's
    // address, the link's TUN device toward it and the routing table that leads into it.
    let mut sides = vec![
        ("server", "s0", GNB_SERVER_SIDE_IP, SERVER_IP, SERVER_SIDE_TUN, "100", &mtu),
        ("ue", "u0", GNB_UE_SIDE_IP, UE_IP, UE_SIDE_TUN, "101", &ue_mtu),
    ];
    if plan.split.is_some() {
        sides.push(("proxy", "p0", GNB_PROXY_SIDE_IP, PROXY_IP, PROXY_SIDE_TUN, "102", &mtu));
    }
    for &(role, veth, ..) in &sides {
        run("ip", &["link", "add", veth, "netns", gnb, "type", "veth", "peer", "name", "eth0", "netns", ns.name(role)])?;
    }
    let mut devices = in_namespace(gnb, || {
        write_sysctls(&[
            ("net.ipv4.ip_forward", "1".into()),
            ("net.ipv4.conf.all.rp_filter", "0".into()),
            ("net.ipv4.conf.default.rp_filter", "0".into()),
            ("net.ipv4.conf.all.send_redirects", "0".into()),
        ])?;
        sides.iter().map(|side| Tun::create(side.4)).collect::<Result<Vec<Tun>, EmuError>>()
    })?;
    for &(_, veth, gnb_ip, _, tun, table, mtu) in &sides {
        run("ip", &["-n", gnb, "addr", "add", &format!("{gnb_ip}/24"), "dev", veth])?;
        run("ip", &["-n", gnb, "link", "set", veth, "mtu", mtu, "up"])?;
        // The link drains its devices continuously; a long transmit queue absorbs its pauses.
        run("ip", &["-n", gnb, "link", "set", tun, "mtu", mtu, "txqueuelen", "10000", "up"])?;
        run("ip", &["-n", gnb, "rule", "add", "iif", veth, "lookup", table])?;
        run("ip", &["-n", gnb, "route", "add", "default", "dev", tun, "table", table])?;
    }
    // Per-route TCP settings (ip-route(8)): a sender's minimum RTO and initial window (the
    // server's, and the split proxy's toward the UE), the UE's immediate ACKs when the
    // scenario turns delayed ACKs off.
    let rto_min = format!("{}ms", plan.min_rto_ms);
    let initcwnd = plan.initial_window_segments.to_string();
    for &(role, _, gnb_ip, ip, _, _, mtu) in &sides {
        let name = ns.name(role);
        let gateway = gnb_ip.to_string();
        let mut route = vec!["-n", name, "route", "add", "default", "via", &gateway];
        match role {
            "ue" if !plan.delayed_ack => route.extend(["quickack", "1"]),
            "ue" => {}
            _ => route.extend(["rto_min", &rto_min, "initcwnd", &initcwnd]),
        }
        run("ip", &["-n", name, "addr", "add", &format!("{ip}/24"), "dev", "eth0"])?;
        run("ip", &["-n", name, "link", "set", "eth0", "mtu", mtu, "up"])?;
        run("ip", &route)?;
        let flag = |on: bool| if on { "1".to_string() } else { "0".to_string() };
        let buffers = |default: u64| format!("4096 {default} {MAX_SOCKET_BUFFER_BYTES}");
        in_namespace(name, || {
            write_sysctls(&[
                ("net.ipv4.tcp_sack", flag(plan.sack)),
                ("net.ipv4.tcp_timestamps", flag(plan.timestamps)),
                ("net.ipv4.tcp_window_scaling", flag(plan.window_scaling)),
                ("net.ipv4.tcp_rmem", buffers(131_072)),
                ("net.ipv4.tcp_wmem", buffers(16_384)),
                // Each run starts from scratch, not from what an earlier connection learnt.
                ("net.ipv4.tcp_no_metrics_save", "1".into()),
            ])
        })?;
    }
    let proxy_side = (devices.len() == 3).then(|| devices.pop().expect("three devices"));
    let ue_side = devices.pop().expect("the UE's device");
    let server_side = devices.pop().expect("the server's device");
    Ok(Devices { server_side, ue_side, proxy_side })
}
