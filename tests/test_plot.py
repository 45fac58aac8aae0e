"""`millinet plot`: RAN panels when the run has a `ues` table, lines averaged per plotting bin,
handovers and bearer switches marked and the serving cell drawn when the run has several cells."""

import json

import matplotlib.image
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from conftest import SHORT, millinet, ok
from millinet import mobility, outputs, plot


@pytest.fixture(scope="module")
def mmwave_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("milliproxy")
    ok(millinet("run", "milliproxy", *SHORT, "--out", out, "--quiet"))
    return out


@pytest.fixture(scope="module")
def handover_run(tmp_path_factory):
    """The walking UE of `handover` past its first handover (gnb1 -> gnb2, at about 19.1 s)."""
    out = tmp_path_factory.mktemp("handover")
    ok(millinet("run", "handover", "--set", "duration_s=22", "--out", out, "--quiet"))
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
    binned = plot.binned(rows, "v", 0.02)
    assert len(binned) == 50
    assert (binned == 0.5).all()


def test_handover_is_marked_and_the_serving_cell_drawn(handover_run, tmp_path):
    tables = outputs.read_tables(handover_run)
    events = mobility.from_tables(tables, mobility.cell_names(handover_run))
    assert [(e.kind, e.source, e.target, e.ue) for e in events] == [("handover", "gnb1", "gnb2", 0)]
    assert 18.5 < events[0].t_s < 20.0, events
    # summary.json lists the same events as the table.
    summary = json.loads((handover_run / "summary.json").read_text())
    assert mobility.from_summary(summary) == events
    panels, _ = panels_and_height(handover_run, tmp_path / "handover.png")
    assert panels[-1] == "serving cell" and panels[:-1][:2] == ["SINR", "achievable rate / goodput"]


def test_markers_are_vertical_lines_styled_and_labelled_per_kind():
    events = [
        mobility.Event(1.0, 0, "handover", "gnb1", "gnb2"),
        mobility.Event(2.0, 0, "switch_to_anchor", "gnb2", "enb"),
        mobility.Event(2.04, 0, "switch_from_anchor", "enb", "gnb3"),
        mobility.Event(3.0, 0, "handover", "gnb3", "gnb4"),
    ]
    fig, (top, other) = plt.subplots(2, 1)
    plot.mark_events(top, events, labelled=True)
    plot.mark_events(other, events, labelled=False)
    lines = top.get_lines()
    assert [line.get_xdata()[0] for line in lines] == [1.0, 2.0, 2.04, 3.0]
    assert len({line.get_linestyle() for line in lines}) == 3, "one style per kind"
    # Each kind once in the legend, the target cells written at the top of the first panel only.
    assert top.get_legend_handles_labels()[1] == ["handover", "bearer to LTE anchor", "bearer back from anchor"]
    assert [text.get_text() for text in top.texts] == ["→gnb2", "→enb", "→gnb3", "→gnb4"]
    assert len(other.get_lines()) == 4 and not other.texts and not other.get_legend_handles_labels()[1]
    plt.close(fig)


def test_single_cell_run_has_no_markers(mmwave_run):
    tables = outputs.read_tables(mmwave_run)
    assert "mobility" in tables and len(tables["mobility"]) == 0
    assert mobility.from_tables(tables, mobility.cell_names(mmwave_run)) == []
    assert mobility.cell_names(mmwave_run) == ["gnb"]
