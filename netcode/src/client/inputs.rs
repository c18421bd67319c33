//! What a client's player does, as the host hears it: keys pressed and released (with the
//! view they were seen in) and the aim, each remembered until the host applied it (the
//! rules are [`Keys`](super::keys::Keys)'s; here they go on the host's session).

use super::*;

impl ClientCore {
    /// Presses or releases a key by name (from the host's key table); returns its seq.
    pub fn key(&mut self, action: KeyAction, name: &str) -> Option<u32> {
        self.key_seen(action, name, None)
    }

    /// Presses or releases a key by name, as [`Self::key`] does, saying which world the
    /// player saw: `view_ms`, the server time of the world drawn (its interpolation time, in
    /// the ms of [`Frame::server_time_ms`]). A one-shot press goes right after a view event
    /// ([`ViewEvent`](crate::input::ViewEvent)) to a host that takes them ([`Welcome::view`]),
    /// which then judges its shots by what the player saw. Returns the key's seq.
    pub fn key_seen(&mut self, action: KeyAction, name: &str, view_ms: Option<f64>) -> Option<u32> {
        let takes_views = self.link.welcome.as_ref().is_some_and(|w| w.view);
        let tick_ms = self.tick_ms();
        let view = view_ms.filter(|_| takes_views).map(|ms| ms / tick_ms);
        let (_, session) = self.link.host.as_mut()?;
        let (seq, events) = self.keys.press(action, name, view)?;
        for event in events {
            session.push(event);
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
        let takes_aims = self.link.welcome.as_ref().is_some_and(|w| w.aim);
        let (_, session) = self.link.host.as_mut()?;
        let event = self.keys.aim(now, aim, takes_aims)?;
        session.push(event);
        Some(event.seq())
    }
}
