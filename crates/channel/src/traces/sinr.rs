//! SINR traces: CSV `time_s,sinr_db[,cell]`, linear interpolation between
//! rows, first value held before the first row and last value held after
//! the last one. `-inf` is accepted as an SINR (an outage in the trace);
//! next to it the series steps instead of interpolating.

use std::path::Path;

use super::csv::{number, rows};
use super::error::{read, TraceError};
use super::locate;
use crate::error::ConfigError;

/// One SINR time series, sorted by time.
#[derive(Clone, Debug, PartialEq)]
pub struct SinrSeries {
    times_s: Vec<f64>,
    sinr_db: Vec<f64>,
}

impl SinrSeries {
    /// A series from (time_s, sinr_db) points with non-decreasing finite
    /// times and SINRs that are finite or −∞.
    pub fn from_points(points: &[(f64, f64)]) -> Result<Self, ConfigError> {
        if points.is_empty() {
            return Err(ConfigError::new("sinr_series", points, "at least one point"));
        }
        let mut prev = f64::NEG_INFINITY;
        for (i, &(t, v)) in points.iter().enumerate() {
            if !(t.is_finite() && t >= prev.max(0.0)) {
                return Err(ConfigError::new(format!("sinr_series[{i}].time_s"), t, "a finite time ≥ 0 and ≥ the previous one"));
            }
            if v.is_nan() || v == f64::INFINITY {
                return Err(ConfigError::new(format!("sinr_series[{i}].sinr_db"), v, "a finite number or -inf"));
            }
            prev = t;
        }
        Ok(SinrSeries { times_s: points.iter().map(|p| p.0).collect(), sinr_db: points.iter().map(|p| p.1).collect() })
    }

    /// SINR at `t_s`. Keep one `hint` per reader (start at 0): for
    /// non-decreasing times the lookup is O(1) amortised.
    pub fn sinr_db_at(&self, t_s: f64, hint: &mut usize) -> f64 {
        let i = locate(&self.times_s, t_s, hint);
        let (t0, v0) = (self.times_s[i], self.sinr_db[i]);
        if t_s <= t0 || i + 1 == self.times_s.len() {
            return v0;
        }
        let (t1, v1) = (self.times_s[i + 1], self.sinr_db[i + 1]);
        if v0 == f64::NEG_INFINITY || v1 == f64::NEG_INFINITY {
            return v0;
        }
        v0 + (v1 - v0) * (t_s - t0) / (t1 - t0)
    }
}

/// A parsed SINR trace file: one series, or one per cell when the file has
/// a `cell` column (cells in order of first appearance).
#[derive(Clone, Debug, PartialEq)]
pub enum SinrTrace {
    Single(SinrSeries),
    PerCell(Vec<(String, SinrSeries)>),
}

impl SinrTrace {
    /// The series of `cell` in a per-cell file.
    pub fn cell(&self, cell: &str) -> Option<&SinrSeries> {
        match self {
            SinrTrace::Single(_) => None,
            SinrTrace::PerCell(v) => v.iter().find(|(c, _)| c == cell).map(|(_, s)| s),
        }
    }

    /// The series of a file without a `cell` column.
    pub fn single(&self) -> Option<&SinrSeries> {
        match self {
            SinrTrace::Single(s) => Some(s),
            SinrTrace::PerCell(_) => None,
        }
    }
}

const HEADER: &str = "\"time_s,sinr_db\" or \"time_s,sinr_db,cell\"";

/// Parse an SINR CSV. Times must be ≥ 0 and non-decreasing within each cell.
pub fn parse_sinr_csv(text: &str, file: &str) -> Result<SinrTrace, TraceError> {
    let (header, data) = rows(text, file, HEADER, |h| h == ["time_s", "sinr_db"] || h == ["time_s", "sinr_db", "cell"])?;
    let with_cell = header.len() == 3;
    // (cell, times, values), in order of first appearance.
    let mut cells: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for r in &data {
        let cell = if with_cell { r.fields[2] } else { "" };
        if with_cell && cell.is_empty() {
            return Err(TraceError::bad(file, r.line, "cell", cell, "a non-empty cell name"));
        }
        let idx = match cells.iter().position(|c| c.0 == cell) {
            Some(i) => i,
            None => {
                cells.push((cell.to_string(), Vec::new(), Vec::new()));
                cells.len() - 1
            }
        };
        let (_, times, values) = &mut cells[idx];
        let t = match times.last() {
            None => number(file, r.line, "time_s", r.fields[0], 0.0, "≥ 0")?,
            Some(&prev) => {
                let what = if with_cell {
                    format!("≥ the previous time {prev} of cell {cell}")
                } else {
                    format!("≥ the previous time {prev}")
                };
                number(file, r.line, "time_s", r.fields[0], prev, &what)?
            }
        };
        let v = match r.fields[1] {
            "-inf" => f64::NEG_INFINITY,
            s => number(file, r.line, "sinr_db", s, f64::MIN, "(dB, finite, or -inf for an outage)")?,
        };
        times.push(t);
        values.push(v);
    }
    let mut series = cells.into_iter().map(|(c, t, v)| (c, SinrSeries { times_s: t, sinr_db: v }));
    Ok(if with_cell { SinrTrace::PerCell(series.collect()) } else { SinrTrace::Single(series.next().expect("rows() returns ≥ 1 row").1) })
}

/// Read and parse an SINR CSV file.
pub fn load_sinr_csv(path: &Path) -> Result<SinrTrace, TraceError> {
    parse_sinr_csv(&read(path)?, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_and_holds() {
        let t = parse_sinr_csv("time_s,sinr_db\n1,10\n2,20\n2,0\n4,-inf\n5,7\n", "s.csv").unwrap();
        let s = t.single().unwrap();
        let mut h = 0;
        let at = |t: f64, h: &mut usize| s.sinr_db_at(t, h);
        assert_eq!(at(0.0, &mut h), 10.0);
        assert_eq!(at(1.5, &mut h), 15.0);
        assert_eq!(at(2.0, &mut h), 0.0);
        assert_eq!(at(3.0, &mut h), 0.0); // next to −∞: step
        assert_eq!(at(4.5, &mut h), f64::NEG_INFINITY);
        assert_eq!(at(9.0, &mut h), 7.0);
        assert_eq!(at(1.25, &mut h), 12.5);
    }

    #[test]
    fn per_cell_file() {
        let text = "time_s,sinr_db,cell\n0,1,a\n0,5,b\n1,3,a\n0.5,6,b\n";
        let t = parse_sinr_csv(text, "c.csv").unwrap();
        assert_eq!(t.cell("a").unwrap().sinr_db_at(0.5, &mut 0), 2.0);
        assert_eq!(t.cell("b").unwrap().sinr_db_at(1.0, &mut 0), 6.0);
        assert!(t.cell("c").is_none() && t.single().is_none());
        let e = parse_sinr_csv("time_s,sinr_db,cell\n0,1,a\n2,1,b\n1,1,a\n1,1,b\n", "c.csv").unwrap_err();
        assert_eq!(e.to_string(), "c.csv: line 5: time_s = \"1\": expected a number ≥ the previous time 2 of cell b");
    }

    #[test]
    fn bad_inputs() {
        let err = |text: &str| parse_sinr_csv(text, "trace.csv").unwrap_err().to_string();
        assert_eq!(
            err("time_s,sinr_db\n0,1\n1,2\n2,3\n3,4\n4,5\nabc,3\n"),
            "trace.csv: line 7: time_s = \"abc\": expected a number ≥ the previous time 4"
        );
        assert_eq!(err("time_s,sinr_db\n1,1\n0.5,1\n"), "trace.csv: line 3: time_s = \"0.5\": expected a number ≥ the previous time 1");
        assert_eq!(err(""), "trace.csv: line 1: header = \"\": expected \"time_s,sinr_db\" or \"time_s,sinr_db,cell\" (the file is empty)");
        assert_eq!(
            err("time,sinr\n0,1\n"),
            "trace.csv: line 1: header = \"time,sinr\": expected \"time_s,sinr_db\" or \"time_s,sinr_db,cell\""
        );
        assert_eq!(err("time_s,sinr_db\n0,1\n2\n"), "trace.csv: line 3: row = \"2\": expected 2 comma-separated columns (time_s,sinr_db)");
        assert_eq!(
            err("time_s,sinr_db\n0,nan\n"),
            "trace.csv: line 2: sinr_db = \"nan\": expected a number (dB, finite, or -inf for an outage)"
        );
        assert_eq!(err("time_s,sinr_db\n-1,3\n"), "trace.csv: line 2: time_s = \"-1\": expected a number ≥ 0");
        assert_eq!(err("time_s,sinr_db\n"), "trace.csv: line 2: row = \"\": expected at least one data row after the header");
        assert_eq!(err("time_s,sinr_db,cell\n0,1,\n"), "trace.csv: line 2: cell = \"\": expected a non-empty cell name");
    }

    #[test]
    fn from_points_validates() {
        assert!(SinrSeries::from_points(&[]).is_err());
        assert!(SinrSeries::from_points(&[(1.0, 0.0), (0.0, 0.0)]).is_err());
        assert!(SinrSeries::from_points(&[(0.0, f64::NAN)]).is_err());
        assert!(SinrSeries::from_points(&[(0.0, f64::NEG_INFINITY), (1.0, 3.0)]).is_ok());
    }

    #[test]
    fn load_names_the_missing_path() {
        let e = load_sinr_csv(Path::new("/nonexistent/x.csv")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.csv: cannot read the trace: "), "{e}");
    }
}
