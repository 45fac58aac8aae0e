//! CoDel, Controlled Delay (RFC 8289), decided at dequeue. An ECN-capable packet it would
//! drop is marked CE instead (RFC 8289 §5's note on ECN, RFC 3168 §5; Linux's `codel` with
//! `ecn`), and delivered: the loop that follows a drop does not follow a mark.
//!
//! The RFC's dequeue routine loops over packets inside one call; here the queue
//! runs that loop and calls `on_dequeue` once per packet it removes, at the same
//! `now_ns`, until one is delivered or the queue is empty. The state below is the
//! RFC's (§5), plus two flags that carry the loop's position from one call to
//! the next, so the sequence of verdicts is the one the RFC's routine produces.

use millinet_wire::ECN_NOT_ECT;

use super::{Aqm, Verdict};

#[derive(Clone, Debug)]
pub struct Codel {
    target_ns: u64,
    interval_ns: u64,
    /// Below this backlog a queue cannot be "standing" (RFC 8289 §4.2: one MTU).
    mtu_bytes: u64,
    /// When the sojourn time will have stayed above target for a full interval;
    /// `None` while it is below target.
    first_above_ns: Option<u64>,
    /// Time of the next drop while in the dropping state.
    drop_next_ns: u64,
    /// Drops since entering the dropping state (sets the control law's rate).
    count: u32,
    /// `count` when the dropping state was last entered.
    last_count: u32,
    dropping: bool,
    /// The previous packet entered the dropping state: RFC §5.5 delivers the
    /// packet that follows that first drop whatever its sojourn time.
    deliver_next: bool,
    /// The previous packet was dropped in the dropping state: if this one is
    /// still above target, the next drop time advances by the control law first
    /// (RFC §5.5, the drop loop).
    advance_pending: bool,
}

impl Default for Codel {
    /// RFC 8289 §4.3/§4.4: target 5 ms, interval 100 ms; a 1500-byte MTU.
    fn default() -> Self {
        Codel::new(5_000_000, 100_000_000, 1500)
    }
}

impl Codel {
    pub fn new(target_ns: u64, interval_ns: u64, mtu_bytes: u32) -> Codel {
        Codel {
            target_ns,
            interval_ns,
            mtu_bytes: mtu_bytes as u64,
            first_above_ns: None,
            drop_next_ns: 0,
            count: 0,
            last_count: 0,
            dropping: false,
            deliver_next: false,
            advance_pending: false,
        }
    }

    /// Whether the dropping state is active (for metrics and tests).
    pub fn is_dropping(&self) -> bool {
        self.dropping
    }

    /// The RFC's `count`: drops in the current or last dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// RFC 8289 §5.4 (`dodequeue`): tracks how long the sojourn time has stayed
    /// above target; true once that has lasted a full interval.
    fn ok_to_drop(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64) -> bool {
        if sojourn_ns < self.target_ns || backlog_bytes <= self.mtu_bytes {
            self.first_above_ns = None;
            return false;
        }
        match self.first_above_ns {
            None => {
                self.first_above_ns = Some(now_ns + self.interval_ns);
                false
            }
            Some(t) => now_ns >= t,
        }
    }

    /// The control law (§5.5): the next drop comes interval/sqrt(count) after `t`.
    /// Computed exactly in integers as floor(sqrt(interval² / count)), which
    /// equals floor(interval / sqrt(count)), so runs are bit-identical everywhere.
    fn control_law(&self, t_ns: u64) -> u64 {
        let i = self.interval_ns as u128;
        t_ns + (i * i / self.count.max(1) as u128).isqrt() as u64
    }
}

impl Aqm for Codel {
    fn on_dequeue(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64, ecn: u8) -> Verdict {
        let ecn_capable = ecn != ECN_NOT_ECT;
        let ok_to_drop = self.ok_to_drop(now_ns, sojourn_ns, backlog_bytes);
        if self.deliver_next {
            self.deliver_next = false;
            return Verdict::Deliver;
        }
        if self.dropping {
            if !ok_to_drop {
                // The queue went below target: leave the dropping state (§5.5).
                self.dropping = false;
                self.advance_pending = false;
                return Verdict::Deliver;
            }
            if self.advance_pending {
                self.advance_pending = false;
                self.drop_next_ns = self.control_law(self.drop_next_ns);
            }
            if now_ns >= self.drop_next_ns {
                self.count = self.count.saturating_add(1);
                if ecn_capable {
                    // Linux's codel_dequeue: a mark moves the next signal on at once.
                    self.drop_next_ns = self.control_law(self.drop_next_ns);
                    return Verdict::Mark;
                }
                self.advance_pending = true;
                return Verdict::Drop;
            }
            return Verdict::Deliver;
        }
        if !ok_to_drop {
            return Verdict::Deliver;
        }
        // Enter the dropping state. If it was left only recently, resume near the
        // drop rate that was controlling the queue then instead of starting over
        // at one drop per interval (§5.5; "recently" is 16 intervals, and the
        // previous episode must have dropped more than one packet).
        self.dropping = true;
        self.deliver_next = !ecn_capable;
        let delta = self.count.saturating_sub(self.last_count);
        let recent = now_ns.saturating_sub(self.drop_next_ns) < self.interval_ns.saturating_mul(16);
        self.count = if delta > 1 && recent { delta } else { 1 };
        self.drop_next_ns = self.control_law(now_ns);
        self.last_count = self.count;
        if ecn_capable {
            Verdict::Mark
        } else {
            Verdict::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const INTERVAL: u64 = 100 * MS;
    const BIG_BACKLOG: u64 = 1_000_000;

    /// One dequeue opportunity as a queue gives it: packets are removed at the
    /// same instant until one is delivered. Returns the number dropped.
    fn dequeue(c: &mut Codel, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64) -> usize {
        let mut drops = 0;
        while c.on_dequeue(now_ns, sojourn_ns, backlog_bytes, ECN_NOT_ECT) == Verdict::Drop {
            drops += 1;
            assert!(drops < 1000, "dropping without end");
        }
        drops
    }

    #[test]
    fn never_drops_below_target() {
        let mut c = Codel::default();
        for k in 0..100_000 {
            assert_eq!(dequeue(&mut c, k * 100_000, 5 * MS - 1, BIG_BACKLOG), 0);
        }
        assert!(!c.is_dropping());
    }

    #[test]
    fn first_drop_after_a_full_interval_above_target() {
        let mut c = Codel::default();
        let t0 = 3 * MS;
        // Above target, but the excursion is interrupted once: the timer restarts.
        for t in (t0..t0 + 50 * MS).step_by(MS as usize) {
            assert_eq!(dequeue(&mut c, t, 5 * MS, BIG_BACKLOG), 0);
        }
        assert_eq!(dequeue(&mut c, t0 + 50 * MS, 4 * MS, BIG_BACKLOG), 0);
        let t1 = t0 + 51 * MS;
        for t in t1..t1 + INTERVAL {
            // Every nanosecond of the interval: no drop yet.
            if t == t1 || t % 997 == 0 || t + 3 >= t1 + INTERVAL {
                assert_eq!(dequeue(&mut c, t, 7 * MS, BIG_BACKLOG), 0, "at {t}");
            }
        }
        // The drop is the first packet; the one behind it is delivered (RFC 8289 §5.5).
        assert_eq!(c.on_dequeue(t1 + INTERVAL, 7 * MS, BIG_BACKLOG, ECN_NOT_ECT), Verdict::Drop);
        assert_eq!(c.on_dequeue(t1 + INTERVAL, 7 * MS, BIG_BACKLOG, ECN_NOT_ECT), Verdict::Deliver);
        assert!(c.is_dropping());
        assert_eq!(c.count(), 1);
    }

    /// Drives a persistently bad queue, dequeuing every millisecond and also at
    /// the nanoseconds around each drop time predicted in floating point;
    /// returns the drop times.
    fn drop_times(c: &mut Codel, start_ns: u64, until_ns: u64) -> Vec<u64> {
        let mut drops = Vec::new();
        let mut predicted: Option<f64> = None;
        let mut t = start_ns;
        while t < until_ns {
            for _ in 0..dequeue(c, t, 20 * MS, BIG_BACKLOG) {
                drops.push(t);
                predicted = Some(t as f64 + c.interval_ns as f64 / (c.count() as f64).sqrt());
            }
            let mut next = t + MS;
            if let Some(p) = predicted {
                let p = p.floor() as u64;
                if let Some(&close) = [p - 1, p, p + 1, p + 2].iter().find(|&&x| x > t) {
                    next = next.min(close);
                }
            }
            t = next;
        }
        drops
    }

    /// RFC 8289 with ECN: an ECN-capable queue gets a CE mark wherever a Not-ECT one gets a
    /// drop, at the control law's times, and every packet is delivered.
    #[test]
    fn ecn_capable_packets_are_marked_at_the_drop_times() {
        let mut dropping = Codel::default();
        let drops = drop_times(&mut dropping, 0, 1_000_000_000);
        let mut marking = Codel::default();
        let mut marks = Vec::new();
        let mut t = 0;
        while t < 1_000_000_000 {
            match marking.on_dequeue(t, 20 * MS, BIG_BACKLOG, millinet_wire::ECN_ECT0) {
                Verdict::Mark => marks.push(t),
                verdict => assert_eq!(verdict, Verdict::Deliver, "an ECN-capable packet is never dropped"),
            }
            // Every 10 µs: the mark times are resolved to 10 µs.
            t += 10_000;
        }
        assert_eq!(marks.len(), drops.len());
        for (mark, drop) in marks.iter().zip(&drops) {
            assert!(mark.abs_diff(*drop) <= 10_000, "mark at {mark} ns, drop at {drop} ns");
        }
    }

    #[test]
    fn drop_spacing_follows_the_control_law() {
        let mut c = Codel::default();
        let drops = drop_times(&mut c, 0, 3_000_000_000);
        assert!(drops.len() > 50, "{} drops", drops.len());
        // The first drop comes one interval after the first above-target packet at t = 0.
        assert_eq!(drops[0], INTERVAL);
        for (k, pair) in drops.windows(2).enumerate() {
            let gap = (pair[1] - pair[0]) as f64;
            let law = INTERVAL as f64 / ((k + 1) as f64).sqrt();
            assert!((gap - law).abs() <= 1.0, "gap {} after drop {}: {gap} ns, law {law} ns", k + 1, k + 1);
        }
    }

    #[test]
    fn leaves_the_dropping_state_below_target_and_reuses_count_when_back_soon() {
        let mut c = Codel::default();
        let drops = drop_times(&mut c, 0, 1_000_000_000);
        let n = drops.len() as u32;
        assert!(c.is_dropping() && c.count() == n && n > 5);
        let t = 1_000_000_000;
        assert_eq!(c.on_dequeue(t, 5 * MS - 1, BIG_BACKLOG, ECN_NOT_ECT), Verdict::Deliver);
        assert!(!c.is_dropping());
        // Above target again: another full interval must pass before dropping.
        assert_eq!(dequeue(&mut c, t + MS, 20 * MS, BIG_BACKLOG), 0);
        assert_eq!(dequeue(&mut c, t + MS + INTERVAL - 1, 20 * MS, BIG_BACKLOG), 0);
        assert_eq!(dequeue(&mut c, t + MS + INTERVAL, 20 * MS, BIG_BACKLOG), 1);
        // Re-entered within 16 intervals: count resumes at the previous episode's
        // drops (n - 1 counted since the last entry at count 1), so the next drop
        // comes interval/sqrt(n - 1) later, not a full interval.
        assert_eq!(c.count(), n - 1);
        let reentry = t + MS + INTERVAL;
        let law = INTERVAL as f64 / ((n - 1) as f64).sqrt();
        let next = (reentry + law as u64 - 2..).find(|&t| dequeue(&mut c, t, 20 * MS, BIG_BACKLOG) == 1).unwrap();
        assert!(((next - reentry) as f64 - law).abs() <= 1.0, "next drop at +{} ns, law {law}", next - reentry);
    }

    #[test]
    fn count_restarts_after_a_long_calm() {
        let mut c = Codel::default();
        drop_times(&mut c, 0, 1_000_000_000);
        assert_eq!(c.on_dequeue(1_000_000_000, 0, BIG_BACKLOG, ECN_NOT_ECT), Verdict::Deliver);
        let t = 1_000_000_000 + 17 * INTERVAL;
        assert_eq!(dequeue(&mut c, t, 20 * MS, BIG_BACKLOG), 0);
        assert_eq!(dequeue(&mut c, t + INTERVAL, 20 * MS, BIG_BACKLOG), 1);
        assert_eq!(c.count(), 1);
    }

    #[test]
    fn no_drop_with_at_most_one_mtu_queued() {
        let mut c = Codel::new(5 * MS, INTERVAL, 1500);
        for k in 0..10_000 {
            assert_eq!(dequeue(&mut c, k * MS, 500 * MS, 1500), 0);
        }
        // One byte more is a standing queue: the timer starts now.
        let t = 10_000 * MS;
        assert_eq!(dequeue(&mut c, t, 500 * MS, 1501), 0);
        assert_eq!(dequeue(&mut c, t + INTERVAL, 500 * MS, 1501), 1);
        // And a drained queue ends the dropping state.
        assert_eq!(c.on_dequeue(t + INTERVAL + 1, 500 * MS, 0, ECN_NOT_ECT), Verdict::Deliver);
        assert!(!c.is_dropping());
    }
}
