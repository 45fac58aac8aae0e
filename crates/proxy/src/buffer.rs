//! The instance's buffer (docs/proxy.md#how-a-flow-is-handled): server payload not yet acknowledged by the UE,
//! indexed by stream offset, keeping the server's original segment boundaries. Payload bytes,
//! when there are any, are kept beside it in a `PayloadStore` (payload.rs).

use millinet_wire::{Meta, RawOptions, TcpFlags, Timestamps};

use crate::by_offset::ByOffset;

/// One original server segment (or the part of a retransmission not already held).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub payload_bytes: u32,
    pub fin: bool,
    /// Arrival order within the flow: the latest constituent gives a coalesced segment's header.
    pub arrival: u64,
    pub ack: u32,
    pub window: u16,
    /// PSH, ECE, CWR as the server sent them (FIN is `fin`).
    pub flags: TcpFlags,
    pub timestamps: Option<Timestamps>,
    /// Options the proxy does not model, forwarded as they came.
    pub raw_options: RawOptions,
    pub ecn: u8,
    pub meta: Meta,
}

impl Entry {
    /// Sequence space it occupies: payload plus one for a FIN.
    #[inline]
    pub fn seq_len(&self) -> u64 {
        self.payload_bytes as u64 + self.fin as u64
    }
}

#[derive(Debug, Default)]
pub struct SegmentBuffer {
    entries: ByOffset<Entry>,
    payload_bytes: u64,
}

impl SegmentBuffer {
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// The first part of [from, to) that no entry covers.
    pub fn first_gap(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let mut cursor = from;
        while cursor < to {
            match self.entries.at_or_before(cursor) {
                Some((start, e)) if start + e.seq_len() > cursor => cursor = start + e.seq_len(),
                _ => {
                    let end = self.entries.from(cursor).next().map_or(to, |(start, _)| start.min(to));
                    return Some((cursor, end));
                }
            }
        }
        None
    }

    pub fn insert(&mut self, start: u64, entry: Entry) {
        self.payload_bytes += entry.payload_bytes as u64;
        self.entries.insert(start, entry);
    }

    /// Entries from `start` on, in sequence order.
    pub fn from(&self, start: u64) -> impl Iterator<Item = (u64, &Entry)> {
        self.entries.from(start)
    }

    /// Removes every entry that ends at or below `ack`, calling `released(end)` for each
    /// (the original segment boundaries the ACK covers, in order); an entry that `ack` cuts
    /// keeps its part above `ack`. Returns the payload bytes released.
    pub fn release_through(&mut self, ack: u64, mut released: impl FnMut(u64)) -> u64 {
        let before = self.payload_bytes;
        while let Some((start, entry)) = self.entries.first_mut() {
            let end = *start + entry.seq_len();
            if end <= ack {
                self.payload_bytes -= entry.payload_bytes as u64;
                self.entries.pop_first();
                released(end);
            } else {
                if *start < ack {
                    let cut = (ack - *start) as u32;
                    entry.payload_bytes -= cut;
                    self.payload_bytes -= cut as u64;
                    *start = ack;
                }
                break;
            }
        }
        before - self.payload_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(payload_bytes: u32) -> Entry {
        Entry {
            payload_bytes,
            fin: false,
            arrival: 0,
            ack: 0,
            window: 0,
            flags: TcpFlags::default(),
            timestamps: None,
            raw_options: RawOptions::default(),
            ecn: 0,
            meta: Meta::default(),
        }
    }

    #[test]
    fn gaps_and_release_keep_boundaries() {
        let mut b = SegmentBuffer::default();
        b.insert(0, seg(100));
        b.insert(100, seg(100));
        b.insert(300, seg(100));
        assert_eq!(b.first_gap(0, 400), Some((200, 300)));
        assert_eq!(b.first_gap(50, 150), None);
        assert_eq!(b.first_gap(350, 450), Some((400, 450)));
        let mut ends = Vec::new();
        assert_eq!(b.release_through(250, |e| ends.push(e)), 200);
        assert_eq!(ends, [100, 200]);
        assert_eq!(b.payload_bytes(), 100);
        assert_eq!(b.release_through(350, |_| {}), 50);
        assert_eq!(b.from(0).next().map(|(s, e)| (s, e.payload_bytes)), Some((350, 50)));
    }
}
