//! Link abstraction: SINR → spectral efficiency → PHY rate (docs/models/channel.md §8).

use crate::units::{db_to_lin, lin_to_db};

/// Fit constant K of the truncated Shannon bound SE = K·log2(1 + γ·SINR).
pub const SE_K: f64 = 0.9449;
/// SINR back-off γ of the same fit.
pub const SE_GAMMA: f64 = 0.4852;
/// Cap c_max: the top entry of the 64QAM CQI table, bit/s/Hz.
pub const SE_MAX: f64 = 5.5547;
/// Default overhead factor η_oh: peak rate 3.2 Gbit/s at 1 GHz (3.2 / 5.5547 ≈ 0.576).
pub const DEFAULT_ETA_OH: f64 = 3.2 / SE_MAX;

/// Spectral efficiencies of the 64QAM CQI table, 3GPP TS 38.214 Table
/// 5.2.2.1-2, CQI 1..15 (bit/s/Hz).
pub const CQI_64QAM_SE: [f64; 15] =
    [0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547];

/// The highest CQI-table efficiency not above `se` (0 below the first entry).
pub fn quantize_se(se: f64) -> f64 {
    let n = CQI_64QAM_SE.partition_point(|&e| e <= se);
    if n == 0 {
        0.0
    } else {
        CQI_64QAM_SE[n - 1]
    }
}

/// The SINR → rate mapping of one carrier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkAbstraction {
    pub bandwidth_hz: f64,
    /// Overhead factor η_oh (control, reference signals, TDD guard time).
    pub eta_oh: f64,
    /// Quantize SE down to the CQI table (MCS mode) instead of the smooth fit.
    pub mcs: bool,
}

impl LinkAbstraction {
    /// Spectral efficiency SE(SINR) = min(c_max, K·log2(1 + γ·sinr)) in
    /// bit/s/Hz, quantized to the CQI table in MCS mode. −∞ dB gives 0.
    pub fn se(&self, sinr_db: f64) -> f64 {
        let se = (SE_K * (1.0 + SE_GAMMA * db_to_lin(sinr_db)).log2()).min(SE_MAX);
        if self.mcs {
            quantize_se(se)
        } else {
            se
        }
    }

    /// Achievable PHY rate R = B·η_oh·SE(SINR), bit/s.
    pub fn rate_bps(&self, sinr_db: f64) -> f64 {
        self.bandwidth_hz * self.eta_oh * self.se(sinr_db)
    }

    /// R for a channel state: 0 in outage (nothing can be scheduled).
    pub fn rate_for(&self, state: &crate::LinkState) -> f64 {
        if state.outage {
            0.0
        } else {
            self.rate_bps(state.sinr_db)
        }
    }

    /// Rate at the SE cap: B·η_oh·c_max.
    pub fn peak_rate_bps(&self) -> f64 {
        self.bandwidth_hz * self.eta_oh * SE_MAX
    }
}

/// The SINR at which the (unquantized) fit reaches `se`:
/// sinr = (2^(se/K) − 1)/γ. −∞ for se ≤ 0; +∞ above c_max, which no SINR
/// reaches. HARQ uses it as SINR_req of a transport block (docs/models/ran.md#harq).
pub fn sinr_required_db(se: f64) -> f64 {
    if se <= 0.0 {
        f64::NEG_INFINITY
    } else if se > SE_MAX {
        f64::INFINITY
    } else {
        lin_to_db(((se / SE_K).exp2() - 1.0) / SE_GAMMA)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nr() -> LinkAbstraction {
        LinkAbstraction { bandwidth_hz: 1e9, eta_oh: DEFAULT_ETA_OH, mcs: false }
    }

    #[test]
    fn capped_at_high_sinr() {
        assert_eq!(nr().se(40.0), SE_MAX);
        assert!((nr().rate_bps(40.0) - 3.2e9).abs() < 1e-3);
        assert!((nr().peak_rate_bps() - 3.2e9).abs() < 1e-3);
    }

    #[test]
    fn low_sinr_by_hand() {
        // 0 dB: 0.9449·log2(1.4852) = 0.9449 · 0.570671... = 0.539214...
        let se = nr().se(0.0);
        assert!((se - 0.9449 * 1.4852f64.log2()).abs() < 1e-12);
        assert!((se - 0.539214).abs() < 1e-6);
        assert!((nr().rate_bps(0.0) - 1e9 * 3.2 / 5.5547 * se).abs() < 1e-3);
        // −5 dB (the outage threshold): 0.9449·log2(1 + 0.4852·0.316228) = 0.19463...
        assert!((nr().se(-5.0) - 0.9449 * (1.0 + 0.4852 * 10f64.powf(-0.5)).log2()).abs() < 1e-12);
        assert_eq!(nr().se(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn mcs_quantizes_down() {
        let mcs = LinkAbstraction { mcs: true, ..nr() };
        // 0 dB → SE 0.5392: between 0.3770 and 0.6016 → 0.3770.
        assert_eq!(mcs.se(0.0), 0.3770);
        assert_eq!(quantize_se(0.6016), 0.6016);
        assert_eq!(quantize_se(0.6015), 0.3770);
        assert_eq!(quantize_se(0.15), 0.0);
        assert_eq!(mcs.se(40.0), 5.5547);
        // Each table entry is reached exactly at its own required SINR.
        for &e in &CQI_64QAM_SE {
            let s = sinr_required_db(e) + 1e-9;
            assert_eq!(mcs.se(s), e);
        }
    }

    #[test]
    fn sinr_required_inverts_se() {
        for sinr in [-10.0, -5.0, 0.0, 7.5, 15.0, 20.0] {
            let se = nr().se(sinr);
            assert!((sinr_required_db(se) - sinr).abs() < 1e-9, "{sinr}");
        }
        assert_eq!(sinr_required_db(0.0), f64::NEG_INFINITY);
        assert_eq!(sinr_required_db(6.0), f64::INFINITY);
        // The cap is reached at (2^(5.5547/0.9449) − 1)/0.4852 ≈ 20.76 dB.
        assert!((sinr_required_db(SE_MAX) - 20.76).abs() < 0.01);
    }
}
