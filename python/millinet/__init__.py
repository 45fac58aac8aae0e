"""millinet: a packet-level simulator for TCP over 5G mmWave links.

    import millinet
    result = millinet.run("dumbbell", seed=3, overrides={"duration_s": 2})
    result.summary["flows"][0]["goodput_bps"]
    result.series["flows"]          # pandas DataFrame with run, t, flow, cwnd_bytes, ...
    millinet.emulate("dumbbell")    # the same scenario with real Linux TCP (root)
"""

from millinet._core import ScenarioError
from millinet.catalog import scenarios
from millinet.emulator import emulate
from millinet.runner import RunResult, resolve, run

__all__ = ["RunResult", "ScenarioError", "emulate", "resolve", "run", "scenarios"]
