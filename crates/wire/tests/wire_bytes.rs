//! Emit/parse of real bytes: layout, round trips, checksums and robustness.

use std::net::Ipv4Addr;

use millinet_wire::checksum::{internet_checksum, Checksum};
use millinet_wire::{
    emit, emit_headers, header_bytes, parse, rewrite_ecn, rewrite_tcp_window, EmitError, OtherHeader, Packet, ParseError, SackBlock,
    TcpFlags, TcpHeader, TcpOptions, Timestamps, Transport, UdpHeader, ECN_CE, MAX_HEADER_BYTES,
};

/// xorshift64*: a tiny seeded generator so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(192, 168, 7, 200);

fn options(mss: bool, ws: bool, sack_permitted: bool, ts: bool, sack_count: u8) -> TcpOptions {
    let mut o = TcpOptions {
        mss: mss.then_some(1460),
        window_scale: ws.then_some(7),
        sack_permitted,
        timestamps: ts.then_some(Timestamps { tsval: 0xdead_beef, tsecr: 7 }),
        ..TcpOptions::default()
    };
    let blocks: Vec<SackBlock> = (0..sack_count as u32).map(|i| SackBlock { left: 1000 * i + 1, right: 1000 * i + 500 }).collect();
    assert!(o.set_sack(&blocks));
    o
}

fn tcp_packet(opts: TcpOptions, payload_bytes: u32) -> Packet {
    let h = TcpHeader { src_port: 443, dst_port: 50000, seq: 1, ack: 2, flags: TcpFlags::ACK, window: 512, options: opts };
    Packet::tcp(A, B, h, payload_bytes)
}

fn random_packet(rng: &mut Rng) -> Packet {
    let payload_bytes = match rng.below(4) {
        0 => 0,
        1 => rng.below(8) as u32,
        _ => rng.below(2000) as u32,
    };
    let src = Ipv4Addr::from(rng.next() as u32);
    let dst = Ipv4Addr::from(rng.next() as u32);
    let mut p = if rng.below(4) == 0 {
        Packet::udp(src, dst, UdpHeader { src_port: rng.next() as u16, dst_port: rng.next() as u16 }, payload_bytes)
    } else {
        let mut o = TcpOptions {
            mss: rng.coin().then(|| rng.next() as u16),
            window_scale: rng.coin().then(|| rng.next() as u8),
            sack_permitted: rng.coin(),
            timestamps: rng.coin().then(|| Timestamps { tsval: rng.next() as u32, tsecr: rng.next() as u32 }),
            ..TcpOptions::default()
        };
        for _ in 0..rng.below(5) {
            o.push_sack(SackBlock { left: rng.next() as u32, right: rng.next() as u32 });
        }
        let h = TcpHeader {
            src_port: rng.next() as u16,
            dst_port: rng.next() as u16,
            seq: rng.next() as u32,
            ack: rng.next() as u32,
            // The 9 control bits, AE (RFC 9768) included.
            flags: TcpFlags(rng.next() as u16 & 0x1ff),
            window: rng.next() as u16,
            options: o,
        };
        Packet::tcp(src, dst, h, payload_bytes)
    };
    p.ip_id = rng.next() as u16;
    p.ttl = rng.next() as u8;
    p.ecn = rng.below(4) as u8;
    p
}

#[test]
fn header_length_matches_wire_bytes_for_every_option_combination() {
    let mut buf = [0u8; MAX_HEADER_BYTES];
    let mut emitted = 0;
    for bits in 0..16u32 {
        for sacks in 0..=4u8 {
            let o = options(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0, sacks);
            let p = tcp_packet(o, 1234);
            let expected = (p.wire_bytes() - p.payload_bytes) as usize;
            assert_eq!(header_bytes(&p), expected);
            match emit_headers(&p, &mut buf) {
                Ok(n) => {
                    assert_eq!(n, expected, "{o:?}");
                    assert_eq!((buf[32] >> 4) as usize * 4, n - 20, "data offset");
                    assert_eq!(u16::from_be_bytes([buf[2], buf[3]]) as u32, p.wire_bytes());
                    emitted += 1;
                }
                Err(e) => assert_eq!(e, EmitError::TcpOptionsTooLong { bytes: o.encoded_bytes() }),
            }
            assert_eq!(o.encoded_bytes() <= 40, emit_headers(&p, &mut buf).is_ok());
        }
    }
    assert!(emitted > 50, "only {emitted} combinations fit");
}

#[test]
fn syn_options_are_laid_out_as_linux_does() {
    let p = tcp_packet(options(true, true, true, true, 0), 0);
    let mut buf = [0u8; MAX_HEADER_BYTES];
    let n = emit_headers(&p, &mut buf).unwrap();
    #[rustfmt::skip]
    let expected_options = [
        2, 4, 0x05, 0xb4,                         // MSS 1460
        4, 2, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7, // SACK_PERM, TS
        1, 3, 3, 7,                               // NOP, WS 7
    ];
    assert_eq!(&buf[40..n], &expected_options);

    let p = tcp_packet(options(false, false, false, true, 2), 0);
    let n = emit_headers(&p, &mut buf).unwrap();
    #[rustfmt::skip]
    let expected_options = [
        1, 1, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7,
        1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 1, 0xf4, 0, 0, 3, 0xe9, 0, 0, 5, 0xdc,
    ];
    assert_eq!(&buf[40..n], &expected_options);

    let p = tcp_packet(options(false, false, true, false, 0), 0);
    let n = emit_headers(&p, &mut buf).unwrap();
    assert_eq!(&buf[40..n], &[1, 1, 4, 2]);
}

#[test]
fn ip_header_fields_and_checksums() {
    let mut p = tcp_packet(options(true, false, false, true, 0), 100);
    p.ip_id = 0x1234;
    p.ttl = 61;
    p.ecn = 2;
    let mut buf = [0u8; MAX_HEADER_BYTES];
    let n = emit_headers(&p, &mut buf).unwrap();
    assert_eq!(buf[0], 0x45);
    assert_eq!(buf[1], 2);
    assert_eq!(&buf[4..8], &[0x12, 0x34, 0x40, 0x00], "id, DF");
    assert_eq!((buf[8], buf[9]), (61, 6));
    assert_eq!(internet_checksum(&buf[..20]), 0);
    // The TCP checksum is that of the datagram with 100 zero payload bytes.
    let mut full = buf[..n].to_vec();
    full.resize(n + 100, 0);
    let mut sum = Checksum::pseudo_header(A, B, 6, (n - 20 + 100) as u16);
    sum.add_bytes(&full[20..]);
    assert_eq!(sum.finish(), 0);
    assert!(parse(&full, true).is_ok());
}

#[test]
fn udp_header_and_checksum() {
    let p = Packet::udp(A, B, UdpHeader { src_port: 5000, dst_port: 6000 }, 3);
    let mut buf = [0u8; 64];
    let n = emit(&p, &[1, 2, 3], &mut buf).unwrap();
    assert_eq!(n, 31);
    assert_eq!(&buf[20..26], &[0x13, 0x88, 0x17, 0x70, 0, 11]);
    let (q, payload) = parse(&buf[..n], true).unwrap();
    assert_eq!((q, payload), (p, &[1u8, 2, 3][..]));
}

/// An ICMP echo request (RFC 792: type 8, code 0, checksum, identifier, sequence number, data)
/// from A to B in an IPv4 header with a valid checksum.
fn icmp_echo_request(identifier: u16) -> Vec<u8> {
    let mut message = vec![8, 0, 0, 0];
    message.extend_from_slice(&identifier.to_be_bytes());
    message.extend_from_slice(&[0, 1, b'p', b'i', b'n', b'g']);
    let sum = internet_checksum(&message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut d = vec![0x45, 0, 0, (20 + message.len()) as u8, 0, 7, 0x40, 0, 64, 1, 0, 0];
    d.extend_from_slice(&A.octets());
    d.extend_from_slice(&B.octets());
    let ip_sum = internet_checksum(&d);
    d[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    d.extend_from_slice(&message);
    d
}

#[test]
fn other_protocols_are_carried_whole_and_icmp_echoes_pair_by_identifier() {
    let d = icmp_echo_request(0x1234);
    let (p, message) = parse(&d, true).unwrap();
    assert_eq!(p.transport, Transport::Other(OtherHeader { protocol: 1, id: 0x1234 }));
    assert_eq!((p.ports(), message, p.wire_bytes() as usize), ((0x1234, 0x1234), &d[20..], d.len()));
    assert!(p.tcp_header().is_none());
    let mut again = vec![0u8; d.len()];
    assert_eq!(emit(&p, message, &mut again), Ok(d.len()));
    assert_eq!(again, d, "emitted byte for byte");
    // Its checksum is its message's own (RFC 792), checked when asked.
    let mut corrupt = d.clone();
    corrupt[30] ^= 0xff;
    assert_eq!(parse(&corrupt, true).map(|_| ()), Err(ParseError::BadTransportChecksum));
    assert!(parse(&corrupt, false).is_ok());
    // Any other protocol (GRE, 47) is carried with no identifier.
    let mut gre = d.clone();
    gre[9] = 47;
    gre[10..12].fill(0);
    let ip_sum = internet_checksum(&gre[..20]);
    gre[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    assert_eq!(parse(&gre, true).unwrap().0.transport, Transport::Other(OtherHeader { protocol: 47, id: 0 }));
}

#[test]
fn random_packets_round_trip() {
    let mut rng = Rng(0x5eed);
    let mut buf = vec![0u8; 70_000];
    let mut payload = vec![0u8; 2000];
    let (mut ok, mut too_long) = (0, 0);
    for _ in 0..20_000 {
        let p = random_packet(&mut rng);
        let len = p.payload_bytes as usize;
        let with_payload = rng.coin();
        if with_payload {
            payload[..len].iter_mut().for_each(|b| *b = rng.next() as u8);
        } else {
            payload[..len].fill(0);
        }
        let result = if with_payload {
            emit(&p, &payload[..len], &mut buf)
        } else {
            // Headers only, then the implied zero payload appended.
            emit_headers(&p, &mut buf).map(|n| {
                buf[n..n + len].fill(0);
                n + len
            })
        };
        let n = match result {
            Ok(n) => n,
            Err(EmitError::TcpOptionsTooLong { .. }) => {
                too_long += 1;
                continue;
            }
            Err(e) => panic!("{e} for {p:?}"),
        };
        assert_eq!(n, p.wire_bytes() as usize);
        let (q, got_payload) = parse(&buf[..n], true).unwrap_or_else(|e| panic!("{e} for {p:?}"));
        assert_eq!(q, p);
        assert_eq!(got_payload, &payload[..len]);
        ok += 1;
    }
    assert!(ok > 15_000 && too_long > 100, "ok {ok}, too long {too_long}");
}

#[test]
fn emit_rejects_what_the_wire_cannot_carry() {
    let mut buf = [0u8; MAX_HEADER_BYTES];
    let mut o = options(false, false, false, false, 0);
    o.sack_count = 5;
    assert_eq!(emit_headers(&tcp_packet(o, 0), &mut buf), Err(EmitError::TooManySackBlocks { count: 5 }));
    let p = tcp_packet(options(false, false, false, false, 0), 65_496);
    assert_eq!(emit_headers(&p, &mut buf), Err(EmitError::DatagramTooLong { bytes: 65_536 }));
    assert_eq!(emit_headers(&tcp_packet(options(false, false, false, false, 0), 65_495), &mut buf), Ok(40));
    let mut p = tcp_packet(options(false, false, false, false, 0), 0);
    p.ecn = 4;
    assert_eq!(emit_headers(&p, &mut buf), Err(EmitError::InvalidEcn { ecn: 4 }));
    p.ecn = 0;
    assert_eq!(emit_headers(&p, &mut buf[..39]), Err(EmitError::BufferTooSmall { needed: 40, available: 39 }));
    assert_eq!(emit(&p, &[0], &mut buf), Err(EmitError::PayloadLengthMismatch { payload_bytes: 0, given: 1 }));
}

fn valid_syn() -> Vec<u8> {
    let p = tcp_packet(options(true, true, true, true, 0), 0);
    let mut buf = vec![0u8; MAX_HEADER_BYTES];
    let n = emit_headers(&p, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// Recomputes the TCP checksum after a test edits the header.
fn fix_tcp_checksum(d: &mut [u8]) {
    d[36..38].fill(0);
    let mut sum = Checksum::pseudo_header(A, B, 6, (d.len() - 20) as u16);
    sum.add_bytes(&d[20..]);
    let c = sum.finish();
    d[36..38].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn parse_reports_typed_errors() {
    let good = valid_syn();
    assert!(parse(&good, true).is_ok());
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut d = good.clone();
        f(&mut d);
        parse(&d, false).map(|_| ())
    };
    assert_eq!(edit(&|d| d.truncate(10)), Err(ParseError::Truncated { needed: 20, available: 10 }));
    assert_eq!(edit(&|d| d[0] = 0x65), Err(ParseError::NotIpv4 { version: 6 }));
    assert_eq!(edit(&|d| d[0] = 0x44), Err(ParseError::BadIhl { ihl: 4 }));
    assert_eq!(edit(&|d| d[0] = 0x46), Err(ParseError::IpOptions { ihl: 6 }));
    assert_eq!(edit(&|d| d[2..4].copy_from_slice(&[0, 19])), Err(ParseError::BadTotalLength { total_length: 19 }));
    assert_eq!(edit(&|d| d.truncate(50)), Err(ParseError::Truncated { needed: 60, available: 50 }));
    assert_eq!(edit(&|d| d[6] = 0x20), Err(ParseError::Fragment));
    assert_eq!(edit(&|d| d[32] = 0x40), Err(ParseError::BadTcpDataOffset { data_offset: 4 }));
    assert_eq!(edit(&|d| d[32] = 0xf0), Err(ParseError::BadTcpDataOffset { data_offset: 15 }));
    // MSS with length 3.
    assert_eq!(edit(&|d| d[41] = 3), Err(ParseError::MalformedTcpOption { offset: 20, kind: 2 }));
    // Window scale option running past the header.
    assert_eq!(edit(&|d| d[58] = 9), Err(ParseError::MalformedTcpOption { offset: 37, kind: 3 }));
    // Kind with length 0 (would loop forever if accepted).
    assert_eq!(edit(&|d| d[58] = 0), Err(ParseError::MalformedTcpOption { offset: 37, kind: 3 }));
    // Trailing link padding is ignored.
    assert_eq!(edit(&|d| d.extend_from_slice(&[0; 6])), Ok(()));

    let mut bad = good.clone();
    bad[8] ^= 1;
    assert_eq!(parse(&bad, true).map(|_| ()), Err(ParseError::BadIpChecksum));
    assert!(parse(&bad, false).is_ok());
    let mut bad = good.clone();
    bad[30] ^= 1;
    assert_eq!(parse(&bad, true).map(|_| ()), Err(ParseError::BadTransportChecksum));
}

#[test]
fn unknown_options_are_kept_and_eol_ends_the_list() {
    let mut d = valid_syn();
    // Replace the NOP+WS word with an unknown 4-byte option (kind 30, MPTCP).
    d[56..60].copy_from_slice(&[30, 4, 0xaa, 0xbb]);
    fix_tcp_checksum(&mut d);
    let (p, _) = parse(&d, true).unwrap();
    let o = p.tcp_header().unwrap().options;
    assert_eq!((o.mss, o.window_scale, o.sack_permitted), (Some(1460), None, true));
    assert_eq!(o.timestamps, Some(Timestamps { tsval: 0xdead_beef, tsecr: 7 }));
    assert_eq!(o.raw().as_bytes(), [30, 4, 0xaa, 0xbb]);
    // EOL: whatever follows is padding, even bytes that would be malformed.
    d[56..60].copy_from_slice(&[0, 9, 9, 9]);
    fix_tcp_checksum(&mut d);
    assert!(parse(&d, true).unwrap().0.tcp_header().unwrap().options.raw().is_empty());
}

/// A data segment as Linux lays it out — timestamps, SACK — followed by an MPTCP DSS option
/// (kind 30, RFC 8684 §3.3) and an RFC 6994 experimental option (kind 253, ExID 0x1234), with
/// NOP padding to the word.
fn segment_with_unknown_options() -> Vec<u8> {
    let mut o = options(false, false, false, true, 1);
    o.push_raw(&[30, 8, 0x20, 0x01, 0xde, 0xad, 0xbe, 0xef]).unwrap();
    o.push_raw(&[253, 5, 0x12, 0x34, 0x77]).unwrap();
    assert_eq!(o.encoded_bytes(), 12 + 12 + 16, "13 raw bytes padded to 16");
    let p = tcp_packet(o, 6);
    let mut buf = [0u8; 200];
    let n = emit(&p, b"abcdef", &mut buf).unwrap();
    buf[..n].to_vec()
}

#[test]
fn unknown_options_round_trip_byte_identical() {
    let d = segment_with_unknown_options();
    // The options region by hand: NOP NOP TS(10), NOP NOP SACK(10), DSS(8), EXP(5), 3 NOPs.
    let opts = &d[40..80];
    assert_eq!(&opts[0..4], [1, 1, 8, 10]);
    assert_eq!(&opts[12..16], [1, 1, 5, 10]);
    assert_eq!(&opts[24..37], [30, 8, 0x20, 0x01, 0xde, 0xad, 0xbe, 0xef, 253, 5, 0x12, 0x34, 0x77]);
    assert_eq!(&opts[37..40], [1, 1, 1]);
    let (p, payload) = parse(&d, true).unwrap();
    assert_eq!(payload, b"abcdef");
    assert_eq!(p.wire_bytes() as usize, d.len());
    let mut again = [0u8; 200];
    let n = emit(&p, payload, &mut again).unwrap();
    assert_eq!(&again[..n], &d[..]);

    // Alongside the SYN options too: MSS, SACK-permitted, timestamps, window scale.
    let mut o = options(true, true, true, true, 0);
    o.push_raw(&[30, 4, 0x00, 0x81]).unwrap(); // MP_CAPABLE v1 without keys, as in a SYN
    let mut syn = tcp_packet(o, 0);
    syn.tcp_header_mut().unwrap().flags = TcpFlags::SYN;
    let mut buf = [0u8; 100];
    let n = emit(&syn, &[], &mut buf).unwrap();
    let (back, _) = parse(&buf[..n], true).unwrap();
    assert_eq!(back, syn);
    let mut again = [0u8; 100];
    assert_eq!(emit(&back, &[], &mut again), Ok(n));
    assert_eq!(again[..n], buf[..n]);
}

#[test]
fn malformed_unknown_option_lengths_are_typed_errors() {
    let good = segment_with_unknown_options();
    // The DSS option's length byte at TCP header offset 20 + 24 + 1.
    for (len, why) in [(1u8, "below 2"), (0, "zero"), (17, "past the header")] {
        let mut d = good.clone();
        d[20 + 45] = len;
        fix_tcp_checksum(&mut d);
        assert_eq!(parse(&d, true).map(|_| ()), Err(ParseError::MalformedTcpOption { offset: 44, kind: 30 }), "{why}");
    }
    // An unknown kind as the last option byte: its length byte is missing.
    let mut d = good.clone();
    d[20 + 59] = 254;
    fix_tcp_checksum(&mut d);
    assert_eq!(parse(&d, true).map(|_| ()), Err(ParseError::MalformedTcpOption { offset: 59, kind: 254 }));
}

#[test]
fn unknown_options_beyond_what_a_packet_keeps_are_a_typed_error() {
    // No known options: 36 bytes of experimental options (RFC 6994) fit the wire's 40 but not
    // the 32 a TcpOptions keeps; the second one is refused, by offset.
    let mut d = valid_syn();
    d[32] = 0xf0; // data offset 15 words: 40 option bytes
    d.truncate(40);
    d.extend_from_slice(&[253, 20]);
    d.extend_from_slice(&[7; 18]);
    d.extend_from_slice(&[254, 16]);
    d.extend_from_slice(&[7; 14]);
    d.extend_from_slice(&[0; 4]);
    let total = d.len() as u16;
    d[2..4].copy_from_slice(&total.to_be_bytes());
    d[10..12].fill(0);
    let ip_sum = internet_checksum(&d[..20]);
    d[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    fix_tcp_checksum(&mut d);
    let e = parse(&d, true).map(|_| ());
    assert_eq!(e, Err(ParseError::UnknownTcpOptionsTooLong { offset: 40, kind: 254 }));
    assert_eq!(e.unwrap_err().to_string(), "TCP option of kind 254 at header offset 40: unmodelled options beyond the 32 bytes kept");
}

#[test]
fn raw_options_must_be_whole_and_fit() {
    let mut raw = millinet_wire::RawOptions::default();
    assert_eq!(raw.push(&[30, 4, 0]), Err(millinet_wire::RawOptionError::NotOneOption { bytes: 3 }));
    assert_eq!(raw.push(&[30]), Err(millinet_wire::RawOptionError::NotOneOption { bytes: 1 }));
    let mut big = [253u8; 30];
    big[1] = 30;
    raw.push(&big).unwrap();
    assert_eq!(raw.push(&[254, 3, 0]), Err(millinet_wire::RawOptionError::NoRoom { needed: 3, available: 2 }));
    // SACK blocks get only the room the raw options leave: 40 − 12 (timestamps) − 16 = 12 → 1 block.
    let mut o = options(false, false, false, true, 0);
    o.push_raw(&[30, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    assert!(o.push_sack(SackBlock { left: 1, right: 2 }));
    assert!(!o.push_sack(SackBlock { left: 3, right: 4 }));
    assert_eq!(tcp_packet(o, 0).wire_bytes(), 20 + 20 + 40, "push_sack fills the option space exactly");
    // Blocks and raw options share storage: neither overwrites the other, in either order.
    o.push_raw(&[254, 4, 0xab, 0xcd]).unwrap();
    assert_eq!(o.sack(), [SackBlock { left: 1, right: 2 }]);
    assert_eq!(o.raw().as_bytes(), [30, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 254, 4, 0xab, 0xcd]);
    assert!(o.set_sack(&[SackBlock { left: 5, right: 6 }]));
    assert_eq!(o.raw().as_bytes()[13..], [254, 4, 0xab, 0xcd]);
    assert!(!o.set_sack(&[SackBlock { left: 5, right: 6 }; 2]), "16 + 17 bytes exceed the 32 kept");
    assert_eq!(o.sack(), [SackBlock { left: 5, right: 6 }]);
    assert_eq!(o.push_raw(&[254, 8, 0, 0, 0, 0, 0, 0]), Err(millinet_wire::RawOptionError::NoRoom { needed: 8, available: 7 }));
}

#[test]
fn parse_never_panics_on_garbage() {
    let mut rng = Rng(42);
    let mut accepted = 0;
    let valid: Vec<Vec<u8>> = (0..64)
        .filter_map(|_| {
            let p = random_packet(&mut rng);
            let mut buf = vec![0u8; p.wire_bytes() as usize];
            emit_headers(&p, &mut buf).ok().map(|_| buf)
        })
        .collect();
    for i in 0..300_000 {
        let mut d = valid[i % valid.len()].clone();
        match rng.below(4) {
            // Random bytes with a plausible first byte so deeper code is reached.
            0 => {
                let len = rng.below(100) as usize;
                d = (0..len).map(|_| rng.next() as u8).collect();
                if len > 0 && rng.coin() {
                    d[0] = 0x45;
                }
            }
            // Truncation of a valid datagram.
            1 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
            // A few corrupted bytes in the headers.
            _ => {
                let hdr = d.len().min(MAX_HEADER_BYTES);
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(hdr as u64) as usize;
                    d[at] = rng.next() as u8;
                }
            }
        }
        for verify in [false, true] {
            if parse(&d, verify).is_ok() {
                accepted += 1;
            }
        }
    }
    assert!(accepted > 1000, "only {accepted} mutated datagrams parsed: the mutations hardly reach the options");
}

#[test]
fn window_rewrite_keeps_the_checksum_valid() {
    let mut rng = Rng(99);
    let mut buf = vec![0u8; 70_000];
    let mut payload = vec![0u8; 2000];
    let mut done = 0;
    while done < 5000 {
        let p = random_packet(&mut rng);
        let Some(h) = p.tcp_header() else { continue };
        let len = p.payload_bytes as usize;
        payload[..len].iter_mut().for_each(|b| *b = rng.next() as u8);
        let Ok(n) = emit(&p, &payload[..len], &mut buf) else {
            continue;
        };
        let window = rng.next() as u16;
        assert_eq!(rewrite_tcp_window(&mut buf[..n], window), Ok(h.window));
        let (q, _) = parse(&buf[..n], true).expect("checksum valid after rewrite");
        assert_eq!(q.tcp_header().unwrap().window, window);
        // Same bytes as a fresh emit of the rewritten packet.
        let mut expected = p;
        expected.tcp_header_mut().unwrap().window = window;
        let mut fresh = vec![0u8; n];
        emit(&expected, &payload[..len], &mut fresh).unwrap();
        assert_eq!(&buf[..n], &fresh[..]);
        done += 1;
    }
    let udp = Packet::udp(A, B, UdpHeader { src_port: 1, dst_port: 2 }, 0);
    let n = emit_headers(&udp, &mut buf).unwrap();
    assert_eq!(rewrite_tcp_window(&mut buf[..n], 1), Err(ParseError::UnsupportedProtocol { protocol: 17 }));
    assert!(matches!(rewrite_tcp_window(&mut buf[..20], 1), Err(ParseError::UnsupportedProtocol { .. })));
}

#[test]
fn ecn_rewrite_keeps_the_header_checksum_valid() {
    let mut rng = Rng(7);
    let mut buf = vec![0u8; 70_000];
    let payload = vec![0u8; 2000];
    let mut done = 0;
    while done < 2000 {
        let p = random_packet(&mut rng);
        let Ok(n) = emit(&p, &payload[..p.payload_bytes as usize], &mut buf) else {
            continue;
        };
        assert_eq!(rewrite_ecn(&mut buf[..n], ECN_CE), Ok(p.ecn));
        let (q, _) = parse(&buf[..n], true).expect("checksums valid after rewrite");
        assert_eq!(q.ecn, ECN_CE);
        // Same bytes as a fresh emit of the marked packet.
        let mut fresh = vec![0u8; n];
        emit(&Packet { ecn: ECN_CE, ..p }, &payload[..p.payload_bytes as usize], &mut fresh).unwrap();
        assert_eq!(&buf[..n], &fresh[..]);
        done += 1;
    }
    assert!(matches!(rewrite_ecn(&mut buf[..19], ECN_CE), Err(ParseError::Truncated { .. })));
}
