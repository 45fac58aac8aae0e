//! BBR's estimate of ACK aggregation, `extra_acked` (Linux tcp_bbr.c since 4.20,
//! `bbr_update_ack_aggregation`; draft-cardwell-iccrg-bbr-congestion-control-02 §4.6.4.4).
//! Where ACKs come back in bursts (an LTE uplink grants a slot only every few ms, Wi-Fi
//! aggregates frames), the data acknowledged in an "epoch" runs ahead of what the bandwidth
//! estimate says could have been delivered since the epoch began. The largest such excess
//! over the last 5–10 rounds is added to BBR's cwnd target so that sending does not stop in
//! the silences between ACK bursts.

/// `bbr_extra_acked_win_rtts`: each of the two slots covers 5 rounds.
const WINDOW_ROUNDS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh` = 2^20 segments: an epoch that acknowledged this much
/// is old and starts again.
const EPOCH_RESET_SEGMENTS: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, Default)]
pub struct AckAggregation {
    /// When the current epoch began (a delivery time) and what it has acknowledged since.
    epoch_start_ns: u64,
    epoch_acked_bytes: u64,
    /// Rounds into the current slot, the slot being filled, and each slot's maximum.
    window_rounds: u32,
    slot: usize,
    extra_acked_bytes: [u64; 2],
}

impl AckAggregation {
    /// An ACK that delivered `acked_bytes` at `now_ns`, with the bandwidth estimate `bw_bps`
    /// (payload) and the current `cwnd_bytes`, which bounds one sample.
    pub fn on_delivery(&mut self, round_start: bool, now_ns: u64, acked_bytes: u64, bw_bps: u64, cwnd_bytes: u64, mss_bytes: u64) {
        if round_start {
            self.window_rounds = (self.window_rounds + 1).min(0x1F);
            if self.window_rounds >= WINDOW_ROUNDS {
                self.window_rounds = 0;
                self.slot ^= 1;
                self.extra_acked_bytes[self.slot] = 0;
            }
        }
        let epoch_ns = now_ns.saturating_sub(self.epoch_start_ns);
        let mut expected_bytes = (bw_bps as u128 * epoch_ns as u128 / 8_000_000_000) as u64;
        // The ACKs fell behind the estimated rate (no aggregation now), or the epoch is old.
        if self.epoch_acked_bytes <= expected_bytes || self.epoch_acked_bytes + acked_bytes >= EPOCH_RESET_SEGMENTS * mss_bytes {
            self.epoch_acked_bytes = 0;
            self.epoch_start_ns = now_ns;
            expected_bytes = 0;
        }
        self.epoch_acked_bytes += acked_bytes;
        let extra_bytes = (self.epoch_acked_bytes - expected_bytes).min(cwnd_bytes);
        let slot = &mut self.extra_acked_bytes[self.slot];
        *slot = (*slot).max(extra_bytes);
    }

    /// `bbr_extra_acked`: the larger of the two slots, the excess of the last 5–10 rounds.
    pub fn extra_acked_bytes(&self) -> u64 {
        self.extra_acked_bytes[0].max(self.extra_acked_bytes[1])
    }
}

#[cfg(test)]
mod tests {
    use super::AckAggregation;

    const MSS: u64 = 1000;
    const MS: u64 = 1_000_000;

    #[test]
    fn acks_at_the_estimated_rate_show_no_aggregation() {
        // 8 Mbit/s = 1000 bytes per ms: one segment acknowledged every ms is what is expected.
        let mut agg = AckAggregation::default();
        for k in 1..=100 {
            agg.on_delivery(k % 10 == 0, k * MS, MSS, 8_000_000, 100 * MSS, MSS);
        }
        // Each epoch restarts as soon as the ACKs are not ahead: at most one segment extra.
        assert!(agg.extra_acked_bytes() <= MSS, "{}", agg.extra_acked_bytes());
    }

    #[test]
    fn a_burst_of_acks_after_a_silence_is_the_excess_over_the_rate() {
        // 8 Mbit/s; ACKs for 10 segments arrive together every 10 ms. The burst's first ACK
        // finds the epoch behind the rate and starts a new one, which expects nothing more
        // within the same instant: the whole burst is excess.
        let mut agg = AckAggregation::default();
        for burst in 1..=5u64 {
            for _ in 0..10 {
                agg.on_delivery(false, burst * 10 * MS, MSS, 8_000_000, 100 * MSS, MSS);
            }
        }
        assert_eq!(agg.extra_acked_bytes(), 10 * MSS, "the whole burst: its epoch began at its first ACK");
        // Bounded by cwnd.
        let mut small = AckAggregation::default();
        for _ in 0..10 {
            small.on_delivery(false, 10 * MS, MSS, 8_000_000, 4 * MSS, MSS);
        }
        assert_eq!(small.extra_acked_bytes(), 4 * MSS);
    }

    #[test]
    fn the_estimate_forgets_a_burst_after_two_windows_of_rounds() {
        let mut agg = AckAggregation::default();
        for _ in 0..10 {
            agg.on_delivery(false, 10 * MS, MSS, 8_000_000, 100 * MSS, MSS);
        }
        assert_eq!(agg.extra_acked_bytes(), 10 * MSS);
        // After a silence, rounds of ACKs at the estimated rate: after 5 rounds the other
        // slot is in use, after 10 the burst's slot is cleared.
        let mut now = 200 * MS;
        for round in 1..=10u64 {
            now += MS;
            agg.on_delivery(true, now, MSS, 8_000_000, 100 * MSS, MSS);
            let remembered = agg.extra_acked_bytes() == 10 * MSS;
            assert_eq!(remembered, round < 10, "round {round}");
        }
    }
}
