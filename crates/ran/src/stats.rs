//! Counters per UE and direction, summed into cell totals (docs/models/ran.md#statistics). They make
//! conservation checkable: offered = delivered + dropped + forwarded + held.

use std::ops::AddAssign;

/// Why an SDU left the RAN without being delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Arrived to a full transmission buffer (tail drop).
    Overflow,
    /// Dropped by the buffer's AQM at dequeue.
    Aqm,
    /// UM: a segment was lost after HARQ gave up.
    UmLoss,
    /// PDCP at the receiver already had this COUNT.
    Duplicate,
}

/// Counters of one direction of one UE.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DirStats {
    /// SDUs handed to PDCP at the sender (accepted or not).
    pub sdus_offered: u64,
    pub bytes_offered: u64,
    pub sdus_delivered: u64,
    pub bytes_delivered: u64,
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    /// SDUs the AQM CE-marked and delivered (ECN-capable ones it would otherwise drop, or an
    /// L4S signal).
    pub aqm_marks: u64,
    pub um_losses: u64,
    pub duplicates_discarded: u64,
    /// SDUs a detach returned for another leg (docs/models/ran.md#attach-detach-and-forwarding), not counting those
    /// also handed up to PDCP at the detach (their copies end as duplicates).
    /// The other leg counts them as offered again.
    pub sdus_forwarded: u64,
    /// Every TB transmission, first or not.
    pub harq_tx: u64,
    /// Bytes of every TB transmission, first or not.
    pub harq_tx_bytes: u64,
    /// Retransmissions (a subset of `harq_tx`).
    pub harq_retx: u64,
    /// Failed decoding attempts.
    pub harq_failures: u64,
    /// TBs handed back to RLC after the last retransmission failed.
    pub harq_give_ups: u64,
    /// AM: segments and bytes NACKed by status reports and queued again.
    pub rlc_retx_segments: u64,
    pub rlc_retx_bytes: u64,
    /// Slots in which this UE got resources in this direction.
    pub slots_scheduled: u64,
    /// Sum of the slot shares it got (slot-equivalents of resources).
    pub slot_share: f64,
}

impl DirStats {
    /// SDUs that left without being delivered, for any reason.
    pub fn sdus_dropped(&self) -> u64 {
        self.drops_overflow + self.drops_aqm + self.um_losses + self.duplicates_discarded
    }

    pub(crate) fn count_drop(&mut self, reason: DropReason) {
        match reason {
            DropReason::Overflow => self.drops_overflow += 1,
            DropReason::Aqm => self.drops_aqm += 1,
            DropReason::UmLoss => self.um_losses += 1,
            DropReason::Duplicate => self.duplicates_discarded += 1,
        }
    }
}

impl AddAssign<&DirStats> for DirStats {
    fn add_assign(&mut self, o: &DirStats) {
        self.sdus_offered += o.sdus_offered;
        self.bytes_offered += o.bytes_offered;
        self.sdus_delivered += o.sdus_delivered;
        self.bytes_delivered += o.bytes_delivered;
        self.drops_overflow += o.drops_overflow;
        self.drops_aqm += o.drops_aqm;
        self.aqm_marks += o.aqm_marks;
        self.um_losses += o.um_losses;
        self.duplicates_discarded += o.duplicates_discarded;
        self.sdus_forwarded += o.sdus_forwarded;
        self.harq_tx += o.harq_tx;
        self.harq_tx_bytes += o.harq_tx_bytes;
        self.harq_retx += o.harq_retx;
        self.harq_failures += o.harq_failures;
        self.harq_give_ups += o.harq_give_ups;
        self.rlc_retx_segments += o.rlc_retx_segments;
        self.rlc_retx_bytes += o.rlc_retx_bytes;
        self.slots_scheduled += o.slots_scheduled;
        self.slot_share += o.slot_share;
    }
}

/// Both directions of one UE, or of a whole cell.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UeStats {
    pub downlink: DirStats,
    pub uplink: DirStats,
}

impl AddAssign<&UeStats> for UeStats {
    fn add_assign(&mut self, o: &UeStats) {
        self.downlink += &o.downlink;
        self.uplink += &o.uplink;
    }
}
