//! The scenario schema: the one place that says which fields exist, their types
//! and defaults. docs/scenario-reference.md is checked against it by a test.

use serde::{Deserialize, Serialize};

use crate::profile::TcpProfile;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// One line shown by `millinet scenarios`.
    #[serde(default)]
    pub description: String,
    /// Simulated time in seconds.
    pub duration_s: f64,
    /// The run's seed; every random stream derives from it.
    pub seed: u64,
    #[serde(default)]
    pub outputs: Outputs,
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// gNBs (radio access, docs/models/ran.md); each sits on a node.
    #[serde(default)]
    pub cells: Vec<super::radio::CellSpec>,
    /// UEs, each attached to a cell and sitting on a node.
    #[serde(default)]
    pub ues: Vec<super::radio::UeSpec>,
    /// Fixed obstacles (docs/models/channel.md §1).
    #[serde(default)]
    pub obstacles: Vec<super::radio::ObstacleSpec>,
    #[serde(default)]
    pub random_obstacles: super::radio::RandomObstacles,
    /// Left out of the resolved scenario while it has the defaults (run ids unchanged).
    #[serde(default, skip_serializing_if = "super::radio::HandoverSpec::is_default")]
    pub handover: super::radio::HandoverSpec,
    /// Whether cells sharing a carrier interfere (docs/models/ran.md#interference). Left out
    /// of the resolved scenario at its default.
    #[serde(default, skip_serializing_if = "super::radio::InterferenceSpec::is_full")]
    pub interference: super::radio::InterferenceSpec,
    /// milliProxy (docs/proxy.md); off while `proxy.node` is empty.
    #[serde(default)]
    pub proxy: ProxySpec,
}

/// Which proxy sits on `proxy.node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyKind {
    /// milliProxy (docs/proxy.md#what-milliproxy-is): end-to-end semantics, flow window from telemetry.
    Milliproxy,
    /// The split-TCP baseline (docs/proxy.md#split-tcp): terminates the connection, early ACKs.
    Split,
}

/// A proxy on a node of the path: milliProxy at the gNB's node (telemetry delay 0) or at
/// the PGW/edge node (`d_info_s` > 0), or the split-TCP baseline at the edge.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxySpec {
    /// The node it sits on; "" means no proxy.
    pub node: String,
    pub kind: ProxyKind,
    /// Flow-window policy: "calibrated" (the default), "bdp" (the published rule), "static",
    /// "passthrough" or "target-queue" (docs/proxy.md).
    pub policy: String,
    pub bdp_threshold_bytes: u64,
    pub bdp_start_bytes: u64,
    pub static_fw_bytes: u64,
    /// target-queue and calibrated: the RLC queue they aim at, as seconds at the achievable
    /// rate (d*), and the gain on the queue's error (g). Left out of the resolved scenario at
    /// their defaults, which keeps the resolved scenarios without a proxy short.
    #[serde(skip_serializing_if = "is_default_target_queue_delay_s")]
    pub target_queue_delay_s: f64,
    #[serde(skip_serializing_if = "is_default_target_queue_gain")]
    pub target_queue_gain: f64,
    /// target-queue and calibrated: d* grows to this fraction of RTT_min where that is above
    /// `target_queue_delay_s` (0: never). Left out at its default, as the two above.
    #[serde(skip_serializing_if = "is_default_target_queue_rtt_fraction")]
    pub target_queue_rtt_fraction: f64,
    /// Segment size toward the UE (MSS2).
    pub mss2_bytes: u32,
    /// Server segments per relayed ACK; left out of the resolved scenario at its default (1).
    #[serde(skip_serializing_if = "is_one_u32")]
    pub segments_per_relayed_ack: u32,
    pub flow_buffer_bytes: u64,
    pub max_flows: u32,
    /// Most UEs whose telemetry is held; left out of the resolved scenario at its default.
    #[serde(skip_serializing_if = "is_default_max_ues")]
    pub max_ues: u32,
    /// Server ports of the flows it handles; empty: all TCP flows.
    pub server_ports: Vec<u16>,
    /// Telemetry delay D_info and period T_info.
    pub d_info_s: f64,
    pub t_info_s: f64,
    /// A record older than this is not used: its UE's flows fall back to passthrough.
    pub telemetry_max_age_s: f64,
    pub rtt_min_window_s: f64,
    /// Hold duplicate ACKs back while repairing a loss toward the UE locally.
    pub suppress_dup_acks_while_repairing: bool,
    /// Split-TCP: congestion control and MSS of the proxy's own TCP toward the UE.
    pub split_cc: String,
    pub split_mss_bytes: u32,
}

impl Default for ProxySpec {
    fn default() -> Self {
        ProxySpec {
            node: String::new(),
            kind: ProxyKind::Milliproxy,
            policy: "calibrated".to_string(),
            bdp_threshold_bytes: 2_000_000,
            bdp_start_bytes: 400_000_000,
            static_fw_bytes: 10_000_000,
            target_queue_delay_s: DEFAULT_TARGET_QUEUE_DELAY_S,
            target_queue_gain: DEFAULT_TARGET_QUEUE_GAIN,
            target_queue_rtt_fraction: DEFAULT_TARGET_QUEUE_RTT_FRACTION,
            mss2_bytes: 20_000,
            segments_per_relayed_ack: 1,
            flow_buffer_bytes: DEFAULT_FLOW_BUFFER_BYTES,
            max_flows: 65_536,
            max_ues: DEFAULT_MAX_UES,
            server_ports: Vec::new(),
            d_info_s: 0.0,
            t_info_s: 0.001,
            telemetry_max_age_s: 0.1,
            rtt_min_window_s: 10.0,
            suppress_dup_acks_while_repairing: false,
            split_cc: "cubic".to_string(),
            split_mss_bytes: 1400,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Outputs {
    /// Time-series sampling step (cwnd, srtt, queues), seconds.
    pub sample_step_s: f64,
    /// Goodput bin width, seconds.
    pub goodput_bin_s: f64,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs { sample_step_s: 0.001, goodput_bin_s: 0.01 }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aqm {
    Droptail,
    Codel,
    /// RFC 9332's coupled AQM on one FIFO (docs/models/transport.md §10).
    Dualpi2,
}

/// A bidirectional wired link; each direction has its own queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    pub rate_bps: f64,
    pub delay_s: f64,
    #[serde(default = "default_queue_bytes")]
    pub queue_bytes: u64,
    #[serde(default = "default_aqm")]
    pub aqm: Aqm,
    #[serde(default = "default_codel_target_s")]
    pub codel_target_s: f64,
    #[serde(default = "default_codel_interval_s")]
    pub codel_interval_s: f64,
    /// 0: constant rate. Otherwise the rate alternates between `rate_bps` and
    /// `switch_rate_bps` every `switch_period_s` (both directions).
    #[serde(default)]
    pub switch_period_s: f64,
    #[serde(default)]
    pub switch_rate_bps: f64,
    /// Packets each direction's queue holds at most besides `queue_bytes` (a Linux qdisc's
    /// `limit`); 0: no packet limit. Left out of the resolved scenario while 0.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub queue_packets: u64,
    /// The a→b direction's rate follows a cell's per-user capacity (docs/studies.md#spep-emulation); b→a
    /// keeps `rate_bps`. Left out of the resolved scenario when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySpec>,
    /// A Mahimahi link trace (relative to the scenario file) whose delivery opportunities
    /// serve the a→b direction instead of `rate_bps`, as `mm-link`'s downlink trace does; ""
    /// for none. Left out of the resolved scenario when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_a_to_b: String,
    /// The same for the b→a direction (`mm-link`'s uplink trace).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_b_to_a: String,
}

/// The per-user capacity process of the spep-emulation study (docs/studies.md#spep-emulation,
/// docs/models/channel.md §12): C_user = B · SE(SINR*) / `users`, updated every `update_s`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySpec {
    /// "lte": shadow fading on the baseline SINR; "mmwave": plus the Markov LOS/NLOS
    /// excess loss.
    pub carrier: CapacityCarrierSpec,
    #[serde(default = "default_capacity_bandwidth_hz")]
    pub bandwidth_hz: f64,
    /// Users sharing the cell equally: each gets 1/`users` of its capacity.
    #[serde(default = "default_capacity_users")]
    pub users: u32,
    /// SINR_base when `sinr_trace` is empty, dB.
    #[serde(default = "default_capacity_sinr_db")]
    pub sinr_db: f64,
    /// SINR_base as a `time_s,sinr_db` CSV (relative to the scenario file); "" for constant.
    #[serde(default)]
    pub sinr_trace: String,
    /// σ_LOS-SF of the shadow-fading draw at each SINR sample, dB.
    #[serde(default = "default_capacity_shadow_sigma_db")]
    pub shadow_sigma_db: f64,
    /// mmWave: the LOS→NLOS rate λ of the Markov chain, 1/s.
    #[serde(default = "default_capacity_lambda_per_s")]
    pub lambda_per_s: f64,
    /// mmWave: the distance whose UMi LOS probability and NLOS excess loss the chain uses.
    #[serde(default = "default_capacity_distance_m")]
    pub distance_m: f64,
    #[serde(default = "default_capacity_update_s")]
    pub update_s: f64,
    #[serde(default = "default_capacity_sinr_samples_per_s")]
    pub sinr_samples_per_s: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapacityCarrierSpec {
    Lte,
    Mmwave,
}

fn default_capacity_bandwidth_hz() -> f64 {
    10e6
}
fn default_capacity_users() -> u32 {
    10
}
fn default_capacity_sinr_db() -> f64 {
    15.0
}
fn default_capacity_shadow_sigma_db() -> f64 {
    4.0
}
fn default_capacity_lambda_per_s() -> f64 {
    0.5
}
fn default_capacity_distance_m() -> f64 {
    30.0
}
fn default_capacity_update_s() -> f64 {
    0.1
}
fn default_capacity_sinr_samples_per_s() -> u32 {
    3
}
// The settings the milliproxy study validated for `calibrated` over its full grid (50 seeds,
// both TCP profiles; docs/studies.md "Both TCP profiles, the full grid"): d* = max(3 ms,
// 0.15 · RTT_min) and a flow buffer above the path's BDP at D_RS 20 ms.
const DEFAULT_TARGET_QUEUE_DELAY_S: f64 = millinet_proxy::DEFAULT_TARGET_DELAY_S;
const DEFAULT_TARGET_QUEUE_RTT_FRACTION: f64 = millinet_proxy::DEFAULT_RTT_FRACTION;
const DEFAULT_TARGET_QUEUE_GAIN: f64 = millinet_proxy::DEFAULT_GAIN;
const DEFAULT_FLOW_BUFFER_BYTES: u64 = millinet_proxy::DEFAULT_FLOW_BUFFER_BYTES;
fn is_default_target_queue_delay_s(x: &f64) -> bool {
    *x == DEFAULT_TARGET_QUEUE_DELAY_S
}
const DEFAULT_MAX_UES: u32 = 65_536;
fn is_default_max_ues(x: &u32) -> bool {
    *x == DEFAULT_MAX_UES
}
fn is_default_target_queue_rtt_fraction(x: &f64) -> bool {
    *x == DEFAULT_TARGET_QUEUE_RTT_FRACTION
}
fn is_default_target_queue_gain(x: &f64) -> bool {
    *x == DEFAULT_TARGET_QUEUE_GAIN
}
fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

fn is_lowest_rtt(s: &MptcpSchedulerSpec) -> bool {
    *s == MptcpSchedulerSpec::LowestRtt
}

fn default_queue_bytes() -> u64 {
    10_000_000
}
fn default_aqm() -> Aqm {
    Aqm::Droptail
}
fn default_codel_target_s() -> f64 {
    0.005
}
fn default_codel_interval_s() -> f64 {
    0.1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind {
    Tcp,
    Udp,
    /// MP-TCP (RFC 8684): one subflow per radio of the receiving device, opened over its
    /// first radio and joined over the others (docs/models/mptcp.md); `cc` may be coupled.
    Mptcp,
}

/// How an MP-TCP sender picks the subflow for its next bytes (docs/models/mptcp.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MptcpSchedulerSpec {
    /// The lowest smoothed RTT among the subflows with congestion-window space.
    #[default]
    LowestRtt,
    RoundRobin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// Always has data (full buffer).
    Bulk,
    /// `file_bytes` then close.
    File,
    /// Downloads of `sizes_bytes`, each requested when the previous one is delivered.
    Repeated,
    /// Writes at `app_rate_bps`.
    Rate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NewRenoVariantSpec {
    Impatient,
    SlowButSteady,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CwndGrowthSpec {
    CwndLimited,
    Always,
}

/// How CUBIC's slow start may end before a loss (docs/models/transport.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HystartSpec {
    /// Standard slow start until a loss.
    Off,
    /// HyStart as Linux's CUBIC runs it (its default).
    Linux,
    /// HyStart++ (RFC 9406).
    Rfc9406,
}

/// Which text CUBIC follows where Linux and RFC 9438 differ (docs/models/transport.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CubicVariantSpec {
    /// Linux's tcp_cubic.c: one minimum RTT ahead, α_cubic throughout.
    Linux,
    /// RFC 9438: one smoothed RTT ahead, α_cubic becoming 1 at W_max.
    Rfc9438,
}

/// When a TCP receiver acknowledges (docs/models/transport.md §2). The booleans this key took
/// before Linux's receiver existed still load: `false` as "off", `true` as "rfc5681".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DelayedAckSpec {
    /// Every segment at once.
    Off,
    /// RFC 5681 §4.2: every second full-sized segment or after 40 ms.
    Rfc5681,
    /// Linux's receiver: quick ACKs, then more than one full segment; SACK compression.
    Linux,
}

impl<'de> Deserialize<'de> for DelayedAckSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Choice;
        impl serde::de::Visitor<'_> for Choice {
            type Value = DelayedAckSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"one of `linux`, `rfc5681`, `off` (or true for `rfc5681`, false for `off`)"#)
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<DelayedAckSpec, E> {
                Ok(if v { DelayedAckSpec::Rfc5681 } else { DelayedAckSpec::Off })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DelayedAckSpec, E> {
                match v {
                    "off" => Ok(DelayedAckSpec::Off),
                    "rfc5681" => Ok(DelayedAckSpec::Rfc5681),
                    "linux" => Ok(DelayedAckSpec::Linux),
                    other => Err(E::unknown_variant(other, &["linux", "rfc5681", "off"])),
                }
            }
        }
        deserializer.deserialize_any(Choice)
    }
}

/// The ECN feedback a TCP flow asks for (docs/models/transport.md §12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnSpec {
    /// Not ECN-capable (Linux's default for the connections it opens).
    #[default]
    Off,
    /// RFC 3168's feedback.
    Rfc3168,
    /// Accurate ECN (RFC 9768), falling back to RFC 3168.
    Accurate,
}

fn is_ecn_off(e: &EcnSpec) -> bool {
    *e == EcnSpec::Off
}

/// How a SACK sender finds its losses (docs/models/transport.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossDetectionSpec {
    /// RACK and the tail loss probe (RFC 8985), Linux's default.
    RackTlp,
    /// RFC 6675's IsLost (DupThresh), no probe.
    Rfc6675,
}

/// One transport flow: data goes from `src` to `dst`. For TCP the `dst` opens
/// the connection (a download), as a UE does.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default = "default_kind")]
    pub kind: FlowKind,
    pub src: String,
    pub dst: String,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default = "default_app")]
    pub app: App,
    #[serde(default)]
    pub file_bytes: u64,
    /// Left out of the resolved scenario while empty: a run's id is the hash of that text,
    /// and flows of the other application kinds keep the id they had before this field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes_bytes: Vec<u64>,
    #[serde(default)]
    pub app_rate_bps: f64,
    /// Which radio of the receiving device the flow uses: its n-th [[ues]] entry (a device
    /// with an mmWave and an LTE radio has two, each with its own address). Left out of the
    /// resolved scenario while 0.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub dst_radio: u32,
    /// MP-TCP's packet scheduler. Left out of the resolved scenario at its default.
    #[serde(default, skip_serializing_if = "is_lowest_rtt")]
    pub mptcp_scheduler: MptcpSchedulerSpec,
    // TCP
    /// The named set of TCP settings that replaces the keys below as the file wrote them
    /// (profile.rs). Never written into the resolved scenario, which spells out every value
    /// the profile set: loaded again, it must give the same scenario, also where a `--set`
    /// key had beaten the profile; and runs of existing stores keep their ids.
    #[serde(default, skip_serializing)]
    pub tcp_profile: TcpProfile,
    #[serde(default = "default_cc")]
    pub cc: String,
    #[serde(default = "default_mss_bytes")]
    pub mss_bytes: u32,
    #[serde(default = "default_initial_window")]
    pub initial_window_segments: u32,
    #[serde(default = "yes")]
    pub sack: bool,
    #[serde(default = "yes")]
    pub timestamps: bool,
    #[serde(default = "yes")]
    pub window_scaling: bool,
    #[serde(default = "default_delayed_ack")]
    pub delayed_ack: DelayedAckSpec,
    #[serde(default = "default_min_rto_s")]
    pub min_rto_s: f64,
    #[serde(default = "default_rcv_buf_bytes")]
    pub rcv_buf_bytes: u64,
    #[serde(default = "default_newreno_variant")]
    pub newreno_variant: NewRenoVariantSpec,
    #[serde(default = "default_cwnd_growth")]
    pub cwnd_growth: CwndGrowthSpec,
    /// Undo a timeout the Eifel test proves spurious (Linux); always written into the
    /// resolved scenario, so that runs stored before this key existed (none undone) are not
    /// taken for runs with it.
    #[serde(default = "yes")]
    pub undo_spurious_rto: bool,
    /// CUBIC's slow-start exit; always written into the resolved scenario, so that runs
    /// stored before this key existed (no HyStart) are not taken for runs with it.
    #[serde(default = "default_hystart")]
    pub hystart: HystartSpec,
    /// Linux's CUBIC or RFC 9438's; always written into the resolved scenario, so that runs
    /// stored before this key existed (RFC 9438's) are not taken for runs with it.
    #[serde(default = "default_cubic_variant")]
    pub cubic_variant: CubicVariantSpec,
    /// Proportional Rate Reduction in SACK recovery; always written into the resolved
    /// scenario, so that runs stored before this key existed (none) are not taken for runs with it.
    #[serde(default = "yes")]
    pub prr: bool,
    /// RACK-TLP or RFC 6675; always written into the resolved scenario, so that runs stored
    /// before this key existed (RFC 6675) are not taken for runs with it.
    #[serde(default = "default_loss_detection")]
    pub loss_detection: LossDetectionSpec,
    /// ECN feedback asked for in the SYN exchange. Left out of the resolved scenario while
    /// off, so runs stored before this key existed keep their ids.
    #[serde(default, skip_serializing_if = "is_ecn_off")]
    pub ecn: EcnSpec,
    // UDP
    #[serde(default = "default_udp_rate_bps")]
    pub udp_rate_bps: f64,
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
}

fn default_kind() -> FlowKind {
    FlowKind::Tcp
}
fn default_app() -> App {
    App::Bulk
}
fn default_cc() -> String {
    "cubic".to_string()
}
fn default_mss_bytes() -> u32 {
    1400
}
fn default_initial_window() -> u32 {
    10
}
fn yes() -> bool {
    true
}
fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}
fn is_one_u32(x: &u32) -> bool {
    *x == 1
}
fn default_min_rto_s() -> f64 {
    0.2
}
fn default_rcv_buf_bytes() -> u64 {
    super::validate::MAX_RCV_BUF_BYTES
}
fn default_newreno_variant() -> NewRenoVariantSpec {
    NewRenoVariantSpec::Impatient
}
fn default_cwnd_growth() -> CwndGrowthSpec {
    CwndGrowthSpec::CwndLimited
}
fn default_delayed_ack() -> DelayedAckSpec {
    DelayedAckSpec::Linux
}
fn default_hystart() -> HystartSpec {
    HystartSpec::Linux
}
fn default_cubic_variant() -> CubicVariantSpec {
    CubicVariantSpec::Linux
}
fn default_loss_detection() -> LossDetectionSpec {
    LossDetectionSpec::RackTlp
}
fn default_udp_rate_bps() -> f64 {
    1e9
}
fn default_packet_bytes() -> u32 {
    1400
}
