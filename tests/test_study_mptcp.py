"""`millinet study mptcp --quick` as a user runs it: the tables on the terminal, the page and
plots, summary.json's points and shared-bearer rows (recomputed here from the store), and
what multipath must show (a second mmWave path adds, every path carries data, on the shared
LTE bearer MP-TCP's subflow takes from the single-path flow, coupled ones no more than it)."""

import pytest

from conftest import quick_study
from millinet import store
from millinet.studies.common import jain_index

# 28 GHz alone, then (28 GHz + LTE, 28 + 73 GHz) x (uncoupled, LIA, OLIA, BALIA), at 100 m.
POINTS = 9
MPTCP_ARMS = {"uncoupled", "lia", "olia", "balia"}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return quick_study(tmp_path_factory, "mptcp")


def test_prints_the_tables_and_writes_the_page(study):
    out, stdout, summary = study
    assert "Per paths, congestion control and distance" in stdout and "Shared LTE bearer" in stdout
    assert "28 GHz + LTE" in stdout and "28 + 73 GHz" in stdout and "balia" in stdout
    page = (out / "index.html").read_text()
    assert "Reproduce: millinet study mptcp --quick." in page and "<th>Jain's index</th>" in page
    assert "src='http" not in page and page.count("data:image/png;base64,") >= 5, "self-contained, with plots"
    plots = {p.name for p in (out / "plots").iterdir()}
    assert "each-path-s-throughput-over-time--one-run-per-cc.png" in plots
    assert "shared-lte-bearer--the-mp-tcp-subflow-s-share-over-time--one-run-per-cc.png" in plots
    assert summary["command"] == "millinet study mptcp --quick" and summary["duration_s"] == 3.0


def test_points_cover_the_quick_grid_and_the_paths_add_up(study):
    out, _, summary = study
    points = summary["points"]
    assert len(points) == POINTS and summary["failed_runs"] == 0 and summary["runs"] == 15
    assert {(p["paths"], p["cc"]) for p in points if p["arm"] != "single"} == {
        (paths, arm) for paths in ("28 GHz + LTE", "28 + 73 GHz") for arm in MPTCP_ARMS
    }
    for p in points:
        first, second, goodput = p["first_path_bps"]["mean"], p["second_path_bps"]["mean"], p["goodput_bps"]["mean"]
        # What the subflows' peers acknowledged over the run is what the application got,
        # plus reinjected copies and less what was in flight at the end.
        assert first + second == pytest.approx(goodput, rel=0.05), p
        if p["arm"] != "single":
            assert second > 0.01 * goodput and first > second, f"both paths carry data, 28 GHz the most: {p}"
    single = next(p for p in points if p["arm"] == "single")["goodput_bps"]["mean"]
    with_73 = [p for p in points if p["paths"] == "28 + 73 GHz"]
    # BALIA is the exception, a known difference from the kernel: lost retransmissions after the
    # 73 GHz subflow's slow-start overshoot lower its window a second time (RFC 5681 §4.3, which
    # Linux does not do within a recovery) and BALIA regrows it slowly next to the 28 GHz
    # subflow (docs/validation.md, MP-TCP: 167 against Linux's 608 Mbit/s on that path).
    assert all(p["goodput_bps"]["mean"] > 1.1 * single for p in with_73 if p["arm"] != "balia"), "a second mmWave path adds at least 10%"


def test_gains_are_paired_ratios_from_the_store(study):
    out, _, summary = study
    runs = store.load(out / "store")
    single = runs[(runs["scenario"] == "mptcp") & (runs["arm"] == "single")]["flows.0.goodput_bps"].item()
    for p in summary["points"]:
        if p["arm"] == "single":
            assert p["gain_over_single"] is None
            continue
        scenario = "mptcp" if p["paths"] == "28 GHz + LTE" else "mptcp-73"
        goodput = runs[(runs["scenario"] == scenario) & (runs["arm"] == p["arm"])]["flows.0.goodput_bps"].item()
        # The single-path runs of both scenarios run the same 28 GHz radio on the same seed.
        assert p["gain_over_single"] == pytest.approx(goodput / single)
        # Subflow 1 is the second radio's.
        row = runs[(runs["scenario"] == scenario) & (runs["arm"] == p["arm"])]
        assert row["flows.0.mptcp.subflows.0.ue"].item() == 0 and row["flows.0.mptcp.subflows.1.ue"].item() == 1


def test_on_the_shared_lte_bearer_mptcp_takes_from_tcp_and_coupled_no_more_than_it(study):
    out, _, summary = study
    shared = {r["arm"]: r for r in summary["shared"]}
    assert set(shared) == MPTCP_ARMS | {"single"}
    alone = shared["single"]["tcp_on_lte_bps"]["mean"]
    runs = store.load(out / "store")
    for arm in MPTCP_ARMS:
        r = shared[arm]
        on_lte, tcp = r["mptcp_on_lte_bps"]["mean"], r["tcp_on_lte_bps"]["mean"]
        assert 0 < on_lte and tcp < alone, f"{arm}: MP-TCP's LTE subflow takes from the TCP flow: {r}"
        # The bearer is the bottleneck: the two together get about what TCP alone gets.
        assert on_lte + tcp == pytest.approx(alone, rel=0.15), r
        if arm != "uncoupled":
            assert on_lte <= 1.1 * tcp, f"{arm}: RFC 6356 goal 2, no more than a single-path flow: {r}"
        row = runs[(runs["scenario"] == "mptcp-shared") & (runs["arm"] == arm)]
        lte = row["flows.0.mptcp.subflows.1.acked_bytes"].item() * 8 / 3.0
        assert r["jain_index"]["mean"] == pytest.approx(jain_index(lte, row["flows.1.goodput_bps"].item()))


def test_jain_index_is_one_when_equal_and_a_half_when_one_takes_all():
    assert jain_index(5.0, 5.0) == pytest.approx(1.0)
    assert jain_index(7.0, 0.0) == pytest.approx(0.5)
    assert jain_index(1.0, 3.0) == pytest.approx(16 / 20)
