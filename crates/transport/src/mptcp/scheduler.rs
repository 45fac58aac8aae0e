//! The packet scheduler: which subflow gets the next data-level bytes. RFC 8684 leaves it to
//! the implementation (§3.3.8); the default is Linux's: the lowest smoothed RTT among the
//! subflows with congestion-window space.

/// How the data level picks a subflow among those with congestion-window space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduler {
    /// The lowest smoothed RTT (ties: the lowest subflow index).
    #[default]
    LowestRtt,
    /// Each in turn, starting after the one picked last.
    RoundRobin,
}

/// A subflow that could take data now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    pub index: usize,
    pub srtt_ns: u64,
}

impl Scheduler {
    /// The subflow to hand data to, given the candidates in index order and the one picked
    /// last.
    pub(super) fn pick(self, candidates: &[Candidate], last: Option<usize>) -> Option<usize> {
        match self {
            Scheduler::LowestRtt => candidates.iter().min_by_key(|c| (c.srtt_ns, c.index)).map(|c| c.index),
            Scheduler::RoundRobin => {
                let after_last = |c: &&Candidate| last.is_none_or(|l| c.index > l);
                candidates.iter().find(after_last).or(candidates.first()).map(|c| c.index)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANDIDATES: [Candidate; 3] =
        [Candidate { index: 0, srtt_ns: 30 }, Candidate { index: 2, srtt_ns: 10 }, Candidate { index: 5, srtt_ns: 10 }];

    #[test]
    fn lowest_rtt_takes_the_fastest_and_round_robin_rotates() {
        assert_eq!(Scheduler::LowestRtt.pick(&CANDIDATES, Some(2)), Some(2));
        assert_eq!(Scheduler::RoundRobin.pick(&CANDIDATES, None), Some(0));
        assert_eq!(Scheduler::RoundRobin.pick(&CANDIDATES, Some(2)), Some(5));
        assert_eq!(Scheduler::RoundRobin.pick(&CANDIDATES, Some(5)), Some(0));
        assert_eq!(Scheduler::LowestRtt.pick(&[], None), None);
    }
}
