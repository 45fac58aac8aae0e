//! Measurement helpers with memory independent of the packet count.

/// A histogram with logarithmic bins of relative width 0.1%, for percentiles of
/// values (RTTs, latencies in ns) whose count grows with the run. The mean is exact.
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

/// Values below 1 µs share the first bin.
const MIN_VALUE: f64 = 1_000.0;
const BIN_RATIO: f64 = 1.001;

/// The bin of `value` in every LogHistogram.
#[inline]
pub fn bin_of(value: u64) -> usize {
    let v = value as f64;
    if v <= MIN_VALUE {
        0
    } else {
        ((v / MIN_VALUE).ln() / BIN_RATIO.ln()) as usize
    }
}

impl LogHistogram {
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.record_in(bin_of(value), value);
    }

    /// Records `value` in its `bin_of(value)`, computed once for several histograms
    /// (the logarithm dominates the cost of a record).
    #[inline]
    pub fn record_in(&mut self, bin: usize, value: u64) {
        let v = value as f64;
        if bin >= self.counts.len() {
            self.counts.resize(bin + 1, 0);
        }
        self.counts[bin] += 1;
        self.count += 1;
        self.sum += v;
    }

    /// Adds `other`'s values, as if each had been recorded here.
    pub fn merge(&mut self, other: &LogHistogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Nearest-rank percentile (`p` in 0..=100), to within 0.05% of the value.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (bin, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                // Geometric middle of the bin.
                return Some(MIN_VALUE * BIN_RATIO.powf(bin as f64 + 0.5));
            }
        }
        unreachable!("rank is at most the count")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_bin_precision() {
        let mut h = LogHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1_000_000); // 1 ms .. 10 s
        }
        for (p, expected) in [(50.0, 5_000e6), (95.0, 9_500e6), (99.0, 9_900e6), (100.0, 10_000e6)] {
            let got = h.percentile(p).unwrap();
            assert!((got / expected - 1.0).abs() < 0.001, "p{p}: {got} vs {expected}");
        }
        assert_eq!(h.mean().unwrap(), 5_000.5e6);
    }

    #[test]
    fn merged_histograms_equal_one_that_recorded_everything() {
        let (mut all, mut a, mut b) = (LogHistogram::default(), LogHistogram::default(), LogHistogram::default());
        for v in 1..=1000u64 {
            all.record(v * 7_000);
            let part = if v % 3 == 0 { &mut a } else { &mut b };
            part.record(v * 7_000);
        }
        a.merge(&b);
        assert_eq!((a.count(), a.mean()), (all.count(), all.mean()));
        for p in [1.0, 50.0, 99.0, 100.0] {
            assert_eq!(a.percentile(p), all.percentile(p));
        }
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        assert_eq!(LogHistogram::default().percentile(50.0), None);
    }
}
