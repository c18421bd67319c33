//! The key-state rule: key events in, the bits of each fixed step out.

use super::*;

/// The input of one fixed step, as produced by [`KeyState::step`]: key bits and the aim in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct KeyBits {
    /// Held keys that are down during this step.
    pub held: u64,
    /// One-shot keys that fire in this step.
    pub fired: u64,
    /// The pointer's aim, while there is one (the latest [`AimEvent`]'s).
    pub aim: Option<Aim>,
    /// The world the player saw when it pressed this step's one-shots (the step's
    /// [`ViewEvent`], if one came since the last step).
    pub view: Option<ViewTime>,
}

/// The mask with only `bit` set, or 0 for a bit of 64 or above.
fn bit_mask(bit: u8) -> u64 {
    1u64.checked_shl(u32::from(bit)).unwrap_or(0)
}

impl KeyBits {
    /// Whether the held key on `bit` is down (false for a bit of 64 or above).
    pub fn is_held(&self, bit: u8) -> bool {
        self.held & bit_mask(bit) != 0
    }

    /// Whether the one-shot key on `bit` fires (false for a bit of 64 or above).
    pub fn fired(&self, bit: u8) -> bool {
        self.fired & bit_mask(bit) != 0
    }
}

/// The input state of one player: turns key events and aims into per-step [`KeyBits`].
///
/// The host and the client predictor both use this type, so they apply the same rule
/// (see the module docs): events at most once and in seq order, held keys in
/// [`held`](Self::held), one-shot presses in [`pending`](Self::pending) until the
/// next [`step`](Self::step), the latest aim in [`aim`](Self::aim).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyState {
    /// Bits of held keys that are down.
    held: u64,
    /// Bits of one-shot keys pressed since the last step.
    pending: u64,
    /// Seq of the last applied event, `None` before the first.
    last_input_seq: Option<u32>,
    /// The latest aim, until one lets go of it.
    aim: Option<Aim>,
    /// The view that came since the last step, for its one-shots.
    #[serde(default)]
    view: Option<ViewTime>,
}

impl KeyState {
    /// A state with no key down and no event applied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a text-form event, looking its key up in `table`.
    ///
    /// Returns `Ok(true)` when the event was accepted (its seq is consumed, even if,
    /// like a one-shot `up`, it changes no bit) and `Ok(false)` when it was ignored as a
    /// duplicate or out of order (`seq <= last_input_seq`). An unknown name is
    /// [`InputError::UnknownKey`], whatever the seq, and does not consume the seq.
    pub fn apply(&mut self, table: &KeyTable, ev: &InputEvent) -> Result<bool, InputError> {
        let spec = table.lookup(&ev.name).ok_or_else(|| InputError::UnknownKey { name: ev.name.clone() })?;
        Ok(self.apply_bit(ev.seq, ev.action, spec))
    }

    /// Applies a binary-form event, looking its bit up in `table`.
    ///
    /// Like [`apply`](Self::apply); a bit with no key is [`InputError::UnboundBit`]
    /// and does not consume the seq.
    pub fn apply_binary(&mut self, table: &KeyTable, ev: &BinaryKeyEvent) -> Result<bool, InputError> {
        let (_, spec) = table.by_bit(ev.bit).ok_or(InputError::UnboundBit { bit: ev.bit })?;
        Ok(self.apply_bit(ev.seq, ev.action, spec))
    }

    /// Applies an event whose key is already resolved to `spec`.
    ///
    /// Returns whether it was accepted, as [`apply`](Self::apply) does. A spec whose
    /// bit is 64 or above (which no [`KeyTable`] holds) is ignored: `false`, seq not
    /// consumed.
    pub fn apply_bit(&mut self, seq: u32, action: KeyAction, spec: KeySpec) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        let mask = bit_mask(spec.bit);
        if mask == 0 {
            return false;
        }
        match (spec.kind, action) {
            (KeyKind::Held, KeyAction::Down) => self.held |= mask,
            (KeyKind::Held, KeyAction::Up) => self.held &= !mask,
            (KeyKind::OneShot, KeyAction::Down) => self.pending |= mask,
            (KeyKind::OneShot, KeyAction::Up) => {}
        }
        self.last_input_seq = Some(seq);
        true
    }

    /// Applies an aim event: `Some` aims at its point until the next aim, `None` lets go.
    ///
    /// Returns whether it was accepted, by the keys' seq rule ([`apply`](Self::apply)). An
    /// aim that is not [`Aim::is_valid`] (which no decoded batch holds) is ignored: `false`,
    /// seq not consumed.
    pub fn apply_aim(&mut self, seq: u32, aim: Option<Aim>) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) || aim.is_some_and(|a| !a.is_valid()) {
            return false;
        }
        self.aim = aim;
        self.last_input_seq = Some(seq);
        true
    }

    /// Applies a view: the world the player saw for the one-shots of the next step (a later
    /// view before that step replaces it).
    ///
    /// Returns whether it was accepted, by the keys' seq rule ([`apply`](Self::apply)).
    pub fn apply_view(&mut self, seq: u32, view: ViewTime) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        self.view = Some(view);
        self.last_input_seq = Some(seq);
        true
    }

    /// Applies a binary event of any kind ([`apply_binary`](Self::apply_binary),
    /// [`apply_aim`](Self::apply_aim), [`apply_view`](Self::apply_view)).
    pub fn apply_input(&mut self, table: &KeyTable, input: &WireInput) -> Result<bool, InputError> {
        match input {
            WireInput::Key(ev) => self.apply_binary(table, ev),
            WireInput::Aim(ev) => Ok(self.apply_aim(ev.seq, ev.aim)),
            WireInput::View(ev) => Ok(self.apply_view(ev.seq, ev.view)),
        }
    }

    /// Produces the input of one fixed step and clears the pending one-shots and view.
    pub fn step(&mut self) -> KeyBits {
        let bits = KeyBits { held: self.held, fired: self.pending, aim: self.aim, view: self.view.take() };
        self.pending = 0;
        bits
    }

    /// Lets go of every key and of the aim (a player whose connection dropped), keeping the
    /// seq already applied.
    pub fn release_all(&mut self) {
        self.held = 0;
        self.pending = 0;
        self.aim = None;
        self.view = None;
    }

    /// The aim in force, if any.
    pub fn aim(&self) -> Option<Aim> {
        self.aim
    }

    /// Bits of held keys that are down.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Bits of one-shot keys pressed since the last step.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Seq of the last applied event, or 0 when none was applied yet.
    pub fn last_input_seq(&self) -> u32 {
        self.last_input_seq.unwrap_or(0)
    }

    /// Seq of the last applied event, or `None` when none was applied yet.
    pub fn last_input_seq_opt(&self) -> Option<u32> {
        self.last_input_seq
    }
}
