"""The run directory (outputs.md §1): scenario.toml, Parquet time series, pcap files from
the engine, and summary.json, written last so that its presence marks a complete run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import pandas as pd

SUMMARY = "summary.json"
SCENARIO = "scenario.toml"

# The engine's column dtypes -> numpy dtypes of its little-endian bytes.
DTYPES = {"f64": "<f8", "u32": "<u4", "u64": "<u8"}


def run_id(scenario_toml: str) -> str:
    """Identifies a run by its resolved scenario, seed included."""
    return hashlib.sha256(scenario_toml.encode()).hexdigest()[:16]


def arrow_table(columns: dict[str, tuple[str, bytes]], run: str) -> pa.Table:
    """One engine table as an Arrow table: a `run` column, then the engine's columns."""
    arrays = {name: np.frombuffer(data, dtype=DTYPES[dtype]) for name, (dtype, data) in columns.items()}
    rows = len(next(iter(arrays.values()), []))
    return pa.table({"run": pa.repeat(pa.scalar(run), rows), **arrays})


def start_run_dir(out: Path) -> None:
    """Creates `out`; a summary.json left there by an earlier run goes first, so the
    directory does not look complete until this run has written everything."""
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).unlink(missing_ok=True)


def write_run_dir(out: Path, scenario_toml: str, summary: dict, tables: dict[str, pa.Table]) -> None:
    _write_atomic(out / SCENARIO, lambda path: path.write_text(scenario_toml))
    for name, table in tables.items():
        _write_atomic(out / f"{name}.parquet", lambda path, table=table: pq.write_table(table, path))
    text = json.dumps(summary, sort_keys=True, indent=2) + "\n"
    _write_atomic(out / SUMMARY, lambda path: path.write_text(text))


def read_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The time series saved in a run directory, table name -> DataFrame."""
    return {path.stem: pq.read_table(path).to_pandas() for path in sorted(run_dir.glob("*.parquet"))}


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Writes through a temporary file renamed into place: `path` is whole or absent."""
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)
