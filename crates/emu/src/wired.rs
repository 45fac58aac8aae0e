//! One direction of a wired link, in real time: a drop-tail FIFO limited in bytes, a
//! transmitter serialising at the link rate, and the propagation delay. Service is FIFO at a
//! known rate, so each accepted packet's departure is known when it arrives and the link is
//! one queue of (arrival at the far end, packet), oldest first.

use std::collections::VecDeque;

use millinet_wire::Packet;

/// Counters of one direction, named as the simulator's `queues` entries.
#[derive(Clone, Debug, Default)]
pub struct HopStats {
    pub arrived_packets: u64,
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub max_bytes: u64,
}

pub struct WiredHop {
    pub name: String,
    rate_bps: f64,
    delay_ns: u64,
    limit_bytes: u64,
    /// When the transmitter finishes the last packet given to it.
    busy_until_ns: u64,
    /// Accepted packets not yet transmitting: (start of transmission, wire bytes).
    waiting: VecDeque<(u64, u32)>,
    waiting_bytes: u64,
    /// Every accepted packet not yet at the far end, with its arrival time there.
    pipe: VecDeque<(u64, Packet)>,
    pub stats: HopStats,
}

impl WiredHop {
    pub fn new(name: String, rate_bps: f64, delay_s: f64, limit_bytes: u64) -> WiredHop {
        WiredHop {
            name,
            rate_bps,
            delay_ns: (delay_s * 1e9).round() as u64,
            limit_bytes,
            busy_until_ns: 0,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            pipe: VecDeque::new(),
            stats: HopStats::default(),
        }
    }

    /// Time to serialise `bytes` at the link rate.
    pub fn serialisation_ns(&self, bytes: u32) -> u64 {
        (bytes as f64 * 8e9 / self.rate_bps).ceil() as u64
    }

    /// Bytes the link serialises in `ns`.
    pub fn bytes_in_ns(&self, ns: u64) -> u64 {
        (ns as f64 * self.rate_bps / 8e9) as u64
    }

    /// Bytes waiting for the transmitter at `now_ns`.
    pub fn queued_bytes(&mut self, now_ns: u64) -> u64 {
        while let Some(&(start_ns, bytes)) = self.waiting.front() {
            if start_ns > now_ns {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes as u64;
        }
        self.waiting_bytes
    }

    /// A packet arrives at `now_ns`. Refused (handed back) when it does not fit the queue; an
    /// idle transmitter takes any packet.
    pub fn offer(&mut self, now_ns: u64, packet: Packet) -> Result<(), Packet> {
        let bytes = packet.wire_bytes();
        let queued = self.queued_bytes(now_ns);
        let idle = self.busy_until_ns <= now_ns;
        if !idle && queued + bytes as u64 > self.limit_bytes {
            return Err(packet);
        }
        self.stats.arrived_packets += 1;
        let start_ns = self.busy_until_ns.max(now_ns);
        if !idle {
            self.waiting.push_back((start_ns, bytes));
            self.waiting_bytes += bytes as u64;
            self.stats.max_bytes = self.stats.max_bytes.max(self.waiting_bytes);
        }
        self.busy_until_ns = start_ns + self.serialisation_ns(bytes);
        self.pipe.push_back((self.busy_until_ns + self.delay_ns, packet));
        Ok(())
    }

    /// Counts a packet the caller dropped after `offer` refused it.
    pub fn count_drop(&mut self, bytes: u32) {
        self.stats.dropped_packets += 1;
        self.stats.dropped_bytes += bytes as u64;
    }

    /// The next packet that has reached the far end by `now_ns`, with when it did.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Packet)> {
        let &(at_ns, _) = self.pipe.front()?;
        if at_ns > now_ns {
            return None;
        }
        self.stats.delivered_packets += 1;
        self.pipe.pop_front()
    }

    pub fn next_due_ns(&self) -> Option<u64> {
        self.pipe.front().map(|&(at_ns, _)| at_ns)
    }

    /// Packets accepted and not yet delivered (waiting, transmitting or propagating).
    pub fn in_transit_packets(&self) -> usize {
        self.pipe.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn packet(bytes: u32) -> Packet {
        let header = millinet_wire::TcpHeader::default();
        Packet::tcp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, header, bytes - 40)
    }

    #[test]
    fn packets_leave_after_serialisation_and_delay_in_order() {
        // 1000-byte packets at 8 Mbit/s take 1 ms each; 5 ms of propagation.
        let mut hop = WiredHop::new("a->b".into(), 8e6, 0.005, 10_000);
        for _ in 0..3 {
            hop.offer(0, packet(1000)).unwrap();
        }
        assert_eq!(hop.queued_bytes(0), 2000, "the first transmits, two wait");
        assert_eq!(hop.queued_bytes(1_000_000), 1000);
        let arrivals: Vec<u64> = std::iter::from_fn(|| hop.pop_due(u64::MAX).map(|(t, _)| t)).collect();
        assert_eq!(arrivals, vec![6_000_000, 7_000_000, 8_000_000]);
    }

    #[test]
    fn a_full_queue_refuses_and_drains_at_the_rate() {
        let mut hop = WiredHop::new("a->b".into(), 8e6, 0.0, 2000);
        hop.offer(0, packet(1000)).unwrap();
        hop.offer(0, packet(1000)).unwrap();
        hop.offer(0, packet(1000)).unwrap();
        assert!(hop.offer(0, packet(1000)).is_err(), "2000 bytes queued: the limit");
        assert!(hop.offer(1_000_000, packet(1000)).is_ok(), "one has started transmitting");
    }
}
