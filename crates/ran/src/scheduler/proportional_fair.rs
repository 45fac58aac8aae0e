//! Proportional fair (docs/models/ran.md#scheduler): rank UEs by instantaneous achievable rate
//! over their exponentially averaged served rate and give the slot to the
//! best, what it cannot use to the next, and so on. With one wideband SINR per
//! UE there is no frequency selectivity to exploit, so the best UE normally
//! takes the whole slot and PF converges to equal time shares.

use super::{Candidate, Grant, Scheduler, Served};

/// Averaging time constant of the served rate (docs/models/ran.md#scheduler).
pub const DEFAULT_TIME_CONSTANT_NS: u64 = 100_000_000;

/// Served-rate floor (bit/s) so a UE never served has a finite, large metric.
const MIN_AVG_BPS: f64 = 1.0;

#[derive(Debug)]
pub struct ProportionalFair {
    time_constant_ns: u64,
    /// Averaged served rate per UE id (bit/s).
    avg_bps: Vec<f64>,
    /// End of the last slot folded into the averages.
    averaged_to_ns: u64,
    /// (metric, candidate index), reused every slot.
    ranked: Vec<(f64, usize)>,
}

impl ProportionalFair {
    pub fn new(time_constant_ns: u64) -> Self {
        ProportionalFair { time_constant_ns, avg_bps: Vec::new(), averaged_to_ns: 0, ranked: Vec::new() }
    }
}

impl Scheduler for ProportionalFair {
    fn add_ue(&mut self) {
        self.avg_bps.push(0.0);
    }

    fn remove_ue(&mut self, position: usize) {
        self.avg_bps.remove(position);
    }

    fn allocate(&mut self, _now_ns: u64, share: f64, candidates: &[Candidate], grants: &mut Vec<Grant>) {
        self.ranked.clear();
        for (i, c) in candidates.iter().enumerate() {
            self.ranked.push((c.rate_bps / self.avg_bps[c.ue].max(MIN_AVG_BPS), i));
        }
        // Best metric first; ties (e.g. at start) go to the lower UE id.
        self.ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut left = share;
        for &(_, i) in &self.ranked {
            if left <= crate::SHARE_EPS {
                break;
            }
            let s = candidates[i].need_share.min(left);
            grants.push(Grant { ue: candidates[i].ue, share: s });
            left -= s;
        }
    }

    fn end_slot(&mut self, now_ns: u64, slot_ns: u64, served: &[Served]) {
        // Exponential average over time, not over calls, so slots the engine
        // skipped while the cell was idle still decay the averages.
        let end_ns = now_ns + slot_ns;
        let tau = self.time_constant_ns as f64;
        let decay = (-((end_ns - self.averaged_to_ns.min(now_ns)) as f64) / tau).exp();
        let weight = 1.0 - (-(slot_ns as f64) / tau).exp();
        self.avg_bps.iter_mut().for_each(|a| *a *= decay);
        let slot_s = slot_ns as f64 * 1e-9;
        for s in served {
            self.avg_bps[s.ue] += weight * s.bits as f64 / slot_s;
        }
        self.averaged_to_ns = end_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(ue: usize) -> Candidate {
        Candidate { ue, rate_bps: 1e9, need_share: 1.0 }
    }

    #[test]
    fn averages_follow_their_ue_when_an_earlier_one_leaves() {
        let mut pf = ProportionalFair::new(DEFAULT_TIME_CONSTANT_NS);
        (0..3).for_each(|_| pf.add_ue());
        // Position 1 has been served, 2 has not.
        pf.end_slot(0, 125_000, &[Served { ue: 1, bits: 1_000_000 }]);
        pf.remove_ue(0);
        let mut grants = Vec::new();
        pf.allocate(125_000, 1.0, &[candidate(0), candidate(1)], &mut grants);
        // The never-served UE (now at position 1) ranks first at equal rates.
        assert_eq!(grants, [Grant { ue: 1, share: 1.0 }]);
    }
}
