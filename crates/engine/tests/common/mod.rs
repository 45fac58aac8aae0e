//! Helpers shared by the end-to-end tests: run a shipped scenario with overrides.
// Each test crate uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use millinet_engine::{run_file, RunOptions, RunOutput};
use serde_json::Value;

pub fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/millinet/scenarios/{name}.toml"))
}

pub fn run(name: &str, overrides: &[&str]) -> RunOutput {
    let opts = RunOptions { overrides: overrides.iter().map(|s| s.to_string()).collect(), ..RunOptions::default() };
    run_file(&scenario(name), &opts, &mut |_, _| {}).unwrap()
}

pub fn num(v: &Value) -> f64 {
    v.as_f64().unwrap()
}
