//! Mahimahi link traces (Netravali et al., "Mahimahi: Accurate
//! Record-and-Replay for HTTP", USENIX ATC 2015): one integer per line, the
//! millisecond at which one MTU-sized (1500-byte) packet may be delivered;
//! several equal lines are several packets in that millisecond, and the
//! whole list repeats with the period of its last line.

use std::fmt::Write as _;
use std::num::NonZeroU32;
use std::path::Path;

use super::capacity::CapacitySeries;
use super::error::{read, TraceError};
use crate::error::ConfigError;

/// Bits per delivery opportunity (1500 bytes).
pub const MAHIMAHI_PACKET_BITS: f64 = 12_000.0;
/// Most lines `to_mahimahi` writes (about 0.5 GB of text, 10 Gbit/s for a minute): a
/// series with a mistyped unit (Pbit/s) would otherwise take hours and all the memory.
pub const MAX_MAHIMAHI_LINES: f64 = 64e6;

/// A Mahimahi trace's delivery opportunities over one period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MahimahiTrace {
    /// The millisecond of each opportunity within [0, period), in order. The lines equal to
    /// the period are t = 0 of the next period, so they come first, at 0.
    pub ms: Vec<u64>,
    /// The last line: the trace repeats with this period.
    pub period_ms: u64,
}

/// Reads a Mahimahi trace's opportunities: the first bad line stops it, with its number.
pub fn parse_mahimahi_opportunities(text: &str, file: &str) -> Result<MahimahiTrace, TraceError> {
    let mut ms: Vec<u64> = Vec::new();
    let mut last_line = 0;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        let v = match (l.parse::<u64>(), ms.last()) {
            (Ok(v), Some(&prev)) if v >= prev => v,
            (Ok(v), None) => v,
            (_, Some(&prev)) => {
                return Err(TraceError::bad(
                    file,
                    i + 1,
                    "ms",
                    l,
                    format!("an integer number of milliseconds ≥ the previous line ({prev})"),
                ))
            }
            (Err(_), None) => return Err(TraceError::bad(file, i + 1, "ms", l, "an integer number of milliseconds ≥ 0")),
        };
        ms.push(v);
        last_line = i + 1;
    }
    let Some(&period) = ms.last() else {
        return Err(TraceError::bad(file, 1, "ms", "", "one integer per line (the file is empty)"));
    };
    if period == 0 {
        return Err(TraceError::bad(file, last_line, "ms", "0", "a last line > 0 (it is the period of the trace)"));
    }
    let wrapped = ms.iter().rev().take_while(|&&t| t == period).count();
    ms.truncate(ms.len() - wrapped);
    ms.splice(0..0, std::iter::repeat_n(0, wrapped));
    Ok(MahimahiTrace { ms, period_ms: period })
}

/// Reads a Mahimahi trace file's opportunities.
pub fn load_mahimahi_opportunities(path: &Path) -> Result<MahimahiTrace, TraceError> {
    parse_mahimahi_opportunities(&read(path)?, &path.display().to_string())
}

/// Import a Mahimahi trace as a periodic capacity series: opportunities are
/// counted in bins of `bin_ms` (the last bin may be shorter than the period
/// left) and each bin's rate is count × 12 000 bit / bin length. The line
/// equal to the period is the same instant as t = 0 of the next period and
/// counts in the first bin. The mean rate is exactly lines × 12 000 bit /
/// period whatever the bin; a smaller bin keeps more of the burst structure.
/// Empty bins are runs of rate 0, so memory grows with the lines, not the period.
pub fn parse_mahimahi(text: &str, file: &str, bin_ms: NonZeroU32) -> Result<CapacitySeries, TraceError> {
    let MahimahiTrace { ms, period_ms: period } = parse_mahimahi_opportunities(text, file)?;
    let bin = u64::from(bin_ms.get());
    // Occupied bins with their counts, in increasing bin order (the opportunities are
    // sorted); bin 0 is always there.
    let mut counts: Vec<(u64, u64)> = Vec::new();
    for &t in &ms {
        match counts.last_mut() {
            Some((b, c)) if *b == t / bin => *c += 1,
            _ => counts.push((t / bin, 1)),
        }
    }
    if counts.first().is_none_or(|&(b, _)| b != 0) {
        counts.insert(0, (0, 0));
    }
    let (mut times, mut rates) = (Vec::new(), Vec::new());
    for (j, &(b, c)) in counts.iter().enumerate() {
        let (start, end) = (b * bin, (b + 1).saturating_mul(bin).min(period));
        times.push(start as f64 / 1e3);
        rates.push(c as f64 * MAHIMAHI_PACKET_BITS / ((end - start) as f64 / 1e3));
        let next_start = counts.get(j + 1).map_or(period, |&(nb, _)| nb * bin);
        if end < next_start {
            times.push(end as f64 / 1e3);
            rates.push(0.0);
        }
    }
    Ok(CapacitySeries::from_valid(times, rates, Some(period as f64 / 1e3)))
}

/// Read and parse a Mahimahi trace file.
pub fn load_mahimahi(path: &Path, bin_ms: NonZeroU32) -> Result<CapacitySeries, TraceError> {
    parse_mahimahi(&read(path)?, &path.display().to_string(), bin_ms)
}

/// Export the first `duration_ms` of a capacity series as a Mahimahi trace
/// whose period is `duration_ms`.
///
/// The k-th opportunity is placed at the first whole millisecond by which the
/// series has carried k × 12 000 bits, so the trace never delivers ahead of
/// the capacity. The last opportunity is moved to `duration_ms` because
/// Mahimahi takes its period from the last line. The trace therefore carries
/// ⌊bits / 12 000⌋ packets per period: its mean rate is below the series'
/// by less than one opportunity per period.
pub fn to_mahimahi(series: &CapacitySeries, duration_ms: u64) -> Result<String, ConfigError> {
    let duration_s = duration_ms as f64 / 1e3;
    let lines = series.mean_rate_bps(duration_s) * duration_s / MAHIMAHI_PACKET_BITS;
    if lines > MAX_MAHIMAHI_LINES {
        return Err(ConfigError::new(
            "mahimahi export",
            lines,
            format!("at most {MAX_MAHIMAHI_LINES} opportunities within {duration_ms} ms (a lower rate or a shorter duration)"),
        ));
    }
    let mut out = String::new();
    let (mut carried_bits, mut k, mut last_ms) = (0.0f64, 1u64, 0u64);
    for (start, end, rate) in series.segments().take_while(|&(start, _, _)| start < duration_s) {
        let end = end.min(duration_s);
        let seg_bits = rate * (end - start);
        while (k as f64) * MAHIMAHI_PACKET_BITS <= carried_bits + seg_bits {
            let t_s = start + ((k as f64) * MAHIMAHI_PACKET_BITS - carried_bits) / rate;
            // Tolerate rounding noise before taking the next whole millisecond.
            last_ms = ((t_s * 1e3 - 1e-6).ceil().max(0.0) as u64).min(duration_ms);
            if k > 1 {
                out.push('\n');
            }
            let _ = write!(out, "{last_ms}");
            k += 1;
        }
        carried_bits += seg_bits;
    }
    if k == 1 || duration_ms == 0 {
        return Err(ConfigError::new(
            "mahimahi export",
            carried_bits,
            format!("at least one 1500-byte opportunity ({MAHIMAHI_PACKET_BITS} bits) within {duration_ms} ms"),
        ));
    }
    // Replace the last line with the period.
    out.truncate(out.len() - last_ms.to_string().len());
    let _ = writeln!(out, "{duration_ms}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(ms: u32) -> NonZeroU32 {
        NonZeroU32::new(ms).unwrap()
    }

    #[test]
    fn import_counts_opportunities_per_bin() {
        // Period 4 ms; the line "4" wraps to t = 0.
        let c = parse_mahimahi("1\n1\n3\n4\n", "m.txt", bin(1)).unwrap();
        let pts: Vec<_> = c.points().collect();
        assert_eq!(pts, vec![(0.0, 12e6), (0.001, 24e6), (0.002, 0.0), (0.003, 12e6)]);
        assert_eq!(c.period_s(), Some(0.004));
        assert!((c.mean_rate_bps(0.004) - 4.0 * 12_000.0 / 0.004).abs() < 1e-6);
        // Bins of 3 ms: [0,3) holds 3 packets, [3,4) holds 1 (a 1 ms bin).
        let c = parse_mahimahi("1\n1\n3\n4\n", "m.txt", bin(3)).unwrap();
        let pts: Vec<_> = c.points().collect();
        assert_eq!(pts, vec![(0.0, 12e6), (0.003, 12e6)]);
    }

    /// Found by the trace_5gophers fuzz target: a rate in Pbit/s made the export run for hours.
    #[test]
    fn export_refuses_more_lines_than_the_limit() {
        let s = CapacitySeries::from_points(&[(0.0, 2.7e15)]).unwrap();
        let err = to_mahimahi(&s, 1_000).unwrap_err().to_string();
        assert!(err.contains("at most 64000000 opportunities"), "{err}");
        let s = CapacitySeries::from_points(&[(0.0, 1e10)]).unwrap();
        assert_eq!(to_mahimahi(&s, 1_000).unwrap().lines().count(), 833_333);
    }

    #[test]
    fn export_then_import_keeps_the_mean_rate() {
        let s = CapacitySeries::from_points(&[(0.0, 1e8), (1.3, 2.5e9), (2.0, 0.0), (2.2, 7.77e6), (5.0, 4.4e8)]).unwrap();
        for duration_ms in [10_000u64, 3_333] {
            let text = to_mahimahi(&s, duration_ms).unwrap();
            let back = parse_mahimahi(&text, "rt.txt", bin(10)).unwrap();
            let d = duration_ms as f64 / 1e3;
            assert_eq!(back.period_s(), Some(d));
            let (orig, rt) = (s.mean_rate_bps(d), back.mean_rate_bps(d));
            assert!(rt <= orig * (1.0 + 1e-12) && orig - rt < MAHIMAHI_PACKET_BITS / d, "{orig} vs {rt}");
            assert!(text.ends_with(&format!("\n{duration_ms}\n")));
        }
    }

    #[test]
    fn export_never_delivers_ahead_of_capacity() {
        // 12 Mbit/s = one packet per ms: packet k at ms k.
        let s = CapacitySeries::from_points(&[(0.0, 12e6)]).unwrap();
        assert_eq!(to_mahimahi(&s, 5).unwrap(), "1\n2\n3\n4\n5\n");
        let zero = CapacitySeries::from_points(&[(0.0, 0.0)]).unwrap();
        assert!(to_mahimahi(&zero, 1000).is_err());
    }

    #[test]
    fn bad_inputs() {
        let err = |t: &str| parse_mahimahi(t, "m.txt", bin(1)).unwrap_err().to_string();
        assert_eq!(err(""), "m.txt: line 1: ms = \"\": expected one integer per line (the file is empty)");
        assert_eq!(err("1\n2\nx\n"), "m.txt: line 3: ms = \"x\": expected an integer number of milliseconds ≥ the previous line (2)");
        assert_eq!(err("5\n3\n"), "m.txt: line 2: ms = \"3\": expected an integer number of milliseconds ≥ the previous line (5)");
        assert_eq!(err("-1\n"), "m.txt: line 1: ms = \"-1\": expected an integer number of milliseconds ≥ 0");
        assert_eq!(err("0\n0\n\n"), "m.txt: line 2: ms = \"0\": expected a last line > 0 (it is the period of the trace)");
        // A huge period costs nothing.
        let c = parse_mahimahi("1\n18446744073709551\n", "m.txt", bin(1)).unwrap();
        assert_eq!(c.points().count(), 3);
    }
}
