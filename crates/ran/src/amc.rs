//! Adaptive modulation and coding: from the SINR in the last CQI report to the
//! rate a full slot carries and the SINR that rate needs (docs/models/channel.md §8,
//! docs/models/ran.md#harq). The formulas are the channel crate's; this module only applies
//! them to a report and decides what counts as outage for the scheduler.

use millinet_channel::{sinr_required_db, LinkAbstraction};

use crate::config::{bad, ConfigError};

/// What AMC picks for one UE from its reported SINR.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AmcChoice {
    /// R(reported SINR): bits per second over a full slot.
    pub rate_bps: f64,
    /// SINR at which the chosen spectral efficiency is reached; the HARQ BLER
    /// curve is centred on it (docs/models/ran.md#harq).
    pub sinr_req_db: f64,
}

/// True when a SINR means outage: below the threshold, or NaN.
#[inline]
pub(crate) fn in_outage(sinr_db: f64, outage_sinr_db: f64) -> bool {
    sinr_db.is_nan() || sinr_db < outage_sinr_db
}

/// AMC for a reported SINR; `None` in outage or when no MCS fits (below the
/// first CQI-table entry in MCS mode), as nothing can be scheduled then.
pub(crate) fn choose(link: &LinkAbstraction, outage_sinr_db: f64, reported_sinr_db: f64) -> Option<AmcChoice> {
    if in_outage(reported_sinr_db, outage_sinr_db) {
        return None;
    }
    let se = link.se(reported_sinr_db);
    (se > 0.0).then(|| AmcChoice { rate_bps: link.rate_bps(reported_sinr_db), sinr_req_db: sinr_required_db(se) })
}

pub(crate) fn validate(link: &LinkAbstraction, outage_sinr_db: f64) -> Result<(), ConfigError> {
    if !(link.bandwidth_hz > 0.0 && link.bandwidth_hz.is_finite()) {
        return Err(bad("link.bandwidth_hz", link.bandwidth_hz, "a positive number"));
    }
    // Up to two spatial layers (LTE's 2×2 MIMO folds its second layer into η_oh).
    if !(link.eta_oh > 0.0 && link.eta_oh <= 2.0) {
        return Err(bad("link.eta_oh", link.eta_oh, "0 < eta_oh <= 2"));
    }
    if outage_sinr_db.is_nan() || outage_sinr_db == f64::INFINITY {
        return Err(bad("outage_sinr_db", outage_sinr_db, "a number of dB, or -inf for no threshold"));
    }
    Ok(())
}
