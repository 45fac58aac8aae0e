"""Speed of the simulator: the dumbbell at 1 and 3 Gbit/s (CUBIC, 10 s) and one UE
on the milliproxy route (3.2 Gbit/s peak, CUBIC, 10 s, one core).

Prints the median over several runs of wall time, events per second and simulated
seconds per wall second (the ratio against real time, measured in the same run),
with the machine and versions, so the figures can be pasted into BENCHMARKS.md.
"""

import argparse
import platform
import statistics
import subprocess

import millinet


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    return f"{cpu}; {platform.system()} {platform.release()}; {rustc}; Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="K=V")
    args = parser.parse_args()

    cases = [("dumbbell", "dumbbell 1 Gbit/s, CUBIC, 10 s", ["links.1.rate_bps=1e9"]),
             ("dumbbell", "dumbbell 3 Gbit/s, CUBIC, 10 s", ["links.1.rate_bps=3e9"]),
             ("milliproxy", "milliproxy route, 1 UE, CUBIC, 10 s", ["flows.0.cc=cubic"])]
    print(f"machine: {machine()}")
    print(f"command: make bench  (bench/simulator.py --runs {args.runs})")
    print(f"{'case':34} {'wall s':>8} {'events':>12} {'events/s':>12} {'sim s / wall s':>15} {'goodput Gbit/s':>15}")
    for scenario, label, overrides in cases:
        results = [millinet.run(scenario, overrides=overrides + args.overrides) for _ in range(args.runs)]
        wall = statistics.median(r.summary["sim"]["wall_s"] for r in results)
        events = results[0].summary["sim"]["events"]
        sim_s = results[0].summary["sim"]["sim_time_s"]
        goodput = results[0].summary["flows"][0]["goodput_bps"] / 1e9
        print(f"{label:34} {wall:8.3f} {events:12d} {events / wall:12.3e} {sim_s / wall:15.1f} {goodput:15.3f}")


if __name__ == "__main__":
    main()
