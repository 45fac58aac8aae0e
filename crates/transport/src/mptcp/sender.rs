//! The data-level sender (RFC 8684 §3.3): data sequence numbers, the send buffer that
//! DATA_ACKs free (§3.3.2), the queue of data to reinject (§3.3.6), and each subflow's
//! mappings from its stream offsets to data sequence numbers (§3.3.1).

use std::collections::VecDeque;
use std::ops::Range;

/// Data sequence space of the sending side.
#[derive(Debug, Default)]
pub(super) struct DataSender {
    /// Lowest DSN not DATA_ACKed: everything below is freed from the send buffer.
    una: u64,
    /// Next DSN never handed to a subflow.
    nxt: u64,
    /// End of what the application wrote (u64::MAX: unlimited).
    write_end: u64,
    /// DSN ranges to send again on another subflow, oldest first.
    reinject: VecDeque<Range<u64>>,
}

impl DataSender {
    pub fn write(&mut self, bytes: u64) {
        self.write_end = self.write_end.saturating_add(bytes);
    }

    pub fn una(&self) -> u64 {
        self.una
    }

    /// Bytes handed to subflows and not yet DATA_ACKed (the send buffer's occupancy).
    pub fn buffered_bytes(&self) -> u64 {
        self.nxt - self.una
    }

    /// A DATA_ACK (already unwrapped). One beyond what was sent is ignored (peer input).
    pub fn on_data_ack(&mut self, ack: u64) {
        if ack <= self.una || ack > self.nxt {
            return;
        }
        self.una = ack;
        while let Some(front) = self.reinject.front_mut() {
            if front.end <= ack {
                self.reinject.pop_front();
            } else {
                front.start = front.start.max(ack);
                break;
            }
        }
    }

    /// Queues `range` (already sent on a subflow in trouble) to be sent on another one.
    pub fn queue_reinjection(&mut self, range: Range<u64>) {
        let range = range.start.max(self.una)..range.end;
        if !range.is_empty() {
            self.reinject.push_back(range);
        }
    }

    /// Whether data waits: reinjections or unsent application bytes.
    pub fn has_data(&self) -> bool {
        !self.reinject.is_empty() || self.nxt < self.write_end
    }

    /// Takes up to `max_bytes` to hand to a subflow: reinjections first, then new data.
    pub fn next_chunk(&mut self, max_bytes: u64) -> Option<Range<u64>> {
        if let Some(front) = self.reinject.front_mut() {
            let end = front.end.min(front.start + max_bytes);
            let chunk = front.start..end;
            front.start = end;
            if front.is_empty() {
                self.reinject.pop_front();
            }
            return Some(chunk);
        }
        let end = self.write_end.min(self.nxt.saturating_add(max_bytes));
        if end <= self.nxt {
            return None;
        }
        let chunk = self.nxt..end;
        self.nxt = end;
        Some(chunk)
    }
}

/// One mapping (RFC 8684 §3.3.1): `len` bytes from subflow stream offset `offset` carry
/// the data-level bytes from `dsn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mapping {
    pub offset: u64,
    pub dsn: u64,
    pub len: u64,
}

impl Mapping {
    pub fn dsn_range(&self) -> Range<u64> {
        self.dsn..self.dsn + self.len
    }
}

/// What one subflow was handed, as mappings in stream order.
#[derive(Debug, Default)]
pub(super) struct SubflowTx {
    /// Stream bytes handed to the subflow so far (its stream's end).
    handed: u64,
    /// Mappings not yet acknowledged at the subflow level (a retransmission needs them).
    mappings: VecDeque<Mapping>,
    /// Stream offset below which the mappings were already queued for reinjection.
    reinjected_to: u64,
}

impl SubflowTx {
    pub fn handed(&self) -> u64 {
        self.handed
    }

    /// Appends `dsn` to the subflow's stream; returns the mapping made.
    pub fn hand(&mut self, dsn: Range<u64>) -> Mapping {
        let mapping = Mapping { offset: self.handed, dsn: dsn.start, len: dsn.end - dsn.start };
        self.handed += mapping.len;
        self.mappings.push_back(mapping);
        mapping
    }

    /// The mapping covering stream offset `offset`.
    pub fn mapping_at(&self, offset: u64) -> Option<Mapping> {
        let i = self.mappings.partition_point(|m| m.offset + m.len <= offset);
        self.mappings.get(i).copied().filter(|m| m.offset <= offset)
    }

    /// The subflow's peer acknowledged its stream below `acked`: those mappings go.
    pub fn on_subflow_ack(&mut self, acked: u64) {
        while self.mappings.front().is_some_and(|m| m.offset + m.len <= acked) {
            self.mappings.pop_front();
        }
    }

    /// DSN ranges of the mappings not queued for reinjection before, marking them queued.
    pub fn take_for_reinjection(&mut self) -> Vec<Range<u64>> {
        let from = self.reinjected_to;
        self.reinjected_to = self.handed;
        self.mappings.iter().filter(|m| m.offset + m.len > from).map(Mapping::dsn_range).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_take_reinjections_first_and_data_acks_free_them() {
        let mut snd = DataSender::default();
        snd.write(5000);
        assert_eq!(snd.next_chunk(3000), Some(0..3000));
        snd.queue_reinjection(1000..3000);
        snd.on_data_ack(1500);
        assert_eq!(snd.next_chunk(1000), Some(1500..2500));
        assert_eq!(snd.next_chunk(10_000), Some(2500..3000));
        assert_eq!(snd.next_chunk(10_000), Some(3000..5000));
        assert_eq!(snd.next_chunk(10_000), None);
        snd.on_data_ack(9000);
        assert_eq!(snd.una(), 1500, "a DATA_ACK beyond what was sent is ignored");
        assert_eq!(snd.buffered_bytes(), 3500);
    }

    #[test]
    fn mappings_are_found_by_offset_and_reinjected_once() {
        let mut tx = SubflowTx::default();
        tx.hand(100..200);
        tx.hand(500..550);
        assert_eq!(tx.mapping_at(120), Some(Mapping { offset: 100, dsn: 500, len: 50 }));
        assert_eq!(tx.mapping_at(150), None);
        assert_eq!(tx.take_for_reinjection(), vec![100..200, 500..550]);
        assert!(tx.take_for_reinjection().is_empty());
        tx.on_subflow_ack(100);
        assert_eq!(tx.mapping_at(0), None);
    }
}
