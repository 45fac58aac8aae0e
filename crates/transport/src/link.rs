//! One direction of a wired link: a FIFO queue limited in bytes (drop-tail, or
//! an AQM deciding at dequeue), a transmitter serialising at the link rate (or delivering
//! at a trace's opportunities, `delivery`), and a propagation pipe. Sans-IO: the link says when it wants to be woken ([`LinkTimers`]);
//! the simulator turns that into events, the emulator into deadlines of its real clock.
//!
//! Constant delay and FIFO service mean packets leave the pipe
//! in the order they entered, so the pipe is a queue too: only its head has an
//! arrival event pending, which keeps the event heap as small as the number of
//! links instead of the number of packets in flight.
//!
//! A drop-tail queue decides nothing at dequeue: a packet it accepts leaves at the
//! end of the transmissions ahead of it, known the moment it arrives. So it goes
//! straight into the pipe with its arrival time, and the queue's occupancy is
//! brought up to date lazily (`advance`) from the recorded start times: one event
//! per packet instead of two. An AQM (CoDel) decides at dequeue, from the state at
//! that instant, so its queue runs an end-of-transmission event per packet.

use std::collections::VecDeque;

use millinet_wire::aqm::{Aqm, Verdict};
use millinet_wire::{Packet, ECN_CE};

use crate::delivery::DeliveryOpportunities;

/// The instants a link asked to be woken at, for a driver that polls its deadlines (the
/// emulator's real-time link) rather than keeping an event queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wakes {
    pub transmitted: Option<u64>,
    pub arrival: Option<u64>,
}

impl LinkTimers for Wakes {
    fn transmitted_at(&mut self, at_ns: u64) {
        self.transmitted = Some(at_ns);
    }

    fn arrival_at(&mut self, at_ns: u64) {
        self.arrival = Some(at_ns);
    }
}

/// What a link asks its driver for: to be woken at an instant.
pub trait LinkTimers {
    /// An AQM queue's transmitter frees at `at_ns`: call [`Link::on_transmitted`] then.
    fn transmitted_at(&mut self, at_ns: u64);
    /// The pipe's oldest packet reaches the far end at `at_ns`: call [`Link::on_arrival`] then.
    fn arrival_at(&mut self, at_ns: u64);
}

struct Waiting {
    packet: Packet,
    enqueued_ns: u64,
}

/// Counters of one link direction. Conservation:
/// arrived = dropped + queued + transmitting + propagating + delivered.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub arrived_packets: u64,
    /// Packets that reached the far node.
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Drops decided by the AQM (a subset of `dropped_*`).
    pub aqm_dropped_packets: u64,
    /// ECN-capable packets the AQM CE-marked instead.
    pub aqm_marked_packets: u64,
    pub max_bytes: u64,
    /// Integral of queued bytes over time (byte·ns), for the time average.
    pub byte_ns: u128,
}

/// Packets that wait for the transmitter.
enum Queue {
    /// Accepted packets are already in the pipe; this keeps when each will start
    /// transmitting and its size, to count what is still queued at a given time.
    DropTail { starts: VecDeque<(u64, u32)> },
    /// Packets wait here until the transmitter frees and the AQM lets them through;
    /// `transmitting` until the end-of-transmission event has run.
    Aqm { aqm: Box<dyn Aqm>, waiting: VecDeque<Waiting>, transmitting: bool },
}

pub struct Link {
    pub name: String,
    pub to_node: u32,
    rate_bps: u64,
    /// The two rates a switching link alternates between (equal when constant).
    rates_bps: [u64; 2],
    delay_ns: u64,
    /// The last (wire bytes, serialisation ns) computed at the current rate: nearly every
    /// packet has one of two sizes, and the division costs more than the rest of `start`.
    last_serialisation: (u32, u64),
    limit_bytes: u64,
    limit_packets: u64,
    queue: Queue,
    /// Bytes queued as of `last_change_ns`.
    queued_bytes: u64,
    last_change_ns: u64,
    /// Drop-tail: when the transmitter finishes the last packet given to it.
    busy_until_ns: u64,
    /// Served at a trace's delivery opportunities rather than at `rate_bps`.
    opportunities: Option<Box<DeliveryOpportunities>>,
    /// Packets whose departure is decided (for drop-tail, queued ones too), with their
    /// arrival times at the far end, oldest first.
    pipe: VecDeque<(u64, Packet)>,
    pub stats: QueueStats,
}

pub struct LinkParams {
    pub name: String,
    pub to_node: u32,
    pub rate_bps: u64,
    pub switch_rate_bps: u64,
    pub delay_ns: u64,
    pub limit_bytes: u64,
    /// Packets the queue holds at most (`u64::MAX`: bytes only), like a qdisc's `limit`.
    pub limit_packets: u64,
    /// Drop-tail without.
    pub aqm: Option<Box<dyn Aqm>>,
    /// A trace's delivery opportunities serve the link instead of `rate_bps`, which then
    /// reads their mean rate.
    pub opportunities: Option<DeliveryOpportunities>,
}

/// Serialisation time of `bytes` at `rate_bps`, rounded up to the next nanosecond.
#[inline]
pub fn transmission_ns(bytes: u32, rate_bps: u64) -> u64 {
    (bytes as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
}

impl Link {
    pub fn new(p: LinkParams) -> Link {
        let rate_bps = p.opportunities.as_ref().map_or(p.rate_bps, DeliveryOpportunities::mean_rate_bps);
        Link {
            name: p.name,
            to_node: p.to_node,
            rate_bps,
            rates_bps: [p.rate_bps, p.switch_rate_bps],
            delay_ns: p.delay_ns,
            last_serialisation: (0, 0),
            limit_bytes: p.limit_bytes,
            limit_packets: p.limit_packets,
            queue: match p.aqm {
                Some(aqm) => Queue::Aqm { aqm, waiting: VecDeque::new(), transmitting: false },
                None => Queue::DropTail { starts: VecDeque::new() },
            },
            queued_bytes: 0,
            last_change_ns: 0,
            busy_until_ns: 0,
            opportunities: p.opportunities.map(Box::new),
            pipe: VecDeque::new(),
            stats: QueueStats::default(),
        }
    }

    /// Bytes waiting for the transmitter at `now_ns` (which never goes back: the queue
    /// is brought up to that time).
    pub fn queued_bytes(&mut self, now_ns: u64) -> u64 {
        self.advance(now_ns);
        self.queued_bytes
    }

    /// Packets waiting for the transmitter at `now_ns`.
    pub fn queued_packets(&mut self, now_ns: u64) -> u64 {
        self.advance(now_ns);
        self.waiting_packets()
    }

    /// Packets waiting, as of the last `advance`.
    fn waiting_packets(&self) -> u64 {
        (match &self.queue {
            Queue::DropTail { starts } => starts.len(),
            Queue::Aqm { waiting, .. } => waiting.len(),
        }) as u64
    }

    /// Packets being serialised at `now_ns` (0 or 1).
    pub fn transmitting_packets(&self, now_ns: u64) -> u64 {
        (match &self.queue {
            Queue::DropTail { .. } => self.busy_until_ns > now_ns,
            Queue::Aqm { transmitting, .. } => *transmitting,
        }) as u64
    }

    /// Packets on the wire between the ends at `now_ns`.
    pub fn propagating_packets(&mut self, now_ns: u64) -> u64 {
        let queued_in_pipe = match &self.queue {
            Queue::DropTail { .. } => self.queued_packets(now_ns),
            Queue::Aqm { .. } => 0,
        };
        self.pipe.len() as u64 - queued_in_pipe - self.transmitting_packets(now_ns)
    }

    fn account(&mut self, now_ns: u64) {
        self.stats.byte_ns += self.queued_bytes as u128 * (now_ns - self.last_change_ns) as u128;
        self.last_change_ns = now_ns;
    }

    /// Drop-tail: removes from the queue's count the packets that started transmitting
    /// by `now_ns`, each at its start time (so the occupancy integral is exact).
    fn advance(&mut self, now_ns: u64) {
        while let Queue::DropTail { starts } = &mut self.queue {
            let Some(&(start_ns, bytes)) = starts.front().filter(|&&(start_ns, _)| start_ns <= now_ns) else { break };
            starts.pop_front();
            self.account(start_ns);
            self.queued_bytes -= bytes as u64;
        }
    }

    /// Whether a packet of `bytes` arriving at `now_ns` would be taken: an idle transmitter
    /// takes any packet, a busy one queues it within the byte and packet limits.
    pub fn accepts(&mut self, now_ns: u64, bytes: u32) -> bool {
        self.advance(now_ns);
        self.transmitting_packets(now_ns) == 0 || self.has_room(bytes)
    }

    /// Whether the queue, as of the last `advance`, holds `bytes` more within its limits.
    #[inline]
    fn has_room(&self, bytes: u32) -> bool {
        self.queued_bytes + bytes as u64 <= self.limit_bytes && self.waiting_packets() < self.limit_packets
    }

    /// The rate the transmitter serialises at now.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The next packet's arrival at the far end, if one is on its way.
    pub fn next_arrival_ns(&self) -> Option<u64> {
        self.pipe.front().map(|&(at_ns, _)| at_ns)
    }

    /// A packet arrives from the node. Returns false when it is dropped.
    #[inline]
    pub fn enqueue(&mut self, now_ns: u64, packet: Packet, timers: &mut impl LinkTimers) -> bool {
        self.stats.arrived_packets += 1;
        self.advance(now_ns);
        let bytes = packet.wire_bytes();
        if self.transmitting_packets(now_ns) == 0 {
            // An idle transmitter means an empty queue: the packet goes straight on the wire.
            self.start(now_ns, bytes, packet, timers);
            return true;
        }
        if !self.has_room(bytes) {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += bytes as u64;
            return false;
        }
        self.account(now_ns);
        self.queued_bytes += bytes as u64;
        self.stats.max_bytes = self.stats.max_bytes.max(self.queued_bytes);
        match &mut self.queue {
            Queue::DropTail { starts } => {
                let start_ns = self.busy_until_ns;
                starts.push_back((start_ns, bytes));
                self.start(start_ns, bytes, packet, timers);
            }
            Queue::Aqm { waiting, .. } => waiting.push_back(Waiting { packet, enqueued_ns: now_ns }),
        }
        true
    }

    /// The transmitter takes `packet` (`bytes` on the wire) at `start_ns`: it joins the pipe
    /// with its arrival time. An AQM queue is told when the transmitter frees, to dequeue the
    /// next one then.
    #[inline]
    fn start(&mut self, start_ns: u64, bytes: u32, packet: Packet, timers: &mut impl LinkTimers) {
        let end_ns = match &mut self.opportunities {
            None => {
                if self.last_serialisation.0 != bytes {
                    self.last_serialisation = (bytes, transmission_ns(bytes, self.rate_bps));
                }
                start_ns + self.last_serialisation.1
            }
            Some(opportunities) => opportunities.deliver(start_ns, bytes),
        };
        match &mut self.queue {
            Queue::DropTail { .. } => self.busy_until_ns = end_ns,
            Queue::Aqm { transmitting, .. } => {
                *transmitting = true;
                timers.transmitted_at(end_ns);
            }
        }
        let arrival_ns = end_ns + self.delay_ns;
        if self.pipe.is_empty() {
            timers.arrival_at(arrival_ns);
        }
        self.pipe.push_back((arrival_ns, packet));
    }

    /// AQM queue: the transmitter is free; the next packet the AQM lets through starts.
    #[inline]
    pub fn on_transmitted(&mut self, now_ns: u64, timers: &mut impl LinkTimers) {
        let Queue::Aqm { transmitting, waiting, .. } = &mut self.queue else { return };
        *transmitting = false;
        if waiting.is_empty() {
            return;
        }
        self.account(now_ns);
        while let Queue::Aqm { aqm, waiting, .. } = &mut self.queue {
            let Some(mut w) = waiting.pop_front() else { return };
            let bytes = w.packet.wire_bytes();
            self.queued_bytes -= bytes as u64;
            match aqm.on_dequeue(now_ns, now_ns - w.enqueued_ns, self.queued_bytes, w.packet.ecn) {
                Verdict::Deliver => {
                    self.start(now_ns, bytes, w.packet, timers);
                    return;
                }
                Verdict::Mark => {
                    w.packet.ecn = ECN_CE;
                    self.stats.aqm_marked_packets += 1;
                    self.start(now_ns, bytes, w.packet, timers);
                    return;
                }
                Verdict::Drop => {
                    self.stats.dropped_packets += 1;
                    self.stats.dropped_bytes += bytes as u64;
                    self.stats.aqm_dropped_packets += 1;
                }
            }
        }
    }

    /// The oldest packet in the pipe reaches the far node; the next one's arrival
    /// is scheduled.
    #[inline]
    pub fn on_arrival(&mut self, timers: &mut impl LinkTimers) -> Packet {
        self.stats.delivered_packets += 1;
        let (_, packet) = self.pipe.pop_front().expect("arrival event without a packet in the pipe");
        if let Some(&(next_ns, _)) = self.pipe.front() {
            timers.arrival_at(next_ns);
        }
        packet
    }

    /// Alternates between the two rates; returns false for a constant-rate link. A packet
    /// is serialised at the rate of the moment it starts, so drop-tail packets still
    /// queued get their departures recomputed at the new rate.
    pub fn switch_rate(&mut self, now_ns: u64) -> bool {
        if self.rates_bps[0] == self.rates_bps[1] {
            return false;
        }
        let next_bps = if self.rate_bps == self.rates_bps[0] { self.rates_bps[1] } else { self.rates_bps[0] };
        self.set_rate(now_ns, next_bps);
        true
    }

    /// Serialises from `now_ns` on at `rate_bps` (switching links and rate processes such as
    /// the spep study's capacity process); queued drop-tail packets are rescheduled as above.
    pub fn set_rate(&mut self, now_ns: u64, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.last_serialisation = (0, 0);
        self.advance(now_ns);
        if let Queue::DropTail { starts } = &mut self.queue {
            // The queued packets are the pipe's last ones; the first starts when the packet
            // on the wire ends, which the switch does not change.
            let first_queued = self.pipe.len() - starts.len();
            let Some(&(mut start_ns, _)) = starts.front() else { return };
            for ((queued_start_ns, bytes), (arrival_ns, _)) in starts.iter_mut().zip(self.pipe.range_mut(first_queued..)) {
                *queued_start_ns = start_ns;
                start_ns += transmission_ns(*bytes, self.rate_bps);
                *arrival_ns = start_ns + self.delay_ns;
            }
            self.busy_until_ns = start_ns;
        }
    }

    /// Time-average queue occupancy over [0, now].
    pub fn mean_bytes(&mut self, now_ns: u64) -> f64 {
        self.advance(now_ns);
        self.account(now_ns);
        if now_ns == 0 {
            0.0
        } else {
            self.stats.byte_ns as f64 / now_ns as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use millinet_wire::{Packet, UdpHeader};

    use super::*;

    /// 1000 bytes on the wire: 1000 ns at 8 Gbit/s.
    fn packet() -> Packet {
        Packet::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), UdpHeader { src_port: 1, dst_port: 2 }, 972)
    }

    fn link(switch_rate_bps: u64, limit_bytes: u64) -> Link {
        let p = LinkParams {
            name: "l".into(),
            to_node: 1,
            rate_bps: 8_000_000_000,
            switch_rate_bps,
            delay_ns: 10_000,
            limit_bytes,
            limit_packets: u64::MAX,
            aqm: None,
            opportunities: None,
        };
        Link::new(p)
    }

    /// Wakes the link until it asks for nothing more; returns the arrival times at the far end.
    fn arrivals(l: &mut Link, w: &mut Wakes) -> Vec<u64> {
        let mut times = vec![];
        loop {
            match (w.transmitted, w.arrival) {
                (Some(t), a) if a.is_none_or(|a| t <= a) => {
                    w.transmitted = None;
                    l.on_transmitted(t, w);
                }
                (_, Some(a)) => {
                    w.arrival = None;
                    l.on_arrival(w);
                    times.push(a);
                }
                (None, None) => return times,
                (Some(_), None) => unreachable!("matched by the first arm"),
            }
        }
    }

    #[test]
    fn drop_tail_departures_queue_and_conservation() {
        let (mut l, mut q) = (link(8_000_000_000, 2000), Wakes::default());
        let accepted: Vec<bool> = (0..4).map(|_| l.enqueue(0, packet(), &mut q)).collect();
        assert_eq!(accepted, [true, true, true, false], "one on the wire, 2000 bytes queued, then full");
        // Time only moves forward: the queue is looked at in increasing time.
        assert_eq!((l.queued_bytes(0), l.queued_bytes(999), l.queued_bytes(1000)), (2000, 2000, 1000));
        // arrived = dropped + queued + transmitting + propagating + delivered, mid-way.
        let parts = [l.stats.dropped_packets, l.queued_packets(1500), l.transmitting_packets(1500), l.propagating_packets(1500), 0];
        assert_eq!(parts, [1, 1, 1, 1, 0]);
        assert_eq!(parts.iter().sum::<u64>(), l.stats.arrived_packets);
        assert_eq!(l.queued_bytes(2000), 0);
        assert_eq!(l.mean_bytes(3000), (2000.0 * 1000.0 + 1000.0 * 1000.0) / 3000.0);
        assert_eq!(arrivals(&mut l, &mut q), [11_000, 12_000, 13_000]);
        assert_eq!(l.stats.delivered_packets, 3);
    }

    #[test]
    fn queued_packets_take_the_rate_of_the_moment_they_start() {
        // Switch at 500 ns: the packet on the wire keeps 8 Gbit/s, the two queued get 4.
        let (mut l, mut q) = (link(4_000_000_000, 10_000), Wakes::default());
        for _ in 0..3 {
            l.enqueue(0, packet(), &mut q);
        }
        assert!(l.switch_rate(500));
        assert_eq!(arrivals(&mut l, &mut q), [11_000, 13_000, 15_000]);
        // Switch at 1000 ns: the second packet started at that instant, at the old rate.
        let (mut l, mut q) = (link(4_000_000_000, 10_000), Wakes::default());
        for _ in 0..3 {
            l.enqueue(0, packet(), &mut q);
        }
        assert!(l.switch_rate(1000));
        assert_eq!(arrivals(&mut l, &mut q), [11_000, 12_000, 14_000]);
    }

    #[test]
    fn set_rate_reschedules_queued_packets_at_any_rate() {
        // Set to 2 Gbit/s at 500 ns: the packet on the wire ends at 1000 ns, the two queued
        // take 4000 ns each (1000 B at 2 Gbit/s).
        let (mut l, mut q) = (link(8_000_000_000, 10_000), Wakes::default());
        for _ in 0..3 {
            l.enqueue(0, packet(), &mut q);
        }
        l.set_rate(500, 2_000_000_000);
        assert_eq!(arrivals(&mut l, &mut q), [11_000, 15_000, 19_000]);
    }
}
