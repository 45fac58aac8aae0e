//! Flow identity (milliproxy.md §2): both directions of a TCP connection map to one key.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::RangeInclusive;

use millinet_wire::Packet;

/// Which way a packet crosses the proxy's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Downlink: from the server toward the UE.
    FromServer,
    /// Uplink: from the UE toward the server.
    FromUe,
}

/// The 4-tuple, ordered (UE, server) whatever the packet's direction. Keys sort by UE
/// address first, so all flows of one UE form a contiguous range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey {
    pub ue: SocketAddrV4,
    pub server: SocketAddrV4,
}

impl FlowKey {
    pub fn of(packet: &Packet, direction: Direction) -> FlowKey {
        let (src_port, dst_port) = packet.ports();
        let src = SocketAddrV4::new(packet.src, src_port);
        let dst = SocketAddrV4::new(packet.dst, dst_port);
        match direction {
            Direction::FromServer => FlowKey { ue: dst, server: src },
            Direction::FromUe => FlowKey { ue: src, server: dst },
        }
    }

    /// Every key whose UE has address `ue`.
    pub fn range_of_ue(ue: Ipv4Addr) -> RangeInclusive<FlowKey> {
        let any = |ip, port| SocketAddrV4::new(ip, port);
        FlowKey { ue: any(ue, 0), server: any(Ipv4Addr::UNSPECIFIED, 0) }..=FlowKey {
            ue: any(ue, u16::MAX),
            server: any(Ipv4Addr::BROADCAST, u16::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_wire::TcpHeader;

    #[test]
    fn both_directions_share_a_key() {
        let server = Ipv4Addr::new(1, 1, 1, 1);
        let ue = Ipv4Addr::new(10, 0, 0, 2);
        let down = Packet::tcp(server, ue, TcpHeader { src_port: 80, dst_port: 4000, ..TcpHeader::default() }, 0);
        let up = Packet::tcp(ue, server, TcpHeader { src_port: 4000, dst_port: 80, ..TcpHeader::default() }, 0);
        let k = FlowKey::of(&down, Direction::FromServer);
        assert_eq!(k, FlowKey::of(&up, Direction::FromUe));
        assert_eq!(k.server.port(), 80);
        assert!(FlowKey::range_of_ue(ue).contains(&k));
        assert!(!FlowKey::range_of_ue(Ipv4Addr::new(10, 0, 0, 3)).contains(&k));
    }
}
