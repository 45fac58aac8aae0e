//! The data-level sender (RFC 8684 §3.3): data sequence numbers, the send buffer that
//! DATA_ACKs free (§3.3.2), the DATA_FIN (§3.3.3), the peer's data-level receive window
//! (§3.3.5), the queue of data to reinject (§3.3.6), and each subflow's mappings from its
//! stream offsets to data sequence numbers (§3.3.1).

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
    /// The application closed: the DSN of our DATA_FIN, the octet after its last byte.
    fin: Option<u64>,
    /// Right edge of the peer's data-level receive window: the highest DATA_ACK + window
    /// seen (§3.3.5, never shrinks). New data stays below it.
    window_edge: u64,
    /// DSN ranges to send again on another subflow, oldest first.
    reinject: VecDeque<Range<u64>>,
}

impl DataSender {
    /// The application appends `bytes`; nothing once it closed.
    pub fn write(&mut self, bytes: u64) {
        if self.fin.is_none() {
            self.write_end = self.write_end.saturating_add(bytes);
        }
    }

    /// The application writes nothing more: the DATA_FIN follows the last byte.
    pub fn close(&mut self) {
        self.fin.get_or_insert(self.write_end);
    }

    /// Lowest DSN not DATA_ACKed (the DATA_FIN's octet included).
    pub fn una(&self) -> u64 {
        self.una
    }

    /// Application bytes DATA_ACKed.
    pub fn acked_bytes(&self) -> u64 {
        self.una.min(self.nxt)
    }

    /// Bytes handed to subflows and not yet DATA_ACKed (the send buffer's occupancy).
    pub fn buffered_bytes(&self) -> u64 {
        self.nxt - self.acked_bytes()
    }

    /// The DSN of the DATA_FIN once every byte before it went to a subflow, until it is
    /// DATA_ACKed: segments signal it meanwhile (§3.3.3).
    pub fn data_fin_due(&self) -> Option<u64> {
        self.fin.filter(|&fin| self.nxt == fin && self.una <= fin)
    }

    pub fn data_fin_acked(&self) -> bool {
        self.fin.is_some_and(|fin| self.una > fin)
    }

    /// The peer's window reaches DSN `edge` (exclusive): the right edge moves only forward.
    pub fn on_window_edge(&mut self, edge: u64) {
        self.window_edge = self.window_edge.max(edge);
    }

    /// A DATA_ACK (already unwrapped). One beyond what was sent (the DATA_FIN's octet
    /// included once signalled) is ignored (peer input).
    pub fn on_data_ack(&mut self, ack: u64) {
        let sent_end = self.nxt + u64::from(self.data_fin_due().is_some());
        if ack <= self.una || ack > sent_end {
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

    /// End of the new data that may go now: what was written, within the peer's window.
    fn sendable_end(&self) -> u64 {
        self.write_end.min(self.window_edge)
    }

    /// Whether data waits that may go now: reinjections, or unsent application bytes within
    /// the peer's window.
    pub fn has_data(&self) -> bool {
        !self.reinject.is_empty() || self.nxt < self.sendable_end()
    }

    /// Takes up to `max_bytes` to hand to a subflow: reinjections first (already within the
    /// window), then new data.
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
        let end = self.sendable_end().min(self.nxt.saturating_add(max_bytes));
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

    fn sender(window_edge: u64) -> DataSender {
        let mut snd = DataSender::default();
        snd.on_window_edge(window_edge);
        snd
    }

    #[test]
    fn chunks_take_reinjections_first_and_data_acks_free_them() {
        let mut snd = sender(u64::MAX);
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
    fn new_data_stays_within_the_highest_window_edge_seen() {
        let mut snd = sender(1000);
        snd.write(5000);
        assert_eq!(snd.next_chunk(10_000), Some(0..1000));
        assert!(!snd.has_data(), "the window is full");
        snd.on_window_edge(3000);
        snd.on_window_edge(2000);
        assert_eq!(snd.next_chunk(10_000), Some(1000..3000), "a lower edge does not shrink it");
        snd.queue_reinjection(0..500);
        assert_eq!(snd.next_chunk(10_000), Some(0..500), "reinjections are inside the window");
    }

    #[test]
    fn the_data_fin_takes_the_octet_after_the_last_byte_and_is_due_once_all_was_handed() {
        let mut snd = sender(u64::MAX);
        snd.write(3000);
        snd.close();
        snd.write(1000);
        assert_eq!(snd.next_chunk(2000), Some(0..2000));
        assert_eq!(snd.data_fin_due(), None, "bytes before it are not handed yet");
        snd.on_data_ack(2001);
        assert_eq!(snd.una(), 0, "the DATA_FIN's octet cannot be acknowledged before it is signalled");
        assert_eq!(snd.next_chunk(2000), Some(2000..3000), "nothing written after close");
        assert_eq!(snd.data_fin_due(), Some(3000));
        snd.on_data_ack(3000);
        assert_eq!((snd.data_fin_due(), snd.data_fin_acked(), snd.buffered_bytes()), (Some(3000), false, 0));
        snd.on_data_ack(3001);
        assert_eq!((snd.data_fin_due(), snd.data_fin_acked(), snd.acked_bytes()), (None, true, 3000));
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
