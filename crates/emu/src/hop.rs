//! One direction of a wired link of the path, in real time: the transport crate's link model
//! (the simulator's), with the wake-ups it asks for kept as deadlines of the emulation's clock,
//! and its rate changed as the scenario's rate schedule says (the simulator's [`LinkRate`]).

use millinet_scenario::translate::LinkRate;
use millinet_transport::link::{Link, LinkParams, Wakes};
use millinet_wire::Packet;

pub struct Hop {
    pub link: Link,
    wakes: Wakes,
    /// The latest instant the link has been brought to: the model never goes back in time,
    /// so an arrival stamped earlier (a frame the link read late) enters at this instant.
    now_ns: u64,
    /// What changes the rate, if anything does.
    rate: Option<LinkRate>,
}

impl Hop {
    pub fn new(params: LinkParams, rate: Option<LinkRate>) -> Hop {
        Hop { link: Link::new(params), wakes: Wakes::default(), now_ns: 0, rate }
    }

    /// Offers `packet` arriving at `at_ns`; handed back, uncounted, when the queue cannot
    /// take it whole (the caller may offer its segments instead).
    pub fn offer(&mut self, at_ns: u64, packet: Packet) -> Result<(), Packet> {
        let at_ns = self.bring_to(at_ns);
        if !self.link.accepts(at_ns, packet.wire_bytes()) {
            return Err(packet);
        }
        self.link.enqueue(at_ns, packet, &mut self.wakes);
        Ok(())
    }

    /// Offers `packet`, which the link drops (and counts) when it does not fit.
    pub fn offer_or_drop(&mut self, at_ns: u64, packet: Packet) -> bool {
        let at_ns = self.bring_to(at_ns);
        self.link.enqueue(at_ns, packet, &mut self.wakes)
    }

    /// Bytes and packets queued at `now_ns`.
    pub fn queued(&mut self, now_ns: u64) -> (u64, u64) {
        let now_ns = self.bring_to(now_ns);
        (self.link.queued_bytes(now_ns), self.link.queued_packets(now_ns))
    }

    /// Brings the link to `at_ns` (or keeps it where it is, if later): its own instants
    /// before then run first.
    fn bring_to(&mut self, at_ns: u64) -> u64 {
        let at_ns = self.now_ns.max(at_ns);
        while self.run_own_instant(at_ns) {}
        self.now_ns = at_ns;
        at_ns
    }

    /// Runs what is due by `now_ns` in time order up to the next packet that reached the far
    /// end, and returns it with its arrival time.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Packet)> {
        loop {
            let arrival = self.wakes.arrival.filter(|&at| at <= now_ns);
            // The link's own instants up to that arrival come first.
            if self.run_own_instant(arrival.unwrap_or(now_ns)) {
                continue;
            }
            let at = arrival?;
            self.wakes.arrival = None;
            return Some((at, self.link.on_arrival(&mut self.wakes)));
        }
    }

    /// Runs the earliest rate change or end of transmission (AQM) at or before `limit_ns`;
    /// false when there is none.
    fn run_own_instant(&mut self, limit_ns: u64) -> bool {
        let change = self.rate.as_ref().map(LinkRate::next_deadline_ns).filter(|&at| at <= limit_ns);
        let transmitted = self.wakes.transmitted.filter(|&at| at <= limit_ns);
        let change_first = change.is_some_and(|c| transmitted.is_none_or(|t| c <= t));
        match (change, transmitted) {
            (Some(at), _) if change_first => {
                self.now_ns = self.now_ns.max(at);
                self.rate.as_mut().expect("a change is due").update(at, &mut self.link);
            }
            (_, Some(at)) => {
                self.now_ns = self.now_ns.max(at);
                self.wakes.transmitted = None;
                self.link.on_transmitted(at, &mut self.wakes);
            }
            _ => return false,
        }
        true
    }

    /// When the hop next needs attention.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        [self.rate.as_ref().map(LinkRate::next_deadline_ns), self.wakes.transmitted, self.wakes.arrival].into_iter().flatten().min()
    }

    /// Time to serialise `bytes` at the current rate.
    pub fn serialisation_ns(&self, bytes: u32) -> u64 {
        millinet_transport::link::transmission_ns(bytes, self.link.rate_bps())
    }

    /// Bytes the link serialises in `ns` at the current rate.
    pub fn bytes_in_ns(&self, ns: u64) -> u64 {
        (ns as u128 * self.link.rate_bps() as u128 / 8_000_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn packet(bytes: u32) -> Packet {
        Packet::tcp(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, millinet_wire::TcpHeader::default(), bytes - 40)
    }

    fn hop(rate_bps: u64, switch_rate_bps: u64, delay_ns: u64, limit_bytes: u64, period_ns: Option<u64>) -> Hop {
        let params = LinkParams {
            name: "a->b".into(),
            to_node: 0,
            rate_bps,
            switch_rate_bps,
            delay_ns,
            limit_bytes,
            limit_packets: u64::MAX,
            aqm: None,
        };
        Hop::new(params, period_ns.map(|period_ns| LinkRate::Switching { period_ns, next_ns: period_ns }))
    }

    #[test]
    fn packets_leave_after_serialisation_and_delay_in_order() {
        // 1000-byte packets at 8 Mbit/s take 1 ms each; 5 ms of propagation.
        let mut h = hop(8_000_000, 8_000_000, 5_000_000, 10_000, None);
        for _ in 0..3 {
            h.offer(0, packet(1000)).unwrap();
        }
        let arrivals: Vec<u64> = std::iter::from_fn(|| h.pop_due(u64::MAX).map(|(t, _)| t)).collect();
        assert_eq!(arrivals, vec![6_000_000, 7_000_000, 8_000_000]);
    }

    #[test]
    fn a_full_queue_hands_the_packet_back_uncounted() {
        let mut h = hop(8_000_000, 8_000_000, 0, 2000, None);
        for _ in 0..3 {
            h.offer(0, packet(1000)).unwrap();
        }
        assert!(h.offer(0, packet(1000)).is_err(), "2000 bytes queued: the limit");
        assert_eq!(h.link.stats.dropped_packets, 0, "the caller decides what is dropped");
        assert!(h.offer(1_000_000, packet(1000)).is_ok(), "one has started transmitting");
    }

    #[test]
    fn a_switching_link_serialises_at_the_rate_of_the_moment() {
        // 8 Mbit/s until 1.5 ms, then 4: the second packet starts at 1 ms (1 ms long), the
        // third at 2 ms, after the switch, and takes 2 ms.
        let mut h = hop(8_000_000, 4_000_000, 0, 10_000, Some(1_500_000));
        for _ in 0..3 {
            h.offer(0, packet(1000)).unwrap();
        }
        let arrivals: Vec<u64> = std::iter::from_fn(|| h.pop_due(10_000_000).map(|(t, _)| t)).collect();
        assert_eq!(arrivals, vec![1_000_000, 2_000_000, 4_000_000]);
    }
}
