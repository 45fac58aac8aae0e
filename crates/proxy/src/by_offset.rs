//! Values keyed by stream offset, kept sorted in a deque. The proxy's per-flow logs grow at
//! the back (data arrives and is forwarded in order) and shrink at the front (cumulative
//! ACKs); only a hole refilled after a loss lands in the middle. Binary search over a
//! contiguous deque is several times cheaper here than a tree with one node per segment.

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct ByOffset<V> {
    items: VecDeque<(u64, V)>,
}

impl<V> Default for ByOffset<V> {
    fn default() -> Self {
        ByOffset { items: VecDeque::new() }
    }
}

impl<V> ByOffset<V> {
    /// Index of the first item at or after `offset`. Most lookups are at the ends (new
    /// data at the back, cumulative ACKs at the front): those skip the binary search.
    fn index_from(&self, offset: u64) -> usize {
        match (self.items.front(), self.items.back()) {
            (Some(&(first, _)), _) if offset <= first => 0,
            (_, Some(&(last, _))) if offset > last => self.items.len(),
            (None, _) | (_, None) => 0,
            _ => self.items.partition_point(|&(start, _)| start < offset),
        }
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
    pub fn from_mut(&mut self, offset: u64) -> impl Iterator<Item = (u64, &mut V)> {
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
        self.items.pop_front()
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
}
