//! The testbed's wiring: veth pairs from the gNB namespace to the server and the UE, the
//! TUN pair of the link emulator, addresses, routes and each namespace's TCP settings.
//!
//! In the gNB namespace, policy routing by incoming interface hands every packet to the
//! link: from the server's veth into the server-side TUN device (the link reads it), and what
//! the link writes to the UE-side device is routed by the main table out to the UE's veth;
//! the reverse likewise. The TUN devices carry no address: they are the link's two ends.

use crate::error::EmuError;
use crate::netns::{self, run, Namespaces};
use crate::plan::{Plan, GNB_SERVER_SIDE_IP, GNB_UE_SIDE_IP, SERVER_IP, UE_IP};
use crate::tun::Tun;

pub const ROLES: [&str; 3] = ["server", "gnb", "ue"];
pub const SERVER_SIDE_TUN: &str = "tsrv";
pub const UE_SIDE_TUN: &str = "tue";

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

/// Builds the wiring; returns the link's two TUN devices (server side, UE side).
pub fn wire(ns: &Namespaces, plan: &Plan) -> Result<(Tun, Tun), EmuError> {
    let (server, gnb, ue) = (ns.name("server"), ns.name("gnb"), ns.name("ue"));
    let mtu = plan.mtu_bytes.to_string();
    let ue_mtu = plan.ue_side_mtu_bytes.to_string();
    run("ip", &["link", "add", "s0", "netns", gnb, "type", "veth", "peer", "name", "eth0", "netns", server])?;
    run("ip", &["link", "add", "u0", "netns", gnb, "type", "veth", "peer", "name", "eth0", "netns", ue])?;
    let (tun_server, tun_ue) = in_namespace(gnb, || {
        write_sysctls(&[
            ("net.ipv4.ip_forward", "1".into()),
            ("net.ipv4.conf.all.rp_filter", "0".into()),
            ("net.ipv4.conf.default.rp_filter", "0".into()),
            ("net.ipv4.conf.all.send_redirects", "0".into()),
        ])?;
        Ok((Tun::create(SERVER_SIDE_TUN)?, Tun::create(UE_SIDE_TUN)?))
    })?;
    for (dev, ip, mtu) in [("s0", GNB_SERVER_SIDE_IP, &mtu), ("u0", GNB_UE_SIDE_IP, &ue_mtu)] {
        run("ip", &["-n", gnb, "addr", "add", &format!("{ip}/24"), "dev", dev])?;
        run("ip", &["-n", gnb, "link", "set", dev, "mtu", mtu, "up"])?;
    }
    // The link drains its devices continuously; a long transmit queue absorbs its pauses.
    for (dev, table, from, mtu) in [(SERVER_SIDE_TUN, "100", "s0", &mtu), (UE_SIDE_TUN, "101", "u0", &ue_mtu)] {
        run("ip", &["-n", gnb, "link", "set", dev, "mtu", mtu, "txqueuelen", "10000", "up"])?;
        run("ip", &["-n", gnb, "rule", "add", "iif", from, "lookup", table])?;
        run("ip", &["-n", gnb, "route", "add", "default", "dev", dev, "table", table])?;
    }
    // Per-route TCP settings (ip-route(8)): the server's minimum RTO and initial window, the
    // UE's immediate ACKs when the scenario turns delayed ACKs off.
    let rto_min = format!("{}ms", plan.min_rto_ms);
    let initcwnd = plan.initial_window_segments.to_string();
    let server_route =
        ["-n", server, "route", "add", "default", "via", &GNB_SERVER_SIDE_IP.to_string(), "rto_min", &rto_min, "initcwnd", &initcwnd];
    let gateway = GNB_UE_SIDE_IP.to_string();
    let mut ue_route = vec!["-n", ue, "route", "add", "default", "via", &gateway];
    if !plan.delayed_ack {
        ue_route.extend(["quickack", "1"]);
    }
    for (name, ip, route, mtu) in [(server, SERVER_IP, &server_route[..], &mtu), (ue, UE_IP, &ue_route[..], &ue_mtu)] {
        run("ip", &["-n", name, "addr", "add", &format!("{ip}/24"), "dev", "eth0"])?;
        run("ip", &["-n", name, "link", "set", "eth0", "mtu", mtu, "up"])?;
        run("ip", route)?;
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
    Ok((tun_server, tun_ue))
}
