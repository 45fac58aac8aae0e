//! The proxies behind `Middlebox` (milliProxy, split-TCP) fed packet sequences in both
//! directions and telemetry, built from the fuzzer's bytes.

use std::net::{Ipv4Addr, SocketAddrV4};

use arbitrary::{Arbitrary, Unstructured};
use millinet_proxy::{
    Direction, FlowKey, HandlingRule, Middlebox, NoPayloads, PolicySpec, Proxy, ProxyConfig, SplitConfig, SplitProxy, Telemetry,
};
use millinet_transport::TcpConfig;
use millinet_wire::{Packet, SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps};

/// Few addresses and ports, so that flows meet again and again.
const UES: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 3)];
const SERVER: Ipv4Addr = Ipv4Addr::new(1, 1, 1, 1);
const SERVER_PORTS: [u16; 2] = [80, 443];
const UE_PORTS: [u16; 2] = [40_000, 40_001];
pub(crate) const FLOWS: usize = UES.len() * SERVER_PORTS.len() * UE_PORTS.len();
/// Sequence offsets come in units of this many bytes: enough to cross the buffers quickly.
const OFFSET_UNIT_BYTES: u32 = 256;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Initial sequence numbers of every possible flow, both ends.
    isns: [(u32, u32); FLOWS],
    max_flows: u8,
    /// Per-flow and total buffer limits, in KiB (+1).
    flow_buffer_kib: u8,
    total_buffer_kib: u16,
    local_rto: bool,
    suppress_dup_acks: bool,
    policy: u8,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    FromUe {
        flow: u8,
        seg: Segment,
    },
    FromServer {
        flow: u8,
        seg: Segment,
    },
    Telemetry(TelemetryOp),
    /// Time passes (µs); due deadlines fire.
    Wait(u16),
}

/// A telemetry record of one of the UEs.
#[derive(Arbitrary, Debug)]
pub(crate) struct TelemetryOp {
    ue: bool,
    rlc_kib: u16,
    rate_mbps: u16,
    sinr_db: i8,
    outage: bool,
}

impl TelemetryOp {
    /// The UE's address and its record, sampled at `t_ns`.
    pub(crate) fn record(&self, t_ns: u64) -> (Ipv4Addr, Telemetry) {
        let record = Telemetry {
            t_ns,
            rlc_bytes: u64::from(self.rlc_kib) * 1024,
            rate_bps: f64::from(self.rate_mbps) * 1e6,
            sinr_db: f64::from(self.sinr_db),
            outage: self.outage,
        };
        (UES[usize::from(self.ue)], record)
    }
}

#[derive(Arbitrary, Debug)]
pub(crate) struct Segment {
    /// The 9 control bits (AE included), masked from 16.
    flags: u16,
    /// Own sequence and acknowledged offsets from the ISNs + 1, in `OFFSET_UNIT_BYTES`.
    seq_units: u16,
    ack_units: u16,
    payload_bytes: u16,
    window: u16,
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    timestamps: Option<(u32, u32)>,
    sack: Vec<(u16, u16)>,
}

/// One flow's addresses and sequence spaces.
struct Flow {
    key: FlowKey,
    ue_isn: u32,
    server_isn: u32,
    /// Highest offset the UE acknowledged of the server's stream (from server ISN + 1).
    ue_acked: Option<i64>,
}

impl Flow {
    fn server_offset(&self, ack: u32) -> i64 {
        i64::from(ack.wrapping_sub(self.server_isn.wrapping_add(1)) as i32)
    }
}

/// milliProxy never panics, never acknowledges to a server what the UE has not
/// acknowledged (end-to-end semantics: its ACKs toward the server are the UE's, split at
/// segment boundaries), and keeps within its flow and buffer limits.
pub fn milliproxy(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let policy = match input.policy % 5 {
        0 => PolicySpec::new("bdp"),
        1 => PolicySpec::new("static").with("fw_bytes", f64::from(input.policy) * 1024.0),
        2 => PolicySpec::new("target-queue"),
        3 => PolicySpec::new("calibrated").with("interval_s", 1e-3),
        _ => PolicySpec::new("passthrough"),
    };
    let cfg = ProxyConfig {
        rule: HandlingRule::ServerPorts(vec![SERVER_PORTS[0]]),
        max_flows: usize::from(input.max_flows % 4) + 1,
        flow_buffer_bytes: (u64::from(input.flow_buffer_kib) + 1) * 1024,
        total_buffer_bytes: (u64::from(input.total_buffer_kib) + 1) * 1024,
        local_rto_ns: input.local_rto.then_some(50_000_000),
        suppress_dup_acks_while_repairing: input.suppress_dup_acks,
        policy,
        ..ProxyConfig::default()
    };
    let mut proxy: Proxy = Proxy::new(cfg.clone()).expect("a valid configuration");
    run(&input, &mut proxy, |proxy, now_ns| {
        let stats = proxy.stats();
        assert!(proxy.flow_count() <= cfg.max_flows, "{} flows, limit {}", proxy.flow_count(), cfg.max_flows);
        assert!(stats.buffer_bytes <= cfg.total_buffer_bytes, "{} bytes buffered, limit {}", stats.buffer_bytes, cfg.total_buffer_bytes);
        let mut sum = 0;
        for key in proxy.flow_keys() {
            let flow = proxy.flow_stats(now_ns, &key).expect("a listed flow");
            assert!(
                flow.buffered_bytes <= cfg.flow_buffer_bytes,
                "{key:?}: {} bytes buffered, limit {}",
                flow.buffered_bytes,
                cfg.flow_buffer_bytes
            );
            sum += flow.buffered_bytes;
        }
        assert_eq!(sum, stats.buffer_bytes, "the proxy's buffer count is not the sum of its flows'");
    });
}

/// The split-TCP baseline never panics and keeps within its flow and buffer limits (it
/// acknowledges early by design, so the end-to-end check does not apply).
pub fn split_proxy(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let downstream = TcpConfig { cc: ["cubic", "newreno", "bbr"][usize::from(input.policy) % 3].to_string(), ..TcpConfig::default() };
    let cfg = SplitConfig {
        rule: HandlingRule::ServerPorts(vec![SERVER_PORTS[0]]),
        max_flows: usize::from(input.max_flows % 4) + 1,
        buffer_bytes: (u64::from(input.flow_buffer_kib) + 2) * 1024,
        downstream,
        iss_secret: u64::from(input.total_buffer_kib),
    };
    let mut proxy = SplitProxy::new(cfg.clone()).expect("a valid configuration");
    run(&input, &mut proxy, |proxy, _| {
        let keys: Vec<FlowKey> = proxy.flow_keys().collect();
        assert!(keys.len() <= cfg.max_flows, "{} flows, limit {}", keys.len(), cfg.max_flows);
        let mut sum = 0;
        for key in keys {
            let flow = proxy.flow_stats(&key).expect("a listed flow");
            assert!(flow.buffered_bytes <= cfg.buffer_bytes, "{key:?}: {} bytes buffered, limit {}", flow.buffered_bytes, cfg.buffer_bytes);
            sum += flow.buffered_bytes;
        }
        assert_eq!(sum, proxy.stats().buffer_bytes, "the proxy's buffer count is not the sum of its flows'");
    });
}

/// Feeds `input` to `proxy`, calling `check` after every step; for milliProxy, also checks
/// that what leaves toward a server acknowledges at most what its UE acknowledged.
fn run<M: Middlebox>(input: &Input, proxy: &mut M, check: impl Fn(&M, u64)) {
    let end_to_end = proxy.summary().kind == "milliproxy";
    let mut flows: Vec<Flow> =
        (0..FLOWS).map(|i| Flow { key: flow_key(i), ue_isn: input.isns[i].0, server_isn: input.isns[i].1, ue_acked: None }).collect();
    let mut pool = NoPayloads;
    let mut out = Vec::new();
    let mut now_ns = 0u64;
    for op in &input.ops {
        match op {
            Op::FromUe { flow, seg } => {
                let f = &mut flows[usize::from(*flow) % FLOWS];
                let pkt = segment(f.key.ue, f.key.server, f.ue_isn, f.server_isn, seg);
                let h = pkt.tcp_header().expect("TCP");
                if h.flags.contains(TcpFlags::ACK) {
                    let acked = f.server_offset(h.ack);
                    f.ue_acked = Some(f.ue_acked.map_or(acked, |a| a.max(acked)));
                }
                proxy.on_packet(now_ns, pkt, Direction::FromUe, &mut pool, &mut out);
            }
            Op::FromServer { flow, seg } => {
                let f = &flows[usize::from(*flow) % FLOWS];
                let pkt = segment(f.key.server, f.key.ue, f.server_isn, f.ue_isn, seg);
                proxy.on_packet(now_ns, pkt, Direction::FromServer, &mut pool, &mut out);
            }
            Op::Telemetry(report) => {
                let (ue, record) = report.record(now_ns);
                proxy.on_telemetry(now_ns, ue, record, &mut pool, &mut out);
            }
            &Op::Wait(us) => {
                now_ns += u64::from(us) * 1_000;
                while let Some(deadline_ns) = proxy.next_deadline_ns().filter(|&d| d <= now_ns) {
                    proxy.on_timeout(deadline_ns, &mut pool, &mut out);
                    // A deadline that stays put after it fired would spin a driver at one instant.
                    assert!(proxy.next_deadline_ns().is_none_or(|d| d > deadline_ns), "deadline {deadline_ns} ns still due after it fired");
                }
            }
        }
        if end_to_end {
            for pkt in out.iter().filter(|p| p.dst == SERVER) {
                let Some(h) = pkt.tcp_header().filter(|h| h.flags.contains(TcpFlags::ACK)) else { continue };
                let f = flows.iter().find(|f| f.key == FlowKey::of(pkt, Direction::FromUe)).expect("toward a known flow");
                let acked = f.server_offset(h.ack);
                assert!(
                    f.ue_acked.is_some_and(|ue| acked <= ue),
                    "{:?}: ACK of offset {acked} toward the server, the UE acknowledged {:?}",
                    f.key,
                    f.ue_acked
                );
            }
        }
        out.clear();
        check(proxy, now_ns);
    }
}

/// The addresses of flow `i` (< `FLOWS`).
pub(crate) fn flow_key(i: usize) -> FlowKey {
    FlowKey { ue: SocketAddrV4::new(UES[i % 2], UE_PORTS[(i / 2) % 2]), server: SocketAddrV4::new(SERVER, SERVER_PORTS[i / 4]) }
}

/// A segment from `from` to `to`: a SYN at the sender's ISN, anything else in the stream
/// after it.
pub(crate) fn segment(from: SocketAddrV4, to: SocketAddrV4, own_isn: u32, peer_isn: u32, s: &Segment) -> Packet {
    let flags = TcpFlags(s.flags & 0x1ff);
    let offset = |units: u16| u32::from(units).wrapping_mul(OFFSET_UNIT_BYTES);
    let seq = if flags.contains(TcpFlags::SYN) { own_isn } else { own_isn.wrapping_add(1).wrapping_add(offset(s.seq_units)) };
    let ack = peer_isn.wrapping_add(1).wrapping_add(offset(s.ack_units));
    let mut options = TcpOptions {
        mss: s.mss,
        window_scale: s.window_scale,
        sack_permitted: s.sack_permitted,
        timestamps: s.timestamps.map(|(tsval, tsecr)| Timestamps { tsval, tsecr }),
        ..TcpOptions::default()
    };
    for &(left, len) in &s.sack {
        let left = peer_isn.wrapping_add(1).wrapping_add(offset(left));
        if !options.push_sack(SackBlock { left, right: left.wrapping_add(u32::from(len)) }) {
            break;
        }
    }
    let header = TcpHeader { src_port: from.port(), dst_port: to.port(), seq, ack, flags, window: s.window, options };
    Packet::tcp(*from.ip(), *to.ip(), header, u32::from(s.payload_bytes))
}
