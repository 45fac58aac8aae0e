//! Full-slot TDMA: the whole slot goes to one UE, taking turns in UE order;
//! what that UE cannot fill stays unused (the point of this variant is to
//! mimic a time-slotted MAC).

use super::{Candidate, Grant, Scheduler};

#[derive(Debug, Default)]
pub struct Tdma {
    last: Option<usize>,
}

impl Scheduler for Tdma {
    fn allocate(&mut self, _now_ns: u64, share: f64, candidates: &[Candidate], grants: &mut Vec<Grant>) {
        let next = match self.last {
            Some(last) => candidates.iter().find(|c| c.ue > last).unwrap_or(&candidates[0]),
            None => &candidates[0],
        };
        self.last = Some(next.ue);
        grants.push(Grant { ue: next.ue, share });
    }

    fn remove_ue(&mut self, position: usize) {
        // Keep the turn: whoever came after the last served UE still comes next.
        self.last = self.last.and_then(|l| if l >= position { l.checked_sub(1) } else { Some(l) });
    }
}
