//! Values keyed by stream offset, kept sorted in a deque. The proxy's per-flow logs grow at
//! the back (data arrives and is forwarded in order) and shrink at the front (cumulative
//! ACKs); only a hole refilled after a loss lands in the middle. Binary search over a
//! contiguous deque is several times cheaper here than a tree with one node per segment.
//! Lookups in the middle are mostly near the previous one (the next segment to forward
//! follows the last one forwarded), so they search outward from it.

use std::cell::Cell;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct ByOffset<V> {
    items: VecDeque<(u64, V)>,
    /// Items popped from the front so far: `hint - popped` is an index into `items`.
    popped: usize,
    /// Where the last middle lookup landed, counted from the first item ever stored. Only
    /// a starting point: a stale hint costs a few more comparisons, never a wrong answer.
    hint: Cell<usize>,
}

impl<V> Default for ByOffset<V> {
    fn default() -> Self {
        ByOffset { items: VecDeque::new(), popped: 0, hint: Cell::new(0) }
    }
}

impl<V> ByOffset<V> {
    /// Index of the first item at or after `offset`. Most lookups are at the ends (new
    /// data at the back, cumulative ACKs at the front): those skip the search.
    fn index_from(&self, offset: u64) -> usize {
        match (self.items.front(), self.items.back()) {
            (Some(&(first, _)), _) if offset <= first => 0,
            (_, Some(&(last, _))) if offset > last => self.items.len(),
            (None, _) | (_, None) => 0,
            _ => {
                let i = self.search_near(offset, self.hint.get().wrapping_sub(self.popped).min(self.items.len() - 1));
                self.hint.set(self.popped.wrapping_add(i));
                i
            }
        }
    }

    /// Index of the first item at or after `offset` (which lies inside the deque), by
    /// galloping from `near` then bisecting: O(log distance) comparisons.
    fn search_near(&self, offset: u64, near: usize) -> usize {
        let below = |i: usize| self.items[i].0 < offset;
        // Find `lo < hi` with every item before `lo` below offset and `hi` not below.
        let (mut lo, mut hi) = if below(near) {
            let (mut lo, mut step) = (near + 1, 1);
            loop {
                let probe = near + step;
                if probe >= self.items.len() || !below(probe) {
                    break (lo, probe.min(self.items.len()));
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            let (mut hi, mut step) = (near, 1);
            loop {
                let Some(probe) = near.checked_sub(step) else { break (0, hi) };
                if below(probe) {
                    break (probe + 1, hi);
                }
                hi = probe;
                step *= 2;
            }
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Inserts (or replaces) the value at `offset`.
    pub fn insert(&mut self, offset: u64, value: V) {
        let i = self.index_from(offset);
        match self.items.get_mut(i) {
            Some(item) if item.0 == offset => item.1 = value,
            _ => self.items.insert(i, (offset, value)),
        }
    }

    pub fn get(&self, offset: u64) -> Option<&V> {
        self.items.get(self.index_from(offset)).filter(|(s, _)| *s == offset).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, offset: u64) -> Option<&mut V> {
        let i = self.index_from(offset);
        self.items.get_mut(i).filter(|(s, _)| *s == offset).map(|(_, v)| v)
    }

    /// The last item at or before `offset`.
    pub fn at_or_before(&self, offset: u64) -> Option<(u64, &V)> {
        let after = match self.items.back() {
            Some(&(last, _)) if last <= offset => self.items.len(),
            _ => self.items.partition_point(|&(start, _)| start <= offset),
        };
        after.checked_sub(1).map(|i| (self.items[i].0, &self.items[i].1))
    }

    /// Items from `offset` on, in order.
    pub fn from(&self, offset: u64) -> impl Iterator<Item = (u64, &V)> {
        self.items.range(self.index_from(offset)..).map(|(s, v)| (*s, v))
    }

    /// Items from `offset` on, in order, mutably.
    pub fn items_from_mut(&mut self, offset: u64) -> impl Iterator<Item = (u64, &mut V)> {
        let i = self.index_from(offset);
        self.items.range_mut(i..).map(|(s, v)| (*s, v))
    }

    pub fn first(&self) -> Option<(u64, &V)> {
        self.items.front().map(|(s, v)| (*s, v))
    }

    /// The first item, its offset mutable (for trimming the part below a cumulative ACK).
    pub fn first_mut(&mut self) -> Option<(&mut u64, &mut V)> {
        self.items.front_mut().map(|(s, v)| (s, v))
    }

    pub fn pop_first(&mut self) -> Option<(u64, V)> {
        let first = self.items.pop_front()?;
        self.popped = self.popped.wrapping_add(1);
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::ByOffset;

    #[test]
    fn sorted_whatever_the_insertion_order() {
        let mut m = ByOffset::default();
        for k in [30, 10, 50, 20, 40] {
            m.insert(k, k * 2);
        }
        m.insert(20, 0);
        assert_eq!(m.from(0).map(|(k, &v)| (k, v)).collect::<Vec<_>>(), [(10, 20), (20, 0), (30, 60), (40, 80), (50, 100)]);
        assert_eq!(m.from(25).next().map(|(k, _)| k), Some(30));
        assert_eq!(m.at_or_before(25).map(|(k, _)| k), Some(20));
        assert_eq!(m.at_or_before(5), None);
        assert_eq!((m.get(40), m.get(41)), (Some(&80), None));
        assert_eq!(m.pop_first(), Some((10, 20)));
        assert_eq!(m.first().map(|(k, _)| k), Some(20));
    }

    /// Every lookup agrees with a plain scan, whatever the previous lookup left as hint.
    #[test]
    fn lookups_from_any_hint_match_a_scan() {
        let mut m = ByOffset::default();
        for k in (0..200u64).map(|i| i * 10) {
            m.insert(k, ());
        }
        let mut keys: Vec<u64> = (0..200u64).map(|i| i * 10).collect();
        for round in 0..3 {
            for first in [5u64, 1995, 700, 705, 0, 10, 1990, 1000, 3, 1500, 1505, 20] {
                for offset in [first, first + 10, first.saturating_sub(7), first * 7 % 2000] {
                    let expected = keys.iter().position(|&k| k >= offset).unwrap_or(keys.len());
                    assert_eq!(m.index_from(offset), expected, "offset {offset}, round {round}");
                }
            }
            m.pop_first();
            keys.remove(0);
            m.insert(keys[50] + 1, ());
            keys.insert(51, keys[50] + 1);
        }
    }
}
