//! Items waiting for a time: packets on a link, packets a fault injector holds back.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A queue that gives its items back earliest first; items due at the same time come back in
/// the order they were pushed, so every run of a driver is deterministic.
pub(crate) struct TimedQueue<T> {
    heap: BinaryHeap<Reverse<Timed<T>>>,
    pushed: u64,
}

impl<T> TimedQueue<T> {
    pub(crate) fn new() -> TimedQueue<T> {
        TimedQueue { heap: BinaryHeap::new(), pushed: 0 }
    }

    pub(crate) fn push(&mut self, at_ns: u64, item: T) {
        self.heap.push(Reverse(Timed { at_ns, order: self.pushed, item }));
        self.pushed += 1;
    }

    /// When the earliest item is due.
    pub(crate) fn next_deadline_ns(&self) -> Option<u64> {
        self.heap.peek().map(|t| t.0.at_ns)
    }

    /// The earliest item, if it is due at or before `now_ns`.
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<T> {
        if self.next_deadline_ns()? > now_ns {
            return None;
        }
        self.heap.pop().map(|t| t.0.item)
    }
}

impl<T> Default for TimedQueue<T> {
    fn default() -> Self {
        TimedQueue::new()
    }
}

struct Timed<T> {
    at_ns: u64,
    order: u64,
    item: T,
}

impl<T> Timed<T> {
    fn key(&self) -> (u64, u64) {
        (self.at_ns, self.order)
    }
}

impl<T> PartialEq for Timed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Timed<T> {}

impl<T> PartialOrd for Timed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Timed<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_equal_times_in_push_order_and_nothing_before_its_time() {
        let mut q = TimedQueue::new();
        for (at_ns, item) in [(30, 'a'), (10, 'b'), (30, 'c'), (20, 'd'), (10, 'e')] {
            q.push(at_ns, item);
        }
        assert_eq!(q.next_deadline_ns(), Some(10));
        assert_eq!(q.pop_due(9), None, "nothing is due before 10");
        let mut due = Vec::new();
        while let Some(item) = q.pop_due(30) {
            due.push(item);
        }
        assert_eq!(due, ['b', 'e', 'd', 'a', 'c']);
        assert_eq!(q.next_deadline_ns(), None);
    }
}
