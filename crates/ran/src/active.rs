//! The positions of a cell's UEs that have something to do in a slot (docs/models/ran.md#cost):
//! data queued or held in RLC on either side, or a TB in a HARQ process. A UE joins when
//! data reaches one of its buffers and leaves at the first slot that finds both directions
//! empty, so a slot's work follows the UEs with traffic, not the UEs attached.
//!
//! A bit per position: joining is one OR on the packet path, and a slot lists its UEs in
//! position order (the order of the scheduler's candidates) in a pass over N / 64 words.

#[derive(Debug, Default)]
pub(crate) struct ActiveSet {
    words: Vec<u64>,
}

impl ActiveSet {
    #[inline]
    pub fn insert(&mut self, position: usize) {
        let word = position / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (position % 64);
    }

    #[inline]
    pub fn remove(&mut self, position: usize) {
        if let Some(w) = self.words.get_mut(position / 64) {
            *w &= !(1 << (position % 64));
        }
    }

    #[inline]
    pub fn contains(&self, position: usize) -> bool {
        self.words.get(position / 64).is_some_and(|w| w & (1 << (position % 64)) != 0)
    }

    /// The UE at `position` left the cell: those after it move down by one.
    pub fn remove_shifting(&mut self, position: usize) {
        self.remove(position);
        let members: Vec<usize> = self.positions().collect();
        self.words.iter_mut().for_each(|w| *w = 0);
        for p in members {
            self.insert(if p > position { p - 1 } else { p });
        }
    }

    /// Members in increasing order.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    k * 64 + bit
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_members_in_order_across_words() {
        let mut s = ActiveSet::default();
        for p in [130, 3, 64, 63, 0, 3] {
            s.insert(p);
        }
        s.remove(63);
        s.remove(1000);
        assert_eq!(s.positions().collect::<Vec<_>>(), [0, 3, 64, 130]);
        assert!(s.contains(64) && !s.contains(63) && !s.contains(1000));
    }

    #[test]
    fn a_departure_moves_later_members_down() {
        let mut s = ActiveSet::default();
        for p in [2, 5, 64, 65] {
            s.insert(p);
        }
        s.remove_shifting(5);
        assert_eq!(s.positions().collect::<Vec<_>>(), [2, 63, 64]);
        s.remove_shifting(0);
        assert_eq!(s.positions().collect::<Vec<_>>(), [1, 62, 63]);
    }
}
