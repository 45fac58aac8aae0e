//! HighSpeed TCP (RFC 3649): standard TCP (a = 1, b = 0.5) up to Low_Window = 38 segments;
//! above it, congestion avoidance adds a(w) segments per RTT and a loss removes the fraction
//! b(w), both from the RFC's §5 formulas rather than the Appendix B table. At every row of
//! the table the formulas give its printed a and b within their rounding (a to an integer,
//! b to two decimals; crates/transport/tests/highspeed.rs reads bpf/rfc3649_appendix_b.csv),
//! and between rows they change smoothly where the table steps (the kernel's BPF HighSpeed,
//! like Linux's, looks the table up: docs/models/bpf-congestion-control.md). Slow start is the standard one (RFC 5681 +
//! RFC 3465), as RFC 3649 §5 leaves it unchanged. The window is kept as a fractional byte
//! count so that the per-ACK increments a(w)/w of a large window are not lost to rounding.

use super::{ack_growth, reduced_window, AckGrowth, AckSample, CcInit, CongestionControl, CongestionEvent, Window};

/// RFC 3649 §5: below (and at) this window, standard TCP.
pub const LOW_WINDOW_SEGMENTS: f64 = 38.0;
/// RFC 3649 §5: the window reached at the packet drop rate High_P = 10⁻⁷.
pub const HIGH_WINDOW_SEGMENTS: f64 = 83_000.0;
/// RFC 3649 §5: b(High_Window).
pub const HIGH_DECREASE: f64 = 0.1;

/// RFC 3649 §5 decrease parameter b(w), linear in log w through (Low_Window, 0.5) and
/// (High_Window, High_Decrease). Like the Appendix B table (whose last rows, 84035 to 94717,
/// lie past High_Window) it continues beyond High_Window; it would reach 0 only at about
/// 5.7·10⁵ segments, where it stops so that a loss never grows the window.
pub fn b(w_segments: f64) -> f64 {
    if w_segments <= LOW_WINDOW_SEGMENTS {
        return 0.5;
    }
    let slope = (w_segments.ln() - LOW_WINDOW_SEGMENTS.ln()) / (HIGH_WINDOW_SEGMENTS.ln() - LOW_WINDOW_SEGMENTS.ln());
    ((HIGH_DECREASE - 0.5) * slope + 0.5).max(0.0)
}

/// RFC 3649 §5 response function inverted: w = 0.12/p^0.835 gives p(w) = 0.078/w^1.2.
pub fn p(w_segments: f64) -> f64 {
    0.078 / w_segments.powf(1.2)
}

/// RFC 3649 §5 increase parameter a(w) = w²·p(w)·2·b(w)/(2 − b(w)), segments per RTT.
pub fn a(w_segments: f64) -> f64 {
    if w_segments <= LOW_WINDOW_SEGMENTS {
        return 1.0;
    }
    let b = b(w_segments);
    w_segments * w_segments * p(w_segments) * 2.0 * b / (2.0 - b)
}

pub struct HighSpeed {
    mss_bytes: u64,
    cwnd_bytes: f64,
    ssthresh_bytes: u64,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(HighSpeed::new(init))
}

impl HighSpeed {
    pub fn new(init: &CcInit) -> HighSpeed {
        HighSpeed {
            mss_bytes: init.mss_bytes,
            cwnd_bytes: init.initial_cwnd_bytes as f64,
            // RFC 5681 §3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
        }
    }

    fn window_segments(&self) -> f64 {
        self.cwnd_bytes / self.mss_bytes as f64
    }
}

impl CongestionControl for HighSpeed {
    fn on_ack(&mut self, ack: &AckSample) {
        match ack_growth(ack, self.cwnd_bytes as u64, self.ssthresh_bytes, self.mss_bytes) {
            AckGrowth::Hold => return,
            AckGrowth::SlowStart { increase_bytes } => {
                self.cwnd_bytes += increase_bytes as f64;
                return;
            }
            AckGrowth::CongestionAvoidance => {}
        }
        // RFC 3649 §5: w += a(w)/w per acknowledged segment, i.e. a(w) segments per window
        // of acknowledged bytes (byte counting as RFC 3465 does for a = 1).
        let mss = self.mss_bytes as f64;
        self.cwnd_bytes += a(self.window_segments()) * mss * ack.acked_bytes as f64 / self.cwnd_bytes;
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, _now_ns: u64, flight_size_bytes: u64) {
        // RFC 3649 §5 replaces the 0.5 of RFC 5681 §3.1 eq. (4) with b(w), w = cwnd:
        // ssthresh = max((1 − b(w))·FlightSize, 2·SMSS).
        let keep = 1.0 - b(self.window_segments());
        let (ssthresh_bytes, cwnd_bytes) = reduced_window(kind, (flight_size_bytes as f64 * keep) as u64, self.mss_bytes);
        self.ssthresh_bytes = ssthresh_bytes;
        self.cwnd_bytes = cwnd_bytes as f64;
    }

    fn on_recovery_exit(&mut self, _now_ns: u64) {
        // RFC 6582 §3.2 step 3, option (2): deflate to ssthresh on a full ACK.
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
