//! A UE's data radio bearer (docs/models/ran.md#pdcp-and-ran-latency): the PDCP entities of both
//! directions. It belongs to the UE, not to a cell: the legs that carry it
//! (RLC + HARQ on a cell) come and go with attach and detach, while COUNTs,
//! in-order delivery and duplicate discard continue across them.

use crate::output::Direction;
use crate::pdcp::{PdcpRx, PdcpTx};

#[derive(Debug, Default)]
pub struct Bearer {
    /// Downlink: gNB side sends, UE side receives.
    dl_tx: PdcpTx,
    dl_rx: PdcpRx,
    /// Uplink: UE side sends, gNB side receives.
    ul_tx: PdcpTx,
    ul_rx: PdcpRx,
}

impl Bearer {
    pub fn new() -> Bearer {
        Bearer::default()
    }

    #[inline]
    pub(crate) fn tx(&mut self, direction: Direction) -> &mut PdcpTx {
        match direction {
            Direction::Downlink => &mut self.dl_tx,
            Direction::Uplink => &mut self.ul_tx,
        }
    }

    #[inline]
    pub(crate) fn rx(&mut self, direction: Direction) -> &mut PdcpRx {
        match direction {
            Direction::Downlink => &mut self.dl_rx,
            Direction::Uplink => &mut self.ul_rx,
        }
    }

    /// SDUs the receiving PDCP holds for a missing COUNT (after a detach).
    pub fn held_sdus(&self, direction: Direction) -> usize {
        match direction {
            Direction::Downlink => self.dl_rx.held_sdus(),
            Direction::Uplink => self.ul_rx.held_sdus(),
        }
    }
}
