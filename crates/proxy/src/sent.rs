//! Segments forwarded toward the UE and not yet acknowledged: bytes in flight, RTT_down
//! samples (Karn's rule, RFC 6298 §3), and the SACK scoreboard used by local repair
//! (RFC 2018, RFC 6675).

use crate::by_offset::ByOffset;

#[derive(Clone, Copy, Debug)]
pub struct SentSeg {
    pub end: u64,
    pub sent_ns: u64,
    pub retransmitted: bool,
    pub sacked: bool,
}

#[derive(Debug, Default)]
pub struct SentLog {
    segs: ByOffset<SentSeg>,
    in_flight_bytes: u64,
    /// End of the highest outstanding segment the UE has SACKed (0: none).
    highest_sacked_end: u64,
}

impl SentLog {
    pub fn in_flight_bytes(&self) -> u64 {
        self.in_flight_bytes
    }

    pub fn on_sent(&mut self, start: u64, end: u64, now_ns: u64) {
        self.in_flight_bytes += end - start;
        self.segs.insert(start, SentSeg { end, sent_ns: now_ns, retransmitted: false, sacked: false });
    }

    /// The segment starting at `start`, if it is outstanding.
    pub fn get(&self, start: u64) -> Option<&SentSeg> {
        self.segs.get(start)
    }

    /// The outstanding segment that contains `offset`.
    pub fn containing(&self, offset: u64) -> Option<(u64, SentSeg)> {
        self.segs.at_or_before(offset).filter(|(_, s)| s.end > offset).map(|(start, &s)| (start, s))
    }

    pub fn first(&self) -> Option<(u64, SentSeg)> {
        self.segs.first().map(|(start, &s)| (start, s))
    }

    pub fn on_retransmitted(&mut self, start: u64, now_ns: u64) {
        if let Some(s) = self.segs.get_mut(start) {
            s.retransmitted = true;
            s.sacked = false;
            s.sent_ns = now_ns;
        }
    }

    /// The UE acknowledged everything below `ack`. Returns the RTT_down sample of the highest
    /// fully covered segment, unless it was retransmitted (Karn's rule).
    pub fn on_cum_ack(&mut self, ack: u64, now_ns: u64) -> Option<u64> {
        let mut sample = None;
        while let Some((start, seg)) = self.segs.first_mut() {
            if seg.end <= ack {
                self.in_flight_bytes -= seg.end - *start;
                sample = (!seg.retransmitted).then(|| now_ns.saturating_sub(seg.sent_ns));
                self.segs.pop_first();
            } else {
                if *start < ack {
                    self.in_flight_bytes -= ack - *start;
                    *start = ack;
                }
                break;
            }
        }
        sample
    }

    /// Marks the outstanding segments that lie wholly inside a SACK block.
    pub fn on_sack(&mut self, left: u64, right: u64) {
        for (_, s) in self.segs.items_from_mut(left).take_while(|(start, _)| *start < right) {
            if s.end <= right {
                s.sacked = true;
                self.highest_sacked_end = self.highest_sacked_end.max(s.end);
            }
        }
    }

    /// The first outstanding segment at or after `from`, below the highest SACKed byte, that
    /// is neither SACKed nor already retransmitted: a hole the UE reports (RFC 6675 §4).
    pub fn next_hole(&self, from: u64) -> Option<u64> {
        let below = self.highest_sacked_end.max(from);
        self.segs.from(from).take_while(|(start, _)| *start < below).find(|(_, s)| !s.sacked && !s.retransmitted).map(|(start, _)| start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karn_and_holes() {
        let mut log = SentLog::default();
        log.on_sent(0, 100, 10);
        log.on_sent(100, 200, 20);
        log.on_sent(200, 300, 30);
        log.on_sent(300, 400, 40);
        assert_eq!(log.in_flight_bytes(), 400);
        log.on_sack(200, 300);
        assert_eq!(log.next_hole(0), Some(0));
        log.on_retransmitted(0, 50);
        assert_eq!(log.next_hole(0), Some(100));
        assert_eq!(log.next_hole(101), None);
        // Covers the retransmitted segment only: no sample.
        assert_eq!(log.on_cum_ack(100, 60), None);
        assert_eq!(log.on_cum_ack(200, 70), Some(50));
        assert_eq!(log.in_flight_bytes(), 200);
        assert_eq!(log.containing(250).map(|(s, _)| s), Some(200));
    }

    #[test]
    fn a_refilled_hole_is_kept_in_order() {
        let mut log = SentLog::default();
        log.on_sent(0, 100, 1);
        log.on_sent(200, 300, 2);
        // Server-side loss: 100..200 arrives later and is forwarded after 200..300.
        log.on_sent(100, 200, 3);
        assert_eq!(log.containing(150).map(|(s, seg)| (s, seg.end)), Some((100, 200)));
        assert!(log.get(100).is_some() && log.get(150).is_none());
        log.on_sack(200, 300);
        assert_eq!(log.next_hole(0), Some(0));
        assert_eq!(log.next_hole(1), Some(100));
        // A cumulative ACK inside a segment trims it.
        assert_eq!(log.on_cum_ack(150, 10), Some(9));
        assert_eq!(log.first().map(|(s, seg)| (s, seg.end)), Some((150, 200)));
        assert_eq!(log.in_flight_bytes(), 150);
    }
}
