"""`millinet study milliproxy --quick` as a user runs it: the table, summary.json's points with
their paired ratios (recomputed here from the store independently), the page and plots, and
the behaviour the study exists to show."""

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from millinet import resolve, store
from millinet.sweep import load_sweep
from conftest import millinet, ok


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("study") / "quick"
    result = ok(millinet("study", "milliproxy", "--quick", "--runs", "2", "--out", out))
    return out, result.stdout, json.loads((out / "summary.json").read_text())


def test_prints_the_verdict_and_table_and_writes_page_and_plots(study):
    out, stdout, summary = study
    # The terminal opens with the verdict; the table has both policies' arms.
    assert stdout.startswith(summary["verdict"][0]), stdout[:300]
    assert "latency none/proxy" in stdout and "gnb-bdp" in stdout
    page = (out / "index.html").read_text()
    assert "src='http" not in page and page.count("data:image/png;base64,") >= 4, "self-contained, with plots"
    assert "cwnd grows only while cwnd-limited" in page, "the page says which growth rule was used"
    assert summary["command"] == "millinet study milliproxy --quick --runs 2"
    assert page.index("Verdict: " + summary["verdict"][0]) < page.index("<table"), "the page opens with the verdict"
    assert {p.name for p in (out / "plots").iterdir()} >= {"time-series--seed-1--gnb.png", "time-series--seed-1--gnb-bdp.png", "time-series--seed-1--none.png"}
    assert "| proxy |" in (out / "table.md").read_text().replace("  ", " ")


def test_points_cover_the_grid_with_their_parameters(study):
    _, _, summary = study
    points = summary["points"]
    # 2 D_RS x 2 B_RLC, each with milliProxy at the gNB under the default policy (calibrated)
    # and under the published rule (bdp).
    assert len(points) == 8
    assert {(p["arm"], p["proxy"], p["placement"], p["policy"]) for p in points} == {("gnb", "milliproxy", "gnb", "calibrated"), ("gnb-bdp", "milliproxy", "gnb", "bdp")}
    assert summary["policies"] == ["calibrated", "bdp"]
    assert {(p["d_rs_ms"], p["b_rlc_bytes"]) for p in points} == {(5.0, 10_000_000), (5.0, 20_000_000), (20.0, 10_000_000), (20.0, 20_000_000)}
    assert all(p["cc"] == "cubic" and p["pairs"] == 2 and p["d_info_ms"] == 0.0 for p in points)
    for p in points:
        low, high = p["latency_ratio_ci"]
        assert low <= p["latency_ratio"] <= high


def test_ratios_are_paired_means_over_the_same_seeds(study):
    out, _, summary = study
    runs = store.load(out / "store")
    for p in summary["points"]:
        point = (runs["links.0.delay_s"] * 1e3).round(6).eq(p["d_rs_ms"]) & runs["ues.0.rlc_buffer_bytes"].eq(p["b_rlc_bytes"])
        base = runs[point & runs["arm"].eq("none")].set_index("seed")
        treat = runs[point & runs["arm"].eq(p["arm"])].set_index("seed")
        assert sorted(base.index) == sorted(treat.index) == [1, 2]
        latency = "flows.0.ran_latency_ms.mean"
        goodput = "flows.0.goodput_bps"
        assert p["latency_ratio"] == pytest.approx(base[latency].mean() / treat[latency].mean())
        assert p["goodput_ratio"] == pytest.approx(treat[goodput].mean() / base[goodput].mean())


def test_physics_and_the_proxy_effect(study):
    out, _, summary = study
    runs = store.load(out / "store")
    assert (runs["status"] == "ok").all()
    # Goodput never exceeds what the radio could carry.
    assert (runs["ues.0.utilization"] <= 1.0).all(), runs["ues.0.utilization"].max()
    # Same seed, same channel: the proxy changes the traffic, never the radio.
    los = runs.groupby(["seed", "links.0.delay_s", "ues.0.rlc_buffer_bytes"])["ues.0.los_fraction"].nunique()
    assert (los == 1).all()
    # milliProxy at the gNB cuts the RAN latency at every point under either policy. At D_RS
    # 20 ms the bdp rule's limit cycle starves the radio (docs/studies.md): it loses goodput
    # that calibrated, whose window is continuous in the RLC queue, keeps.
    points = {(p["arm"], p["d_rs_ms"], p["b_rlc_bytes"]): p for p in summary["points"]}
    assert all(p["latency_ratio"] > 1.5 for p in points.values()), [(k, p["latency_ratio"]) for k, p in points.items()]
    assert all(p["goodput_ratio"] > 0.95 for (arm, _, _), p in points.items() if arm == "gnb")
    for b_rlc in (10_000_000, 20_000_000):
        assert points["gnb", 20.0, b_rlc]["goodput_ratio"] > points["gnb-bdp", 20.0, b_rlc]["goodput_ratio"] + 0.1
    baselines = summary["baselines"]
    assert len(baselines) == 4 and all(b["proxy"] is None and "latency_ratio" not in b for b in baselines)


def test_a_tcp_profile_runs_every_server_with_that_tcp_and_the_page_names_it(tmp_path):
    out = tmp_path / "ns3"
    ok(millinet("study", "milliproxy", "--quick", "--runs", "1", "--tcp-profile", "ns3-2017", "--out", out, "--quiet"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["command"] == "millinet study milliproxy --quick --runs 1 --tcp-profile ns3-2017"
    # The growth rule is read back from the runs' resolved scenario: the profile's.
    assert (summary["tcp_profile"], summary["cwnd_growth"]) == ("ns3-2017", "always")
    assert "TCP profile: ns3-2017" in (out / "index.html").read_text()
    runs = store.load(out / "store")
    assert len(runs) == 12 and set(runs["flows.0.tcp_profile"]) == {"ns3-2017"}
    flow = tomllib.loads(resolve("milliproxy", overrides={"flows.0.tcp_profile": "ns3-2017"}))["flows"][0]
    assert (flow["sack"], flow["initial_window_segments"], flow["delayed_ack"], flow["min_rto_s"]) == (False, 1, "rfc5681", 1.0)


def test_the_resolved_scenario_runs_the_calibrated_policy_by_default():
    proxy = tomllib.loads(resolve("milliproxy", overrides={"proxy.node": "gnb"}))["proxy"]
    assert (proxy["policy"], proxy["flow_buffer_bytes"]) == ("calibrated", 40_000_000)
    # d* = max(3 ms, 0.15 RTT_min) and g = 0.5 are the defaults, left out of the resolved text.
    assert not {"target_queue_delay_s", "target_queue_rtt_fraction", "target_queue_gain"} & set(proxy)
    bdp = tomllib.loads(resolve("milliproxy", overrides={"proxy.node": "gnb", "proxy.policy": "bdp", "proxy.target_queue_delay_s": 0.002}))["proxy"]
    assert (bdp["policy"], bdp["target_queue_delay_s"]) == ("bdp", 0.002)


def test_tcp_profiles_do_not_reach_the_emulators_kernel_tcp(tmp_path):
    result = millinet("study", "milliproxy", "--emulate", "--tcp-profile", "ns3-2017", "--out", tmp_path / "x")
    assert result.returncode == 2 and "--tcp-profile" in result.stderr, result.stderr



def test_policies_pair_every_milliproxy_arm_per_policy_on_the_same_seeds(tmp_path):
    out = tmp_path / "policies"
    ok(millinet("study", "milliproxy", "--quick", "--runs", "1", "--policies", "bdp,target-queue", "--out", out, "--quiet"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policies"] == ["bdp", "target-queue"]
    assert summary["command"] == "millinet study milliproxy --quick --runs 1 --policies bdp,target-queue"
    # The milliProxy arm runs once per policy named, ARM-POLICY (only the default policy's
    # keeps the shipped name); the runs without a proxy are shared.
    arms = {(p["arm"], p["policy"]) for p in summary["points"]}
    assert arms == {("gnb-bdp", "bdp"), ("gnb-target-queue", "target-queue")}
    runs = store.load(out / "store")
    assert len(runs) == 4 * 3 and (runs["status"] == "ok").all()
    for arm, policy in (("gnb-bdp", "bdp"), ("gnb-target-queue", "target-queue")):
        key = runs.loc[runs["arm"] == arm, "run_key"].iloc[0]
        resolved = tomllib.loads((out / "store" / "runs" / key / "scenario.toml").read_text())
        assert (resolved["proxy"]["node"], resolved["proxy"]["policy"]) == ("gnb", policy)
    # Ratios recomputed from the store: the twin is paired with the same no-proxy runs.
    goodput = "flows.0.goodput_bps"
    for p in (p for p in summary["points"] if p["arm"] == "gnb-target-queue"):
        point = (runs["links.0.delay_s"] * 1e3).round(6).eq(p["d_rs_ms"]) & runs["ues.0.rlc_buffer_bytes"].eq(p["b_rlc_bytes"])
        base, treat = (runs.loc[point & runs["arm"].eq(arm), goodput] for arm in ("none", "gnb-target-queue"))
        assert p["pairs"] == 1 and p["goodput_ratio"] == pytest.approx(treat.iloc[0] / base.iloc[0])
    assert (out / "plots" / "goodput-vs-ran-latency-per-point-and-policy.png").stat().st_size > 10_000
    assert "Policies run: bdp, target-queue" in (out / "index.html").read_text()
    # The sweep the study ran is a sweep file of its own, with the twins' pairings.
    sweep = load_sweep(out / "milliproxy-quick-policies.toml")
    assert {p.name for p in sweep.pairings} == {"gnb-bdp-vs-none", "gnb-target-queue-vs-none"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["milliproxy", "--policies", "bdp,,target-queue"], "an empty name"),
        (["milliproxy", "--policies", "bdp,bdp"], "a policy named twice"),
        (["train", "--policies", "bdp"], "only the milliproxy study runs flow-window policies"),
    ],
)
def test_bad_policy_lists_are_refused_before_anything_runs(tmp_path, args, message):
    result = millinet("study", *args, "--out", tmp_path / "x")
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "x").exists()


def test_an_unknown_policy_is_named_with_the_policies_there_are(tmp_path):
    result = millinet("study", "milliproxy", "--quick", "--policies", "bdp,outage", "--out", tmp_path / "x")
    assert result.returncode != 0
    assert 'proxy.policy = "outage": unknown policy; allowed: one of bdp' in result.stderr and "target-queue" in result.stderr, result.stderr
    assert not (tmp_path / "x" / "store").exists(), "nothing ran"


def test_the_full_sweep_gains_a_twin_per_policy_in_every_part():
    from millinet.studies.milliproxy import policy_sweep_text
    from millinet.sweep.spec import load_sweep_text

    text = policy_sweep_text("milliproxy", ["calibrated", "bdp"], "millinet study milliproxy")
    sweep = load_sweep_text(text, Path("milliproxy-policies.toml"))
    assert [list(part.arms) for part in sweep.parts] == [
        ["none", "gnb", "gnb-bdp"],
        ["edge", "edge-bdp", "edge-t10", "edge-t10-bdp", "split"],
    ]
    assert sweep.parts[1].arms["edge-t10-bdp"] == {"proxy.node": "pgw", "proxy.d_info_s": 0.003, "proxy.t_info_s": 0.010, "proxy.policy": "bdp"}
    assert "proxy.policy" not in sweep.parts[1].arms["edge-t10"], "the default policy's arm is the shipped one"
    assert [(p.name, p.treatment) for p in sweep.pairings if "bdp" in p.name] == [
        ("gnb-bdp-vs-none", "gnb-bdp"),
        ("edge-bdp-vs-none", "edge-bdp"),
        ("edge-t10-bdp-vs-none", "edge-t10-bdp"),
    ]
    assert sweep.seeds == tuple(range(1, 51))


def test_set_overrides_every_run_of_a_study_and_its_command_says_so(tmp_path):
    out = tmp_path / "set"
    ok(millinet("study", "mptcp", "--quick", "--set", "duration_s=1.0", "--set", "ues.1.rlc_buffer_bytes=500000", "--out", out, "--quiet"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["command"] == "millinet study mptcp --quick --set duration_s=1.0 --set ues.1.rlc_buffer_bytes=500000"
    assert summary["duration_s"] == 1.0, "--set beats the sweep's own [set] (3 s)"
    runs = store.load(out / "store")
    assert len(runs) == 15 and (runs["status"] == "ok").all()
    for key in runs["run_key"]:
        resolved = tomllib.loads((out / "store" / "runs" / key / "scenario.toml").read_text())
        assert (resolved["duration_s"], resolved["ues"][1]["rlc_buffer_bytes"]) == (1.0, 500_000)


@pytest.mark.parametrize(
    ("setting", "message"),
    [("flows.0.bogus=1", "flows.0.bogus: unknown field `bogus`"), ("duration_s", "expected KEY=VALUE"), ("duration_s=-1", "duration_s")],
)
def test_a_bad_study_override_is_refused_before_anything_runs(tmp_path, setting, message):
    result = millinet("study", "mptcp", "--quick", "--set", setting, "--out", tmp_path / "x")
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x" / "store").exists(), "nothing ran"
