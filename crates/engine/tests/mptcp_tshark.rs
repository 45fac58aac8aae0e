//! MP-TCP options written by `millinet_wire::mptcp` into a capture and read back by tshark:
//! Wireshark's MP-TCP dissector, an implementation of RFC 8684 independent of ours, must
//! find every option well-formed and every field as we wrote it; and a capture of the
//! transport's `MptcpConnection`s, whose key material its analysis must recognise.

mod tshark;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_engine::pcap::PcapWriter;
use millinet_transport::mptcp::{idsn, token, MptcpConfig, MptcpConnection};
use millinet_wire::mptcp::{
    AddAddr, CapableFlags, CapableForm, DataSeq, Dss, DssMapping, MpCapable, MpFail, MpFastclose, MpJoin, MpPrio, MpTcpRst, MptcpOption,
    RemoveAddr,
};
use millinet_wire::{Packet, TcpFlags, TcpHeader, TcpOptions, Timestamps};
use tshark::{field, temp_path, tshark_fields, EXPERT_WARNING};

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);
const CLIENT_2: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 3);
// Ports without a Wireshark dissector, as in pcap_tshark.rs.
const SERVER_PORT: u16 = 47_001;
const CLIENT_PORT: u16 = 51_234;
const CLIENT_2_PORT: u16 = 51_300;
const CLIENT_KEY: u64 = 0x0102_0304_0506_0708;
const SERVER_KEY: u64 = 0x8877_6655_4433_2211;
const MSS: u32 = 1400;

/// Who sends a segment: the client or the server end of subflow 0 or 1.
#[derive(Clone, Copy)]
struct Side {
    subflow: u8,
    from_server: bool,
}

const C1: Side = Side { subflow: 0, from_server: false };
const S1: Side = Side { subflow: 0, from_server: true };
const C2: Side = Side { subflow: 1, from_server: false };
const S2: Side = Side { subflow: 1, from_server: true };

/// One segment: its sender, TCP fields, the MP-TCP options it carries.
struct Seg {
    side: Side,
    flags: TcpFlags,
    seq: u32,
    ack: u32,
    len: u32,
    mptcp: Vec<MptcpOption>,
}

fn seg(side: Side, flags: TcpFlags, (seq, ack): (u32, u32), len: u32, mptcp: &[MptcpOption]) -> Seg {
    Seg { side, flags, seq, ack, len, mptcp: mptcp.to_vec() }
}

fn capable(form: CapableForm) -> MptcpOption {
    MptcpOption::MpCapable(MpCapable { flags: CapableFlags::A | CapableFlags::H, form })
}

fn dss(data_ack: Option<DataSeq>, mapping: Option<DssMapping>) -> MptcpOption {
    MptcpOption::Dss(Dss { data_ack, mapping })
}

/// A first subflow that negotiates checksums, carries data both ways with 8- and 4-byte
/// sequence numbers and closes with a DATA_FIN; a second subflow joined as a backup; then
/// the path-management and abrupt-close options.
fn conversation() -> Vec<Seg> {
    let (syn, ack, rst) = (TcpFlags::SYN, TcpFlags::ACK, TcpFlags::RST);
    let (syn_ack, psh) = (syn | ack, ack | TcpFlags::PSH);
    // Subflow sequence numbers: client and server ISNs of each subflow.
    let (c, s, c2, s2) = (1_000u32, 50_000u32, 9_000u32, 70_000u32);
    let mapping = |dsn, ssn, len, checksum, data_fin| DssMapping {
        data_sequence_number: dsn,
        subflow_sequence_number: ssn,
        data_level_length: len,
        checksum: Some(checksum),
        data_fin,
    };
    let keys = CapableForm::Ack { sender_key: CLIENT_KEY, receiver_key: SERVER_KEY };
    let first_data =
        capable(CapableForm::Data { sender_key: CLIENT_KEY, receiver_key: SERVER_KEY, data_level_length: 1000, checksum: Some(0x1234) });
    let data =
        dss(Some(DataSeq::U64(0x0000_0001_0000_03e9)), Some(mapping(DataSeq::U64(0x0000_0002_0000_0001), 1, MSS as u16, 0xabcd, false)));
    let data_ack = dss(Some(DataSeq::U32(0x0000_0579)), None);
    // A DATA_FIN without data (RFC 8684 §3.3.3): subflow sequence number 0, length 1.
    let data_fin = dss(Some(DataSeq::U32(0x0000_03e9)), Some(mapping(DataSeq::U32(0x0000_0579), 0, 1, 0x0f0f, true)));
    let join_syn = MpJoin::Syn { backup: true, address_id: 1, receiver_token: 0xa1b2_c3d4, sender_random_number: 0x1111 };
    let join_syn_ack =
        MpJoin::SynAck { backup: false, address_id: 0, sender_truncated_hmac: 0x0123_4567_89ab_cdef, sender_random_number: 0x2222 };
    let join_ack = MpJoin::Ack { sender_hmac: std::array::from_fn(|i| i as u8 * 11) };
    let announce = AddAddr {
        address_id: 2,
        address: Ipv4Addr::new(192, 0, 2, 2),
        port: Some(SERVER_PORT + 1),
        truncated_hmac: Some(0xfeed_face_cafe_beef),
    };
    let echo = AddAddr { truncated_hmac: None, ..announce };
    let remove = RemoveAddr::new(&[1, 3]).unwrap();
    let fail = MpFail { data_sequence_number: 0x0000_0002_0000_0100 };
    let (c_at, s_at) = ((c + 1001, s + 1 + MSS), (s + 1 + MSS, c + 1001));
    vec![
        seg(C1, syn, (c, 0), 0, &[capable(CapableForm::Syn)]),
        seg(S1, syn_ack, (s, c + 1), 0, &[capable(CapableForm::SynAck { sender_key: SERVER_KEY })]),
        seg(C1, ack, (c + 1, s + 1), 0, &[capable(keys)]),
        seg(C1, psh, (c + 1, s + 1), 1000, &[first_data]),
        seg(S1, psh, (s + 1, c + 1001), MSS, &[data]),
        seg(C1, ack, c_at, 0, &[data_ack]),
        seg(S1, ack, s_at, 0, &[MptcpOption::AddAddr(announce)]),
        // Two options in one segment: tshark lists each field's values in option order.
        seg(C1, ack, c_at, 0, &[data_ack, MptcpOption::AddAddr(echo)]),
        seg(C2, syn, (c2, 0), 0, &[MptcpOption::MpJoin(join_syn)]),
        seg(S2, syn_ack, (s2, c2 + 1), 0, &[MptcpOption::MpJoin(join_syn_ack)]),
        seg(C2, ack, (c2 + 1, s2 + 1), 0, &[MptcpOption::MpJoin(join_ack)]),
        seg(C2, ack, (c2 + 1, s2 + 1), 0, &[MptcpOption::MpPrio(MpPrio { backup: false })]),
        seg(S1, ack, s_at, 0, &[data_fin]),
        seg(C1, ack, c_at, 0, &[MptcpOption::RemoveAddr(remove)]),
        seg(C1, ack, c_at, 0, &[MptcpOption::MpFail(fail)]),
        seg(S1, ack, s_at, 0, &[MptcpOption::MpFastclose(MpFastclose { receiver_key: CLIENT_KEY })]),
        seg(C1, rst, (c_at.0, 0), 0, &[MptcpOption::MpTcpRst(MpTcpRst { transient: true, reason: 5 })]),
    ]
}

fn packet(s: &Seg, i: usize) -> Packet {
    let (client, client_port) = if s.side.subflow == 0 { (CLIENT, CLIENT_PORT) } else { (CLIENT_2, CLIENT_2_PORT) };
    let (src, dst, sp, dp) =
        if s.side.from_server { (SERVER, client, SERVER_PORT, client_port) } else { (client, SERVER, client_port, SERVER_PORT) };
    let mut options = TcpOptions { timestamps: Some(Timestamps { tsval: 100 + i as u32, tsecr: 0 }), ..TcpOptions::default() };
    if s.flags.contains(TcpFlags::SYN) {
        options = TcpOptions { mss: Some(MSS as u16), window_scale: Some(7), sack_permitted: true, ..options };
    }
    for option in &s.mptcp {
        options.push_mptcp(option).unwrap();
    }
    let h = TcpHeader { src_port: sp, dst_port: dp, seq: s.seq, ack: s.ack, flags: s.flags, window: 60_000, options };
    let mut p = Packet::tcp(src, dst, h, s.len);
    p.ip_id = i as u16;
    p
}

/// The tshark fields checked, in the order `expected` fills them.
const FIELDS: [&str; 26] = [
    "tcp.options.mptcp.subtype",           // 0
    "tcp.options.mptcp.version",           // 1
    "tcp.options.mptcp.checksumreq.flags", // 2
    "tcp.options.mptcp.sha256.flag",       // 3
    "tcp.options.mptcp.sendkey",           // 4
    "tcp.options.mptcp.recvkey",           // 5
    "tcp.options.mptcp.datalvllen",        // 6
    "tcp.options.mptcp.checksum",          // 7
    "tcp.options.mptcp.backup.flag",       // 8
    "tcp.options.mptcp.addrid",            // 9
    "tcp.options.mptcp.recvtok",           // 10
    "tcp.options.mptcp.sendrand",          // 11
    "tcp.options.mptcp.sendtrunchmac",     // 12
    "tcp.options.mptcp.sendhmac",          // 13
    "tcp.options.mptcp.rawdataack",        // 14
    "tcp.options.mptcp.rawdataseqno",      // 15
    "tcp.options.mptcp.subflowseqno",      // 16
    "tcp.options.mptcp.datafin.flag",      // 17
    "tcp.options.mptcp.dseqn8.flag",       // 18
    "tcp.options.mptcp.dataack8.flag",     // 19
    "tcp.options.mptcp.ipv4",              // 20
    "tcp.options.mptcp.port",              // 21
    "tcp.options.mptcp.addaddrtrunchmac",  // 22
    "tcp.options.mptcp.echo",              // 23
    "tcp.options.mptcp.flag_T.flag",       // 24
    "tcp.options.mptcp.rst_reason",        // 25
];

/// What tshark must print for `option`, field by field (empty: the field is absent).
fn expected(option: &MptcpOption) -> [String; 26] {
    let mut row: [String; 26] = Default::default();
    let mut set = |i: usize, v: String| row[i] = v;
    let bit = |b: bool| (b as u8).to_string();
    let hex16 = |v: u16| format!("0x{v:04x}");
    let seq = |s: DataSeq| match s {
        DataSeq::U32(v) => v.to_string(),
        DataSeq::U64(v) => v.to_string(),
    };
    match *option {
        MptcpOption::MpCapable(c) => {
            set(0, "0".into());
            set(1, "1".into());
            set(2, bit(c.flags.contains(CapableFlags::A)));
            set(3, bit(c.flags.contains(CapableFlags::H)));
            match c.form {
                CapableForm::Syn => {}
                CapableForm::SynAck { sender_key } => set(4, sender_key.to_string()),
                CapableForm::Ack { sender_key, receiver_key } => {
                    set(4, sender_key.to_string());
                    set(5, receiver_key.to_string());
                }
                CapableForm::Data { sender_key, receiver_key, data_level_length, checksum } => {
                    set(4, sender_key.to_string());
                    set(5, receiver_key.to_string());
                    set(6, data_level_length.to_string());
                    set(7, checksum.map(hex16).unwrap_or_default());
                }
            }
        }
        MptcpOption::MpJoin(j) => {
            set(0, "1".into());
            match j {
                MpJoin::Syn { backup, address_id, receiver_token, sender_random_number } => {
                    set(8, bit(backup));
                    set(9, address_id.to_string());
                    set(10, receiver_token.to_string());
                    set(11, sender_random_number.to_string());
                }
                MpJoin::SynAck { backup, address_id, sender_truncated_hmac, sender_random_number } => {
                    set(8, bit(backup));
                    set(9, address_id.to_string());
                    set(12, sender_truncated_hmac.to_string());
                    set(11, sender_random_number.to_string());
                }
                MpJoin::Ack { sender_hmac } => set(13, sender_hmac.iter().map(|b| format!("{b:02x}")).collect()),
            }
        }
        MptcpOption::Dss(d) => {
            set(0, "2".into());
            // tshark shows the flags F, m and a whether or not their fields are present.
            set(17, bit(d.mapping.is_some_and(|m| m.data_fin)));
            set(18, bit(d.mapping.is_some_and(|m| matches!(m.data_sequence_number, DataSeq::U64(_)))));
            set(19, bit(matches!(d.data_ack, Some(DataSeq::U64(_)))));
            if let Some(ack) = d.data_ack {
                set(14, seq(ack));
            }
            if let Some(m) = d.mapping {
                set(15, seq(m.data_sequence_number));
                set(16, m.subflow_sequence_number.to_string());
                set(6, m.data_level_length.to_string());
                // Wireshark 4.0 shows a DSS checksum only in an option 2 bytes longer than RFC
                // 8684's layout, so never: the option lengths (`mptcp_lengths`) check it.
            }
        }
        MptcpOption::AddAddr(a) => {
            set(0, "3".into());
            set(9, a.address_id.to_string());
            set(20, a.address.to_string());
            set(21, a.port.map(|p| p.to_string()).unwrap_or_default());
            set(22, a.truncated_hmac.map(|h| h.to_string()).unwrap_or_default());
            set(23, bit(a.truncated_hmac.is_none()));
        }
        MptcpOption::RemoveAddr(r) => {
            set(0, "4".into());
            set(9, r.address_ids().iter().map(u8::to_string).collect::<Vec<_>>().join(","));
        }
        MptcpOption::MpPrio(p) => {
            set(0, "5".into());
            set(8, bit(p.backup));
        }
        MptcpOption::MpFail(f) => {
            set(0, "6".into());
            set(15, f.data_sequence_number.to_string());
        }
        MptcpOption::MpFastclose(f) => {
            set(0, "7".into());
            set(5, f.receiver_key.to_string());
        }
        MptcpOption::MpTcpRst(r) => {
            set(0, "8".into());
            set(24, bit(r.transient));
            set(25, format!("{:#04x}", r.reason));
        }
    }
    row
}

/// The warnings this capture may raise. Wireshark flags every RST (MP_TCPRST rides on one),
/// and an option list with four NOPs, counted across the timestamps and MP-TCP options
/// between them: the NOP pairs that align the timestamps and those that pad an MP-TCP option
/// of odd length to the word reach it. A layout heuristic, not a malformed option.
const EXPECTED_WARNINGS: [&str; 2] = ["Connection reset (RST)", "4 NOP in a row - a router may have removed some options"];

/// The lengths tshark read for the kind-30 options, from its lists of every option's kind
/// and of every length (EOL and NOP have a kind but no length).
fn mptcp_lengths(kinds: &str, lengths: &str) -> Vec<usize> {
    let kinds = kinds.split(',').filter(|k| !matches!(*k, "0" | "1"));
    kinds.zip(lengths.split(',')).filter(|(k, _)| *k == "30").map(|(_, l)| l.parse().unwrap()).collect()
}

#[test]
fn tshark_reads_our_mptcp_options_as_written() {
    let path = temp_path("mptcp.pcap");
    let segs = conversation();
    let packets: Vec<Packet> = segs.iter().enumerate().map(|(i, s)| packet(s, i)).collect();
    let mut w = PcapWriter::create(&path).unwrap();
    for (i, p) in packets.iter().enumerate() {
        w.write(i as u64 * 1_000_000, p);
    }
    w.finish().unwrap();

    let mut fields = FIELDS.to_vec();
    fields.extend(["tcp.option_kind", "tcp.option_len", "_ws.malformed", "_ws.expert.severity", "_ws.expert.message"]);
    let rows = tshark_fields(&path, &[], &fields);
    assert_eq!(rows.len(), packets.len());
    for (i, (row, seg)) in rows.iter().zip(&segs).enumerate() {
        let ctx = format!("frame {}: {}", i + 1, row.join(" | "));
        let per_option: Vec<[String; 26]> = seg.mptcp.iter().map(expected).collect();
        for (k, name) in FIELDS.iter().enumerate() {
            let want: Vec<&str> = per_option.iter().map(|o| o[k].as_str()).filter(|v| !v.is_empty()).collect();
            assert_eq!(field(row, k), want.join(","), "{name} in {ctx}");
        }
        let ours: Vec<usize> = seg.mptcp.iter().map(|o| o.encode().as_bytes().len()).collect();
        assert_eq!(mptcp_lengths(field(row, FIELDS.len()), field(row, FIELDS.len() + 1)), ours, "{ctx}");
        assert_eq!(field(row, FIELDS.len() + 2), "", "malformed: {ctx}");
        let severities = field(row, FIELDS.len() + 3).split(',').filter(|s| !s.is_empty());
        for (sev, message) in severities.zip(field(row, FIELDS.len() + 4).split(',')) {
            let warning = sev.parse::<u64>().unwrap() >= EXPERT_WARNING;
            assert!(!warning || EXPECTED_WARNINGS.contains(&message), "expert warning or error: {ctx}");
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// Every segment of a short transfer between two `MptcpConnection`s over two paths, with
/// its time: links without delay, timers in time order. The client writes `bytes` and
/// closes; the server closes once the client's stream ended.
fn transport_capture(bytes: u64) -> (Vec<(u64, Packet)>, MptcpConnection, MptcpConnection) {
    let paths: Vec<_> = [(CLIENT, CLIENT_PORT), (CLIENT_2, CLIENT_2_PORT)]
        .iter()
        .map(|&(ip, port)| (SocketAddrV4::new(ip, port), SocketAddrV4::new(SERVER, SERVER_PORT)))
        .collect();
    let mut wire = Vec::new();
    let mut client =
        MptcpConnection::connect(MptcpConfig { seed: 1, ..MptcpConfig::default() }, &paths, 0, &mut wire).expect("valid configuration");
    let mut server = MptcpConnection::listen(MptcpConfig::default()).expect("valid configuration");
    client.send(0, bytes, &mut wire);
    client.close(0, &mut wire);
    let (mut captured, mut now_ns, mut server_closed) = (Vec::new(), 0, false);
    loop {
        while !wire.is_empty() {
            let pkt = wire.remove(0);
            captured.push((now_ns, pkt));
            let to = if pkt.dst == SERVER { &mut server } else { &mut client };
            to.on_packet(now_ns, &pkt, &mut wire);
            server.take_delivered();
            if !server_closed && server.stats().peer_finished {
                server_closed = true;
                server.close(now_ns, &mut wire);
            }
        }
        let Some(next_ns) = client.next_deadline_ns().into_iter().chain(server.next_deadline_ns()).min() else { break };
        now_ns = now_ns.max(next_ns);
        client.on_timeout(now_ns, &mut wire);
        server.on_timeout(now_ns, &mut wire);
    }
    (captured, client, server)
}

/// Wireshark's MP-TCP analysis computes the token and IDSN of each key with its own SHA-256,
/// and links an MP_JOIN to the connection whose token it names: the transport's tokens and
/// IDSNs must be the ones it expects, and both subflows one MP-TCP stream.
#[test]
fn tshark_finds_the_transport_s_tokens_and_idsns_and_joins_its_subflows() {
    let (captured, client, server) = transport_capture(50_000);
    assert!(client.stats().data_fin_acked && server.stats().data_fin_acked, "a whole exchange");
    let path = temp_path("mptcp-transport.pcap");
    let mut w = PcapWriter::create(&path).unwrap();
    for (now_ns, pkt) in &captured {
        w.write(*now_ns, pkt);
    }
    w.finish().unwrap();
    let prefs = ["-o", "mptcp.analyze_mptcp:TRUE", "-o", "mptcp.relative_sequence_numbers:FALSE"];
    let fields = ["tcp.stream", "mptcp.stream", "mptcp.expected_token", "mptcp.expected_idsn", "tcp.options.mptcp.recvtok"];
    let rows = tshark_fields(&path, &prefs, &fields);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(rows.len(), captured.len());
    // The distinct values of field `i` over the capture (tshark joins a frame's with commas).
    let values = |i: usize| -> BTreeSet<String> {
        rows.iter().flat_map(|r| field(r, i).split(',').filter(|v| !v.is_empty()).map(str::to_string).collect::<Vec<_>>()).collect()
    };
    assert_eq!((values(0).len(), values(1).len()), (2, 1), "two subflows, one connection");
    let (client_key, server_key) = (client.local_key(), server.local_key());
    let ours = |a: String, b: String| BTreeSet::from([a, b]);
    assert_eq!(values(2), ours(token(client_key).to_string(), token(server_key).to_string()), "tokens: SHA-256 of the keys");
    assert_eq!(values(3), ours(idsn(client_key).to_string(), idsn(server_key).to_string()), "IDSNs: SHA-256 of the keys");
    assert_eq!(values(4), BTreeSet::from([token(server_key).to_string()]), "the join names the server's token");
}
