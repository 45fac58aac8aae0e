"""`millinet study dense --quick` as a user runs it (docs/studies.md#dense): the tables and page,
every point of the quick grid, the geometry classes, and what interference must do to the same
UEs: never raise a UE's SINR, lower the grid's goodput, leave the handovers (A3 measures the
interference-free RSRP) as they were; the run without interference has no SIR column."""

import numpy as np
import pytest
from PIL import Image

from conftest import assert_quick_page, console_messages, in_browser, quick_study, saved_table

CCS = ["cubic", "bbr"]
ARMS = ["full", "none"]
UES = 100


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "dense")


def test_prints_the_tables_and_writes_the_page(study):
    page = assert_quick_page(study, "dense", ["Cell-edge against cell-centre UEs", "The grid, per congestion control"])
    assert page.count("data:image/png;base64,") == 2


def test_every_promised_point(study):
    _, _, summary = study
    assert summary["runs"] == len(CCS) * len(ARMS) and summary["failed_runs"] == 0
    assert [(p["cc"], p["interference"]) for p in summary["arms"]] == [(cc, arm) for cc in CCS for arm in ARMS]
    assert [(p["cc"], p["interference"], p["class"]) for p in summary["classes"]] == [(cc, arm, c) for cc in CCS for arm in ARMS for c in ("edge", "middle", "centre")]
    assert len(summary["ue_runs"]) == len(CCS) * len(ARMS) * UES


def test_geometry_classes_hold_in_every_arm(study):
    _, _, summary = study
    by_ue = {}
    for u in summary["ue_runs"]:
        by_ue.setdefault(u["ue"], set()).add((u["class"], u["geometry_sinr_db"]))
    assert all(len(v) == 1 for v in by_ue.values()), "one class and geometry per UE and seed"
    classes = {c: [next(iter(v))[1] for v in by_ue.values() if next(iter(v))[0] == c] for c in ("edge", "middle", "centre")}
    assert len(classes["edge"]) == len(classes["centre"]) == UES // 5
    assert max(classes["edge"]) < min(classes["middle"]) <= max(classes["middle"]) < min(classes["centre"])


def test_interference_costs_the_same_ues_and_moves_no_handover(study):
    _, _, summary = study
    runs = {(u["cc"], u["interference"], u["ue"]): u for u in summary["ue_runs"]}
    arms = {(p["cc"], p["interference"]): p for p in summary["arms"]}
    for cc in CCS:
        for ue in range(UES):
            full, none = runs[(cc, "full", ue)], runs[(cc, "none", ue)]
            # The sampled SINR is the latest computed, up to a CQI period old: a tenth of a dB
            # of shadowing's drift at most, never a gain from interference beyond it.
            assert full["sinr_db"] <= none["sinr_db"] + 0.1, (cc, ue, full["sinr_db"], none["sinr_db"])
            assert full["handovers"] == none["handovers"], (cc, ue)
            assert none["sir_db"] is None and none["inr_db"] is None, "no SIR nor INR without interference (null: ±inf)"
        assert arms[(cc, "full")]["total_goodput_bps"]["mean"] < arms[(cc, "none")]["total_goodput_bps"]["mean"], cc


def test_the_saved_series_have_sir_and_inr_only_with_interference(study):
    out, _, summary = study
    keys = {(u["cc"], u["interference"]): u["run_key"] for u in summary["ue_runs"]}
    full = saved_table(out, keys[("cubic", "full")], "ues")
    none = saved_table(out, keys[("cubic", "none")], "ues")
    assert {"sir_db", "inr_db"} <= set(full.columns) and not {"sir_db", "inr_db"} & set(none.columns)
    finite = full[full["inr_db"] > float("-inf")]
    # Where there is interference, SINR = SNR − 10 log10(1 + I/N) and SIR = SNR − INR: so
    # SINR ≤ SIR and SINR ≤ SNR; S/(N+I) from SIR and INR holds to rounding.
    snr = finite["sir_db"] + finite["inr_db"]
    assert np.allclose(finite["sinr_db"], snr - 10 * np.log10(1 + 10 ** (finite["inr_db"] / 10)), atol=1e-6)
    assert len(finite) > 0.5 * len(full)


def test_the_page_in_headless_chromium(study, tmp_path):
    out, _, _ = study
    shot, screen = tmp_path / "page.png", (1280, 2400)
    result = in_browser(out / "index.html", f"--window-size={screen[0]},{screen[1]}", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.exists(), result.stderr[-3000:]
    assert console_messages(result.stderr) == []
    with Image.open(shot) as image:
        pixels = image.convert("L").histogram()
    assert 0.05 < 1 - max(pixels) / sum(pixels) < 0.95, "not blank, not black"
    dom = in_browser(out / "index.html", "--dump-dom").stdout
    assert "Dense urban street grid (dense-quick)" in dom
    assert dom.count("<table") == 2 and dom.count("<img") == 2
