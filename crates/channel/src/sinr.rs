//! The link budget (docs/models/channel.md §6):
//! SINR = P_tx + G_bf − PL − SF + F − N − L_indoor − I, all in dB.

use crate::units::{db_to_lin, lin_to_db};

/// Thermal noise power N = −174 dBm/Hz + 10 log10(B) + NF, in dBm.
pub fn noise_dbm(bandwidth_hz: f64, nf_db: f64) -> f64 {
    -174.0 + 10.0 * bandwidth_hz.log10() + nf_db
}

/// Ideal beamforming gain 10 log10(N_tx · N_rx) of two phased arrays.
pub fn beamforming_gain_db(n_tx: u32, n_rx: u32) -> f64 {
    10.0 * (f64::from(n_tx) * f64::from(n_rx)).log10()
}

/// SINR loss caused by interference I at `inr_db` above the noise:
/// S/(N + I) = (S/N) / (1 + I/N), i.e. 10 log10(1 + 10^(INR/10)) dB.
/// `None` (the default: beamformed mmWave cells do not interfere) gives 0.
pub fn interference_penalty_db(inr_db: Option<f64>) -> f64 {
    inr_db.map_or(0.0, |inr| lin_to_db(1.0 + db_to_lin(inr)))
}

/// Everything in the budget that does not depend on where the UE is:
/// P_tx + G − N − I − L_indoor, computed once per link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkBudget {
    pub fixed_db: f64,
}

impl LinkBudget {
    /// `gain_db` is the total antenna gain (beamforming and/or MIMO gain),
    /// `indoor_loss_db` the O2I penetration loss (0 for outdoor UEs).
    pub fn new(p_tx_dbm: f64, gain_db: f64, bandwidth_hz: f64, nf_db: f64, inr_db: Option<f64>, indoor_loss_db: f64) -> Self {
        LinkBudget { fixed_db: p_tx_dbm + gain_db - noise_dbm(bandwidth_hz, nf_db) - interference_penalty_db(inr_db) - indoor_loss_db }
    }

    /// SINR for a path loss, shadowing and fading gain, all in dB.
    #[inline]
    pub fn sinr_db(&self, pathloss_db: f64, shadowing_db: f64, fading_db: f64) -> f64 {
        self.fixed_db - pathloss_db - shadowing_db + fading_db
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_budget() {
        // N = −174 + 90 + 7 = −77 dBm at 1 GHz, NF 7 dB.
        assert!((noise_dbm(1e9, 7.0) + 77.0).abs() < 1e-12);
        // 64 × 16 = 1024 elements: 30.103 dB.
        assert!((beamforming_gain_db(64, 16) - 30.10299956639812).abs() < 1e-12);
        let b = LinkBudget::new(30.0, beamforming_gain_db(64, 16), 1e9, 7.0, None, 0.0);
        // P + G − N = 30 + 30.103 + 77 = 137.103 dB; with PL 103.343 → 33.76 dB.
        assert!((b.sinr_db(103.343, 0.0, 0.0) - 33.760).abs() < 1e-3);
    }

    #[test]
    fn interference_term() {
        assert_eq!(interference_penalty_db(None), 0.0);
        // I = N doubles the noise: −3.01 dB.
        assert!((interference_penalty_db(Some(0.0)) - 3.0103).abs() < 1e-4);
        let with = LinkBudget::new(30.0, 0.0, 1e9, 7.0, Some(0.0), 2.0);
        let without = LinkBudget::new(30.0, 0.0, 1e9, 7.0, None, 0.0);
        assert!((without.fixed_db - with.fixed_db - 5.0103).abs() < 1e-4);
    }
}
