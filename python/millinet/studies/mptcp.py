"""MP-TCP over mmWave and LTE (docs/studies.md#mptcp): the shipped sweep `mptcp` (or `mptcp-quick`)
run into a result store, then per paths, congestion control and distance the total goodput,
each path's share and the RTT with 95% intervals, the goodput over single-path CUBIC on the
same seeds, and the shared-LTE-bearer case: what MP-TCP's LTE subflow and a single-path
TCP flow over the same bearer get, and Jain's index of the two.

Writes into OUT: summary.json (`points`, `shared`), table.md, index.html (self-contained),
plots/*.png (goodput against distance per paths, each path's throughput over time in one
run per congestion control, the shares on the shared bearer) and the result store in store/.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from millinet import store as stores
from millinet.report import figures
from millinet.report.stats import paired_ratios
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, interval, jain_index, number, plus_minus, point_stats, ratio_cell, ratio_fields, run_runs, timed_head, with_base_values, write_outputs
from millinet.sweep.spec import SCENARIO_COLUMN

GOODPUT, RTT, OTHER_GOODPUT = "flows.0.goodput_bps", "flows.0.rtt_ms.mean", "flows.1.goodput_bps"
DISTANCE = "ues.0.route_m.0.0"
# Bytes each subflow's peer acknowledged: subflow 0 opened over radio 0 (28 GHz), subflow 1
# joined over radio 1 (LTE or 73 GHz).
ACKED = "flows.0.mptcp.subflows.{}.acked_bytes"
# Columns this study derives per run: each path's throughput, the shares of the shared LTE
# bearer and their Jain's index.
FIRST_PATH, SECOND_PATH = "first_path_bps", "second_path_bps"
TCP_ON_LTE, JAIN = "tcp_on_lte_bps", "jain_index"
SINGLE = "single"
ARMS = (SINGLE, "uncoupled", "lia", "olia", "balia")
# Per scenario: the paths of the MP-TCP arms and the name of the second radio.
PATHS = {"mptcp": ("28 GHz + LTE", "LTE"), "mptcp-73": ("28 + 73 GHz", "73 GHz"), "mptcp-shared": ("28 GHz + LTE, shared LTE", "LTE")}
SHARED = "mptcp-shared"
SINGLE_PATH = "28 GHz only"
# The shares over time are plotted per second: the LTE bearer's flows change their windows
# over several round trips, and a second holds tens of them.
SHARE_BIN_S = 1.0
POINT = [SCENARIO_COLUMN, DISTANCE]


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` paired seeds per point, default 10 (quick 1)."""
    out = Path(out)
    frame = _with_paths(with_base_values(run_runs(out, options), [*POINT, CWND_GROWTH, "duration_s"], "mptcp"))
    points = _points(frame)
    shared = _shared(frame)
    summary = {
        **timed_head(options, frame),
        "points": points,
        "shared": shared,
    }
    tables = {"Per paths, congestion control and distance": points_table(points), "Shared LTE bearer: MP-TCP's LTE subflow and a TCP flow": shared_table(shared)}
    heading = f"MP-TCP study ({options.sweep}): {summary['runs']} runs of {summary['duration_s']:g} s"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(frame, points, shared, out / "store"))
    return StudyResult(summary, tables, out)


def _with_paths(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's throughput per path (what the subflow's peer acknowledged over the run;
    a single-path run carries everything on its 28 GHz radio), and on the shared bearer the
    TCP flow's goodput and Jain's index of it and MP-TCP's LTE subflow."""
    frame = frame.copy()
    seconds = frame["duration_s"].astype(float)
    single = frame["arm"] == SINGLE
    subflow = {k: frame[ACKED.format(k)] * 8 / seconds if ACKED.format(k) in frame.columns else np.nan for k in (0, 1)}
    frame[FIRST_PATH] = np.where(single, frame[GOODPUT], subflow[0])
    frame[SECOND_PATH] = np.where(single, 0.0, subflow[1])
    shared = frame[SCENARIO_COLUMN] == SHARED
    frame[TCP_ON_LTE] = np.where(shared, frame.get(OTHER_GOODPUT, np.nan), np.nan)
    frame[JAIN] = np.where(shared, jain_index(frame[SECOND_PATH], frame[TCP_ON_LTE]), np.nan)
    return frame


def _paths(scenario: str, arm: str) -> str:
    return SINGLE_PATH if arm == SINGLE else PATHS.get(scenario, (scenario, ""))[0]


def _points(frame: pd.DataFrame) -> list[dict]:
    """One entry per paths, congestion control and distance (the shared case apart; the
    single-path runs once, from the `mptcp` scenario): goodput, each path's throughput and
    RTT, mean and 95% interval over the seeds, and the goodput over single-path CUBIC's on
    the same seeds with a 95% bootstrap interval."""
    own = frame[(frame[SCENARIO_COLUMN] != SHARED) & ~((frame["arm"] == SINGLE) & (frame[SCENARIO_COLUMN] != "mptcp"))]
    stats = point_stats(own, [GOODPUT, FIRST_PATH, SECOND_PATH, RTT], [*POINT, "arm"])
    gains = _gains(frame)
    points = []
    for _, row in stats.iterrows():
        scenario, arm, distance = row[SCENARIO_COLUMN], row["arm"], float(row[DISTANCE])
        gain = gains.get((scenario, distance, arm))
        points.append(
            {
                "arm": arm,
                "paths": _paths(scenario, arm),
                "second_path": None if arm == SINGLE else PATHS.get(scenario, ("", ""))[1],
                "cc": "single-path cubic" if arm == SINGLE else arm,
                "distance_m": distance,
                "runs": int(row[f"{GOODPUT}:n"]),
                "goodput_bps": interval(row, GOODPUT),
                "first_path_bps": interval(row, FIRST_PATH),
                "second_path_bps": interval(row, SECOND_PATH),
                "rtt_ms": interval(row, RTT),
                **(ratio_fields("gain_over_single", gain) if gain is not None else {"gain_over_single": None, "gain_over_single_ci": None}),
            }
        )
    return sorted(points, key=lambda p: (_paths_order(p["paths"]), _arm_order(p["arm"]), p["distance_m"]))


def _paths_order(paths: str) -> int:
    """The single path first, then the scenarios in PATHS order."""
    order = [SINGLE_PATH, *(names[0] for names in PATHS.values())]
    return order.index(paths) if paths in order else len(order)


def _arm_order(arm: str) -> int:
    return ARMS.index(arm) if arm in ARMS else len(ARMS)


def _gains(frame: pd.DataFrame) -> dict[tuple, pd.Series]:
    """(scenario, distance, arm) -> the paired ratio goodput(arm) / goodput(single path)."""
    gains = {}
    for arm in ARMS[1:]:
        ratios = paired_ratios(frame, {"baseline": SINGLE, "treatment": arm}, GOODPUT, POINT)
        for _, row in ratios.iterrows():
            gains[(row[SCENARIO_COLUMN], float(row[DISTANCE]), arm)] = row
    return gains


def _shared(frame: pd.DataFrame) -> list[dict]:
    """Per congestion control and distance on the shared LTE bearer: MP-TCP's total goodput,
    its LTE subflow's throughput, the TCP flow's goodput, the LTE subflow's over the TCP
    flow's and Jain's index of the two (per run, then averaged)."""
    shared = frame[frame[SCENARIO_COLUMN] == SHARED]
    if shared.empty:
        return []
    stats = point_stats(shared, [GOODPUT, SECOND_PATH, TCP_ON_LTE, JAIN], [DISTANCE, "arm"])
    rows = []
    for _, row in stats.iterrows():
        arm = row["arm"]
        on_lte, tcp = row[f"{SECOND_PATH}:mean"], row[f"{TCP_ON_LTE}:mean"]
        rows.append(
            {
                "arm": arm,
                "cc": "single-path cubic (LTE unused)" if arm == SINGLE else arm,
                "distance_m": float(row[DISTANCE]),
                "runs": int(row[f"{GOODPUT}:n"]),
                "mptcp_goodput_bps": interval(row, GOODPUT),
                "mptcp_on_lte_bps": interval(row, SECOND_PATH),
                "tcp_on_lte_bps": interval(row, TCP_ON_LTE),
                "lte_share_ratio": on_lte / tcp if tcp > 0 else None,
                "jain_index": None if arm == SINGLE else interval(row, JAIN),
            }
        )
    return sorted(rows, key=lambda r: (_arm_order(r["arm"]), r["distance_m"]))


def points_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "paths": p["paths"],
                "cc": p["cc"],
                "d m": f"{p['distance_m']:g}",
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(p["goodput_bps"], 1e-6),
                "28 GHz Mbit/s": plus_minus(p["first_path_bps"], 1e-6),
                "other path Mbit/s": "-" if p["second_path"] is None else f"{p['second_path']}: {plus_minus(p['second_path_bps'], 1e-6)}",
                "RTT ms": plus_minus(p["rtt_ms"], 1.0),
                "over single path": ratio_cell(p, "gain_over_single"),
            }
            for p in points
        ]
    )


def shared_table(shared: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cc": r["cc"],
                "d m": f"{r['distance_m']:g}",
                "runs": r["runs"],
                "MP-TCP Mbit/s": plus_minus(r["mptcp_goodput_bps"], 1e-6),
                "MP-TCP on LTE Mbit/s": plus_minus(r["mptcp_on_lte_bps"], 1e-6),
                "TCP on LTE Mbit/s": plus_minus(r["tcp_on_lte_bps"], 1e-6),
                "LTE: MP-TCP / TCP": "-" if r["lte_share_ratio"] is None else number(r["lte_share_ratio"]),
                "Jain's index": "-" if r["jain_index"] is None else plus_minus(r["jain_index"], 1.0),
            }
            for r in shared
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        f"Reproduce: {summary['command']}. Seeds {', '.join(map(str, summary['seeds']))}; runs of {summary['duration_s']:g} s; "
        f"cwnd growth {summary['cwnd_growth']!r}.",
        "One device d metres from a 28 GHz gNB co-located with an LTE eNB (or a second gNB at 73 GHz), one radio per "
        "cell; each mmWave link is blocked and unblocked by its own two-state Markov process (λ = 0.5/s). MP-TCP opens a "
        "subflow per radio (the lowest-RTT scheduler); single-path CUBIC uses the 28 GHz radio alone and is the baseline "
        "every MP-TCP run is paired with (same seed: same blockage, shadowing and fading on the 28 GHz link).",
        "Path throughput: the bytes a subflow's peer acknowledged over the run (reinjected bytes included). 'over single "
        "path': mean goodput over single-path CUBIC's on the same seeds, 95% percentile bootstrap interval.",
        "Shared LTE bearer: the same device also downloads over its LTE radio with single-path CUBIC; MP-TCP's LTE subflow "
        "and that flow share the bearer's RLC queue. RFC 6356 asks a coupled connection to take no more there than a "
        "single-path flow; Jain's index of the two throughputs is 1 when they are equal.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
    )


def _plots(frame: pd.DataFrame, points: list[dict], shared: list[dict], store: Path) -> dict[str, bytes]:
    images = {}
    for paths in dict.fromkeys(p["paths"] for p in points if p["paths"] != SINGLE_PATH):
        lines = {
            p_cc: [(p["distance_m"], p["goodput_bps"]) for p in points if p["cc"] == p_cc and p["paths"] in (paths, SINGLE_PATH)]
            for p_cc in dict.fromkeys(p["cc"] for p in points)
        }
        images[f"goodput vs distance, {paths}"] = figures.lines_with_intervals(lines, "distance (m)", "goodput (Mbit/s)", 1e-6)
    named = _subflow_runs(frame, store)
    panels = figures.subflow_throughput_runs(named) if named else None
    if panels is not None:
        images["each path's throughput over time, one run per CC"] = panels
    shares = figures.shared_bearer_share_runs(_shared_runs(frame, store), SHARE_BIN_S)
    if shares is not None:
        images["shared LTE bearer: the MP-TCP subflow's share over time, one run per CC"] = shares
    mptcp_shared = [r for r in shared if r["jain_index"] is not None]
    if mptcp_shared:
        bars = pd.DataFrame([r["jain_index"] for r in mptcp_shared])
        images["Jain's index on the shared LTE bearer"] = figures.bars(bars, [f"{r['cc']} {r['distance_m']:g} m" for r in mptcp_shared], "Jain's index", 1.0)
    return images


def _subflow_runs(frame: pd.DataFrame, store: Path) -> dict[str, Path]:
    """One 28 GHz + LTE run per MP-TCP congestion control: the lowest seed, the distance
    nearest 100 m."""
    return _one_run_per_cc(frame, store, "mptcp", "28 GHz + LTE")


def _shared_runs(frame: pd.DataFrame, store: Path) -> dict[str, Path]:
    """The same choice on the shared LTE bearer."""
    return _one_run_per_cc(frame, store, SHARED, "shared LTE")


def _one_run_per_cc(frame: pd.DataFrame, store: Path, scenario: str, paths: str) -> dict[str, Path]:
    """One run of `scenario` per MP-TCP congestion control: the lowest seed, the distance
    nearest 100 m; label -> run directory."""
    runs = frame[(frame["status"] == "ok") & (frame[SCENARIO_COLUMN] == scenario) & (frame["arm"] != SINGLE)]
    if runs.empty:
        return {}
    runs = runs[runs["seed"] == runs["seed"].min()]
    distance = min(runs[DISTANCE].unique(), key=lambda d: abs(float(d) - 100.0))
    runs = runs[runs[DISTANCE] == distance]
    named = {}
    for _, row in sorted(runs.iterrows(), key=lambda item: _arm_order(item[1]["arm"])):
        named[f"{row['arm']}: {paths}, {float(distance):g} m, seed {row['seed']} (run {row['run_key']})"] = stores.run_dir(store, row["run_key"])
    return named
