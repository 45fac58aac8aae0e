"""The milliProxy evaluation (scenarios.md §1, milliproxy.md §6): the shipped `milliproxy`
sweep (or `milliproxy-quick`) run into a result store, then per parameter point the goodput
and RAN latency with 95% intervals and the paired ratios against the runs without a proxy
on the same seeds: latency(no proxy) / latency(proxy) and goodput(proxy) / goodput(no proxy).

Writes into OUT: summary.json (`points`, one per proxy parameter point), table.md, index.html
(self-contained), plots/*.png and the result store in store/.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from millinet import resolve
from millinet import store as stores
from millinet._toml import tomllib
from millinet.report import figures
from millinet.report.page import html_page, markdown_page
from millinet.report.stats import aggregate, paired_ratios
from millinet.sweep import load_sweep, run_sweep
from millinet.sweep.spec import lookup

BASELINE_ARM = "none"
GOODPUT = "flows.0.goodput_bps"
LATENCY = "flows.0.ran_latency_ms.mean"
# The sweep's parameters that define a point (besides the arm), and their names in summary.json.
CC, D_RS, B_RLC = "flows.0.cc", "links.0.delay_s", "ues.0.rlc_buffer_bytes"
D_INFO, T_INFO, KIND, NODE = "proxy.d_info_s", "proxy.t_info_s", "proxy.kind", "proxy.node"
CWND_GROWTH = "flows.0.cwnd_growth"
POINT = [CC, D_RS, B_RLC, D_INFO, T_INFO, KIND, NODE]


@dataclass(frozen=True)
class StudyResult:
    summary: dict
    table: pd.DataFrame
    out: Path


def run(
    out: Path,
    runs: int | None = None,
    quick: bool = False,
    cwnd_growth: str | None = None,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    quiet: bool = False,
) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`.

    `runs` replaces the number of paired seeds per point (50, quick 3); `cwnd_growth`
    ("cwnd-limited" or "always") sets how the servers' cwnd grows (transport.md §1)."""
    out = Path(out)
    name = "milliproxy-quick" if quick else "milliproxy"
    overrides = {CWND_GROWTH: cwnd_growth} if cwnd_growth else None
    sweep = load_sweep(name, overrides)
    seeds = list(range(1, runs + 1)) if runs else None
    run_sweep(sweep, out / "store", engine=engine, workers=workers, address=address, quiet=quiet, seeds=seeds)
    frame = _with_base_values(stores.load(out / "store"), tomllib.loads(resolve("milliproxy")))
    growth = cwnd_growth or frame[CWND_GROWTH].iloc[0]
    points = _points(frame)
    baselines = _baselines(frame)
    command = "millinet study milliproxy" + (" --quick" if quick else "") + (f" --runs {runs}" if runs else "") + (
        f" --cwnd-growth {cwnd_growth}" if cwnd_growth else ""
    )
    summary = {
        "study": "milliproxy",
        "sweep": name,
        "command": command,
        "cwnd_growth": growth,
        "runs": int((frame["status"] == "ok").sum()),
        "failed_runs": int((frame["status"] != "ok").sum()),
        "points": points,
        "baselines": baselines,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(_json_ready(summary), indent=2, allow_nan=False) + "\n")
    table = result_table(points, baselines)
    notes = _notes(summary)
    heading = f"milliProxy study ({name}): {summary['runs']} runs"
    (out / "table.md").write_text(markdown_page(heading, {"Per point": table}, notes))
    images = _plots(frame, points, out / "store")
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    for title, png in images.items():
        (plots / (_slug(title) + ".png")).write_bytes(png)
    (out / "index.html").write_text(html_page(heading, {"Per point": table}, images, notes))
    return StudyResult(summary, table, out)


def _with_base_values(frame: pd.DataFrame, base: dict) -> pd.DataFrame:
    """The point parameters a sweep does not vary are columns too, holding the base
    scenario's value (a sweep's table only has the keys it sets)."""
    for key in (*POINT, CWND_GROWTH):
        if key not in frame.columns:
            frame[key] = lookup(base, key)
    return frame


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
    by = ["arm", *POINT]
    agg = aggregate(frame, [GOODPUT, LATENCY], by)
    wide = agg.pivot_table(index=by, columns="metric", values=["mean", "ci_low", "ci_high", "n"], aggfunc="first", sort=False)
    wide.columns = [f"{metric}:{stat}" for stat, metric in wide.columns]
    return wide.reset_index()


def _describe(arm: str, row: pd.Series) -> dict:
    proxy = None if arm == BASELINE_ARM else row[KIND]
    placement = None if proxy is None else ("gnb" if row[NODE] == "gnb" else "edge")
    return {
        "arm": arm,
        "proxy": proxy,
        "placement": placement,
        "cc": row[CC],
        "d_rs_ms": round(row[D_RS] * 1e3, 6),
        "b_rlc_bytes": int(row[B_RLC]),
        "d_info_ms": None if proxy != "milliproxy" else round(row[D_INFO] * 1e3, 6),
        "t_info_ms": None if proxy != "milliproxy" else round(row[T_INFO] * 1e3, 6),
        "runs": int(row[f"{GOODPUT}:n"]),
        "goodput_bps": _interval(row, GOODPUT),
        "ran_latency_ms": _interval(row, LATENCY),
    }


def _interval(row: pd.Series, metric: str) -> dict:
    return {"mean": row[f"{metric}:mean"], "ci_low": row[f"{metric}:ci_low"], "ci_high": row[f"{metric}:ci_high"]}


def _ratios(goodput: pd.Series, latency: pd.Series) -> dict:
    return {
        "pairs": int(goodput["n"]),
        "latency_ratio": latency["ratio"],
        "latency_ratio_ci": [latency["ci_low"], latency["ci_high"]],
        "goodput_ratio": goodput["ratio"],
        "goodput_ratio_ci": [goodput["ci_low"], goodput["ci_high"]],
    }


def _json_ready(value: object) -> object:
    """Plain Python values for JSON: NumPy scalars unwrapped, undefined intervals (NaN,
    fewer than 2 runs) as null."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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
                "goodput Mbit/s": _plus_minus(g, 1e-6),
                "RAN latency ms": _plus_minus(lat, 1.0),
                "latency none/proxy": _ratio_cell(p, "latency_ratio"),
                "goodput proxy/none": _ratio_cell(p, "goodput_ratio"),
            }
        )
    return pd.DataFrame(rows)


def _plus_minus(interval: dict, scale: float) -> str:
    """mean ± half-width of its (symmetric, Student t) 95% interval."""
    mean, low = interval["mean"] * scale, interval["ci_low"] * scale
    return _number(mean) if math.isnan(low) else f"{_number(mean)} ± {_number(mean - low)}"


def _number(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _ratio_cell(point: dict, key: str) -> str:
    """ratio [95% bootstrap interval] (asymmetric)."""
    if key not in point:
        return "-"
    low, high = point[f"{key}_ci"]
    return f"{point[key]:.3g}" if math.isnan(low) else f"{point[key]:.3g} [{low:.3g}, {high:.3g}]"


def _notes(summary: dict) -> tuple[str, ...]:
    growth = {
        "cwnd-limited": "the servers' cwnd grows only while cwnd-limited (Linux)",
        "always": "the servers' cwnd grows on every ACK even when not cwnd-limited (as in the simulators of the original evaluation)",
    }[summary["cwnd_growth"]]
    return (
        f"Reproduce: {summary['command']}. Congestion window growth: {growth} (flows.0.cwnd_growth = {summary['cwnd_growth']!r}).",
        "Goodput and RAN latency: mean over runs with a 95% Student-t interval. Ratios: paired on the same seeds "
        "(same obstacles, shadowing and fading) as the runs without a proxy, mean over mean, with a 95% percentile "
        "bootstrap interval over seeds.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
        "Proxies: none = no proxy; gnb = milliProxy at the gNB (D_info 0, T_info 1 ms); edge = milliProxy at the "
        "PGW/edge (D_info 3 ms, T_info 1 ms); edge-t10 = the same with T_info 10 ms; split = the split-TCP baseline "
        "at the edge (CUBIC, MSS 1400 toward the UE, 10 MB buffer). MSS2 20000, policy bdp (2 MB threshold).",
    )


def _plots(frame: pd.DataFrame, points: list[dict], store: Path) -> dict[str, bytes]:
    images = {}
    labels = [f"{p['arm']} {p['cc']} {p['d_rs_ms']:g}ms {p['b_rlc_bytes'] / 1e6:g}MB" for p in points]
    for key, title in (("latency_ratio", "RAN latency ratio none/proxy"), ("goodput_ratio", "goodput ratio proxy/none")):
        bars = pd.DataFrame({"mean": [p[key] for p in points], "ci_low": [p[f"{key}_ci"][0] for p in points], "ci_high": [p[f"{key}_ci"][1] for p in points]})
        images[title] = figures.bars(bars, labels, "ratio", 1.0)
    runs = _example_runs(frame)
    for arm, key in runs.items():
        panels = figures.run_panels(stores.run_dir(store, key))
        if panels is not None:
            images[f"time series, seed 1, {arm}"] = panels
    return images


def _example_runs(frame: pd.DataFrame) -> dict[str, str]:
    """Run keys of one point (the largest D_RS and B_RLC, NewReno, seed 1) without a proxy
    and with milliProxy at the gNB: the time-series panels compare them."""
    ok = frame[(frame["status"] == "ok") & (frame["seed"] == frame["seed"].min()) & (frame[CC] == "newreno")]
    ok = ok[(ok[D_RS] == ok[D_RS].max()) & (ok[B_RLC] == ok[B_RLC].max())]
    return {arm: ok.loc[ok["arm"] == arm, "run_key"].iloc[0] for arm in (BASELINE_ARM, "gnb") if (ok["arm"] == arm).any()}


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")

