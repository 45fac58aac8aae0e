"""The end-to-end studies (docs/studies.md#e2e): the shipped sweep `e2e` (or `e2e-quick`) run
into a result store, then, every metric computed from each run's saved time series:

- blockers (UDP, NewReno, CUBIC with a 1 Gbit/s source past human blockers): the time to
  reach the source rate, the goodput in LOS and in NLOS, the burst after each NLOS→LOS
  transition (what the RLC buffer held, delivered at the radio's rate);
- buildings (NewReno without SACK, 300 Mbit/s and 1 Gbit/s, RLC 10 and 3 MB, impatient and
  slow-but-steady): goodput, smoothed RTT (mean and 95th percentile), retransmissions, RLC
  overflow drops, the time to first reach the source rate and to get back to it after the
  long NLOS period;
- outage (0.4 s and 1.0 s at 3 s, min RTO 1 s, NewReno and CUBIC): whether an RTO fired
  (the cwnd fell to one segment), the goodput before the outage and the time to get back to
  90% of it;
- trace (a vehicular route: the 5Gophers drive as a capacity trace; a pedestrian route at
  3 m/s: the channel model's SINR recorded once and replayed): goodput against the capacity
  the trace offered.

Writes into OUT: summary.json (`blockers`, `buildings`, `outage`, `outage_runs`, `trace`),
table.md, index.html, plots/*.png and the result store in store/.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from millinet.report import figures
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, bin_width_s, drawn, first_seed_runs, flow_goodput, interval, mean_between, nlos_periods, number, plus_minus, point_stats, reproduce_note, run_runs, run_tables, summary_head, time_to_rate_s, with_base_values, with_run_metrics, write_outputs
from millinet.sweep.spec import SCENARIO_COLUMN

CC, KIND, MSS = "flows.0.cc", "flows.0.kind", "flows.0.mss_bytes"
APP_RATE, UDP_RATE = "flows.0.app_rate_bps", "flows.0.udp_rate_bps"
B_RLC, VARIANT = "ues.0.rlc_buffer_bytes", "flows.0.newreno_variant"
OUTAGE_START, OUTAGE_LENGTH = "ues.0.forced_events.0.start_s", "ues.0.forced_events.0.duration_s"
RTOS, RETRANSMITS, OVERFLOW = "flows.0.rtos", "flows.0.retransmits", "ues.0.downlink.drops_overflow"
BLOCKERS, BUILDINGS, OUTAGE = "e2e-blockers", "e2e-buildings", "e2e-outage"
# The replayed routes (docs/studies.md#e2e, e2e-trace): scenario -> the route's name in the tables.
ROUTES = {"e2e-trace": "vehicular (5Gophers drive)", "e2e-trace-pedestrian": "pedestrian, 3 m/s"}

# A rate counts as reached when the median goodput bin over the next RATE_WINDOW_S is at
# least RATE_SHARE of the target: 90% leaves room for UDP's headers (the source rate counts
# IP bytes) and for HARQ; 100 ms spans a few RTTs. Recovery after an outage or a building
# asks the same over RECOVERY_WINDOW_S, so that a rate held for half a second counts.
RATE_SHARE, RATE_WINDOW_S, RECOVERY_WINDOW_S = 0.9, 0.1, 0.5
BURST_WINDOW_S = 0.2  # the burst after NLOS→LOS: what arrives within this of the transition
PRE_OUTAGE_S = 1.0  # the pre-outage rate: mean goodput over this long before the outage
ORDER = {"udp": 0, "newreno": 1, "cubic": 2}


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 10 (quick 1)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [CC, KIND, MSS, APP_RATE, UDP_RATE, B_RLC, VARIANT, OUTAGE_START, OUTAGE_LENGTH, CWND_GROWTH, "duration_s"], BLOCKERS)
    head = summary_head(options, frame)
    frame = with_run_metrics(frame[frame["status"] == "ok"], out / "store", family_metrics)
    families = {name: frame[frame[SCENARIO_COLUMN] == scenario] for name, scenario in (("blockers", BLOCKERS), ("buildings", BUILDINGS), ("outage", OUTAGE))}
    families["trace"] = frame[frame[SCENARIO_COLUMN].isin(ROUTES)]
    summary = {
        **head,
        "seeds": sorted(int(seed) for seed in frame["seed"].unique()),
        "blockers": _blocker_points(families["blockers"]),
        "buildings": _building_points(families["buildings"]),
        "outage": _outage_points(families["outage"]),
        "outage_runs": _outage_runs(families["outage"]),
        "trace": _trace_points(families["trace"]),
    }
    tables = {
        "Blockers: 1 Gbit/s source past human blockers": blockers_table(summary["blockers"]),
        "Buildings: NewReno without SACK": buildings_table(summary["buildings"]),
        "Forced outage at 3 s, min RTO 1 s": outage_table(summary["outage"]),
        "Route traces: a drive (5Gophers, Verizon mmWave) and a pedestrian": trace_table(summary["trace"]),
    }
    tables = {title: table for title, table in tables.items() if len(table)}
    heading = f"End-to-end studies ({options.sweep}): {summary['runs']} runs"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(families, out / "store"))
    return StudyResult(summary, tables, out)


def family_metrics(row: pd.Series, store: Path) -> dict:
    """A run's metrics, those of its scenario's family (the other families' columns stay NaN)."""
    return _FAMILY_METRICS[row[SCENARIO_COLUMN]](row, store)


def flow_label(row: pd.Series) -> str:
    return "udp" if row[KIND] == "udp" else row[CC]


def source_rate_bps(row: pd.Series) -> float:
    return float(row[UDP_RATE] if row[KIND] == "udp" else row[APP_RATE])


def blocker_metrics(row: pd.Series, store: Path) -> dict:
    """Time to the source rate; goodput in LOS (bursts left out) and NLOS from then on (a
    goodput bin counts as NLOS when most of the UE's samples in it are); the number of
    NLOS→LOS transitions and the mean over them of the peak and of the excess over the
    source rate (bytes) of the goodput within BURST_WINDOW_S after each."""
    tables = run_tables(store, row["run_key"], ("goodput", "ues"))
    goodput, source = flow_goodput(tables), source_rate_bps(row)
    reach = time_to_rate_s(goodput, 0.0, RATE_SHARE * source, RATE_WINDOW_S)
    los = _los_per_bin(tables["ues"], goodput)
    after = goodput.index >= (0.0 if math.isnan(reach) else reach)
    peaks, excess = [], []
    bin_s = bin_width_s(goodput)
    in_burst = np.zeros(len(goodput), bool)
    # An NLOS period still open when the run ends has no transition after it.
    for _, end in (p for p in nlos_periods(tables) if p[1] < goodput.index[-1]):
        window = (goodput.index >= end - 1e-9) & (goodput.index < end + BURST_WINDOW_S)
        in_burst |= window
        if window.any():
            peaks.append(goodput[window].max())
            excess.append(float((goodput[window] - source).clip(lower=0).sum() * bin_s / 8))
    return {
        "time_to_source_rate_s": reach,
        # LOS goodput without the bursts: what the source gets once the backlog is gone.
        "los_goodput_bps": float(goodput[after & los & ~in_burst].mean()),
        "nlos_goodput_bps": float(goodput[after & ~los].mean()),
        "burst_peak_bps": float(np.mean(peaks)) if peaks else math.nan,
        "burst_excess_bytes": float(np.mean(excess)) if excess else math.nan,
        "nlos_transitions": len(peaks),
        "series_goodput_bps": float(goodput.mean()),
    }


def _los_per_bin(ues: pd.DataFrame, goodput: pd.Series) -> np.ndarray:
    """Whether the UE was mostly in LOS during each goodput bin."""
    bin_s = bin_width_s(goodput)
    ue = ues[ues["ue"] == 0]
    share = ue.groupby(np.round(np.floor(ue["t"] / bin_s + 1e-6) * bin_s, 9))["los"].mean()
    return (share.reindex(np.round(goodput.index, 9)).fillna(1.0) >= 0.5).to_numpy()


def building_metrics(row: pd.Series, store: Path) -> dict:
    """Goodput, smoothed RTT (mean, p95), the time to first reach the source rate, and the
    time from the end of the longest NLOS period until the goodput is back at it."""
    tables = run_tables(store, row["run_key"], ("goodput", "ues", "flows"))
    goodput, periods, source = flow_goodput(tables), nlos_periods(tables), source_rate_bps(row)
    srtt = _srtt_ms(tables)
    longest = max(periods, key=lambda p: p[1] - p[0], default=None)
    return {
        "time_to_source_rate_s": time_to_rate_s(goodput, 0.0, RATE_SHARE * source, RATE_WINDOW_S),
        "series_goodput_bps": float(goodput.mean()),
        "srtt_ms": float(srtt.mean()),
        "srtt_p95_ms": float(srtt.quantile(0.95)),
        "nlos_s": longest[1] - longest[0] if longest else 0.0,
        "recovery_s": time_to_rate_s(goodput, longest[1], RATE_SHARE * source, RECOVERY_WINDOW_S) if longest else math.nan,
    }


def _srtt_ms(tables: dict[str, pd.DataFrame]) -> pd.Series:
    """Flow 0's smoothed RTT once it has a sample (0 before the first)."""
    flows = tables["flows"]
    srtt = flows[flows["flow"] == 0]["srtt_ms"]
    return srtt[srtt > 0]


def outage_metrics(row: pd.Series, store: Path) -> dict:
    """The goodput over PRE_OUTAGE_S before the outage; when the cwnd first fell to one
    segment (an RTO: fast recovery never takes it that low), from the outage's start; the
    time from the outage's end until the goodput is back at 90% of the pre-outage rate."""
    tables = run_tables(store, row["run_key"], ("goodput", "flows"))
    goodput = flow_goodput(tables)
    start, end = float(row[OUTAGE_START]), float(row[OUTAGE_START]) + float(row[OUTAGE_LENGTH])
    pre = mean_between(goodput, start - PRE_OUTAGE_S, start)
    flows = tables["flows"][tables["flows"]["flow"] == 0]
    collapsed = flows[(flows["t"] > 0) & (flows["cwnd_bytes"] <= row[MSS])]
    return {
        "pre_outage_bps": pre,
        "rto_after_s": float(collapsed["t"].iloc[0] - start) if len(collapsed) else math.nan,
        "min_cwnd_bytes": float(flows[flows["t"] >= start]["cwnd_bytes"].min()),
        "recovery_s": time_to_rate_s(goodput, end, RATE_SHARE * pre, RECOVERY_WINDOW_S),
        "post_outage_bps": mean_between(goodput, end, float(row["duration_s"])),
    }


def trace_metrics(row: pd.Series, store: Path) -> dict:
    """Goodput against the capacity the trace offered (the achievable rate of the `ues` table)."""
    tables = run_tables(store, row["run_key"], ("goodput", "ues"))
    goodput, capacity = float(flow_goodput(tables).mean()), float(tables["ues"]["rate_bps"].mean())
    return {"series_goodput_bps": goodput, "capacity_bps": capacity, "utilization": goodput / capacity if capacity else math.nan}


_FAMILY_METRICS = {BLOCKERS: blocker_metrics, BUILDINGS: building_metrics, OUTAGE: outage_metrics} | {route: trace_metrics for route in ROUTES}
# Each list starts with a metric every run has, whose count is the point's number of runs
# (a time never reached is NaN and leaves its own count short).
BLOCKER_METRICS = ["series_goodput_bps", "time_to_source_rate_s", "los_goodput_bps", "nlos_goodput_bps", "nlos_transitions", "burst_peak_bps", "burst_excess_bytes"]
BUILDING_METRICS = ["series_goodput_bps", "srtt_ms", "srtt_p95_ms", "nlos_s", "time_to_source_rate_s", "recovery_s", RETRANSMITS, OVERFLOW]
OUTAGE_METRICS = ["pre_outage_bps", "recovery_s", "post_outage_bps", "min_cwnd_bytes"]
TRACE_METRICS = ["series_goodput_bps", "capacity_bps", "utilization"]


def _stats_points(runs: pd.DataFrame, metrics: list[str], by: list[str]) -> list[tuple[pd.Series, dict]]:
    """(row of point_stats, the metrics' intervals and the number of runs: the count of the
    first metric) per point of `by`."""
    if runs.empty:
        return []
    stats = point_stats(runs, metrics, by)
    return [(row, {"runs": int(row[f"{metrics[0]}:n"]), **{_field(m): interval(row, m) for m in metrics}}) for _, row in stats.iterrows()]


def _field(metric: str) -> str:
    """A metric's summary.json name: the results column's last part (`retransmits`)."""
    return metric.split(".")[-1]


def _blocker_points(runs: pd.DataFrame) -> list[dict]:
    runs = runs.assign(flow=[flow_label(row) for _, row in runs.iterrows()]) if len(runs) else runs
    points = [{"flow": row["flow"], **fields} for row, fields in _stats_points(runs, BLOCKER_METRICS, ["flow"])]
    return sorted(points, key=lambda p: ORDER.get(p["flow"], 9))


def _building_points(runs: pd.DataFrame) -> list[dict]:
    points = [
        {"source_rate_bps": float(row[APP_RATE]), "b_rlc_bytes": int(row[B_RLC]), "variant": row[VARIANT], **fields}
        for row, fields in _stats_points(runs, BUILDING_METRICS, [APP_RATE, B_RLC, VARIANT])
    ]
    return sorted(points, key=lambda p: (p["source_rate_bps"], -p["b_rlc_bytes"], p["variant"]))


def _outage_points(runs: pd.DataFrame) -> list[dict]:
    """Per outage length and CC, the metrics and the share of runs in which an RTO fired."""
    points = []
    for row, fields in _stats_points(runs, OUTAGE_METRICS, [OUTAGE_LENGTH, CC]):
        same = runs[(runs[OUTAGE_LENGTH] == row[OUTAGE_LENGTH]) & (runs[CC] == row[CC])]
        points.append({"outage_s": float(row[OUTAGE_LENGTH]), "cc": row[CC], "rto_share": float(same["rto_after_s"].notna().mean()), **fields})
    return sorted(points, key=lambda p: (p["outage_s"], ORDER.get(p["cc"], 9)))


def _outage_runs(runs: pd.DataFrame) -> list[dict]:
    """Each outage run's verdict from its cwnd series next to its RTO counter."""
    return [
        {
            "run_key": row["run_key"],
            "seed": int(row["seed"]),
            "outage_s": float(row[OUTAGE_LENGTH]),
            "cc": row[CC],
            "rto_fired": bool(not math.isnan(row["rto_after_s"])),
            "rto_after_s": row["rto_after_s"],
            "rtos": int(row[RTOS]),
        }
        for _, row in runs.sort_values([OUTAGE_LENGTH, CC, "seed"]).iterrows()
    ]


def _trace_points(runs: pd.DataFrame) -> list[dict]:
    points = ({"route": ROUTES[row[SCENARIO_COLUMN]], "cc": row[CC], **fields} for row, fields in _stats_points(runs, TRACE_METRICS, [SCENARIO_COLUMN, CC]))
    return sorted(points, key=lambda p: (p["route"], ORDER.get(p["cc"], 9)))


def _seconds(value: dict) -> str:
    """A time in seconds, "never" when no run reached it (the mean is undefined)."""
    return "never" if value["mean"] is None or math.isnan(value["mean"]) else plus_minus(value, 1.0)


def blockers_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "flow": p["flow"],
                "runs": p["runs"],
                "to 90% of source s": _seconds(p["time_to_source_rate_s"]),
                "LOS Mbit/s": plus_minus(p["los_goodput_bps"], 1e-6),
                "NLOS Mbit/s": plus_minus(p["nlos_goodput_bps"], 1e-6),
                "NLOS→LOS": plus_minus(p["nlos_transitions"], 1.0),
                "burst peak Mbit/s": plus_minus(p["burst_peak_bps"], 1e-6),
                "burst above source MB": plus_minus(p["burst_excess_bytes"], 1e-6),
            }
            for p in points
        ]
    )


def buildings_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "source Mbit/s": number(p["source_rate_bps"] * 1e-6),
                "RLC MB": number(p["b_rlc_bytes"] * 1e-6),
                "variant": p["variant"],
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(p["series_goodput_bps"], 1e-6),
                "srtt ms": plus_minus(p["srtt_ms"], 1.0),
                "srtt p95 ms": plus_minus(p["srtt_p95_ms"], 1.0),
                "retransmits": plus_minus(p["retransmits"], 1.0),
                "RLC drops": plus_minus(p["drops_overflow"], 1.0),
                "building NLOS s": plus_minus(p["nlos_s"], 1.0),
                "to 90% of source s": _seconds(p["time_to_source_rate_s"]),
                "back after NLOS s": _seconds(p["recovery_s"]),
            }
            for p in points
        ]
    )


def outage_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "outage s": f"{p['outage_s']:g}",
                "cc": p["cc"],
                "runs": p["runs"],
                "RTO fired": f"{p['rto_share']:.0%} of runs",
                "before Mbit/s": plus_minus(p["pre_outage_bps"], 1e-6),
                "min cwnd kB": plus_minus(p["min_cwnd_bytes"], 1e-3),
                "to 90% of before s": _seconds(p["recovery_s"]),
                "after Mbit/s": plus_minus(p["post_outage_bps"], 1e-6),
            }
            for p in points
        ]
    )


def trace_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "route": p["route"],
                "cc": p["cc"],
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(p["series_goodput_bps"], 1e-6),
                "trace capacity Mbit/s": plus_minus(p["capacity_bps"], 1e-6),
                "of capacity": plus_minus(p["utilization"], 1.0),
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "Every figure is computed from the runs' saved time series (goodput per 10 ms bin, the UE's LOS state and the "
        "flow's cwnd and srtt per 1 ms), mean and 95% Student-t interval over seeds.",
        f"A rate counts as reached when the median 10 ms goodput bin over the next {RATE_WINDOW_S:g} s (recovery: "
        f"{RECOVERY_WINDOW_S:g} s) is at least {RATE_SHARE:.0%} of it, so that the burst of a draining RLC backlog does "
        "not count; 'never': not within the run.",
        f"Blockers: LOS/NLOS goodput from the time the source rate is reached on; the burst is the goodput within "
        f"{BURST_WINDOW_S:g} s after each NLOS→LOS transition (its peak per 10 ms bin, and its bytes above the source "
        "rate), mean over transitions. UDP's 1 Gbit/s counts IP bytes.",
        "Buildings: NewReno with SACK off (RFC 6582's impatient and slow-but-steady variants differ only in partial-ACK "
        "handling); 'back after NLOS' is from the end of the longest NLOS period (the building).",
        f"Outage: one forced outage (SINR -inf) at 3 s; an RTO fired when the cwnd fell to one segment, which fast "
        f"recovery never does (the per-run verdicts sit next to the flows' RTO counters in summary.json's outage_runs); "
        f"the rate before is the mean over the {PRE_OUTAGE_S:g} s before the outage, the rate after the mean from its "
        "end to the end of the run.",
        "Traces: the vehicular route is measured (5Gophers drive 1, Verizon mmWave, CC BY 4.0: the throughput of 8 TCP "
        "connections, replayed as capacity); no measured pedestrian mmWave trace ships, so the pedestrian route is the "
        "channel model's own SINR (3 m/s past buildings and passers-by, traces/pedestrian-route.toml), recorded once with "
        "`millinet trace from-run` and replayed, so every transport sees the same channel.",
    )


def _plots(families: dict[str, pd.DataFrame], store: Path) -> dict[str, bytes]:
    """The time series behind the tables, of the first seed's runs."""
    runs = {family: first_seed_runs(frame, store, _run_label) for family, frame in families.items()}
    return drawn(
        {
            "blockers: goodput over time": figures.flow_series_runs(runs["blockers"], "goodput", "goodput_bps", "Mbit/s", 1e-6),
            "buildings: goodput over time": figures.flow_series_runs(runs["buildings"], "goodput", "goodput_bps", "Mbit/s", 1e-6),
            "buildings: smoothed RTT over time": figures.flow_series_runs(runs["buildings"], "flows", "srtt_ms", "srtt (ms)", 1.0),
            "outage: goodput over time": figures.flow_series_runs(runs["outage"], "goodput", "goodput_bps", "Mbit/s", 1e-6),
            "outage: cwnd over time": figures.cwnd_runs(runs["outage"]),
            "trace: goodput over time": figures.flow_series_runs(runs["trace"], "goodput", "goodput_bps", "Mbit/s", 1e-6),
        }
    )


def _run_label(row: pd.Series) -> str:
    scenario = row[SCENARIO_COLUMN]
    if scenario == BUILDINGS:
        return f"NewReno {row[VARIANT]}, {row[APP_RATE] * 1e-6:g} Mbit/s, RLC {row[B_RLC] * 1e-6:g} MB"
    if scenario == OUTAGE:
        return f"{row[CC]}, {row[OUTAGE_LENGTH]:g} s outage at {row[OUTAGE_START]:g} s"
    if scenario in ROUTES:
        return f"{flow_label(row)}, {ROUTES[scenario]}"
    return flow_label(row)
