"""docs/architecture.md's dependency table is the workspace's: every crate's `[dependencies]` on
other millinet crates, no more and no less."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def documented() -> dict[str, set[str]]:
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## 2. Who may depend on whom", 1)[1].split("\n## ", 1)[0]
    table = {}
    for crate, depends in re.findall(r"^\| `(millinet-[\w-]+)` \| ([^|]*) \|$", section, flags=re.M):
        table[crate] = set() if depends.strip() == "—" else {f"millinet-{name.strip()}" for name in depends.split(",")}
    return table


def declared() -> dict[str, set[str]]:
    table = {}
    for manifest in sorted(REPO.glob("crates/*/Cargo.toml")):
        package = tomllib.loads(manifest.read_text())
        table[package["package"]["name"]] = {name for name in package.get("dependencies", {}) if name.startswith("millinet-")}
    return table


def test_the_documented_dependencies_are_the_workspaces():
    docs, cargo = documented(), declared()
    assert len(cargo) > 10
    assert docs == cargo, {crate: {"docs": sorted(docs.get(crate, ())), "Cargo.toml": sorted(cargo.get(crate, ()))} for crate in docs.keys() | cargo.keys() if docs.get(crate) != cargo.get(crate)}


def test_no_model_crate_depends_on_a_driver_or_the_schema():
    cargo = declared()
    models = ["millinet-wire", "millinet-channel", "millinet-ran", "millinet-transport", "millinet-proxy"]
    above = {"millinet-scenario", "millinet-network", "millinet-engine", "millinet-emu", "millinet-proxyd", "millinet-py"}
    assert {model: sorted(cargo[model] & above) for model in models} == {model: [] for model in models}
