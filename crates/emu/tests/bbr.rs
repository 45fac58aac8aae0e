//! The kernel's BBR (tcp_bbr.c) in the emulator against the simulator's on an LTE cell at the
//! edge (docs/studies.md#train): a 1 ms server, an 80 kB RLC buffer, and an uplink that returns
//! the ACKs in bursts about every 11 ms. Without Linux's ACK-aggregation allowance
//! (`extra_acked`) and its pacing bursts, the simulator's BBR got 36 Mbit/s where the kernel
//! gets about 123.

use std::path::Path;

use millinet_emu::{emulate_file, EmulateOptions};

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/millinet/scenarios/train-lte.toml");

#[test]
fn kernel_bbr_and_the_simulators_get_the_same_goodput_from_an_lte_cell_with_bursty_acks() {
    const TOLERANCE: f64 = 0.15;
    let overrides: Vec<String> = [
        "duration_s=5.0",
        "links.0.delay_s=0.001",
        "ues.0.rlc_buffer_bytes=80000",
        "handover.enabled=false",
        "ues.0.route_m=[[200.0,0.0]]",
        "ues.0.speed_mps=0",
        "ues.0.fading=false",
        "flows.0.cc=\"bbr\"",
    ]
    .map(String::from)
    .to_vec();
    let emulated =
        emulate_file(Path::new(SCENARIO), &EmulateOptions { overrides: overrides.clone(), ..Default::default() }, &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{e}"));
    let simulated =
        millinet_engine::run_file(Path::new(SCENARIO), &millinet_engine::RunOptions { overrides, ..Default::default() }, &mut |_, _| {})
            .unwrap();
    let (emu, sim) = (&emulated.summary["flows"][0], &simulated.summary["flows"][0]);
    assert_eq!(emu["kernel_cc"], "bbr");
    let goodput = |f: &serde_json::Value| f["goodput_bps"].as_f64().unwrap();
    println!(
        "goodput: kernel {:.1} Mbit/s ({} retransmissions, {} tail loss probes), simulator {:.1} Mbit/s ({}, {})",
        goodput(emu) / 1e6,
        emu["retransmits"],
        emu["tail_loss_probes"],
        goodput(sim) / 1e6,
        sim["retransmits"],
        sim["tail_loss_probes"]
    );
    // The server's namespace sends this flow alone: its probe counter is the flow's.
    assert!(emu["tail_loss_probes"].is_u64(), "{}", emu["tail_loss_probes"]);
    assert!((goodput(sim) - goodput(emu)).abs() <= TOLERANCE * goodput(emu), "within 15% of the kernel's BBR");
    // The cell's rate, not the 36 Mbit/s of a bandwidth estimate starved by ACK bursts.
    let cell_bps = emulated.summary["ues"][0]["mean_rate_bps"].as_f64().unwrap();
    assert!(goodput(sim) > 0.5 * cell_bps, "{} of a {cell_bps} bit/s cell", goodput(sim));
}
