"""`millinet trace`: Mahimahi export and import, the 5Gophers converter, the shipped
capacity trace, and one `error:` line with exit status 2 for every kind of bad trace."""

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import millinet
from conftest import millinet as cli
from conftest import ok

GOPHERS = Path("/work/shared/traces/5gophers/car-driving-trace-1.csv")
SHIPPED = Path(millinet.__file__).parent / "scenarios" / "traces"
OPPORTUNITY_BITS = 12_000


def capacity_rows(path: Path) -> list[tuple[float, float]]:
    """(time_s, rate_bps) rows of a capacity CSV, skipping `#` comments."""
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "time_s,rate_bps"
    return [(float(t), float(r)) for t, r in (line.split(",") for line in lines[1:])]


def mean_rate(rows: list[tuple[float, float]], duration_s: float) -> float:
    """Mean of the step function over [0, duration_s): each rate holds until the next row."""
    ends = [t for t, _ in rows[1:]] + [duration_s]
    bits = sum(rate * (min(end, duration_s) - min(start, duration_s)) for (start, rate), end in zip(rows, ends))
    return bits / duration_s


def gophers_column(carrier: str) -> list[tuple[int, float]]:
    with GOPHERS.open(newline="") as f:
        return [(int(row["seq_num"]), float(row[f"{carrier}_throughput_mbps"])) for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def gophers_source():
    if not GOPHERS.is_file():
        pytest.skip(f"{GOPHERS} is not on this machine")
    return GOPHERS


def test_mahimahi_round_trip_keeps_the_mean_rate(tmp_path):
    duration_s = 10.0
    trace, back = tmp_path / "drive.mahimahi", tmp_path / "back.csv"
    source = SHIPPED / "5gophers-verizon-drive-1.csv"
    ok(cli("trace", "to-mahimahi", source, trace, "--duration-s", duration_s))
    lines = trace.read_text().split()
    assert int(lines[-1]) == 10_000, "the last line is the period"
    assert lines == sorted(lines, key=int)
    ok(cli("trace", "from-mahimahi", trace, back, "--bin-ms", "10"))

    original = mean_rate(capacity_rows(source), duration_s)
    imported = mean_rate(capacity_rows(back), duration_s)
    assert imported == pytest.approx(len(lines) * OPPORTUNITY_BITS / duration_s)
    assert 0 <= original - imported < OPPORTUNITY_BITS / duration_s, "at most one opportunity per period is lost"


def test_to_mahimahi_default_duration_adds_one_last_step(tmp_path):
    source, trace = tmp_path / "cap.csv", tmp_path / "cap.mahimahi"
    source.write_text("time_s,rate_bps\n0,12e6\n0.5,24e6\n")
    ok(cli("trace", "to-mahimahi", source, trace))
    lines = [int(x) for x in trace.read_text().split()]
    assert lines[-1] == 1000, "the last step lasts as long as the one before"
    assert len(lines) == 500 + 1000


def test_from_5gophers_fills_gaps_and_keeps_measured_seconds(gophers_source, tmp_path):
    out = tmp_path / "verizon.csv"
    ok(cli("trace", "from-5gophers", gophers_source, out, "--carrier", "verizon"))
    measured = gophers_column("Verizon")
    first, last = measured[0][0], measured[-1][0]
    rows = capacity_rows(out)
    assert len(rows) == last - first + 1, "one row per second, the missing ones interpolated"
    assert [t for t, _ in rows] == list(range(last - first + 1))
    by_time = dict(rows)
    for seq, mbps in measured:
        assert by_time[seq - first] == pytest.approx(mbps * 1e6, rel=1e-12)
    assert "CC BY 4.0" in out.read_text()


def test_from_5gophers_mean_with_gaps_as_zero(gophers_source, tmp_path):
    out = tmp_path / "verizon-zero.csv"
    ok(cli("trace", "from-5gophers", gophers_source, out, "--gaps", "zero"))
    measured = gophers_column("Verizon")
    span_s = measured[-1][0] - measured[0][0] + 1
    expected = sum(mbps for _, mbps in measured) * 1e6 / span_s
    assert mean_rate(capacity_rows(out), span_s) == pytest.approx(expected, rel=1e-12)


def test_shipped_trace_is_the_converter_output(gophers_source, tmp_path):
    out = tmp_path / "5gophers-verizon-drive-1.csv"
    ok(cli("trace", "from-5gophers", gophers_source, out))
    assert out.read_text() == (SHIPPED / "5gophers-verizon-drive-1.csv").read_text()
    assert (SHIPPED / "5gophers-README.md").read_text() == (gophers_source.parent / "README.md").read_text()


GOPHERS_HEAD = "protocol,num_tcp_conn,seq_num,Sprint_throughput_mbps,TMobile_throughput_mbps,Verizon_throughput_mbps\n"

# (id, command, input text or None for a missing file, fragments the message names)
BAD = [
    ("capacity-rate", "to-mahimahi", "time_s,rate_bps\n0,5\n1,-3\n", ["line 3", "rate_bps"]),
    ("capacity-time", "to-mahimahi", "time_s,rate_bps\n2,5\n1,3\n", ["line 3", "time_s"]),
    ("capacity-header", "to-mahimahi", "time,rate\n0,5\n", ["line 1", "header"]),
    ("capacity-columns", "to-mahimahi", "time_s,rate_bps\n0,5,7\n", ["line 2", "columns"]),
    ("mahimahi-text", "from-mahimahi", "1\n2\nx\n", ["line 3", '"x"']),
    ("mahimahi-backwards", "from-mahimahi", "5\n3\n", ["line 2", '"3"']),
    ("mahimahi-period-0", "from-mahimahi", "0\n0\n", ["line 2", "period"]),
    ("mahimahi-empty", "from-mahimahi", "\n", ["line 1", "empty"]),
    ("5gophers-seq", "from-5gophers", GOPHERS_HEAD + "TCP,8,3,1,2,100\nTCP,8,3,1,2,100\n", ["line 3", "seq_num"]),
    ("5gophers-rate", "from-5gophers", GOPHERS_HEAD + "TCP,8,3,1,2,x\n", ["line 2", "Verizon_throughput_mbps"]),
    ("5gophers-header", "from-5gophers", "seq_num,Sprint_throughput_mbps\n0,1\n", ["line 1", "Verizon"]),
    ("unreadable", "to-mahimahi", None, ["cannot read"]),
]


@pytest.mark.parametrize("command, text, fragments", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_trace_names_file_and_line(tmp_path, command, text, fragments):
    source = tmp_path / "bad-trace.txt"
    if text is not None:
        source.write_text(text)
    result = cli("trace", command, source, tmp_path / "out")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for fragment in [str(source), *fragments]:
        assert fragment in result.stderr
    assert not (tmp_path / "out").exists(), "nothing is written"


ROUTE = SHIPPED / "pedestrian-route.toml"
SLOT_S = 0.000125  # cells.N.slot_s's default (numerology 3), the shipped 28 GHz cells'


def sinr_rows(path: Path) -> tuple[np.ndarray, np.ndarray]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "time_s,sinr_db"
    rows = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
    return rows[:, 0], rows[:, 1]


def test_a_recorded_route_replays_as_the_same_channel(tmp_path):
    """`trace from-run` records a route's SINR; a scenario replaying it (`sinr-trace`) sees that
    SINR: at each sample, the value of the slot in progress, which began one slot earlier."""
    ok(cli("run", ROUTE, "--set", "duration_s=3", "--out", tmp_path / "route"))
    recorded = tmp_path / "route.csv"
    ok(cli("trace", "from-run", tmp_path / "route", recorded))
    times_s, sinr_db = sinr_rows(recorded)
    ues = pd.read_parquet(tmp_path / "route" / "ues.parquet")
    assert len(times_s) == len(ues) and np.ptp(sinr_db) > 10, "every sample, of a route with blockage and fading"
    assert "seed 1" in recorded.read_text().splitlines()[0], "the header names the run"

    replay = tmp_path / "replay.toml"
    text = (SHIPPED.parent / "e2e-trace-pedestrian.toml").read_text().replace("traces/pedestrian-3mps-sinr.csv", str(recorded))
    replay.write_text(text)
    ok(cli("run", replay, "--set", "duration_s=2", "--set", "outputs.sample_step_s=0.002", "--out", tmp_path / "replay"))
    replayed = pd.read_parquet(tmp_path / "replay" / "ues.parquet")
    expected = np.interp(np.maximum(replayed["t"] - SLOT_S, 0.0), times_s, sinr_db)
    assert np.abs(replayed["sinr_db"] - expected).max() < 1e-3, "the trace's rounding (4 decimals), nothing more"


@pytest.mark.parametrize(
    "run_dir, ue, fragment",
    [("missing", 0, "no such run directory"), ("dumbbell", 0, "no `ues` time series"), ("route", 2, "its UEs: 0")],
)
def test_from_run_refuses_what_it_cannot_record(tmp_path, run_dir, ue, fragment):
    if run_dir != "missing":
        scenario = ROUTE if run_dir == "route" else "dumbbell"
        ok(cli("run", scenario, "--set", "duration_s=0.05", "--out", tmp_path / run_dir))
    result = cli("trace", "from-run", tmp_path / run_dir, tmp_path / "out.csv", "--ue", str(ue))
    assert result.returncode == 2 and result.stderr.startswith("error: ") and fragment in result.stderr, result.stderr
    assert not (tmp_path / "out.csv").exists()


def mahimahi_trace(path: Path) -> list[int]:
    """A 999 ms Mahimahi trace: 8 opportunities a millisecond for 500 ms (96 Mbit/s), then 4
    every other millisecond (24 Mbit/s); returns its lines."""
    lines = [ms for ms in range(1, 501) for _ in range(8)] + [ms for ms in range(501, 1000, 2) for _ in range(4)]
    path.write_text("\n".join(map(str, lines)) + "\n")
    return lines


def opportunities_between(lines: list[int], start_ms: float, end_ms: float) -> int:
    """Opportunities of the repeating trace at instants in [start_ms, end_ms]; the lines equal
    to the period are t = 0 of the next period."""
    period = lines[-1]
    one = [0 if ms == period else ms for ms in lines]
    return sum(1 for p in range(int(end_ms // period) + 1) for ms in one if start_ms <= p * period + ms <= end_ms)


# UDP above the trace's rate, each datagram 1500 bytes of IP: one opportunity each.
MAHIMAHI_FLOW = ["duration_s=5", 'flows.0.kind="udp"', "flows.0.udp_rate_bps=200e6", "flows.0.packet_bytes=1472"]


def test_a_mahimahi_trace_serves_a_link_at_its_delivery_opportunities(tmp_path):
    """`links.N.trace_a_to_b` (and `_b_to_a`) serve a wired link direction as mm-link does: a
    backlog of 1500-byte datagrams leaves at exactly one per opportunity, from the first one
    reaching the link (10 ms of the server's link, plus its 1.2 µs of serialisation) to the
    last that still crosses the link's 1 ms before the end."""
    lines = mahimahi_trace(tmp_path / "link.down")
    (tmp_path / "link.up").write_text((tmp_path / "link.down").read_text())
    traces = [f'links.1.trace_a_to_b="{tmp_path / "link.down"}"', f'links.1.trace_b_to_a="{tmp_path / "link.up"}"']
    flow = millinet.run("dumbbell", overrides=[*traces, *MAHIMAHI_FLOW]).summary["flows"][0]
    assert flow["received_packets"] == opportunities_between(lines, 10.0012, 4999.0)


def test_a_bad_mahimahi_link_trace_names_its_line(tmp_path):
    trace = tmp_path / "bad.down"
    trace.write_text("1\n2\nthree\n")
    result = cli("run", "dumbbell", "--set", f'links.1.trace_a_to_b="{trace}"', cwd=tmp_path)
    assert result.returncode == 2 and "links.1.trace_a_to_b" in result.stderr and "line 3" in result.stderr, result.stderr
