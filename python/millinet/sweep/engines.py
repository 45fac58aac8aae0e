"""The engines that run a sweep's specs: a local process pool and a Ray cluster.

Both offer `submit(spec)`, `next_done() -> (spec, outcome)` and `close()`. The outcome is
the dict `worker.execute` returns plus the `node` that ran it, or a `Crash` when the
process running the spec died (killed, out of memory, a crash in native code, its node
lost): the caller decides whether to retry.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

from millinet._core import ScenarioError
from millinet.sweep.spec import RunSpec
from millinet.sweep.worker import execute

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class Crash:
    """The worker running a spec was lost; `reason` says how, `node` where it ran (None
    when the engine cannot tell: Ray names a lost node in the reason instead)."""

    reason: str
    node: str | None


def _local_node() -> str:
    """The node of a local worker: the driver's machine, where every local worker runs."""
    return socket.gethostname()


def make_engine(engine: str, workers: int | None, address: str | None) -> LocalEngine | RayEngine:
    if workers is not None and workers < 1:
        raise ScenarioError(f"workers = {workers}: expected at least 1")
    if engine == "local":
        if address is not None:
            raise ScenarioError("an address is for the ray engine; the local engine runs on this machine")
        return LocalEngine(workers or len(os.sched_getaffinity(0)))
    if engine == "ray":
        return RayEngine(workers, address)
    raise ScenarioError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")


def _execute_on_ray(spec: RunSpec) -> dict:
    """A Ray task: runs the spec and names its node, which only the task itself knows: the
    machine and the start of the Ray node id (`ray status` lists them), since one machine
    may hold several nodes."""
    import ray  # loaded already in a Ray worker

    return {**execute(spec), "node": f"{_local_node()} {ray.get_runtime_context().get_node_id()[:8]}"}


def _serve(conn: Connection) -> None:
    """A local worker: runs the specs it receives, one at a time, until the pipe closes.
    A driver killed outright leaves it to finish the run it has and then exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    while True:
        try:
            spec = conn.recv()
            conn.send({**execute(spec), "node": _local_node()})
        except (EOFError, BrokenPipeError):  # the driver has gone: so does its worker, quietly
            return


class LocalEngine:
    """`workers` processes, each given one spec at a time through its own pipe, so the
    spec a dead worker was running is known; a dead worker is replaced at once.
    (concurrent.futures' pool cannot tell which task a dead worker had: it fails them all.)"""

    def __init__(self, workers: int):
        # spawn: workers do not inherit the driver's threads (rich's refresh thread, Ray's).
        self.context = multiprocessing.get_context("spawn")
        self.waiting: deque[RunSpec] = deque()
        self.idle: list[tuple[multiprocessing.Process, Connection]] = []
        self.busy: dict[Connection, tuple[multiprocessing.Process, RunSpec]] = {}
        for _ in range(workers):
            self.idle.append(self._start())

    def _start(self) -> tuple[multiprocessing.Process, Connection]:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(theirs,), daemon=True)
        process.start()
        theirs.close()
        return process, ours

    def _dispatch(self) -> None:
        while self.waiting and self.idle:
            process, conn = self.idle.pop()
            spec = self.waiting.popleft()
            conn.send(spec)
            self.busy[conn] = (process, spec)

    def submit(self, spec: RunSpec) -> None:
        self.waiting.append(spec)
        self._dispatch()

    def next_done(self) -> tuple[RunSpec, dict | Crash]:
        sentinels = {process.sentinel: conn for conn, (process, _) in self.busy.items()}
        ready = wait([*self.busy, *sentinels])
        # A result that arrived before its worker died still counts.
        conn = next((c for c in ready if isinstance(c, Connection)), None) or sentinels[ready[0]]
        process, spec = self.busy.pop(conn)
        try:
            outcome = conn.recv()
            self.idle.append((process, conn))
        except (EOFError, OSError):
            process.join()
            conn.close()
            outcome = Crash(f"worker process {process.pid} died (exit code {process.exitcode})", _local_node())
            self.idle.append(self._start())
        self._dispatch()
        return spec, outcome

    def close(self) -> None:
        for process, conn in self.idle:
            conn.close()
        for conn, (process, _) in self.busy.items():
            process.kill()
            conn.close()
        for process, _ in [*self.idle, *self.busy.values()]:
            process.join()


class RayEngine:
    """Specs as Ray tasks (one CPU each) on the cluster at `address`, or on a local
    cluster of `workers` CPUs (default: all) started for this sweep and stopped after it.
    Ray's own task retries are off: a lost worker or node comes back as a Crash, retried
    by the caller like a local one, so both engines count attempts alike."""

    def __init__(self, workers: int | None, address: str | None):
        import ray  # slow to import: only this engine needs it

        if address is not None and workers is not None:
            raise ScenarioError("workers sets the CPUs of a local Ray cluster; an existing cluster (address) has its own")
        self.ray = ray
        ray.init(
            address=address,
            num_cpus=workers,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
        self.task = ray.remote(num_cpus=1, max_retries=0)(_execute_on_ray)
        self.pending: dict[object, RunSpec] = {}

    def submit(self, spec: RunSpec) -> None:
        self.pending[self.task.remote(spec)] = spec

    def next_done(self) -> tuple[RunSpec, dict | Crash]:
        [ref], _ = self.ray.wait(list(self.pending), num_returns=1)
        spec = self.pending.pop(ref)
        try:
            return spec, self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            return spec, Crash(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", None)

    def close(self) -> None:
        self.ray.shutdown()
