"""Time-series panels of one run, drawn from its saved Parquet tables only."""

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import pandas as pd  # noqa: E402

from millinet import outputs  # noqa: E402


@dataclass(frozen=True)
class Panel:
    table: str
    column: str
    label: str
    unit: str
    scale: float = 1.0  # multiplies the column into `unit`


# Drawn top to bottom when the run has the table and column; add a panel with a line here.
PANELS = [
    Panel("goodput", "goodput_bps", "goodput", "Mbit/s", 1e-6),
    Panel("flows", "cwnd_bytes", "cwnd", "KB", 1e-3),
    Panel("flows", "srtt_ms", "srtt", "ms"),
    Panel("queues", "bytes", "queue", "MB", 1e-6),
]

# Columns that tell the lines of a panel apart (one line per flow, queue, ...).
SERIES_KEYS = ("flow", "queue", "ue", "cell")


def plot_run(run_dir: Path, out: Path) -> int:
    """Draws the panels present in the run's saved tables, stacked on a shared time axis,
    into the PNG `out`; returns how many panels were drawn (none: nothing is written)."""
    tables = outputs.read_tables(run_dir)
    panels = [p for p in PANELS if p.table in tables and p.column in tables[p.table].columns]
    if not panels:
        return 0
    names = _series_names(run_dir / outputs.SUMMARY)
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False, figsize=(10, 2.2 * len(panels)))
    for panel, ax in zip(panels, axes[:, 0]):
        _draw(ax, tables[panel.table], panel, names)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(str(run_dir))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return len(panels)


def _series_names(summary_path: Path) -> dict[str, dict[int, str]]:
    """Legend names from summary.json: key -> {id: name} for the entries of `queues`, ...
    that have a name (the summary lists flows as `flows`, queues as `queues`, ...)."""
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return {
        key: {entry["id"]: entry["name"] for entry in summary.get(f"{key}s", []) if "name" in entry}
        for key in SERIES_KEYS
    }


def _draw(ax, frame: pd.DataFrame, panel: Panel, names: dict[str, dict[int, str]]) -> None:
    key = next((k for k in SERIES_KEYS if k in frame.columns), None)
    groups = frame.groupby(key) if key else [(None, frame)]
    for value, rows in groups:
        label = names[key].get(value, f"{key} {value}") if key else None
        ax.plot(rows["t"], rows[panel.column] * panel.scale, linewidth=0.8, label=label)
    ax.set_ylabel(f"{panel.label} ({panel.unit})")
    ax.grid(True, alpha=0.3)
    if key and frame[key].nunique() > 1:
        ax.legend(loc="upper right", fontsize="small")
