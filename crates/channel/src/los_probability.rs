//! LOS probability, 3GPP TR 38.901 §7.4.2, Table 7.4.2-1. Used by the
//! statistical (Markov) blockage model to set its stationary LOS fraction.

use crate::pathloss::Scenario;

/// Probability that a UE at ground distance `d2d_m` (outdoor, height
/// `h_ut_m`) is in LOS of a cell of the given scenario.
pub fn los_probability(scenario: Scenario, d2d_m: f64, h_ut_m: f64) -> f64 {
    if d2d_m <= 18.0 {
        return 1.0;
    }
    let near = 18.0 / d2d_m;
    match scenario {
        // UMi street canyon: 18/d2D + exp(−d2D/36)(1 − 18/d2D).
        Scenario::UmiStreetCanyon => near + (-d2d_m / 36.0).exp() * (1.0 - near),
        // UMa: [18/d2D + exp(−d2D/63)(1 − 18/d2D)]
        //      · (1 + C'(h_UT) · 5/4 · (d2D/100)³ · exp(−d2D/150)),
        // with C'(h_UT) = 0 for h_UT ≤ 13 m and ((h_UT − 13)/10)^1.5 up to 23 m.
        Scenario::Uma => {
            let c = if h_ut_m <= 13.0 { 0.0 } else { ((h_ut_m.min(23.0) - 13.0) / 10.0).powf(1.5) };
            let base = near + (-d2d_m / 63.0).exp() * (1.0 - near);
            (base * (1.0 + c * 1.25 * (d2d_m / 100.0).powi(3) * (-d2d_m / 150.0).exp())).min(1.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn umi_values() {
        assert_eq!(los_probability(Scenario::UmiStreetCanyon, 10.0, 1.5), 1.0);
        assert_eq!(los_probability(Scenario::UmiStreetCanyon, 18.0, 1.5), 1.0);
        // d2D = 36 m: 0.5 + e^−1 · 0.5 = 0.683940...
        close(los_probability(Scenario::UmiStreetCanyon, 36.0, 1.5), 0.5 + 0.5 * (-1.0f64).exp());
        // d2D = 100 m: 0.18 + e^(−100/36) · 0.82 = 0.230985...
        close(los_probability(Scenario::UmiStreetCanyon, 100.0, 1.5), 0.18 + (-100.0f64 / 36.0).exp() * 0.82);
        assert!((los_probability(Scenario::UmiStreetCanyon, 100.0, 1.5) - 0.230985).abs() < 1e-6);
    }

    #[test]
    fn uma_values() {
        // d2D = 63 m: 18/63 + e^−1 (1 − 18/63) = 0.548485...
        close(los_probability(Scenario::Uma, 63.0, 1.5), 18.0 / 63.0 + (-1.0f64).exp() * (45.0 / 63.0));
        assert!((los_probability(Scenario::Uma, 63.0, 1.5) - 0.548485).abs() < 1e-6);
        // A UE on a 18 m high floor (C' = 0.5^1.5) at 150 m.
        let base = 0.12 + (-150.0f64 / 63.0).exp() * 0.88;
        let c = 0.5f64.powf(1.5);
        close(los_probability(Scenario::Uma, 150.0, 18.0), base * (1.0 + c * 1.25 * 1.5f64.powi(3) * (-1.0f64).exp()));
    }

    #[test]
    fn decreasing_with_distance() {
        let mut prev = 1.0;
        for d in (20..2000).step_by(10) {
            let p = los_probability(Scenario::UmiStreetCanyon, d as f64, 1.5);
            assert!(p <= prev && p > 0.0);
            prev = p;
        }
    }
}
