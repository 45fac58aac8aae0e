//! Round robin in the frequency domain: every candidate gets an equal share of
//! the slot; one that needs less takes only what it needs and the rest is
//! split among the others (water-filling), so a UE with two ACKs queued does
//! not waste half a slot.

use super::{Candidate, Grant, Scheduler};

#[derive(Debug, Default)]
pub struct RoundRobin {
    /// Candidate indices sorted by need; reused every slot.
    order: Vec<usize>,
}

impl Scheduler for RoundRobin {
    fn allocate(&mut self, _now_ns: u64, share: f64, candidates: &[Candidate], grants: &mut Vec<Grant>) {
        self.order.clear();
        self.order.extend(0..candidates.len());
        // Smallest needs first; the sort is stable, so ties stay in UE order.
        self.order.sort_by(|&a, &b| candidates[a].need_share.total_cmp(&candidates[b].need_share));
        let mut left = share;
        let n = self.order.len();
        for (k, &i) in self.order.iter().enumerate() {
            let c = &candidates[i];
            let s = c.need_share.min(left / (n - k) as f64);
            grants.push(Grant { ue: c.ue, share: s });
            left -= s;
        }
    }
}
