"""Sweeps (issue 6, docs/sweeps.md): grid expansion into rows, resume, atomic run
directories, retries after a killed worker, failures recorded, the Ray engine giving the
local engine's rows, and clear errors for bad sweep files."""

import itertools
import os
import re
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import millinet
from conftest import millinet as cli
from millinet import store as stores
from millinet._toml import tomllib
from millinet.report import paired_ratios
from millinet.sweep import load_sweep, run_sweep

# 2 delays x 3 congestion controls x 2 seeds of a 0.2 s dumbbell with a slow bottleneck.
GRID_SWEEP = """\
description = "test grid"
scenario = "dumbbell"
seeds = 2

[set]
duration_s = 0.2
"links.1.rate_bps" = 10e6

[grid]
"links.1.delay_s" = [0.001, 0.01]
"flows.0.cc" = ["newreno", "cubic", "bbr"]
"""

# Wall-clock figures differ between any two executions of the same run.
WALL_CLOCK = ["wall_s", "sim.wall_s", "sim.events_per_s"]


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def grid_store(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """The grid sweep run once on the local engine; tests copy the store before changing it."""
    tmp = tmp_path_factory.mktemp("grid")
    store = tmp / "store"
    frame = run_sweep(load_sweep(write(tmp, GRID_SWEEP)), store, workers=2, quiet=True)
    return store, frame


def test_grid_gives_one_row_per_point_and_seed(grid_store):
    store, frame = grid_store
    assert len(frame) == 12
    assert set(frame["status"]) == {"ok"}
    combos = set(zip(frame["links.1.delay_s"], frame["flows.0.cc"], frame["seed"]))
    assert combos == set(itertools.product([0.001, 0.01], ["newreno", "cubic", "bbr"], [1, 2]))
    assert (frame["links.1.rate_bps"] == 10e6).all() and (frame["duration_s"] == 0.2).all()
    assert frame["run_key"].nunique() == 12 and (frame["attempts"] == 1).all()
    assert (frame["node"] == socket.gethostname()).all()  # local workers run on this machine
    for _, row in frame.iterrows():
        resolved = tomllib.loads((stores.run_dir(store, row["run_key"]) / "scenario.toml").read_text())
        assert resolved["flows"][0]["cc"] == row["flows.0.cc"] and resolved["seed"] == row["seed"]
        assert resolved["links"][1]["delay_s"] == row["links.1.delay_s"]
    assert frame["flows.0.goodput_bps"].between(1e6, 10e6).all()
    assert frame.equals(stores.load(store))


def test_restarted_sweep_runs_nothing_new(grid_store, tmp_path):
    store, frame = grid_store
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    stamps = {path: path.stat().st_mtime_ns for path in copy.rglob("*") if path.is_file() and "runs" in path.parts}
    again = run_sweep(load_sweep(copy / "sweep.toml"), copy, workers=2, quiet=True)
    assert {path: path.stat().st_mtime_ns for path in stamps} == stamps
    pd.testing.assert_frame_equal(again, frame)


def test_partial_and_corrupt_runs_are_rerun(grid_store, tmp_path):
    store, frame = grid_store
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    truncated, unsummarised, untouched = (stores.run_dir(copy, key) for key in frame["run_key"][:3])
    parquet = truncated / "flows.parquet"
    parquet.write_bytes(parquet.read_bytes()[:100])
    (unsummarised / "summary.json").unlink()
    leftover = copy / "runs" / ".tmp-killed"
    leftover.mkdir()
    (leftover / "summary.json").write_text("{}")
    before = (untouched / "summary.json").stat().st_mtime_ns
    assert not stores.is_complete(copy, truncated.name) and not stores.is_complete(copy, unsummarised.name)

    again = run_sweep(load_sweep(copy / "sweep.toml"), copy, workers=2, quiet=True)
    assert stores.is_complete(copy, truncated.name) and stores.is_complete(copy, unsummarised.name)
    assert (untouched / "summary.json").stat().st_mtime_ns == before
    assert not leftover.exists()
    assert set(again["status"]) == {"ok"}
    pd.testing.assert_frame_equal(again.drop(columns=WALL_CLOCK), frame.drop(columns=WALL_CLOCK))


def kill_first_busy_worker(tmp: Path, killed: list[int]) -> None:
    """Kills (SIGKILL) the first worker seen running a run: workers name their run
    directory under TMPDIR millinet-worker-<pid>-*, which exists only while it runs."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for path in tmp.glob("millinet-worker-*"):
            pid = int(path.name.split("-")[2])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.01)


def test_killed_worker_is_retried_and_every_row_arrives(tmp_path, monkeypatch):
    workers_tmp = tmp_path / "workers-tmp"
    workers_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(workers_tmp))  # read by the worker processes, spawned below
    # Runs of about a second, so the killer finds a worker in the middle of one.
    sweep = load_sweep(write(tmp_path, 'scenario = "dumbbell"\nseeds = 3\n[set]\nduration_s = 8.0\n'))
    killed: list[int] = []
    killer = threading.Thread(target=kill_first_busy_worker, args=(workers_tmp, killed))
    killer.start()
    frame = run_sweep(sweep, tmp_path / "store", workers=2, quiet=True)
    killer.join()
    assert len(killed) == 1
    assert set(frame["status"]) == {"ok"} and len(frame) == 3
    assert sorted(frame["attempts"]) == [1, 1, 2]


def test_failures_are_recorded_without_stopping_the_sweep(tmp_path):
    # A missing trace file passes resolution and fails when the run reads it.
    text = (
        'scenario = "e2e-trace"\nseeds = 1\n[set]\nduration_s = 0.05\n'
        '[grid]\n"ues.0.trace" = ["traces/5gophers-verizon-drive-1.csv", "traces/missing.csv"]\n'
    )
    frame = run_sweep(load_sweep(write(tmp_path, text)), tmp_path / "store", workers=1, quiet=True)
    by_trace = frame.set_index("ues.0.trace")
    assert by_trace.loc["traces/5gophers-verizon-drive-1.csv", "status"] == "ok"
    failed = by_trace.loc["traces/missing.csv"]
    assert failed["status"] == "failed" and failed["attempts"] == 1
    assert "missing.csv" in failed["error"] and "cannot read the trace" in failed["error"]
    assert pd.isna(failed["flows.0.goodput_bps"])


def test_worker_dying_on_every_try_is_recorded(tmp_path, monkeypatch):
    workers_tmp = tmp_path / "workers-tmp"
    workers_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(workers_tmp))
    sweep = load_sweep(write(tmp_path, 'scenario = "dumbbell"\nseeds = 1\n[set]\nduration_s = 8.0\n'))
    killed: list[int] = []
    killer = threading.Thread(target=kill_first_busy_worker, args=(workers_tmp, killed))
    killer.start()
    frame = run_sweep(sweep, tmp_path / "store", workers=1, retries=0, quiet=True)
    killer.join()
    row = frame.iloc[0]
    assert row["status"] == "failed" and row["attempts"] == 1
    assert f"worker process {killed[0]} died (exit code -9)" in row["error"]
    assert row["node"] == socket.gethostname()


def test_ray_engine_gives_the_local_engines_rows(grid_store, tmp_path):
    _, local = grid_store
    frame = run_sweep(load_sweep(write(tmp_path, GRID_SWEEP)), tmp_path / "store", engine="ray", workers=2, quiet=True)
    # A Ray node is named by its machine and its Ray node id: one node here, this machine.
    assert frame["node"].str.fullmatch(rf"{re.escape(socket.gethostname())} [0-9a-f]{{8}}").all() and frame["node"].nunique() == 1
    pd.testing.assert_frame_equal(frame.drop(columns=[*WALL_CLOCK, "node"]), local.drop(columns=[*WALL_CLOCK, "node"]))


def test_zip_arms_parts_and_seed_list(tmp_path):
    text = """\
scenario = "dumbbell"
seeds = [3, 7]
[set]
duration_s = 0.2
[arms.slow]
"links.1.rate_bps" = 5e6
[arms.fast]
"links.1.rate_bps" = 20e6
[[parts]]
[parts.zip]
"links.1.delay_s" = [0.001, 0.01]
"links.1.queue_bytes" = [20000, 200000]
[[parts]]
[parts.grid]
"flows.0.cc" = ["newreno"]
"""
    sweep = load_sweep(write(tmp_path, text))
    runs = sweep.runs()
    assert sweep.parameters == ("duration_s", "links.1.delay_s", "links.1.queue_bytes", "links.1.rate_bps", "flows.0.cc")
    # part 1: 2 zipped points x 2 arms x 2 seeds; part 2: 1 point x 2 arms x 2 seeds.
    assert len(runs) == 12
    zipped = {(r.params["links.1.delay_s"], r.params["links.1.queue_bytes"]) for r in runs if r.params["flows.0.cc"] == "cubic"}
    assert zipped == {(0.001, 20000), (0.01, 200000)}
    second = [r for r in runs if r.params["flows.0.cc"] == "newreno"]
    # Unswept keys carry the scenario's own values, so rows of both parts compare.
    assert {r.params["links.1.delay_s"] for r in second} == {0.001}
    assert {(r.arm, r.params["links.1.rate_bps"], r.seed) for r in second} == {
        ("slow", 5e6, 3), ("slow", 5e6, 7), ("fast", 20e6, 3), ("fast", 20e6, 7)
    }
    assert {r.seed for r in sweep.runs(seeds=[11])} == {11}


def test_parts_on_their_own_scenarios_are_told_apart(tmp_path):
    # The same keys on two scenarios: without the scenario column their rows would pair and
    # group as one point.
    text = """\
scenario = "dumbbell"
seeds = 2
[set]
duration_s = 0.2
"links.1.rate_bps" = 10e6
[arms.newreno]
"flows.0.cc" = "newreno"
[arms.cubic]
"flows.0.cc" = "cubic"
[[parts]]
[[parts]]
scenario = "dumbbell-switching"
[[pairings]]
name = "cubic-vs-newreno"
baseline = "newreno"
treatment = "cubic"
"""
    sweep = load_sweep(write(tmp_path, text))
    assert sweep.parameters == ("scenario", "duration_s", "links.1.rate_bps", "flows.0.cc")
    frame = run_sweep(sweep, tmp_path / "store", workers=2, quiet=True)
    assert len(frame) == 8 and set(frame["status"]) == {"ok"}
    for _, row in frame.iterrows():
        resolved = tomllib.loads((stores.run_dir(tmp_path / "store", row["run_key"]) / "scenario.toml").read_text())
        assert resolved["description"].startswith("The dumbbell with") == (row["scenario"] == "dumbbell-switching")
    ratios = paired_ratios(frame, "cubic-vs-newreno", "flows.0.goodput_bps")
    assert sorted(ratios["scenario"]) == ["dumbbell", "dumbbell-switching"] and (ratios["n"] == 2).all()
    # A sweep on one scenario has no such column.
    assert "scenario" not in load_sweep(write(tmp_path, GRID_SWEEP, "grid.toml")).parameters


# (id, sweep file text, fragments the message names)
BAD_SWEEPS = [
    ("unknown key", 'scenario = "dumbbell"\nseeds = 2\n[gird]\n"flows.0.cc" = ["cubic"]\n', ["sweep.toml:3", "'gird'", "grid", "zip", "arms"]),
    (
        "grid key the scenario rejects",
        'scenario = "dumbbell"\n[grid]\n"flows.0.cc" = ["cubic", "vegas"]\n',
        ["sweep.toml:3", "flows.0.cc", "vegas", "newreno, cubic"],
    ),
    (
        "zip lists of unequal length",
        'scenario = "dumbbell"\n[zip]\n"links.1.delay_s" = [0.001, 0.01]\n"links.1.queue_bytes" = [1000]\n',
        ["sweep.toml:2", "equal lengths", "links.1.delay_s has 2", "links.1.queue_bytes has 1"],
    ),
    (
        "zip position the scenario rejects",
        'scenario = "dumbbell"\n[zip]\n"flows.0.cc" = ["cubic", "vegas"]\n"links.1.delay_s" = [0.001, 0.01]\n',
        ["sweep.toml:3", "[zip] position 1", "flows.0.cc = 'vegas'", "links.1.delay_s = 0.01", "newreno, cubic"],
    ),
    ("bad seed count", 'scenario = "dumbbell"\nseeds = 0\n', ["sweep.toml:2", "seeds = 0", "count from 1 to 100000", "distinct integers"]),
    # Found by fuzzing (sweep_load): a count past the C integer range raised OverflowError.
    ("huge seed count", 'scenario = "dumbbell"\nseeds = 40999999999999999999999\n', ["sweep.toml:2", "40999999999999999999999", "count from 1 to 100000"]),
    ("seed beyond 64 bits", 'scenario = "dumbbell"\nseeds = [1, 18446744073709551616]\n', ["sweep.toml:2", "18446744073709551616", "0 to 2^64 - 1"]),
    ("repeated seeds", 'scenario = "dumbbell"\nseeds = [1, 1]\n', ["sweep.toml:2", "[1, 1]", "distinct"]),
    (
        "unknown pairing arm",
        'scenario = "dumbbell"\n[arms.a]\n[arms.b]\n[[pairings]]\nname = "p"\nbaseline = "a"\ntreatment = "c"\n',
        ["sweep.toml:7", "treatment = 'c'", "arms: a, b"],
    ),
    ("unknown scenario", 'scenario = "dumbell"\n', ["sweep.toml:1", "dumbell", "dumbbell"]),
    ("unknown scenario of a part", 'scenario = "dumbbell"\n[[parts]]\nscenario = "trian"\n', ["sweep.toml:3", "trian", "train"]),
]


@pytest.mark.parametrize("text, fragments", [case[1:] for case in BAD_SWEEPS], ids=[case[0] for case in BAD_SWEEPS])
def test_bad_sweep_file_names_line_value_and_allowed(tmp_path, text, fragments):
    path = write(tmp_path, text)
    with pytest.raises(millinet.ScenarioError) as error:
        load_sweep(path)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_zipped_keys_are_checked_together():
    """Each radio of a device must have the device's route, so moving one alone is refused;
    the shipped mptcp sweep moves both radios in one [zip] and loads."""
    sweep = load_sweep("mptcp")
    assert len(sweep.runs()) == 3 * 4 * 5 * 10, "3 scenarios x 4 distances x 5 arms x 10 seeds"


def test_unknown_shipped_sweep_name():
    with pytest.raises(millinet.ScenarioError, match=r"unknown sweep 'quik'; shipped sweeps: .*quick"):
        load_sweep("quik")


def test_cli_reports_a_bad_sweep_in_one_line(tmp_path):
    path = write(tmp_path, BAD_SWEEPS[1][1])
    result = cli("sweep", path, "--out", tmp_path / "store")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and "vegas" in result.stderr
    assert not (tmp_path / "store").exists()
