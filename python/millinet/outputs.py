"""The run directory (docs/outputs.md §1): scenario.toml, Parquet time series, pcap files from
the engine, and summary.json, written last so that its presence marks a complete run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from millinet._toml import tomllib

if TYPE_CHECKING:
    import pandas as pd

SUMMARY = "summary.json"
SCENARIO = "scenario.toml"

# The engine's column dtypes -> Arrow types. The engine sends little-endian bytes, which
# are Arrow's native layout on the (little-endian) machines millinet runs on.
ARROW_TYPES = {"f64": pa.float64(), "u32": pa.uint32(), "u64": pa.uint64()}


def run_id(scenario_toml: str) -> str:
    """Identifies a run by its resolved scenario, seed included."""
    return hashlib.sha256(scenario_toml.encode()).hexdigest()[:16]


def arrow_table(columns: dict[str, tuple[str, bytes]], run: str) -> pa.Table:
    """One engine table as an Arrow table: a `run` column, then the engine's columns.

    Every array is built from buffers, without copies: pa.array, pa.scalar and pa.table
    import pandas on first use, which would put a half-second import inside the first
    chunk, i.e. inside the timed run loop of every fresh process (issue 21)."""
    arrays = [
        pa.Array.from_buffers(ARROW_TYPES[dtype], len(data) // ARROW_TYPES[dtype].byte_width, [None, pa.py_buffer(data)])
        for dtype, data in columns.values()
    ]
    rows = len(arrays[0]) if arrays else 0
    return pa.Table.from_arrays([repeated_string(run, rows), *arrays], names=["run", *columns])


def repeated_string(text: str, rows: int) -> pa.Array:
    """`text` `rows` times, as an Arrow string array (offsets, then the characters)."""
    encoded = text.encode()
    offsets = np.arange(rows + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * rows)])


def start_run_dir(out: Path) -> None:
    """Creates `out` and removes what an earlier run left there: its summary.json first, so
    the directory does not look complete until this run has written everything, then its
    tables, captures and plot, which readers of a run directory (`read_run`, the result store,
    `millinet plot`) would otherwise take for this run's."""
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).unlink(missing_ok=True)
    for pattern in ("*.parquet", "*.pcap", "plot.png"):
        for stale in out.glob(pattern):
            stale.unlink()


class SeriesWriter:
    """Appends the engine's chunks of time series to one Parquet file per table in
    `directory` as the run proceeds (memory stays flat, issue 7). Files are written under
    temporary names and renamed into place by `close`, so each is whole or absent."""

    def __init__(self, directory: Path, run: str):
        self.directory = directory
        self.run = run
        self._writers: dict[str, pq.ParquetWriter] = {}

    def write(self, chunk: dict[str, dict[str, tuple[str, bytes]]]) -> None:
        for name, columns in chunk.items():
            table = arrow_table(columns, self.run)
            if name not in self._writers:
                self._writers[name] = pq.ParquetWriter(self._partial(name), table.schema)
            if table.num_rows:
                self._writers[name].write_table(table)

    def close(self) -> list[str]:
        """Finishes every file; returns the table names."""
        for name, writer in self._writers.items():
            writer.close()
            os.replace(self._partial(name), self.directory / f"{name}.parquet")
        return list(self._writers)

    def abort(self) -> None:
        for name, writer in self._writers.items():
            writer.close()
            self._partial(name).unlink(missing_ok=True)

    def _partial(self, name: str) -> Path:
        return self.directory / f".{name}.parquet.tmp"


class SeriesFiles(Mapping):
    """Table name -> DataFrame, read from the run's Parquet files on first access."""

    def __init__(self, directory: Path, names: list[str]):
        self.directory = directory
        self._names = names
        self._frames: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._frames:
            self._frames[name] = pq.read_table(self.directory / f"{name}.parquet").to_pandas()
        return self._frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def write_run_dir(out: Path, scenario_toml: str, summary: dict) -> None:
    """The run directory's files besides the time series (SeriesWriter): summary.json last."""
    _write_atomic(out / SCENARIO, lambda path: path.write_text(scenario_toml))
    text = json.dumps(summary, sort_keys=True, indent=2) + "\n"
    _write_atomic(out / SUMMARY, lambda path: path.write_text(text))


def read_tables(run_dir: Path, names: Collection[str] | None = None) -> dict[str, pd.DataFrame]:
    """The time series saved in a run directory, table name -> DataFrame: all of them, or
    those of `names` the run has (a long run's queue table is large)."""
    paths = sorted(run_dir.glob("*.parquet"))
    return {path.stem: pq.read_table(path).to_pandas() for path in paths if names is None or path.stem in names}


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Writes through a temporary file renamed into place: `path` is whole or absent."""
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def sinr_trace_csv(run_dir: Path, ue: int) -> str:
    """UE `ue`'s SINR in the run saved in `run_dir` as an SINR trace (docs/models/channel.md §10,
    `time_s,sinr_db`, one row per sample, `-inf` in outage), headed by a comment naming the
    run: a route's channel recorded once and replayed (`blockage = "sinr-trace"`) under any
    transport. Raises ValueError when the run has no such UE series."""
    tables = read_tables(run_dir, ["ues"])
    if "ues" not in tables:
        raise ValueError(f"{run_dir}: no `ues` time series (a run with UEs saves ues.parquet)")
    ues = tables["ues"]
    rows = ues[ues["ue"] == ue]
    if rows.empty:
        known = ", ".join(str(u) for u in sorted(ues["ue"].unique()))
        raise ValueError(f"--ue {ue}: the run has no such UE; its UEs: {known}")
    head = f"# SINR of UE {ue} recorded by `millinet trace from-run` from the run {run_dir.name}"
    if (run_dir / SCENARIO).is_file():
        scenario = tomllib.loads((run_dir / SCENARIO).read_text())
        head += f": {scenario.get('description', '')} (seed {scenario.get('seed')}, {scenario.get('duration_s')} s)"
    lines = [head, "time_s,sinr_db"]
    lines += [f"{t:.6f},{sinr:.4f}" for t, sinr in zip(rows["t"], rows["sinr_db"]) if sinr == sinr]  # NaN: no sample
    return "\n".join(lines) + "\n"
