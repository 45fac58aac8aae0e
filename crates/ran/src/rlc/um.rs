//! Unacknowledged-mode reception (TS 38.322 §5.2.2, §4.2.1.2): no ARQ, in-order
//! delivery with a reordering timer before giving up on a hole.
//!
//! Model: as in AM, the UE knows a segment is lost when HARQ gives up on it;
//! t-Reordering starts then, and when it has run the SDU the segment belonged
//! to is discarded and delivery moves past it. Holes still inside HARQ only
//! delay delivery (the usual setting where t-Reordering covers HARQ), so UM
//! loses exactly the SDUs whose segments HARQ gave up on.

/// When the receiver may discard an SDU with a lost segment whose loss became
/// known at `known_ns`; keeps the earliest deadline if several segments of the
/// SDU were lost.
#[inline]
pub(crate) fn release_at(current_ns: u64, known_ns: u64, t_reordering_ns: u64) -> u64 {
    current_ns.min(known_ns + t_reordering_ns)
}
