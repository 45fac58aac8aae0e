"""Shows that an optimisation left the outputs unchanged (issue 7): runs a fixed set of
deterministic cases into run directories, then compares two such sets.

    .venv/bin/python bench/outputs_identical.py dump /tmp/before     # on the old build
    .venv/bin/python bench/outputs_identical.py dump /tmp/after      # on the new build
    .venv/bin/python bench/outputs_identical.py compare /tmp/before /tmp/after

Compared: summary.json without the simulator's wall-clock fields, and every Parquet
table (names, columns, dtypes and values; NaN equals NaN). Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

import millinet
from millinet.catalog import scenarios

# The cases at full length, then every shipped scenario briefly.
FULL_CASES = {
    "dumbbell": ("dumbbell", []),
    "dumbbell-codel": ("dumbbell", ["links.1.aqm=codel"]),
    "milliproxy-cubic": ("milliproxy", ["flows.0.cc=cubic"]),
    "milliproxy-cubic-gnb": ("milliproxy", ["flows.0.cc=cubic", "proxy.node=gnb"]),
    "milliproxy-split-pgw": ("milliproxy", ["proxy.node=pgw", "proxy.kind=split", "duration_s=3"]),
    "mptcp-milliproxy": ("mptcp", ["proxy.node=pgw", "duration_s=3"]),
}
SHORT_DURATION_S = 2.0
WALL_CLOCK_FIELDS = ("wall_s", "events_per_s")


def cases() -> dict[str, tuple[str, list[str]]]:
    short = {f"{name}-short": (name, [f"duration_s={SHORT_DURATION_S}"]) for name, _ in scenarios()}
    return {**FULL_CASES, **short}


def dump(out: Path) -> None:
    for name, (scenario, overrides) in cases().items():
        millinet.run(scenario, overrides=overrides, out=out / name)
        print(f"{name}: written", flush=True)


def comparable_summary(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    for field in WALL_CLOCK_FIELDS:
        summary["sim"].pop(field)
    return summary


def changed_fields(a, b, path: str = "") -> list[str]:
    """The summary fields that differ, as `path: old -> new`."""
    if isinstance(a, dict) and isinstance(b, dict):
        name = lambda key: f"{path}.{key}" if path else key  # noqa: E731
        only = [f"{name(key)}: only in {side}" for keys, other, side in ((a, b, "A"), (b, a, "B")) for key in keys if key not in other]
        return [*only, *(change for key in a if key in b for change in changed_fields(a[key], b[key], name(key)))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [change for i, (x, y) in enumerate(zip(a, b)) for change in changed_fields(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a} -> {b}"]


def differences(a: Path, b: Path) -> list[str]:
    missing = [f"no run in {d}" for d in (a, b) if not (d / "summary.json").is_file()]
    if missing:
        return missing
    found = [f"summary.json {change}" for change in changed_fields(comparable_summary(a), comparable_summary(b))]
    tables_a = sorted(p.name for p in a.glob("*.parquet"))
    tables_b = sorted(p.name for p in b.glob("*.parquet"))
    if tables_a != tables_b:
        return [*found, f"tables {tables_a} vs {tables_b}"]
    for table in tables_a:
        ta, tb = pq.read_table(a / table), pq.read_table(b / table)
        if ta.schema != tb.schema or not ta.to_pandas().equals(tb.to_pandas()):
            found.append(table)
    return found


def compare(a: Path, b: Path) -> int:
    failed = 0
    for name in cases():
        diff = differences(a / name, b / name)
        print(f"{name}: {'identical' if not diff else 'DIFFERENT: ' + ', '.join(diff)}")
        failed += bool(diff)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dump").add_argument("out", type=Path)
    both = commands.add_parser("compare")
    both.add_argument("a", type=Path)
    both.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
