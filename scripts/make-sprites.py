#!/usr/bin/env python3
"""Writes the game's sprites into assets/sprites/ as RGBA PNGs.

Standard library only (PNG encoding with zlib + struct) and deterministic: no
randomness, so the same script always writes the same bytes. Shapes are drawn
as signed-distance tests sampled 4x4 per pixel, which anti-aliases the edges
(2x2 for the floor and explosion, which have no hard edges).

Every sprite faces +x (heading 0 points right), seen from above. Pixel
coordinates below have their origin at the top-left corner, y down. Sprites
drawn at 2 px per world unit: the hull (80x60 px = 40x30 units), the turret
(64x24 px), and the 64x64 tiles (32x32 units on the map).

    python3 scripts/make-sprites.py            # writes assets/sprites/*.png and assets/icon.png
    python3 scripts/make-sprites.py OUT_DIR    # writes elsewhere
"""
import math
import pathlib
import struct
import sys
import zlib

SS = 4  # supersamples per pixel along each axis

# --------------------------------------------------------------------------
# PNG output


def png_bytes(w, h, rgba):
    """rgba: bytes of length w*h*4, rows top to bottom."""

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    stride = w * 4
    raw = bytearray()
    prev = bytes(stride)
    for y in range(h):
        row = rgba[y * stride:(y + 1) * stride]
        # per row, the filter (None/Sub/Up/Paeth) with the smallest residuals
        best = None
        for ftype in (0, 1, 2, 4):
            f = filter_row(ftype, row, prev)
            score = sum(b if b < 128 else 256 - b for b in f)
            if best is None or score < best[0]:
                best = (score, ftype, f)
        raw.append(best[1])
        raw += best[2]
        prev = row
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b""))


def filter_row(ftype, row, prev):
    n = len(row)
    out = bytearray(n)
    for i in range(n):
        a = row[i - 4] if i >= 4 else 0
        b = prev[i]
        c = prev[i - 4] if i >= 4 else 0
        if ftype == 0:
            p = 0
        elif ftype == 1:
            p = a
        elif ftype == 2:
            p = b
        else:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        out[i] = (row[i] - p) & 0xFF
    return out


# --------------------------------------------------------------------------
# Rendering: shade(x, y) -> (r, g, b, a), straight alpha, floats in 0..1


def render(w, h, shade, ss=SS):
    """Averages ss*ss samples per pixel (premultiplied), returns RGBA bytes."""
    out = bytearray(w * h * 4)
    offs = [(i + 0.5) / ss for i in range(ss)]
    n = ss * ss
    k = 0
    for py in range(h):
        for px in range(w):
            R = G = B = A = 0.0
            for oy in offs:
                for ox in offs:
                    r, g, b, a = shade(px + ox, py + oy)
                    R += r * a
                    G += g * a
                    B += b * a
                    A += a
            if A > 0:
                r, g, b = R / A, G / A, B / A
            else:
                r = g = b = 0.0
            out[k] = q(r)
            out[k + 1] = q(g)
            out[k + 2] = q(b)
            out[k + 3] = q(A / n)
            k += 4
    bleed(w, h, out)
    return bytes(out)


def bleed(w, h, px, passes=3):
    """Gives fully transparent pixels the average colour of their visible
    neighbours (alpha stays 0), so linear filtering doesn't pull dark fringes
    into the edges."""
    for _ in range(passes):
        fill = []
        for y in range(h):
            for x in range(w):
                k = (y * w + x) * 4
                if px[k + 3] or px[k] or px[k + 1] or px[k + 2]:
                    continue
                r = g = b = n = 0
                for dy in (-1, 0, 1):
                    for dx in (-1, 0, 1):
                        xx, yy = x + dx, y + dy
                        if 0 <= xx < w and 0 <= yy < h:
                            j = (yy * w + xx) * 4
                            if px[j + 3] or px[j] or px[j + 1] or px[j + 2]:
                                r += px[j]
                                g += px[j + 1]
                                b += px[j + 2]
                                n += 1
                if n:
                    fill.append((k, r // n, g // n, b // n))
        for k, r, g, b in fill:
            px[k], px[k + 1], px[k + 2] = r, g, b


def q(v):
    return max(0, min(255, int(round(v * 255))))


def clamp(v, lo=0.0, hi=1.0):
    return lo if v < lo else hi if v > hi else v


def lerp(a, b, t):
    return a + (b - a) * t


def mix(c0, c1, t):
    return tuple(lerp(a, b, t) for a, b in zip(c0, c1))


def smoothstep(e0, e1, x):
    t = clamp((x - e0) / (e1 - e0))
    return t * t * (3 - 2 * t)


def grey(v, a=1.0):
    return (v, v, v, a)


def hexc(s, a=1.0):
    s = s.lstrip("#")
    return (int(s[0:2], 16) / 255, int(s[2:4], 16) / 255, int(s[4:6], 16) / 255, a)


def shadef(c, f):
    """Scales a colour's rgb by f (keeps alpha)."""
    return (clamp(c[0] * f), clamp(c[1] * f), clamp(c[2] * f), c[3])


def over(dst, src):
    """src over dst, straight alpha."""
    sa = src[3]
    if sa >= 1.0:
        return src
    if sa <= 0.0:
        return dst
    da = dst[3] * (1 - sa)
    a = sa + da
    return (
        (src[0] * sa + dst[0] * da) / a,
        (src[1] * sa + dst[1] * da) / a,
        (src[2] * sa + dst[2] * da) / a,
        a,
    )


CLEAR = (0.0, 0.0, 0.0, 0.0)

# Signed distances: negative inside.


def sd_box(x, y, x0, y0, x1, y1, r=0.0):
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 - r, (y1 - y0) / 2 - r
    dx, dy = abs(x - cx) - hx, abs(y - cy) - hy
    outside = math.hypot(max(dx, 0.0), max(dy, 0.0))
    return outside + min(max(dx, dy), 0.0) - r


def sd_circle(x, y, cx, cy, r):
    return math.hypot(x - cx, y - cy) - r


def sd_segment(x, y, ax, ay, bx, by, r):
    px, py = x - ax, y - ay
    vx, vy = bx - ax, by - ay
    t = clamp((px * vx + py * vy) / (vx * vx + vy * vy))
    return math.hypot(px - vx * t, py - vy * t) - r


def box_edge_light(x, y, x0, y0, x1, y1):
    """+1 on the top/left faces, -1 on the bottom/right faces of a box, blending
    at the corners: the bevel lighting for light coming from the top-left."""
    dl, dr, dt, db = x - x0, x1 - x, y - y0, y1 - y
    dh = min(dl, dr)
    dv = min(dt, db)
    sh = 1.0 if dl < dr else -1.0
    sv = 1.0 if dt < db else -1.0
    # weight by which edge is nearer, softly
    t = smoothstep(-1.5, 1.5, dh - dv)  # 0: horizontal face nearer, 1: vertical
    return lerp(sh, sv, t), min(dh, dv)


# Deterministic, tileable value noise.


def hash2(ix, iy, seed=0):
    h = (ix * 374761393 + iy * 668265263 + seed * 2147483647) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 1274126177) & 0xFFFFFFFF
    h ^= h >> 16
    return (h & 0xFFFF) / 65535.0


def vnoise(x, y, period, size, seed=0):
    """Value noise on a lattice of `period` cells across `size` pixels; wraps."""
    cell = size / period
    fx, fy = x / cell, y / cell
    ix, iy = math.floor(fx), math.floor(fy)
    tx, ty = fx - ix, fy - iy
    tx = tx * tx * (3 - 2 * tx)
    ty = ty * ty * (3 - 2 * ty)
    x0, x1 = ix % period, (ix + 1) % period
    y0, y1 = iy % period, (iy + 1) % period
    a = hash2(x0, y0, seed)
    b = hash2(x1, y0, seed)
    c = hash2(x0, y1, seed)
    d = hash2(x1, y1, seed)
    return lerp(lerp(a, b, tx), lerp(c, d, tx), ty)


def fbm(x, y, size, seed, periods=(4, 8, 16)):
    """Sum of octaves in -0.5..0.5 (roughly), tileable over size."""
    total, amp, norm = 0.0, 1.0, 0.0
    for i, p in enumerate(periods):
        total += (vnoise(x, y, p, size, seed + i) - 0.5) * amp
        norm += amp
        amp *= 0.5
    return total / norm


# --------------------------------------------------------------------------
# Tank hull: 80x60, heading +x, pivot at the centre (40, 30).

HULL_W, HULL_H = 80, 60
OUTLINE = 0.16


def hull(x, y):
    c = CLEAR
    # tracks: long sides, full length
    for (t0, t1) in ((2.0, 17.0), (43.0, 58.0)):
        d = sd_box(x, y, 1.5, t0, 78.5, t1, 3.0)
        if d < 0:
            if d > -1.25:
                c = grey(OUTLINE)
            else:
                v = 0.50
                # tread bars across the track, every 5 px
                tx = (x - 1.5) % 5.0
                if tx < 1.6:
                    v = 0.33
                # rounded-track shading: darker toward the outer edge
                mid = (t0 + t1) / 2
                v *= 1.0 - 0.25 * (abs(y - mid) / ((t1 - t0) / 2)) ** 2
                c = grey(v)
    # body between the tracks, slightly shorter
    bx0, by0, bx1, by1 = 6.0, 11.0, 74.0, 49.0
    d = sd_box(x, y, bx0, by0, bx1, by1, 4.0)
    if d < 0:
        if d > -1.4:
            c = grey(OUTLINE)
        else:
            v = 0.88  # ~#e0e0e0
            side, dist = box_edge_light(x, y, bx0, by0, bx1, by1)
            if -d < 4.5:
                v = 0.97 if side > 0 else 0.66
                v = lerp(0.88, v, abs(side))
                # thin line separating bevel from the deck
                if -d > 3.6:
                    v *= 0.86
            # rear engine deck: three slats
            for sx in (12.0, 17.0, 22.0):
                if sd_box(x, y, sx, 19.0, sx + 2.2, 41.0, 1.0) < 0:
                    v = 0.62
            # front marker: a chevron ">" spanning the width (shows the
            # heading even when the turret covers the middle)
            if (sd_segment(x, y, 56.0, 17.5, 66.5, 30.0, 1.9) < 0
                    or sd_segment(x, y, 66.5, 30.0, 56.0, 42.5, 1.9) < 0):
                v = 0.30
            c = grey(v)
    return c


# --------------------------------------------------------------------------
# Turret: 64x24, pivot (turret centre) at pixel (16, 12), barrel along +x.

TUR_W, TUR_H = 64, 24
TUR_CX, TUR_CY, TUR_R = 16.0, 12.0, 11.0


def turret(x, y):
    c = CLEAR
    # barrel
    d = sd_box(x, y, 16.0, 9.0, 58.0, 15.0, 0.8)
    dm = sd_box(x, y, 54.0, 7.5, 63.5, 16.5, 1.2)  # muzzle brake
    for (dd, y0, y1) in ((d, 9.0, 15.0), (dm, 7.5, 16.5)):
        if dd < 0:
            if dd > -1.2:
                c = grey(OUTLINE)
            else:
                # cylinder shading across the barrel: lit from above
                t = (y - y0) / (y1 - y0)
                v = 0.93 - 0.32 * t * t
                if dd is dm and abs(x - 58.5) < 0.6:
                    v = 0.45  # seam on the muzzle brake
                c = grey(v)
    # turret body
    d = sd_circle(x, y, TUR_CX, TUR_CY, TUR_R)
    if d < 0:
        if d > -1.4:
            c = grey(OUTLINE)
        else:
            # dome shading, light from the top-left
            dx, dy = (x - TUR_CX) / TUR_R, (y - TUR_CY) / TUR_R
            lit = -(dx + dy) * 0.7071
            v = 0.86 + 0.10 * lit - 0.10 * (dx * dx + dy * dy)
            # commander's hatch, toward the back
            h = sd_circle(x, y, 12.5, 12.0, 3.6)
            if h < 0:
                v = 0.70 if h > -0.9 else v + 0.04
            c = grey(clamp(v))
    return c


# --------------------------------------------------------------------------
# Crate: 64x64, wooden crate from above.

WOOD = hexc("#b07a42")
WOOD_DARK = hexc("#5a3a1c")
FRAME = hexc("#7e5128")


def crate(x, y):
    d = sd_box(x, y, 1.0, 1.0, 63.0, 63.0, 2.0)
    if d >= 0:
        return CLEAR
    if d > -1.2:
        return WOOD_DARK
    # plank field: four horizontal planks inside the frame
    plank = int((y - 1.0) // 15.5)
    grain = 0.06 * math.sin(y * 1.9 + plank * 2.3 + 0.5 * math.sin(x * 0.21 + plank))
    c = shadef(WOOD, 1.0 + grain + (0.05, -0.04, 0.02, -0.02, 0.0)[min(plank, 4)])
    if (y - 1.0) % 15.5 < 1.1:
        c = shadef(WOOD_DARK, 1.1)
    # cross brace: both diagonals between the frame's inner corners
    for (ax, ay, bx, by) in ((10, 10, 54, 54), (54, 10, 10, 54)):
        db = sd_segment(x, y, ax, ay, bx, by, 4.2)
        if db < 0:
            if db > -1.0:
                c = WOOD_DARK
            else:
                # grain runs along the board
                g = 0.04 * math.sin((x - y if bx > ax else x + y) * 0.9)
                c = shadef(FRAME, 1.12 + g)
    # frame: 8 px border
    inner = sd_box(x, y, 9.0, 9.0, 55.0, 55.0, 0.5)
    if inner > 0:
        side, dist = box_edge_light(x, y, 1.0, 1.0, 63.0, 63.0)
        f = 1.0 + 0.16 * side * (1.0 - smoothstep(0.0, 3.0, dist))
        g = 0.04 * math.sin((y if abs(x - 32) > abs(y - 32) else x) * 0.8)
        c = shadef(FRAME, f + g)
        if inner < 1.1:
            c = WOOD_DARK
        # nails at the corners
        for (nx, ny) in ((5, 5), (59, 5), (5, 59), (59, 59)):
            if sd_circle(x, y, nx, ny, 1.4) < 0:
                c = hexc("#3a2a1c")
    elif inner > -1.0:
        c = shadef(WOOD_DARK, 0.9)  # shadow line just inside the frame
    return c


# --------------------------------------------------------------------------
# Floor: 64x64 seamless ground tile.

FLOOR = hexc("#3b4239")


def floor(x, y):
    n = fbm(x, y, 64, 11, (8, 16, 32))
    fine = hash2(int(x) % 64, int(y) % 64, 5) - 0.5
    f = 1.0 + 0.13 * n + 0.03 * fine
    return shadef(FLOOR, f)


# --------------------------------------------------------------------------
# Wall: 64x64 tileable concrete block, bevelled.

WALL = hexc("#8d8b83")


def wall(x, y):
    side, dist = box_edge_light(x, y, 0.0, 0.0, 64.0, 64.0)
    n = fbm(x, y, 64, 3, (8, 16))
    pits = hash2(int(x) % 64, int(y) % 64, 9)
    f = 1.0 + 0.10 * n + (0.035 * (pits - 0.5))
    if pits > 0.985:
        f -= 0.12
    c = shadef(WALL, f)
    if dist < 1.0:
        return shadef(WALL, 0.42)  # joint line between blocks
    if dist < 6.0:
        # bevel faces: lighter toward the light, darker away from it
        k = 1.0 + 0.28 * side
        return shadef(WALL, (k + 0.06 * n) * (0.95 if dist > 5.2 else 1.0))
    return c


# --------------------------------------------------------------------------
# Bomb: 32x32, round and dark, highlight, small red light in the middle.

BOMB = hexc("#2a2d33")


def bomb(x, y):
    cx, cy, r = 16.0, 16.0, 12.0
    c = CLEAR
    d = sd_circle(x, y, cx, cy, r)
    if d < 0:
        if d > -1.2:
            c = grey(0.06)
        else:
            dx, dy = (x - cx) / r, (y - cy) / r
            rr = dx * dx + dy * dy
            f = 1.05 - 0.45 * rr
            c = shadef(BOMB, f)
            # soft specular highlight top-left
            h = math.hypot(x - 10.0, y - 9.5)
            c = mix(c, (0.85, 0.88, 0.95, 1.0), 0.8 * (1.0 - smoothstep(0.0, 3.6, h)))
            # casing seam around the top cap
            if abs(sd_circle(x, y, cx, cy, 7.5)) < 0.5:
                c = shadef(c, 0.55)
            # rim of the light's housing
            if sd_circle(x, y, cx, cy, 4.2) < 0:
                c = grey(0.10)
    # red light with a glow (the glow also spills a bit onto the body)
    dl = math.hypot(x - cx, y - cy)
    if dl < 2.8:
        core = 1.0 - smoothstep(0.0, 2.8, dl)
        c = mix((0.90, 0.08, 0.06, 1.0), (1.0, 0.75, 0.65, 1.0), core * 0.8)
    else:
        glow = 0.55 * (1.0 - smoothstep(2.8, 7.0, dl))
        if glow > 0:
            c = over(c, (1.0, 0.15, 0.10, glow * (1.0 if c[3] > 0 else 0.6)))
    return c


# --------------------------------------------------------------------------
# Explosion: 128x128 radial blast.

EXPL_STOPS = [
    (0.00, (1.00, 1.00, 0.95)),
    (0.18, (1.00, 0.95, 0.60)),
    (0.40, (1.00, 0.66, 0.18)),
    (0.65, (0.93, 0.30, 0.08)),
    (1.00, (0.65, 0.08, 0.04)),
]


def gradient(stops, t):
    t = clamp(t)
    for (t0, c0), (t1, c1) in zip(stops, stops[1:]):
        if t <= t1:
            return mix(c0, c1, (t - t0) / (t1 - t0))
    return stops[-1][1]


def explosion(x, y):
    dx, dy = x - 64.0, y - 64.0
    dist = math.hypot(dx, dy)
    ang = math.atan2(dy, dx)
    # a slightly lumpy rim (integer frequencies, so it closes up)
    wob = 1.0 + 0.05 * math.sin(5 * ang + 0.7) + 0.035 * math.sin(9 * ang + 2.1) \
        + 0.02 * math.sin(14 * ang + 4.0)
    t = dist / (57.0 * wob)
    r, g, b = gradient(EXPL_STOPS, t)
    a = 1.0 - smoothstep(0.38, 1.0, t)
    a = a ** 1.3
    return (r, g, b, a)


# --------------------------------------------------------------------------
# Tracer: 32x4 white streak, soft top/bottom edges, uniform along x.


def tracer(x, y):
    v = abs(y - 2.0) / 2.0  # 0 at the centre line, 1 at the top/bottom edge
    a = (1.0 - v * v) ** 2
    return (1.0, 1.0, 1.0, a)


# --------------------------------------------------------------------------
# Spawn marker: 64x64 thin ring with 4 ticks, white at alpha ~0.5.


def spawn(x, y):
    cx = cy = 32.0
    ring = abs(sd_circle(x, y, cx, cy, 25.0)) - 1.3
    inside = ring < 0
    for (ax, ay, bx, by) in ((cx + 20.0, cy, cx + 30.0, cy),
                             (cx - 20.0, cy, cx - 30.0, cy),
                             (cx, cy + 20.0, cx, cy + 30.0),
                             (cx, cy - 20.0, cx, cy - 30.0)):
        if sd_segment(x, y, ax, ay, bx, by, 1.3) < 0:
            inside = True
    return (1.0, 1.0, 1.0, 0.5) if inside else CLEAR


# --------------------------------------------------------------------------
# Deck: 64x64 seamless tile of a slab above the ground (a bridge's roadway).

DECK = hexc("#5d636c")


def deck(x, y):
    n = fbm(x, y, 64, 21, (8, 16, 32))
    fine = hash2(int(x) % 64, int(y) % 64, 17) - 0.5
    f = 1.0 + 0.10 * n + 0.05 * fine
    # an expansion joint along the tile's west edge: seams across the deck every tile
    if x < 1.5:
        f *= 0.72
    elif x < 2.5:
        f *= 1.12
    return shadef(DECK, f)


# --------------------------------------------------------------------------
# Rail: 64x64, a guard rail running along x over a concrete curb, on a transparent
# tile (the deck shows above and below it). Tiles along x: posts every 32 px.

CURB = hexc("#a29e94")
STEEL = hexc("#c3cad2")
POST = hexc("#3e434a")


def rail(x, y):
    c = CLEAR
    d = sd_box(x, y, -4.0, 10.0, 68.0, 54.0, 0.0)
    if d < 0:
        side, dist = box_edge_light(x, y, -4.0, 10.0, 68.0, 54.0)
        f = 1.0 + 0.04 * fbm(x, y, 64, 31, (8, 16))
        if -d < 1.2:
            f = 0.45  # the curb's outline
        elif -d < 5.0:
            f *= 1.0 + 0.22 * side
        c = shadef(CURB, f)
    # the posts, under the beam
    for px in (16.0, 48.0):
        dp = sd_box(x, y, px - 5.5, 22.0, px + 5.5, 42.0, 1.5)
        if dp < 0:
            c = grey(0.12) if dp > -1.2 else shadef(POST, 1.0 + 0.4 * (1.0 if x < px else -0.3))
    # the beam: a steel bar along x, lit from above
    db = sd_box(x, y, -4.0, 26.0, 68.0, 38.0, 0.0)
    if db < 0:
        if -db < 1.2 and 25.0 < y < 39.0:
            c = grey(0.15)
        else:
            t = (y - 26.0) / 12.0
            c = shadef(STEEL, 1.08 - 0.55 * t * t - (0.25 if abs(t - 0.5) < 0.06 else 0.0))
    return c


# --------------------------------------------------------------------------
# Ramp: 256x64, a wedge's whole run from its foot (x = 0) to its top (x = 256),
# shaded dark at the foot to light at the top, with grooves across it. A run of n
# cells draws cell k with the sprite's columns 256·k/n to 256·(k+1)/n.

RAMP = hexc("#8c8474")


def ramp(x, y):
    t = x / 256.0
    f = 0.50 + 0.55 * t * (1.1 - 0.1 * t)
    f *= 1.0 + 0.06 * fbm(x % 64.0, y, 64, 41, (8, 16))
    if (x % 16.0) < 2.0:
        f *= 0.78  # a groove across the run
    elif (x % 16.0) < 3.0:
        f *= 1.10
    return shadef(RAMP, f)


# --------------------------------------------------------------------------
# Tank outline: 88x68 (the hull's 80x60 with 4 px around it), a white ring along
# the hull's silhouette: a tank hidden under a slab is drawn above it as this.

def tank_outline(x, y):
    hx, hy = x - 4.0, y - 4.0
    d = min(sd_box(hx, hy, 1.5, 2.0, 78.5, 17.0, 3.0),
            sd_box(hx, hy, 1.5, 43.0, 78.5, 58.0, 3.0),
            sd_box(hx, hy, 6.0, 11.0, 74.0, 49.0, 4.0))
    if -2.0 < d < 2.0:
        return (1.0, 1.0, 1.0, 1.0)
    if -5.0 < d <= -2.0:
        return (1.0, 1.0, 1.0, 0.25)
    return CLEAR


# --------------------------------------------------------------------------

SPRITES = [
    # name, width, height, shader, supersampling
    ("tank_hull.png", HULL_W, HULL_H, hull, SS),
    ("tank_turret.png", TUR_W, TUR_H, turret, SS),
    ("crate.png", 64, 64, crate, SS),
    ("floor.png", 64, 64, floor, 2),
    ("wall.png", 64, 64, wall, SS),
    ("bomb.png", 32, 32, bomb, SS),
    ("explosion.png", 128, 128, explosion, 2),
    ("tracer.png", 32, 4, tracer, SS),
    ("spawn.png", 64, 64, spawn, SS),
    ("deck.png", 64, 64, deck, 2),
    ("rail.png", 64, 64, rail, SS),
    ("ramp.png", 256, 64, ramp, 2),
    ("tank_outline.png", 88, 68, tank_outline, SS),
    ("health_bar.png", 4, 4, lambda x, y: (1.0, 1.0, 1.0, 1.0), 1),
]


# --------------------------------------------------------------------------
# Icon: 256x256, the game's tank from above facing up, in the first team's
# colour on a rounded square of the floor's green. Written beside the sprites'
# folder (assets/icon.png): the desktop entry's icon, not a sprite the game draws.

ICON = 256
ICON_BG = hexc("#3b4239")
ICON_BG_EDGE = hexc("#262b25")
ICON_TINT = hexc("#e8b43a")
ICON_SCALE = 2.4  # icon px per sprite px


def icon(x, y):
    c = CLEAR
    d = sd_box(x, y, 6.0, 6.0, ICON - 6.0, ICON - 6.0, 40.0)
    if d < 0:
        c = ICON_BG_EDGE if d > -5.0 else ICON_BG
    cx = cy = ICON / 2
    # the sprites face +x; the icon's tank faces up (-y)
    u, v = (cy - y) / ICON_SCALE, (x - cx) / ICON_SCALE
    for part in (hull(HULL_W / 2 + u, HULL_H / 2 + v), turret(TUR_CX + u, TUR_CY + v)):
        if part[3] > 0:
            tinted = (part[0] * ICON_TINT[0], part[1] * ICON_TINT[1], part[2] * ICON_TINT[2], part[3])
            c = over(c, tinted)
    return c


def build():
    """Returns {name: (w, h, rgba_bytes)}."""
    return {name: (w, h, render(w, h, fn, ss)) for name, w, h, fn, ss in SPRITES}


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "assets" / "sprites"
    out.mkdir(parents=True, exist_ok=True)
    for name, (w, h, px) in build().items():
        data = png_bytes(w, h, px)
        (out / name).write_bytes(data)
        print(f"{out / name}: {w}x{h}, {len(data)} bytes")
    if len(sys.argv) <= 1:
        path = root / "assets" / "icon.png"
        data = png_bytes(ICON, ICON, render(ICON, ICON, icon))
        path.write_bytes(data)
        print(f"{path}: {ICON}x{ICON}, {len(data)} bytes")


if __name__ == "__main__":
    main()
