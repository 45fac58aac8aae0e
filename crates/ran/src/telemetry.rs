//! The per-UE record milliProxy consumes (milliproxy.md §3). The simulator's
//! gNB, the emulator's link and a real deployment all produce this shape.

/// One sample of a UE's radio and buffer state at the gNB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Telemetry {
    /// When the gNB sampled it.
    pub t_ns: u64,
    /// B: downlink RLC occupancy of the UE (new data + retransmission queue).
    pub rlc_bytes: u64,
    /// R_e: full-buffer achievable PHY rate from the last reported SINR,
    /// independent of the offered load (channel.md §5); 0 in outage.
    pub rate_bps: f64,
    /// SINR of the last CQI report (−∞ before the first one).
    pub sinr_db: f64,
    /// The reported SINR is below the outage threshold.
    pub outage: bool,
}
