//! Cell and UE parameters (docs/models/ran.md). Every field is a scenario field, with the
//! default docs/scenario-reference.md gives. Validation names the field, the bad value
//! and what is allowed.

use std::fmt;

use millinet_channel::link::DEFAULT_ETA_OH;
use millinet_channel::{LinkAbstraction, Panel};

use crate::amc;
use crate::scheduler;
use crate::tdd::TddConfig;

/// RLC mode of a bearer (TS 38.322 §4.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RlcMode {
    /// Acknowledged: ARQ by status reports, never loses an SDU except by overflow.
    Am,
    /// Unacknowledged: no ARQ; a segment lost after HARQ loses its SDU.
    Um,
}

/// HARQ error model (docs/models/ran.md#harq).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HarqMode {
    /// TBs fail with the BLER curve of docs/models/ran.md#harq and are retransmitted.
    Errors,
    /// No TB ever fails (cross-checks against wired models).
    Ideal,
}

/// MAC HARQ parameters (docs/models/ran.md#harq, TS 38.321 §5.3.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HarqConfig {
    pub mode: HarqMode,
    /// Time from a transmission to its retransmission (and to the ACK that frees
    /// the process after a success).
    pub rtt_ns: u64,
    /// Retransmissions after the first attempt before the TB goes back to RLC.
    pub max_retx: u8,
    /// HARQ processes per UE and direction.
    pub processes: usize,
}

impl Default for HarqConfig {
    fn default() -> Self {
        HarqConfig { mode: HarqMode::Errors, rtt_ns: 1_000_000, max_retx: 3, processes: 16 }
    }
}

/// gNB-wide parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CellConfig {
    /// Slot duration (125 µs: numerology 3).
    pub slot_ns: u64,
    /// Scheduler name from the registry ([`crate::scheduler::REGISTRY`]).
    pub scheduler: String,
    pub tdd: TddConfig,
    pub harq: HarqConfig,
    /// SINR → rate mapping of the carrier (docs/models/channel.md §8).
    pub link: LinkAbstraction,
    /// Below this SINR a UE is in outage and nothing is scheduled for it
    /// (docs/models/channel.md §6). Set it to the channel's `outage_threshold_db`; −∞
    /// leaves only −∞ (forced outage, zero-rate trace) as outage, which is
    /// what capacity-trace links need.
    pub outage_sinr_db: f64,
    /// R_ul / R (docs/models/ran.md#tdd-and-uplink).
    pub ul_fraction: f64,
    /// Scheduling-request delay paid when a UE's uplink buffer was empty.
    pub sr_delay_ns: u64,
    /// The gNB's antenna panel: how its beams reach the UEs of other cells
    /// (docs/models/ran.md#interference).
    pub panel: Panel,
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig {
            slot_ns: 125_000,
            scheduler: "round_robin".to_string(),
            tdd: TddConfig::default(),
            harq: HarqConfig::default(),
            link: LinkAbstraction { bandwidth_hz: 1e9, eta_oh: DEFAULT_ETA_OH, mcs: false },
            outage_sinr_db: -5.0,
            ul_fraction: 0.5,
            sr_delay_ns: 500_000,
            panel: Panel::facing(64),
        }
    }
}

/// Per-UE RLC parameters (docs/models/ran.md#rlc), used for both directions of its bearer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UeConfig {
    pub rlc_mode: RlcMode,
    /// B_RLC of the gNB-side (downlink) transmission buffer.
    pub dl_buffer_bytes: u64,
    /// Limit of the UE-side (uplink) transmission buffer.
    pub ul_buffer_bytes: u64,
    /// AM: t-Reassembly, from a known loss to the status report that NACKs it.
    pub t_reassembly_ns: u64,
    /// AM: t-StatusProhibit, minimum spacing of status reports.
    pub t_status_prohibit_ns: u64,
    /// UM: t-Reordering, from a known loss to delivering past the hole.
    pub t_reordering_ns: u64,
    /// The UE's antenna panel, steered at its serving cell: how much of another cell's power
    /// it picks up (docs/models/ran.md#interference).
    pub panel: Panel,
}

impl Default for UeConfig {
    fn default() -> Self {
        UeConfig {
            rlc_mode: RlcMode::Am,
            dl_buffer_bytes: 10_000_000,
            ul_buffer_bytes: 10_000_000,
            t_reassembly_ns: 1_000_000,
            t_status_prohibit_ns: 2_000_000,
            t_reordering_ns: 1_000_000,
            panel: Panel::facing(16),
        }
    }
}

/// A bad configuration value: which field, what it was, what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub field: &'static str,
    pub value: String,
    pub allowed: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ran: {} = {} is invalid; allowed: {}", self.field, self.value, self.allowed)
    }
}

impl std::error::Error for ConfigError {}

pub(crate) fn bad(field: &'static str, value: impl fmt::Display, allowed: impl Into<String>) -> ConfigError {
    ConfigError { field, value: value.to_string(), allowed: allowed.into() }
}

impl CellConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.slot_ns == 0 {
            return Err(bad("slot_ns", self.slot_ns, "a positive duration"));
        }
        if scheduler::by_name(&self.scheduler).is_none() {
            return Err(bad("scheduler", &self.scheduler, scheduler::names().collect::<Vec<_>>().join(", ")));
        }
        self.tdd.validate()?;
        if self.harq.processes == 0 || self.harq.processes > 64 {
            return Err(bad("harq.processes", self.harq.processes, "1 to 64"));
        }
        if self.harq.rtt_ns == 0 {
            return Err(bad("harq.rtt_ns", self.harq.rtt_ns, "a positive duration"));
        }
        amc::validate(&self.link, self.outage_sinr_db)?;
        if !(self.ul_fraction > 0.0 && self.ul_fraction <= 1.0) {
            return Err(bad("ul_fraction", self.ul_fraction, "0 < ul_fraction <= 1"));
        }
        self.panel.validate().map_err(|e| bad("panel", e, "a valid antenna panel"))
    }
}

impl UeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.dl_buffer_bytes == 0 {
            return Err(bad("dl_buffer_bytes", self.dl_buffer_bytes, "at least 1 byte"));
        }
        if self.ul_buffer_bytes == 0 {
            return Err(bad("ul_buffer_bytes", self.ul_buffer_bytes, "at least 1 byte"));
        }
        self.panel.validate().map_err(|e| bad("panel", e, "a valid antenna panel"))
    }
}
