"""Link-level retransmissions (docs/studies.md#lower-layer): the shipped sweep `lower-layer` (or
`lower-layer-quick`) run into a result store, then per configuration (RLC AM or UM, HARQ on
or off, remote or edge server, CUBIC or NewReno) the long flow's goodput and RAN latency,
and the download time of 100 kB, 1 MB and 10 MB files, each computed from the run's saved
time series (goodput bins, the UE's RAN latency per sample step), mean and 95% interval over
seeds. A download not finished when its run ends has no time; the share that finished is
reported next to the mean of those that did.

Writes into OUT: summary.json (`long_flows`, `downloads`), table.md, index.html,
plots/*.png and the result store in store/.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from millinet.report import figures
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, bin_width_s, drawn, first_seed_runs, flow_goodput, interval, interval_cells, number, plus_minus, point_stats, reproduce_note, run_runs, run_tables, summary_head, with_base_values, with_run_metrics, write_outputs

RLC, HARQ, SERVER_DELAY, CC = "ues.0.rlc_mode", "cells.0.harq", "links.0.delay_s", "flows.0.cc"
APP, FILE_BYTES, START = "flows.0.app", "flows.0.file_bytes", "flows.0.start_s"
CONFIGURATION = [RLC, HARQ, SERVER_DELAY, CC]
SERVERS = {0.019: "remote", 0.001: "edge"}  # one-way delay server -> PGW (s)
ORDER = {"am": 0, "um": 1, "on": 0, "off": 1, "remote": 0, "edge": 1, "cubic": 0, "newreno": 1}
LONG_METRICS = ["goodput_bps", "ran_latency_ms", "ran_latency_p95_ms"]
LONG_COLUMNS = {"goodput Mbit/s": ("goodput_bps", 1e-6), "RAN latency ms": ("ran_latency_ms", 1.0), "RAN latency p95 ms": ("ran_latency_p95_ms", 1.0)}


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 10 (quick 1)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [*CONFIGURATION, APP, FILE_BYTES, START, CWND_GROWTH, "duration_s"], "lower-layer")
    head = summary_head(options, frame)
    ok = frame[frame["status"] == "ok"]
    long_flows = with_run_metrics(ok[ok[APP] != "file"], out / "store", long_flow_metrics)
    files = with_run_metrics(ok[ok[APP] == "file"], out / "store", download_metrics)
    summary = {
        **head,
        "seeds": sorted(int(seed) for seed in ok["seed"].unique()),
        "long_flows": _long_points(long_flows),
        "downloads": _download_points(files),
    }
    tables = {"Long flow": long_table(summary["long_flows"]), "Download time": download_table(summary["downloads"])}
    heading = f"Link-level retransmissions study ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(long_flows, summary["downloads"], out / "store"))
    return StudyResult(summary, tables, out)


def long_flow_metrics(row: pd.Series, store: Path) -> dict:
    """Goodput: the mean of the goodput bins; RAN latency: mean and 95th percentile of the
    UE's per-step RAN latency over the steps with a delivery."""
    tables = run_tables(store, row["run_key"], ("goodput", "ues"))
    ues = tables["ues"]
    latency = ues[ues["ue"] == 0]["ran_latency_ms"].dropna()
    return {"goodput_bps": float(flow_goodput(tables).mean()), "ran_latency_ms": float(latency.mean()), "ran_latency_p95_ms": float(latency.quantile(0.95))}


def download_metrics(row: pd.Series, store: Path) -> dict:
    """The download time: from the flow's start to the end of the goodput bin in which the
    delivered bytes reach the file's size; NaN if they never do in the run."""
    goodput = flow_goodput(run_tables(store, row["run_key"], ("goodput",)))
    bin_s = bin_width_s(goodput)
    delivered = (goodput * bin_s / 8).cumsum()
    done = delivered[delivered >= row[FILE_BYTES] - 0.5]
    return {"download_time_s": float(done.index[0] + bin_s - row[START]) if len(done) else math.nan}


def _configuration(row: pd.Series) -> dict:
    delay = float(row[SERVER_DELAY])
    return {"rlc": row[RLC], "harq": row[HARQ], "server": SERVERS.get(round(delay, 6), f"{delay * 1e3:g} ms"), "cc": row[CC]}


def _order(point: dict) -> tuple:
    return tuple(ORDER.get(point[key], 9) for key in ("server", "cc", "rlc", "harq"))


def _long_points(runs: pd.DataFrame) -> list[dict]:
    if runs.empty:
        return []
    stats = point_stats(runs, LONG_METRICS, CONFIGURATION)
    points = [{**_configuration(row), "runs": int(row["goodput_bps:n"]), **{m: interval(row, m) for m in LONG_METRICS}} for _, row in stats.iterrows()]
    return sorted(points, key=_order)


def _download_points(runs: pd.DataFrame) -> list[dict]:
    """Per configuration and size: the runs, how many finished, the mean time of those."""
    if runs.empty:
        return []
    stats = point_stats(runs, ["download_time_s"], [*CONFIGURATION, FILE_BYTES])
    points = []
    for _, row in stats.iterrows():
        same = (runs[CONFIGURATION + [FILE_BYTES]] == row[CONFIGURATION + [FILE_BYTES]].to_numpy()).all(axis=1)
        points.append(
            {
                **_configuration(row),
                "file_bytes": int(row[FILE_BYTES]),
                "runs": int(same.sum()),
                "finished": int(row["download_time_s:n"]),
                "download_time_s": interval(row, "download_time_s"),
            }
        )
    return sorted(points, key=lambda p: (p["file_bytes"], *_order(p)))


def long_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "server": p["server"],
                "cc": p["cc"],
                "RLC": p["rlc"].upper(),
                "HARQ": p["harq"],
                "runs": p["runs"],
                **interval_cells(p, LONG_COLUMNS),
            }
            for p in points
        ]
    )


def download_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "file": _size(p["file_bytes"]),
                "server": p["server"],
                "cc": p["cc"],
                "RLC": p["rlc"].upper(),
                "HARQ": p["harq"],
                "finished": f"{p['finished']} of {p['runs']}",
                "download time s": "-" if not p["finished"] else plus_minus(p["download_time_s"], 1.0),
            }
            for p in points
        ]
    )


def _size(file_bytes: int) -> str:
    return f"{number(file_bytes / 1e6)} MB" if file_bytes >= 1e6 else f"{number(file_bytes / 1e3)} kB"


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "One static UE 100 m from a 28 GHz gNB with Markov blockage (LOS→NLOS 0.5/s); RLC AM retransmits what HARQ "
        "gives up on, UM does not; HARQ off sends each transport block once. Server remote (min RTT ~40 ms) or edge (~4 ms).",
        "Goodput: mean of the run's goodput bins; RAN latency: mean and 95th percentile of the UE's RAN latency per 1 ms "
        "sample step over the steps with a delivery; both mean and 95% Student-t interval over seeds.",
        "Download time: one file per run, from the connection's start to the end of the 1 ms goodput bin in which the "
        "delivered bytes reach the file's size; 'finished' counts the runs in which that happened before the run ended, "
        "the time is the mean over those.",
    )


def _plots(long_flows: pd.DataFrame, downloads: list[dict], store: Path) -> dict[str, bytes]:
    images = {f"download time, {_size(size)}": _download_bars(downloads, size) for size in sorted({p["file_bytes"] for p in downloads})}
    # The long flows of the lowest seed with the first CC at the remote server, one per RLC mode and HARQ.
    shown = long_flows[(long_flows[CC] == long_flows[CC].iloc[0]) & (long_flows[SERVER_DELAY] == long_flows[SERVER_DELAY].max())] if len(long_flows) else long_flows
    shown = shown.iloc[sorted(range(len(shown)), key=lambda k: _order(_configuration(shown.iloc[k])))]
    named = first_seed_runs(shown, store, _run_label)
    images["long flow: goodput over time, remote server"] = figures.flow_series_runs(named, "goodput", "goodput_bps", "Mbit/s", 1e-6)
    return drawn(images)


def _download_bars(downloads: list[dict], size: int) -> bytes | None:
    """Bars of the mean download time of a size per configuration, of those that finished."""
    shown = [p for p in downloads if p["file_bytes"] == size and p["finished"]]
    if not shown:
        return None
    labels = [f"{p['server']} {p['cc']} {p['rlc'].upper()} HARQ {p['harq']}" for p in shown]
    return figures.bars(pd.DataFrame([p["download_time_s"] for p in shown]), labels, "download time (s)", 1.0)


def _run_label(row: pd.Series) -> str:
    c = _configuration(row)
    return f"{c['cc']}, RLC {c['rlc'].upper()}, HARQ {c['harq']}, {c['server']}"
