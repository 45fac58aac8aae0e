//! Measurement helpers with memory independent of the packet count.

/// A histogram of nanosecond values (RTTs, latencies) for percentiles of values whose count
/// grows with the run; the mean is exact.
///
/// Log-linear bins in integer arithmetic (HdrHistogram's layout): values below 2^11 ns get a
/// bin each, and every power of two above is split into 2^10 equal bins, so a bin is at most
/// 2^-10 (0.1%) of its values wide and is found from the value's leading zeros and a shift.
/// A logarithm per record cost more than the rest of a packet's measurements together.
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

/// log2 of the bins per power of two.
const SUB_BITS: u32 = 10;
const SUB_BINS: u64 = 1 << SUB_BITS;

/// The bin of `value`.
#[inline]
fn bin_of(value: u64) -> usize {
    if value < SUB_BINS {
        return value as usize;
    }
    // value >> shift is in [2^10, 2^11): the power of two picks the block, the shifted value
    // the bin in it. Continuous with the exact bins: for shift 0 the bin is the value.
    let shift = 63 - value.leading_zeros() - SUB_BITS;
    (u64::from(shift) * SUB_BINS + (value >> shift)) as usize
}

/// The smallest value of `bin` and how many integers it holds.
fn bin_range(bin: usize) -> (u64, u64) {
    let bin = bin as u64;
    if bin < 2 * SUB_BINS {
        return (bin, 1);
    }
    let shift = bin / SUB_BINS - 1;
    ((bin - shift * SUB_BINS) << shift, 1 << shift)
}

impl LogHistogram {
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `value` `n` times.
    #[inline]
    pub fn record_n(&mut self, value: u64, n: u64) {
        let bin = bin_of(value);
        if bin >= self.counts.len() {
            self.counts.resize(bin + 1, 0);
        }
        self.counts[bin] += n;
        self.count += n;
        self.sum += value as f64 * n as f64;
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

    /// Nearest-rank percentiles (each `p` in 0..=100, ascending): the middle of their bins,
    /// exact below 2^11 ns and within 0.05% of the value above. One pass over the bins for all
    /// of them: a histogram of RTTs up to seconds has tens of thousands of bins.
    pub fn percentiles<const N: usize>(&self, ps: [f64; N]) -> [Option<f64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        let ranks = ps.map(|p| ((p / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count));
        let mut k = 0;
        let mut seen = 0;
        // A block's total first (a sum the compiler vectorises), its bins only where a rank falls.
        for (block, counts) in self.counts.chunks(SUB_BINS as usize).enumerate() {
            let total: u64 = counts.iter().sum();
            if seen + total < ranks[k] {
                seen += total;
                continue;
            }
            for (i, &c) in counts.iter().enumerate() {
                seen += c;
                while k < N && seen >= ranks[k] {
                    let (low, width) = bin_range(block * SUB_BINS as usize + i);
                    out[k] = Some(low as f64 + (width - 1) as f64 / 2.0);
                    k += 1;
                }
                if k == N {
                    return out;
                }
            }
        }
        unreachable!("every rank is at most the count")
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
            let got = h.percentiles([p])[0].unwrap();
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
            assert_eq!(a.percentiles([p]), all.percentiles([p]));
        }
        // One pass for several ranks finds what a pass each finds, equal ranks included.
        let ps = [1.0, 50.0, 50.0, 99.0, 100.0];
        assert_eq!(all.percentiles(ps).to_vec(), ps.iter().map(|&p| all.percentiles([p])[0]).collect::<Vec<_>>());
    }

    /// Every value lies in its bin, bins follow the values' order without gaps, and a bin is
    /// at most 2^-10 of its smallest value wide (exact below 2^11).
    #[test]
    fn bins_cover_the_values_in_order_within_a_thousandth() {
        let mut values: Vec<u64> = (0..5000).collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            values.push(state >> (state % 64));
        }
        values.extend([u64::MAX, u64::MAX - 1, 1 << 63, (1 << 40) - 1, 1 << 40]);
        for &v in &values {
            let bin = bin_of(v);
            let (low, width) = bin_range(bin);
            assert!(low <= v && v - low < width, "{v} outside bin {bin} = [{low}, +{width})");
            assert!(v < 2048 && width == 1 || width <= low >> 10, "bin {bin} of {v}: width {width} from {low}");
            if v < u64::MAX {
                let next = bin_of(v + 1);
                assert!(next == bin || (next == bin + 1 && bin_range(next).0 == v + 1), "{v} and {} skip or reorder bins", v + 1);
            }
        }
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = LogHistogram::default();
        for v in [7u64, 1500, 2047] {
            h.record(v);
        }
        assert_eq!(h.percentiles([1.0, 50.0, 100.0]), [Some(7.0), Some(1500.0), Some(2047.0)]);
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        assert_eq!(LogHistogram::default().percentiles([50.0, 99.0]), [None, None]);
    }
}
