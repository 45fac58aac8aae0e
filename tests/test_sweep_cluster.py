"""Sweeps across machines (issue 38, docs/sweeps.md §6): a Ray cluster of two nodes on this
machine, a head and a second node started as separate processes with one CPU each, runs a
sweep; the second node is killed whole in the middle of a run, as when a machine is lost.
No run is lost or repeated, the runs it had are tried again on the head, and the results
table and the report say which node ran what."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray

from millinet import store as stores
from millinet.report import write_report
from millinet.sweep import load_sweep, run_sweep
from test_sweep import write
from test_sweep_faults import assert_nothing_half_counted

# 2 congestion controls x 6 seeds of a dumbbell: runs of most of a second, enough of them that
# the second node, whose worker starts seconds after the head's, finishes a run and is then
# caught in the middle of another.
SWEEP = """\
scenario = "dumbbell"
seeds = 6
[set]
duration_s = 10.0
[grid]
"flows.0.cc" = ["newreno", "cubic"]
"""
RAY = str(Path(sys.executable).with_name("ray"))
# The second node's custom resource: how the test tells it from the head among the nodes.
SECOND = "second"
TIMEOUT_S = 180  # the whole test: starting the cluster, the sweep, the report
JOIN_TIMEOUT_S = 60


@dataclass
class Node:
    """A `ray start --block` in a session of its own. Ray puts its workers in process groups
    of their own, so killing the node's process group would leave its workers running: the
    session holds them all."""

    process: subprocess.Popen
    tmpdir: Path  # its workers' TMPDIR, where a run in progress is a millinet-worker-* directory
    name: str = ""  # as the results table names it, once the node has joined

    def processes(self) -> list[int]:
        """The node's processes still running (a zombie, killed but not yet reaped, is not)."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):  # the process has exited meanwhile
                state, _, _, session = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:4]
                if state != "Z" and int(session) == self.process.pid:
                    pids.append(int(pid))
        return pids

    def kill(self) -> None:
        """SIGKILLs every process of the node, again while any is left (the raylet may start
        a worker while the others die), for 10 s at most."""
        deadline = time.monotonic() + 10
        while (pids := self.processes()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
            self.process.poll()  # reaps `ray start`, our child, once dead


@dataclass
class Cluster:
    address: str
    head: Node
    second: Node


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_node(root: Path, name: str, *args: str) -> Node:
    tmpdir = root / name
    tmpdir.mkdir()
    command = [RAY, "start", "--block", "--num-cpus", "1", "--disable-usage-stats", *args]
    # `ray start --head` turns token authentication on when it finds a token (~/.ray/auth_token,
    # which a local ray.init() writes), a driver given an address only when RAY_AUTH_MODE
    # says so: the nodes get this process's mode, off unless set.
    env = {**os.environ, "TMPDIR": str(tmpdir), "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
    with open(root / f"{name}.log", "w") as log:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return Node(process, tmpdir)


def wait_until(condition, what: str, timeout_s: float = JOIN_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        time.sleep(0.2)


def name_nodes(cluster: Cluster) -> None:
    """Waits until both nodes have joined and names them as the engine does: machine and
    the start of the Ray node id."""
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        wait_until(lambda: sum(node["Alive"] for node in ray.nodes()) == 2, "the second node joins the head")
        for node in ray.nodes():
            (cluster.second if SECOND in node["Resources"] else cluster.head).name = f"{socket.gethostname()} {node['NodeID'][:8]}"
    finally:
        ray.shutdown()  # the driver's own connection only: the cluster stays up


def on_timeout(signum, frame):
    raise TimeoutError(f"the test took over {TIMEOUT_S} s")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A head and a second node of one CPU each; afterwards both are killed and no process
    of either survives. Not `ray stop`, which stops every Ray cluster of the machine."""
    previous = signal.signal(signal.SIGALRM, on_timeout)
    signal.alarm(TIMEOUT_S)
    # Not pytest's tmp_path: Ray's socket paths under --temp-dir must fit in 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="millinet-ray-"))
    nodes: list[Node] = []
    try:
        port = free_port()
        nodes.append(start_node(root, "head", "--head", "--port", str(port), "--temp-dir", str(root / "ray"), "--include-dashboard=false"))
        # `ray start --head` writes the cluster's address into its temp dir once it is up.
        wait_until(lambda: (root / "ray" / "ray_current_cluster").exists(), "the head starts")
        nodes.append(start_node(root, SECOND, "--address", f"127.0.0.1:{port}", "--resources", json.dumps({SECOND: 1})))
        cluster = Cluster(f"127.0.0.1:{port}", *nodes)
        name_nodes(cluster)
        yield cluster
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        for node in nodes:
            node.kill()
        survivors = [pid for node in nodes for pid in node.processes()]
        survivors += subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True).stdout.split()
        shutil.rmtree(root, ignore_errors=True)
        assert not survivors, f"processes of the test's Ray nodes survive SIGKILL: {survivors}"


def kill_mid_run(node: Node, store: Path, killed: threading.Event) -> None:
    """Kills `node` whole once the store holds a run it ran and it is in the middle of
    another, so that it has both finished runs (kept) and a run in progress (lost, tried
    again elsewhere)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        stored = any(stores.read_record(store, path.stem).get("node") == node.name for path in (store / stores.RECORDS).glob("*.json"))
        if stored and any(node.tmpdir.glob("millinet-worker-*")):
            node.kill()
            killed.set()
            return
        time.sleep(0.01)


def test_sweep_across_two_nodes_loses_no_run_when_one_dies(cluster, tmp_path):
    sweep = load_sweep(write(tmp_path, SWEEP))
    keys = {spec.key for spec in sweep.runs()}
    store = tmp_path / "store"
    killed = threading.Event()
    killer = threading.Thread(target=kill_mid_run, args=(cluster.second, store, killed), daemon=True)
    killer.start()
    frame = run_sweep(sweep, store, engine="ray", address=cluster.address, quiet=True)
    assert killed.is_set(), "the second node finished its runs before it could be killed in the middle of one"

    # Every run of the grid once, whole, and ok.
    assert len(frame) == len(keys) == 12 and frame["run_key"].is_unique and set(frame["run_key"]) == keys
    assert set(frame["status"]) == {"ok"}
    assert {directory.name for directory in (store / stores.RUNS).iterdir()} == keys
    assert_nothing_half_counted(store, keys)
    # The run the second node had when it died was tried again, on the head; the runs it
    # finished before count as its own.
    retried = frame[frame["attempts"] > 1]
    assert len(retried) >= 1 and set(retried["node"]) == {cluster.head.name}, frame[["run_key", "attempts", "node"]]
    assert set(frame["node"]) == {cluster.head.name, cluster.second.name}

    markdown = write_report(store).with_name("report.md").read_text()
    assert "## Runs per node" in markdown
    for node in (cluster.head, cluster.second):
        assert f"| {node.name} | {(frame['node'] == node.name).sum()} | 0 |" in markdown, markdown
