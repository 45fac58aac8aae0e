"""The report's plots (docs/sweeps.md §5), each returned as PNG bytes for inlining in HTML."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from millinet import mobility, outputs, plot  # plot chooses matplotlib's file-only backend before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402, I001
from matplotlib import ticker  # noqa: E402


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def bars(summary: pd.DataFrame, labels: list[str], unit: str, scale: float) -> bytes:
    """One bar per point: the mean of `summary` (rows of aggregate() for one metric, in
    the order of `labels`) with its 95% interval as error bars."""
    mean = summary["mean"].to_numpy(float) * scale
    # An interval that is not defined (n < 2) draws no error bar.
    errors = np.nan_to_num([mean - summary["ci_low"].to_numpy(float) * scale, summary["ci_high"].to_numpy(float) * scale - mean])
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(labels) + 2), 3.6))
    ax.bar(range(len(labels)), mean, yerr=errors, capsize=4, color="tab:blue", alpha=0.8)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(unit)
    ax.set_title("mean and 95% interval per point", fontsize=10)
    return _png(fig)


def boxes(panels: dict[str, dict[str, np.ndarray]], unit: str) -> bytes | None:
    """Box plots (median, quartiles, whiskers at 1.5 IQR, outliers as dots), one panel per
    title on a shared axis, one box per label; a label ending in ", split" is drawn orange.
    None when no panel has a value."""
    if not any(len(v) for boxes in panels.values() for v in boxes.values()):
        return None
    widest = max(len(b) for b in panels.values())
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False, figsize=(max(4.0, 0.55 * widest + 1.5) * len(panels), 4.2))
    for (title, boxes), ax in zip(panels.items(), axes[0]):
        labels = list(boxes)
        drawn_boxes = ax.boxplot([boxes[k] if len(boxes[k]) else [np.nan] for k in labels], patch_artist=True, widths=0.6, flierprops={"markersize": 3}, medianprops={"color": "black"})
        for patch, label in zip(drawn_boxes["boxes"], labels):
            patch.set_facecolor("tab:orange" if label.endswith(", split") else "tab:blue")
            patch.set_alpha(0.6)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=35, ha="right", fontsize=7)
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].set_ylabel(unit)
    return _png(fig)


def cdfs(values: dict[str, np.ndarray], unit: str, scale: float, over: str = "runs") -> bytes:
    """The empirical CDF over runs (or what `over` names) of one metric, one line per point."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, data in values.items():
        data = np.sort(data[~np.isnan(data)]) * scale
        if len(data):
            ax.step(data, np.arange(1, len(data) + 1) / len(data), where="post", label=label)
    ax.set_xlabel(unit)
    ax.set_ylabel(f"fraction of {over}")
    ax.set_title(f"CDF over {over}", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def scatter(points: dict[str, tuple[np.ndarray, np.ndarray]]) -> bytes:
    """Goodput against mean RTT, one dot per flow and run, one colour per point."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, (rtt_ms, goodput_bps) in points.items():
        ax.scatter(rtt_ms, goodput_bps * 1e-6, s=14, label=label)
    ax.set_xlabel("mean RTT (ms)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title("goodput vs RTT per flow and run", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def xy_panels(panels: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], xlabel: str, ylabel: str, yscale: float) -> bytes:
    """One panel per title on shared axes, a dot per (x, y) pair, a colour per label."""
    fig, axes = plt.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False, figsize=(3.6 * len(panels) + 1.5, 3.6))
    for (title, groups), ax in zip(panels.items(), axes[0]):
        for label, (x, y) in groups.items():
            ax.scatter(x, y * yscale, s=10, alpha=0.6, label=label)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    axes[0, -1].legend(fontsize=7, loc="upper left")
    return _png(fig)


def marked_scatter(panels: dict[str, dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]], markers: dict[str, str], colours: dict[str, str], target: tuple[float, float]) -> bytes:
    """Goodput against mean RTT, one panel per title on shared axes; each panel's dots are
    grouped by (marker key, colour key), e.g. (condition, server). The target region (RTT
    under target[0] ms, goodput over target[1] bit/s) is shaded."""
    fig, axes = plt.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False, figsize=(3.2 * len(panels) + 1.5, 3.6))
    for (title, groups), ax in zip(panels.items(), axes[0]):
        for (marker, colour), (rtt_ms, goodput_bps) in groups.items():
            ax.scatter(rtt_ms, goodput_bps * 1e-6, s=22, marker=markers[marker], color=colours[colour], alpha=0.75, label=f"{marker}, {colour}")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("mean RTT (ms)")
        ax.grid(True, alpha=0.3)
    for ax in axes[0]:
        ax.fill_between([0, target[0]], target[1] * 1e-6, ax.get_ylim()[1], color="tab:green", alpha=0.12, label="5G target")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    axes[0, 0].set_ylabel("goodput (Mbit/s)")
    axes[0, -1].legend(fontsize=6, loc="upper right")
    return _png(fig)


def tradeoff(panels: dict[str, dict[str, list[tuple[tuple[float, float, float], tuple[float, float, float], str]]]], xlabel: str, ylabel: str, goal: float, caption: str) -> bytes:
    """One panel per title on shared axes, one colour per series: each point at (x, y) with
    its intervals as error bars ((mean, low, high) each) and its label beside it; the goal
    line y = `goal` dashed; x logarithmic (latencies span decades)."""
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False, figsize=(4.2 * len(panels) + 1.5, 4.0))
    colours = {}
    for (title, series), ax in zip(panels.items(), axes[0]):
        for name, points in series.items():
            colour = colours.setdefault(name, f"C{len(colours) % 10}")
            x, y = (np.array([p[i] for p in points], float) for i in (0, 1))
            errors = [np.nan_to_num(np.abs(np.array([v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]]))) for v in (x, y)]
            ax.errorbar(x[:, 0], y[:, 0], xerr=errors[0], yerr=errors[1], fmt="o", ms=4, capsize=2, color=colour, label=name)
            for (px, py, label) in points:
                ax.annotate(label, (px[0], py[0]), fontsize=6, xytext=(3, 3), textcoords="offset points", color=colour)
        ax.axhline(goal, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    axes[0, -1].legend(fontsize=7)
    fig.text(0.01, 0.01, f"{caption}; dashed: {goal:g}", fontsize=7)
    return _png(fig)


def run_panels(run_dir: Path) -> bytes | None:
    """The time-series panels of one run directory (millinet.plot), None if it has none."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.png"
        return out.read_bytes() if plot.plot_run(run_dir, out) else None


def cwnd_runs(runs: dict[str, Path]) -> bytes | None:
    """The cwnd of flow 0 over time, one panel per named run (label -> run directory) on a
    shared time axis, each with its run's handovers and bearer switches marked as in
    `millinet plot`; None when no run has a cwnd series."""
    loaded = {label: (outputs.read_tables(run_dir, ("flows", "mobility")), mobility.cell_names(run_dir)) for label, run_dir in runs.items()}
    loaded = {label: (tables, cells) for label, (tables, cells) in loaded.items() if "cwnd_bytes" in tables.get("flows", pd.DataFrame()).columns}
    if not loaded:
        return None
    fig, axes = plt.subplots(len(loaded), 1, sharex=True, squeeze=False, figsize=(10, 1.9 * len(loaded) + 0.6))
    for i, ((label, (tables, cells)), ax) in enumerate(zip(loaded.items(), axes[:, 0])):
        plot.mark_events(ax, mobility.from_tables(tables, cells), labelled=i == 0)
        _flow_panel(ax, tables["flows"], "cwnd_bytes", 1e-6, "cwnd (MB)", label, legend=i == 0)
    axes[-1, 0].set_xlabel("time (s)")
    return _png(fig)


def _flow_panel(ax, table: pd.DataFrame, column: str, scale: float, ylabel: str, label: str, legend: bool) -> None:
    """Flow 0's `column` of a time-series table, binned as `millinet plot` bins it, in one
    titled panel; `legend`: the panel shows the legend of what was drawn on it before."""
    flow = table[table["flow"] == 0]
    series = plot.binned(flow, column, plot.plotting_bin_s({"table": flow})) * scale
    ax.plot(series.index, series, linewidth=0.8, color="tab:blue")
    ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_title(label, fontsize=9, loc="left")
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper right", fontsize="small")


def lines_with_intervals(lines: dict[str, list[tuple[float, dict]]], xlabel: str, ylabel: str, scale: float) -> bytes:
    """One line per label through its points (x, interval with mean, ci_low, ci_high), the
    95% intervals as error bars (none where undefined, n < 2)."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, points in lines.items():
        points = sorted(points, key=lambda p: p[0])
        x = np.array([p[0] for p in points])
        mean = np.array([p[1]["mean"] for p in points], float) * scale
        low = np.array([p[1]["ci_low"] for p in points], float) * scale
        high = np.array([p[1]["ci_high"] for p in points], float) * scale
        ax.errorbar(x, mean, yerr=np.nan_to_num([mean - low, high - mean]), capsize=3, marker="o", markersize=3, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title("mean and 95% interval per point", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def subflow_throughput_runs(runs: dict[str, Path]) -> bytes | None:
    """The throughput of each subflow of flow 0 over time (what its peer acknowledged per
    bin of a hundredth of the run, at least the plotting bin: a cumulative ACK that ends a
    recovery acknowledges at once what arrived during it, and shorter bins show that as
    spikes), one panel per named run (label -> run directory), each line named by the
    subflow's cell; the 28 GHz radio's NLOS shaded. None when no run has subflows."""
    loaded = {label: (outputs.read_tables(run_dir, ("flows", "ues")), _subflow_cells(run_dir)) for label, run_dir in runs.items()}
    loaded = {label: data for label, data in loaded.items() if "subflow" in data[0].get("flows", pd.DataFrame()).columns}
    if not loaded:
        return None
    fig, axes = plt.subplots(len(loaded), 1, sharex=True, squeeze=False, figsize=(10, 1.9 * len(loaded) + 0.6))
    for i, ((label, (tables, cells)), ax) in enumerate(zip(loaded.items(), axes[:, 0])):
        flow = tables["flows"][tables["flows"]["flow"] == 0]
        bin_s = max(plot.plotting_bin_s({"flows": flow}), round(flow["t"].max() / 100, 3))
        ues = tables.get("ues", pd.DataFrame())
        if "los" in ues.columns:
            plot.shade_nlos(ax, ues[ues["ue"] == 0], labelled=i == 0)
        for k, rows in flow.groupby("subflow"):
            rate = _acked_rate_bps(rows, bin_s) * 1e-6
            ax.plot(rate.index, rate, linewidth=0.8, label=cells.get(k, f"subflow {k}"))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("Mbit/s")
        ax.set_title(label, fontsize=9, loc="left")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("time (s)")
    return _png(fig)


def _acked_rate_bps(rows: pd.DataFrame, bin_s: float) -> pd.Series:
    """What the peer acknowledged per bin of `bin_s` seconds, in bit/s, indexed by the bin's
    start (one flow's or subflow's rows of the flows table)."""
    acked = rows.groupby(np.floor(rows["t"] / bin_s + 1e-6) * bin_s)["acked_bytes"].max()
    return acked.diff() * 8 / bin_s


def shared_bearer_share_runs(runs: dict[str, Path], bin_s: float) -> bytes | None:
    """On a bearer an MP-TCP subflow (flow 0's subflow 1) shares with a single-path flow
    (flow 1): the subflow's share of what the two carried, per bin of `bin_s` seconds, one
    line per named run (label -> run directory). RFC 6356's goal 2 caps it at one half.
    None when no run has both."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    drawn = False
    for label, run_dir in runs.items():
        flows = outputs.read_tables(run_dir, ("flows",)).get("flows", pd.DataFrame())
        if "subflow" not in flows.columns:
            continue
        subflow = _acked_rate_bps(flows[(flows["flow"] == 0) & (flows["subflow"] == 1)], bin_s)
        single = _acked_rate_bps(flows[flows["flow"] == 1], bin_s)
        both = (subflow + single).where(lambda total: total > 0)
        share = (subflow / both).dropna()
        if share.empty:
            continue
        ax.plot(share.index, share, linewidth=1.0, label=label)
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8, label="equal share (RFC 6356 goal 2: at most this)")
    ax.set_ylim(0, 1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"MP-TCP subflow's share ({bin_s:g} s bins)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    return _png(fig)


def _subflow_cells(run_dir: Path) -> dict[int, str]:
    """Subflow index -> the cell its radio was served by at the end (summary.json)."""
    summary = json.loads((run_dir / outputs.SUMMARY).read_text())
    subflows = ((summary.get("flows") or [{}])[0].get("mptcp") or {}).get("subflows", [])
    return {k: s["cell"] for k, s in enumerate(subflows) if s.get("cell")}


# A marker per kind of mobility event on the timeline (colours those of `millinet plot`).
TIMELINE_MARKERS = {"handover": "D", "switch_to_anchor": "v", "switch_from_anchor": "^"}


def mobility_timeline(rows: dict[str, list[mobility.Event]], end_s: float) -> bytes:
    """One row per label, a marker per handover or bearer switch at its time."""
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.4))
    labelled = set()
    for y, events in enumerate(rows.values()):
        for event in events:
            text, style = plot.EVENT_STYLES[event.kind]
            ax.scatter(
                event.t_s, y, marker=TIMELINE_MARKERS[event.kind], color=style["color"], s=28, zorder=3,
                label=None if event.kind in labelled else text,
            )
            labelled.add(event.kind)
    ax.set_yticks(range(len(rows)), list(rows), fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, end_s)
    ax.set_xlabel("time (s)")
    ax.grid(True, axis="x", alpha=0.3)
    if labelled:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(labelled), fontsize="small", frameon=False)
    ax.set_title("handovers and bearer switches per run", fontsize=10, pad=18)
    return _png(fig)


def flow_series_runs(runs: dict[str, Path], table: str, column: str, ylabel: str, scale: float) -> bytes | None:
    """`column` of flow 0 in `table` (`goodput`, `flows`) over time, one panel per named run
    (label -> run directory) on a shared time axis, its UE's NLOS shaded; None when no run
    has that series."""
    loaded = {label: outputs.read_tables(run_dir, (table, "ues")) for label, run_dir in runs.items()}
    loaded = {label: tables for label, tables in loaded.items() if column in tables.get(table, pd.DataFrame()).columns}
    if not loaded:
        return None
    fig, axes = plt.subplots(len(loaded), 1, sharex=True, squeeze=False, figsize=(10, 1.9 * len(loaded) + 0.6))
    for i, ((label, tables), ax) in enumerate(zip(loaded.items(), axes[:, 0])):
        if "los" in tables.get("ues", pd.DataFrame()).columns:
            plot.shade_nlos(ax, tables["ues"][tables["ues"]["ue"] == 0], labelled=i == 0)
        _flow_panel(ax, tables[table], column, scale, ylabel, label, legend=i == 0)
    axes[-1, 0].set_xlabel("time (s)")
    return _png(fig)
