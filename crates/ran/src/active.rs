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
    /// Room for positions below `positions` (a UE attached): joining is then one OR.
    pub fn grow_to(&mut self, positions: usize) {
        self.words.resize(self.words.len().max(positions.div_ceil(64)), 0);
    }

    /// `position` joins; it must be below what [`ActiveSet::grow_to`] made room for.
    #[inline]
    pub fn insert(&mut self, position: usize) {
        self.words[position / 64] |= 1 << (position % 64);
    }

    #[inline]
    pub fn remove(&mut self, position: usize) {
        if let Some(w) = self.words.get_mut(position / 64) {
            *w &= !(1 << (position % 64));
        }
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

    /// Visits the members in increasing order; those for which `keep` is false leave.
    #[inline]
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        for (k, word) in self.words.iter_mut().enumerate() {
            for bit in bits(*word) {
                if !keep(k * 64 + bit) {
                    *word &= !(1 << bit);
                }
            }
        }
    }

    /// Members in increasing order.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &word)| bits(word).map(move |bit| k * 64 + bit))
    }
}

/// The set bits of `word`, lowest first.
#[inline]
fn bits(mut word: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (word != 0).then(|| {
            let bit = word.trailing_zeros() as usize;
            word &= word - 1;
            bit
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_members_in_order_across_words() {
        let mut s = ActiveSet::default();
        s.grow_to(131);
        for p in [130, 3, 64, 63, 0, 3] {
            s.insert(p);
        }
        s.remove(63);
        s.remove(1000); // beyond the room made: nothing to remove
        assert_eq!(s.positions().collect::<Vec<_>>(), [0, 3, 64, 130]);
    }

    #[test]
    fn a_departure_moves_later_members_down() {
        let mut s = ActiveSet::default();
        s.grow_to(66);
        for p in [2, 5, 64, 65] {
            s.insert(p);
        }
        s.remove_shifting(5);
        assert_eq!(s.positions().collect::<Vec<_>>(), [2, 63, 64]);
        s.remove_shifting(0);
        assert_eq!(s.positions().collect::<Vec<_>>(), [1, 62, 63]);
    }

    #[test]
    fn retain_visits_in_order_and_drops_the_refused() {
        let mut s = ActiveSet::default();
        s.grow_to(200);
        for p in [1, 70, 71, 199] {
            s.insert(p);
        }
        let mut seen = Vec::new();
        s.retain(|p| {
            seen.push(p);
            p != 70
        });
        assert_eq!(seen, [1, 70, 71, 199]);
        assert_eq!(s.positions().collect::<Vec<_>>(), [1, 71, 199]);
    }
}
