//! The radio access network inside the simulation: one `ran::Cell` per gNB, a
//! `channel::LinkChannel` and CQI reporter per UE, driven once per slot.
//!
//! A slot event delivers what the previous slot decoded (TBs are decoded at the
//! end of their slot, which is the start of the next) and then schedules the
//! current slot, so each cell costs one event per slot.

use std::path::Path;
use std::sync::Arc;

use millinet_channel::traces::{load_capacity_csv, load_sinr_csv, SinrTrace};
use millinet_channel::{
    BlockageConfig, CqiConfig, CqiReporter, FadingConfig, ForcedEvent, ForcedKind, LinkChannel, LinkConfig, LinkRngs, LinkState,
    MobilityConfig, ObstacleDraw, Point2, Rect, Scenario as PathLossScenario,
};
use millinet_ran::{Cell, CellConfig, HarqConfig, HarqMode, RlcMode, SlotOutput, TddConfig, UeConfig, UeId, UeRadio};
use millinet_transport::aqm::{Codel, Verdict};

use crate::rng::{self, Stream};
use crate::scenario::radio::{BlockageSpec, CellSpec, ForcedKindSpec, HarqSpec, PathLossModel, RlcModeSpec, UeSpec};
use crate::scenario::{Aqm, Scenario};
use crate::sim::seconds_to_ns;
use crate::Error;

/// Spectral efficiency at the top of the 64QAM CQI table (channel.md §5).
const SE_MAX: f64 = millinet_channel::link::SE_MAX;

pub struct RadioUe {
    /// Node the UE sits on.
    pub node: u32,
    /// Index of the UE in the scenario's `ues` list.
    pub index: usize,
    pub channel: LinkChannel,
    cqi: CqiReporter,
    /// The channel at the latest slot (for outputs).
    pub state: LinkState,
    pub reported_sinr_db: f64,
}

pub struct RadioCell {
    /// Node of the gNB.
    pub node: u32,
    pub cell: Cell,
    pub ues: Vec<RadioUe>,
    pub slot_ns: u64,
    radio: Vec<UeRadio>,
    harq_rng: Stream,
    /// Decoded in the previous slot, delivered at the start of this one.
    pub decoded: SlotOutput,
    scheduling: SlotOutput,
}

/// CoDel on an RLC buffer (transport.md §5).
struct RlcCodel(Codel);

impl millinet_ran::BufferAqm for RlcCodel {
    fn on_dequeue(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64) -> bool {
        self.0.on_dequeue(now_ns, sojourn_ns, backlog_bytes) == Verdict::Drop
    }
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
/// Returns the cells and, per UE in scenario order, (cell index, UE id).
pub fn build(s: &Scenario, base_dir: &Path, node_index: &dyn Fn(&str) -> u32) -> Result<(Vec<RadioCell>, Vec<(usize, UeId)>), Error> {
    let obstacles = obstacles(s)?;
    let mut cells = Vec::with_capacity(s.cells.len());
    for (i, c) in s.cells.iter().enumerate() {
        let cell = Cell::new(cell_config(i, c, outage_threshold_db(s, c))?).map_err(|e| config_error(format!("cells.{i}"))(&e))?;
        cells.push(RadioCell {
            node: node_index(&c.node),
            slot_ns: seconds_to_ns(c.slot_s),
            cell,
            ues: Vec::new(),
            radio: Vec::new(),
            harq_rng: rng::stream(s.seed, &format!("cell{i}/harq")),
            decoded: SlotOutput::default(),
            scheduling: SlotOutput::default(),
        });
    }
    let mut placement = Vec::with_capacity(s.ues.len());
    for (i, u) in s.ues.iter().enumerate() {
        let k = s.cells.iter().position(|c| c.node == u.cell).expect("validated");
        let c = &s.cells[k];
        let link = link_config(i, u, c, outage_threshold_db(s, c), &obstacles, base_dir)?;
        let rngs = LinkRngs::from_stream(rng::stream(s.seed, &format!("ue{i}/channel")));
        let channel = LinkChannel::new(&link, rngs).map_err(|e| config_error(format!("ues.{i}"))(&e))?;
        let cqi = CqiReporter::new(CqiConfig { period_ns: seconds_to_ns(c.cqi_period_s), delay_ns: seconds_to_ns(c.cqi_delay_s) })
            .map_err(|e| config_error(format!("cells.{k}"))(&e))?;
        let cell = &mut cells[k];
        let ue = cell.cell.add_ue(ue_config(u)).map_err(|e| config_error(format!("ues.{i}"))(&e))?;
        if u.rlc_aqm == Aqm::Codel {
            let codel = Codel::new(5_000_000, 100_000_000, 1500);
            cell.cell.set_aqm(ue, millinet_ran::Direction::Downlink, Box::new(RlcCodel(codel)));
        }
        cell.ues.push(RadioUe {
            node: node_index(&u.node),
            index: i,
            channel,
            cqi,
            state: LinkState { los: true, outage: true, sinr_db: f64::NEG_INFINITY },
            reported_sinr_db: f64::NEG_INFINITY,
        });
        cell.radio.push(UeRadio::OUTAGE);
        placement.push((k, ue));
    }
    Ok((cells, placement))
}

impl RadioCell {
    /// Samples every UE's channel and schedules the slot starting at `now_ns`.
    /// Afterwards `decoded` holds what this slot decoded, due at the next slot.
    pub fn run_slot(&mut self, now_ns: u64) {
        for (ue, radio) in self.ues.iter_mut().zip(self.radio.iter_mut()) {
            ue.state = ue.channel.state(now_ns);
            if let Some(reported) = ue.cqi.update(now_ns, ue.state.sinr_db) {
                ue.reported_sinr_db = reported;
            }
            let actual = if ue.state.outage { f64::NEG_INFINITY } else { ue.state.sinr_db };
            *radio = UeRadio { reported_sinr_db: ue.reported_sinr_db, sinr_db: actual };
        }
        self.cell.on_slot(now_ns, &self.radio, &mut self.harq_rng, &mut self.scheduling);
        std::mem::swap(&mut self.decoded, &mut self.scheduling);
    }
}
