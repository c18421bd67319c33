//! How a layered map looks, as plain data: the pieces each level's cells draw and at which
//! depth (floor, walls, slabs with their lips and drop shadows, rails, ramp wedges with their
//! skirts, spawns), and how a body's level and height show (the band it is drawn in, its size,
//! its shadow, whether a slab hides it).
//!
//! Every level has a band of Bevy's z, [`BAND`] deep, from the ground up: everything of a level
//! is drawn over everything of the levels below it, so a tank under a bridge is drawn beneath
//! the bridge and a tank on it above.
//!
//! ```text
//!  band(1) + …  slab 1's shadow (on what lies below), deck, lips, spawns, rails, crates, bombs, tanks on it
//!  band(0) + …  ground: floor, walls, ramps and their skirts, crates, bombs, tanks (those under the slab too)
//! ```
//!
//! Heights show the way a top-down camera would see them: a body higher up is drawn larger
//! ([`SCALE_PER_LEVEL`]), and shadows fall toward +x, +y (light from the top-left) by
//! [`SHADOW_SLANT`] of their height, so a falling body's shadow closes in as it lands. A render
//! layer's `volumes` entry is its visual height in levels: its tiles are drawn raised and cast
//! a shadow that long.

use vimp_host::engine::map::{Axis, MAX_LEVELS, MapConfig, MapLevels, RampRun, Surface, ramp_rail_span};

/// The depth (Bevy z) one level's band takes.
pub const BAND: f32 = 0.75;

/// Where in its level's band each kind of piece is drawn (added to [`band`]).
pub mod depth {
    /// The shadow a level's slab casts on what lies below it.
    pub const SLAB_SHADOW: f32 = 0.0;
    /// Flat tiles (floor, deck), plus [`LAYER_STEP`] per render layer.
    pub const TILE: f32 = 0.05;
    /// How far apart two render layers of one level are drawn.
    pub const LAYER_STEP: f32 = 0.004;
    /// The lip along a slab's open edge.
    pub const LIP: f32 = 0.1;
    /// Respawn points.
    pub const SPAWN: f32 = 0.11;
    /// Shadows cast on the level's floor by its raised tiles and its ramps.
    pub const CAST: f32 = 0.13;
    /// Ramp wedges.
    pub const RAMP: f32 = 0.16;
    /// A wedge's skirt (its side rails).
    pub const SKIRT: f32 = 0.18;
    /// Tiles of a layer with a volume (walls, rails), plus [`LAYER_STEP`] per render layer.
    pub const RAISED: f32 = 0.2;
    /// A crate's shadow.
    pub const CRATE_SHADOW: f32 = 0.3;
    /// Crates.
    pub const CRATE: f32 = 0.32;
    /// Bombs in flight.
    pub const BOMB: f32 = 0.36;
    /// A tank's shadow.
    pub const TANK_SHADOW: f32 = 0.4;
    /// Tanks (their turret a little above).
    pub const TANK: f32 = 0.44;
}

/// The depth of the outline of a tank a slab hides: above every band.
pub const OUTLINE_Z: f32 = MAX_LEVELS as f32 * BAND + 0.1;

/// Layers beyond this many in one level share the last one's depth.
const MAX_LAYER_STEPS: usize = 10;

/// How far a shadow falls per unit of height (both along x and along y).
pub const SHADOW_SLANT: f32 = 0.3;

/// How much larger a body is drawn per level of height above the ground.
pub const SCALE_PER_LEVEL: f32 = 0.12;

/// The height, in levels, of the shadow of a body standing on its floor: a small offset that
/// still shows the shadow.
const CONTACT: f32 = 0.2;

/// How dark a slab's drop shadow is.
pub const SLAB_SHADOW_ALPHA: f32 = 0.38;

/// How dark a raised tile's or a wedge's shadow is.
pub const CAST_ALPHA: f32 = 0.32;

/// How much of a slab is left around the player's own tank while the slab hides it.
pub const SEE_THROUGH_ALPHA: f32 = 0.28;

/// The lip's width along a slab's open edge, in tiles.
pub const LIP_WIDTH: f32 = 0.1;

/// A skirt's width across the ramp, in tiles (it stands centred on the line of the ramp's guard).
pub const SKIRT_WIDTH: f32 = 0.22;

/// The bottom of level `level`'s band.
pub fn band(level: u8) -> f32 {
    f32::from(level) * BAND
}

/// Where the shadow of something `height` levels above the surface it falls on lies,
/// against the thing itself (world units, map axes: +x, +y).
pub fn shadow_offset(height: f32, level_height: f32) -> [f32; 2] {
    let s = height.max(0.0) * level_height * SHADOW_SLANT;
    [s, s]
}

/// What a piece of the map draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Look {
    /// A ground tile that is floor.
    Floor,
    /// A ground tile that is a wall.
    Wall,
    /// A slab's floor (a level above the ground; under its rails too).
    Deck,
    /// A rail running along an axis.
    Rail(Axis),
    /// The lip along a slab cell's side toward an open neighbour (`(dcol, drow)`, the step to
    /// it): a strip [`LIP_WIDTH`] wide inside the cell.
    Lip(i8, i8),
    /// Cell `k` up from the foot of a ramp run `len` cells long; the piece's angle points uphill.
    Ramp {
        /// Cells from the foot (0 is the foot).
        k: usize,
        /// The run's length in cells.
        len: usize,
    },
    /// A wedge's skirt along one cell: its side rail where the ramp's guard stands (the piece
    /// runs along its own x, [`SKIRT_WIDTH`] wide).
    Skirt,
    /// A shadow.
    Shadow {
        /// Its opacity.
        alpha: f32,
        /// Its shape.
        shape: ShadowShape,
    },
    /// A team's respawn point.
    Spawn(u8),
}

/// The shape of a shadow piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShadowShape {
    /// A whole cell.
    Square,
    /// A rail's (along an axis).
    Rail(Axis),
}

/// One sprite of the map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Piece {
    /// What it draws.
    pub look: Look,
    /// The level whose band it is drawn in.
    pub level: u8,
    /// Its centre, world units (map axes: y down).
    pub center: [f32; 2],
    /// Its size along its own axes, world units.
    pub size: [f32; 2],
    /// Its rotation as a map angle (radians, +x turning toward +y).
    pub angle: f32,
    /// Its depth (Bevy z).
    pub z: f32,
}

impl Piece {
    /// Whether it belongs to a level above the ground: it turns see-through around the player's
    /// own tank while a slab hides it.
    pub fn is_slab(&self) -> bool {
        self.level > 0
    }
}

/// The render layers of one level: the tiles each draws, in drawing order, and its volume.
struct Layers<'a> {
    layers: Vec<(&'a [u16], f32)>,
}

impl<'a> Layers<'a> {
    fn new<'b>(
        layers: impl IntoIterator<Item = (&'a String, &'a Vec<u16>)>,
        volume: impl Fn(&str) -> Option<&'b f32>,
    ) -> Layers<'a> {
        let layers = layers.into_iter().map(|(name, tiles)| (tiles.as_slice(), volume(name).copied().unwrap_or(0.0)));
        Layers { layers: layers.collect() }
    }

    /// The tile's layer (its place in the drawing order, 0 when no layer draws it) and volume.
    fn of(&self, tile: u16) -> (usize, f32) {
        self.layers
            .iter()
            .position(|(tiles, _)| tiles.contains(&tile))
            .map_or((0, 0.0), |i| (i.min(MAX_LAYER_STEPS), self.layers[i].1.max(0.0)))
    }
}

/// The map's angle of a step `(dcol, drow)`.
fn angle_of(step: (i64, i64)) -> f32 {
    (step.1 as f32).atan2(step.0 as f32)
}

/// Every piece of `map` whose geometry `levels` holds (built from the same map at the host's
/// `mapScale`, `scale`): level by level, the ground first.
pub fn map_pieces(map: &MapConfig, levels: &MapLevels, scale: f32) -> Vec<Piece> {
    let t = levels.tile_size();
    let lh = levels.level_height();
    let (cols, rows) = levels.grid_size();
    let mut out = Vec::new();
    for n in levels.levels() {
        let (grid, layers) = if n == 0 {
            (map.map.as_slice(), Layers::new(&map.layers, |k| map.volumes.get(k)))
        } else {
            let Some(level) = map.levels.get(n.to_string().as_str()) else { continue };
            (level.map.as_slice(), Layers::new(&level.layers, |k| level.volumes.get(k)))
        };
        let b = band(n);
        for r in 0..rows {
            for c in 0..cols {
                let surface = levels.surface(n, c, r);
                if surface == Surface::Empty || levels.run_at_cell(c, r).is_some_and(|run| levels.runs()[run].from == n)
                {
                    continue; // nothing here, or a ramp's wedge (drawn below)
                }
                let tile = grid.get(r).and_then(|row| row.get(c)).copied().unwrap_or(0);
                let (layer, volume) = layers.of(tile);
                let step = layer as f32 * depth::LAYER_STEP;
                let center = [(c as f32 + 0.5) * t, (r as f32 + 0.5) * t];
                let at = |look, dz: f32| Piece { look, level: n, center, size: [t, t], angle: 0.0, z: b + dz };
                let shadow = |shape, height: f32, alpha, dz: f32| {
                    let [dx, dy] = shadow_offset(height, lh);
                    Piece { center: [center[0] + dx, center[1] + dy], ..at(Look::Shadow { alpha, shape }, dz) }
                };
                let raised = volume > 0.0;
                let tile_z = if raised { depth::RAISED } else { depth::TILE } + step;
                if n == 0 {
                    let look = if surface == Surface::Wall { Look::Wall } else { Look::Floor };
                    out.push(at(look, tile_z));
                    if raised {
                        out.push(shadow(ShadowShape::Square, volume, CAST_ALPHA, depth::CAST));
                    }
                    continue;
                }
                // A slab: its deck, its drop shadow on the level it would land on, its lips.
                let drop = f32::from(n - levels.landing_level_cell(n, c, r)) + volume;
                out.push(shadow(ShadowShape::Square, drop, SLAB_SHADOW_ALPHA, depth::SLAB_SHADOW));
                out.push(at(Look::Deck, depth::TILE + step));
                let w = LIP_WIDTH * t;
                for (dc, dr) in [(0, -1), (1, 0), (0, 1), (-1, 0)] {
                    if is_open_edge(levels, n, c, r, (dc, dr)) {
                        let (ox, oy) = (dc as f32 * (t - w) / 2.0, dr as f32 * (t - w) / 2.0);
                        out.push(Piece {
                            center: [center[0] + ox, center[1] + oy],
                            size: if dc != 0 { [w, t] } else { [t, w] },
                            ..at(Look::Lip(dc as i8, dr as i8), depth::LIP)
                        });
                    }
                }
                if surface == Surface::Wall {
                    for axis in rail_axes(levels, n, c, r) {
                        out.push(Piece { angle: rail_angle(axis), ..at(Look::Rail(axis), tile_z) });
                        if raised {
                            let s = shadow(ShadowShape::Rail(axis), volume, CAST_ALPHA, depth::CAST);
                            out.push(Piece { angle: rail_angle(axis), ..s });
                        }
                    }
                }
            }
        }
    }
    for run in levels.runs() {
        ramp_pieces(levels, run, &mut out);
    }
    for (team, points) in &map.respawns {
        let team = team.parse().unwrap_or(0);
        for p in points.iter().filter(|p| p.len() >= 3) {
            let (x, y) = (p[0] * scale, p[1] * scale);
            let level = p.get(3).map_or_else(|| levels.level_at(x, y), |&l| l as u8).min(levels.top_level());
            let z = band(level) + depth::SPAWN;
            out.push(Piece { look: Look::Spawn(team), level, center: [x, y], size: [44.0, 44.0], angle: 0.0, z });
        }
    }
    out
}

/// A rail along `axis` as a map angle (the sprite runs along +x).
fn rail_angle(axis: Axis) -> f32 {
    match axis {
        Axis::X => 0.0,
        Axis::Y => std::f32::consts::FRAC_PI_2,
    }
}

/// Whether slab cell `(c, r)` of level `n` ends, toward `step`, at an open edge: the neighbour
/// has nothing on level `n`, and is not a ramp whose top leads onto this cell.
fn is_open_edge(levels: &MapLevels, n: u8, c: usize, r: usize, step: (i64, i64)) -> bool {
    let (nc, nr) = (c as i64 + step.0, r as i64 + step.1);
    if levels.surface_at_cell(n, nc, nr) != Surface::Empty {
        return false;
    }
    let ramp_up = (nc >= 0 && nr >= 0)
        .then(|| levels.run_at_cell(nc as usize, nr as usize))
        .flatten()
        .map(|run| levels.runs()[run])
        .is_some_and(|run| run.to == n && run.beyond_top() == (c as i64, r as i64));
    !ramp_up
}

/// Which way the rail in cell `(c, r)` of level `n` runs: along its neighbouring rails (both
/// ways at a corner), else along the slab it fences (the floor beside it).
pub fn rail_axes(levels: &MapLevels, n: u8, c: usize, r: usize) -> Vec<Axis> {
    let is = |dc: i64, dr: i64, s: Surface| levels.surface_at_cell(n, c as i64 + dc, r as i64 + dr) == s;
    let mut out = Vec::new();
    if is(-1, 0, Surface::Wall) || is(1, 0, Surface::Wall) {
        out.push(Axis::X);
    }
    if is(0, -1, Surface::Wall) || is(0, 1, Surface::Wall) {
        out.push(Axis::Y);
    }
    if out.is_empty() {
        let floor_beside_x = is(-1, 0, Surface::Floor) || is(1, 0, Surface::Floor);
        let floor_beside_y = is(0, -1, Surface::Floor) || is(0, 1, Surface::Floor);
        out.push(if floor_beside_x && !floor_beside_y { Axis::Y } else { Axis::X });
    }
    out
}

/// A ramp run's pieces: a wedge cell per cell, shaded from the foot up, with the wedge's shadow
/// growing toward the top, and its skirt where [`ramp_rail_span`] puts the ramp's sides.
fn ramp_pieces(levels: &MapLevels, run: &RampRun, out: &mut Vec<Piece>) {
    let t = levels.tile_size();
    let lh = levels.level_height();
    let b = band(run.from);
    let angle = angle_of(run.dir.step());
    let len = run.len();
    for k in 0..len {
        let (c, r) = run.cell(k);
        let center = [(c as f32 + 0.5) * t, (r as f32 + 0.5) * t];
        let piece =
            Piece { look: Look::Ramp { k, len }, level: run.from, center, size: [t, t], angle, z: b + depth::RAMP };
        out.push(piece);
        let height = (k + 1) as f32 / len as f32 * f32::from(run.rise());
        let [dx, dy] = shadow_offset(height, lh);
        out.push(Piece {
            look: Look::Shadow { alpha: CAST_ALPHA, shape: ShadowShape::Square },
            center: [center[0] + dx, center[1] + dy],
            z: b + depth::CAST,
            ..piece
        });
        let Some((lo, hi)) = ramp_rail_span(levels, run, k) else { continue };
        let block = &levels.blocks()[run.block];
        let sides = [
            (run.lane == block.lane_lo, block.lane_lo as f32 * t),
            (run.lane == block.lane_hi, (block.lane_hi + 1) as f32 * t),
        ];
        for (_, line) in sides.into_iter().filter(|(edge, _)| *edge) {
            let along = (lo + hi) / 2.0;
            let center = match run.axis {
                Axis::X => [along, line],
                Axis::Y => [line, along],
            };
            let (size, angle) = ([hi - lo, SKIRT_WIDTH * t], rail_angle(run.axis));
            out.push(Piece { look: Look::Skirt, level: run.from, center, size, angle, z: b + depth::SKIRT });
        }
    }
}

/// How a body's level and height show (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyLook {
    /// The level whose band it is drawn in: the lowest level not below it, so a body up a ramp
    /// or falling past a slab's edge is drawn over the slab it is level with.
    pub band: u8,
    /// Its height above the ground, in levels.
    pub height: f32,
    /// How much larger than on the ground it is drawn.
    pub scale: f32,
    /// The level its shadow lies on (the one it stands on, climbs from or falls to).
    pub shadow_level: u8,
    /// Where its shadow lies against it, world units (map axes).
    pub shadow_offset: [f32; 2],
    /// The shadow's size against the body's on the ground.
    pub shadow_scale: f32,
    /// How dark its shadow is: fainter the higher it is.
    pub shadow_alpha: f32,
}

/// How a body on `level`, `z` above it (a snapshot row's pair), shows on `levels`.
pub fn body_look(levels: &MapLevels, level: u8, z: f32) -> BodyLook {
    let up = if z.is_finite() { (z / levels.level_height()).max(0.0) } else { 0.0 };
    let height = f32::from(level) + up;
    let top = levels.top_level().max(level);
    // A body a hair above its level (a ramp's foot, the last step of a fall) stays in its band.
    let band = ((height - 0.02).ceil().max(f32::from(level)) as u8).min(top);
    BodyLook {
        band,
        height,
        scale: 1.0 + SCALE_PER_LEVEL * height,
        shadow_level: level,
        shadow_offset: shadow_offset(up + CONTACT, levels.level_height()),
        shadow_scale: 1.0 + SCALE_PER_LEVEL * f32::from(level),
        shadow_alpha: (0.45 - 0.15 * up).clamp(0.15, 0.45),
    }
}

/// Whether a slab hides part of a body drawn in level `band`'s band ([`BodyLook::band`]) at
/// `p`: a level drawn over it has floor under its centre or under a point `reach` away from it.
pub fn covered(levels: &MapLevels, band: u8, p: [f32; 2], reach: f32) -> bool {
    let d = reach * std::f32::consts::FRAC_1_SQRT_2;
    let points =
        [[0.0, 0.0], [reach, 0.0], [-reach, 0.0], [0.0, reach], [0.0, -reach], [d, d], [d, -d], [-d, d], [-d, -d]];
    levels.levels().filter(|&m| m > band).any(|m| points.iter().any(|o| levels.has_floor(m, p[0] + o[0], p[1] + o[1])))
}

/// How much of a slab piece centred at `piece` is left while the player's own tank at `tank`
/// is hidden under it: see-through near the tank, whole from two tiles away.
pub fn see_through(tile: f32, piece: [f32; 2], tank: [f32; 2]) -> f32 {
    let d = (piece[0] - tank[0]).hypot(piece[1] - tank[1]);
    let (near, far) = (1.2 * tile, 2.4 * tile);
    if d >= far {
        return 1.0;
    }
    let t = ((d - near) / (far - near)).clamp(0.0, 1.0);
    SEE_THROUGH_ALPHA + (1.0 - SEE_THROUGH_ALPHA) * t * t * (3.0 - 2.0 * t)
}

/// The level a bomb at `p` is on: where it was (`previous`), else where its owner's tank is
/// (`owner`: its row's level and z), else the highest level under it; and when that level has no
/// floor under it any more, the level it falls to. Bomb rows do not carry their level, so the
/// window follows it the way the host's rule does.
pub fn bomb_level(levels: &MapLevels, previous: Option<u8>, owner: Option<(u8, f32)>, p: [f32; 2]) -> u8 {
    let start = previous.unwrap_or_else(|| match owner {
        Some((level, z)) => {
            let up = if z.is_finite() { (z / levels.level_height()).max(0.0) } else { 0.0 };
            ((f32::from(level) + up).round() as u8).min(levels.top_level())
        }
        None => levels.level_at(p[0], p[1]),
    });
    if start == 0 || levels.has_floor(start, p[0], p[1]) { start } else { levels.landing_level(start, p[0], p[1]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10×6 tiles of 10: a bridge on level 1 over columns 3 to 6 (rows 2 and 3), railed on rows
    /// 1 and 4, reached by a ramp two lanes wide rising east over columns 1 and 2; no rail over
    /// column 5 of row 1 (a ledge). The ground's walls (tile 1) have a volume of 0.5.
    fn bridge() -> MapConfig {
        let text = r#"{
            "name": "bridge", "tileSize": 10,
            "map": [
                [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                [1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [1, 5, 5, 0, 1, 1, 0, 0, 0, 1],
                [1, 5, 5, 0, 1, 1, 0, 0, 0, 1],
                [1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
            ],
            "physicsStatic": [1],
            "respawns": { "1": [[15, 15, 0], [45, 25, 0, 1]], "2": [[75, 45, 180]] },
            "layers": { "floor": [0], "ramps": [5], "walls": [1] },
            "volumes": { "walls": 0.5 },
            "levels": { "1": {
                "map": [
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                    [0, 0, 0, 7, 7, 0, 7, 0, 0, 0],
                    [0, 0, 0, 9, 9, 9, 9, 0, 0, 0],
                    [0, 0, 0, 9, 9, 9, 9, 0, 0, 0],
                    [0, 0, 0, 7, 7, 7, 7, 0, 0, 0],
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
                ],
                "floor": [7, 9], "walls": [7],
                "layers": { "slab": [9], "rails": [7] }, "volumes": { "rails": 0.3 }
            } },
            "ramps": [{ "tile": 5, "dir": "east" }]
        }"#;
        serde_json::from_str(text).expect("the test map")
    }

    fn pieces() -> (MapLevels, Vec<Piece>) {
        let map = bridge();
        let levels = MapLevels::new(&map, 1.0);
        let pieces = map_pieces(&map, &levels, 1.0);
        (levels, pieces)
    }

    fn at(pieces: &[Piece], level: u8, look: impl Fn(&Look) -> bool, cell: (usize, usize)) -> Vec<Piece> {
        let c = [(cell.0 as f32 + 0.5) * 10.0, (cell.1 as f32 + 0.5) * 10.0];
        pieces.iter().filter(|p| p.level == level && look(&p.look) && p.center == c).copied().collect()
    }

    #[test]
    fn every_level_is_drawn_over_the_one_below_it() {
        let (_, pieces) = pieces();
        let top_of_ground = pieces.iter().filter(|p| p.level == 0).map(|p| p.z).fold(f32::MIN, f32::max);
        let bottom_of_slab = pieces.iter().filter(|p| p.level == 1).map(|p| p.z).fold(f32::MAX, f32::min);
        assert!(top_of_ground < bottom_of_slab, "{top_of_ground} < {bottom_of_slab}");
        // What stands on a level is drawn over its tiles and under the next level's.
        assert!(top_of_ground < band(0) + depth::TANK && band(0) + depth::TANK < bottom_of_slab);
        assert!(band(1) + depth::TANK < band(2), "a tank on the slab under a level 2 would be hidden by it");
        assert!(band(MAX_LEVELS as u8 - 1) + depth::TANK + 0.05 < OUTLINE_Z);
    }

    #[test]
    fn tiles_take_their_level_s_layers_and_volumes() {
        let (levels, pieces) = pieces();
        let floor = at(&pieces, 0, |l| *l == Look::Floor, (1, 1));
        let wall = at(&pieces, 0, |l| *l == Look::Wall, (4, 2));
        assert_eq!(floor.len(), 1);
        assert_eq!(wall.len(), 1, "the ground's wall under the bridge is drawn too");
        assert!(wall[0].z > floor[0].z, "a wall with a volume stands raised over the floor");
        // The walls' volume (0.5 level) casts a shadow that long.
        let cast = pieces
            .iter()
            .filter(|p| p.level == 0 && p.z == band(0) + depth::CAST)
            .find(|p| p.center == [45.0 + 1.5, 25.0 + 1.5])
            .expect("the wall's shadow");
        assert_eq!(cast.look, Look::Shadow { alpha: CAST_ALPHA, shape: ShadowShape::Square });
        assert_eq!(shadow_offset(0.5, levels.level_height()), [1.5, 1.5]);
        // Level 1: its slab is a deck, its rails are rails over a deck, each with their layer's depth.
        let deck = at(&pieces, 1, |l| *l == Look::Deck, (4, 2));
        let rail_deck = at(&pieces, 1, |l| *l == Look::Deck, (4, 1));
        let rail = at(&pieces, 1, |l| matches!(l, Look::Rail(_)), (4, 1));
        assert_eq!((deck.len(), rail_deck.len(), rail.len()), (1, 1, 1));
        assert_eq!(rail[0].look, Look::Rail(Axis::X), "the rail runs along the bridge");
        assert!(rail[0].z > deck[0].z && rail_deck[0].z > deck[0].z, "the rails' layer comes after the slab's");
        assert!(pieces.iter().filter(|p| p.level == 1).all(Piece::is_slab));
        assert!(pieces.iter().filter(|p| p.level == 0).all(|p| !p.is_slab()));
    }

    #[test]
    fn a_slab_casts_its_shadow_on_the_level_below_by_its_height_and_volume() {
        let (levels, pieces) = pieces();
        let slab_shadows: Vec<&Piece> =
            pieces.iter().filter(|p| p.level == 1 && p.z == band(1) + depth::SLAB_SHADOW).collect();
        // One per cell of the level: 4×2 of slab, 7 rails.
        assert_eq!(slab_shadows.len(), 15);
        assert!(slab_shadows.iter().all(|p| p.z < band(1) + depth::TILE), "under the deck");
        let deck = [(4.0 + 0.5) * 10.0, (2.0 + 0.5) * 10.0];
        let [dx, dy] = shadow_offset(1.0, levels.level_height());
        assert!(slab_shadows.iter().any(|p| p.center == [deck[0] + dx, deck[1] + dy]), "one level high");
        let rail = [(4.0 + 0.5) * 10.0, (1.0 + 0.5) * 10.0];
        let [rx, ry] = shadow_offset(1.0 + 0.3, levels.level_height());
        assert!(slab_shadows.iter().any(|p| p.center == [rail[0] + rx, rail[1] + ry]), "a rail adds its volume");
        assert!(rx > dx);
    }

    #[test]
    fn a_slab_has_lips_on_its_open_edges_and_none_where_the_ramp_arrives() {
        let (_, pieces) = pieces();
        // A lip is a strip inside its cell, along the open side.
        let looks = |(c, r): (usize, usize)| {
            let inside = |p: &&Piece| {
                let [x, y] = p.center;
                (x - (c as f32 + 0.5) * 10.0).abs() < 5.0 && (y - (r as f32 + 0.5) * 10.0).abs() < 5.0
            };
            let lips = pieces.iter().filter(|p| p.level == 1 && matches!(p.look, Look::Lip(..))).filter(inside);
            lips.map(|p| p.look).collect::<Vec<_>>()
        };
        let north = pieces.iter().find(|p| p.look == Look::Lip(0, -1)).expect("a lip");
        assert_eq!(north.size, [10.0, LIP_WIDTH * 10.0]);
        // The ramp rises east over columns 1 and 2 and arrives on column 3.
        assert_eq!(looks((3, 2)), [], "the ramp's top leads onto it");
        assert_eq!(looks((3, 1)), [Look::Lip(0, -1), Look::Lip(-1, 0)], "a rail's corner beside the ramp's end");
        assert_eq!(looks((6, 2)), [Look::Lip(1, 0)], "the far end drops off");
        assert_eq!(looks((5, 2)), [Look::Lip(0, -1)], "the ledge: no rail north of it");
        assert_eq!(looks((5, 1)), [], "no slab in the ledge's gap");
        assert_eq!(looks((5, 4)), [Look::Lip(0, 1)]);
    }

    #[test]
    fn ramps_are_wedges_shaded_from_the_foot_with_their_skirt_where_the_rail_span_says() {
        let (levels, pieces) = pieces();
        let wedges: Vec<&Piece> = pieces.iter().filter(|p| matches!(p.look, Look::Ramp { .. })).collect();
        assert_eq!(wedges.len(), 4, "two lanes of two cells");
        assert!(wedges.iter().all(|p| p.angle == 0.0 && p.level == 0), "rising east, from the ground");
        let foot = at(&pieces, 0, |l| matches!(l, Look::Ramp { .. }), (1, 2));
        assert_eq!(foot[0].look, Look::Ramp { k: 0, len: 2 });
        assert_eq!(at(&pieces, 0, |l| matches!(l, Look::Ramp { .. }), (2, 3))[0].look, Look::Ramp { k: 1, len: 2 });
        assert!(at(&pieces, 0, |l| matches!(l, Look::Floor), (1, 2)).is_empty(), "the wedge replaces the tile");
        // The skirt: exactly the guards' span, per cell, on the block's outer sides only.
        let skirts: Vec<&Piece> = pieces.iter().filter(|p| p.look == Look::Skirt).collect();
        let mut expected = Vec::new();
        for run in levels.runs() {
            for k in 0..run.len() {
                if let Some((lo, hi)) = ramp_rail_span(&levels, run, k) {
                    expected.push((run.lane, lo, hi));
                }
            }
        }
        assert_eq!(expected, [(2, 20.0, 30.0), (3, 20.0, 30.0)], "the foot has none");
        assert_eq!(skirts.len(), 2);
        for skirt in &skirts {
            let (x0, x1) = (skirt.center[0] - skirt.size[0] / 2.0, skirt.center[0] + skirt.size[0] / 2.0);
            assert_eq!((x0, x1), (20.0, 30.0));
            assert!(skirt.center[1] == 20.0 || skirt.center[1] == 40.0, "on the block's sides: {skirt:?}");
        }
        // The wedge's shadow grows toward the top.
        let cast = |cell: (usize, usize)| {
            let c = [(cell.0 as f32 + 0.5) * 10.0, (cell.1 as f32 + 0.5) * 10.0];
            pieces
                .iter()
                .filter(|p| p.level == 0 && p.z == band(0) + depth::CAST)
                .map(|p| (p.center[0] - c[0], p.center[1] - c[1]))
                .filter(|(dx, dy)| dx == dy && *dx > 0.0 && *dx < 10.0)
                .fold(f32::MAX, |m, (dx, _)| m.min(dx))
        };
        assert!(cast((1, 3)) < cast((2, 3)));
    }

    #[test]
    fn respawn_points_stand_on_their_level() {
        let (_, pieces) = pieces();
        let spawns: Vec<(u8, u8)> = pieces
            .iter()
            .filter_map(|p| if let Look::Spawn(team) = p.look { Some((team, p.level)) } else { None })
            .collect();
        assert_eq!(spawns, [(1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn a_flat_map_draws_its_tiles_as_before() {
        let mut map = bridge();
        map.levels.clear();
        map.ramps.clear();
        map.volumes.clear();
        let levels = MapLevels::new(&map, 2.0);
        let pieces = map_pieces(&map, &levels, 2.0);
        assert_eq!(pieces.len(), 10 * 6 + 3, "a tile per cell and the spawns");
        assert!(pieces.iter().all(|p| p.level == 0 && p.z < band(1)));
        assert!(pieces.iter().any(|p| p.look == Look::Spawn(1) && p.center == [30.0, 30.0]), "scaled");
        assert!(pieces.iter().filter(|p| p.look == Look::Floor).all(|p| p.size == [20.0, 20.0]));
    }

    #[test]
    fn a_body_up_a_ramp_or_falling_is_drawn_larger_over_the_slab_and_its_shadow_closes_in_as_it_lands() {
        let (levels, _) = pieces();
        let ground = body_look(&levels, 0, 0.0);
        let bridge = body_look(&levels, 1, 0.0);
        assert_eq!((ground.band, bridge.band), (0, 1));
        assert!(bridge.scale > ground.scale);
        assert_eq!(ground.shadow_offset, bridge.shadow_offset, "standing: the same contact shadow");
        // Up a ramp (its bottom level, z up the run): over the slab it is level with, larger.
        let half_up = body_look(&levels, 0, 5.0);
        assert_eq!(half_up.band, 1);
        assert!(half_up.scale > ground.scale && half_up.scale < bridge.scale);
        assert!(half_up.shadow_offset[0] > ground.shadow_offset[0]);
        assert_eq!(half_up.shadow_level, 0, "on the ramp's bottom level");
        // Falling off the bridge: it shrinks and its shadow closes in until it lands.
        let mut last = body_look(&levels, 0, 10.0);
        assert_eq!(last.scale, bridge.scale, "it leaves the edge at the bridge's size");
        for z in [8.0, 6.0, 4.0, 2.0, 0.0] {
            let now = body_look(&levels, 0, z);
            assert!(now.scale < last.scale && now.shadow_offset[0] < last.shadow_offset[0], "at z {z}");
            assert!(now.shadow_alpha >= last.shadow_alpha);
            last = now;
        }
        assert_eq!(last, ground);
        assert_eq!(body_look(&levels, 0, 0.1).band, 0, "a hair above the ground is still on it");
        assert_eq!(body_look(&levels, 0, f32::NAN), ground);
        assert_eq!(body_look(&levels, 0, 50.0).band, 1, "never above the top level");
    }

    #[test]
    fn a_body_under_the_slab_is_covered_and_one_on_it_is_not() {
        let (levels, _) = pieces();
        let under = [45.0, 25.0];
        assert!(covered(&levels, 0, under, 0.0));
        assert!(!covered(&levels, 1, under, 0.0), "on the bridge");
        assert!(!covered(&levels, 0, [75.0, 25.0], 0.0), "beside it");
        assert!(covered(&levels, 0, [75.0, 25.0], 8.0), "beside it, its hull under the edge");
        let near_the_top = body_look(&levels, 0, 9.0);
        assert!(!covered(&levels, near_the_top.band, [28.0, 25.0], 8.0), "up the ramp, its nose over the slab");
    }

    #[test]
    fn the_slab_is_see_through_around_the_tank_and_whole_two_tiles_away() {
        let tank = [45.0, 25.0];
        assert_eq!(see_through(10.0, tank, tank), SEE_THROUGH_ALPHA);
        assert_eq!(see_through(10.0, [45.0, 35.0], tank), SEE_THROUGH_ALPHA);
        let mid = see_through(10.0, [45.0, 43.0], tank);
        assert!(mid > SEE_THROUGH_ALPHA && mid < 1.0);
        assert_eq!(see_through(10.0, [45.0, 50.0], tank), 1.0);
    }

    #[test]
    fn a_bomb_keeps_its_owner_s_level_and_falls_off_a_slab_s_edge() {
        let (levels, _) = pieces();
        let on_bridge = [45.0, 25.0];
        assert_eq!(bomb_level(&levels, None, Some((1, 0.0)), on_bridge), 1);
        assert_eq!(bomb_level(&levels, None, Some((0, 0.0)), on_bridge), 0, "fired under the bridge");
        assert_eq!(bomb_level(&levels, None, Some((0, 8.0)), [25.0, 25.0]), 0, "from near the ramp's top");
        assert_eq!(bomb_level(&levels, None, Some((0, 8.0)), on_bridge), 1, "onto the bridge");
        assert_eq!(bomb_level(&levels, Some(1), None, on_bridge), 1);
        assert_eq!(bomb_level(&levels, Some(1), None, [85.0, 25.0]), 0, "off the far end");
        assert_eq!(bomb_level(&levels, None, None, on_bridge), 1, "no owner: the highest level there");
    }

    #[test]
    fn rails_run_along_their_neighbours_or_the_slab_they_fence() {
        let (levels, _) = pieces();
        assert_eq!(rail_axes(&levels, 1, 4, 1), [Axis::X]);
        assert_eq!(rail_axes(&levels, 1, 6, 1), [Axis::X], "a lone rail north of the slab runs along it");
    }
}
