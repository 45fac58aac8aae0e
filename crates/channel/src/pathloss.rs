//! Large-scale path loss, 3GPP TR 38.901 V17 §7.4.1, Table 7.4.1-1, and the
//! outdoor-to-indoor penetration loss of §7.4.3.
//!
//! Frequencies in GHz, distances in metres, results in dB. The formulas are
//! applied as written outside their stated validity range (10 m ≤ d2D ≤ 5 km)
//! rather than clamped, so a UE passing under the mast still gets a finite,
//! monotone loss (d3D ≥ h_BS − h_UT keeps the logarithms finite).

use crate::units::SPEED_OF_LIGHT_MPS;

/// Deployment scenario of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scenario {
    /// Urban micro, street canyon (default for mmWave small cells).
    #[default]
    UmiStreetCanyon,
    /// Urban macro (LTE macro cells, tall mmWave masts).
    Uma,
}

impl Scenario {
    /// Shadow-fading standard deviation σ_SF, Table 7.4.1-1.
    pub fn shadow_sigma_db(self, los: bool) -> f64 {
        match (self, los) {
            (Scenario::UmiStreetCanyon, true) => 4.0,
            (Scenario::UmiStreetCanyon, false) => 7.82,
            (Scenario::Uma, true) => 4.0,
            (Scenario::Uma, false) => 6.0,
        }
    }

    /// Shadow-fading decorrelation distance, TR 38.901 Table 7.5-6 (part 1).
    pub fn shadow_corr_distance_m(self, los: bool) -> f64 {
        match (self, los) {
            (Scenario::UmiStreetCanyon, true) => 10.0,
            (Scenario::UmiStreetCanyon, false) => 13.0,
            (Scenario::Uma, true) => 37.0,
            (Scenario::Uma, false) => 50.0,
        }
    }
}

/// Path loss of one cell–UE height pair at one carrier, with the
/// distance-independent terms computed once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathLoss {
    scenario: Scenario,
    h_ut_m: f64,
    /// (h_BS − h_UT)², the vertical part of d3D.
    dh2: f64,
    /// Break-point distance d'BP.
    d_bp_m: f64,
    /// 20 log10(f_c): the free-space frequency term of every LOS formula.
    fc20: f64,
    /// The NLOS frequency term: 21.3 log10(f_c) (UMi) or 20 log10(f_c) (UMa).
    fc_nlos: f64,
    /// The break-point correction 9.5 (UMi) or 9 (UMa) · log10(d'BP² + (h_BS − h_UT)²).
    bp_term: f64,
}

/// Effective environment height h_E. Table 7.4.1-1 note 1 sets h_E = 1 m for
/// UMi; for UMa h_E = 1 m with probability 1/(1 + C(d2D, h_UT)), and
/// C = 0 for h_UT < 13 m, so 1 m is exact for street-level UEs (we use it for
/// every UE height and document that UEs above 13 m are simplified).
const H_E_M: f64 = 1.0;

impl PathLoss {
    pub fn new(scenario: Scenario, fc_ghz: f64, h_bs_m: f64, h_ut_m: f64) -> Self {
        let d_bp_m = breakpoint_distance_m(fc_ghz, h_bs_m, h_ut_m);
        let dh2 = (h_bs_m - h_ut_m).powi(2);
        let lg = (d_bp_m * d_bp_m + dh2).log10();
        let (fc_nlos, bp_term) = match scenario {
            Scenario::UmiStreetCanyon => (21.3 * fc_ghz.log10(), 9.5 * lg),
            Scenario::Uma => (20.0 * fc_ghz.log10(), 9.0 * lg),
        };
        PathLoss { scenario, h_ut_m, dh2, d_bp_m, fc20: 20.0 * fc_ghz.log10(), fc_nlos, bp_term }
    }

    pub fn scenario(&self) -> Scenario {
        self.scenario
    }

    /// d'BP of this link (Table 7.4.1-1 note 1).
    pub fn breakpoint_m(&self) -> f64 {
        self.d_bp_m
    }

    /// 3-D distance for a ground distance.
    #[inline]
    pub fn d3d_m(&self, d2d_m: f64) -> f64 {
        (d2d_m * d2d_m + self.dh2).sqrt()
    }

    /// Path loss in dB at ground distance `d2d_m` in the given LOS state.
    pub fn db(&self, los: bool, d2d_m: f64) -> f64 {
        let d3d = self.d3d_m(d2d_m);
        let lg = d3d.log10();
        let pl_los = match (self.scenario, d2d_m <= self.d_bp_m) {
            // PL1 = 32.4 + 21 log10(d3D) + 20 log10(f_c)
            (Scenario::UmiStreetCanyon, true) => 32.4 + 21.0 * lg + self.fc20,
            // PL2 = 32.4 + 40 log10(d3D) + 20 log10(f_c) − 9.5 log10(d'BP² + (h_BS − h_UT)²)
            (Scenario::UmiStreetCanyon, false) => 32.4 + 40.0 * lg + self.fc20 - self.bp_term,
            // PL1 = 28.0 + 22 log10(d3D) + 20 log10(f_c)
            (Scenario::Uma, true) => 28.0 + 22.0 * lg + self.fc20,
            // PL2 = 28.0 + 40 log10(d3D) + 20 log10(f_c) − 9 log10(d'BP² + (h_BS − h_UT)²)
            (Scenario::Uma, false) => 28.0 + 40.0 * lg + self.fc20 - self.bp_term,
        };
        if los {
            return pl_los;
        }
        let pl_nlos_prime = match self.scenario {
            // PL'_UMi-NLOS = 35.3 log10(d3D) + 22.4 + 21.3 log10(f_c) − 0.3 (h_UT − 1.5)
            Scenario::UmiStreetCanyon => 35.3 * lg + 22.4 + self.fc_nlos - 0.3 * (self.h_ut_m - 1.5),
            // PL'_UMa-NLOS = 13.54 + 39.08 log10(d3D) + 20 log10(f_c) − 0.6 (h_UT − 1.5)
            Scenario::Uma => 13.54 + 39.08 * lg + self.fc_nlos - 0.6 * (self.h_ut_m - 1.5),
        };
        // NLOS loss is never below the LOS loss at the same distance.
        pl_los.max(pl_nlos_prime)
    }
}

/// Break-point distance d'BP = 4 h'BS h'UT f_c / c with h' = h − h_E
/// (Table 7.4.1-1 note 1), f_c in Hz.
pub fn breakpoint_distance_m(fc_ghz: f64, h_bs_m: f64, h_ut_m: f64) -> f64 {
    4.0 * (h_bs_m - H_E_M) * (h_ut_m - H_E_M) * fc_ghz * 1e9 / SPEED_OF_LIGHT_MPS
}

/// A building's façade (TR 38.901 §7.4.3.1, Table 7.4.3-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum O2iModel {
    /// 30 % standard glass, 70 % concrete.
    #[default]
    LowLoss,
    /// 70 % infrared-reflective glass, 30 % concrete.
    HighLoss,
}

impl O2iModel {
    /// Outdoor-to-indoor penetration loss (TR 38.901 §7.4.3.1, Tables 7.4.3-1 and 7.4.3-2):
    /// PL_tw = 5 − 10 log10(Σ p_i 10^(−L_i/10)) through the façade, plus PL_in = 0.5 dB per
    /// metre indoors. The model's log-normal spread σ_P (4.4 dB low-loss, 6.5 dB high-loss)
    /// is not applied (docs/models/channel.md §2 uses the mean).
    pub fn loss_db(self, fc_ghz: f64, d_in_m: f64) -> f64 {
        let l_glass = 2.0 + 0.2 * fc_ghz;
        let l_irr_glass = 23.0 + 0.3 * fc_ghz;
        let l_concrete = 5.0 + 4.0 * fc_ghz;
        let through = |share_glass: f64, l_glass: f64| {
            5.0 - 10.0 * (share_glass * 10f64.powf(-l_glass / 10.0) + (1.0 - share_glass) * 10f64.powf(-l_concrete / 10.0)).log10()
        };
        let pl_tw = match self {
            O2iModel::LowLoss => through(0.3, l_glass),
            O2iModel::HighLoss => through(0.7, l_irr_glass),
        };
        pl_tw + 0.5 * d_in_m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FC: f64 = 28.0;
    const HBS: f64 = 10.0;
    const HUT: f64 = 1.5;

    /// Ground distance giving the 3-D distance `d3d` for the default heights.
    fn d2d_for(d3d: f64) -> f64 {
        (d3d * d3d - (HBS - HUT).powi(2)).sqrt()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }

    #[test]
    fn umi_los_at_100m() {
        // 32.4 + 21·log10(100) + 20·log10(28) = 32.4 + 42 + 28.9432 = 103.3432 dB
        let pl = PathLoss::new(Scenario::UmiStreetCanyon, FC, HBS, HUT);
        close(pl.db(true, d2d_for(100.0)), 32.4 + 42.0 + 20.0 * 28f64.log10());
        close(pl.db(true, d2d_for(100.0)), 103.3431606268444);
    }

    #[test]
    fn umi_nlos_takes_the_max_branch() {
        let pl = PathLoss::new(Scenario::UmiStreetCanyon, FC, HBS, HUT);
        // At 100 m the NLOS formula dominates: 35.3·2 + 22.4 + 21.3·log10(28).
        close(pl.db(false, d2d_for(100.0)), 70.6 + 22.4 + 21.3 * 28f64.log10());
        // PL' − PL_LOS = 14.3 log10(d3D) − 10 + 1.3 log10(28) > 0 ⇔ d3D > 3.7 m, so
        // the LOS branch of max() only wins very close to a low mast.
        let tall = PathLoss::new(Scenario::UmiStreetCanyon, FC, 2.0, 1.5);
        let d3 = tall.d3d_m(1.0);
        let los = 32.4 + 21.0 * d3.log10() + 20.0 * 28f64.log10();
        let nlos = 35.3 * d3.log10() + 22.4 + 21.3 * 28f64.log10();
        assert!(los > nlos);
        close(tall.db(false, 1.0), los);
    }

    #[test]
    fn uma_los_and_nlos() {
        let pl = PathLoss::new(Scenario::Uma, FC, 25.0, HUT);
        let d2 = 200.0;
        let d3 = (d2 * d2 + 23.5f64 * 23.5).sqrt();
        close(pl.db(true, d2), 28.0 + 22.0 * d3.log10() + 20.0 * 28f64.log10());
        close(pl.db(false, d2), 13.54 + 39.08 * d3.log10() + 20.0 * 28f64.log10());
        // Hand value at d3D = 200 m exactly (2.30103 = log10 200):
        let pl_lte = PathLoss::new(Scenario::Uma, 2.1, 25.0, HUT);
        let d2_200 = (200.0f64 * 200.0 - 23.5 * 23.5).sqrt();
        close(pl_lte.db(true, d2_200), 28.0 + 22.0 * 2.3010299956639813 + 20.0 * 2.1f64.log10());
    }

    #[test]
    fn breakpoint_branch() {
        // d'BP = 4·9·0.5·28e9/3e8 = 1680 m for the defaults.
        let pl = PathLoss::new(Scenario::UmiStreetCanyon, FC, HBS, HUT);
        close(pl.breakpoint_m(), 1680.0);
        let d2 = 2000.0;
        let d3 = (d2 * d2 + 72.25f64).sqrt();
        let expected = 32.4 + 40.0 * d3.log10() + 20.0 * 28f64.log10() - 9.5 * (1680.0f64 * 1680.0 + 72.25).log10();
        close(pl.db(true, d2), expected);
        // The two segments meet (nearly) at the break point: continuity within 0.1 dB.
        let below = pl.db(true, 1680.0);
        let above = pl.db(true, 1680.0 + 1e-6);
        assert!((below - above).abs() < 0.1, "{below} {above}");
        // UMa: h' = 24 m · 0.5 m → d'BP = 4480 m at 28 GHz; check beyond it.
        let uma = PathLoss::new(Scenario::Uma, FC, 25.0, HUT);
        close(uma.breakpoint_m(), 4480.0);
        let d3 = (5000.0f64 * 5000.0 + 23.5 * 23.5).sqrt();
        let expected = 28.0 + 40.0 * d3.log10() + 20.0 * 28f64.log10() - 9.0 * (4480.0f64 * 4480.0 + 23.5 * 23.5).log10();
        close(uma.db(true, 5000.0), expected);
    }

    #[test]
    fn o2i_low_loss() {
        // At 28 GHz: L_glass = 7.6, L_concrete = 117; the glass path dominates:
        // PL_tw ≈ 5 − 10 log10(0.3·10^−0.76) = 5 + 5.229 + 7.6 = 17.829 dB.
        let l = O2iModel::LowLoss.loss_db(28.0, 5.0);
        let expected = 5.0 - 10.0 * (0.3 * 10f64.powf(-0.76) + 0.7 * 10f64.powf(-11.7)).log10() + 2.5;
        close(l, expected);
        assert!((l - 20.329).abs() < 1e-3, "{l}");
    }

    #[test]
    fn o2i_high_loss() {
        // At 28 GHz: L_IIRglass = 23 + 8.4 = 31.4, L_concrete = 117: PL_tw ≈ 5 − 10 log10(0.7·10^−3.14)
        // = 5 + 1.549 + 31.4 = 37.949 dB, plus 0.5 dB/m over 10 m.
        let l = O2iModel::HighLoss.loss_db(28.0, 10.0);
        let expected = 5.0 - 10.0 * (0.7 * 10f64.powf(-(23.0 + 0.3 * FC) / 10.0) + 0.3 * 10f64.powf(-11.7)).log10() + 5.0;
        close(l, expected);
        assert!((l - 42.949).abs() < 1e-3, "{l}");
        assert!(l > O2iModel::LowLoss.loss_db(28.0, 10.0) + 15.0);
    }

    #[test]
    fn shadowing_parameters() {
        assert_eq!(Scenario::UmiStreetCanyon.shadow_sigma_db(false), 7.82);
        assert_eq!(Scenario::Uma.shadow_sigma_db(false), 6.0);
        assert_eq!(Scenario::Uma.shadow_corr_distance_m(true), 37.0);
        assert_eq!(Scenario::UmiStreetCanyon.shadow_corr_distance_m(false), 13.0);
    }
}
