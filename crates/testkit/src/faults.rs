//! A seeded fault injector: a station between two others that drops, corrupts, duplicates
//! and delays (hence reorders) what crosses it, as smoltcp's fuzz injector does for its
//! stack.

use millinet_wire::{emit, parse, Packet};

use crate::driver::{Outbox, Station};
use crate::rng::SplitMix64;
use crate::timed::TimedQueue;

/// Probabilities (each in [0, 1]) of what happens to one packet, drawn in this order:
/// dropped, else corrupted, else forwarded, then maybe duplicated; every copy that goes out
/// may be held back up to `max_extra_delay_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Faults {
    pub drop: f64,
    /// One bit flipped in the packet's real bytes. The internet checksum detects every
    /// single-bit error, so a corrupted packet never arrives: the injector checks that
    /// `parse` refuses it and drops it, as a receiving host would.
    pub corrupt: f64,
    pub duplicate: f64,
    pub delay: f64,
    pub max_extra_delay_ns: u64,
}

/// What the injector did, for tests to check that their faults happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub forwarded: u64,
    pub dropped: u64,
    pub corrupted: u64,
    pub duplicated: u64,
    pub delayed: u64,
}

/// Forwards what arrives on port 0 out of port 1 and back, with `Faults`.
pub struct FaultInjector {
    faults: Faults,
    rng: SplitMix64,
    /// The packets held back, with their out port, by release time.
    held: TimedQueue<(usize, Packet)>,
    pub counts: FaultCounts,
}

impl FaultInjector {
    pub fn new(faults: Faults, seed: u64) -> FaultInjector {
        FaultInjector { faults, rng: SplitMix64::new(seed), held: TimedQueue::new(), counts: FaultCounts::default() }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.unit() < p
    }

    fn send(&mut self, now_ns: u64, port: usize, packet: Packet, out: &mut Outbox<'_>) {
        if self.chance(self.faults.delay) {
            self.counts.delayed += 1;
            let extra_ns = self.rng.next_u64() % (self.faults.max_extra_delay_ns + 1);
            self.held.push(now_ns + extra_ns, (port, packet));
        } else {
            out.send(port, packet);
        }
    }

    /// Flips one bit of `packet`'s bytes (headers and an all-zero payload) and asserts that
    /// the receiving host's parser refuses the result.
    fn corrupt(&mut self, packet: &Packet) {
        let mut bytes = vec![0u8; packet.wire_bytes() as usize];
        let payload = vec![0u8; packet.payload_bytes as usize];
        let n = emit(packet, &payload, &mut bytes).expect("a model's packet emits");
        let bit = self.rng.next_u64() % (n as u64 * 8);
        bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
        assert!(parse(&bytes, true).is_err(), "one flipped bit ({bit}) went unnoticed in {packet:?}");
    }
}

impl Station for FaultInjector {
    fn on_packet(&mut self, now_ns: u64, port: usize, packet: Packet, out: &mut Outbox<'_>) {
        let to = 1 - port;
        if self.chance(self.faults.drop) {
            self.counts.dropped += 1;
            return;
        }
        if self.chance(self.faults.corrupt) {
            self.counts.corrupted += 1;
            self.corrupt(&packet);
            return;
        }
        self.counts.forwarded += 1;
        if self.chance(self.faults.duplicate) {
            self.counts.duplicated += 1;
            self.send(now_ns, to, packet, out);
        }
        self.send(now_ns, to, packet, out);
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        // Equal release times keep the order the packets came in.
        while let Some((port, packet)) = self.held.pop_due(now_ns) {
            out.send(port, packet);
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.held.next_deadline_ns()
    }
}
