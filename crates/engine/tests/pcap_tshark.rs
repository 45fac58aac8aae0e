//! A hand-built TCP conversation written with `PcapWriter` and read back by
//! tshark: the capture must be well-formed and Wireshark's TCP analysis must
//! see the handshake options, SACK blocks, timestamps and the retransmission
//! exactly as written.

mod tshark;

use std::net::Ipv4Addr;
use std::path::Path;

use millinet_engine::pcap::PcapWriter;
use millinet_wire::{emit, Packet, SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps};
use tshark::{field, temp_path, tshark_fields, EXPERT_WARNING};

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);
// Ports without a Wireshark dissector, so the analysis stays at the TCP layer.
const SERVER_PORT: u16 = 47_001;
const CLIENT_PORT: u16 = 51_234;
const SERVER_ISS: u32 = 0xfffff000; // wraps during the transfer
const CLIENT_ISS: u32 = 7_000;
const MSS: u32 = 1400;
const MS: u64 = 1_000_000;

struct Seg {
    t_ns: u64,
    from_server: bool,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    len: u32,
    opts: TcpOptions,
}

fn ts(tsval: u32, tsecr: u32) -> Option<Timestamps> {
    Some(Timestamps { tsval, tsecr })
}

fn packet(s: &Seg, ip_id: u16) -> Packet {
    let (src, dst, sp, dp) =
        if s.from_server { (SERVER, CLIENT, SERVER_PORT, CLIENT_PORT) } else { (CLIENT, SERVER, CLIENT_PORT, SERVER_PORT) };
    let h = TcpHeader { src_port: sp, dst_port: dp, seq: s.seq, ack: s.ack, flags: s.flags, window: 1000, options: s.opts };
    let mut p = Packet::tcp(src, dst, h, s.len);
    p.ip_id = ip_id;
    p
}

/// The conversation as seen at the server: handshake, five data segments of which
/// the second is lost downstream, three duplicate ACKs with growing SACK blocks,
/// the fast retransmission, the cumulative ACK, and the FIN exchange.
fn conversation() -> Vec<Seg> {
    let ack = TcpFlags::ACK;
    let s = SERVER_ISS.wrapping_add(1); // first data byte
    let c = CLIENT_ISS + 1;
    let data = |k: u32| s.wrapping_add(k * MSS);
    let mut v = vec![
        Seg {
            t_ns: 0,
            from_server: false,
            seq: CLIENT_ISS,
            ack: 0,
            flags: TcpFlags::SYN,
            len: 0,
            opts: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: ts(1_000, 0),
                ..TcpOptions::default()
            },
        },
        Seg {
            t_ns: 10 * MS,
            from_server: true,
            seq: SERVER_ISS,
            ack: c,
            flags: TcpFlags::SYN | ack,
            len: 0,
            opts: TcpOptions {
                mss: Some(MSS as u16),
                window_scale: Some(9),
                sack_permitted: true,
                timestamps: ts(50_000, 1_000),
                ..TcpOptions::default()
            },
        },
        Seg { t_ns: 20 * MS, from_server: false, seq: c, ack: s, flags: ack, len: 0, opts: opt_ts(1_010, 50_000) },
    ];
    for k in 0..5 {
        v.push(Seg {
            t_ns: 30 * MS + k as u64 * 100_000,
            from_server: true,
            seq: data(k),
            ack: c,
            flags: ack | TcpFlags::PSH,
            len: MSS,
            opts: opt_ts(50_020 + k, 1_010),
        });
    }
    // Segment 1 (the second) never arrives: the ACK for segment 0, then one
    // duplicate ACK per later segment, each SACKing what arrived.
    v.push(Seg { t_ns: 40 * MS, from_server: false, seq: c, ack: data(1), flags: ack, len: 0, opts: opt_ts(1_020, 50_020) });
    for k in 2..5 {
        let mut opts = opt_ts(1_020 + k, 50_020 + k);
        opts.push_sack(SackBlock { left: data(2), right: data(k + 1) });
        let t = 40 * MS + (k as u64 - 1) * 100_000;
        v.push(Seg { t_ns: t, from_server: false, seq: c, ack: data(1), flags: ack, len: 0, opts });
    }
    v.extend([
        Seg { t_ns: 41 * MS, from_server: true, seq: data(1), ack: c, flags: ack, len: MSS, opts: opt_ts(50_031, 1_024) },
        Seg { t_ns: 51 * MS, from_server: false, seq: c, ack: data(5), flags: ack, len: 0, opts: opt_ts(1_030, 50_031) },
        Seg { t_ns: 60 * MS, from_server: true, seq: data(5), ack: c, flags: ack | TcpFlags::FIN, len: 0, opts: opt_ts(50_040, 1_030) },
        Seg {
            t_ns: 70 * MS,
            from_server: false,
            seq: c,
            ack: data(5).wrapping_add(1),
            flags: ack | TcpFlags::FIN,
            len: 0,
            opts: opt_ts(1_040, 50_040),
        },
        Seg { t_ns: 80 * MS, from_server: true, seq: data(5).wrapping_add(1), ack: c + 1, flags: ack, len: 0, opts: opt_ts(50_050, 1_040) },
    ]);
    v
}

fn opt_ts(tsval: u32, tsecr: u32) -> TcpOptions {
    TcpOptions { timestamps: ts(tsval, tsecr), ..TcpOptions::default() }
}

fn write_capture(path: &Path) -> Vec<Packet> {
    let mut w = PcapWriter::create(path).unwrap();
    let packets: Vec<Packet> = conversation().iter().enumerate().map(|(i, s)| packet(s, i as u16)).collect();
    for (s, p) in conversation().iter().zip(&packets) {
        w.write(s.t_ns, p);
    }
    w.finish().unwrap();
    packets
}

#[test]
fn tshark_reads_the_capture_as_written() {
    let path = temp_path("conversation.pcap");
    let packets = write_capture(&path);
    let segs = conversation();
    let fields = [
        "frame.number",                // 0
        "frame.time_epoch",            // 1
        "frame.len",                   // 2
        "frame.cap_len",               // 3
        "ip.checksum.status",          // 4
        "tcp.seq",                     // 5
        "tcp.seq_raw",                 // 6
        "tcp.ack",                     // 7
        "tcp.len",                     // 8
        "tcp.options.mss_val",         // 9
        "tcp.options.wscale.shift",    // 10
        "tcp.options.timestamp.tsval", // 11
        "tcp.options.timestamp.tsecr", // 12
        "tcp.options.sack_le",         // 13
        "tcp.options.sack_re",         // 14
        "tcp.window_size",             // 15
        "_ws.malformed",               // 16
        "_ws.expert.severity",         // 17
        "_ws.expert.message",          // 18
    ];
    let rows = tshark_fields(&path, &["-o", "ip.check_checksum:TRUE"], &fields);
    assert_eq!(rows.len(), packets.len(), "tshark saw {} frames, {} written", rows.len(), packets.len());

    for (i, (row, (seg, pkt))) in rows.iter().zip(segs.iter().zip(&packets)).enumerate() {
        let ctx = format!("frame {}: {}", i + 1, row.join(" | "));
        let f = |k: usize| field(row, k);
        assert_eq!(f(16), "", "malformed: {ctx}");
        for sev in f(17).split(',').filter(|s| !s.is_empty()) {
            assert!(sev.parse::<u64>().unwrap() < EXPERT_WARNING, "expert warning or error: {ctx}");
        }
        // Nanosecond timestamps, truncated to headers, original length kept.
        assert_eq!(f(1), format!("{}.{:09}", seg.t_ns / 1_000_000_000, seg.t_ns % 1_000_000_000), "{ctx}");
        assert_eq!(f(2), pkt.wire_bytes().to_string(), "{ctx}");
        assert_eq!(f(3), (pkt.wire_bytes() - pkt.payload_bytes).to_string(), "{ctx}");
        assert_eq!(f(4), "1", "IPv4 header checksum not good: {ctx}");
        // Relative sequence numbers: tshark subtracts each direction's ISS.
        let (own_iss, peer_iss) = if seg.from_server { (SERVER_ISS, CLIENT_ISS) } else { (CLIENT_ISS, SERVER_ISS) };
        assert_eq!(f(5), seg.seq.wrapping_sub(own_iss).to_string(), "{ctx}");
        assert_eq!(f(6), seg.seq.to_string(), "{ctx}");
        let rel_ack = if seg.flags.contains(TcpFlags::ACK) { seg.ack.wrapping_sub(peer_iss) } else { 0 };
        assert_eq!(f(7), rel_ack.to_string(), "{ctx}");
        assert_eq!(f(8), seg.len.to_string(), "{ctx}");
        let ts = seg.opts.timestamps.unwrap();
        assert_eq!((f(11), f(12)), (ts.tsval.to_string().as_str(), ts.tsecr.to_string().as_str()), "{ctx}");
        let sack = seg.opts.sack();
        let join = |v: Vec<String>| v.join(",");
        assert_eq!(f(13), join(sack.iter().map(|b| b.left.wrapping_sub(SERVER_ISS).to_string()).collect()), "{ctx}");
        assert_eq!(f(14), join(sack.iter().map(|b| b.right.wrapping_sub(SERVER_ISS).to_string()).collect()), "{ctx}");
        // After the handshake the window is scaled by the sender's shift (RFC 7323 §2.3).
        if i >= 2 {
            let shift = if seg.from_server { 9 } else { 7 };
            assert_eq!(f(15), (1000u32 << shift).to_string(), "{ctx}");
        }
    }

    // The handshake options, and the values a reader would look for, spelled out.
    assert_eq!((field(&rows[0], 9), field(&rows[0], 10)), ("1460", "7"));
    assert_eq!((field(&rows[1], 9), field(&rows[1], 10)), ("1400", "9"));
    assert_eq!((field(&rows[11], 7), field(&rows[11], 13), field(&rows[11], 14)), ("1401", "2801", "7001"));
    assert_eq!(field(&rows[12], 5), "1401");

    // Wireshark's own TCP analysis: three duplicate ACKs, then the resent
    // segment is a fast retransmission; nothing else is a retransmission.
    let frames = |filter: &str| -> Vec<String> {
        tshark_fields(&path, &["-Y", filter], &["frame.number"]).into_iter().map(|r| r[0].clone()).collect()
    };
    assert_eq!(frames("tcp.analysis.duplicate_ack"), ["10", "11", "12"]);
    assert_eq!(frames("tcp.analysis.fast_retransmission"), ["13"]);
    assert_eq!(frames("tcp.analysis.retransmission || tcp.analysis.spurious_retransmission"), ["13"]);
    assert_eq!(frames("tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment"), Vec::<String>::new());
    assert_eq!(frames("tcp.options.sack_perm"), ["1", "2"]);

    std::fs::remove_file(&path).unwrap();
}

/// Full datagrams with their (zero) payload, written with pcap-file directly:
/// tshark must find every IPv4, TCP and UDP checksum good, which checks `emit`'s
/// checksums against an independent implementation.
#[test]
fn tshark_verifies_the_checksums_of_full_datagrams() {
    use millinet_wire::UdpHeader;
    use pcap_file::pcap::{PcapHeader, PcapPacket};
    use pcap_file::{DataLink, TsResolution};

    let path = temp_path("checksums.pcap");
    let header = PcapHeader { datalink: DataLink::RAW, ts_resolution: TsResolution::NanoSecond, ..PcapHeader::default() };
    let mut w = pcap_file::pcap::PcapWriter::with_header(std::fs::File::create(&path).unwrap(), header).unwrap();
    let mut packets: Vec<Packet> = conversation().iter().enumerate().map(|(i, s)| packet(s, i as u16)).collect();
    for len in [0, 1, 2, 3, 999, 1472] {
        packets.push(Packet::udp(SERVER, CLIENT, UdpHeader { src_port: 47_002, dst_port: 51_235 }, len));
    }
    let zeros = vec![0u8; 2000];
    let mut buf = vec![0u8; 2000];
    for (i, p) in packets.iter().enumerate() {
        let n = emit(p, &zeros[..p.payload_bytes as usize], &mut buf).unwrap();
        let record = PcapPacket::new(std::time::Duration::from_millis(i as u64), n as u32, &buf[..n]);
        w.write_packet(&record).unwrap();
    }
    drop(w);
    let opts = ["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"];
    let rows =
        tshark_fields(&path, &opts, &["frame.number", "ip.checksum.status", "tcp.checksum.status", "udp.checksum.status", "_ws.malformed"]);
    assert_eq!(rows.len(), packets.len());
    for (row, p) in rows.iter().zip(&packets) {
        let l4 = if p.tcp_header().is_some() { 2 } else { 3 };
        assert_eq!((field(row, 1), field(row, l4), field(row, 4)), ("1", "1", ""), "frame: {}", row.join(" | "));
    }
    std::fs::remove_file(&path).unwrap();
}
