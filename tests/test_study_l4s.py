"""`millinet study l4s --quick` as a user runs it: the table and page, every point of the quick
grid, the RAN's ECN marks against what the servers' Accurate ECN counted, the L4S marker's
effect on Prague's latency, and the first run repeated byte for byte."""

import pytest

from conftest import assert_quick_page, assert_reruns_identically, quick_study, saved_table
from millinet import store

ARMS = ["none", "codel", "l4s", "gnb", "gnb-l4s"]
CCS = ["bbr", "cubic", "dctcp", "prague"]
D_RS_MS = [5, 20]
SEEDS = 3
MSS = 1400


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "l4s")


@pytest.fixture(scope="module")
def runs(study):
    out, _, _ = study
    return store.load(out / "store")


def test_prints_the_table_and_writes_the_page(study):
    page = assert_quick_page(study, "l4s", ["Per point and arm", "gnb-l4s"])
    assert page.count("data:image/png;base64,") == 2, "goodput against mean and p99 latency"


def test_every_promised_point(study):
    _, _, summary = study
    assert summary["runs"] == len(ARMS) * len(CCS) * len(D_RS_MS) * SEEDS and summary["failed_runs"] == 0
    points = {(p["arm"], p["cc"], p["d_rs_ms"]) for p in summary["points"]}
    assert points == {(a, c, d) for a in ARMS for c in CCS for d in D_RS_MS}
    assert all(p["pairs"] == SEEDS for p in summary["points"] if p["arm"] != "none")


def test_a_drop_tail_buffer_neither_marks_nor_drops_early(runs):
    none = runs[runs["arm"].isin(["none", "gnb"])]
    assert (none["ues.0.downlink.aqm_marks"] == 0).all() and (none["ues.0.downlink.drops_aqm"] == 0).all()
    assert (none["flows.0.ce_bytes"] == 0).all() and (none["flows.0.ecn_reductions"] == 0).all()


def test_the_servers_count_exactly_the_bytes_the_ran_marked(study, runs):
    """Accurate ECN end to end: every SDU the RLC buffer's AQM CE-marked was one full data
    segment of the server's (retransmissions are Not-ECT, never marked), and the server's
    AccECN byte counter reports them; it may miss only marks still unacknowledged when the run
    ended, at most what was in flight then."""
    out, _, _ = study
    marking = runs[runs["arm"].isin(["codel", "l4s"]) & (runs["ues.0.downlink.aqm_marks"] > 0)]
    assert len(marking) >= 20, "the AQMs marked in most runs"
    for _, run in marking.iterrows():
        marked_bytes = int(run["ues.0.downlink.aqm_marks"]) * MSS
        in_flight_at_end = int(saved_table(out, run["run_key"], "flows")["bytes_in_flight"].iloc[-1])
        assert marked_bytes - in_flight_at_end <= run["flows.0.ce_bytes"] <= marked_bytes, run["run_key"]
        assert run["flows.0.ecn_reductions"] >= 1


def test_l4s_packets_are_marked_never_dropped(runs):
    prague = runs[(runs["arm"] == "l4s") & (runs["flows.0.cc"] == "prague")]
    # Prague's data is ECT(1); only its retransmissions (Not-ECT) could be dropped.
    assert (prague["ues.0.downlink.drops_aqm"] <= prague["flows.0.retransmits"]).all()
    assert (prague["ues.0.downlink.aqm_marks"] > 0).all()


def test_the_l4s_marker_cuts_pragues_latency(study):
    _, _, summary = study
    prague = [p for p in summary["points"] if p["cc"] == "prague" and p["arm"] == "l4s"]
    assert len(prague) == len(D_RS_MS)
    for p in prague:
        assert p["latency_ratio"] > 2, f"D_RS {p['d_rs_ms']} ms: {p['latency_ratio']}"


def test_a_run_repeats_exactly(study, tmp_path):
    out, _, _ = study
    runs = store.load(out / "store")
    first = runs[(runs["arm"] == "l4s") & (runs["flows.0.cc"] == "prague")].iloc[0]
    assert_reruns_identically(store.run_dir(out / "store", first["run_key"]), tmp_path / "again")
