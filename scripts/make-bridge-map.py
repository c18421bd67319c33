#!/usr/bin/env python3
"""Writes maps/bridge.json: "Overpass", a layered map whose bridge crosses a wall band over ground traffic.

40×32 tiles of 32 units. A wall band (columns 19 and 20) splits the ground into a west and an
east half, joined on the ground by two doors (north and south) three tiles wide. Across the
middle, a bridge on level 1 (rows 15 and 16, railed on rows 14 and 17) spans the band from
column 12 to 27; on the ground, under it, tanks drive north and south on either side of the
band. Two ramps four tiles long lead up to it: one from the west (columns 8 to 11, rising
east) and one from the east (columns 28 to 31, rising west). North of the bridge, over
columns 23 to 25, its rail is left out: a ledge to drop off onto the ground. A crate stands on
the bridge, and each team has one respawn point on it (the rest on the ground, at the map's
ends). Deterministic: the same script gives the same file.
"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
TS = 32
COLS, ROWS = 40, 32
FLOOR, OUTER, INNER, PAD, RAMP_W, RAMP_E = 0, 1, 2, 3, 5, 6
SLAB, RAIL = 9, 7

grid = [[FLOOR] * COLS for _ in range(ROWS)]
for r in range(ROWS):
    for c in range(COLS):
        if r in (0, ROWS - 1) or c in (0, COLS - 1):
            grid[r][c] = OUTER
        elif c in (19, 20) and not (4 <= r <= 6 or 25 <= r <= 27):
            grid[r][c] = INNER

# Pillars (2×2) for cover, two a side, clear of the ramps and the ground under the bridge.
for r, c in [(6, 9), (24, 9), (6, 29), (24, 29)]:
    for dr in (0, 1):
        for dc in (0, 1):
            grid[r + dr][c + dc] = INNER

# The ramps: four cells long, two lanes wide, on the ground's grid.
for r in (15, 16):
    for c in range(8, 12):
        grid[r][c] = RAMP_W
    for c in range(28, 32):
        grid[r][c] = RAMP_E

level1 = [[0] * COLS for _ in range(ROWS)]
for c in range(12, 28):
    level1[15][c] = level1[16][c] = SLAB
    level1[14][c] = level1[17][c] = RAIL
for c in range(23, 26):
    level1[14][c] = 0  # the ledge: no rail, a drop onto the ground north of the bridge

respawns = {"1": [], "2": []}
for team, col, angle in (("1", 3, 0), ("2", COLS - 4, 180)):
    for row in (3, 7, 11, 19, 23, 27, 29):
        grid[row][col] = PAD
        respawns[team].append([col * TS + TS // 2, row * TS + TS // 2, angle])
# One point a team on the bridge, on level 1 (its 4th number).
respawns["1"].append([14 * TS + TS // 2, 15 * TS + TS, 0, 1])
respawns["2"].append([25 * TS + TS // 2, 15 * TS + TS, 180, 1])

crates = []
for c, r in [(5, 13), (15, 4), (15, 27), (24, 4), (24, 27), (34, 18), (12, 21), (27, 10)]:
    assert grid[r][c] == FLOOR, (c, r)
    crates.append({"x": c * TS + 2, "y": r * TS + 2, "width": 28, "height": 28})
# A crate on the bridge.
crates.append({"x": 17 * TS + 4, "y": 15 * TS + 4, "width": 24, "height": 24, "level": 1})

m = {
    "name": "Overpass",
    "setId": "c1",
    "tileSize": TS,
    "map": grid,
    "physicsStatic": [OUTER, INNER],
    "physicsDynamic": crates,
    "respawns": respawns,
    "layers": {"floor": [FLOOR, PAD], "ramps": [RAMP_W, RAMP_E], "walls": [OUTER, INNER]},
    "volumes": {"walls": 0.8},
    "levels": {"1": {"map": level1, "floor": [SLAB, RAIL], "walls": [RAIL],
                     "layers": {"slab": [SLAB], "rails": [RAIL]}, "volumes": {"rails": 0.3}}},
    "ramps": [{"tile": RAMP_W, "dir": "east", "from": 0, "to": 1},
              {"tile": RAMP_E, "dir": "west", "from": 0, "to": 1}],
}


def rows(g, indent):
    return ",\n".join(indent + json.dumps(row, separators=(",", ":")) for row in g)


text = json.dumps(m, indent=2)
# The grids one row per line, so that diffs show which tiles changed.
text = text.replace(json.dumps(grid, indent=2).replace("\n", "\n  "), "[\n" + rows(grid, "    ") + "\n  ]", 1)
text = text.replace(json.dumps(level1, indent=2).replace("\n", "\n      "), "[\n" + rows(level1, "        ") + "\n      ]", 1)
(root / "maps/bridge.json").write_text(text + "\n")
print(f"wrote maps/bridge.json: {COLS}×{ROWS} tiles, {len(crates)} crates, a bridge on level 1, 2 ramps")
