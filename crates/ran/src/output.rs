//! What the RAN hands back to its driver. The caller owns the vectors and
//! passes the same `RanOutput` every time, clearing it when it has consumed
//! it, so the steady state allocates nothing. Every entry carries the time it
//! takes effect, so a caller that advances late still applies them in order and
//! at the right time.

use millinet_wire::Packet;

use crate::stats::DropReason;
use crate::{CellId, UeId};

/// Link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Direction {
    #[default]
    Downlink,
    Uplink,
}

/// An SDU handed by PDCP at the receiver to the layer above, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub ue: UeId,
    /// The cell whose leg delivered it (uplink: the gNB it reaches).
    pub cell: CellId,
    /// When it reaches the receiver: the end of the slot it was decoded in.
    pub at_ns: u64,
    /// `meta.ran_entry_ns` still holds the PDCP stamp of the sender.
    pub packet: Packet,
}

/// An SDU that left the RAN undelivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub ue: UeId,
    pub cell: CellId,
    pub at_ns: u64,
    pub direction: Direction,
    pub reason: DropReason,
    pub packet: Packet,
}

/// Appended to by every slot run (and by detach); never cleared by the RAN.
#[derive(Debug, Default)]
pub struct RanOutput {
    /// SDUs reaching the UEs' stacks.
    pub downlink: Vec<Delivery>,
    /// SDUs reaching the gNBs' onward links.
    pub uplink: Vec<Delivery>,
    /// AQM drops, UM losses and PDCP duplicates (tail drops are reported by the
    /// enqueue call instead).
    pub dropped: Vec<Dropped>,
}

impl RanOutput {
    pub fn clear(&mut self) {
        self.downlink.clear();
        self.uplink.clear();
        self.dropped.clear();
    }

    /// Moves everything in `other` to the end of this output.
    pub fn append(&mut self, other: &mut RanOutput) {
        self.downlink.append(&mut other.downlink);
        self.uplink.append(&mut other.uplink);
        self.dropped.append(&mut other.dropped);
    }

    pub fn is_empty(&self) -> bool {
        self.downlink.is_empty() && self.uplink.is_empty() && self.dropped.is_empty()
    }
}
