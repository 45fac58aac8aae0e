//! OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
//! "MPTCP is not Pareto-optimal: performance issues and a possible solution", IEEE/ACM ToN
//! 2013). Its increase has two terms. The first, (w_r/rtt_r²)/(Σ_p w_p/rtt_p)², is the
//! coupled increase that gives the connection the rate of one TCP on its best path. The
//! second, α_r/w_r, moves window from the paths with the largest windows (the set M) to the
//! paths that are presumably the best (the set B) but do not have the largest window: the
//! connection leaves congested paths (which LIA does not, the paper's Pareto-optimality
//! problem) while every path keeps a window that can grow again (responsiveness). On a loss
//! the subflow halves its window as standard TCP does (`coupled`).

use super::coupled::Coupling;
use super::SubflowView;

pub struct Olia;

/// How good path p presumably is: ℓ_p/rtt_p². A TCP with loss probability q has a rate
/// ∝ 1/(rtt·√q), and ℓ_p (bytes acknowledged between losses) estimates 1/q, so this grows
/// with the square of the rate a TCP would get on p. Linux's OLIA, by the paper's first
/// author, ranks paths the same way.
fn quality(p: &SubflowView) -> f64 {
    p.inter_loss_bytes() as f64 / p.rtt_s().powi(2)
}

/// OLIA's α_r for r = `paths[own]`, with n the number of paths, M the paths with the
/// largest window and B the presumably best paths (largest `quality`):
/// 1/(n·|B∖M|) if r ∈ B∖M; −1/(n·|M|) if r ∈ M and B∖M is not empty; 0 otherwise.
/// The α_r of a connection sum to 0: the term moves window, it adds none.
pub fn alpha(paths: &[SubflowView], own: usize) -> f64 {
    let max_cwnd = paths.iter().map(|p| p.cwnd_bytes).max().unwrap_or_default();
    let best = paths.iter().map(quality).fold(0.0, f64::max);
    let in_max = |p: &SubflowView| p.cwnd_bytes == max_cwnd;
    let collected = |p: &SubflowView| !in_max(p) && quality(p) == best;
    let count = |set: &dyn Fn(&SubflowView) -> bool| paths.iter().filter(|p| set(p)).count() as f64;
    let n = paths.len() as f64;
    let r = &paths[own];
    if collected(r) {
        1.0 / (n * count(&collected))
    } else if in_max(r) && count(&collected) > 0.0 {
        -1.0 / (n * count(&in_max))
    } else {
        0.0
    }
}

impl Coupling for Olia {
    /// The OLIA increase per ACK on path r: w_r += (w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + α_r/w_r.
    fn increase(paths: &[SubflowView], own: usize) -> f64 {
        let r = &paths[own];
        let w = r.cwnd_bytes as f64;
        let sum: f64 = paths.iter().map(SubflowView::rate_bytes_per_s).sum();
        w / r.rtt_s().powi(2) / (sum * sum) + alpha(paths, own) / w
    }
}
