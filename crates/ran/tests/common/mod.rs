//! Helpers shared by the integration tests: packets, a seeded stream, and a
//! loop that drives a cell slot by slot the way the engine will.
#![allow(dead_code)]

use std::net::Ipv4Addr;

use millinet_ran::{Bearer, Cell, CellConfig, Direction, RanOutput, UeConfig, UeId, UeRadio};
use millinet_wire::{Packet, UdpHeader};
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub const SLOT_NS: u64 = 125_000;

/// A UDP packet of `wire` bytes on the wire, tagged with `uid`.
pub fn packet(uid: u64, wire: u32) -> Packet {
    let mut p = Packet::udp(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        UdpHeader {
            src_port: 1,
            dst_port: 2,
        },
        wire - 28,
    );
    p.meta.uid = uid;
    p
}

pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

pub fn radio(reported_db: f64, actual_db: f64) -> UeRadio {
    UeRadio {
        reported_sinr_db: reported_db,
        sinr_db: actual_db,
    }
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
        Sim {
            cell,
            bearers: ues.iter().map(|_| Bearer::new()).collect(),
            out: RanOutput::default(),
            rng: rng(seed),
            now_ns: 0,
            radio,
        }
    }

    /// Run one slot and advance the clock.
    pub fn step(&mut self) -> Step<'_> {
        self.out.clear();
        let direction = self.cell.on_slot(
            self.now_ns,
            &self.radio,
            &mut self.bearers,
            &mut self.rng,
            &mut self.out,
        );
        self.now_ns += self.cell.config().slot_ns;
        for d in self.out.downlink.iter().chain(&self.out.uplink) {
            assert_eq!(
                d.at_ns, self.now_ns,
                "a slot's deliveries take effect at its end"
            );
        }
        Step {
            at_ns: self.now_ns,
            direction,
            out: &self.out,
        }
    }

    pub fn enqueue_downlink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        self.cell
            .enqueue_downlink(now_ns, &mut self.bearers, ue, packet)
    }

    pub fn enqueue_uplink(&mut self, now_ns: u64, ue: UeId, packet: Packet) -> bool {
        self.cell
            .enqueue_uplink(now_ns, &mut self.bearers, ue, packet)
    }

    pub fn ue(i: u32) -> UeId {
        UeId(i)
    }
}
