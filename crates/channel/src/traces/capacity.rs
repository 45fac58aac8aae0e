//! Capacity traces: CSV `time_s,rate_bps`, a step function (each row's rate
//! holds until the next row; the first rate before the first row, the last
//! rate after the last row). Series imported from Mahimahi repeat with a
//! period instead of holding their last value.

use std::fmt::Write as _;
use std::path::Path;

use super::csv::{number, rows};
use super::error::{read, TraceError};
use super::locate;
use crate::error::ConfigError;

/// A capacity (achievable rate) time series.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacitySeries {
    times_s: Vec<f64>,
    rates_bps: Vec<f64>,
    /// `Some(P)`: the series covers [0, P) and repeats.
    period_s: Option<f64>,
}

impl CapacitySeries {
    /// A step series from (time_s, rate_bps) points: non-decreasing finite
    /// times, finite rates ≥ 0.
    pub fn from_points(points: &[(f64, f64)]) -> Result<Self, ConfigError> {
        if points.is_empty() {
            return Err(ConfigError::new("capacity_series", points, "at least one point"));
        }
        let mut prev = f64::NEG_INFINITY;
        for (i, &(t, r)) in points.iter().enumerate() {
            if !(t.is_finite() && t >= prev.max(0.0)) {
                return Err(ConfigError::new(format!("capacity_series[{i}].time_s"), t, "a finite time ≥ 0 and ≥ the previous one"));
            }
            if !(r.is_finite() && r >= 0.0) {
                return Err(ConfigError::new(format!("capacity_series[{i}].rate_bps"), r, "a finite rate ≥ 0"));
            }
            prev = t;
        }
        Ok(Self::from_valid(points.iter().map(|p| p.0).collect(), points.iter().map(|p| p.1).collect(), None))
    }

    /// Build from already validated columns.
    pub(crate) fn from_valid(times_s: Vec<f64>, rates_bps: Vec<f64>, period_s: Option<f64>) -> Self {
        CapacitySeries { times_s, rates_bps, period_s }
    }

    /// The rows as (time_s, rate_bps).
    pub fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.times_s.iter().copied().zip(self.rates_bps.iter().copied())
    }

    /// The repetition period of a Mahimahi-derived series.
    pub fn period_s(&self) -> Option<f64> {
        self.period_s
    }

    /// Rate at `t_s`. Keep one `hint` per reader (start at 0) for O(1)
    /// amortised lookups at non-decreasing times.
    pub fn rate_bps_at(&self, t_s: f64, hint: &mut usize) -> f64 {
        let u = match self.period_s {
            Some(p) => t_s - (t_s / p).floor() * p,
            None => t_s,
        };
        self.rates_bps[locate(&self.times_s, u, hint)]
    }

    /// The constant-rate pieces (start_s, end_s, rate_bps) of the series
    /// from t = 0 on, in order; the last piece of an aperiodic series ends at
    /// +∞, a periodic series never ends (periodic series start at t = 0).
    pub(crate) fn segments(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        let n = self.times_s.len();
        let (mut i, mut base) = (0usize, 0.0f64);
        std::iter::from_fn(move || {
            let start = if i == 0 { base } else { base + self.times_s[i] };
            let rate = self.rates_bps[i];
            let end = if i + 1 < n {
                i += 1;
                base + self.times_s[i]
            } else if let Some(p) = self.period_s {
                i = 0;
                base += p;
                base
            } else if start == f64::INFINITY {
                return None;
            } else {
                base = f64::INFINITY;
                f64::INFINITY
            };
            Some((start, end, rate))
        })
    }

    /// Mean rate over [0, duration_s), bit/s.
    pub fn mean_rate_bps(&self, duration_s: f64) -> f64 {
        let bits: f64 = self
            .segments()
            .take_while(|&(start, _, _)| start < duration_s)
            .map(|(start, end, rate)| rate * (end.min(duration_s) - start))
            .sum();
        bits / duration_s
    }

    /// The series as a capacity CSV (`time_s,rate_bps`). A periodic series
    /// is written for one period (the CSV format has no repetition).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_s,rate_bps\n");
        for (t, r) in self.points() {
            // `{}` prints the shortest text that parses back to the same f64.
            let _ = writeln!(out, "{t},{r}");
        }
        out
    }
}

/// Parse a capacity CSV: times ≥ 0 and non-decreasing, rates ≥ 0.
pub fn parse_capacity_csv(text: &str, file: &str) -> Result<CapacitySeries, TraceError> {
    let (_, data) = rows(text, file, "\"time_s,rate_bps\"", |h| h == ["time_s", "rate_bps"])?;
    let (mut times, mut rates) = (Vec::with_capacity(data.len()), Vec::with_capacity(data.len()));
    for r in &data {
        let t = match times.last() {
            None => number(file, r.line, "time_s", r.fields[0], 0.0, "≥ 0")?,
            Some(&prev) => number(file, r.line, "time_s", r.fields[0], prev, &format!("≥ the previous time {prev}"))?,
        };
        times.push(t);
        rates.push(number(file, r.line, "rate_bps", r.fields[1], 0.0, "≥ 0 (bit/s)")?);
    }
    Ok(CapacitySeries::from_valid(times, rates, None))
}

/// Read and parse a capacity CSV file.
pub fn load_capacity_csv(path: &Path) -> Result<CapacitySeries, TraceError> {
    parse_capacity_csv(&read(path)?, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_holds() {
        let c = parse_capacity_csv("time_s,rate_bps\n1,100\n2,300\n", "c.csv").unwrap();
        let mut h = 0;
        assert_eq!(c.rate_bps_at(0.0, &mut h), 100.0);
        assert_eq!(c.rate_bps_at(1.999, &mut h), 100.0);
        assert_eq!(c.rate_bps_at(2.0, &mut h), 300.0);
        assert_eq!(c.rate_bps_at(50.0, &mut h), 300.0);
        assert_eq!(c.mean_rate_bps(4.0), 200.0);
        let segs: Vec<_> = c.segments().collect();
        assert_eq!(segs, vec![(0.0, 2.0, 100.0), (2.0, f64::INFINITY, 300.0)]);
        assert_eq!(parse_capacity_csv(&c.to_csv(), "again.csv").unwrap(), c);
    }

    #[test]
    fn periodic_repeats() {
        let c = CapacitySeries::from_valid(vec![0.0, 0.5], vec![10.0, 30.0], Some(1.0));
        let mut h = 0;
        assert_eq!(c.rate_bps_at(0.25, &mut h), 10.0);
        assert_eq!(c.rate_bps_at(1.75, &mut h), 30.0);
        assert_eq!(c.rate_bps_at(2.1, &mut h), 10.0);
        let segs: Vec<_> = c.segments().take(3).collect();
        assert_eq!(segs, vec![(0.0, 0.5, 10.0), (0.5, 1.0, 30.0), (1.0, 1.5, 10.0)]);
        assert!((c.mean_rate_bps(10.0) - 20.0).abs() < 1e-9);
    }

    #[test]
    fn bad_inputs() {
        let err = |text: &str| parse_capacity_csv(text, "cap.csv").unwrap_err().to_string();
        assert_eq!(err("time_s,rate_bps\n0,5\n1,-3\n"), "cap.csv: line 3: rate_bps = \"-3\": expected a number ≥ 0 (bit/s)");
        assert_eq!(err("time_s,rate_bps\n0,5\n1,x\n"), "cap.csv: line 3: rate_bps = \"x\": expected a number ≥ 0 (bit/s)");
        assert_eq!(
            err("time_s,rate_bps\n3,5\n# note\n\n1,4\n"),
            "cap.csv: line 5: time_s = \"1\": expected a number ≥ the previous time 3"
        );
        assert_eq!(err("time_s\n0\n"), "cap.csv: line 1: header = \"time_s\": expected \"time_s,rate_bps\"");
        assert_eq!(
            err("time_s,rate_bps\n0,1,2\n"),
            "cap.csv: line 2: row = \"0,1,2\": expected 2 comma-separated columns (time_s,rate_bps)"
        );
        assert_eq!(err("\n\n"), "cap.csv: line 1: header = \"\": expected \"time_s,rate_bps\" (the file is empty)");
        assert!(CapacitySeries::from_points(&[(0.0, -1.0)]).is_err());
        assert!(CapacitySeries::from_points(&[(0.0, 1.0), (2.0, 0.0)]).is_ok());
    }
}
