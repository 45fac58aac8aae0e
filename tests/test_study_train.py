"""`millinet study train --quick` as a user runs it: the tables on the terminal, the page and
plots, summary.json's points and MSS ratios (recomputed here from the store), and what the
train route must show (a handover in every run, UDP as the ceiling, mmWave far above LTE)."""

import pytest

from conftest import quick_study
from millinet import store

# 2 radios x 2 servers x (CUBIC, BBR, UDP) x 2 MSS, one seed.
CONFIGURATIONS = 24


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "train")


def test_prints_the_tables_and_writes_the_page(study):
    out, stdout, summary = study
    assert "Per configuration" in stdout and "goodput MSS 14000/1400" in stdout
    assert "mmwave" in stdout and "lte" in stdout and "udp" in stdout
    page = (out / "index.html").read_text()
    assert "Reproduce: millinet study train --quick." in page
    assert "Goodput ratio MSS 14000 / MSS 1400" in page and "<th>goodput MSS 14000/1400</th>" in page
    assert "src='http" not in page and page.count("data:image/png;base64,") >= 6, "self-contained, with plots"
    assert summary["command"] == "millinet study train --quick" and summary["duration_s"] == 20.0
    plots = {p.name for p in (out / "plots").iterdir()}
    assert {"cwnd-over-time--mmwave--one-run-per-cc.png", "handovers-and-bearer-switches.png"} <= plots
    assert "| goodput MSS 14000/1400 |" in (out / "table.md").read_text()


def test_points_cover_the_quick_grid(study):
    _, _, summary = study
    points = summary["points"]
    assert len(points) == CONFIGURATIONS and summary["runs"] == CONFIGURATIONS and summary["failed_runs"] == 0
    assert {(p["radio"], p["server"], p["buffer"], p["b_rlc_bytes"]) for p in points} == {
        ("mmwave", "remote", "100% BDP", 15_000_000),
        ("mmwave", "edge", "100% BDP", 1_500_000),
        ("lte", "remote", "50% BDP", 200_000),
        ("lte", "edge", "50% BDP", 80_000),
    }
    assert {p["cc"] for p in points} == {"cubic", "bbr", "udp"} and {p["mss"] for p in points} == {1400, 14000}
    for p in points:
        assert (p["rtt_ms"]["mean"] is None) == (p["cc"] == "udp"), p
    remote = [p["rtt_ms"]["mean"] for p in points if p["server"] == "remote" and p["cc"] != "udp"]
    edge = [p["rtt_ms"]["mean"] for p in points if p["server"] == "edge" and p["cc"] != "udp"]
    assert min(remote) > 40 > 20 > max(edge), "the remote server's RTT is at least its 40 ms minimum"


def test_mss_ratios_are_paired_means_from_the_store(study):
    out, _, summary = study
    runs = store.load(out / "store")
    ratios = summary["mss_ratios"]
    assert len(ratios) == CONFIGURATIONS // 2
    for r in ratios:
        kind = "udp" if r["cc"] == "udp" else "tcp"
        scenario = "train" if r["radio"] == "mmwave" else "train-lte"
        same = runs["scenario"].eq(scenario) & runs["ues.0.rlc_buffer_bytes"].eq(r["b_rlc_bytes"]) & runs["flows.0.kind"].eq(kind)
        if kind == "tcp":
            same &= runs["flows.0.cc"].eq(r["cc"])
        goodput = runs[same].set_index("arm")["flows.0.goodput_bps"]
        assert len(goodput) == 2 and r["pairs"] == 1
        assert r["goodput_ratio"] == pytest.approx(goodput["mss14000"] / goodput["mss1400"])


def test_the_route_hands_over_and_udp_is_the_ceiling(study):
    out, _, summary = study
    points = summary["points"]
    # 20 s runs pass the first handover (~18.6 s) in every configuration; no gNB is lost yet.
    assert all(p["handovers"] >= 1 and p["bearer_switches"] == 0 for p in points)
    assert all(p["goodput_of_udp"] is None or 0 < p["goodput_of_udp"] <= 1.02 for p in points)
    udp = {(p["radio"], p["server"], p["mss"]): p["goodput_bps"]["mean"] for p in points if p["cc"] == "udp"}
    for server in ("remote", "edge"):
        assert udp[("mmwave", server, 1400)] > 15 * udp[("lte", server, 1400)]
        assert 2.5e9 < udp[("mmwave", server, 1400)] < 3.2e9 and 100e6 < udp[("lte", server, 1400)] < 150e6
    page = (out / "index.html").read_text()
    assert "handovers and bearer switches" in page
