//! The daemon's packet path (`millinet_proxyd::Datapath`) fed raw IPv4 datagrams as NFQUEUE
//! hands them over — well-formed segments of a few flows both ways, damaged ones (truncated,
//! a flipped byte), arbitrary bytes, GSO packets, unverifiable (partial) checksums — with
//! telemetry datagrams (well-formed, stale or arbitrary), sealed ones (authentic, replayed,
//! altered or arbitrary) and time, under small flow and UE limits.

use arbitrary::{Arbitrary, Unstructured};
use millinet_proxyd::{ChecksumState, DaemonConfig, Datapath, Emitted, Input, Ipv4Network, Toward};
use millinet_scenario::ProxySpec;
use millinet_wire::{Sealed, TelemetryKey};

use crate::proxy::{flow_key, segment, Segment, TelemetryOp, FLOWS};

/// The UE side: both of `proxy::UES`.
const UE_NET: Ipv4Network = Ipv4Network { address: std::net::Ipv4Addr::new(10, 0, 0, 0), prefix_len: 24 };
/// Payloads are cut to this: several segments, far from the IPv4 length limit.
const MAX_PAYLOAD_BYTES: u16 = 9000;

#[derive(Arbitrary, Debug)]
struct DatapathInput {
    isns: [(u32, u32); FLOWS],
    max_flows: u8,
    max_ues: u8,
    policy: u8,
    mss2_bytes: u16,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Segment {
        from_ue: bool,
        flow: u8,
        seg: Segment,
        how: Delivery,
        damage: Damage,
    },
    Raw {
        how: Delivery,
        bytes: Vec<u8>,
    },
    /// A record sampled `age_ms` ago.
    Telemetry {
        report: TelemetryOp,
        age_ms: u16,
    },
    TelemetryRaw(Vec<u8>),
    /// A record sealed under the datapath's key by one of a few publishers, sampled `age_ms`
    /// ago, with one byte flipped if `flip` is given.
    Sealed {
        report: TelemetryOp,
        age_ms: u16,
        publisher: u8,
        sequence: u8,
        flip: Option<(u8, u8)>,
    },
    SealedRaw(Vec<u8>),
    /// Time passes (µs); due timers fire.
    Wait(u16),
}

/// How NFQUEUE hands the datagram over.
#[derive(Arbitrary, Debug)]
struct Delivery {
    partial_checksum: bool,
    gso_segment_bytes: Option<u16>,
}

#[derive(Arbitrary, Debug)]
enum Damage {
    None,
    Truncate(u16),
    Flip { at: u16, xor: u8 },
}

/// No panic; every datagram made is well-formed with correct checksums (millinet_wire::parse
/// verifies them) and goes toward the side its destination is on; an input is either let go
/// unchanged or replaced, never both; flows ≤ `max_flows`, UEs with telemetry ≤ `max_ues`;
/// nothing fails to serialise; a sealed record with a wrong tag or a sequence number its
/// publisher has passed is counted and never reaches the core.
pub fn proxyd_datapath(data: &[u8]) {
    let Ok(input) = DatapathInput::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let policy = ["bdp", "static", "passthrough", "target-queue", "calibrated", "rapid"][usize::from(input.policy % 6)];
    let spec = ProxySpec {
        policy: policy.to_string(),
        max_flows: u32::from(input.max_flows % 4) + 1,
        max_ues: u32::from(input.max_ues % 2) + 1,
        mss2_bytes: u32::from(input.mss2_bytes).clamp(1400, 65_000),
        ..ProxySpec::default()
    };
    let (max_flows, max_ues) = (spec.max_flows as usize, u64::from(spec.max_ues));
    let proxy = DaemonConfig::from_spec(spec).build(None).expect("a valid configuration");
    let key = TelemetryKey::new(&[0x5a; 32]).expect("32 bytes");
    let mut datapath = Datapath::new(proxy, vec![UE_NET]).with_telemetry_key(key.clone());
    // The highest sequence number accepted per publisher (the guard remembers all four).
    let mut highest: [Option<u64>; 4] = [None; 4];
    let mut now_ns = 1_000_000_000u64;
    let mut wire = vec![0u8; 1 << 16];
    for op in &input.ops {
        let mut originals = 0;
        let mut made = 0;
        let mut check = |e: Emitted| match e {
            Emitted::Original => originals += 1,
            Emitted::Datagram { bytes, toward } => {
                made += 1;
                let (packet, _) =
                    millinet_wire::parse(bytes, true).unwrap_or_else(|e| panic!("a datagram made is not valid: {e:?}: {bytes:02x?}"));
                assert_eq!(toward == Toward::Ue, UE_NET.contains(packet.dst), "{packet:?} sent {toward:?}");
            }
        };
        match op {
            Op::Segment { from_ue, flow, seg, how, damage } => {
                let i = usize::from(*flow) % FLOWS;
                let (key, (ue_isn, server_isn)) = (flow_key(i), input.isns[i]);
                let mut pkt = match from_ue {
                    true => segment(key.ue, key.server, ue_isn, server_isn, seg),
                    false => segment(key.server, key.ue, server_isn, ue_isn, seg),
                };
                pkt.payload_bytes %= u32::from(MAX_PAYLOAD_BYTES);
                let payload: Vec<u8> = (0..pkt.payload_bytes).map(|k| k as u8).collect();
                let Ok(mut len) = millinet_wire::emit(&pkt, &payload, &mut wire) else { continue };
                match *damage {
                    Damage::None => {}
                    Damage::Truncate(n) => len = len.min(usize::from(n)),
                    Damage::Flip { at, xor } => wire[usize::from(at) % len] ^= xor,
                }
                datapath.on_datagram(now_ns, delivery(&wire[..len], how), &mut check);
            }
            Op::Raw { how, bytes } => datapath.on_datagram(now_ns, delivery(bytes, how), &mut check),
            Op::Telemetry { report, age_ms } => {
                let (ue, record) = report.record(now_ns.saturating_sub(u64::from(*age_ms) * 1_000_000));
                datapath.on_telemetry(now_ns, &record.encode(ue), &mut check);
            }
            Op::TelemetryRaw(bytes) => datapath.on_telemetry(now_ns, bytes, &mut check),
            Op::Sealed { report, age_ms, publisher, sequence, flip } => {
                let (ue, record) = report.record(now_ns.saturating_sub(u64::from(*age_ms) * 1_000_000));
                let (publisher, sequence) = (u32::from(publisher % 4), u64::from(*sequence));
                let mut datagram = Sealed { publisher, sequence, ue, record }.seal(&key);
                let altered = flip.filter(|(_, xor)| *xor != 0);
                if let Some((at, xor)) = altered {
                    datagram[usize::from(at) % datagram.len()] ^= xor;
                }
                let before = datapath.stats;
                // The clocks agree: CLOCK_REALTIME is the datapath's clock here.
                datapath.on_sealed_telemetry(now_ns, 0, &datagram, &mut check);
                let after = datapath.stats;
                let last = &mut highest[publisher as usize];
                if altered.is_some() {
                    assert_eq!(after.telemetry_received, before.telemetry_received, "an altered sealed record was applied");
                } else if last.is_some_and(|h| sequence <= h) {
                    assert_eq!(after.telemetry_replayed, before.telemetry_replayed + 1, "a replay was not counted");
                    assert_eq!(after.telemetry_received, before.telemetry_received, "a replayed record was applied");
                } else {
                    assert_eq!(after.telemetry_received, before.telemetry_received + 1, "an authentic new record was refused");
                    *last = Some(sequence);
                }
            }
            Op::SealedRaw(bytes) => datapath.on_sealed_telemetry(now_ns, 0, bytes, &mut check),
            &Op::Wait(us) => {
                now_ns += u64::from(us) * 1_000;
                datapath.on_timeout(now_ns, &mut check);
            }
        }
        assert!(originals == 0 || (originals == 1 && made == 0), "{originals} originals and {made} datagrams made for one input");
        assert!(datapath.proxy().flow_samples(now_ns).len() <= max_flows, "more flows than max_flows = {max_flows}");
        let ues = datapath.proxy().summary().gauges.iter().find(|(name, _)| *name == "telemetry_ues").map_or(0, |g| g.1);
        assert!(ues <= max_ues, "{ues} UEs' telemetry held, more than max_ues = {max_ues}");
        assert_eq!(datapath.stats.emit_failures, 0, "a datagram of the core could not be serialised");
    }
}

fn delivery<'a>(datagram: &'a [u8], how: &Delivery) -> Input<'a> {
    Input {
        datagram,
        checksum: if how.partial_checksum { ChecksumState::Partial } else { ChecksumState::Complete },
        // The daemon cuts GSO packets at MSS1, which its configuration keeps ≥ 536 (the
        // smallest MSS, RFC 9293 §3.7.1); smaller pieces only slow the fuzzer down.
        segment_bytes: how.gso_segment_bytes.map(|s| s.max(536)),
    }
}
