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
//!
//! An MP-TCP flow's second path is a second veth into the UE (`eth1`, `ue_ip(1)`) with a TUN
//! device of its own: the UE routes what leaves from that address out of it (a rule by source
//! address), and kernel MPTCP opens a subflow from it (`ip mptcp endpoint ... subflow`).

use crate::error::EmuError;
use crate::mptcp::Transport;
use crate::netns::{self, run, Namespaces};
use crate::plan::{gnb_ue_side_ip, ue_ip, Plan, GNB_PROXY_SIDE_IP, GNB_SERVER_SIDE_IP, PROXY_IP, SERVER_IP};
use crate::tun::Tun;

/// The namespaces a plan needs.
pub fn roles(plan: &Plan) -> &'static [&'static str] {
    match plan.split {
        Some(_) => &["server", "gnb", "ue", "proxy"],
        None => &["server", "gnb", "ue"],
    }
}

/// The link's devices: toward the server, the UE (one per path) and, with a split proxy, the
/// proxy.
pub struct Devices {
    pub server_side: Tun,
    pub ue_sides: Vec<Tun>,
    pub proxy_side: Option<Tun>,
}

/// One end of the link: an endpoint namespace's veth into the gNB.
struct Side {
    role: &'static str,
    /// The veth's name at the gNB and in the endpoint's namespace.
    gnb_veth: String,
    veth: String,
    gnb_ip: std::net::Ipv4Addr,
    ip: std::net::Ipv4Addr,
    /// The link's TUN device toward it, and the gNB routing table that leads into that.
    tun: String,
    table: String,
    mtu: String,
    /// The UE's path (None for the server and the proxy).
    path: Option<usize>,
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
    let side = |role, gnb_veth: &str, veth: &str, gnb_ip, ip, tun: &str, table: usize, mtu: u32, path| Side {
        role,
        gnb_veth: gnb_veth.into(),
        veth: veth.into(),
        gnb_ip,
        ip,
        tun: tun.into(),
        table: table.to_string(),
        mtu: mtu.to_string(),
        path,
    };
    let mut sides = vec![side("server", "s0", "eth0", GNB_SERVER_SIDE_IP, SERVER_IP, "tsrv", 100, plan.mtu_bytes, None)];
    for p in 0..plan.paths.len() {
        let (veth, tun) = (format!("eth{p}"), format!("tue{p}"));
        sides.push(side("ue", &format!("u{p}"), &veth, gnb_ue_side_ip(p), ue_ip(p), &tun, 101 + 2 * p, plan.ue_side_mtu_bytes, Some(p)));
    }
    if plan.split.is_some() {
        sides.push(side("proxy", "p0", "eth0", GNB_PROXY_SIDE_IP, PROXY_IP, "tpx", 102, plan.mtu_bytes, None));
    }
    for s in &sides {
        run("ip", &["link", "add", &s.gnb_veth, "netns", gnb, "type", "veth", "peer", "name", &s.veth, "netns", ns.name(s.role)])?;
    }
    let mut devices = in_namespace(gnb, || {
        write_sysctls(&[
            ("net.ipv4.ip_forward", "1".into()),
            ("net.ipv4.conf.all.rp_filter", "0".into()),
            ("net.ipv4.conf.default.rp_filter", "0".into()),
            ("net.ipv4.conf.all.send_redirects", "0".into()),
        ])?;
        sides.iter().map(|s| Tun::create(&s.tun)).collect::<Result<Vec<Tun>, EmuError>>()
    })?;
    for s in &sides {
        run("ip", &["-n", gnb, "addr", "add", &format!("{}/24", s.gnb_ip), "dev", &s.gnb_veth])?;
        run("ip", &["-n", gnb, "link", "set", &s.gnb_veth, "mtu", &s.mtu, "up"])?;
        // The link drains its devices continuously; a long transmit queue absorbs its pauses.
        run("ip", &["-n", gnb, "link", "set", &s.tun, "mtu", &s.mtu, "txqueuelen", "10000", "up"])?;
        run("ip", &["-n", gnb, "rule", "add", "iif", &s.gnb_veth, "lookup", &s.table])?;
        run("ip", &["-n", gnb, "route", "add", "default", "dev", &s.tun, "table", &s.table])?;
    }
    // Per-route TCP settings (ip-route(8)): a sender's minimum RTO and initial window (the
    // server's, and the split proxy's toward the UE), the UE's immediate ACKs when the
    // scenario turns delayed ACKs off.
    let rto_min = format!("{}ms", plan.min_rto_ms);
    let initcwnd = plan.initial_window_segments.to_string();
    for s in &sides {
        let name = ns.name(s.role);
        let gateway = s.gnb_ip.to_string();
        let mut route = vec!["-n", name, "route", "add", "default", "via", &gateway, "dev", &s.veth];
        // A UE path past the first: what leaves from its address takes its own table.
        let table = s.path.filter(|&p| p > 0).map(|p| (10 + p).to_string());
        if let Some(table) = &table {
            route.extend(["table", table]);
        }
        match s.role {
            "ue" if !plan.delayed_ack => route.extend(["quickack", "1"]),
            "ue" => {}
            _ => route.extend(["rto_min", &rto_min, "initcwnd", &initcwnd]),
        }
        run("ip", &["-n", name, "addr", "add", &format!("{}/24", s.ip), "dev", &s.veth])?;
        run("ip", &["-n", name, "link", "set", &s.veth, "mtu", &s.mtu, "up"])?;
        if let Some(table) = &table {
            run("ip", &["-n", name, "rule", "add", "from", &s.ip.to_string(), "lookup", table])?;
        }
        run("ip", &route)?;
    }
    let extra_subflows = (plan.paths.len() - 1).to_string();
    // The endpoints' namespaces (the gNB's forwards only).
    for role in roles(plan).iter().filter(|&&role| role != "gnb") {
        let name = ns.name(role);
        if plan.transport == Transport::Mptcp {
            // One subflow per path: the UE opens one from each further address.
            run("ip", &["-n", name, "mptcp", "limits", "set", "subflows", &extra_subflows, "add_addr_accepted", "0"])?;
        }
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
    for s in sides.iter().filter(|s| s.path.is_some_and(|p| p > 0)) {
        run("ip", &["-n", ns.name("ue"), "mptcp", "endpoint", "add", &s.ip.to_string(), "dev", &s.veth, "subflow"])?;
    }
    let proxy_side = plan.split.as_ref().map(|_| devices.pop().expect("the proxy's device"));
    let ue_sides = devices.split_off(1);
    let server_side = devices.pop().expect("the server's device");
    Ok(Devices { server_side, ue_sides, proxy_side })
}
