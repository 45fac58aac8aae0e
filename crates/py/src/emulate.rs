//! `_core.emulate`: an emulation (the emu crate) with its measurements as the same tables
//! the simulator streams, so Python writes both kinds of run directory with one writer.

use std::path::PathBuf;

use millinet_emu::{emulate_file, Client, EmuError, EmulateOptions, Emulation};
use millinet_engine::{Column, ColumnData, Table};
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

/// The emulation's time series as tables: `flows` from the server socket's TCP_INFO,
/// `goodput` from the UE application's reads, `queues`, `ues` and `proxy` from the link.
fn tables(e: &Emulation) -> Vec<Table> {
    let col = |name, data| Column { name, data };
    let seconds = |ns: u64| ns as f64 / 1e9;
    let s = &e.flow.samples;
    let flows = Table {
        name: "flows",
        columns: vec![
            col("t", ColumnData::F64(s.iter().map(|x| seconds(x.t_ns)).collect())),
            col("flow", ColumnData::U32(vec![0; s.len()])),
            col("subflow", ColumnData::U32(s.iter().map(|x| x.subflow).collect())),
            col("cwnd_bytes", ColumnData::U64(s.iter().map(|x| x.info.cwnd_bytes()).collect())),
            col("ssthresh_bytes", ColumnData::U64(s.iter().map(|x| x.info.ssthresh_bytes()).collect())),
            col("srtt_ms", ColumnData::F64(s.iter().map(|x| x.info.rtt_us as f64 / 1e3).collect())),
            col("pacing_rate_bps", ColumnData::F64(s.iter().map(|x| x.info.pacing_rate as f64 * 8.0).collect())),
            col("bytes_in_flight", ColumnData::U64(s.iter().map(|x| x.info.bytes_in_flight()).collect())),
            col("acked_bytes", ColumnData::U64(s.iter().map(|x| x.info.bytes_acked).collect())),
            col("min_rtt_ms", ColumnData::F64(s.iter().map(|x| x.info.min_rtt_us as f64 / 1e3).collect())),
            col("delivery_rate_bps", ColumnData::F64(s.iter().map(|x| x.info.delivery_rate as f64 * 8.0).collect())),
            col("retransmits", ColumnData::U64(s.iter().map(|x| x.info.total_retrans as u64).collect())),
        ],
    };
    let bins = &e.flow.received_per_bin;
    let bin_s = seconds(e.goodput_bin_ns);
    let goodput = Table {
        name: "goodput",
        columns: vec![
            col("t", ColumnData::F64((0..bins.len()).map(|b| b as f64 * bin_s).collect())),
            col("flow", ColumnData::U32(vec![0; bins.len()])),
            col("goodput_bps", ColumnData::F64(bins.iter().map(|&b| b as f64 * 8.0 / bin_s).collect())),
        ],
    };
    let q = &e.link.queue_samples;
    let queues = Table {
        name: "queues",
        columns: vec![
            col("t", ColumnData::F64(q.iter().map(|x| seconds(x.t_ns)).collect())),
            col("queue", ColumnData::U32(q.iter().map(|x| x.queue).collect())),
            col("bytes", ColumnData::U64(q.iter().map(|x| x.bytes).collect())),
            col("packets", ColumnData::U64(q.iter().map(|x| x.packets).collect())),
            col("rate_bps", ColumnData::U64(q.iter().map(|x| x.rate_bps).collect())),
        ],
    };
    let mut tables = vec![flows, goodput, queues];
    let u = &e.link.ue_samples;
    if !u.is_empty() {
        tables.push(Table {
            name: "ues",
            columns: vec![
                col("t", ColumnData::F64(u.iter().map(|x| seconds(x.t_ns)).collect())),
                col("ue", ColumnData::U32(u.iter().map(|x| x.ue).collect())),
                col("sinr_db", ColumnData::F64(u.iter().map(|x| x.sinr_db).collect())),
                col("rate_bps", ColumnData::F64(u.iter().map(|x| x.rate_bps).collect())),
                col("los", ColumnData::U32(u.iter().map(|x| x.los as u32).collect())),
                col("rlc_bytes", ColumnData::U64(u.iter().map(|x| x.rlc_bytes).collect())),
                col("ran_latency_ms", ColumnData::F64(u.iter().map(|x| x.ran_latency_ms).collect())),
                col("cell", ColumnData::U32(u.iter().map(|x| x.cell).collect())),
            ],
        });
    }
    let p = &e.link.proxy_samples;
    if !p.is_empty() {
        tables.push(Table {
            name: "proxy",
            columns: vec![
                col("t", ColumnData::F64(p.iter().map(|x| seconds(x.t_ns)).collect())),
                col("flow", ColumnData::U32(vec![0; p.len()])),
                col("fw_bytes", ColumnData::U64(p.iter().map(|x| x.fw_bytes).collect())),
                col("buffered_bytes", ColumnData::U64(p.iter().map(|x| x.buffered_bytes).collect())),
                col("in_flight_bytes", ColumnData::U64(p.iter().map(|x| x.in_flight_bytes).collect())),
                col("rtt_min_ms", ColumnData::F64(p.iter().map(|x| x.rtt_min_ms).collect())),
            ],
        });
    }
    tables
}

/// Emulates a scenario file with the `client` endpoints ("own" or "iperf3"), publishing the
/// UE's telemetry to the Unix datagram socket `telemetry_socket` if given, capturing `<node>.pcap` into `pcap_dir` for each of `pcap_nodes`.
/// Returns {"summary_json": str, "series": chunk} (the chunk as
/// `run` streams them). `progress(elapsed_s, duration_s)` is called every 100 ms; a pending
/// KeyboardInterrupt stops the emulation, which cleans up and raises it.
#[pyfunction]
#[pyo3(signature = (path, seed=None, overrides=Vec::new(), pcap_dir=None, pcap_nodes=Vec::new(), client="own", telemetry_socket=None, progress=None))]
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
) -> PyResult<Bound<'py, PyDict>> {
    let client = match client {
        "own" => Client::Own,
        "iperf3" => Client::Iperf3,
        other => return Err(ScenarioError::new_err(format!("client `{other}`: expected `own` or `iperf3`"))),
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
    result.set_item("series", chunk_to_py(py, tables(&emulation))?)?;
    Ok(result)
}

/// Removes what killed emulations left behind; returns the namespaces removed.
#[pyfunction]
pub fn emulate_cleanup() -> PyResult<Vec<String>> {
    millinet_emu::netns::cleanup_stale().map_err(to_py_err)
}
