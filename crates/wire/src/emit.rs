//! Packets as real IPv4/TCP/UDP bytes, for captures and for the emulator.
//!
//! The simulator carries no payload bytes; `emit_headers` writes the headers
//! with a transport checksum computed as if the payload were all zeros (zeros
//! add nothing to a one's-complement sum, so only the length enters it through
//! the pseudo-header). `emit` writes real payload bytes after the headers.

use crate::checksum::{self, Checksum};
use crate::packet::{Packet, Transport, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::parse::ParseError;
use crate::tcp::{TcpHeader, TCP_HEADER_BYTES};

pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
pub const IPPROTO_ICMP: u8 = 1;

/// The longest TCP header the data offset can describe (RFC 9293 §3.1: 15 words).
pub const MAX_TCP_HEADER_BYTES: usize = 60;
/// The longest header `emit_headers` writes: IPv4 without options plus the longest TCP header.
pub const MAX_HEADER_BYTES: usize = IPV4_HEADER_BYTES as usize + MAX_TCP_HEADER_BYTES;

/// Option kinds (RFC 9293 §3.2, RFC 2018, RFC 7323).
pub(crate) const OPT_EOL: u8 = 0;
pub(crate) const OPT_NOP: u8 = 1;
pub(crate) const OPT_MSS: u8 = 2;
pub(crate) const OPT_WSCALE: u8 = 3;
pub(crate) const OPT_SACK_PERMITTED: u8 = 4;
pub(crate) const OPT_SACK: u8 = 5;
pub(crate) const OPT_TIMESTAMPS: u8 = 8;

/// IPv4 flags/fragment-offset word with only Don't Fragment set (RFC 791 §3.1):
/// TCP endpoints do path-MTU discovery and set it, as Linux does.
const IP_FLAGS_DF: u16 = 0x4000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitError {
    BufferTooSmall {
        needed: usize,
        available: usize,
    },
    /// More SACK blocks than the 4 a `TcpOptions` holds.
    TooManySackBlocks {
        count: u8,
    },
    /// The options need more than the 40 bytes a data offset of 15 leaves.
    TcpOptionsTooLong {
        bytes: u32,
    },
    /// The datagram exceeds the 65535 bytes the IPv4 total length can express.
    DatagramTooLong {
        bytes: u64,
    },
    /// The 2-bit ECN field holds a larger value.
    InvalidEcn {
        ecn: u8,
    },
    /// `emit` was given a payload whose length is not `payload_bytes`.
    PayloadLengthMismatch {
        payload_bytes: u32,
        given: usize,
    },
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            EmitError::BufferTooSmall { needed, available } => {
                write!(f, "buffer too small: {needed} bytes needed, {available} available")
            }
            EmitError::TooManySackBlocks { count } => {
                write!(f, "{count} SACK blocks, at most 4 allowed")
            }
            EmitError::TcpOptionsTooLong { bytes } => {
                write!(f, "TCP options take {bytes} bytes, at most 40 allowed")
            }
            EmitError::DatagramTooLong { bytes } => {
                write!(f, "datagram of {bytes} bytes, IPv4 allows at most 65535")
            }
            EmitError::InvalidEcn { ecn } => write!(f, "ECN field {ecn}, must be 0..=3"),
            EmitError::PayloadLengthMismatch { payload_bytes, given } => {
                write!(f, "payload of {given} bytes given for a packet of {payload_bytes} payload bytes")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// Bytes of the IPv4 and transport headers: `wire_bytes() - payload_bytes`.
#[inline]
pub fn header_bytes(pkt: &Packet) -> usize {
    let l4 = match &pkt.transport {
        Transport::Tcp(h) => h.header_bytes(),
        Transport::Udp(_) => UDP_HEADER_BYTES,
        Transport::Other(_) => 0,
    };
    (IPV4_HEADER_BYTES + l4) as usize
}

/// Writes the IPv4 and transport headers of `pkt` into `buf` and returns their
/// length; the transport checksum is that of the full datagram with an all-zero
/// payload. Meant for truncated captures (the captured length is the return value,
/// the original length `pkt.wire_bytes()`).
pub fn emit_headers(pkt: &Packet, buf: &mut [u8]) -> Result<usize, EmitError> {
    let (len, l4_sum) = write_headers(pkt, buf)?;
    store_l4_checksum(pkt, buf, l4_sum);
    Ok(len)
}

/// Writes `pkt` with `payload` as real bytes into `buf` and returns the datagram
/// length; the transport checksum covers the payload.
pub fn emit(pkt: &Packet, payload: &[u8], buf: &mut [u8]) -> Result<usize, EmitError> {
    if payload.len() != pkt.payload_bytes as usize {
        return Err(EmitError::PayloadLengthMismatch { payload_bytes: pkt.payload_bytes, given: payload.len() });
    }
    let (hlen, mut l4_sum) = write_headers(pkt, buf)?;
    let total = hlen + payload.len();
    if buf.len() < total {
        return Err(EmitError::BufferTooSmall { needed: total, available: buf.len() });
    }
    buf[hlen..total].copy_from_slice(payload);
    l4_sum.add_bytes(payload);
    store_l4_checksum(pkt, buf, l4_sum);
    Ok(total)
}

/// Rewrites the TCP window field of an IPv4/TCP datagram in place and fixes the
/// TCP checksum incrementally (RFC 1624), as a proxy that clamps the advertised
/// window does. Returns the previous window. The rest of the datagram is neither
/// read nor validated beyond what locating the field needs.
pub fn rewrite_tcp_window(datagram: &mut [u8], window: u16) -> Result<u16, ParseError> {
    let at = crate::parse::tcp_offset(datagram)?;
    let old = u16::from_be_bytes([datagram[at + 14], datagram[at + 15]]);
    let sum = u16::from_be_bytes([datagram[at + 16], datagram[at + 17]]);
    datagram[at + 14..at + 16].copy_from_slice(&window.to_be_bytes());
    datagram[at + 16..at + 18].copy_from_slice(&checksum::update_u16(sum, old, window).to_be_bytes());
    Ok(old)
}

/// Sets the ECN field of an IPv4 datagram in place (a queue's CE mark, RFC 3168 §5) and fixes
/// the header checksum incrementally (RFC 1624). Returns the previous field.
pub fn rewrite_ecn(datagram: &mut [u8], ecn: u8) -> Result<u8, ParseError> {
    if datagram.len() < IPV4_HEADER_BYTES as usize {
        return Err(ParseError::Truncated { needed: IPV4_HEADER_BYTES as usize, available: datagram.len() });
    }
    let old_word = u16::from_be_bytes([datagram[0], datagram[1]]);
    let old = datagram[1] & 0b11;
    datagram[1] = (datagram[1] & !0b11) | (ecn & 0b11);
    let new_word = u16::from_be_bytes([datagram[0], datagram[1]]);
    let sum = u16::from_be_bytes([datagram[10], datagram[11]]);
    datagram[10..12].copy_from_slice(&checksum::update_u16(sum, old_word, new_word).to_be_bytes());
    Ok(old)
}

/// Writes both headers with a zero transport checksum field and returns the header
/// length and the transport checksum's sum so far (pseudo-header and transport
/// header; the caller adds the payload).
fn write_headers(pkt: &Packet, buf: &mut [u8]) -> Result<(usize, Checksum), EmitError> {
    if let Transport::Tcp(h) = &pkt.transport {
        let opts = &h.options;
        if opts.sack_count > 4 {
            return Err(EmitError::TooManySackBlocks { count: opts.sack_count });
        }
        let bytes = opts.encoded_bytes();
        if bytes as usize > MAX_TCP_HEADER_BYTES - TCP_HEADER_BYTES as usize {
            return Err(EmitError::TcpOptionsTooLong { bytes });
        }
    }
    if pkt.ecn > 3 {
        return Err(EmitError::InvalidEcn { ecn: pkt.ecn });
    }
    let hlen = header_bytes(pkt);
    let total = hlen as u64 + pkt.payload_bytes as u64;
    if total > u16::MAX as u64 {
        return Err(EmitError::DatagramTooLong { bytes: total });
    }
    if buf.len() < hlen {
        return Err(EmitError::BufferTooSmall { needed: hlen, available: buf.len() });
    }
    let protocol = match pkt.transport {
        Transport::Tcp(_) => IPPROTO_TCP,
        Transport::Udp(_) => IPPROTO_UDP,
        Transport::Other(h) => h.protocol,
    };

    // IPv4 header, RFC 791 §3.1: version 4, IHL 5, DSCP 0, no options.
    let ip = &mut buf[..IPV4_HEADER_BYTES as usize];
    ip[0] = 0x45;
    ip[1] = pkt.ecn;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&pkt.ip_id.to_be_bytes());
    ip[6..8].copy_from_slice(&IP_FLAGS_DF.to_be_bytes());
    ip[8] = pkt.ttl;
    ip[9] = protocol;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&pkt.src.octets());
    ip[16..20].copy_from_slice(&pkt.dst.octets());
    let ip_sum = checksum::internet_checksum(ip);
    ip[10..12].copy_from_slice(&ip_sum.to_be_bytes());

    let l4_bytes = (total - IPV4_HEADER_BYTES as u64) as u16;
    let l4 = &mut buf[IPV4_HEADER_BYTES as usize..hlen];
    match &pkt.transport {
        Transport::Tcp(h) => write_tcp(h, l4),
        Transport::Udp(h) => {
            // RFC 768: ports, length of header plus data, checksum.
            l4[0..2].copy_from_slice(&h.src_port.to_be_bytes());
            l4[2..4].copy_from_slice(&h.dst_port.to_be_bytes());
            l4[4..6].copy_from_slice(&l4_bytes.to_be_bytes());
            l4[6..8].fill(0);
        }
        // Its message, checksum included, is the payload.
        Transport::Other(_) => {}
    }
    let mut sum = Checksum::pseudo_header(pkt.src, pkt.dst, protocol, l4_bytes);
    sum.add_bytes(l4);
    Ok((hlen, sum))
}

/// Writes a TCP header into `out`, which is exactly `h.header_bytes()` long.
fn write_tcp(h: &TcpHeader, out: &mut [u8]) {
    out[0..2].copy_from_slice(&h.src_port.to_be_bytes());
    out[2..4].copy_from_slice(&h.dst_port.to_be_bytes());
    out[4..8].copy_from_slice(&h.seq.to_be_bytes());
    out[8..12].copy_from_slice(&h.ack.to_be_bytes());
    // RFC 9293 §3.1: data offset in 32-bit words in the high nibble, reserved bits zero but
    // the last, AE (RFC 9768 §3.2.1).
    out[12] = ((out.len() / 4) as u8) << 4 | (h.flags.0 >> 8) as u8 & 1;
    out[13] = h.flags.0 as u8;
    out[14..16].copy_from_slice(&h.window.to_be_bytes());
    out[16..20].fill(0); // checksum (filled later) and urgent pointer
    let opts = &h.options;
    let mut at = TCP_HEADER_BYTES as usize;
    let mut put = |bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    // Linux's order and padding (tcp_options_write): every option group fills
    // whole 32-bit words, so the count matches `TcpOptions::encoded_bytes`.
    if let Some(mss) = opts.mss {
        let m = mss.to_be_bytes();
        put(&[OPT_MSS, 4, m[0], m[1]]);
    }
    match (opts.timestamps, opts.sack_permitted) {
        (Some(ts), sack_permitted) => {
            // SACK-permitted takes the place of the two NOPs that align the
            // timestamps option (RFC 7323 Appendix A), as Linux sends it.
            if sack_permitted {
                put(&[OPT_SACK_PERMITTED, 2]);
            } else {
                put(&[OPT_NOP, OPT_NOP]);
            }
            put(&[OPT_TIMESTAMPS, 10]);
            put(&ts.tsval.to_be_bytes());
            put(&ts.tsecr.to_be_bytes());
        }
        (None, true) => put(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]),
        (None, false) => {}
    }
    if let Some(shift) = opts.window_scale {
        put(&[OPT_NOP, OPT_WSCALE, 3, shift]);
    }
    if opts.sack_count > 0 {
        put(&[OPT_NOP, OPT_NOP, OPT_SACK, 2 + 8 * opts.sack_count]);
        for b in opts.sack() {
            put(&b.left.to_be_bytes());
            put(&b.right.to_be_bytes());
        }
    }
    let raw = opts.raw();
    put(raw.as_bytes());
    for _ in raw.as_bytes().len()..raw.encoded_bytes() as usize {
        put(&[OPT_NOP]);
    }
    debug_assert_eq!(at, out.len(), "options layout disagrees with TcpOptions::encoded_bytes");
}

fn store_l4_checksum(pkt: &Packet, buf: &mut [u8], sum: Checksum) {
    let ip = IPV4_HEADER_BYTES as usize;
    let (at, value) = match pkt.transport {
        // Its own checksum is in its message (the payload), which the caller gave whole.
        Transport::Other(_) => return,
        Transport::Tcp(_) => (ip + 16, sum.finish()),
        // RFC 768: a computed zero is sent as all ones; zero means "no checksum".
        Transport::Udp(_) => (
            ip + 6,
            match sum.finish() {
                0 => 0xffff,
                c => c,
            },
        ),
    };
    buf[at..at + 2].copy_from_slice(&value.to_be_bytes());
}
