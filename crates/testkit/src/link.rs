//! One direction of a path between two stations.

use std::collections::VecDeque;

use millinet_wire::Packet;

/// Decides the fate of each packet entering a link, given the time: false drops it; it may
/// also rewrite the packet (e.g. the advertised window, as a proxy would).
pub type Filter = Box<dyn FnMut(u64, &mut Packet) -> bool>;

/// A one-way link: the filter first, then (with a rate) a drop-tail FIFO that serialises
/// packets at `rate_bps`, then the propagation delay. The path keeps the order packets
/// entered it in: when `delay_ns` falls (the end of a delay spike, like a radio buffer
/// draining after a blockage) a packet does not overtake one sent before it.
pub struct Link {
    pub delay_ns: u64,
    pub rate_bps: Option<u64>,
    pub queue_limit_packets: usize,
    pub filter: Filter,
    /// (departure time, wire bytes) of packets queued or in transmission.
    departures: VecDeque<(u64, u64)>,
    last_arrival_ns: u64,
    pub dropped_by_filter: u64,
    pub dropped_by_queue: u64,
}

impl Link {
    /// A link with only a delay: no rate limit, no losses.
    pub fn new(delay_ns: u64) -> Link {
        Link {
            delay_ns,
            rate_bps: None,
            queue_limit_packets: usize::MAX,
            filter: Box::new(|_, _| true),
            departures: VecDeque::new(),
            last_arrival_ns: 0,
            dropped_by_filter: 0,
            dropped_by_queue: 0,
        }
    }

    pub fn with_rate(mut self, rate_bps: u64, queue_limit_packets: usize) -> Link {
        self.rate_bps = Some(rate_bps);
        self.queue_limit_packets = queue_limit_packets;
        self
    }

    pub fn with_filter(mut self, filter: Filter) -> Link {
        self.filter = filter;
        self
    }

    /// Packets queued or in transmission at `now_ns` (the drop-tail queue's occupancy).
    pub fn queued_packets(&self, now_ns: u64) -> usize {
        self.departures.iter().filter(|&&(d, _)| d > now_ns).count()
    }

    /// Wire bytes queued or in transmission at `now_ns` (what a RAN would report as its
    /// buffer occupancy).
    pub fn queued_bytes(&self, now_ns: u64) -> u64 {
        self.departures.iter().filter(|&&(d, _)| d > now_ns).map(|&(_, b)| b).sum()
    }

    /// Arrival time at the far end, or None if dropped.
    pub(crate) fn admit(&mut self, now_ns: u64, pkt: &mut Packet) -> Option<u64> {
        if !(self.filter)(now_ns, pkt) {
            self.dropped_by_filter += 1;
            return None;
        }
        let Some(rate_bps) = self.rate_bps else { return Some(self.in_order(now_ns + self.delay_ns)) };
        while self.departures.front().is_some_and(|&(d, _)| d <= now_ns) {
            self.departures.pop_front();
        }
        if self.departures.len() >= self.queue_limit_packets {
            self.dropped_by_queue += 1;
            return None;
        }
        // Transmission starts when the previous packet has left (or now, if the link is idle).
        let start_ns = self.departures.back().map_or(now_ns, |&(d, _)| d.max(now_ns));
        let bytes = u64::from(pkt.wire_bytes());
        let departure_ns = start_ns + bytes * 8 * 1_000_000_000 / rate_bps;
        self.departures.push_back((departure_ns, bytes));
        Some(self.in_order(departure_ns + self.delay_ns))
    }

    fn in_order(&mut self, arrival_ns: u64) -> u64 {
        self.last_arrival_ns = self.last_arrival_ns.max(arrival_ns);
        self.last_arrival_ns
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::{Packet, UdpHeader, IPV4_HEADER_BYTES, UDP_HEADER_BYTES};

    use super::*;

    fn packet(wire_bytes: u32) -> Packet {
        let header = UdpHeader { src_port: 1, dst_port: 2 };
        Packet::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), header, wire_bytes - IPV4_HEADER_BYTES - UDP_HEADER_BYTES)
    }

    #[test]
    fn rate_serialises_back_to_back_and_the_queue_drops_at_its_limit() {
        // 1250 bytes at 10 Mbit/s take 1 ms on the wire.
        let mut link = Link::new(5_000_000).with_rate(10_000_000, 2);
        let mut p = packet(1250);
        assert_eq!(p.wire_bytes(), 1250);
        assert_eq!(link.admit(0, &mut p), Some(6_000_000));
        assert_eq!(link.admit(0, &mut p), Some(7_000_000), "queued behind the first");
        assert_eq!(link.admit(0, &mut p), None, "two already queued");
        assert_eq!(link.dropped_by_queue, 1);
        assert_eq!(link.queued_packets(0), 2);
        assert_eq!(link.queued_bytes(1_500_000), 1250, "the first has left at 1 ms");
        // At 1 ms the first has left: room again, and the new one waits for the second.
        assert_eq!(link.admit(1_000_000, &mut p), Some(8_000_000));
        // An idle link starts at once.
        assert_eq!(link.admit(10_000_000, &mut p), Some(16_000_000));
        assert_eq!(link.queued_packets(10_000_000), 1);
    }

    #[test]
    fn the_filter_drops_and_rewrites_before_the_queue() {
        let mut link = Link::new(1).with_rate(10_000_000, 1).with_filter(Box::new(|now_ns, p| {
            p.ip_id = 7;
            now_ns % 2 == 0
        }));
        let mut p = packet(100);
        assert_eq!(link.admit(1, &mut p), None);
        assert_eq!((link.dropped_by_filter, link.dropped_by_queue), (1, 0));
        assert_eq!(link.queued_packets(1), 0, "a filtered packet takes no queue space");
        assert!(link.admit(2, &mut p).is_some());
        assert_eq!(p.ip_id, 7, "rewritten");
    }
}
