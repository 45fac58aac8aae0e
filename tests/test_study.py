"""`millinet study milliproxy --quick` as a user runs it: the table, summary.json's points with
their paired ratios (recomputed here from the store independently), the page and plots, and
the behaviour the study exists to show."""

import json
import tomllib

import numpy as np
import pytest

from millinet import resolve, store
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

