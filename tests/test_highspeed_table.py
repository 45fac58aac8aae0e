"""The BPF HighSpeed TCP's a(w), b(w) table against RFC 3649's own, Appendix B.

bpf/highspeed_table.py prints the table the BPF program (bpf/highspeed.bpf.c) is built with:
rows `{ window, a, b_256 }`, one per integer a(w), b(w) in 1/256ths. Appendix B's rows come from
bpf/rfc3649_appendix_b.csv (its header says where they were typed from), the file the generator
reads and crates/transport/tests/highspeed.rs holds the simulator to; this test reads it on its
own, so a generator that drops, reorders or re-derives rows fails here.

The RFC prints each row's window and a(w) as exact integers and b(w) rounded to two decimals,
so a row of the BPF table must have the RFC's window and a, and a b within 0.005 (the RFC's
rounding) + 1/512 (half a step of 1/256, the generator's rounding) of the RFC's.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / "bpf" / "highspeed_table.py"
APPENDIX_B = REPO / "bpf" / "rfc3649_appendix_b.csv"

B_TOLERANCE = 0.005 + 1 / 512


def appendix_b() -> list[tuple[int, int, float]]:
    """RFC 3649 Appendix B: (w, a(w), b(w)) per row."""
    with APPENDIX_B.open(newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = [(int(r["w"]), int(r["a"]), float(r["b"])) for r in csv.DictReader(lines)]
    assert [a for _, a, _ in rows] == list(range(1, len(rows) + 1)), "one row per integer a(w)"
    return rows


@pytest.fixture(scope="module")
def bpf_table() -> dict[int, tuple[int, int]]:
    """The generator's table, as the BPF program gets it: a -> (window, b_256)."""
    header = subprocess.run(
        [sys.executable, str(GENERATOR)], capture_output=True, text=True, check=True
    ).stdout
    rows = [tuple(map(int, m)) for m in re.findall(r"\{ (\d+), (\d+), (\d+) \},", header)]
    count = re.search(r"#define HS_ROWS (\d+)", header)
    assert count and int(count.group(1)) == len(rows) > 0, header
    return {a: (w, b_256) for w, a, b_256 in rows}


def test_every_appendix_b_row_is_in_the_bpf_table(bpf_table):
    missing = [(w, a) for w, a, _ in appendix_b() if a not in bpf_table]
    assert not missing, f"Appendix B rows (w, a) with no row of that a in the BPF table: {missing}"


def test_bpf_table_windows_are_appendix_b_windows(bpf_table):
    differ = [(a, w, bpf_table[a][0]) for w, a, _ in appendix_b() if a in bpf_table and bpf_table[a][0] != w]
    assert not differ, (
        f"{len(differ)} rows whose window differs, (a, RFC window, BPF window): {differ}"
    )


def test_bpf_table_b_within_the_rfc_rounding(bpf_table):
    far = [
        (w, b, bpf_table[a][1] / 256)
        for w, a, b in appendix_b()
        if a in bpf_table and abs(bpf_table[a][1] / 256 - b) > B_TOLERANCE
    ]
    assert not far, f"rows whose b differs by more than {B_TOLERANCE:.5f}, (w, RFC b, BPF b): {far}"
