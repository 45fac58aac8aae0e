//! The radio access network inside the simulation: the scenario's cells and UEs
//! translated into one `ran::Ran` (a `channel::LinkChannel` and CQI reporter per
//! UE leg), plus the nodes they sit on.
//!
//! The engine drives each cell with one event per slot: it delivers what the
//! previous slot decoded (TBs are decoded at the end of their slot, which is the
//! start of the next) and then advances the cell over the current slot.

use std::path::Path;
use std::sync::Arc;

use millinet_channel::traces::{load_capacity_csv, load_sinr_csv, SinrTrace};
use millinet_channel::{
    BlockageConfig, CqiConfig, CqiReporter, FadingConfig, ForcedEvent, ForcedKind, LinkChannel, LinkConfig, LinkRngs, MobilityConfig,
    ObstacleDraw, Point2, Rect, Scenario as PathLossScenario,
};
use millinet_ran::{CellConfig, CellId, HarqConfig, HarqMode, LegRadio, Ran, RanOutput, RlcMode, TddConfig, UeConfig};
use millinet_transport::aqm::Codel;

use crate::rng::{self, Stream};
use crate::scenario::radio::{BlockageSpec, CellSpec, ForcedKindSpec, HarqSpec, PathLossModel, RlcModeSpec, UeSpec};
use crate::scenario::{Aqm, Scenario};
use crate::sim::seconds_to_ns;
use crate::Error;

/// Spectral efficiency at the top of the 64QAM CQI table (channel.md §5).
const SE_MAX: f64 = millinet_channel::link::SE_MAX;

/// The scenario's RAN: cell k is scenario cell k, UE k is scenario UE k (its
/// `UeId`, stable across cells).
pub struct RadioNet {
    pub ran: Ran<Stream>,
    /// Node of each gNB, by `CellId`.
    pub cell_nodes: Vec<u32>,
    /// Node each UE sits on, by `UeId`.
    pub ue_nodes: Vec<u32>,
    /// Per cell: decoded in its previous slot, delivered at the start of its next.
    pub decoded: Vec<RanOutput>,
}

fn config_error(path: String) -> impl Fn(&dyn std::fmt::Display) -> Error {
    move |e| Error::Scenario(format!("{path}: {e}"))
}

/// A capacity trace maps low rates to SINRs below the usual outage threshold;
/// only a zero rate is an outage there (the channel reports it).
fn outage_threshold_db(s: &Scenario, c: &CellSpec) -> f64 {
    let capacity_trace = s.ues.iter().any(|u| u.cell == c.node && u.blockage == BlockageSpec::CapacityTrace);
    if capacity_trace {
        f64::NEG_INFINITY
    } else {
        c.outage_threshold_db
    }
}

fn cell_config(i: usize, c: &CellSpec, outage_sinr_db: f64) -> Result<CellConfig, Error> {
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
    })
}

/// η_oh such that the top spectral efficiency gives the configured peak rate.
fn eta_oh(c: &CellSpec) -> f64 {
    c.peak_rate_bps / (c.bandwidth_hz * SE_MAX)
}

fn ue_config(u: &UeSpec) -> UeConfig {
    UeConfig {
        rlc_mode: match u.rlc_mode {
            RlcModeSpec::Am => RlcMode::Am,
            RlcModeSpec::Um => RlcMode::Um,
        },
        dl_buffer_bytes: u.rlc_buffer_bytes,
        t_reassembly_ns: seconds_to_ns(u.rlc_reassembly_s),
        t_status_prohibit_ns: seconds_to_ns(u.rlc_status_prohibit_s),
        t_reordering_ns: seconds_to_ns(u.rlc_reassembly_s),
        ..UeConfig::default()
    }
}

/// Fixed obstacles plus those drawn with the run's obstacle stream.
pub fn obstacles(s: &Scenario) -> Result<Arc<[Rect]>, Error> {
    let mut all: Vec<Rect> = s
        .obstacles
        .iter()
        .map(|o| {
            Rect::from_corners(
                Point2::new(o.x_m, o.y_m),
                Point2::new(o.x_m + o.width_m, o.y_m + o.depth_m),
                (o.height_m > 0.0).then_some(o.height_m),
            )
        })
        .collect();
    let r = &s.random_obstacles;
    if r.count > 0 {
        let draw = ObstacleDraw {
            region: Rect::from_corners(Point2::new(r.region_m[0], r.region_m[1]), Point2::new(r.region_m[2], r.region_m[3]), None),
            count: r.count as usize,
            width_m: (r.width_m[0], r.width_m[1]),
            depth_m: (r.depth_m[0], r.depth_m[1]),
            height_m: None,
        };
        let drawn = draw.draw(&mut rng::stream(s.seed, "obstacles")).map_err(|e| config_error("random_obstacles".into())(&e))?;
        all.extend(drawn);
    }
    Ok(all.into())
}

fn link_config(i: usize, u: &UeSpec, c: &CellSpec, outage_threshold_db: f64, obstacles: &Arc<[Rect]>, base_dir: &Path) -> Result<LinkConfig, Error> {
    let err = |e: &dyn std::fmt::Display| Error::Scenario(format!("ues.{i}: {e}"));
    let trace_path = || base_dir.join(&u.trace);
    let blockage = match u.blockage {
        BlockageSpec::Geometric => BlockageConfig::Geometric { obstacles: obstacles.clone() },
        BlockageSpec::None => BlockageConfig::Geometric { obstacles: Arc::from(Vec::new()) },
        BlockageSpec::Markov => BlockageConfig::Markov { lambda_per_s: u.markov_lambda_per_s },
        BlockageSpec::SinrTrace => match load_sinr_csv(&trace_path()).map_err(|e| err(&e))? {
            SinrTrace::Single(series) => BlockageConfig::SinrTrace(Arc::new(series)),
            SinrTrace::PerCell(mut cells) => {
                let series = cells.iter().position(|(name, _)| name == &u.cell).map(|k| cells.swap_remove(k).1);
                BlockageConfig::SinrTrace(Arc::new(series.ok_or_else(|| {
                    Error::Scenario(format!("ues.{i}.trace: {}: no rows for cell {:?}", u.trace, u.cell))
                })?))
            }
        },
        BlockageSpec::CapacityTrace => BlockageConfig::CapacityTrace(Arc::new(load_capacity_csv(&trace_path()).map_err(|e| err(&e))?)),
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
        n_rx: u.antennas,
        eta_oh: eta_oh(c),
        mcs: c.mcs,
        h_ut_m: u.height_m,
        nf_db: u.noise_figure_db,
        mobility,
        indoor_distance_m: u.indoor.then_some(u.indoor_distance_m),
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

/// Builds every cell with its UEs. `node_index` maps node names to indices.
pub fn build(s: &Scenario, base_dir: &Path, node_index: &dyn Fn(&str) -> u32) -> Result<RadioNet, Error> {
    let obstacles = obstacles(s)?;
    let mut ran = Ran::new();
    for (i, c) in s.cells.iter().enumerate() {
        ran.add_cell(cell_config(i, c, outage_threshold_db(s, c))?, rng::stream(s.seed, &format!("cell{i}/harq")))
            .map_err(|e| config_error(format!("cells.{i}"))(&e))?;
    }
    for (i, u) in s.ues.iter().enumerate() {
        let k = s.cells.iter().position(|c| c.node == u.cell).expect("validated");
        let c = &s.cells[k];
        let link = link_config(i, u, c, outage_threshold_db(s, c), &obstacles, base_dir)?;
        let rngs = LinkRngs::from_stream(rng::stream(s.seed, &format!("ue{i}/channel")));
        let channel = LinkChannel::new(&link, rngs).map_err(|e| config_error(format!("ues.{i}"))(&e))?;
        let cqi = CqiReporter::new(CqiConfig { period_ns: seconds_to_ns(c.cqi_period_s), delay_ns: seconds_to_ns(c.cqi_delay_s) })
            .map_err(|e| config_error(format!("cells.{k}"))(&e))?;
        let (ue, cell) = (ran.add_ue(), CellId(k as u32));
        let attached = ran.attach(ue, cell, ue_config(u), LegRadio { channel, cqi });
        attached.map_err(|e| config_error(format!("ues.{i}"))(&e))?;
        if u.rlc_aqm == Aqm::Codel {
            let codel = Codel::new(5_000_000, 100_000_000, 1500);
            ran.set_aqm(ue, cell, millinet_ran::Direction::Downlink, Box::new(codel)).expect("attached just now");
        }
    }
    Ok(RadioNet {
        ran,
        cell_nodes: s.cells.iter().map(|c| node_index(&c.node)).collect(),
        ue_nodes: s.ues.iter().map(|u| node_index(&u.node)).collect(),
        decoded: s.cells.iter().map(|_| RanOutput::default()).collect(),
    })
}
