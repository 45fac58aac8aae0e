"""What every study shares: its shipped sweep run into OUT/store, the statistics per
point, the cells of its tables, and the files it writes into OUT (summary.json, table.md,
plots/*.png and a self-contained index.html)."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from millinet import outputs, resolve
from millinet import store as stores
from millinet._toml import tomllib
from millinet.report.page import html_page, markdown_page
from millinet.report.stats import aggregate
from millinet.runner import override_list
from millinet.sweep import load_sweep, run_sweep
from millinet.sweep.spec import SCENARIO_COLUMN, lookup

CWND_GROWTH, TCP_PROFILE = "flows.0.cwnd_growth", "flows.0.tcp_profile"


@dataclass(frozen=True)
class StudyResult:
    summary: dict
    tables: dict[str, pd.DataFrame]  # title -> table, the first the study's main one
    out: Path

    @property
    def table(self) -> pd.DataFrame:
        return next(iter(self.tables.values()))


@dataclass(frozen=True)
class Options:
    """How a study was asked to run: the CLI's options, also what reproduces it."""

    study: str
    runs: int | None = None  # paired seeds per point; None: the sweep file's
    quick: bool = False
    cwnd_growth: str | None = None  # None: the scenarios' own rule
    tcp_profile: str | None = None  # None: the scenarios' own TCP settings (modern)
    engine: str = "local"
    workers: int | None = None
    address: str | None = None
    quiet: bool = False
    emulate: bool = False  # the reduced grid `STUDY-emulated`, on the emulator
    policies: tuple[str, ...] | None = None  # milliproxy: flow-window policies; None: calibrated and bdp
    overrides: tuple[str, ...] = ()  # --set KEY=VALUE: every run of the study

    @property
    def sweep(self) -> str:
        return f"{self.study}-emulated" if self.emulate else f"{self.study}-quick" if self.quick else self.study

    @property
    def command(self) -> str:
        """The command line that reproduces the study's results."""
        return (
            f"millinet study {self.study}"
            + (" --quick" if self.quick else "")
            + (" --emulate" if self.emulate else "")
            + (f" --runs {self.runs}" if self.runs else "")
            + (f" --cwnd-growth {self.cwnd_growth}" if self.cwnd_growth else "")
            + (f" --tcp-profile {self.tcp_profile}" if self.tcp_profile else "")
            + (f" --policies {','.join(self.policies)}" if self.policies else "")
            + "".join(f" --set {shlex.quote(item)}" for item in self.overrides)
        )


def run_runs(out: Path, options: Options, sweep_file: Path | None = None) -> pd.DataFrame:
    """Runs the study's sweep (or `sweep_file`, a variant of it the study wrote) into
    OUT/store (what the store lacks) and returns its results table. `--tcp-profile`,
    `--cwnd-growth` (which beats the profile's cwnd growth) and `--set` become fixed overrides
    of every run."""
    overrides = ({TCP_PROFILE: options.tcp_profile} if options.tcp_profile else {}) | ({CWND_GROWTH: options.cwnd_growth} if options.cwnd_growth else {})
    sweep = load_sweep(sweep_file or options.sweep, [*override_list(overrides), *options.overrides] or None)
    seeds = list(range(1, options.runs + 1)) if options.runs else None
    run_sweep(sweep, out / "store", engine=options.engine, workers=options.workers, address=options.address, quiet=options.quiet, seeds=seeds, emulate=options.emulate)
    return stores.load(out / "store")


def summary_head(options: Options, frame: pd.DataFrame) -> dict:
    """The fields every study's summary.json starts with: what ran, the command that
    reproduces it, the TCP profile and cwnd growth rule used, and how many runs succeeded."""
    return {
        "study": options.study,
        "sweep": options.sweep,
        "command": options.command,
        "tcp_profile": options.tcp_profile or "modern",
        "cwnd_growth": options.cwnd_growth or frame[CWND_GROWTH].iloc[0],
        "runs": int((frame["status"] == "ok").sum()),
        "failed_runs": int((frame["status"] != "ok").sum()),
    }


def timed_head(options: Options, frame: pd.DataFrame) -> dict:
    """summary_head, plus the runs' duration and the seeds (the frame has `duration_s`)."""
    return {
        **summary_head(options, frame),
        "duration_s": float(frame["duration_s"].iloc[0]),
        "seeds": sorted(int(seed) for seed in frame["seed"].unique()),
    }


def with_base_values(frame: pd.DataFrame, keys: Sequence[str], scenario: str) -> pd.DataFrame:
    """The keys a sweep does not vary become columns too, holding each row's base scenario's
    value (a sweep's table only has the keys it sets): `scenario`, or the row's own when the
    sweep's parts run different scenarios. A TCP profile the runs set (`--tcp-profile`) is
    resolved into the base, since it changes the values of the keys it names."""
    names = frame[SCENARIO_COLUMN] if SCENARIO_COLUMN in frame.columns else pd.Series(scenario, index=frame.index)
    profile = {TCP_PROFILE: frame[TCP_PROFILE].iloc[0]} if TCP_PROFILE in frame.columns and len(frame) else None
    bases = {name: tomllib.loads(resolve(name, overrides=profile)) for name in names.unique()}
    for key in keys:
        if key not in frame.columns:
            frame[key] = [lookup(bases[name], key) for name in names]
    return frame


def point_stats(frame: pd.DataFrame, metrics: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Mean and 95% interval of each metric per group of `by`, one row per group, columns
    `METRIC:mean`, `METRIC:ci_low`, `METRIC:ci_high`, `METRIC:n`."""
    by, stats = list(by), ["mean", "ci_low", "ci_high", "n"]
    agg = aggregate(frame, metrics, by)
    wide = agg.pivot_table(index=by, columns="metric", values=stats, aggfunc="first", sort=False)
    # pivot_table drops a column that is NaN throughout: every interval with one seed, the
    # RTT of UDP-only points. They stay, as NaN.
    wide = wide.reindex(columns=pd.MultiIndex.from_product([stats, list(metrics)]))
    wide.columns = [f"{metric}:{stat}" for stat, metric in wide.columns]
    return wide.reset_index()


def interval(row: pd.Series, metric: str) -> dict:
    """A metric's mean and 95% interval from a row of point_stats."""
    return {"mean": row[f"{metric}:mean"], "ci_low": row[f"{metric}:ci_low"], "ci_high": row[f"{metric}:ci_high"]}


def ratio_fields(name: str, ratio: pd.Series) -> dict:
    """A row of paired_ratios as summary.json fields: NAME, NAME_ci ([low, high])."""
    return {name: ratio["ratio"], f"{name}_ci": [ratio["ci_low"], ratio["ci_high"]]}


def jain_index(*allocations):
    """Jain's fairness index of n allocations (Jain, Chiu, Hawe 1984): (Σx)² / (n Σx²), 1 when
    all are equal, 1/n when one takes everything; element-wise when each allocation is an
    array (one value per run)."""
    x = np.stack([np.asarray(a, float) for a in allocations])
    with np.errstate(invalid="ignore", divide="ignore"):
        return x.sum(axis=0) ** 2 / (len(allocations) * (x * x).sum(axis=0))


def json_ready(value: object) -> object:
    """Plain Python values for JSON: NumPy scalars unwrapped, undefined intervals (NaN,
    fewer than 2 runs) as null."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def plus_minus(interval: dict, scale: float) -> str:
    """mean ± half-width of its (symmetric, Student t) 95% interval; "-" without a mean
    (e.g. the RTT of a UDP flow)."""
    mean, low = interval["mean"] * scale, interval["ci_low"] * scale
    if math.isnan(mean):
        return "-"
    if math.isnan(low):
        return number(mean)
    # Equal values over seeds leave a rounding residue (1e-16) as the half-width: that is 0.
    half = 0.0 if mean - low <= 1e-9 * abs(mean) else mean - low
    return f"{number(mean)} ± {number(half)}"


def interval_cells(point: dict, columns: dict[str, tuple[str, float]]) -> dict[str, str]:
    """A table row's interval cells (plus_minus): column title -> (the point's field, scale)."""
    return {title: plus_minus(point[field], scale) for title, (field, scale) in columns.items()}


def quartiles(values: pd.Series) -> dict:
    """Median and quartiles of the values that are not NaN (NaN each when there are none)."""
    values = values.dropna()
    if values.empty:
        return {"median": math.nan, "q1": math.nan, "q3": math.nan}
    q1, median, q3 = np.quantile(values.to_numpy(float), [0.25, 0.5, 0.75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3)}


def median_iqr(q: dict, digits: int = 3) -> str:
    """A table cell: median [q1, q3] of `quartiles`; "-" without values."""
    if math.isnan(q["median"]):
        return "-"
    return f"{q['median']:.{digits}g} [{q['q1']:.{digits}g}, {q['q3']:.{digits}g}]"


def number(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def ratio_cell(point: dict, key: str) -> str:
    """ratio [95% bootstrap interval] (asymmetric); "-" where the point has no such ratio."""
    if point.get(key) is None or math.isnan(point[key]):
        return "-"
    low, high = point[f"{key}_ci"]
    return f"{point[key]:.3g}" if math.isnan(low) else f"{point[key]:.3g} [{low:.3g}, {high:.3g}]"


def write_outputs(out: Path, summary: dict, heading: str, tables: dict[str, pd.DataFrame], notes: tuple[str, ...], images: dict[str, bytes]) -> None:
    """summary.json, table.md, plots/<title>.png and index.html (the tables, notes and plots)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(json_ready(summary), indent=2, allow_nan=False) + "\n")
    (out / "table.md").write_text(markdown_page(heading, tables, notes))
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    for title, png in images.items():
        (plots / (slug(title) + ".png")).write_bytes(png)
    (out / "index.html").write_text(html_page(heading, tables, images, notes))


def slug(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def with_run_metrics(frame: pd.DataFrame, store: Path, metrics: Callable[[pd.Series, Path], dict]) -> pd.DataFrame:
    """The frame (a results table, index reset) with the metrics `metrics(row, store)` of each
    run as columns: what a study computes from a run's saved time series."""
    rows = [metrics(row, store) for _, row in frame.iterrows()]
    return pd.concat([frame.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def run_tables(store: Path, run_key: str, names: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The saved time series `names` of one run of the store."""
    return outputs.read_tables(stores.run_dir(store, run_key), names)


def flow_goodput(tables: dict[str, pd.DataFrame]) -> pd.Series:
    """Flow 0's goodput (bit/s) per goodput bin, indexed by the bin's start (s)."""
    goodput = tables["goodput"]
    return goodput[goodput["flow"] == 0].set_index("t")["goodput_bps"]


def bin_width_s(series: pd.Series) -> float:
    return float(np.median(np.diff(series.index.to_numpy())))


def time_to_rate_s(goodput: pd.Series, after_s: float, target_bps: float, window_s: float) -> float:
    """Seconds from `after_s` to the first bin from which the median goodput bin over the next
    `window_s` reaches `target_bps`; NaN if it never does before the run ends. The median,
    not the mean: a burst of a few bins (an RLC backlog draining at the radio's peak rate, a
    receiver releasing what it held out of order) must not count as a recovered rate."""
    bins = max(1, round(window_s / bin_width_s(goodput)))
    ahead = goodput[goodput.index >= after_s - 1e-9]
    forward = ahead[::-1].rolling(bins).median()[::-1]
    reached = forward[forward >= target_bps]
    return float(reached.index[0] - after_s) if len(reached) else math.nan


def mean_between(series: pd.Series, start_s: float, end_s: float) -> float:
    """Mean of a series indexed by time over [start_s, end_s)."""
    return float(series[(series.index >= start_s - 1e-9) & (series.index < end_s - 1e-9)].mean())


def nlos_periods(tables: dict[str, pd.DataFrame]) -> list[tuple[float, float]]:
    """The UE's NLOS periods (start, end) in seconds from its `ues` table's `los` column;
    one still open at the end ends with the last sample."""
    ues = tables["ues"][tables["ues"]["ue"] == 0]
    nlos = (ues["los"] == 0).to_numpy(int)
    t = ues["t"].to_numpy(float)
    edges = np.diff(np.concatenate([[0], nlos, [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(t[s], t[e] if e < len(t) else t[-1]) for s, e in zip(starts, ends)]


def first_seed_runs(runs: pd.DataFrame, store: Path, label) -> dict[str, Path]:
    """The runs of the lowest seed as plots name them: `label(row)`, the seed and the run key
    (what `millinet plot STORE/runs/KEY` opens) -> run directory."""
    if runs.empty:
        return {}
    first = runs[runs["seed"] == runs["seed"].min()]
    return {f"{label(row)}, seed {row['seed']} (run {row['run_key']})": stores.run_dir(store, row["run_key"]) for _, row in first.iterrows()}


def drawn(images: dict[str, bytes | None]) -> dict[str, bytes]:
    """The plots that were drawn (a figure function returns None when no run has its series)."""
    return {title: image for title, image in images.items() if image is not None}


def reproduce_note(summary: dict) -> str:
    return (
        f"Reproduce: {summary['command']}. Seeds {', '.join(map(str, summary['seeds']))}; "
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed."
    )
