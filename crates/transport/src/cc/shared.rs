//! State shared by the subflows of one MP-TCP connection, for coupled congestion
//! controls: RFC 6356 §3 (LIA) computes each subflow's increase from every subflow's
//! cwnd_i and rtt_i, BALIA from the rates x_r = w_r/τ_r derived from them, and OLIA also
//! from each path's ℓ_r (bytes acknowledged between losses). Each subflow's algorithm
//! publishes its own figures through its `SubflowHandle` and reads everyone's through it.
//!
//! Single-threaded by design (a model runs inside one driver): `Rc<RefCell<_>>`, borrowed
//! only for the duration of one `publish` or one read.

use std::cell::{Ref, RefCell};
use std::rc::Rc;

use super::CcInit;

/// What one subflow shows the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowView {
    pub cwnd_bytes: u64,
    /// Smoothed RTT (RFC 6298); 0 until the subflow has a sample.
    pub srtt_ns: u64,
    /// OLIA's ℓ_1r: bytes acknowledged between the last two congestion events (0 before
    /// the second).
    pub acked_between_losses_bytes: u64,
    /// OLIA's ℓ_2r: bytes acknowledged since the last congestion event (since the start
    /// before the first).
    pub acked_since_loss_bytes: u64,
}

impl SubflowView {
    /// The RTT in seconds: rtt_i of RFC 6356, τ_r of BALIA.
    pub fn rtt_s(&self) -> f64 {
        self.srtt_ns as f64 * 1e-9
    }

    /// cwnd_i/rtt_i of RFC 6356, the rate x_r = w_r/τ_r of BALIA, in bytes per second.
    pub fn rate_bytes_per_s(&self) -> f64 {
        self.cwnd_bytes as f64 / self.rtt_s()
    }

    /// OLIA's ℓ_r = max(ℓ_1r, ℓ_2r): the recent inter-loss distance, or the distance since
    /// the last loss once that is longer (so a path that stopped losing is credited).
    pub fn inter_loss_bytes(&self) -> u64 {
        self.acked_between_losses_bytes.max(self.acked_since_loss_bytes)
    }
}

/// The live subflows of one connection, by id.
#[derive(Debug, Default)]
pub struct SubflowSet {
    /// Indexed by subflow id; `None` once that subflow's algorithm was dropped (the slot
    /// is reused by the next subflow built).
    slots: Vec<Option<SubflowView>>,
}

impl SubflowSet {
    /// Every live subflow as (id, view), in id order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, SubflowView)> + '_ {
        self.slots.iter().enumerate().filter_map(|(id, slot)| slot.map(|view| (id, view)))
    }

    /// Σ cwnd_i over the live subflows (the denominator of RFC 6356's alpha and increase).
    pub fn total_cwnd_bytes(&self) -> u64 {
        self.iter().map(|(_, view)| view.cwnd_bytes).sum()
    }
}

/// One subflow's membership in a `SubflowSet`; leaving is dropping it.
pub struct SubflowHandle {
    set: Rc<RefCell<SubflowSet>>,
    id: usize,
}

impl SubflowHandle {
    /// Joins `set` with the initial window of `init` and no RTT yet.
    pub(super) fn join(set: &Rc<RefCell<SubflowSet>>, init: &CcInit) -> SubflowHandle {
        let view = Some(SubflowView { cwnd_bytes: init.initial_cwnd_bytes, ..SubflowView::default() });
        let mut members = set.borrow_mut();
        let id = match members.slots.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                members.slots.push(None);
                members.slots.len() - 1
            }
        };
        members.slots[id] = view;
        SubflowHandle { set: Rc::clone(set), id }
    }

    /// This subflow's id in the set (stable while the handle lives).
    pub fn id(&self) -> usize {
        self.id
    }

    /// Makes this subflow's current figures visible to the others.
    pub fn publish(&self, view: SubflowView) {
        self.set.borrow_mut().slots[self.id] = Some(view);
    }

    /// Every live subflow, this one included. Drop the guard before the next `publish`.
    pub fn subflows(&self) -> Ref<'_, SubflowSet> {
        self.set.borrow()
    }
}

impl Drop for SubflowHandle {
    fn drop(&mut self) {
        self.set.borrow_mut().slots[self.id] = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CubicVariant, HystartMode};

    const INIT: CcInit = CcInit { mss_bytes: 1000, initial_cwnd_bytes: 10_000, hystart: HystartMode::Off, cubic: CubicVariant::Linux };

    #[test]
    fn members_see_each_other_and_leave_on_drop() {
        let set = Rc::new(RefCell::new(SubflowSet::default()));
        let a = SubflowHandle::join(&set, &INIT);
        let b = SubflowHandle::join(&set, &INIT);
        assert_ne!(a.id(), b.id());
        let a_view = SubflowView { cwnd_bytes: 30_000, srtt_ns: 20_000_000, ..SubflowView::default() };
        a.publish(a_view);
        b.publish(SubflowView { cwnd_bytes: 5_000, srtt_ns: 80_000_000, ..SubflowView::default() });
        let seen_by_b: Vec<_> = b.subflows().iter().collect();
        assert_eq!(seen_by_b[a.id()], (a.id(), a_view));
        assert_eq!(a.subflows().total_cwnd_bytes(), 35_000);
        let a_id = a.id();
        drop(a);
        assert_eq!(b.subflows().total_cwnd_bytes(), 5_000);
        // The vacated slot is reused, so a connection that replaces subflows does not grow.
        let c = SubflowHandle::join(&set, &INIT);
        assert_eq!(c.id(), a_id);
        assert_eq!(c.subflows().total_cwnd_bytes(), 15_000);
    }
}
