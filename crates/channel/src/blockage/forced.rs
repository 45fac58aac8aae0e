//! Forced events (docs/models/channel.md §5): scripted NLOS periods or outages laid on
//! top of any blockage model, e.g. the 0.4 s and 1 s outages of `e2e-outage`.

/// What a forced event does while it lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ForcedKind {
    /// The link is NLOS whatever the blockage model says.
    Nlos,
    /// SINR = −∞: nothing can be scheduled.
    Outage,
}

/// One scripted event over [start_ns, start_ns + duration_ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForcedEvent {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub kind: ForcedKind,
}

/// The events of one link flattened into disjoint, sorted intervals (where
/// events overlap, outage wins over NLOS), walked with a cursor so a query
/// costs O(1) for non-decreasing times.
#[derive(Clone, Debug, Default)]
pub struct ForcedEvents {
    /// (start_ns, end_ns, kind), disjoint and sorted.
    spans: Vec<(u64, u64, ForcedKind)>,
    cursor: usize,
}

impl ForcedEvents {
    pub fn new(events: &[ForcedEvent]) -> Self {
        let mut cuts: Vec<u64> =
            events.iter().filter(|e| e.duration_ns > 0).flat_map(|e| [e.start_ns, e.start_ns.saturating_add(e.duration_ns)]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut spans: Vec<(u64, u64, ForcedKind)> = Vec::new();
        for w in cuts.windows(2) {
            let (a, b) = (w[0], w[1]);
            let kind = events.iter().filter(|e| e.start_ns <= a && a < e.start_ns.saturating_add(e.duration_ns)).map(|e| e.kind).max();
            match (kind, spans.last_mut()) {
                (Some(k), Some(last)) if last.1 == a && last.2 == k => last.1 = b,
                (Some(k), _) => spans.push((a, b, k)),
                (None, _) => {}
            }
        }
        ForcedEvents { spans, cursor: 0 }
    }

    /// The event in force at `now_ns`, if any.
    pub fn active(&mut self, now_ns: u64) -> Option<ForcedKind> {
        if self.cursor > 0 && self.spans.get(self.cursor - 1).is_some_and(|s| now_ns < s.1) {
            // Time went back: find the position again.
            self.cursor = self.spans.partition_point(|s| s.1 <= now_ns);
        }
        while self.spans.get(self.cursor).is_some_and(|s| s.1 <= now_ns) {
            self.cursor += 1;
        }
        self.spans.get(self.cursor).filter(|s| s.0 <= now_ns).map(|s| s.2)
    }

    /// The first time after `now_ns` at which [`ForcedEvents::active`] may answer otherwise
    /// (`u64::MAX`: never), once it has been asked at `now_ns`.
    pub fn next_change_ns(&self, now_ns: u64) -> u64 {
        match self.spans.get(self.cursor) {
            Some(&(start, _, _)) if start > now_ns => start,
            Some(&(_, end, _)) => end,
            None => u64::MAX,
        }
    }

    /// Whether any event includes an NLOS period (not meaningful on a trace).
    pub fn has_nlos(&self) -> bool {
        self.spans.iter().any(|s| s.2 == ForcedKind::Nlos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ev(start_ms: u64, dur_ms: u64, kind: ForcedKind) -> ForcedEvent {
        ForcedEvent { start_ns: start_ms * MS, duration_ns: dur_ms * MS, kind }
    }

    #[test]
    fn outage_wins_over_nlos_and_ends_are_exclusive() {
        let mut f = ForcedEvents::new(&[ev(100, 400, ForcedKind::Nlos), ev(200, 100, ForcedKind::Outage), ev(1000, 0, ForcedKind::Outage)]);
        let at = |f: &mut ForcedEvents, ms: u64| f.active(ms * MS);
        assert_eq!(at(&mut f, 99), None);
        assert_eq!(at(&mut f, 100), Some(ForcedKind::Nlos));
        assert_eq!(at(&mut f, 200), Some(ForcedKind::Outage));
        assert_eq!(at(&mut f, 299), Some(ForcedKind::Outage));
        assert_eq!(at(&mut f, 300), Some(ForcedKind::Nlos));
        assert_eq!(at(&mut f, 500), None);
        assert_eq!(at(&mut f, 1000), None);
        assert_eq!(at(&mut f, 150), Some(ForcedKind::Nlos));
        assert!(f.has_nlos());
    }

    #[test]
    fn adjacent_events_of_one_kind_merge() {
        let f = ForcedEvents::new(&[ev(0, 10, ForcedKind::Outage), ev(10, 10, ForcedKind::Outage)]);
        assert_eq!(f.spans, vec![(0, 20 * MS, ForcedKind::Outage)]);
    }
}
