//! End-to-end emulations on this host: namespaces, the link and real Linux TCP. Each test
//! makes only its own namespaces (named after this process) and the emulation removes them.

use std::path::PathBuf;

use millinet_emu::{emulate_file, EmulateOptions};

/// A wired path: server -10 Gbit/s, 5 ms- router -`rate_bps`, 5 ms, `queue_bytes`- client.
fn dumbbell(dir: &tempfile::TempDir, rate_bps: f64, queue_bytes: u64, duration_s: f64) -> PathBuf {
    let text = format!(
        r#"
duration_s = {duration_s}
seed = 1
[[nodes]]
name = "server"
[[nodes]]
name = "router"
[[nodes]]
name = "client"
[[links]]
a = "server"
b = "router"
rate_bps = 10e9
delay_s = 0.005
queue_bytes = 100_000_000
[[links]]
a = "router"
b = "client"
rate_bps = {rate_bps}
delay_s = 0.005
queue_bytes = {queue_bytes}
[[flows]]
kind = "tcp"
src = "server"
dst = "client"
app = "bulk"
cc = "cubic"
mss_bytes = 1400
"#
    );
    let path = dir.path().join("dumbbell.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn namespaces_of_this_process() -> Vec<String> {
    let prefix = format!("{}{}-", millinet_emu::netns::PREFIX, std::process::id());
    std::fs::read_dir("/var/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(&prefix)).collect())
        .unwrap_or_default()
}

#[test]
fn a_constant_wired_bottleneck_is_filled_and_everything_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    // 1 BDP of queue: 100 Mbit/s × 20 ms.
    let path = dumbbell(&dir, 100e6, 250_000, 3.0);
    let run = emulate_file(&path, &EmulateOptions::default(), &mut |_, _| true).unwrap();
    let flow = &run.summary["flows"][0];
    let goodput = flow["goodput_bps"].as_f64().unwrap();
    println!("{}", serde_json::to_string_pretty(&run.summary).unwrap());
    // Payload share of a 1400-byte segment with IPv4, TCP and timestamp headers.
    let payload_rate = 100e6 * 1400.0 / 1452.0;
    assert!(goodput > 0.9 * payload_rate && goodput < 1.01 * payload_rate, "goodput {goodput} vs {payload_rate}");
    assert!(namespaces_of_this_process().is_empty(), "left behind: {:?}", namespaces_of_this_process());
}
