//! The daemon's packet path on scripted raw datagrams: what passes untouched, what is
//! counted as bad input, and what the proxy rewrites (checksums always complete).

use std::net::Ipv4Addr;

use millinet_proxyd::{ChecksumState, DaemonConfig, Datapath, Emitted, Input, Ipv4Network, Toward};
use millinet_wire::{emit, parse, Packet, TcpFlags, TcpHeader, TcpOptions, Telemetry, Timestamps, UdpHeader};

const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 7);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const MS: u64 = 1_000_000;

fn datapath(overrides: &[&str]) -> Datapath {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let proxy = DaemonConfig::load(None, &overrides).unwrap().build(None).unwrap();
    Datapath::new(proxy, vec!["10.45.0.0/16".parse::<Ipv4Network>().unwrap()])
}

fn tcp(from_ue: bool, seq: u32, ack: u32, flags: TcpFlags, options: TcpOptions, payload: &[u8]) -> Vec<u8> {
    let (src, dst, sport, dport) = if from_ue { (UE, SERVER, 40_000, 443) } else { (SERVER, UE, 443, 40_000) };
    let h = TcpHeader { src_port: sport, dst_port: dport, seq, ack, flags, window: 1000, options };
    let mut buf = vec![0; 70_000];
    let n = emit(&Packet::tcp(src, dst, h, payload.len() as u32), payload, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// Every output of one call: `None` for the input forwarded unchanged.
fn feed(
    dp: &mut Datapath,
    now: u64,
    datagram: &[u8],
    checksum: ChecksumState,
    segment_bytes: Option<u16>,
) -> Vec<Option<(Toward, Vec<u8>)>> {
    let mut out = Vec::new();
    dp.on_datagram(now, Input { datagram, checksum, segment_bytes }, &mut |e| {
        out.push(match e {
            Emitted::Original => None,
            Emitted::Datagram { bytes, toward } => Some((toward, bytes.to_vec())),
        })
    });
    out
}

fn ts(tsval: u32, tsecr: u32) -> TcpOptions {
    TcpOptions { timestamps: Some(Timestamps { tsval, tsecr }), ..TcpOptions::default() }
}

#[test]
fn bad_input_is_counted_and_forwarded_unchanged() {
    let mut dp = datapath(&[]);
    let syn = tcp(true, 100, 0, TcpFlags::SYN, TcpOptions { mss: Some(1460), ..TcpOptions::default() }, &[]);
    // Truncated headers, a wrong TCP checksum, UDP, ICMP, an address on neither side.
    assert_eq!(feed(&mut dp, 0, &syn[..30], ChecksumState::Complete, None), [None]);
    let mut corrupt = syn.clone();
    corrupt[36] ^= 0x55;
    assert_eq!(feed(&mut dp, 0, &corrupt, ChecksumState::Complete, None), [None]);
    let udp = {
        let mut buf = vec![0; 100];
        let n = emit(&Packet::udp(UE, SERVER, UdpHeader { src_port: 5, dst_port: 53 }, 4), b"abcd", &mut buf).unwrap();
        buf.truncate(n);
        buf
    };
    assert_eq!(feed(&mut dp, 0, &udp, ChecksumState::Complete, None), [None]);
    let mut icmp = udp.clone();
    icmp[9] = 1;
    assert_eq!(feed(&mut dp, 0, &icmp, ChecksumState::Partial, None), [None]);
    let mut elsewhere = syn.clone();
    elsewhere[12..16].copy_from_slice(&[198, 51, 100, 1]);
    assert_eq!(feed(&mut dp, 0, &elsewhere, ChecksumState::Partial, None), [None]);
    let st = dp.stats;
    assert_eq!((st.malformed, st.bad_checksum, st.not_tcp, st.not_ue_traffic), (1, 1, 2, 1));
    assert_eq!(st.datagrams_forwarded_unchanged, 5);
    assert_eq!(dp.proxy().summary().counters.iter().find(|(n, _)| *n == "flows_created").unwrap().1, 0, "none reached the core");
    // A checksum the kernel left partial is not verified: the SYN reaches the core.
    let out = feed(&mut dp, 0, &corrupt, ChecksumState::Partial, None);
    assert!(matches!(out.as_slice(), [Some((Toward::Server, _))]));
    // Telemetry that is not a version-1 record changes nothing.
    dp.on_telemetry(0, b"MNTL\x02rest", &mut |_| panic!("nothing to emit"));
    assert_eq!(dp.stats.telemetry_malformed, 1);
}

#[test]
fn a_proxied_flow_gets_the_clamp_the_sender_segments_and_the_flow_window_with_complete_checksums() {
    let mut dp = datapath(&["proxy.policy=static", "proxy.static_fw_bytes=64000"]);
    let syn_options = TcpOptions {
        mss: Some(9000),
        window_scale: Some(7),
        sack_permitted: true,
        timestamps: Some(Timestamps { tsval: 1, tsecr: 0 }),
        ..TcpOptions::default()
    };
    let out = feed(&mut dp, 0, &tcp(true, 100, 0, TcpFlags::SYN, syn_options, &[]), ChecksumState::Partial, None);
    let [Some((Toward::Server, syn))] = out.as_slice() else { panic!("{out:?}") };
    let (packet, _) = parse(syn, true).expect("complete checksums");
    assert_eq!(packet.tcp_header().unwrap().options.mss, Some(1400), "clamped to MSS1");
    let synack_options = TcpOptions { mss: Some(1400), window_scale: Some(7), sack_permitted: true, ..ts(50, 1) };
    let synack = tcp(false, 5000, 101, TcpFlags::SYN | TcpFlags::ACK, synack_options, &[]);
    assert_eq!(feed(&mut dp, MS, &synack, ChecksumState::Complete, None), [None], "the SYN-ACK goes on untouched");
    feed(&mut dp, 2 * MS, &tcp(true, 101, 5001, TcpFlags::ACK, ts(2, 50), &[]), ChecksumState::Complete, None);

    // One GSO datagram of three 1000-byte segments: the core gets them one by one, and what
    // reaches the UE is the same bytes at the same sequence numbers.
    let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
    let gso = tcp(false, 5001, 101, TcpFlags::ACK | TcpFlags::PSH, ts(51, 2), &bytes);
    let out = feed(&mut dp, 3 * MS, &gso, ChecksumState::Partial, Some(1000));
    let mut delivered = Vec::new();
    for o in &out {
        let Some((Toward::Ue, datagram)) = o else { panic!("{out:?}") };
        let (packet, payload) = parse(datagram, true).expect("complete checksums");
        assert_eq!(packet.tcp_header().unwrap().seq, 5001 + delivered.len() as u32);
        delivered.extend_from_slice(payload);
    }
    assert_eq!(delivered, bytes);
    // The UE acknowledges all of it: one relayed ACK per server segment (docs/proxy.md#how-a-flow-is-handled),
    // each with the flow window in the window field: 64 000 bytes >> 7 (below the UE's own
    // 1000 << 7, which it never exceeds).
    let out = feed(&mut dp, 10 * MS, &tcp(true, 101, 8001, TcpFlags::ACK, ts(3, 51), &[]), ChecksumState::Complete, None);
    let acks: Vec<(u32, u16)> = out
        .iter()
        .map(|o| {
            let Some((Toward::Server, datagram)) = o else { panic!("{out:?}") };
            let (packet, _) = parse(datagram, true).expect("complete checksums");
            let h = packet.tcp_header().unwrap();
            (h.ack, h.window)
        })
        .collect();
    assert_eq!(acks, [(6001, 500), (7001, 500), (8001, 500)]);
    assert_eq!(dp.stats.datagrams_emitted_toward_ue, 3);
}

#[test]
fn telemetry_in_the_wire_format_reaches_the_core() {
    let mut dp = datapath(&[]);
    let record = Telemetry { t_ns: 5 * MS, rlc_bytes: 1000, rate_bps: 1e9, sinr_db: 12.0, outage: false };
    dp.on_telemetry(6 * MS, &record.encode(UE), &mut |_| {});
    let applied = dp.proxy().summary().counters.iter().find(|(n, _)| *n == "telemetry_late").unwrap().1;
    assert_eq!((dp.stats.telemetry_received, dp.stats.newest_telemetry_t_ns, applied), (1, Some(5 * MS), 0));
    // Already older than telemetry_max_age_s (0.1 s) when it arrives: refused by the core.
    dp.on_telemetry(200 * MS, &record.encode(UE), &mut |_| {});
    let late = dp.proxy().summary().counters.iter().find(|(n, _)| *n == "telemetry_late").unwrap().1;
    assert_eq!(late, 1);
}

#[test]
fn a_flow_the_proxy_does_not_handle_passes_whole_even_as_a_gso_datagram() {
    let mut dp = datapath(&["proxy.server_ports=[8080]"]);
    let syn = tcp(true, 100, 0, TcpFlags::SYN, TcpOptions { mss: Some(9000), ..TcpOptions::default() }, &[]);
    assert_eq!(feed(&mut dp, 0, &syn, ChecksumState::Complete, None), [None], "port 443 is not handled: the SYN keeps its MSS");
    let gso = tcp(false, 5001, 101, TcpFlags::ACK, TcpOptions::default(), &[9u8; 4000]);
    assert_eq!(feed(&mut dp, MS, &gso, ChecksumState::Partial, Some(1000)), [None], "one verdict for the whole datagram");
    assert_eq!(dp.stats.datagrams_emitted_toward_ue, 0);
}
