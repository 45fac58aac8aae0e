"""Sweep files (docs/sweeps.md): parsing, checking and expanding them into run specs.

A sweep is a base scenario, fixed overrides, parts (each a crossed grid times zipped lists
times named arms, optionally on a scenario of its own), seeds and pairings of arms. Every mistake is a ScenarioError naming the
file:line (when the key is on a line of its own), the key, the bad value and what is allowed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import millinet
from millinet import outputs
from millinet._core import ScenarioError
from millinet._toml import tomllib
from millinet.catalog import scenario_path, shipped, shipped_path
from millinet.runner import Overrides, override_list

SWEEP_DIR = Path(__file__).parent.parent / "sweeps"

TOP_KEYS = ("description", "scenario", "seeds", "set", "grid", "zip", "arms", "pairings", "parts")
PART_KEYS = ("scenario", "set", "grid", "zip", "arms")
PAIRING_KEYS = ("name", "baseline", "treatment")
DEFAULT_ARM = "base"
# Seeds a sweep may run per point: far above any study's 50, far below what would exhaust memory.
MAX_SEEDS = 100_000
# The parameter column naming each run's scenario, in sweeps whose parts run different ones
# (their rows would otherwise pair and group as one point where their keys agree).
SCENARIO_COLUMN = "scenario"
Scalar = str | bool | int | float


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: `scenario` with `overrides` and `seed`, labelled `arm`.

    `key` is the run key (16 hex digits of the SHA-256 of the resolved scenario, seed
    included: the run directory's name in the store); `params` maps every parameter
    column of the sweep to its value in the resolved scenario (None where it has none)."""

    key: str
    arm: str
    seed: int
    scenario: str
    overrides: dict[str, Scalar]
    params: dict[str, Scalar | None]
    # Run in the emulator (real Linux TCP, real time) instead of the simulator.
    emulated: bool = False


@dataclass(frozen=True)
class Pairing:
    """Runs of arm `treatment` divided by runs of arm `baseline` on the same point and seed."""

    name: str
    baseline: str
    treatment: str


@dataclass(frozen=True)
class Part:
    """One block of the sweep: crossed `grid` x zipped `zip` x `arms`, over fixed `fixed`,
    each run a variant of `scenario`."""

    scenario: str
    fixed: dict[str, Scalar]
    grid: dict[str, list[Scalar]]
    zip: dict[str, list[Scalar]]
    arms: dict[str, dict[str, Scalar]]

    def points(self) -> list[dict[str, Scalar]]:
        """Every combination of the grid, each with every position of the zipped lists."""
        crossed = [dict(zip(self.grid, values)) for values in itertools.product(*self.grid.values())]
        zipped = [dict(zip(self.zip, values)) for values in zip(*self.zip.values())] or [{}]
        return [{**a, **b} for a in crossed for b in zipped]


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep file. `parameters` are the row columns read from each run's resolved
    scenario: every key any part or arm sets or varies, in order of first appearance, after
    SCENARIO_COLUMN when the parts run different scenarios. `scenario` is the top-level one,
    that of every part that names none."""

    path: Path
    text: str
    description: str
    scenario: str
    seeds: tuple[int, ...]
    parts: tuple[Part, ...]
    pairings: tuple[Pairing, ...]
    parameters: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path.stem

    def arm_keys(self, arm: str) -> set[str]:
        """The keys arm `arm` overrides in any part (its own parameters, not the point's)."""
        return {key for part in self.parts for key in part.arms.get(arm, {})}

    def runs(self, seeds: list[int] | None = None) -> list[RunSpec]:
        """Every run: part x point x arm x seed (`seeds` replaces the file's seeds), each
        resolved through the engine. A run that two parts both produce appears once."""
        seeds = self.seeds if seeds is None else _check_seeds(seeds, f"{self.path}: seeds")
        specs: dict[tuple[str, str], RunSpec] = {}
        for part in self.parts:
            for point in part.points():
                for arm, arm_overrides in part.arms.items():
                    overrides = {**part.fixed, **point, **arm_overrides}
                    for seed in seeds:
                        spec = self._spec(part.scenario, arm, seed, overrides)
                        specs.setdefault((spec.key, arm), spec)
        return list(specs.values())

    def _spec(self, scenario: str, arm: str, seed: int, overrides: dict[str, Scalar]) -> RunSpec:
        try:
            text = millinet.resolve(scenario, seed, overrides)
        except ScenarioError as e:
            shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
            raise ScenarioError(f"{self.path}: the run arm={arm}, seed={seed}, {shown} is rejected: {e}") from None
        resolved = tomllib.loads(text)
        # A key the resolved scenario does not write back (a flow's `tcp_profile`, spelled out
        # as the values it set) keeps the value the run was given.
        params = {key: scenario if key == SCENARIO_COLUMN else _first_known(lookup(resolved, key), overrides.get(key)) for key in self.parameters}
        return RunSpec(outputs.run_id(text), arm, seed, scenario, overrides, params)


def _first_known(*values: Scalar | None) -> Scalar | None:
    return next((v for v in values if v is not None), None)


def lookup(doc: dict, key: str) -> Scalar | None:
    """The value at dotted `key` ("flows.0.cc") in a parsed scenario, None if absent."""
    node: object = doc
    for part in key.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, Scalar) else None


def shipped_sweeps() -> list[tuple[str, str]]:
    """(name, description) of every sweep shipped with millinet, sorted by name."""
    return shipped(SWEEP_DIR)


def sweep_path(sweep: str | Path) -> Path:
    """The file of a shipped sweep name, or `sweep` itself when it is a path."""
    return shipped_path(sweep, SWEEP_DIR, "sweep")


def load_sweep(path_or_name: str | Path, overrides: Overrides = None) -> Sweep:
    """Reads and checks a sweep file (a path, or the name of a shipped sweep).

    `overrides` ({"duration_s": 0.2} or ["duration_s=0.2"]) are added to the file's [set].
    Every key and value is checked against the scenario here; `Sweep.runs()` resolves
    every combination."""
    path = sweep_path(path_or_name)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{path}: cannot read the sweep file: {e}") from None
    return load_sweep_text(text, path, overrides)


def load_sweep_text(text: str, path: Path, overrides: Overrides = None) -> Sweep:
    """`load_sweep` of a sweep file's `text`, as if read from `path` (which names it in
    errors, and against whose folder its scenario paths resolve)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not a valid TOML file: {e}") from None
    return _Loader(path, text, doc).load(_extra_overrides(overrides))


def _extra_overrides(overrides: Overrides) -> dict[str, Scalar]:
    """Overrides as a dict; "key=value" values are TOML literals, a bare word a string (as --set)."""
    if isinstance(overrides, Mapping):
        return dict(overrides)
    result = {}
    for item in override_list(overrides):
        key, value = (side.strip() for side in item.split("=", 1))
        try:
            result[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            result[key] = value
    return result


class _Loader:
    """Checks one parsed sweep file; `where(*path)` names the file and line of a key."""

    def __init__(self, path: Path, text: str, doc: dict):
        self.path = path
        self.doc = doc
        self.lines = _key_lines(text)
        self.text = text

    def where(self, *path: str | int) -> str:
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return f"{self.path}:{self.lines[path[:end]]}"
        return str(self.path)

    def fail(self, path: tuple, message: str) -> ScenarioError:
        return ScenarioError(f"{self.where(*path)}: {message}")

    def load(self, extra: dict[str, Scalar]) -> Sweep:
        doc = self.doc
        self.check_keys(doc, (), TOP_KEYS)
        scenario = self.scenario(doc.get("scenario"), ("scenario",))
        seeds = _check_seeds(doc.get("seeds", 1), f"{self.where('seeds')}: seeds")
        fixed = {**self.scalars(doc.get("set", {}), ("set",)), **extra}
        self.check_resolves(scenario, fixed, ("set",), "[set]")
        raw_parts = doc.get("parts")
        if raw_parts is None:
            raw_parts, base = [{k: doc[k] for k in ("grid", "zip", "arms") if k in doc}], ()
        else:
            stray = [k for k in ("grid", "zip") if k in doc]
            if stray:
                raise self.fail((stray[0],), f"[{stray[0]}] next to [[parts]]: put it inside a part (every part has its own grid and zip)")
            if not isinstance(raw_parts, list) or not raw_parts:
                raise self.fail(("parts",), "parts must be a non-empty array of tables ([[parts]])")
            base = ("parts",)
        shared_arms = doc.get("arms")
        parts = tuple(
            self.part(raw, base + (i,) if base else (), scenario, fixed, shared_arms) for i, raw in enumerate(raw_parts)
        )
        pairings = self.pairings(doc.get("pairings", []), parts)
        parameters = _unique(k for part in parts for k in [*part.fixed, *part.grid, *part.zip, *(k for arm in part.arms.values() for k in arm)])
        if len({part.scenario for part in parts}) > 1:
            parameters.insert(0, SCENARIO_COLUMN)
        return Sweep(self.path, self.text, str(doc.get("description", "")), scenario, seeds, parts, pairings, tuple(parameters))

    def table(self, value: object, path: tuple) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, f"{'.'.join(map(str, path))} must be a table, not {value!r}")
        return value

    def check_keys(self, table: object, path: tuple, allowed: tuple[str, ...]) -> None:
        name = ".".join(map(str, path)) or "the top level"
        for key in self.table(table, path):
            if key not in allowed:
                raise self.fail(path + (key,), f"unknown key {key!r} in {name}; allowed: {', '.join(allowed)}")

    def scenario(self, value: object, where: tuple) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"scenario = {value!r}: expected a shipped scenario name or a path to a .toml file")
        path = Path(value)
        if path.suffix == ".toml" or len(path.parts) > 1:
            # A path is relative to the sweep file, and absolute for the workers.
            return str((self.path.parent / path).resolve())
        try:
            scenario_path(value)
        except ScenarioError as e:
            raise self.fail(where, str(e)) from None
        return value

    def scalars(self, table: object, path: tuple) -> dict[str, Scalar]:
        """A table of "key" = value overrides."""
        for key, value in self.table(table, path).items():
            if key == "seed":
                raise self.fail(path + (key,), "seed cannot be set or varied here: use the top-level seeds")
            if not isinstance(value, Scalar):
                raise self.fail(path + (key,), f"{key} = {value!r}: expected a string, boolean or number")
        return dict(table)

    def lists(self, table: object, path: tuple) -> dict[str, list[Scalar]]:
        """A table of "key" = [values] ([grid] and [zip])."""
        for key, values in self.table(table, path).items():
            if not isinstance(values, list) or not values or not all(isinstance(v, Scalar) for v in values):
                raise self.fail(path + (key,), f"{key} = {values!r}: expected a non-empty list of strings, booleans or numbers")
            if key == "seed":
                raise self.fail(path + (key,), "seed cannot be varied here: use the top-level seeds")
        return dict(table)

    def part(self, raw: object, path: tuple, scenario: str, fixed: dict, shared_arms: object) -> Part:
        if path:
            self.check_keys(raw, path, PART_KEYS)
            if "scenario" in raw:
                scenario = self.scenario(raw["scenario"], path + ("scenario",))
        part_fixed = {**fixed, **self.scalars(raw.get("set", {}), path + ("set",))}
        grid = self.lists(raw.get("grid", {}), path + ("grid",))
        zipped = self.lists(raw.get("zip", {}), path + ("zip",))
        lengths = {len(values) for values in zipped.values()}
        if len(lengths) > 1:
            shown = ", ".join(f"{k} has {len(v)}" for k, v in zipped.items())
            raise self.fail(path + ("zip",), f"[zip] lists must have equal lengths: {shown}")
        raw_arms = raw.get("arms", shared_arms)
        arms_path = path + ("arms",) if "arms" in raw else ("arms",)
        if raw_arms is None:
            arms = {DEFAULT_ARM: {}}
        else:
            if not self.table(raw_arms, arms_path):
                raise self.fail(arms_path, "[arms] is empty: name at least one arm, e.g. [arms.base]")
            arms = {name: self.scalars(table, arms_path + (name,)) for name, table in raw_arms.items()}
        self.check_disjoint(path, part_fixed, grid, zipped, arms)
        self.check_resolves(scenario, part_fixed, path + ("set",), "[set]")
        for key, values in grid.items():
            for value in values:
                self.check_resolves(scenario, {**part_fixed, key: value}, path + ("grid", key), f"[grid] {key!r}")
        # The zipped keys of one position go together (the radios of one device move together).
        for position in range(len(next(iter(zipped.values()), []))):
            point = {key: values[position] for key, values in zipped.items()}
            shown = ", ".join(f"{key} = {value!r}" for key, value in point.items())
            self.check_resolves(scenario, {**part_fixed, **point}, path + ("zip", next(iter(point))), f"[zip] position {position} ({shown})")
        for name, overrides in arms.items():
            self.check_resolves(scenario, {**part_fixed, **overrides}, arms_path + (name,), f"arm {name!r}")
        return Part(scenario, part_fixed, grid, zipped, arms)

    def check_disjoint(self, path: tuple, fixed: dict, grid: dict, zipped: dict, arms: dict) -> None:
        """A key varies in one place only: [set] gives it a value, [grid], [zip] or an arm change it."""
        seen: dict[str, str] = {}
        sections = [("set", fixed), ("grid", grid), ("zip", zipped)] + [(f"arms.{n}", a) for n, a in arms.items()]
        for section, table in sections:
            for key in table:
                other = seen.get(key)
                if other is not None and not (other.startswith("arms.") and section.startswith("arms.")):
                    raise self.fail(path + tuple(section.split(".")) + (key,), f"{key!r} is in both [{other}] and [{section}]; a key belongs to one of them")
                seen[key] = section

    def check_resolves(self, scenario: str, overrides: dict, path: tuple, what: str) -> None:
        try:
            millinet.resolve(scenario, None, overrides)
        except ScenarioError as e:
            raise self.fail(path, f"{what} is rejected by scenario {scenario!r}: {e}") from None

    def pairings(self, raw: object, parts: tuple[Part, ...]) -> tuple[Pairing, ...]:
        if not isinstance(raw, list):
            raise self.fail(("pairings",), "pairings must be an array of tables ([[pairings]])")
        arms = _unique(name for part in parts for name in part.arms)
        result = []
        for i, entry in enumerate(raw):
            path = ("pairings", i)
            self.check_keys(entry, path, PAIRING_KEYS)
            missing = [k for k in PAIRING_KEYS if not isinstance(entry.get(k), str)]
            if missing:
                raise self.fail(path, f"pairing {i} needs {', '.join(missing)} (strings): name, baseline and treatment arms")
            for role in ("baseline", "treatment"):
                if entry[role] not in arms:
                    raise self.fail(path + (role,), f"{role} = {entry[role]!r} is not an arm; arms: {', '.join(arms)}")
            if entry["name"] in {p.name for p in result}:
                raise self.fail(path + ("name",), f"pairing name {entry['name']!r} is used twice")
            result.append(Pairing(entry["name"], entry["baseline"], entry["treatment"]))
        return tuple(result)


def _check_seeds(seeds: object, where: str) -> tuple[int, ...]:
    allowed = (
        f"expected a count from 1 to {MAX_SEEDS} (seeds 1..N) or a non-empty list of at most {MAX_SEEDS} "
        "distinct integers from 0 to 2^64 - 1 (a run's seed is 64 bits)"
    )
    if isinstance(seeds, int) and not isinstance(seeds, bool) and 1 <= seeds <= MAX_SEEDS:
        return tuple(range(1, seeds + 1))
    if (
        isinstance(seeds, list | tuple)
        and 0 < len(seeds) <= MAX_SEEDS
        and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**64 for s in seeds)
        and len(set(seeds)) == len(seeds)
    ):
        return tuple(seeds)
    raise ScenarioError(f"{where} = {seeds!r}: {allowed}")


def _unique(items) -> list:
    return list(dict.fromkeys(items))


def _key_lines(text: str) -> dict[tuple, int]:
    """The first line of every key and table of a TOML text, by key path (array tables
    numbered from 0), so errors can name file:line. Keys inside inline tables or on
    continuation lines are not indexed; errors about them name the nearest enclosing key."""
    lines: dict[tuple, int] = {}
    arrays: dict[tuple, int] = {}
    table: tuple = ()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[["):
            path = _key_path(stripped[2 : stripped.find("]]")])
            arrays[path] = arrays.get(path, -1) + 1
            table = _indexed(path, arrays) + (arrays[path],)
        elif stripped.startswith("["):
            table = _indexed(_key_path(stripped[1 : stripped.find("]")]), arrays)
        elif "=" in stripped and not stripped.startswith("#"):
            key = _key_path(stripped.split("=", 1)[0])
            if key:
                lines.setdefault(table + key, number)
            continue
        else:
            continue
        lines.setdefault(table, number)
    return lines


def _key_path(key: str) -> tuple[str, ...]:
    """The parts of a TOML key ('a."b.c"' -> ("a", "b.c")), () if it is not one."""
    try:
        node = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        return ()
    path = []
    while isinstance(node, dict) and len(node) == 1:
        name, node = next(iter(node.items()))
        path.append(name)
    return tuple(path)


def _indexed(path: tuple, arrays: dict[tuple, int]) -> tuple:
    """`path` with the current index after every array-of-tables prefix ("parts" -> "parts", 2)."""
    result: tuple = ()
    for name in path:
        result += (name,)
        if result in arrays and result != path:
            result += (arrays[result],)
    return result
