"""The Python fuzz targets' checked-in inputs (fuzz/python/*.py, run by `make fuzz` under
Atheris) through their harnesses: the corpora in fuzz/corpus/<target>/ and the inputs that
once failed, in fuzz/regressions/<target>/. The Rust targets' are replayed by
crates/fuzzing/tests/replay.rs."""

import importlib.util
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
TARGETS = sorted(path.stem for path in (FUZZ / "python").glob("*.py"))


def harness(target: str):
    spec = importlib.util.spec_from_file_location(f"fuzz_{target}", FUZZ / "python" / f"{target}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, target)


def inputs(target: str, folder: str) -> list[Path]:
    directory = FUZZ / folder / target
    return sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


def test_there_are_python_targets_each_with_a_corpus():
    assert "sweep_load" in TARGETS
    for target in TARGETS:
        assert inputs(target, "corpus"), f"fuzz/corpus/{target} is empty or missing"


@pytest.mark.parametrize("target", TARGETS)
def test_every_checked_in_input_passes_its_harness(target):
    run = harness(target)
    for path in inputs(target, "corpus") + inputs(target, "regressions"):
        try:
            run(path.read_bytes())
        except Exception as e:  # noqa: BLE001 - the file's name says which input broke
            raise AssertionError(f"{path} fails its harness: {e!r}") from e
