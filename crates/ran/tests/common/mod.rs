//! Helpers shared by the integration tests: packets, a seeded stream, and a
//! loop that drives a cell slot by slot the way the engine will.
#![allow(dead_code)]

use std::net::Ipv4Addr;

use millinet_ran::{Cell, CellConfig, SlotOutput, UeConfig, UeId, UeRadio};
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

/// A cell plus everything the engine would hold to drive it.
pub struct Sim {
    pub cell: Cell,
    pub out: SlotOutput,
    pub rng: Xoshiro256PlusPlus,
    pub now_ns: u64,
    pub radio: Vec<UeRadio>,
}

impl Sim {
    pub fn new(cfg: CellConfig, ues: &[UeConfig], seed: u64) -> Sim {
        let mut cell = Cell::new(cfg).unwrap();
        for u in ues {
            cell.add_ue(*u).unwrap();
        }
        let radio = vec![radio(20.0, 20.0); ues.len()];
        Sim {
            cell,
            out: SlotOutput::default(),
            rng: rng(seed),
            now_ns: 0,
            radio,
        }
    }

    /// Run one slot and advance the clock.
    pub fn step(&mut self) -> &SlotOutput {
        self.cell
            .on_slot(self.now_ns, &self.radio, &mut self.rng, &mut self.out);
        self.now_ns += self.cell.config().slot_ns;
        &self.out
    }

    pub fn ue(i: u32) -> UeId {
        UeId(i)
    }
}
