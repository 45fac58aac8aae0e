//! What one slot hands back to the engine. The caller owns the vectors and
//! passes the same `SlotOutput` every slot, so the steady state allocates nothing.

use millinet_wire::Packet;

use crate::stats::DropReason;
use crate::UeId;

/// Link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Direction {
    #[default]
    Downlink,
    Uplink,
}

/// An SDU handed to PDCP at the receiver, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub ue: UeId,
    /// `meta.ran_entry_ns` still holds the PDCP stamp of the sender.
    pub packet: Packet,
}

/// An SDU that left the RAN undelivered during the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub ue: UeId,
    pub direction: Direction,
    pub reason: DropReason,
    pub packet: Packet,
}

#[derive(Debug, Default)]
pub struct SlotOutput {
    /// End of the slot: when everything below takes effect (TBs are decoded at
    /// the end of the slot they were sent in).
    pub at_ns: u64,
    /// The direction the slot was given to (TDD).
    pub direction: Direction,
    /// SDUs reaching PDCP at the UE.
    pub downlink: Vec<Delivery>,
    /// SDUs reaching PDCP at the gNB.
    pub uplink: Vec<Delivery>,
    /// AQM drops, UM losses and PDCP duplicates of this slot (tail drops are
    /// reported by the enqueue call instead).
    pub dropped: Vec<Dropped>,
}

impl SlotOutput {
    pub(crate) fn reset(&mut self, at_ns: u64) {
        self.at_ns = at_ns;
        self.downlink.clear();
        self.uplink.clear();
        self.dropped.clear();
    }
}
