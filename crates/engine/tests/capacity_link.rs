//! A wired link whose downlink follows the spep study's per-user capacity process
//! (docs/studies.md#spep-emulation, docs/models/channel.md §12) behind a packet-limited queue: the physics the study's
//! download times and efficiencies rest on, and the refusals of bad capacity keys.

mod common;

use common::{num, run, scenario};
use millinet_engine::{resolve_file, run_file, ColumnData, Error, RunOptions, RunOutput};

/// The `queues` rows of queue `q` (the summary's ids: link 1 a→b is 2, b→a is 3): (t, column).
fn queue_column(out: &RunOutput, q: u32, name: &str) -> Vec<(f64, u64)> {
    let table = out.tables.iter().find(|t| t.name == "queues").unwrap();
    let get = |n: &str| &table.columns.iter().find(|c| c.name == n).unwrap().data;
    let (ColumnData::F64(t), ColumnData::U32(id), ColumnData::U64(v)) = (get("t"), get("queue"), get(name)) else { panic!("column types") };
    t.iter().zip(id).zip(v).filter(|((_, &i), _)| i == q).map(|((&t, _), &v)| (t, v)).collect()
}

#[test]
fn lte_capacity_at_a_constant_sinr_is_the_truncated_shannon_rate_by_hand() {
    // 10 dB, 10 MHz, no shadowing: 0.9449·log2(1 + 0.4852·10) = 2.408484 bit/s/Hz (docs/models/channel.md
    // §8's fit), a tenth of 24.08484 Mbit/s per user; the uplink keeps rate_bps.
    let out = run(
        "spep-emulation",
        &["duration_s=1", "links.1.capacity.carrier=\"lte\"", "links.1.capacity.shadow_sigma_db=0", "links.1.capacity.sinr_db=10"],
    );
    let down = queue_column(&out, 2, "rate_bps");
    assert_eq!(down.len(), 101);
    assert!(down.iter().all(|&(_, r)| r.abs_diff(2_408_484) <= 1), "{:?}", &down[..3]);
    assert!(queue_column(&out, 3, "rate_bps").iter().all(|&(_, r)| r == 10_000_000));
}

#[test]
fn the_rate_changes_only_at_update_instants_and_the_download_never_beats_it() {
    let out = run("spep-emulation", &["duration_s=30", "links.1.capacity.lambda_per_s=1"]);
    let down = queue_column(&out, 2, "rate_bps");
    let mut changes = 0;
    for w in down.windows(2) {
        if w[0].1 != w[1].1 {
            changes += 1;
            // Samples every 10 ms, updates every 100 ms: a new rate first shows at t = k·0.1 s.
            let k = (w[1].0 / 0.1).round();
            assert!((w[1].0 - k * 0.1).abs() < 1e-9, "rate changed at {} s", w[1].0);
        }
    }
    // SINR samples at 3 per second with a fresh shadow-fading draw each: about 3 changes a second.
    assert!(changes > 60, "{changes} rate changes in 30 s");
    let flow = &out.summary["flows"][0];
    let time_s = num(&flow["download_time_s"]);
    // The 1 MB file crossed the link as at least 1 MB of payload: no faster than the
    // capacity integrated over the download (each 10 ms sample holds its rate until the next).
    let capacity_bits: f64 = down.iter().take_while(|&&(t, _)| t < time_s).map(|&(_, r)| r as f64 * 0.01).sum();
    assert!(8e6 < capacity_bits, "1 MB in {time_s} s over {capacity_bits} bits of capacity");
    // An mmWave NLOS state lowers the capacity: the process visits both states in 30 s at λ = 1.
    let (low, high) = down.iter().fold((u64::MAX, 0), |(lo, hi), &(_, r)| (lo.min(r), hi.max(r)));
    assert!(high > 2 * low, "rates {low}..{high}");
}

#[test]
fn a_packet_limited_queue_never_holds_more_than_its_limit() {
    // Drop-tail with 20 packets: the CUBIC download overflows it, the byte limit never binds.
    let out = run("spep-emulation", &["duration_s=10", "links.1.aqm=\"droptail\"", "links.1.queue_packets=20"]);
    let packets = queue_column(&out, 2, "packets");
    let max = packets.iter().map(|&(_, p)| p).max().unwrap();
    assert!(max <= 20, "{max} packets queued");
    assert!(max >= 15, "the download should fill the queue: at most {max} packets");
    let queue = &out.summary["queues"][2];
    assert!(num(&queue["dropped_packets"]) > 0.0, "{queue}");
}

#[test]
fn same_seed_same_capacity_other_seed_other_capacity() {
    let rates = |seed: &str| queue_column(&run("spep-emulation", &["duration_s=5", seed]), 2, "rate_bps");
    let a = rates("seed=3");
    assert_eq!(a, rates("seed=3"));
    assert_ne!(a, rates("seed=4"));
}

fn error_of(overrides: &[&str]) -> String {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match resolve_file(&scenario("spep-emulation"), &overrides, None) {
        Err(Error::Scenario(e)) => e.to_string(),
        other => panic!("expected a scenario error, got {other:?}"),
    }
}

#[test]
fn bad_capacity_keys_name_the_key_the_value_and_what_is_allowed() {
    let m = error_of(&["links.1.capacity.users=0"]);
    assert!(m.contains("links.1.capacity.users") && m.contains("= 0") && m.contains("1..=100000"), "{m}");
    let m = error_of(&["links.1.capacity.carrier=\"wifi\""]);
    assert!(m.contains("links.1.capacity.carrier") && m.contains("wifi") && m.contains("lte") && m.contains("mmwave"), "{m}");
    let m = error_of(&["links.1.capacity.lambda_per_s=-1"]);
    assert!(m.contains("links.1.capacity.lambda_per_s") && m.contains("transitions per second"), "{m}");
    let m = error_of(&["links.1.switch_period_s=1", "links.1.switch_rate_bps=1e6"]);
    assert!(m.contains("links.1.switch_period_s") && m.contains("capacity process"), "{m}");
    let m = error_of(&["links.1.queue_packets=-3"]);
    assert!(m.contains("links.1.queue_packets"), "{m}");
}

#[test]
fn a_missing_or_per_cell_sinr_trace_is_refused_with_its_key() {
    let run_with = |trace: &str| {
        let opts = RunOptions { overrides: vec![format!("links.1.capacity.sinr_trace=\"{trace}\"")], ..RunOptions::default() };
        match run_file(&scenario("spep-emulation"), &opts, &mut |_, _| {}) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a bad trace {trace} ran"),
        }
    };
    let m = run_with("no-such-trace.csv");
    assert!(m.contains("links.1.capacity.sinr_trace") && m.contains("no-such-trace.csv"), "{m}");
    let dir = tempfile::tempdir().unwrap();
    let per_cell = dir.path().join("cells.csv");
    std::fs::write(&per_cell, "time_s,sinr_db,cell\n0,10,gnb\n1,12,gnb\n").unwrap();
    let m = run_with(per_cell.to_str().unwrap());
    assert!(m.contains("links.1.capacity.sinr_trace") && m.contains("one series"), "{m}");
}
