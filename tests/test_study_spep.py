"""`millinet study spep-emulation --quick` as a user runs it: the tables and page, every point
of the quick grid, download times against the flows' own completion, the offered capacity
and η recomputed here from the store's saved series, no download faster than the capacity
it ran over, the paired ratios, and the first run repeated byte for byte."""

import math

import numpy as np
import pytest

from conftest import assert_quick_page, assert_reruns_identically, quick_study, saved_table
from millinet import store

CHANNELS = ["lte", "mmwave-1"]
SIZES = [10_000, 1_000_000]
SERVERS = {"near": 0.005, "far": 0.05}
PROXIES = {"none": "", "split": "edge"}
SEEDS = 5


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "spep-emulation")


def rows_of(runs, point):
    same = runs["arm"].eq(point["channel"]) & runs["links.0.delay_s"].eq(SERVERS[point["server"]]) & runs["flows.0.file_bytes"].eq(point["file_bytes"])
    if "proxy" in point:
        same &= runs["proxy.node"].eq(PROXIES[point["proxy"]])
    return runs[same]


def test_prints_the_tables_and_writes_the_page(study):
    page = assert_quick_page(study, "spep-emulation", ["Download time and efficiency", "Split proxy vs none", "1 MB"])
    assert page.count("data:image/png;base64,") == 2 * len(SIZES), "download time and η per file size"


def test_every_promised_point(study):
    _, _, summary = study
    assert summary["runs"] == len(CHANNELS) * len(SIZES) * len(SERVERS) * len(PROXIES) * SEEDS and summary["failed_runs"] == 0
    grid = {(c, s, f) for c in CHANNELS for s in SERVERS for f in SIZES}
    assert {(p["channel"], p["server"], p["file_bytes"], p["proxy"]) for p in summary["points"]} == {(*g, x) for g in grid for x in PROXIES}
    assert all(p["runs"] == SEEDS and p["finished"] == SEEDS for p in summary["points"]), "every quick download finishes"
    assert {(p["channel"], p["server"], p["file_bytes"]) for p in summary["split_vs_none"]} == grid
    assert all(p["pairs"] == SEEDS for p in summary["split_vs_none"])


def test_download_times_capacity_and_efficiency_recomputed_from_the_store(study, runs):
    out, _, summary = study
    for p in summary["points"]:
        times, etas = [], []
        for _, row in rows_of(runs, p).iterrows():
            time_s = row["flows.0.download_time_s"]
            queues = saved_table(out, row["run_key"], "queues")
            rate = queues[queues["queue"] == 2].set_index("t")["rate_bps"]
            # The bottleneck's rate is the capacity process's: it changes only at 100 ms updates.
            changes = rate.index[1:][np.diff(rate.to_numpy()) != 0]
            assert np.allclose(changes / 0.1, np.round(changes / 0.1)), changes
            # Each 10 ms sample holds its rate until the next: the capacity offered over the
            # download carried the whole file (headers are extra), so no download beats it.
            offered_bits = (rate[rate.index < time_s - 1e-9] * 0.01).sum()
            assert 8 * p["file_bytes"] <= offered_bits + rate.max() * 0.01, (p, row["run_key"])
            capacity = rate[rate.index < time_s - 1e-9].mean()
            times.append(time_s)
            etas.append((8 * p["file_bytes"] / time_s) / (1.2 * capacity))
        assert p["download_time_s"]["median"] == pytest.approx(float(np.median(times)))
        assert p["efficiency"]["median"] == pytest.approx(float(np.median(etas)))
        assert p["download_time_s"]["q1"] <= p["download_time_s"]["median"] <= p["download_time_s"]["q3"]


def test_paired_ratios_divide_runs_of_the_same_seed(study, runs):
    _, _, summary = study
    for p in summary["split_vs_none"]:
        rows = rows_of(runs, p)
        by_seed = rows.pivot_table(index="seed", columns="proxy.node", values="flows.0.download_time_s", aggfunc="first")
        ratios = by_seed["edge"] / by_seed[""]
        assert p["ratio"]["median"] == pytest.approx(float(ratios.median()))
        assert p["split_faster"] == int((ratios < 1).sum())


def test_the_split_proxy_shortens_far_downloads(study):
    """The mechanism the study is known for: the proxy answers the server from the edge, so
    the far server's slow start runs over the short edge-client loop; over a far server a
    10 kB download (a few round trips, all in slow start) is faster with it."""
    _, _, summary = study
    far_small = [p for p in summary["split_vs_none"] if p["server"] == "far" and p["file_bytes"] == 10_000]
    assert far_small and all(p["ratio"]["median"] < 1 for p in far_small), far_small


def test_first_run_is_deterministic(study, runs, tmp_path):
    out, _, _ = study
    assert_reruns_identically(store.run_dir(out / "store", runs["run_key"].iloc[0]), tmp_path / "again")


def test_no_nan_in_the_summary(study):
    _, _, summary = study
    for p in summary["points"]:
        assert not any(math.isnan(p[m]["median"]) for m in ("download_time_s", "efficiency")), p
