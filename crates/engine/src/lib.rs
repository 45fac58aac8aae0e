//! The simulation engine: the simulator's driver of the network layer (`millinet_network`):
//! event queue, virtual time, random streams, the hosts and middleboxes on the network's nodes,
//! pcap captures. The scenario schema lives in `millinet_scenario` (re-exported as `scenario`).

pub mod event;
pub mod middlebox;
pub mod pcap;
pub mod sim;

use std::path::{Path, PathBuf};

/// Measurements, the time series and their tables: the network layer's, one writer for both
/// drivers.
pub use millinet_network::{metrics, output, series};
pub use millinet_scenario as scenario;
/// Random streams: one seed per run, one stream per component (shared with the emulator).
pub use millinet_scenario::rng;
pub use output::{Column, ColumnData, Table};
pub use serde_json::Value as Json;

/// Errors a user can cause (bad scenario, bad override, bad trace, a model refusing its
/// configuration) are `Scenario`, the one configuration-error type; the CLI prints them as
/// one line and exits with status 2. `Io` is a file that could not be written.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    Scenario(scenario::ConfigError),
    Io(String),
}

impl Error {
    /// A configuration error with this message.
    pub(crate) fn config(message: String) -> Error {
        Error::Scenario(scenario::ConfigError::new(message))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Scenario(e) => e.fmt(f),
            Error::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<scenario::ConfigError> for Error {
    fn from(e: scenario::ConfigError) -> Error {
        Error::Scenario(e)
    }
}

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Overrides the scenario's `seed`.
    pub seed: Option<u64>,
    /// `key.path=value` strings, applied in order.
    pub overrides: Vec<String>,
    /// Directory for pcap files, one per node in `pcap_nodes`.
    pub pcap_dir: Option<PathBuf>,
    pub pcap_nodes: Vec<String>,
}

pub struct RunOutput {
    /// summary.json content (docs/outputs.md §2).
    pub summary: serde_json::Value,
    /// The fully resolved scenario, every default filled in.
    pub resolved_toml: String,
    /// Time-series tables (each has a `t` column in seconds).
    pub tables: Vec<Table>,
}

/// A run whose time series went to a sink as it proceeded.
pub struct StreamedRun {
    pub summary: serde_json::Value,
    pub resolved_toml: String,
}

/// Resolves a scenario file with overrides and returns it as TOML.
pub fn resolve_file(path: &Path, overrides: &[String], seed: Option<u64>) -> Result<String, Error> {
    let loaded = scenario::load(path, overrides, seed)?;
    to_toml(&loaded.scenario)
}

fn to_toml(s: &scenario::Scenario) -> Result<String, Error> {
    toml::to_string(s).map_err(|e| Error::Io(format!("cannot write the resolved scenario: {e}")))
}

/// Runs a scenario file and keeps its whole time series in memory (tests, small runs).
/// `progress(sim_time_s, duration_s)` is called now and then.
pub fn run_file(path: &Path, opts: &RunOptions, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutput, Error> {
    let mut tables = Vec::new();
    let run = run_file_streaming(path, opts, progress, &mut |chunk| output::append(&mut tables, chunk))?;
    Ok(RunOutput { summary: run.summary, resolved_toml: run.resolved_toml, tables })
}

/// Runs a scenario file, handing its time series to `series` in chunks as the run
/// proceeds (every chunk holds every table, see `series::Series::take_chunk`), so memory
/// does not grow with the simulated duration.
pub fn run_file_streaming(
    path: &Path,
    opts: &RunOptions,
    progress: &mut dyn FnMut(f64, f64),
    series: &mut dyn FnMut(Vec<Table>),
) -> Result<StreamedRun, Error> {
    let loaded = scenario::load(path, &opts.overrides, opts.seed)?;
    let resolved_toml = to_toml(&loaded.scenario)?;
    let captures: Vec<(String, PathBuf)> = match &opts.pcap_dir {
        Some(dir) => opts.pcap_nodes.iter().map(|n| (n.clone(), dir.join(format!("{n}.pcap")))).collect(),
        None => Vec::new(),
    };
    let mut sim = sim::Simulation::new(loaded.scenario, &loaded.base_dir, &captures)?;
    let started = std::time::Instant::now();
    sim.run(progress, series);
    let wall_s = started.elapsed().as_secs_f64();
    sim.finish_captures()?;
    let mut summary = sim.summary(&loaded.name);
    let events = sim.events_processed();
    summary["sim"] = serde_json::json!({
        "sim_time_s": sim.now_ns() as f64 / 1e9,
        "wall_s": wall_s,
        "events": events,
        "events_per_s": events as f64 / wall_s.max(1e-9),
    });
    Ok(StreamedRun { summary, resolved_toml })
}
