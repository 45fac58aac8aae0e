//! Payload bytes: where they enter and leave a middlebox, and where milliProxy keeps them.
//!
//! Packets carry their payload as a length plus a `PayloadId`, a handle into buffers owned by
//! whoever drives the middlebox (`PayloadPool`). The simulator owns none (`NoPayloads`, every
//! id `NONE`); a daemon owns the buffers its packets were read into. A middlebox reads the
//! bytes of the packets it is given and asks the pool for buffers for the payload it makes
//! (coalesced segments); packets it forwards unchanged keep their id. After a call returns,
//! the driver may reuse every input buffer whose id is not among the outputs: a middlebox
//! that holds payload keeps its own copy (`PayloadStore`).

use std::collections::BTreeMap;

use millinet_wire::PayloadId;

/// The packet buffers of the middlebox's driver.
pub trait PayloadPool {
    /// The payload bytes of a packet handed to the middlebox (empty for `PayloadId::NONE`).
    fn bytes(&self, id: PayloadId) -> &[u8];
    /// A buffer of `len` bytes for the payload of a packet the middlebox emits, to be filled
    /// by the caller; `PayloadId::NONE` and an empty slice if the pool keeps no bytes.
    fn alloc(&mut self, len: usize) -> (PayloadId, &mut [u8]);
}

/// The simulator's pool: payload is a length only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPayloads;

impl PayloadPool for NoPayloads {
    fn bytes(&self, _id: PayloadId) -> &[u8] {
        &[]
    }
    fn alloc(&mut self, _len: usize) -> (PayloadId, &mut [u8]) {
        (PayloadId::NONE, &mut [])
    }
}

/// Keeps the payload of the server data a milliProxy instance buffers, by stream offset.
pub trait PayloadStore: Default {
    /// Whether it keeps bytes at all. `false` lets the proxy skip the pool entirely (the
    /// simulator's `LengthOnly`), at no cost per packet.
    const HOLDS_BYTES: bool;
    /// Stream bytes [start_offset, start_offset + len) entered the buffer with these bytes
    /// (shorter than `len`, even empty, if the packet came without them: the rest is zeros).
    fn on_buffered(&mut self, start_offset: u64, len: u32, bytes: &[u8]);
    /// Stream bytes below `end_offset` left the buffer (acknowledged by the UE).
    fn on_released(&mut self, end_offset: u64);
    /// Copies stream bytes [start_offset, start_offset + out.len()), all buffered, into `out`.
    fn read(&self, start_offset: u64, out: &mut [u8]);
}

/// Payload as a length only (the simulator).
#[derive(Clone, Copy, Debug, Default)]
pub struct LengthOnly;

impl PayloadStore for LengthOnly {
    const HOLDS_BYTES: bool = false;
    fn on_buffered(&mut self, _start_offset: u64, _len: u32, _bytes: &[u8]) {}
    fn on_released(&mut self, _end_offset: u64) {}
    fn read(&self, _start_offset: u64, _out: &mut [u8]) {}
}

/// Real payload bytes, one buffer per buffered range (a daemon's store). Each server segment's
/// bytes are copied out of the driver's packet buffer, which the driver reuses.
#[derive(Clone, Debug, Default)]
pub struct PayloadBytes {
    ranges: BTreeMap<u64, Vec<u8>>,
}

impl PayloadStore for PayloadBytes {
    const HOLDS_BYTES: bool = true;

    fn on_buffered(&mut self, start_offset: u64, len: u32, bytes: &[u8]) {
        let mut kept = bytes[..bytes.len().min(len as usize)].to_vec();
        kept.resize(len as usize, 0);
        self.ranges.insert(start_offset, kept);
    }

    fn on_released(&mut self, end_offset: u64) {
        while let Some(range) = self.ranges.first_entry() {
            let start = *range.key();
            let len = range.get().len() as u64;
            if start + len <= end_offset {
                range.remove();
            } else {
                if start < end_offset {
                    // An ACK inside a range keeps its part above the ACK, as the segment buffer does.
                    let rest = range.remove().split_off((end_offset - start) as usize);
                    self.ranges.insert(end_offset, rest);
                }
                return;
            }
        }
    }

    fn read(&self, start_offset: u64, out: &mut [u8]) {
        let mut at = start_offset;
        let mut filled = 0;
        let first = self.ranges.range(..=start_offset).next_back().map_or(start_offset, |(&s, _)| s);
        for (&start, bytes) in self.ranges.range(first..) {
            if filled == out.len() {
                break;
            }
            let end = start + bytes.len() as u64;
            if end <= at {
                continue;
            }
            debug_assert!(start <= at, "read of stream bytes that are not buffered");
            let from = (at - start) as usize;
            let n = (bytes.len() - from).min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&bytes[from..from + n]);
            filled += n;
            at += n as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_read_across_ranges_and_released_by_offset() {
        let mut s = PayloadBytes::default();
        s.on_buffered(0, 4, b"abcd");
        s.on_buffered(4, 3, b"efg");
        s.on_buffered(7, 2, b"h");
        let mut out = [0u8; 7];
        s.read(2, &mut out);
        assert_eq!(&out, b"cdefgh\0", "a short packet's missing bytes are zeros");
        s.on_released(5);
        let mut out = [0u8; 2];
        s.read(5, &mut out);
        assert_eq!(&out, b"fg");
        assert_eq!(s.ranges.keys().copied().collect::<Vec<_>>(), [5, 7]);
    }
}
