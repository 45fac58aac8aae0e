//! Helpers shared by the integration tests: packets, a seeded stream, a loop
//! that drives a cell slot by slot the way the engine will, and a `Ran` as a
//! station of the shared test driver (millinet-testkit).
#![allow(dead_code)]

use std::net::Ipv4Addr;

use millinet_ran::{Bearer, Cell, CellConfig, Delivery, Direction, Dropped, Ran, RanOutput, UeConfig, UeId, UeRadio};
use millinet_testkit::{Outbox, Station};
use millinet_wire::{Packet, UdpHeader};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub const SLOT_NS: u64 = 125_000;

/// A UDP packet of `wire` bytes on the wire, tagged with `uid`.
pub fn packet(uid: u64, wire: u32) -> Packet {
    let mut p = Packet::udp(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), UdpHeader { src_port: 1, dst_port: 2 }, wire - 28);
    p.meta.uid = uid;
    p
}

pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

pub fn radio(reported_db: f64, actual_db: f64) -> UeRadio {
    UeRadio { reported_sinr_db: reported_db, sinr_db: actual_db }
}

/// What one slot produced, and when it takes effect.
pub struct Step<'a> {
    pub at_ns: u64,
    pub direction: Direction,
    out: &'a RanOutput,
}

impl std::ops::Deref for Step<'_> {
    type Target = RanOutput;
    fn deref(&self) -> &RanOutput {
        self.out
    }
}

/// A cell plus everything a driver holds to run it slot by slot with radio
/// states set by the test (the channel-driven driver is `millinet_ran::Ran`).
pub struct Sim {
    pub cell: Cell,
    pub bearers: Vec<Bearer>,
    pub out: RanOutput,
    pub rng: Xoshiro256PlusPlus,
    pub now_ns: u64,
    pub radio: Vec<UeRadio>,
}

impl Sim {
    pub fn new(cfg: CellConfig, ues: &[UeConfig], seed: u64) -> Sim {
        let mut cell = Cell::new(cfg).unwrap();
        for (i, u) in ues.iter().enumerate() {
            cell.attach(UeId(i as u32), *u).unwrap();
        }
        let radio = vec![radio(20.0, 20.0); ues.len()];
        Sim { cell, bearers: ues.iter().map(|_| Bearer::new()).collect(), out: RanOutput::default(), rng: rng(seed), now_ns: 0, radio }
    }

    /// Run one slot and advance the clock.
    pub fn step(&mut self) -> Step<'_> {
        self.out.clear();
        let direction = self.cell.on_slot(self.now_ns, &self.radio, &mut self.bearers, &mut self.rng, &mut self.out);
        self.now_ns += self.cell.config().slot_ns;
        for d in self.out.downlink.iter().chain(&self.out.uplink) {
            assert_eq!(d.at_ns, self.now_ns, "a slot's deliveries take effect at its end");
        }
        Step { at_ns: self.now_ns, direction, out: &self.out }
    }

    pub fn enqueue_downlink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        self.cell.enqueue_downlink(now_ns, &mut self.bearers, ue, packet)
    }

    pub fn enqueue_uplink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        self.cell.enqueue_uplink(now_ns, &mut self.bearers, ue, packet)
    }

    pub fn ue(i: u32) -> UeId {
        UeId(i)
    }
}

/// Sends each scripted packet out of its port at its time (port = what the receiver makes
/// of it).
pub struct Script {
    /// (time, port, packet), in time order.
    pub packets: Vec<(u64, usize, Packet)>,
    next: usize,
}

impl Script {
    pub fn new(packets: Vec<(u64, usize, Packet)>) -> Script {
        Script { packets, next: 0 }
    }
}

impl Station for Script {
    fn on_packet(&mut self, _: u64, _: usize, _: Packet, _: &mut Outbox<'_>) {
        unreachable!("a script receives nothing")
    }

    fn on_deadline(&mut self, now_ns: u64, out: &mut Outbox<'_>) {
        while let Some(&(_, port, packet)) = self.packets.get(self.next).filter(|s| s.0 <= now_ns) {
            out.send(port, packet);
            self.next += 1;
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.packets.get(self.next).map(|s| s.0)
    }
}

/// The port of a `RanStation` that offers packets to `ue` in `direction`.
pub fn ran_port(ue: UeId, direction: Direction) -> usize {
    2 * ue.0 as usize + (direction == Direction::Uplink) as usize
}

/// A `Ran` as a station: a packet arriving on port `ran_port(ue, direction)` is offered to that UE after the slots due by then have run (the `advance_to`
/// contract); its deadlines are the instants the test chose to call `advance_to` at.
pub struct RanStation<R> {
    pub ran: Ran<R>,
    /// Call instants, latest first.
    calls: Vec<u64>,
    out: RanOutput,
    /// What the slots delivered, each call's downlink then its uplink, call after call.
    pub delivered: Vec<Delivery>,
    pub dropped: Vec<Dropped>,
}

impl<R: RngCore> RanStation<R> {
    pub fn new(ran: Ran<R>, calls: &[u64]) -> RanStation<R> {
        RanStation {
            ran,
            calls: calls.iter().rev().copied().collect(),
            out: RanOutput::default(),
            delivered: Vec::new(),
            dropped: Vec::new(),
        }
    }

    pub fn advance_to(&mut self, now_ns: u64) {
        self.ran.advance_to(now_ns, &mut self.out);
        self.delivered.append(&mut self.out.downlink);
        self.delivered.append(&mut self.out.uplink);
        self.dropped.append(&mut self.out.dropped);
    }
}

impl<R: RngCore> Station for RanStation<R> {
    fn on_packet(&mut self, now_ns: u64, port: usize, packet: Packet, _: &mut Outbox<'_>) {
        self.advance_to(now_ns);
        let ue = UeId((port / 2) as u32);
        if port % 2 == 0 {
            self.ran.enqueue_downlink(now_ns, ue, packet);
        } else {
            self.ran.enqueue_uplink(now_ns, ue, packet);
        }
    }

    fn on_deadline(&mut self, now_ns: u64, _: &mut Outbox<'_>) {
        self.advance_to(now_ns);
        while self.calls.last().is_some_and(|&c| c <= now_ns) {
            self.calls.pop();
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.calls.last().copied()
    }
}
