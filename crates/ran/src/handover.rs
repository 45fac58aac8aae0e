//! When to hand a UE over (docs/models/ran.md#handover-and-dual-connectivity): to a neighbour cell whose measured SINR exceeds the
//! serving cell's by the hysteresis for the whole time-to-trigger.
//!
//! This is 3GPP's event A3 ("neighbour becomes offset better than SpCell", TS 38.331
//! §5.5.4.4) with the offsets folded into one hysteresis: the entering condition is
//! `M_n > M_serving + hysteresis`, and a neighbour's time-to-trigger runs only while its
//! entering condition keeps holding (§5.5.4.1: it restarts once the condition stops). Each
//! neighbour has its own timer, as in the cells-triggered list. The trigger only decides; the
//! caller carries the handover out (detach, X2 forwarding, attach, re-routing) and then names
//! the new serving cell, which starts every timer afresh.

use crate::config::{bad, ConfigError};
use crate::CellId;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandoverConfig {
    /// How much better (dB) a neighbour must be than the serving cell (default 3 dB).
    pub hysteresis_db: f64,
    /// How long the neighbour must stay that much better (default 40 ms).
    pub time_to_trigger_ns: u64,
}

impl Default for HandoverConfig {
    fn default() -> Self {
        HandoverConfig { hysteresis_db: 3.0, time_to_trigger_ns: 40_000_000 }
    }
}

/// The handover decision of one UE.
#[derive(Debug)]
pub struct HandoverTrigger {
    cfg: HandoverConfig,
    /// The serving cell the timers were started against.
    serving: Option<CellId>,
    /// Per cell (by `CellId`): since when its entering condition has held without a break.
    entered_ns: Vec<Option<u64>>,
}

impl HandoverTrigger {
    pub fn new(cfg: HandoverConfig) -> Result<HandoverTrigger, ConfigError> {
        if !(cfg.hysteresis_db.is_finite() && cfg.hysteresis_db >= 0.0) {
            return Err(bad("handover.hysteresis_db", cfg.hysteresis_db, "a finite value >= 0 dB"));
        }
        Ok(HandoverTrigger { cfg, serving: None, entered_ns: Vec::new() })
    }

    /// One measurement round at `now_ns`: the SINR (dB) of every cell the UE measured,
    /// `serving` among them. Returns the cell to hand over to when one neighbour has met the
    /// entering condition for the time-to-trigger (the best-measured one if several have).
    pub fn on_measurement(&mut self, now_ns: u64, serving: CellId, sinr_db: &[(CellId, f64)]) -> Option<CellId> {
        if self.serving != Some(serving) {
            self.serving = Some(serving);
            self.entered_ns.iter_mut().for_each(|e| *e = None);
        }
        let serving_db = sinr_db.iter().find(|(c, _)| *c == serving).map_or(f64::NEG_INFINITY, |&(_, db)| db);
        let mut target: Option<(CellId, f64)> = None;
        for &(cell, db) in sinr_db {
            if cell == serving {
                continue;
            }
            let k = cell.0 as usize;
            if k >= self.entered_ns.len() {
                self.entered_ns.resize(k + 1, None);
            }
            // A NaN or −∞ measurement never enters; −∞ serving (outage) lets any finite one.
            if db > serving_db + self.cfg.hysteresis_db {
                let since = *self.entered_ns[k].get_or_insert(now_ns);
                if now_ns - since >= self.cfg.time_to_trigger_ns && target.is_none_or(|(_, best)| db > best) {
                    target = Some((cell, db));
                }
            } else {
                self.entered_ns[k] = None;
            }
        }
        if target.is_some() {
            self.entered_ns.iter_mut().for_each(|e| *e = None);
        }
        target.map(|(cell, _)| cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const A: CellId = CellId(0);
    const B: CellId = CellId(1);
    const C: CellId = CellId(2);

    fn trigger() -> HandoverTrigger {
        HandoverTrigger::new(HandoverConfig::default()).unwrap()
    }

    /// Measures every millisecond from `from_ms` to `to_ms` (inclusive) with `sinr(t_ms)`;
    /// returns the first decision and its time.
    fn run(h: &mut HandoverTrigger, from_ms: u64, to_ms: u64, sinr: impl Fn(u64) -> Vec<(CellId, f64)>) -> Option<(u64, CellId)> {
        (from_ms..=to_ms).find_map(|t| h.on_measurement(t * MS, A, &sinr(t)).map(|c| (t, c)))
    }

    #[test]
    fn a_neighbour_better_by_the_hysteresis_for_the_time_to_trigger_is_chosen_then() {
        let mut h = trigger();
        // B is 3.5 dB above A from 10 ms on: the decision comes at 10 + 40 ms, not before.
        let decided = run(&mut h, 0, 100, |t| vec![(A, 10.0), (B, if t >= 10 { 13.5 } else { 5.0 })]);
        assert_eq!(decided, Some((50, B)));
    }

    #[test]
    fn a_shorter_excursion_or_a_smaller_margin_hands_nothing_over() {
        let mut h = trigger();
        // 39 ms above, then back: no decision; the next excursion starts its timer afresh.
        let excursion = |t: u64| vec![(A, 10.0), (B, if (10..49).contains(&t) || t >= 60 { 14.0 } else { 9.0 })];
        assert_eq!(run(&mut h, 0, 200, excursion), Some((100, B)), "only the second excursion, 60 + 40 ms");
        let mut h = trigger();
        assert_eq!(run(&mut h, 0, 500, |_| vec![(A, 10.0), (B, 12.9)]), None, "2.9 dB is inside the hysteresis");
        let mut h = trigger();
        assert_eq!(run(&mut h, 0, 500, |_| vec![(A, 10.0), (B, 13.0)]), None, "exactly 3 dB does not exceed it");
    }

    #[test]
    fn each_neighbour_keeps_its_own_timer_and_the_best_triggered_wins() {
        let mut h = trigger();
        // B enters at 0, C at 20 and is better: B's timer is not reset by C, so B wins at 40.
        let decided = run(&mut h, 0, 100, |t| vec![(A, 0.0), (B, 5.0), (C, if t >= 20 { 9.0 } else { -5.0 })]);
        assert_eq!(decided, Some((40, B)));
        // Both triggered at once: the better one is chosen.
        let mut h = trigger();
        assert_eq!(run(&mut h, 0, 100, |_| vec![(A, 0.0), (B, 5.0), (C, 9.0)]), Some((40, C)));
    }

    #[test]
    fn a_new_serving_cell_restarts_every_timer() {
        let mut h = trigger();
        let sinr = [(A, 0.0), (B, 5.0), (C, 20.0)];
        assert_eq!(h.on_measurement(0, A, &sinr), None);
        assert_eq!(h.on_measurement(30 * MS, A, &sinr), None);
        // Now served by B: C's condition against B holds from 31 ms, not from 0.
        assert_eq!(h.on_measurement(31 * MS, B, &sinr), None);
        assert_eq!(h.on_measurement(70 * MS, B, &sinr), None);
        assert_eq!(h.on_measurement(71 * MS, B, &sinr), Some(C));
    }

    #[test]
    fn serving_in_outage_lets_any_measured_neighbour_enter_and_nan_never_does() {
        let mut h = trigger();
        assert_eq!(run(&mut h, 0, 100, |_| vec![(A, f64::NEG_INFINITY), (B, -20.0), (C, f64::NAN)]), Some((40, B)));
    }

    #[test]
    fn a_bad_hysteresis_is_refused_with_its_value() {
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = HandoverTrigger::new(HandoverConfig { hysteresis_db: bad, ..HandoverConfig::default() }).unwrap_err();
            assert_eq!(err.to_string(), format!("ran: handover.hysteresis_db = {bad} is invalid; allowed: a finite value >= 0 dB"));
        }
    }
}
