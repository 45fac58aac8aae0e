"""What a worker of either engine does with one run spec: run it in this process through
the Python API and hand back the run directory's files, so the driver alone writes the
store (workers need no access to it, and a killed worker leaves nothing half-written)."""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

import millinet
from millinet.sweep.spec import RunSpec


def execute(spec: RunSpec) -> dict:
    """{"files": {name: bytes}, "wall_s": s} for a finished run, {"error": text, "wall_s": s}
    for one that raised; never raises itself. The temporary run directory is named after
    this process's id, which shows which worker runs what."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"millinet-worker-{os.getpid()}-") as tmp:
        out = Path(tmp) / "run"
        try:
            run = millinet.emulate if spec.emulated else millinet.run
            result = run(spec.scenario, seed=spec.seed, overrides=spec.overrides, out=out)
            if result.run_id != spec.key:
                raise millinet.ScenarioError(
                    f"the run resolved to key {result.run_id} on this worker, {spec.key} on the driver: "
                    "driver and workers must run the same millinet and see the same scenario files"
                )
            files = {path.name: path.read_bytes() for path in out.iterdir()}
        except Exception as e:  # recorded in the run's row: a failing run must not stop the sweep
            last = traceback.format_exception_only(e)[-1].strip()
            return {"error": last, "wall_s": time.monotonic() - start}
    return {"files": files, "wall_s": time.monotonic() - start}
