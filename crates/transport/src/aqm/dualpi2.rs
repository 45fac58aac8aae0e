//! DualPI2, the Dual-Queue Coupled AQM of RFC 9332, adapted to a queue that must stay one FIFO.
//!
//! RFC 9332 gives L4S traffic (ECT(1) and CE, RFC 9331 §5.1) its own queue. An RLC buffer
//! cannot have two: PDCP at the receiver delivers in COUNT order (docs/models/ran.md), so a
//! packet served ahead of an older one would wait there for it. So the two AQMs of RFC 9332
//! judge the packets of one FIFO by their class:
//!
//! - The base PI2 controller (RFC 9332 §2.5.2, Appendix A.1) updates p′ every `Tupdate` from
//!   the queue's sojourn time: p′ += α·(delay − target) + β·(delay − previous delay).
//! - Classic packets (Not-ECT, ECT(0)) are dropped or CE-marked with p_C = p′² (§2.4): the
//!   square matches a Reno-like sender's response.
//! - L4S packets are CE-marked with the larger of the coupled p_CL = k·p′ (k = 2, §2.4) and the
//!   native L4S AQM: a step at `step_ns` of sojourn (Linux's `dualpi2` step, 1 ms).
//! - Overload (§4.2.3): once p_CL reaches 1, L4S packets are treated as classic ones, so an
//!   unresponsive L4S sender cannot take the queue.
//!
//! The price of one FIFO: L4S and classic packets share its delay. Alone on a bearer an L4S
//! flow keeps it near the step; beside a classic flow the delay is the classic target, above
//! the step, and the L4S flow is marked on every packet. RFC 9332's isolation needs another
//! queue, which in 5G is another bearer.
//!
//! Defaults are Linux's `sch_dualpi2`: target 15 ms, Tupdate 16 ms, α = 0.16 Hz, β = 3.2 Hz
//! (RFC 9332 Appendix A.1's, stable up to a 100 ms RTT), step 1 ms, k = 2.

use millinet_wire::{ECN_CE, ECN_ECT1, ECN_NOT_ECT};
use rand_core::RngCore;

use super::{Aqm, Verdict};

/// The parameters of one DualPI2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualPi2Config {
    /// The classic sojourn time PI2 aims at.
    pub target_ns: u64,
    /// How often p′ is updated.
    pub update_ns: u64,
    /// PI2's gains, per second of delay error (α) and of delay change (β).
    pub alpha_hz: f64,
    pub beta_hz: f64,
    /// The native L4S marker: every L4S packet that waited this long is marked.
    pub step_ns: u64,
    /// The coupling factor k: p_CL = k·p′.
    pub coupling: f64,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config { target_ns: 15_000_000, update_ns: 16_000_000, alpha_hz: 0.16, beta_hz: 3.2, step_ns: 1_000_000, coupling: 2.0 }
    }
}

/// DualPI2 on one FIFO (module doc). `R` draws the random numbers its probabilities are
/// compared with: one stream of the run's seed.
pub struct DualPi2<R> {
    cfg: DualPi2Config,
    rng: R,
    /// The base probability p′.
    p_base: f64,
    next_update_ns: u64,
    /// The sojourn the next update reads: the last dequeued packet's, 0 once the queue emptied.
    delay_ns: u64,
    previous_delay_ns: u64,
}

impl<R: RngCore> DualPi2<R> {
    pub fn new(cfg: DualPi2Config, rng: R) -> DualPi2<R> {
        DualPi2 { cfg, rng, p_base: 0.0, next_update_ns: cfg.update_ns, delay_ns: 0, previous_delay_ns: 0 }
    }

    /// p′ now (for tests and measurement).
    pub fn base_probability(&self) -> f64 {
        self.p_base
    }

    /// RFC 9332 Appendix A.1 `dualpi2_update`, for every update time up to `now_ns`. The delay
    /// is the same across updates the queue did not interrupt, so after the first of them
    /// each adds α·(delay − target): summed at once (p′ stays within [0, 1]).
    fn update(&mut self, now_ns: u64) {
        if now_ns < self.next_update_ns {
            return;
        }
        let updates = (now_ns - self.next_update_ns) / self.cfg.update_ns + 1;
        self.next_update_ns += updates * self.cfg.update_ns;
        let seconds = |ns: u64| ns as f64 * 1e-9;
        let error_s = seconds(self.delay_ns) - seconds(self.cfg.target_ns);
        let change_s = seconds(self.delay_ns) - seconds(self.previous_delay_ns);
        let p = self.p_base + self.cfg.alpha_hz * error_s * updates as f64 + self.cfg.beta_hz * change_s;
        self.p_base = p.clamp(0.0, 1.0);
        self.previous_delay_ns = self.delay_ns;
    }

    /// A uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl<R: RngCore + Send> Aqm for DualPi2<R> {
    fn on_dequeue(&mut self, now_ns: u64, sojourn_ns: u64, backlog_bytes: u64, ecn: u8) -> Verdict {
        self.update(now_ns);
        self.delay_ns = if backlog_bytes == 0 { 0 } else { sojourn_ns };
        let p_coupled = self.cfg.coupling * self.p_base;
        let l4s = matches!(ecn, ECN_ECT1 | ECN_CE);
        if l4s && p_coupled < 1.0 {
            if sojourn_ns >= self.cfg.step_ns || self.draw() < p_coupled {
                return Verdict::Mark;
            }
            return Verdict::Deliver;
        }
        let p_classic = self.p_base * self.p_base;
        if p_classic > 0.0 && self.draw() < p_classic {
            return if ecn == ECN_NOT_ECT { Verdict::Drop } else { Verdict::Mark };
        }
        Verdict::Deliver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use millinet_wire::ECN_ECT0;
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const MS: u64 = 1_000_000;

    fn aqm() -> DualPi2<Xoshiro256PlusPlus> {
        DualPi2::new(DualPi2Config::default(), Xoshiro256PlusPlus::seed_from_u64(7))
    }

    /// RFC 9332 Appendix A.1 by hand: a queue 5 ms above target for one update raises p′ by
    /// α·0.005 + β·0.020 (its delay rose from 0 to 20 ms), and by α·0.005 at each update after.
    #[test]
    fn the_pi_controller_integrates_the_delay_error() {
        let mut q = aqm();
        q.on_dequeue(MS, 20 * MS, 1000, ECN_NOT_ECT);
        assert_eq!(q.base_probability(), 0.0, "no update before Tupdate");
        q.on_dequeue(16 * MS, 20 * MS, 1000, ECN_NOT_ECT);
        let first = 0.16 * 0.005 + 3.2 * 0.020;
        assert!((q.base_probability() - first).abs() < 1e-12, "{}", q.base_probability());
        // Three more updates at the same delay (48 ms later): α·0.005 each.
        q.on_dequeue(64 * MS, 20 * MS, 1000, ECN_NOT_ECT);
        assert!((q.base_probability() - (first + 3.0 * 0.16 * 0.005)).abs() < 1e-12);
        // Once the queue is empty its delay is 0: p′ falls by α·target per update.
        q.on_dequeue(65 * MS, 20 * MS, 0, ECN_NOT_ECT);
        let before = q.base_probability();
        q.on_dequeue(80 * MS, 0, 0, ECN_NOT_ECT);
        let expected = before + 0.16 * -0.015 + 3.2 * -0.020;
        assert!((q.base_probability() - expected.max(0.0)).abs() < 1e-12);
    }

    /// The step: an L4S packet is marked once it waited the threshold, whatever p′.
    #[test]
    fn l4s_packets_are_marked_from_the_step_on() {
        let mut q = aqm();
        assert_eq!(q.on_dequeue(MS, MS - 1, 1000, ECN_ECT1), Verdict::Deliver);
        assert_eq!(q.on_dequeue(MS, MS, 1000, ECN_ECT1), Verdict::Mark);
        assert_eq!(q.on_dequeue(MS, MS, 1000, ECN_CE), Verdict::Mark, "CE is L4S too (RFC 9331 §5.1)");
        assert_eq!(q.on_dequeue(MS, 10 * MS, 1000, ECN_ECT0), Verdict::Deliver, "classic packets have no step");
    }

    /// RFC 9332 §2.4: at a given p′, classic packets are signalled with p′², L4S ones with k·p′;
    /// counted over 10⁶ packets of each, within 5 standard deviations.
    #[test]
    fn the_coupling_squares_the_classic_probability() {
        let mut q = aqm();
        q.p_base = 0.1;
        q.next_update_ns = u64::MAX;
        let n = 1_000_000;
        let count = |q: &mut DualPi2<_>, ecn: u8, verdict: Verdict| (0..n).filter(|_| q.on_dequeue(MS, 0, 1000, ecn) == verdict).count();
        let classic_marks = count(&mut q, ECN_ECT0, Verdict::Mark);
        let classic_drops = count(&mut q, ECN_NOT_ECT, Verdict::Drop);
        let l4s_marks = count(&mut q, ECN_ECT1, Verdict::Mark);
        for (got, p) in [(classic_marks, 0.01), (classic_drops, 0.01), (l4s_marks, 0.2)] {
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((got as f64 - n as f64 * p).abs() < 5.0 * sd, "{got} of {n}, expected p = {p}");
        }
        // The coupling law itself: p_C = (p_CL / k)².
        let (p_c, p_cl) = (classic_marks as f64 / n as f64, l4s_marks as f64 / n as f64);
        assert!((p_c - (p_cl / 2.0).powi(2)).abs() < 0.002, "p_C {p_c}, p_CL {p_cl}");
    }

    #[test]
    fn overload_treats_l4s_packets_as_classic() {
        let mut q = aqm();
        q.p_base = 0.6;
        q.next_update_ns = u64::MAX;
        let n = 100_000;
        let marks = (0..n).filter(|_| q.on_dequeue(MS, 0, 1000, ECN_ECT1) == Verdict::Mark).count();
        // k·p′ = 1.2 ≥ 1: marked with p′² = 0.36, not always.
        assert!((marks as f64 / n as f64 - 0.36).abs() < 0.01, "{marks}");
    }
}
