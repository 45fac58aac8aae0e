"""`millinet report`: a result store as a Markdown summary and a self-contained HTML page
(tables and inline PNG plots), made from the stored table and run directories only."""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from millinet import store as stores
from millinet._core import ScenarioError
from millinet.report import figures
from millinet.report.stats import aggregate, paired_ratios


@dataclass(frozen=True)
class Metric:
    pattern: str  # the columns it covers, one per flow or UE
    title: str
    unit: str
    scale: float  # multiplies the column into `unit`
    plotted: bool  # bar chart and CDF, besides the tables


# The summary scalars a report shows, in this order, for every flow or UE the runs have.
METRICS = [
    Metric(r"flows\.(\d+)\.goodput_bps", "goodput", "Mbit/s", 1e-6, True),
    Metric(r"flows\.(\d+)\.rtt_ms\.mean", "mean RTT", "ms", 1.0, True),
    Metric(r"flows\.(\d+)\.rtt_ms\.p95", "p95 RTT", "ms", 1.0, False),
    Metric(r"flows\.(\d+)\.ran_latency_ms\.mean", "mean RAN latency", "ms", 1.0, True),
    Metric(r"flows\.(\d+)\.ran_latency_ms\.p95", "p95 RAN latency", "ms", 1.0, False),
    Metric(r"flows\.(\d+)\.retransmits", "retransmissions", "packets", 1.0, False),
    Metric(r"ues\.(\d+)\.utilization", "utilisation", "goodput / rate", 1.0, False),
]


@dataclass(frozen=True)
class Column:
    name: str
    metric: Metric

    @property
    def label(self) -> str:
        kind, index = self.name.split(".")[:2]
        return f"{self.metric.title}, {kind.removesuffix('s')} {index} ({self.metric.unit})"


def write_report(store: str | Path, out: str | Path | None = None, run: str | None = None) -> Path:
    """Writes report.md and report.html for the result store into `out` (default
    STORE/report) and returns the HTML file. The time-series panels show run `run` (a
    run key; default the first successful run)."""
    store = Path(store)
    out = Path(out) if out is not None else store / "report"
    frame = stores.load(store)
    meta = frame.attrs["sweep"]
    columns = [Column(name, m) for m in METRICS for name in frame.columns if re.fullmatch(m.pattern, name)]
    by = _point_columns(frame, meta)
    summary = aggregate(frame, [c.name for c in columns], by)
    points = summary.drop_duplicates(subset=by)[by] if by else pd.DataFrame(index=[0])
    labels = [_label(row, by) for _, row in points.iterrows()]
    tables = {"Mean and 95% interval per point (Student t)": _summary_table(summary, columns, by, points)}
    for pairing in meta["pairings"]:
        title = f"Pairing {pairing['name']}: {pairing['treatment']} / {pairing['baseline']}, same seeds (95% bootstrap interval)"
        tables[title] = _ratio_table(frame, pairing, columns, by)
    failed = frame[frame["status"] != "ok"]
    if len(failed):
        tables["Runs that did not finish"] = failed[[*meta["parameters"], "arm", "seed", "status", "attempts", "node", "error"]]
    if frame["node"].notna().any():
        tables["Runs per node"] = _node_table(frame)
    images = _images(store, frame, summary, columns, by, labels, run)
    out.mkdir(parents=True, exist_ok=True)
    counts = frame["status"].value_counts().to_dict()
    heading = f"Sweep {meta['sweep']}: {len(frame)} runs, " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    (out / "report.md").write_text(markdown_page(heading, tables))
    page = out / "report.html"
    page.write_text(html_page(heading, tables, images))
    return page


def _node_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Runs and wall time per node that ran them (a run's last try), so a sweep across
    machines shows where its runs went and whether one node failed more than the others."""
    tried = frame[frame["status"] != "pending"]
    nodes = tried.groupby(tried["node"].fillna("unknown"), sort=True)
    return pd.DataFrame(
        {
            "runs ok": nodes["status"].apply(lambda status: int((status == "ok").sum())),
            "runs failed": nodes["status"].apply(lambda status: int((status == "failed").sum())),
            "wall time (s)": nodes["wall_s"].sum().round(1),
        }
    ).reset_index()


def _point_columns(frame: pd.DataFrame, meta: dict) -> list[str]:
    """The parameters that vary between runs, apart from those an arm sets (the arm
    column stands for them), then `arm` when there are several."""
    arm_keys = {key for keys in meta["arm_keys"].values() for key in keys}
    varying = [p for p in meta["parameters"] if p not in arm_keys and frame[p].astype(str).nunique() > 1]
    return varying + (["arm"] if frame["arm"].nunique() > 1 else [])


def _label(row: pd.Series, by: list[str]) -> str:
    return ", ".join(f"{key}={row[key]}" for key in by) or "all runs"


def _cell(value: float, low: float, high: float, scale: float) -> str:
    if np.isnan(value):
        return "-"
    interval = "" if np.isnan(low) else f" [{low * scale:.4g}, {high * scale:.4g}]"
    return f"{value * scale:.4g}{interval}"


def _summary_table(summary: pd.DataFrame, columns: list[Column], by: list[str], points: pd.DataFrame) -> pd.DataFrame:
    table = points.reset_index(drop=True).copy()
    for column in columns:
        rows = summary[summary["metric"] == column.name]
        table[column.label] = [_cell(r["mean"], r["ci_low"], r["ci_high"], column.metric.scale) for _, r in rows.iterrows()]
    table["runs"] = summary.groupby(by, sort=False, dropna=False)["n"].max().to_numpy() if by else [summary["n"].max()]
    return table


def _ratio_table(frame: pd.DataFrame, pairing: dict, columns: list[Column], by: list[str]) -> pd.DataFrame:
    table = None
    for column in columns:
        ratios = paired_ratios(frame, pairing, column.name)
        point = [name for name in ratios.columns[:-4] if name in by]
        if table is None:
            table = ratios[point].copy()
            table["pairs"] = ratios["n"]
        table[f"{column.metric.title}, {'.'.join(column.name.split('.')[:2])}"] = [
            _cell(r["ratio"], r["ci_low"], r["ci_high"], 1.0) for _, r in ratios.iterrows()
        ]
    return table if table is not None else pd.DataFrame()


def _images(store: Path, frame, summary, columns: list[Column], by: list[str], labels: list[str], run: str | None) -> dict[str, bytes]:
    images = {}
    groups = dict(zip(labels, _point_rows(frame, by)))
    for column in (c for c in columns if c.metric.plotted):
        rows = summary[summary["metric"] == column.name]
        images[f"{column.label}: per point"] = figures.bars(rows, labels, column.metric.unit, column.metric.scale)
        values = {label: rows_[column.name].to_numpy(float) for label, rows_ in groups.items()}
        images[f"{column.label}: CDF"] = figures.cdfs(values, column.metric.unit, column.metric.scale)
    pairs = [(f"flows.{i}.rtt_ms.mean", f"flows.{i}.goodput_bps") for i in _flow_indices(frame)]
    pairs = [(r, g) for r, g in pairs if r in frame.columns and g in frame.columns]
    if pairs:
        points = {
            label: (np.concatenate([rows_[r].to_numpy(float) for r, _ in pairs]), np.concatenate([rows_[g].to_numpy(float) for _, g in pairs]))
            for label, rows_ in groups.items()
        }
        images["goodput vs RTT"] = figures.scatter(points)
    chosen = _chosen_run(frame, run)
    if chosen is not None:
        panels = figures.run_panels(stores.run_dir(store, chosen))
        if panels is not None:
            images[f"time series of run {chosen}"] = panels
    return images


def _point_rows(frame: pd.DataFrame, by: list[str]) -> list[pd.DataFrame]:
    ok = frame[frame["status"] == "ok"]
    return [rows for _, rows in ok.groupby(by, sort=False, dropna=False)] if by else [ok]


def _flow_indices(frame: pd.DataFrame) -> list[str]:
    return sorted({m.group(1) for name in frame.columns if (m := re.fullmatch(r"flows\.(\d+)\.goodput_bps", name))}, key=int)


def _chosen_run(frame: pd.DataFrame, run: str | None) -> str | None:
    ok = frame.loc[frame["status"] == "ok", "run_key"]
    if run is None:
        return ok.iloc[0] if len(ok) else None
    if run not in set(ok):
        raise ScenarioError(f"run {run!r} is not a successful run of this store; e.g. {', '.join(ok.iloc[:3])}")
    return run


def markdown_page(heading: str, tables: dict[str, pd.DataFrame], notes: tuple[str, ...] = ()) -> str:
    parts = [f"# {heading}\n", *(f"{note}\n" for note in notes)]
    for title, table in tables.items():
        cells = table.astype(object).where(table.notna(), "-").astype(str)
        rows = [list(table.columns), ["---"] * len(table.columns), *cells.to_numpy().tolist()]
        parts.append(f"## {title}\n\n" + "\n".join("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows) + "\n")
    return "\n".join(parts)


STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;font-size:13px;margin-bottom:1.5em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
img{max-width:100%;display:block;margin-bottom:1.5em}"""


def html_page(heading: str, tables: dict[str, pd.DataFrame], images: dict[str, bytes], notes: tuple[str, ...] = ()) -> str:
    """A self-contained page: the heading, paragraphs of `notes`, the tables, the PNGs inline."""
    body = [f"<h1>{html.escape(heading)}</h1>", *(f"<p>{html.escape(note)}</p>" for note in notes)]
    for title, table in tables.items():
        body.append(f"<h2>{html.escape(title)}</h2>" + table.to_html(index=False, na_rep="-", border=0))
    body.append("<h2>Plots</h2>")
    for title, png in images.items():
        data = base64.b64encode(png).decode()
        body.append(f"<h3>{html.escape(title)}</h3><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'>")
    return f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(heading)}</title><style>{STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"


def write_study_index(parent: str | Path) -> Path:
    """PARENT/index.html: a link to every study page (a directory with summary.json naming a
    study, and index.html) one or two levels under PARENT, with its command and run count.
    Two levels at most: deeper lie the stores' run directories, which have summaries too."""
    parent = Path(parent)
    items = []
    for summary_path in sorted([*parent.glob("*/summary.json"), *parent.glob("*/*/summary.json")]):
        summary = json.loads(summary_path.read_text())
        page = summary_path.with_name("index.html")
        if "study" in summary and page.exists():
            link = html.escape(page.relative_to(parent).as_posix())
            items.append(
                f"<li><a href='{link}'>{html.escape(summary['study'])}: {html.escape(str(summary_path.parent.relative_to(parent)))}</a>"
                f" — {summary.get('runs', 0)} runs, <code>{html.escape(summary.get('command', ''))}</code></li>"
            )
    heading = "millinet studies"
    body = f"<h1>{heading}</h1>\n<ul>\n" + "\n".join(items) + "\n</ul>" if items else f"<h1>{heading}</h1>\n<p>No study pages under this directory.</p>"
    out = parent / "index.html"
    out.write_text(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{heading}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")
    return out
