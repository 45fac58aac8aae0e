//! gNB/UE radio access stack abstraction (ran.md §1–6): slot scheduler, HARQ,
//! RLC AM/UM with segmentation, PDCP stamps, TDD and uplink, per-UE telemetry.
//!
//! Sans-IO: the caller passes the time, the radio state and the HARQ random
//! stream; the cell returns what happened. Same inputs, same outputs. See
//! docs/models/ran.md for the model, its choices and how the engine drives it.

mod amc;
mod aqm;
mod cell;
mod config;
pub mod harq;
mod output;
mod pdcp;
mod rlc;
pub mod scheduler;
mod stats;
mod tdd;
mod telemetry;
mod uplink;

pub use aqm::BufferAqm;
pub use cell::{Cell, UeRadio};
pub use config::{CellConfig, ConfigError, HarqConfig, HarqMode, RlcMode, UeConfig};
pub use output::{Delivery, Direction, Dropped, SlotOutput};
pub use stats::{DirStats, DropReason, UeStats};
pub use tdd::{SlotKind, TddConfig, SPECIAL_DL_SHARE};
pub use telemetry::Telemetry;

/// A UE attached to a cell; dense index from 0 in attach order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UeId(pub u32);

impl UeId {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Slack when comparing resource shares (sums of f64 fractions of a slot).
pub(crate) const SHARE_EPS: f64 = 1e-9;
