"""Cross-check the simulator against real Linux TCP through the emulator (issue 15, item 7).

    .venv/bin/python crosscheck/linux.py                      # the whole table (about 4 minutes)
    .venv/bin/python crosscheck/linux.py --rate 1e8 --cc cubic --duration 5

Each case runs twice on the same scenario, seed and capacity: in the simulator (millinet's
own TCP) and in the emulator (the kernel's TCP over the same path, whose hops and radio the
link emulates from the same models). The dumbbell cases are those of the ns-3 cross-check
(crosscheck/run.py) at 100 Mbit/s and 1 Gbit/s, queue 1 and 0.1 BDP, CUBIC and
NewReno (the kernel's `reno`), constant and switching rate (R and R/10 every second), MSS
1400, with Linux-like cwnd growth (only while cwnd-limited);
the milliproxy route runs for fixed seeds; MP-TCP (issue 17) runs the shipped `mptcp` and
`mptcp-73` scenarios, kernel MPTCP with a subflow per radio, uncoupled CUBIC and the project's
BPF LIA, OLIA and BALIA against the simulator's. "mean RTT" is, on both sides, the time average of
the smoothed RTT in the flows table (every 10 ms): the simulator's summary averages its
per-ACK samples, which weights the fast periods of a switching or mmWave path over the slow
ones, and Linux gives no per-ACK samples. Prints the side-by-side table (millinet / Linux),
writes it to OUT/table.md with a cwnd overlay per case; docs/validation.md has the results.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crosscheck import run as ns3check  # noqa: E402

DUMBBELL_CCS = ("cubic", "newreno", "highspeed")
ROUTE_SEEDS = (1, 2)
ROUTE_DURATION_S = 10.0
MPTCP_SCENARIOS = ("mptcp", "mptcp-73")
MPTCP_CCS = ("cubic", "lia", "olia", "balia")
MPTCP_DURATION_S = 5.0


@dataclass(frozen=True)
class MptcpCase:
    """An MP-TCP scenario (a subflow per radio) with one congestion control and seed."""

    scenario: str
    cc: str
    seed: int
    duration_s: float

    @property
    def name(self) -> str:
        return f"{self.scenario}-{self.cc}-seed{self.seed}-{self.duration_s:g}s"


def mptcp_row(case: MptcpCase) -> str:
    """One table row: aggregate goodput and each path's throughput (the bytes its subflow's
    peer acknowledged over the run), millinet / Linux with the difference, retransmissions,
    and how late the emulator's link ran."""
    import millinet

    overrides = {"duration_s": case.duration_s, "seed": case.seed, "flows.0.cc": case.cc}
    simulated = millinet.run(case.scenario, overrides=overrides)
    emulated = millinet.emulate(case.scenario, overrides=overrides)

    def figures(summary: dict) -> tuple[float, list[float], int]:
        flow = summary["flows"][0]
        paths = sorted(flow["mptcp"]["subflows"], key=lambda s: s["ue"])
        return flow["goodput_bps"], [p["acked_bytes"] * 8 / case.duration_s for p in paths], flow["retransmits"]

    (sim_goodput, sim_paths, sim_retx), (emu_goodput, emu_paths, emu_retx) = figures(simulated.summary), figures(emulated.summary)

    def pair(ours: float, linux: float) -> str:
        diff = f"{(ours - linux) / linux:+.0%}" if linux > 0 else "–"
        return f"{ours / 1e6:.0f} / {linux / 1e6:.0f} ({diff})"

    paths = " | ".join(pair(o, e) for o, e in zip(sim_paths, emu_paths))
    link = emulated.summary["emulator"]
    late = f"{link['max_lateness_ms']:.1f} ms, {link['frames_over_1ms_late']} frames > 1 ms"
    # What held the kernel's sender back: RTOs per path, and the send buffer.
    flow = emulated.summary["flows"][0]
    rtos = "/".join(str(s["rtos"]) for s in sorted(flow["mptcp"]["subflows"], key=lambda s: s["ue"]))
    held = f"RTOs {rtos}, send buffer {flow['sender_limits']['sndbuf_limited_s']:.1f} s"
    return f"| {case.name} | {pair(sim_goodput, emu_goodput)} | {paths} | {sim_retx} / {emu_retx} | {late} | {held} |"


def mptcp_table(cases: list[MptcpCase]) -> str:
    lines = [
        "| case | goodput Mbit/s millinet / Linux (diff) | 28 GHz path | second path | retransmits | link lateness (max, frames) | Linux sender |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        print(f"{case.name} ...", flush=True)
        lines.append(mptcp_row(case))
    return "\n".join(lines)


@dataclass(frozen=True)
class RouteCase:
    """The milliProxy study's route (no proxy) for one seed: the mmWave channel and RAN."""

    cc: str
    seed: int
    duration_s: float

    @property
    def name(self) -> str:
        return f"milliproxy-route-{self.cc}-seed{self.seed}-{self.duration_s:g}s"


def dumbbell_cases(duration_s: float | None) -> list[ns3check.Case]:
    settings = [(1e8, 20.0), (1e9, 10.0)]
    return [
        ns3check.Case(cc, rate, switching, queue_bdp, 1400, duration_s or default_s)
        for rate, default_s in settings
        for cc in DUMBBELL_CCS
        for switching in (False, True)
        for queue_bdp in (1.0, 0.1)
    ]


def scenario_of(case) -> tuple[str, dict]:
    """The shipped scenario and overrides both sides run."""
    # The kernel's receiver delays its ACKs as Linux does (the emulator sets no `quickack`
    # route), and the simulator's receiver runs Linux's rules, its default.
    receiver = {"flows.0.delayed_ack": "linux"}
    if isinstance(case, RouteCase):
        overrides = {"duration_s": case.duration_s, "seed": case.seed, "flows.0.cc": case.cc, "outputs.sample_step_s": 0.01}
        return "milliproxy", overrides | receiver
    overrides = ns3check.millinet_overrides(case)
    # Linux runs the simulator's defaults where the ns-3 cross-check turns them off: it grows
    # cwnd only while it limits the sender (tcp_is_cwnd_limited), undoes a spurious timeout,
    # leaves CUBIC's slow start by HyStart, runs its own CUBIC, reduces the window in
    # recovery by PRR and finds losses by RACK-TLP.
    for key in ("cwnd_growth", "undo_spurious_rto", "hystart", "cubic_variant", "prr", "loss_detection"):
        del overrides[f"flows.0.{key}"]
    return "dumbbell-switching" if case.switching else "dumbbell", overrides | receiver


def run_both(case) -> ns3check.Row:
    import millinet

    scenario, overrides = scenario_of(case)
    simulated = millinet.run(scenario, overrides=overrides)
    emulated = millinet.emulate(scenario, overrides=overrides)
    linux_metrics, our_metrics = (metrics(r) for r in (emulated, simulated))
    row = ns3check.Row(case, linux_metrics, our_metrics)
    ours, linux = (cwnd_series(r) for r in (simulated, emulated))
    row.cwnd_nrmsd, row.cwnd_corr = ns3check.cwnd_agreement(ours, linux, case.duration_s)
    link = emulated.summary["emulator"]
    row.reductions = (ssthresh_reductions(simulated), ssthresh_reductions(emulated))
    row.note = f"link at most {link['max_lateness_ms']:.1f} ms late; ssthresh reductions {row.reductions[0]} / {row.reductions[1]}"
    row.series = (ours, linux)
    return row


def metrics(result) -> dict:
    """The flow's summary figures, with the RTT as the time average of its smoothed RTT."""
    flows = result.series["flows"]
    srtt = flows[(flows["flow"] == 0) & (flows["t"] >= ns3check.COMPARE_FROM_S) & (flows["srtt_ms"] > 0)]["srtt_ms"]
    return ns3check.flow_metrics(result.summary["flows"][0]) | {"rtt_ms_mean": float(srtt.mean())}


def ssthresh_reductions(result) -> int:
    """How many times the flow's ssthresh went down in its sampled series: its multiplicative
    decreases (two reductions within one sampling step count once, on both sides alike)."""
    flows = result.series["flows"]
    ssthresh = flows[flows["flow"] == 0]["ssthresh_bytes"]
    # Unsigned columns: differences in float, where "none yet" (u64::MAX) stays the largest.
    return int((ssthresh.astype(float).diff() < 0).sum())


def cwnd_series(result) -> pd.DataFrame:
    flows = result.series["flows"]
    return flows[flows["flow"] == 0][["t", "cwnd_bytes"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cc", nargs="+", choices=DUMBBELL_CCS, help="only these algorithms")
    parser.add_argument("--rate", nargs="+", type=float, help="only these dumbbell rates (bit/s)")
    parser.add_argument("--mode", choices=["const", "switch"], help="only constant or switching rate")
    parser.add_argument("--duration", type=float, help="override every case's duration (s)")
    parser.add_argument("--no-route", action="store_true", help="no milliproxy route cases")
    parser.add_argument("--mptcp", choices=["with", "without", "only"], default="with", help="the MP-TCP cases too, not, or alone")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "crosscheck-linux", help="plots and table.md")
    args = parser.parse_args(argv)

    cases: list = [
        c
        for c in dumbbell_cases(args.duration)
        if (not args.cc or c.cc in args.cc)
        and (not args.rate or c.rate_bps in args.rate)
        and (not args.mode or c.switching == (args.mode == "switch"))
        and args.mptcp != "only"
    ]
    if not args.no_route and args.mptcp != "only":
        ccs = args.cc or DUMBBELL_CCS
        cases += [RouteCase(cc, seed, args.duration or ROUTE_DURATION_S) for cc in ccs for seed in ROUTE_SEEDS]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in cases:
        print(f"{case.name} ...", flush=True)
        row = run_both(case)
        ns3check.plot_cwnd(case, row.series[0], row.series[1], args.out, reference="Linux (emulator)")
        rows.append(row)
    table = ns3check.format_table(rows, reference="Linux") if rows else ""
    table += "\n\n" + "\n".join(f"- {r.case.name}: {r.note}" for r in rows)
    if args.mptcp != "without":
        mptcp_cases = [MptcpCase(scenario, cc, seed, args.duration or MPTCP_DURATION_S) for scenario in MPTCP_SCENARIOS for cc in MPTCP_CCS for seed in ROUTE_SEEDS]
        table += "\n\n" + mptcp_table(mptcp_cases)
    ns3check.write_table(table.strip(), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
