//! The HUD panel (port 13): its `key:value` entries, and [`PanelState`], which sends only what changed.

use serde::Serialize;
use serde_json::Value;

use super::wire::{Part, Payload};
use super::{MetaError, PANEL_DATA};

/// The HUD panel (port 13): `["t:97","h:100","w1:200","wa:w1"]`, one `key:value` string per entry.
///
/// An entry without a value (`"h"`, the spectator's empty panel) is `(key, None)`;
/// `"h:"` is `(key, Some(""))`. Keys are non-empty and hold no `:`; an entry splits at
/// its first `:`, so values may hold `:`. Entries keep their order; duplicates are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(into = "Vec<String>")]
pub struct Panel(pub Vec<(String, Option<String>)>);

// Serde writes and reads the array of strings; joining and splitting an entry at its
// first `:` is the one thing no serde attribute expresses, so it is written out here.
fn panel_entry(key: &str, value: Option<&str>) -> String {
    match value {
        Some(value) => format!("{key}:{value}"),
        None => key.to_owned(),
    }
}

impl Panel {
    /// The one key the engine defines: round time, in seconds.
    pub const TIME_KEY: &str = "t";

    const PART: Part = Part { what: "panel", expected: "an array of \"key:value\" or \"key\" strings" };

    /// Checks every key: non-empty, no `:`.
    pub fn validate(&self) -> Result<(), MetaError> {
        match self.0.iter().find(|(key, _)| key.is_empty() || key.contains(':')) {
            Some((key, value)) => Err(MetaError::PanelKey { entry: panel_entry(key, value.as_deref()) }),
            None => Ok(()),
        }
    }
}

impl From<Panel> for Vec<String> {
    fn from(panel: Panel) -> Self {
        panel.0.iter().map(|(key, value)| panel_entry(key, value.as_deref())).collect()
    }
}

impl TryFrom<Vec<String>> for Panel {
    type Error = MetaError;

    /// Splits each entry at its first `:`; an entry with an empty key is refused.
    fn try_from(entries: Vec<String>) -> Result<Self, MetaError> {
        entries
            .into_iter()
            .map(|entry| {
                let (key, value) = match entry.split_once(':') {
                    Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                    None => (entry.clone(), None),
                };
                if key.is_empty() { Err(MetaError::PanelKey { entry }) } else { Ok((key, value)) }
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

impl Payload<PANEL_DATA> for Panel {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::try_from(Self::PART.read::<Vec<String>>(value)?)
    }

    fn check(&self) -> Result<(), MetaError> {
        self.validate()
    }
}

/// What one user's panel last showed, so that only changed keys are sent.
///
/// Keep one per user. [`PanelState::diff`] takes the whole current panel and returns
/// the entries to send:
///
/// * a key never sent, or whose value changed: `key:value`, in `current`'s order;
/// * a key sent before and missing from `current`: the key alone (its container is
///   hidden, as in the spectator's empty panel), after the changed ones, in the order
///   keys were first sent; it is then forgotten;
/// * nothing changed: `None`.
///
/// A key repeated in `current` counts with its first value; the repeats are ignored.
/// [`PanelState::reset`] forgets everything, so the next diff is the full panel (a user
/// entering the game).
///
/// A spectator's panel is the spec's empty one, [`PanelState::empty`]: the time, and every
/// other key of the game's panel without a value, once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PanelState {
    sent: Vec<(String, String)>,
    /// The keys without values went out since the last reset (the empty panel was sent).
    emptied: bool,
}

impl PanelState {
    /// A state that has sent nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries that bring the client from what was sent to `current`, and remembers them as sent.
    pub fn diff(&mut self, current: &[(String, String)]) -> Option<Panel> {
        if current.iter().any(|(key, _)| key != Panel::TIME_KEY) {
            self.emptied = false;
        }
        let mut out = Vec::new();
        for (i, (key, value)) in current.iter().enumerate() {
            if current[..i].iter().any(|(k, _)| k == key) {
                continue;
            }
            match self.sent.iter_mut().find(|(k, _)| k == key) {
                Some((_, sent)) if sent == value => {}
                Some((_, sent)) => {
                    sent.clone_from(value);
                    out.push((key.clone(), Some(value.clone())));
                }
                None => {
                    self.sent.push((key.clone(), value.clone()));
                    out.push((key.clone(), Some(value.clone())));
                }
            }
        }
        self.sent.retain(|(key, _)| {
            let kept = current.iter().any(|(k, _)| k == key);
            if !kept {
                out.push((key.clone(), None));
            }
            kept
        });
        if out.is_empty() { None } else { Some(Panel(out)) }
    }

    /// The spectator's empty panel: the time ([`Panel::TIME_KEY`]) with its value, and every
    /// other key of `keys` without one (the client hides their containers), the first time
    /// after a [`PanelState::reset`] or a [`PanelState::diff`] that showed values; after that
    /// only a changed time. A key shown before goes without its value too. `None` when
    /// nothing changed.
    pub fn empty(&mut self, time: &str, keys: &[String]) -> Option<Panel> {
        let current = [(Panel::TIME_KEY.to_owned(), time.to_owned())];
        let mut out = self.diff(&current).map_or_else(Vec::new, |panel| panel.0);
        if !std::mem::replace(&mut self.emptied, true) {
            for key in keys {
                let hidden = key == Panel::TIME_KEY || out.iter().any(|(k, _)| k == key);
                if !hidden {
                    out.push((key.clone(), None));
                }
            }
        }
        if out.is_empty() { None } else { Some(Panel(out)) }
    }

    /// Forgets what was sent: the next [`PanelState::diff`] sends every key, the next
    /// [`PanelState::empty`] the whole empty panel.
    pub fn reset(&mut self) {
        self.sent.clear();
        self.emptied = false;
    }

    /// The values last sent, in the order keys were first sent.
    pub fn sent(&self) -> &[(String, String)] {
        &self.sent
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::meta::MetaMessage;
    use crate::meta::testing::{both_ways, dec, enc, s, shape_err};

    fn panel(entries: &[(&str, Option<&str>)]) -> Panel {
        Panel(entries.iter().map(|(k, v)| (s(k), v.map(s))).collect())
    }

    fn pairs(entries: &[(&str, &str)]) -> Vec<(String, String)> {
        entries.iter().map(|(k, v)| (s(k), s(v))).collect()
    }

    #[test]
    fn panel_spec_example() {
        both_ways(
            panel(&[("t", Some("97")), ("h", Some("100")), ("w1", Some("200")), ("wa", Some("w1"))]),
            r#"["t:97","h:100","w1:200","wa:w1"]"#,
        );
    }

    #[test]
    fn panel_keys_without_values_and_colons_in_values() {
        // The spectator's empty panel: time plus keys only.
        both_ways(panel(&[("t", Some("97")), ("h", None), ("w1", None), ("wa", None)]), r#"["t:97","h","w1","wa"]"#);
        // Split at the first colon; an empty value is not a missing one.
        both_ways(panel(&[("clock", Some("12:30")), ("h", Some(""))]), r#"["clock:12:30","h:"]"#);
        both_ways(panel(&[]), "[]");
    }

    #[test]
    fn panel_errors() {
        assert_eq!(dec(PANEL_DATA, r#"["t:97",""]"#), Err(MetaError::PanelKey { entry: s("") }));
        assert_eq!(dec(PANEL_DATA, r#"[":5"]"#), Err(MetaError::PanelKey { entry: s(":5") }));
        for json in [r#"["t",1]"#, r#"{"t":"1"}"#, r#""t:97""#, "null", r#"[["t","97"]]"#] {
            shape_err(PANEL_DATA, json, "panel");
        }
        let bad = MetaMessage::Panel(panel(&[("t", Some("1")), ("a:b", Some("c"))]));
        assert_eq!(bad.validate(), Err(MetaError::PanelKey { entry: s("a:b:c") }));
        assert_eq!(panel(&[("", None)]).validate(), Err(MetaError::PanelKey { entry: s("") }));
    }

    #[test]
    fn panel_state_sends_only_changes() {
        let mut state = PanelState::new();
        let full = pairs(&[("t", "97"), ("h", "100"), ("w1", "200"), ("wa", "w1")]);
        let json = |p: Option<Panel>| p.map(enc);

        assert_eq!(json(state.diff(&full)).as_deref(), Some(r#"["t:97","h:100","w1:200","wa:w1"]"#));
        assert_eq!(state.diff(&full), None, "nothing changed");

        let next = pairs(&[("t", "96"), ("h", "100"), ("w1", "199"), ("wa", "w1")]);
        assert_eq!(json(state.diff(&next)).as_deref(), Some(r#"["t:96","w1:199"]"#));

        // A new key is sent, in current's order.
        let more = pairs(&[("t", "96"), ("w2", "5"), ("h", "100"), ("w1", "199"), ("wa", "w1")]);
        assert_eq!(json(state.diff(&more)).as_deref(), Some(r#"["w2:5"]"#));

        // Becoming a spectator: only the time is left, the other keys go without values.
        let spectator = pairs(&[("t", "95")]);
        assert_eq!(json(state.diff(&spectator)).as_deref(), Some(r#"["t:95","h","w1","wa","w2"]"#));
        assert_eq!(state.sent(), pairs(&[("t", "95")]).as_slice());
        assert_eq!(state.diff(&spectator), None);

        // Entering the game again: everything is new.
        state.reset();
        assert_eq!(json(state.diff(&spectator)).as_deref(), Some(r#"["t:95"]"#));
        assert_eq!(PanelState::new().diff(&[]), None);

        // A repeated key counts with its first value.
        let twice = pairs(&[("t", "95"), ("t", "94")]);
        assert_eq!(state.diff(&twice), None);
        assert_eq!(state.diff(&twice), None);
    }

    #[test]
    fn a_spectator_gets_the_time_and_the_other_keys_without_values_once() {
        let keys: Vec<String> = ["t", "h", "w1", "w2", "wa"].map(s).to_vec();
        let json = |p: Option<Panel>| p.map(enc);
        // A fresh spectator: the spec's empty panel, then only the clock.
        let mut state = PanelState::new();
        assert_eq!(json(state.empty("97", &keys)).as_deref(), Some(r#"["t:97","h","w1","w2","wa"]"#));
        assert_eq!(state.empty("97", &keys), None, "nothing changed");
        assert_eq!(json(state.empty("96", &keys)).as_deref(), Some(r#"["t:96"]"#));

        // A player who starts watching: the keys it showed go without values, each once.
        let mut player = PanelState::new();
        player.diff(&pairs(&[("t", "50"), ("h", "80"), ("wa", "w2")]));
        assert_eq!(json(player.empty("50", &keys)).as_deref(), Some(r#"["h","wa","w1","w2"]"#));
        assert_eq!(player.empty("49", &keys).map(enc).as_deref(), Some(r#"["t:49"]"#));

        // Back in the game, then watching again: the empty panel again.
        player.diff(&pairs(&[("t", "48"), ("h", "100")]));
        assert_eq!(json(player.empty("48", &keys)).as_deref(), Some(r#"["h","w1","w2","wa"]"#));

        // After a reset (a new map) the whole empty panel goes again.
        state.reset();
        assert_eq!(json(state.empty("180", &keys)).as_deref(), Some(r#"["t:180","h","w1","w2","wa"]"#));
        // No game keys known: the time alone.
        assert_eq!(json(PanelState::new().empty("3", &[])).as_deref(), Some(r#"["t:3"]"#));
    }

    proptest! {
        #[test]
        fn panel_state_keeps_the_client_in_step(
            steps in proptest::collection::vec(proptest::collection::vec(("[a-d]", "[0-2]"), 0..5), 1..12),
        ) {
            let mut state = PanelState::new();
            let mut client: Vec<(String, Option<String>)> = Vec::new();
            for step in steps {
                // Repeated keys count with their first value.
                let mut current: Vec<(String, String)> = Vec::new();
                for (k, v) in &step {
                    if !current.iter().any(|(ck, _)| ck == k) {
                        current.push((k.clone(), v.clone()));
                    }
                }
                if let Some(Panel(entries)) = state.diff(&step) {
                    for (k, v) in entries {
                        let slot = client.iter_mut().find(|(ck, _)| *ck == k);
                        let before = slot.as_ref().and_then(|(_, cv)| cv.clone());
                        prop_assert!(before != v, "{k}: sent {v:?} though the client shows it");
                        prop_assert!(v.is_some() || before.is_some(), "{k}: hid a key that was not shown");
                        match slot {
                            Some((_, cv)) => *cv = v,
                            None => client.push((k, v)),
                        }
                    }
                }
                let mut shown: Vec<(String, String)> =
                    client.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))).collect();
                shown.sort();
                let mut want = current.clone();
                want.sort();
                prop_assert_eq!(shown, want);
            }
        }
    }
}
