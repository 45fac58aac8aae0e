//! The crate's one `Middlebox` interface: both proxies driven through the same path, unknown
//! TCP options crossing them unchanged, and real payload bytes through milliProxy.

mod common;

use common::scripted::*;
use common::*;
use millinet_proxy::{
    Direction, HandlingRule, Middlebox, NoPayloads, PayloadBytes, PayloadPool, PayloadStore, PolicySpec, Proxy, ProxyConfig, SplitConfig,
    SplitProxy,
};
use millinet_transport::TcpConfig;
use millinet_wire::accecn::AccEcnOption;
use millinet_wire::{emit, parse, Packet, PayloadId, TcpFlags, TcpHeader, TcpOptions, ECN_CE};

#[test]
fn both_proxies_run_through_one_driver_path() {
    let bytes = 2_000_000;
    let split =
        SplitConfig { downstream: TcpConfig { cc: "newreno".into(), mss_bytes: 1400, ..TcpConfig::default() }, ..SplitConfig::default() };
    let mut acks_beyond_ue = Vec::new();
    for proxy in [AnyProxy::Milli(ProxyConfig::default()), AnyProxy::Split(split)] {
        let mut s = Setup::with_proxy(proxy, bytes);
        s.ue_link_rate_bps = Some(50_000_000);
        s.telemetry_rate_bps = Some(|_| 50_000_000);
        let mut sim: Sim<Box<dyn Middlebox>> = Sim::new(s);
        sim.run(60_000 * MS, bytes);
        assert_eq!(sim.delivered(), bytes);
        let summary = sim.proxy.summary();
        assert_eq!(summary.counters.iter().find(|(name, _)| *name == "flows_created"), Some(&("flows_created", 1)), "{summary:?}");
        acks_beyond_ue.push((summary.kind, sim.proxy.acks_beyond_ue));
    }
    // End-to-end semantics: milliProxy (checked on every ACK) never acknowledges ahead of the
    // UE; the split proxy does by design.
    assert_eq!(acks_beyond_ue[0], ("milliproxy", 0));
    assert!(acks_beyond_ue[1].0 == "split" && acks_beyond_ue[1].1 > 0, "{acks_beyond_ue:?}");
}

/// MPTCP DSS-like option (kind 30, RFC 8684) and an experimental one (kind 253, RFC 6994).
fn with_unknown(mut p: Packet, option: &[u8]) -> Packet {
    p.tcp_header_mut().unwrap().options.push_raw(option).unwrap();
    p
}

fn raw(p: &Packet) -> Vec<u8> {
    p.tcp_header().unwrap().options.raw().as_bytes().to_vec()
}

#[test]
fn unknown_options_cross_milliproxy_in_both_directions() {
    let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let dss = [30, 8, 0x20, 0x01, 1, 2, 3, 4];
    let exp = [253, 6, 0x12, 0x34, 9, 9];
    let mut out = Vec::new();

    // Server data toward the UE: the (coalesced) segment carries the option.
    proxy.on_packet(MS, with_unknown(data(4000, 0, 1400), &dss), Direction::FromServer, &mut NoPayloads, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].payload_bytes, raw(&out[0])), (1400, dss.to_vec()));
    out.clear();

    // The UE's ACK toward the server: relayed with the option.
    let ack = seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 1400, TcpFlags::ACK, 0, TcpOptions::default());
    proxy.on_packet(2 * MS, with_unknown(ack, &dss), Direction::FromUe, &mut NoPayloads, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].dst, raw(&out[0])), (*SERVER.ip(), dss.to_vec()));
    out.clear();

    // UE data toward the server, and the server's pure ACK of it toward the UE.
    let up = seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 1400, TcpFlags::ACK, 500, TcpOptions::default());
    proxy.on_packet(3 * MS, with_unknown(up, &exp), Direction::FromUe, &mut NoPayloads, &mut out);
    let down = seg(SERVER, ue(4000), SERVER_ISN + 1 + 1400, 601, TcpFlags::ACK, 0, TcpOptions::default());
    proxy.on_packet(4 * MS, with_unknown(down, &exp), Direction::FromServer, &mut NoPayloads, &mut out);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|p| raw(p) == exp), "{out:?}");
    assert_eq!((out[0].dst, out[0].payload_bytes, out[1].dst), (*SERVER.ip(), 500, UE_IP));
}

#[test]
fn unknown_options_cross_the_pass_through_paths_unchanged() {
    let unhandled = HandlingRule::ServerPorts(vec![443]);
    let milli: Box<dyn Middlebox> =
        Box::new(Proxy::<millinet_proxy::LengthOnly>::new(ProxyConfig { rule: unhandled.clone(), ..ProxyConfig::default() }).unwrap());
    let split: Box<dyn Middlebox> = Box::new(SplitProxy::new(SplitConfig { rule: unhandled, ..SplitConfig::default() }).unwrap());
    for mut proxy in [milli, split] {
        let syn = with_unknown(seg(ue(4000), SERVER, 100, 0, TcpFlags::SYN, 0, syn_options(20_000)), &[30, 4, 0x00, 0x81]);
        let data = with_unknown(data(4000, 0, 1400), &[30, 8, 0x20, 0x01, 1, 2, 3, 4]);
        let ack =
            with_unknown(seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + 1400, TcpFlags::ACK, 0, TcpOptions::default()), &[253, 4, 0x12, 0x34]);
        let mut out = Vec::new();
        proxy.on_packet(0, syn, Direction::FromUe, &mut NoPayloads, &mut out);
        proxy.on_packet(MS, data, Direction::FromServer, &mut NoPayloads, &mut out);
        proxy.on_packet(2 * MS, ack, Direction::FromUe, &mut NoPayloads, &mut out);
        assert_eq!(out, [syn, data, ack], "{}", proxy.summary().kind);
    }
}

/// The driver's packet buffers, as a daemon would hold them.
#[derive(Default)]
struct Buffers(Vec<Vec<u8>>);

impl Buffers {
    fn add(&mut self, bytes: Vec<u8>) -> PayloadId {
        self.0.push(bytes);
        PayloadId(self.0.len() as u32 - 1)
    }
}

impl PayloadPool for Buffers {
    fn bytes(&self, id: PayloadId) -> &[u8] {
        self.0.get(id.0 as usize).map_or(&[], |b| b.as_slice())
    }
    fn alloc(&mut self, len: usize) -> (PayloadId, &mut [u8]) {
        let id = self.add(vec![0; len]);
        (id, self.0.last_mut().unwrap())
    }
}

/// The UE's ACK of `acked` stream bytes with window field `window`.
fn ue_ack(acked: u32, window: u16) -> Packet {
    let mut p = seg(ue(4000), SERVER, 101, SERVER_ISN + 1 + acked, TcpFlags::ACK, 0, TcpOptions::default());
    p.tcp_header_mut().unwrap().window = window;
    p
}

#[test]
fn segments_with_different_unknown_options_are_not_merged() {
    // Two MP-TCP DSS mappings (RFC 8684 §3.3.1), each of two 1400-byte segments: a merged
    // segment may extend one mapping's pair but never reach into the other's range, where the
    // receiver would reset the subflow.
    let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let mut out = Vec::new();
    // A window of one segment (field 11, shift 7: 1408 bytes): the rest wait in the buffer.
    proxy.on_packet(MS, ue_ack(0, 11), Direction::FromUe, &mut NoPayloads, &mut out);
    let mapping = |first: u8| [30, 8, 0x20, 0x01, first, 0, 0, 0];
    let constituents = [mapping(1), mapping(1), mapping(2), mapping(2), mapping(2)];
    for (i, option) in constituents.iter().enumerate() {
        let p = with_unknown(data(4000, 1400 * i as u32, 1400), option);
        proxy.on_packet((2 + i as u64) * MS, p, Direction::FromServer, &mut NoPayloads, &mut out);
    }
    proxy.on_packet(20 * MS, ue_ack(1400, 1000), Direction::FromUe, &mut NoPayloads, &mut out);

    let toward_ue: Vec<(u64, u32, Vec<u8>)> = (out.iter().filter(|p| p.dst == UE_IP && p.payload_bytes > 0))
        .map(|p| (p.tcp_header().unwrap().seq.wrapping_sub(SERVER_ISN + 1) as u64, p.payload_bytes, raw(p)))
        .collect();
    assert_eq!(toward_ue.iter().map(|s| s.1).sum::<u32>(), 7000, "every byte went toward the UE once: {toward_ue:?}");
    for (start, len, option) in &toward_ue {
        for offset in (*start..start + *len as u64).step_by(1400) {
            assert_eq!(
                option,
                &constituents[offset as usize / 1400].to_vec(),
                "segment at {start} (+{len}) spans a mapping it does not carry"
            );
        }
    }
    // Within one mapping, segments still merge: the second mapping's three leave as one.
    assert!(toward_ue.contains(&(2800, 4200, mapping(2).to_vec())), "{toward_ue:?}");
}

/// Byte `offset` of the server's stream: varied enough that a misplaced range shows.
#[test]
fn a_coalesced_segment_keeps_a_constituents_congestion_mark() {
    // RFC 3168 §5: the UE must see a CE mark a router set on any of the segments milliProxy
    // merges, or the server never hears of that congestion. ECT(0) is 0b10.
    let ect0 = 0b10;
    for (marks, expected) in [([ect0, ECN_CE, ect0], ECN_CE), ([ect0, ect0, ect0], ect0)] {
        let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
        let mut proxy: Proxy = Proxy::new(cfg).unwrap();
        handshake(&mut proxy, 0, 4000);
        let mut out = Vec::new();
        // A window of one segment (field 11, shift 7: 1408 bytes): the rest wait in the buffer.
        proxy.on_packet(MS, ue_ack(0, 11), Direction::FromUe, &mut NoPayloads, &mut out);
        for (i, ecn) in [ect0, marks[0], marks[1], marks[2]].into_iter().enumerate() {
            let mut p = data(4000, 1400 * i as u32, 1400);
            p.ecn = ecn;
            proxy.on_packet((2 + i as u64) * MS, p, Direction::FromServer, &mut NoPayloads, &mut out);
        }
        out.clear();
        proxy.on_packet(20 * MS, ue_ack(1400, 1000), Direction::FromUe, &mut NoPayloads, &mut out);
        let toward_ue: Vec<&Packet> = out.iter().filter(|p| p.dst == UE_IP && p.payload_bytes > 0).collect();
        assert_eq!(toward_ue.iter().map(|p| p.payload_bytes).collect::<Vec<_>>(), vec![4200], "the three waiting segments leave as one");
        assert_eq!(toward_ue[0].ecn, expected, "constituents {marks:?}");
    }
}

/// Accurate ECN (RFC 9768 §3.2): the UE's ACE field and AccECN option are its counters of what
/// arrived; the ACKs milliProxy relays toward the server carry them as the UE sent them, or the
/// server's congestion control would read other counts than the UE's.
#[test]
fn relayed_acks_carry_the_ues_accurate_ecn_feedback() {
    let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
    let mut proxy: Proxy = Proxy::new(cfg).unwrap();
    handshake(&mut proxy, 0, 4000);
    let mut out = Vec::new();
    proxy.on_packet(MS, ue_ack(0, 1000), Direction::FromUe, &mut NoPayloads, &mut out);
    for i in 0..3 {
        proxy.on_packet((2 + i as u64) * MS, data(4000, 1400 * i, 1400), Direction::FromServer, &mut NoPayloads, &mut out);
    }
    out.clear();
    let counters = AccEcnOption { e0b: Some(2801), ceb: Some(1400), e1b: Some(1) };
    let mut ack = ue_ack(4200, 1000);
    let header = ack.tcp_header_mut().unwrap();
    header.flags = header.flags.with_ace(6);
    header.options.push_accecn(&counters, 3).unwrap();
    proxy.on_packet(20 * MS, ack, Direction::FromUe, &mut NoPayloads, &mut out);
    let relayed: Vec<&TcpHeader> = out.iter().filter(|p| p.dst != UE_IP).filter_map(|p| p.tcp_header()).collect();
    assert!(!relayed.is_empty());
    for h in relayed {
        assert_eq!(h.flags.ace(), 6, "{h:?}");
        assert_eq!(h.options.accecn(), Some(counters), "{h:?}");
    }
}

fn stream_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(131) ^ (offset >> 8)) as u8
}

#[test]
fn coalesced_segments_carry_exactly_the_servers_bytes() {
    let cfg = ProxyConfig { policy: PolicySpec::new("passthrough"), ..ProxyConfig::default() };
    let mut proxy: Proxy<PayloadBytes> = Proxy::new(cfg).unwrap();
    let mut pool = Buffers::default();
    handshake(&mut proxy, 0, 4000);
    let mut out = Vec::new();
    // The UE's window (field 11, shift 7: 1408 bytes) lets one 1400-byte segment go at a time;
    // the rest wait in the buffer and leave coalesced when the window opens.
    proxy.on_packet(MS, ue_ack(0, 11), Direction::FromUe, &mut pool, &mut out);
    let sizes = [1400u32, 1400, 700, 1400, 1100, 1400];
    let mut offset = 0u64;
    for (i, &len) in sizes.iter().enumerate() {
        let mut p = data(4000, offset as u32, len);
        p.meta.payload = pool.add((offset..offset + len as u64).map(stream_byte).collect());
        proxy.on_packet((2 + i as u64) * MS, p, Direction::FromServer, &mut pool, &mut out);
        offset += len as u64;
    }
    proxy.on_packet(20 * MS, ue_ack(1400, 1000), Direction::FromUe, &mut pool, &mut out);

    let toward_ue: Vec<&Packet> = out.iter().filter(|p| p.dst == UE_IP && p.payload_bytes > 0).collect();
    let forwarded: u32 = toward_ue.iter().map(|p| p.payload_bytes).sum();
    assert_eq!(forwarded, sizes.iter().sum::<u32>(), "every byte went toward the UE once");
    assert!(toward_ue.iter().any(|p| p.payload_bytes > 1400), "nothing was coalesced");
    for p in toward_ue {
        let start = p.tcp_header().unwrap().seq.wrapping_sub(SERVER_ISN + 1) as u64;
        let bytes = pool.bytes(p.meta.payload);
        let expected: Vec<u8> = (start..start + p.payload_bytes as u64).map(stream_byte).collect();
        assert_eq!(bytes, expected, "segment at {start} (+{})", p.payload_bytes);
        let mut datagram = vec![0u8; 70_000];
        let n = emit(p, bytes, &mut datagram).unwrap();
        let (parsed, payload) = parse(&datagram[..n], true).unwrap();
        assert_eq!((payload, parsed.tcp_header().unwrap().seq), (&expected[..], p.tcp_header().unwrap().seq));
    }
    let buffered: Vec<u8> = {
        let key = proxy.flow_keys().next().unwrap();
        let mut b = vec![0u8; 1400];
        proxy.payload(&key).unwrap().read(1400, &mut b);
        b
    };
    assert_eq!(buffered, (1400..2800).map(stream_byte).collect::<Vec<_>>(), "unacknowledged bytes stay buffered");
}
