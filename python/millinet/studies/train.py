"""The high-speed train (docs/studies.md#train): the shipped sweep `train` (or `train-quick`) run
into a result store, then per configuration (radio: mmWave with its LTE anchor or LTE
only; server remote or edge; RLC buffer; congestion control or the saturating UDP
reference; MSS) the goodput and RTT with 95% intervals, and the goodput ratio
MSS 14000 / MSS 1400 per CC, radio, server and buffer, paired on the same seeds.

Writes into OUT: summary.json (`points`, `mss_ratios`), table.md, index.html
(self-contained), plots/*.png (the ratios, goodput against RTT, cwnd over time of one named
run per CC, the handovers and bearer switches of the runs) and the result store in store/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from millinet import mobility, outputs
from millinet import store as stores
from millinet.report import figures
from millinet.report.stats import paired_ratios
from millinet.studies.common import CWND_GROWTH, Options, StudyResult, interval, number, plus_minus, point_stats, ratio_cell, ratio_fields, run_runs, timed_head, with_base_values, write_outputs
from millinet.sweep.spec import SCENARIO_COLUMN

GOODPUT, RTT = "flows.0.goodput_bps", "flows.0.rtt_ms.mean"
HANDOVERS, SWITCHES = "ues.0.handovers", "ues.0.bearer_switches"
SERVER_DELAY, B_RLC, AQM = "links.0.delay_s", "ues.0.rlc_buffer_bytes", "ues.0.rlc_aqm"
CC, KIND, MSS = "flows.0.cc", "flows.0.kind", "flows.0.mss_bytes"
# A configuration apart from its MSS, which is the arm: the MSS ratio pairs runs over these.
POINT = [SCENARIO_COLUMN, SERVER_DELAY, B_RLC, AQM, KIND, CC]
SMALL_MSS_ARM, LARGE_MSS_ARM = "mss1400", "mss14000"

RADIOS = {"train": "mmwave", "train-lte": "lte"}
SERVERS = {0.019: "remote", 0.001: "edge"}  # one-way delay server -> PGW (s)
# The bandwidth-delay products the buffers are sized against (docs/studies.md#train): 3 Gbit/s at
# the minimum RTT, 40 ms remote and 4 ms edge, on mmWave; on LTE those its 50% buffers
# (0.2 and 0.08 MB) stand for.
BDP_BYTES = {("mmwave", "remote"): 15e6, ("mmwave", "edge"): 1.5e6, ("lte", "remote"): 0.4e6, ("lte", "edge"): 0.16e6}
# Table order: radios, servers and congestion controls as docs/studies.md#train lists them.
ORDER = {"mmwave": 0, "lte": 1, "remote": 0, "edge": 1, "newreno": 0, "cubic": 1, "highspeed": 2, "bbr": 3, "udp": 4}


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what the store lacks) and writes its results into `out`;
    `options.runs` paired seeds per point, default 10 (quick 1)."""
    out = Path(out)
    frame = with_base_values(run_runs(out, options), [*POINT, MSS, CWND_GROWTH, "duration_s"], "train")
    points = _points(frame)
    ratios = _mss_ratios(frame)
    summary = {
        **timed_head(options, frame),
        "points": points,
        "mss_ratios": ratios,
    }
    tables = {"Per configuration": points_table(points), "Goodput ratio MSS 14000 / MSS 1400, paired seeds": ratio_table(ratios)}
    heading = f"High-speed train study ({options.sweep}): {summary['runs']} runs of {summary['duration_s']:g} s"
    write_outputs(out, summary, heading, tables, _notes(summary), _plots(frame, ratios, out / "store", summary["duration_s"]))
    return StudyResult(summary, tables, out)


def _configuration(row: pd.Series) -> dict:
    """The labels of a configuration (a row with the POINT columns), as summary.json names them."""
    radio = RADIOS.get(row[SCENARIO_COLUMN], row[SCENARIO_COLUMN])
    delay = float(row[SERVER_DELAY])
    server = SERVERS.get(round(delay, 6), f"{delay * 1e3:g} ms")
    bdp = BDP_BYTES.get((radio, server))
    buffer = f"{row[B_RLC] / bdp:.0%} BDP" if bdp else f"{row[B_RLC] / 1e6:g} MB"
    return {
        "radio": radio,
        "server": server,
        "buffer": buffer + (" CoDel" if row[AQM] == "codel" else ""),
        "b_rlc_bytes": int(row[B_RLC]),
        "aqm": row[AQM],
        # A UDP flow has a cc in the scenario too, unused: the reference is named by its kind.
        "cc": "udp" if row[KIND] == "udp" else row[CC],
    }


def _points(frame: pd.DataFrame) -> list[dict]:
    """One entry per configuration and MSS: goodput, RTT (none for UDP) and the mobility
    counts, mean and 95% interval over the seeds, and the goodput as a share of the UDP
    reference's on the same radio, server, buffer and MSS."""
    stats = point_stats(frame, [GOODPUT, RTT, HANDOVERS, SWITCHES], [*POINT, MSS])
    points = []
    for _, row in stats.iterrows():
        points.append(
            {
                **_configuration(row),
                "mss": int(row[MSS]),
                "runs": int(row[f"{GOODPUT}:n"]),
                "goodput_bps": interval(row, GOODPUT),
                "rtt_ms": interval(row, RTT),
                "handovers": row[f"{HANDOVERS}:mean"],
                "bearer_switches": row[f"{SWITCHES}:mean"],
            }
        )
    udp = {_reference_key(p): p["goodput_bps"]["mean"] for p in points if p["cc"] == "udp"}
    for p in points:
        reference = udp.get(_reference_key(p))
        p["goodput_of_udp"] = p["goodput_bps"]["mean"] / reference if reference and p["cc"] != "udp" else None
    return sorted(points, key=lambda p: (*_order(p), p["mss"]))


def _reference_key(point: dict) -> tuple:
    return point["radio"], point["server"], point["b_rlc_bytes"], point["aqm"], point["mss"]


def _order(point: dict) -> tuple:
    """Radio, server, buffer (drop-tail before CoDel), CC as docs/studies.md#train lists them."""
    return ORDER.get(point["radio"], 9), ORDER.get(point["server"], 9), point["b_rlc_bytes"], point["aqm"] == "codel", ORDER.get(point["cc"], 9)


def _mss_ratios(frame: pd.DataFrame) -> list[dict]:
    """Goodput with MSS 14000 over goodput with MSS 1400, per configuration, over the seeds
    both ran, with a 95% bootstrap interval."""
    goodput = paired_ratios(frame, {"baseline": SMALL_MSS_ARM, "treatment": LARGE_MSS_ARM}, GOODPUT, POINT)
    ratios = [{**_configuration(row), "pairs": int(row["n"]), **ratio_fields("goodput_ratio", row)} for _, row in goodput.iterrows()]
    return sorted(ratios, key=_order)


def points_table(points: list[dict]) -> pd.DataFrame:
    """Goodput and RTT mean ± 95% half-width per configuration, the goodput's share of the
    UDP reference's, and the mean number of handovers and bearer switches per run."""
    return pd.DataFrame(
        [
            {
                "radio": p["radio"],
                "server": p["server"],
                "buffer": p["buffer"],
                "cc": p["cc"],
                "MSS": p["mss"],
                "runs": p["runs"],
                "goodput Mbit/s": plus_minus(p["goodput_bps"], 1e-6),
                "RTT ms": plus_minus(p["rtt_ms"], 1.0),
                "of UDP": "-" if p["goodput_of_udp"] is None else f"{p['goodput_of_udp']:.0%}",
                "HO / switches": f"{number(p['handovers'])} / {number(p['bearer_switches'])}",
            }
            for p in points
        ]
    )


def ratio_table(ratios: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "radio": r["radio"],
                "server": r["server"],
                "buffer": r["buffer"],
                "cc": r["cc"],
                "pairs": r["pairs"],
                "goodput MSS 14000/1400": ratio_cell(r, "goodput_ratio"),
            }
            for r in ratios
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    quick = summary["sweep"].endswith("-quick")
    return (
        f"Reproduce: {summary['command']}. Seeds {', '.join(map(str, summary['seeds']))}; runs of "
        f"{summary['duration_s']:g} s{' (the quick variant: the first handover is at about 18.6 s)' if quick else ''}; "
        f"cwnd growth {summary['cwnd_growth']!r}.",
        "Radio: mmwave = four 28 GHz gNBs along the track with an LTE anchor (dual connectivity: the bearer moves to "
        "the anchor when no gNB is usable, A3 handover between gNBs, 3 dB for 40 ms); lte = four 20 MHz LTE eNBs at the "
        "same sites. Server: remote (min RTT about 40 ms) or edge (about 4 ms). Buffer: the RLC buffer as a share of "
        "the BDP at 3 Gbit/s and the min RTT (mmWave: 1.5 / 15 MB remote, 0.15 / 1.5 MB edge, CoDel on the large one); "
        "LTE 50% of its BDP (0.2 MB remote, 0.08 MB edge).",
        "udp = a saturating UDP flow (4 Gbit/s on mmWave, 200 Mbit/s on LTE) in datagrams of the MSS, the reference of "
        "the achievable rate; 'of UDP' is a configuration's mean goodput over the UDP reference's on the same radio, "
        "server, buffer and MSS.",
        "Goodput and RTT: mean over runs with a 95% Student-t interval. MSS ratios: mean goodput with MSS 14000 over "
        "mean goodput with MSS 1400 over the same seeds (same shadowing and fading), with a 95% percentile bootstrap "
        "interval over seeds.",
        f"{summary['runs']} runs succeeded, {summary['failed_runs']} failed.",
    )


def _plots(frame: pd.DataFrame, ratios: list[dict], store: Path, duration_s: float) -> dict[str, bytes]:
    images = {}
    for radio in RADIOS.values():
        shown = [r for r in ratios if r["radio"] == radio]
        if shown:
            bars = pd.DataFrame({"mean": [r["goodput_ratio"] for r in shown], "ci_low": [r["goodput_ratio_ci"][0] for r in shown], "ci_high": [r["goodput_ratio_ci"][1] for r in shown]})
            labels = [f"{r['server']} {r['buffer']} {r['cc']}" for r in shown]
            images[f"goodput ratio MSS 14000/1400, {radio}"] = figures.bars(bars, labels, "ratio", 1.0)
    ok = frame[frame["status"] == "ok"]
    for radio, runs in _by_radio(ok).items():
        tcp = runs[runs[KIND] == "tcp"]
        dots = {f"{cc} MSS {mss}": (rows[RTT].to_numpy(float), rows[GOODPUT].to_numpy(float)) for (cc, mss), rows in tcp.groupby([CC, MSS], sort=False)}
        if dots:
            images[f"goodput vs RTT, {radio}"] = figures.scatter(dots)
        named = _cwnd_runs(runs, store)
        panels = figures.cwnd_runs(named) if named else None
        if panels is not None:
            images[f"cwnd over time, {radio}, one run per CC"] = panels
    images["handovers and bearer switches"] = figures.mobility_timeline(_timeline_rows(ok, store), duration_s)
    return images


def _by_radio(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {RADIOS.get(scenario, scenario): rows for scenario, rows in frame.groupby(SCENARIO_COLUMN, sort=False)}


def _cwnd_runs(runs: pd.DataFrame, store: Path) -> dict[str, Path]:
    """One run per TCP congestion control, named by its configuration and run key: the
    lowest seed, remote server (else the first), the largest drop-tail buffer, MSS 1400."""
    tcp = runs[(runs[KIND] == "tcp") & (runs["seed"] == runs["seed"].min()) & (runs["arm"] == SMALL_MSS_ARM) & (runs[AQM] != "codel")]
    delays = sorted(tcp[SERVER_DELAY].unique(), key=lambda d: SERVERS.get(round(float(d), 6)) != "remote")
    if not delays:
        return {}
    tcp = tcp[tcp[SERVER_DELAY] == delays[0]]
    tcp = tcp[tcp[B_RLC] == tcp[B_RLC].max()]
    named = {}
    for _, row in sorted(tcp.iterrows(), key=lambda item: ORDER.get(item[1][CC], 9)):
        c = _configuration(row)
        named[f"{row[CC]}: {c['radio']}, {c['server']}, {c['buffer']}, MSS 1400, seed {row['seed']} (run {row['run_key']})"] = stores.run_dir(store, row["run_key"])
    return named


def _timeline_rows(ok: pd.DataFrame, store: Path) -> dict[str, list[mobility.Event]]:
    """The events of every run of the lowest seed, from its summary.json, one row per radio
    and sequence: the radio's configurations share the channel of a seed, so their runs
    usually share one sequence, and a row says how many runs it stands for."""
    first = ok[ok["seed"] == ok["seed"].min()]
    rows: dict[str, list[mobility.Event]] = {}
    for radio, runs in _by_radio(first).items():
        sequences: dict[tuple, list[str]] = {}
        for _, row in runs.iterrows():
            summary = json.loads((stores.run_dir(store, row["run_key"]) / outputs.SUMMARY).read_text())
            events = tuple(mobility.from_summary(summary))
            sequences.setdefault(events, []).append(_run_label(row))
        seed = int(first["seed"].iloc[0])
        for k, (events, labels) in enumerate(sequences.items(), 1):
            if len(sequences) == 1:
                rows[f"{radio}, seed {seed}: all {len(labels)} runs"] = list(events)
            else:
                rows[f"{radio}, seed {seed}, sequence {k}: {labels[0] if len(labels) == 1 else f'{len(labels)} runs'}"] = list(events)
    return rows


def _run_label(row: pd.Series) -> str:
    c = _configuration(row)
    return f"{c['server']} {c['buffer']} {c['cc']} MSS {int(row[MSS])}"
