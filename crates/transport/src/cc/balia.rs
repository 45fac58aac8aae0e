//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low, "Multipath TCP:
//! analysis, design and implementation", IEEE/ACM ToN 2016). The paper shows that LIA and
//! OLIA trade TCP-friendliness against responsiveness and balances the two. With
//! x_k = w_k/τ_k the rate of path k and α_r = max_k x_k / x_r:
//!
//! - increase per ACK on path r: x_r/(τ_r·(Σ_k x_k)²) · ((1 + α_r)/2) · ((4 + α_r)/5);
//! - decrease on a loss on path r: w_r/2 · min(α_r, 1.5).
//!
//! On the fastest path (α_r = 1) both are LIA-like; a slower path grows faster and backs off
//! more, up to 3/4 of its window, so that it stays responsive without taking more than its
//! share. Slow start and loss recovery are standard TCP's (`coupled`).

use super::coupled::Coupling;
use super::SubflowView;

pub struct Balia;

/// α_r = max_k x_k / x_r for r = `paths[own]`: 1 on the fastest path, above 1 elsewhere.
pub fn alpha(paths: &[SubflowView], own: usize) -> f64 {
    let fastest = paths.iter().map(SubflowView::rate_bytes_per_s).fold(0.0, f64::max);
    fastest / paths[own].rate_bytes_per_s()
}

impl Coupling for Balia {
    /// BALIA's increase: x_r/(τ_r·(Σ_k x_k)²) · ((1 + α_r)/2) · ((4 + α_r)/5).
    fn increase(paths: &[SubflowView], own: usize) -> f64 {
        let r = &paths[own];
        let sum: f64 = paths.iter().map(SubflowView::rate_bytes_per_s).sum();
        let a = alpha(paths, own);
        r.rate_bytes_per_s() / (r.rtt_s() * sum * sum) * ((1.0 + a) / 2.0) * ((4.0 + a) / 5.0)
    }

    /// BALIA's decrease w_r/2 · min(α_r, 1.5), taken from FlightSize as RFC 5681 §3.1 eq. (4)
    /// takes standard TCP's: ssthresh keeps FlightSize · (1 − min(α_r, 1.5)/2), between 1/4
    /// and 1/2 of it.
    fn kept_flight_bytes(flight_size_bytes: u64, paths: &[SubflowView], own: usize) -> u64 {
        (flight_size_bytes as f64 * (1.0 - alpha(paths, own).min(1.5) / 2.0)) as u64
    }
}
