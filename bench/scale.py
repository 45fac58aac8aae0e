"""How the simulator's speed grows with the number of UEs (issue 38), each figure a fresh
`millinet run` process on one core, as a user times one run:

(targets) the urban cell with its 10 UEs and with 100 (ten copies of each UE, each with its own
    CUBIC download), 10 s; the dense-urban layout scaled to 1000 walking UEs over 24 micro
    gNBs of one carrier (8 x 5 blocks, handover, a CUBIC download each), with and without
    interference, over --dense-seconds (default 1 s: a 10 s run takes a quarter of an hour
    with interference);
(scaling) the urban cell with 10, 30, 100, 300 and 1000 UEs, 10 s: every UE with a download,
    and 10 UEs with a download among idle ones (attached, walking, measured, sampled). The
    plot of both is written to --plot (BENCHMARKS.md shows it).

Each figure is the median over --runs runs of the event loop's wall time (summary.json
`sim.wall_s`), with the whole process's wall time beside it (set-up, Python, writing the
tables). Nothing is cached: every figure is measured now.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulator import load, machine, urban_scenario  # noqa: E402

DURATION_S = 10.0
SCALING_UES = (10, 30, 100, 300, 1000)
ACTIVE_UES = 10


def fresh_run(runs: int, scenario: Path, overrides: list[str]) -> tuple[float, float, int]:
    """Median event-loop wall time, median process wall time and the events of `millinet run`,
    a fresh process each time."""
    sets = [arg for override in overrides for arg in ("--set", override)]
    loops, processes, events = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            started = time.perf_counter()
            command = [sys.executable, "-m", "millinet", "run", str(scenario), *sets, "--quiet", "--out", str(out)]
            subprocess.run(command, check=True, capture_output=True)
            processes.append(time.perf_counter() - started)
            sim = json.loads((out / "summary.json").read_text())["sim"]
            loops.append(sim["wall_s"])
            events = sim["events"]
    return statistics.median(loops), statistics.median(processes), events


def row(label: str, duration_s: float, figures: tuple[float, float, int], target: str = "") -> None:
    loop, process, events = figures
    print(f"{label:44} {loop:8.2f} {process:9.2f} {events:11d} {events / loop:10.3e} {duration_s / loop:9.3f}  {target:8} {load()}", flush=True)


def header() -> None:
    print(f"{'case':44} {'loop s':>8} {'process s':>9} {'events':>11} {'events/s':>10} {'x real':>9}  {'target':8} load")


def dense_scenario(path: Path, duration_s: float) -> Path:
    command = [sys.executable, "-m", "millinet.dense_urban", "--ues", "1000", "--columns", "8", "--rows", "5", "--duration-s", str(duration_s)]
    path.write_text(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return path


def bench_targets(runs: int, dense_seconds: float, tmp: Path) -> None:
    print(f"\n(targets) fresh `millinet run` processes, one core, median of {runs}")
    header()
    for copies, target in ((1, ">= 15"), (10, ">= 10")):
        scenario = urban_scenario(tmp / f"urban-{copies}.toml", copies)
        row(f"urban, {10 * copies} UEs, {DURATION_S:g} s", DURATION_S, fresh_run(runs, scenario, [f"duration_s={DURATION_S}"]), target)
    dense = dense_scenario(tmp / "dense-1000.toml", dense_seconds)
    for arm in ("full", "none"):
        label = f"dense-urban 1000 UEs, 24 cells, {arm}, {dense_seconds:g} s"
        row(label, dense_seconds, fresh_run(1, dense, [f"interference={arm}"]), ">= 1" if arm == "full" else "")


def bench_scaling(runs: int, tmp: Path, plot: Path) -> None:
    print(f"\n(scaling) urban cell, {DURATION_S:g} s, fresh processes, median of {runs}")
    header()
    walls: dict[str, list[float]] = {"every UE downloads": [], f"{ACTIVE_UES} UEs download, the others idle": []}
    for ues in SCALING_UES:
        copies = ues // 10
        for (label, series), flows in zip(walls.items(), (True, False)):
            scenario = urban_scenario(tmp / f"scale-{ues}-{flows}.toml", copies, copy_flows=flows)
            figures = fresh_run(runs, scenario, [f"duration_s={DURATION_S}"])
            series.append(figures[0] / DURATION_S)
            row(f"{ues} UEs, {label}", DURATION_S, figures)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, series in walls.items():
        ax.plot(SCALING_UES, series, marker="o", label=label)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, label="real time")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(SCALING_UES, [str(u) for u in SCALING_UES])
    ax.set_xlabel("UEs on the urban cell")
    ax.set_ylabel("wall seconds per simulated second")
    ax.set_title("Event loop, one core, fresh `millinet run`, 10 s runs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(plot, dpi=110)
    print(f"plot: {plot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per urban figure (the median is shown); dense-urban runs once")
    parser.add_argument("--dense-seconds", type=float, default=1.0, help="simulated seconds of the 1000-UE dense-urban runs")
    parser.add_argument("--plot", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "img" / "benchmarks" / "scale.png", help="where the scaling plot goes")
    parser.add_argument("--scaling-only", action="store_true", help="skip the targets")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"command: {' '.join(['bench/scale.py', *sys.argv[1:]])}   ({load()} at start)")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.scaling_only:
            bench_targets(args.runs, args.dense_seconds, Path(tmp))
        bench_scaling(args.runs, Path(tmp), args.plot)


if __name__ == "__main__":
    main()
