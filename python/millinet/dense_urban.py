"""The `dense-urban` scenario (docs/studies.md#dense): a street grid of micro gNBs on one 28 GHz
carrier, its blocks buildings with indoor UEs, and walking UEs on its streets, each with one
download. The shipped `scenarios/dense-urban.toml` is `scenario_text()` with its defaults (a
test holds them equal); other sizes are a call away:

    python -m millinet.dense_urban --ues 1000 --columns 8 --rows 5 > big.toml

The layout is part of the scenario, not of a run: UEs are placed with their own generator
seed (`layout_seed`), so every run seed sees the same streets, cells and UEs and draws only
its channel (shadowing) and protocols.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass

PITCH_M = 100.0  # street centre to street centre
STREET_M = 20.0  # street width: blocks are 80 m × 80 m
SIDEWALK_M = 7.0  # pedestrians walk this far from a street's centre line
GNB_HEIGHT_M = 10.0  # micro cells below the rooftops (TR 38.901 UMi street canyon)
WALK_MPS = 1.4


@dataclass(frozen=True)
class Layout:
    columns: int = 4  # blocks along x
    rows: int = 3  # blocks along y
    ues: int = 100
    indoor_share: float = 0.2
    duration_s: float = 10.0
    layout_seed: int = 1

    @property
    def width_m(self) -> float:
        return self.columns * PITCH_M

    @property
    def depth_m(self) -> float:
        return self.rows * PITCH_M


def blocks(layout: Layout) -> list[tuple[float, float, float, float, float, str]]:
    """Every block a building: (x, y, width, depth, height, o2i). Heights 20–40 m in a fixed
    pattern; façades alternate between low-loss and high-loss glass."""
    out = []
    for r in range(layout.rows):
        for c in range(layout.columns):
            height = 20.0 + 10.0 * ((c + 2 * r) % 3)
            o2i = "low-loss" if (c + r) % 2 == 0 else "high-loss"
            out.append((c * PITCH_M + STREET_M / 2, r * PITCH_M + STREET_M / 2, PITCH_M - STREET_M, PITCH_M - STREET_M, height, o2i))
    return out


def cells(layout: Layout) -> list[tuple[float, float]]:
    """Micro gNBs at mid-block on the east–west streets, staggered from street to street: on
    street y = k·pitch at x = (2j + 1/2 + (k mod 2))·pitch for every such x inside the grid."""
    out = []
    for k in range(layout.rows + 1):
        x = (0.5 + (k % 2)) * PITCH_M
        while x < layout.width_m:
            out.append((x, k * PITCH_M))
            x += 2 * PITCH_M
    return out


def _crosses(a: tuple[float, float], b: tuple[float, float], box: tuple[float, ...]) -> bool:
    """Whether segment a–b crosses the rectangle (x, y, w, d, ...) (Liang–Barsky)."""
    x, y, w, d = box[:4]
    dx, dy = b[0] - a[0], b[1] - a[1]
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, a[0] - x), (dx, x + w - a[0]), (-dy, a[1] - y), (dy, y + d - a[1])):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
    return t0 <= t1


def serving_cell(at: tuple[float, float], cell_positions: list[tuple[float, float]], buildings, inside=None) -> int:
    """The nearest cell with a clear street-level path (an indoor UE's own building aside), else
    the nearest: the start the handover corrects within its time to trigger."""
    def distance(k: int) -> float:
        return math.dist(at, cell_positions[k])

    clear = [k for k, c in enumerate(cell_positions) if not any(_crosses(c, at, b) for b in buildings if b is not inside)]
    return min(clear or range(len(cell_positions)), key=distance)


def _outdoor_route(layout: Layout, rng: random.Random) -> list[tuple[float, float]]:
    """A walk along a street: a random street, side and start, straight on for the run
    (turning back at the grid's edge)."""
    length = WALK_MPS * layout.duration_s
    if rng.random() < 0.5:  # east–west street
        street_y = rng.randrange(layout.rows + 1) * PITCH_M + rng.choice((-1, 1)) * SIDEWALK_M
        x0 = rng.uniform(0, layout.width_m)
        x1 = x0 + length if x0 + length <= layout.width_m else x0 - length
        return [(x0, street_y), (x1, street_y)]
    street_x = rng.randrange(layout.columns + 1) * PITCH_M + rng.choice((-1, 1)) * SIDEWALK_M
    y0 = rng.uniform(0, layout.depth_m)
    y1 = y0 + length if y0 + length <= layout.depth_m else y0 - length
    return [(street_x, y0), (street_x, y1)]


def _indoor_route(building, rng: random.Random) -> list[tuple[float, float]]:
    """A slow walk inside a building, 3–20 m behind one of its façades, parallel to it."""
    x, y, w, d = building[:4]
    depth = rng.uniform(3.0, 20.0)
    along = rng.uniform(10.0, w - 20.0)
    side = rng.randrange(4)
    start, step = {
        0: ((x + along, y + depth), (1, 0)),  # behind the south façade
        1: ((x + along, y + d - depth), (1, 0)),  # north
        2: ((x + depth, y + along), (0, 1)),  # west
        3: ((x + w - depth, y + along), (0, 1)),  # east
    }[side]
    walk = 8.0
    return [start, (start[0] + step[0] * walk, start[1] + step[1] * walk)]


def scenario_text(layout: Layout = Layout()) -> str:
    """The scenario as TOML text."""
    rng = random.Random(layout.layout_seed)
    buildings = blocks(layout)
    cell_positions = cells(layout)
    indoor = round(layout.ues * layout.indoor_share)
    lines = [
        f'description = "Dense urban street grid (docs/studies.md#dense): {len(cell_positions)} micro gNBs on one 28 GHz carrier '
        f"(400 MHz, interfering), {len(buildings)} buildings, {layout.ues} walking UEs ({indoor} indoors) with handover, "
        'a CUBIC download each, 1.5 MB RLC per UE"',
        f"duration_s = {layout.duration_s}",
        "seed = 1",
        "",
        "# Generated by python/millinet/dense_urban.py (edit the generator, not this file).",
        "",
        "[outputs]",
        "sample_step_s = 0.01",
        "goodput_bin_s = 0.1",
        "",
        "[handover]",
        "enabled = true",
        "",
        '[[nodes]]\nname = "server"\n',
        '[[nodes]]\nname = "pgw"\n',
    ]
    lines += [f'[[nodes]]\nname = "gnb{k}"\n' for k in range(len(cell_positions))]
    lines += [f'[[nodes]]\nname = "ue{u:03d}"\n' for u in range(layout.ues)]
    lines.append('[[links]]\na = "server"\nb = "pgw"\nrate_bps = 100e9\ndelay_s = 0.005\nqueue_bytes = 100_000_000\n')
    lines += [f'[[links]]\na = "pgw"\nb = "gnb{k}"\nrate_bps = 100e9\ndelay_s = 0.001\nqueue_bytes = 100_000_000\n' for k in range(len(cell_positions))]
    lines.append("# Micro gNBs 10 m high on the east-west streets: UMi street canyon, 28 GHz, 400 MHz (1.28 Gbit/s peak).")
    for k, (x, y) in enumerate(cell_positions):
        lines.append(
            f'[[cells]]\nnode = "gnb{k}"\nposition_m = [{x:.1f}, {y:.1f}]\nheight_m = {GNB_HEIGHT_M}\npathloss = "umi"\n'
            "fc_ghz = 28.0\nbandwidth_hz = 400e6\npeak_rate_bps = 1.28e9\n"
        )
    lines.append("# Every block a building; an indoor UE inside one is NLOS to every cell, behind its façade.")
    for x, y, w, d, h, o2i in buildings:
        lines.append(f'[[obstacles]]\nx_m = {x:.1f}\ny_m = {y:.1f}\nwidth_m = {w:.1f}\ndepth_m = {d:.1f}\nheight_m = {h:.1f}\no2i = "{o2i}"\n')
    for u in range(layout.ues):
        if u < indoor:
            building = buildings[rng.randrange(len(buildings))]
            route = _indoor_route(building, rng)
            extra, speed, inside = "indoor = true\n", 0.8, building
        else:
            route = _outdoor_route(layout, rng)
            extra, speed, inside = "", WALK_MPS, None
        cell = serving_cell(route[0], cell_positions, buildings, inside)
        points = ", ".join(f"[{x:.1f}, {y:.1f}]" for x, y in route)
        lines.append(f'[[ues]]\nnode = "ue{u:03d}"\ncell = "gnb{cell}"\nroute_m = [{points}]\nspeed_mps = {speed}\n{extra}rlc_buffer_bytes = 1_500_000\n')
    lines += [f'[[flows]]\nsrc = "server"\ndst = "ue{u:03d}"\ncc = "cubic"\n' for u in range(layout.ues)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Layout()
    for field in ("columns", "rows", "ues", "layout_seed"):
        parser.add_argument(f"--{field.replace('_', '-')}", type=int, default=getattr(defaults, field))
    parser.add_argument("--duration-s", type=float, default=defaults.duration_s)
    args = parser.parse_args()
    print(scenario_text(Layout(columns=args.columns, rows=args.rows, ues=args.ues, duration_s=args.duration_s, layout_seed=args.layout_seed)), end="")


if __name__ == "__main__":
    main()
