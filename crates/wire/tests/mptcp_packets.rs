//! MP-TCP options in packets: attached through `TcpOptions::push_mptcp`, carried by emit and
//! parse byte for byte, read back with `mptcp_options`, and given precedence over SACK.

use std::net::Ipv4Addr;

use millinet_wire::mptcp::{
    AddAddr, CapableFlags, CapableForm, DataSeq, Dss, DssMapping, MpCapable, MpJoin, MpPrio, MpTcpRst, MptcpError, MptcpOption, RemoveAddr,
};
use millinet_wire::{emit, parse, Packet, ParseError, RawOptionError, SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

fn ts() -> Option<Timestamps> {
    Some(Timestamps { tsval: 1000, tsecr: 2000 })
}

fn ts_only() -> TcpOptions {
    TcpOptions { timestamps: ts(), ..TcpOptions::default() }
}

fn syn_options() -> TcpOptions {
    TcpOptions { mss: Some(1460), window_scale: Some(7), sack_permitted: true, timestamps: ts(), ..TcpOptions::default() }
}

fn with_mptcp(mut options: TcpOptions, mptcp: &[MptcpOption]) -> TcpOptions {
    for option in mptcp {
        options.push_mptcp(option).unwrap();
    }
    options
}

fn segment(flags: TcpFlags, options: TcpOptions, payload_bytes: u32) -> Packet {
    let h = TcpHeader { src_port: 51_234, dst_port: 443, seq: 7, ack: 9, flags, window: 1000, options };
    Packet::tcp(CLIENT, SERVER, h, payload_bytes)
}

/// Emits `p` with a payload of zeros, parses it back and re-emits it: the packet and the
/// bytes must survive unchanged. Returns the options parsed.
fn through_the_wire(p: &Packet) -> TcpOptions {
    let payload = vec![0u8; p.payload_bytes as usize];
    let mut buf = [0u8; 1600];
    let n = emit(p, &payload, &mut buf).unwrap();
    assert_eq!(n, p.wire_bytes() as usize);
    let (back, _) = parse(&buf[..n], true).unwrap();
    assert_eq!(&back, p);
    let mut again = [0u8; 1600];
    assert_eq!(emit(&back, &payload, &mut again), Ok(n));
    assert_eq!(again[..n], buf[..n]);
    back.tcp_header().unwrap().options
}

fn decoded(options: &TcpOptions) -> Vec<MptcpOption> {
    options.mptcp_options().collect::<Result<_, _>>().unwrap()
}

const KEY_A: u64 = 0x0102_0304_0506_0708;
const KEY_B: u64 = 0x1112_1314_1516_1718;

fn full_dss() -> MptcpOption {
    MptcpOption::Dss(Dss {
        data_ack: Some(DataSeq::U64(KEY_B)),
        mapping: Some(DssMapping {
            data_sequence_number: DataSeq::U64(KEY_A),
            subflow_sequence_number: 1,
            data_level_length: 1400,
            checksum: Some(0xabcd),
            data_fin: false,
        }),
    })
}

fn data_ack(ack: u64) -> MptcpOption {
    MptcpOption::Dss(Dss { data_ack: Some(DataSeq::U64(ack)), mapping: None })
}

#[test]
fn handshake_and_data_options_survive_emit_and_parse() {
    let flags = CapableFlags::A | CapableFlags::H;
    let capable = |form| MptcpOption::MpCapable(MpCapable { flags, form });
    let keys = capable(CapableForm::Ack { sender_key: KEY_A, receiver_key: KEY_B });
    let first_data = capable(CapableForm::Data { sender_key: KEY_A, receiver_key: KEY_B, data_level_length: 100, checksum: Some(1) });
    let join_syn = MpJoin::Syn { backup: true, address_id: 2, receiver_token: 0xa1b2_c3d4, sender_random_number: 5 };
    let join_syn_ack = MpJoin::SynAck { backup: false, address_id: 0, sender_truncated_hmac: 6, sender_random_number: 7 };
    let join_ack = MpJoin::Ack { sender_hmac: [9; 20] };
    let (syn, syn_ack, ack) = (TcpFlags::SYN, TcpFlags::SYN | TcpFlags::ACK, TcpFlags::ACK);
    let cases = [
        (syn, syn_options(), capable(CapableForm::Syn), 0),
        (syn_ack, syn_options(), capable(CapableForm::SynAck { sender_key: KEY_B }), 0),
        (ack, ts_only(), keys, 0),
        (ack, ts_only(), first_data, 100),
        (syn, syn_options(), MptcpOption::MpJoin(join_syn), 0),
        (syn_ack, syn_options(), MptcpOption::MpJoin(join_syn_ack), 0),
        (ack, ts_only(), MptcpOption::MpJoin(join_ack), 0),
        (ack, ts_only(), full_dss(), 1400),
    ];
    for (flags, options, option, payload) in cases {
        let p = segment(flags, with_mptcp(options, &[option]), payload);
        let back = through_the_wire(&p);
        assert_eq!(decoded(&back), [option]);
        assert!(back.encoded_bytes() <= 40);
    }
    // Timestamps and the longest DSS fill the option space exactly.
    let p = segment(TcpFlags::ACK, with_mptcp(ts_only(), &[full_dss()]), 1400);
    assert_eq!(p.tcp_header().unwrap().header_bytes(), 60);
}

#[test]
fn several_options_on_one_segment_read_back_in_order() {
    let announce = MptcpOption::AddAddr(AddAddr {
        address_id: 3,
        address: Ipv4Addr::new(10, 45, 0, 3),
        port: Some(443),
        truncated_hmac: Some(0x0102_0304_0506_0708),
    });
    let short_ack = MptcpOption::Dss(Dss { data_ack: Some(DataSeq::U32(77)), mapping: None });
    let opts = with_mptcp(ts_only(), &[short_ack, announce]);
    assert_eq!(opts.encoded_bytes(), 12 + 28, "8 + 18 = 26 bytes, padded to 28");
    let back = through_the_wire(&segment(TcpFlags::ACK, opts, 0));
    assert_eq!(decoded(&back), [short_ack, announce]);
    // Other raw options are passed over; an unreadable MP-TCP option yields its error and
    // does not hide the ones after it.
    let mut mixed = TcpOptions::default();
    mixed.push_raw(&[253, 4, 0x12, 0x34]).unwrap();
    mixed.push_raw(&[30, 4, 0x90, 0]).unwrap();
    mixed.push_mptcp(&MptcpOption::MpPrio(MpPrio { backup: true })).unwrap();
    let read: Vec<_> = mixed.mptcp_options().collect();
    assert_eq!(read, [Err(MptcpError::UnknownSubtype { subtype: 9 }), Ok(MptcpOption::MpPrio(MpPrio { backup: true }))]);
    assert_eq!(TcpOptions::default().mptcp_options().count(), 0);
}

fn sack_blocks(n: u32) -> Vec<SackBlock> {
    (0..n).map(|i| SackBlock { left: 1000 * (i + 1), right: 1000 * (i + 1) + 500 }).collect()
}

/// Timestamps and `blocks` SACK blocks.
fn ack_with_sack(blocks: u32) -> TcpOptions {
    let mut o = ts_only();
    assert!(o.set_sack(&sack_blocks(blocks)));
    o
}

#[test]
fn sack_blocks_give_way_to_mptcp_options_latest_first() {
    // Timestamps and 3 blocks fill the 40 bytes; a 12-byte DATA_ACK leaves room for one block.
    let mut o = ack_with_sack(3);
    assert_eq!(o.encoded_bytes(), 40);
    o.push_mptcp(&data_ack(1)).unwrap();
    assert_eq!(o.sack(), &sack_blocks(1)[..]);
    assert_eq!(o.encoded_bytes(), 12 + 12 + 12);
    // The same options built from scratch compare equal: no dropped block lingers.
    let fresh = with_mptcp(ack_with_sack(1), &[data_ack(1)]);
    assert_eq!(o, fresh);
    assert_eq!(decoded(&through_the_wire(&segment(TcpFlags::ACK, o, 0))), [data_ack(1)]);

    // The longest DSS beside timestamps leaves none, and push_sack adds none after it.
    let mut o = ack_with_sack(3);
    o.push_mptcp(&full_dss()).unwrap();
    assert_eq!((o.sack_count, o.encoded_bytes()), (0, 40));
    assert!(!o.push_sack(SackBlock { left: 1, right: 2 }));

    // Without timestamps a 4-byte DATA_ACK (8 bytes) and 3 blocks (28) fit together.
    let mut o = TcpOptions::default();
    assert!(o.set_sack(&sack_blocks(4)));
    o.push_mptcp(&MptcpOption::Dss(Dss { data_ack: Some(DataSeq::U32(5)), mapping: None })).unwrap();
    assert_eq!((o.sack_count, o.encoded_bytes()), (3, 36));
}

#[test]
fn sack_blocks_added_later_never_overwrite_an_mptcp_option() {
    // Without timestamps the wire has room for 4 blocks beside a 4-byte MP_TCPRST, but the
    // 32 bytes blocks and raw options share have room for 3.
    let reset = MptcpOption::MpTcpRst(MpTcpRst { transient: false, reason: 1 });
    let mut o = with_mptcp(TcpOptions::default(), &[reset]);
    let added = sack_blocks(4).into_iter().filter(|&b| o.push_sack(b)).count();
    assert_eq!((added, o.sack(), o.encoded_bytes()), (3, &sack_blocks(3)[..], 4 + 24 + 4));
    assert_eq!(decoded(&through_the_wire(&segment(TcpFlags::ACK | TcpFlags::RST, o, 0))), [reset]);
}

#[test]
fn an_option_that_cannot_fit_changes_nothing() {
    // Timestamps and a 28-byte DSS use the 40 bytes: even MP_PRIO's 3 have no room.
    let mut o = with_mptcp(ack_with_sack(0), &[full_dss()]);
    let before = o;
    let prio = MptcpOption::MpPrio(MpPrio { backup: false });
    assert_eq!(o.push_mptcp(&prio), Err(RawOptionError::NoRoom { needed: 3, available: 0 }));
    assert_eq!(o, before);
    // With SACK blocks to drop that would not help either, they stay.
    let mut o = with_mptcp(ack_with_sack(0), &[data_ack(1)]);
    assert!(o.push_sack(SackBlock { left: 1, right: 2 }));
    let before = o;
    let remove = MptcpOption::RemoveAddr(RemoveAddr::new(&[1; 17]).unwrap());
    assert_eq!(o.push_mptcp(&remove), Err(RawOptionError::NoRoom { needed: 20, available: 16 }));
    assert_eq!(o, before);
    // Beyond the 32 bytes a TcpOptions keeps for raw options, whatever the wire has left.
    let mut o = TcpOptions::default();
    let remove = MptcpOption::RemoveAddr(RemoveAddr::new(&[1; 30]).unwrap());
    assert_eq!(o.push_mptcp(&remove), Err(RawOptionError::NoRoom { needed: 33, available: 32 }));
}

#[test]
fn a_long_dss_beside_a_sack_block_is_refused_by_parse_with_a_typed_error() {
    // No timestamps: a 28-byte DSS and one SACK block (12 with its NOPs) are 40 bytes on the
    // wire but 36 of the 32 a TcpOptions keeps.
    let p = segment(TcpFlags::ACK, with_mptcp(TcpOptions::default(), &[full_dss()]), 0);
    let mut buf = vec![0u8; 80];
    let n = emit(&p, &[], &mut buf).unwrap();
    buf.truncate(n);
    buf.extend_from_slice(&[1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    let total_length = buf.len() as u16;
    buf[2..4].copy_from_slice(&total_length.to_be_bytes());
    buf[32] = 0xf0; // data offset: 15 words
    assert_eq!(parse(&buf, false).map(|_| ()), Err(ParseError::UnknownTcpOptionsTooLong { offset: 20 + 28 + 2, kind: 5 }));
}
