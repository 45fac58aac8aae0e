//! `_core.emulate`: an emulation (the emu crate) with its measurements in the tables the
//! network layer writes for both drivers, so Python writes both kinds of run directory alike.

use std::path::PathBuf;

use millinet_emu::programs::Programs;
use millinet_emu::{emulate_file, Client, EmuError, EmulateOptions};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{chunk_to_py, ScenarioError};

fn to_py_err(e: EmuError) -> PyErr {
    match e {
        EmuError::Scenario(_) | EmuError::Unsupported { .. } => ScenarioError::new_err(e.to_string()),
        EmuError::System(m) => PyOSError::new_err(m),
    }
}

/// Emulates a scenario file with the `client` endpoints ("own" or "iperf3") or, when
/// `command` is given, the user's own programs instead of the scenario's flows (`command` in
/// the UE's namespace, the shell line `server` in the server's), publishing the
/// UE's telemetry to the Unix datagram socket `telemetry_socket` if given, capturing `<node>.pcap` into `pcap_dir` for each of `pcap_nodes`.
/// Returns {"summary_json": str, "series": chunk, "exit_status": the command's or None} (the chunk as
/// `run` streams them). `progress(elapsed_s, duration_s)` is called every 100 ms (10 ms beside a command); a pending
/// KeyboardInterrupt stops the emulation, which cleans up and raises it.
#[pyfunction]
#[pyo3(signature = (path, seed=None, overrides=Vec::new(), pcap_dir=None, pcap_nodes=Vec::new(), client="own", telemetry_socket=None, progress=None, command=Vec::new(), server=None))]
#[allow(clippy::too_many_arguments)]
pub fn emulate<'py>(
    py: Python<'py>,
    path: PathBuf,
    seed: Option<u64>,
    overrides: Vec<String>,
    pcap_dir: Option<PathBuf>,
    pcap_nodes: Vec<String>,
    client: &str,
    telemetry_socket: Option<PathBuf>,
    progress: Option<PyObject>,
    command: Vec<String>,
    server: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    if server.is_some() && command.is_empty() {
        return Err(ScenarioError::new_err("server: a server command runs beside a UE command (`-- COMMAND`); give one"));
    }
    let client = match (client, command.is_empty()) {
        ("own", true) => Client::Own,
        ("iperf3", true) => Client::Iperf3,
        ("own", false) => Client::Programs(Programs { ue: command, server }),
        ("iperf3", false) => {
            return Err(ScenarioError::new_err("client `iperf3` and a command: the command replaces the endpoints; give one"))
        }
        (other, _) => return Err(ScenarioError::new_err(format!("client `{other}`: expected `own` or `iperf3`"))),
    };
    let opts = EmulateOptions { seed, overrides, pcap_dir, pcap_nodes, client, telemetry_socket };
    let mut callback_error: Option<PyErr> = None;
    let mut report = |elapsed_s: f64, total_s: f64| {
        let outcome = py.check_signals().and_then(|()| match &progress {
            Some(cb) => cb.call1(py, (elapsed_s, total_s)).map(drop),
            None => Ok(()),
        });
        match outcome {
            Ok(()) => true,
            Err(e) => {
                callback_error.get_or_insert(e);
                false
            }
        }
    };
    let emulation = emulate_file(&path, &opts, &mut report);
    if let Some(e) = callback_error {
        return Err(e);
    }
    let emulation = emulation.map_err(to_py_err)?;
    let result = PyDict::new(py);
    result.set_item("summary_json", emulation.summary.to_string())?;
    result.set_item("exit_status", emulation.exit_status)?;
    result.set_item("series", chunk_to_py(py, emulation.tables)?)?;
    Ok(result)
}

/// Removes what killed emulations left behind; returns the namespaces removed.
#[pyfunction]
pub fn emulate_cleanup() -> PyResult<Vec<String>> {
    millinet_emu::netns::cleanup_stale().map_err(to_py_err)
}
