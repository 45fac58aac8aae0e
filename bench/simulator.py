"""Speed of the simulator (issue 7), measured side by side on this machine:

(a) the dumbbell at 1 and 3 Gbit/s (CUBIC, 10 s) against the ns-3 program of the cross-check
    harness (crosscheck/run.py builds it; both sides get its parameter mapping);
(b) one UE on the milliproxy route (3.2 Gbit/s peak, CUBIC, 10 s), without and with
    milliProxy at the gNB, and without the PGW's forwarding (what a wired hop costs):
    simulated seconds per wall second on one core, and the peak resident memory of one run
    with and without milliProxy at 10 s and at 60 s (a fresh process each);
(c) the milliProxy study's core grid (8 points x 50 paired seeds, NewReno, arms none and
    gnb = 800 runs) on 2 local workers: wall time (about five minutes; --study runs only this);
(d) one train run (issue 13): 1 UE at 30 m/s for 60 s past four mmWave gNBs with an LTE
    anchor (handovers, bearer switches, fast fading), CUBIC at MSS 1400 and 14000: simulated
    seconds per wall second on one core (--train runs only this);
(e) one mptcp run (issue 14): a device 100 m from co-located cells, 10 s, LIA over 28 GHz +
    LTE and over 28 + 73 GHz, against single-path CUBIC over the 28 GHz radio alone measured
    alongside: simulated seconds per wall second on one core (--mptcp runs only this);
(f) the urban scenario (issue 18) with its ten UEs on one cell, and with ten copies of them
    (100 UEs, each with its own flow), 10 s, CUBIC: simulated seconds per wall second on one
    core (--urban runs only this);
(j) the dense-urban scenario (issue 35): 8 micro gNBs on one carrier, 100 UEs with handover,
    10 s, CUBIC, with the cells interfering and without, the ratio of the two measured in the
    same run: what interference costs (--dense runs only this).

millinet figures are medians over --runs runs in one process (wall time of the event loop,
"warm"); (a) and (b) also give the median over --runs `millinet run` commands, each a fresh
process, as a user times one run ("fresh": first-use costs included, issue 21);
ns-3 is slow, so it runs once per rate and simulates only the first --ns3-seconds, and the
ratios compare it with millinet on the same window, in wall seconds and in CPU seconds
(robust to other jobs sharing the cores); at 1 Gbit/s ns-3 also runs the whole duration, for
the ratio a user timing both tools would see. (instructions) counts the instructions of the
dumbbell at 1 Gbit/s and of (b)'s three cases under callgrind, without Python: the figure other
jobs and the CPU's clock leave alone (--instructions runs only this). Nothing is cached: every figure is
measured now. Prints machine, versions and the load average next to each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import tomli_w

import millinet
from millinet._toml import tomllib
from millinet.catalog import scenario_path
from millinet.runner import override_list
from millinet.sweep import load_sweep, run_sweep

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from crosscheck import run as crosscheck  # noqa: E402

DURATION_S = 10.0
DUMBBELL_QUEUE_BYTES = 10_000_000
STUDY_SWEEP = ROOT / "python" / "millinet" / "sweeps" / "milliproxy.toml"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    try:
        ns3 = f"ns-3 {crosscheck.ns3_version()}"
    except crosscheck.Ns3Missing:
        ns3 = "ns-3 not installed"
    return f"{cpu} x {os.cpu_count()}; {platform.system()} {platform.release()}; {rustc}; Python {platform.python_version()}; {ns3}"


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def dumbbell_case(rate_bps: float) -> crosscheck.Case:
    """The dumbbell scenario's own bottleneck (10 MB drop-tail, MSS 1400) as a cross-check case."""
    queue_bdp = DUMBBELL_QUEUE_BYTES / (rate_bps * crosscheck.BASE_RTT_S / 8)
    return crosscheck.Case("cubic", rate_bps, False, queue_bdp, 1400, DURATION_S)


def median_run(runs: int, scenario: str, overrides) -> dict:
    """The summary of the run with the median wall time."""
    summaries = sorted((millinet.run(scenario, overrides=overrides).summary for _ in range(runs)), key=lambda s: s["sim"]["wall_s"])
    return summaries[len(summaries) // 2]


def fresh_wall_s(runs: int, scenario: str, overrides) -> float:
    """Median event-loop wall time of `millinet run`, a fresh process each time."""
    sets = [arg for override in override_list(overrides) for arg in ("--set", override)]
    taken = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            command = [sys.executable, "-m", "millinet", "run", scenario, *sets, "--quiet", "--out", str(out)]
            subprocess.run(command, check=True, capture_output=True)
            taken.append(json.loads((out / "summary.json").read_text())["sim"]["wall_s"])
    return statistics.median(taken)


def ns3_seconds_taken(case: crosscheck.Case, timeout_s: float) -> tuple[float, float]:
    """(wall, CPU) seconds of one ns-3 run of `case`, process start and topology included.
    CPU time is what the comparison uses when other jobs share the cores."""
    binary = crosscheck.ns3_binary()  # the program is built once; its runs are never cached
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [str(binary), *crosscheck.ns3_args(case), f"--out={tmp}/summary.json", f"--cwndOut={tmp}/cwnd.csv"],
            check=True,
            capture_output=True,
            timeout=timeout_s,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def median_cpu_s(runs: int, scenario: str, overrides) -> float:
    """Median CPU seconds of this process for one whole millinet.run (scenario build,
    event loop and outputs included, like the ns-3 side)."""
    taken = []
    for _ in range(runs):
        started = time.process_time()
        millinet.run(scenario, overrides=overrides)
        taken.append(time.process_time() - started)
    return statistics.median(taken)


def bench_dumbbell(runs: int, ns3_seconds: float | None) -> None:
    """(a); without `ns3_seconds`, millinet's fresh and warm figures only."""
    title = f"\n(a) dumbbell, CUBIC, cross-check parameters (crosscheck/run.py), {DURATION_S:g} s"
    columns = f"{'rate':>9} {'warm s':>7} {'fresh s':>7} {'events':>11} {'events/s':>9} {'sim s/wall s':>12} |"
    if ns3_seconds is None:
        print(f"{title}, millinet only (median of --runs)\n{columns}  load")
    else:
        print(f"{title}. ns-3 runs once per rate and simulates only the first {ns3_seconds:g} s,\n    so the ratios compare both on "
              "that window (millinet runs it too, median of --runs), in wall and in CPU seconds (CPU: robust to other jobs on the cores)")
        print(f"{columns} {'first':>5} {'millinet wall/CPU':>17} {'ns-3 wall/CPU':>14} {'ns-3/millinet wall, CPU':>23}  load")
    whole = []
    for rate_bps in (1e9, 3e9):
        case = dumbbell_case(rate_bps)
        summary = median_run(runs, "dumbbell", crosscheck.millinet_overrides(case))
        wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
        fresh = fresh_wall_s(runs, "dumbbell", crosscheck.millinet_overrides(case))
        figures = f"{rate_bps / 1e9:>4g} Gb/s {wall:7.3f} {fresh:7.3f} {events:11d} {events / wall:9.3e} {DURATION_S / wall:12.1f} |"
        if ns3_seconds is None:
            print(f"{figures}  {load()}", flush=True)
            continue
        window = replace(case, duration_s=ns3_seconds)
        ours_wall = median_run(runs, "dumbbell", crosscheck.millinet_overrides(window))["sim"]["wall_s"]
        ours_cpu = median_cpu_s(runs, "dumbbell", crosscheck.millinet_overrides(window))
        # millinet's figures first: ns-3's window at 3 Gbit/s can take longer than one is willing to wait.
        print(f"{figures} {ns3_seconds:4g}s {ours_wall:8.3f}/{ours_cpu:.3f} ", end="", flush=True)
        try:
            ns3_wall, ns3_cpu = ns3_seconds_taken(window, crosscheck.ns3_timeout_s(case))
        except crosscheck.Ns3Missing as error:
            print(f"ns-3: {error}")
            continue
        print(f"{ns3_wall:7.1f}/{ns3_cpu:.1f} {ns3_wall / ours_wall:14.0f}, {ns3_cpu / ours_cpu:.0f}  {load()}", flush=True)
        if rate_bps == 1e9:
            whole.append((case, wall, median_cpu_s(runs, "dumbbell", crosscheck.millinet_overrides(case))))
    # ns-3's first seconds are its slowest per simulated second (slow start's losses), so the
    # window's ratio flatters millinet; the whole run at 1 Gbit/s is the fair one (issue 21).
    for case, ours_wall, ours_cpu in whole:
        ns3_wall, ns3_cpu = ns3_seconds_taken(case, crosscheck.ns3_timeout_s(case))
        print(f"whole {DURATION_S:g} s at {case.rate_bps / 1e9:g} Gb/s: millinet {ours_wall:.3f} s wall / {ours_cpu:.3f} s CPU, "
              f"ns-3 {ns3_wall:.1f} / {ns3_cpu:.1f}: ns-3/millinet {ns3_wall / ours_wall:.0f} (wall), {ns3_cpu / ours_cpu:.0f} (CPU)  {load()}",
              flush=True)


def route_without_pgw(path: Path) -> Path:
    """The milliproxy route with its PGW removed, written to `path`: the server's link goes
    straight to the gNB with both wired delays, so packets cross one wired hop instead of two.
    Against the route it measures what forwarding through a node costs (the route's floor in
    BENCHMARKS.md)."""
    doc = tomllib.loads(scenario_path("milliproxy").read_text())
    internet, backhaul = doc["links"]
    doc["nodes"] = [node for node in doc["nodes"] if node["name"] != backhaul["a"]]
    doc["links"] = [{**internet, "b": backhaul["b"], "delay_s": internet["delay_s"] + backhaul["delay_s"]}]
    path.write_text(tomli_w.dumps(doc))
    return path


def route_cases(tmp: Path) -> tuple[tuple[str, Path, list[str]], ...]:
    """(label, scenario file, overrides) of (b), 10 s each."""
    route = scenario_path("milliproxy")
    common = ["flows.0.cc=cubic", f"duration_s={DURATION_S}"]
    return (
        ("no proxy", route, common),
        ("milliProxy at the gNB", route, [*common, "proxy.node=gnb"]),
        ("no proxy, PGW removed", route_without_pgw(tmp / "route-without-pgw.toml"), common),
    )


def bench_route(runs: int) -> None:
    print(f"\n(b) milliproxy route, 1 UE (3.2 Gbit/s peak), CUBIC, {DURATION_S:g} s, one core; the last row without the PGW's "
          "forwarding (one wired hop, same delay)")
    print(f"{'case':22} {'warm s':>8} {'fresh s':>8} {'events':>12} {'events/s':>10} {'sim s / wall s':>15} {'goodput Gbit/s':>15}  load")
    with tempfile.TemporaryDirectory() as tmp:
        for label, scenario, overrides in route_cases(Path(tmp)):
            summary = median_run(runs, str(scenario), overrides)
            wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
            fresh = fresh_wall_s(runs, str(scenario), overrides)
            goodput = summary["flows"][0]["goodput_bps"] / 1e9
            print(f"{label:22} {wall:8.3f} {fresh:8.3f} {events:12d} {events / wall:10.3e} {DURATION_S / wall:15.1f} {goodput:15.3f}  {load()}", flush=True)


TRAIN_DURATION_S = 60.0


def bench_train(runs: int) -> None:
    print(f"\n(d) train, 1 UE, 4 mmWave gNBs + LTE anchor, CUBIC, {TRAIN_DURATION_S:g} s, one core")
    print(f"{'case':22} {'wall s':>8} {'events':>12} {'events/s':>10} {'sim s / wall s':>15} {'goodput Gbit/s':>15} {'switches':>9}  load")
    for mss in (1400, 14000):
        summary = median_run(runs, "train", [f"flows.0.mss_bytes={mss}", f"duration_s={TRAIN_DURATION_S}"])
        wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
        goodput = summary["flows"][0]["goodput_bps"] / 1e9
        switches = len(summary["mobility"])
        label = f"MSS {mss}"
        print(f"{label:22} {wall:8.3f} {events:12d} {events / wall:10.3e} {TRAIN_DURATION_S / wall:15.1f} {goodput:15.3f} {switches:9d}  {load()}", flush=True)


MPTCP_DURATION_S = 10.0


def bench_mptcp(runs: int) -> None:
    print(f"\n(e) mptcp, one device 100 m from the cells, Markov blockage, {MPTCP_DURATION_S:g} s, one core")
    print(f"{'case':28} {'wall s':>8} {'events':>12} {'events/s':>10} {'sim s / wall s':>15} {'goodput Gbit/s':>15} {'wall / single':>14}  load")
    cases = {
        "single-path CUBIC, 28 GHz": ("mptcp", ["flows.0.kind=tcp"]),
        "LIA, 28 GHz + LTE": ("mptcp", ["flows.0.cc=lia"]),
        "LIA, 28 + 73 GHz": ("mptcp-73", ["flows.0.cc=lia"]),
    }
    single_wall = None
    for label, (scenario, overrides) in cases.items():
        summary = median_run(runs, scenario, [*overrides, f"duration_s={MPTCP_DURATION_S}"])
        wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
        single_wall = single_wall or wall
        goodput = summary["flows"][0]["goodput_bps"] / 1e9
        print(f"{label:28} {wall:8.3f} {events:12d} {events / wall:10.3e} {MPTCP_DURATION_S / wall:15.1f} {goodput:15.3f} {wall / single_wall:14.2f}  {load()}", flush=True)


URBAN_DURATION_S = 10.0


def urban_scenario(path: Path, copies: int, copy_flows: bool = True) -> Path:
    """The urban scenario with `copies` times its UEs on its one cell, written to `path`:
    each further copy of a UE is a node of its own with the same route and radio settings,
    and (with `copy_flows`) a download of its own from the same server; without, the copies
    are idle. TOML lets the copies' [[nodes]], [[ues]] and [[flows]] follow the original's,
    and JSON's literals are TOML's for the values these tables hold."""
    text = scenario_path("urban").read_text()
    doc = tomllib.loads(text)
    flows = {flow["dst"]: flow for flow in doc["flows"]}
    tables = []
    for copy in range(1, copies):
        for ue in doc["ues"]:
            node = f"{ue['node']}-{copy}"
            tables += [("nodes", {"name": node}), ("ues", {**ue, "node": node})]
            tables += [("flows", {**flows[ue["node"]], "dst": node})] if copy_flows else []
    path.write_text(text + "".join(f"\n[[{name}]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in entry.items()) for name, entry in tables))
    return path


def bench_urban(runs: int) -> None:
    print(f"\n(f) urban, one gNB, UEs in LOS, NLOS and indoors on edge and remote servers, CUBIC, {URBAN_DURATION_S:g} s, one core")
    print(f"{'case':22} {'wall s':>8} {'events':>12} {'events/s':>10} {'sim s / wall s':>15} {'cell Gbit/s':>12}  load")
    with tempfile.TemporaryDirectory() as tmp:
        for copies in (1, 10):
            scenario = urban_scenario(Path(tmp) / f"urban-{copies}.toml", copies)
            summary = median_run(runs, str(scenario), [f"duration_s={URBAN_DURATION_S}"])
            wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
            cell = sum(flow["goodput_bps"] for flow in summary["flows"]) / 1e9
            label = f"{len(summary['ues'])} UEs"
            print(f"{label:22} {wall:8.3f} {events:12d} {events / wall:10.3e} {URBAN_DURATION_S / wall:15.2f} {cell:12.3f}  {load()}", flush=True)


DENSE_DURATION_S = 10.0


def bench_dense(runs: int) -> None:
    print(f"\n(j) dense-urban, 8 micro gNBs on one carrier, 100 UEs with handover, CUBIC, {DENSE_DURATION_S:g} s, one core")
    print(f"{'case':22} {'wall s':>8} {'events':>12} {'events/s':>10} {'sim s / wall s':>15} {'all UEs Gbit/s':>15} {'wall / none':>12}  load")
    none_wall = None
    for arm in ("none", "full"):
        summary = median_run(runs, "dense-urban", [f"interference={arm}", f"duration_s={DENSE_DURATION_S}"])
        wall, events = summary["sim"]["wall_s"], summary["sim"]["events"]
        none_wall = none_wall or wall
        goodput = sum(flow["goodput_bps"] for flow in summary["flows"]) / 1e9
        label = f"interference {arm}"
        print(f"{label:22} {wall:8.3f} {events:12d} {events / wall:10.3e} {DENSE_DURATION_S / wall:15.2f} {goodput:15.3f} {wall / none_wall:12.2f}  {load()}", flush=True)


def peak_rss_mb(duration_s: float, extra: list[str]) -> float:
    """Peak resident memory of a fresh Python process doing one millinet.run of the route
    (interpreter, pandas and pyarrow included), in MB."""
    code = (
        "import resource, millinet\n"
        f"millinet.run('milliproxy', overrides={['flows.0.cc=cubic', f'duration_s={duration_s}', *extra]!r})\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1000


def bench_memory() -> None:
    print("\n(memory) peak RSS of one run of (b), a fresh process each: must not grow with the simulated duration")
    for label, extra in (("no proxy", []), ("milliProxy at the gNB", ["proxy.node=gnb"])):
        figures = "  ".join(f"{d:g} s: {peak_rss_mb(d, extra):.1f} MB" for d in (DURATION_S, 6 * DURATION_S))
        print(f"{label:22} {figures}", flush=True)


def study_core_sweep(path: Path) -> Path:
    """The first part of the milliProxy study sweep, NewReno only, arms none and gnb."""
    doc = tomllib.loads(STUDY_SWEEP.read_text())
    part = doc["parts"][0]
    part["grid"]["flows.0.cc"] = ["newreno"]
    part["arms"] = {arm: part["arms"][arm] for arm in ("none", "gnb")}
    lines = [f'description = "milliProxy study core grid (bench)"', f'scenario = "{doc["scenario"]}"', f"seeds = {doc['seeds']}",
             "[[parts]]", "[parts.grid]"]
    lines += [f'"{key}" = {values!r}'.replace("'", '"') for key, values in part["grid"].items()]
    lines += ["[parts.arms.none]", "[parts.arms.gnb]"]
    lines += [f'"{key}" = "{value}"' for key, value in part["arms"]["gnb"].items()]
    lines += ["[[pairings]]", 'name = "gnb-vs-none"', 'baseline = "none"', 'treatment = "gnb"']
    path.write_text("\n".join(lines) + "\n")
    return path


def bench_instructions() -> None:
    """Instructions of the event loop's cases under callgrind: the one speed figure that other
    jobs on the machine and the CPU's clock do not change (issue 21)."""
    print(f"\n(instructions) callgrind, target/release/examples/profile (no Python), {DURATION_S:g} s each")
    try:
        subprocess.run(["valgrind", "--version"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        print("valgrind is missing (make deps installs it)")
        return
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "millinet-engine", "--example", "profile"], check=True, cwd=ROOT)
    profile = ROOT / "target" / "release" / "examples" / "profile"
    dumbbell = override_list(crosscheck.millinet_overrides(dumbbell_case(1e9)))
    print(f"{'case':30} {'instructions':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("dumbbell 1 Gbit/s", scenario_path("dumbbell"), dumbbell)]
        cases += [(f"route, {label}", scenario, overrides) for label, scenario, overrides in route_cases(Path(tmp))]
        for label, scenario, overrides in cases:
            command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(profile), str(scenario), *overrides]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            collected = next(line.split("Collected :")[1].strip() for line in done.stderr.splitlines() if "Collected :" in line)
            print(f"{label:30} {int(collected):15,d}", flush=True)


def bench_study(workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sweep = load_sweep(study_core_sweep(Path(tmp) / "core.toml"))
        runs = len(sweep.runs())
        print(f"\n(c) milliProxy study core grid: {runs} runs on {workers} local workers, store in a temporary directory")
        started = time.perf_counter()
        run_sweep(sweep, Path(tmp) / "store", engine="local", workers=workers, quiet=True)
        wall = time.perf_counter() - started
        print(f"wall {wall:.0f} s ({wall / 60:.1f} min), {workers * wall / runs:.2f} core-s per run  {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="millinet runs per figure (the median is shown)")
    parser.add_argument("--ns3-seconds", type=float, default=2.0, help="simulated seconds of each ns-3 run")
    parser.add_argument("--study", action="store_true", help="run only (c), the study grid (about five minutes)")
    parser.add_argument("--train", action="store_true", help="run only (d), the train run")
    parser.add_argument("--mptcp", action="store_true", help="run only (e), the mptcp runs")
    parser.add_argument("--urban", action="store_true", help="run only (f), the urban runs with 10 and 100 UEs")
    parser.add_argument("--dense", action="store_true", help="run only (j), the dense-urban runs with and without interference")
    parser.add_argument("--instructions", action="store_true", help="run only the callgrind instruction counts")
    parser.add_argument("--speed", action="store_true", help="run only millinet's fresh and warm figures of (a) and (b), without ns-3 (a few minutes)")
    parser.add_argument("--workers", type=int, default=2, help="local workers for (c)")
    args = parser.parse_args()
    command = " ".join(["bench/simulator.py", *sys.argv[1:]])
    print(f"machine: {machine()}")
    print(f"command: {command}   ({load()} at start)")
    if args.train:
        bench_train(args.runs)
        return
    if args.mptcp:
        bench_mptcp(args.runs)
        return
    if args.urban:
        bench_urban(args.runs)
        return
    if args.dense:
        bench_dense(args.runs)
        return
    if args.instructions:
        bench_instructions()
        return
    if args.speed:
        bench_dumbbell(args.runs, None)
        bench_route(args.runs)
        return
    if not args.study:
        bench_dumbbell(args.runs, args.ns3_seconds)
        bench_route(args.runs)
        bench_instructions()
        bench_memory()
        bench_train(args.runs)
        bench_mptcp(args.runs)
        bench_urban(args.runs)
        bench_dense(args.runs)
    bench_study(args.workers)


if __name__ == "__main__":
    main()
