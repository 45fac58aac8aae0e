"""The milliProxy evaluation (scenarios.md §1, milliproxy.md §6): the shipped `milliproxy`
sweep (or `milliproxy-quick`) run into a result store, then per parameter point the goodput
and RAN latency with 95% intervals and the paired ratios against the runs without a proxy
on the same seeds: latency(no proxy) / latency(proxy) and goodput(proxy) / goodput(no proxy).
With `--policies`, every milliProxy arm runs once per flow-window policy on the same seeds
(the sweep file the study then runs is written into OUT too).

Writes into OUT: summary.json (`points`, one per proxy parameter point), table.md, index.html
(self-contained), plots/*.png and the result store in store/.
"""

from __future__ import annotations

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
# The flow-window policy of the shipped sweeps' milliProxy arms (the scenario's default).
SHIPPED_POLICY = "bdp"
# Issue 19's goal for a flow-window policy: goodput at least 0.98 of no proxy's everywhere.
GOODPUT_GOAL = 0.98


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` paired seeds per point, default 50 (quick 3)."""
    out = Path(out)
    sweep_file = None
    if options.policies:
        sweep_file = out / f"{options.sweep}-policies.toml"
        out.mkdir(parents=True, exist_ok=True)
        sweep_file.write_text(policy_sweep_text(options.sweep, options.policies, options.command))
    frame = with_base_values(run_runs(out, options, sweep_file), [*POINT, CWND_GROWTH], "milliproxy")
    points = _points(frame)
    baselines = _baselines(frame)
    policies = list(options.policies or [SHIPPED_POLICY])
    summary = {**summary_head(options, frame), "policies": policies, "points": points, "baselines": baselines}
    tables = {"Per point": result_table(points, baselines)}
    heading = f"milliProxy study ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(frame, points, baselines, out / "store"))
    return StudyResult(summary, tables, out)


def policy_sweep_text(sweep: str, policies: Sequence[str], command: str) -> str:
    """The shipped sweep `sweep` with each milliProxy arm run once per flow-window policy: the
    arm itself for `bdp` (the shipped arm, so the study without --policies shares its runs),
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
        f"Reproduce: {summary['command']}. TCP profile: {summary['tcp_profile']} (docs/scenario-reference.md, TCP profiles). "
        f"Congestion window growth: {growth} (flows.0.cwnd_growth = {summary['cwnd_growth']!r}).",
        "Goodput and RAN latency: mean over runs with a 95% Student-t interval. Ratios: paired on the same seeds "
        "(same obstacles, shadowing and fading) as the runs without a proxy, mean over mean, with a 95% percentile "
        "bootstrap interval over seeds.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
        "Proxies: none = no proxy; gnb = milliProxy at the gNB (D_info 0, T_info 1 ms); edge = milliProxy at the "
        "PGW/edge (D_info 3 ms, T_info 1 ms); edge-t10 = the same with T_info 10 ms; split = the split-TCP baseline "
        "at the edge (CUBIC, MSS 1400 toward the UE, 10 MB buffer). MSS2 20000, flow-window policy bdp (2 MB "
        "threshold) unless the arm's name ends in another policy's: ARM-POLICY is ARM with that policy "
        f"(docs/proxy.md). Policies run: {', '.join(summary['policies'])}.",
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
    """Run keys of one point (the largest D_RS and B_RLC, NewReno, seed 1) without a proxy
    and with milliProxy at the gNB under each policy: the time-series panels compare them."""
    ok = frame[(frame["status"] == "ok") & (frame["seed"] == frame["seed"].min()) & (frame[CC] == "newreno")]
    ok = ok[(ok[D_RS] == ok[D_RS].max()) & (ok[B_RLC] == ok[B_RLC].max())]
    arms = [BASELINE_ARM, *sorted(arm for arm in ok["arm"].unique() if arm == "gnb" or arm.startswith("gnb-"))]
    return {arm: ok.loc[ok["arm"] == arm, "run_key"].iloc[0] for arm in arms if (ok["arm"] == arm).any()}
