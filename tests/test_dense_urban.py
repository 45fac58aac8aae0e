"""The shipped `dense-urban` scenario is what its generator writes (python/millinet/dense_urban.py),
and the generator's layout holds what docs/studies.md#dense promises of it."""

from __future__ import annotations

from millinet import dense_urban
from millinet._toml import tomllib
from millinet.catalog import SCENARIO_DIR


def test_the_shipped_file_is_the_generators():
    assert (SCENARIO_DIR / "dense-urban.toml").read_text() == dense_urban.scenario_text()


def test_the_layout():
    s = tomllib.loads(dense_urban.scenario_text())
    cells = s["cells"]
    assert len(cells) >= 7 and {c["fc_ghz"] for c in cells} == {28.0}
    assert len(s["ues"]) >= 100 and s["handover"]["enabled"]
    indoor = [u for u in s["ues"] if u.get("indoor")]
    assert len(indoor) == 20
    boxes = [(o["x_m"], o["y_m"], o["x_m"] + o["width_m"], o["y_m"] + o["depth_m"]) for o in s["obstacles"]]

    def inside(p):
        return any(x0 <= p[0] <= x1 and y0 <= p[1] <= y1 for x0, y0, x1, y1 in boxes)

    # Indoor UEs walk inside a building, the others on the streets between and around them
    # (the outer streets' far sidewalks 7 m past the grid); each gets one download.
    for u in s["ues"]:
        assert all(inside(p) == bool(u.get("indoor")) for p in u["route_m"]), u
        assert all(-7 <= p[0] <= 407 and -7 <= p[1] <= 307 for p in u["route_m"]), u
    assert sorted(f["dst"] for f in s["flows"]) == sorted(u["node"] for u in s["ues"])
    # Sizes scale: a bigger grid has more cells and the UEs asked for.
    big = tomllib.loads(dense_urban.scenario_text(dense_urban.Layout(columns=8, rows=5, ues=300)))
    assert len(big["cells"]) > len(cells) and len(big["ues"]) == 300
