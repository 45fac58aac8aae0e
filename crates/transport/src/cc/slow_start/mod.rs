//! Leaving slow start before the first loss: the window-based algorithms' standard slow start
//! (RFC 5681) doubles the window every round trip until a buffer overflows, which at mmWave
//! rates means megabytes of losses. Two ways to leave it early, one file each:
//! - `linux_hystart`: CUBIC's HyStart as Linux runs it (`tcp_cubic.c`, Linux 6.18: ACK-train
//!   and delay-increase detection), on by default there;
//! - `hystart_plus_plus`: HyStart++ (RFC 9406), which Linux does not ship.
//!
//! Both watch the ACKs of each round (a round ends when the ACK passes the SND.NXT it started
//! with) and tell the algorithm how much of the usual slow-start increase to apply, or to end
//! slow start at the current window.

mod hystart_plus_plus;
mod linux_hystart;

use super::AckSample;

pub use hystart_plus_plus::HystartPlusPlus;
pub use linux_hystart::LinuxHystart;

/// Which slow-start exit an algorithm runs (`TcpConfig::hystart`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HystartMode {
    /// Standard slow start until a loss (RFC 5681).
    Off,
    /// Linux's HyStart (the default of Linux's CUBIC).
    #[default]
    Linux,
    /// HyStart++ (RFC 9406).
    Rfc9406,
}

/// What one ACK in slow start may do to the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowStartStep {
    /// Grow by the slow-start increase divided by `divisor` (1: standard slow start; RFC 9406
    /// §4.2's conservative slow start divides by CSS_GROWTH_DIVISOR).
    Grow { divisor: u64 },
    /// Leave slow start: ssthresh = cwnd, congestion avoidance from this ACK on.
    Exit,
}

/// The slow-start exit of one connection.
#[derive(Clone, Debug)]
pub enum SlowStartExit {
    Off,
    Linux(LinuxHystart),
    Rfc9406(HystartPlusPlus),
}

impl SlowStartExit {
    pub fn new(mode: HystartMode, mss_bytes: u64) -> SlowStartExit {
        match mode {
            HystartMode::Off => SlowStartExit::Off,
            HystartMode::Linux => SlowStartExit::Linux(LinuxHystart::new(mss_bytes)),
            HystartMode::Rfc9406 => SlowStartExit::Rfc9406(HystartPlusPlus::default()),
        }
    }

    /// Every ACK that delivered data, before the window grows: `cwnd_bytes` is the window the
    /// ACK found, `in_slow_start` whether it is below ssthresh. `ca_epoch_start_ns` is when
    /// the algorithm's current congestion-avoidance epoch began, if one has.
    pub fn on_ack(&mut self, ack: &AckSample, cwnd_bytes: u64, in_slow_start: bool, ca_epoch_start_ns: Option<u64>) -> SlowStartStep {
        match self {
            SlowStartExit::Off => SlowStartStep::Grow { divisor: 1 },
            SlowStartExit::Linux(h) => h.on_ack(ack, cwnd_bytes, in_slow_start, ca_epoch_start_ns),
            SlowStartExit::Rfc9406(h) => h.on_ack(ack, in_slow_start),
        }
    }

    /// A retransmission timeout: slow start begins again from one segment, and both detectors
    /// start over (Linux's `cubictcp_state` on entering the loss state; RFC 9406 §4.3).
    pub fn on_timeout(&mut self) {
        match self {
            SlowStartExit::Off => {}
            SlowStartExit::Linux(h) => h.restart(),
            SlowStartExit::Rfc9406(h) => h.restart(),
        }
    }
}
