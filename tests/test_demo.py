"""`make demo` as a new user meets it: the Makefile's own command, with its default seeds,
pairs the calibrated and the bdp policy against no proxy on the same seeds with intervals
tight enough to read (every goodput ratio within ±5% of itself, every RAN latency ratio within
±40%), and the terminal and the page open with a verdict that says what the points say.

The latency bound: without a proxy, the RAN latency at D_RS 20 ms with a 10 MB RLC buffer
depends on whether CUBIC's HyStart ended slow start before the buffer filled, which varies from
seed to seed; 30 seeds give that ratio ±35% (±21% before HyStart), and the verdict prints the
widest interval, so a reader sees how precise each figure is."""

import json
import re
import shlex
from pathlib import Path

import pytest

from millinet.studies.milliproxy import verdict
from conftest import millinet, ok

MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"


def demo_command() -> list[str]:
    """The millinet command line of the Makefile's `demo` recipe."""
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", MAKEFILE.read_text(), re.M).group(1)
    line = next(line for line in recipe.splitlines() if "millinet study" in line)
    return shlex.split(line.split("millinet", 1)[1])


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    args = demo_command()
    out = tmp_path_factory.mktemp("demo") / "demo"
    args[args.index("--out") + 1] = str(out)
    result = ok(millinet(*args))
    return out, result.stdout, json.loads((out / "summary.json").read_text())


def half_width(point: dict, key: str) -> float:
    low, high = point[f"{key}_ci"]
    return max(high - point[key], point[key] - low) / point[key]


def test_the_demo_pairs_both_policies_with_tight_intervals(demo):
    _, _, summary = demo
    points = summary["points"]
    assert {p["policy"] for p in points} == {"calibrated", "bdp"}
    assert summary["failed_runs"] == 0
    for p in points:
        where = (p["arm"], p["d_rs_ms"], p["b_rlc_bytes"], p["pairs"])
        assert half_width(p, "goodput_ratio") <= 0.05, (where, p["goodput_ratio"], p["goodput_ratio_ci"])
        assert half_width(p, "latency_ratio") <= 0.40, (where, p["latency_ratio"], p["latency_ratio_ci"])


def test_the_verdict_opens_terminal_and_page_and_says_what_the_points_say(demo):
    out, stdout, summary = demo
    lines = summary["verdict"]
    assert stdout.splitlines()[: len(lines)] == lines
    page = (out / "index.html").read_text()
    assert page.index("Verdict:") < page.index("<table")
    for arm in ("gnb", "gnb-bdp"):
        ratios = sorted(p["goodput_ratio"] for p in summary["points"] if p["arm"] == arm)
        line = next(line for line in lines if line.startswith(f"{arm} ("))
        assert f"{ratios[0]:.2f}–{ratios[-1]:.2f}× the goodput" in line, line
    goal = next(line for line in lines if line.startswith("At least 0.98"))
    keeps = [arm for arm in ("gnb", "gnb-bdp") if all(p["goodput_ratio"] >= 0.98 for p in summary["points"] if p["arm"] == arm)]
    assert goal.split(":", 1)[1].split(";")[0].strip(" .") == (", ".join(keeps) or "no arm")


def test_the_verdict_words_latency_that_rises_and_falls():
    def point(arm, goodput, latency):
        return {"arm": arm, "proxy": "milliproxy", "placement": "gnb", "policy": "bdp", "cc": "cubic", "d_rs_ms": 20.0, "b_rlc_bytes": 10_000_000,
                "pairs": 5, "goodput_ratio": goodput, "goodput_ratio_ci": [goodput * 0.99, goodput * 1.01],
                "latency_ratio": latency, "latency_ratio_ci": [latency * 0.9, latency * 1.2]}

    lines = verdict([point("a", 0.5, 0.5), point("a", 1.0, 0.25), point("b", 1.0, 0.5), point("b", 0.99, 4.0)])
    assert lines[0].startswith("a (milliProxy at the gNB, bdp policy): 0.50–1.00× the goodput without a proxy, RAN latency 2–4× higher")
    assert "lowest goodput at cubic, D_RS 20 ms, B_RLC 10 MB (0.50)" in lines[0]
    assert "RAN latency from 2× higher to 4× lower" in lines[1]
    assert lines[2] == "At least 0.98 of the goodput at every point: b; below it somewhere: a."
    assert lines[3] == "95% intervals over 5 paired seeds: every goodput ratio within ±1.0% of itself, every RAN latency ratio within ±20.0%."
    assert verdict([]) == ["No paired runs: no verdict."]
    # One seed per point: no interval to report, said so rather than as "±nan%".
    single = {**point("a", 0.9, 2.0), "pairs": 1, "goodput_ratio_ci": [float("nan")] * 2, "latency_ratio_ci": [float("nan")] * 2}
    assert verdict([single])[-1] == "No 95% intervals: 1 paired seed(s) per point."
