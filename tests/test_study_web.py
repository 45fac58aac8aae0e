"""`millinet study web --quick`: headless Chromium over the emulated route, three arms, two
conditions, two paired seeds (root; about two minutes)."""

import json
import os

import pytest

from conftest import millinet as cli
from conftest import ok

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the web study runs the emulator: root only")


def test_the_web_study_writes_its_page_from_real_page_loads(tmp_path):
    out = tmp_path / "study"
    result = ok(cli("study", "web", "--quick", "--out", out, cwd=tmp_path))
    assert "Page load time" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["runs"], summary["failed_runs"], summary["seeds"]) == (12, 0, [1, 2])
    # 2 conditions x 4 pages x 3 arms, each loaded on both seeds.
    assert len(summary["points"]) == 24 and all(p["loads"] == 2 for p in summary["points"])
    for point in summary["points"]:
        # No page loads before two round trips of the wires (connection, request): 44 ms.
        assert point["load_ms"]["q1"] >= 44.0, point
        if point["condition"] == "los":
            assert point["los_share"] == 1.0
    # 48 objects take longer than 4 small ones, whatever the proxy.
    median = {(p["condition"], p["page"], p["arm"]): p["load_ms"]["median"] for p in summary["points"]}
    assert all(median[(c, "many-small", a)] > median[(c, "few-small", a)] for c, _, a in median)
    assert len(summary["paired"]) == 16 and all(p["pairs"] == 2 for p in summary["paired"])
    assert (out / "index.html").read_text().count("<img") == 2, "a box plot per condition"
    # Runs already done are reused: a second call runs nothing (no run's record is rewritten)
    # and gives the same summary.
    records = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/loads.json")}
    assert len(records) == 12
    ok(cli("study", "web", "--quick", "--out", out, cwd=tmp_path))
    assert {p: p.stat().st_mtime_ns for p in out.glob("runs/*/loads.json")} == records
    assert json.loads((out / "summary.json").read_text())["points"] == summary["points"]


def test_the_web_study_refuses_what_it_does_not_take(tmp_path):
    result = cli("study", "web", "--engine", "ray", cwd=tmp_path)
    assert result.returncode == 2 and "--engine ray" in result.stderr and "real programs" in result.stderr
