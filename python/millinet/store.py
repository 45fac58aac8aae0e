"""The result store of a sweep (docs/sweeps.md §3).

    STORE/sweep.toml            the sweep file the store was last run with
    STORE/runs/<run_key>/       one run directory each (docs/outputs.md §1)
    STORE/records/<run_key>.json  status, error, attempts, wall time and node of the last try
    STORE/results.parquet       one row per run: parameters, arm, seed, record, summary scalars

A run directory is written under runs/.tmp-* and renamed into place when whole, so a run
directory that exists was complete when written; it is still checked (`is_complete`)
before a restarted sweep skips it, so damage done later is found and the run repeated.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from millinet import outputs
from millinet._core import ScenarioError

if TYPE_CHECKING:
    from millinet.sweep.spec import RunSpec, Sweep

RUNS = "runs"
RECORDS = "records"
TABLE = "results.parquet"
SWEEP_FILE = "sweep.toml"
TMP_PREFIX = ".tmp-"
META_KEY = b"millinet.sweep"

# Columns every row has after the sweep's parameters, before the summary scalars.
RUN_COLUMNS = ("arm", "seed", "run_key", "status", "error", "attempts", "wall_s", "node")


def run_dir(store: Path, key: str) -> Path:
    return store / RUNS / key


@contextlib.contextmanager
def opened(store: Path, sweep: Sweep) -> Iterator[None]:
    """Holds the store for one sweep: creates it, refuses a second sweep on it at the same
    time (their cleanups would collide), removes what a killed sweep left half-written,
    and keeps a copy of the sweep file."""
    (store / RUNS).mkdir(parents=True, exist_ok=True)
    (store / RECORDS).mkdir(exist_ok=True)
    with open(store / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ScenarioError(f"{store}: another sweep is writing this store") from None
        for leftover in (store / RUNS).glob(f"{TMP_PREFIX}*"):
            shutil.rmtree(leftover, ignore_errors=True)
        (store / SWEEP_FILE).write_text(sweep.text)
        yield


def is_complete(store: Path, key: str) -> bool:
    """Whether runs/<key> holds a whole run of that key: its scenario.toml hashes to the
    key, summary.json parses and every Parquet table has a readable footer."""
    directory = run_dir(store, key)
    try:
        if outputs.run_id((directory / outputs.SCENARIO).read_text()) != key:
            return False
        json.loads((directory / outputs.SUMMARY).read_text())
        for table in directory.glob("*.parquet"):
            pq.read_metadata(table)
    except (OSError, ValueError, pa.ArrowException):
        return False
    return True


def commit(store: Path, key: str, files: dict[str, bytes], record: dict) -> None:
    """Stores a finished run: its files go into a temporary directory that is renamed to
    runs/<key> once whole (replacing a damaged earlier copy). The record is written
    first: should the rename never happen, the run is simply not complete."""
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=store / RUNS))
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    write_record(store, key, record)
    final = run_dir(store, key)
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)


def write_record(store: Path, key: str, record: dict) -> None:
    path = store / RECORDS / f"{key}.json"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, sort_keys=True))
    os.replace(tmp, path)


def read_record(store: Path, key: str) -> dict:
    try:
        return json.loads((store / RECORDS / f"{key}.json").read_text())
    except (OSError, ValueError):
        return {}


def write_results(store: Path, sweep: Sweep, specs: Iterable[RunSpec]) -> pd.DataFrame:
    """Builds results.parquet from the store, one row per run spec, and returns it.

    A run that is complete has status "ok"; one whose last try failed "failed" (with
    its error); one not run yet "pending". Summary values that are not numbers are left
    out, and so are those named like a row column (`seed`, `duration_s`, ...)."""
    rows = [_row(store, spec) for spec in specs]
    frame = pd.DataFrame(rows, columns=_columns(sweep, rows))
    meta = {
        "sweep": sweep.name,
        "parameters": list(sweep.parameters),
        "pairings": [vars(p) for p in sweep.pairings],
        "arm_keys": {arm: sorted(sweep.arm_keys(arm)) for part in sweep.parts for arm in part.arms},
    }
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**table.schema.metadata, META_KEY: json.dumps(meta).encode()})
    tmp = store / f".{TABLE}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, store / TABLE)
    frame.attrs["sweep"] = meta
    return frame


def load(store: str | Path) -> pd.DataFrame:
    """The results table of a store; `attrs["sweep"]` holds the sweep's `parameters`
    (parameter columns), `pairings` (dicts of name, baseline, treatment) and `arm_keys`."""
    path = Path(store) / TABLE
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise ScenarioError(f"{store}: not a result store (cannot read {TABLE}: {e}); `millinet sweep` writes one") from None
    frame = table.to_pandas()
    for column in RUN_COLUMNS:  # a table written before the column existed (node) has it empty
        if column not in frame:
            frame[column] = None
    frame.attrs["sweep"] = json.loads(table.schema.metadata[META_KEY])
    return frame


def _row(store: Path, spec: RunSpec) -> dict:
    record = read_record(store, spec.key)
    complete = is_complete(store, spec.key)
    status = "ok" if complete else ("failed" if record.get("status") == "failed" else "pending")
    row = {
        **spec.params,
        "arm": spec.arm,
        "seed": spec.seed,
        "run_key": spec.key,
        "status": status,
        "error": record.get("error") if status == "failed" else None,
        "attempts": record.get("attempts"),
        "wall_s": record.get("wall_s"),
        "node": record.get("node"),
    }
    if complete:
        summary = json.loads((run_dir(store, spec.key) / outputs.SUMMARY).read_text())
        for name, value in flatten(summary).items():
            row.setdefault(name, value)
    return row


def _columns(sweep: Sweep, rows: list[dict]) -> list[str]:
    """Parameters, run columns, then the summary scalars in the order runs report them."""
    fixed = [*sweep.parameters, *RUN_COLUMNS]
    return fixed + list(dict.fromkeys(name for row in rows for name in row if name not in fixed))


def flatten(node: object, prefix: str = "") -> dict[str, float | int | bool]:
    """The numbers of a summary, keyed by dotted path ("flows.0.rtt_ms.mean"); a null or
    non-finite value is left out (it becomes a missing value in the table)."""
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        keep = isinstance(node, int | float) and math.isfinite(node)
        return {prefix.rstrip("."): node} if keep else {}
    result = {}
    for name, value in items:
        result.update(flatten(value, f"{prefix}{name}."))
    return result
