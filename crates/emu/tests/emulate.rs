//! End-to-end emulations on this host: namespaces, the link and real Linux TCP. Each test
//! makes only its own namespaces (named after this process) and the emulation removes them.

use std::path::PathBuf;

use std::sync::Mutex;

use millinet_emu::{EmuError, EmulateOptions, Emulation};

/// One emulation at a time: two would share the two cores and disturb each other's timing.
static HOST: Mutex<()> = Mutex::new(());

fn emulate_file(path: &std::path::Path, opts: &EmulateOptions, progress: &mut dyn FnMut(f64, f64) -> bool) -> Result<Emulation, EmuError> {
    let _host = HOST.lock().unwrap_or_else(|e| e.into_inner());
    millinet_emu::emulate_file(path, opts, progress)
}

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
    let path = dumbbell(&dir, 100e6, 250_000, 2.0);
    let run = emulate_file(&path, &EmulateOptions::default(), &mut |_, _| true).unwrap();
    let flow = &run.summary["flows"][0];
    let goodput = flow["goodput_bps"].as_f64().unwrap();
    // Payload share of a 1400-byte segment with IPv4, TCP and timestamp headers.
    let payload_rate = 100e6 * 1400.0 / 1452.0;
    assert!(goodput > 0.9 * payload_rate && goodput < 1.01 * payload_rate, "goodput {goodput} vs {payload_rate}");
    assert!(namespaces_of_this_process().is_empty(), "left behind: {:?}", namespaces_of_this_process());
}

/// The milliProxy study's route (scenarios/milliproxy.toml) with the UE's capacity read from
/// `trace` (rows "time_s,rate_bps") instead of the geometric channel.
fn radio_route(dir: &tempfile::TempDir, trace: &str, rlc_buffer_bytes: u64, duration_s: f64) -> PathBuf {
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

#[test]
fn a_capacity_drop_fills_the_rlc_buffer_which_drains_when_it_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = radio_route(&dir, "0,400e6\n1.0,40e6\n1.6,400e6\n", 3_000_000, 2.6);
    let run = emulate_file(&path, &EmulateOptions::default(), &mut |_, _| true).unwrap();
    let rlc = |from_s: f64, to_s: f64| -> Vec<u64> {
        let (from, to) = ((from_s * 1e9) as u64, (to_s * 1e9) as u64);
        run.link.ue_samples.iter().filter(|x| x.t_ns >= from && x.t_ns < to).map(|x| x.rlc_bytes).collect()
    };
    let max = |v: Vec<u64>| v.into_iter().max().unwrap();
    let during = max(rlc(1.2, 1.6));
    let after = *rlc(1.7, 2.0).iter().min().unwrap();
    // At 40 Mbit/s the window the server built at 400 Mbit/s piles up to the buffer's limit.
    assert!(during > 2_700_000, "RLC bytes during the drop: {during} of 3 MB");
    // Back at 400 Mbit/s the backlog drains down to the standing queue of a window larger
    // than the path's BDP (1.1 MB at 400 Mbit/s and 22 ms).
    assert!(after < during * 3 / 5, "RLC bytes after recovery: {after}, during the drop {during}");
}

#[test]
fn the_ran_latency_of_an_idle_path_is_the_simulators() {
    // A 200 kB download over a 1 Gbit/s radio queues nothing: the RAN latency is the
    // modelled slot, HARQ and processing delays, which the emulator must reproduce in real
    // time. The simulator runs the same scenario, seed and RAN.
    let dir = tempfile::tempdir().unwrap();
    let path = radio_route(&dir, "0,1e9\n", 10_000_000, 1.0);
    let file = ["flows.0.app=\"file\"".to_string(), "flows.0.file_bytes=200000".to_string()];
    let opts = EmulateOptions { overrides: file.to_vec(), ..Default::default() };
    let emulated = emulate_file(&path, &opts, &mut |_, _| true).unwrap();
    let simulated =
        millinet_engine::run_file(&path, &millinet_engine::RunOptions { overrides: file.to_vec(), ..Default::default() }, &mut |_, _| {})
            .unwrap();
    let p50 = |s: &serde_json::Value| s["ues"][0]["ran_latency_ms"]["p50"].as_f64().unwrap();
    let (emu, sim) = (p50(&emulated.summary), p50(&simulated.summary));
    assert!((emu - sim).abs() < 0.25, "RAN latency p50: emulated {emu} ms, simulated {sim} ms");
    assert!(emulated.summary["flows"][0]["download_time_s"].as_f64().is_some(), "the download completed");
}
