//! Runs one scenario file without Python, for profilers (perf, callgrind):
//!
//!     cargo run --release --example profile -- python/millinet/scenarios/milliproxy.toml flows.0.cc=cubic
//!
//! Prints the simulated time, events and wall time of the event loop. The time series
//! are dropped as they stream out.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().expect("usage: profile SCENARIO.toml [KEY=VALUE ...]"));
    let opts = millinet_engine::RunOptions { overrides: args.collect(), ..Default::default() };
    let output = millinet_engine::run_file_streaming(&path, &opts, &mut |_, _| {}, &mut drop).unwrap_or_else(|e| panic!("{e}"));
    println!("{}", output.summary["sim"]);
}
