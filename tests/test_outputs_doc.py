"""docs/outputs.md is the reference of what a run writes: every field of summary.json and
every column of every Parquet table that short runs write is documented there, and every
field or column it documents is written by one of these runs (or named below as written
only under a condition they do not cover).

The page's convention: in §2 and §3 every table row's first cell holds one field path or
column name in backticks; `a[]` is each element of list `a`, and `x.{p,q}` stands for
`x.p` and `x.q`. §3's tables belong to the table named in their `### ... `NAME.parquet``
heading; rows before the first such heading are columns of every table."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import millinet
from millinet._toml import tomllib

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "outputs.md"

# Runs that together write every section and table: (scenario, overrides, pcap nodes).
RUNS = {
    "repeated": ("dumbbell", ["flows.0.app=repeated", "flows.0.sizes_bytes=[20000,30000]"], ["server", "router"]),
    "udp": ("dumbbell", ["flows.0.kind=udp"], []),
    "milliproxy": ("milliproxy", ["proxy.node=gnb"], []),
    "split": ("spep-emulation", ["proxy.node=edge"], []),
    "handover": ("handover", ["ues.0.cell=gnb2"], []),  # starts on the far cell: a handover at once
    "mptcp": ("mptcp", [], []),
}
DURATION = "duration_s=0.3"

# Documented summary.json fields no simulated run writes, and why.
CONDITIONAL = {
    "middleboxes": "only middleboxes added through the Rust API (Simulation::add_middlebox)",
}
# §2's subsection of fields only an emulated run writes (checked against crates/emu instead).
EMULATOR_ONLY = "millinet emulate"

BACKTICK = re.compile(r"`([^`]+)`")


def expand(path: str) -> list[str]:
    """`x.{p,q}` -> [`x.p`, `x.q`]."""
    braces = re.search(r"\{([^}]*)\}", path)
    if not braces:
        return [path]
    return [path[: braces.start()] + part.strip() + path[braces.end() :] for part in braces.group(1).split(",")]


def section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^## (\d+)\. .*$", text, flags=re.M)
    bodies = dict(zip(parts[1::2], parts[2::2]))
    assert str(number) in bodies, f"docs/outputs.md has no section {number}"
    return bodies[str(number)]


def subsections(body: str) -> list[tuple[str, str]]:
    """(heading, text) of each ### subsection, the text before the first under heading ''."""
    parts = re.split(r"^### (.*)$", body, flags=re.M)
    return [("", parts[0])] + list(zip(parts[1::2], parts[2::2]))


def first_cells(body: str) -> list[str]:
    """The first backticked name of each table row's first cell; header rows (those above a
    `|---|` rule) and the rules left out."""
    lines = body.splitlines()
    rule = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
    names = []
    for line, below in zip(lines, [*lines[1:], ""]):
        if not line.startswith("|") or rule.match(line) or rule.match(below):
            continue
        name = BACKTICK.search(line.split("|")[1])
        if name:
            names.append(name.group(1))
    return names


def documented_fields() -> dict[str, str]:
    """Every field path of §2 -> the heading of its subsection."""
    fields = {}
    for heading, body in subsections(section(2)):
        for cell in first_cells(body):
            for path in expand(cell):
                assert path not in fields, f"docs/outputs.md §2 lists `{path}` twice"
                fields[path] = heading
    return fields


def documented_columns() -> tuple[set[str], dict[str, set[str]]]:
    """§3: the columns every table has, and table name -> its own columns."""
    common, tables = set(), {}
    for heading, body in subsections(section(3)):
        names = set(first_cells(body))
        table = re.search(r"`(\w+)\.parquet`", heading)
        if table:
            tables[table.group(1)] = names
        else:
            common |= names
    return common, tables


def leaves(value, path: str = ""):
    """The paths of a JSON value's scalars, nulls, empty lists and lists of scalars."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        for item in value:
            yield from leaves(item, f"{path}[]")
    else:
        yield path


def covers(path: str, others) -> bool:
    """`path` is one of `others`, or a container of one."""
    return any(other == path or other.startswith((f"{path}.", f"{path}[]")) for other in others)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Each run of RUNS, 0.3 s simulated, in its own run directory."""
    root = tmp_path_factory.mktemp("outputs")
    for name, (scenario, overrides, pcap) in RUNS.items():
        millinet.run(scenario, overrides=[DURATION, *overrides], out=root / name, pcap=pcap)
    return {name: root / name for name in RUNS}


def summaries(runs) -> dict[str, dict]:
    return {name: json.loads((out / "summary.json").read_text()) for name, out in runs.items()}


def test_the_page_has_its_numbered_sections():
    text = DOC.read_text(encoding="utf-8")
    headings = re.findall(r"^## (\d+)\. ", text, flags=re.M)
    assert headings == ["1", "2", "3", "4", "5", "6"], headings


def test_every_summary_field_a_run_writes_is_documented(runs):
    documented = documented_fields()
    missing = {}
    for name, summary in summaries(runs).items():
        for path in leaves(summary):
            if not covers(path, documented):
                missing.setdefault(path, name)
    assert not missing, "summary.json fields missing from docs/outputs.md §2 (field: a run writing it): " + ", ".join(
        f"{path}: {name}" for path, name in sorted(missing.items())
    )


def test_every_documented_summary_field_is_written(runs):
    written = {path for summary in summaries(runs).values() for path in leaves(summary)}
    documented = documented_fields()
    simulated = {path for path, heading in documented.items() if EMULATOR_ONLY not in heading}
    never = sorted(path for path in simulated if not covers(path, written) and path not in CONDITIONAL)
    assert not never, f"docs/outputs.md §2 documents fields no run writes: {never}"
    # A field said to be the emulator's alone must not come from the simulator.
    emulator_only = sorted(path for path in documented.keys() - simulated if path in written)
    assert not emulator_only, f"written by the simulator, documented as emulator-only: {emulator_only}"
    assert set(CONDITIONAL) <= simulated, "CONDITIONAL names fields the page does not document"


def test_every_field_the_emulator_writes_is_documented():
    """The emulator needs root and minutes: its summary's field names are read from its
    source instead, each to be a component of some documented path."""
    emu = REPO / "crates" / "emu" / "src"
    summary_rs = (emu / "summary.rs").read_text()
    run_rs = (emu / "run.rs").read_text()
    names = set(re.findall(r'"([a-z][a-z0-9_]*)"\s*:', summary_rs))
    names |= set(re.findall(r'insert\("([a-z][a-z0-9_]*)"', summary_rs))
    names |= set(re.findall(r'\("([a-z][a-z0-9_]*)",\s*st\.', summary_rs))
    programs = re.search(r'summary\["programs"\]\s*=\s*serde_json::json!\(\{(.*?)\}\);', run_rs, flags=re.S)
    assert programs, "crates/emu/src/run.rs no longer writes a `programs` section as expected"
    names |= set(re.findall(r'"([a-z][a-z0-9_]*)"\s*:', programs.group(1)))
    names |= set(re.findall(r'summary\["([a-z][a-z0-9_]*)"\]\s*=', run_rs))
    assert {"emulator", "programs", "kernel_cc", "payload_intact", "max_lateness_ms"} <= names, sorted(names)
    components = {part.removesuffix("[]") for path in documented_fields() for part in path.split(".")}
    assert not names - components, f"emulator summary fields missing from docs/outputs.md §2: {sorted(names - components)}"


def test_every_column_is_documented_and_every_documented_column_written(runs):
    common, tables = documented_columns()
    assert common == {"run", "t"}
    written: dict[str, set[str]] = {}
    for out in runs.values():
        for path in out.glob("*.parquet"):
            written.setdefault(path.stem, set()).update(pq.read_schema(path).names)
    assert not written.keys() - tables.keys(), f"tables missing from docs/outputs.md §3: {sorted(written.keys() - tables.keys())}"
    assert not tables.keys() - written.keys(), f"docs/outputs.md §3 documents tables no run writes: {sorted(tables.keys() - written.keys())}"
    for table, columns in written.items():
        assert common <= columns, f"{table} lacks {common - columns}"
        assert columns - common == tables[table], (
            f"{table}.parquet: written but undocumented {sorted(columns - common - tables[table])}, "
            f"documented but not written {sorted(tables[table] - columns)}"
        )


def test_the_run_directory_holds_the_files_of_section_1(runs):
    assert set(first_cells(section(1))) == {"scenario.toml", "summary.json", "<table>.parquet", "<node>.pcap"}
    for name, out in runs.items():
        pcap = RUNS[name][2]
        tables = {path.name for path in out.glob("*.parquet")}
        assert {path.name for path in out.iterdir()} == {"scenario.toml", "summary.json", *tables, *(f"{n}.pcap" for n in pcap)}
        run_id = hashlib.sha256((out / "scenario.toml").read_bytes()).hexdigest()[:16]
        for table in tables:
            assert set(pq.read_table(out / table, columns=["run"]).column("run").to_pylist()) <= {run_id}, table


def test_the_sampling_defaults_are_the_pages(runs, tmp_path):
    """The defaults §3 names are what a scenario without [outputs] resolves to."""
    text = section(3)
    step = re.search(r"`outputs\.sample_step_s` \(default ([\d.]+) s\)", text)
    bin_ = re.search(r"`outputs\.goodput_bin_s`\s+\(default ([\d.]+) s\)", text)
    assert step and bin_, "docs/outputs.md §3 names the defaults as `KEY` (default N s)"
    resolved = (runs["udp"] / "scenario.toml").read_text()
    without = re.sub(r"^\[outputs\]\n(?:[^\[\n].*\n)*", "", resolved, flags=re.M)
    assert without != resolved
    (tmp_path / "mine.toml").write_text(without)
    outputs = tomllib.loads(millinet.resolve(tmp_path / "mine.toml"))["outputs"]
    assert outputs == {"sample_step_s": float(step.group(1)), "goodput_bin_s": float(bin_.group(1))}


def test_captures_are_raw_ipv4_headers_only_with_nanosecond_times(runs):
    assert "RAW (101" in section(4)
    for node in RUNS["repeated"][2]:
        data = (runs["repeated"] / f"{node}.pcap").read_bytes()
        magic, _, _, _, _, _, link_type = struct.unpack("<IHHiIII", data[:24])
        assert (magic, link_type) == (0xA1B23C4D, 101), node  # nanosecond libpcap, LINKTYPE_RAW
        offset, truncated = 24, 0
        while offset < len(data):
            _, _, captured, original = struct.unpack("<IIII", data[offset : offset + 16])
            assert captured <= original and data[offset + 16] >> 4 == 4  # IPv4 headers, no link header
            truncated += captured < original
            offset += 16 + captured
        assert truncated, f"{node}.pcap: no record without its payload"
