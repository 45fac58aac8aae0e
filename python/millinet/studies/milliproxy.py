"""The milliProxy evaluation (docs/studies.md#milliproxy): the shipped `milliproxy`
sweep (or `milliproxy-quick`) run into a result store, then per parameter point the goodput
and RAN latency with 95% intervals and the paired ratios against the runs without a proxy
on the same seeds: latency(no proxy) / latency(proxy) and goodput(proxy) / goodput(no proxy).
Every milliProxy arm runs once per flow-window policy on the same seeds: `calibrated` (the
default policy) and `bdp` (the published rule), or those of `--policies`; the sweep file the
study then runs is written into OUT too.

Writes into OUT: summary.json (`verdict`, then `points`, one per proxy parameter point),
table.md, index.html (self-contained; both open with the verdict), plots/*.png and the result
store in store/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import tomli_w

from millinet import store as stores
from millinet._toml import tomllib
from millinet.report import figures
from millinet.report.stats import paired_ratios
from millinet.sweep.spec import sweep_path
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, interval, plus_minus, point_stats, ratio_cell, ratio_fields, run_runs, summary_head, with_base_values, write_outputs

BASELINE_ARM = "none"
GOODPUT = "flows.0.goodput_bps"
LATENCY = "flows.0.ran_latency_ms.mean"
# The sweep's parameters that define a point (besides the arm), and their names in summary.json.
CC, D_RS, B_RLC = "flows.0.cc", "links.0.delay_s", "ues.0.rlc_buffer_bytes"
D_INFO, T_INFO, KIND, NODE, POLICY = "proxy.d_info_s", "proxy.t_info_s", "proxy.kind", "proxy.node", "proxy.policy"
POINT = [CC, D_RS, B_RLC, D_INFO, T_INFO, KIND, NODE, POLICY]
# The flow-window policy of the shipped sweeps' milliProxy arms (the scenario's default), and
# the policies the study runs unless told others: the default against the published rule.
SHIPPED_POLICY = "calibrated"
DEFAULT_POLICIES = (SHIPPED_POLICY, "bdp")
# The goal for a default flow-window policy (docs/studies.md#policy-goal): goodput at least 0.98 of no proxy's everywhere.
GOODPUT_GOAL = 0.98


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` paired seeds per point, default 50 (quick 30)."""
    out = Path(out)
    policies = list(options.policies or DEFAULT_POLICIES)
    sweep_file = out / f"{options.sweep}-policies.toml"
    out.mkdir(parents=True, exist_ok=True)
    sweep_file.write_text(policy_sweep_text(options.sweep, policies, options.command))
    frame = with_base_values(run_runs(out, options, sweep_file), [*POINT, CWND_GROWTH], "milliproxy")
    points = _points(frame)
    baselines = _baselines(frame)
    summary = {**summary_head(options, frame), "verdict": verdict(points), "policies": policies, "points": points, "baselines": baselines}
    tables = {"Per point": result_table(points, baselines)}
    heading = f"milliProxy study ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(frame, points, baselines, out / "store"))
    return StudyResult(summary, tables, out)


def policy_sweep_text(sweep: str, policies: Sequence[str], command: str) -> str:
    """The shipped sweep `sweep` with each milliProxy arm run once per flow-window policy: the
    arm itself for the scenario's default policy (the shipped arm, so `millinet sweep` of the
    shipped file shares its runs),
    ARM-POLICY with `proxy.policy` = POLICY for the others, and each pairing whose treatment
    is such an arm likewise. Arms without a proxy or with split-TCP stay as they are. The
    result is a sweep file of its own: `millinet sweep` runs it as the study did."""
    doc = tomllib.loads(sweep_path(sweep).read_text())
    renamed: dict[str, list[str]] = {}
    for table in [doc, *doc.get("parts", [])]:
        arms = {}
        for name, overrides in table.get("arms", {}).items():
            if NODE not in overrides or overrides.get(KIND, "milliproxy") != "milliproxy":
                arms[name] = overrides
                continue
            renamed[name] = [name if policy == SHIPPED_POLICY else f"{name}-{policy}" for policy in policies]
            for policy, variant in zip(policies, renamed[name]):
                arms[variant] = overrides if policy == SHIPPED_POLICY else {**overrides, POLICY: policy}
        if "arms" in table:
            table["arms"] = arms
    doc["pairings"] = [
        {**pairing, "name": f"{arm}-vs-{pairing['baseline']}", "treatment": arm}
        for pairing in doc.get("pairings", [])
        for arm in renamed.get(pairing["treatment"], [pairing["treatment"]])
    ]
    doc["description"] = f"{doc.get('description', '')}; here every milliProxy arm once per flow-window policy: {', '.join(policies)}"
    return f"# Written by `{command}`: the shipped sweep {sweep} with every milliProxy arm once per policy.\n" + tomli_w.dumps(doc)


def verdict(points: list[dict]) -> list[str]:
    """What the points say, in a few sentences computed from them: per proxy arm the range of
    its goodput and RAN latency ratios over the points and where its goodput is lowest; which
    arms keep GOODPUT_GOAL of the goodput at every point; how wide the intervals are."""
    arms: dict[str, list[dict]] = {}
    for p in points:
        if _finite(p["goodput_ratio"]) and _finite(p["latency_ratio"]):
            arms.setdefault(p["arm"], []).append(p)
    if not arms:
        return ["No paired runs: no verdict."]
    lines = []
    for arm, group in arms.items():
        goodput = [p["goodput_ratio"] for p in group]
        latency = [p["latency_ratio"] for p in group]
        worst = min(group, key=lambda p: p["goodput_ratio"])
        lines.append(
            f"{arm} ({_proxy_name(group[0])}): {_span(goodput)}× the goodput without a proxy, {_latency_change(min(latency), max(latency))}; "
            f"lowest goodput at {_where(worst)}."
        )
    keeps = [arm for arm, group in arms.items() if all(p["goodput_ratio"] >= GOODPUT_GOAL for p in group)]
    misses = [arm for arm in arms if arm not in keeps]
    lines.append(
        f"At least {GOODPUT_GOAL:g} of the goodput at every point: {', '.join(keeps) or 'no arm'}"
        + (f"; below it somewhere: {', '.join(misses)}." if misses else ".")
    )
    paired = [p for group in arms.values() for p in group]
    pairs = sorted({p["pairs"] for p in paired})
    seeds = pairs[0] if len(pairs) == 1 else f"{pairs[0]}–{pairs[-1]}"
    goodput, latency = _widest(paired, "goodput_ratio"), _widest(paired, "latency_ratio")
    if math.isnan(goodput) or math.isnan(latency):
        lines.append(f"No 95% intervals: {seeds} paired seed(s) per point.")
    else:
        lines.append(f"95% intervals over {seeds} paired seeds: every goodput ratio within ±{goodput:.1f}% of itself, every RAN latency ratio within ±{latency:.1f}%.")
    return lines


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _proxy_name(p: dict) -> str:
    if p["proxy"] == "split":
        return "split-TCP at the edge"
    return f"milliProxy at the {'gNB' if p['placement'] == 'gnb' else 'edge'}, {p['policy']} policy"


def _span(values: list[float], spec: str = ".2f") -> str:
    low, high = (format(v, spec) for v in (min(values), max(values)))
    return low if low == high else f"{low}–{high}"


def _latency_change(low: float, high: float) -> str:
    """RAN latency ratios none/proxy from `low` to `high` in words."""
    if low >= 1:
        return f"RAN latency {_span([low, high], '.3g')}× lower"
    if high <= 1:
        return f"RAN latency {_span([1 / high, 1 / low], '.3g')}× higher"
    return f"RAN latency from {1 / low:.3g}× higher to {high:.3g}× lower"


def _where(p: dict) -> str:
    return f"{p['cc']}, D_RS {p['d_rs_ms']:g} ms, B_RLC {p['b_rlc_bytes'] / 1e6:g} MB ({p['goodput_ratio']:.2f})"


def _widest(points: list[dict], key: str) -> float:
    """The largest half-width of the points' `key` intervals, in percent of the ratio."""
    halves = [max(p[f"{key}_ci"][1] - p[key], p[key] - p[f"{key}_ci"][0]) / p[key] * 100 for p in points]
    return max((h for h in halves if math.isfinite(h)), default=math.nan)


def _points(frame: pd.DataFrame) -> list[dict]:
    """One entry per proxy arm and point, with its paired ratios against no proxy."""
    meta = frame.attrs["sweep"]
    stats = _stats(frame)
    points = []
    for pairing in meta["pairings"]:
        arm = pairing["treatment"]
        goodput = paired_ratios(frame, {"baseline": BASELINE_ARM, "treatment": arm}, GOODPUT, POINT)
        # latency(no proxy) / latency(proxy): the proxy's run is the denominator.
        latency = paired_ratios(frame, {"baseline": arm, "treatment": BASELINE_ARM}, LATENCY, POINT)
        for (_, g), (_, lat) in zip(goodput.iterrows(), latency.iterrows(), strict=True):
            row = stats[(stats["arm"] == arm) & (stats[CC] == g[CC]) & (stats[D_RS] == g[D_RS]) & (stats[B_RLC] == g[B_RLC])]
            points.append({**_describe(arm, row.iloc[0]), **_ratios(g, lat)})
    return points


def _baselines(frame: pd.DataFrame) -> list[dict]:
    stats = _stats(frame)
    return [_describe(BASELINE_ARM, row) for _, row in stats[stats["arm"] == BASELINE_ARM].iterrows()]


def _stats(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% interval of goodput and latency per arm and point, one row each."""
    return point_stats(frame, [GOODPUT, LATENCY], ["arm", *POINT])


def _describe(arm: str, row: pd.Series) -> dict:
    proxy = None if arm == BASELINE_ARM else row[KIND]
    placement = None if proxy is None else ("gnb" if row[NODE] == "gnb" else "edge")
    return {
        "arm": arm,
        "proxy": proxy,
        "placement": placement,
        "policy": row[POLICY] if proxy == "milliproxy" else None,
        "cc": row[CC],
        "d_rs_ms": round(row[D_RS] * 1e3, 6),
        "b_rlc_bytes": int(row[B_RLC]),
        "d_info_ms": None if proxy != "milliproxy" else round(row[D_INFO] * 1e3, 6),
        "t_info_ms": None if proxy != "milliproxy" else round(row[T_INFO] * 1e3, 6),
        "runs": int(row[f"{GOODPUT}:n"]),
        "goodput_bps": interval(row, GOODPUT),
        "ran_latency_ms": interval(row, LATENCY),
    }


def _ratios(goodput: pd.Series, latency: pd.Series) -> dict:
    return {"pairs": int(goodput["n"]), **ratio_fields("latency_ratio", latency), **ratio_fields("goodput_ratio", goodput)}


def result_table(points: list[dict], baselines: list[dict]) -> pd.DataFrame:
    """The study's table: every point without and with a proxy, goodput and RAN latency
    mean [95% interval], and the paired ratios [95% bootstrap interval]."""
    rows = []
    for p in sorted(baselines + points, key=lambda p: (p["cc"], p["d_rs_ms"], p["b_rlc_bytes"], p["arm"] != BASELINE_ARM, p["arm"])):
        g, lat = p["goodput_bps"], p["ran_latency_ms"]
        rows.append(
            {
                "cc": p["cc"],
                "D_RS ms": f"{p['d_rs_ms']:g}",
                "B_RLC MB": f"{p['b_rlc_bytes'] / 1e6:g}",
                "proxy": p["arm"],
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(g, 1e-6),
                "RAN latency ms": plus_minus(lat, 1.0),
                "latency none/proxy": ratio_cell(p, "latency_ratio"),
                "goodput proxy/none": ratio_cell(p, "goodput_ratio"),
            }
        )
    return pd.DataFrame(rows)


def _notes(summary: dict) -> tuple[str, ...]:
    growth = {
        "cwnd-limited": "the servers' cwnd grows only while cwnd-limited (Linux)",
        "always": "the servers' cwnd grows on every ACK even when not cwnd-limited (as in the simulators of the original evaluation)",
    }[summary["cwnd_growth"]]
    return (
        "Verdict: " + " ".join(summary["verdict"]),
        f"Reproduce: {summary['command']}. TCP profile: {summary['tcp_profile']} (docs/scenario-reference.md, TCP profiles). "
        f"Congestion window growth: {growth} (flows.0.cwnd_growth = {summary['cwnd_growth']!r}).",
        "Goodput and RAN latency: mean over runs with a 95% Student-t interval. Ratios: paired on the same seeds "
        "(same obstacles, shadowing and fading) as the runs without a proxy, mean over mean, with a 95% percentile "
        "bootstrap interval over seeds.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
        "Proxies: none = no proxy; gnb = milliProxy at the gNB (D_info 0, T_info 1 ms); edge = milliProxy at the "
        "PGW/edge (D_info 3 ms, T_info 1 ms); edge-t10 = the same with T_info 10 ms; split = the split-TCP baseline "
        "at the edge (CUBIC, MSS 1400 toward the UE, 40 MB buffer). MSS2 20000, 40 MB flow buffer, flow-window "
        f"policy {SHIPPED_POLICY} (d* = max(3 ms, 0.15 RTT_min)) unless the arm's name ends in another policy's: ARM-POLICY is "
        f"ARM with that policy (bdp: the published rule, 2 MB threshold; docs/proxy.md). Policies run: {', '.join(summary['policies'])}.",
    )


def _tradeoff(points: list[dict], baselines: list[dict]) -> bytes:
    """Per server CC, each arm's points as (RAN latency, paired goodput ratio) with their
    intervals, the runs without a proxy at ratio 1: which policy buys latency with goodput."""
    panels: dict[str, dict[str, list]] = {}
    for p in [*baselines, *points]:
        latency = p["ran_latency_ms"]
        ratio = (p["goodput_ratio"], *p["goodput_ratio_ci"]) if p["arm"] != BASELINE_ARM else (1.0, 1.0, 1.0)
        label = f"{p['d_rs_ms']:g}/{p['b_rlc_bytes'] / 1e6:g}"
        panels.setdefault(p["cc"], {}).setdefault(p["arm"], []).append(((latency["mean"], latency["ci_low"], latency["ci_high"]), ratio, label))
    return figures.tradeoff(panels, "mean RAN latency (ms)", "goodput proxy/none", GOODPUT_GOAL, "labels: D_RS ms / B_RLC MB")


def _plots(frame: pd.DataFrame, points: list[dict], baselines: list[dict], store: Path) -> dict[str, bytes]:
    images = {}
    labels = [f"{p['arm']} {p['cc']} {p['d_rs_ms']:g}ms {p['b_rlc_bytes'] / 1e6:g}MB" for p in points]
    for key, title in (("latency_ratio", "RAN latency ratio none/proxy"), ("goodput_ratio", "goodput ratio proxy/none")):
        bars = pd.DataFrame({"mean": [p[key] for p in points], "ci_low": [p[f"{key}_ci"][0] for p in points], "ci_high": [p[f"{key}_ci"][1] for p in points]})
        images[title] = figures.bars(bars, labels, "ratio", 1.0)
    images["goodput vs RAN latency per point and policy"] = _tradeoff(points, baselines)
    runs = _example_runs(frame)
    for arm, key in runs.items():
        panels = figures.run_panels(stores.run_dir(store, key))
        if panels is not None:
            images[f"time series, seed 1, {arm}"] = panels
    return images


def _example_runs(frame: pd.DataFrame) -> dict[str, str]:
    """Run keys of one point (the largest D_RS and B_RLC, the first server CC by name, the
    lowest seed) without a proxy and with milliProxy at the gNB under each policy: the
    time-series panels compare them."""
    ok = frame[(frame["status"] == "ok") & (frame["seed"] == frame["seed"].min())]
    if ok.empty:
        return {}
    ok = ok[ok[CC] == min(ok[CC])]
    ok = ok[(ok[D_RS] == ok[D_RS].max()) & (ok[B_RLC] == ok[B_RLC].max())]
    arms = [BASELINE_ARM, *sorted(arm for arm in ok["arm"].unique() if arm == "gnb" or arm.startswith("gnb-"))]
    return {arm: ok.loc[ok["arm"] == arm, "run_key"].iloc[0] for arm in arms if (ok["arm"] == arm).any()}
