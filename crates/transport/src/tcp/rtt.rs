//! RTT estimation and the retransmission timeout per RFC 6298.

/// RFC 6298 §2: clock granularity G (the timestamp clock ticks in milliseconds).
const CLOCK_GRANULARITY_NS: u64 = 1_000_000;
/// Bounds the shift of the exponential backoff; the result is clamped to max_rto anyway.
const MAX_BACKOFF_SHIFT: u32 = 16;

#[derive(Debug)]
pub(crate) struct RttEstimator {
    srtt_ns: u64,
    rttvar_ns: u64,
    has_sample: bool,
    /// RTO before backoff: SRTT + max(G, 4·RTTVAR), clamped (RFC 6298 §2.2–2.5).
    base_rto_ns: u64,
    /// Number of back-to-back timeouts (RFC 6298 §5.5).
    backoff: u32,
    min_rtt_ns: u64,
    last_rtt_ns: u64,
    samples: u64,
    min_rto_ns: u64,
    max_rto_ns: u64,
}

impl RttEstimator {
    pub fn new(initial_rto_ns: u64, min_rto_ns: u64, max_rto_ns: u64) -> RttEstimator {
        RttEstimator {
            srtt_ns: 0,
            rttvar_ns: 0,
            has_sample: false,
            // RFC 6298 §2.1: RTO = initial value until the first sample.
            base_rto_ns: initial_rto_ns.clamp(min_rto_ns, max_rto_ns),
            backoff: 0,
            min_rtt_ns: u64::MAX,
            last_rtt_ns: 0,
            samples: 0,
            min_rto_ns,
            max_rto_ns,
        }
    }

    pub fn on_sample(&mut self, rtt_ns: u64) {
        if self.has_sample {
            // RFC 6298 §2.3 with α = 1/8, β = 1/4 (RTTVAR first, using the old SRTT).
            let err = self.srtt_ns.abs_diff(rtt_ns);
            self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
            self.srtt_ns = (7 * self.srtt_ns + rtt_ns) / 8;
        } else {
            // RFC 6298 §2.2.
            self.srtt_ns = rtt_ns;
            self.rttvar_ns = rtt_ns / 2;
            self.has_sample = true;
        }
        self.base_rto_ns = (self.srtt_ns + CLOCK_GRANULARITY_NS.max(4 * self.rttvar_ns)).clamp(self.min_rto_ns, self.max_rto_ns);
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
        self.last_rtt_ns = rtt_ns;
        self.samples += 1;
    }

    /// The current timeout including backoff (RFC 6298 §5.5), at most max_rto.
    pub fn rto_ns(&self) -> u64 {
        self.base_rto_ns.saturating_mul(1 << self.backoff).min(self.max_rto_ns)
    }

    /// RFC 6298 §5.5: double the RTO after a timeout.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF_SHIFT);
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// An ACK of new data ends a series of back-to-back timeouts (as Linux does).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// RFC 6298 §5.7: the SYN timed out and no sample was taken: RTO = 3 s for the data.
    pub fn after_syn_timeout_without_sample(&mut self) {
        if !self.has_sample {
            self.base_rto_ns = 3_000_000_000u64.clamp(self.min_rto_ns, self.max_rto_ns);
        }
        self.backoff = 0;
    }

    pub fn srtt_ns(&self) -> u64 {
        self.srtt_ns
    }

    pub fn rttvar_ns(&self) -> u64 {
        self.rttvar_ns
    }

    pub fn min_rto_ns(&self) -> u64 {
        self.min_rto_ns
    }

    /// 0 before the first sample.
    pub fn min_rtt_ns(&self) -> u64 {
        if self.has_sample {
            self.min_rtt_ns
        } else {
            0
        }
    }

    pub fn last_rtt_ns(&self) -> u64 {
        self.last_rtt_ns
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rfc6298_estimator_and_clamping() {
        let mut rtt = RttEstimator::new(1000 * MS, 200 * MS, 60_000 * MS);
        assert_eq!(rtt.rto_ns(), 1000 * MS);
        rtt.on_sample(100 * MS);
        assert_eq!((rtt.srtt_ns(), rtt.rttvar_ns()), (100 * MS, 50 * MS));
        assert_eq!(rtt.rto_ns(), 300 * MS);
        rtt.on_sample(200 * MS);
        // RTTVAR = 3/4·50 + 1/4·100 = 62.5; SRTT = 7/8·100 + 1/8·200 = 112.5
        assert_eq!((rtt.srtt_ns(), rtt.rttvar_ns()), (112_500_000, 62_500_000));
        assert_eq!(rtt.rto_ns(), 362_500_000);
        for _ in 0..100 {
            rtt.on_sample(10 * MS);
        }
        assert_eq!(rtt.rto_ns(), 200 * MS, "clamped to min RTO");
        assert_eq!(rtt.min_rtt_ns(), 10 * MS);
    }

    #[test]
    fn granularity_term_when_variance_vanishes() {
        let mut rtt = RttEstimator::new(1000 * MS, 0, 60_000 * MS);
        for _ in 0..200 {
            rtt.on_sample(50 * MS);
        }
        assert_eq!(rtt.rto_ns(), 50 * MS + MS);
    }

    #[test]
    fn backoff_doubles_up_to_max_and_resets() {
        let mut rtt = RttEstimator::new(1000 * MS, 200 * MS, 5000 * MS);
        rtt.back_off();
        assert_eq!(rtt.rto_ns(), 2000 * MS);
        rtt.back_off();
        assert_eq!(rtt.rto_ns(), 4000 * MS);
        rtt.back_off();
        assert_eq!(rtt.rto_ns(), 5000 * MS);
        rtt.reset_backoff();
        assert_eq!(rtt.rto_ns(), 1000 * MS);
    }
}
