//! Every class of bad scenario input gives one message naming where (file and line,
//! or the --set), the key, the bad value and what is allowed.

use std::path::{Path, PathBuf};

use millinet_engine::{resolve_file, Error};

fn dumbbell() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/millinet/scenarios/dumbbell.toml")
}

fn error_of(path: &Path, overrides: &[&str]) -> String {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match resolve_file(path, &overrides, None) {
        Err(Error::Scenario(e)) => e.to_string(),
        other => panic!("expected a scenario error, got {other:?}"),
    }
}

/// A scenario file holding `text`, in a directory removed when the result is dropped.
fn temp_scenario(name: &str, text: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn assert_all(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "{message:?} lacks {p:?}");
    }
    assert!(!message.contains('\n'), "one line expected: {message:?}");
}

#[test]
fn unknown_key_lists_the_allowed_keys() {
    let m = error_of(&dumbbell(), &["flows.0.bogus=1"]);
    assert_all(&m, &["--set flows.0.bogus=1", "bogus", "expected one of", "mss_bytes"]);
}

#[test]
fn unknown_key_in_the_file_names_its_line() {
    let text = std::fs::read_to_string(dumbbell()).unwrap().replace("cc = \"cubic\"", "cc = \"cubic\"\ncolour = 3");
    let line = text.lines().position(|l| l.starts_with("colour")).unwrap() + 1;
    let m = error_of(&temp_scenario("unknown.toml", text.as_bytes()).1, &[]);
    assert_all(&m, &["unknown.toml", &format!("line {line}"), "colour", "expected one of"]);
}

#[test]
fn wrong_type_names_the_value_and_the_type() {
    let m = error_of(&dumbbell(), &["duration_s=abc"]);
    assert_all(&m, &["duration_s", "\"abc\"", "expected a number"]);
}

#[test]
fn out_of_range_names_the_range() {
    let m = error_of(&dumbbell(), &["flows.0.mss_bytes=50"]);
    assert_all(&m, &["flows.0.mss_bytes = 50", "out of range", "allowed: 100..=65000"]);
}

#[test]
fn out_of_range_in_the_file_names_its_line() {
    let text = std::fs::read_to_string(dumbbell()).unwrap().replace("delay_s = 0.001", "delay_s = -1");
    let line = text.lines().position(|l| l.starts_with("delay_s = -1")).unwrap() + 1;
    let m = error_of(&temp_scenario("range.toml", text.as_bytes()).1, &[]);
    assert_all(&m, &[&format!("range.toml: line {line}"), "links.1.delay_s = -1", "allowed: 0 to 10 seconds"]);
}

#[test]
fn unknown_congestion_control_lists_the_known_ones() {
    let m = error_of(&dumbbell(), &["flows.0.cc=vegas"]);
    assert_all(&m, &["flows.0.cc", "\"vegas\"", "cubic", "newreno"]);
}

#[test]
fn repeated_downloads_need_sizes_of_at_least_one_byte() {
    let m = error_of(&dumbbell(), &["flows.0.app=repeated"]);
    assert_all(&m, &["flows.0.sizes_bytes", "[]", "empty", "at least one size when app = \"repeated\""]);
    let m = error_of(&dumbbell(), &["flows.0.app=repeated", "flows.0.sizes_bytes=[1000, 0]"]);
    assert_all(&m, &["flows.0.sizes_bytes.1 = 0", "out of range", "allowed: 1..="]);
}

#[test]
fn unknown_enum_value_lists_the_variants() {
    let m = error_of(&dumbbell(), &["links.1.aqm=red"]);
    assert_all(&m, &["links.1.aqm", "red", "droptail", "codel"]);
}

#[test]
fn unknown_node_lists_the_nodes() {
    let m = error_of(&dumbbell(), &["flows.0.dst=moon"]);
    assert_all(&m, &["flows.0.dst = \"moon\"", "no such node", "client, router, server"]);
}

#[test]
fn missing_required_field() {
    let text = std::fs::read_to_string(dumbbell()).unwrap().replace("seed = 1\n", "");
    let m = error_of(&temp_scenario("noseed.toml", text.as_bytes()).1, &[]);
    assert_all(&m, &["noseed.toml", "missing field `seed`"]);
}

#[test]
fn missing_file() {
    let m = error_of(Path::new("/nonexistent/x.toml"), &[]);
    assert_all(&m, &["/nonexistent/x.toml", "no such file"]);
}

#[test]
fn a_directory_is_not_a_scenario() {
    let m = error_of(&std::env::temp_dir(), &[]);
    assert_all(&m, &["cannot read scenario file", "directory"]);
}

#[test]
fn syntax_error_names_the_line() {
    let m = error_of(&temp_scenario("syntax.toml", b"duration_s = 1\nseed = 1\nnodes = [\n  {name = \n").1, &[]);
    assert_all(&m, &["syntax.toml: line 4", "TOML syntax error"]);
}

#[test]
fn binary_file_is_rejected() {
    let m = error_of(&temp_scenario("binary.toml", b"duration_s = 1\n\xff\xfe\n").1, &[]);
    assert_all(&m, &["binary.toml: line 2", "not UTF-8"]);
}

#[test]
fn override_without_equals_or_with_bad_index() {
    assert_all(&error_of(&dumbbell(), &["flows.0.cc"]), &["--set flows.0.cc", "no '='", "KEY=VALUE"]);
    assert_all(&error_of(&dumbbell(), &["flows.3.cc=cubic"]), &["flows.3", "out of range", "1 entries"]);
    assert_all(&error_of(&dumbbell(), &["flows.x.cc=cubic"]), &["flows.x", "list index"]);
}

#[test]
fn overrides_reach_inside_lists_and_seed_overrides() {
    let resolved = resolve_file(&dumbbell(), &["flows.0.cc=newreno".into(), "links.1.rate_bps=3e9".into()], Some(42)).unwrap();
    let v: toml::Value = toml::from_str(&resolved).unwrap();
    assert_eq!(v["flows"][0]["cc"].as_str(), Some("newreno"));
    assert_eq!(v["links"][1]["rate_bps"].as_float(), Some(3e9));
    assert_eq!(v["seed"].as_integer(), Some(42));
    // Defaults are filled in.
    assert_eq!(v["flows"][0]["newreno_variant"].as_str(), Some("impatient"));
}

#[test]
fn overrides_reach_a_point_of_a_route_and_name_a_bad_index_in_it() {
    let moves = ["ues.0.route_m.0.0=150", "ues.1.route_m.0.0=150", "ues.0.route_m.0.1=-2.5", "ues.1.route_m.0.1=-2.5"];
    let resolved = resolve_file(&shipped("mptcp"), &moves.map(String::from), None).unwrap();
    let v: toml::Value = toml::from_str(&resolved).unwrap();
    let point = |k: usize| v["ues"][k]["route_m"][0].as_array().unwrap().iter().map(|x| x.as_float().unwrap()).collect::<Vec<_>>();
    assert_eq!((point(0), point(1)), (vec![150.0, -2.5], vec![150.0, -2.5]));
    // The radios of one device move together or not at all.
    assert_all(&error_of(&shipped("mptcp"), &["ues.1.route_m.0.0=150"]), &["ues.1.route_m", "differs from the device's first radio"]);
    assert_all(&error_of(&shipped("mptcp"), &["ues.0.route_m.1.0=3"]), &["ues.0.route_m", "index 1 is out of range", "1 entries"]);
    assert_all(&error_of(&shipped("mptcp"), &["ues.0.route_m.0.x=3"]), &["ues.0.route_m.0", "list index", "\"x\""]);
    assert_all(&error_of(&shipped("mptcp"), &["ues.0.route_m.0.0.1=3"]), &["ues.0.route_m.0.0", "has no field \"1\""]);
}

#[test]
fn the_mptcp_scheduler_is_one_of_two() {
    let m = error_of(&shipped("mptcp"), &["flows.0.mptcp_scheduler=fastest"]);
    assert_all(&m, &["flows.0.mptcp_scheduler", "fastest", "lowest_rtt", "round_robin"]);
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/millinet/scenarios/{name}.toml"))
}

#[test]
fn a_dual_connectivity_anchor_must_be_an_lte_cell() {
    let m = error_of(&shipped("train"), &["ues.0.anchor=gnb2"]);
    assert_all(&m, &["--set ues.0.anchor=gnb2", "ues.0.anchor", "\"gnb2\"", "no LTE cell on that node", "one of enb"]);
    let m = error_of(&shipped("handover"), &["ues.0.anchor=gnb2"]);
    assert_all(&m, &["ues.0.anchor", "this scenario has none"]);
}

#[test]
fn handover_parameters_out_of_range_name_their_range() {
    let m = error_of(&shipped("handover"), &["handover.hysteresis_db=-1"]);
    assert_all(&m, &["handover.hysteresis_db", "-1", "0 to 30 dB"]);
    let m = error_of(&shipped("handover"), &["handover.measurement_period_s=0"]);
    assert_all(&m, &["handover.measurement_period_s", "0.1 ms to 1 second"]);
    let m = error_of(&shipped("handover"), &["handover.bogus=1"]);
    assert_all(&m, &["handover.bogus", "expected one of", "time_to_trigger_s"]);
}

#[test]
fn an_lte_cell_peak_rate_is_bounded_by_two_mimo_layers() {
    let m = error_of(&shipped("train"), &["cells.4.peak_rate_bps=300e6"]);
    assert_all(&m, &["cells.4.peak_rate_bps", "300000000", "two MIMO layers"]);
    // The same rate on a mmWave cell of 20 MHz is refused with the one-layer bound.
    let m = error_of(&shipped("train"), &["cells.0.bandwidth_hz=20e6", "cells.0.peak_rate_bps=150e6"]);
    assert_all(&m, &["cells.0.peak_rate_bps", "η_oh ≤ 1"]);
}

#[test]
fn a_flow_names_a_radio_the_device_has_and_a_device_moves_as_one() {
    let two = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/two-radios.toml");
    let m = error_of(&two, &["flows.1.dst_radio=2"]);
    assert_all(&m, &["flows.1.dst_radio", "2", "no such radio", "0 to 1"]);
    let m = error_of(&two, &["ues.1.route_m=[[41.0, 0.0]]"]);
    assert_all(&m, &["ues.1.route_m", "differs from the device's first radio", "same route_m"]);
}

#[test]
fn target_queue_parameters_out_of_range_name_their_range() {
    let m = error_of(&shipped("milliproxy"), &["proxy.node=\"gnb\"", "proxy.policy=\"target-queue\"", "proxy.target_queue_gain=2"]);
    assert_all(&m, &["proxy.target_queue_gain", "2", "0 to 1"]);
    let m =
        error_of(&shipped("milliproxy"), &["proxy.node=\"gnb\"", "proxy.policy=\"calibrated\"", "proxy.target_queue_rtt_fraction=-0.5"]);
    assert_all(&m, &["proxy.target_queue_rtt_fraction", "-0.5", "0 to 1"]);
    let m = error_of(&shipped("milliproxy"), &["proxy.node=\"gnb\"", "proxy.target_queue_delay_s=-0.001"]);
    assert_all(&m, &["proxy.target_queue_delay_s", "-0.001", "0 to 10 seconds"]);
}
