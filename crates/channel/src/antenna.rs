//! Antenna panels (docs/models/channel.md §6): the TR 38.901 §7.3 element pattern, a uniform
//! planar array's factor, and analog beams with ideal steering.
//!
//! Angles follow TR 38.901 §7.1: a direction is its azimuth φ (from +x toward +y) and its
//! zenith θ (from +z; 90° is horizontal). A panel lies in its local y–z plane and faces its
//! local +x axis (its boresight); `bearing` turns it in azimuth and `downtilt` tips it down.
//!
//! A beam is steered ideally: the weights cancel the phase of every element toward the
//! steered direction, so the array factor there is the element count N, the peak. Toward
//! any other direction it is |Σ w·a|², smaller, and the element pattern weighs both. The
//! serving link of a cell whose panel faces the UE it serves thus keeps the ideal gain
//! 10 log10 N of the link budget; a neighbour's beam steered at another UE reaches a victim
//! through the array's side lobes and the element's roll-off.

use std::f64::consts::PI;

use crate::error::ConfigError;
use crate::geometry::Point2;
use crate::units::{db_to_lin, lin_to_db};

/// The angles of a direction of departure or arrival.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Angles {
    pub azimuth_rad: f64,
    pub zenith_rad: f64,
}

impl Angles {
    /// From the antenna at (`from`, `from_height_m`) toward (`to`, `to_height_m`).
    pub fn between(from: Point2, from_height_m: f64, to: Point2, to_height_m: f64) -> Angles {
        let (dx, dy, dz) = (to.x_m - from.x_m, to.y_m - from.y_m, to_height_m - from_height_m);
        Angles { azimuth_rad: dy.atan2(dx), zenith_rad: dx.hypot(dy).atan2(dz) }
    }
}

/// The radiation pattern of one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementPattern {
    /// The same gain in every direction (an array of these has a mirror lobe behind it).
    Isotropic,
    /// TR 38.901 Table 7.3-1: 65° half-power beamwidths, 30 dB side-lobe and front-to-back
    /// limits.
    ThreeGpp,
}

/// TR 38.901 Table 7.3-1's parameters.
const HALF_POWER_BEAMWIDTH_DEG: f64 = 65.0;
const SIDE_LOBE_LIMIT_DB: f64 = 30.0;
const FRONT_TO_BACK_DB: f64 = 30.0;

impl ElementPattern {
    /// Gain relative to the element's peak, in dB (≤ 0), at local zenith `theta` and azimuth
    /// `phi` (radians, φ in (−π, π]).
    pub fn relative_gain_db(self, theta: f64, phi: f64) -> f64 {
        match self {
            ElementPattern::Isotropic => 0.0,
            ElementPattern::ThreeGpp => {
                let v = -(12.0 * ((theta.to_degrees() - 90.0) / HALF_POWER_BEAMWIDTH_DEG).powi(2)).min(SIDE_LOBE_LIMIT_DB);
                let h = -(12.0 * (phi.to_degrees() / HALF_POWER_BEAMWIDTH_DEG).powi(2)).min(FRONT_TO_BACK_DB);
                -(-(v + h)).min(FRONT_TO_BACK_DB)
            }
        }
    }
}

/// Where a panel's boresight points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Orientation {
    /// Turned toward the direction its beam is steered at: a cell (or UE) with panels all
    /// around serves each link from the one facing it. Its peak gain goes to every served UE.
    Facing,
    /// A fixed boresight (a sector): azimuth `bearing_rad`, tipped down by `downtilt_rad`.
    Fixed { bearing_rad: f64, downtilt_rad: f64 },
}

/// A uniform planar array: `rows` × `columns` elements `spacing_wavelengths` apart, each with
/// `pattern` and a peak gain `element_gain_dbi`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Panel {
    pub rows: u32,
    pub columns: u32,
    pub spacing_wavelengths: f64,
    pub pattern: ElementPattern,
    pub element_gain_dbi: f64,
    pub orientation: Orientation,
}

impl Panel {
    /// The panel of `elements` antennas the link budget has always assumed: as square as the
    /// count allows (8 × 8 for 64, 4 × 4 for 16, 4 × 8 for 32), half-wavelength spacing,
    /// TR 38.901 elements with a 0 dBi peak, facing what it serves, so that the serving gain is
    /// exactly 10 log10 N.
    pub fn facing(elements: u32) -> Panel {
        let rows = (1..=elements).filter(|r| elements % r == 0 && r * r <= elements).max().unwrap_or(1);
        Panel {
            rows,
            columns: elements / rows,
            spacing_wavelengths: 0.5,
            pattern: ElementPattern::ThreeGpp,
            element_gain_dbi: 0.0,
            orientation: Orientation::Facing,
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.rows == 0 || self.columns == 0 {
            return Err(ConfigError::new("panel rows × columns", (self.rows, self.columns), "at least one element each way"));
        }
        if !(self.spacing_wavelengths.is_finite() && self.spacing_wavelengths > 0.0) {
            return Err(ConfigError::new("panel spacing_wavelengths", self.spacing_wavelengths, "a spacing > 0 wavelengths"));
        }
        if !self.element_gain_dbi.is_finite() {
            return Err(ConfigError::new("panel element_gain_dbi", self.element_gain_dbi, "a finite gain in dBi"));
        }
        Ok(())
    }

    pub fn elements(&self) -> u32 {
        self.rows * self.columns
    }

    /// The gain toward the steered direction of a facing panel: element peak + 10 log10 N.
    pub fn peak_gain_db(&self) -> f64 {
        self.element_gain_dbi + lin_to_db(f64::from(self.elements()))
    }

    /// Gain in dB toward `toward` while the beam is steered at `steer`.
    pub fn gain_db(&self, toward: Angles, steer: Angles) -> f64 {
        lin_to_db(self.gain_lin(toward, steer))
    }

    /// [`Panel::gain_db`] as a power ratio (what sums of interference need, without the trip
    /// through dB).
    pub fn gain_lin(&self, toward: Angles, steer: Angles) -> f64 {
        let (theta, phi, theta_s, phi_s) = match self.orientation {
            // Turned toward the steered direction, which is then its boresight.
            Orientation::Facing => {
                let (theta, phi) = local_angles(toward, steer.azimuth_rad, steer.zenith_rad - PI / 2.0);
                (theta, phi, PI / 2.0, 0.0)
            }
            Orientation::Fixed { bearing_rad, downtilt_rad } => {
                let (theta, phi) = local_angles(toward, bearing_rad, downtilt_rad);
                let (theta_s, phi_s) = local_angles(steer, bearing_rad, downtilt_rad);
                (theta, phi, theta_s, phi_s)
            }
        };
        // Element (m, n) sits at (0, n·d, m·d) wavelengths: the phase toward a direction is
        // 2π d (n sin θ sin φ + m cos θ), and steering subtracts that of the steered one.
        let two_pi_d = 2.0 * PI * self.spacing_wavelengths;
        let vertical = array_factor(self.rows, two_pi_d * (theta.cos() - theta_s.cos()));
        let horizontal = array_factor(self.columns, two_pi_d * (theta.sin() * phi.sin() - theta_s.sin() * phi_s.sin()));
        db_to_lin(self.element_gain_dbi + self.pattern.relative_gain_db(theta, phi)) * vertical * horizontal
    }
}

/// Direction `d` in the local coordinates of a panel turned by `bearing` in azimuth and tipped
/// down by `downtilt` (TR 38.901 eq. 7.1-7 and 7.1-8 with no slant): (θ', φ').
fn local_angles(d: Angles, bearing: f64, downtilt: f64) -> (f64, f64) {
    let (st, ct) = d.zenith_rad.sin_cos();
    let (sb, cb) = downtilt.sin_cos();
    let (sp, cp) = (d.azimuth_rad - bearing).sin_cos();
    let theta = (cb * ct + sb * cp * st).clamp(-1.0, 1.0).acos();
    let phi = (st * sp).atan2(cb * st * cp - sb * ct);
    (theta, phi)
}

/// |Σ_{k<n} e^{jkψ}|² / n, the power gain of `n` ideally weighted elements on a line whose
/// phase step toward the direction (relative to the steered one) is `psi`: n at ψ = 0 (mod 2π).
fn array_factor(n: u32, psi: f64) -> f64 {
    let n_f = f64::from(n);
    let half = 0.5 * psi;
    let denominator = half.sin();
    if denominator.abs() < 1e-9 {
        return n_f;
    }
    let numerator = (n_f * half).sin();
    numerator * numerator / (n_f * denominator * denominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEG: f64 = PI / 180.0;

    fn horizontal(azimuth_deg: f64) -> Angles {
        Angles { azimuth_rad: azimuth_deg * DEG, zenith_rad: 90.0 * DEG }
    }

    #[test]
    fn element_pattern_by_hand() {
        let e = ElementPattern::ThreeGpp;
        assert_eq!(e.relative_gain_db(90.0 * DEG, 0.0), 0.0);
        // At the half-power beamwidth's edge, 65°/2 off boresight: −12·(1/2)² = −3 dB.
        assert!((e.relative_gain_db(90.0 * DEG, 32.5 * DEG) + 3.0).abs() < 1e-12);
        assert!((e.relative_gain_db(57.5 * DEG, 0.0) + 3.0).abs() < 1e-12);
        // Behind the panel, the front-to-back limit.
        assert_eq!(e.relative_gain_db(90.0 * DEG, 180.0 * DEG), -30.0);
        // Both cuts add up to the limit: −12·(40/65)²·2 = −9.09 dB.
        let both = -2.0 * 12.0 * (40.0f64 / 65.0).powi(2);
        assert!((e.relative_gain_db(50.0 * DEG, 40.0 * DEG) - both).abs() < 1e-12);
        assert_eq!(ElementPattern::Isotropic.relative_gain_db(10.0 * DEG, 170.0 * DEG), 0.0);
    }

    #[test]
    fn steered_direction_gets_the_peak() {
        let p = Panel::facing(64);
        assert_eq!((p.rows, p.columns), (8, 8));
        assert_eq!((Panel::facing(16).rows, Panel::facing(32).rows, Panel::facing(7).rows), (4, 4, 1));
        let at = Angles { azimuth_rad: 0.7, zenith_rad: 1.9 };
        assert!((p.gain_db(at, at) - 10.0 * 64f64.log10()).abs() < 1e-9);
        assert!((p.gain_db(at, at) - p.peak_gain_db()).abs() < 1e-9);
        let sector = Panel { orientation: Orientation::Fixed { bearing_rad: 0.0, downtilt_rad: 0.0 }, element_gain_dbi: 8.0, ..p };
        // A fixed panel steered at its own boresight: 8 dBi + 18.06 dB.
        assert!((sector.gain_db(horizontal(0.0), horizontal(0.0)) - (8.0 + 10.0 * 64f64.log10())).abs() < 1e-9);
    }

    #[test]
    fn array_factor_by_hand() {
        // A facing panel of 1 × 8 elements, d = λ/2, steered at azimuth 0: toward azimuth φ in
        // the horizontal plane ψ = π sin φ, AF = sin²(4ψ)/(8 sin²(ψ/2)) (the element pattern
        // adds −12(φ/65°)²).
        let p = Panel { rows: 1, columns: 8, ..Panel::facing(8) };
        for phi_deg in [5.0, 10.0, 20.0, 45.0, 80.0] {
            let psi = PI * (phi_deg * DEG).sin();
            let af = (4.0 * psi).sin().powi(2) / (8.0 * (psi / 2.0).sin().powi(2));
            let expected = 10.0 * af.log10() - 12.0 * (phi_deg / 65.0f64).powi(2);
            let got = p.gain_db(horizontal(phi_deg), horizontal(0.0));
            assert!((got - expected).abs() < 1e-9, "φ {phi_deg}: {got} vs {expected}");
        }
        // The first null of 8 elements: sin φ = 2/8, so ψ = π/4 and 8ψ/2 = π.
        let null = (0.25f64).asin() / DEG;
        assert!(p.gain_db(horizontal(null), horizontal(0.0)) < -100.0);
    }

    #[test]
    fn away_is_weaker_than_at() {
        let p = Panel::facing(64);
        let victim = horizontal(30.0);
        let at_victim = p.gain_db(victim, victim);
        // 5° is inside the main lobe of 8 columns (half-power width ≈ 12.8°); beyond it the
        // victim is at least 3 dB below the peak.
        for (away, below_db) in [(5.0, 0.5), (15.0, 3.0), (60.0, 3.0), (120.0, 3.0), (180.0, 3.0)] {
            let g = p.gain_db(victim, horizontal(30.0 + away));
            assert!(g < at_victim - below_db, "{away}°: {g} dB against {at_victim} dB");
        }
        // Straight behind a facing panel only the front-to-back limit leaks (the mirror lobe
        // of the planar array is cut by the element).
        assert!((p.gain_db(horizontal(210.0), victim) - (p.peak_gain_db() - 30.0)).abs() < 1e-9);
    }

    #[test]
    fn downtilt_and_bearing_rotate_the_boresight() {
        let tilt = 12.0 * DEG;
        let sector = Panel {
            orientation: Orientation::Fixed { bearing_rad: 30.0 * DEG, downtilt_rad: tilt },
            ..Panel { rows: 1, columns: 1, ..Panel::facing(1) }
        };
        let boresight = Angles { azimuth_rad: 30.0 * DEG, zenith_rad: 102.0 * DEG };
        assert!(sector.gain_db(boresight, boresight).abs() < 1e-9);
        // 20° above the boresight in the vertical plane: −12·(20/65)² dB.
        let above = Angles { azimuth_rad: 30.0 * DEG, zenith_rad: 82.0 * DEG };
        assert!((sector.gain_db(above, boresight) + 12.0 * (20.0f64 / 65.0).powi(2)).abs() < 1e-9);
    }

    #[test]
    fn direction_between_points() {
        let d = Angles::between(Point2::new(0.0, 0.0), 10.0, Point2::new(0.0, 8.5), 1.5);
        assert!((d.azimuth_rad - PI / 2.0).abs() < 1e-12);
        assert!((d.zenith_rad - (90.0 * DEG + 45.0 * DEG)).abs() < 1e-12);
    }

    #[test]
    fn bad_panels_are_refused() {
        assert!(Panel { rows: 0, ..Panel::facing(4) }.validate().is_err());
        assert!(Panel { spacing_wavelengths: f64::NAN, ..Panel::facing(4) }.validate().is_err());
        assert!(Panel::facing(4).validate().is_ok());
    }
}
