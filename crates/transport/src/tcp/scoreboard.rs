//! The sender's record of outstanding segments: SACK scoreboard, RFC 6675 IsLost / NextSeg
//! and pipe, kept incrementally so that the work per ACK does not grow with the window.
//!
//! - Segments sit in a deque ordered by sequence number and are found by binary search;
//!   a cumulative ACK pops them from the front (each segment is popped once).
//! - SACKed bytes are a `RangeSet`; a SACK block only visits the segments it newly covers.
//! - IsLost (RFC 6675 §4) is monotone until the next cumulative ACK: more SACKed data above
//!   a hole can only make it "more lost". A loss marker therefore only moves up; the
//!   segments it passes are marked lost once.
//! - NextSeg (RFC 6675 §4) resumes from HighRxt, which also only moves up.
//! - pipe (RFC 6675 §4 SetPipe) is updated by the change of each segment's contribution.
//! - Lost retransmissions (RFC 8985 §6.2, reduced to sequence numbers): a retransmission is
//!   lost once SACKs reach DupThresh segments beyond the data that was sent before it.
//!   Retransmissions are checked in the order they were sent, each once.
//! - RACK (RFC 8985 §6.2 step 5), in place of the two rules above when the sender runs it:
//!   segments are judged in the order they were sent without a time-sorted list, because
//!   first transmissions were sent in sequence order (a cursor, the loss marker, walks them)
//!   and retransmissions are already queued in the order they were sent.
//!
//! Sequence numbers here are unwrapped (u64); the sender converts at the wire.

use std::collections::VecDeque;

use super::rack::Transmission;
use super::ranges::{search_steps, RangeSet};
use super::rate::{DeliveryRate, TxSnapshot};

/// RFC 6675 §2: DupThresh.
pub(crate) const DUP_THRESH: u64 = 3;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub start: u64,
    /// Sequence space occupied: payload bytes, plus one for a FIN.
    pub len: u32,
    pub fin: bool,
    pub sacked: bool,
    /// Deemed lost (IsLost, a fast retransmit, or a timeout) and not SACKed since.
    pub lost: bool,
    /// A retransmission of this segment is counted in pipe (RFC 6675 SetPipe (b)).
    pub rtx_in_pipe: bool,
    /// Retransmitted at least once (Karn's rule).
    pub retransmitted: bool,
    pub tx: TxSnapshot,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    pub fn payload_bytes(&self) -> u32 {
        self.len - self.fin as u32
    }

    fn transmission(&self) -> Transmission {
        Transmission { sent_ns: self.tx.sent_ns, sent_order: self.tx.sent_order }
    }

    /// Deemed lost and no retransmission of it in flight: a loss the sender has yet to repair.
    fn lost_unrepaired(&self) -> bool {
        self.lost && !self.sacked && !self.rtx_in_pipe
    }

    /// RFC 6675 SetPipe: octets not SACKed count once if not lost, once more if retransmitted.
    fn pipe_contribution(&self) -> u64 {
        if self.sacked {
            return 0;
        }
        let len = self.len as u64;
        (!self.lost) as u64 * len + self.rtx_in_pipe as u64 * len
    }
}

/// What a cumulative ACK removed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CumAck {
    /// Some acknowledged segment had been retransmitted (no RTT sample, Karn's rule).
    pub retransmitted: bool,
    /// Send time of the highest fully acknowledged segment.
    pub last_sent_ns: u64,
}

/// What the ACKs since the last `take_deliveries` delivered, for RACK (RFC 8985 §6.2 steps
/// 2 and 3): the most recently sent first transmission and retransmission among the segments
/// newly acknowledged or SACKed, and whether a first transmission arrived below data
/// delivered before (reordering).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Deliveries {
    pub latest_original: Option<Transmission>,
    pub latest_retransmission: Option<Transmission>,
    pub reordering: bool,
}

/// What RACK found (`Scoreboard::rack_detect_losses`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RackLosses {
    /// The latest send time of the retransmissions found lost, if any.
    pub lost_retransmission_sent_ns: Option<u64>,
    /// When the earliest segment sent before the latest delivered one will have waited long
    /// enough to be lost: RACK's reordering timer.
    pub recheck_ns: Option<u64>,
}

/// A retransmission that is counted in pipe, in the order retransmissions were sent.
#[derive(Clone, Copy, Debug)]
struct RtxInFlight {
    start: u64,
    tx: Transmission,
    /// SND.NXT when it was sent: data from here on was first sent after it.
    snd_nxt: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<Segment>,
    sacked: RangeSet,
    pipe_bytes: u64,
    lost_bytes: u64,
    /// Bytes deemed lost so far, cumulative: a retransmission found lost counts again.
    lost_marked_bytes: u64,
    /// Unsacked segments ending at or below this are lost (RFC 6675 IsLost).
    loss_marker: u64,
    /// RFC 6675 HighRxt: NextSeg looks for lost segments from here on.
    high_rxt: u64,
    /// Retransmissions not yet known to be delivered or lost, oldest first.
    rtx_in_flight: VecDeque<RtxInFlight>,
    /// Starts of retransmissions found lost (below HighRxt), to be retransmitted again.
    relost: VecDeque<u64>,
    /// Start and send time of the highest segment SACKed since `take_newest_sacked`, among
    /// those never retransmitted (an RTT sample, Karn's rule).
    newest_sacked: Option<(u64, u64)>,
    deliveries: Deliveries,
    /// RACK.fack: the highest sequence number delivered, and its value when the current
    /// deliveries began (the reference for reordering).
    fack: u64,
    fack_before: u64,
    /// Where RACK's walk stopped: the place, counted from the first segment ever sent (see
    /// `popped`), of the first segment it found not yet lost. While the loss marker stays at
    /// that segment, the next walk starts there without a search.
    rack_undecided: Option<u64>,
    /// Segments removed from the front so far: a segment's place in `segs` is its place
    /// counted from the first segment ever sent, less this.
    popped: u64,
    /// Work done (segments and ranges visited, binary-search comparisons), for tests that
    /// check that the per-ACK cost does not depend on the window.
    steps: u64,
}

impl Scoreboard {
    /// An empty scoreboard whose first segment will start at `start`.
    pub fn new(start: u64) -> Scoreboard {
        Scoreboard { loss_marker: start, high_rxt: start, ..Scoreboard::default() }
    }

    pub fn pipe_bytes(&self) -> u64 {
        self.pipe_bytes
    }

    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    pub fn lost_marked_bytes(&self) -> u64 {
        self.lost_marked_bytes
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked.covered_bytes()
    }

    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Send time of the highest never-retransmitted segment SACKed since the last call.
    pub fn take_newest_sacked_sent_ns(&mut self) -> Option<u64> {
        self.newest_sacked.take().map(|(_, sent_ns)| sent_ns)
    }

    pub fn get(&self, i: usize) -> &Segment {
        &self.segs[i]
    }

    /// Segments outstanding (sent, not cumulatively acknowledged).
    pub fn outstanding_segments(&self) -> usize {
        self.segs.len()
    }

    /// Index of the highest outstanding segment.
    pub fn last_index(&self) -> Option<usize> {
        self.segs.len().checked_sub(1)
    }

    /// What was delivered since the last call; RACK.fack's reference moves up.
    pub fn take_deliveries(&mut self) -> Deliveries {
        self.fack_before = self.fack;
        std::mem::take(&mut self.deliveries)
    }

    /// A segment newly acknowledged or SACKed.
    fn note_delivered(&mut self, seg: &Segment) {
        let tx = seg.transmission();
        let latest = if seg.retransmitted { &mut self.deliveries.latest_retransmission } else { &mut self.deliveries.latest_original };
        if latest.is_none_or(|l| tx > l) {
            *latest = Some(tx);
        }
        self.deliveries.reordering |= !seg.retransmitted && seg.end() < self.fack_before;
        self.fack = self.fack.max(seg.end());
    }

    /// Highest SACKed sequence number + 1, if anything is SACKed.
    pub fn highest_sacked_end(&self) -> Option<u64> {
        self.sacked.last().map(|s| s.end)
    }

    /// Index of the segment containing `seq` (or the first one after it).
    fn index_of(&mut self, seq: u64) -> usize {
        // Most look-ups (RACK's walk, NextSeg) start at SND.UNA: the front needs no search.
        if self.segs.front().is_none_or(|s| s.end() > seq) {
            self.steps += 1;
            return 0;
        }
        self.steps += search_steps(self.segs.len());
        self.segs.partition_point(|s| s.end() <= seq)
    }

    /// A new segment was sent at the right edge.
    pub fn push(&mut self, seg: Segment) {
        self.pipe_bytes += seg.pipe_contribution();
        self.segs.push_back(seg);
    }

    /// Applies `f` to segment `i`, keeping pipe and lost_bytes consistent.
    fn update(&mut self, i: usize, f: impl FnOnce(&mut Segment)) {
        let seg = &mut self.segs[i];
        let (pipe_before, lost_before, unrepaired_before) = (seg.pipe_contribution(), seg.lost && !seg.sacked, seg.lost_unrepaired());
        f(seg);
        let (pipe_after, lost_after) = (seg.pipe_contribution(), seg.lost && !seg.sacked);
        let len = seg.len as u64;
        self.pipe_bytes = self.pipe_bytes - pipe_before + pipe_after;
        self.lost_bytes = self.lost_bytes - lost_before as u64 * len + lost_after as u64 * len;
        if !unrepaired_before && seg.lost_unrepaired() {
            self.lost_marked_bytes += len;
        }
    }

    /// Cumulative ACK up to `ack` (exclusive).
    pub fn on_cumulative_ack(&mut self, ack: u64, rate: &mut DeliveryRate, now_ns: u64) -> CumAck {
        let mut result = CumAck::default();
        while let Some(front) = self.segs.front() {
            if front.end() > ack {
                break;
            }
            self.steps += 1;
            let seg = self.segs.pop_front().expect("front exists");
            self.popped += 1;
            self.pipe_bytes -= seg.pipe_contribution();
            if !seg.sacked {
                if seg.lost {
                    self.lost_bytes -= seg.len as u64;
                }
                rate.on_delivered(&seg.tx, seg.len as u64, now_ns);
                self.note_delivered(&seg);
            }
            result.retransmitted |= seg.retransmitted;
            result.last_sent_ns = seg.tx.sent_ns;
        }
        // An ACK inside a segment (a peer that acknowledges part of it): trim the segment.
        if let Some(front) = self.segs.front() {
            if front.start < ack {
                let cut = (ack - front.start) as u32;
                self.update(0, |s| {
                    s.start = ack;
                    s.len -= cut;
                });
            }
        }
        self.sacked.remove_below(ack);
        while self.rtx_in_flight.front().is_some_and(|r| r.start < ack) {
            self.steps += 1;
            self.rtx_in_flight.pop_front();
        }
        self.loss_marker = self.loss_marker.max(ack);
        self.high_rxt = self.high_rxt.max(ack);
        result
    }

    /// One SACK block `[left, right)`, already clipped to the outstanding data. Returns the
    /// bytes newly SACKed.
    pub fn on_sack_block(&mut self, left: u64, right: u64, rate: &mut DeliveryRate, now_ns: u64) -> u64 {
        if left >= right {
            return 0;
        }
        self.steps += search_steps(self.sacked.len());
        // Most blocks of an ACK repeat what earlier ACKs reported (RFC 2018 §4: each block is
        // sent in up to three ACKs).
        if self.sacked.containing(left).is_some_and(|s| s.end >= right) {
            return 0;
        }
        let (merged, swallowed) = self.sacked.merged_bounds(left, right);
        self.steps += swallowed as u64;
        // Visit only the segments in the parts of the block that were not SACKed before
        // (the gaps); a segment straddling old and new parts is SACKed once it lies within
        // the merged range.
        let mut newly_sacked = 0;
        let mut gap_start = self.sacked.skip_covered(left);
        while gap_start < right {
            let gap_end = self.sacked.next_start_after(gap_start).map_or(right, |s| s.min(right));
            let mut i = self.index_of(gap_start);
            while i < self.segs.len() && self.segs[i].start < gap_end {
                self.steps += 1;
                let seg = self.segs[i];
                if !seg.sacked && seg.start >= merged.start && seg.end() <= merged.end {
                    self.update(i, |s| s.sacked = true);
                    rate.on_delivered(&seg.tx, seg.len as u64, now_ns);
                    self.note_delivered(&seg);
                    newly_sacked += seg.len as u64;
                    if !seg.retransmitted && self.newest_sacked.is_none_or(|(start, _)| seg.start > start) {
                        self.newest_sacked = Some((seg.start, seg.tx.sent_ns));
                    }
                }
                i += 1;
            }
            gap_start = self.sacked.skip_covered(gap_end);
        }
        self.sacked.insert(left, right);
        newly_sacked
    }

    /// RFC 6675 §4 IsLost, applied to every hole below the current SACK information: a
    /// segment is lost when DupThresh discontiguous SACKed ranges, or more than
    /// (DupThresh − 1)·SMSS SACKed bytes, lie above it.
    pub fn update_losses(&mut self, mss_bytes: u64) {
        let threshold_bytes = (DUP_THRESH - 1) * mss_bytes;
        let mut above_bytes = 0;
        let mut marker = None;
        for k in 0..DUP_THRESH as usize {
            let Some(span) = self.sacked.nth_from_top(k) else { break };
            self.steps += 1;
            if k + 1 == DUP_THRESH as usize {
                marker = Some(span.start);
                break;
            }
            let len = span.end - span.start;
            if above_bytes + len > threshold_bytes {
                // The point below which more than threshold_bytes are SACKed.
                marker = Some(span.end - (threshold_bytes + 1 - above_bytes));
                break;
            }
            above_bytes += len;
        }
        let Some(marker) = marker else { return };
        if marker <= self.loss_marker {
            return;
        }
        let mut pos = self.loss_marker;
        self.loss_marker = marker;
        // Mark the unSACKed segments between the old and the new marker.
        while pos < marker {
            pos = self.sacked.skip_covered(pos);
            self.steps += 1;
            if pos >= marker {
                break;
            }
            let i = self.index_of(pos);
            let Some(&seg) = self.segs.get(i) else { break };
            if seg.end() > marker {
                break;
            }
            if !seg.sacked && !seg.lost {
                self.update(i, |s| s.lost = true);
            }
            pos = seg.end();
        }
    }

    /// IsLost for the first outstanding segment.
    pub fn front_is_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.lost && !s.sacked)
    }

    /// The first outstanding segment is declared lost (RFC 6675 §5 step (4.3): retransmit
    /// HighACK+1 on entering recovery; RFC 6582: on a partial ACK). An earlier retransmission
    /// of it no longer counts in pipe.
    pub fn mark_front_lost(&mut self) {
        if self.segs.front().is_some_and(|s| !s.sacked) {
            self.update(0, |s| {
                s.lost = true;
                s.rtx_in_pipe = false;
            });
        }
    }

    /// RFC 6675 §5.1 / RFC 5681 §3.1 on RTO: everything not SACKed is lost; the SACK
    /// information is kept. This one walk over the window happens once per timeout.
    pub fn mark_all_lost(&mut self, snd_una: u64, snd_nxt: u64) {
        for i in 0..self.segs.len() {
            self.steps += 1;
            if !self.segs[i].sacked {
                self.update(i, |s| {
                    s.lost = true;
                    s.rtx_in_pipe = false;
                });
            }
        }
        self.loss_marker = snd_nxt;
        self.high_rxt = snd_una;
        self.rtx_in_flight.clear();
        self.relost.clear();
    }

    /// A timeout proved spurious: the segments it marked lost that were not retransmitted
    /// since (from HighRxt on) are in flight, not lost. Loss detection restarts from HighRxt,
    /// and SACKs mark them again if they are lost after all (RFC 6675 IsLost).
    pub fn unmark_unretransmitted_losses(&mut self) {
        let first = self.index_of(self.high_rxt);
        for i in first..self.segs.len() {
            self.steps += 1;
            if self.segs[i].lost && !self.segs[i].sacked && !self.segs[i].rtx_in_pipe {
                self.update(i, |s| s.lost = false);
            }
        }
        self.loss_marker = self.high_rxt;
    }

    /// RFC 8985 §6.2 detects a lost retransmission when data sent after it is delivered;
    /// here by sequence number, as Linux did before RACK: a retransmission counted in pipe
    /// is lost once the highest SACKed byte lies DupThresh·SMSS beyond SND.NXT at the time
    /// it was sent (the reordering allowance of RFC 6675 IsLost). It no longer counts in
    /// pipe and NextSeg retransmits it again. Without this only the RTO repairs it.
    /// Returns the latest send time of the retransmissions found lost, if any.
    pub fn detect_lost_retransmissions(&mut self, mss_bytes: u64) -> Option<u64> {
        let highest = self.highest_sacked_end()?;
        let mut latest_lost_ns = None;
        while let Some(&rtx) = self.rtx_in_flight.front() {
            if highest < rtx.snd_nxt + DUP_THRESH * mss_bytes {
                break;
            }
            self.rtx_in_flight.pop_front();
            if self.mark_retransmission_lost(rtx) {
                latest_lost_ns = Some(rtx.tx.sent_ns);
            }
        }
        latest_lost_ns
    }

    /// A retransmission was found lost: if it is still in flight (not delivered, not found
    /// lost before), it leaves pipe and NextSeg will send it again. Returns whether it was.
    fn mark_retransmission_lost(&mut self, rtx: RtxInFlight) -> bool {
        let i = self.index_of(rtx.start);
        let in_flight = self.segs.get(i).is_some_and(|s| s.start == rtx.start && s.rtx_in_pipe && !s.sacked && s.transmission() == rtx.tx);
        if in_flight {
            self.update(i, |s| {
                s.lost = true;
                s.rtx_in_pipe = false;
            });
            self.relost.push_back(rtx.start);
        }
        in_flight
    }

    /// RFC 8985 §6.2 step 5 (RACK_detect_loss): every segment not yet delivered nor deemed
    /// lost that was sent before `latest` (the most recently sent delivered one) is lost once
    /// `wait_ns` (RACK.rtt + RACK.reo_wnd) have passed since it was sent. Those not yet due
    /// set the recheck time. First transmissions are walked from the loss marker in
    /// sequence (= sending) order, retransmissions in the order they were sent; each walk
    /// stops at the first segment sent after `latest` or not yet due, as all later ones are.
    pub fn rack_detect_losses(&mut self, latest: Transmission, wait_ns: u64, now_ns: u64) -> RackLosses {
        let mut found = RackLosses::default();
        let due = |tx: Transmission| (latest > tx).then(|| tx.sent_ns + wait_ns);
        // One search at most (none from where the last walk stopped), then segment by
        // segment: the marker passes each segment once.
        let at_marker = self.rack_undecided.and_then(|place| {
            let i = place.checked_sub(self.popped)? as usize;
            self.segs.get(i).is_some_and(|s| s.start == self.loss_marker).then_some(i)
        });
        let mut i = match at_marker {
            Some(i) => i,
            None => self.index_of(self.loss_marker),
        };
        while let Some(&seg) = self.segs.get(i) {
            self.steps += 1;
            if !seg.sacked && !seg.lost && !seg.retransmitted {
                self.rack_undecided = Some(self.popped + i as u64);
                let Some(due_ns) = due(seg.transmission()) else { break };
                if due_ns > now_ns {
                    found.recheck_ns = Some(due_ns);
                    break;
                }
                self.update(i, |s| s.lost = true);
            }
            self.loss_marker = seg.end();
            i += 1;
        }
        while let Some(&rtx) = self.rtx_in_flight.front() {
            self.steps += 1;
            // Judged on what was queued, so that a retransmission not yet due costs no search
            // (one delivered or found lost since is dropped once it is due).
            let Some(due_ns) = due(rtx.tx) else { break };
            if due_ns > now_ns {
                found.recheck_ns = Some(found.recheck_ns.map_or(due_ns, |r| r.min(due_ns)));
                break;
            }
            if self.mark_retransmission_lost(rtx) {
                found.lost_retransmission_sent_ns = Some(rtx.tx.sent_ns);
            }
            self.rtx_in_flight.pop_front();
        }
        found
    }

    /// The oldest retransmission found lost that still needs retransmitting.
    fn next_relost(&mut self) -> Option<usize> {
        while let Some(&start) = self.relost.front() {
            let i = self.index_of(start);
            if self.segs.get(i).is_some_and(|s| s.start == start && s.lost && !s.sacked && !s.rtx_in_pipe) {
                return Some(i);
            }
            self.relost.pop_front();
        }
        None
    }

    /// RFC 6675 §4 NextSeg rule (1): the first lost segment not yet retransmitted, the
    /// front segment first (it may have been marked lost again after a retransmission),
    /// then lost retransmissions, then the lost segments above HighRxt.
    pub fn next_lost(&mut self) -> Option<usize> {
        if self.segs.front().is_some_and(|s| s.lost && !s.sacked && !s.rtx_in_pipe) {
            return Some(0);
        }
        if let Some(i) = self.next_relost() {
            return Some(i);
        }
        let mut pos = self.high_rxt;
        loop {
            pos = self.sacked.skip_covered(pos);
            self.steps += 1;
            if pos >= self.loss_marker {
                return None;
            }
            let i = self.index_of(pos);
            let seg = self.segs.get(i)?;
            if seg.lost && !seg.sacked && !seg.rtx_in_pipe {
                return Some(i);
            }
            if seg.end() > self.loss_marker {
                return None;
            }
            pos = seg.end();
            self.high_rxt = pos;
        }
    }

    /// RFC 6675 §4 NextSeg rule (3): an unSACKed segment above HighRxt and below the
    /// highest SACKed data, not yet retransmitted (used when no new data can be sent).
    pub fn next_unsacked_below_sacked(&mut self) -> Option<usize> {
        let highest = self.highest_sacked_end()?;
        let pos = self.sacked.skip_covered(self.high_rxt);
        if pos >= highest {
            return None;
        }
        let i = self.index_of(pos);
        self.segs.get(i).filter(|s| !s.sacked && !s.rtx_in_pipe).map(|_| i)
    }

    /// Segment `i` was retransmitted now, with SND.NXT at `snd_nxt`.
    pub fn on_retransmit(&mut self, i: usize, tx: TxSnapshot, snd_nxt: u64) {
        self.update(i, |s| {
            s.rtx_in_pipe = true;
            s.retransmitted = true;
            s.tx = tx;
        });
        let start = self.segs[i].start;
        self.rtx_in_flight.push_back(RtxInFlight { start, tx: self.segs[i].transmission(), snd_nxt });
        self.high_rxt = self.high_rxt.max(self.segs[i].end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 100;

    fn board(segments: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for k in 0..segments {
            sb.push(Segment {
                start: k * MSS,
                len: MSS as u32,
                fin: false,
                sacked: false,
                lost: false,
                rtx_in_pipe: false,
                retransmitted: false,
                tx: TxSnapshot::default(),
            });
        }
        sb
    }

    #[test]
    fn sack_marks_holes_lost_after_three_segments_above() {
        let mut sb = board(10);
        let mut rate = DeliveryRate::default();
        assert_eq!(sb.pipe_bytes(), 1000);
        // Segment 0 lost; 1 and 2 SACKed: not yet lost (only 2·SMSS above).
        assert_eq!(sb.on_sack_block(100, 300, &mut rate, 0), 200);
        sb.update_losses(MSS);
        assert!(!sb.front_is_lost());
        assert_eq!(sb.pipe_bytes(), 800);
        // Re-reporting the same block changes nothing.
        assert_eq!(sb.on_sack_block(100, 300, &mut rate, 0), 0);
        assert_eq!(sb.on_sack_block(100, 400, &mut rate, 0), 100);
        sb.update_losses(MSS);
        assert!(sb.front_is_lost());
        assert_eq!((sb.pipe_bytes(), sb.lost_bytes(), sb.sacked_bytes()), (600, 100, 300));
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_retransmit(0, TxSnapshot::default(), 1000);
        assert_eq!(sb.pipe_bytes(), 700);
        assert_eq!(sb.next_lost(), None);
        // Cumulative ACK of everything up to 400 (the retransmission arrived).
        sb.on_cumulative_ack(400, &mut rate, 0);
        assert_eq!((sb.pipe_bytes(), sb.lost_bytes(), sb.sacked_bytes()), (600, 0, 0));
    }

    #[test]
    fn three_discontiguous_ranges_mark_the_holes_below_them() {
        let mut sb = board(10);
        let mut rate = DeliveryRate::default();
        // Holes at 0, 2, 4, 6; SACKed 1, 3, 5, 7 (small segments rule: ranges count).
        for k in [1u64, 3, 5, 7] {
            sb.on_sack_block(k * MSS, (k + 1) * MSS, &mut rate, 0);
        }
        sb.update_losses(MSS * 10);
        // The bytes rule is out of reach (SMSS·10); the third range from the top starts at
        // 300, so holes 0 and 2 have three discontiguous SACKed ranges above them.
        assert_eq!(sb.lost_bytes(), 200);
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_retransmit(0, TxSnapshot::default(), 1000);
        assert_eq!(sb.next_lost(), Some(2));
        sb.on_retransmit(2, TxSnapshot::default(), 1000);
        assert_eq!(sb.next_lost(), None);
        // Rule (3): hole 4 lies below SACKed data and was not retransmitted.
        assert_eq!(sb.next_unsacked_below_sacked(), Some(4));
    }

    #[test]
    fn a_retransmission_is_lost_once_sacks_reach_dupthresh_segments_beyond_it() {
        let mut sb = board(20);
        let mut rate = DeliveryRate::default();
        // Holes 0 and 2, both lost by IsLost; retransmitted when SND.NXT was 600 and 700.
        sb.on_sack_block(100, 200, &mut rate, 0);
        sb.on_sack_block(300, 600, &mut rate, 0);
        sb.update_losses(MSS);
        assert_eq!(sb.lost_bytes(), 200);
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_retransmit(0, TxSnapshot { sent_ns: 1, ..TxSnapshot::default() }, 600);
        assert_eq!(sb.next_lost(), Some(2));
        sb.on_retransmit(2, TxSnapshot { sent_ns: 2, ..TxSnapshot::default() }, 700);
        let pipe = sb.pipe_bytes();
        // Data sent after the first retransmission is SACKed, but only 2·SMSS beyond it.
        sb.on_sack_block(600, 800, &mut rate, 0);
        assert_eq!(sb.detect_lost_retransmissions(MSS), None);
        assert_eq!(sb.next_lost(), None, "within the reordering allowance");
        assert_eq!(sb.pipe_bytes(), pipe - 200);
        // DupThresh segments beyond it: the retransmission of 0 is lost, that of 2 is not yet.
        assert_eq!(sb.lost_marked_bytes(), 200);
        sb.on_sack_block(800, 900, &mut rate, 0);
        assert_eq!(sb.detect_lost_retransmissions(MSS), Some(1), "sent at 1 ns");
        assert_eq!(sb.lost_marked_bytes(), 300, "a lost retransmission is a loss again");
        assert_eq!(sb.pipe_bytes(), pipe - 300 - MSS, "a lost retransmission leaves pipe");
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_retransmit(0, TxSnapshot { sent_ns: 3, ..TxSnapshot::default() }, 2000);
        // Hole 2 below HighRxt is found through the lost retransmissions, not the scan.
        sb.on_sack_block(900, 1000, &mut rate, 0);
        assert_eq!(sb.detect_lost_retransmissions(MSS), Some(2));
        assert_eq!(sb.next_lost(), Some(2));
        sb.on_retransmit(2, TxSnapshot { sent_ns: 4, ..TxSnapshot::default() }, 2000);
        assert_eq!(sb.next_lost(), None);
        // The new retransmissions wait for SACKs beyond 2000 + 3·SMSS.
        sb.on_sack_block(1000, 2000, &mut rate, 0);
        assert_eq!(sb.detect_lost_retransmissions(MSS), None);
        assert_eq!(sb.next_lost(), None);
    }

    #[test]
    fn timeout_marks_everything_unsacked_lost() {
        let mut sb = board(5);
        let mut rate = DeliveryRate::default();
        sb.on_sack_block(200, 300, &mut rate, 0);
        sb.mark_all_lost(0, 500);
        assert_eq!((sb.pipe_bytes(), sb.lost_bytes()), (0, 400));
        let order: Vec<usize> = std::iter::from_fn(|| {
            let i = sb.next_lost()?;
            sb.on_retransmit(i, TxSnapshot::default(), 500);
            Some(i)
        })
        .collect();
        assert_eq!(order, vec![0, 1, 3, 4], "go-back-N skips SACKed data");
        assert_eq!(sb.pipe_bytes(), 400);
    }
}
