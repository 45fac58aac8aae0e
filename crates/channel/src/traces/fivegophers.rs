//! Converter of the 5Gophers car-driving CSVs (Narayanan et al., "A First
//! Look at Commercial 5G Performance on Smartphones", WWW 2020; CC BY 4.0)
//! to capacity series.
//!
//! Columns: `protocol,num_tcp_conn,seq_num,Sprint_throughput_mbps,
//! TMobile_throughput_mbps,Verizon_throughput_mbps` (matched by name, any
//! order, other columns ignored), one row per second of the drive. Row
//! `seq_num = k` becomes the step of rate `throughput × 10⁶` bit/s over
//! [k − k₀, k − k₀ + 1) s, where k₀ is the first row's `seq_num`.

use std::path::Path;

use super::capacity::CapacitySeries;
use super::csv::{number, rows};
use super::error::{read, TraceError};

/// The carrier whose throughput column is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    Sprint,
    TMobile,
    /// Verizon's 28/39 GHz mmWave network.
    Verizon,
}

impl Carrier {
    pub fn column(self) -> &'static str {
        match self {
            Carrier::Sprint => "Sprint_throughput_mbps",
            Carrier::TMobile => "TMobile_throughput_mbps",
            Carrier::Verizon => "Verizon_throughput_mbps",
        }
    }
}

/// What the missing seconds of a gap in `seq_num` become. The data set does
/// not say why a second is missing (the row is absent for all carriers at
/// once, so it is a logging gap rather than a measured zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GapFill {
    /// Default: each missing second gets the linear interpolation between the
    /// seconds around the gap — the least biased guess of a capacity nobody
    /// measured, with no invented outage and no invented plateau.
    #[default]
    Interpolate,
    /// The last measured rate holds through the gap.
    Hold,
    /// The missing seconds have rate 0: a pessimistic reading as an outage.
    Zero,
}

/// Longest accepted jump of `seq_num`: one day. A larger jump is a corrupt
/// row rather than a gap in a drive, and filling it would be unbounded work.
const MAX_GAP_S: u64 = 86_400;

/// Convert the `carrier` column of a 5Gophers CSV to a capacity series.
/// `seq_num` must be an integer ≥ 0 increasing from row to row; throughputs
/// must be numbers ≥ 0.
pub fn parse_5gophers(text: &str, file: &str, carrier: Carrier, gaps: GapFill) -> Result<CapacitySeries, TraceError> {
    let col = carrier.column();
    let expected = format!("a CSV header with columns seq_num and {col}");
    let (header, data) = rows(text, file, &expected, |h| h.contains(&"seq_num") && h.contains(&col))?;
    let seq_i = header.iter().position(|&h| h == "seq_num").unwrap_or(0);
    let rate_i = header.iter().position(|&h| h == col).unwrap_or(0);
    let (mut times, mut rates): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut first_prev: Option<(u64, u64, f64)> = None; // (k₀, previous k, previous rate)
    for r in &data {
        let raw = r.fields[seq_i];
        let k = match (raw.parse::<u64>(), first_prev) {
            (Ok(k), Some((_, prev, _))) if k > prev && k - prev <= MAX_GAP_S => k,
            (Ok(k), None) => k,
            (_, Some((_, prev, _))) => {
                return Err(TraceError::bad(
                    file,
                    r.line,
                    "seq_num",
                    raw,
                    format!("an integer > the previous seq_num {prev} and at most {MAX_GAP_S} s after it"),
                ))
            }
            (Err(_), None) => return Err(TraceError::bad(file, r.line, "seq_num", raw, "an integer ≥ 0")),
        };
        let rate = number(file, r.line, col, r.fields[rate_i], 0.0, "≥ 0 (Mbit/s)")? * 1e6;
        let k0 = first_prev.map_or(k, |(k0, _, _)| k0);
        if let Some((_, prev, prev_rate)) = first_prev {
            let missing = k - prev - 1;
            match gaps {
                GapFill::Hold => {}
                GapFill::Zero if missing > 0 => {
                    times.push((prev + 1 - k0) as f64);
                    rates.push(0.0);
                }
                GapFill::Zero => {}
                GapFill::Interpolate => {
                    for j in 1..=missing {
                        times.push((prev + j - k0) as f64);
                        rates.push(prev_rate + (rate - prev_rate) * j as f64 / (missing + 1) as f64);
                    }
                }
            }
        }
        times.push((k - k0) as f64);
        rates.push(rate);
        first_prev = Some((k0, k, rate));
    }
    Ok(CapacitySeries::from_valid(times, rates, None))
}

/// Read and convert a 5Gophers CSV file.
pub fn load_5gophers(path: &Path, carrier: Carrier, gaps: GapFill) -> Result<CapacitySeries, TraceError> {
    parse_5gophers(&read(path)?, &path.display().to_string(), carrier, gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "protocol,num_tcp_conn,seq_num,Sprint_throughput_mbps,TMobile_throughput_mbps,Verizon_throughput_mbps\n";

    fn sample() -> String {
        format!("{HEAD}TCP,8,3,1,2,100\nTCP,8,4,1,2,200\nTCP,8,8,1,2,600\n")
    }

    #[test]
    fn gap_policies() {
        let pts = |g| parse_5gophers(&sample(), "g.csv", Carrier::Verizon, g).unwrap().points().collect::<Vec<_>>();
        assert_eq!(pts(GapFill::Hold), vec![(0.0, 1e8), (1.0, 2e8), (5.0, 6e8)]);
        assert_eq!(pts(GapFill::Zero), vec![(0.0, 1e8), (1.0, 2e8), (2.0, 0.0), (5.0, 6e8)]);
        assert_eq!(pts(GapFill::Interpolate), vec![(0.0, 1e8), (1.0, 2e8), (2.0, 3e8), (3.0, 4e8), (4.0, 5e8), (5.0, 6e8)]);
        let sprint = parse_5gophers(&sample(), "g.csv", Carrier::Sprint, GapFill::Hold).unwrap();
        assert_eq!(sprint.rate_bps_at(0.5, &mut 0), 1e6);
    }

    #[test]
    fn bad_inputs() {
        let err = |t: &str| parse_5gophers(t, "g.csv", Carrier::Verizon, GapFill::default()).unwrap_err().to_string();
        assert_eq!(
            err("seq_num,Sprint_throughput_mbps\n0,1\n"),
            "g.csv: line 1: header = \"seq_num,Sprint_throughput_mbps\": expected a CSV header with columns seq_num and Verizon_throughput_mbps"
        );
        assert_eq!(
            err(&format!("{HEAD}TCP,8,3,1,2,100\nTCP,8,3,1,2,100\n")),
            "g.csv: line 3: seq_num = \"3\": expected an integer > the previous seq_num 3 and at most 86400 s after it"
        );
        assert_eq!(err(&format!("{HEAD}TCP,8,3,1,2,\n")), "g.csv: line 2: Verizon_throughput_mbps = \"\": expected a number ≥ 0 (Mbit/s)");
        assert_eq!(err(&format!("{HEAD}TCP,8,3,1,2\n")).split(": expected").next().unwrap(), "g.csv: line 2: row = \"TCP,8,3,1,2\"");
        assert_eq!(err(&format!("{HEAD}TCP,8,1.5,1,2,3\n")), "g.csv: line 2: seq_num = \"1.5\": expected an integer ≥ 0");
    }
}
