"""Operator split proxies under mmWave-like dynamics (docs/studies.md#spep-emulation): the shipped sweep
`spep` (or `spep-quick`) run into a result store; each run downloads one file (a fresh
connection, so no cached window or data) over a per-user capacity that follows an LTE
cell (shadow fading) or an mmWave cell (plus Markov LOS/NLOS excess loss at rate λ),
without or with a split-TCP proxy at the edge, from a near or a far server.

Per run: the download time D (the flow's own completion time, from the connection's
start), the mean offered capacity C̄_user over the download (the bottleneck's `rate_bps`
series) and the efficiency η = (F / D) / (ε · C̄_user), ε = 1.2. Per point (channel,
proxy, server, file size): median and quartiles over seeds, as the study's box plots show;
and per pair of runs with and without the proxy on the same seed (the same capacity
realisation), the ratio of their download times.

Writes into OUT: summary.json (`points`, `split_vs_none`), table.md, index.html,
plots/*.png and the result store in store/.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from millinet.report import figures
from millinet.studies.common import (
    CWND_GROWTH,
    Options,
    StudyResult,
    drawn,
    median_iqr,
    number,
    quartiles,
    reproduce_note,
    run_runs,
    run_tables,
    timed_head,
    with_base_values,
    with_run_metrics,
    write_outputs,
)

PROXY, SERVER_DELAY, FILE_BYTES = "proxy.node", "links.0.delay_s", "flows.0.file_bytes"
EPSILON = 1.2  # the study's overhead allowance in η (docs/studies.md#spep-emulation)
BOTTLENECK_QUEUE = 2  # link 1 (edge -> client), its a->b direction: the capacity process
CHANNELS = {"lte": "LTE", "mmwave-0-25": "mmWave λ 0.25/s", "mmwave-0-5": "mmWave λ 0.5/s", "mmwave-1": "mmWave λ 1/s"}
SERVERS = {0.005: "near", 0.05: "far"}  # one-way delay server -> edge (s)
PROXIES = {"": "none", "edge": "split"}


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 20 (quick 5)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [CWND_GROWTH, "duration_s"], "spep-emulation")
    head = timed_head(options, frame)
    ok = frame[frame["status"] == "ok"]
    runs = with_run_metrics(ok, out / "store", download_metrics)
    summary = {**head, "epsilon": EPSILON, "points": _points(runs), "split_vs_none": _paired(runs)}
    tables = {"Download time and efficiency": points_table(summary["points"]), "Split proxy vs none, paired by seed": paired_table(summary["split_vs_none"])}
    heading = f"Split-proxy study ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(runs))
    return StudyResult(summary, tables, out)


def download_metrics(row: pd.Series, store: Path) -> dict:
    """D from the flow's summary; C̄_user the mean of the bottleneck's rate over the samples
    in [0, D) (the rate changes every 100 ms, the samples are 10 ms apart); η from both."""
    time_s = row["flows.0.download_time_s"]
    queues = run_tables(store, row["run_key"], ("queues",))["queues"]
    rate = queues[queues["queue"] == BOTTLENECK_QUEUE].set_index("t")["rate_bps"]
    if time_s is None or math.isnan(time_s):
        return {"download_time_s": math.nan, "capacity_bps": math.nan, "efficiency": math.nan}
    capacity_bps = float(rate[rate.index < time_s - 1e-9].mean())
    return {"download_time_s": float(time_s), "capacity_bps": capacity_bps, "efficiency": efficiency(row[FILE_BYTES], time_s, capacity_bps)}


def efficiency(file_bytes: float, time_s: float, capacity_bps: float) -> float:
    """η = (F / D) / (ε · C̄_user) (docs/studies.md#spep-emulation)."""
    return (8 * file_bytes / time_s) / (EPSILON * capacity_bps)


def _labels(row: pd.Series) -> dict:
    delay = float(row[SERVER_DELAY])
    return {
        "channel": row["arm"],
        "proxy": PROXIES.get(row[PROXY], row[PROXY]),
        "server": SERVERS.get(round(delay, 6), f"{delay * 1e3:g} ms"),
        "file_bytes": int(row[FILE_BYTES]),
    }


def _order(point: dict) -> tuple:
    channels = list(CHANNELS)
    return (point["file_bytes"], channels.index(point["channel"]) if point["channel"] in channels else 9, point["server"] != "near", point.get("proxy") != "none")


def _points(runs: pd.DataFrame) -> list[dict]:
    points = []
    for _, group in runs.groupby(["arm", PROXY, SERVER_DELAY, FILE_BYTES], sort=False):
        points.append(
            {
                **_labels(group.iloc[0]),
                "runs": len(group),
                "finished": int(group["download_time_s"].notna().sum()),
                "download_time_s": quartiles(group["download_time_s"]),
                "efficiency": quartiles(group["efficiency"]),
                "capacity_bps": float(group["capacity_bps"].mean()),
            }
        )
    return sorted(points, key=_order)


def _paired(runs: pd.DataFrame) -> list[dict]:
    """Per channel, server and size: D_split / D_none over the seeds where both finished."""
    points = []
    for _, group in runs.groupby(["arm", SERVER_DELAY, FILE_BYTES], sort=False):
        times = group.pivot_table(index="seed", columns=PROXY, values="download_time_s", aggfunc="first")
        if set(times.columns) != set(PROXIES):
            continue
        both = times.dropna()
        ratio = both["edge"] / both[""]
        label = _labels(group.iloc[0])
        del label["proxy"]
        points.append({**label, "pairs": len(both), "ratio": quartiles(ratio), "split_faster": int((ratio < 1).sum())})
    return sorted(points, key=_order)


def _size(file_bytes: int) -> str:
    return f"{number(file_bytes / 1e6)} MB" if file_bytes >= 1e6 else f"{number(file_bytes / 1e3)} kB"


def points_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "file": _size(p["file_bytes"]),
                "channel": CHANNELS.get(p["channel"], p["channel"]),
                "server": p["server"],
                "proxy": p["proxy"],
                "finished": f"{p['finished']} of {p['runs']}",
                "download s: median [IQR]": median_iqr(p["download_time_s"]),
                "η: median [IQR]": median_iqr(p["efficiency"], 2),
                "C̄_user Mbit/s": "-" if math.isnan(p["capacity_bps"]) else f"{p['capacity_bps'] * 1e-6:.2f}",
            }
            for p in points
        ]
    )


def paired_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "file": _size(p["file_bytes"]),
                "channel": CHANNELS.get(p["channel"], p["channel"]),
                "server": p["server"],
                "pairs": p["pairs"],
                "D split / D none: median [IQR]": median_iqr(p["ratio"], 2),
                "split faster": f"{p['split_faster']} of {p['pairs']}",
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "Each run opens one connection and downloads one file with CUBIC at MSS 140 bytes (the study's packet-rate scaling "
        "by 10) over a per-user capacity C/10: 10 MHz, SINR_base 15 dB minus shadow fading N(0, 4 dB) drawn 3 times a "
        "second (LTE), minus also the excess loss of a two-state LOS/NLOS Markov chain (mmWave, NLOS ≈ 13 dB mean at "
        "30 m); the rate is recomputed every 100 ms. The bottleneck queue is CoDel, 500 packets, 5 ms target; the radio "
        "access adds 10 ms one way, the server 5 ms (near) or 50 ms (far).",
        "The split proxy at the edge terminates the connection, acknowledges the server's data at once and sends it on "
        "with its own CUBIC (MSS 140). Runs with and without it share the seed, hence the capacity realisation: the "
        "paired table divides their download times seed by seed.",
        f"Download time: from the connection's start to the last byte's delivery at the client. η = (F / D) / (ε · C̄_user), "
        f"ε = {summary['epsilon']}, C̄_user the mean offered capacity over the download. Medians and quartiles over seeds.",
    )


def _plots(runs: pd.DataFrame) -> dict[str, bytes]:
    images = {}
    for size in sorted(runs[FILE_BYTES].unique()):
        of_size = runs[runs[FILE_BYTES] == size]
        for metric, title, unit in (("download_time_s", "download time", "download time (s)"), ("efficiency", "download efficiency", "efficiency η")):
            panels = {}
            for delay in sorted(of_size[SERVER_DELAY].unique()):
                rows = of_size[of_size[SERVER_DELAY] == delay]
                panels[f"{SERVERS.get(round(float(delay), 6), delay)} server"] = {
                    f"{CHANNELS.get(arm, arm)}, {PROXIES[proxy]}": rows[(rows["arm"] == arm) & (rows[PROXY] == proxy)][metric].dropna().to_numpy(float)
                    for arm in CHANNELS
                    for proxy in PROXIES
                    if ((rows["arm"] == arm) & (rows[PROXY] == proxy)).any()
                }
            images[f"{title}, {_size(int(size))}"] = figures.boxes(panels, unit)
    return drawn(images)
