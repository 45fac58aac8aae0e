"""A run is a pure function of its scenario and seed: byte-identical outputs."""

import json

import millinet
from conftest import SHORT, millinet as cli, ok

# The only fields that depend on the machine rather than on the inputs.
WALL_CLOCK = ("wall_s", "events_per_s")


def summary_without_wall_clock(run_dir) -> str:
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in WALL_CLOCK:
        del summary["sim"][key]
    return json.dumps(summary, sort_keys=True, indent=2)


def test_same_inputs_give_identical_files(short_run, tmp_path):
    first, _ = short_run
    second = tmp_path / "again"
    ok(cli("run", "dumbbell", "--seed", "1", *SHORT, "--out", second, "--quiet"))

    assert summary_without_wall_clock(first) == summary_without_wall_clock(second)
    assert (first / "scenario.toml").read_bytes() == (second / "scenario.toml").read_bytes()
    tables = sorted(path.name for path in first.glob("*.parquet"))
    assert tables == sorted(path.name for path in second.glob("*.parquet"))
    for name in tables:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_another_seed_is_another_run(short_run):
    first, _ = short_run
    other = millinet.run("dumbbell", seed=2, overrides=["duration_s=1"])
    first_id = millinet.outputs.run_id((first / "scenario.toml").read_text())
    assert other.run_id != first_id
    assert set(other.series["flows"]["run"]) == {other.run_id}
