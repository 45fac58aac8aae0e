//! Delivery opportunities: a link direction served as Mahimahi serves it (Netravali et al.,
//! "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015, §3.2) instead of at a
//! rate. A trace lists the instants, in whole milliseconds, at which the link may deliver
//! 1500 bytes, and repeats with its period. The packet at the head of the queue takes what
//! is left of the current opportunity, then whole ones, and has crossed at the instant of the
//! opportunity that carries its last byte; an opportunity nobody uses is lost.

/// Bytes one opportunity delivers: one MTU-sized packet.
pub const OPPORTUNITY_BYTES: u32 = 1500;

const NS_PER_MS: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryOpportunities {
    /// The opportunities of one period, in order: their milliseconds within [0, period).
    ms: Vec<u64>,
    period_ns: u64,
    /// The opportunity in use, counted from the first of the run over the repeating
    /// periods, and the bytes it has left.
    current: u64,
    left_bytes: u32,
}

/// A trace with no opportunity, or opportunities outside [0, period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmptyTrace;

impl DeliveryOpportunities {
    /// From the milliseconds of one period's opportunities (sorted, each below
    /// `period_ms`; several equal ones are several opportunities at that instant).
    pub fn new(ms: Vec<u64>, period_ms: u64) -> Result<DeliveryOpportunities, EmptyTrace> {
        if ms.is_empty() || ms.iter().any(|&m| m >= period_ms) || ms.windows(2).any(|w| w[0] > w[1]) {
            return Err(EmptyTrace);
        }
        Ok(DeliveryOpportunities { ms, period_ns: period_ms * NS_PER_MS, current: 0, left_bytes: OPPORTUNITY_BYTES })
    }

    /// The long-run rate the opportunities offer.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.ms.len() as u64 * u64::from(OPPORTUNITY_BYTES) * 8 * 1_000_000_000).div_ceil(self.period_ns)
    }

    /// When opportunity `k` (counted over the repeating periods) comes.
    #[inline]
    fn at_ns(&self, k: u64) -> u64 {
        let n = self.ms.len() as u64;
        (k / n) * self.period_ns + self.ms[(k % n) as usize] * NS_PER_MS
    }

    /// The first opportunity at or after `t_ns`.
    fn first_from(&self, t_ns: u64) -> u64 {
        let n = self.ms.len() as u64;
        let (period, within_ns) = (t_ns / self.period_ns, t_ns % self.period_ns);
        let i = self.ms.partition_point(|&m| m * NS_PER_MS < within_ns) as u64;
        period * n + i
    }

    /// The packet of `bytes` reaching the head of the queue at `start_ns` is delivered: it
    /// takes the rest of the opportunity in use unless that one is past, then whole ones.
    /// Returns when its last byte goes. Out of line: the links served at a rate, the
    /// common case, keep their transmitter's step small enough to inline.
    #[inline(never)]
    pub fn deliver(&mut self, start_ns: u64, bytes: u32) -> u64 {
        if self.at_ns(self.current) < start_ns {
            self.current = self.first_from(start_ns);
            self.left_bytes = OPPORTUNITY_BYTES;
        }
        let mut remaining = bytes;
        loop {
            if self.left_bytes == 0 {
                self.current += 1;
                self.left_bytes = OPPORTUNITY_BYTES;
            }
            let taken = remaining.min(self.left_bytes);
            self.left_bytes -= taken;
            remaining -= taken;
            if remaining == 0 {
                return self.at_ns(self.current);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NS_PER_MS;

    #[test]
    fn packets_take_what_is_left_of_an_opportunity_then_whole_ones() {
        // Two opportunities at 1 ms, one at 3 ms; the period is 5 ms.
        let mut o = DeliveryOpportunities::new(vec![1, 1, 3], 5).unwrap();
        assert_eq!(o.deliver(0, 1000), MS, "the first opportunity carries it");
        assert_eq!(o.deliver(MS, 400), MS, "the rest of the same opportunity");
        assert_eq!(o.deliver(MS, 1500), MS, "100 bytes left, then the second opportunity at 1 ms");
        assert_eq!(o.deliver(MS, 1500), 3 * MS, "the second had 100 left: the 3 ms one ends it");
        // The 3 ms one has 100 bytes left, but a packet reaching the head later cannot use a
        // past opportunity: the next period's first.
        assert_eq!(o.deliver(3 * MS + 1, 10), 6 * MS);
        // A 64 kB frame takes 44 opportunities: 14 periods of 3, then the first two of the
        // next, the second at 1 ms.
        let mut o = DeliveryOpportunities::new(vec![1, 1, 3], 5).unwrap();
        assert_eq!(o.deliver(0, 65_536), 14 * 5 * MS + MS);
    }

    #[test]
    fn a_trace_carries_its_opportunities_bytes_and_no_more() {
        // 4 opportunities per ms for 100 ms, none for the next 100: 24 Mbit/s on average.
        let ms: Vec<u64> = (0..100).flat_map(|m| [m; 4]).collect();
        let mut o = DeliveryOpportunities::new(ms, 200).unwrap();
        assert_eq!(o.mean_rate_bps(), 24_000_000);
        // A backlog of 1500-byte packets: one per opportunity; the 1200th ends a period.
        let mut last = 0;
        for _ in 0..1200 {
            last = o.deliver(last, 1500);
        }
        assert_eq!(last, 2 * 200 * MS + 99 * MS, "400 per period: the last at 99 ms of the third");
    }

    #[test]
    fn what_is_not_a_trace_is_refused() {
        assert_eq!(DeliveryOpportunities::new(vec![], 5), Err(EmptyTrace));
        assert_eq!(DeliveryOpportunities::new(vec![5], 5), Err(EmptyTrace));
        assert_eq!(DeliveryOpportunities::new(vec![3, 1], 5), Err(EmptyTrace));
    }
}
