"""Dense urban street grid (docs/studies.md#dense): the shipped sweep `dense` (or `dense-quick`)
of the `dense-urban` scenario — 8 micro gNBs on one 28 GHz carrier, 100 walking UEs with
handover, every flow under one congestion control — with the cells interfering and without.
Per UE and run: goodput, mean RTT, handovers, mean SINR, SIR and INR. Each UE is classed by
its geometry SINR — its mean SINR (dB) over the interfering runs of its seed — as cell-edge
(the lowest fifth of the UEs), cell-centre (the highest fifth) or between; the class holds
in every arm of the seed, so that an arm without interference shows what interference costs
the same UEs.

Writes into OUT: summary.json (`classes`, `arms`, `ue_runs`), table.md, index.html, plots/*.png
and the result store in store/.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from millinet import store as stores
from millinet._toml import tomllib
from millinet.report import figures
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, drawn, interval, interval_cells, jain_index, point_stats, reproduce_note, run_runs, run_tables, timed_head, with_base_values, write_outputs

CC = "flows.*.cc"
INTERFERENCE = "interference"
CLASSES = ("edge", "middle", "centre")
# The share of UEs in each end class, by geometry SINR.
END_SHARE = 0.2
ORDER = {"newreno": 0, "cubic": 1, "highspeed": 2, "bbr": 3}
UE_METRICS = ["goodput_bps", "rtt_ms", "handovers", "sinr_db"]
ARM_METRICS = ["total_goodput_bps", "jain_index", "handovers_per_ue"]


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` seeds per point, default 3 (quick 1)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [CC, INTERFERENCE, CWND_GROWTH, "duration_s"], "dense-urban")
    ok = frame[frame["status"] == "ok"]
    ue_runs = with_geometry(pd.DataFrame([ue for _, row in ok.iterrows() for ue in ue_run_metrics(row, out / "store")]))
    summary = {**timed_head(options, frame), "classes": _class_points(ue_runs), "arms": _arm_points(ue_runs), "ue_runs": ue_runs.to_dict("records")}
    tables = {
        "Cell-edge against cell-centre UEs, per congestion control, with and without interference": classes_table(summary["classes"]),
        "The grid, per congestion control, with and without interference": arms_table(summary["arms"]),
    }
    heading = f"Dense urban street grid ({options.sweep}): {summary['runs']} runs of {summary['duration_s']:g} s"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(ue_runs))
    return StudyResult(summary, tables, out)


def ue_run_metrics(row: pd.Series, store: Path) -> list[dict]:
    """One entry per UE of a run: its flow's goodput and mean RTT, its handovers, whether it is
    indoors, and the mean of its SINR (dB) and, where cells interfere, of its SIR and INR (the
    `ues` samples; outage samples count as the threshold's −5 dB, not −∞)."""
    run_dir = stores.run_dir(store, row["run_key"])
    summary = json.loads((run_dir / "summary.json").read_text())
    ues = run_tables(store, row["run_key"], ("ues",))["ues"].replace(-np.inf, -5.0).groupby("ue")
    sinr = ues["sinr_db"].mean()
    sir = ues["sir_db"].mean() if "sir_db" in ues.obj.columns else None
    inr = ues["inr_db"].mean() if "inr_db" in ues.obj.columns else None
    indoor = {u["node"]: bool(u.get("indoor", False)) for u in tomllib.loads((run_dir / "scenario.toml").read_text())["ues"]}
    flows = {flow["dst"]: flow for flow in summary["flows"]}
    entries = []
    for ue in summary["ues"]:
        flow = flows[ue["node"]]
        entries.append(
            {
                "run_key": row["run_key"],
                "seed": int(row["seed"]),
                "cc": row[CC],
                "interference": row[INTERFERENCE],
                "ue": ue["id"],
                "name": ue["node"],
                "indoor": indoor.get(ue["node"], False),
                "goodput_bps": flow["goodput_bps"],
                "rtt_ms": flow["rtt_ms"]["mean"],
                "handovers": ue["handovers"],
                "sinr_db": float(sinr[ue["id"]]),
                "sir_db": float(sir[ue["id"]]) if sir is not None else float("inf"),
                "inr_db": float(inr[ue["id"]]) if inr is not None else float("-inf"),
            }
        )
    return entries


def with_geometry(ue_runs: pd.DataFrame) -> pd.DataFrame:
    """Each UE's geometry SINR (its mean SINR over the interfering runs of its seed) and class."""
    if ue_runs.empty:
        return ue_runs
    interfering = ue_runs[ue_runs["interference"] == "full"]
    geometry = interfering.groupby(["seed", "ue"])["sinr_db"].mean().rename("geometry_sinr_db")
    ue_runs = ue_runs.join(geometry, on=["seed", "ue"])
    classes = []
    for _, by_seed in geometry.groupby(level="seed"):
        low, high = by_seed.quantile(END_SHARE), by_seed.quantile(1 - END_SHARE)
        classes += [(key, "edge" if g <= low else "centre" if g >= high else "middle") for key, g in by_seed.items()]
    return ue_runs.join(pd.Series(dict(classes), name="class"), on=["seed", "ue"])


def arm_runs(ue_runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its arm, the goodput of all its UEs, Jain's index of their goodputs and
    the handovers per UE."""
    rows = []
    for (run_key, cc, interference), ues in ue_runs.groupby(["run_key", "cc", "interference"], sort=False):
        goodputs = ues["goodput_bps"].to_numpy(float)
        rows.append({"run_key": run_key, "cc": cc, "interference": interference, "total_goodput_bps": goodputs.sum(), "jain_index": float(jain_index(*goodputs)), "handovers_per_ue": ues["handovers"].mean()})
    return pd.DataFrame(rows)


def _arm_order(point: dict) -> tuple:
    return (ORDER.get(point["cc"], 9), point["interference"] != "full")


def _arm_points(ue_runs: pd.DataFrame) -> list[dict]:
    if ue_runs.empty:
        return []
    stats = point_stats(arm_runs(ue_runs), ARM_METRICS, ["cc", "interference"])
    points = [{"cc": r["cc"], "interference": r["interference"], "runs": int(r["total_goodput_bps:n"]), **{m: interval(r, m) for m in ARM_METRICS}} for _, r in stats.iterrows()]
    return sorted(points, key=_arm_order)


def _class_points(ue_runs: pd.DataFrame) -> list[dict]:
    """Per CC, interference arm and class: the mean over the class's UEs in each run, then mean
    and interval over seeds; with the class's geometry SINR."""
    if ue_runs.empty:
        return []
    per_run = ue_runs.groupby(["run_key", "seed", "cc", "interference", "class"], as_index=False)[[*UE_METRICS, "geometry_sinr_db"]].mean()
    stats = point_stats(per_run, [*UE_METRICS, "geometry_sinr_db"], ["cc", "interference", "class"])
    points = [
        {"cc": r["cc"], "interference": r["interference"], "class": r["class"], "runs": int(r["goodput_bps:n"]), **{m: interval(r, m) for m in [*UE_METRICS, "geometry_sinr_db"]}}
        for _, r in stats.iterrows()
    ]
    return sorted(points, key=lambda p: (*_arm_order(p), CLASSES.index(p["class"])))


CLASS_COLUMNS = {
    "geometry SINR dB": ("geometry_sinr_db", 1.0),
    "SINR dB": ("sinr_db", 1.0),
    "goodput Mbit/s": ("goodput_bps", 1e-6),
    "RTT ms": ("rtt_ms", 1.0),
    "handovers": ("handovers", 1.0),
}
ARM_COLUMNS = {"goodput of all UEs Mbit/s": ("total_goodput_bps", 1e-6), "Jain's index": ("jain_index", 1.0), "handovers per UE": ("handovers_per_ue", 1.0)}


def classes_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"cc": p["cc"], "interference": p["interference"], "UEs": p["class"], "runs": p["runs"], **interval_cells(p, CLASS_COLUMNS)} for p in points])


def arms_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"cc": p["cc"], "interference": p["interference"], "runs": p["runs"], **interval_cells(p, ARM_COLUMNS)} for p in points])


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "The dense-urban scenario: a 4 × 3 grid of 80 m blocks (every block a building, 20-40 m high, low-loss and "
        "high-loss façades) with 20 m streets; 8 micro gNBs 10 m high at mid-block on the east-west streets, one 28 GHz "
        "carrier of 400 MHz (1.28 Gbit/s peak), 64 antennas, round robin; 100 UEs, 80 walking the sidewalks at 1.4 m/s "
        "and 20 inside the buildings, each with a 1.5 MB RLC buffer and one download from a server 6 ms from the gNBs; "
        "handover (A3, 3 dB, 40 ms).",
        "Interference full: the cells interfere slot by slot through their beams (docs/models/ran.md#interference); none: "
        "a UE's SINR is its SNR. Geometry SINR: a UE's mean SINR over the interfering runs of its seed; cell-edge UEs are "
        f"the lowest {END_SHARE:.0%} of the UEs by it, cell-centre the highest {END_SHARE:.0%}, the same UEs in every arm of "
        "the seed. Per class, the mean over its UEs in a run, then the mean and 95% Student-t interval over seeds.",
    )


def _plots(ue_runs: pd.DataFrame) -> dict[str, bytes]:
    """Per-UE goodput against geometry SINR (a panel per CC, interfering and not), and the
    CDF of per-UE goodput per arm."""
    if ue_runs.empty:
        return {}
    ccs = sorted(ue_runs["cc"].unique(), key=lambda cc: ORDER.get(cc, 9))
    panels = {}
    for cc in ccs:
        by_cc = ue_runs[ue_runs["cc"] == cc]
        panels[cc] = {f"interference {arm}": (rows["geometry_sinr_db"].to_numpy(float), rows["goodput_bps"].to_numpy(float)) for arm, rows in by_cc.groupby("interference")}
    cdf = {f"{cc}, interference {arm}": rows["goodput_bps"].to_numpy(float) for (cc, arm), rows in ue_runs.groupby(["cc", "interference"])}
    images = {
        "goodput against geometry SINR per UE": figures.xy_panels(panels, "geometry SINR (dB)", "goodput (Mbit/s)", 1e-6),
        "per-UE goodput CDF": figures.cdfs(cdf, "per-UE goodput (Mbit/s)", 1e-6, over="UEs and runs"),
    }
    return drawn(images)
