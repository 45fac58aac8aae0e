//! One direction of a wired link: a FIFO queue limited in bytes (drop-tail, or
//! CoDel at dequeue), a transmitter serialising at the link rate, and a
//! propagation pipe. Constant delay and FIFO service mean packets leave the pipe
//! in the order they entered, so the pipe is a queue too: only its head has an
//! arrival event pending, which keeps the event heap as small as the number of
//! links instead of the number of packets in flight.

use std::collections::VecDeque;

use millinet_transport::aqm::{Codel, Verdict};
use millinet_wire::Packet;

use crate::event::{Event, EventQueue};

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
    pub max_bytes: u64,
    /// Integral of queued bytes over time (byte·ns), for the time average.
    pub byte_ns: u128,
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
    codel: Option<Codel>,
    queue: VecDeque<Waiting>,
    queued_bytes: u64,
    last_change_ns: u64,
    transmitting: Option<Packet>,
    /// Packets propagating, with their arrival times.
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
    pub codel: Option<Codel>,
}

/// Serialisation time of `bytes` at `rate_bps`, rounded up to the next nanosecond.
#[inline]
pub fn transmission_ns(bytes: u32, rate_bps: u64) -> u64 {
    (bytes as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
}

impl Link {
    pub fn new(p: LinkParams) -> Link {
        Link {
            name: p.name,
            to_node: p.to_node,
            rate_bps: p.rate_bps,
            rates_bps: [p.rate_bps, p.switch_rate_bps],
            delay_ns: p.delay_ns,
            last_serialisation: (0, 0),
            limit_bytes: p.limit_bytes,
            codel: p.codel,
            queue: VecDeque::new(),
            queued_bytes: 0,
            last_change_ns: 0,
            transmitting: None,
            pipe: VecDeque::new(),
            stats: QueueStats::default(),
        }
    }

    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    pub fn queued_packets(&self) -> u64 {
        self.queue.len() as u64
    }

    pub fn transmitting_packets(&self) -> u64 {
        self.transmitting.is_some() as u64
    }

    pub fn propagating_packets(&self) -> u64 {
        self.pipe.len() as u64
    }

    fn account(&mut self, now_ns: u64) {
        self.stats.byte_ns += self.queued_bytes as u128 * (now_ns - self.last_change_ns) as u128;
        self.last_change_ns = now_ns;
    }

    /// A packet arrives from the node. Returns false when it is dropped.
    #[inline]
    pub fn enqueue(&mut self, now_ns: u64, packet: Packet, id: u32, events: &mut EventQueue) -> bool {
        self.stats.arrived_packets += 1;
        if self.transmitting.is_none() {
            // An idle transmitter means an empty queue: the packet goes straight on the wire.
            self.start(now_ns, packet, id, events);
            return true;
        }
        let bytes = packet.wire_bytes() as u64;
        if self.queued_bytes + bytes > self.limit_bytes {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += bytes;
            return false;
        }
        self.account(now_ns);
        self.queued_bytes += bytes;
        self.stats.max_bytes = self.stats.max_bytes.max(self.queued_bytes);
        self.queue.push_back(Waiting { packet, enqueued_ns: now_ns });
        true
    }

    #[inline]
    fn start(&mut self, now_ns: u64, packet: Packet, id: u32, events: &mut EventQueue) {
        let bytes = packet.wire_bytes();
        if self.last_serialisation.0 != bytes {
            self.last_serialisation = (bytes, transmission_ns(bytes, self.rate_bps));
        }
        events.schedule(now_ns + self.last_serialisation.1, Event::LinkTransmitted(id));
        self.transmitting = Some(packet);
    }

    /// The head packet finished serialising: it enters the pipe, and the next
    /// packet that the AQM lets through starts.
    #[inline]
    pub fn on_transmitted(&mut self, now_ns: u64, id: u32, events: &mut EventQueue) {
        let done = self.transmitting.take().expect("transmission event without a packet");
        let arrival_ns = now_ns + self.delay_ns;
        if self.pipe.is_empty() {
            events.schedule(arrival_ns, Event::LinkArrival(id));
        }
        self.pipe.push_back((arrival_ns, done));
        if self.queue.is_empty() {
            return;
        }
        self.account(now_ns);
        while let Some(w) = self.queue.pop_front() {
            let bytes = w.packet.wire_bytes() as u64;
            self.queued_bytes -= bytes;
            let verdict = match &mut self.codel {
                Some(codel) => codel.on_dequeue(now_ns, now_ns - w.enqueued_ns, self.queued_bytes),
                None => Verdict::Deliver,
            };
            match verdict {
                Verdict::Deliver => {
                    self.start(now_ns, w.packet, id, events);
                    return;
                }
                Verdict::Drop => {
                    self.stats.dropped_packets += 1;
                    self.stats.dropped_bytes += bytes;
                    self.stats.aqm_dropped_packets += 1;
                }
            }
        }
    }

    /// The oldest packet in the pipe reaches the far node; the next one's arrival
    /// is scheduled.
    #[inline]
    pub fn on_arrival(&mut self, id: u32, events: &mut EventQueue) -> Packet {
        self.stats.delivered_packets += 1;
        let (_, packet) = self.pipe.pop_front().expect("arrival event without a packet in the pipe");
        if let Some(&(next_ns, _)) = self.pipe.front() {
            events.schedule(next_ns, Event::LinkArrival(id));
        }
        packet
    }

    /// Alternates between the two rates; returns false for a constant-rate link.
    pub fn switch_rate(&mut self) -> bool {
        if self.rates_bps[0] == self.rates_bps[1] {
            return false;
        }
        self.rate_bps = if self.rate_bps == self.rates_bps[0] { self.rates_bps[1] } else { self.rates_bps[0] };
        self.last_serialisation = (0, 0);
        true
    }

    /// Time-average queue occupancy over [0, now].
    pub fn mean_bytes(&mut self, now_ns: u64) -> f64 {
        self.account(now_ns);
        if now_ns == 0 {
            0.0
        } else {
            self.stats.byte_ns as f64 / now_ns as f64
        }
    }
}
