"""The files shipped with millinet (scenarios, sweeps), and turning a name-or-path argument
into a file path."""

from pathlib import Path

from millinet._core import ScenarioError
from millinet._toml import tomllib

SCENARIO_DIR = Path(__file__).parent / "scenarios"


def shipped(directory: Path) -> list[tuple[str, str]]:
    """(name, description) of every TOML file shipped in `directory`, sorted by name."""
    return [(path.stem, _description(path)) for path in sorted(directory.glob("*.toml"), key=lambda path: path.stem)]


def _description(path: Path) -> str:
    with path.open("rb") as f:
        return tomllib.load(f).get("description", "")


def shipped_path(argument: str | Path, directory: Path, kind: str) -> Path:
    """The file of a name shipped in `directory`, or `argument` itself when it is a path.

    Anything with a `.toml` suffix or a directory part is a path (its reader reports a
    missing or unreadable file); any other word must name a shipped file of this `kind`.
    """
    path = Path(argument)
    if path.suffix == ".toml" or len(path.parts) > 1 or path.exists():
        return path
    candidate = directory / f"{path.name}.toml"
    if candidate.is_file():
        return candidate
    names = ", ".join(name for name, _ in shipped(directory))
    raise ScenarioError(f"unknown {kind} {str(argument)!r}; shipped {kind}s: {names}; a path to a .toml file is also accepted")


def scenarios() -> list[tuple[str, str]]:
    """(name, description) of every shipped scenario, sorted by name."""
    return shipped(SCENARIO_DIR)


def scenario_path(scenario: str | Path) -> Path:
    """The file of a shipped scenario name, or `scenario` itself when it is a path."""
    return shipped_path(scenario, SCENARIO_DIR, "scenario")
