//! Physical constants and dB helpers shared by the models.

/// Speed of light in m/s. TR 38.901 §7.4.1 (note under Table 7.4.1-1) fixes
/// c = 3.0·10⁸ m/s for the break-point distance; we use the same value for the
/// Doppler frequency so that all formulas agree on one constant.
pub const SPEED_OF_LIGHT_MPS: f64 = 3.0e8;

/// Nanoseconds per second, for `now_ns` ↔ seconds conversions.
pub const NS_PER_S: f64 = 1e9;

/// Power ratio in dB → linear.
#[inline]
pub fn db_to_lin(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// Linear power ratio → dB (0 → −∞).
#[inline]
pub fn lin_to_db(lin: f64) -> f64 {
    10.0 * lin.log10()
}

/// `now_ns` as seconds.
#[inline]
pub fn ns_to_s(now_ns: u64) -> f64 {
    now_ns as f64 / NS_PER_S
}
