"""Speed of the emulator (issue 15), on this machine, as root:

(g) the link's maximum forwarding rate: the dumbbell with every link at 100 Gbit/s and 1 ms
    (so the link process, the kernel's TCP and the two cores are the only limits), CUBIC, 5 s:
    goodput, frames and segments per second through the link, its worst lateness; next to it
    the simulator on the same scenario (simulated seconds per wall second);
(h) a constant 3.2 Gbit/s bottleneck with a 1-BDP queue (the issue's speed goal): Linux
    CUBIC's goodput as a share of the payload rate the link allows;
(i) the milliproxy route (geometric channel, 3.2 Gbit/s peak, CUBIC, 10 s) unscaled: goodput and
    how late the link ever was.

Each figure is one emulation (real time: a median would multiply minutes); the load average is
printed next to it, since other jobs on the cores disturb a real-time link.
"""

from __future__ import annotations

import os
import sys
import time

import millinet

sys.path.insert(0, os.path.dirname(__file__))
from simulator import load, machine  # noqa: E402

MSS_BYTES = 1400
SEGMENT_WIRE_BYTES = MSS_BYTES + 52  # IPv4 + TCP + timestamps


def lateness(summary: dict) -> str:
    e = summary["emulator"]
    return f"link at most {e['max_lateness_ms']:.2f} ms late, {e['frames_over_1ms_late']} frames over 1 ms"


def bench_forwarding() -> None:
    duration_s = 5.0
    overrides = {
        "duration_s": duration_s,
        "links.0.rate_bps": 100e9,
        "links.0.delay_s": 0.001,
        "links.1.rate_bps": 100e9,
        "links.1.delay_s": 0.001,
        "links.1.queue_bytes": 100_000_000,
    }
    emulated = millinet.emulate("dumbbell", overrides=overrides)
    started = time.perf_counter()
    simulated = millinet.run("dumbbell", overrides=overrides)
    sim_wall_s = time.perf_counter() - started
    s = emulated.summary
    goodput = s["flows"][0]["goodput_bps"]
    server = next(h for h in s["emulator"]["hosts"] if h["node"] == "server")
    frames_per_s = server["frames_read"] / duration_s
    print(f"\n(g) maximum forwarding rate (every link 100 Gbit/s, 1 ms; CUBIC, {duration_s:g} s)  {load()}")
    print(
        f"emulator:  {goodput / 1e9:.2f} Gbit/s goodput, {frames_per_s / 1e3:.1f} k frames/s down "
        f"({goodput / 8 / MSS_BYTES / 1e3:.0f} k segments/s, {goodput / 8 / frames_per_s / 1e3:.1f} kB per frame); {lateness(s)}"
    )
    print(
        f"simulator: {simulated.summary['flows'][0]['goodput_bps'] / 1e9:.2f} Gbit/s goodput on the same scenario, "
        f"{duration_s / sim_wall_s:.2f} simulated s per wall s"
    )


def bench_bottleneck() -> None:
    rate_bps, rtt_s = 3.2e9, 0.022
    overrides = {"duration_s": 10.0, "links.1.rate_bps": rate_bps, "links.1.queue_bytes": int(rate_bps * rtt_s / 8)}
    s = millinet.emulate("dumbbell", overrides=overrides).summary
    goodput = s["flows"][0]["goodput_bps"]
    payload_rate = rate_bps * MSS_BYTES / SEGMENT_WIRE_BYTES
    print(f"\n(h) 3.2 Gbit/s bottleneck, 1 BDP queue, CUBIC, 10 s  {load()}")
    print(f"goodput {goodput / 1e9:.3f} Gbit/s = {goodput / rate_bps:.1%} of 3.2 Gbit/s, {goodput / payload_rate:.1%} of the payload rate; {lateness(s)}")


def bench_route() -> None:
    s = millinet.emulate("milliproxy", overrides={"flows.0.cc": "cubic"}).summary
    ue = s["ues"][0]
    print(f"\n(i) milliproxy route, CUBIC, 10 s, unscaled  {load()}")
    print(
        f"goodput {s['flows'][0]['goodput_bps'] / 1e9:.3f} Gbit/s, utilization {ue['utilization']:.2f}, "
        f"RAN latency p95 {ue['ran_latency_ms']['p95']:.1f} ms; {lateness(s)}"
    )


def main() -> None:
    print(f"machine: {machine()}")
    print(f"command: bench/emulator.py   ({load()} at start)")
    bench_forwarding()
    bench_bottleneck()
    bench_route()


if __name__ == "__main__":
    main()
