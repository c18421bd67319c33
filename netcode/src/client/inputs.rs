//! What a client's player does, as the host hears it: keys pressed and released (with the
//! view they were seen in) and the aim, each remembered until the host applied it.

use super::*;

/// The shortest time between two aims at a point ([`ClientCore::aim`]): at most 30 a second,
/// the rate of the host's snapshots, however fast the pointer moves.
pub const AIM_INTERVAL: Duration = Duration::from_micros(33_333);

impl ClientCore {
    /// Presses or releases a key by name (from the host's key table); returns its seq.
    pub fn key(&mut self, action: KeyAction, name: &str) -> Option<u32> {
        self.key_seen(action, name, None)
    }

    /// Presses or releases a key by name, as [`Self::key`] does, saying which world the
    /// player saw: `view_ms`, the server time of the world drawn (its interpolation time, in
    /// the ms of [`Frame::server_time_ms`]). A one-shot press goes right after a view event
    /// ([`ViewEvent`]) to a host that takes them ([`Welcome::view`]), which then judges its
    /// shots by what the player saw. Returns the key's seq.
    pub fn key_seen(&mut self, action: KeyAction, name: &str, view_ms: Option<f64>) -> Option<u32> {
        let spec = self.keys.as_ref()?.lookup(name)?;
        let takes_views = self.welcome.as_ref().is_some_and(|w| w.view) && self.keyset != Some(Keyset::Spectator);
        let view = view_ms
            .filter(|_| takes_views && action == KeyAction::Down && spec.kind == KeyKind::OneShot)
            .and_then(|ms| ViewTime::from_ticks(ms / self.tick_ms()));
        let (_, session) = self.host.as_mut()?;
        let first = self.next_seq;
        let view = view.map(|view| WireInput::View(ViewEvent { seq: first, view }));
        let seq = first + u32::from(view.is_some());
        let key = WireInput::Key(BinaryKeyEvent { seq, action, bit: spec.bit });
        self.next_seq = seq + 1;
        for event in view.into_iter().chain([key]) {
            session.push(event);
        }
        for event in view.into_iter().chain([key]) {
            self.remember_sent(event);
        }
        Some(seq)
    }

    /// Aims the pointer at a world point, or lets go of the aim (`None`); returns its seq,
    /// which the caller's predictor applies like a key's ([`KeyState::apply_aim`](crate::input::KeyState::apply_aim)).
    ///
    /// Nothing is sent (`None`) to a host that does not take aims ([`Welcome::aim`]), for an
    /// aim that says what the last one said, or for an aim at a point sooner than
    /// [`AIM_INTERVAL`] after the last one: call again with the pointer's newest point (the
    /// latest aim wins). Letting go is never held back.
    pub fn aim(&mut self, now: Duration, aim: Option<Aim>) -> Option<u32> {
        // A host that takes no aims, or a seat that watches (it has the spectator's keys), gets none.
        if !self.welcome.as_ref().is_some_and(|w| w.aim) || self.keyset == Some(Keyset::Spectator) {
            return None;
        }
        let last = self.last_aim;
        if last.map_or(aim.is_none(), |(_, a)| a == aim)
            || aim.is_some() && last.is_some_and(|(at, _)| now.saturating_sub(at) < AIM_INTERVAL)
        {
            return None;
        }
        let (_, session) = self.host.as_mut()?;
        let seq = self.next_seq;
        self.next_seq += 1;
        let event = WireInput::Aim(AimEvent { seq, aim });
        session.push(event);
        self.remember_sent(event);
        self.last_aim = Some((now, aim));
        Some(seq)
    }

    /// Keeps an event sent, to send again to a new host ([`ClientConfig::input_history`]).
    pub(super) fn remember_sent(&mut self, event: WireInput) {
        if self.sent.len() == self.settings.input_history {
            self.sent.pop_front();
        }
        if self.settings.input_history > 0 {
            self.sent.push_back(event);
        }
    }
}
