//! Per-user capacity of a cell under LTE or mmWave-like dynamics, for the
//! `spep-emulation` study (docs/studies.md#spep-emulation).
//!
//! C_user = share · B · SE(SINR*), SE the truncated Shannon fit of
//! docs/models/channel.md §8 ([`LinkAbstraction::se`]). The study's truncated Shannon
//! form K/ln2 · min(T, ln(1 + γ·SINR)), with T = c_max·ln2/K that is exactly
//! min(c_max, K·log2(1 + γ·SINR)), so the link abstraction is reused as is
//! (η_oh = 1: the study's C has no overhead factor).
//!
//! SINR* = SINR_base − SF (LTE) or SINR_base − SF − X_state (mmWave):
//! - SF ~ N(0, σ_LOS-SF), σ = 4 dB (TR 38.901 Table 7.4.1-1, UMi LOS),
//!   redrawn at every SINR sample;
//! - X_state ~ N(PL_state, σ_state), the mmWave excess loss of the current
//!   state of the two-state Markov chain of docs/models/channel.md §5
//!   ([`MarkovBlockage`]): PL_LOS = 0, σ_LOS = 4 dB; PL_NLOS = the UMi
//!   street-canyon NLOS − LOS path-loss difference at d2D = d3D = `distance_m`,
//!   28 GHz (≈ 13.0 dB at 30 m), σ_NLOS = 7.82 dB (Table 7.4.1-1). The loss is
//!   subtracted: an NLOS state lowers the SINR.
//!
//! SINR is sampled at k / `sinr_samples_per_s` seconds; the rate is
//! recomputed every `update_ns` from the latest sample.

use std::sync::Arc;

use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::blockage::{BlockageModel, LinkGeometry, MarkovBlockage};
use crate::geometry::Point2;
use crate::link::LinkAbstraction;
use crate::los::Antenna;
use crate::pathloss::{PathLoss, Scenario};
use crate::rng::LinkRngs;
use crate::traces::SinrSeries;
use crate::units::ns_to_s;

/// The mmWave carrier of the excess-loss model (docs/models/channel.md §12: 28 GHz).
const MMWAVE_FC_GHZ: f64 = 28.0;
/// Antenna height of both ends, so that d2D = d3D as the study asks.
const ANTENNA_HEIGHT_M: f64 = 1.5;
/// The excess loss and LOS probability follow UMi street canyon (small cells).
const SCENARIO: Scenario = Scenario::UmiStreetCanyon;

/// Which dynamics act on the baseline SINR.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CapacityCarrier {
    /// Shadow fading only.
    Lte,
    /// Shadow fading plus the Markov LOS/NLOS excess loss; `lambda_per_s` is
    /// the LOS→NLOS rate, μ follows from P_LOS(`distance_m`).
    Mmwave { lambda_per_s: f64, distance_m: f64 },
}

/// Parameters of one capacity process.
#[derive(Clone, Debug)]
pub struct CapacityConfig {
    pub bandwidth_hz: f64,
    /// SINR_base: a one-point series is a constant.
    pub sinr_base: Arc<SinrSeries>,
    pub carrier: CapacityCarrier,
    /// σ_LOS-SF of the shadow-fading draw at each sample.
    pub shadow_sigma_db: f64,
    pub update_ns: u64,
    pub sinr_samples_per_s: u32,
    /// Share of the cell capacity one user gets (0.1: ten users).
    pub user_share: f64,
}

impl CapacityConfig {
    /// σ_LOS-SF of TR 38.901 Table 7.4.1-1 (UMi LOS, 4 dB).
    pub fn default_shadow_sigma_db() -> f64 {
        SCENARIO.shadow_sigma_db(true)
    }
}

/// The mmWave part: LOS state and the excess-loss draw of each state.
#[derive(Clone, Debug)]
struct ExcessLoss {
    blockage: MarkovBlockage,
    geometry: LinkGeometry,
    nlos_mean_db: f64,
    rng: Xoshiro256PlusPlus,
}

impl ExcessLoss {
    fn new(lambda_per_s: f64, distance_m: f64, rngs: &LinkRngs) -> Self {
        let pl = PathLoss::new(SCENARIO, MMWAVE_FC_GHZ, ANTENNA_HEIGHT_M, ANTENNA_HEIGHT_M);
        let antenna = Antenna { pos: Point2::new(0.0, 0.0), height_m: ANTENNA_HEIGHT_M };
        ExcessLoss {
            blockage: MarkovBlockage::new(lambda_per_s, SCENARIO, ANTENNA_HEIGHT_M, rngs.blockage.clone()),
            geometry: LinkGeometry { cell: antenna, ue: antenna, d2d_m: distance_m },
            nlos_mean_db: pl.db(false, distance_m) - pl.db(true, distance_m),
            rng: rngs.fading.clone(),
        }
    }

    /// (LOS?, excess loss in dB) at `now_ns`.
    fn sample(&mut self, now_ns: u64) -> (bool, f64) {
        let los = self.blockage.is_los(now_ns, &self.geometry);
        let (mean, sigma) = if los { (0.0, SCENARIO.shadow_sigma_db(true)) } else { (self.nlos_mean_db, SCENARIO.shadow_sigma_db(false)) };
        let n: f64 = StandardNormal.sample(&mut self.rng);
        (los, mean + sigma * n)
    }
}

/// The capacity process: call [`CapacityProcess::on_update`] at each
/// [`CapacityProcess::next_deadline_ns`].
///
/// Streams (from [`LinkRngs`]): `blockage` drives the Markov chain,
/// `shadowing` the SF draws, `fading` the excess-loss draws, so the LTE and
/// mmWave runs of one seed share their shadow-fading sequence.
#[derive(Clone, Debug)]
pub struct CapacityProcess {
    cfg: CapacityConfig,
    phy: LinkAbstraction,
    excess: Option<ExcessLoss>,
    shadow_rng: Xoshiro256PlusPlus,
    trace_hint: usize,
    next_sample: u64,
    next_deadline_ns: u64,
    sinr_db: f64,
    los: bool,
}

impl CapacityProcess {
    pub fn new(cfg: CapacityConfig, rngs: LinkRngs) -> Self {
        let excess = match cfg.carrier {
            CapacityCarrier::Lte => None,
            CapacityCarrier::Mmwave { lambda_per_s, distance_m } => Some(ExcessLoss::new(lambda_per_s, distance_m, &rngs)),
        };
        let phy = LinkAbstraction { bandwidth_hz: cfg.bandwidth_hz, eta_oh: 1.0, mcs: false };
        CapacityProcess {
            cfg,
            phy,
            excess,
            shadow_rng: rngs.shadowing,
            trace_hint: 0,
            next_sample: 0,
            next_deadline_ns: 0,
            sinr_db: f64::NEG_INFINITY,
            los: true,
        }
    }

    /// When the rate next changes.
    pub fn next_deadline_ns(&self) -> u64 {
        self.next_deadline_ns
    }

    /// SINR* of the latest sample, dB.
    pub fn sinr_db(&self) -> f64 {
        self.sinr_db
    }

    /// LOS state of the latest sample (always true for LTE).
    pub fn is_los(&self) -> bool {
        self.los
    }

    fn sample_ns(&self, k: u64) -> u64 {
        k * 1_000_000_000 / u64::from(self.cfg.sinr_samples_per_s)
    }

    /// Take the SINR samples due by `now_ns` and return the per-user rate
    /// in bit/s for the next `update_ns`.
    pub fn on_update(&mut self, now_ns: u64) -> f64 {
        while self.sample_ns(self.next_sample) <= now_ns {
            let at_ns = self.sample_ns(self.next_sample);
            let base = self.cfg.sinr_base.sinr_db_at(ns_to_s(at_ns), &mut self.trace_hint);
            let n: f64 = StandardNormal.sample(&mut self.shadow_rng);
            let (los, excess_db) = self.excess.as_mut().map_or((true, 0.0), |e| e.sample(at_ns));
            self.sinr_db = base - self.cfg.shadow_sigma_db * n - excess_db;
            self.los = los;
            self.next_sample += 1;
        }
        self.next_deadline_ns = now_ns + self.cfg.update_ns;
        self.cfg.user_share * self.phy.rate_bps(self.sinr_db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::los_probability::los_probability;
    use rand_core::SeedableRng;

    fn cfg(carrier: CapacityCarrier, sigma: f64) -> CapacityConfig {
        CapacityConfig {
            bandwidth_hz: 10e6,
            sinr_base: Arc::new(SinrSeries::from_points(&[(0.0, 10.0)]).unwrap()),
            carrier,
            shadow_sigma_db: sigma,
            update_ns: 100_000_000,
            sinr_samples_per_s: 3,
            user_share: 0.1,
        }
    }

    fn process(c: CapacityConfig, seed: u64) -> CapacityProcess {
        CapacityProcess::new(c, LinkRngs::from_stream(Xoshiro256PlusPlus::seed_from_u64(seed)))
    }

    /// Rates at the updates of the first `n` periods.
    fn rates(p: &mut CapacityProcess, n: usize) -> Vec<(u64, f64)> {
        (0..n)
            .map(|_| {
                let t = p.next_deadline_ns();
                (t, p.on_update(t))
            })
            .collect()
    }

    const MMWAVE: CapacityCarrier = CapacityCarrier::Mmwave { lambda_per_s: 0.5, distance_m: 30.0 };

    #[test]
    fn shannon_by_hand() {
        // 10 dB, B = 10 MHz: 0.9449·log2(1 + 0.4852·10) = 0.9449·2.548930 = 2.408484 bit/s/Hz,
        // C = 24.08484 Mbit/s, C_user = C/10.
        let mut p = process(cfg(CapacityCarrier::Lte, 0.0), 1);
        let r = p.on_update(0);
        assert!((r - 2.408484e6).abs() < 1.0, "{r}");
        // 30 dB is above the cap: c_max · B / 10.
        let c = CapacityConfig { sinr_base: Arc::new(SinrSeries::from_points(&[(0.0, 30.0)]).unwrap()), ..cfg(CapacityCarrier::Lte, 0.0) };
        assert!((process(c, 1).on_update(0) - 5.5547e6).abs() < 1e-6);
    }

    #[test]
    fn lte_has_no_excess_loss() {
        let mut p = process(cfg(CapacityCarrier::Lte, 0.0), 3);
        let r = rates(&mut p, 100);
        assert!(r.iter().all(|&(_, x)| x == r[0].1));
        assert!((p.sinr_db() - 10.0).abs() < 1e-12 && p.is_los());
    }

    #[test]
    fn mmwave_excess_loss_lowers_the_mean_rate() {
        let mean = |c| rates(&mut process(cfg(c, 0.0), 4), 10_000).iter().map(|x| x.1).sum::<f64>() / 10_000.0;
        assert!(mean(MMWAVE) < 0.9 * mean(CapacityCarrier::Lte));
    }

    #[test]
    fn nlos_mean_is_the_umi_path_loss_gap_at_30_m() {
        let e = ExcessLoss::new(0.5, 30.0, &LinkRngs::from_stream(Xoshiro256PlusPlus::seed_from_u64(0)));
        // 35.3·log10(30) + 22.4 + 21.3·log10(28) − (32.4 + 21·log10(30) + 20·log10(28))
        let by_hand = 14.3 * 30f64.log10() - 10.0 + 1.3 * 28f64.log10();
        assert!((e.nlos_mean_db - by_hand).abs() < 1e-9);
        assert!((e.nlos_mean_db - 12.999).abs() < 0.01, "{}", e.nlos_mean_db);
    }

    #[test]
    fn stationary_los_share_matches_p_los_at_30_m() {
        // λ = 1/s over 2·10⁴ s at 3 samples/s: ≈ 4·10³ cycles.
        let c = CapacityConfig { carrier: CapacityCarrier::Mmwave { lambda_per_s: 1.0, distance_m: 30.0 }, ..cfg(MMWAVE, 4.0) };
        let mut p = process(c, 7);
        let n = 200_000;
        let los = (0..n)
            .filter(|_| {
                p.on_update(p.next_deadline_ns());
                p.is_los()
            })
            .count();
        let share = los as f64 / n as f64;
        let p_los = los_probability(SCENARIO, 30.0, ANTENNA_HEIGHT_M);
        assert!((p_los - 0.7738).abs() < 1e-3);
        assert!((share - p_los).abs() < 0.02, "{share} vs {p_los}");
    }

    #[test]
    fn updates_every_100_ms_and_sinr_changes_at_3_hz() {
        let mut p = process(cfg(MMWAVE, 4.0), 9);
        let r = rates(&mut p, 21);
        let times: Vec<u64> = r.iter().map(|x| x.0).collect();
        assert_eq!(times, (0..21).map(|k| k * 100_000_000).collect::<Vec<_>>());
        // Samples at 0, 1/3, 2/3, 1 s, ...: the first update at or after each.
        let changes: Vec<u64> = r.windows(2).filter(|w| w[0].1 != w[1].1).map(|w| w[1].0 / 1_000_000).collect();
        assert_eq!(changes, vec![400, 700, 1000, 1400, 1700, 2000]);
    }

    #[test]
    fn user_gets_the_share() {
        let full = CapacityConfig { user_share: 1.0, ..cfg(MMWAVE, 4.0) };
        let a = rates(&mut process(full, 5), 50);
        let b = rates(&mut process(cfg(MMWAVE, 4.0), 5), 50);
        for (x, y) in a.iter().zip(&b) {
            assert!((x.1 * 0.1 - y.1).abs() <= 1e-9 * x.1);
        }
    }

    #[test]
    fn deterministic_per_seed() {
        let run = |seed| rates(&mut process(cfg(MMWAVE, 4.0), seed), 300);
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }
}
