//! LIA, MP-TCP's Linked Increases Algorithm (RFC 6356). The congestion-avoidance increase
//! of each subflow is coupled to every subflow's window and RTT so that the connection as a
//! whole takes what one TCP would on its best path (RFC 6356 §2 goals 1 and 2), and no
//! subflow grows faster than a TCP on its own path would. Slow start, loss recovery and the
//! multiplicative decrease are standard TCP's (`coupled`).

use super::coupled::Coupling;
use super::SubflowView;

pub struct Lia;

/// cwnd_total, the sum of the subflows' windows (RFC 6356 §3).
fn cwnd_total(paths: &[SubflowView]) -> f64 {
    paths.iter().map(|p| p.cwnd_bytes as f64).sum()
}

/// RFC 6356 §3 eq. (2): alpha = cwnd_total · max_i(cwnd_i/rtt_i²) / (Σ_i cwnd_i/rtt_i)², the
/// aggressiveness at which the connection's equilibrium rate equals that of a TCP on the
/// path where a TCP would get the most.
pub fn alpha(paths: &[SubflowView]) -> f64 {
    let best = paths.iter().map(|p| p.cwnd_bytes as f64 / p.rtt_s().powi(2)).fold(0.0, f64::max);
    let sum: f64 = paths.iter().map(SubflowView::rate_bytes_per_s).sum();
    cwnd_total(paths) * best / (sum * sum)
}

impl Coupling for Lia {
    /// RFC 6356 §3 eq. (1): on each ACK on subflow i, cwnd_i grows by
    /// min(alpha·bytes_acked·MSS_i/cwnd_total, bytes_acked·MSS_i/cwnd_i); the second term
    /// is what a TCP on that path would add, the cap that keeps goal 2 on every path.
    fn increase(paths: &[SubflowView], own: usize) -> f64 {
        (alpha(paths) / cwnd_total(paths)).min(1.0 / paths[own].cwnd_bytes as f64)
    }
}
