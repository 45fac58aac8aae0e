//! BBR's long-term bandwidth, `lt_bw` (Linux tcp_bbr.c, `bbr_lt_bw_sampling`): detection of
//! a token-bucket policer. Two consecutive sampling intervals of 4–16 rounds, each ending in
//! a loss with at least 20% of the delivered data lost, whose delivery rates agree within
//! 1/8 (or 4 kbit/s), say the path is policed: BBR then uses their mean rate with a pacing
//! gain of 1 for 48 rounds, instead of probing into the policer's drops.

/// `bbr_lt_intvl_min_rtts`: an interval lasts at least 4 rounds, at most 4 × 4.
const MIN_ROUNDS: u32 = 4;
/// `bbr_lt_loss_thresh` = 50/256 (≈ 20%): lost / delivered of a lossy interval.
const LOSS_THRESHOLD_OF_256: u64 = 50;
/// `bbr_lt_bw_ratio` = 1/8 and `bbr_lt_bw_diff` = 4 kbit/s: two intervals' rates agree
/// when they differ by at most an eighth, or by that little.
const AGREEING_FRACTION_DENOMINATOR: u64 = 8;
const AGREEING_DIFFERENCE_BPS: u64 = 4000;
/// `bbr_lt_bw_max_rtts`: rounds of PROBE_BW spent on the long-term rate.
const IN_USE_ROUNDS: u32 = 48;

/// What the ACK's rate sample and the connection's counters say, in the units BBR keeps.
#[derive(Clone, Copy, Debug)]
pub struct Observation {
    pub round_start: bool,
    /// This ACK marked data lost (`rs->losses`).
    pub losses: bool,
    pub app_limited: bool,
    /// The last delivery's time and the connection's totals.
    pub delivered_at_ns: u64,
    pub delivered_total_bytes: u64,
    pub lost_total_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct LongTermBandwidth {
    /// The previous interval's rate, or (in use) the policed rate; 0 = none.
    bw_bps: u64,
    in_use: bool,
    sampling: bool,
    /// Start of the current interval: delivery time (ms, as Linux keeps it) and totals.
    start_ms: u64,
    start_delivered_bytes: u64,
    start_lost_bytes: u64,
    rounds: u32,
}

impl LongTermBandwidth {
    /// The policed rate while it is in use.
    pub fn policed_bps(&self) -> Option<u64> {
        self.in_use.then_some(self.bw_bps)
    }

    /// One observation; `in_probe_bw` says whether rounds count toward the end of using the
    /// policed rate. Returns true when that use ends, so gain cycling starts again.
    pub fn observe(&mut self, o: &Observation, in_probe_bw: bool) -> bool {
        if self.in_use {
            if in_probe_bw && o.round_start {
                self.rounds += 1;
                if self.rounds >= IN_USE_ROUNDS {
                    self.reset(o);
                    return true;
                }
            }
            return false;
        }
        // The first loss starts sampling: a policer's bucket is empty from then on.
        if !self.sampling {
            if !o.losses {
                return false;
            }
            self.start_interval(o);
            self.sampling = true;
        }
        // Running out of data would underestimate the rate.
        if o.app_limited {
            self.reset(o);
            return false;
        }
        self.rounds += o.round_start as u32;
        if self.rounds < MIN_ROUNDS {
            return false;
        }
        if self.rounds > 4 * MIN_ROUNDS {
            self.reset(o);
            return false;
        }
        // An interval ends on a loss, with enough of the data lost.
        if !o.losses {
            return false;
        }
        let lost_bytes = o.lost_total_bytes - self.start_lost_bytes;
        let delivered_bytes = o.delivered_total_bytes - self.start_delivered_bytes;
        if delivered_bytes == 0 || lost_bytes * 256 < LOSS_THRESHOLD_OF_256 * delivered_bytes {
            return false;
        }
        let interval_ms = (o.delivered_at_ns / 1_000_000).saturating_sub(self.start_ms);
        if interval_ms < 1 {
            return false;
        }
        self.interval_done(delivered_bytes * 8 * 1000 / interval_ms, o);
        false
    }

    /// Forget everything, as on an undo.
    pub fn reset(&mut self, o: &Observation) {
        self.bw_bps = 0;
        self.in_use = false;
        self.sampling = false;
        self.start_interval(o);
    }

    fn start_interval(&mut self, o: &Observation) {
        self.start_ms = o.delivered_at_ns / 1_000_000;
        self.start_delivered_bytes = o.delivered_total_bytes;
        self.start_lost_bytes = o.lost_total_bytes;
        self.rounds = 0;
    }

    fn interval_done(&mut self, bw_bps: u64, o: &Observation) {
        if self.bw_bps > 0 {
            let difference_bps = bw_bps.abs_diff(self.bw_bps);
            // The difference as a pacing rate (with BBR's 1% margin) against 4 kbit/s.
            let agree = difference_bps * AGREEING_FRACTION_DENOMINATOR <= self.bw_bps
                || (difference_bps as f64 * super::PACING_MARGIN) as u64 <= AGREEING_DIFFERENCE_BPS;
            if agree {
                self.bw_bps = (bw_bps + self.bw_bps) / 2;
                self.in_use = true;
                self.rounds = 0;
                return;
            }
        }
        self.bw_bps = bw_bps;
        self.start_interval(o);
    }
}

#[cfg(test)]
mod tests {
    use super::{LongTermBandwidth, Observation};

    const MS: u64 = 1_000_000;

    /// Rounds of 10 ms delivering `delivered(round)` bytes each and losing `lost_percent` of
    /// that; whether the policed rate is in use after each round.
    fn run(lt: &mut LongTermBandwidth, rounds: u64, lost_percent: u64, delivered_in: impl Fn(u64) -> u64) -> Vec<bool> {
        let (mut delivered, mut lost) = (0, 0);
        (1..=rounds)
            .map(|r| {
                delivered += delivered_in(r);
                lost += delivered_in(r) * lost_percent / 100;
                let o = Observation {
                    round_start: true,
                    losses: lost_percent > 0,
                    app_limited: false,
                    delivered_at_ns: r * 10 * MS,
                    delivered_total_bytes: delivered,
                    lost_total_bytes: lost,
                };
                lt.observe(&o, true);
                lt.policed_bps().is_some()
            })
            .collect()
    }

    #[test]
    fn two_lossy_intervals_at_one_rate_are_a_policer() {
        let mut lt = LongTermBandwidth::default();
        // 100 kB per 10 ms round, 25% lost: sampling starts at round 1 (its first round),
        // the first interval ends at round 4, the second at round 8, whose rate agrees and
        // puts the policed rate in use.
        let in_use = run(&mut lt, 9, 25, |_| 100_000);
        assert_eq!(in_use.iter().position(|&u| u), Some(7), "{in_use:?}");
        assert_eq!(lt.policed_bps(), Some(80_000_000));
    }

    #[test]
    fn losses_under_a_fifth_or_rates_that_disagree_are_no_policer() {
        let mut lt = LongTermBandwidth::default();
        assert!(!run(&mut lt, 40, 15, |_| 100_000).contains(&true), "15% lost");
        let mut lt = LongTermBandwidth::default();
        // The rate doubles every 4 rounds: no two intervals agree within 1/8.
        assert!(!run(&mut lt, 40, 50, |r| 100_000 << (r / 4)).contains(&true));
    }

    #[test]
    fn the_policed_rate_is_used_for_48_rounds_of_probe_bw() {
        let mut lt = LongTermBandwidth::default();
        run(&mut lt, 8, 25, |_| 100_000);
        let o = Observation {
            round_start: true,
            losses: false,
            app_limited: false,
            delivered_at_ns: 0,
            delivered_total_bytes: 0,
            lost_total_bytes: 0,
        };
        let ended: Vec<bool> = (0..48).map(|_| lt.observe(&o, true)).collect();
        assert_eq!(ended.iter().position(|&e| e), Some(47));
        assert_eq!(lt.policed_bps(), None);
    }
}
