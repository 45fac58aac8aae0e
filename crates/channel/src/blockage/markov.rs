//! Two-state Markov (LOS/NLOS) blockage (docs/models/channel.md §5).
//!
//! Continuous-time chain with exponential sojourns: LOS→NLOS at rate λ,
//! NLOS→LOS at rate μ = λ·P_LOS/(1 − P_LOS), whose stationary LOS probability
//! μ/(λ + μ) equals the 3GPP P_LOS(d2D) of TR 38.901 Table 7.4.2-1.

use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{BlockageModel, LinkGeometry};
use crate::los_probability::los_probability;
use crate::pathloss::Scenario;
use crate::rng::uniform01;
use crate::units::NS_PER_S;

/// Markov blockage state; consumes the link's `blockage` stream: one uniform
/// for the initial state, then one Exp(1) per sojourn.
#[derive(Clone, Debug)]
pub struct MarkovBlockage {
    lambda_per_s: f64,
    scenario: Scenario,
    h_ut_m: f64,
    rng: Xoshiro256PlusPlus,
    /// Current state and the instant it ends; `None` before the first query.
    state: Option<(bool, u64)>,
}

impl MarkovBlockage {
    pub fn new(lambda_per_s: f64, scenario: Scenario, h_ut_m: f64, rng: Xoshiro256PlusPlus) -> Self {
        MarkovBlockage { lambda_per_s, scenario, h_ut_m, rng, state: None }
    }

    /// Length of a sojourn in `los` starting now. The rate uses the UE's d2D
    /// at the query that starts the sojourn: P_LOS changes slowly with
    /// distance compared with sojourns of seconds, so the approximation only
    /// matters for very fast UEs. P_LOS = 1 (d2D ≤ 18 m) gives μ = ∞: NLOS
    /// sojourns of zero length, i.e. always LOS.
    fn sojourn_ns(&mut self, los: bool, p_los: f64) -> u64 {
        let rate = if los { self.lambda_per_s } else { self.lambda_per_s * p_los / (1.0 - p_los) };
        let e: f64 = Exp1.sample(&mut self.rng);
        // `as` saturates: an infinite sojourn becomes u64::MAX (never ends).
        (e / rate * NS_PER_S) as u64
    }
}

impl BlockageModel for MarkovBlockage {
    fn is_los(&mut self, now_ns: u64, geo: &LinkGeometry) -> bool {
        let p_los = los_probability(self.scenario, geo.d2d_m, self.h_ut_m);
        let (mut los, mut ends_ns) = match self.state {
            Some(s) => s,
            None => {
                // Start in the stationary distribution.
                let los = uniform01(&mut self.rng) < p_los;
                (los, now_ns.saturating_add(self.sojourn_ns(los, p_los)))
            }
        };
        while ends_ns <= now_ns {
            los = !los;
            ends_ns = ends_ns.saturating_add(self.sojourn_ns(los, p_los));
        }
        self.state = Some((los, ends_ns));
        los
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point2;
    use crate::los::Antenna;
    use rand_core::SeedableRng;

    fn geo(d2d_m: f64) -> LinkGeometry {
        let a = Antenna { pos: Point2::new(0.0, 0.0), height_m: 10.0 };
        LinkGeometry { cell: a, ue: a, d2d_m }
    }

    /// Fraction of 10 ms samples in LOS over `secs` seconds.
    fn los_fraction(lambda: f64, d2d: f64, secs: u64, seed: u64) -> f64 {
        let mut m = MarkovBlockage::new(lambda, Scenario::UmiStreetCanyon, 1.5, Xoshiro256PlusPlus::seed_from_u64(seed));
        let steps = secs * 100;
        let los = (0..steps).filter(|i| m.is_los(i * 10_000_000, &geo(d2d))).count();
        los as f64 / steps as f64
    }

    #[test]
    fn long_run_los_fraction_matches_3gpp() {
        // λ = 1/s over 10⁵ s: ≈ 2·10⁴ LOS/NLOS cycles, so the LOS fraction
        // has a standard error well under 1 % of P_LOS.
        for d2d in [30.0, 60.0, 150.0] {
            let p = los_probability(Scenario::UmiStreetCanyon, d2d, 1.5);
            let f = los_fraction(1.0, d2d, 100_000, 11);
            assert!((f - p).abs() < 0.02 * p, "d2D {d2d}: {f} vs {p}");
        }
    }

    #[test]
    fn mean_los_sojourn_is_one_over_lambda() {
        let mut m = MarkovBlockage::new(0.5, Scenario::UmiStreetCanyon, 1.5, Xoshiro256PlusPlus::seed_from_u64(2));
        let (mut prev, mut exits) = (m.is_los(0, &geo(60.0)), 0u32);
        let mut los_ms = 0u64;
        for ms in 1..20_000_000u64 {
            let now = m.is_los(ms * 1_000_000, &geo(60.0));
            if prev {
                los_ms += 1;
            }
            if prev && !now {
                exits += 1;
            }
            prev = now;
        }
        let mean_s = los_ms as f64 / 1000.0 / exits as f64;
        assert!((mean_s - 2.0).abs() < 0.1, "mean LOS sojourn {mean_s}");
    }

    #[test]
    fn always_los_close_to_the_cell() {
        assert_eq!(los_fraction(1.0, 10.0, 1000, 5), 1.0);
    }
}
