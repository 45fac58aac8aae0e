"""Sweeps under faults (issue 20): the sweep driver killed with SIGKILL at random moments
and started again loses no run, repeats none and never counts a half-written one as done;
a second driver on a store that one is writing is refused with a clear message."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from millinet import store as stores
from millinet.sweep import load_sweep, run_sweep

# 2 congestion controls x 6 seeds of a short dumbbell: runs of a fraction of a second, so a
# kill lands anywhere in a sweep (before, between and during runs, while storing one,
# while writing the table).
SWEEP = """\
scenario = "dumbbell"
seeds = 6
[set]
duration_s = 0.3
"links.1.rate_bps" = 10e6
[grid]
"flows.0.cc" = ["newreno", "cubic"]
"""
WALL_CLOCK = ["wall_s", "sim.wall_s", "sim.events_per_s"]
KILLS = 10


def driver(sweep_file: Path, store: Path) -> subprocess.Popen:
    """`millinet sweep` as a user starts it, in its own process group (with its workers)."""
    return subprocess.Popen(
        [sys.executable, "-m", "millinet", "sweep", str(sweep_file), "--out", str(store), "--workers", "1", "--quiet"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def assert_nothing_half_counted(store: Path, keys: set[str]) -> None:
    """Whatever a kill left: every run directory under its key is whole and one of the
    sweep's, and the table (if any) calls only whole runs "ok"."""
    for directory in (store / stores.RUNS).iterdir():
        if directory.name.startswith(stores.TMP_PREFIX):
            continue  # half-written, never counted, removed by the next driver
        assert directory.name in keys, directory
        assert stores.is_complete(store, directory.name), f"{directory} is not whole"
    if (store / stores.TABLE).exists():
        frame = stores.load(store)
        for key in frame.loc[frame["status"] == "ok", "run_key"]:
            assert stores.is_complete(store, key), f"{key} counted ok but not whole"


def test_driver_killed_at_random_moments_then_rerun_loses_and_repeats_nothing(tmp_path):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP)
    reference = run_sweep(load_sweep(sweep_file), tmp_path / "reference", workers=1, quiet=True)
    keys = set(reference["run_key"])
    assert len(keys) == 12

    store = tmp_path / "store"
    rng = random.Random(20)
    kills = 0
    while kills < KILLS:
        process = driver(sweep_file, store)
        time.sleep(rng.uniform(0.2, 2.5))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.communicate()
        if (store / stores.RUNS).exists():
            assert_nothing_half_counted(store, keys)

    finished = driver(sweep_file, store)
    _, stderr = finished.communicate()
    assert finished.returncode == 0, stderr
    frame = stores.load(store)
    assert len(frame) == 12 and frame["run_key"].is_unique and set(frame["run_key"]) == keys
    assert set(frame["status"]) == {"ok"}
    assert not list((store / stores.RUNS).glob(f"{stores.TMP_PREFIX}*"))
    assert {d.name for d in (store / stores.RUNS).iterdir()} == keys
    # The same results as the sweep that was never interrupted (runs are deterministic).
    by_key = lambda f: f.drop(columns=WALL_CLOCK + ["attempts"]).sort_values("run_key").reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(by_key(frame), by_key(reference))


def test_second_driver_on_a_busy_store_is_refused_and_the_first_finishes(tmp_path):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text('scenario = "dumbbell"\nseeds = 2\n[set]\nduration_s = 4.0\n')
    store = tmp_path / "store"
    first = driver(sweep_file, store)
    deadline = time.monotonic() + 60
    # The driver copies the sweep file into the store once it holds the store's lock.
    while not (store / stores.SWEEP_FILE).exists():
        assert time.monotonic() < deadline and first.poll() is None, "the first driver never took the store"
        time.sleep(0.02)
    second = driver(sweep_file, store)
    _, stderr = second.communicate(timeout=120)
    assert second.returncode != 0
    assert f"{store}: another sweep is writing this store" in stderr
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    frame = stores.load(store)
    assert len(frame) == 2 and set(frame["status"]) == {"ok"}
    assert_nothing_half_counted(store, set(frame["run_key"]))

