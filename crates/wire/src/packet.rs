use std::net::Ipv4Addr;

use crate::tcp::TcpHeader;

pub const IPV4_HEADER_BYTES: u32 = 20;
pub const UDP_HEADER_BYTES: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpHeader {
    pub src_port: u16,
    pub dst_port: u16,
}

/// Another IPv4 protocol than TCP and UDP (ICMP, ...): the models only forward it, its
/// whole transport message being the packet's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OtherHeader {
    /// The IPv4 protocol number (RFC 790): 1 for ICMP.
    pub protocol: u8,
    /// An ICMP echo's identifier (RFC 792), which pairs a request with its reply as ports
    /// pair a connection's segments; 0 for anything else.
    pub id: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp(TcpHeader),
    Udp(UdpHeader),
    Other(OtherHeader),
}

/// What travels with a packet but is not on the wire: where its payload bytes are, and what
/// the simulator knows about it (models may read the latter for measurement only, never for
/// protocol decisions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// The payload's bytes, if someone holds them (`PayloadId::NONE` in the simulator). Here
    /// rather than in `Packet` because it fills this struct's padding: `Packet` stays 112
    /// bytes, which keeps its moves, and those of the structs that hold one, inline.
    pub payload: PayloadId,
    /// Unique per run, assigned by the engine when the packet enters the network.
    pub uid: u64,
    /// The scenario flow the packet belongs to, or the network's own end marker.
    pub tag: Tag,
    /// Time the packet entered the RAN (PDCP stamp at the gNB), 0 when not stamped.
    pub ran_entry_ns: u64,
}

/// What a driver knows of a packet's place in a run: the scenario flow it belongs to, or that
/// it is a handover's end marker (TS 38.300 §9.2.3.2.1), the network's own; or nothing (a
/// packet a proxy made). For measurement and the network's own control packets: models never
/// decide on it. Four bytes, so `Meta` fills `Packet`'s padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tag(u32);

impl Tag {
    /// Not known to belong to any flow.
    pub const NONE: Tag = Tag(u32::MAX);
    /// A handover's end marker.
    pub const END_MARKER: Tag = Tag(u32::MAX - 1);

    /// Scenario flow `index`'s.
    #[inline]
    pub fn flow(index: u32) -> Tag {
        debug_assert!(index < u32::MAX - 1, "flow index {index} out of range");
        Tag(index)
    }

    /// The scenario flow's index, if the packet is one's.
    #[inline]
    pub fn flow_index(self) -> Option<usize> {
        (self.0 < u32::MAX - 1).then_some(self.0 as usize)
    }
}

impl Default for Tag {
    fn default() -> Self {
        Tag::NONE
    }
}

/// Where a packet's payload bytes are, when it has real ones: a handle the owner of the
/// packet buffers (a daemon, a test) hands out and resolves. The simulator's packets carry
/// `PayloadId::NONE`, their bytes implied by the transport's sequence numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PayloadId(pub u32);

impl Default for PayloadId {
    fn default() -> Self {
        PayloadId::NONE
    }
}

impl PayloadId {
    pub const NONE: PayloadId = PayloadId(u32::MAX);

    #[inline]
    pub fn is_none(self) -> bool {
        self == PayloadId::NONE
    }
}

/// The ECN field's codepoints (RFC 3168 §5). Not-ECT: the transport does not take marks.
pub const ECN_NOT_ECT: u8 = 0b00;
/// ECT(1): the L4S identifier (RFC 9331 §4), a scalable congestion control's packets.
pub const ECN_ECT1: u8 = 0b01;
/// ECT(0): a classic ECN-capable transport.
pub const ECN_ECT0: u8 = 0b10;
/// Congestion Experienced: a router that marks sets it, and whatever merges packets must
/// keep it.
pub const ECN_CE: u8 = 0b11;

/// One IPv4 packet. Payload is carried as a length, and as bytes only through `meta.payload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ip_id: u16,
    pub ttl: u8,
    /// The 2-bit ECN field of the IPv4 header (RFC 3168).
    pub ecn: u8,
    pub transport: Transport,
    pub payload_bytes: u32,
    pub meta: Meta,
}

impl Packet {
    /// A packet with default IP fields (TTL 64, no ECN) and no simulator metadata.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, transport: Transport, payload_bytes: u32) -> Packet {
        Packet { src, dst, ip_id: 0, ttl: 64, ecn: 0, transport, payload_bytes, meta: Meta::default() }
    }

    pub fn tcp(src: Ipv4Addr, dst: Ipv4Addr, header: TcpHeader, payload_bytes: u32) -> Packet {
        Packet::new(src, dst, Transport::Tcp(header), payload_bytes)
    }

    pub fn udp(src: Ipv4Addr, dst: Ipv4Addr, header: UdpHeader, payload_bytes: u32) -> Packet {
        Packet::new(src, dst, Transport::Udp(header), payload_bytes)
    }

    /// Bytes of the IPv4 datagram on the wire: IP header + transport header + payload.
    #[inline]
    pub fn wire_bytes(&self) -> u32 {
        let l4 = match &self.transport {
            Transport::Tcp(h) => h.header_bytes(),
            Transport::Udp(_) => UDP_HEADER_BYTES,
            Transport::Other(_) => 0,
        };
        IPV4_HEADER_BYTES + l4 + self.payload_bytes
    }

    #[inline]
    pub fn tcp_header(&self) -> Option<&TcpHeader> {
        match &self.transport {
            Transport::Tcp(h) => Some(h),
            Transport::Udp(_) | Transport::Other(_) => None,
        }
    }

    #[inline]
    pub fn tcp_header_mut(&mut self) -> Option<&mut TcpHeader> {
        match &mut self.transport {
            Transport::Tcp(h) => Some(h),
            Transport::Udp(_) | Transport::Other(_) => None,
        }
    }

    /// (src port, dst port) of either transport.
    #[inline]
    pub fn ports(&self) -> (u16, u16) {
        match &self.transport {
            Transport::Tcp(h) => (h.src_port, h.dst_port),
            Transport::Udp(h) => (h.src_port, h.dst_port),
            Transport::Other(h) => (h.id, h.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator moves packets by value on every hop: keeping unknown options and the
    /// payload handle must not grow them past the 112 bytes they had before (a larger `Packet`
    /// is moved by `memcpy` calls instead of registers).
    #[test]
    fn a_packet_stays_112_bytes() {
        assert!(std::mem::size_of::<Packet>() <= 112, "{} bytes", std::mem::size_of::<Packet>());
    }
}
