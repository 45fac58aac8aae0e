//! TR 38.901 §7.8.1's large-scale calibration (docs/models/channel.md §13): UEs dropped over 19
//! sites × 3 sectors with wrap-around, each UE's coupling loss to its serving sector and its
//! geometry SIR and SINR, from the same path loss, LOS probability, shadowing, O2I and antenna
//! models the links use. No fast fading (the calibration has none).
//!
//! The drop, as the calibration specifies it (Table 7.8-1, UT distribution of TR 36.873):
//! - sites on a hexagonal grid at the inter-site distance, three sectors each with boresights
//!   30°, 150° and 270°; every sector a regular hexagon of circumradius ISD/3 with its site at
//!   a corner; the same number of UEs dropped uniformly in each sector;
//! - 80 % of the UEs indoors, on floor n of a building of N floors (N uniform in 4..=8, n in
//!   1..=N) at h_UT = 3(n − 1) + 1.5 m, d_2D-in the smaller of two uniform draws in 0–25 m,
//!   behind a low-loss or a high-loss façade with even odds, with its log-normal spread σ_P;
//!   20 % outdoors at 1.5 m;
//! - a UE is at least the minimum distance (outdoor part) from every site;
//! - per UE and site: the LOS state drawn from the LOS probability at the outdoor distance,
//!   the path loss at the 3-D distance, an independent shadow-fading draw (shared by the
//!   site's sectors);
//! - the sector antenna: a column of 10 elements λ/2 apart (TR 38.901 §7.3, 8 dBi elements)
//!   with fixed weights tilting its beam to 102° zenith (12° down), one port; the UE's antenna
//!   isotropic;
//! - wrap-around: each site is taken at whichever of its seven images (the cluster shifted to
//!   each of its six neighbours) is nearest the UE;
//! - the serving sector is the one with the least coupling loss (path loss, shadowing and O2I
//!   minus the antenna gain); geometry SIR = serving power over the sum from the other 56
//!   sectors, SINR adds the noise.

use std::f64::consts::PI;

use rand_core::RngCore;

use crate::antenna::{Angles, ElementPattern, Orientation, Panel};
use crate::geometry::Point2;
use crate::los_probability::los_probability;
use crate::pathloss::{O2iModel, PathLoss, Scenario};
use crate::rng::{normal, uniform01, uniform_in};
use crate::sinr::noise_dbm;
use crate::units::{db_to_lin, lin_to_db};

/// The sectors' boresights (Table 7.8-1).
const BORESIGHTS_DEG: [f64; 3] = [30.0, 150.0, 270.0];
/// The sector beam's zenith: 102°, 12° below the horizon (Table 7.8-1).
const BEAM_ZENITH_DEG: f64 = 102.0;
/// Axial coordinates of the six wrap-around shifts of a 19-site cluster (radius 2: (2R+1, −R)
/// and its rotations by 60°).
const WRAP_SHIFTS: [(i32, i32); 6] = [(5, -2), (2, 3), (-3, 5), (-5, 2), (-2, -3), (3, -5)];

/// One calibration drop's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CalibrationConfig {
    pub scenario: Scenario,
    pub fc_ghz: f64,
    pub isd_m: f64,
    pub h_bs_m: f64,
    /// Minimum 2-D distance from every site (of an indoor UE, its outdoor part).
    pub min_distance_m: f64,
    pub tx_power_dbm: f64,
    pub bandwidth_hz: f64,
    pub noise_figure_db: f64,
    /// UEs per sector.
    pub ues_per_sector: usize,
}

impl CalibrationConfig {
    /// Table 7.8-1's large-scale calibration at `fc_ghz` (30 GHz: 35 dBm, 100 MHz, NF 9 dB):
    /// UMa with ISD 500 m, 25 m sites and 35 m minimum distance, or UMi street canyon with ISD
    /// 200 m, 10 m sites and 10 m.
    pub fn tr38901(scenario: Scenario, ues_per_sector: usize) -> Self {
        let (isd_m, h_bs_m, min_distance_m) = match scenario {
            Scenario::Uma => (500.0, 25.0, 35.0),
            Scenario::UmiStreetCanyon => (200.0, 10.0, 10.0),
        };
        CalibrationConfig {
            scenario,
            fc_ghz: 30.0,
            isd_m,
            h_bs_m,
            min_distance_m,
            tx_power_dbm: 35.0,
            bandwidth_hz: 100e6,
            noise_figure_db: 9.0,
            ues_per_sector,
        }
    }
}

/// What the calibration reports of one UE, in dB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UeResult {
    /// Path loss + shadowing + O2I − antenna gain toward the serving sector.
    pub coupling_loss_db: f64,
    pub sir_db: f64,
    pub sinr_db: f64,
    pub indoor: bool,
    /// LOS to the serving site.
    pub los: bool,
}

/// The 19 sites, centre first: axial coordinates (i, j) with max(|i|, |j|, |i + j|) ≤ 2 on the
/// lattice spanned by ISD at 30° and at 90°, which lets the three sector hexagons of every
/// site tile the plane.
pub fn sites(isd_m: f64) -> Vec<Point2> {
    let mut axial: Vec<(i32, i32)> = Vec::new();
    for i in -2..=2i32 {
        for j in -2..=2i32 {
            if i.abs().max(j.abs()).max((i + j).abs()) <= 2 {
                axial.push((i, j));
            }
        }
    }
    axial.sort_by_key(|&(i, j)| (i.abs().max(j.abs()).max((i + j).abs()), i, j));
    axial.into_iter().map(|(i, j)| lattice(isd_m, i, j)).collect()
}

fn lattice(isd_m: f64, i: i32, j: i32) -> Point2 {
    let (i, j) = (f64::from(i), f64::from(j));
    Point2::new(isd_m * i * (PI / 6.0).cos(), isd_m * (i * (PI / 6.0).sin() + j))
}

/// The image of `site` nearest `ue` among the site and its six wrap-around copies.
pub fn nearest_image(isd_m: f64, site: Point2, ue: Point2) -> Point2 {
    let mut best = site;
    for &(i, j) in &WRAP_SHIFTS {
        let shift = lattice(isd_m, i, j);
        let image = Point2::new(site.x_m + shift.x_m, site.y_m + shift.y_m);
        if image.distance_m(ue) < best.distance_m(ue) {
            best = image;
        }
    }
    best
}

/// A point drawn uniformly in the sector hexagon around `center` (circumradius `r`, corners
/// at 30° + 60° k, so that its edges face its six neighbours).
fn in_hexagon(center: Point2, r: f64, rng: &mut impl RngCore) -> Point2 {
    let apothem = r * (PI / 6.0).cos();
    loop {
        let p = Point2::new(uniform_in(rng, -apothem, apothem), uniform_in(rng, -r, r));
        let inside = (0..3).all(|k| {
            let (s, c) = (f64::from(k) * PI / 3.0).sin_cos();
            (p.x_m * c + p.y_m * s).abs() <= apothem
        });
        if inside {
            return Point2::new(center.x_m + p.x_m, center.y_m + p.y_m);
        }
    }
}

/// The sector antenna of Table 7.8-1: one port over a column of 10 elements.
pub fn sector_panel(boresight_deg: f64) -> Panel {
    Panel {
        rows: 10,
        columns: 1,
        spacing_wavelengths: 0.5,
        pattern: ElementPattern::ThreeGpp,
        element_gain_dbi: 8.0,
        orientation: Orientation::Fixed { bearing_rad: boresight_deg.to_radians(), downtilt_rad: 0.0 },
    }
}

/// Where a UE stands and what is between it and the sites.
struct Ue {
    at: Point2,
    indoor: bool,
    h_ut_m: f64,
    /// Indoor distance (0 outdoors), and the façade's loss with its spread.
    d_in_m: f64,
    o2i_db: f64,
}

fn draw_ue(config: &CalibrationConfig, sites: &[Point2], sector_center: Point2, rng: &mut impl RngCore) -> Ue {
    let indoor = uniform01(rng) < 0.8;
    let (h_ut_m, d_in_m, o2i_db) = if indoor {
        let floors = 4 + (rng.next_u64() % 5) as u32;
        let floor = 1 + (rng.next_u64() % u64::from(floors)) as u32;
        let d_in = uniform_in(rng, 0.0, 25.0).min(uniform_in(rng, 0.0, 25.0));
        let (model, sigma_db) = if uniform01(rng) < 0.5 { (O2iModel::LowLoss, 4.4) } else { (O2iModel::HighLoss, 6.5) };
        (3.0 * f64::from(floor - 1) + 1.5, d_in, model.loss_db(config.fc_ghz, d_in) + sigma_db * normal(rng))
    } else {
        (1.5, 0.0, 0.0)
    };
    let r = config.isd_m / 3.0;
    loop {
        let at = in_hexagon(sector_center, r, rng);
        let far_enough = sites.iter().all(|&s| nearest_image(config.isd_m, s, at).distance_m(at) - d_in_m >= config.min_distance_m);
        if far_enough {
            return Ue { at, indoor, h_ut_m, d_in_m, o2i_db };
        }
    }
}

/// Drop `config.ues_per_sector` UEs in every sector and compute what the calibration reports.
pub fn drop(config: &CalibrationConfig, rng: &mut impl RngCore) -> Vec<UeResult> {
    let sites = sites(config.isd_m);
    let panels = BORESIGHTS_DEG.map(sector_panel);
    let beams = BORESIGHTS_DEG.map(|b| Angles { azimuth_rad: b.to_radians(), zenith_rad: BEAM_ZENITH_DEG.to_radians() });
    let noise_mw = db_to_lin(noise_dbm(config.bandwidth_hz, config.noise_figure_db));
    let r = config.isd_m / 3.0;
    let mut results = Vec::with_capacity(sites.len() * 3 * config.ues_per_sector);
    let mut received_mw = vec![0.0; sites.len() * 3];
    for &site in &sites {
        for boresight in BORESIGHTS_DEG {
            let b = boresight.to_radians();
            let center = Point2::new(site.x_m + r * b.cos(), site.y_m + r * b.sin());
            for _ in 0..config.ues_per_sector {
                let ue = draw_ue(config, &sites, center, rng);
                let pathloss = PathLoss::new(config.scenario, config.fc_ghz, config.h_bs_m, ue.h_ut_m);
                let mut los_to = vec![false; sites.len()];
                for (s, &site) in sites.iter().enumerate() {
                    let image = nearest_image(config.isd_m, site, ue.at);
                    let d2d = image.distance_m(ue.at);
                    let los = uniform01(rng) < los_probability(config.scenario, d2d - ue.d_in_m, ue.h_ut_m);
                    let shadowing_db = config.scenario.shadow_sigma_db(los) * normal(rng);
                    let loss_db = pathloss.db(los, d2d) + shadowing_db + ue.o2i_db;
                    let toward = Angles::between(image, config.h_bs_m, ue.at, ue.h_ut_m);
                    for k in 0..3 {
                        let gain_db = panels[k].gain_db(toward, beams[k]);
                        received_mw[3 * s + k] = db_to_lin(config.tx_power_dbm - loss_db + gain_db);
                    }
                    los_to[s] = los;
                }
                let (serving, &signal_mw) = received_mw.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).expect("57 sectors");
                let interference_mw: f64 = received_mw.iter().sum::<f64>() - signal_mw;
                results.push(UeResult {
                    coupling_loss_db: config.tx_power_dbm - lin_to_db(signal_mw),
                    sir_db: lin_to_db(signal_mw / interference_mw),
                    sinr_db: lin_to_db(signal_mw / (interference_mw + noise_mw)),
                    indoor: ue.indoor,
                    los: los_to[serving / 3],
                });
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    #[test]
    fn nineteen_sites_one_isd_apart() {
        let s = sites(500.0);
        assert_eq!(s.len(), 19);
        assert_eq!(s[0], Point2::new(0.0, 0.0));
        // Six at one ISD, twelve farther; every site's nearest neighbour one ISD away.
        assert_eq!(s.iter().filter(|p| (p.distance_m(s[0]) - 500.0).abs() < 1e-9).count(), 6);
        for a in &s {
            let nearest = s.iter().filter(|b| *b != a).map(|b| a.distance_m(*b)).fold(f64::INFINITY, f64::min);
            assert!((nearest - 500.0).abs() < 1e-9);
        }
    }

    #[test]
    fn wrap_around_gives_every_ue_a_full_ring_of_neighbours() {
        // A UE at the edge of the cluster sees each site's nearest image: no site is farther
        // than the cluster's radius, and the sites around it are one ISD apart as at the centre.
        let s = sites(200.0);
        let edge = Point2::new(s[18].x_m + 60.0, s[18].y_m);
        let images: Vec<Point2> = s.iter().map(|&site| nearest_image(200.0, site, edge)).collect();
        let far = images.iter().map(|p| p.distance_m(edge)).fold(0.0, f64::max);
        assert!(far < 2.65 * 200.0, "{far}");
        let mut d: Vec<f64> = images.iter().map(|p| p.distance_m(edge)).collect();
        d.sort_by(f64::total_cmp);
        let mut centre: Vec<f64> = s.iter().map(|p| p.distance_m(Point2::new(60.0, 0.0))).collect();
        centre.sort_by(f64::total_cmp);
        for (a, b) in d.iter().zip(&centre) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn sector_hexagons_hold_their_ues() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let r = 100.0;
        for _ in 0..2000 {
            let p = in_hexagon(Point2::new(10.0, 20.0), r, &mut rng);
            assert!(p.distance_m(Point2::new(10.0, 20.0)) <= r + 1e-9);
        }
    }

    #[test]
    fn the_sector_port_peaks_at_its_tilt() {
        // 8 dBi element + 10 log10(10) at the beam tilted electrically to 102°, less the
        // untilted element's −12·(12/65)² dB there; 20° above it the column's factor falls.
        let p = sector_panel(30.0);
        let beam = Angles { azimuth_rad: 30f64.to_radians(), zenith_rad: 102f64.to_radians() };
        assert!((p.gain_db(beam, beam) - (18.0 - 12.0 * (12.0f64 / 65.0).powi(2))).abs() < 1e-9);
        let above = Angles { azimuth_rad: 30f64.to_radians(), zenith_rad: 82f64.to_radians() };
        assert!(p.gain_db(above, beam) < 18.0 - 10.0);
        // Behind the sector: the 30 dB front-to-back limit at most.
        let behind = Angles { azimuth_rad: 210f64.to_radians(), zenith_rad: 102f64.to_radians() };
        assert!(p.gain_db(behind, beam) <= 18.0 - 30.0 + 1e-9);
    }

    #[test]
    fn a_drop_repeats_and_is_physical() {
        let config = CalibrationConfig::tr38901(Scenario::UmiStreetCanyon, 2);
        let a = drop(&config, &mut Xoshiro256PlusPlus::seed_from_u64(1));
        let b = drop(&config, &mut Xoshiro256PlusPlus::seed_from_u64(1));
        assert_eq!(a, b);
        assert_eq!(a.len(), 19 * 3 * 2);
        for u in &a {
            // The serving sector is the strongest: never below the sum of the rest by more than
            // the 56 others could each be equal to it; SINR never above SIR.
            assert!(u.sir_db > -10.0 * 56f64.log10() - 1e-9 && u.sinr_db <= u.sir_db + 1e-12, "{u:?}");
            assert!(u.coupling_loss_db > 60.0, "{u:?}");
        }
    }
}
