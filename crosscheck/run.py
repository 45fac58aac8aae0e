"""Cross-check millinet against ns-3 on the dumbbell (docs/validation.md#dumbbell, issue 4).

    .venv/bin/python crosscheck/run.py                 # the full case table
    .venv/bin/python crosscheck/run.py --rate 1e8 --cc newreno cubic --out runs/crosscheck
    .venv/bin/python crosscheck/run.py --cached-only    # ns-3 cases not yet cached: pending rows

Both simulators run on the same parameters (the mapping is printed first); ns-3 cases run in
the background, at most --jobs at a time, and their results are cached in .cache/crosscheck/
keyed by a hash of the program, the ns-3 version and the arguments. Prints a side-by-side
table and saves an overlaid cwnd plot per case in --out. docs/validation.md has the results.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "crosscheck"
SOURCE = ROOT / "crosscheck" / "ns3" / "dumbbell.cc"
NS3_MODULES = ["core", "network", "internet", "point-to-point", "applications", "traffic-control"]

# The dumbbell's fixed part (python/millinet/scenarios/dumbbell.toml).
ACCESS_DELAY_S = 0.010
BOTTLENECK_DELAY_S = 0.001
BASE_RTT_S = 2 * (ACCESS_DELAY_S + BOTTLENECK_DELAY_S)
SWITCH_PERIOD_S = 1.0
SAMPLE_STEP_S = 0.01
# cwnd agreement is measured after the handshake, once both senders have a window.
COMPARE_FROM_S = 0.1

NS3_CC = {"newreno": "TcpNewReno", "cubic": "TcpCubic", "highspeed": "TcpHighSpeed", "bbr": "TcpBbr"}

# TCP settings shared by both sides (the dumbbell's flow, docs/models/transport.md §7 defaults).
TCP = {
    "initial_window_segments": 10,
    "min_rto_s": 0.2,
    "delayed_ack": "off",
    "sack": True,
    "timestamps": True,
    "window_scaling": True,
    "rcv_buf_bytes": 1073725440,
}
# millinet's bulk application never runs out of data; ns-3 needs a finite send buffer:
# far above any window reached here (2 x (BDP + queue) at 3 Gbit/s is ~33 MB).
NS3_SND_BUF_BYTES = 128 << 20


class Ns3Missing(RuntimeError):
    """ns-3's development package is not installed."""


@dataclass(frozen=True)
class Case:
    cc: str
    rate_bps: float
    switching: bool
    queue_bdp: float
    mss: int
    duration_s: float

    @property
    def name(self) -> str:
        mode = "switch" if self.switching else "const"
        return f"{self.cc}-{self.rate_bps / 1e6:g}M-{mode}-q{self.queue_bdp:g}bdp-mss{self.mss}-{self.duration_s:g}s"

    @property
    def queue_bytes(self) -> int:
        """Q in bytes: a multiple of the bandwidth-delay product at R (the higher rate)."""
        return round(self.queue_bdp * self.rate_bps * BASE_RTT_S / 8)


def full_table() -> list[Case]:
    """CC x constant/switching x queue {1, 0.1} BDP at each (R, MSS, duration) of issue 4."""
    settings = [(1e8, 1400, 20.0), (1e9, 1400, 10.0), (1e9, 14000, 10.0), (3e9, 14000, 10.0)]
    return [
        Case(cc, rate, switching, q, mss, duration)
        for rate, mss, duration in settings
        for cc in NS3_CC
        for switching in (False, True)
        for q in (1.0, 0.1)
    ]


def millinet_overrides(case: Case) -> dict[str, object]:
    overrides: dict[str, object] = {
        "duration_s": case.duration_s,
        "outputs.sample_step_s": SAMPLE_STEP_S,
        "links.1.rate_bps": case.rate_bps,
        "links.1.queue_bytes": case.queue_bytes,
        "flows.0.cc": case.cc,
        "flows.0.mss_bytes": case.mss,
        # ns-3 grows cwnd on every ACK, cwnd-limited or not (docs/scenario-reference.md).
        "flows.0.cwnd_growth": "always",
        # ns-3 has no undo of a spurious timeout (the drop-tail losses here are real anyway).
        "flows.0.undo_spurious_rto": False,
        # Both run standard slow start: ns-3's TcpCubic HyStart is set off (dumbbell.cc).
        "flows.0.hystart": "off",
        # ns-3's TcpCubic aims one minimum RTT ahead and has no Reno-friendly region;
        # the cross-check was validated with RFC 9438's CUBIC and keeps it.
        "flows.0.cubic_variant": "rfc9438",
        # Both set cwnd = ssthresh on entering recovery (ns-3: TcpClassicRecovery).
        "flows.0.prr": False,
        # Both mark losses by RFC 6675's DupThresh and send no tail loss probe (ns-3 has
        # neither RACK nor TLP).
        "flows.0.loss_detection": "rfc6675",
    }
    if case.switching:
        overrides["links.1.switch_period_s"] = SWITCH_PERIOD_S
        overrides["links.1.switch_rate_bps"] = case.rate_bps / 10
    overrides.update({f"flows.0.{key}": value for key, value in TCP.items()})
    return overrides


def ns3_args(case: Case) -> list[str]:
    args = {
        "cc": NS3_CC[case.cc],
        "rate": case.rate_bps,
        "switchRate": case.rate_bps / 10 if case.switching else 0,
        "switchPeriod": SWITCH_PERIOD_S,
        "queueBytes": case.queue_bytes,
        "accessDelay": ACCESS_DELAY_S,
        "delay": BOTTLENECK_DELAY_S,
        "mss": case.mss,
        "duration": case.duration_s,
        # millinet's receiver opens the connection, so its first data leaves the server
        # three one-way delays after t = 0; ns-3's BulkSend connects from the server, so it
        # starts one one-way delay late to send its first data at the same time.
        "appStart": BASE_RTT_S / 2,
        "initCwnd": TCP["initial_window_segments"],
        "minRto": TCP["min_rto_s"],
        "delAckCount": 1 if TCP["delayed_ack"] == "off" else 2,
        "delAckTimeout": 0.04,
        "sack": TCP["sack"],
        "timestamps": TCP["timestamps"],
        "windowScaling": TCP["window_scaling"],
        "sndBuf": NS3_SND_BUF_BYTES,
        "rcvBuf": TCP["rcv_buf_bytes"],
        "recovery": "TcpClassicRecovery",
        "sampleStep": SAMPLE_STEP_S,
    }
    return [f"--{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in args.items()]


# (parameter, millinet, ns-3, why they are the same thing)
MAPPING = [
    ("topology", "dumbbell scenario: 10 Gbit/s 10 ms, R 1 ms", "3 nodes, 2 PointToPoint links, same rates/delays", "docs/validation.md#dumbbell"),
    ("bottleneck rate R", "links.1.rate_bps", "--rate (DataRate of both devices)", "ns-3 also counts the 2-byte PPP header: 0.14% less IP rate"),
    ("switching", "links.1.switch_period_s=1, switch_rate_bps=R/10", "--switchRate=R/10 --switchPeriod=1 (SetDataRate both ways)", "starts at R, switches at t=1,2,..."),
    ("queue Q (bytes)", "links.1.queue_bytes (waiting packets)", "--queueBytes: DropTailQueue<Packet> MaxSize in BYTES", "ns-3 stops the device queue when < 1 MTU is free"),
    ("MTU", "none: a segment is one packet", "PointToPointNetDevice Mtu = max(1500, MSS + 52)", "no IP fragmentation at MSS 14000"),
    ("queue disc", "none (drop-tail link queue)", "TrafficControlHelper::Uninstall on every device", "the default fq_codel would replace drop-tail"),
    ("access queue", "links.0.queue_bytes = 10 MB", "--accessQueueBytes = 10 MB (default)", "never fills"),
    ("CC", "flows.0.cc", "--cc: TcpNewReno/TcpCubic/TcpHighSpeed/TcpBbr", "BBR: EnablePacing=true"),
    ("HyStart", "hystart=off", "TcpCubic::HyStart=false", "ns-3's HyStart is not Linux's (its own delay thresholds); both run standard slow start"),
    ("CUBIC", "cubic_variant=rfc9438", "TcpCubic (target one delay_min ahead, no Reno-friendly region)", "neither is Linux's; the table below was measured with RFC 9438's"),
    ("MSS (payload)", "flows.0.mss_bytes", "TcpSocket::SegmentSize", "both add 20 IP + 32 TCP (with TS) bytes"),
    ("initial window", "initial_window_segments=10", "TcpSocket::InitialCwnd=10", "RFC 6928"),
    ("min RTO", "min_rto_s=0.2", "TcpSocketBase::MinRto=0.2 s, ClockGranularity=1 ms", "RFC 6298 with a 1 ms clock"),
    ("delayed ACK", 'delayed_ack="off"', "TcpSocket::DelAckCount=1 (2 when on), DelAckTimeout=40 ms", "DelAckCount 1 = ACK every segment; ns-3 has neither Linux's quick ACKs nor its SACK compression (the modern default, \"linux\")"),
    ("SACK", "sack=true", "TcpSocketBase::Sack=true", "RFC 2018/6675"),
    ("lost retransmission", "detected (RFC 8985 §6.2), window lowered again (RFC 5681 §4.3)", "not detected: repaired by the RTO", "a known difference, see below"),
    ("recovery", "prr=false: RFC 6675 (cwnd = ssthresh, pipe)", "TcpL4Protocol::RecoveryType=TcpClassicRecovery", "ns-3 3.37 defaults to PRR (RFC 6937, not 9937's)"),
    ("loss detection", "loss_detection=rfc6675: IsLost (DupThresh), no probe", "TcpSocketBase: DupThresh=3, IsLost", "ns-3 3.37 has neither RACK nor TLP (RFC 8985)"),
    ("timestamps", "timestamps=true", "TcpSocketBase::Timestamp=true", "RTT samples from TSecr (1 ms clock)"),
    ("window scaling", "window_scaling=true", "TcpSocketBase::WindowScaling=true", "RFC 7323"),
    ("receive buffer", "rcv_buf_bytes=1073725440", "TcpSocket::RcvBufSize=1073725440", "= 65535 << 14, never limits"),
    ("send buffer", "bulk app: unlimited", f"TcpSocket::SndBufSize={NS3_SND_BUF_BYTES}, BulkSend SendSize 64 KiB", "never limits"),
    ("cwnd growth", "cwnd_growth=always", "(ns-3 grows on every ACK)", "docs/models/transport.md §3"),
    ("spurious RTO", "undo_spurious_rto=false", "(ns-3 has no undo)", "Linux undoes on the Eifel test"),
    ("connection start", "receiver connects at t=0", "BulkSend connects at t=11 ms", "first data at t=33 ms in both"),
    ("RTT metric", "mean of per-ACK samples (new data ACKed)", "same, from the Rx trace: now - TSecr", "now in ns, TSecr in ms"),
    ("retransmits", "retransmitted segments", "Tx trace: data segment below the highest sent", ""),
    ("RTOs", "RTO expirations", "CongState trace: entries into CA_LOSS", "a backed-off RTO inside CA_LOSS is not counted"),
    ("cwnd series", "flows.cwnd_bytes, outputs.sample_step_s=0.01", "CongestionWindow trace sampled every 10 ms", ""),
]


def print_mapping(file=sys.stdout) -> None:
    widths = [max(len(row[i]) for row in MAPPING) for i in range(3)]
    header = ("parameter", "millinet", "ns-3", "note")
    print("Parameter mapping (millinet <-> ns-3 3.37):", file=file)
    for row in [header, *MAPPING]:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[3], file=file)


def _ns3_flags() -> list[str]:
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        raise Ns3Missing("ns-3 is not installed (no pkg-config or g++): run `make deps`")
    modules = [f"ns3-{m}" for m in NS3_MODULES]
    found = subprocess.run(["pkg-config", "--cflags", "--libs", *modules], capture_output=True, text=True)
    if found.returncode != 0:
        raise Ns3Missing(f"ns-3 is not installed ({found.stderr.strip()}): run `make deps`")
    # Debian's ns3 .pc files carry a broken include flag ("-I/usr\;"): drop it.
    return [flag for flag in found.stdout.split() if ";" not in flag]


def ns3_version() -> str:
    _ns3_flags()
    return subprocess.run(["pkg-config", "--modversion", "ns3-core"], capture_output=True, text=True, check=True).stdout.strip()


def ns3_binary() -> Path:
    """Builds crosscheck/ns3/dumbbell.cc (once per source version) and returns the program."""
    flags = _ns3_flags()
    digest = hashlib.sha256(SOURCE.read_bytes() + ns3_version().encode()).hexdigest()[:16]
    binary = CACHE / f"dumbbell-{digest}"
    if not binary.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        subprocess.run(["g++", "-std=c++17", "-O2", "-o", str(partial), str(SOURCE), *flags], check=True)
        partial.rename(binary)
    return binary


def ns3_timeout_s(case: Case) -> float:
    """A bound on one run's wall time. ns-3's cost follows the bytes carried more than the
    packets (3 Gbit/s with MSS 14000 took 511 s for 10 s of NewReno on a shared core, 1 Gbit/s
    with MSS 1400 about 175 s) and grows several-fold in long SACK recoveries (HighSpeed at
    1 Gbit/s ran for over 40 min): allow 30 min per simulated GB."""
    return 120 + 1800 * case.rate_bps * case.duration_s / 8e9


def ns3_run_dir(case: Case, binary: Path) -> Path:
    key = hashlib.sha256(json.dumps([binary.name, *ns3_args(case)]).encode()).hexdigest()[:16]
    return CACHE / "runs" / f"{case.name}-{key}"


def run_ns3(case: Case, binary: Path, cached_only: bool = False) -> tuple[dict, pd.DataFrame] | None:
    """ns-3's summary and cwnd series for `case`, from the cache when it has them (None if
    it has not and `cached_only`)."""
    args = ns3_args(case)
    run_dir = ns3_run_dir(case, binary)
    summary_path, cwnd_path = run_dir / "summary.json", run_dir / "cwnd.csv"
    if not summary_path.exists():
        if cached_only:
            return None
        run_dir.mkdir(parents=True, exist_ok=True)
        partial = run_dir / "summary.partial"
        subprocess.run(
            [str(binary), *args, f"--out={partial}", f"--cwndOut={cwnd_path}"],
            check=True,
            capture_output=True,
            timeout=ns3_timeout_s(case),
        )
        partial.rename(summary_path)
    return json.loads(summary_path.read_text()), pd.read_csv(cwnd_path)


def run_millinet(case: Case) -> tuple[dict, pd.DataFrame] | str:
    """millinet's flow summary and cwnd series, or why it could not run the case."""
    import millinet

    scenario = "dumbbell-switching" if case.switching else "dumbbell"
    try:
        result = millinet.run(scenario, overrides=millinet_overrides(case))
    except millinet.ScenarioError as error:
        return f"not available in millinet: {str(error).splitlines()[0]}"
    flows = result.series["flows"]
    return result.summary["flows"][0], flows[flows["flow"] == 0][["t", "cwnd_bytes"]]


def cwnd_agreement(ours: pd.DataFrame, ns3: pd.DataFrame, duration_s: float) -> tuple[float, float]:
    """Normalised RMS difference (RMS of the difference / mean ns-3 cwnd) and Pearson
    correlation of the two cwnd series on a common 10 ms grid."""
    grid = np.arange(COMPARE_FROM_S, duration_s - SAMPLE_STEP_S / 2, SAMPLE_STEP_S)
    a = np.interp(grid, ours["t"], ours["cwnd_bytes"])
    b = np.interp(grid, ns3["t"], ns3["cwnd_bytes"])
    nrmsd = float(np.sqrt(np.mean((a - b) ** 2)) / np.mean(b))
    corr = float(np.corrcoef(a, b)[0, 1]) if np.std(a) > 0 and np.std(b) > 0 else math.nan
    return nrmsd, corr


def plot_cwnd(case: Case, ours: pd.DataFrame | None, ns3: pd.DataFrame, out: Path, reference: str = "ns-3 3.37") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(ns3["t"], ns3["cwnd_bytes"] / 1e3, label=reference, lw=1)
    if ours is not None:
        ax.plot(ours["t"], ours["cwnd_bytes"] / 1e3, label="millinet", lw=1)
    if hasattr(case, "queue_bytes"):
        ax.axhline((case.queue_bytes + case.rate_bps * BASE_RTT_S / 8) / 1e3, color="grey", ls=":", lw=0.8, label="BDP + Q")
    ax.set(xlabel="time (s)", ylabel="cwnd (kB)", title=case.name)
    ax.legend(loc="upper right")
    fig.tight_layout()
    path = out / f"{case.name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@dataclass
class Row:
    case: Case
    # The independent implementation's metrics (ns-3's, or Linux's through the emulator).
    reference: dict | None
    millinet: dict | None
    note: str = ""
    cwnd_nrmsd: float = math.nan
    cwnd_corr: float = math.nan

    def diff(self, key: str) -> float:
        """millinet relative to the reference, as a fraction (nan without a millinet result)."""
        if self.millinet is None or self.reference is None:
            return math.nan
        ref = self.reference[key]
        return (self.millinet[key] - ref) / ref if ref else (0.0 if self.millinet[key] == 0 else math.inf)


def flow_metrics(summary: dict) -> dict:
    return {
        "goodput_bps": summary["goodput_bps"],
        "retransmits": summary["retransmits"],
        "rtos": summary["rtos"],
        "rtt_ms_mean": summary["rtt_ms"]["mean"],
    }


def pending_command(case: Case) -> str:
    """The command that runs (and caches) the ns-3 side of one case."""
    return (
        f"crosscheck/run.py --cc {case.cc} --rate {case.rate_bps:g} --mss {case.mss} "
        f"--mode {'switch' if case.switching else 'const'} --queue-bdp {case.queue_bdp:g}"
    )


def compare(cases: list[Case], out: Path, jobs: int = 2, cached_only: bool = False) -> list[Row]:
    """Runs every case on both simulators (ns-3 in `jobs` background processes while
    millinet runs here), writes the cwnd plots into `out` and returns the rows. With
    `cached_only`, ns-3 runs nothing: a case without a cached result is a pending row."""
    binary = ns3_binary()
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each worker drives one ns-3 process
        pending: list[Future] = [pool.submit(run_ns3, case, binary, cached_only) for case in cases]
        ours = {case: run_millinet(case) for case in cases}
        rows = []
        for case, future in zip(cases, pending, strict=True):
            mine = ours[case]
            ns3 = future.result()
            if ns3 is None:
                note = f"ns-3 pending: `{pending_command(case)}`"
                rows.append(Row(case, None, None if isinstance(mine, str) else flow_metrics(mine[0]), note=note))
                continue
            ns3_summary, ns3_cwnd = ns3
            if isinstance(mine, str):
                row = Row(case, ns3_summary, None, note=mine)
                plot_cwnd(case, None, ns3_cwnd, out)
            else:
                summary, cwnd = mine
                row = Row(case, ns3_summary, flow_metrics(summary))
                row.cwnd_nrmsd, row.cwnd_corr = cwnd_agreement(cwnd, ns3_cwnd, case.duration_s)
                plot_cwnd(case, cwnd, ns3_cwnd, out)
            rows.append(row)
    return rows


def format_table(rows: list[Row], reference: str = "ns-3") -> str:
    lines = [
        f"| case | goodput Mbit/s millinet / {reference} (diff) | retransmits | RTOs | mean RTT ms | cwnd NRMSD / corr |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ns = r.reference
        if ns is None:
            m = r.millinet or {"goodput_bps": math.nan, "retransmits": "–", "rtos": "–", "rtt_ms_mean": math.nan}
            lines.append(
                f"| {r.case.name} | {m['goodput_bps'] / 1e6:.2f} / – | {m['retransmits']} / – | {m['rtos']} / – "
                f"| {m['rtt_ms_mean']:.2f} / – | {r.note} |"
            )
            continue
        if r.millinet is None:
            lines.append(
                f"| {r.case.name} | – / {ns['goodput_bps'] / 1e6:.2f} | – / {ns['retransmits']} | – / {ns['rtos']} "
                f"| – / {ns['rtt_ms_mean']:.2f} | {r.note} |"
            )
            continue
        m = r.millinet
        lines.append(
            f"| {r.case.name} | {m['goodput_bps'] / 1e6:.2f} / {ns['goodput_bps'] / 1e6:.2f} ({r.diff('goodput_bps'):+.1%}) "
            f"| {m['retransmits']} / {ns['retransmits']} ({r.diff('retransmits'):+.0%}) | {m['rtos']} / {ns['rtos']} "
            f"| {m['rtt_ms_mean']:.2f} / {ns['rtt_ms_mean']:.2f} ({r.diff('rtt_ms_mean'):+.1%}) "
            f"| {r.cwnd_nrmsd:.2f} / {r.cwnd_corr:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cc", nargs="+", choices=list(NS3_CC), help="only these algorithms")
    parser.add_argument("--rate", nargs="+", type=float, help="only these bottleneck rates (bit/s)")
    parser.add_argument("--mss", nargs="+", type=int, help="only these MSS values")
    parser.add_argument("--mode", choices=["const", "switch"], help="only constant or switching rate")
    parser.add_argument("--queue-bdp", nargs="+", type=float, help="only these queue sizes (in BDP)")
    parser.add_argument("--duration", type=float, help="override every case's duration (s)")
    parser.add_argument("--jobs", type=int, default=2, help="ns-3 processes at once (default 2)")
    parser.add_argument("--cached-only", action="store_true", help="run no ns-3: uncached cases are listed as pending")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "crosscheck", help="plots and table.md")
    args = parser.parse_args(argv)

    cases = [
        c
        for c in full_table()
        if (not args.cc or c.cc in args.cc)
        and (not args.rate or c.rate_bps in args.rate)
        and (not args.mss or c.mss in args.mss)
        and (not args.mode or c.switching == (args.mode == "switch"))
        and (not args.queue_bdp or c.queue_bdp in args.queue_bdp)
    ]
    if args.duration:
        cases = [Case(c.cc, c.rate_bps, c.switching, c.queue_bdp, c.mss, args.duration) for c in cases]
    print_mapping()
    print(f"\n{len(cases)} cases; ns-3 results cached in {CACHE}\n")
    try:
        rows = compare(cases, args.out, jobs=args.jobs, cached_only=args.cached_only)
    except Ns3Missing as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    write_table(format_table(rows), args.out)
    return 0


def write_table(table: str, out: Path) -> None:
    """Prints the table and saves it as OUT/table.md next to the cwnd plots."""
    print(table)
    (out / "table.md").write_text(table + "\n")
    print(f"\ncwnd plots and table.md in {out}")


if __name__ == "__main__":
    sys.exit(main())
