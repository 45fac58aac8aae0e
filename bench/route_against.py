"""Figure (b) of `make bench` for this build against a reference build, in one sitting:
the milliproxy route (1 UE, CUBIC, 10 s), without and with milliProxy at the gNB. Runs
alternate between the two builds (each a fresh process, one core) so that load changes hit
both alike; the figure is the median event-loop wall time of --runs runs each, and the
ratio reference / this (above 1: this build is faster).

    .venv/bin/python bench/route_against.py --reference DIR [--runs 7]

DIR holds a reference millinet installed with `pip install --target` (make bench-route
REF=<commit> builds one from a commit and runs this).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

DURATION_S = 10.0
CASES = (("no proxy", []), ("milliProxy at the gNB", ["proxy.node=gnb"]))
ONE_RUN = "import json, sys, millinet; s = millinet.run('milliproxy', overrides=sys.argv[1:]).summary; print(json.dumps(s['sim']))"


def wall_s(pythonpath: str | None, overrides: list[str]) -> float:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", ONE_RUN, *overrides], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["wall_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, help="folder with the reference build (pip install --target)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"command: bench/route_against.py --reference {args.reference} --runs {args.runs}   (load average {os.getloadavg()[0]:.2f} at start)")
    print(f"{'case':22} {'reference s':>12} {'this s':>8} {'ratio':>6}  (sim s / wall s: reference, this)")
    for label, extra in CASES:
        overrides = ["flows.0.cc=cubic", f"duration_s={DURATION_S}", *extra]
        reference, this = [], []
        for _ in range(args.runs):
            reference.append(wall_s(args.reference, overrides))
            this.append(wall_s(None, overrides))
        r, t = statistics.median(reference), statistics.median(this)
        print(f"{label:22} {r:12.3f} {t:8.3f} {r / t:6.3f}  ({DURATION_S / r:.1f}, {DURATION_S / t:.1f})", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
