"""Running a scenario through the engine and keeping its results."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from millinet import _core, outputs
from millinet._core import ScenarioError
from millinet.catalog import scenario_path

if TYPE_CHECKING:  # pandas is imported by pyarrow when a run's series are built
    import pandas as pd

Overrides = Mapping[str, object] | Iterable[str] | None


@dataclass(frozen=True)
class RunResult:
    """The results of one run: `summary` (summary.json as a dict), `series` (table name
    -> DataFrame with `run` and `t` columns, read from the run's Parquet files when first
    used) and `out` (the run directory, if written)."""

    summary: dict
    series: Mapping[str, pd.DataFrame]
    out: Path | None
    run_id: str
    scenario_toml: str


def resolve(scenario: str | Path, seed: int | None = None, overrides: Overrides = None) -> str:
    """The fully resolved scenario (every default filled in) as TOML text."""
    return _core.resolve(scenario_path(scenario), override_list(overrides), seed)


def run(
    scenario: str | Path,
    seed: int | None = None,
    overrides: Overrides = None,
    out: str | Path | None = None,
    pcap: Iterable[str] | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> RunResult:
    """Runs `scenario` (a shipped name or a path to a TOML file).

    `overrides` is a dict {"flows.0.cc": "newreno"} or a list of "key=value" strings.
    With `out`, the run directory is written (docs/outputs.md §1); `pcap` names the nodes to
    capture there. `progress(sim_time_s, duration_s)` is called now and then.
    """
    pcap_nodes = list(pcap or [])
    if pcap_nodes and out is None:
        raise ScenarioError("pcap capture needs an output directory (out=...)")
    path, overrides = scenario_path(scenario), override_list(overrides)
    return record(
        path,
        seed,
        overrides,
        out,
        lambda writer: _core.run(
            path,
            writer.write,
            seed=seed,
            overrides=overrides,
            pcap_dir=out if pcap_nodes else None,
            pcap_nodes=pcap_nodes,
            progress=progress,
        ),
    )


def record(
    path: Path, seed: int | None, overrides: list[str], out: str | Path | None, execute: Callable[[outputs.SeriesWriter], dict]
) -> RunResult:
    """Runs `execute(writer)` (the simulator or the emulator: it hands its time series to
    `writer.write` and returns {"summary_json": ...}) and keeps its results: in the run
    directory `out`, or in a private one removed with the result."""
    # The `run` column of every streamed chunk needs the run's id before the run starts.
    scenario_toml = _core.resolve(path, overrides, seed)
    run_id = outputs.run_id(scenario_toml)
    out = Path(out) if out is not None else None
    created = out is not None and not out.exists()
    if out is not None:
        outputs.start_run_dir(out)
        series_dir = out
    else:  # the series stream to a private directory, removed with the result
        series_dir = Path(tempfile.mkdtemp(prefix="millinet-series-"))
    writer = outputs.SeriesWriter(series_dir, run_id)
    try:
        raw = execute(writer)
        names = writer.close()
    except BaseException:
        writer.abort()
        if out is None:
            shutil.rmtree(series_dir, ignore_errors=True)
        elif created:  # a rejected run leaves no directory behind (unless the engine wrote into it)
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    summary = json.loads(raw["summary_json"])
    series = outputs.SeriesFiles(series_dir, names)
    if out is None:
        weakref.finalize(series, shutil.rmtree, series_dir, ignore_errors=True)
    else:
        outputs.write_run_dir(out, scenario_toml, summary)
    return RunResult(summary=summary, series=series, out=out, run_id=run_id, scenario_toml=scenario_toml)


def override_list(overrides: Overrides) -> list[str]:
    """Overrides as the engine's "key=value" strings. Dict values are Python values
    (str, bool, int, float) written as TOML literals."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{key}={_toml_literal(value)}" for key, value in overrides.items()]
    items = list(overrides)
    for item in items:
        if "=" not in item:
            raise ScenarioError(f"override {item!r}: expected KEY=VALUE, e.g. flows.0.cc=newreno")
    return items


def _toml_literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    raise ScenarioError(f"override value {value!r}: expected a str, bool, int or float")
