//! Keys to input events: the bound keys of the game's actions become `down`/`up` events.
//!
//! A held key (`forward`) sends `down` when pressed and `up` when released; a one-shot
//! key (`fire`) sends `down` on each press and the host consumes it once, exactly as
//! the key table says — the same table the predictor applies. The left mouse button
//! fires too. Keys go to the game only while no text field has the keyboard.

use bevy::input::keyboard::KeyCode;

/// Key names as the settings file spells them (Bevy's `KeyCode` names).
const KEYS: &[(&str, KeyCode)] = &[
    ("KeyA", KeyCode::KeyA),
    ("KeyB", KeyCode::KeyB),
    ("KeyC", KeyCode::KeyC),
    ("KeyD", KeyCode::KeyD),
    ("KeyE", KeyCode::KeyE),
    ("KeyF", KeyCode::KeyF),
    ("KeyG", KeyCode::KeyG),
    ("KeyH", KeyCode::KeyH),
    ("KeyI", KeyCode::KeyI),
    ("KeyJ", KeyCode::KeyJ),
    ("KeyK", KeyCode::KeyK),
    ("KeyL", KeyCode::KeyL),
    ("KeyM", KeyCode::KeyM),
    ("KeyN", KeyCode::KeyN),
    ("KeyO", KeyCode::KeyO),
    ("KeyP", KeyCode::KeyP),
    ("KeyQ", KeyCode::KeyQ),
    ("KeyR", KeyCode::KeyR),
    ("KeyS", KeyCode::KeyS),
    ("KeyT", KeyCode::KeyT),
    ("KeyU", KeyCode::KeyU),
    ("KeyV", KeyCode::KeyV),
    ("KeyW", KeyCode::KeyW),
    ("KeyX", KeyCode::KeyX),
    ("KeyY", KeyCode::KeyY),
    ("KeyZ", KeyCode::KeyZ),
    ("Digit0", KeyCode::Digit0),
    ("Digit1", KeyCode::Digit1),
    ("Digit2", KeyCode::Digit2),
    ("Digit3", KeyCode::Digit3),
    ("Digit4", KeyCode::Digit4),
    ("Digit5", KeyCode::Digit5),
    ("Digit6", KeyCode::Digit6),
    ("Digit7", KeyCode::Digit7),
    ("Digit8", KeyCode::Digit8),
    ("Digit9", KeyCode::Digit9),
    ("ArrowUp", KeyCode::ArrowUp),
    ("ArrowDown", KeyCode::ArrowDown),
    ("ArrowLeft", KeyCode::ArrowLeft),
    ("ArrowRight", KeyCode::ArrowRight),
    ("Space", KeyCode::Space),
    ("ShiftLeft", KeyCode::ShiftLeft),
    ("ShiftRight", KeyCode::ShiftRight),
    ("ControlLeft", KeyCode::ControlLeft),
    ("ControlRight", KeyCode::ControlRight),
    ("AltLeft", KeyCode::AltLeft),
    ("AltRight", KeyCode::AltRight),
    ("Comma", KeyCode::Comma),
    ("Period", KeyCode::Period),
    ("Slash", KeyCode::Slash),
    ("Semicolon", KeyCode::Semicolon),
    ("Quote", KeyCode::Quote),
    ("BracketLeft", KeyCode::BracketLeft),
    ("BracketRight", KeyCode::BracketRight),
    ("Backquote", KeyCode::Backquote),
    ("Minus", KeyCode::Minus),
    ("Equal", KeyCode::Equal),
    ("Backspace", KeyCode::Backspace),
    ("Insert", KeyCode::Insert),
    ("Delete", KeyCode::Delete),
    ("Home", KeyCode::Home),
    ("End", KeyCode::End),
    ("PageUp", KeyCode::PageUp),
    ("PageDown", KeyCode::PageDown),
    ("Numpad0", KeyCode::Numpad0),
    ("Numpad1", KeyCode::Numpad1),
    ("Numpad2", KeyCode::Numpad2),
    ("Numpad3", KeyCode::Numpad3),
    ("Numpad4", KeyCode::Numpad4),
    ("Numpad5", KeyCode::Numpad5),
    ("Numpad6", KeyCode::Numpad6),
    ("Numpad7", KeyCode::Numpad7),
    ("Numpad8", KeyCode::Numpad8),
    ("Numpad9", KeyCode::Numpad9),
];

/// The key a settings name means.
pub fn key_from_name(name: &str) -> Option<KeyCode> {
    KEYS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// The settings name of a key (for rebinding by pressing it).
pub fn key_name(key: KeyCode) -> Option<&'static str> {
    KEYS.iter().find(|(_, k)| *k == key).map(|(n, _)| *n)
}

/// A key as the keyboard shows it (`KeyW` → `W`, `Digit1` → `1`, `ArrowLeft` → `Left arrow`,
/// `ShiftLeft` → `Left Shift`); a name that is no key, as it is.
pub fn key_label(name: &str) -> String {
    if let Some(letter) = name.strip_prefix("Key") {
        return letter.to_owned();
    }
    if let Some(digit) = name.strip_prefix("Digit") {
        return digit.to_owned();
    }
    if let Some(digit) = name.strip_prefix("Numpad") {
        return format!("Numpad {digit}");
    }
    let side = |rest: &str, key: &str| {
        let (what, side) =
            if let Some(w) = rest.strip_suffix("Left") { (w, "Left") } else { (rest.strip_suffix("Right")?, "Right") };
        (what == key).then(|| format!("{side} {}", if key == "Control" { "Ctrl" } else { key }))
    };
    for key in ["Shift", "Control", "Alt"] {
        if let Some(label) = side(name, key) {
            return label;
        }
    }
    match name {
        "ArrowUp" => "Up arrow",
        "ArrowDown" => "Down arrow",
        "ArrowLeft" => "Left arrow",
        "ArrowRight" => "Right arrow",
        "Comma" => ",",
        "Period" => ".",
        "Slash" => "/",
        "Semicolon" => ";",
        "Quote" => "'",
        "BracketLeft" => "[",
        "BracketRight" => "]",
        "Backquote" => "`",
        "Minus" => "-",
        "Equal" => "=",
        "PageUp" => "Page Up",
        "PageDown" => "Page Down",
        other => other,
    }
    .to_owned()
}

/// What an action does, in words (`gunLeft` → `Turn the gun left`); an action this window does
/// not know, as it is.
pub fn action_words(action: &str) -> &str {
    match action {
        "forward" => "Drive forward",
        "back" => "Drive back",
        "left" => "Turn left",
        "right" => "Turn right",
        "gunLeft" => "Turn the gun left",
        "gunRight" => "Turn the gun right",
        "fire" => "Fire",
        "nextWeapon" => "Next weapon",
        "nextPlayer" => "Watch the next player",
        "prevPlayer" => "Watch the previous player",
        other => other,
    }
}

/// Keys the window keeps for itself (never bound to an action).
pub const RESERVED: &[KeyCode] = &[KeyCode::Tab, KeyCode::Enter, KeyCode::Escape, KeyCode::F3, KeyCode::F4];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_binding_names_a_key_and_names_round_trip() {
        for (action, key) in crate::window::settings::default_bindings() {
            let code = key_from_name(&key).unwrap_or_else(|| panic!("{action}: {key} is no key"));
            assert_eq!(key_name(code), Some(key.as_str()));
            assert!(!RESERVED.contains(&code));
        }
        assert_eq!(key_from_name("Tab"), None, "reserved keys cannot be bound");
    }

    #[test]
    fn keys_read_as_on_the_keyboard_and_actions_in_words() {
        let labels: Vec<String> =
            ["KeyW", "Digit1", "ArrowLeft", "ShiftLeft", "ControlRight", "Space", "Numpad4", "Nothing"]
                .iter()
                .map(|k| key_label(k))
                .collect();
        assert_eq!(labels, ["W", "1", "Left arrow", "Left Shift", "Right Ctrl", "Space", "Numpad 4", "Nothing"]);
        for (action, _) in crate::window::settings::default_bindings() {
            assert_ne!(action_words(&action), action, "{action} has words");
        }
    }

    /// Every key's label and every action's words are drawn by the window's fonts (egui's own):
    /// a glyph they lack shows as a box.
    #[test]
    fn the_fonts_draw_every_key_and_action() {
        use bevy_egui::egui;
        let ctx = egui::Context::default();
        ctx.run_ui(egui::RawInput::default(), |_| {}).textures_delta.clear();
        let font = egui::FontId::proportional(14.0);
        let actions = crate::window::settings::default_bindings().into_iter().map(|(a, _)| action_words(&a).to_owned());
        let missing: Vec<String> = KEYS
            .iter()
            .map(|(name, _)| key_label(name))
            .chain(actions)
            .filter(|text| !ctx.fonts_mut(|f| f.has_glyphs(&font, text)))
            .collect();
        assert!(missing.is_empty(), "no glyphs for {missing:?}");
    }
}
