//! MP-TCP options (RFC 8684): byte-exact encodings from the RFC's figures, round trips of
//! every form, typed errors for every malformed input, and no panic on any bytes.

use std::net::Ipv4Addr;

use millinet_wire::mptcp::{
    AddAddr, CapableFlags, CapableForm, DataSeq, Dss, DssMapping, MpCapable, MpFail, MpFastclose, MpJoin, MpPrio, MpTcpRst, MptcpError,
    MptcpOption, RemoveAddr, Subtype, MAX_REMOVE_ADDR_IDS,
};

const KEY_A: u64 = 0x0102_0304_0506_0708;
const KEY_B: u64 = 0x1112_1314_1516_1718;

/// `option` encodes to exactly `bytes`, and `bytes` decode back to `option`.
fn check(option: MptcpOption, bytes: &[u8]) {
    assert_eq!(option.encode().as_bytes(), bytes, "{option:?}");
    assert_eq!(MptcpOption::decode(bytes), Ok(option));
}

fn capable(flags: CapableFlags, form: CapableForm) -> MptcpOption {
    MptcpOption::MpCapable(MpCapable { flags, form })
}

fn mapping(dsn: DataSeq, checksum: Option<u16>, data_fin: bool) -> DssMapping {
    DssMapping { data_sequence_number: dsn, subflow_sequence_number: 0x0a0b_0c0d, data_level_length: 1400, checksum, data_fin }
}

#[test]
fn mp_capable_bytes_follow_figure_4() {
    let sha256 = CapableFlags::H;
    #[rustfmt::skip]
    check(capable(CapableFlags::A | sha256, CapableForm::Syn), &[
        30, 4,      // kind 30, length 4
        0x01,       // subtype 0 (MP_CAPABLE), version 1
        0x81,       // flags A (checksum required) and H (HMAC-SHA256)
    ]);
    #[rustfmt::skip]
    check(capable(sha256, CapableForm::SynAck { sender_key: KEY_B }), &[
        30, 12, 0x01, 0x01,
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Option Sender's Key
    ]);
    #[rustfmt::skip]
    check(capable(sha256 | CapableFlags::C, CapableForm::Ack { sender_key: KEY_A, receiver_key: KEY_B }), &[
        30, 20, 0x01,
        0x21,                                           // flags C (no new subflows to this address) and H
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Option Sender's Key
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Option Receiver's Key
    ]);
    let data = CapableForm::Data { sender_key: KEY_A, receiver_key: KEY_B, data_level_length: 1000, checksum: None };
    #[rustfmt::skip]
    check(capable(sha256, data), &[
        30, 22, 0x01, 0x01,
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Option Sender's Key
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Option Receiver's Key
        0x03, 0xe8,                                     // Data-Level Length 1000
    ]);
    let data = CapableForm::Data { sender_key: KEY_A, receiver_key: KEY_B, data_level_length: 1000, checksum: Some(0xbeef) };
    #[rustfmt::skip]
    check(capable(CapableFlags::A | sha256, data), &[
        30, 24, 0x01, 0x81,
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
        0x03, 0xe8,                                     // Data-Level Length
        0xbe, 0xef,                                     // Checksum
    ]);
}

#[test]
fn mp_join_bytes_follow_figures_5_to_7() {
    let syn = MpJoin::Syn { backup: true, address_id: 3, receiver_token: 0xa1b2_c3d4, sender_random_number: 0x0102_0304 };
    #[rustfmt::skip]
    check(MptcpOption::MpJoin(syn), &[
        30, 12,
        0x11,                   // subtype 1 (MP_JOIN), reserved 0, B = 1
        3,                      // Address ID
        0xa1, 0xb2, 0xc3, 0xd4, // Receiver's Token
        0x01, 0x02, 0x03, 0x04, // Sender's Random Number
    ]);
    let syn_ack =
        MpJoin::SynAck { backup: false, address_id: 0, sender_truncated_hmac: 0xfedc_ba98_7654_3210, sender_random_number: 0x0506_0708 };
    #[rustfmt::skip]
    check(MptcpOption::MpJoin(syn_ack), &[
        30, 16,
        0x10,                                           // subtype 1, B = 0
        0,                                              // Address ID
        0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, // Sender's Truncated HMAC
        0x05, 0x06, 0x07, 0x08,                         // Sender's Random Number
    ]);
    let hmac: [u8; 20] = std::array::from_fn(|i| 0xc0 + i as u8);
    let mut expected = vec![30, 24, 0x10, 0]; // subtype 1 and 12 reserved bits
    expected.extend_from_slice(&hmac); // Sender's HMAC, 160 bits
    check(MptcpOption::MpJoin(MpJoin::Ack { sender_hmac: hmac }), &expected);
}

#[test]
fn dss_bytes_follow_figure_9() {
    #[rustfmt::skip]
    check(MptcpOption::Dss(Dss { data_ack: Some(DataSeq::U32(0x1000_0001)), mapping: None }), &[
        30, 8,
        0x20,                   // subtype 2 (DSS), reserved
        0x01,                   // flags: A
        0x10, 0x00, 0x00, 0x01, // Data ACK, 4 octets
    ]);
    let full = Dss {
        data_ack: Some(DataSeq::U64(0x0000_0001_0000_0002)),
        mapping: Some(mapping(DataSeq::U64(0x0000_0003_0000_0004), Some(0x1234), false)),
    };
    #[rustfmt::skip]
    check(MptcpOption::Dss(full), &[
        30, 28, 0x20,
        0x0f,                                           // flags: m M a A
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, // Data ACK, 8 octets
        0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, // Data sequence number, 8 octets
        0x0a, 0x0b, 0x0c, 0x0d,                         // Subflow Sequence Number
        0x05, 0x78,                                     // Data-Level Length 1400
        0x12, 0x34,                                     // Checksum
    ]);
    #[rustfmt::skip]
    check(MptcpOption::Dss(Dss { data_ack: None, mapping: Some(mapping(DataSeq::U32(7), None, false)) }), &[
        30, 14, 0x20,
        0x04,                   // flags: M
        0x00, 0x00, 0x00, 0x07, // Data sequence number, 4 octets
        0x0a, 0x0b, 0x0c, 0x0d, // Subflow Sequence Number
        0x05, 0x78,             // Data-Level Length, no checksum
    ]);
    // A DATA_FIN without data (RFC 8684 §3.3.3): subflow sequence number 0, length 1.
    let fin = DssMapping {
        data_sequence_number: DataSeq::U32(0x0000_0100),
        subflow_sequence_number: 0,
        data_level_length: 1,
        checksum: None,
        data_fin: true,
    };
    #[rustfmt::skip]
    check(MptcpOption::Dss(Dss { data_ack: Some(DataSeq::U32(0x200)), mapping: Some(fin) }), &[
        30, 18, 0x20,
        0x15,                   // flags: F M A
        0x00, 0x00, 0x02, 0x00, // Data ACK
        0x00, 0x00, 0x01, 0x00, // Data sequence number of the DATA_FIN
        0, 0, 0, 0,             // Subflow Sequence Number 0
        0x00, 0x01,             // Data-Level Length 1
    ]);
}

#[test]
fn path_management_bytes_follow_figures_11_to_13() {
    let announce =
        AddAddr { address_id: 4, address: Ipv4Addr::new(10, 45, 0, 3), port: Some(8080), truncated_hmac: Some(0x0102_0304_0506_0708) };
    #[rustfmt::skip]
    check(MptcpOption::AddAddr(announce), &[
        30, 18,
        0x30,                                           // subtype 3 (ADD_ADDR), E = 0
        4,                                              // Address ID
        10, 45, 0, 3,                                   // Address (IPv4)
        0x1f, 0x90,                                     // Port 8080
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Truncated HMAC
    ]);
    let no_port = AddAddr { port: None, ..announce };
    let mut expected = vec![30, 16, 0x30, 4, 10, 45, 0, 3];
    expected.extend_from_slice(&[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]);
    check(MptcpOption::AddAddr(no_port), &expected);
    let echo = AddAddr { port: None, truncated_hmac: None, ..announce };
    check(MptcpOption::AddAddr(echo), &[30, 8, 0x31 /* E = 1 */, 4, 10, 45, 0, 3]);
    let echo_port = AddAddr { truncated_hmac: None, ..announce };
    check(MptcpOption::AddAddr(echo_port), &[30, 10, 0x31, 4, 10, 45, 0, 3, 0x1f, 0x90]);

    let remove = RemoveAddr::new(&[2, 5]).unwrap();
    check(MptcpOption::RemoveAddr(remove), &[30, 5, 0x40 /* subtype 4 */, 2, 5 /* Address IDs */]);
    assert_eq!(remove.address_ids(), [2, 5]);
    assert_eq!(RemoveAddr::new(&[]), None);
    assert_eq!(RemoveAddr::new(&[1; MAX_REMOVE_ADDR_IDS + 1]), None);

    check(MptcpOption::MpPrio(MpPrio { backup: true }), &[30, 3, 0x51 /* subtype 5 (MP_PRIO), B = 1 */]);
    check(MptcpOption::MpPrio(MpPrio { backup: false }), &[30, 3, 0x50]);
}

#[test]
fn closing_bytes_follow_figures_14_to_16() {
    #[rustfmt::skip]
    check(MptcpOption::MpFastclose(MpFastclose { receiver_key: KEY_B }), &[
        30, 12,
        0x70, 0,                                        // subtype 7 (MP_FASTCLOSE), reserved
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Option Receiver's Key
    ]);
    #[rustfmt::skip]
    check(MptcpOption::MpFail(MpFail { data_sequence_number: 0x0000_0001_0000_05dc }), &[
        30, 12,
        0x60, 0,                                        // subtype 6 (MP_FAIL), reserved
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0xdc, // Data Sequence Number, 8 octets
    ]);
    check(
        MptcpOption::MpTcpRst(MpTcpRst { transient: true, reason: 4 }),
        &[
            30, 4, 0x81, // subtype 8 (MP_TCPRST), U V W clear, T = 1
            4,    // Reason: too much outstanding data
        ],
    );
}

/// Every form of every subtype, DSS in all its flag combinations.
fn every_form() -> Vec<MptcpOption> {
    let mut all = vec![
        capable(CapableFlags::H, CapableForm::Syn),
        capable(CapableFlags(0xff), CapableForm::SynAck { sender_key: u64::MAX }),
        capable(CapableFlags::H, CapableForm::Ack { sender_key: KEY_A, receiver_key: KEY_B }),
        capable(
            CapableFlags::A | CapableFlags::H,
            CapableForm::Data { sender_key: KEY_A, receiver_key: KEY_B, data_level_length: 0, checksum: Some(0) },
        ),
        capable(CapableFlags::H, CapableForm::Data { sender_key: 0, receiver_key: 0, data_level_length: u16::MAX, checksum: None }),
        MptcpOption::MpJoin(MpJoin::Syn { backup: false, address_id: 255, receiver_token: 1, sender_random_number: 2 }),
        MptcpOption::MpJoin(MpJoin::SynAck { backup: true, address_id: 1, sender_truncated_hmac: 3, sender_random_number: 4 }),
        MptcpOption::MpJoin(MpJoin::Ack { sender_hmac: [0xab; 20] }),
        MptcpOption::AddAddr(AddAddr { address_id: 0, address: Ipv4Addr::BROADCAST, port: Some(0), truncated_hmac: Some(u64::MAX) }),
        MptcpOption::AddAddr(AddAddr { address_id: 9, address: Ipv4Addr::UNSPECIFIED, port: None, truncated_hmac: None }),
        MptcpOption::RemoveAddr(RemoveAddr::new(&[7]).unwrap()),
        MptcpOption::RemoveAddr(RemoveAddr::new(&[3; MAX_REMOVE_ADDR_IDS]).unwrap()),
        MptcpOption::MpPrio(MpPrio { backup: true }),
        MptcpOption::MpFail(MpFail { data_sequence_number: u64::MAX }),
        MptcpOption::MpFastclose(MpFastclose { receiver_key: 0 }),
        MptcpOption::MpTcpRst(MpTcpRst { transient: false, reason: 255 }),
    ];
    let seqs = [DataSeq::U32(u32::MAX), DataSeq::U64(u64::MAX - 1)];
    for data_ack in [None, Some(seqs[0]), Some(seqs[1])] {
        all.push(MptcpOption::Dss(Dss { data_ack, mapping: None }));
        for dsn in seqs {
            for checksum in [None, Some(0xffff)] {
                for data_fin in [false, true] {
                    all.push(MptcpOption::Dss(Dss { data_ack, mapping: Some(mapping(dsn, checksum, data_fin)) }));
                }
            }
        }
    }
    all
}

/// The length RFC 8684 gives a DSS: 4, the DATA_ACK, then the mapping (§3.3, Figure 9).
fn dss_length(dss: &Dss) -> usize {
    let seq = |s: DataSeq| if matches!(s, DataSeq::U64(_)) { 8 } else { 4 };
    4 + dss.data_ack.map_or(0, seq) + dss.mapping.map_or(0, |m| seq(m.data_sequence_number) + 6 + m.checksum.map_or(0, |_| 2))
}

#[test]
fn every_form_round_trips() {
    let all = every_form();
    assert_eq!(all.len(), 16 + 3 * 9);
    for option in all {
        let encoded = option.encode();
        let bytes = encoded.as_bytes();
        assert_eq!((bytes[0], bytes[1] as usize), (30, bytes.len()), "{option:?}");
        assert!(bytes.len() <= 40, "{option:?}");
        if let MptcpOption::Dss(dss) = &option {
            assert_eq!(bytes.len(), dss_length(dss), "{dss:?}");
        }
        assert_eq!(MptcpOption::decode(bytes), Ok(option));
    }
}

/// The subtype of an encoded option, for the errors that name it.
fn subtype_of(bytes: &[u8]) -> Subtype {
    let all = [
        Subtype::MpCapable,
        Subtype::MpJoin,
        Subtype::Dss,
        Subtype::AddAddr,
        Subtype::RemoveAddr,
        Subtype::MpPrio,
        Subtype::MpFail,
        Subtype::MpFastclose,
        Subtype::MpTcpRst,
    ];
    all[(bytes[2] >> 4) as usize]
}

#[test]
fn truncated_and_overlong_options_are_typed_errors() {
    for option in every_form() {
        let encoded = option.encode();
        let bytes = encoded.as_bytes();
        let n = bytes.len();
        // Cut short, length byte unchanged.
        for cut in 0..n {
            let needed = if cut < 3 { 3 } else { n };
            assert_eq!(MptcpOption::decode(&bytes[..cut]), Err(MptcpError::Truncated { needed, available: cut }));
        }
        // One byte more than the length byte counts.
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert_eq!(MptcpOption::decode(&longer), Err(MptcpError::TrailingBytes { length: n as u8, bytes: n + 1 }));
        // One byte more, counted: no subtype has forms one byte apart, but REMOVE_ADDR takes
        // any number of address IDs up to the option space.
        longer[1] += 1;
        let subtype = subtype_of(bytes);
        let grown = MptcpOption::decode(&longer);
        if subtype == Subtype::RemoveAddr && n < 40 {
            assert!(grown.is_ok(), "{grown:?}");
        } else {
            assert_eq!(grown, Err(MptcpError::BadLength { subtype, length: n as u8 + 1 }), "{option:?}");
        }
    }
    // REMOVE_ADDR without an address ID; MP_PRIO with RFC 6824's address ID.
    let bad = |subtype, length| Err(MptcpError::BadLength { subtype, length });
    assert_eq!(MptcpOption::decode(&[30, 3, 0x40]), bad(Subtype::RemoveAddr, 3));
    assert_eq!(MptcpOption::decode(&[30, 4, 0x51, 2]), bad(Subtype::MpPrio, 4));
    // A DSS whose length disagrees with its flags, or has no flags octet.
    assert_eq!(MptcpOption::decode(&[30, 8, 0x20, 0x03, 0, 0, 0, 1]), bad(Subtype::Dss, 8));
    assert_eq!(MptcpOption::decode(&[30, 3, 0x20]), bad(Subtype::Dss, 3));
    // A checksum needs a mapping: a DATA_ACK alone plus two bytes is no DSS.
    assert_eq!(MptcpOption::decode(&[30, 10, 0x20, 0x01, 0, 0, 0, 1, 0, 0]), bad(Subtype::Dss, 10));
    // ADD_ADDR whose E flag disagrees with its length: an echo of 16 bytes.
    assert_eq!(MptcpOption::decode(&[[30, 16, 0x31, 1].as_slice(), &[0; 12]].concat()), bad(Subtype::AddAddr, 16));
}

#[test]
fn unknown_subtypes_versions_and_forms_are_typed_errors() {
    for subtype in 0x9..=0xf {
        assert_eq!(MptcpOption::decode(&[30, 4, subtype << 4, 0]), Err(MptcpError::UnknownSubtype { subtype }));
    }
    for version in (0..16).filter(|&v| v != 1) {
        // RFC 6824's (version 0) SYN carried a key: length 12.
        let e = MptcpOption::decode(&[30, 12, version, 0x81, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(e, Err(MptcpError::UnsupportedVersion { version }));
    }
    assert_eq!(MptcpOption::decode(&[2, 4, 0x05, 0xb4]), Err(MptcpError::NotMptcp { kind: 2 }));
    // F without M: a DATA_FIN needs the mapping that gives it its data sequence number.
    assert_eq!(MptcpOption::decode(&[30, 8, 0x20, 0x11, 0, 0, 0, 1]), Err(MptcpError::DataFinWithoutMapping));
    assert_eq!(MptcpOption::decode(&[30, 4, 0x20, 0x10]), Err(MptcpError::DataFinWithoutMapping));
    for length in [20u8, 22, 28, 30] {
        let mut v6 = vec![0u8; length as usize];
        v6[..3].copy_from_slice(&[30, length, 0x30]);
        assert_eq!(MptcpOption::decode(&v6), Err(MptcpError::Ipv6Address { length }));
    }
    let e = MptcpOption::decode(&[30, 9, 0x20, 0x04, 0, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(e.to_string(), "DSS option of invalid length 9");
    let e = MptcpOption::decode(&[30, 4, 0x00, 0x81]).unwrap_err();
    assert_eq!(e.to_string(), "MP_CAPABLE version 0, only version 1 is supported");
}

/// splitmix64: a seeded generator, so a failure reproduces.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whatever decodes re-encodes to an option that decodes to the same value, of the same
/// length (reserved bits come back cleared, nothing else changes).
fn decode_is_stable(bytes: &[u8]) -> bool {
    let Ok(option) = MptcpOption::decode(bytes) else { return false };
    let again = option.encode();
    assert_eq!(again.as_bytes().len(), bytes.len(), "{bytes:?}");
    assert_eq!(MptcpOption::decode(again.as_bytes()), Ok(option), "{bytes:?}");
    true
}

#[test]
fn no_bytes_make_decode_panic() {
    let mut state = 0x5eed;
    let mut accepted = 0;
    // Random buffers of every length the option space allows, as they come...
    for _ in 0..2_000 {
        for n in 0..=40 {
            let bytes: Vec<u8> = (0..n).map(|_| next(&mut state) as u8).collect();
            accepted += decode_is_stable(&bytes) as u32;
        }
    }
    // ...and with kind 30 and a matching length byte, over every subtype octet and every
    // fourth octet (flags, version, address ID), so each decoder sees every length.
    let mut by_subtype = [0u32; 16];
    for n in 3..=40usize {
        let mut bytes: Vec<u8> = (0..n).map(|_| next(&mut state) as u8).collect();
        bytes[..2].copy_from_slice(&[30, n as u8]);
        for b2 in 0..=255u8 {
            bytes[2] = b2;
            for b3 in 0..=if n > 3 { 255u8 } else { 0 } {
                if n > 3 {
                    bytes[3] = b3;
                }
                if decode_is_stable(&bytes) {
                    by_subtype[(b2 >> 4) as usize] += 1;
                }
            }
        }
    }
    assert!(by_subtype[..9].iter().all(|&k| k > 0), "{by_subtype:?}");
    assert!(by_subtype[9..].iter().all(|&k| k == 0), "{by_subtype:?}");
    assert!(accepted < 2_000, "random bytes should rarely be an option: {accepted}");
}
