//! Adaptive modulation and coding: from the SINR in the last CQI report to the
//! rate a full slot carries and the SINR that rate needs (channel.md §5,
//! ran.md §3). The formulas live in the channel crate; this module only picks
//! the inputs and caches nothing, so it is the one place the RAN touches them.

use crate::config::{bad, ConfigError};

/// Link-abstraction parameters of one cell (channel.md §5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Carrier bandwidth B.
    pub bandwidth_hz: f64,
    /// η_oh: control, reference-signal and guard overhead; the default makes
    /// the peak 3.2 Gbit/s at 1 GHz.
    pub eta_oh: f64,
    /// Quantize the spectral efficiency down to the 64QAM CQI table.
    pub mcs: bool,
    /// Below this SINR the UE is in outage: nothing is scheduled (channel.md §4).
    pub outage_sinr_db: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { bandwidth_hz: 1e9, eta_oh: 3.2 / 5.5547, mcs: false, outage_sinr_db: -5.0 }
    }
}

impl LinkConfig {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.bandwidth_hz > 0.0 && self.bandwidth_hz.is_finite()) {
            return Err(bad("link.bandwidth_hz", self.bandwidth_hz, "a positive number"));
        }
        if !(self.eta_oh > 0.0 && self.eta_oh <= 1.0) {
            return Err(bad("link.eta_oh", self.eta_oh, "0 < eta_oh <= 1"));
        }
        if !self.outage_sinr_db.is_finite() {
            return Err(bad("link.outage_sinr_db", self.outage_sinr_db, "a finite number of dB"));
        }
        Ok(())
    }

    /// True when a SINR (dB) means outage; NaN and −∞ are outage too.
    #[inline]
    pub fn in_outage(&self, sinr_db: f64) -> bool {
        sinr_db.is_nan() || sinr_db < self.outage_sinr_db
    }
}

/// What AMC picks for one UE from its reported SINR.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AmcChoice {
    /// R(reported SINR): bits per second over a full slot.
    pub rate_bps: f64,
    /// SINR at which the chosen spectral efficiency is reached; the HARQ BLER
    /// curve is centred on it (ran.md §3).
    pub sinr_req_db: f64,
}

/// AMC for a reported SINR; `None` in outage.
pub(crate) fn choose(link: &LinkConfig, reported_sinr_db: f64) -> Option<AmcChoice> {
    if link.in_outage(reported_sinr_db) {
        return None;
    }
    let (rate_bps, sinr_req_db) = link_abstraction(link, reported_sinr_db);
    (rate_bps > 0.0).then_some(AmcChoice { rate_bps, sinr_req_db })
}

/// (rate bit/s, SINR required dB) for a reported SINR.
// Stand-in until the channel crate exports its link-abstraction functions;
// switched over to them as soon as they land (no second copy of channel.md §5).
fn link_abstraction(link: &LinkConfig, sinr_db: f64) -> (f64, f64) {
    const K: f64 = 0.9449;
    const GAMMA: f64 = 0.4852;
    const C_MAX: f64 = 5.5547;
    let lin = 10f64.powf(sinr_db / 10.0);
    let se = (K * (1.0 + GAMMA * lin).log2()).min(C_MAX);
    let _ = link.mcs;
    let req_lin = ((se / K).exp2() - 1.0) / GAMMA;
    (link.bandwidth_hz * link.eta_oh * se, 10.0 * req_lin.log10())
}
