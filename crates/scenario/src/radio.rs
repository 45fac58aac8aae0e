//! Scenario schema of the radio access network: cells (gNBs), UEs and obstacles
//! (docs/models/channel.md, docs/models/ran.md), with the defaults of docs/scenario-reference.md.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathLossModel {
    Umi,
    Uma,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HarqSpec {
    /// Errors per the BLER model, retransmissions with chase combining.
    On,
    /// Errors per the BLER model, no HARQ retransmission (RLC repairs, or UM loses).
    Off,
    /// No errors at all (cross-checks).
    Ideal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RlcModeSpec {
    Am,
    Um,
}

/// What kind of cell: its defaults and how obstacles affect it (docs/models/channel.md §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellKind {
    /// A mmWave gNB (28 GHz, 1 GHz): an obstacle on the path makes the link NLOS.
    #[default]
    Mmwave,
    /// An LTE eNB (2.1 GHz, 20 MHz, 1 ms TTI, UMa): an obstacle only adds
    /// `penetration_loss_db`; the UE side is one antenna (2×2 MIMO as `mimo_gain_db`).
    /// Every field left out takes the LTE default of [`LTE_CELL_DEFAULTS`].
    Lte,
}

impl CellKind {
    fn is_mmwave(&self) -> bool {
        *self == CellKind::Mmwave
    }
}

/// The defaults of an LTE cell's fields that differ from a mmWave cell's (docs/models/channel.md §8:
/// 2.1 GHz, 20 MHz, 46 dBm, 2×2 MIMO gain 3 dB, UMa, peak 150 Mbit/s; docs/models/ran.md: a 1 ms TTI, the
/// LTE FDD HARQ of 8 processes with an 8 ms round trip, 5 ms CQI and SR periods).
pub const LTE_CELL_DEFAULTS: &[(&str, FileDefault)] = &[
    ("height_m", FileDefault::Number(25.0)),
    ("pathloss", FileDefault::Text("uma")),
    ("fc_ghz", FileDefault::Number(2.1)),
    ("bandwidth_hz", FileDefault::Number(20e6)),
    ("tx_power_dbm", FileDefault::Number(46.0)),
    ("antennas", FileDefault::Whole(1)),
    ("mimo_gain_db", FileDefault::Number(3.0)),
    ("peak_rate_bps", FileDefault::Number(150e6)),
    ("slot_s", FileDefault::Number(0.001)),
    ("harq_rtt_s", FileDefault::Number(0.008)),
    ("harq_processes", FileDefault::Whole(8)),
    ("cqi_period_s", FileDefault::Number(0.005)),
    ("cqi_delay_s", FileDefault::Number(0.004)),
    ("sr_delay_s", FileDefault::Number(0.005)),
];

/// A default value as the scenario file would write it.
#[derive(Clone, Copy, Debug)]
pub enum FileDefault {
    Number(f64),
    Whole(i64),
    Text(&'static str),
    Flag(bool),
}

/// A gNB: its radio, MAC, RLC and PDCP. `node` names the [[nodes]] entry it sits on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    pub node: String,
    /// Left out of the resolved scenario for mmWave cells (run ids stay those of before LTE).
    #[serde(default, skip_serializing_if = "CellKind::is_mmwave")]
    pub kind: CellKind,
    /// Extra antenna gain (LTE's 2×2 MIMO); left out while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mimo_gain_db: f64,
    /// What an obstacle on the path costs a sub-6 GHz (LTE) cell; left out while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub penetration_loss_db: f64,
    pub position_m: [f64; 2],
    #[serde(default = "d_height_bs")]
    pub height_m: f64,
    #[serde(default = "d_pathloss")]
    pub pathloss: PathLossModel,
    #[serde(default = "d_fc")]
    pub fc_ghz: f64,
    #[serde(default = "d_bandwidth")]
    pub bandwidth_hz: f64,
    #[serde(default = "d_tx_power")]
    pub tx_power_dbm: f64,
    #[serde(default = "d_antennas_bs")]
    pub antennas: u32,
    /// Peak PHY rate; sets the overhead factor η_oh = peak / (B · SE_max).
    #[serde(default = "d_peak_rate")]
    pub peak_rate_bps: f64,
    #[serde(default)]
    pub mcs: bool,
    #[serde(default = "d_outage")]
    pub outage_threshold_db: f64,
    #[serde(default = "d_slot")]
    pub slot_s: f64,
    #[serde(default = "d_scheduler")]
    pub scheduler: String,
    /// "dynamic" or a fixed pattern such as "DDDSU".
    #[serde(default = "d_tdd")]
    pub tdd: String,
    #[serde(default = "d_ul_every")]
    pub ul_every_slots: u32,
    #[serde(default = "d_ul_fraction")]
    pub ul_fraction: f64,
    #[serde(default = "d_sr_delay")]
    pub sr_delay_s: f64,
    #[serde(default = "d_harq")]
    pub harq: HarqSpec,
    #[serde(default = "d_harq_rtt")]
    pub harq_rtt_s: f64,
    #[serde(default = "d_harq_max_retx")]
    pub harq_max_retx: u32,
    #[serde(default = "d_harq_processes")]
    pub harq_processes: u32,
    #[serde(default = "d_cqi_period")]
    pub cqi_period_s: f64,
    #[serde(default = "d_cqi_delay")]
    pub cqi_delay_s: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockageSpec {
    /// LOS from the obstacles (docs/models/channel.md §5).
    Geometric,
    /// Two-state Markov with rate `markov_lambda_per_s` (§3.2).
    Markov,
    /// Always LOS (plus forced events).
    None,
    /// SINR from `trace` (CSV time_s,sinr_db).
    SinrTrace,
    /// Capacity from `trace` (CSV time_s,rate_bps, or Mahimahi with `.mahimahi`/`.up`/`.down`).
    CapacityTrace,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForcedKindSpec {
    Nlos,
    Outage,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedEventSpec {
    pub start_s: f64,
    pub duration_s: f64,
    pub kind: ForcedKindSpec,
}

/// A UE first served by `cell` (the node name of a cell), sitting on node `node`. It
/// measures every cell and is handed over between them ([handover]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeSpec {
    pub node: String,
    pub cell: String,
    /// Waypoints; one point means a static UE.
    pub route_m: Vec<[f64; 2]>,
    #[serde(default)]
    pub speed_mps: f64,
    #[serde(default = "d_height_ut")]
    pub height_m: f64,
    #[serde(default = "d_antennas_ue")]
    pub antennas: u32,
    #[serde(default = "d_noise_figure")]
    pub noise_figure_db: f64,
    #[serde(default)]
    pub indoor: bool,
    #[serde(default = "d_indoor_distance")]
    pub indoor_distance_m: f64,
    #[serde(default = "d_blockage")]
    pub blockage: BlockageSpec,
    #[serde(default = "d_lambda")]
    pub markov_lambda_per_s: f64,
    #[serde(default)]
    pub forced_events: Vec<ForcedEventSpec>,
    /// The LTE cell (its node) anchoring dual connectivity: while the serving mmWave cell
    /// is in outage the bearer moves there (docs/models/ran.md#handover-and-dual-connectivity). "" (default): no anchor.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub anchor: String,
    /// Trace file for the trace blockage models, relative to the scenario file.
    #[serde(default)]
    pub trace: String,
    #[serde(default = "yes")]
    pub shadowing: bool,
    #[serde(default)]
    pub fading: bool,
    #[serde(default = "d_rlc_mode")]
    pub rlc_mode: RlcModeSpec,
    #[serde(default = "d_rlc_buffer")]
    pub rlc_buffer_bytes: u64,
    #[serde(default = "d_rlc_aqm")]
    pub rlc_aqm: super::Aqm,
    /// DualPI2's L4S step and classic target on the RLC buffer (docs/models/transport.md §10).
    /// Left out of the resolved scenario at their defaults, so earlier runs keep their ids.
    #[serde(default = "d_dualpi2_step", skip_serializing_if = "is_d_dualpi2_step")]
    pub rlc_dualpi2_step_s: f64,
    #[serde(default = "d_dualpi2_target", skip_serializing_if = "is_d_dualpi2_target")]
    pub rlc_dualpi2_target_s: f64,
    #[serde(default = "d_reassembly")]
    pub rlc_reassembly_s: f64,
    #[serde(default = "d_status_prohibit")]
    pub rlc_status_prohibit_s: f64,
}

/// A fixed obstacle: an axis-aligned rectangle with its lower-left corner at (x_m, y_m).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObstacleSpec {
    pub x_m: f64,
    pub y_m: f64,
    pub width_m: f64,
    pub depth_m: f64,
    /// 0: infinitely high.
    #[serde(default)]
    pub height_m: f64,
    /// The façade an indoor UE inside it sees (TR 38.901 §7.4.3). Left out of the resolved
    /// scenario at its default.
    #[serde(default, skip_serializing_if = "O2iSpec::is_low_loss")]
    pub o2i: O2iSpec,
}

/// A building's O2I penetration model (docs/models/channel.md §2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum O2iSpec {
    #[default]
    LowLoss,
    HighLoss,
}

impl O2iSpec {
    pub fn is_low_loss(&self) -> bool {
        *self == O2iSpec::LowLoss
    }
}

/// Obstacles drawn at random in a region with the run's seed (one stream).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RandomObstacles {
    pub count: u32,
    /// [x_min, y_min, x_max, y_max] of the region that contains the obstacles.
    pub region_m: [f64; 4],
    pub width_m: [f64; 2],
    pub depth_m: [f64; 2],
}

impl Default for RandomObstacles {
    fn default() -> Self {
        RandomObstacles { count: 0, region_m: [0.0, 0.0, 0.0, 0.0], width_m: [5.0, 15.0], depth_m: [2.0, 10.0] }
    }
}

fn yes() -> bool {
    true
}
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}
fn d_height_bs() -> f64 {
    10.0
}
fn d_pathloss() -> PathLossModel {
    PathLossModel::Umi
}
fn d_fc() -> f64 {
    28.0
}
fn d_bandwidth() -> f64 {
    1e9
}
fn d_tx_power() -> f64 {
    30.0
}
fn d_antennas_bs() -> u32 {
    64
}
fn d_peak_rate() -> f64 {
    3.2e9
}
fn d_outage() -> f64 {
    -5.0
}
fn d_slot() -> f64 {
    125e-6
}
fn d_scheduler() -> String {
    "round_robin".to_string()
}
fn d_tdd() -> String {
    "dynamic".to_string()
}
fn d_ul_every() -> u32 {
    5
}
fn d_ul_fraction() -> f64 {
    0.5
}
fn d_sr_delay() -> f64 {
    0.0005
}
fn d_harq() -> HarqSpec {
    HarqSpec::On
}
fn d_harq_rtt() -> f64 {
    0.001
}
fn d_harq_max_retx() -> u32 {
    3
}
fn d_harq_processes() -> u32 {
    16
}
fn d_cqi_period() -> f64 {
    0.001
}
fn d_cqi_delay() -> f64 {
    0.0005
}
fn d_height_ut() -> f64 {
    1.5
}
fn d_antennas_ue() -> u32 {
    16
}
fn d_noise_figure() -> f64 {
    7.0
}
fn d_indoor_distance() -> f64 {
    5.0
}
fn d_blockage() -> BlockageSpec {
    BlockageSpec::Geometric
}
fn d_lambda() -> f64 {
    0.5
}
fn d_rlc_mode() -> RlcModeSpec {
    RlcModeSpec::Am
}
fn d_rlc_buffer() -> u64 {
    10_000_000
}
fn d_rlc_aqm() -> super::Aqm {
    super::Aqm::Droptail
}
/// Linux's `sch_dualpi2` step threshold and PI2 target.
fn d_dualpi2_step() -> f64 {
    0.001
}
fn is_d_dualpi2_step(s: &f64) -> bool {
    *s == d_dualpi2_step()
}
fn d_dualpi2_target() -> f64 {
    0.015
}
fn is_d_dualpi2_target(s: &f64) -> bool {
    *s == d_dualpi2_target()
}
fn d_reassembly() -> f64 {
    0.001
}
fn d_status_prohibit() -> f64 {
    0.002
}

/// Handover and dual connectivity (docs/models/ran.md#handover-and-dual-connectivity); applies to every UE of a scenario with more
/// than one cell it can measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HandoverSpec {
    /// false: every UE stays on its first cell.
    pub enabled: bool,
    /// A neighbour must beat the serving cell by this much (A3 hysteresis), dB.
    pub hysteresis_db: f64,
    /// … for this long.
    pub time_to_trigger_s: f64,
    /// Hard handover: how long the UE receives nothing.
    pub interruption_s: f64,
    /// Dual connectivity: interruption of a bearer switch to or from the LTE anchor.
    pub switch_interruption_s: f64,
    /// X2 forwarding delay of the source cell's undelivered data.
    pub x2_delay_s: f64,
    /// Rate of the X2 links between every pair of cells.
    pub x2_rate_bps: f64,
    /// How often each UE measures every cell.
    pub measurement_period_s: f64,
}

impl Default for HandoverSpec {
    fn default() -> Self {
        HandoverSpec {
            enabled: true,
            hysteresis_db: 3.0,
            time_to_trigger_s: 0.04,
            interruption_s: 0.02,
            switch_interruption_s: 0.005,
            x2_delay_s: 0.001,
            x2_rate_bps: 10e9,
            measurement_period_s: 0.001,
        }
    }
}

impl HandoverSpec {
    pub fn is_default(&self) -> bool {
        *self == HandoverSpec::default()
    }
}

/// Inter-cell interference (docs/models/ran.md#interference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterferenceSpec {
    /// Every mmWave cell interferes, slot by slot, with the UEs of the other cells of its
    /// carrier (same `fc_ghz`). A carrier with one cell has none to compute.
    #[default]
    Full,
    /// No cell interferes: a UE's SINR is its SNR.
    None,
}

impl InterferenceSpec {
    pub fn is_full(&self) -> bool {
        *self == InterferenceSpec::Full
    }
}
