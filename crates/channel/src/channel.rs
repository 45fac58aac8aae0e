//! The SINR of one (UE, cell) link over time: mobility → geometry →
//! blockage → path loss, shadowing, fading → link budget (docs/models/channel.md §1–7),
//! or a trace in place of the propagation models.

use std::sync::Arc;

use crate::blockage::{BlockageConfig, BlockageModel, ForcedEvent, ForcedEvents, ForcedKind, LinkGeometry};
use crate::error::{check_at_least, check_positive, ConfigError};
use crate::fading::{Fading, FadingConfig};
use crate::geometry::{Point2, Rect};
use crate::link::{sinr_required_db, LinkAbstraction, DEFAULT_ETA_OH, SE_MAX};
use crate::los::Antenna;
use crate::mobility::{MobilityConfig, Trajectory};
use crate::obstacles::Building;
use crate::pathloss::{O2iModel, PathLoss, Scenario};
use crate::rng::LinkRngs;
use crate::shadowing::LinkShadowing;
use crate::sinr::{beamforming_gain_db, LinkBudget};
use crate::traces::{CapacitySeries, SinrSeries};
use crate::units::ns_to_s;

/// Default indoor distance of an indoor UE (docs/models/channel.md §2).
pub const DEFAULT_INDOOR_DISTANCE_M: f64 = 5.0;

/// Whether the UE is indoors, and where (docs/models/channel.md §2).
#[derive(Clone, Debug, Default)]
pub enum Indoor {
    #[default]
    Outdoor,
    /// `distance_m` behind a low-loss façade wherever it goes; no building is modelled and the
    /// LOS state is the blockage model's.
    BehindFacade { distance_m: f64 },
    /// Inside whichever of `buildings` it stands in, outdoors when in none. Inside, the link
    /// is NLOS and pays the building's O2I loss over its indoor distance: from the UE to where
    /// the path to the cell leaves the building.
    InBuildings(Arc<[Building]>),
}

/// What a blocked path does to this carrier (docs/models/channel.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum BlockedEffect {
    /// mmWave: blockage switches the link to the NLOS path loss, shadowing and
    /// fading.
    #[default]
    Nlos,
    /// Sub-6 GHz: the link keeps the LOS propagation model and a blocked
    /// path only adds `loss_db` (default 0 dB for LTE).
    PenetrationLoss { loss_db: f64 },
}

/// Everything that defines one (UE, cell) link. `Default` is the
/// 28 GHz UMi small cell of the shipped scenarios: 1 GHz, 30 dBm, 64 × 16 antennas, NF 7 dB,
/// h_BS 10 m, h_UT 1.5 m, no obstacles, shadowing on, fading off.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    // --- cell ---
    pub cell_position: Point2,
    pub h_bs_m: f64,
    pub scenario: Scenario,
    pub fc_ghz: f64,
    pub bandwidth_hz: f64,
    pub p_tx_dbm: f64,
    /// gNB and UE array sizes: beamforming gain 10 log10(n_tx · n_rx).
    pub n_tx: u32,
    pub n_rx: u32,
    /// Extra antenna gain, e.g. the 3 dB 2×2 MIMO gain of LTE.
    pub mimo_gain_db: f64,
    pub blocked_effect: BlockedEffect,
    /// Overhead factor η_oh of the link abstraction.
    pub eta_oh: f64,
    /// Quantize SE to the CQI table (MCS mode).
    pub mcs: bool,
    // --- UE ---
    pub h_ut_m: f64,
    pub nf_db: f64,
    pub mobility: MobilityConfig,
    /// Indoor or not, and where (O2I loss).
    pub indoor: Indoor,
    // --- channel ---
    pub blockage: BlockageConfig,
    pub forced_events: Vec<ForcedEvent>,
    pub shadowing: bool,
    pub fading: Option<FadingConfig>,
    /// Interference over noise in dB (`None`: no interference).
    pub inr_db: Option<f64>,
    /// SINR below this is an outage (−∞ disables the threshold).
    pub outage_threshold_db: f64,
    /// How often position, LOS state, path loss and shadowing are
    /// re-evaluated (≤ 10 ms, docs/models/channel.md §1).
    pub geometry_step_ns: u64,
    /// How often fading is re-evaluated (once per slot, default 125 µs).
    pub fading_step_ns: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            cell_position: Point2::new(0.0, 0.0),
            h_bs_m: 10.0,
            scenario: Scenario::UmiStreetCanyon,
            fc_ghz: 28.0,
            bandwidth_hz: 1e9,
            p_tx_dbm: 30.0,
            n_tx: 64,
            n_rx: 16,
            mimo_gain_db: 0.0,
            blocked_effect: BlockedEffect::Nlos,
            eta_oh: DEFAULT_ETA_OH,
            mcs: false,
            h_ut_m: 1.5,
            nf_db: 7.0,
            mobility: MobilityConfig::default(),
            indoor: Indoor::Outdoor,
            blockage: BlockageConfig::default(),
            forced_events: Vec::new(),
            shadowing: true,
            fading: None,
            inr_db: None,
            outage_threshold_db: -5.0,
            geometry_step_ns: 1_000_000,
            fading_step_ns: 125_000,
        }
    }
}

impl LinkConfig {
    /// An LTE macro cell (docs/models/channel.md §8): 2.1 GHz, 20 MHz, 46 dBm, 2×2 MIMO
    /// gain 3 dB, UMa at 25 m, obstacles as 0 dB penetration loss, η_oh set
    /// for a 150 Mbit/s peak.
    pub fn lte() -> Self {
        LinkConfig {
            h_bs_m: 25.0,
            scenario: Scenario::Uma,
            fc_ghz: 2.1,
            bandwidth_hz: 20e6,
            p_tx_dbm: 46.0,
            n_tx: 1,
            n_rx: 1,
            mimo_gain_db: 3.0,
            blocked_effect: BlockedEffect::PenetrationLoss { loss_db: 0.0 },
            eta_oh: 150e6 / (20e6 * SE_MAX),
            ..LinkConfig::default()
        }
    }

    /// A 73 GHz mmWave cell with 2 GHz of bandwidth (docs/models/channel.md §8).
    pub fn mmwave_73ghz() -> Self {
        LinkConfig { fc_ghz: 73.0, bandwidth_hz: 2e9, ..LinkConfig::default() }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let p = &self.cell_position;
        if !(p.x_m.is_finite() && p.y_m.is_finite()) {
            return Err(ConfigError::new("cell_position", p, "finite coordinates"));
        }
        // h' = h − 1 m must be positive for the break-point distance.
        for (field, h) in [("h_bs_m", self.h_bs_m), ("h_ut_m", self.h_ut_m)] {
            if !(h.is_finite() && h > 1.0) {
                return Err(ConfigError::new(field, h, "a height > 1 m"));
            }
        }
        check_positive("fc_ghz", self.fc_ghz)?;
        check_positive("bandwidth_hz", self.bandwidth_hz)?;
        check_positive("eta_oh", self.eta_oh)?;
        check_at_least("p_tx_dbm", self.p_tx_dbm, f64::MIN)?;
        check_at_least("nf_db", self.nf_db, f64::MIN)?;
        check_at_least("mimo_gain_db", self.mimo_gain_db, f64::MIN)?;
        if self.n_tx == 0 || self.n_rx == 0 {
            return Err(ConfigError::new("n_tx/n_rx", (self.n_tx, self.n_rx), "at least one antenna each"));
        }
        if let BlockedEffect::PenetrationLoss { loss_db } = self.blocked_effect {
            check_at_least("blocked_effect.loss_db", loss_db, 0.0)?;
        }
        if let Indoor::BehindFacade { distance_m } = self.indoor {
            check_at_least("indoor_distance_m", distance_m, 0.0)?;
        }
        if let Some(inr) = self.inr_db {
            check_at_least("inr_db", inr, f64::MIN)?;
        }
        if self.outage_threshold_db.is_nan() || self.outage_threshold_db == f64::INFINITY {
            return Err(ConfigError::new("outage_threshold_db", self.outage_threshold_db, "a number in dB, or -inf for no outage"));
        }
        if !(1..=10_000_000).contains(&self.geometry_step_ns) {
            return Err(ConfigError::new(
                "geometry_step_ns",
                self.geometry_step_ns,
                "1 ns ..= 10 ms (the route is sampled at least every 10 ms)",
            ));
        }
        if self.fading_step_ns == 0 {
            return Err(ConfigError::new("fading_step_ns", self.fading_step_ns, "a step > 0"));
        }
        let is_trace = matches!(self.blockage, BlockageConfig::SinrTrace(_) | BlockageConfig::CapacityTrace(_));
        if is_trace && self.forced_events.iter().any(|e| e.kind == ForcedKind::Nlos && e.duration_ns > 0) {
            return Err(ConfigError::new("forced_events", "nlos", "only outage events on a trace-driven link (a trace has no LOS state)"));
        }
        Ok(())
    }
}

/// The channel of a link at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkState {
    /// LOS by the blockage model and forced events. Trace-driven links have
    /// no LOS state and report `true`.
    pub los: bool,
    /// Nothing can be scheduled: SINR below the threshold, a forced outage,
    /// or a zero rate in a capacity trace.
    pub outage: bool,
    /// −∞ during a forced outage.
    pub sinr_db: f64,
}

/// The geometry of one step.
#[derive(Clone, Copy, Debug)]
struct Step {
    ue_position: Point2,
    d2d_m: f64,
    travelled_m: f64,
    /// LOS by the blockage model, and not inside a building.
    los: bool,
    /// O2I loss inside a building (0 outdoors).
    o2i_db: f64,
}

/// Propagation-model state: what is recomputed per geometry step.
#[derive(Debug)]
struct ModelChain {
    trajectory: Trajectory,
    blockage: Box<dyn BlockageModel>,
    pathloss: PathLoss,
    shadowing: Option<LinkShadowing>,
    fading: Option<Fading>,
    /// The buildings an indoor UE may stand in.
    buildings: Option<Arc<[Building]>>,
    fc_ghz: f64,
    geo: Step,
    next_geo_ns: u64,
    /// Path loss + shadowing (+ penetration loss) for the last (step, LOS).
    loss_db: f64,
    loss_key: Option<(u64, bool)>,
    fading_db: f64,
    fading_key: Option<(u64, bool)>,
}

#[derive(Debug)]
enum Source {
    Model(Box<ModelChain>),
    Sinr { series: Arc<SinrSeries>, hint: usize },
    Capacity { series: Arc<CapacitySeries>, hint: usize },
}

/// The channel of one (UE, cell) pair: owns its mobility, blockage,
/// shadowing and fading state and its random streams, and answers for
/// non-decreasing `now_ns`. Queries cost a few comparisons except once per
/// geometry step (LOS test, path loss, one shadowing draw) and once per
/// fading step (M sin/cos); nothing is allocated after construction.
#[derive(Debug)]
pub struct LinkChannel {
    source: Source,
    cell: Antenna,
    h_ut_m: f64,
    budget: LinkBudget,
    blocked_effect: BlockedEffect,
    forced: ForcedEvents,
    outage_threshold_db: f64,
    link: LinkAbstraction,
    geometry_step_ns: u64,
    fading_step_ns: u64,
    last: Option<(u64, LinkState)>,
}

impl LinkChannel {
    /// Build a link from its config and its three random streams (see
    /// [`LinkRngs`] for which component consumes which).
    pub fn new(config: &LinkConfig, rngs: LinkRngs) -> Result<Self, ConfigError> {
        config.validate()?;
        let LinkRngs { blockage: blockage_rng, shadowing: shadowing_rng, fading: mut fading_rng } = rngs;
        let indoor_loss_db = match config.indoor {
            Indoor::BehindFacade { distance_m } => O2iModel::LowLoss.loss_db(config.fc_ghz, distance_m),
            Indoor::Outdoor | Indoor::InBuildings(_) => 0.0,
        };
        let gain_db = beamforming_gain_db(config.n_tx, config.n_rx) + config.mimo_gain_db;
        let budget = LinkBudget::new(config.p_tx_dbm, gain_db, config.bandwidth_hz, config.nf_db, config.inr_db, indoor_loss_db);
        let source = match &config.blockage {
            BlockageConfig::SinrTrace(s) => Source::Sinr { series: Arc::clone(s), hint: 0 },
            BlockageConfig::CapacityTrace(s) => Source::Capacity { series: Arc::clone(s), hint: 0 },
            b => {
                let trajectory = Trajectory::new(&config.mobility)?;
                let area = Rect::bounding(trajectory.waypoints().iter().copied().chain([config.cell_position]))
                    .expect("at least the cell position");
                let blockage =
                    b.build_los_model(config.scenario, config.h_ut_m, &area, blockage_rng)?.expect("trace variants are handled above");
                let fading = match &config.fading {
                    Some(f) => Some(Fading::new(f, config.fc_ghz, &mut fading_rng)?),
                    None => None,
                };
                Source::Model(Box::new(ModelChain {
                    trajectory,
                    blockage,
                    pathloss: PathLoss::new(config.scenario, config.fc_ghz, config.h_bs_m, config.h_ut_m),
                    shadowing: config.shadowing.then(|| LinkShadowing::new(config.scenario, shadowing_rng)),
                    fading,
                    buildings: match &config.indoor {
                        Indoor::InBuildings(b) => Some(Arc::clone(b)),
                        Indoor::Outdoor | Indoor::BehindFacade { .. } => None,
                    },
                    fc_ghz: config.fc_ghz,
                    geo: Step { ue_position: config.cell_position, d2d_m: 0.0, travelled_m: 0.0, los: true, o2i_db: 0.0 },
                    next_geo_ns: 0,
                    loss_db: 0.0,
                    loss_key: None,
                    fading_db: 0.0,
                    fading_key: None,
                }))
            }
        };
        Ok(LinkChannel {
            source,
            cell: Antenna { pos: config.cell_position, height_m: config.h_bs_m },
            h_ut_m: config.h_ut_m,
            budget,
            blocked_effect: config.blocked_effect,
            forced: ForcedEvents::new(&config.forced_events),
            outage_threshold_db: config.outage_threshold_db,
            link: LinkAbstraction { bandwidth_hz: config.bandwidth_hz, eta_oh: config.eta_oh, mcs: config.mcs },
            geometry_step_ns: config.geometry_step_ns,
            fading_step_ns: config.fading_step_ns,
            last: None,
        })
    }

    /// The SINR → rate mapping of this link's carrier.
    pub fn link(&self) -> &LinkAbstraction {
        &self.link
    }

    /// The cell's antenna: ground position and height.
    pub fn cell_antenna(&self) -> Antenna {
        self.cell
    }

    /// The UE's antenna at the latest [`LinkChannel::state`] (its position at that geometry
    /// step); `None` on a trace-driven link, which has no geometry.
    pub fn ue_antenna(&self) -> Option<Antenna> {
        match &self.source {
            Source::Model(m) => Some(Antenna { pos: m.geo.ue_position, height_m: self.h_ut_m }),
            Source::Sinr { .. } | Source::Capacity { .. } => None,
        }
    }

    /// SINR in dB at `now_ns`.
    pub fn sinr_db(&mut self, now_ns: u64) -> f64 {
        self.state(now_ns).sinr_db
    }

    /// LOS, outage and SINR at `now_ns`. Times must not decrease; an earlier
    /// time gets the answer of the latest query (the models only move forward).
    pub fn state(&mut self, now_ns: u64) -> LinkState {
        if let Some((t, s)) = self.last {
            if now_ns <= t {
                return s;
            }
        }
        let forced = self.forced.active(now_ns);
        let mut state = match &mut self.source {
            Source::Model(m) => {
                let los_model = m.model_los(now_ns, self.geometry_step_ns, self.cell, self.h_ut_m);
                let los = los_model && forced != Some(ForcedKind::Nlos);
                let sinr = m.large_scale_sinr_db(los, &self.budget, self.blocked_effect, now_ns, self.fading_step_ns);
                LinkState { los, outage: sinr < self.outage_threshold_db, sinr_db: sinr }
            }
            Source::Sinr { series, hint } => {
                let sinr = series.sinr_db_at(ns_to_s(now_ns), hint);
                LinkState { los: true, outage: sinr < self.outage_threshold_db, sinr_db: sinr }
            }
            Source::Capacity { series, hint } => {
                // The SINR at which the link abstraction gives the trace's
                // rate, so R(SINR) reproduces the trace (up to the SE cap).
                // Only a zero rate is an outage: low-rate seconds of a real
                // trace are slow, not dead.
                let rate = series.rate_bps_at(ns_to_s(now_ns), hint);
                let se = (rate / (self.link.bandwidth_hz * self.link.eta_oh)).min(SE_MAX);
                LinkState { los: true, outage: rate <= 0.0, sinr_db: sinr_required_db(se) }
            }
        };
        if forced == Some(ForcedKind::Outage) {
            state.outage = true;
            state.sinr_db = f64::NEG_INFINITY;
        }
        self.last = Some((now_ns, state));
        state
    }
}

impl LinkChannel {
    /// The first time after the latest [`LinkChannel::state`] query at which the state may
    /// differ (`u64::MAX`: never): the next geometry step, fading step or forced event
    /// boundary. A driver may leave the link unasked until then: its state holds, and the
    /// models' random streams advance per step, not per query. A trace-driven link may change
    /// at any time.
    pub fn next_change_ns(&self) -> u64 {
        let Some((t, _)) = self.last else { return 0 };
        let forced = self.forced.next_change_ns(t);
        match &self.source {
            Source::Model(m) => {
                let fading = if m.fading.is_some() { t - t % self.fading_step_ns + self.fading_step_ns } else { u64::MAX };
                m.next_geo_ns.min(fading).min(forced)
            }
            Source::Sinr { .. } | Source::Capacity { .. } => t + 1,
        }
    }
}

impl ModelChain {
    /// LOS state by the blockage model (NLOS inside a building), re-evaluated at most once
    /// per geometry step at the step's start time.
    fn model_los(&mut self, now_ns: u64, step_ns: u64, cell: Antenna, h_ut_m: f64) -> bool {
        if now_ns >= self.next_geo_ns {
            let t = now_ns - now_ns % step_ns;
            let (pos, travelled) = self.trajectory.at(t);
            let d2d = cell.pos.distance_m(pos);
            let geo = LinkGeometry { cell, ue: Antenna { pos, height_m: h_ut_m }, d2d_m: d2d };
            // The model runs whether or not the UE is inside, so its state and random stream
            // advance the same either way.
            let model_los = self.blockage.is_los(t, &geo);
            let building = self.buildings.as_deref().and_then(|b| b.iter().find(|b| b.footprint.contains(pos)));
            let o2i_db = building.map_or(0.0, |b| {
                // The path leaves the building where it enters the footprint seen from the cell.
                let t_in = b.footprint.clip_segment(cell.pos, pos).map_or(0.0, |(t_in, _)| t_in);
                b.o2i.loss_db(self.fc_ghz, (1.0 - t_in) * d2d)
            });
            self.geo = Step { ue_position: pos, d2d_m: d2d, travelled_m: travelled, los: model_los && building.is_none(), o2i_db };
            self.next_geo_ns = t + step_ns;
        }
        self.geo.los
    }

    /// SINR from the cached geometry and the effective LOS state `los`.
    fn large_scale_sinr_db(&mut self, los: bool, budget: &LinkBudget, effect: BlockedEffect, now_ns: u64, fading_step_ns: u64) -> f64 {
        let Step { d2d_m: d2d, travelled_m: travelled, o2i_db, .. } = self.geo;
        // Under penetration loss the carrier keeps its LOS propagation.
        let (prop_los, extra_db) = match effect {
            BlockedEffect::Nlos => (los, 0.0),
            BlockedEffect::PenetrationLoss { loss_db } => (true, if los { 0.0 } else { loss_db }),
        };
        let key = (self.next_geo_ns, los);
        if self.loss_key != Some(key) {
            let sf = self.shadowing.as_mut().map_or(0.0, |s| s.db(prop_los, travelled));
            self.loss_db = self.pathloss.db(prop_los, d2d) + sf + extra_db + o2i_db;
            self.loss_key = Some(key);
        }
        if let Some(f) = &self.fading {
            let t = now_ns - now_ns % fading_step_ns;
            if self.fading_key != Some((t, prop_los)) {
                self.fading_db = f.gain_db(prop_los, self.trajectory.travelled_m(t));
                self.fading_key = Some((t, prop_los));
            }
        }
        budget.sinr_db(self.loss_db, 0.0, self.fading_db)
    }
}
