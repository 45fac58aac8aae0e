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


def test_prints_the_table_and_writes_page_and_plots(study):
    out, stdout, summary = study
    assert "latency none/proxy" in stdout and "split" in stdout
    page = (out / "index.html").read_text()
    assert "src='http" not in page and page.count("data:image/png;base64,") >= 4, "self-contained, with plots"
    assert "cwnd grows only while cwnd-limited" in page, "the page says which growth rule was used"
    assert summary["command"] == "millinet study milliproxy --quick --runs 2"
    assert {p.name for p in (out / "plots").iterdir()} >= {"time-series--seed-1--gnb.png", "time-series--seed-1--none.png"}
    assert "| proxy |" in (out / "table.md").read_text().replace("  ", " ")


def test_points_cover_the_grid_with_their_parameters(study):
    _, _, summary = study
    points = summary["points"]
    # 2 D_RS x 2 B_RLC, each with milliProxy at the gNB, at the edge and split-TCP.
    assert len(points) == 12
    kinds = {(p["proxy"], p["placement"]) for p in points}
    assert kinds == {("milliproxy", "gnb"), ("milliproxy", "edge"), ("split", "edge")}
    assert {(p["d_rs_ms"], p["b_rlc_bytes"]) for p in points} == {(5.0, 10_000_000), (5.0, 20_000_000), (20.0, 10_000_000), (20.0, 20_000_000)}
    assert all(p["cc"] == "newreno" and p["pairs"] == 2 for p in points)
    assert {p["d_info_ms"] for p in points if p["placement"] == "edge" and p["proxy"] == "milliproxy"} == {3.0}
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
    # milliProxy at the gNB cuts the RAN latency at every point; split-TCP does not keep
    # the RLC queue short (its own CUBIC fills it).
    gnb = [p for p in summary["points"] if p["arm"] == "gnb"]
    assert all(p["latency_ratio"] > 2 for p in gnb), [(p["d_rs_ms"], p["latency_ratio"]) for p in gnb]
    split = [p for p in summary["points"] if p["arm"] == "split"]
    assert np.mean([p["latency_ratio"] for p in split]) < np.mean([p["latency_ratio"] for p in gnb])
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
    assert len(runs) == 16 and set(runs["flows.0.tcp_profile"]) == {"ns3-2017"}
    flow = tomllib.loads(resolve("milliproxy", overrides={"flows.0.tcp_profile": "ns3-2017"}))["flows"][0]
    assert (flow["sack"], flow["initial_window_segments"], flow["delayed_ack"], flow["min_rto_s"]) == (False, 1, True, 1.0)


def test_tcp_profiles_do_not_reach_the_emulators_kernel_tcp(tmp_path):
    result = millinet("study", "milliproxy", "--emulate", "--tcp-profile", "ns3-2017", "--out", tmp_path / "x")
    assert result.returncode == 2 and "--tcp-profile" in result.stderr, result.stderr



def test_policies_pair_every_milliproxy_arm_per_policy_on_the_same_seeds(tmp_path):
    out = tmp_path / "policies"
    ok(millinet("study", "milliproxy", "--quick", "--runs", "1", "--policies", "bdp,target-queue", "--out", out, "--quiet"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policies"] == ["bdp", "target-queue"]
    assert summary["command"] == "millinet study milliproxy --quick --runs 1 --policies bdp,target-queue"
    # The shipped arms keep their names (and runs); each milliProxy arm gains a target-queue
    # twin; split-TCP has no flow window and stays single.
    arms = {(p["arm"], p["policy"]) for p in summary["points"]}
    assert arms == {("gnb", "bdp"), ("edge", "bdp"), ("gnb-target-queue", "target-queue"), ("edge-target-queue", "target-queue"), ("split", None)}
    runs = store.load(out / "store")
    assert len(runs) == 4 * 6 and (runs["status"] == "ok").all()
    for arm, policy in (("gnb", "bdp"), ("gnb-target-queue", "target-queue")):
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
    assert {p.name for p in sweep.pairings} == {"gnb-vs-none", "gnb-target-queue-vs-none", "edge-vs-none", "edge-target-queue-vs-none", "split-vs-none"}


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

    text = policy_sweep_text("milliproxy", ["bdp", "calibrated"], "millinet study milliproxy --policies bdp,calibrated")
    sweep = load_sweep_text(text, Path("milliproxy-policies.toml"))
    assert [list(part.arms) for part in sweep.parts] == [
        ["none", "gnb", "gnb-calibrated"],
        ["edge", "edge-calibrated", "edge-t10", "edge-t10-calibrated", "split"],
    ]
    assert sweep.parts[1].arms["edge-t10-calibrated"] == {"proxy.node": "pgw", "proxy.d_info_s": 0.003, "proxy.t_info_s": 0.010, "proxy.policy": "calibrated"}
    assert [(p.name, p.treatment) for p in sweep.pairings if "calibrated" in p.name] == [
        ("gnb-calibrated-vs-none", "gnb-calibrated"),
        ("edge-calibrated-vs-none", "edge-calibrated"),
        ("edge-t10-calibrated-vs-none", "edge-t10-calibrated"),
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
