//! The designers' navigation overlay (F4): the nav grid level by level, where a tank fits, and each bot's route.
//!
//! The host thread of a match this window hosts (a local match, a playtest, hosting online)
//! publishes a [`NavSnapshot`] ten times a second while the overlay is on: each level's grid
//! with its `fit` values and the crates' cells from the host's navigation, and every living
//! bot's route with the kind of each leg ([`capture`], as the node thread's view). The window
//! draws one level at a time over the map (F5 steps to the next level of a layered map; the
//! legend says which is shown), one square per cell:
//!
//! | colour | the cell |
//! |---|---|
//! | green | a bot's route fits it (a square as wide as [`route_width`] contains it); brighter where wider squares do |
//! | yellow | only a bare hull fits (bots keep out of it unless there is no other way) |
//! | red | free, but no tank fits |
//! | blue | a crate covers it (routes may pass at a price: tanks push crates) |
//! | violet | a ramp's cell on its bottom level (crossed only up or down the ramp) |
//!
//! and each bot's route in its team's colour from the tank through its legs, by kind: a walk
//! as a thin line, a ramp as a broad band, a drop off a ledge as a dashed line to a ringed
//! landing; legs on another level than the one shown are faint. It follows hot reloads: a new
//! map load rebuilds the squares.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use vimp_host::Host;
use vimp_host::engine::map::state::MapState;
use vimp_host::engine::nav::{LegKind, Nav, RouteLeg};
use vimp_host::engine::physics::Physics;
use vimp_host::tanks::TanksRules;
use vimp_host::tanks::bots::Bot;
use vimp_host::tanks::bots::brain::{route_legs, route_width};
use vimp_host::tanks::tank::{Tank, layered};

use crate::window::game::NavOverlayOn;
use crate::window::{ActiveMatch, Screen};

/// A bot's route as the overlay draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct BotRoute {
    /// Its team.
    pub team: u8,
    /// Where the tank is.
    pub from: [f32; 2],
    /// The level the tank stands on.
    pub level: u8,
    /// The legs still to drive, each with its kind and the level it ends on.
    pub legs: Vec<RouteLeg>,
}

/// One level's cells as the overlay draws them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelCells {
    /// The level (0: the ground).
    pub level: u8,
    /// Per cell: 0 free, 1 wall or no floor of this level, 2 a ramp's cell on its bottom level.
    pub walk: Vec<u8>,
    /// Per cell: the side of the largest free square containing it (cells, at most 15).
    pub fit: Vec<u8>,
    /// Per cell: how many crates cover it.
    pub soft: Vec<u8>,
}

/// What the host thread publishes for the overlay (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NavSnapshot {
    /// The map loads so far: a new value means a new grid.
    pub loads: u32,
    /// Columns.
    pub cols: usize,
    /// Rows.
    pub rows: usize,
    /// World units per cell.
    pub cell: f32,
    /// Every level's cells, from the ground up (a flat map: the ground alone).
    pub levels: Vec<LevelCells>,
    /// The `fit` a bot's route needs.
    pub route_fit: u8,
    /// The `fit` a bare hull needs.
    pub hull_fit: u8,
    /// The living bots' routes, in player order.
    pub routes: Vec<BotRoute>,
}

/// The overlay of a host's match now; `None` without a map.
pub fn capture(host: &mut Host) -> Option<NavSnapshot> {
    let world = host.world_mut();
    let model = world.resource::<TanksRules>().0.models.tank.clone();
    let mut bots: Vec<(Tank, Bot)> =
        world.query::<(&Tank, &Bot)>().iter(world).map(|(t, b)| (t.clone(), b.clone())).collect();
    bots.sort_by_key(|(t, _)| t.player);
    let nav = world.resource::<Nav>().0.as_ref()?;
    let grid = nav.grid();
    let physics = world.resource::<Physics>();
    let map = world.resource::<MapState>();
    let routes = bots
        .iter()
        .filter(|(t, b)| t.alive && b.has_route())
        .map(|(t, b)| {
            let level = t.level.state.level;
            BotRoute { team: t.team, from: t.position(physics), level, legs: route_legs(b, level, layered(map)) }
        })
        .collect();
    let fit_of = |w: f32| grid.cells_for(w).min(u32::from(u8::MAX)) as u8;
    let soft = nav.soft_values();
    let levels = nav
        .levels()
        .iter()
        .filter_map(|&level| {
            let cells = nav.level_range(level)?;
            Some(LevelCells {
                level,
                walk: grid.walk()[cells.clone()].to_vec(),
                fit: grid.fit_values()[cells.clone()].to_vec(),
                soft: soft[cells].to_vec(),
            })
        })
        .collect();
    let rows = nav.level_range(0).map_or(0, |cells| cells.len() / grid.cols().max(1));
    Some(NavSnapshot {
        loads: map.loads,
        cols: grid.cols(),
        rows,
        cell: grid.cell(),
        levels,
        route_fit: fit_of(route_width(&model)),
        hull_fit: fit_of(model.width),
        routes,
    })
}

/// The level the overlay shows (F5 steps through the map's levels).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NavOverlayLevel(pub u8);

/// The key that steps the overlay to the next level.
pub const NEXT_LEVEL_KEY: KeyCode = KeyCode::F5;

/// Adds the overlay's drawing and its legend.
pub struct NavOverlayPlugin;

impl Plugin for NavOverlayPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<NavOverlayOn>()
            .init_resource::<NavOverlayLevel>()
            .init_resource::<Overlay>()
            .add_systems(
                Update,
                (step_level, draw_overlay).chain().after(crate::window::MatchUpdate).run_if(in_state(Screen::Match)),
            )
            .add_systems(EguiPrimaryContextPass, legend.run_if(in_state(Screen::Match)))
            .add_systems(OnExit(Screen::Match), clear_overlay);
    }
}

/// Above everything but the labels.
const Z_CELLS: f32 = 6.5;
const Z_ROUTES: f32 = 6.8;

/// What is drawn now.
#[derive(Resource, Debug, Default)]
struct Overlay {
    /// The grid drawn: (loads, cols, rows, level), and a square per cell.
    grid: Option<(u32, usize, usize, u8)>,
    cells: Vec<Entity>,
    soft: Vec<u8>,
    routes: Vec<BotRoute>,
    /// The level the routes were drawn for.
    routes_level: u8,
    lines: Vec<Entity>,
    /// The newest snapshot was there (false: this window does not host the match).
    hosted: bool,
    /// The levels of the newest snapshot.
    levels: Vec<u8>,
}

/// Steps the overlay to the next level of the shown map (F5, while the overlay is on and no
/// text field has the keyboard).
fn step_level(
    keys: Res<ButtonInput<KeyCode>>,
    on: Res<NavOverlayOn>,
    overlay: Res<Overlay>,
    mut shown: ResMut<NavOverlayLevel>,
    mut contexts: EguiContexts,
) {
    if !on.0 || !keys.just_pressed(NEXT_LEVEL_KEY) || contexts.ctx_mut().is_ok_and(|c| c.egui_wants_keyboard_input()) {
        return;
    }
    shown.0 = next_level(&overlay.levels, shown.0);
}

/// The level after `shown` among `levels` (from the ground up, round again after the top).
pub fn next_level(levels: &[u8], shown: u8) -> u8 {
    levels.iter().copied().find(|&l| l > shown).or(levels.first().copied()).unwrap_or(0)
}

/// The cells of the level shown, or the ground's when the map has no such level.
fn shown_cells(s: &NavSnapshot, level: u8) -> Option<&LevelCells> {
    s.levels.iter().find(|l| l.level == level).or(s.levels.first())
}

fn cell_color(s: &NavSnapshot, l: &LevelCells, i: usize) -> Color {
    if l.walk[i] == 2 {
        return Color::srgba(0.65, 0.35, 0.95, 0.4);
    }
    if l.walk[i] != 0 {
        return Color::NONE;
    }
    if l.soft[i] > 0 {
        return Color::srgba(0.2, 0.45, 1.0, 0.45);
    }
    let fit = l.fit[i];
    if fit >= s.route_fit {
        let more = f32::from(fit - s.route_fit) / 15.0;
        Color::srgba(0.15, 0.55 + 0.45 * more, 0.2, 0.08 + 0.2 * more)
    } else if fit >= s.hull_fit {
        Color::srgba(0.95, 0.85, 0.1, 0.4)
    } else {
        Color::srgba(1.0, 0.2, 0.15, 0.45)
    }
}

fn world(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, -y, z)
}

fn draw_overlay(
    mut commands: Commands,
    on: Res<NavOverlayOn>,
    shown: Res<NavOverlayLevel>,
    mut overlay: ResMut<Overlay>,
    mut active: ResMut<ActiveMatch>,
    mut sprites: Query<&mut Sprite>,
) {
    let m = active.get();
    let hosting = Some(&m.node).filter(|n| n.is_hosting());
    let Some(host) = hosting.filter(|_| on.0) else {
        overlay.hosted = hosting.is_some();
        clear(&mut commands, &mut overlay);
        m.node.want_capture(false);
        return;
    };
    host.want_capture(true);
    let Some(snapshot) = host.capture::<NavSnapshot>() else {
        overlay.hosted = true;
        return;
    };
    overlay.hosted = true;
    overlay.levels = snapshot.levels.iter().map(|l| l.level).collect();
    let Some(cells) = shown_cells(&snapshot, shown.0) else { return };
    let key = (snapshot.loads, snapshot.cols, snapshot.rows, cells.level);
    if overlay.grid != Some(key) {
        for e in overlay.cells.drain(..) {
            commands.entity(e).despawn();
        }
        let t = snapshot.cell;
        for i in 0..snapshot.cols * snapshot.rows {
            let (c, r) = ((i % snapshot.cols) as f32, (i / snapshot.cols) as f32);
            let e = commands
                .spawn((
                    Sprite::from_color(cell_color(&snapshot, cells, i), Vec2::splat(t - 2.0)),
                    Transform::from_translation(world((c + 0.5) * t, (r + 0.5) * t, Z_CELLS)),
                ))
                .id();
            overlay.cells.push(e);
        }
        overlay.grid = Some(key);
        overlay.soft = cells.soft.clone();
    } else if overlay.soft != cells.soft {
        for (i, &e) in overlay.cells.iter().enumerate() {
            if overlay.soft.get(i) != cells.soft.get(i)
                && let Ok(mut sprite) = sprites.get_mut(e)
            {
                sprite.color = cell_color(&snapshot, cells, i);
            }
        }
        overlay.soft = cells.soft.clone();
    }
    if overlay.routes != snapshot.routes || overlay.routes_level != cells.level {
        for e in overlay.lines.drain(..) {
            commands.entity(e).despawn();
        }
        for route in &snapshot.routes {
            let mut from = (route.from, route.level);
            for leg in &route.legs {
                // A leg between levels is shown with either of them.
                let here = leg.level == cells.level || from.1 == cells.level;
                draw_leg(&mut commands, &mut overlay.lines, route.team, from.0, leg, here);
                from = (leg.point, leg.level);
            }
        }
        overlay.routes = snapshot.routes.clone();
        overlay.routes_level = cells.level;
    }
}

/// A bar from `a` to `b`, `width` wide.
fn bar(commands: &mut Commands, color: Color, a: [f32; 2], b: [f32; 2], width: f32) -> Entity {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len = (dx * dx + dy * dy).sqrt();
    let mid = world((a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0, Z_ROUTES);
    commands
        .spawn((
            Sprite::from_color(color, Vec2::new(len.max(1.0), width)),
            Transform::from_translation(mid).with_rotation(Quat::from_rotation_z(-dy.atan2(dx))),
        ))
        .id()
}

/// A square `side` wide at `p`.
fn square(commands: &mut Commands, color: Color, p: [f32; 2], side: f32) -> Entity {
    commands
        .spawn((Sprite::from_color(color, Vec2::splat(side)), Transform::from_translation(world(p[0], p[1], Z_ROUTES))))
        .id()
}

/// One leg of a team's route from `from`, in the style of its kind (see the module docs);
/// faint when it is on another level than the one shown.
fn draw_leg(commands: &mut Commands, lines: &mut Vec<Entity>, team: u8, from: [f32; 2], leg: &RouteLeg, here: bool) {
    let [r, g, b] = super::hud::team_rgb(team);
    let alpha = if here { 0.9 } else { 0.3 };
    let color = Color::srgba(r, g, b, alpha);
    let p = leg.point;
    match leg.kind {
        LegKind::Ramp { .. } => {
            lines.push(bar(commands, Color::srgba(r, g, b, alpha * 0.4), from, p, 14.0));
            lines.push(bar(commands, color, from, p, 3.0));
            lines.push(square(commands, color, p, 9.0));
        }
        LegKind::Ledge { .. } => {
            let (dx, dy) = (p[0] - from[0], p[1] - from[1]);
            let len = (dx * dx + dy * dy).sqrt();
            let dashes = (len / 12.0).ceil().max(1.0) as usize;
            for k in 0..dashes {
                let (t0, t1) = (k as f32 / dashes as f32, (k as f32 + 0.5) / dashes as f32);
                let at = |t: f32| [from[0] + dx * t, from[1] + dy * t];
                lines.push(bar(commands, color, at(t0), at(t1), 3.0));
            }
            // A ring where it lands.
            lines.push(square(commands, color, p, 13.0));
            lines.push(square(commands, Color::srgba(0.0, 0.0, 0.0, alpha * 0.8), p, 7.0));
        }
        _ => {
            lines.push(bar(commands, color, from, p, 3.0));
            lines.push(square(commands, color, p, 7.0));
        }
    }
}

fn clear(commands: &mut Commands, overlay: &mut Overlay) {
    for e in overlay.cells.drain(..).chain(overlay.lines.drain(..)) {
        commands.entity(e).despawn();
    }
    overlay.grid = None;
    overlay.soft.clear();
    overlay.routes.clear();
}

fn clear_overlay(
    mut commands: Commands,
    mut overlay: ResMut<Overlay>,
    mut on: ResMut<NavOverlayOn>,
    mut shown: ResMut<NavOverlayLevel>,
) {
    clear(&mut commands, &mut overlay);
    overlay.levels.clear();
    on.0 = false;
    shown.0 = 0;
}

fn legend(
    mut contexts: EguiContexts,
    on: Res<NavOverlayOn>,
    shown: Res<NavOverlayLevel>,
    overlay: Res<Overlay>,
) -> Result {
    if !on.0 {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("Navigation (F4)")
        .anchor(egui::Align2::LEFT_BOTTOM, [8.0, -8.0])
        .resizable(false)
        .collapsible(false)
        .show(ctx, |ui| {
            if !overlay.hosted {
                ui.label("Shown for matches this window hosts: a local match, a playtest or hosting.");
                return;
            }
            let row = |ui: &mut egui::Ui, rgb: [u8; 3], text: &str| {
                ui.horizontal(|ui| {
                    ui.colored_label(egui::Color32::from_rgb(rgb[0], rgb[1], rgb[2]), "■");
                    ui.label(text);
                });
            };
            if overlay.levels.len() > 1 {
                let shown = overlay.grid.map_or(shown.0, |(_, _, _, level)| level);
                let top = overlay.levels.last().copied().unwrap_or(0);
                ui.label(format!("level {shown} of 0–{top} (0: the ground) · F5: next level"));
            }
            row(ui, [60, 200, 70], "a bot's route fits (brighter: wider)");
            row(ui, [240, 215, 30], "only a bare hull fits");
            row(ui, [255, 60, 40], "no tank fits");
            row(ui, [60, 120, 255], "a crate (pushed, not a wall)");
            if overlay.levels.len() > 1 {
                row(ui, [165, 90, 240], "a ramp (taken only up or down it)");
            }
            ui.label("lines: each bot's route; a thin line drives, a broad band climbs or comes down a ramp, a dashed line drops off a ledge to a ringed landing; faint: on another level");
        });
    Ok(())
}

/// [`capture`] as the node thread's [`Capture`](crate::window::node::Capture): the window
/// reads it back with `NodeThread::capture::<NavSnapshot>()`.
pub fn capture_view(host: &mut Host) -> Option<Box<dyn std::any::Any + Send>> {
    capture(host).map(|snapshot| Box::new(snapshot) as Box<dyn std::any::Any + Send>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_key_steps_up_through_the_levels_and_round_again() {
        assert_eq!(next_level(&[0, 1], 0), 1);
        assert_eq!(next_level(&[0, 1], 1), 0, "after the top, the ground");
        assert_eq!(next_level(&[0, 1, 3], 1), 3, "levels the map lacks are skipped");
        assert_eq!(next_level(&[0], 0), 0, "a flat map has the ground alone");
        assert_eq!(next_level(&[0, 2], 5), 0, "a level gone with a new map");
    }

    #[test]
    fn a_layered_match_publishes_every_level_and_the_kinds_of_the_legs() {
        let mut host = Host::new(vimp_host::tanks::init_config(3), vimp_host::tanks::GAME).expect("host");
        host.load_map_json("bridge.json", include_str!("../../maps/bridge.json")).expect("the overpass loads");
        for i in 0..8 {
            let join = vimp_host::HostCommand::Join {
                player: vimp_host::PlayerId(i),
                name: format!("bot{i}"),
                team: None,
                bot: true,
            };
            host.push(join);
        }
        let mut kinds = Vec::new();
        for _ in 0..600 {
            host.step();
            let s = capture(&mut host).expect("a map");
            kinds.extend(s.routes.iter().flat_map(|r| r.legs.iter().map(|l| (l.kind, l.level))));
        }
        let s = capture(&mut host).expect("a map");
        assert_eq!(s.levels.iter().map(|l| l.level).collect::<Vec<_>>(), [0, 1]);
        assert!(s.levels.iter().all(|l| l.walk.len() == s.cols * s.rows && l.fit.len() == l.walk.len()));
        assert_eq!((s.cols, s.rows), (40, 32));
        assert_eq!(s.levels[0].walk[15 * 40 + 8], 2, "the west ramp's foot, on the ground");
        assert_eq!(s.levels[1].walk[15 * 40 + 17], 0, "the bridge");
        assert_eq!(s.levels[1].walk[15 * 40 + 8], 1, "no floor of level 1 over the ramp");
        assert!(kinds.iter().any(|&(k, l)| matches!(k, LegKind::Ramp { .. }) && l == 1), "a route up a ramp");
        assert!(kinds.contains(&(LegKind::Walk, 0)));
    }

    #[test]
    fn a_ramp_cell_is_drawn_and_a_wall_is_not() {
        let s = NavSnapshot { route_fit: 2, hull_fit: 1, ..NavSnapshot::default() };
        let l = LevelCells { level: 0, walk: vec![0, 1, 2], fit: vec![3, 0, 0], soft: vec![0, 0, 0] };
        assert_ne!(cell_color(&s, &l, 0), Color::NONE);
        assert_eq!(cell_color(&s, &l, 1), Color::NONE);
        assert_ne!(cell_color(&s, &l, 2), Color::NONE);
    }
}
