//! A small sorted set of disjoint byte ranges over unwrapped (u64) sequence numbers: the
//! SACKed ranges of the sender's scoreboard and the receiver's out-of-order queue.
//! Lookups are binary searches; ranges only merge, so a range set with h holes holds
//! h + 1 entries whatever the window size.

use std::collections::VecDeque;

/// Half-open `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Default)]
pub(crate) struct RangeSet {
    /// Sorted by start; neither overlapping nor touching.
    spans: VecDeque<Span>,
    covered_bytes: u64,
}

/// ceil(log2(n + 1)): the comparisons of a binary search over n items (for step counting).
pub(crate) fn search_steps(n: usize) -> u64 {
    (usize::BITS - n.leading_zeros()) as u64
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Bytes covered by all ranges.
    pub fn covered_bytes(&self) -> u64 {
        self.covered_bytes
    }

    pub fn last(&self) -> Option<Span> {
        self.spans.back().copied()
    }

    /// The i-th range counting from the highest (0 = highest).
    pub fn nth_from_top(&self, i: usize) -> Option<Span> {
        self.spans.len().checked_sub(i + 1).map(|k| self.spans[k])
    }

    /// Index of the first range that ends at or after `x` (it may contain or touch `x`).
    fn first_reaching(&self, x: u64) -> usize {
        self.spans.partition_point(|s| s.end < x)
    }

    /// The range containing `x`, if any.
    pub fn containing(&self, x: u64) -> Option<Span> {
        // Mostly asked with the set empty (no SACKed data) or `x` above every range.
        let last = self.spans.back()?;
        if last.end <= x {
            return None;
        }
        // Or in the highest range (the newest out-of-order data, the newest SACK block).
        if last.start <= x {
            return Some(*last);
        }
        let i = self.spans.partition_point(|s| s.end <= x);
        self.spans.get(i).copied().filter(|s| s.start <= x)
    }

    /// The smallest position >= `x` not covered by a range.
    pub fn skip_covered(&self, x: u64) -> u64 {
        self.containing(x).map_or(x, |s| s.end)
    }

    /// Start of the first range beginning after `x`.
    pub fn next_start_after(&self, x: u64) -> Option<u64> {
        let i = self.spans.partition_point(|s| s.start <= x);
        self.spans.get(i).map(|s| s.start)
    }

    /// The range `[start, end)` would become part of after `insert`, and how many existing
    /// ranges it would swallow.
    pub fn merged_bounds(&self, start: u64, end: u64) -> (Span, usize) {
        let (_, merged, swallowed) = self.bounds(start, end);
        (merged, swallowed)
    }

    /// `merged_bounds`, with the index of the first range swallowed (or of the insertion).
    fn bounds(&self, start: u64, end: u64) -> (usize, Span, usize) {
        let i = self.first_reaching(start);
        let mut merged = Span { start, end };
        let mut j = i;
        while let Some(s) = self.spans.get(j) {
            if s.start > end {
                break;
            }
            merged.start = merged.start.min(s.start);
            merged.end = merged.end.max(s.end);
            j += 1;
        }
        (i, merged, j - i)
    }

    /// Adds `[start, end)`, merging with overlapping or touching ranges. Returns the merged
    /// range and the number of bytes that were not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> (Span, u64) {
        if start >= end {
            return (Span { start, end }, 0);
        }
        // Most inserts are at the top: above every range, or reaching only the highest one
        // (in-order arrivals after a hole, SACK blocks that grow at their right edge).
        match self.spans.back_mut() {
            None => return self.push_top(Span { start, end }),
            Some(last) if start > last.end => return self.push_top(Span { start, end }),
            Some(last) if start >= last.start => {
                let grown = end.saturating_sub(last.end);
                last.end = last.end.max(end);
                self.covered_bytes += grown;
                return (*last, grown);
            }
            Some(_) => {}
        }
        let (i, merged, swallowed) = self.bounds(start, end);
        let old_bytes: u64 = self.spans.range(i..i + swallowed).map(|s| s.end - s.start).sum();
        let new_bytes = (merged.end - merged.start) - old_bytes;
        self.covered_bytes += new_bytes;
        if swallowed == 0 {
            self.spans.insert(i, merged);
        } else {
            self.spans[i] = merged;
            self.spans.drain(i + 1..i + swallowed);
        }
        (merged, new_bytes)
    }

    fn push_top(&mut self, span: Span) -> (Span, u64) {
        let bytes = span.end - span.start;
        self.covered_bytes += bytes;
        self.spans.push_back(span);
        (span, bytes)
    }

    /// Forgets everything below `x`.
    pub fn remove_below(&mut self, x: u64) {
        while let Some(front) = self.spans.front_mut() {
            if front.end <= x {
                self.covered_bytes -= front.end - front.start;
                self.spans.pop_front();
            } else {
                if front.start < x {
                    self.covered_bytes -= x - front.start;
                    front.start = x;
                }
                break;
            }
        }
    }

    /// Removes and returns the first range if it starts at or before `x`.
    pub fn pop_first_if_reaches(&mut self, x: u64) -> Option<Span> {
        let front = *self.spans.front()?;
        if front.start > x {
            return None;
        }
        self.covered_bytes -= front.end - front.start;
        self.spans.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(set: &RangeSet) -> Vec<(u64, u64)> {
        set.spans.iter().map(|s| (s.start, s.end)).collect()
    }

    #[test]
    fn insert_merges_overlapping_and_touching_ranges() {
        let mut set = RangeSet::default();
        assert_eq!(set.insert(10, 20).1, 10);
        assert_eq!(set.insert(30, 40).1, 10);
        assert_eq!(set.insert(50, 60).1, 10);
        assert_eq!(spans(&set), vec![(10, 20), (30, 40), (50, 60)]);
        // Touches (20) and overlaps (30..35): one range, 10 new bytes.
        let (merged, new_bytes) = set.insert(20, 35);
        assert_eq!((merged, new_bytes), (Span { start: 10, end: 40 }, 10));
        assert_eq!(spans(&set), vec![(10, 40), (50, 60)]);
        assert_eq!(set.covered_bytes(), 40);
        assert_eq!(set.insert(0, 100).1, 60);
        assert_eq!(spans(&set), vec![(0, 100)]);
    }

    #[test]
    fn inserts_and_lookups_agree_with_a_byte_map() {
        // Random inserts, mostly near the top as in a transfer, against a byte-by-byte model:
        // the fast paths at the top and the general one must give the same set.
        let mut set = RangeSet::default();
        let mut covered = vec![false; 4_000];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for step in 0..3_000u64 {
            let top = (step + 1).min(3_900);
            let start = top.saturating_sub(next(60));
            let end = (start + 1 + next(12)).min(4_000);
            let before = covered.iter().filter(|&&c| c).count() as u64;
            covered[start as usize..end as usize].iter_mut().for_each(|c| *c = true);
            let (merged, new_bytes) = set.insert(start, end);
            assert_eq!(new_bytes, covered.iter().filter(|&&c| c).count() as u64 - before);
            assert!(merged.start <= start && merged.end >= end);
            let model: Vec<(u64, u64)> = {
                let mut v = Vec::new();
                let mut i = 0;
                while i < covered.len() {
                    if covered[i] {
                        let j = (i..covered.len()).find(|&j| !covered[j]).unwrap_or(covered.len());
                        v.push((i as u64, j as u64));
                        i = j;
                    } else {
                        i += 1;
                    }
                }
                v
            };
            assert_eq!(spans(&set), model, "after inserting [{start}, {end})");
            let x = next(4_000);
            let expected = model.iter().find(|&&(a, b)| a <= x && x < b).map(|&(a, b)| Span { start: a, end: b });
            assert_eq!(set.containing(x), expected, "containing({x})");
        }
        assert_eq!(set.covered_bytes(), covered.iter().filter(|&&c| c).count() as u64);
    }

    #[test]
    fn lookups_and_removal() {
        let mut set = RangeSet::default();
        set.insert(10, 20);
        set.insert(30, 40);
        assert_eq!(set.next_start_after(5), Some(10));
        assert_eq!(set.next_start_after(10), Some(30));
        assert_eq!(set.next_start_after(30), None);
        assert_eq!(set.containing(19), Some(Span { start: 10, end: 20 }));
        assert_eq!(set.containing(20), None);
        assert_eq!(set.skip_covered(12), 20);
        assert_eq!(set.nth_from_top(1), Some(Span { start: 10, end: 20 }));
        set.remove_below(15);
        assert_eq!(spans(&set), vec![(15, 20), (30, 40)]);
        assert_eq!(set.covered_bytes(), 15);
        assert_eq!(set.pop_first_if_reaches(14), None);
        assert_eq!(set.pop_first_if_reaches(15), Some(Span { start: 15, end: 20 }));
        assert_eq!(set.covered_bytes(), 10);
    }
}
