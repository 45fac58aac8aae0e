"""Web page loads over the mmWave route, the study only the real path can run: headless
Chromium loads generated pages (few and many objects, small and large: `millinet web site`)
from a real HTTP/1.1 server over the milliproxy route, emulated (root; docs/emulator.md, "Web
pages"), without a proxy, with milliProxy at the gNB and with the split proxy at the PGW, on
the route in LOS (no obstacles) and with its obstacles (the UE walks past them at 5 m/s).

Per run: one emulation of a condition, an arm and a seed, in which the UE loads each page
once, a fresh browser each time: load k starts LOAD_EVERY_S * k after the run's start, or when
load k - 1 has ended if that is later (a fresh Chromium takes seconds to start on a busy host),
and the run ends with the last load. Per load: the page load time (`loadEventStart` of the
browser's own navigation timing) and the LOS share of the UE's samples during it. Per point (condition,
page, arm): median and quartiles over seeds; per pair of runs on the same seed (the same
obstacles and walk), each proxy's page load time over the no-proxy one.

Writes into OUT: summary.json (`points`, `paired`), table.md, index.html, plots/*.png and
each run's directory in runs/ (reused when OUT is given again).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import tempfile
from pathlib import Path

import pandas as pd

import millinet
from millinet import web
from millinet.report import figures
from millinet.runner import override_list
from millinet.studies.common import Options, StudyResult, drawn, median_iqr, quartiles, reproduce_note, write_outputs

SCENARIO = "milliproxy"
CONDITIONS = {"los": {"ues.0.blockage": "none"}, "obstacles": {}}
CONDITION_LABELS = {"los": "LOS", "obstacles": "obstacles"}
ARMS = {"none": {"proxy.node": ""}, "milliproxy": {"proxy.node": "gnb"}, "split": {"proxy.node": "pgw", "proxy.kind": "split"}}
LOAD_EVERY_S = 2.0
# A load that takes longer has failed (the study counts it as not loaded).
LOAD_TIMEOUT_S = 20.0
# The run ends when its last load has; this bound is only reached when every load times out.
DURATION_S = LOAD_EVERY_S * (len(web.PAGES) - 1) + LOAD_TIMEOUT_S * len(web.PAGES) + 5.0
SEEDS = {"quick": 2, "full": 10}


def run(out: Path, options: Options) -> StudyResult:
    """Runs the study (what OUT/runs lacks) and writes its results into `out`;
    `options.runs` seeds, default 10 (quick 2)."""
    out = Path(out)
    seeds = list(range(1, (options.runs or SEEDS["quick" if options.quick else "full"]) + 1))
    site = out / "site"
    if not site.exists():
        web.write_site(site)
    loads, failed = [], 0
    for seed in seeds:
        for condition in CONDITIONS:
            for arm in ARMS:
                rows = _run(out / "runs" / f"{condition}-{arm}-{seed}", site, condition, arm, seed, options)
                failed += rows is None
                loads += rows or []
    frame = pd.DataFrame(loads)
    summary = {
        "study": "web",
        "command": _command(options),
        "seeds": seeds,
        "runs": len(seeds) * len(CONDITIONS) * len(ARMS) - failed,
        "failed_runs": failed,
        "max_duration_s": DURATION_S,
        "pages": {name: {"objects": n, "object_bytes": size} for name, (n, size) in web.PAGES.items()},
        "points": _points(frame),
        "paired": _paired(frame),
    }
    tables = {"Page load time": points_table(summary["points"]), "Each proxy against none, paired by seed": paired_table(summary["paired"])}
    write_outputs(out, summary, f"Web study: {summary['runs']} runs", tables, _notes(summary), _plots(frame))
    return StudyResult(summary, tables, out)


def _command(options: Options) -> str:
    return "millinet study web" + (" --quick" if options.quick else "") + (f" --runs {options.runs}" if options.runs else "") + "".join(
        f" --set {shlex.quote(item)}" for item in options.overrides
    )


def _run(run_dir: Path, site: Path, condition: str, arm: str, seed: int, options: Options) -> list[dict] | None:
    """The loads of one run, from its directory (run now if it has none); None if it failed."""
    record = run_dir / "loads.json"
    if not record.exists():
        overrides = [*override_list({"duration_s": DURATION_S, **CONDITIONS[condition], **ARMS[arm]}), *options.overrides]
        millinet_cli = f"{shlex.quote(sys.executable)} -m millinet"
        # The UE's command may run as the user who ran sudo: it writes where that user can.
        with tempfile.TemporaryDirectory(prefix="millinet-web-") as scratch:
            os.chmod(scratch, 0o777)
            lines = Path(scratch) / "loads.jsonl"
            # Load k starts LOAD_EVERY_S * k after the command's start (the channel's time 0), or
            # when load k - 1 has ended.
            every_ns = round(LOAD_EVERY_S * 1e9)
            steps = [
                f"until [ $(date +%s%N) -ge $((t0 + {k * every_ns})) ]; do sleep 0.01; done; "
                f'echo "{{\\"page\\": \\"{page}\\", \\"at_ns\\": $(date +%s%N), \\"timing\\": '
                f'$({millinet_cli} web load --timeout {LOAD_TIMEOUT_S:g} http://$MILLINET_SERVER:8000/{page}/index.html || echo null)}}" >> {lines}'
                for k, page in enumerate(web.PAGES)
            ]
            command = ["sh", "-c", f"t0=$(date +%s%N); echo $t0 > {Path(scratch) / 'start'}; " + "; ".join(steps)]
            try:
                result = millinet.emulate(
                    SCENARIO,
                    seed=seed,
                    overrides=overrides,
                    out=run_dir,
                    command=command,
                    server=f"exec {millinet_cli} web serve {shlex.quote(str(site))}",
                )
                start_ns = int((Path(scratch) / "start").read_text())
                entries = [json.loads(line) for line in lines.read_text().splitlines()]
            except (millinet.ScenarioError, OSError, ValueError) as e:
                if not options.quiet:
                    print(f"web study: {run_dir.name} failed: {e}", file=sys.stderr)
                return None
        ues = result.series["ues"]
        loads = []
        for entry in entries:
            at_s = (entry["at_ns"] - start_ns) / 1e9
            timing = entry["timing"] or {}
            load_s = timing.get("load_ms", math.nan) / 1e3
            during = ues[(ues["t"] >= at_s) & (ues["t"] <= at_s + (load_s if load_s == load_s else 0.0))]
            loads.append({"page": entry["page"], "at_s": at_s, "load_ms": timing.get("load_ms", math.nan), "los_share": float(during["los"].mean()) if len(during) else math.nan})
        record.write_text(json.dumps(loads))
    return [{"condition": condition, "arm": arm, "seed": seed, **load} for load in json.loads(record.read_text())]


def _points(frame: pd.DataFrame) -> list[dict]:
    if frame.empty:
        return []
    return [
        {
            "condition": condition,
            "page": page,
            "arm": arm,
            "loads": int(group["load_ms"].notna().sum()),
            "load_ms": quartiles(group["load_ms"]),
            "los_share": float(group["los_share"].mean()),
        }
        for condition in CONDITIONS
        for page in web.PAGES
        for arm in ARMS
        if len(group := frame[(frame["condition"] == condition) & (frame["page"] == page) & (frame["arm"] == arm)])
    ]


def _paired(frame: pd.DataFrame) -> list[dict]:
    """Per condition, page and proxy: its load time over no proxy's, seed by seed."""
    points = []
    if frame.empty:
        return points
    for condition in CONDITIONS:
        for page in web.PAGES:
            rows = frame[(frame["condition"] == condition) & (frame["page"] == page)]
            times = rows.pivot_table(index="seed", columns="arm", values="load_ms", aggfunc="first")
            for arm in ("milliproxy", "split"):
                if {"none", arm} <= set(times.columns):
                    both = times[["none", arm]].dropna()
                    ratio = both[arm] / both["none"]
                    points.append({"condition": condition, "page": page, "arm": arm, "pairs": len(both), "ratio": quartiles(ratio), "faster": int((ratio < 1).sum())})
    return points


def _page(name: str) -> str:
    objects, size = web.PAGES[name]
    return f"{name} ({objects} × {size / 1e3:g} kB)"


def points_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "condition": CONDITION_LABELS[p["condition"]],
                "page": _page(p["page"]),
                "proxy": p["arm"],
                "loads": p["loads"],
                "page load ms: median [IQR]": median_iqr(p["load_ms"]),
                "LOS share": f"{p['los_share']:.2f}",
            }
            for p in points
        ]
    )


def paired_table(points: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "condition": CONDITION_LABELS[p["condition"]],
                "page": _page(p["page"]),
                "proxy": p["arm"],
                "pairs": p["pairs"],
                "load time / no proxy's: median [IQR]": median_iqr(p["ratio"], 2),
                "faster": f"{p['faster']} of {p['pairs']}",
            }
            for p in points
        ]
    )


def _notes(summary: dict) -> tuple[str, ...]:
    return (
        reproduce_note(summary),
        "Each run emulates the milliproxy route (server, PGW and gNB over 2 × 11 ms of wires, a 1 GHz mmWave cell, the UE "
        "walking 50 m at 5 m/s) with real Linux TCP (CUBIC, the kernel's defaults) until its last page has loaded (at most "
        f"{summary['max_duration_s']:g} s). A real HTTP/1.1 server (Python's, persistent connections) serves the pages from the "
        f"server's namespace; headless Chromium loads each page once in the UE's, a fresh profile each time, load k (from 0) "
        f"starting at {LOAD_EVERY_S:g} × k s, or when load k − 1 has ended if that is later; a load not done within "
        f"{LOAD_TIMEOUT_S:g} s has failed. LOS: no obstacles; obstacles: the route's three random ones (new ones per seed).",
        "Page load time: the browser's own navigation timing, loadEventStart from the navigation's start (W3C Navigation "
        "Timing Level 2). milliProxy sits at the gNB (its default policy); the split proxy at the PGW is explicit: the "
        "browser connects to it and it relays to the server. Medians and quartiles over seeds; the paired table divides "
        "each proxy's load time by the no-proxy one on the same seed (the same obstacles and walk).",
    )


def _plots(frame: pd.DataFrame) -> dict[str, bytes]:
    if frame.empty:
        return {}
    images = {}
    for condition in CONDITIONS:
        rows = frame[frame["condition"] == condition]
        panels = {
            _page(page): {arm: rows[(rows["page"] == page) & (rows["arm"] == arm)]["load_ms"].dropna().to_numpy(float) for arm in ARMS}
            for page in web.PAGES
        }
        images[f"page load time, {CONDITION_LABELS[condition]}"] = figures.boxes(panels, "page load time (ms)")
    return drawn(images)
