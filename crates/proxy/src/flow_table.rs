//! Flow identity (docs/proxy.md#how-a-flow-is-handled): both directions of a TCP connection map to one key.

use std::cmp::Ordering;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub ue: SocketAddrV4,
    pub server: SocketAddrV4,
}

/// The order `derive` would give (UE address, UE port, server address, server port), as one
/// integer comparison: `Ipv4Addr` compares its octets with `memcmp`, a call per comparison
/// on every packet's flow lookup.
impl Ord for FlowKey {
    #[inline]
    fn cmp(&self, other: &FlowKey) -> Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl PartialOrd for FlowKey {
    #[inline]
    fn partial_cmp(&self, other: &FlowKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
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

    #[inline]
    fn sort_key(&self) -> u128 {
        let part = |a: &SocketAddrV4| u128::from(u32::from(*a.ip())) << 16 | u128::from(a.port());
        part(&self.ue) << 48 | part(&self.server)
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

    /// Keys sort like the tuple (UE octets, UE port, server octets, server port), so a UE's
    /// flows stay one range of the table.
    #[test]
    fn keys_sort_by_ue_then_server_field_by_field() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Few distinct values per field, so ties on the leading fields are common.
            let v = (state >> 33) as u32;
            (Ipv4Addr::from(v & 0x0300_0103), (v >> 11) as u16 & 0x8001)
        };
        let keys: Vec<FlowKey> = (0..400)
            .map(|_| {
                let ((ue, ue_port), (server, server_port)) = (next(), next());
                FlowKey { ue: SocketAddrV4::new(ue, ue_port), server: SocketAddrV4::new(server, server_port) }
            })
            .collect();
        let tuple = |k: &FlowKey| (k.ue.ip().octets(), k.ue.port(), k.server.ip().octets(), k.server.port());
        for a in &keys {
            for b in &keys {
                assert_eq!(a.cmp(b), tuple(a).cmp(&tuple(b)), "{a:?} against {b:?}");
            }
        }
    }
}
