"""Sweeps (docs/sweeps.md): a grid of scenario parameters x arms x seeds, run on a local
process pool or a Ray cluster into a result store (millinet.store).

    from millinet.sweep import load_sweep, run_sweep
    sweep = load_sweep("quick", overrides={"duration_s": 0.2})
    frame = run_sweep(sweep, "runs/quick", engine="local")
"""

from millinet.sweep.run import run_sweep
from millinet.sweep.spec import Pairing, RunSpec, Sweep, load_sweep, shipped_sweeps

__all__ = ["Pairing", "RunSpec", "Sweep", "load_sweep", "run_sweep", "shipped_sweeps"]
