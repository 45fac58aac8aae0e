//! Python bindings: the `millinet._core` extension module.

use std::path::PathBuf;

mod calibration;
mod emulate;
mod packetdrill;
mod trace;

use millinet_engine::{ColumnData, Error, RunOptions, Table};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(_core, ScenarioError, PyValueError, "A scenario, override or trace is invalid.");

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Scenario(e) => ScenarioError::new_err(e.to_string()),
        Error::Io(m) => PyOSError::new_err(m),
    }
}

/// Resolves a scenario file with overrides; returns the resolved TOML text.
#[pyfunction]
#[pyo3(signature = (path, overrides=Vec::new(), seed=None))]
fn resolve(py: Python<'_>, path: PathBuf, overrides: Vec<String>, seed: Option<u64>) -> PyResult<String> {
    py.allow_threads(|| millinet_engine::resolve_file(&path, &overrides, seed)).map_err(to_py_err)
}

/// One chunk of tables as {table: {column: (dtype, little-endian bytes)}}.
pub(crate) fn chunk_to_py<'py>(py: Python<'py>, tables: Vec<Table>) -> PyResult<Bound<'py, PyDict>> {
    let result = PyDict::new(py);
    for table in tables {
        let columns = PyDict::new(py);
        for column in table.columns {
            let (dtype, bytes): (&str, Vec<u8>) = match column.data {
                ColumnData::F64(v) => ("f64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                ColumnData::U32(v) => ("u32", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                ColumnData::U64(v) => ("u64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            };
            columns.set_item(column.name, (dtype, PyBytes::new(py, &bytes)))?;
        }
        result.set_item(table.name, columns)?;
    }
    Ok(result)
}

/// Runs a scenario file. Returns a dict with `summary_json` (str); `resolve` gives the
/// resolved scenario of the same arguments. The time series go to `series(chunk)` as the run proceeds, each chunk
/// {table: {column: (dtype, little-endian bytes)}} with dtype in {"f64", "u32", "u64"}
/// and every table in every chunk. `progress(sim_time_s, duration_s)` is called now and then.
#[pyfunction]
#[pyo3(signature = (path, series, seed=None, overrides=Vec::new(), pcap_dir=None, pcap_nodes=Vec::new(), progress=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    path: PathBuf,
    series: PyObject,
    seed: Option<u64>,
    overrides: Vec<String>,
    pcap_dir: Option<PathBuf>,
    pcap_nodes: Vec<String>,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = RunOptions { seed, overrides, pcap_dir, pcap_nodes };
    // The first error a callback raises is re-raised after the run; later calls are skipped.
    let callback_error: std::cell::RefCell<Option<PyErr>> = std::cell::RefCell::new(None);
    let mut report = |sim_s: f64, total_s: f64| {
        if let (Some(cb), None) = (&progress, &*callback_error.borrow()) {
            if let Err(e) = cb.call1(py, (sim_s, total_s)) {
                *callback_error.borrow_mut() = Some(e);
            }
        }
    };
    let mut sink = |tables: Vec<Table>| {
        if callback_error.borrow().is_some() {
            return;
        }
        if let Err(e) = chunk_to_py(py, tables).and_then(|chunk| series.call1(py, (chunk,))) {
            *callback_error.borrow_mut() = Some(e);
        }
    };
    let output = millinet_engine::run_file_streaming(&path, &opts, &mut report, &mut sink).map_err(to_py_err)?;
    if let Some(e) = callback_error.into_inner() {
        return Err(e);
    }
    let result = PyDict::new(py);
    result.set_item("summary_json", output.summary.to_string())?;
    Ok(result)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate_cleanup, m)?)?;
    m.add_function(wrap_pyfunction!(packetdrill::packetdrill, m)?)?;
    trace::register(m)?;
    calibration::register(m)?;
    Ok(())
}
