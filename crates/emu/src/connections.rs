//! What the link saw of each connection users' programs made (docs/emulator.md, "Your own
//! programs"): a connection is a protocol and a pair of addresses and ports, both directions
//! together, numbered in the order the link first saw them. Each gets its bytes each way (sent
//! into the network, delivered out of it, dropped by it), its first and last packet times and,
//! through its number as the packets' flow tag, the network's RAN latency per packet.
//!
//! A new connection costs one table entry; a packet of a known one costs a hash lookup and a
//! few additions (its goodput bins grow as time goes on, amortised).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use millinet_wire::{Packet, Tag, Transport};

/// The UE end and the other end of a connection, and its protocol. On a leg between two
/// other nodes (a split proxy's to the server), the end with the higher port, the client's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionKey {
    pub protocol: Protocol,
    pub ue: SocketAddrV4,
    pub peer: SocketAddrV4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    /// Another IPv4 protocol, by number (ICMP's echoes pair by their identifier).
    Other(u8),
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Other(1) => "icmp",
            Protocol::Other(_) => "ip",
        }
    }
}

/// Bytes of one direction (IPv4 datagrams, headers included, as the link carries them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carried {
    /// Entered the network at the sending host.
    pub sent_bytes: u64,
    /// Written into the receiving host's device.
    pub delivered_bytes: u64,
    /// Dropped by the network (a full queue, an RLC buffer, no route).
    pub dropped_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Connection {
    pub key: ConnectionKey,
    pub to_ue: Carried,
    pub from_ue: Carried,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Bytes delivered to the UE per goodput bin.
    pub delivered_to_ue_per_bin: Vec<u64>,
}

/// The connections of one run.
pub struct Connections {
    index: HashMap<ConnectionKey, u32>,
    pub list: Vec<Connection>,
    bin_ns: u64,
}

impl Connections {
    /// For a run whose goodput is binned by `bin_ns`.
    pub fn new(bin_ns: u64) -> Connections {
        Connections { index: HashMap::new(), list: Vec::new(), bin_ns }
    }

    /// The connection of a packet entering the network at `now_ns` (a new one if it is the
    /// first packet seen of it), counted as sent; `toward_ue` says which end is the UE's.
    pub fn on_sent(&mut self, now_ns: u64, packet: &Packet, toward_ue: impl Fn(Ipv4Addr) -> bool) -> Tag {
        let key = key_of(packet, toward_ue);
        let next = self.list.len() as u32;
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.list.push(Connection {
                key,
                to_ue: Carried::default(),
                from_ue: Carried::default(),
                first_ns: now_ns,
                last_ns: now_ns,
                delivered_to_ue_per_bin: Vec::new(),
            });
        }
        let c = &mut self.list[i as usize];
        c.last_ns = now_ns;
        direction(c, packet).sent_bytes += u64::from(packet.wire_bytes());
        Tag::flow(i)
    }

    /// The tag of a known connection's packet (the proxy's, made from what was counted as
    /// sent already).
    pub fn tag_of(&self, packet: &Packet, toward_ue: impl Fn(Ipv4Addr) -> bool) -> Tag {
        self.index.get(&key_of(packet, toward_ue)).map_or(Tag::NONE, |&i| Tag::flow(i))
    }

    /// A packet of connection `tag` written into its receiver's device at `now_ns`.
    pub fn on_delivered(&mut self, now_ns: u64, packet: &Packet) {
        let Some(c) = packet.meta.tag.flow_index().and_then(|i| self.list.get_mut(i)) else { return };
        let bytes = u64::from(packet.wire_bytes());
        c.last_ns = now_ns;
        let toward_ue = packet.dst == *c.key.ue.ip();
        direction(c, packet).delivered_bytes += bytes;
        if toward_ue {
            let bin = (now_ns / self.bin_ns) as usize;
            if c.delivered_to_ue_per_bin.len() <= bin {
                c.delivered_to_ue_per_bin.resize(bin + 1, 0);
            }
            c.delivered_to_ue_per_bin[bin] += bytes;
        }
    }

    /// A packet of connection `tag` the network dropped.
    pub fn on_dropped(&mut self, packet: &Packet) {
        let Some(c) = packet.meta.tag.flow_index().and_then(|i| self.list.get_mut(i)) else { return };
        direction(c, packet).dropped_bytes += u64::from(packet.wire_bytes());
    }
}

/// The counters of the direction `packet` travels in.
fn direction<'a>(c: &'a mut Connection, packet: &Packet) -> &'a mut Carried {
    if packet.dst == *c.key.ue.ip() {
        &mut c.to_ue
    } else {
        &mut c.from_ue
    }
}

fn key_of(packet: &Packet, toward_ue: impl Fn(Ipv4Addr) -> bool) -> ConnectionKey {
    let protocol = match packet.transport {
        Transport::Tcp(_) => Protocol::Tcp,
        Transport::Udp(_) => Protocol::Udp,
        Transport::Other(h) => Protocol::Other(h.protocol),
    };
    let (src_port, dst_port) = packet.ports();
    let (src, dst) = (SocketAddrV4::new(packet.src, src_port), SocketAddrV4::new(packet.dst, dst_port));
    let (ue, peer) = if toward_ue(packet.dst) {
        (dst, src)
    } else if toward_ue(packet.src) {
        (src, dst)
    } else if src.port() > dst.port() {
        // Neither end is a UE (a split proxy's leg to the server): the client's end, by its
        // ephemeral port, stands where the UE would.
        (src, dst)
    } else {
        (dst, src)
    };
    ConnectionKey { protocol, ue, peer }
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_wire::{TcpFlags, TcpHeader, TcpOptions};

    const UE: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);
    const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    fn tcp(src: SocketAddrV4, dst: SocketAddrV4, payload_bytes: u32) -> Packet {
        let header = TcpHeader {
            src_port: src.port(),
            dst_port: dst.port(),
            flags: TcpFlags::ACK,
            options: TcpOptions::default(),
            ..TcpHeader::default()
        };
        Packet::tcp(*src.ip(), *dst.ip(), header, payload_bytes)
    }

    #[test]
    fn both_directions_of_a_connection_are_one_and_each_is_counted_apart() {
        let mut c = Connections::new(100_000_000);
        let (ue, server) = (SocketAddrV4::new(UE, 40_000), SocketAddrV4::new(SERVER, 80));
        let is_ue = |a: Ipv4Addr| a == UE;
        let mut down = tcp(server, ue, 1000);
        let mut up = tcp(ue, server, 0);
        down.meta.tag = c.on_sent(5, &down, is_ue);
        up.meta.tag = c.on_sent(7, &up, is_ue);
        assert_eq!(down.meta.tag, up.meta.tag, "one connection both ways");
        let other = tcp(SocketAddrV4::new(UE, 40_001), server, 0);
        assert_eq!(c.on_sent(8, &other, is_ue), Tag::flow(1), "another port is another connection");
        c.on_delivered(150_000_000, &down);
        c.on_dropped(&up);
        let first = &c.list[0];
        assert_eq!((first.key.ue, first.key.peer), (ue, server));
        assert_eq!(first.to_ue, Carried { sent_bytes: 1040, delivered_bytes: 1040, dropped_bytes: 0 });
        assert_eq!(first.from_ue, Carried { sent_bytes: 40, delivered_bytes: 0, dropped_bytes: 40 });
        assert_eq!((first.first_ns, first.last_ns), (5, 150_000_000));
        assert_eq!(first.delivered_to_ue_per_bin[1], 1040, "delivered in the second 100 ms bin");
        // A leg between two nodes neither of which is a UE: one connection, the ephemeral end
        // first.
        let (proxy, server) = (SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 49_136), SocketAddrV4::new(SERVER, 8000));
        let (request, reply) = (tcp(proxy, server, 100), tcp(server, proxy, 1400));
        let tag = c.on_sent(9, &request, is_ue);
        assert_eq!(c.on_sent(10, &reply, is_ue), tag);
        assert_eq!((c.list[2].key.ue, c.list[2].key.peer), (proxy, server));
    }
}
