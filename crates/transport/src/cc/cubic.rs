//! CUBIC (RFC 9438) with the Linux constants C = 0.4 and β_cubic = 0.7, fast convergence
//! and the Reno-friendly region, as Linux's tcp_cubic.c runs it or as the RFC writes it
//! (`CubicVariant`). Windows are computed in segments and seconds, as the RFC's formulas are
//! written, and kept as a fractional byte count so that the per-ACK increments of a large
//! window (a small fraction of a segment) are not lost to rounding.
//! Slow start is the standard one (RFC 5681 + RFC 3465), left early by Linux's HyStart (the
//! default, as in Linux) or HyStart++ (RFC 9406) as `CcInit::hystart` says (`slow_start`).

use super::slow_start::{SlowStartExit, SlowStartStep};
use super::{ack_growth, AckGrowth, AckSample, CcInit, CongestionControl, CongestionEvent, Window};

/// RFC 9438 §5.1 / Linux: C = 0.4 segments/s³.
const C: f64 = 0.4;
/// RFC 9438 §4.6: β_cubic = 0.7.
const BETA: f64 = 0.7;
/// RFC 9438 §4.3: α_cubic = 3(1 − β)/(1 + β), the Reno-friendly additive increase.
const ALPHA_RENO_FRIENDLY: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// Where Linux's CUBIC and RFC 9438's text differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CubicVariant {
    /// Linux 6.18 `bictcp_update`: the window aims at W_cubic one minimum RTT ahead
    /// (`delay_min`), and the Reno-friendly estimate grows by α_cubic per round trip
    /// throughout (`tcp_friendliness`, its `beta_scale`).
    #[default]
    Linux,
    /// RFC 9438 §4.3–§4.4: one smoothed RTT ahead, and α_cubic becomes 1 once W_est
    /// reaches W_max.
    Rfc9438,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicOptions {
    /// RFC 9438 §4.7: release bandwidth faster when the window keeps shrinking.
    pub fast_convergence: bool,
    /// RFC 9438 §4.3: never grow slower than Reno with the same β would.
    pub reno_friendly: bool,
    pub variant: CubicVariant,
}

impl CubicOptions {
    /// Fast convergence and the Reno-friendly region on, as in Linux and the RFC.
    pub fn of(variant: CubicVariant) -> CubicOptions {
        CubicOptions { fast_convergence: true, reno_friendly: true, variant }
    }
}

pub struct Cubic {
    options: CubicOptions,
    mss_bytes: u64,
    cwnd_bytes: f64,
    ssthresh_bytes: u64,
    /// W_max: the window (segments) just before the last reduction.
    w_max_segments: f64,
    /// The current congestion-avoidance epoch: start time, K (s) and the curve's plateau.
    epoch: Option<Epoch>,
    slow_start: SlowStartExit,
}

#[derive(Clone, Copy, Debug)]
struct Epoch {
    start_ns: u64,
    k_s: f64,
    origin_segments: f64,
    /// W_est of RFC 9438 §4.3 (segments).
    w_est_segments: f64,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(Cubic::new(init, CubicOptions::of(init.cubic)))
}

impl Cubic {
    pub fn new(init: &CcInit, options: CubicOptions) -> Cubic {
        Cubic {
            options,
            mss_bytes: init.mss_bytes,
            cwnd_bytes: init.initial_cwnd_bytes as f64,
            // RFC 5681 §3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
            w_max_segments: 0.0,
            epoch: None,
            slow_start: SlowStartExit::new(init.hystart, init.mss_bytes),
        }
    }

    /// RFC 9438 §4.2 eq. (1): W_cubic(t) = C(t − K)³ + W_max, in segments.
    pub fn w_cubic_segments(t_s: f64, k_s: f64, w_max_segments: f64) -> f64 {
        C * (t_s - k_s).powi(3) + w_max_segments
    }

    /// RFC 9438 §4.2 eq. (2): K = ∛((W_max − cwnd_epoch)/C), in seconds.
    pub fn k_seconds(w_max_segments: f64, cwnd_epoch_segments: f64) -> f64 {
        ((w_max_segments - cwnd_epoch_segments) / C).cbrt()
    }

    fn start_epoch(&mut self, now_ns: u64) -> Epoch {
        let cwnd = self.cwnd_bytes / self.mss_bytes as f64;
        // Like Linux: when the window already exceeds W_max, the plateau is the current
        // window and K = 0 (pure convex probing).
        let origin = self.w_max_segments.max(cwnd);
        Epoch { start_ns: now_ns, k_s: Cubic::k_seconds(origin, cwnd), origin_segments: origin, w_est_segments: cwnd }
    }

    fn congestion_avoidance(&mut self, ack: &AckSample) {
        let epoch = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(ack.now_ns),
        };
        let mss = self.mss_bytes as f64;
        let cwnd = self.cwnd_bytes / mss;
        let acked = ack.acked_bytes as f64 / mss;
        let t_s = (ack.now_ns - epoch.start_ns) as f64 / 1e9;
        let mut w_est = epoch.w_est_segments;
        // RFC 9438 §4.3: W_est grows by α per window; the RFC makes α 1 once W_est reaches
        // W_max, Linux keeps α.
        let alpha = match self.options.variant {
            CubicVariant::Rfc9438 if w_est >= self.w_max_segments => 1.0,
            _ => ALPHA_RENO_FRIENDLY,
        };
        w_est += alpha * acked / cwnd;
        self.epoch = Some(Epoch { w_est_segments: w_est, ..epoch });
        // RFC 9438 §4.4/§4.5: aim at W_cubic one RTT ahead (Linux: the minimum RTT),
        // bounded to [cwnd, 1.5·cwnd], spreading the increase over the ACKs of one window.
        // Without a W_max (after a timeout) grow at least 5% per RTT, as Linux does by
        // capping its ACK count per increment at 20.
        let rtt_ns = match self.options.variant {
            CubicVariant::Linux => ack.min_rtt_ns,
            CubicVariant::Rfc9438 => ack.srtt_ns,
        };
        let rtt_s = rtt_ns as f64 / 1e9;
        let floor = if self.w_max_segments == 0.0 { 1.05 * cwnd } else { cwnd };
        let target = Cubic::w_cubic_segments(t_s + rtt_s, epoch.k_s, epoch.origin_segments).clamp(floor, 1.5 * cwnd);
        let mut next_bytes = self.cwnd_bytes + (target - cwnd) / cwnd * acked * mss;
        // RFC 9438 §4.3: in the Reno-friendly region cwnd follows W_est when that is
        // faster (Linux takes the faster of the two increments).
        let w_cubic = Cubic::w_cubic_segments(t_s, epoch.k_s, epoch.origin_segments);
        if self.options.reno_friendly && w_cubic < w_est {
            next_bytes = next_bytes.max(w_est * mss);
        }
        self.cwnd_bytes = next_bytes;
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, ack: &AckSample) {
        // Like Linux, the slow-start exit sees the ACK before the window grows (`pkts_acked`
        // before `cong_avoid`): an exit makes this ACK's growth congestion avoidance.
        let cwnd_bytes = self.cwnd_bytes as u64;
        let step = self.slow_start.on_ack(ack, cwnd_bytes, cwnd_bytes < self.ssthresh_bytes, self.epoch.map(|e| e.start_ns));
        let divisor = match step {
            SlowStartStep::Grow { divisor } => divisor,
            SlowStartStep::Exit => {
                self.ssthresh_bytes = cwnd_bytes;
                1
            }
        };
        match ack_growth(ack, cwnd_bytes, self.ssthresh_bytes, self.mss_bytes) {
            AckGrowth::Hold => {}
            // RFC 9438 §4.10: standard slow start, or RFC 9406's conservative one.
            AckGrowth::SlowStart { increase_bytes } => self.cwnd_bytes += increase_bytes as f64 / divisor as f64,
            AckGrowth::CongestionAvoidance => self.congestion_avoidance(ack),
        }
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, _now_ns: u64, _flight_size_bytes: u64) {
        let mss = self.mss_bytes as f64;
        let cwnd = self.cwnd_bytes / mss;
        // RFC 9438 §4.7: fast convergence lowers W_max when the window keeps shrinking.
        self.w_max_segments = if self.options.fast_convergence && cwnd < self.w_max_segments { cwnd * (1.0 + BETA) / 2.0 } else { cwnd };
        self.epoch = None;
        // RFC 9438 §4.6 computes ssthresh from cwnd (as Linux does; the RFC notes both forms).
        self.ssthresh_bytes = ((self.cwnd_bytes * BETA) as u64).max(2 * self.mss_bytes);
        self.cwnd_bytes = match kind {
            // RFC 9438 §4.6 applies to ECN-Echo as to a loss (RFC 3168 §6.1.2).
            CongestionEvent::FastRetransmit | CongestionEvent::EcnEcho => self.ssthresh_bytes as f64,
            // RFC 9438 §4.8: after a timeout follow Reno (loss window of one segment), with
            // ssthresh from β_cubic as above. Linux (bictcp_reset on entering the loss
            // state) and ns-3 also forget W_max, so the next epoch probes convexly from
            // the window it starts at instead of creeping toward the old plateau.
            CongestionEvent::Rto => {
                self.w_max_segments = 0.0;
                self.slow_start.on_timeout();
                mss
            }
        };
    }

    fn on_recovery_exit(&mut self, _now_ns: u64) {
        self.cwnd_bytes = self.ssthresh_bytes as f64;
    }

    fn undo(&mut self, prior: Window) {
        let (ssthresh_bytes, cwnd_bytes) = prior.undone(self.ssthresh_bytes, self.cwnd_bytes as u64);
        self.ssthresh_bytes = ssthresh_bytes;
        self.cwnd_bytes = cwnd_bytes as f64;
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd_bytes as u64
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::HystartMode;

    #[test]
    fn a_timeout_forgets_w_max_and_growth_is_at_least_five_percent_per_rtt() {
        let mut cc = Cubic::new(
            &CcInit { mss_bytes: 1000, initial_cwnd_bytes: 10_000, hystart: HystartMode::Off, cubic: CubicVariant::Linux },
            CubicOptions::of(CubicVariant::Rfc9438),
        );
        cc.cwnd_bytes = 100_000.0;
        cc.on_congestion_event(CongestionEvent::Rto, 0, 100_000);
        assert_eq!(cc.w_max_segments, 0.0);
        assert_eq!(cc.cwnd_bytes(), 1000);
        // In congestion avoidance right after the epoch starts, W_cubic is flat; the floor rules.
        cc.cwnd_bytes = cc.ssthresh_bytes as f64;
        let start = cc.cwnd_bytes;
        let acks = (start / 1000.0) as u64;
        for _ in 0..acks {
            cc.on_ack(&AckSample { now_ns: 1, acked_bytes: 1000, srtt_ns: 20_000_000, cwnd_limited: true, ..AckSample::default() });
        }
        assert!(cc.cwnd_bytes >= 1.049 * start, "{} after one window from {start}", cc.cwnd_bytes);
    }

    const MSS: u64 = 1000;

    /// Drives one window of MSS-sized ACKs per RTT, spread evenly over the RTT.
    fn run_round(cc: &mut Cubic, now_ns: &mut u64, rtt_ns: u64) {
        let acks = cc.cwnd_bytes() / MSS;
        for _ in 0..acks {
            *now_ns += rtt_ns / acks;
            cc.on_ack(&AckSample { now_ns: *now_ns, acked_bytes: MSS, srtt_ns: rtt_ns, cwnd_limited: true, ..AckSample::default() });
        }
    }

    /// Transport test 5: after a loss, cwnd follows W(t) = C(t−K)³ + W_max within 1 % in
    /// both the concave (t < K) and the convex (t > K) region.
    #[test]
    fn window_follows_the_cubic_curve_after_a_loss() {
        let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 1000 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
        let mut cc = Cubic::new(&init, CubicOptions { reno_friendly: false, ..CubicOptions::of(CubicVariant::Rfc9438) });
        let loss_ns = 1_000_000_000;
        cc.on_congestion_event(CongestionEvent::FastRetransmit, loss_ns, 1000 * MSS);
        cc.on_recovery_exit(loss_ns);
        assert_eq!(cc.cwnd_bytes(), 700 * MSS);
        let w_max = 1000.0;
        let k = Cubic::k_seconds(w_max, 700.0);
        assert!((k - 9.0856).abs() < 1e-3, "K = {k}");
        let rtt_ns = 10_000_000;
        let mut now = loss_ns;
        let mut checked = 0;
        for checkpoint_s in [1.0, 3.0, 6.0, 8.5, 10.0, 12.0, 14.0] {
            while ((now - loss_ns) as f64 / 1e9) < checkpoint_s {
                run_round(&mut cc, &mut now, rtt_ns);
            }
            let t = (now - loss_ns) as f64 / 1e9;
            // Written out independently of the implementation's helpers.
            let expected = 0.4 * (t - k).powi(3) + w_max;
            let actual = cc.cwnd_bytes() as f64 / MSS as f64;
            assert!((actual - expected).abs() / expected < 0.01, "t = {t:.3} s: cwnd {actual:.1} vs W(t) {expected:.1}");
            checked += 1;
        }
        assert_eq!(checked, 7);
    }

    #[test]
    fn fast_convergence_and_reno_friendly_region() {
        let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 100 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
        let mut cc = Cubic::new(&init, CubicOptions::of(CubicVariant::Rfc9438));
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 100 * MSS);
        assert_eq!(cc.w_max_segments, 100.0);
        // A second loss below W_max lowers W_max to cwnd·(1+β)/2 (RFC 9438 §4.7).
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 70 * MSS);
        assert!((cc.w_max_segments - 70.0 * 0.85).abs() < 1e-9);
        assert_eq!(cc.cwnd_bytes(), 49 * MSS);
        // Small W_max (K ≈ 2 s) and a long RTT: Reno-friendly growth (α ≈ 0.53 segment per
        // RTT, then 1) outpaces the flat start of the cubic curve.
        let mut cc = Cubic::new(
            &CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux },
            CubicOptions::of(CubicVariant::Rfc9438),
        );
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 10 * MSS);
        let mut now = 0;
        for _ in 0..10 {
            run_round(&mut cc, &mut now, 100_000_000);
        }
        let w = Cubic::w_cubic_segments(now as f64 / 1e9, Cubic::k_seconds(10.0, 7.0), 10.0);
        let cwnd = cc.cwnd_bytes() as f64 / MSS as f64;
        assert!(cwnd > w + 1.0, "Reno-friendly window {cwnd} should exceed W_cubic {w}");
    }

    /// Where the variants differ: after a loss at 10 segments (W_max 10, cwnd 7, K ≈ 1.96 s)
    /// and 10 round trips of 100 ms, W_cubic is still below 10 and the Reno-friendly
    /// estimate sets cwnd. Linux's grows by α ≈ 0.529 every round: 7 + 10α ≈ 12.29. The
    /// RFC's reaches W_max after 3/α ≈ 5.67 rounds and then grows by 1: 10 + 4.33 = 14.33.
    /// A round's ACKs are the window at its start, so a growing window gets a little less
    /// than α (or 1) per round: 0.5 segment of tolerance, against 2 between the two.
    #[test]
    fn linux_keeps_the_reno_friendly_increase_where_rfc_9438_speeds_it_up_at_w_max() {
        let grown = |variant| {
            let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: variant };
            let mut cc = Cubic::new(&init, CubicOptions::of(variant));
            cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 10 * MSS);
            cc.on_recovery_exit(0);
            let mut now = 0;
            for _ in 0..10 {
                let acks = cc.cwnd_bytes / MSS as f64;
                let step_ns = 100_000_000 / acks.ceil() as u64;
                let mut left = acks;
                while left > 0.0 {
                    let acked = left.min(1.0);
                    now += step_ns;
                    let ack = AckSample {
                        now_ns: now,
                        acked_bytes: (acked * MSS as f64) as u64,
                        srtt_ns: 100_000_000,
                        min_rtt_ns: 100_000_000,
                        cwnd_limited: true,
                        ..AckSample::default()
                    };
                    cc.on_ack(&ack);
                    left -= acked;
                }
            }
            cc.cwnd_bytes / MSS as f64
        };
        let linux = grown(CubicVariant::Linux);
        let rfc = grown(CubicVariant::Rfc9438);
        assert!((linux - (7.0 + 10.0 * ALPHA_RENO_FRIENDLY)).abs() < 0.5, "Linux: {linux}");
        assert!((rfc - (10.0 + 10.0 - 3.0 / ALPHA_RENO_FRIENDLY)).abs() < 0.5, "RFC 9438: {rfc}");
    }

    /// Linux aims at the curve one minimum RTT ahead (its `delay_min`), the RFC one smoothed
    /// RTT ahead: with a standing queue (SRTT 300 ms against a 20 ms minimum) and the
    /// plateau far away, the RFC's window grows faster.
    #[test]
    fn linux_looks_one_minimum_rtt_ahead() {
        let grown = |variant| {
            let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 100 * MSS, hystart: HystartMode::Off, cubic: variant };
            let mut cc = Cubic::new(&init, CubicOptions { reno_friendly: false, ..CubicOptions::of(variant) });
            // In congestion avoidance at the plateau: W_max = cwnd = 50, so K = 0.
            cc.w_max_segments = 50.0;
            cc.cwnd_bytes = 50.0 * MSS as f64;
            cc.ssthresh_bytes = 50 * MSS;
            let ack = AckSample {
                now_ns: 3_000_000_000,
                acked_bytes: MSS,
                srtt_ns: 300_000_000,
                min_rtt_ns: 20_000_000,
                cwnd_limited: true,
                ..AckSample::default()
            };
            cc.on_ack(&AckSample { now_ns: 0, ..ack });
            cc.on_ack(&ack);
            cc.cwnd_bytes / MSS as f64
        };
        // The first ACK (t = 0) starts the epoch and aims at 50 + 0.4·RTT³; the second, at
        // t = 3 s, at 50 + 0.4·(3 + RTT)³: 61.0 segments (Linux) or 64.9 (RFC). Each adds
        // (target − cwnd)/cwnd of a segment.
        let expected = |rtt_s: f64| {
            let c1 = 50.0 + 0.4 * rtt_s.powi(3) / 50.0;
            let target = 50.0 + 0.4 * (3.0 + rtt_s).powi(3);
            c1 + (target - c1) / c1
        };
        let (linux, rfc) = (grown(CubicVariant::Linux), grown(CubicVariant::Rfc9438));
        assert!((linux - expected(0.02)).abs() < 1e-6, "Linux: {linux} vs {}", expected(0.02));
        assert!((rfc - expected(0.3)).abs() < 1e-6, "RFC 9438: {rfc} vs {}", expected(0.3));
    }

    #[test]
    fn timeout_collapses_to_one_segment_with_cubic_ssthresh() {
        let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 100 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
        let mut cc = Cubic::new(&init, CubicOptions::of(CubicVariant::Rfc9438));
        cc.on_congestion_event(CongestionEvent::Rto, 0, 100 * MSS);
        assert_eq!((cc.cwnd_bytes(), cc.ssthresh_bytes()), (MSS, 70 * MSS));
    }
}
