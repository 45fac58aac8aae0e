//! RACK (RFC 8985 §6): time-based loss detection. A segment is lost once a segment sent
//! after it has been delivered and more than RACK.rtt + RACK.reo_wnd have passed since it was
//! sent — "lost" means "not delivered in the time a later segment took, plus the reordering
//! the path has shown". Unlike RFC 6675's DupThresh it needs no further data above a hole
//! (a tail or a single retransmission is judged as well) and tolerates reordering it has seen.
//!
//! This module keeps RACK's state and its rules; the walk over the outstanding segments in
//! the order they were sent is the scoreboard's (`Scoreboard::rack_detect_losses`). Linux's
//! tcp_recovery.c (6.18) is what the kernel side runs with `net.ipv4.tcp_recovery = 1`, its
//! default; where the RFC lets an implementation choose, the kernel's choice is noted.

/// RFC 8985 §6.2 step 4: after a D-SACK the widened window persists for 16 recoveries.
const REO_WND_PERSIST_RECOVERIES: u32 = 16;

/// One segment's transmission: when it was sent, and its place in the order of sending.
/// RFC 8985's RACK_sent_after breaks ties of send time by sequence number, which a
/// retransmission sent in the same instant as new data defeats; a model that reads its clock
/// once per event sends whole bursts in one instant, so the order of sending breaks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Transmission {
    pub sent_ns: u64,
    pub sent_order: u64,
}

#[derive(Debug)]
pub(crate) struct Rack {
    /// RACK.xmit_ts (and, for RACK.end_seq, the place in the sending order): the most
    /// recently sent of the segments delivered.
    latest: Option<Transmission>,
    /// RACK.rtt: that segment's round trip.
    rtt_ns: u64,
    /// RACK.reordering_seen: a segment was delivered below data delivered before it, without
    /// having been retransmitted.
    reordering_seen: bool,
    /// RACK.reo_wnd_mult, RACK.reo_wnd_persist and RACK.dsack_round (RFC 8985 §6.2 step 4).
    reo_wnd_mult: u32,
    reo_wnd_persist: u32,
    dsack_round: Option<u64>,
}

impl Default for Rack {
    fn default() -> Rack {
        Rack { latest: None, rtt_ns: 0, reordering_seen: false, reo_wnd_mult: 1, reo_wnd_persist: 0, dsack_round: None }
    }
}

impl Rack {
    /// RFC 8985 §6.2 step 2 (RACK_update), for the most recently sent segment an ACK
    /// delivered (acknowledged or SACKed). A retransmitted segment whose ACK echoes a
    /// timestamp (`echoed_ms`, RFC 7323's 1 ms clock) older than the retransmission, or that
    /// came back sooner than the minimum RTT after it, was delivered by an earlier
    /// transmission: it says nothing of the retransmission's time and is skipped. (Linux's
    /// tcp_rack_advance has only the second test; without the first, the late originals of a
    /// spurious timeout, arriving half a second after the retransmission, made every segment
    /// still in flight look lost.)
    pub fn on_delivered(&mut self, tx: Transmission, retransmitted: bool, now_ns: u64, min_rtt_ns: u64, echoed_ms: Option<u64>) {
        let rtt_ns = now_ns.saturating_sub(tx.sent_ns);
        let echoes_earlier = echoed_ms.is_some_and(|ms| ms < tx.sent_ns / 1_000_000);
        if retransmitted && (rtt_ns < min_rtt_ns || echoes_earlier) {
            return;
        }
        if self.latest.is_none_or(|latest| tx > latest) {
            self.latest = Some(tx);
            self.rtt_ns = rtt_ns;
        }
    }

    /// RFC 8985 §6.2 step 3: a never-retransmitted segment was delivered below data
    /// delivered before it.
    pub fn on_reordering(&mut self) {
        self.reordering_seen = true;
    }

    /// RFC 8985 §6.2 step 4, on an ACK carrying a D-SACK: the reordering window widens by one
    /// step, once per round trip (until SND.UNA passes the SND.NXT of the widening).
    pub fn on_dsack(&mut self, snd_una: u64, snd_nxt: u64) {
        if self.dsack_round.is_some_and(|round| snd_una >= round) {
            self.dsack_round = None;
        }
        if self.dsack_round.is_none() {
            self.dsack_round = Some(snd_nxt);
            self.reo_wnd_mult += 1;
            self.reo_wnd_persist = REO_WND_PERSIST_RECOVERIES;
        }
    }

    /// RFC 8985 §6.2 step 4: a recovery ended; 16 recoveries without D-SACK narrow the
    /// window back.
    pub fn on_recovery_exit(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
    }

    /// RFC 8985 §6.2 step 4 RACK.reo_wnd: none while no reordering was seen and the sender is
    /// in recovery or DupThresh segments are SACKed (then a hole below SACKed data is lost as
    /// soon as a later segment's round trip has passed, as with DupThresh); otherwise a
    /// quarter of the minimum RTT per step, at most SRTT.
    pub fn reo_wnd_ns(&self, in_recovery: bool, dupthresh_sacked: bool, min_rtt_ns: u64, srtt_ns: u64) -> u64 {
        if !self.reordering_seen && (in_recovery || dupthresh_sacked) {
            return 0;
        }
        (min_rtt_ns / 4).saturating_mul(self.reo_wnd_mult as u64).min(srtt_ns)
    }

    /// What loss detection compares against: the latest delivered transmission, and how long
    /// after its own transmission an earlier-sent segment is lost (RACK.rtt + reo_wnd).
    pub fn threshold(&self, reo_wnd_ns: u64) -> Option<(Transmission, u64)> {
        self.latest.map(|latest| (latest, self.rtt_ns + reo_wnd_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn tx(sent_ms: u64, sent_order: u64) -> Transmission {
        Transmission { sent_ns: sent_ms * MS, sent_order }
    }

    #[test]
    fn the_most_recently_sent_delivery_sets_rack_rtt() {
        let mut rack = Rack::default();
        rack.on_delivered(tx(10, 200), false, 60 * MS, 40 * MS, None);
        assert_eq!(rack.threshold(0), Some((tx(10, 200), 50 * MS)));
        // Delivered later but sent earlier: RACK.xmit_ts does not go back.
        rack.on_delivered(tx(5, 100), false, 70 * MS, 40 * MS, None);
        assert_eq!(rack.threshold(0), Some((tx(10, 200), 50 * MS)));
        // Same send time, later in the order of sending: sent after.
        rack.on_delivered(tx(10, 300), false, 80 * MS, 40 * MS, None);
        assert_eq!(rack.threshold(MS), Some((tx(10, 300), 71 * MS)));
        // A retransmission "delivered" within min RTT is its original's delivery: skipped.
        rack.on_delivered(tx(75, 100), true, 80 * MS, 40 * MS, None);
        assert_eq!(rack.threshold(0), Some((tx(10, 300), 70 * MS)));
        // So is one whose ACK echoes the timestamp of a transmission before it.
        rack.on_delivered(tx(75, 100), true, 120 * MS, 40 * MS, Some(74));
        assert_eq!(rack.threshold(0), Some((tx(10, 300), 70 * MS)));
        rack.on_delivered(tx(75, 100), true, 120 * MS, 40 * MS, Some(75));
        assert_eq!(rack.threshold(0), Some((tx(75, 100), 45 * MS)));
    }

    #[test]
    fn the_reordering_window_follows_rfc_8985_step_4() {
        let mut rack = Rack::default();
        let (min_rtt, srtt) = (40 * MS, 45 * MS);
        assert_eq!(rack.reo_wnd_ns(false, false, min_rtt, srtt), 10 * MS, "min_RTT / 4");
        assert_eq!(rack.reo_wnd_ns(true, false, min_rtt, srtt), 0, "in recovery, no reordering seen");
        assert_eq!(rack.reo_wnd_ns(false, true, min_rtt, srtt), 0, "DupThresh SACKed, no reordering seen");
        rack.on_reordering();
        assert_eq!(rack.reo_wnd_ns(true, true, min_rtt, srtt), 10 * MS);
        // D-SACKs widen it once per round trip, up to SRTT.
        rack.on_dsack(1_000, 5_000);
        rack.on_dsack(2_000, 6_000);
        assert_eq!(rack.reo_wnd_ns(false, false, min_rtt, srtt), 20 * MS, "one step per round trip");
        rack.on_dsack(5_000, 9_000);
        rack.on_dsack(9_000, 9_500);
        rack.on_dsack(9_500, 9_900);
        assert_eq!(rack.reo_wnd_ns(false, false, min_rtt, srtt), srtt, "capped at SRTT");
        // Sixteen recoveries without D-SACK narrow it back to one step.
        for _ in 0..15 {
            rack.on_recovery_exit();
        }
        assert_eq!(rack.reo_wnd_ns(false, false, min_rtt, srtt), srtt);
        rack.on_recovery_exit();
        assert_eq!(rack.reo_wnd_ns(false, false, min_rtt, srtt), 10 * MS);
    }
}
