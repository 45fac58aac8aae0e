//! The data-level receiver (RFC 8684 §3.3): each subflow's in-order bytes become DSN ranges
//! through the mappings its peer announced (§3.3.1), and one buffer reassembles them across
//! subflows and hands them to the application exactly once and in order, up to the peer's
//! DATA_FIN (§3.3.3); the window every subflow advertises is relative to the DATA_ACK and
//! ends where the buffer would be full (§3.3.5).

use std::collections::BTreeMap;
use std::ops::Range;

use crate::tcp::ranges::RangeSet;

/// The reassembly buffer of the data level.
#[derive(Debug)]
pub(super) struct DataReceiver {
    buf_bytes: u64,
    /// RCV.NXT of the data level: what the DATA_ACK carries (past the DATA_FIN's octet once
    /// everything before it arrived).
    nxt: u64,
    /// The DSN of the peer's DATA_FIN, once signalled.
    fin: Option<u64>,
    /// Up to where the application took the in-order bytes.
    read: u64,
    /// Data beyond `nxt`, held until the gap fills.
    out_of_order: RangeSet,
    /// Bytes that arrived again at the data level (reinjections, a retransmission on the
    /// subflow that had been slow) and were dropped.
    duplicate_bytes: u64,
    /// The most the buffer held at once.
    max_occupancy_bytes: u64,
}

impl DataReceiver {
    pub fn new(buf_bytes: u64) -> DataReceiver {
        DataReceiver {
            buf_bytes,
            nxt: 0,
            fin: None,
            read: 0,
            out_of_order: RangeSet::default(),
            duplicate_bytes: 0,
            max_occupancy_bytes: 0,
        }
    }

    pub fn nxt(&self) -> u64 {
        self.nxt
    }

    /// Every byte and the DATA_FIN arrived: the peer's stream ended.
    pub fn finished(&self) -> bool {
        self.fin.is_some_and(|fin| self.nxt > fin)
    }

    /// End of the in-order data bytes (the DATA_FIN's octet is no byte to deliver).
    fn data_end(&self) -> u64 {
        self.nxt - u64::from(self.finished())
    }

    /// Bytes held: in order but not taken, and out of order.
    pub fn occupancy_bytes(&self) -> u64 {
        (self.data_end() - self.read) + self.out_of_order.covered_bytes()
    }

    pub fn max_occupancy_bytes(&self) -> u64 {
        self.max_occupancy_bytes
    }

    pub fn duplicate_bytes(&self) -> u64 {
        self.duplicate_bytes
    }

    /// The data-level receive window (RFC 8684 §3.3.5), relative to the DATA_ACK (`nxt`):
    /// up to the DSN where the buffer would be full if every byte below it were held, the
    /// application having read to `read`. The sender stays below the highest such edge it
    /// saw, so out-of-order bytes, which lie below it, never overfill the buffer.
    pub fn window_bytes(&self) -> u64 {
        (self.read + self.buf_bytes).saturating_sub(self.nxt)
    }

    /// Data-level bytes `dsn` arrived on some subflow.
    pub fn on_data(&mut self, dsn: Range<u64>) {
        let start = dsn.start.max(self.nxt).min(dsn.end);
        let (_, new_bytes) = self.out_of_order.insert(start, dsn.end);
        self.duplicate_bytes += (dsn.end - dsn.start) - new_bytes;
        self.advance();
        self.max_occupancy_bytes = self.max_occupancy_bytes.max(self.occupancy_bytes());
    }

    /// The peer signalled its DATA_FIN at `dsn` (§3.3.3). Only the first one counts; one
    /// below what already arrived is the peer's error: ignored.
    pub fn on_data_fin(&mut self, dsn: u64) {
        if self.fin.is_none() && dsn >= self.nxt {
            self.fin = Some(dsn);
            self.advance();
        }
    }

    /// RCV.NXT over the bytes that now reach it, then over the DATA_FIN if it is next.
    fn advance(&mut self) {
        while let Some(span) = self.out_of_order.pop_first_if_reaches(self.nxt) {
            self.nxt = self.nxt.max(span.end);
        }
        if self.fin == Some(self.nxt) {
            self.nxt += 1;
        }
    }

    /// In-order bytes not yet handed to the application, now handed.
    pub fn take_delivered(&mut self) -> Range<u64> {
        let range = self.read..self.data_end();
        self.read = range.end;
        range
    }
}

/// What one subflow delivered and the mappings announced on it.
#[derive(Debug, Default)]
pub(super) struct SubflowRx {
    /// Mappings by subflow stream offset: (DSN, length).
    mappings: BTreeMap<u64, (u64, u64)>,
    /// Stream bytes the subflow delivered in order that no known mapping covers yet.
    unmapped: Range<u64>,
}

impl SubflowRx {
    /// Where the subflow's in-order stream has been read to.
    pub fn stream_read(&self) -> u64 {
        self.unmapped.end
    }

    /// A DSS mapping arrived (already unwrapped). A mapping whose start is known keeps the
    /// first one seen (RFC 8684 §3.3.1: a mapping does not change once sent).
    /// A mapping that would run past 2^64 in either space is the peer's error: ignored.
    pub fn on_mapping(&mut self, offset: u64, dsn: u64, len: u64) {
        let (Some(end), Some(_)) = (offset.checked_add(len), dsn.checked_add(len)) else { return };
        if len > 0 && end > self.unmapped.start {
            self.mappings.entry(offset).or_insert((dsn, len));
        }
    }

    /// The subflow delivered stream bytes `delivered` in order (a range may repeat bytes
    /// already seen); returns the DSN ranges that the mappings resolve, in order.
    /// Unresolved bytes wait for their mapping.
    pub fn on_delivered(&mut self, delivered: Range<u64>) -> Vec<Range<u64>> {
        if delivered.start <= self.unmapped.end {
            self.unmapped.end = self.unmapped.end.max(delivered.end);
        }
        let mut resolved = Vec::new();
        while !self.unmapped.is_empty() {
            let at = self.unmapped.start;
            let Some((&offset, &(dsn, len))) = self.mappings.range(..=at).next_back() else { break };
            if offset + len <= at {
                break;
            }
            let end = self.unmapped.end.min(offset + len);
            resolved.push(dsn + (at - offset)..dsn + (end - offset));
            self.unmapped.start = end;
        }
        // Mappings wholly below the one covering the next unresolved byte are done with;
        // dropping them one by one costs what they number (`split_off` would rebuild the map).
        if let Some(first) = self.mappings.range(..=self.unmapped.start).next_back().map(|(&o, _)| o) {
            while self.mappings.first_key_value().is_some_and(|(&o, _)| o < first) {
                self.mappings.pop_first();
            }
        }
        resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_across_gaps_once_and_in_order() {
        let mut rcv = DataReceiver::new(10_000);
        rcv.on_data(1000..2000);
        assert_eq!(rcv.take_delivered(), 0..0);
        assert_eq!(rcv.occupancy_bytes(), 1000);
        rcv.on_data(0..1500);
        assert_eq!(rcv.take_delivered(), 0..2000);
        assert_eq!(rcv.duplicate_bytes(), 500);
        rcv.on_data(0..2000);
        assert_eq!(rcv.duplicate_bytes(), 2500);
        rcv.on_data(5000..9000);
        assert_eq!(rcv.occupancy_bytes(), 4000);
        assert_eq!(rcv.window_bytes(), 10_000, "out-of-order bytes lie inside the window");
        rcv.on_data(2000..5000);
        assert_eq!(rcv.window_bytes(), 3000, "the edge stays where the buffer is full");
        assert_eq!(rcv.take_delivered(), 2000..9000);
        assert_eq!(rcv.window_bytes(), 10_000);
        assert_eq!(rcv.max_occupancy_bytes(), 7000);
    }

    #[test]
    fn the_data_fin_ends_the_stream_once_every_byte_before_it_arrived() {
        let mut rcv = DataReceiver::new(10_000);
        rcv.on_data(0..1000);
        rcv.on_data_fin(3000);
        rcv.on_data_fin(5000);
        assert!(!rcv.finished());
        rcv.on_data(1000..3000);
        assert!(rcv.finished(), "the first DATA_FIN signalled counts");
        assert_eq!(rcv.nxt(), 3001, "the DATA_ACK covers the DATA_FIN's octet");
        assert_eq!(rcv.take_delivered(), 0..3000);
        assert_eq!(rcv.occupancy_bytes(), 0);
        let mut early = DataReceiver::new(10_000);
        early.on_data(0..1000);
        early.on_data_fin(500);
        assert!(!early.finished(), "a DATA_FIN below what arrived is ignored");
    }

    #[test]
    fn subflow_bytes_wait_for_their_mapping() {
        let mut rx = SubflowRx::default();
        rx.on_mapping(0, 7000, 1000);
        assert_eq!(rx.on_delivered(0..1500), vec![7000..8000]);
        rx.on_mapping(1000, 3000, 2000);
        assert_eq!(rx.on_delivered(1500..2500), vec![3000..4500]);
        assert_eq!(rx.stream_read(), 2500);
        rx.on_mapping(u64::MAX - 10, 0, 100);
        rx.on_mapping(3000, u64::MAX - 10, 100);
        assert_eq!(rx.on_delivered(2500..3100), vec![4500..5000], "mappings past 2^64 are ignored");
    }
}
