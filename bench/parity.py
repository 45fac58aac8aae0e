"""The simulator against the emulator (real Linux TCP) on every shipped scenario, same seed:
per flow goodput, RAN latency and retransmissions, and the handovers and bearer switches
(time and cells), as one Markdown table (issue 33; docs/validation.md, "Simulator and
emulator on every scenario"). Root only (the emulator). `make parity` runs it.

    sudo .venv/bin/python bench/parity.py [--duration-s S] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time

import millinet
from millinet.catalog import scenarios


def mbit(bps: float | None) -> str:
    return "–" if bps is None else f"{bps / 1e6:.1f}"


def ms(latency: dict | None) -> str:
    return "–" if not latency or latency.get("mean") is None else f"{latency['mean']:.2f}"


def ratio(emulated: float | None, simulated: float | None) -> str:
    if not emulated or not simulated:
        return "–"
    return f"{emulated / simulated:.2f}"


def moves(summary: dict) -> str:
    """The run's handovers and bearer switches: time, kind and cells."""
    kinds = {"handover": "HO", "switch_to_anchor": "→LTE", "switch_from_anchor": "←LTE"}
    entries = [f"{m['t_s']:.3f} {kinds.get(m['kind'], m['kind'])} {m['from']}→{m['to']}" for m in summary.get("mobility", [])]
    return "; ".join(entries) if entries else "none"


def rows(name: str, simulated: dict, emulated: dict) -> list[str]:
    lines = []
    for k, (s, e) in enumerate(zip(simulated["flows"], emulated["flows"])):
        label = name if k == 0 else ""
        lines.append(
            f"| {label} | {k} ({s['kind']}, {s['cc']}) | {mbit(s['goodput_bps'])} | {mbit(e['goodput_bps'])} | "
            f"{ratio(e['goodput_bps'], s['goodput_bps'])} | {ms(s.get('ran_latency_ms'))} | {ms(e.get('ran_latency_ms'))} | "
            f"{s.get('retransmits', '–')} | {e.get('retransmits', '–')} |"
        )
    mobility_s, mobility_e = moves(simulated), moves(emulated)
    if mobility_s != "none" or mobility_e != "none":
        lines.append(f"| | mobility | simulator: {mobility_s} | emulator: {mobility_e} | | | | | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration-s", type=float, help="run every scenario this long instead of its own duration")
    parser.add_argument("--only", nargs="*", help="these scenarios only")
    args = parser.parse_args()
    names = [name for name, _ in scenarios() if not args.only or name in args.only]
    overrides = {"duration_s": args.duration_s} if args.duration_s else {}
    print("| scenario | flow | goodput sim (Mbit/s) | goodput emu | emu / sim | RAN latency sim (ms, mean) | RAN latency emu | retransmits sim | retransmits emu |")
    print("|---|---|---|---|---|---|---|---|---|")
    lateness = {}
    for name in names:
        started = time.monotonic()
        simulated = millinet.run(name, overrides=overrides).summary
        emulated = millinet.emulate(name, overrides=overrides).summary
        lateness[name] = (emulated["emulator"]["max_lateness_ms"], emulated["emulator"]["frames_over_1ms_late"], time.monotonic() - started)
        print("\n".join(rows(name, simulated, emulated)), flush=True)
    print("\nThe emulator's link, per scenario: worst lateness (ms), frames written over 1 ms late, wall time of both runs (s)")
    for name, (worst_ms, late, wall_s) in lateness.items():
        print(f"- {name}: {worst_ms:.2f} ms, {late} frames, {wall_s:.0f} s")


if __name__ == "__main__":
    main()
