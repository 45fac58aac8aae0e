"""Dense urban, multi-user (docs/studies.md#urban): the shipped sweep `urban` (or `urban-quick`) run
into a result store, then per congestion control (the same on all ten flows) and UE the
goodput and mean RTT, the UE's SINR, and whether it meets the 5G target (goodput above
100 Mbit/s with an RTT under 10 ms); per congestion control the cell goodput, Jain's fairness
index of the ten UEs' goodputs and how many UEs meet the target; per condition (LOS, NLOS,
indoor) the SINR its UEs saw. Each UE's condition and server are read from its run's saved
scenario and summary: indoor if the scenario says so, else LOS or NLOS by where it spent most
of the run; its server is its flow's source node.

Writes into OUT: summary.json (`cells`, `ues`, `ue_runs`, `conditions`), table.md,
index.html, plots/*.png and the result store in store/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from millinet import store as stores
from millinet._toml import tomllib
from millinet.report import figures
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, drawn, interval, interval_cells, jain_index, number, point_stats, reproduce_note, run_runs, run_tables, timed_head, with_base_values, write_outputs

CC = "flows.0.cc"
# The 5G target of docs/studies.md#urban: a UE meets it with more goodput and less RTT than these.
TARGET_GOODPUT_BPS, TARGET_RTT_MS = 100e6, 10.0
CONDITIONS = ("LOS", "NLOS", "indoor")
ORDER = {"newreno": 0, "cubic": 1, "highspeed": 2, "bbr": 3}
UE_METRICS = ["goodput_bps", "rtt_ms", "sinr_db"]
CELL_METRICS = ["cell_goodput_bps", "jain_index", "ues_meeting_5g"]


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 10 (quick 1)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [CC, CWND_GROWTH, "duration_s"], "urban")
    ok = frame[frame["status"] == "ok"]
    ue_runs = pd.DataFrame([ue for _, row in ok.iterrows() for ue in ue_run_metrics(row, out / "store")])
    summary = {
        **timed_head(options, frame),
        "cells": _cell_points(ue_runs),
        "ues": _ue_points(ue_runs),
        "ue_runs": ue_runs.to_dict("records"),
        "conditions": _condition_points(ue_runs),
    }
    tables = {
        "Cell, per congestion control": cells_table(summary["cells"]),
        "Per UE: goodput, RTT and the 5G target": ues_table(summary["ues"]),
        "SINR per condition": conditions_table(summary["conditions"]),
    }
    heading = f"Dense urban, multi-user study ({options.sweep}): {summary['runs']} runs of {summary['duration_s']:g} s"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(ok, ue_runs, out / "store"))
    return StudyResult(summary, tables, out)


def ue_run_metrics(row: pd.Series, store: Path) -> list[dict]:
    """One entry per UE of a run: its name, condition and server, its flow's goodput and mean
    RTT (summary.json) and whether they meet the 5G target, and the mean, 5th and 95th
    percentile of its SINR and its LOS share (the `ues` time series)."""
    run_dir = stores.run_dir(store, row["run_key"])
    scenario = tomllib.loads((run_dir / "scenario.toml").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    sinr = run_tables(store, row["run_key"], ("ues",))["ues"].groupby("ue")["sinr_db"]
    sinr_mean, sinr_p5, sinr_p95 = sinr.mean(), sinr.quantile(0.05), sinr.quantile(0.95)
    flows = {flow["dst"]: flow for flow in summary["flows"]}
    entries = []
    for ue, (config, result) in enumerate(zip(scenario["ues"], summary["ues"])):
        flow = flows[config["node"]]
        los = result["los_fraction"]
        goodput, rtt = flow["goodput_bps"], flow["rtt_ms"]["mean"]
        entries.append(
            {
                "run_key": row["run_key"],
                "seed": int(row["seed"]),
                "cc": row[CC],
                "ue": ue,
                "name": config["node"],
                "condition": "indoor" if config.get("indoor", False) else "LOS" if los >= 0.5 else "NLOS",
                "server": flow["src"],
                "goodput_bps": goodput,
                "rtt_ms": rtt,
                "meets_5g": meets_5g(goodput, rtt),
                "sinr_db": float(sinr_mean[ue]),
                "sinr_p5_db": float(sinr_p5[ue]),
                "sinr_p95_db": float(sinr_p95[ue]),
                "los_fraction": los,
            }
        )
    return entries


def meets_5g(goodput_bps: float, rtt_ms: float) -> bool:
    return bool(goodput_bps > TARGET_GOODPUT_BPS and rtt_ms < TARGET_RTT_MS)


def cell_runs(ue_runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: the CC, the cell goodput (the sum over its UEs), Jain's index of its
    UEs' goodputs and how many UEs met the 5G target."""
    rows = []
    for (run_key, cc), ues in ue_runs.groupby(["run_key", "cc"], sort=False):
        goodputs = ues["goodput_bps"].to_numpy(float)
        rows.append({"run_key": run_key, "cc": cc, "cell_goodput_bps": goodputs.sum(), "jain_index": float(jain_index(*goodputs)), "ues_meeting_5g": int(ues["meets_5g"].sum())})
    return pd.DataFrame(rows)


def _cell_points(ue_runs: pd.DataFrame) -> list[dict]:
    if ue_runs.empty:
        return []
    stats = point_stats(cell_runs(ue_runs), CELL_METRICS, ["cc"])
    points = [{"cc": row["cc"], "runs": int(row["cell_goodput_bps:n"]), **{m: interval(row, m) for m in CELL_METRICS}} for _, row in stats.iterrows()]
    return sorted(points, key=lambda p: ORDER.get(p["cc"], 9))


def _ue_points(ue_runs: pd.DataFrame) -> list[dict]:
    """Per CC and UE: goodput, RTT and SINR over seeds; `meets_5g` on the mean goodput and
    RTT, `runs_meeting_5g` counts the runs in which the UE met it."""
    if ue_runs.empty:
        return []
    by = ["cc", "ue", "name", "condition", "server"]
    stats = point_stats(ue_runs, UE_METRICS, by)
    met = ue_runs.groupby(["cc", "ue"])["meets_5g"].sum()
    points = []
    for _, row in stats.iterrows():
        fields = {m: interval(row, m) for m in UE_METRICS}
        points.append(
            {
                **{key: row[key] for key in by},
                "runs": int(row["goodput_bps:n"]),
                **fields,
                "meets_5g": meets_5g(fields["goodput_bps"]["mean"], fields["rtt_ms"]["mean"]),
                "runs_meeting_5g": int(met[(row["cc"], row["ue"])]),
            }
        )
    return sorted(points, key=lambda p: (ORDER.get(p["cc"], 9), p["ue"]))


def _condition_points(ue_runs: pd.DataFrame) -> list[dict]:
    """Per condition, over its UEs and the runs: the mean SINR with its lowest and highest UE
    mean, the mean 5th and 95th percentiles and the LOS share (the same channel under every
    CC: the seed draws it)."""
    if ue_runs.empty:
        return []
    points = []
    for condition in CONDITIONS:
        rows = ue_runs[ue_runs["condition"] == condition]
        if rows.empty:
            continue
        per_ue = rows.groupby("ue")["sinr_db"].mean()
        points.append(
            {
                "condition": condition,
                "ues": sorted(rows["name"].unique().tolist()),
                "sinr_db": float(rows["sinr_db"].mean()),
                "sinr_lowest_ue_db": float(per_ue.min()),
                "sinr_highest_ue_db": float(per_ue.max()),
                "sinr_p5_db": float(rows["sinr_p5_db"].mean()),
                "sinr_p95_db": float(rows["sinr_p95_db"].mean()),
                "los_fraction": float(rows["los_fraction"].mean()),
            }
        )
    return points


CELL_COLUMNS = {"cell goodput Mbit/s": ("cell_goodput_bps", 1e-6), "Jain's index": ("jain_index", 1.0), "UEs meeting 5G target": ("ues_meeting_5g", 1.0)}
UE_LABELS = {"cc": "cc", "UE": "name", "condition": "condition", "server": "server", "runs": "runs"}  # column title -> field
UE_COLUMNS = {"goodput Mbit/s": ("goodput_bps", 1e-6), "RTT ms": ("rtt_ms", 1.0), "SINR dB": ("sinr_db", 1.0)}


def cells_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"cc": p["cc"], "runs": p["runs"], **interval_cells(p, CELL_COLUMNS)} for p in points])


def ues_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{**{title: p[field] for title, field in UE_LABELS.items()}, **interval_cells(p, UE_COLUMNS), "5G target": _target_cell(p)} for p in points])


def _target_cell(point: dict) -> str:
    return ("yes" if point["meets_5g"] else "no") + f" ({point['runs_meeting_5g']} of {point['runs']} runs)"


def conditions_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "condition": p["condition"],
                "UEs": ", ".join(p["ues"]),
                "mean SINR dB": number(p["sinr_db"]),
                "UE means dB": f"{number(p['sinr_lowest_ue_db'])} to {number(p['sinr_highest_ue_db'])}",
                "5th-95th pct dB": f"{number(p['sinr_p5_db'])} to {number(p['sinr_p95_db'])}",
                "LOS share": f"{p['los_fraction']:.0%}",
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "One 28 GHz gNB at 25 m (TR 38.901 UMa path loss, 64 antennas, 30 dBm, 1 GHz, peak 3.2 Gbit/s), round-robin "
        "scheduler; ten UEs walking at 1.5 m/s, each with a 1.5 MB RLC buffer and one bulk download: four in the open "
        "(60-120 m), four behind two buildings (90-110 m), two inside a third building (50 m, NLOS, low-loss O2I over the ~5 m of their path "
        "inside it). Of each "
        "condition's pairs one UE downloads from the edge server (1 ms to the PGW, min RTT ~4 ms), one from a remote "
        "server (19 ms, ~40 ms). A single cell: the SINR is the SNR, there is no other cell's interference.",
        f"5G target: goodput above {TARGET_GOODPUT_BPS * 1e-6:g} Mbit/s and mean RTT (per-ACK samples) under "
        f"{TARGET_RTT_MS:g} ms; a point meets it on its mean goodput and RTT over seeds, and the count of runs in which "
        "the UE met it is given next to it.",
        "Cell goodput: the sum of the ten flows' goodput; Jain's index of the ten goodputs, (Σx)²/(10 Σx²): 1 when all "
        "are equal, 0.1 when one UE takes everything. Mean and 95% Student-t interval over seeds.",
        "Condition: indoor as the scenario says, else LOS or NLOS by where the UE spent most of the run. SINR from the "
        "UEs' 1 ms samples, averaged over the condition's UEs and the runs (the channel is the seed's under every CC).",
    )


# Markers by condition and colours by server in the goodput-vs-RTT scatter.
MARKERS = {"LOS": "o", "NLOS": "^", "indoor": "s"}
COLOURS = {"edge": "tab:blue", "remote": "tab:orange"}


def _plots(runs: pd.DataFrame, ue_runs: pd.DataFrame, store: Path) -> dict[str, bytes]:
    """The goodput-vs-RTT scatter (a panel per CC, a dot per UE and run), and the time
    series of each CC's first-seed run."""
    if ue_runs.empty:
        return {}
    panels = {
        cc: {(condition, server): (rows["rtt_ms"].to_numpy(float), rows["goodput_bps"].to_numpy(float)) for (condition, server), rows in by_cc.groupby(["condition", "server"])}
        for cc, by_cc in sorted(ue_runs.groupby("cc"), key=lambda item: ORDER.get(item[0], 9))
    }
    images = {"goodput vs RTT per UE": figures.marked_scatter(panels, MARKERS, COLOURS, (TARGET_RTT_MS, TARGET_GOODPUT_BPS))}
    first = runs[runs["seed"] == runs["seed"].min()].sort_values(CC, key=lambda cc: cc.map(ORDER))
    for _, row in first.iterrows():
        images[f"time series, {row[CC]}, seed {row['seed']} (run {row['run_key']})"] = figures.run_panels(stores.run_dir(store, row["run_key"]))
    return drawn(images)
