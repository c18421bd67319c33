#!/usr/bin/env python3
"""Writes maps/bench-64.json: the default arena with 64 crates and 32 respawns per team.

The benchmark map for tick-cost figures at 8-64 tanks (`vimp sim --map maps/bench-64.json`).
Deterministic: the same default map gives the same file.
"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
m = json.loads((root / "maps/default.json").read_text())
ts = m["tileSize"]
grid = m["map"]
solid = set(m["physicsStatic"])
rows, cols = len(grid), len(grid[0])


def free_rect(x, y, w, h, boxes, margin=6):
    if x < ts or y < ts or x + w > (cols - 1) * ts or y + h > (rows - 1) * ts:
        return False
    for c in range(int((x - margin) // ts), int((x + w + margin) // ts) + 1):
        for r in range(int((y - margin) // ts), int((y + h + margin) // ts) + 1):
            if 0 <= r < rows and 0 <= c < cols and grid[r][c] in solid:
                return False
    for (bx, by, bw, bh) in boxes:
        if x < bx + bw + margin and bx < x + w + margin and y < by + bh + margin and by < y + h + margin:
            return False
    return True


boxes = [(o["x"], o["y"], o["width"], o["height"]) for o in m["physicsDynamic"]]
# Respawn columns near each side wall: 32 points per team, tanks 40x30 need ~48 units.
respawns = {"1": [], "2": []}
for team, xs, angle in (("1", (72, 136, 200, 264), 0), ("2", ((cols * ts) - 72, (cols * ts) - 136, (cols * ts) - 200, (cols * ts) - 264), 180)):
    for x in xs:
        for k in range(rows - 2):
            y = ts * 1.5 + k * ((rows - 3) * ts / (rows - 3))
            if len(respawns[team]) >= 32:
                break
            if free_rect(x - 24, y - 24, 48, 48, boxes, margin=0) and all(abs(p[0] - x) + abs(p[1] - y) >= 48 for p in respawns[team]):
                respawns[team].append([x, round(y), angle])
assert all(len(v) == 32 for v in respawns.values()), {k: len(v) for k, v in respawns.items()}
spawn_zones = [(40, 0, 280, rows * ts), (cols * ts - 320, 0, 280, rows * ts)]
crates = list(m["physicsDynamic"])
seed = 12345
while len(crates) < 64:
    seed = (seed * 1103515245 + 12345) % (1 << 31)
    x = 340 + seed % (cols * ts - 700)
    seed = (seed * 1103515245 + 12345) % (1 << 31)
    y = 50 + seed % (rows * ts - 120)
    size = 24 + (seed >> 8) % 9
    if free_rect(x, y, size, size, boxes + spawn_zones, margin=10):
        crates.append({"x": x, "y": y, "width": size, "height": size})
        boxes.append((x, y, size, size))
m["name"] = "Arena (benchmark: 64 crates, 32 respawns a team)"
m["physicsDynamic"] = crates
m["respawns"] = respawns
# One grid row and one crate per line, as in the hand-kept maps.
out = ["{"]
keys = list(m)
for i, k in enumerate(keys):
    v = m[k]
    end = "," if i < len(keys) - 1 else ""
    if k == "map":
        out.append('  "map": [')
        out += ["    " + json.dumps(r, separators=(", ", ": ")) + ("," if j < len(v) - 1 else "") for j, r in enumerate(v)]
        out.append("  ]" + end)
    elif k in ("physicsDynamic",):
        out.append(f'  "{k}": [')
        out += ["    " + json.dumps(o, separators=(", ", ": ")) + ("," if j < len(v) - 1 else "") for j, o in enumerate(v)]
        out.append("  ]" + end)
    else:
        out.append(f"  {json.dumps(k)}: {json.dumps(v, separators=(', ', ': '))}{end}")
out.append("}")
(root / "maps/bench-64.json").write_text("\n".join(out) + "\n")
print(f"maps/bench-64.json: {len(crates)} crates, respawns {[len(v) for v in respawns.values()]}")
