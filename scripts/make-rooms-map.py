#!/usr/bin/env python3
"""Writes maps/rooms.json: six rooms joined by doors two tiles wide, for bots that must find their way.

48×32 tiles of 32 units like the default arena, cut by inner walls into a 3×2 grid of rooms
of about 15×15 tiles. Each wall between two rooms has one door 2 tiles (64 units) wide; every
room has a pillar and a few crates, none of them in a doorway. Team 1 starts in the two left
rooms, team 2 in the two right ones, so every fight needs a route through at least two doors.
Deterministic: the same script gives the same file.
"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
TS = 32
COLS, ROWS = 48, 32
FLOOR, OUTER, INNER, PAD = 0, 1, 2, 3

grid = [[FLOOR] * COLS for _ in range(ROWS)]
for r in range(ROWS):
    for c in range(COLS):
        if r in (0, ROWS - 1) or c in (0, COLS - 1):
            grid[r][c] = OUTER
        elif c in (16, 32) or r == 16:
            grid[r][c] = INNER

# Doors, two tiles each: (row, col) of their first tile and the direction they run along.
doors = [
    ((6, 16), "down"), ((24, 16), "down"),    # left rooms ↔ middle rooms
    ((9, 32), "down"), ((21, 32), "down"),    # middle rooms ↔ right rooms
    ((16, 7), "right"), ((16, 24), "right"), ((16, 40), "right"),  # top rooms ↔ bottom rooms
]
for (r, c), way in doors:
    for k in range(2):
        rr, cc = (r + k, c) if way == "down" else (r, c + k)
        grid[rr][cc] = FLOOR

# A pillar (2×2) in every room, off its middle.
for r, c in [(5, 9), (9, 23), (5, 38), (24, 6), (21, 24), (25, 40)]:
    for dr in (0, 1):
        for dc in (0, 1):
            grid[r + dr][c + dc] = INNER

respawns = {"1": [], "2": []}
for team, col, angle in (("1", 3, 0), ("2", COLS - 4, 180)):
    for row in (3, 7, 11, 14, 18, 22, 26, 29):
        grid[row][col] = PAD
        respawns[team].append([col * TS + TS // 2, row * TS + TS // 2, angle])

# Crates: (col, row) of the tile their corner sits in, offset into it.
crates = []
for c, r in [(6, 12), (12, 3), (20, 4), (27, 12), (35, 6), (44, 12), (10, 20), (20, 27), (27, 19), (36, 27), (44, 19),
             (13, 28)]:
    assert grid[r][c] == FLOOR, (c, r)
    crates.append({"x": c * TS + 2, "y": r * TS + 2, "width": 28, "height": 28})

m = {
    "name": "Rooms",
    "setId": "c1",
    "tileSize": TS,
    "map": grid,
    "physicsStatic": [OUTER, INNER],
    "physicsDynamic": crates,
    "respawns": respawns,
    "layers": {"floor": [FLOOR, PAD], "walls": [OUTER, INNER]},
}
text = "{\n" + ",\n".join(f'  "{k}": {json.dumps(v, separators=(",", ":")) if k != "map" else ""}' for k, v in m.items()) + "\n}\n"
# The grid one row per line, so that diffs show which tiles changed.
rows = ",\n".join("    " + json.dumps(row, separators=(",", ":")) for row in grid)
text = text.replace('"map": ', '"map": [\n' + rows + "\n  ]", 1)
(root / "maps/rooms.json").write_text(text)
print(f"wrote maps/rooms.json: {COLS}×{ROWS} tiles, {len(crates)} crates, {len(doors)} doors")
