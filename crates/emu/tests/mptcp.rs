//! Kernel MPTCP in the emulator: the shipped `mptcp` scenario (a 28 GHz gNB and an LTE eNB,
//! one device with both radios) with a subflow per radio, against the simulator's MP-TCP on
//! the same scenario, seed and so the same capacity series of both radios.

use std::path::Path;

use millinet_emu::{emulate_file, EmulateOptions};
use serde_json::Value;

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/millinet/scenarios/mptcp.toml");

/// Throughput of each path's subflow over the run, bit/s, by path (the UE's radio).
fn path_throughputs(summary: &Value) -> Vec<f64> {
    let flow = &summary["flows"][0];
    let subflows = flow["mptcp"]["subflows"].as_array().unwrap_or_else(|| panic!("no subflows: {flow}"));
    let duration_s = summary["duration_s"].as_f64().unwrap();
    let mut by_ue: Vec<(u64, f64)> =
        subflows.iter().map(|s| (s["ue"].as_u64().unwrap(), s["acked_bytes"].as_f64().unwrap() * 8.0 / duration_s)).collect();
    by_ue.sort_by_key(|(ue, _)| *ue);
    by_ue.into_iter().map(|(_, bps)| bps).collect()
}

fn within(measured: f64, reference: f64, tolerance: f64) -> bool {
    (measured - reference).abs() <= tolerance * reference
}

/// One kernel run of the scenario, with what says whether the host kept up printed beside it.
fn emulate(overrides: &[String]) -> millinet_emu::Emulation {
    let emulated =
        emulate_file(Path::new(SCENARIO), &EmulateOptions { overrides: overrides.to_vec(), ..Default::default() }, &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{e}"));
    let (flow, link) = (&emulated.summary["flows"][0], &emulated.summary["emulator"]);
    println!(
        "emulated: goodput {:.0} Mbit/s, retransmits {}, RTOs {}, sender {}, link at most {:.2} ms late ({} frames over 1 ms)",
        flow["goodput_bps"].as_f64().unwrap() / 1e6,
        flow["retransmits"],
        flow["rtos"],
        flow["sender_limits"],
        link["max_lateness_ms"].as_f64().unwrap(),
        link["frames_over_1ms_late"]
    );
    emulated
}

#[test]
fn kernel_mptcp_with_lia_carries_each_radios_share_as_the_simulator_does() {
    // The cross-check bound: aggregate goodput and the 28 GHz path within 15%.
    const TOLERANCE: f64 = 0.15;
    let overrides: Vec<String> = ["duration_s=3.0", "flows.0.cc=\"lia\""].map(String::from).to_vec();
    let simulated = millinet_engine::run_file(
        Path::new(SCENARIO),
        &millinet_engine::RunOptions { overrides: overrides.clone(), ..Default::default() },
        &mut |_, _| {},
    )
    .unwrap();
    let sim = &simulated.summary;
    let goodput = |s: &Value| s["flows"][0]["goodput_bps"].as_f64().unwrap();
    let sim_paths = path_throughputs(sim);
    let mbit = |v: &[f64]| v.iter().map(|bps| (bps / 1e5).round() / 10.0).collect::<Vec<_>>();
    println!("simulated: goodput {:.0} Mbit/s, per path {:?} Mbit/s", goodput(sim) / 1e6, mbit(&sim_paths));
    // The kernel's run is a measurement on a shared host: 12 local runs gave the 28 GHz path
    // 1876–1931 Mbit/s, and one CI run 1272 with the link on time. A run outside the bound is
    // measured once more and the second one judged, as the kernel tests of crates/bpfcc do.
    let within_bounds = |emu: &Value| {
        let paths = path_throughputs(emu);
        paths.len() == 2 && within(goodput(emu), goodput(sim), TOLERANCE) && within(paths[0], sim_paths[0], TOLERANCE)
    };
    let mut emulated = emulate(&overrides);
    if !within_bounds(&emulated.summary) {
        println!("outside the bound: measured again");
        emulated = emulate(&overrides);
    }
    let emu = &emulated.summary;
    let flow = &emu["flows"][0];
    assert_eq!(flow["kind"], "mptcp");
    assert_eq!(flow["payload_intact"], true, "every byte the UE read is the server's at that offset");
    let name = flow["kernel_cc"].as_str().unwrap();
    assert!(name.starts_with("mn") && name.ends_with("_lia"), "the run's own BPF LIA: {name}");
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    assert!(!available.split_whitespace().any(|cc| cc == name), "{name} still registered: {available}");

    let emu_paths = path_throughputs(emu);
    println!("per path, Mbit/s: emulated {:?}, simulated {:?}", mbit(&emu_paths), mbit(&sim_paths));
    assert_eq!(emu_paths.len(), 2, "a subflow per radio: {flow}");
    assert!(within(goodput(emu), goodput(sim), TOLERANCE), "aggregate goodput");
    let (e, s) = (emu_paths[0], sim_paths[0]);
    assert!(within(e, s, TOLERANCE), "28 GHz path: emulated {e:.3e} bit/s, simulated {s:.3e} bit/s");
    // The LTE subflow's share varies between kernel runs: its LIA increase is min(α/w_total,
    // 1/w) with the 28 GHz subflow's large window in w_total, so how fast it recovers from a
    // loss on its 1 MB RLC buffer depends on when that loss falls (80–120 Mbit/s against the
    // simulator's 118–123 over several runs, docs/validation.md). It must carry a real share.
    let (e, s) = (emu_paths[1], sim_paths[1]);
    assert!((0.5 * s..=(1.0 + TOLERANCE) * s).contains(&e), "LTE path: emulated {e:.3e} bit/s, simulated {s:.3e} bit/s");
    // MP-TCP earns its keep: each radio carries data, and together more than the LTE radio's
    // whole rate (the mmWave radio is not idle behind the LTE one).
    let lte_rate = emu["ues"][1]["mean_rate_bps"].as_f64().unwrap();
    assert!(emu_paths.iter().all(|&bps| bps > 0.05 * lte_rate), "{emu_paths:?}");
    assert!(goodput(emu) > 2.0 * lte_rate, "{} against LTE's {lte_rate}", goodput(emu));
    let series_subflows: std::collections::BTreeSet<u32> = emulated.flows[0].samples.iter().map(|x| x.subflow).collect();
    assert_eq!(series_subflows.into_iter().collect::<Vec<_>>(), vec![0, 1], "the flows table has a row per subflow");
}
