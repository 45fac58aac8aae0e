#!/usr/bin/env python3
"""Fuzz target `sweep_load`: the sweep-file loader (Python, so Atheris rather than cargo-fuzz).

Any text is a sweep file: `load_sweep_text` must return a sweep or raise a ScenarioError
(which names the file and line, the bad value and what is allowed), never anything else.
An accepted sweep of at most MAX_RUNS runs is also expanded (every run resolved through the
engine): each run has a value for every parameter column, no run appears twice under one
arm, and every pairing names arms the sweep has.

    .venv/bin/python fuzz/python/sweep_load.py [libFuzzer flags] fuzz/work/sweep_load fuzz/corpus/sweep_load

(`fuzz/run.sh sweep_load` does that at nice 19.) `tests/test_fuzz_corpus.py` replays
fuzz/corpus/sweep_load and fuzz/regressions/sweep_load through `sweep_load` in `make test`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Expanding a sweep resolves every run in the engine; a few dozen keep an execution short.
MAX_RUNS = 8
# Errors name this file; scenario paths in the input resolve against its folder.
SWEEP_FILE = Path("fuzz-sweep.toml")


def sweep_load(data: bytes) -> None:
    from millinet._core import ScenarioError
    from millinet.sweep.spec import load_sweep_text

    try:
        text = data.decode()
    except UnicodeDecodeError:
        return
    try:
        sweep = load_sweep_text(text, SWEEP_FILE)
    except ScenarioError:
        return
    assert sweep.text == text
    arms = {arm for part in sweep.parts for arm in part.arms}
    for pairing in sweep.pairings:
        assert {pairing.baseline, pairing.treatment} <= arms, (pairing, arms)
    runs = sum(len(part.points()) * len(part.arms) for part in sweep.parts) * len(sweep.seeds)
    if runs > MAX_RUNS:
        return
    try:
        specs = sweep.runs()
    except ScenarioError:
        # A combination that no single key breaks (e.g. two grid values together) is refused
        # when the runs are resolved, with the same kind of message.
        return
    seen = set()
    for spec in specs:
        assert set(spec.params) == set(sweep.parameters), (spec.params, sweep.parameters)
        assert (spec.key, spec.arm) not in seen, spec
        seen.add((spec.key, spec.arm))


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["millinet"]):
        import millinet.sweep.spec  # noqa: F401

    atheris.Setup(sys.argv, sweep_load)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
