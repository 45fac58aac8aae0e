//! Proportional Rate Reduction (RFC 9937), the window of SACK-based fast recovery: instead of
//! dropping cwnd to ssthresh at once (RFC 6675 §5), which stops the sender until pipe falls
//! below it and then lets it burst, PRR spreads the reduction over the round trip — each ACK
//! lets out a share of the data it reports delivered, ssthresh/RecoverFS of it while pipe is
//! above ssthresh — and once pipe is at or below ssthresh, rebuilds toward it no faster than
//! slow start (the slow-start reduction bound on ACKs that advance SND.UNA without a new loss,
//! as Linux's `tcp_cwnd_reduction`, otherwise the conservative bound). The first ACK of
//! recovery always lets the fast retransmission go (RFC 9937: "force a fast retransmit").
//!
//! All quantities are bytes; Linux counts the same in segments.

#[derive(Clone, Copy, Debug)]
pub(crate) struct Prr {
    /// RecoverFS: the flight size when recovery began (SND.NXT − SND.UNA).
    recover_fs_bytes: u64,
    /// prr_delivered and prr_out: bytes the peer reported delivered, and bytes sent, since
    /// recovery began.
    delivered_bytes: u64,
    out_bytes: u64,
    /// pipe + sndcnt after the latest ACK: the window the sender may fill (Linux's cwnd).
    window_bytes: u64,
}

impl Prr {
    pub fn new(recover_fs_bytes: u64) -> Prr {
        Prr { recover_fs_bytes: recover_fs_bytes.max(1), delivered_bytes: 0, out_bytes: 0, window_bytes: 0 }
    }

    /// A reduction that does not begin on an ACK reporting delivered data (an ECN echo may
    /// come on a duplicate ACK): until one arrives, the window is what is in flight, so the
    /// sender neither stops nor bursts.
    pub fn starting_at(recover_fs_bytes: u64, window_bytes: u64) -> Prr {
        Prr { window_bytes, ..Prr::new(recover_fs_bytes) }
    }

    pub fn window_bytes(&self) -> u64 {
        self.window_bytes
    }

    /// Data sent (new or retransmitted) while in recovery.
    pub fn on_sent(&mut self, bytes: u64) {
        self.out_bytes += bytes;
    }

    /// An ACK during recovery (the one that began it included): `delivered_bytes` newly
    /// acknowledged or SACKed (DeliveredData), `pipe_bytes` after the ACK (RFC 6675 SetPipe),
    /// `safe` when it advanced SND.UNA and revealed no new loss.
    pub fn on_ack(&mut self, delivered_bytes: u64, pipe_bytes: u64, ssthresh_bytes: u64, safe: bool, mss_bytes: u64) {
        if delivered_bytes == 0 {
            return;
        }
        self.delivered_bytes += delivered_bytes;
        let sndcnt = if pipe_bytes > ssthresh_bytes {
            // Proportional part: sndcnt = ⌈prr_delivered · ssthresh / RecoverFS⌉ − prr_out.
            let allowed = (self.delivered_bytes as u128 * ssthresh_bytes as u128).div_ceil(self.recover_fs_bytes as u128) as u64;
            allowed.saturating_sub(self.out_bytes)
        } else {
            // Reduction bound: what was delivered and not yet sent again (at least this
            // ACK's delivery), one more segment on a safe ACK, never past ssthresh.
            let mut sndcnt = self.delivered_bytes.saturating_sub(self.out_bytes).max(delivered_bytes);
            if safe {
                sndcnt += mss_bytes;
            }
            sndcnt.min(ssthresh_bytes - pipe_bytes)
        };
        let sndcnt = if self.out_bytes == 0 { sndcnt.max(mss_bytes) } else { sndcnt };
        self.window_bytes = pipe_bytes + sndcnt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn the_first_ack_lets_the_fast_retransmission_go_whatever_pipe_is() {
        // RecoverFS 20 segments, ssthresh 14 (β = 0.7), one segment lost: pipe 19 > 14. The
        // proportional share of one delivered segment is ⌈14/20⌉ = 1 segment: allowed anyway.
        let mut prr = Prr::new(20 * MSS);
        prr.on_ack(MSS, 18 * MSS, 14 * MSS, false, MSS);
        assert_eq!(prr.window_bytes(), 19 * MSS);
        // With a tiny delivery the forced segment still goes.
        let mut prr = Prr::new(20 * MSS);
        prr.on_ack(100, 18 * MSS, 14 * MSS, false, MSS);
        assert_eq!(prr.window_bytes(), 19 * MSS);
    }

    #[test]
    fn above_ssthresh_the_sending_rate_is_ssthresh_over_recover_fs_of_the_delivery_rate() {
        // RFC 9937's example in spirit: RecoverFS 20, ssthresh 10 (β = 0.5): one segment out per
        // two delivered, whatever the ACKs' grouping.
        let mut prr = Prr::new(20 * MSS);
        let mut pipe = 19 * MSS;
        let mut sent = 0;
        for _ in 0..8 {
            pipe -= MSS;
            prr.on_ack(MSS, pipe, 10 * MSS, false, MSS);
            let sndcnt = prr.window_bytes().saturating_sub(pipe);
            prr.on_sent(sndcnt);
            pipe += sndcnt;
            sent += sndcnt;
        }
        assert_eq!(sent, 4 * MSS, "8 delivered, 4 sent");
    }

    #[test]
    fn at_or_below_ssthresh_it_rebuilds_no_faster_than_slow_start() {
        let mut prr = Prr::new(20 * MSS);
        prr.on_ack(MSS, 19 * MSS, 10 * MSS, false, MSS);
        prr.on_sent(MSS);
        // A burst of losses leaves pipe at 5 segments, below ssthresh 10. A safe ACK of one
        // segment: delivered − out = 1 segment, plus one (slow start): 2 segments, not 5.
        prr.on_ack(MSS, 5 * MSS, 10 * MSS, true, MSS);
        assert_eq!(prr.window_bytes(), 7 * MSS);
        prr.on_sent(2 * MSS);
        // An ACK that reveals a loss is not safe: only the delivery itself is sent again.
        prr.on_ack(MSS, 6 * MSS, 10 * MSS, false, MSS);
        assert_eq!(prr.window_bytes(), 7 * MSS);
        // Never past ssthresh.
        prr.on_sent(MSS);
        prr.on_ack(8 * MSS, 9 * MSS, 10 * MSS, true, MSS);
        assert_eq!(prr.window_bytes(), 10 * MSS);
    }

    #[test]
    fn an_ack_that_delivers_nothing_changes_nothing() {
        let mut prr = Prr::new(20 * MSS);
        prr.on_ack(MSS, 19 * MSS, 14 * MSS, false, MSS);
        let window = prr.window_bytes();
        prr.on_ack(0, 3 * MSS, 14 * MSS, true, MSS);
        assert_eq!(prr.window_bytes(), window);
    }
}
