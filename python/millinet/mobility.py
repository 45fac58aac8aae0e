"""A run's handovers and bearer switches (docs/outputs.md: summary.json `mobility` and the
`mobility` table) as events on its time axis, for plots and studies."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from millinet import outputs
from millinet._toml import tomllib

# The mobility table's `kind` codes, in order: 0, 1, 2 (summary.json names them).
KINDS = ("handover", "switch_to_anchor", "switch_from_anchor")


@dataclass(frozen=True)
class Event:
    t_s: float
    ue: int
    kind: str  # one of KINDS
    source: str  # the serving cell's node before the event
    target: str  # ... and after it


def cell_names(run_dir: Path) -> list[str]:
    """The node names of the run's cells, in the order of its [[cells]]: a serving-cell
    index of the tables is a position in this list."""
    path = run_dir / outputs.SCENARIO
    scenario = tomllib.loads(path.read_text()) if path.is_file() else {}
    return [cell["node"] for cell in scenario.get("cells", [])]


def from_tables(tables: dict[str, pd.DataFrame], cells: list[str]) -> list[Event]:
    """The events of the run's `mobility` table in time order; none when it has no such
    table or no rows (a run with one cell). `cells` names the cell indices (cell_names)."""
    frame = tables.get("mobility")
    if frame is None:
        return []
    return [
        Event(float(row.t), int(row.ue), KINDS[int(row.kind)], _name(cells, row.from_cell), _name(cells, row.to_cell))
        for row in frame.sort_values("t", kind="stable").itertuples()
    ]


def from_summary(summary: dict) -> list[Event]:
    """The events of summary.json's `mobility` list, in time order."""
    entries = sorted(summary.get("mobility", []), key=lambda entry: entry["t_s"])
    return [Event(entry["t_s"], entry["ue"], entry["kind"], entry["from"], entry["to"]) for entry in entries]


def _name(cells: list[str], index: int) -> str:
    index = int(index)
    return cells[index] if index < len(cells) else f"cell {index}"
