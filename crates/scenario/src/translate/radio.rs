//! The scenario's cells and UEs as configurations of the channel and RAN models.

use std::path::Path;
use std::sync::Arc;

use millinet_channel::traces::{load_capacity_trace, load_sinr_csv, SinrTrace};
use millinet_channel::{
    BlockageConfig, BlockedEffect, Building, CqiConfig, FadingConfig, ForcedEvent, ForcedKind, Indoor, LinkConfig, MobilityConfig,
    O2iModel, ObstacleDraw, Panel, Point2, Rect, Scenario as PathLossScenario,
};
use millinet_channel::{CqiReporter, LinkChannel, LinkRngs};
use millinet_ran::{
    CellConfig, CellId, HandoverConfig, HarqConfig, HarqMode, LegRadio, Ran, RlcMode, ServingCellControl, TddConfig, UeConfig,
};
use rand_core::RngCore;

use super::seconds_to_ns;
use crate::radio::{
    BlockageSpec, CellKind, CellSpec, ForcedKindSpec, HandoverSpec, HarqSpec, InterferenceSpec, O2iSpec, PathLossModel, RlcModeSpec, UeSpec,
};
use crate::rng::{self, Stream};
use crate::{ConfigError, Scenario};

/// Spectral efficiency at the top of the 64QAM CQI table (docs/models/channel.md §8).
const SE_MAX: f64 = millinet_channel::link::SE_MAX;

fn config_error(path: String) -> impl Fn(&dyn std::fmt::Display) -> ConfigError {
    move |e| ConfigError::at(&path, e)
}

/// A capacity trace maps low rates to SINRs below the usual outage threshold;
/// only a zero rate is an outage there (the channel reports it).
pub fn outage_threshold_db(s: &Scenario, c: &CellSpec) -> f64 {
    let capacity_trace = s.ues.iter().any(|u| u.cell == c.node && u.blockage == BlockageSpec::CapacityTrace);
    if capacity_trace {
        f64::NEG_INFINITY
    } else {
        c.outage_threshold_db
    }
}

pub fn cell_config(i: usize, c: &CellSpec, outage_sinr_db: f64) -> Result<CellConfig, ConfigError> {
    let tdd = if c.tdd == "dynamic" {
        TddConfig::Dynamic { ul_every: c.ul_every_slots }
    } else {
        TddConfig::pattern(&c.tdd).map_err(|e| config_error(format!("cells.{i}.tdd"))(&e))?
    };
    Ok(CellConfig {
        slot_ns: seconds_to_ns(c.slot_s),
        scheduler: c.scheduler.clone(),
        tdd,
        harq: HarqConfig {
            mode: if c.harq == HarqSpec::Ideal { HarqMode::Ideal } else { HarqMode::Errors },
            rtt_ns: seconds_to_ns(c.harq_rtt_s),
            max_retx: if c.harq == HarqSpec::Off { 0 } else { c.harq_max_retx.min(u8::MAX as u32) as u8 },
            processes: c.harq_processes as usize,
        },
        link: millinet_channel::LinkAbstraction { bandwidth_hz: c.bandwidth_hz, eta_oh: eta_oh(c), mcs: c.mcs },
        outage_sinr_db,
        ul_fraction: c.ul_fraction,
        sr_delay_ns: seconds_to_ns(c.sr_delay_s),
        panel: Panel::facing(c.antennas),
    })
}

/// η_oh such that the top spectral efficiency gives the configured peak rate.
fn eta_oh(c: &CellSpec) -> f64 {
    c.peak_rate_bps / (c.bandwidth_hz * SE_MAX)
}

pub fn ue_config(u: &UeSpec) -> UeConfig {
    UeConfig {
        rlc_mode: match u.rlc_mode {
            RlcModeSpec::Am => RlcMode::Am,
            RlcModeSpec::Um => RlcMode::Um,
        },
        dl_buffer_bytes: u.rlc_buffer_bytes,
        t_reassembly_ns: seconds_to_ns(u.rlc_reassembly_s),
        t_status_prohibit_ns: seconds_to_ns(u.rlc_status_prohibit_s),
        t_reordering_ns: seconds_to_ns(u.rlc_reassembly_s),
        panel: Panel::facing(u.antennas),
        ..UeConfig::default()
    }
}

/// The fixed obstacles, each a building an indoor UE may stand in.
pub fn buildings(s: &Scenario) -> Arc<[Building]> {
    s.obstacles
        .iter()
        .map(|o| Building {
            footprint: Rect::from_corners(
                Point2::new(o.x_m, o.y_m),
                Point2::new(o.x_m + o.width_m, o.y_m + o.depth_m),
                (o.height_m > 0.0).then_some(o.height_m),
            ),
            o2i: match o.o2i {
                O2iSpec::LowLoss => O2iModel::LowLoss,
                O2iSpec::HighLoss => O2iModel::HighLoss,
            },
        })
        .collect()
}

/// Fixed obstacles plus those drawn with `rng` (the run's obstacle stream).
pub fn obstacles(s: &Scenario, rng: &mut impl RngCore) -> Result<Arc<[Rect]>, ConfigError> {
    let mut all: Vec<Rect> = buildings(s).iter().map(|b| b.footprint).collect();
    let r = &s.random_obstacles;
    if r.count > 0 {
        let draw = ObstacleDraw {
            region: Rect::from_corners(Point2::new(r.region_m[0], r.region_m[1]), Point2::new(r.region_m[2], r.region_m[3]), None),
            count: r.count as usize,
            width_m: (r.width_m[0], r.width_m[1]),
            depth_m: (r.depth_m[0], r.depth_m[1]),
            height_m: None,
        };
        let drawn = draw.draw(rng).map_err(|e| config_error("random_obstacles".into())(&e))?;
        all.extend(drawn);
    }
    Ok(all.into())
}

/// The radio link between UE `u` (scenario UE `i`) and cell `c`: each link its own LOS
/// test, path loss, shadowing and fading (docs/models/channel.md §1–7).
pub fn link_config(
    i: usize,
    u: &UeSpec,
    c: &CellSpec,
    outage_threshold_db: f64,
    obstacles: &Arc<[Rect]>,
    buildings: &Arc<[Building]>,
    base_dir: &Path,
) -> Result<LinkConfig, ConfigError> {
    let err = |e: &dyn std::fmt::Display| ConfigError::new(format!("ues.{i}: {e}"));
    let trace_path = || base_dir.join(&u.trace);
    let blockage = match u.blockage {
        BlockageSpec::Geometric => BlockageConfig::Geometric { obstacles: obstacles.clone() },
        BlockageSpec::None => BlockageConfig::Geometric { obstacles: Arc::from(Vec::new()) },
        BlockageSpec::Markov => BlockageConfig::Markov { lambda_per_s: u.markov_lambda_per_s },
        BlockageSpec::SinrTrace => match load_sinr_csv(&trace_path()).map_err(|e| err(&e))? {
            SinrTrace::Single(series) => BlockageConfig::SinrTrace(Arc::new(series)),
            SinrTrace::PerCell(mut cells) => {
                let series = cells.iter().position(|(name, _)| name == &c.node).map(|k| cells.swap_remove(k).1);
                BlockageConfig::SinrTrace(Arc::new(
                    series.ok_or_else(|| ConfigError::new(format!("ues.{i}.trace: {}: no rows for cell {:?}", u.trace, c.node)))?,
                ))
            }
        },
        BlockageSpec::CapacityTrace => BlockageConfig::CapacityTrace(Arc::new(load_capacity_trace(&trace_path()).map_err(|e| err(&e))?)),
    };
    let points: Vec<Point2> = u.route_m.iter().map(|p| Point2::new(p[0], p[1])).collect();
    let mobility = match points.as_slice() {
        [only] => MobilityConfig::Static(*only),
        _ => MobilityConfig::Route { waypoints: points, speed_mps: u.speed_mps },
    };
    Ok(LinkConfig {
        cell_position: Point2::new(c.position_m[0], c.position_m[1]),
        h_bs_m: c.height_m,
        scenario: match c.pathloss {
            PathLossModel::Umi => PathLossScenario::UmiStreetCanyon,
            PathLossModel::Uma => PathLossScenario::Uma,
        },
        fc_ghz: c.fc_ghz,
        bandwidth_hz: c.bandwidth_hz,
        p_tx_dbm: c.tx_power_dbm,
        n_tx: c.antennas,
        // An LTE link's UE side is one antenna; its 2×2 MIMO is the cell's mimo_gain_db.
        n_rx: if c.kind == CellKind::Lte { 1 } else { u.antennas },
        mimo_gain_db: c.mimo_gain_db,
        blocked_effect: match c.kind {
            CellKind::Mmwave => BlockedEffect::Nlos,
            CellKind::Lte => BlockedEffect::PenetrationLoss { loss_db: c.penetration_loss_db },
        },
        eta_oh: eta_oh(c),
        mcs: c.mcs,
        h_ut_m: u.height_m,
        nf_db: u.noise_figure_db,
        mobility,
        indoor: indoor(u, buildings),
        blockage,
        forced_events: u
            .forced_events
            .iter()
            .map(|f| ForcedEvent {
                start_ns: seconds_to_ns(f.start_s),
                duration_ns: seconds_to_ns(f.duration_s),
                kind: match f.kind {
                    ForcedKindSpec::Nlos => ForcedKind::Nlos,
                    ForcedKindSpec::Outage => ForcedKind::Outage,
                },
            })
            .collect(),
        shadowing: u.shadowing,
        fading: u.fading.then(FadingConfig::default),
        outage_threshold_db,
        ..LinkConfig::default()
    })
}

/// Where UE `u` is indoors (docs/models/channel.md §2): an indoor UE whose route has a point in
/// a fixed obstacle is inside that building wherever it stands in one; an indoor UE in none
/// stands `indoor_distance_m` behind a façade that is not modelled.
fn indoor(u: &UeSpec, buildings: &Arc<[Building]>) -> Indoor {
    if !u.indoor {
        return Indoor::Outdoor;
    }
    let inside = u.route_m.iter().any(|p| buildings.iter().any(|b| b.footprint.contains(Point2::new(p[0], p[1]))));
    if inside {
        Indoor::InBuildings(Arc::clone(buildings))
    } else {
        Indoor::BehindFacade { distance_m: u.indoor_distance_m }
    }
}

/// The CQI reports of a UE served by cell `c` (period and delay, docs/models/channel.md §9).
pub fn cqi_config(c: &CellSpec) -> CqiConfig {
    CqiConfig { period_ns: seconds_to_ns(c.cqi_period_s), delay_ns: seconds_to_ns(c.cqi_delay_s) }
}

/// The cells UE `u` has a radio link to, by scenario index, its first serving cell first:
/// every other cell on its serving cell's carrier (a radio hears its own band) while handover
/// is on or that carrier interferes ([`interfering_carriers`]), and its LTE anchor while
/// handover is on; a trace-driven UE only its own cell (the trace is its one link).
pub fn measured_cells(s: &Scenario, u: &UeSpec) -> Vec<usize> {
    let serving = s.cells.iter().position(|c| c.node == u.cell).expect("validated");
    let trace = matches!(u.blockage, BlockageSpec::SinrTrace | BlockageSpec::CapacityTrace);
    let mut cells = vec![serving];
    if trace {
        return cells;
    }
    let interferes = interfering_carriers(s).iter().any(|carrier| carrier.contains(&serving));
    let hears = |c: &CellSpec| {
        let same_carrier = c.fc_ghz == s.cells[serving].fc_ghz && (s.handover.enabled || interferes);
        same_carrier || (s.handover.enabled && c.node == u.anchor)
    };
    cells.extend((0..s.cells.len()).filter(|&k| k != serving && hears(&s.cells[k])));
    cells
}

/// The groups of mmWave cells (by scenario index) that share a carrier — the same `fc_ghz` —
/// and so interfere with each other (docs/models/ran.md#interference): none with
/// `interference = "none"`, and none for a carrier with one cell. LTE cells do not interfere
/// (an anchor's carrier is its own).
pub fn interfering_carriers(s: &Scenario) -> Vec<Vec<usize>> {
    if s.interference == InterferenceSpec::None {
        return Vec::new();
    }
    let mut carriers: Vec<Vec<usize>> = Vec::new();
    for (k, c) in s.cells.iter().enumerate().filter(|(_, c)| c.kind == CellKind::Mmwave) {
        match carriers.iter_mut().find(|group| s.cells[group[0]].fc_ghz == c.fc_ghz) {
            Some(group) => group.push(k),
            None => carriers.push(vec![k]),
        }
    }
    carriers.retain(|group| group.len() > 1);
    carriers
}

/// The A3 parameters (docs/models/ran.md#handover-and-dual-connectivity).
pub fn handover_config(h: &HandoverSpec) -> HandoverConfig {
    HandoverConfig { hysteresis_db: h.hysteresis_db, time_to_trigger_ns: seconds_to_ns(h.time_to_trigger_s) }
}

/// The scenario's RAN, the same for the simulator and the emulator (same random streams, so
/// the same obstacles, channel realisation and HARQ outcomes): cell k is scenario cell k, UE k
/// is scenario UE k. Also each UE's serving-cell decision, for a UE that measures more than
/// one cell.
pub fn build_ran(s: &Scenario, base_dir: &Path) -> Result<(Ran<Stream>, Vec<Option<ServingCellControl>>), ConfigError> {
    let obstacles = obstacles(s, &mut rng::stream(s.seed, "obstacles"))?;
    let buildings = buildings(s);
    let mut ran = Ran::new();
    for (i, c) in s.cells.iter().enumerate() {
        ran.add_cell(cell_config(i, c, outage_threshold_db(s, c))?, rng::stream(s.seed, &format!("cell{i}/harq")))
            .map_err(|e| ConfigError::at(&format!("cells.{i}"), &e))?;
    }
    let mut serving = Vec::new();
    for (i, u) in s.ues.iter().enumerate() {
        let ue = ran.add_ue();
        let measured = measured_cells(s, u);
        for (n, &k) in measured.iter().enumerate() {
            let c = &s.cells[k];
            let link = link_config(i, u, c, outage_threshold_db(s, c), &obstacles, &buildings, base_dir)?;
            // The first serving cell's link keeps the stream name of the single-cell runs.
            let stream = if n == 0 { format!("ue{i}/channel") } else { format!("ue{i}/channel/cell{k}") };
            let rngs = LinkRngs::from_stream(rng::stream(s.seed, &stream));
            let channel = LinkChannel::new(&link, rngs).map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
            let cqi = CqiReporter::new(cqi_config(c)).map_err(|e| ConfigError::at(&format!("cells.{k}"), &e))?;
            let (cell, radio) = (CellId(k as u32), LegRadio { channel, cqi });
            let added = if n == 0 { ran.attach(ue, cell, ue_config(u), radio) } else { ran.add_neighbour(ue, cell, radio) };
            added.map_err(|e| ConfigError::at(&format!("ues.{i}"), &e))?;
        }
        let cell = CellId(measured[0] as u32);
        if let Some(aqm) = super::RlcAqm::of(u).build(s.seed, &format!("ue{i}/rlc-aqm")) {
            ran.set_aqm(ue, cell, millinet_ran::Direction::Downlink, aqm).expect("attached just now");
        }
        let anchor = s.cells.iter().position(|c| c.node == u.anchor && c.kind == CellKind::Lte).map(|k| CellId(k as u32));
        let control = ServingCellControl::new(handover_config(&s.handover), anchor).map_err(|e| ConfigError::at("handover", &e))?;
        serving.push((s.handover.enabled && measured.len() > 1).then_some(control));
    }
    for carrier in interfering_carriers(s) {
        let cells: Vec<CellId> = carrier.iter().map(|&k| CellId(k as u32)).collect();
        ran.share_carrier(&cells).expect("cells added above");
    }
    Ok((ran, serving))
}
