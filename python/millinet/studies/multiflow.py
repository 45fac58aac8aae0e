"""Several flows on one UE (docs/studies.md, multiflow): the shipped sweep `multiflow` (or
`multiflow-quick`) run into a result store, RAPID's published setting — a CUBIC and a BBR
download sharing one UE's RLC buffer, RTT 1, 2, 4 and 8 ms — without a proxy, with milliProxy
under its `calibrated` and `bdp` policies (the UE's window shared among its flows) and with
RAPID's flow control as a milliProxy policy (`rapid`). Per RTT and arm: each flow's goodput,
Jain's fairness index of the two, the UE's RAN latency, each with a 95% interval over seeds.

Writes into OUT: summary.json (`points`), table.md, index.html (self-contained), plots/*.png
and the result store in store/.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from millinet.report import figures
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, interval, jain_index, plus_minus, point_stats, run_runs, timed_head, with_base_values, write_outputs

CUBIC, BBR = "flows.0.goodput_bps", "flows.1.goodput_bps"
TOTAL, LATENCY = "ues.0.goodput_bps", "ues.0.ran_latency_ms.mean"
JAIN = "jain_index"
# The server-side one-way delay of both servers' links; RTT = 2 · that (the S1 link has none).
ONE_WAY = "links.0.delay_s"
ARMS = ("none", "calibrated", "bdp", "rapid")
METRICS = [CUBIC, BBR, TOTAL, JAIN, LATENCY]


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 10 (quick 2)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [ONE_WAY, CWND_GROWTH, "duration_s"], "multiflow")
    frame[JAIN] = jain_index(frame[CUBIC], frame[BBR])
    points = _points(frame)
    summary = {**timed_head(options, frame), "points": points}
    tables = {"Per RTT and arm": points_table(points)}
    heading = f"Several flows per UE ({options.sweep}): {summary['runs']} runs of {summary['duration_s']:g} s"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(points))
    return StudyResult(summary, tables, out)


def _points(frame: pd.DataFrame) -> list[dict]:
    ok = frame[frame["status"] == "ok"]
    stats = point_stats(ok, METRICS, [ONE_WAY, "arm"])
    points = []
    for _, row in stats.iterrows():
        points.append(
            {
                "arm": row["arm"],
                "rtt_ms": round(2 * row[ONE_WAY] * 1e3, 6),
                "runs": int(row[f"{CUBIC}:n"]),
                "cubic_goodput_bps": interval(row, CUBIC),
                "bbr_goodput_bps": interval(row, BBR),
                "total_goodput_bps": interval(row, TOTAL),
                "jain_index": interval(row, JAIN),
                "ran_latency_ms": interval(row, LATENCY),
            }
        )
    return sorted(points, key=lambda p: (p["rtt_ms"], ARMS.index(p["arm"]) if p["arm"] in ARMS else len(ARMS)))


def points_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "RTT ms": f"{p['rtt_ms']:g}",
                "arm": p["arm"],
                "runs": p["runs"],
                "CUBIC Mbit/s": plus_minus(p["cubic_goodput_bps"], 1e-6),
                "BBR Mbit/s": plus_minus(p["bbr_goodput_bps"], 1e-6),
                "total Mbit/s": plus_minus(p["total_goodput_bps"], 1e-6),
                "Jain's index": plus_minus(p["jain_index"], 1.0),
                "RAN latency ms": plus_minus(p["ran_latency_ms"], 1.0),
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        f"Reproduce: {summary['command']}. Seeds {', '.join(map(str, summary['seeds']))}; {summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
        "One UE on the milliproxy study's route (walking 50 m at 5 m/s past three random obstacles, new per seed) on a 28 GHz, "
        "200 MHz cell (peak 640 Mbit/s), RLC buffer 10 MB; a CUBIC and a BBR bulk download from two servers whose links each add "
        "RTT/2 one way, both from 0.1 s (RAPID's setting on this project's channel, docs/studies.md).",
        "Arms: none = no proxy; calibrated and bdp = milliProxy at the gNB with that flow-window policy, the UE's window shared among its flows "
        "(each at least an equal share, and what the other leaves unused); rapid = milliProxy at the gNB with RAPID's flow control "
        "(equal shares of R_e · RTT, a flow slower than its share held to its demand and the rest given to the other; docs/proxy.md).",
        "Goodput: each flow's, in order, over the run; Jain's index (Σx)²/(2Σx²) of the two per run, 1 when equal, 0.5 when one gets all; "
        "RAN latency: the UE's mean. Mean over seeds with a 95% Student-t interval.",
    )


def _plots(points: list[dict]) -> dict[str, bytes]:
    lines: dict[str, dict[str, list]] = {"CUBIC goodput": {}, "BBR goodput": {}, "Jain's index": {}, "RAN latency": {}}
    for p in points:
        for title, key in (("CUBIC goodput", "cubic_goodput_bps"), ("BBR goodput", "bbr_goodput_bps"), ("Jain's index", "jain_index"), ("RAN latency", "ran_latency_ms")):
            lines[title].setdefault(p["arm"], []).append((p["rtt_ms"], p[key]))
    return {
        "CUBIC and BBR goodput against RTT per arm": figures.lines_with_intervals(
            {f"{arm} {cc}": series for cc, title in (("CUBIC", "CUBIC goodput"), ("BBR", "BBR goodput")) for arm, series in lines[title].items()}, "RTT (ms)", "goodput (Mbit/s)", 1e-6
        ),
        "Jain's index against RTT per arm": figures.lines_with_intervals(lines["Jain's index"], "RTT (ms)", "Jain's index", 1.0),
        "RAN latency against RTT per arm": figures.lines_with_intervals(lines["RAN latency"], "RTT (ms)", "mean RAN latency (ms)", 1.0),
    }
