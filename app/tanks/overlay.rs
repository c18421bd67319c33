//! The designers' navigation overlay (F4): the nav grid, where a tank fits, and each bot's route.
//!
//! The host thread of a match this window hosts (a local match, a playtest, hosting online)
//! publishes a [`NavSnapshot`] ten times a second while the overlay is on: the grid with its
//! `fit` values and the crates' cells from the host's navigation, and every living bot's
//! route ([`capture`], as the node thread's view). The window draws it over the map, one square per cell:
//!
//! | colour | the cell |
//! |---|---|
//! | green | a bot's route fits it (a square as wide as [`route_width`] contains it); brighter where wider squares do |
//! | yellow | only a bare hull fits (bots keep out of it unless there is no other way) |
//! | red | free, but no tank fits |
//! | blue | a crate covers it (routes may pass at a price: tanks push crates) |
//!
//! and each bot's route as a line in its team's colour from the tank through its legs. It
//! follows hot reloads: a new map load rebuilds the squares.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use vimp_host::Host;
use vimp_host::engine::mapstate::MapState;
use vimp_host::engine::nav::Nav;
use vimp_host::engine::physics::Physics;
use vimp_host::tanks::TanksRules;
use vimp_host::tanks::bots::Bot;
use vimp_host::tanks::bots::brain::route_width;
use vimp_host::tanks::tank::Tank;

use crate::window::{ActiveMatch, Screen};

/// A bot's route as the overlay draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct BotRoute {
    /// Its team.
    pub team: u8,
    /// Where the tank is.
    pub from: [f32; 2],
    /// The points of the legs still to drive.
    pub points: Vec<[f32; 2]>,
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
    /// Per cell: 0 free, 1 wall.
    pub walk: Vec<u8>,
    /// Per cell: the side of the largest free square containing it (cells, at most 15).
    pub fit: Vec<u8>,
    /// Per cell: how many crates cover it.
    pub soft: Vec<u8>,
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
    let routes = bots
        .iter()
        .filter(|(t, b)| t.alive && b.has_route())
        .map(|(t, b)| BotRoute { team: t.team, from: t.position(physics), points: b.route.clone() })
        .collect();
    let fit_of = |w: f32| grid.cells_for(w).min(u32::from(u8::MAX)) as u8;
    Some(NavSnapshot {
        loads: world.resource::<MapState>().loads,
        cols: grid.cols(),
        rows: grid.rows(),
        cell: grid.cell(),
        walk: grid.walk().to_vec(),
        fit: grid.fit_values().to_vec(),
        soft: nav.soft_values(),
        route_fit: fit_of(route_width(&model)),
        hull_fit: fit_of(model.width),
        routes,
    })
}

/// Whether the overlay is on (F4 toggles it).
#[derive(Resource, Debug, Default)]
pub struct NavOverlayOn(pub bool);

/// Adds the overlay's drawing and its legend.
pub struct NavOverlayPlugin;

impl Plugin for NavOverlayPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<NavOverlayOn>()
            .init_resource::<Overlay>()
            .add_systems(Update, draw_overlay.after(crate::window::MatchUpdate).run_if(in_state(Screen::Match)))
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
    /// The grid drawn: (loads, cols, rows), and a square per cell.
    grid: Option<(u32, usize, usize)>,
    cells: Vec<Entity>,
    soft: Vec<u8>,
    routes: Vec<BotRoute>,
    lines: Vec<Entity>,
    /// The newest snapshot was there (false: this window does not host the match).
    hosted: bool,
}

fn cell_color(s: &NavSnapshot, i: usize) -> Color {
    if s.walk[i] != 0 {
        return Color::NONE;
    }
    if s.soft[i] > 0 {
        return Color::srgba(0.2, 0.45, 1.0, 0.45);
    }
    let fit = s.fit[i];
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
    let key = (snapshot.loads, snapshot.cols, snapshot.rows);
    if overlay.grid != Some(key) {
        for e in overlay.cells.drain(..) {
            commands.entity(e).despawn();
        }
        let t = snapshot.cell;
        for i in 0..snapshot.cols * snapshot.rows {
            let (c, r) = ((i % snapshot.cols) as f32, (i / snapshot.cols) as f32);
            let e = commands
                .spawn((
                    Sprite::from_color(cell_color(&snapshot, i), Vec2::splat(t - 2.0)),
                    Transform::from_translation(world((c + 0.5) * t, (r + 0.5) * t, Z_CELLS)),
                ))
                .id();
            overlay.cells.push(e);
        }
        overlay.grid = Some(key);
        overlay.soft = snapshot.soft.clone();
    } else if overlay.soft != snapshot.soft {
        for (i, &e) in overlay.cells.iter().enumerate() {
            if overlay.soft.get(i) != snapshot.soft.get(i)
                && let Ok(mut sprite) = sprites.get_mut(e)
            {
                sprite.color = cell_color(&snapshot, i);
            }
        }
        overlay.soft = snapshot.soft.clone();
    }
    if overlay.routes != snapshot.routes {
        for e in overlay.lines.drain(..) {
            commands.entity(e).despawn();
        }
        for route in &snapshot.routes {
            let [r, g, b] = super::hud::team_rgb(route.team);
            let color = Color::srgba(r, g, b, 0.9);
            let mut from = route.from;
            for &p in &route.points {
                let (dx, dy) = (p[0] - from[0], p[1] - from[1]);
                let len = (dx * dx + dy * dy).sqrt();
                let mid = world((from[0] + p[0]) / 2.0, (from[1] + p[1]) / 2.0, Z_ROUTES);
                let line = commands
                    .spawn((
                        Sprite::from_color(color, Vec2::new(len.max(1.0), 3.0)),
                        Transform::from_translation(mid).with_rotation(Quat::from_rotation_z(-dy.atan2(dx))),
                    ))
                    .id();
                let dot = commands
                    .spawn((
                        Sprite::from_color(color, Vec2::splat(7.0)),
                        Transform::from_translation(world(p[0], p[1], Z_ROUTES)),
                    ))
                    .id();
                overlay.lines.extend([line, dot]);
                from = p;
            }
        }
        overlay.routes = snapshot.routes.clone();
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

fn clear_overlay(mut commands: Commands, mut overlay: ResMut<Overlay>, mut on: ResMut<NavOverlayOn>) {
    clear(&mut commands, &mut overlay);
    on.0 = false;
}

fn legend(mut contexts: EguiContexts, on: Res<NavOverlayOn>, overlay: Res<Overlay>) -> Result {
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
            row(ui, [60, 200, 70], "a bot's route fits (brighter: wider)");
            row(ui, [240, 215, 30], "only a bare hull fits");
            row(ui, [255, 60, 40], "no tank fits");
            row(ui, [60, 120, 255], "a crate (pushed, not a wall)");
            ui.label("lines: each bot's route");
        });
    Ok(())
}

/// [`capture`] as the node thread's [`Capture`](crate::window::node::Capture): the window
/// reads it back with `NodeThread::capture::<NavSnapshot>()`.
pub fn capture_view(host: &mut Host) -> Option<Box<dyn std::any::Any + Send>> {
    capture(host).map(|snapshot| Box::new(snapshot) as Box<dyn std::any::Any + Send>)
}
