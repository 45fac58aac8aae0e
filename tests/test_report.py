"""Reports of a result store (issue 6): Student-t means per point, paired ratios with a
bootstrap interval over seeds, and `millinet report` writing Markdown and self-contained HTML."""

import re

import numpy as np
import pandas as pd
import pytest

import millinet.report as report
from conftest import millinet as cli
from conftest import ok

META = {
    "sweep": "t",
    "parameters": ["flows.0.cc", "proxy.node"],
    "pairings": [{"name": "proxy-vs-none", "baseline": "none", "treatment": "proxy"}],
    "arm_keys": {"none": [], "proxy": ["proxy.node"]},
}


def table(rows: list[tuple]) -> pd.DataFrame:
    """Rows of (cc, proxy.node, arm, seed, status, goodput) with the sweep metadata."""
    frame = pd.DataFrame(rows, columns=["flows.0.cc", "proxy.node", "arm", "seed", "status", "flows.0.goodput_bps"])
    frame.attrs["sweep"] = META
    return frame


def test_aggregate_gives_student_t_intervals_over_ok_runs():
    frame = table(
        [("cubic", "", "none", s, "ok", v) for s, v in [(1, 1.0), (2, 2.0), (3, 3.0)]]
        + [("cubic", "", "none", 4, "failed", np.nan), ("bbr", "", "none", 1, "ok", 5.0)]
    )
    result = report.aggregate(frame, ["flows.0.goodput_bps"], by=["flows.0.cc"]).set_index("flows.0.cc")
    # t(0.975, 2 dof) = 4.302653; s = 1; half width = 4.302653 / sqrt(3)
    assert result.loc["cubic", "n"] == 3 and result.loc["cubic", "mean"] == pytest.approx(2.0)
    assert result.loc["cubic", "ci_low"] == pytest.approx(2.0 - 2.484138, abs=1e-6)
    assert result.loc["cubic", "ci_high"] == pytest.approx(2.0 + 2.484138, abs=1e-6)
    assert result.loc["bbr", "n"] == 1 and np.isnan(result.loc["bbr", "ci_low"])


def test_paired_ratios_match_points_and_seeds():
    rows = []
    for cc, scale in (("cubic", 2.0), ("bbr", 0.5)):
        for seed, base in ((1, 10.0), (2, 20.0), (3, 40.0)):
            rows.append((cc, "", "none", seed, "ok", base))
            rows.append((cc, "gnb", "proxy", seed, "ok", base * scale * (1 + 0.1 * seed)))
    rows.append(("cubic", "gnb", "proxy", 9, "ok", 1e9))  # no baseline on seed 9: not a pair
    result = report.paired_ratios(table(rows), "proxy-vs-none", "flows.0.goodput_bps").set_index("flows.0.cc")
    assert list(result.columns) == ["ratio", "ci_low", "ci_high", "n"]
    expected = 2.0 * (10 * 1.1 + 20 * 1.2 + 40 * 1.3) / 70
    assert result.loc["cubic", "ratio"] == pytest.approx(expected) and result.loc["cubic", "n"] == 3
    assert result.loc["bbr", "ratio"] == pytest.approx(expected / 4)
    # The bootstrap resamples the three seeds: its interval spans the per-seed ratios' range at most.
    assert 2.2 <= result.loc["cubic", "ci_low"] < expected < result.loc["cubic", "ci_high"] <= 2.6
    again = report.paired_ratios(table(rows), "proxy-vs-none", "flows.0.goodput_bps").set_index("flows.0.cc")
    pd.testing.assert_frame_equal(result, again)  # a fixed RNG seed: the same interval every time


def test_unknown_pairing_is_named():
    with pytest.raises(ValueError, match="'nope'.*proxy-vs-none"):
        report.paired_ratios(table([]), "nope", "flows.0.goodput_bps")


def test_shipped_sweep_and_report_commands_write_a_self_contained_page(tmp_path):
    store = tmp_path / "store"
    # quick: the mmWave route, NewReno and CUBIC, arms none and gnb (milliProxy), paired.
    ok(cli("sweep", "quick", "--set", "duration_s=0.3", "--out", store, "--workers", "2", "--quiet"))
    result = ok(cli("report", store, "--out", tmp_path / "report"))
    assert "report.html" in result.stdout
    page = (tmp_path / "report" / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    # goodput, mean RTT, mean RAN latency: bars and CDF each; the goodput-vs-RTT scatter; one run's time series
    assert len(images) == 8 and all(len(image) > 1000 for image in images)
    assert "http" not in page.replace("<!DOCTYPE html>", "")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| flows.0.cc | arm | goodput, flow 0 (Mbit/s) |" in markdown
    assert "## Pairing gnb-vs-none: gnb / none" in markdown
    # 4 points in the summary, 2 (one per cc) in the pairing table.
    assert len(re.findall(r"^\| (newreno|cubic) \| (none|gnb) \|", markdown, re.M)) == 4
    assert len(re.findall(r"^\| (newreno|cubic) \| 2 \| ", markdown, re.M)) == 2


def test_report_of_a_directory_without_results_fails_clearly(tmp_path):
    result = cli("report", tmp_path)
    assert result.returncode == 2 and "not a result store" in result.stderr
