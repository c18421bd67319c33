//! A gamepad drives the tank: sticks to driving and the gun, buttons to fire, the next weapon
//! and the match menu. Bevy reads the pads (with the `gamepad` feature, gilrs; a pad's events
//! come the same way in tests); this turns them into the same key events the keyboard sends.

use bevy::input::gamepad::{Gamepad, GamepadButton};
use bevy::prelude::*;
use vimp_netcode::input::KeyAction;

use crate::window::ActiveMatch;

/// How far a stick must lean before it presses its direction.
const LEAN: f32 = 0.5;

/// What each part of a pad does, as the Settings page lists it.
pub(crate) const PAD_BINDINGS: &[(&str, &str)] = &[
    ("left stick", "drive (up forward, down back, left and right turn)"),
    ("right stick", "turn the gun left or right"),
    ("A (south), right trigger", "fire"),
    ("right bumper, Y (north)", "next weapon"),
    ("Start", "the match menu"),
];

/// The actions the pads hold now, for key events only on a change.
#[derive(Resource, Default, Debug)]
pub(crate) struct PadHeld(Vec<&'static str>);

/// The held actions of `pad`: a stick leaning past [`LEAN`] holds its direction's action.
fn held_by(pad: &Gamepad) -> Vec<&'static str> {
    let (left, right) = (pad.left_stick(), pad.right_stick());
    let mut held = Vec::new();
    for (lean, action) in [
        (left.y, "forward"),
        (-left.y, "back"),
        (-left.x, "left"),
        (left.x, "right"),
        (-right.x, "gunLeft"),
        (right.x, "gunRight"),
    ] {
        if lean > LEAN {
            held.push(action);
        }
    }
    held
}

/// One frame of the pads: held actions pressed and let go as keys are, fire and the next weapon
/// on a button's press; Start opens or closes the match menu. Nothing while the chat or the
/// match menu has the player (the menu's Start aside).
pub(crate) fn pad_keys(
    pads: Query<&Gamepad>,
    mut held: ResMut<PadHeld>,
    mut active: ResMut<ActiveMatch>,
    mut ui: ResMut<super::ui::UiState>,
) {
    let m = active.get();
    if pads.iter().any(|pad| pad.just_pressed(GamepadButton::Start)) && !ui.in_match.chat_open {
        ui.in_match.paused = !ui.in_match.paused;
    }
    let busy = ui.in_match.chat_open || ui.in_match.paused;
    let now: Vec<&'static str> = if busy { Vec::new() } else { pads.iter().flat_map(held_by).collect() };
    for action in held.0.iter().filter(|a| !now.contains(a)) {
        m.key(KeyAction::Up, action);
    }
    for action in now.iter().filter(|a| !held.0.contains(a)) {
        m.key(KeyAction::Down, action);
    }
    held.0 = now;
    if busy {
        return;
    }
    for pad in &pads {
        for (buttons, action) in [
            ([GamepadButton::South, GamepadButton::RightTrigger2], "fire"),
            ([GamepadButton::RightTrigger, GamepadButton::North], "nextWeapon"),
        ] {
            if buttons.iter().any(|b| pad.just_pressed(*b)) {
                m.key(KeyAction::Down, action);
            }
            if buttons.iter().any(|b| pad.just_released(*b)) {
                m.key(KeyAction::Up, action);
            }
        }
    }
}
