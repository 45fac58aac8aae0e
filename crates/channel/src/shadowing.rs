//! Spatially correlated log-normal shadow fading (docs/models/channel.md §4).
//!
//! Each (UE, cell, LOS state) has its own Gauss–Markov process in distance:
//! SF(d + Δd) = ρ·SF(d) + √(1 − ρ²)·σ·n, ρ = exp(−Δd / d_corr), n ~ N(0, 1)
//! (Gudmundson, "Correlation model for shadow fading in mobile radio
//! systems", Electronics Letters 27(23), 1991; d_corr from TR 38.901
//! Table 7.5-6). Because exp(−a)·exp(−b) = exp(−(a + b)), advancing in one
//! step of Δd or in many small steps gives the same distribution, so a
//! process that was not needed for a while (the NLOS one during LOS) is
//! brought up to date in one draw when it is needed again.

use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::pathloss::Scenario;
use crate::rng::normal;

/// One AR(1) shadowing process in distance.
#[derive(Clone, Debug)]
pub struct Shadowing {
    sigma_db: f64,
    d_corr_m: f64,
    /// (route position of the last draw, value there); `None` before the first.
    last: Option<(f64, f64)>,
}

impl Shadowing {
    pub fn new(sigma_db: f64, d_corr_m: f64) -> Self {
        Shadowing { sigma_db, d_corr_m, last: None }
    }

    /// Shadowing in dB at route position `travelled_m` (distance moved since
    /// the start, non-decreasing). No draw is made when the UE has not moved.
    pub fn value_db(&mut self, travelled_m: f64, rng: &mut impl RngCore) -> f64 {
        let value = match self.last {
            None => self.sigma_db * normal(rng),
            Some((at_m, v)) if travelled_m <= at_m => return v,
            Some((at_m, v)) => {
                let rho = (-(travelled_m - at_m) / self.d_corr_m).exp();
                rho * v + (1.0 - rho * rho).sqrt() * self.sigma_db * normal(rng)
            }
        };
        self.last = Some((travelled_m, value));
        value
    }
}

/// The LOS and NLOS shadowing processes of one (UE, cell) link and the
/// `shadowing` stream that drives both.
#[derive(Clone, Debug)]
pub struct LinkShadowing {
    los: Shadowing,
    nlos: Shadowing,
    rng: Xoshiro256PlusPlus,
}

impl LinkShadowing {
    /// σ and d_corr of `scenario` (Tables 7.4.1-1 and 7.5-6).
    pub fn new(scenario: Scenario, rng: Xoshiro256PlusPlus) -> Self {
        let p = |los| Shadowing::new(scenario.shadow_sigma_db(los), scenario.shadow_corr_distance_m(los));
        LinkShadowing { los: p(true), nlos: p(false), rng }
    }

    /// Shadowing in dB for the current LOS state at route position `travelled_m`.
    pub fn db(&mut self, los: bool, travelled_m: f64) -> f64 {
        let process = if los { &mut self.los } else { &mut self.nlos };
        process.value_db(travelled_m, &mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn std_and_spatial_correlation() {
        // 400 000 samples 1 m apart of a σ = 4 dB, d_corr = 10 m process.
        // The AR(1) has ρ₁ = e^−0.1 ≈ 0.905, so only ≈ N(1 − ρ₁²)/(1 + ρ₁²)
        // ≈ 40 000 samples are effectively independent: the standard error of
        // the sample std is ≈ σ/√(2·40 000) ≈ 0.014 dB and that of a lag-k
        // correlation ≲ 0.01. Tolerances of 0.1 dB and 0.03 are ≥ 3 standard
        // errors while still catching a wrong σ or a wrong d_corr (e^−0.5 vs
        // e^−0.6 differ by 0.06).
        let (sigma, dc, n) = (4.0, 10.0, 400_000);
        let mut s = Shadowing::new(sigma, dc);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        let xs: Vec<f64> = (0..n).map(|i| s.value_db(i as f64, &mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((var.sqrt() - sigma).abs() < 0.1, "std {}", var.sqrt());
        for lag in [1usize, 5, 10, 20] {
            let c = (0..n - lag).map(|i| (xs[i] - mean) * (xs[i + lag] - mean)).sum::<f64>() / (n - lag) as f64 / var;
            let expected = (-(lag as f64) / dc).exp();
            assert!((c - expected).abs() < 0.03, "lag {lag}: {c} vs {expected}");
        }
    }

    #[test]
    fn one_big_step_matches_many_small_steps_in_distribution() {
        // Correlation over 10 m taken in one step (the lazy catch-up path).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for _ in 0..100_000 {
            let mut s = Shadowing::new(1.0, 10.0);
            let a = s.value_db(0.0, &mut rng);
            let b = s.value_db(10.0, &mut rng);
            sxy += a * b;
            sxx += a * a;
        }
        assert!((sxy / sxx - (-1.0f64).exp()).abs() < 0.02);
    }

    #[test]
    fn static_ue_keeps_its_value() {
        let mut l = LinkShadowing::new(Scenario::UmiStreetCanyon, Xoshiro256PlusPlus::seed_from_u64(3));
        let a = l.db(true, 5.0);
        assert_eq!(l.db(true, 5.0), a);
        assert_eq!(l.db(true, 4.0), a);
        let n = l.db(false, 5.0);
        assert_ne!(n, a);
        assert_eq!(l.db(false, 5.0), n);
    }
}
