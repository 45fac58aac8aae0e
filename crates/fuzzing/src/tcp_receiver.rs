//! A listening TCP connection fed segments made from the fuzzer's bytes.

use std::net::{Ipv4Addr, SocketAddrV4};

use arbitrary::{Arbitrary, Unstructured};
use millinet_testkit::StreamCheck;
use millinet_transport::{TcpConfig, TcpConnection};
use millinet_wire::{Packet, SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps};

const LOCAL: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5000);
const PEER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);

#[derive(Arbitrary, Debug)]
struct Input {
    local_iss: u32,
    peer_isn: u32,
    sack: bool,
    timestamps: bool,
    window_scaling: bool,
    /// The receiver's ACK timing (`delayed_ack`).
    delayed_ack: u8,
    app_paced_reads: bool,
    /// Receive buffer in KiB (+1): small, so that the window matters.
    rcv_buf_kib: u8,
    syn_options: SynOptions,
    segments: Vec<Segment>,
}

#[derive(Arbitrary, Debug)]
struct SynOptions {
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    tsval: Option<u32>,
}

#[derive(Arbitrary, Debug)]
struct Segment {
    /// Time since the previous event, µs; deadlines that fall in between fire first.
    gap_us: u16,
    /// Where the segment starts: in units of 16 bytes from what was delivered so far, so
    /// the fuzzer reaches the window's edges, or anywhere in sequence space.
    seq: Seq,
    payload_bytes: u16,
    /// The 9 control bits (AE included), masked from 16.
    flags: u16,
    /// Acknowledgment number relative to the receiver's ISS + 1 (what a correct peer sends).
    ack_delta: i8,
    window: u16,
    sack: Vec<(i16, u16)>,
    timestamps: Option<(u32, u32)>,
    /// An application-paced receiver reads this much afterwards.
    read_bytes: u16,
}

#[derive(Arbitrary, Debug)]
enum Seq {
    Near(i16),
    Raw(u32),
}

/// The receiver delivers the stream in order, once, and only bytes that arrived in data
/// segments (`StreamCheck`), and never panics, whatever arrives after the SYN: segments
/// in and out of the window, overlapping, with any flags, options and acknowledgments.
pub fn tcp_receiver(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let cfg = TcpConfig {
        cc: "newreno".to_string(),
        sack: input.sack,
        timestamps: input.timestamps,
        window_scaling: input.window_scaling,
        delayed_ack: crate::delayed_ack(input.delayed_ack),
        app_paced_reads: input.app_paced_reads,
        rcv_buf_bytes: (u64::from(input.rcv_buf_kib) + 1) * 1024,
        iss: input.local_iss,
        ..TcpConfig::default()
    };
    let mut conn = TcpConnection::listen(cfg, LOCAL).expect("a valid configuration");
    let mut check = StreamCheck::new();
    let mut out = Vec::new();
    let mut now_ns = 0u64;

    let o = &input.syn_options;
    let options = TcpOptions {
        mss: o.mss,
        window_scale: o.window_scale,
        sack_permitted: o.sack_permitted,
        timestamps: o.tsval.map(|tsval| Timestamps { tsval, tsecr: 0 }),
        ..TcpOptions::default()
    };
    let syn = segment(TcpHeader { seq: input.peer_isn, flags: TcpFlags::SYN, window: 65_535, options, ..header() }, 0);
    check.on_arrival(&syn);
    conn.on_packet(now_ns, &syn, &mut out);

    let first_byte = input.peer_isn.wrapping_add(1);
    for s in &input.segments {
        now_ns += u64::from(s.gap_us) * 1_000;
        while let Some(deadline_ns) = conn.next_deadline_ns().filter(|&d| d <= now_ns) {
            conn.on_timeout(deadline_ns, &mut out);
            // A deadline that stays put after it fired would spin a driver at one instant.
            assert!(conn.next_deadline_ns().is_none_or(|d| d > deadline_ns), "deadline {deadline_ns} ns still due after it fired");
            deliver(&mut conn, &mut check, input.app_paced_reads, deadline_ns, 0, &mut out);
        }
        let seq = match s.seq {
            Seq::Near(units) => first_byte.wrapping_add((check.delivered_bytes() as i64 + i64::from(units) * 16) as u32),
            Seq::Raw(seq) => seq,
        };
        let mut options =
            TcpOptions { timestamps: s.timestamps.map(|(tsval, tsecr)| Timestamps { tsval, tsecr }), ..TcpOptions::default() };
        for &(left, len) in &s.sack {
            let left = seq.wrapping_add(left as i32 as u32);
            if !options.push_sack(SackBlock { left, right: left.wrapping_add(u32::from(len)) }) {
                break;
            }
        }
        let ack = input.local_iss.wrapping_add(1).wrapping_add(s.ack_delta as i32 as u32);
        let pkt = segment(TcpHeader { seq, ack, flags: TcpFlags(s.flags & 0x1ff), window: s.window, options, ..header() }, s.payload_bytes);
        // Only the first SYN tells the check where the stream starts: a later one is a
        // segment like any other to the receiver, which must not restart the stream for it.
        let mut seen = pkt;
        seen.tcp_header_mut().expect("TCP").flags.0 &= !TcpFlags::SYN.0;
        check.on_arrival(&seen);
        conn.on_packet(now_ns, &pkt, &mut out);
        deliver(&mut conn, &mut check, input.app_paced_reads, now_ns, u64::from(s.read_bytes), &mut out);
        out.clear();
    }
}

/// The application takes what it may: `read_bytes` when it paces its reads, else everything.
fn deliver(conn: &mut TcpConnection, check: &mut StreamCheck, paced: bool, now_ns: u64, read_bytes: u64, out: &mut Vec<Packet>) {
    let range = if paced { conn.read(now_ns, read_bytes, out) } else { conn.take_delivered() };
    check.on_delivery(range);
}

fn header() -> TcpHeader {
    TcpHeader { src_port: PEER.port(), dst_port: LOCAL.port(), ..TcpHeader::default() }
}

fn segment(header: TcpHeader, payload_bytes: u16) -> Packet {
    Packet::tcp(*PEER.ip(), *LOCAL.ip(), header, u32::from(payload_bytes))
}
