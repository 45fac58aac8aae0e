//! The unit RLC hands to MAC: one byte range of one SDU (TS 38.322 §4.2.1.3:
//! an AMD/UMD PDU carries a whole SDU or a segment identified by SN and SO).
//! The simulator carries no payload bytes, so a segment is just its address.

/// Bytes `[offset, offset + len)` of the SDU with sequence number `sn`.
///
/// SNs are 64-bit and never wrap: the model has no window stall, so the
/// modular arithmetic of TS 38.322 §7.1 would add cost without behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub sn: u64,
    pub offset: u32,
    pub len: u32,
}

impl Segment {
    /// Split off the first `bytes` bytes (re-segmentation, TS 38.322 §5.2.3.1.2),
    /// leaving the rest in `self`.
    #[inline]
    pub fn split_front(&mut self, bytes: u32) -> Segment {
        debug_assert!(bytes > 0 && bytes < self.len);
        let front = Segment { sn: self.sn, offset: self.offset, len: bytes };
        self.offset += bytes;
        self.len -= bytes;
        front
    }
}
