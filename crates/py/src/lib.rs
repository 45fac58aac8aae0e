//! Python bindings: the `millinet._core` extension module.

use std::path::PathBuf;

mod trace;

use millinet_engine::{ColumnData, Error, RunOptions};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(_core, ScenarioError, PyValueError, "A scenario, override or trace is invalid.");

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Scenario(m) => ScenarioError::new_err(m),
        Error::Io(m) => PyOSError::new_err(m),
    }
}

/// Resolves a scenario file with overrides; returns the resolved TOML text.
#[pyfunction]
#[pyo3(signature = (path, overrides=Vec::new(), seed=None))]
fn resolve(py: Python<'_>, path: PathBuf, overrides: Vec<String>, seed: Option<u64>) -> PyResult<String> {
    py.allow_threads(|| millinet_engine::resolve_file(&path, &overrides, seed)).map_err(to_py_err)
}

/// Runs a scenario file. Returns a dict with `summary_json` (str), `scenario_toml` (str)
/// and `tables`: {table: {column: (dtype, little-endian bytes)}} with dtype in
/// {"f64", "u32", "u64"}. `progress(sim_time_s, duration_s)` is called now and then.
#[pyfunction]
#[pyo3(signature = (path, seed=None, overrides=Vec::new(), pcap_dir=None, pcap_nodes=Vec::new(), progress=None))]
fn run<'py>(
    py: Python<'py>,
    path: PathBuf,
    seed: Option<u64>,
    overrides: Vec<String>,
    pcap_dir: Option<PathBuf>,
    pcap_nodes: Vec<String>,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = RunOptions { seed, overrides, pcap_dir, pcap_nodes };
    let mut callback_error: Option<PyErr> = None;
    let mut report = |sim_s: f64, total_s: f64| {
        if let (Some(cb), None) = (&progress, &callback_error) {
            if let Err(e) = cb.call1(py, (sim_s, total_s)) {
                callback_error = Some(e);
            }
        }
    };
    let output = millinet_engine::run_file(&path, &opts, &mut report).map_err(to_py_err)?;
    if let Some(e) = callback_error {
        return Err(e);
    }
    let result = PyDict::new(py);
    result.set_item("summary_json", output.summary.to_string())?;
    result.set_item("scenario_toml", output.resolved_toml)?;
    let tables = PyDict::new(py);
    for table in output.tables {
        let columns = PyDict::new(py);
        for column in table.columns {
            let (dtype, bytes): (&str, Vec<u8>) = match column.data {
                ColumnData::F64(v) => ("f64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                ColumnData::U32(v) => ("u32", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                ColumnData::U64(v) => ("u64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            };
            columns.set_item(column.name, (dtype, PyBytes::new(py, &bytes)))?;
        }
        tables.set_item(table.name, columns)?;
    }
    result.set_item("tables", tables)?;
    Ok(result)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    trace::register(m)?;
    Ok(())
}
