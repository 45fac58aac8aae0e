"""The report's plots (outputs.md §3), each returned as PNG bytes for inlining in HTML."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from millinet import plot  # chooses matplotlib's file-only backend before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402, I001


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


def cdfs(values: dict[str, np.ndarray], unit: str, scale: float) -> bytes:
    """The empirical CDF over runs of one metric, one line per point."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, data in values.items():
        data = np.sort(data[~np.isnan(data)]) * scale
        if len(data):
            ax.step(data, np.arange(1, len(data) + 1) / len(data), where="post", label=label)
    ax.set_xlabel(unit)
    ax.set_ylabel("fraction of runs")
    ax.set_title("CDF over runs", fontsize=10)
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


def run_panels(run_dir: Path) -> bytes | None:
    """The time-series panels of one run directory (millinet.plot), None if it has none."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.png"
        return out.read_bytes() if plot.plot_run(run_dir, out) else None
