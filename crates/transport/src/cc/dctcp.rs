//! DCTCP (RFC 8257): Reno's growth and loss response, and a reduction in proportion to the
//! extent of congestion, α, the fraction of bytes that arrived CE-marked, estimated once per
//! window of data (§3.3): α ← (1 − g)·α + g·F, with g = 1/16 and F the marked bytes ÷ the
//! delivered bytes of the window; on ECN feedback (once per window, the sender's rule),
//! cwnd ← cwnd·(1 − α/2).
//!
//! α starts at 1, as Linux's `dctcp_alpha_on_init`, so the first reductions are Reno's halving
//! until marks say otherwise. The marked bytes are the sender's ECN feedback (`AckSample::
//! ce_bytes`): exact with Accurate ECN; with RFC 3168's feedback every byte an ECE ACK delivers
//! counts, which overstates F unless the receiver echoes as RFC 8257 §3.2 asks (millinet's
//! receiver echoes as RFC 3168 does), so DCTCP is meant to run with `ecn = "accurate"`.

use super::newreno::NewReno;
use super::{AckSample, CcInit, CongestionControl, CongestionEvent, Window};

/// RFC 8257 §3.3's estimation gain g (Linux's `dctcp_shift_g` = 4).
const GAIN: f64 = 1.0 / 16.0;

/// α, the estimated fraction of marked bytes, updated once per window of data (RFC 8257 §3.3;
/// TCP Prague's is the same).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MarkingFraction {
    alpha: f64,
    /// SND.NXT when the current window started; none before the first ACK.
    window_end: Option<u64>,
    delivered_at_start_bytes: u64,
    marked_bytes: u64,
}

impl Default for MarkingFraction {
    fn default() -> Self {
        MarkingFraction { alpha: 1.0, window_end: None, delivered_at_start_bytes: 0, marked_bytes: 0 }
    }
}

impl MarkingFraction {
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Counts an ACK's marked bytes; once SND.UNA passes the window's end, α takes the window's
    /// fraction and the next window starts.
    pub fn on_ack(&mut self, ack: &AckSample) {
        self.marked_bytes += ack.ce_bytes;
        let Some(end) = self.window_end else {
            self.start_window(ack);
            return;
        };
        if ack.snd_una < end {
            return;
        }
        let delivered = ack.delivered_total_bytes - self.delivered_at_start_bytes;
        let fraction = if delivered == 0 { 0.0 } else { (self.marked_bytes as f64 / delivered as f64).min(1.0) };
        self.alpha = (1.0 - GAIN) * self.alpha + GAIN * fraction;
        self.start_window(ack);
    }

    fn start_window(&mut self, ack: &AckSample) {
        self.window_end = Some(ack.snd_nxt);
        self.delivered_at_start_bytes = ack.delivered_total_bytes;
        self.marked_bytes = 0;
    }

    /// RFC 8257 §3.3: the window after a reduction, cwnd·(1 − α/2), at least 2 segments (as
    /// Linux's `dctcp_ssthresh`).
    pub fn reduced_bytes(&self, cwnd_bytes: u64, mss_bytes: u64) -> u64 {
        ((cwnd_bytes as f64 * (1.0 - self.alpha / 2.0)) as u64).max(2 * mss_bytes)
    }
}

pub struct Dctcp {
    reno: NewReno,
    mss_bytes: u64,
    fraction: MarkingFraction,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(Dctcp { reno: NewReno::new(init), mss_bytes: init.mss_bytes, fraction: MarkingFraction::default() })
}

impl Dctcp {
    pub fn alpha(&self) -> f64 {
        self.fraction.alpha()
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, ack: &AckSample) {
        self.fraction.on_ack(ack);
        self.reno.on_ack(ack);
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, now_ns: u64, flight_size_bytes: u64) {
        match kind {
            CongestionEvent::EcnEcho => {
                let reduced = self.fraction.reduced_bytes(self.reno.cwnd_bytes(), self.mss_bytes);
                self.reno.set_window(reduced, reduced);
            }
            // RFC 8257 §3.5: a loss is answered as standard TCP does.
            CongestionEvent::FastRetransmit | CongestionEvent::Rto => self.reno.on_congestion_event(kind, now_ns, flight_size_bytes),
        }
    }

    fn on_recovery_exit(&mut self, now_ns: u64) {
        self.reno.on_recovery_exit(now_ns);
    }

    fn undo(&mut self, prior: Window) {
        self.reno.undo(prior);
    }

    fn cwnd_bytes(&self) -> u64 {
        self.reno.cwnd_bytes()
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh_bytes()
    }

    fn echoes_every_mark(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CubicVariant, HystartMode};

    const MSS: u64 = 1000;

    fn dctcp() -> Dctcp {
        let init = CcInit { mss_bytes: MSS, initial_cwnd_bytes: 100 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux };
        Dctcp { reno: NewReno::new(&init), mss_bytes: MSS, fraction: MarkingFraction::default() }
    }

    /// One window of `segments` ACKs, `marked` of them reporting CE bytes, ending at `end`.
    fn window(cc: &mut Dctcp, start: u64, segments: u64, marked: u64) -> u64 {
        for k in 1..=segments {
            let ack = AckSample {
                acked_bytes: MSS,
                snd_una: start + k * MSS,
                snd_nxt: start + (segments + k) * MSS,
                delivered_total_bytes: start + k * MSS,
                ce_bytes: if k <= marked { MSS } else { 0 },
                in_recovery: true,
                ..AckSample::default()
            };
            cc.on_ack(&ack);
        }
        start + segments * MSS
    }

    /// RFC 8257 §3.3's update, by hand: α₀ = 1; a window with F = 1/4 gives
    /// α₁ = 15/16 + 1/64; a window with F = 0 gives α₂ = 15/16·α₁.
    #[test]
    fn alpha_follows_rfc8257_equation() {
        let mut cc = dctcp();
        // The first ACK opens the first window (its end: SND.NXT then, 101 segments).
        cc.on_ack(&AckSample { snd_una: MSS, snd_nxt: 101 * MSS, delivered_total_bytes: MSS, ..AckSample::default() });
        let end = window(&mut cc, MSS, 100, 25);
        let alpha1 = 15.0 / 16.0 + 0.25 / 16.0;
        assert!((cc.alpha() - alpha1).abs() < 1e-12, "{}", cc.alpha());
        window(&mut cc, end, 200, 0);
        assert!((cc.alpha() - 15.0 / 16.0 * alpha1).abs() < 1e-12, "{}", cc.alpha());
    }

    /// The response: cwnd·(1 − α/2) on ECN feedback, halving on a loss.
    #[test]
    fn ecn_reduces_by_half_alpha_and_loss_halves() {
        let mut cc = dctcp();
        cc.fraction.alpha = 0.2;
        cc.on_congestion_event(CongestionEvent::EcnEcho, 0, 100 * MSS);
        assert_eq!((cc.cwnd_bytes(), cc.ssthresh_bytes()), (90 * MSS, 90 * MSS));
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 90 * MSS);
        assert_eq!(cc.cwnd_bytes(), 45 * MSS);
        // Never below two segments.
        cc.fraction.alpha = 1.0;
        cc.reno.set_window(2 * MSS, 3 * MSS);
        cc.on_congestion_event(CongestionEvent::EcnEcho, 0, 3 * MSS);
        assert_eq!(cc.cwnd_bytes(), 2 * MSS);
    }
}
