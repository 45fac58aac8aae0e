"""`millinet study e2e --quick` as a user runs it: the tables and page, every point of the
quick grid, the metrics recomputed here from the store's saved time series, the outage
verdicts against the flows' RTO counters, goodput within the source rate, and the first run
repeated byte for byte."""

import math

import numpy as np
import pytest

from conftest import assert_reruns_identically, quick_study, saved_table
from millinet import store

RUNS = 11  # blockers 3, buildings 2, outage 4, traces 2 (drive, pedestrian)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "e2e")


def goodput(out, run_key):
    table = saved_table(out, run_key, "goodput")
    return table[table["flow"] == 0].set_index("t")["goodput_bps"]


def test_prints_the_tables_and_writes_the_page(study):
    out, stdout, summary = study
    for title in ("Blockers", "Buildings", "Forced outage", "Route traces"):
        assert title in stdout
    page = (out / "index.html").read_text()
    assert "Reproduce: millinet study e2e --quick." in page and "recorded once with" in page
    assert "src='http" not in page and page.count("data:image/png;base64,") >= 6, "self-contained, with plots"
    assert {"outage--cwnd-over-time.png", "blockers--goodput-over-time.png"} <= {p.name for p in (out / "plots").iterdir()}


def test_every_promised_point(study):
    _, _, summary = study
    assert summary["runs"] == RUNS and summary["failed_runs"] == 0
    assert [p["flow"] for p in summary["blockers"]] == ["udp", "newreno", "cubic"]
    assert {(p["source_rate_bps"], p["b_rlc_bytes"]) for p in summary["buildings"]} == {(1e9, 10_000_000), (1e9, 3_000_000)}
    assert {(p["outage_s"], p["cc"]) for p in summary["outage"]} == {(0.4, "newreno"), (0.4, "cubic"), (1.5, "newreno"), (1.5, "cubic")}
    assert [(p["route"], p["cc"]) for p in summary["trace"]] == [("pedestrian, 3 m/s", "cubic"), ("vehicular (5Gophers drive)", "cubic")]
    for p in summary["trace"]:
        # Goodput never exceeds the capacity the trace offered (the radio's achievable rate).
        assert 0 < p["series_goodput_bps"]["mean"] <= p["capacity_bps"]["mean"], p
    for p in summary["blockers"]:
        assert p["time_to_source_rate_s"]["mean"] is not None and p["burst_peak_bps"]["mean"] is not None, p


def test_blocker_metrics_recomputed_from_the_series(study, runs):
    out, _, summary = study
    blockers = runs[runs["scenario"] == "e2e-blockers"]
    for p in summary["blockers"]:
        kind = "udp" if p["flow"] == "udp" else "tcp"
        row = blockers[blockers["flows.0.kind"].eq(kind) & (blockers["flows.0.cc"].eq(p["flow"]) | (kind == "udp"))].iloc[0]
        series = goodput(out, row["run_key"])
        # The first bin from which the median of 100 ms (10 bins) is 90% of 1 Gbit/s.
        ahead = np.array([series.iloc[i : i + 10].median() for i in range(len(series) - 9)])
        first = series.index[np.flatnonzero(ahead >= 0.9e9)[0]]
        assert p["time_to_source_rate_s"]["mean"] == pytest.approx(first, abs=1e-9)
        assert p["series_goodput_bps"]["mean"] == pytest.approx(series.mean())
        los = saved_table(out, row["run_key"], "ues")["los"].to_numpy(int)
        assert p["nlos_transitions"]["mean"] == np.count_nonzero(np.diff(los) == 1) > 0
        # The bins' mean is the run's goodput: what the summary counted, never above the source.
        assert series.mean() == pytest.approx(row["flows.0.goodput_bps"], rel=0.01)
        assert row["flows.0.goodput_bps"] <= 1e9
        assert p["nlos_goodput_bps"]["mean"] < p["los_goodput_bps"]["mean"]


def test_outage_verdicts_match_the_rto_counters(study, runs):
    out, _, summary = study
    verdicts = summary["outage_runs"]
    assert len(verdicts) == 4
    for v in verdicts:
        assert v["rto_fired"] == (v["rtos"] > 0), v
        row = runs[runs["run_key"] == v["run_key"]].iloc[0]
        assert v["rtos"] == row["flows.0.rtos"]
        flows = saved_table(out, v["run_key"], "flows")
        assert (flows["cwnd_bytes"].min() <= 1400) == v["rto_fired"]
        if v["rto_fired"]:
            # RFC 6298 with a 1 s minimum: not before a second into the outage.
            assert v["rto_after_s"] >= 1.0
    # The classic result: a 0.4 s outage stays under the 1 s minimum RTO, 1.5 s does not. (The
    # RTO runs from the tail loss probe, sent 2·SRTT after the last transmission: RFC 8985 §7.3.
    # A 1.0 s outage timed out before RACK-TLP and no longer does, as in Linux.)
    assert {v["outage_s"]: v["rto_fired"] for v in verdicts if v["cc"] == "cubic"} == {0.4: False, 1.5: True}


def test_outage_rates_from_the_series(study):
    out, _, summary = study
    for v, p in ((v, p) for v in summary["outage_runs"] for p in summary["outage"] if (p["outage_s"], p["cc"]) == (v["outage_s"], v["cc"])):
        series = goodput(out, v["run_key"])
        before = series[(series.index >= 2.0 - 1e-9) & (series.index < 3.0 - 1e-9)].mean()
        assert p["pre_outage_bps"]["mean"] == pytest.approx(before)
        recovery = p["recovery_s"]["mean"]
        if recovery is not None and not math.isnan(recovery):
            start = 3.0 + v["outage_s"] + recovery
            assert series[(series.index >= start - 1e-9)].iloc[:50].median() >= 0.9 * before


def test_goodput_within_the_capacity(runs):
    for _, row in runs.iterrows():
        assert row["flows.0.goodput_bps"] <= row["ues.0.mean_rate_bps"] * 1.001, row["run_key"]


def test_first_run_is_deterministic(study, runs, tmp_path):
    out, _, _ = study
    assert_reruns_identically(store.run_dir(out / "store", runs["run_key"].iloc[0]), tmp_path / "again")
