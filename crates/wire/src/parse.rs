//! Real IPv4/TCP/UDP bytes back into a `Packet`.
//!
//! Every length field is checked against the bytes present before it is used,
//! so no input can make the parser index out of bounds or panic.

use std::net::Ipv4Addr;

use crate::checksum::{self, Checksum};
use crate::emit::{
    IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP, OPT_EOL, OPT_MSS, OPT_NOP, OPT_SACK, OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_WSCALE,
};
use crate::packet::{OtherHeader, Packet, Transport, UdpHeader, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::tcp::{SackBlock, TcpFlags, TcpHeader, TcpOptions, Timestamps, TCP_HEADER_BYTES};

const IP_HDR: usize = IPV4_HEADER_BYTES as usize;
const TCP_HDR: usize = TCP_HEADER_BYTES as usize;
const UDP_HDR: usize = UDP_HEADER_BYTES as usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Fewer bytes than a header or the IPv4 total length needs.
    Truncated {
        needed: usize,
        available: usize,
    },
    NotIpv4 {
        version: u8,
    },
    /// IHL below 5 words (RFC 791 §3.1).
    BadIhl {
        ihl: u8,
    },
    /// IPv4 options are valid but a `Packet` cannot carry them.
    IpOptions {
        ihl: u8,
    },
    /// Total length smaller than the headers it must contain.
    BadTotalLength {
        total_length: u16,
    },
    /// A fragment: only the first fragment holds the transport header and a
    /// `Packet` cannot describe fragmentation.
    Fragment,
    UnsupportedProtocol {
        protocol: u8,
    },
    BadIpChecksum,
    /// Data offset below 5 words or beyond the end of the segment (RFC 9293 §3.1).
    BadTcpDataOffset {
        data_offset: u8,
    },
    /// An option whose length byte is missing, below 2, runs past the header, or
    /// does not match the fixed length of its kind. `offset` counts from the
    /// start of the TCP header.
    MalformedTcpOption {
        offset: usize,
        kind: u8,
    },
    /// More unmodelled option bytes and SACK blocks together than a `TcpOptions` holds (32
    /// bytes, `OPTION_AREA_BYTES`); `offset` is the option that did not fit.
    UnknownTcpOptionsTooLong {
        offset: usize,
        kind: u8,
    },
    /// The UDP length field disagrees with the IPv4 payload length (RFC 768).
    BadUdpLength {
        udp_length: u16,
        ip_payload: usize,
    },
    BadTransportChecksum,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ParseError::Truncated { needed, available } => {
                write!(f, "truncated: {needed} bytes needed, {available} present")
            }
            ParseError::NotIpv4 { version } => write!(f, "IP version {version}, expected 4"),
            ParseError::BadIhl { ihl } => {
                write!(f, "IPv4 header length {ihl} words, at least 5 required")
            }
            ParseError::IpOptions { ihl } => write!(f, "IPv4 options (header length {ihl} words) are not supported"),
            ParseError::BadTotalLength { total_length } => {
                write!(f, "IPv4 total length {total_length} is shorter than its headers")
            }
            ParseError::Fragment => f.write_str("IPv4 fragment"),
            ParseError::UnsupportedProtocol { protocol } => {
                write!(f, "IP protocol {protocol}, expected 6 (TCP) or 17 (UDP)")
            }
            ParseError::BadIpChecksum => f.write_str("bad IPv4 header checksum"),
            ParseError::BadTcpDataOffset { data_offset } => {
                write!(f, "bad TCP data offset {data_offset}")
            }
            ParseError::MalformedTcpOption { offset, kind } => {
                write!(f, "malformed TCP option of kind {kind} at header offset {offset}")
            }
            ParseError::UnknownTcpOptionsTooLong { offset, kind } => {
                write!(f, "TCP option of kind {kind} at header offset {offset}: unmodelled options beyond the 32 bytes kept")
            }
            ParseError::BadUdpLength { udp_length, ip_payload } => {
                write!(f, "UDP length {udp_length} but the IPv4 payload is {ip_payload} bytes")
            }
            ParseError::BadTransportChecksum => f.write_str("bad TCP/UDP checksum"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses one IPv4 datagram (bytes after `total length` are ignored, as link
/// padding) into a `Packet` and its payload. Another protocol than TCP and UDP is
/// `Transport::Other`, its whole message the payload. With `verify_checksums`, the IPv4
/// header checksum and the TCP/UDP (or ICMP) checksum must be right (a UDP checksum of
/// zero means "none", RFC 768).
///
/// DSCP and the urgent pointer are not represented and are dropped; unknown TCP
/// options are kept as raw bytes (`TcpOptions::raw`). `wire_bytes()` of the result equals the datagram length when the
/// options were laid out as `emit` (and Linux) lays them out.
pub fn parse(datagram: &[u8], verify_checksums: bool) -> Result<(Packet, &[u8]), ParseError> {
    let total = ip_total_length(datagram)?;
    let ip = &datagram[..IP_HDR];
    if verify_checksums && checksum::internet_checksum(ip) != 0 {
        return Err(ParseError::BadIpChecksum);
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let protocol = ip[9];
    let l4 = &datagram[IP_HDR..total];

    let (mut packet, payload) = match protocol {
        IPPROTO_TCP => {
            let (header, hlen) = parse_tcp(l4)?;
            (Packet::tcp(src, dst, header, (l4.len() - hlen) as u32), &l4[hlen..])
        }
        IPPROTO_UDP => {
            if l4.len() < UDP_HDR {
                return Err(ParseError::Truncated { needed: IP_HDR + UDP_HDR, available: total });
            }
            let udp_length = be16(l4, 4);
            if udp_length as usize != l4.len() {
                return Err(ParseError::BadUdpLength { udp_length, ip_payload: l4.len() });
            }
            let header = UdpHeader { src_port: be16(l4, 0), dst_port: be16(l4, 2) };
            (Packet::udp(src, dst, header, (l4.len() - UDP_HDR) as u32), &l4[UDP_HDR..])
        }
        protocol => {
            // An echo request (8) or reply (0) carries its identifier at bytes 4-5 (RFC 792).
            let echo = protocol == IPPROTO_ICMP && l4.len() >= 8 && matches!(l4[0], 0 | 8);
            let header = OtherHeader { protocol, id: if echo { be16(l4, 4) } else { 0 } };
            (Packet::new(src, dst, Transport::Other(header), l4.len() as u32), l4)
        }
    };
    if verify_checksums {
        let valid = match protocol {
            IPPROTO_TCP | IPPROTO_UDP => {
                let unused = protocol == IPPROTO_UDP && be16(l4, 6) == 0;
                let mut sum = Checksum::pseudo_header(src, dst, protocol, l4.len() as u16);
                sum.add_bytes(l4);
                unused || sum.finish() == 0
            }
            // ICMP's checksum covers its message alone (RFC 792).
            IPPROTO_ICMP => checksum::internet_checksum(l4) == 0,
            _ => true,
        };
        if !valid {
            return Err(ParseError::BadTransportChecksum);
        }
    }
    packet.ip_id = be16(ip, 4);
    packet.ttl = ip[8];
    packet.ecn = ip[1] & 0x03;
    Ok((packet, payload))
}

/// Offset of the TCP header in an IPv4/TCP datagram, with enough checks that
/// the 20 fixed TCP header bytes are present. IPv4 options are allowed here.
pub(crate) fn tcp_offset(datagram: &[u8]) -> Result<usize, ParseError> {
    let ihl = ip_header_words(datagram)?;
    let at = ihl as usize * 4;
    check_unfragmented(datagram)?;
    if datagram[9] != IPPROTO_TCP {
        return Err(ParseError::UnsupportedProtocol { protocol: datagram[9] });
    }
    if datagram.len() < at + TCP_HDR {
        return Err(ParseError::Truncated { needed: at + TCP_HDR, available: datagram.len() });
    }
    Ok(at)
}

/// Version and IHL checks; returns the IHL.
fn ip_header_words(datagram: &[u8]) -> Result<u8, ParseError> {
    if datagram.len() < IP_HDR {
        return Err(ParseError::Truncated { needed: IP_HDR, available: datagram.len() });
    }
    let version = datagram[0] >> 4;
    if version != 4 {
        return Err(ParseError::NotIpv4 { version });
    }
    let ihl = datagram[0] & 0x0f;
    if ihl < 5 {
        return Err(ParseError::BadIhl { ihl });
    }
    Ok(ihl)
}

fn check_unfragmented(datagram: &[u8]) -> Result<(), ParseError> {
    // RFC 791 §3.1: More Fragments is bit 2 of the flags, then 13 offset bits.
    if be16(datagram, 6) & 0x3fff != 0 {
        return Err(ParseError::Fragment);
    }
    Ok(())
}

/// Checks the IPv4 header fields that bound the datagram; returns the total length.
fn ip_total_length(datagram: &[u8]) -> Result<usize, ParseError> {
    let ihl = ip_header_words(datagram)?;
    if ihl != 5 {
        return Err(ParseError::IpOptions { ihl });
    }
    let total_length = be16(datagram, 2);
    let total = total_length as usize;
    if total < IP_HDR {
        return Err(ParseError::BadTotalLength { total_length });
    }
    if total > datagram.len() {
        return Err(ParseError::Truncated { needed: total, available: datagram.len() });
    }
    check_unfragmented(datagram)?;
    Ok(total)
}

/// Parses a TCP segment's header; returns it and its length.
fn parse_tcp(seg: &[u8]) -> Result<(TcpHeader, usize), ParseError> {
    if seg.len() < TCP_HDR {
        return Err(ParseError::Truncated { needed: IP_HDR + TCP_HDR, available: IP_HDR + seg.len() });
    }
    let data_offset = seg[12] >> 4;
    let hlen = data_offset as usize * 4;
    if hlen < TCP_HDR || hlen > seg.len() {
        return Err(ParseError::BadTcpDataOffset { data_offset });
    }
    let header = TcpHeader {
        src_port: be16(seg, 0),
        dst_port: be16(seg, 2),
        seq: be32(seg, 4),
        ack: be32(seg, 8),
        flags: TcpFlags(((seg[12] & 1) as u16) << 8 | seg[13] as u16),
        window: be16(seg, 14),
        options: parse_options(&seg[TCP_HDR..hlen])?,
    };
    Ok((header, hlen))
}

/// Parses the option bytes per RFC 9293 §3.2: EOL ends the list, NOP is one byte,
/// every other kind has a length byte counting kind and length. Unknown kinds are
/// kept as raw bytes in wire order; the known ones must have their fixed length.
fn parse_options(bytes: &[u8]) -> Result<TcpOptions, ParseError> {
    let mut opts = TcpOptions::default();
    let mut at = 0;
    while at < bytes.len() {
        let kind = bytes[at];
        match kind {
            OPT_EOL => break,
            OPT_NOP => {
                at += 1;
                continue;
            }
            _ => {}
        }
        let malformed = ParseError::MalformedTcpOption { offset: TCP_HDR + at, kind };
        let len = *bytes.get(at + 1).ok_or(malformed)? as usize;
        if len < 2 || at + len > bytes.len() {
            return Err(malformed);
        }
        let body = &bytes[at + 2..at + len];
        match (kind, body.len()) {
            (OPT_MSS, 2) => opts.mss = Some(be16(body, 0)),
            (OPT_WSCALE, 1) => opts.window_scale = Some(body[0]),
            (OPT_SACK_PERMITTED, 0) => opts.sack_permitted = true,
            (OPT_TIMESTAMPS, 8) => opts.timestamps = Some(Timestamps { tsval: be32(body, 0), tsecr: be32(body, 4) }),
            // RFC 2018 §3: 8 bytes per block; 40 option bytes leave room for at most 4.
            (OPT_SACK, n) if n >= 8 && n % 8 == 0 && n <= 32 => {
                let mut blocks = [SackBlock::default(); 4];
                for (slot, block) in blocks.iter_mut().zip(body.chunks_exact(8)) {
                    *slot = SackBlock { left: be32(block, 0), right: be32(block, 4) };
                }
                // Fails when unmodelled options came first and leave the blocks less than their
                // 8 bytes each of the 32 kept (a 28-byte DSS and one block fit the 40 on the wire).
                if !opts.set_sack(&blocks[..n / 8]) {
                    return Err(ParseError::UnknownTcpOptionsTooLong { offset: TCP_HDR + at, kind });
                }
            }
            (OPT_MSS | OPT_WSCALE | OPT_SACK_PERMITTED | OPT_TIMESTAMPS | OPT_SACK, _) => return Err(malformed),
            _ => opts.push_raw(&bytes[at..at + len]).map_err(|_| ParseError::UnknownTcpOptionsTooLong { offset: TCP_HDR + at, kind })?,
        }
        at += len;
    }
    Ok(opts)
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
