//! The trace readers of `millinet_channel::traces`: no text makes them panic, and what they
//! accept answers lookups with a number (a rate ≥ 0, an SINR that is not NaN).

use std::num::NonZeroU32;

use millinet_channel::traces::{
    parse_5gophers, parse_capacity_csv, parse_mahimahi, parse_sinr_csv, to_mahimahi, CapacitySeries, Carrier, GapFill, SinrTrace,
};

const FILE: &str = "fuzz.csv";
/// Lookup times, out of order on purpose: the readers keep a hint that must survive going back.
const PROBE_TIMES_S: [f64; 7] = [0.0, 0.5, 1.0, 7.3, 1e6, 0.2, 3.0];

pub fn trace_sinr_csv(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(trace) = parse_sinr_csv(text, FILE) else { return };
    let series: Vec<_> = match &trace {
        SinrTrace::Single(s) => vec![s],
        SinrTrace::PerCell(cells) => cells.iter().map(|(_, s)| s).collect(),
    };
    for s in series {
        let mut hint = 0;
        for t in PROBE_TIMES_S {
            let sinr_db = s.sinr_db_at(t, &mut hint);
            assert!(!sinr_db.is_nan(), "SINR NaN at {t} s");
        }
    }
}

pub fn trace_capacity_csv(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(series) = parse_capacity_csv(text, FILE) else { return };
    check_capacity(&series);
    // What `millinet trace` writes must read back as the same series.
    let again = parse_capacity_csv(&series.to_csv(), FILE).unwrap_or_else(|e| panic!("to_csv wrote an unreadable file: {e}"));
    assert!(again.points().eq(series.points()), "capacity series changed over to_csv");
}

/// First byte: the bin in ms (0 counts as 1); the rest: the trace.
pub fn trace_mahimahi(data: &[u8]) {
    let Some((&bin, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let bin_ms = NonZeroU32::new(u32::from(bin)).unwrap_or(NonZeroU32::MIN);
    let Ok(series) = parse_mahimahi(text, FILE, bin_ms) else { return };
    check_capacity(&series);
}

/// First byte: the carrier (low two bits) and the gap filling (next two); the rest: the CSV.
pub fn trace_5gophers(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let carrier = [Carrier::Sprint, Carrier::TMobile, Carrier::Verizon][usize::from(choice & 3) % 3];
    let gaps = [GapFill::Interpolate, GapFill::Hold, GapFill::Zero][usize::from((choice >> 2) & 3) % 3];
    let Ok(series) = parse_5gophers(text, FILE, carrier, gaps) else { return };
    check_capacity(&series);
}

fn check_capacity(series: &CapacitySeries) {
    let mut hint = 0;
    for t in PROBE_TIMES_S {
        let rate_bps = series.rate_bps_at(t, &mut hint);
        assert!(rate_bps >= 0.0, "rate {rate_bps} bit/s at {t} s");
    }
    let mean_bps = series.mean_rate_bps(2.0);
    assert!(mean_bps >= 0.0, "mean rate {mean_bps} bit/s over 2 s");
    // Converting to Mahimahi may refuse a series (a typed error) but must not panic. Its
    // output grows with rate × duration by design, so the export covers 10 ms (at most
    // 83 000 lines up to 100 Gbit/s) and skips the rates where it would write millions of
    // lines before it starts refusing (MAX_MAHIMAHI_LINES, 7.7·10^13 bit/s over 10 ms).
    let rate_bps = series.mean_rate_bps(0.01);
    if rate_bps <= 1e11 || rate_bps > 1e14 {
        let _ = to_mahimahi(series, 10);
    }
}
