//! TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04), the scalable congestion
//! control of L4S, as the draft writes it:
//!
//! - It identifies its packets as L4S with ECT(1) (RFC 9331 §4), which needs Accurate ECN's
//!   feedback (`l4s()`; over RFC 3168's the sender marks ECT(0)).
//! - CE marks: DCTCP's response (§2.3.2), cwnd ← cwnd·(1 − α/2) once per round trip, with α
//!   the EWMA (g = 1/16) of the fraction of marked bytes per round (`dctcp::MarkingFraction`).
//! - A loss: Reno's halving (§2.3.3).
//! - RTT independence (§2.4.4): below a reference RTT of 25 ms the additive increase is scaled
//!   down to (RTT/25 ms)² segments per round, so a short-RTT flow gains rate per second as a
//!   25 ms one does (rate grows by MSS·ai/RTT² per second); from 25 ms on it is Reno's 1.
//! - Pacing (§2.4.1): the draft relies on Linux's, at twice cwnd/SRTT in slow start and 1.2
//!   times in congestion avoidance (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`).
//!
//! Left out: the draft's detection of a classic ECN bottleneck (§2.4.5, an experimental
//! fallback) and its reduction of the slow-start overshoot.

use super::dctcp::MarkingFraction;
use super::{ack_growth, reduced_window, AckGrowth, AckSample, CcInit, CongestionControl, CongestionEvent, Window};

/// §2.4.4's reference RTT.
const REFERENCE_RTT_NS: f64 = 25e6;
/// Linux's pacing ratios, percent of cwnd/SRTT.
const SLOW_START_PACING: f64 = 2.0;
const CONGESTION_AVOIDANCE_PACING: f64 = 1.2;

pub struct Prague {
    mss_bytes: u64,
    cwnd_bytes: f64,
    ssthresh_bytes: u64,
    fraction: MarkingFraction,
    srtt_ns: u64,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(Prague::new(init))
}

impl Prague {
    pub fn new(init: &CcInit) -> Prague {
        Prague {
            mss_bytes: init.mss_bytes,
            cwnd_bytes: init.initial_cwnd_bytes as f64,
            ssthresh_bytes: u64::MAX,
            fraction: MarkingFraction::default(),
            srtt_ns: 0,
        }
    }

    /// Segments of additive increase per round trip at `srtt_ns` (§2.4.4).
    pub fn additive_increase_segments(srtt_ns: u64) -> f64 {
        (srtt_ns as f64 / REFERENCE_RTT_NS).powi(2).min(1.0)
    }
}

impl CongestionControl for Prague {
    fn on_ack(&mut self, ack: &AckSample) {
        self.fraction.on_ack(ack);
        self.srtt_ns = ack.srtt_ns;
        let cwnd = self.cwnd_bytes as u64;
        match ack_growth(ack, cwnd, self.ssthresh_bytes, self.mss_bytes) {
            AckGrowth::Hold => {}
            AckGrowth::SlowStart { increase_bytes } => self.cwnd_bytes += increase_bytes as f64,
            AckGrowth::CongestionAvoidance => {
                // ai segments per window of bytes acknowledged (RFC 3465 byte counting).
                let ai = Prague::additive_increase_segments(ack.srtt_ns);
                self.cwnd_bytes += ai * self.mss_bytes as f64 * ack.acked_bytes as f64 / self.cwnd_bytes;
            }
        }
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, _now_ns: u64, flight_size_bytes: u64) {
        (self.ssthresh_bytes, self.cwnd_bytes) = match kind {
            CongestionEvent::EcnEcho => {
                let reduced = self.fraction.reduced_bytes(self.cwnd_bytes as u64, self.mss_bytes);
                (reduced, reduced as f64)
            }
            CongestionEvent::FastRetransmit | CongestionEvent::Rto => {
                let (ssthresh, cwnd) = reduced_window(kind, flight_size_bytes / 2, self.mss_bytes);
                (ssthresh, cwnd as f64)
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

    fn echoes_every_mark(&self) -> bool {
        true
    }

    fn l4s(&self) -> bool {
        true
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        if self.srtt_ns == 0 {
            return None;
        }
        let ratio = if (self.cwnd_bytes as u64) < self.ssthresh_bytes { SLOW_START_PACING } else { CONGESTION_AVOIDANCE_PACING };
        Some((ratio * self.cwnd_bytes * 8.0 * 1e9 / self.srtt_ns as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CubicVariant, HystartMode};

    const MSS: u64 = 1000;
    const MS: u64 = 1_000_000;

    fn prague() -> Prague {
        Prague::new(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 100 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux })
    }

    /// The draft's response to CE, by hand: α = 1/2 takes a quarter off the window.
    #[test]
    fn ce_feedback_reduces_by_half_alpha() {
        let mut cc = prague();
        cc.ssthresh_bytes = 50 * MSS;
        cc.fraction = MarkingFraction::default();
        // α starts at 1: the first reduction halves.
        cc.on_congestion_event(CongestionEvent::EcnEcho, 0, 100 * MSS);
        assert_eq!(cc.cwnd_bytes(), 50 * MSS);
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 50 * MSS);
        assert_eq!(cc.cwnd_bytes(), 25 * MSS, "a loss halves (Reno)");
    }

    /// §2.4.4: one round of congestion avoidance adds (RTT/25 ms)² segments below 25 ms, one
    /// segment above; the rate gained per second is then the same from 5 ms to 25 ms.
    #[test]
    fn additive_increase_is_rtt_independent_below_25_ms() {
        for (srtt_ms, segments) in [(5.0, 0.04), (12.5, 0.25), (25.0, 1.0), (100.0, 1.0)] {
            let srtt_ns = (srtt_ms * MS as f64) as u64;
            let mut cc = prague();
            cc.ssthresh_bytes = 10 * MSS;
            let before = cc.cwnd_bytes;
            for _ in 0..100 {
                cc.on_ack(&AckSample { acked_bytes: MSS, srtt_ns, cwnd_limited: true, snd_una: 1, snd_nxt: 2, ..AckSample::default() });
            }
            let gained = (cc.cwnd_bytes - before) / MSS as f64;
            assert!((gained - segments).abs() < 0.01 * segments.max(0.1), "{srtt_ms} ms: {gained} segments");
        }
        let per_second = |srtt_ms: f64| Prague::additive_increase_segments((srtt_ms * 1e6) as u64) / (srtt_ms * 1e-3).powi(2);
        assert!((per_second(5.0) - per_second(20.0)).abs() < 1e-6 * per_second(20.0));
    }

    #[test]
    fn paces_at_linux_ratios_and_marks_l4s() {
        let mut cc = prague();
        assert!(cc.l4s());
        cc.srtt_ns = 10 * MS;
        // Slow start: 2 × 100 segments per 10 ms = 160 Mbit/s.
        assert_eq!(cc.pacing_rate_bps(), Some(160_000_000));
        cc.ssthresh_bytes = 100 * MSS;
        assert_eq!(cc.pacing_rate_bps(), Some(96_000_000));
    }
}
