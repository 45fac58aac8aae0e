//! NewReno window control (RFC 5681 §3.1, byte counting per RFC 3465): slow start,
//! congestion avoidance +1 SMSS per RTT, multiplicative decrease β = 0.5. The partial-ACK
//! logic of RFC 6582 lives in the sender; this is only the window arithmetic.

use super::{ack_growth, reduced_window, AckGrowth, AckSample, CcInit, CongestionControl, CongestionEvent, Window};

pub struct NewReno {
    mss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// Bytes acknowledged since cwnd last grew in congestion avoidance (RFC 3465 §2.1).
    ca_acked_bytes: u64,
}

pub fn construct(init: &CcInit) -> Box<dyn CongestionControl> {
    Box::new(NewReno::new(init))
}

impl NewReno {
    pub fn new(init: &CcInit) -> NewReno {
        NewReno {
            mss_bytes: init.mss_bytes,
            cwnd_bytes: init.initial_cwnd_bytes,
            // RFC 5681 §3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
            ca_acked_bytes: 0,
        }
    }
}

impl NewReno {
    /// Sets the window, as an algorithm built on NewReno's growth reduces it its own way
    /// (DCTCP's ECN response).
    pub(crate) fn set_window(&mut self, ssthresh_bytes: u64, cwnd_bytes: u64) {
        (self.ssthresh_bytes, self.cwnd_bytes) = (ssthresh_bytes, cwnd_bytes);
        self.ca_acked_bytes = 0;
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, ack: &AckSample) {
        match ack_growth(ack, self.cwnd_bytes, self.ssthresh_bytes, self.mss_bytes) {
            // RFC 6582: during fast recovery the sender, not the algorithm, inflates cwnd.
            AckGrowth::Hold => return,
            AckGrowth::SlowStart { increase_bytes } => {
                self.cwnd_bytes += increase_bytes;
                return;
            }
            AckGrowth::CongestionAvoidance => {}
        }
        // RFC 3465 §2.1: +1 SMSS each time a full cwnd of bytes has been acknowledged.
        self.ca_acked_bytes += ack.acked_bytes;
        if self.ca_acked_bytes >= self.cwnd_bytes {
            self.ca_acked_bytes -= self.cwnd_bytes;
            self.cwnd_bytes += self.mss_bytes;
        }
    }

    fn on_congestion_event(&mut self, kind: CongestionEvent, _now_ns: u64, flight_size_bytes: u64) {
        // RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2·SMSS).
        (self.ssthresh_bytes, self.cwnd_bytes) = reduced_window(kind, flight_size_bytes / 2, self.mss_bytes);
        self.ca_acked_bytes = 0;
    }

    fn on_recovery_exit(&mut self, _now_ns: u64) {
        // RFC 6582 §3.2 step 3, option (2): deflate to ssthresh on a full ACK.
        self.cwnd_bytes = self.ssthresh_bytes;
    }

    fn undo(&mut self, prior: Window) {
        (self.ssthresh_bytes, self.cwnd_bytes) = prior.undone(self.ssthresh_bytes, self.cwnd_bytes);
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd_bytes
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CubicVariant, HystartMode};

    const MSS: u64 = 1000;

    fn ack(acked_bytes: u64) -> AckSample {
        AckSample { acked_bytes, cwnd_limited: true, ..AckSample::default() }
    }

    #[test]
    fn slow_start_counts_bytes_with_abc_limit() {
        let mut cc =
            NewReno::new(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux });
        cc.on_ack(&ack(MSS));
        assert_eq!(cc.cwnd_bytes(), 11 * MSS);
        // A stretch ACK of 5 segments grows cwnd by at most L = 2 SMSS (RFC 3465 §2.2).
        cc.on_ack(&ack(5 * MSS));
        assert_eq!(cc.cwnd_bytes(), 13 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut cc =
            NewReno::new(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux });
        cc.on_congestion_event(CongestionEvent::FastRetransmit, 0, 20 * MSS);
        assert_eq!((cc.cwnd_bytes(), cc.ssthresh_bytes()), (10 * MSS, 10 * MSS));
        cc.on_recovery_exit(0);
        for _ in 0..9 {
            cc.on_ack(&ack(MSS));
        }
        assert_eq!(cc.cwnd_bytes(), 10 * MSS);
        cc.on_ack(&ack(MSS));
        assert_eq!(cc.cwnd_bytes(), 11 * MSS);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited_or_in_recovery() {
        let mut cc =
            NewReno::new(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux });
        cc.on_ack(&AckSample { acked_bytes: MSS, cwnd_limited: false, ..AckSample::default() });
        cc.on_ack(&AckSample { acked_bytes: MSS, cwnd_limited: true, in_recovery: true, ..AckSample::default() });
        assert_eq!(cc.cwnd_bytes(), 10 * MSS);
    }

    #[test]
    fn rto_sets_loss_window_and_floor_of_two_segments() {
        let mut cc =
            NewReno::new(&CcInit { mss_bytes: MSS, initial_cwnd_bytes: 10 * MSS, hystart: HystartMode::Off, cubic: CubicVariant::Linux });
        cc.on_congestion_event(CongestionEvent::Rto, 0, 3 * MSS);
        assert_eq!((cc.cwnd_bytes(), cc.ssthresh_bytes()), (MSS, 2 * MSS));
    }
}
