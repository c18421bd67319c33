//! A client's keys: the key table in use (the game's or the spectator's), the seq of each
//! event, and the events sent, kept to send again to a new host.

use std::collections::VecDeque;
use std::time::Duration;

use crate::input::{Aim, AimEvent, BinaryKeyEvent, KeyAction, KeyKind, KeyTable, ViewEvent, ViewTime, WireInput};
use crate::meta::Keyset;
use crate::session::Welcome;

/// The shortest time between two aims at a point ([`ClientCore::aim`](super::ClientCore::aim)):
/// at most 30 a second, the rate of the host's snapshots, however fast the pointer moves.
pub const AIM_INTERVAL: Duration = Duration::from_micros(33_333);

/// What the player presses and aims, as events for the host: which key table names the keys
/// (the host says whether the seat plays or watches), the seqs, and the recent events, which a
/// new host gets again. [`ClientCore`](super::ClientCore) puts the events on the host's session.
#[derive(Debug)]
pub(super) struct Keys {
    /// The key table in use: the game's while playing, the spectator's while watching.
    pub(super) table: Option<KeyTable>,
    /// The game's key table, from the config.
    player: Option<KeyTable>,
    /// The key set the host last named (`KEYSET_DATA`).
    keyset: Option<Keyset>,
    /// The seq of the next event.
    next_seq: u32,
    /// The events sent lately, oldest first, to send again to a new host.
    sent: VecDeque<WireInput>,
    /// How many of them are kept ([`ClientConfig::input_history`](super::ClientConfig::input_history)).
    history: usize,
    /// The last aim sent (`None`: let go) and when.
    last_aim: Option<(Duration, Option<Aim>)>,
}

impl Keys {
    /// No keys known yet; `history` events are kept to send again.
    pub(super) fn new(history: usize) -> Keys {
        Keys { table: None, player: None, keyset: None, next_seq: 1, sent: VecDeque::new(), history, last_aim: None }
    }

    /// The key table in use, once known.
    pub(super) fn table(&self) -> Option<&KeyTable> {
        self.table.as_ref()
    }

    /// The key set the host last named.
    pub(super) fn keyset(&self) -> Option<Keyset> {
        self.keyset
    }

    /// Whether the seat watches (it has the spectator's keys): it sends no views and no aims.
    fn watching(&self) -> bool {
        self.keyset == Some(Keyset::Spectator)
    }

    /// The game's key table, from the host's config: in use unless the seat watches.
    pub(super) fn configured(&mut self, player: Option<KeyTable>) {
        self.player = player;
        if !self.watching() {
            self.table.clone_from(&self.player);
        }
    }

    /// The host named the key set: the spectator's keys or the game's (the welcome's, until
    /// the host names one). Events sent under the other set are dropped rather than
    /// repeated, since the host would read their bits through the new one. Returns the seq
    /// up to which the host's session should count the inputs applied, when the set changed.
    pub(super) fn switch(&mut self, keyset: Keyset) -> Option<u32> {
        if self.keyset.replace(keyset).unwrap_or(Keyset::Player) == keyset {
            return None;
        }
        self.table = match keyset {
            Keyset::Spectator => Some(crate::session::spectator_keys()),
            Keyset::Player => self.player.clone(),
        };
        self.sent.clear();
        Some(self.next_seq.saturating_sub(1))
    }

    /// A host welcomed this client: the seqs go on past the last input it applied, and a seat
    /// it seats to watch has the spectator's keys.
    pub(super) fn welcomed(&mut self, welcome: &Welcome) {
        self.next_seq = self.next_seq.max(welcome.input_seq + 1);
        if welcome.spectator {
            self.keyset = Some(Keyset::Spectator);
            self.table = Some(crate::session::spectator_keys());
        }
    }

    /// The events sent that the host of `welcome` has not applied and takes (aims and views
    /// only if it says so), oldest first: a new host gets them again.
    pub(super) fn unapplied<'a>(&'a self, welcome: &'a Welcome) -> impl Iterator<Item = WireInput> + 'a {
        self.sent.iter().copied().filter(|e| e.seq() > welcome.input_seq).filter(|e| match e {
            WireInput::Key(_) => true,
            WireInput::Aim(_) => welcome.aim,
            WireInput::View(_) => welcome.view,
        })
    }

    /// Presses or releases the key `name`: the events to send, a view event first for a
    /// one-shot press given `view` (the match time of the world the player saw, in ticks, for a
    /// host that takes views; not while watching), and the key's seq. `None` for a key the
    /// table does not name.
    pub(super) fn press(
        &mut self,
        action: KeyAction,
        name: &str,
        view: Option<f64>,
    ) -> Option<(u32, impl Iterator<Item = WireInput> + use<>)> {
        let spec = self.table.as_ref()?.lookup(name)?;
        let view = view
            .filter(|_| !self.watching() && action == KeyAction::Down && spec.kind == KeyKind::OneShot)
            .and_then(ViewTime::from_ticks);
        let first = self.next_seq;
        let view = view.map(|view| WireInput::View(ViewEvent { seq: first, view }));
        let seq = first + u32::from(view.is_some());
        let key = WireInput::Key(BinaryKeyEvent { seq, action, bit: spec.bit });
        self.next_seq = seq + 1;
        for event in view.into_iter().chain([key]) {
            self.remember(event);
        }
        Some((seq, view.into_iter().chain([key])))
    }

    /// Aims at a world point at `now`, or lets go (`None`): the event to send, for a host that
    /// takes aims (`host_aims`). Nothing while watching, for an aim that says what the last
    /// one said, or for an aim at a point sooner than [`AIM_INTERVAL`] after the last one;
    /// letting go is never held back.
    pub(super) fn aim(&mut self, now: Duration, aim: Option<Aim>, host_aims: bool) -> Option<WireInput> {
        if !host_aims || self.watching() {
            return None;
        }
        let last = self.last_aim;
        if last.map_or(aim.is_none(), |(_, a)| a == aim)
            || aim.is_some() && last.is_some_and(|(at, _)| now.saturating_sub(at) < AIM_INTERVAL)
        {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let event = WireInput::Aim(AimEvent { seq, aim });
        self.remember(event);
        self.last_aim = Some((now, aim));
        Some(event)
    }

    /// Keeps an event sent, to send again to a new host (the newest `history`).
    fn remember(&mut self, event: WireInput) {
        if self.sent.len() == self.history {
            self.sent.pop_front();
        }
        if self.history > 0 {
            self.sent.push_back(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::test_support::welcome;

    fn game_keys() -> KeyTable {
        KeyTable::from_json(r#"{ "forward": { "bit": 0, "type": 0 }, "fire": { "bit": 6, "type": 1 } }"#).expect("keys")
    }

    fn seqs(keys: &Keys, welcome: &Welcome) -> Vec<u32> {
        keys.unapplied(welcome).map(|e| e.seq()).collect()
    }

    #[test]
    fn the_key_table_switches_between_the_player_s_and_the_spectator_s() {
        let mut keys = Keys::new(64);
        assert!(keys.table().is_none() && keys.press(KeyAction::Down, "forward", None).is_none(), "no table yet");
        keys.configured(Some(game_keys()));
        assert_eq!(keys.table(), Some(&game_keys()));
        assert_eq!(keys.switch(Keyset::Player), None, "the game's keys are in use until the host names a set");
        let (forward, _) = keys.press(KeyAction::Down, "forward", None).expect("a game key");
        assert_eq!(keys.switch(Keyset::Spectator), Some(forward), "the host counts what was sent as applied");
        assert_eq!(keys.table(), Some(&crate::session::spectator_keys()));
        assert_eq!(keys.unapplied(&welcome()).count(), 0, "events under the old set are not sent again");
        assert!(keys.press(KeyAction::Down, "forward", None).is_none(), "a game key means nothing while watching");
        keys.configured(Some(game_keys()));
        assert_eq!(keys.table(), Some(&crate::session::spectator_keys()), "a new config does not end the watching");
        let (next, _) = keys.press(KeyAction::Down, "nextPlayer", None).expect("a spectator's key");
        assert_eq!(next, forward + 1);
        assert_eq!(keys.switch(Keyset::Spectator), None, "named again: nothing changes");
        assert_eq!(keys.switch(Keyset::Player), Some(next));
        assert_eq!(keys.table(), Some(&game_keys()));
        assert_eq!(keys.keyset(), Some(Keyset::Player));
    }

    #[test]
    fn a_view_goes_before_a_one_shot_press_only_and_never_while_watching() {
        let mut keys = Keys::new(64);
        keys.configured(Some(game_keys()));
        let (seq, events) = keys.press(KeyAction::Down, "fire", Some(40.5)).expect("fire");
        let view = ViewTime { tick: 40, frac: 128 };
        assert_eq!(
            events.collect::<Vec<_>>(),
            [
                WireInput::View(ViewEvent { seq: 1, view }),
                WireInput::Key(BinaryKeyEvent { seq: 2, action: KeyAction::Down, bit: 6 })
            ]
        );
        assert_eq!(seq, 2);
        let (_, events) = keys.press(KeyAction::Up, "fire", Some(41.0)).expect("its release");
        assert_eq!(events.count(), 1, "no view with a release");
        let (_, events) = keys.press(KeyAction::Down, "forward", Some(41.0)).expect("a held key");
        assert_eq!(events.count(), 1, "no view with a held key");
        let mut watching = welcome();
        watching.spectator = true;
        keys.welcomed(&watching);
        assert_eq!(keys.table(), Some(&crate::session::spectator_keys()));
        let (_, events) = keys.press(KeyAction::Down, "nextPlayer", Some(50.0)).expect("a spectator's key");
        assert_eq!(events.count(), 1, "a seat that watches sends no view");
    }

    #[test]
    fn a_new_host_gets_again_what_it_did_not_apply_and_takes_and_seqs_go_on_past_it() {
        let mut keys = Keys::new(3);
        keys.configured(Some(game_keys()));
        for _ in 0..2 {
            keys.press(KeyAction::Down, "forward", None);
        }
        keys.aim(Duration::ZERO, Some(Aim { x: 1.0, y: 2.0, flags: 0 }), true);
        keys.press(KeyAction::Down, "fire", Some(3.0));
        // Seqs 1 and 2 (keys), 3 (an aim), 4 and 5 (a view and a press): the newest 3 kept.
        let mut w = welcome();
        w.input_seq = 0;
        assert_eq!(seqs(&keys, &w), [3, 4, 5]);
        w.input_seq = 3;
        assert_eq!(seqs(&keys, &w), [4, 5]);
        (w.aim, w.view, w.input_seq) = (false, false, 0);
        assert_eq!(seqs(&keys, &w), [5], "a host that takes no aims nor views gets the keys alone");
        w.input_seq = 40;
        keys.welcomed(&w);
        let (seq, _) = keys.press(KeyAction::Up, "forward", None).expect("a key");
        assert_eq!(seq, 41, "after the last input the host applied");
        let mut none = Keys::new(0);
        none.configured(Some(game_keys()));
        none.press(KeyAction::Down, "forward", None);
        assert_eq!(seqs(&none, &welcome()), [] as [u32; 0], "no history kept");
    }

    #[test]
    fn aims_go_at_most_every_interval_and_letting_go_goes_at_once() {
        let ms = Duration::from_millis;
        let (a, b) = (Some(Aim { x: 1.0, y: 2.0, flags: 0 }), Some(Aim { x: 3.0, y: 4.0, flags: 0 }));
        let mut keys = Keys::new(64);
        assert_eq!(keys.aim(ms(0), a, false), None, "a host that takes no aims");
        assert_eq!(keys.aim(ms(0), None, true), None, "nothing to let go of");
        assert_eq!(keys.aim(ms(0), a, true), Some(WireInput::Aim(AimEvent { seq: 1, aim: a })));
        assert_eq!(keys.aim(ms(100), a, true), None, "the same aim again");
        assert_eq!(keys.aim(ms(10), b, true), None, "sooner than the interval");
        assert_eq!(keys.aim(ms(10), None, true), Some(WireInput::Aim(AimEvent { seq: 2, aim: None })));
        assert_eq!(keys.aim(ms(20), b, true), None, "the interval counts from letting go too");
        assert_eq!(keys.aim(ms(10) + AIM_INTERVAL, b, true), Some(WireInput::Aim(AimEvent { seq: 3, aim: b })));
        assert_eq!(keys.switch(Keyset::Spectator), Some(3));
        assert_eq!(keys.aim(ms(500), a, true), None, "a seat that watches does not aim");
    }
}
