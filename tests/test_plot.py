"""`millinet plot`: RAN panels when the run has a `ues` table, lines averaged per plotting bin."""

import matplotlib.image
import pandas as pd
import pytest

from conftest import SHORT, millinet, ok
from millinet import plot


@pytest.fixture(scope="module")
def mmwave_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("milliproxy")
    ok(millinet("run", "milliproxy", *SHORT, "--out", out, "--quiet"))
    return out


def panels_and_height(run_dir, png):
    """The panels `millinet plot` reports and the height of the PNG it wrote, in pixels."""
    stdout = ok(millinet("plot", run_dir, "--out", png)).stdout
    return stdout.strip().split(": ", 1)[1].split(", "), matplotlib.image.imread(png).shape[0]


def test_mmwave_run_has_ran_panels(mmwave_run, short_run, tmp_path):
    panels, height = panels_and_height(mmwave_run, tmp_path / "mmwave.png")
    assert panels == ["SINR", "achievable rate / goodput", "cwnd", "srtt", "RLC occupancy", "RAN latency", "queue"]
    wired_panels, wired_height = panels_and_height(short_run[0], tmp_path / "wired.png")
    assert wired_panels == ["goodput", "cwnd", "srtt", "queue"], "no RAN panels without a ues table"
    assert height > wired_height * 1.5


def test_bins_hold_equally_many_samples():
    # 10 ms samples in 20 ms bins: two per bin, even where t / bin rounds below an integer.
    rows = pd.DataFrame({"t": [i * 0.01 for i in range(100)], "v": [float(i % 2) for i in range(100)]})
    binned = plot._binned(rows, "v", 0.02)
    assert len(binned) == 50
    assert (binned == 0.5).all()
