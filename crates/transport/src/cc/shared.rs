//! State shared by the subflows of one MP-TCP connection, for coupled congestion
//! controls: RFC 6356 §3 (LIA) computes each subflow's increase from every subflow's
//! cwnd_i and rtt_i, and OLIA and BALIA read the same quantities. Each subflow's algorithm
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
        let view = Some(SubflowView { cwnd_bytes: init.initial_cwnd_bytes, srtt_ns: 0 });
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

    const INIT: CcInit = CcInit { mss_bytes: 1000, initial_cwnd_bytes: 10_000 };

    #[test]
    fn members_see_each_other_and_leave_on_drop() {
        let set = Rc::new(RefCell::new(SubflowSet::default()));
        let a = SubflowHandle::join(&set, &INIT);
        let b = SubflowHandle::join(&set, &INIT);
        assert_ne!(a.id(), b.id());
        a.publish(SubflowView { cwnd_bytes: 30_000, srtt_ns: 20_000_000 });
        b.publish(SubflowView { cwnd_bytes: 5_000, srtt_ns: 80_000_000 });
        let seen_by_b: Vec<_> = b.subflows().iter().collect();
        assert_eq!(seen_by_b[a.id()], (a.id(), SubflowView { cwnd_bytes: 30_000, srtt_ns: 20_000_000 }));
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
