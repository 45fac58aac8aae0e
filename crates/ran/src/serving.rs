//! Which cell carries a UE's bearer (docs/models/ran.md#handover-and-dual-connectivity): handover between cells by the A3 rule, and,
//! with dual connectivity, the fast switch of the bearer to the LTE anchor while the mmWave
//! cell is in outage and back once a mmWave cell has recovered.
//!
//! Sans-IO: the caller measures every cell the UE can hear (`Ran::measure`) and asks; the
//! answer is a decision, which the caller carries out (`Ran::hand_over`, X2 forwarding,
//! routes) and reports back by naming the new serving cell at the next measurement.
//!
//! Dual connectivity follows the fast-switching scheme of Polese et al. (IEEE JSAC 2017,
//! "Improved handover through dual connectivity in 5G mmWave mobile networks"): an outage of
//! the serving mmWave cell moves the bearer to LTE at once; the return to mmWave waits until
//! one mmWave cell has been out of outage for the time-to-trigger, so that a short clearing
//! of a blockage does not bounce the bearer back and forth. Between mmWave cells the A3 rule
//! applies as without an anchor (secondary-cell handover; the anchor is not involved).

use millinet_channel::LinkState;

use crate::config::ConfigError;
use crate::handover::{HandoverConfig, HandoverTrigger};
use crate::CellId;

/// Why the bearer moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchKind {
    /// To a better cell of the same role (A3: hysteresis for the time-to-trigger).
    Handover = 0,
    /// From a mmWave cell in outage to the LTE anchor (dual connectivity).
    ToAnchor = 1,
    /// From the LTE anchor back to a recovered mmWave cell (dual connectivity).
    FromAnchor = 2,
}

impl SwitchKind {
    pub fn name(self) -> &'static str {
        match self {
            SwitchKind::Handover => "handover",
            SwitchKind::ToAnchor => "switch_to_anchor",
            SwitchKind::FromAnchor => "switch_from_anchor",
        }
    }
}

/// A decision: move the bearer to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    pub to: CellId,
    pub kind: SwitchKind,
}

/// The serving-cell decision of one UE.
#[derive(Debug)]
pub struct ServingCellControl {
    trigger: HandoverTrigger,
    time_to_trigger_ns: u64,
    /// The LTE anchor of dual connectivity, if the UE has one.
    anchor: Option<CellId>,
    /// On the anchor: since when some mmWave cell has been out of outage without a break.
    recovered_since_ns: Option<u64>,
    /// Measurements of the handover candidates (scratch, reused).
    candidates: Vec<(CellId, f64)>,
}

impl ServingCellControl {
    pub fn new(cfg: HandoverConfig, anchor: Option<CellId>) -> Result<ServingCellControl, ConfigError> {
        Ok(ServingCellControl {
            trigger: HandoverTrigger::new(cfg)?,
            time_to_trigger_ns: cfg.time_to_trigger_ns,
            anchor,
            recovered_since_ns: None,
            candidates: Vec::new(),
        })
    }

    /// One measurement round at `now_ns` of every cell the UE hears, `serving` among them.
    pub fn on_measurement(&mut self, now_ns: u64, serving: CellId, measured: &[(CellId, LinkState)]) -> Option<Switch> {
        // A cell in outage cannot serve: it measures as −∞ whatever its SINR.
        let usable_db = |s: &LinkState| if s.outage { f64::NEG_INFINITY } else { s.sinr_db };
        let Some(anchor) = self.anchor else {
            self.candidates.clear();
            self.candidates.extend(measured.iter().map(|(c, s)| (*c, usable_db(s))));
            let to = self.trigger.on_measurement(now_ns, serving, &self.candidates)?;
            return Some(Switch { to, kind: SwitchKind::Handover });
        };
        if serving == anchor {
            let best = measured.iter().filter(|(c, s)| *c != anchor && !s.outage).max_by(|a, b| a.1.sinr_db.total_cmp(&b.1.sinr_db));
            let Some(&(best, _)) = best else {
                self.recovered_since_ns = None;
                return None;
            };
            let since = *self.recovered_since_ns.get_or_insert(now_ns);
            if now_ns - since < self.time_to_trigger_ns {
                return None;
            }
            self.recovered_since_ns = None;
            return Some(Switch { to: best, kind: SwitchKind::FromAnchor });
        }
        let serving_in_outage = measured.iter().any(|(c, s)| *c == serving && s.outage);
        if serving_in_outage {
            return Some(Switch { to: anchor, kind: SwitchKind::ToAnchor });
        }
        self.candidates.clear();
        self.candidates.extend(measured.iter().filter(|(c, _)| *c != anchor).map(|(c, s)| (*c, usable_db(s))));
        let to = self.trigger.on_measurement(now_ns, serving, &self.candidates)?;
        Some(Switch { to, kind: SwitchKind::Handover })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const A: CellId = CellId(0);
    const B: CellId = CellId(1);
    const LTE: CellId = CellId(2);

    fn state(sinr_db: f64, outage: bool) -> LinkState {
        LinkState { los: !outage, outage, sinr_db }
    }

    fn dc() -> ServingCellControl {
        ServingCellControl::new(HandoverConfig::default(), Some(LTE)).unwrap()
    }

    #[test]
    fn an_outage_of_the_serving_mmwave_cell_switches_to_the_anchor_at_once() {
        let mut s = dc();
        let ok = [(A, state(20.0, false)), (B, state(0.0, false)), (LTE, state(10.0, false))];
        assert_eq!(s.on_measurement(0, A, &ok), None);
        let blocked = [(A, state(-30.0, true)), (B, state(0.0, false)), (LTE, state(10.0, false))];
        assert_eq!(s.on_measurement(MS, A, &blocked), Some(Switch { to: LTE, kind: SwitchKind::ToAnchor }));
    }

    #[test]
    fn back_from_the_anchor_only_after_a_mmwave_cell_stays_usable_for_the_time_to_trigger() {
        let mut s = dc();
        let lte = (LTE, state(10.0, false));
        // A recovers for 30 ms, blocked again, then recovers for good at 50 ms.
        let at = |t: u64| {
            let a_ok = (0..30).contains(&t) || t >= 50;
            [(A, state(if a_ok { 5.0 } else { -20.0 }, !a_ok)), (B, state(-20.0, true)), lte]
        };
        let decided = (0..200).find_map(|t| s.on_measurement(t * MS, LTE, &at(t)).map(|d| (t, d)));
        assert_eq!(decided, Some((90, Switch { to: A, kind: SwitchKind::FromAnchor })));
        // The best recovered cell is chosen, even one worse than LTE's SINR.
        let mut s = dc();
        let both = [(A, state(2.0, false)), (B, state(4.0, false)), lte];
        let decided = (0..100).find_map(|t| s.on_measurement(t * MS, LTE, &both).map(|d| (t, d)));
        assert_eq!(decided, Some((40, Switch { to: B, kind: SwitchKind::FromAnchor })));
    }

    #[test]
    fn between_mmwave_cells_the_a3_rule_applies_and_the_anchor_is_no_candidate() {
        let mut s = dc();
        // LTE is far better than A all along but is no handover target; B enters at 10 ms.
        let at = |t: u64| [(A, state(5.0, false)), (B, state(if t >= 10 { 9.0 } else { 0.0 }, false)), (LTE, state(40.0, false))];
        let decided = (0..100).find_map(|t| s.on_measurement(t * MS, A, &at(t)).map(|d| (t, d)));
        assert_eq!(decided, Some((50, Switch { to: B, kind: SwitchKind::Handover })));
    }

    #[test]
    fn without_an_anchor_a_cell_in_outage_measures_as_minus_infinity() {
        let mut s = ServingCellControl::new(HandoverConfig::default(), None).unwrap();
        // The serving cell's SINR reads high but it is in outage (forced): B wins after the TTT.
        let m = [(A, state(30.0, true)), (B, state(-2.0, false))];
        let decided = (0..100).find_map(|t| s.on_measurement(t * MS, A, &m).map(|d| (t, d)));
        assert_eq!(decided, Some((40, Switch { to: B, kind: SwitchKind::Handover })));
    }
}
