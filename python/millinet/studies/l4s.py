"""L4S over mmWave against milliProxy (docs/studies.md#l4s): the shipped `l4s` sweep (or
`l4s-quick`, `l4s-emulated`) run into a result store. On the milliProxy route, every server
(CUBIC, BBR, DCTCP, Prague; all with Accurate ECN) runs five arms on the same seeds: a
drop-tail RLC buffer (none), CoDel marking ECN-capable packets (codel), DualPI2 with its L4S
step (l4s), milliProxy at the gNB with its calibrated policy (gnb), and milliProxy over
DualPI2 (gnb-l4s). Per point and arm: goodput, mean and 99th-percentile RAN latency with 95%
intervals, and the paired ratios against none; per server, which arm keeps the goodput and
cuts the latency most.

Writes into OUT: summary.json (`verdict`, `points`), table.md, index.html, plots/*.png and the
result store in store/.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from millinet.report import figures
from millinet.report.stats import paired_ratios
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, interval, plus_minus, point_stats, ratio_cell, ratio_fields, run_runs, summary_head, with_base_values, write_outputs

BASELINE_ARM = "none"
ARMS = {
    "none": "drop-tail RLC buffer",
    "codel": "CoDel on the RLC buffer, marking ECN-capable packets",
    "l4s": "DualPI2 on the RLC buffer (L4S step at 1 ms, coupled classic AQM)",
    "gnb": "milliProxy at the gNB (calibrated), drop-tail RLC buffer",
    "gnb-l4s": "milliProxy at the gNB (calibrated) over DualPI2",
}
GOODPUT = "flows.0.goodput_bps"
LATENCY = "flows.0.ran_latency_ms.mean"
LATENCY_P99 = "flows.0.ran_latency_ms.p99"
CC, D_RS, B_RLC = "flows.0.cc", "links.0.delay_s", "ues.0.rlc_buffer_bytes"
POINT = [CC, D_RS, B_RLC]
# An arm "keeps the goodput" at a point when its paired goodput ratio is at least this.
GOODPUT_GOAL = 0.95


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` paired seeds per point, default 20 (quick 3, emulated 2)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [*POINT, CWND_GROWTH], "milliproxy")
    points = _points(frame)
    summary = {**summary_head(options, frame), "verdict": verdict(points), "points": points}
    tables = {"Per point and arm": result_table(points)}
    heading = f"L4S study ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(points))
    return StudyResult(summary, tables, out)


def _points(frame: pd.DataFrame) -> list[dict]:
    """One entry per arm and point: the metrics' means and intervals, and for the arms other
    than none the paired ratios against none on the same seeds."""
    stats = point_stats(frame, [GOODPUT, LATENCY, LATENCY_P99], ["arm", *POINT])
    ratios: dict[tuple, dict] = {}
    for pairing in frame.attrs["sweep"]["pairings"]:
        arm = pairing["treatment"]
        goodput = paired_ratios(frame, {"baseline": BASELINE_ARM, "treatment": arm}, GOODPUT, POINT)
        # latency(none) / latency(arm): above 1 when the arm lowers it.
        latency = paired_ratios(frame, {"baseline": arm, "treatment": BASELINE_ARM}, LATENCY, POINT)
        for (_, g), (_, lat) in zip(goodput.iterrows(), latency.iterrows(), strict=True):
            key = (arm, g[CC], g[D_RS], g[B_RLC])
            ratios[key] = {"pairs": int(g["n"]), **ratio_fields("goodput_ratio", g), **ratio_fields("latency_ratio", lat)}
    points = []
    for _, row in stats.iterrows():
        point = {
            "arm": row["arm"],
            "cc": row[CC],
            "d_rs_ms": round(row[D_RS] * 1e3, 6),
            "b_rlc_bytes": int(row[B_RLC]),
            "runs": int(row[f"{GOODPUT}:n"]),
            "goodput_bps": interval(row, GOODPUT),
            "ran_latency_ms": interval(row, LATENCY),
            "ran_latency_p99_ms": interval(row, LATENCY_P99),
        }
        point.update(ratios.get((row["arm"], row[CC], row[D_RS], row[B_RLC]), {}))
        points.append(point)
    order = list(ARMS)
    return sorted(points, key=lambda p: (p["cc"], p["d_rs_ms"], p["b_rlc_bytes"], order.index(p["arm"]) if p["arm"] in order else 99))


def verdict(points: list[dict]) -> list[str]:
    """Per server CC: each arm's range of goodput and latency ratios over the points, and the
    arm with the lowest mean RAN latency among those that keep GOODPUT_GOAL of the goodput
    everywhere; then whether milliProxy still lowers the latency over an L4S RAN."""
    lines = []
    for cc in sorted({p["cc"] for p in points}):
        mine = [p for p in points if p["cc"] == cc and _finite(p.get("goodput_ratio")) and _finite(p.get("latency_ratio"))]
        if not mine:
            continue
        arms = {}
        for p in mine:
            arms.setdefault(p["arm"], []).append(p)
        parts = [f"{arm} {_span([p['goodput_ratio'] for p in group])}× goodput, {_span([p['latency_ratio'] for p in group], '.3g')}× lower latency" for arm, group in arms.items()]
        keeps = {arm: group for arm, group in arms.items() if all(p["goodput_ratio"] >= GOODPUT_GOAL for p in group)}
        best = min(keeps, key=lambda arm: sum(p["ran_latency_ms"]["mean"] for p in keeps[arm]) / len(keeps[arm]), default=None)
        choice = f"lowest latency keeping {GOODPUT_GOAL:g} of the goodput: {best}" if best else f"no arm keeps {GOODPUT_GOAL:g} of the goodput at every point"
        lines.append(f"{cc}: " + "; ".join(parts) + f" ({choice}).")
    proxy_on_l4s = [(p, q) for p in points for q in points if p["arm"] == "gnb-l4s" and q["arm"] == "l4s" and (p["cc"], p["d_rs_ms"], p["b_rlc_bytes"]) == (q["cc"], q["d_rs_ms"], q["b_rlc_bytes"])]
    if proxy_on_l4s:
        lower = [p["cc"] + f" {p['d_rs_ms']:g} ms" for p, q in proxy_on_l4s if p["ran_latency_ms"]["mean"] < q["ran_latency_ms"]["mean"]]
        lines.append(
            f"milliProxy over DualPI2 has a lower mean RAN latency than DualPI2 alone at {len(lower)} of {len(proxy_on_l4s)} points"
            + (f" ({', '.join(sorted(set(lower)))})." if lower else ".")
        )
    return lines or ["No paired runs: no verdict."]


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _span(values: list[float], spec: str = ".2f") -> str:
    low, high = (format(v, spec) for v in (min(values), max(values)))
    return low if low == high else f"{low}–{high}"


def result_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cc": p["cc"],
                "D_RS ms": f"{p['d_rs_ms']:g}",
                "B_RLC MB": f"{p['b_rlc_bytes'] / 1e6:g}",
                "arm": p["arm"],
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(p["goodput_bps"], 1e-6),
                "RAN latency ms": plus_minus(p["ran_latency_ms"], 1.0),
                "p99 ms": plus_minus(p["ran_latency_p99_ms"], 1.0),
                "goodput arm/none": ratio_cell(p, "goodput_ratio") if "goodput_ratio" in p else "-",
                "latency none/arm": ratio_cell(p, "latency_ratio") if "latency_ratio" in p else "-",
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        "Verdict: " + " ".join(summary["verdict"]),
        f"Reproduce: {summary['command']}. TCP profile: {summary['tcp_profile']}; every flow asks for Accurate ECN (flows.0.ecn = 'accurate').",
        "Arms: " + "; ".join(f"{arm} = {text}" for arm, text in ARMS.items()) + ".",
        "Goodput and RAN latency (mean and 99th percentile of the flow's packets): mean over runs with a 95% Student-t interval. "
        "Ratios: paired on the same seeds as the drop-tail runs, mean over mean, with a 95% percentile bootstrap interval over seeds.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
    )


def _tradeoff(points: list[dict], latency_key: str, xlabel: str) -> bytes:
    """Per server CC, each arm's points at (RAN latency, paired goodput ratio), none at 1."""
    panels: dict[str, dict[str, list]] = {}
    for p in points:
        latency = p[latency_key]
        if p["arm"] == BASELINE_ARM:
            ratio = (1.0, 1.0, 1.0)
        elif _finite(p.get("goodput_ratio")):
            ratio = (p["goodput_ratio"], *p["goodput_ratio_ci"])
        else:
            continue
        label = f"{p['d_rs_ms']:g}/{p['b_rlc_bytes'] / 1e6:g}"
        panels.setdefault(p["cc"], {}).setdefault(p["arm"], []).append(((latency["mean"], latency["ci_low"], latency["ci_high"]), ratio, label))
    return figures.tradeoff(panels, xlabel, "goodput arm/none", GOODPUT_GOAL, "labels: D_RS ms / B_RLC MB")


def _plots(points: list[dict]) -> dict[str, bytes]:
    return {
        "goodput vs mean RAN latency per arm": _tradeoff(points, "ran_latency_ms", "mean RAN latency (ms)"),
        "goodput vs 99th-percentile RAN latency per arm": _tradeoff(points, "ran_latency_p99_ms", "p99 RAN latency (ms)"),
    }
