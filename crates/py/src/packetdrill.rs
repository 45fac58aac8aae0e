//! `millinet packetdrill` (docs/validation.md, "packetdrill scripts"): the packetdrill crate
//! loads and runs each script; this returns one outcome per script for the command to print.

use std::path::{Path, PathBuf};

use millinet_packetdrill::{load, run, RunError, RunOptions};
use pyo3::prelude::*;

use crate::ScenarioError;

/// Runs each script against a fresh millinet TCP endpoint. Returns one `(status, message)`
/// per script: `("pass", summary)`, `("fail", first mismatch with its line)` or
/// `("error", why the script is unreadable or not supported, with line and column)`. A bad
/// `cc` or `tolerance_ms` raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (paths, cc="cubic", tolerance_ms=None))]
pub fn packetdrill(py: Python<'_>, paths: Vec<PathBuf>, cc: &str, tolerance_ms: Option<f64>) -> PyResult<Vec<(&'static str, String)>> {
    let options = RunOptions::new(cc, tolerance_ms).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(py.allow_threads(|| paths.iter().map(|path| outcome(path, &options)).collect()))
}

fn outcome(path: &Path, options: &RunOptions) -> (&'static str, String) {
    let script = match load(path) {
        Ok(script) => script,
        Err(e) => return ("error", e.to_string()),
    };
    match run(&script, options) {
        Ok(report) => ("pass", format!("{} events, {} outbound packets checked", report.events, report.packets_checked)),
        Err(RunError::Failed(failure)) => ("fail", failure.to_string()),
        Err(RunError::Script(e)) => ("error", e.to_string()),
    }
}
