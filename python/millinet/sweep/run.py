"""Running a sweep into a result store: skip what the store has, hand the rest to an
engine, retry runs whose worker died, record failures, write the results table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from millinet import store as stores
from millinet._core import ScenarioError
from millinet.sweep.engines import Crash, make_engine
from millinet.sweep.progress import SweepProgress
from millinet.sweep.spec import RunSpec, Sweep, load_sweep


def run_sweep(
    sweep: Sweep | str | Path,
    store: str | Path,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    retries: int = 2,
    quiet: bool = False,
    seeds: list[int] | None = None,
    emulate: bool = False,
) -> pd.DataFrame:
    """Runs every run of `sweep` (a Sweep, or what `load_sweep` accepts) that `store`
    does not hold complete yet, and returns the results table (one row per run, also
    written to STORE/results.parquet, see millinet.store).

    `engine` is "local" (a pool of `workers` processes, default one per core) or "ray"
    (the Ray cluster at `address`, or a local one of `workers` CPUs started for the
    sweep). A run whose worker dies is tried again up to `retries` times; a run that
    raises is recorded as failed with its error at once (runs are deterministic). Neither
    stops the sweep. `seeds` replaces the sweep file's seeds. The table is written even
    when the sweep is interrupted: runs not done yet have status "pending".

    `emulate` runs every run in the emulator instead (root; real time): one at a time on
    this machine, since two emulations would share its cores and disturb each other's
    timing, so only the local engine with one worker."""
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    if retries < 0:
        raise ValueError(f"retries = {retries}: expected 0 or more")
    store = Path(store)
    specs = sweep.runs(seeds)
    if emulate:
        if engine != "local" or (workers or 1) != 1:
            raise ScenarioError(f"emulated runs go one at a time on this machine: engine local with 1 worker, not {engine} with {workers}")
        specs, workers = [replace(spec, emulated=True) for spec in specs], 1
    with stores.opened(store, sweep):
        try:
            todo = list({spec.key: spec for spec in specs if not stores.is_complete(store, spec.key)}.values())
            unique = len({spec.key for spec in specs})
            with SweepProgress(sweep.name, unique, unique - len(todo), quiet) as progress:
                if todo:
                    _run(todo, store, make_engine(engine, workers, address), retries, progress)
        finally:
            frame = stores.write_results(store, sweep, specs)
    return frame


def _run(todo: list[RunSpec], store: Path, engine, retries: int, progress: SweepProgress) -> None:
    try:
        attempts = {spec.key: 1 for spec in todo}
        for spec in todo:
            engine.submit(spec)
        remaining = len(todo)
        while remaining:
            spec, outcome = engine.next_done()
            if isinstance(outcome, Crash) and attempts[spec.key] <= retries:
                attempts[spec.key] += 1
                progress.retried()
                engine.submit(spec)
                continue
            _store(store, spec, outcome, attempts[spec.key])
            progress.done(failed=isinstance(outcome, Crash) or "error" in outcome)
            remaining -= 1
    finally:
        engine.close()


def _store(store: Path, spec: RunSpec, outcome: dict | Crash, attempts: int) -> None:
    if isinstance(outcome, Crash):
        record = {"status": "failed", "error": outcome.reason, "wall_s": None, "node": outcome.node}
    elif "error" in outcome:
        record = {"status": "failed", "error": outcome["error"], "wall_s": outcome["wall_s"], "node": outcome["node"]}
    else:
        record = {"status": "ok", "error": None, "wall_s": outcome["wall_s"], "node": outcome["node"]}
    record["attempts"] = attempts
    if record["status"] == "ok":
        stores.commit(store, spec.key, outcome["files"], record)
    else:
        stores.write_record(store, spec.key, record)
