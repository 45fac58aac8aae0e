//! Trace conversions for `millinet trace` (docs/models/channel.md §10): the channel crate reads and
//! checks every file; these functions return the converted text for the caller to write.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use millinet_channel::traces::{
    load_5gophers, load_capacity_csv, load_mahimahi, to_mahimahi, CapacitySeries, Carrier, GapFill, TraceError,
};
use pyo3::prelude::*;

use crate::ScenarioError;

fn to_py_err(e: TraceError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// A capacity CSV (`time_s,rate_bps`) as a Mahimahi trace of period `duration_s`
/// (default: up to the last row plus one more step as long as the last interval).
#[pyfunction]
#[pyo3(signature = (path, duration_s=None))]
fn mahimahi_from_capacity_csv(path: PathBuf, duration_s: Option<f64>) -> PyResult<String> {
    let series = load_capacity_csv(&path).map_err(to_py_err)?;
    let file = path.display();
    let duration_s = match duration_s.or_else(|| default_duration_s(&series)) {
        Some(d) if d.is_finite() && d > 0.0 => d,
        Some(d) => return Err(ScenarioError::new_err(format!("{file}: duration {d} s: expected a finite duration > 0"))),
        None => return Err(ScenarioError::new_err(format!("{file}: all rows have one time, so the duration must be given"))),
    };
    to_mahimahi(&series, (duration_s * 1e3).round() as u64).map_err(|e| ScenarioError::new_err(format!("{file}: {e}")))
}

/// The end of the last row's step if it lasts as long as the last interval between rows.
fn default_duration_s(series: &CapacitySeries) -> Option<f64> {
    let times: Vec<f64> = series.points().map(|(t, _)| t).collect();
    let last_step = times.windows(2).rev().map(|w| w[1] - w[0]).find(|&d| d > 0.0)?;
    Some(times[times.len() - 1] + last_step)
}

/// A Mahimahi trace as a capacity CSV of one period, opportunities counted in bins of `bin_ms`.
#[pyfunction]
#[pyo3(signature = (path, bin_ms=10))]
fn capacity_csv_from_mahimahi(path: PathBuf, bin_ms: u32) -> PyResult<String> {
    let bin = NonZeroU32::new(bin_ms).ok_or_else(|| ScenarioError::new_err("bin_ms = 0: expected an integer ≥ 1"))?;
    let series = load_mahimahi(&path, bin).map_err(to_py_err)?;
    let period_s = series.period_s().unwrap_or(f64::INFINITY);
    Ok(format!("# Mahimahi trace {}, {bin_ms} ms bins; one period of {period_s} s (it repeats)\n{}", file_name(&path), series.to_csv()))
}

/// A 5Gophers drive CSV as a capacity CSV of one carrier's throughput, with the
/// dataset's attribution (CC BY 4.0) in a comment.
#[pyfunction]
#[pyo3(signature = (path, carrier="verizon", gaps="interpolate"))]
fn capacity_csv_from_5gophers(path: PathBuf, carrier: &str, gaps: &str) -> PyResult<String> {
    let which = match carrier {
        "verizon" => Carrier::Verizon,
        "tmobile" => Carrier::TMobile,
        "sprint" => Carrier::Sprint,
        _ => return Err(ScenarioError::new_err(format!("carrier = {carrier:?}: expected verizon, tmobile or sprint"))),
    };
    let fill = match gaps {
        "interpolate" => GapFill::Interpolate,
        "hold" => GapFill::Hold,
        "zero" => GapFill::Zero,
        _ => return Err(ScenarioError::new_err(format!("gaps = {gaps:?}: expected interpolate, hold or zero"))),
    };
    let series = load_5gophers(&path, which, fill).map_err(to_py_err)?;
    Ok(format!(
        "# {} from {}, missing seconds: {gaps}\n\
         # 5Gophers 1.0, A. Narayanan et al., \"A First Look at Commercial 5G Performance on Smartphones\", WWW 2020\n\
         # Licensed under CC BY 4.0 (http://creativecommons.org/licenses/by/4.0/)\n{}",
        which.column(),
        file_name(&path),
        series.to_csv()
    ))
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Adds the trace functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mahimahi_from_capacity_csv, m)?)?;
    m.add_function(wrap_pyfunction!(capacity_csv_from_mahimahi, m)?)?;
    m.add_function(wrap_pyfunction!(capacity_csv_from_5gophers, m)?)?;
    Ok(())
}
