//! What the emulator's test files share: the scenarios they run, and reading their tables.

use std::path::PathBuf;

use millinet_engine::{ColumnData, Table};

fn column<'a>(tables: &'a [Table], table: &str, column: &str) -> &'a ColumnData {
    let table = tables.iter().find(|t| t.name == table).unwrap_or_else(|| panic!("no table {table}"));
    &table.columns.iter().find(|c| c.name == column).unwrap_or_else(|| panic!("no column {column}")).data
}

/// A float column of one of a run's tables.
#[allow(dead_code)]
pub fn f64_column(tables: &[Table], table: &str, name: &str) -> Vec<f64> {
    match column(tables, table, name) {
        ColumnData::F64(v) => v.clone(),
        other => panic!("{table}.{name} is {other:?}"),
    }
}

/// An integer column of one of a run's tables.
#[allow(dead_code)]
pub fn u64_column(tables: &[Table], table: &str, name: &str) -> Vec<u64> {
    match column(tables, table, name) {
        ColumnData::U64(v) => v.clone(),
        other => panic!("{table}.{name} is {other:?}"),
    }
}

/// The milliProxy study's route (scenarios/milliproxy.toml) with the UE's capacity read from
/// `trace` (rows "time_s,rate_bps") instead of the geometric channel.
pub fn radio_route(dir: &tempfile::TempDir, trace: &str, rlc_buffer_bytes: u64, duration_s: f64) -> PathBuf {
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/millinet/scenarios/milliproxy.toml");
    let mut text = std::fs::read_to_string(shipped).unwrap();
    let obstacles = text.find("[random_obstacles]").unwrap()..text.find("[[flows]]").unwrap();
    text.replace_range(obstacles, "");
    let text = text
        .replace("blockage = \"geometric\"", "blockage = \"capacity-trace\"\ntrace = \"capacity.csv\"")
        .replace("rlc_buffer_bytes = 10_000_000", &format!("rlc_buffer_bytes = {rlc_buffer_bytes}"))
        .replace("duration_s = 10.0", &format!("duration_s = {duration_s}"))
        .replace("cc = \"newreno\"", "cc = \"cubic\"");
    std::fs::write(dir.path().join("capacity.csv"), format!("time_s,rate_bps\n{trace}")).unwrap();
    let path = dir.path().join("route.toml");
    std::fs::write(&path, text).unwrap();
    path
}
