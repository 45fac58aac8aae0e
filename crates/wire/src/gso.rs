//! TCP GSO packets as Linux takes them from userspace (a TUN device with IFF_VNET_HDR, an
//! AF_PACKET socket with PACKET_VNET_HDR): a virtio-net header saying how to segment the
//! packet and where its checksum goes, then one IPv4 packet of up to 64 kB. Handing the kernel
//! one such packet instead of its segments is one system call and one trip through the stack
//! (and the receiver's) instead of dozens: what lets userspace keep up with multi-Gbit/s TCP.

use std::net::Ipv4Addr;

use crate::checksum::{internet_checksum, Checksum};

/// Bytes of `struct virtio_net_hdr` in front of every packet.
pub const VNET_HEADER_BYTES: usize = 10;
/// The largest GSO packet (the IPv4 total length is 16 bits).
pub const MAX_PACKET_BYTES: usize = 65_535;

const IPPROTO_TCP: u8 = 6;
const TCP_FIN: u8 = 0x01;
const TCP_SYN_RST_URG: u8 = 0x02 | 0x04 | 0x20;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// The virtio-net header (virtio spec §5.1.6; <linux/virtio_net.h>), in the native byte order
/// the kernel uses for TUN (without TUNSETVNETLE) and packet sockets on little-endian hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHeader {
    pub flags: u8,
    pub gso_type: u8,
    pub header_bytes: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHeader {
    /// The packet's L4 checksum is partial (pseudo-header only): the receiver completes it.
    pub const NEEDS_CSUM: u8 = 1;
    pub const GSO_NONE: u8 = 0;
    pub const GSO_TCPV4: u8 = 1;
    pub const GSO_ECN: u8 = 0x80;

    pub fn parse(b: &[u8]) -> VnetHeader {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHeader {
            flags: b[0],
            gso_type: b[1],
            header_bytes: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.header_bytes.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    /// A TCP/IPv4 GSO packet the kernel will cut into segments of `gso_size`.
    pub fn is_tcp_gso(&self) -> bool {
        self.gso_type & !Self::GSO_ECN == Self::GSO_TCPV4
    }
}

/// Appends TCP segment `next` (an IPv4 datagram, checksums complete) to `frame[..frame_len]`
/// (virtio header + IPv4 packet, a plain segment or a TCP GSO packet) as one more GSO segment,
/// if the kernel would make exactly these packets when it segments the result: same
/// addresses, ports, ACK number, window, options and ECN; `next` in sequence right after;
/// `frame` ending on a full segment; no SYN, RST, URG, FIN or CWR but PSH and FIN on `next`
/// (they go to the last segment, RFC 9293 §3.1 as Linux's tcp_gso_segment applies it); the
/// result within `frame` and MAX_PACKET_BYTES. Returns the frame's new length, the frame then
/// a GSO packet with a partial checksum; otherwise None and nothing is written.
pub fn append_segment(frame: &mut [u8], frame_len: usize, next: &[u8]) -> Option<usize> {
    let ip = VNET_HEADER_BYTES;
    let a = frame.get(..frame_len)?;
    let plain = |f: &[u8], at: usize| f.len() >= at + 40 && f[at] == 0x45 && f[at + 9] == IPPROTO_TCP;
    if !plain(a, ip) || !plain(next, 0) {
        return None;
    }
    let tcp = ip + 20;
    let thl = ((a[tcp + 12] >> 4) as usize) * 4;
    let headers_end = tcp + thl;
    let next_headers_end = 20 + thl;
    let (a_payload, b_payload) = (a.len().saturating_sub(headers_end), next.len().saturating_sub(next_headers_end));
    let vnet = VnetHeader::parse(a);
    let segment = if vnet.is_tcp_gso() { vnet.gso_size as usize } else { a_payload };
    let seq = |f: &[u8], at: usize| u32::from_be_bytes([f[at + 4], f[at + 5], f[at + 6], f[at + 7]]);
    let (a_flags, b_flags) = (a[tcp + 13], next[33]);
    let len = frame_len + b_payload;
    let compatible = next[32] == a[tcp + 12]
        && a.len() >= headers_end
        && next.len() > next_headers_end
        && a_payload > 0
        && a_payload % segment == 0
        && b_payload <= segment
        && a[ip + 1] & 0x03 == next[1] & 0x03
        && a[ip + 12..ip + 20] == next[12..20]
        && a[tcp..tcp + 4] == next[20..24]
        && a[tcp + 8..tcp + 12] == next[28..32]
        && a[tcp + 14..tcp + 16] == next[34..36]
        && a[tcp + 20..headers_end] == next[40..next_headers_end]
        && seq(next, 20) == seq(a, tcp).wrapping_add(a_payload as u32)
        && a_flags & (TCP_SYN_RST_URG | TCP_FIN | TCP_PSH | TCP_CWR) == 0
        && b_flags & (TCP_SYN_RST_URG | TCP_CWR) == 0
        && a_flags | TCP_PSH | TCP_FIN == b_flags | TCP_PSH | TCP_FIN
        && len - ip <= MAX_PACKET_BYTES
        && len <= frame.len();
    if !compatible {
        return None;
    }
    frame[frame_len..len].copy_from_slice(&next[next_headers_end..]);
    frame[tcp + 13] = b_flags;
    let ip_bytes = (len - ip) as u16;
    frame[ip + 2..ip + 4].copy_from_slice(&ip_bytes.to_be_bytes());
    frame[ip + 10..ip + 12].fill(0);
    let ip_checksum = internet_checksum(&frame[ip..tcp]);
    frame[ip + 10..ip + 12].copy_from_slice(&ip_checksum.to_be_bytes());
    let addr = |at: usize| Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3]);
    let partial = Checksum::pseudo_header(addr(ip + 12), addr(ip + 16), IPPROTO_TCP, (len - tcp) as u16).sum();
    frame[tcp + 16..tcp + 18].copy_from_slice(&partial.to_be_bytes());
    VnetHeader {
        flags: VnetHeader::NEEDS_CSUM,
        gso_type: VnetHeader::GSO_TCPV4,
        header_bytes: (headers_end - ip) as u16,
        gso_size: segment as u16,
        csum_start: 20,
        csum_offset: 16,
    }
    .write(frame);
    Some(len)
}
