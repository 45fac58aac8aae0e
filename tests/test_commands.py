"""`millinet scenarios`, `show`, `run` and `plot` as a user runs them."""

import hashlib
import json
import shutil
import subprocess

import pyarrow.parquet as pq

from conftest import SHORT, millinet, ok
from millinet._toml import tomllib

# Tables every run has, with the columns the engine promises in them.
PROMISED = {
    "flows": ["t", "flow", "cwnd_bytes", "ssthresh_bytes", "srtt_ms", "pacing_rate_bps", "bytes_in_flight"],
    "goodput": ["t", "flow", "goodput_bps"],
    "queues": ["t", "queue", "bytes"],
}


def test_scenarios_lists_shipped_ones():
    lines = ok(millinet("scenarios")).stdout.splitlines()
    names = {line.split()[0] for line in lines}
    assert {"dumbbell", "dumbbell-switching"} <= names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines), "every scenario has a description"


def test_show_prints_resolved_toml_with_overrides():
    text = ok(millinet("show", "dumbbell", "--seed", "42", "--set", "flows.0.cc=newreno")).stdout
    assert 'cc = "newreno"' in text
    scenario = tomllib.loads(text)
    assert scenario["seed"] == 42
    assert scenario["flows"][0]["cc"] == "newreno"
    assert scenario["links"][1]["rate_bps"] == 1e9


def test_run_writes_the_run_directory(short_run):
    run_dir, result = short_run
    assert run_dir.is_dir(), "default run directory is runs/<scenario>-<seed>"
    assert "goodput" in result.stdout and "output: runs/dumbbell-1" in result.stdout
    assert not list(run_dir.glob(".*.tmp")), "no temporary files are left behind"

    scenario_text = (run_dir / "scenario.toml").read_text()
    scenario = tomllib.loads(scenario_text)
    assert scenario["seed"] == 1 and scenario["duration_s"] == 1

    summary_text = (run_dir / "summary.json").read_text()
    summary = json.loads(summary_text)
    assert summary_text == json.dumps(summary, sort_keys=True, indent=2) + "\n"
    assert summary["flows"][0]["goodput_bps"] > 0
    assert summary["sim"]["sim_time_s"] > 0

    run_id = hashlib.sha256(scenario_text.encode()).hexdigest()[:16]
    for table, columns in PROMISED.items():
        frame = pq.read_table(run_dir / f"{table}.parquet").to_pandas()
        assert {"run", *columns} <= set(frame.columns)
        assert len(frame) > 0
        assert set(frame["run"]) == {run_id}
        assert frame["t"].between(0, 1).all()


def test_plot_writes_a_png(short_run, tmp_path):
    run_dir, _ = short_run
    out = tmp_path / "panels.png"
    ok(millinet("plot", run_dir, "--out", out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


def test_pcap_is_readable_by_tshark(tmp_path):
    assert shutil.which("tshark"), "tshark is needed (make deps installs it)"
    ok(millinet("run", "dumbbell", "--set", "duration_s=0.05", "--out", tmp_path, "--pcap", "server,client", "--quiet"))
    captures = sorted(tmp_path.glob("*.pcap*"))
    assert len(captures) == 2, captures
    for capture in captures:
        packets = subprocess.run(
            ["tshark", "-n", "-r", capture, "-Y", "tcp", "-T", "fields", "-e", "ip.src", "-e", "tcp.dstport"],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()
        assert packets, f"{capture.name} has TCP packets"


def test_run_summarizes_udp_flows(tmp_path):
    """A UDP flow has no RTT, retransmissions or limits: the summary shows "-" instead."""
    result = ok(millinet("run", "dumbbell", "--set", "duration_s=0.1", "--set", "flows.0.kind=udp", "--out", tmp_path))
    assert "0 udp" in result.stdout
    ok(millinet("plot", tmp_path))


def test_a_reused_run_directory_holds_only_the_new_runs_files(tmp_path):
    """A directory that held a run with UEs, a capture and a plot, reused for a dumbbell run:
    nothing of the first run is left for `millinet plot` or the result store to read."""
    out = tmp_path / "run"
    ok(millinet("run", "handover", "--set", "duration_s=0.2", "--pcap", "gnb1", "--out", str(out), "--quiet"))
    ok(millinet("plot", str(out)))
    assert {"ues.parquet", "gnb1.pcap", "plot.png"} <= {p.name for p in out.iterdir()}
    ok(millinet("run", "dumbbell", "--set", "duration_s=0.2", "--out", str(out), "--quiet"))
    names = {p.name for p in out.iterdir()}
    assert not {"ues.parquet", "mobility.parquet", "gnb1.pcap", "plot.png"} & names, names
    run_id = hashlib.sha256((out / "scenario.toml").read_bytes()).hexdigest()[:16]
    for table in out.glob("*.parquet"):
        assert set(pq.read_table(table).column("run").to_pylist()) == {run_id}, table.name
