"""Every kind of bad input gives one `error:` line naming what is wrong, exit status 2
(never a traceback), and the same error as ScenarioError from the Python API."""

from pathlib import Path

import pytest

import millinet
from conftest import millinet as cli

DUMBBELL = Path(millinet.__file__).parent / "scenarios" / "dumbbell.toml"


def broken_syntax(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of dumbbell.toml whose line 3 is not TOML."""
    lines = DUMBBELL.read_text().splitlines()
    lines[2] = "seed = = 1"
    path = tmp_path / "broken.toml"
    path.write_text("\n".join(lines) + "\n")
    return path, ["broken.toml", "line 3"]


def invalid_utf8(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "latin1.toml"
    path.write_bytes(DUMBBELL.read_bytes() + b'\n# caf\xe9\n')
    return path, ["latin1.toml"]


def directory(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "scenario.toml"
    path.mkdir()
    return path, ["scenario.toml"]


def missing_file(tmp_path: Path) -> tuple[Path, list[str]]:
    return tmp_path / "missing.toml", ["missing.toml"]


# (id, scenario or a function of tmp_path making one, overrides, fragments the message names)
CASES = [
    ("unknown key", "dumbbell", ["flows.0.bogus=1"], ["flows.0.bogus"]),
    ("wrong type", "dumbbell", ["duration_s=abc"], ["duration_s", "abc"]),
    ("out of range", "dumbbell", ["flows.0.mss_bytes=50"], ["flows.0.mss_bytes", "50", "100"]),
    (
        "telemetry max age below its own delivery",
        "milliproxy",
        ["proxy.node=gnb", "proxy.d_info_s=0.003", "proxy.telemetry_max_age_s=0.002"],
        ["proxy.telemetry_max_age_s", "0.002", "proxy.d_info_s + proxy.t_info_s"],
    ),
    ("unknown cc", "dumbbell", ["flows.0.cc=vegas"], ["flows.0.cc", "vegas", "cubic"]),
    ("unknown hystart", "dumbbell", ["flows.0.hystart=fast"], ["flows.0.hystart", "fast", "rfc9406"]),
    ("unknown CUBIC variant", "dumbbell", ["flows.0.cubic_variant=ns3"], ["flows.0.cubic_variant", "ns3", "rfc9438"]),
    ("unknown delayed-ACK rule", "dumbbell", ["flows.0.delayed_ack=bsd"], ["flows.0.delayed_ack", "bsd", "rfc5681"]),
    ("delayed-ACK rule of the wrong type", "dumbbell", ["flows.0.delayed_ack=2"], ["flows.0.delayed_ack", "2", "rfc5681"]),
    ("unknown ECN feedback", "dumbbell", ["flows.0.ecn=l4s"], ["flows.0.ecn", "l4s", "accurate"]),
    ("every item of a list that is not one", "dumbbell", ["links.*=1"], ["links.*", "table"]),
    ("every item, then a bad value", "dumbbell", ["flows.*.cc=vegas"], ["flows.0.cc", "vegas", "cubic"]),
    ("unknown O2I model", "urban", ["obstacles.2.o2i=paper"], ["obstacles.2.o2i", "paper", "high-loss"]),
    ("unknown interference model", "handover", ["interference=partial"], ["interference", "partial", "none"]),
    ("unknown RLC AQM", "milliproxy", ["ues.0.rlc_aqm=pie"], ["ues.0.rlc_aqm", "pie", "dualpi2"]),
    ("HyStart++ without CUBIC", "dumbbell", ["flows.0.cc=newreno", "flows.0.hystart=rfc9406"], ["flows.0.hystart", "rfc9406", "cubic"]),
    (
        "trace and switching rate on one link",
        "dumbbell",
        ['links.1.trace_b_to_a="up.mahimahi"', "links.1.switch_period_s=1", "links.1.switch_rate_bps=1e8"],
        ["links.1.trace_b_to_a", "up.mahimahi", "switch_period_s"],
    ),
    ("override without =", "dumbbell", ["duration_s"], ["duration_s", "KEY=VALUE"]),
    ("unknown scenario name", "no-such-scenario", [], ["no-such-scenario", "dumbbell", ".toml"]),
    ("missing file", missing_file, [], None),
    ("directory", directory, [], None),
    ("invalid TOML syntax", broken_syntax, [], None),
    ("invalid UTF-8", invalid_utf8, [], None),
]


def materialize(scenario, fragments, tmp_path) -> tuple[str, list[str]]:
    if callable(scenario):
        path, fragments = scenario(tmp_path)
        return str(path), fragments
    return scenario, fragments


@pytest.mark.parametrize("command", ["run", "show"])
@pytest.mark.parametrize("name, scenario, overrides, fragments", CASES, ids=[c[0] for c in CASES])
def test_cli_reports_one_error_line(command, name, scenario, overrides, fragments, tmp_path):
    scenario, fragments = materialize(scenario, fragments, tmp_path)
    args = [command, scenario]
    for override in overrides:
        args += ["--set", override]
    if command == "run":
        args += ["--out", tmp_path / "out", "--quiet"]

    result = cli(*args)

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert not (tmp_path / "out").exists(), "a rejected run must not leave a run directory"


@pytest.mark.parametrize("name, scenario, overrides, fragments", CASES, ids=[c[0] for c in CASES])
def test_api_raises_scenario_error(name, scenario, overrides, fragments, tmp_path):
    scenario, fragments = materialize(scenario, fragments, tmp_path)
    for call in (millinet.resolve, millinet.run):
        with pytest.raises(millinet.ScenarioError) as error:
            call(scenario, overrides=overrides)
        for fragment in fragments:
            assert fragment in str(error.value)


def test_api_rejects_bad_dict_override():
    with pytest.raises(millinet.ScenarioError, match="flows.0.mss_bytes"):
        millinet.resolve("dumbbell", overrides={"flows.0.mss_bytes": 50})


def test_unknown_pcap_node(tmp_path):
    result = cli("run", "dumbbell", "--set", "duration_s=0.01", "--pcap", "server,nobody", "--out", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert "nobody" in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists(), "a rejected run must not look complete"


def test_plot_of_missing_run_dir(tmp_path):
    result = cli("plot", tmp_path / "nothing-here")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert "nothing-here" in result.stderr


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--runs", "0"], ["--runs", "0", "x>=1"]),
        (["--runs", "many"], ["--runs", "many"]),
        (["--bogus"], ["--bogus"]),
        (["--engine", "slurm"], ["--engine", "slurm", "local", "ray"]),
    ],
    ids=["zero runs", "runs not a number", "unknown option", "unknown engine"],
)
def test_study_train_rejects_bad_options(args, fragments, tmp_path):
    result = cli("study", "train", "--quick", *args, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    error = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1, result.stderr
    for fragment in fragments:
        assert fragment in error[0]
    assert not (tmp_path / "out").exists(), "nothing runs on bad options"


def test_unknown_study_names_the_studies(tmp_path):
    result = cli("study", "trian", "--out", tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "trian" in result.stderr and "train" in result.stderr and "milliproxy" in result.stderr
