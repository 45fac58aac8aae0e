"""The scenarios shipped with millinet, and turning a scenario argument into a file path."""

from pathlib import Path

from millinet._core import ScenarioError
from millinet._toml import tomllib

SCENARIO_DIR = Path(__file__).parent / "scenarios"


def scenarios() -> list[tuple[str, str]]:
    """(name, description) of every shipped scenario, sorted by name."""
    return [(path.stem, _description(path)) for path in sorted(SCENARIO_DIR.glob("*.toml"), key=lambda path: path.stem)]


def _description(path: Path) -> str:
    with path.open("rb") as f:
        return tomllib.load(f).get("description", "")


def scenario_path(scenario: str | Path) -> Path:
    """The file of a shipped scenario name, or `scenario` itself when it is a path.

    Anything with a `.toml` suffix or a directory part is a path (the engine reports a
    missing or unreadable file); any other word must name a shipped scenario.
    """
    path = Path(scenario)
    if path.suffix == ".toml" or len(path.parts) > 1 or path.exists():
        return path
    shipped = SCENARIO_DIR / f"{path.name}.toml"
    if shipped.is_file():
        return shipped
    names = ", ".join(name for name, _ in scenarios())
    raise ScenarioError(
        f"unknown scenario {str(scenario)!r}; shipped scenarios: {names}; "
        "a path to a .toml file is also accepted"
    )

