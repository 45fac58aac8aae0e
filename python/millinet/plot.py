"""Time-series panels of one run, drawn from its saved Parquet tables only (and the cell
names of its scenario.toml)."""

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from millinet import mobility, outputs  # noqa: E402


@dataclass(frozen=True)
class Line:
    table: str
    column: str
    name: str  # legend text when a panel draws several kinds of line


@dataclass(frozen=True)
class Panel:
    unit: str
    lines: tuple[Line, ...]
    scale: float = 1.0  # multiplies the columns into `unit`
    # The y axis ends a little above this quantile of the drawn values, so that a few
    # extreme ones (milliProxy's 400 MB FW before its first RTT estimate) leave the rest
    # readable; the clipped values run off the top of the panel.
    y_quantile: float = 1.0


# Drawn top to bottom with the lines whose table and column the run has; add a panel with a line here.
# Every panel is shaded grey where a UE is in NLOS (the `ues` table's `los` is 0).
PANELS = [
    Panel("dB", (Line("ues", "sinr_db", "SINR"),)),
    Panel("Mbit/s", (Line("ues", "rate_bps", "achievable rate"), Line("goodput", "goodput_bps", "goodput")), 1e-6),
    Panel("MB", (Line("flows", "cwnd_bytes", "cwnd"),), 1e-6),
    Panel("ms", (Line("flows", "srtt_ms", "srtt"),)),
    Panel("MB", (Line("ues", "rlc_bytes", "RLC occupancy"),), 1e-6),
    Panel("MB", (Line("proxy", "fw_bytes", "proxy FW"), Line("proxy", "buffered_bytes", "proxy buffer")), 1e-6, y_quantile=0.98),
    Panel("ms", (Line("ues", "ran_latency_ms", "RAN latency"),)),
    Panel("MB", (Line("queues", "bytes", "queue"),), 1e-6),
]

# Columns that tell the lines of a panel apart (one line per flow, queue, ...).
SERIES_KEYS = ("flow", "queue", "ue", "cell")

# About this many time bins across the figure: each line is the mean over its bins.
BINS = 500

# Every panel marks each handover and bearer switch of the run with a vertical line: legend
# text and line style per kind (mobility.KINDS). The bearer switches come in pairs a few tens
# of milliseconds apart, so their styles must tell them apart at a glance.
EVENT_STYLES = {
    "handover": ("handover", {"color": "tab:red", "linestyle": "--"}),
    "switch_to_anchor": ("bearer to LTE anchor", {"color": "tab:purple", "linestyle": ":"}),
    "switch_from_anchor": ("bearer back from anchor", {"color": "tab:green", "linestyle": "-."}),
}
SERVING_CELL = "serving cell"


def plot_run(run_dir: Path, out: Path) -> list[str]:
    """Draws the panels present in the run's saved tables, stacked on a shared time axis,
    into the PNG `out`; returns the titles of the panels drawn (none: nothing is written)."""
    tables = outputs.read_tables(run_dir)
    drawn = [(panel, lines) for panel in PANELS if (lines := _present(panel, tables))]
    ues = tables.get("ues", pd.DataFrame())
    cells = mobility.cell_names(run_dir)
    # A run with one cell has nothing to show there: its panels stay as they always were.
    serving = len(cells) > 1 and "cell" in ues.columns
    if not drawn and not serving:
        return []
    names = _series_names(run_dir / outputs.SUMMARY)
    bin_s = plotting_bin_s(tables)
    events = mobility.from_tables(tables, cells)
    rows = len(drawn) + serving
    fig, axes = plt.subplots(rows, 1, sharex=True, squeeze=False, figsize=(10, 2.2 * rows))
    titles = []
    for i, ax in enumerate(axes[:, 0]):
        if "los" in ues.columns:
            shade_nlos(ax, ues, labelled=i == 0)
        # Before the lines: a panel's legend is made when its lines are drawn.
        mark_events(ax, events, labelled=i == 0)
        if i < len(drawn):
            titles.append(_draw(ax, tables, *drawn[i], names, bin_s))
        else:
            titles.append(_draw_serving_cell(ax, ues, cells, names))
    axes[-1, 0].set_xlabel(f"time (s); each point is the mean over {bin_s * 1e3:g} ms")
    fig.suptitle(str(run_dir))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return titles


def _present(panel: Panel, tables: dict[str, pd.DataFrame]) -> list[Line]:
    return [line for line in panel.lines if line.table in tables and line.column in tables[line.table].columns]


def plotting_bin_s(tables: dict[str, pd.DataFrame]) -> float:
    """The plotting bin: the coarsest sampling step of the tables, widened to about BINS
    bins over the run (a whole number of milliseconds). The mobility table lists events
    seconds apart, not samples: it has no say."""
    tables = {name: frame for name, frame in tables.items() if name != "mobility"}
    steps = [frame["t"].drop_duplicates().diff().median() for frame in tables.values() if frame["t"].nunique() > 1]
    end = max((frame["t"].max() for frame in tables.values()), default=0.0)
    ms = max([*steps, end / BINS], default=0.001) * 1e3
    return max(1, round(ms)) / 1e3


def _series_names(summary_path: Path) -> dict[str, dict[int, str]]:
    """Legend names from summary.json: key -> {id: name} for the entries of `queues`, `ues`, ...
    that have a name or node (the summary lists flows as `flows`, queues as `queues`, ...)."""
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return {
        key: {entry["id"]: entry.get("name", entry.get("node")) for entry in summary.get(f"{key}s", [])}
        for key in SERIES_KEYS
    }


def _draw(ax, tables, panel: Panel, lines: list[Line], names, bin_s: float) -> str:
    """Draws one panel; returns its title (the names of its lines)."""
    drawn = []
    for line in lines:
        for label, rows in _groups(tables[line.table], names):
            means = binned(rows, line.column, bin_s) * panel.scale
            label = f"{line.name} {label}".strip() if len(lines) > 1 else label
            ax.plot(means.index, means, linewidth=0.8, label=label or None)
            drawn.append(means.to_numpy(float))
    title = " / ".join(line.name for line in lines)
    ax.set_ylabel(f"{title}\n({panel.unit})")
    ax.grid(True, alpha=0.3)
    if ax.dataLim.y0 >= 0:
        ax.set_ylim(bottom=0)
    values = np.concatenate(drawn) if drawn else np.array([])
    if panel.y_quantile < 1 and np.isfinite(values).any():
        ax.set_ylim(top=1.1 * np.nanquantile(values, panel.y_quantile))
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper right", fontsize="small")
    return title


def _draw_serving_cell(ax, ues: pd.DataFrame, cells: list[str], names) -> str:
    """The index of each UE's serving cell over time, as steps, the cells named on the y axis."""
    for label, rows in _groups(ues, names):
        ax.step(rows["t"], rows["cell"], where="post", linewidth=0.8, label=label or None)
    ax.set_yticks(range(len(cells)), cells)
    ax.set_ylim(-0.5, len(cells) - 0.5)
    ax.set_ylabel(SERVING_CELL)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper right", fontsize="small")
    return SERVING_CELL


def mark_events(ax, events: list[mobility.Event], labelled: bool) -> None:
    """A vertical line per handover or bearer switch in its kind's style; `labelled`: each
    kind once in the legend and the target cell written at the top of each line."""
    seen = set()
    for event in events:
        text, style = EVENT_STYLES[event.kind]
        first = labelled and event.kind not in seen
        seen.add(event.kind)
        ax.axvline(event.t_s, linewidth=0.9, alpha=0.8, label=text if first else None, **style)
        if labelled:
            # The switch to the anchor is written left of its line, the one back right of
            # its own: the two are often too close for both on one side.
            side = "right" if event.kind == "switch_to_anchor" else "left"
            ax.text(
                event.t_s, 0.98, f"→{event.target}", transform=ax.get_xaxis_transform(),
                rotation=90, ha=side, va="top", fontsize=6, color=style["color"],
            )


def binned(rows: pd.DataFrame, column: str, bin_s: float) -> pd.Series:
    """The mean of `column` per time bin, indexed by the bin's start (a sample on a bin's
    edge belongs to the bin it starts, whatever the rounding of its time)."""
    start = np.floor(rows["t"] / bin_s + 1e-6) * bin_s
    return rows.groupby(start)[column].mean()


def _groups(frame: pd.DataFrame, names: dict[str, dict[int, str]]):
    """(legend label, rows) per flow, queue, ... of a table, and per subflow of an MP-TCP
    flow; no label when there is one line."""
    key = next((k for k in SERIES_KEYS if k in frame.columns), None)
    subflows = "subflow" in frame.columns and frame["subflow"].nunique() > 1
    if key is None or (frame[key].nunique() == 1 and not subflows):
        return [("", frame)]
    if not subflows:
        return [(names[key].get(value) or f"{key} {value}", rows) for value, rows in frame.groupby(key)]
    return [
        (f"{names[key].get(value) or f'{key} {value}'} subflow {subflow}", rows)
        for (value, subflow), rows in frame.groupby([key, "subflow"])
    ]


def shade_nlos(ax, ues: pd.DataFrame, labelled: bool) -> None:
    """Shades the times at which a UE is in NLOS (`los` = 0); `labelled`: in the legend."""
    for _, rows in ues.groupby("ue"):
        nlos = (rows["los"] == 0).to_numpy()
        if nlos.any():
            ax.fill_between(
                rows["t"], 0, 1, where=nlos, step="post", transform=ax.get_xaxis_transform(),
                color="0.5", alpha=0.2, linewidth=0, label="NLOS" if labelled else None,
            )
            labelled = False
