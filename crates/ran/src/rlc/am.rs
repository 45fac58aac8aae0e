//! Acknowledged-mode ARQ (TS 38.322 §5.3): which segments the transmitter
//! must send again and when it learns about them.
//!
//! Model: a segment is lost only when HARQ gave up on its TB (docs/models/ran.md#harq); the
//! UE's MAC knows that moment (the process is flushed, TS 38.321 §5.3.2.2), so
//! it starts t-Reassembly then. When t-Reassembly has run, a STATUS PDU NACKs
//! the segment, unless t-StatusProhibit is still running since the previous
//! STATUS PDU, in which case the report waits for it (TS 38.322 §5.3.4). The
//! transmitter queues NACKed segments for retransmission ahead of new data.
//! Segments still inside HARQ are never NACKed: this is the configuration in
//! which t-Reassembly covers the HARQ retransmissions, and it keeps RLC from
//! sending duplicates.

use std::collections::VecDeque;

use super::segment::Segment;

#[derive(Debug)]
pub(crate) struct AmArq {
    t_reassembly_ns: u64,
    t_status_prohibit_ns: u64,
    /// Segments HARQ gave up on, with the time the loss became known, oldest
    /// first (HARQ gives up in time order, so the queue is sorted).
    lost: VecDeque<(Segment, u64)>,
    /// Retransmission queue, in SN order so the oldest hole is filled first.
    retx: VecDeque<Segment>,
    retx_bytes: u64,
    prohibit_until_ns: u64,
}

/// What one STATUS PDU made the transmitter queue again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Nacked {
    pub segments: u64,
    pub bytes: u64,
}

impl AmArq {
    pub fn new(t_reassembly_ns: u64, t_status_prohibit_ns: u64) -> Self {
        AmArq { t_reassembly_ns, t_status_prohibit_ns, lost: VecDeque::new(), retx: VecDeque::new(), retx_bytes: 0, prohibit_until_ns: 0 }
    }

    /// Bytes waiting in the retransmission queue (part of B).
    #[inline]
    pub fn retx_bytes(&self) -> u64 {
        self.retx_bytes
    }

    /// Nothing lost, nothing to resend.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.lost.is_empty() && self.retx.is_empty()
    }

    pub fn on_lost(&mut self, known_ns: u64, segment: Segment) {
        self.lost.push_back((segment, known_ns));
    }

    /// Send a STATUS PDU if one is due at `now_ns`.
    pub fn poll_status(&mut self, now_ns: u64) -> Nacked {
        let mut nacked = Nacked::default();
        let due = match self.lost.front() {
            Some(&(_, known)) => (known + self.t_reassembly_ns).max(self.prohibit_until_ns),
            None => return nacked,
        };
        if now_ns < due {
            return nacked;
        }
        // The report lists every hole whose t-Reassembly has run by now.
        while let Some(&(segment, known)) = self.lost.front() {
            if known + self.t_reassembly_ns > now_ns {
                break;
            }
            self.lost.pop_front();
            self.retx.push_back(segment);
            self.retx_bytes += u64::from(segment.len);
            nacked.segments += 1;
            nacked.bytes += u64::from(segment.len);
        }
        // Rare (once per report): restore SN order across old and new NACKs.
        self.retx.make_contiguous().sort_unstable_by_key(|s| (s.sn, s.offset));
        self.prohibit_until_ns = now_ns + self.t_status_prohibit_ns;
        nacked
    }

    /// Move up to `budget` bytes of retransmissions into `tb`, re-segmenting
    /// the last one if it does not fit (TS 38.322 §5.3.2). Returns bytes used.
    pub fn take_retx(&mut self, budget: u32, tb: &mut Vec<Segment>) -> u32 {
        let mut left = budget;
        while left > 0 {
            let Some(front) = self.retx.front_mut() else {
                break;
            };
            let seg = if front.len <= left {
                let s = *front;
                self.retx.pop_front();
                s
            } else {
                front.split_front(left)
            };
            tb.push(seg);
            left -= seg.len;
            self.retx_bytes -= u64::from(seg.len);
        }
        budget - left
    }
}
