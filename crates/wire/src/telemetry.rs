//! The per-UE telemetry record of milliproxy.md §3, shared by its producer (the gNB model in
//! `millinet-ran`) and its consumer (milliProxy in `millinet-proxy`). It lives here because
//! both may depend on this crate and on nothing of each other.

/// One telemetry record of one UE, as the gNB sampled it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Telemetry {
    /// When the gNB sampled it.
    pub t_ns: u64,
    /// B: downlink RLC occupancy of the UE (new data + retransmission queue).
    pub rlc_bytes: u64,
    /// R_e: full-buffer achievable PHY rate from the last reported SINR, independent of the
    /// offered load (channel.md §5); 0 in outage. A float because the AMC computes it as one;
    /// consumers that need whole bits per second truncate (`as u64`, saturating).
    pub rate_bps: f64,
    /// SINR of the last CQI report (−∞ before the first one).
    pub sinr_db: f64,
    /// The reported SINR is below the outage threshold.
    pub outage: bool,
}
