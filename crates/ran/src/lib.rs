//! gNB/UE radio access stack abstraction (docs/models/ran.md): slot scheduler, HARQ,
//! RLC AM/UM with segmentation, UE-owned bearers (PDCP) over legs on cells that
//! can attach and detach, TDD and uplink, per-UE telemetry, and the drive call
//! [`Ran::advance_to`].
//!
//! Sans-IO: the caller passes the time and the random streams; the RAN returns
//! what happened, each output with the time it takes effect. Same inputs, same
//! outputs. See docs/models/ran.md for the model, its choices and how the
//! engine drives it.

mod active;
mod amc;
mod bearer;
mod cell;
mod config;
mod error;
mod handover;
pub mod harq;
mod interference;
mod output;
mod pdcp;
mod ran;
mod rlc;
pub mod scheduler;
mod serving;
mod stats;
mod tdd;
mod uplink;

pub use bearer::Bearer;
pub use cell::{Cell, Detached, UeRadio};
pub use config::{CellConfig, ConfigError, HarqConfig, HarqMode, RlcMode, UeConfig};
pub use error::RanError;
pub use handover::{HandoverConfig, HandoverTrigger};
pub use interference::SlotSinr;
/// The AQM interface of RLC buffers (and every other queue).
pub use millinet_wire::aqm::{Aqm, Verdict};
pub use millinet_wire::Telemetry;
pub use output::{Delivery, Direction, Dropped, RanOutput};
pub use ran::{LegRadio, RadioStats, Ran};
pub use rlc::Sdu;
pub use serving::{ServingCellControl, Switch, SwitchKind};
pub use stats::{DirStats, DropReason, UeStats};
pub use tdd::{SlotKind, TddConfig, SPECIAL_DL_SHARE};

/// A UE, the same in every cell it attaches to; [`Ran::add_ue`] gives 0, 1, 2, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UeId(pub u32);

impl UeId {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A cell (gNB) of a [`Ran`], 0, 1, 2, … in the order they were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellId(pub u32);

/// Slack when comparing resource shares (sums of f64 fractions of a slot).
pub(crate) const SHARE_EPS: f64 = 1e-9;
