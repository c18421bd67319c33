//! A key event in the text form: `seq:action:name` (see [the module docs](super)).

use super::*;

/// Whether a key went down or came up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyAction {
    /// The key was pressed (`down` on the wire).
    Down,
    /// The key was released (`up` on the wire).
    Up,
}

impl KeyAction {
    /// The wire word: `"down"` or `"up"`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAction::Down => "down",
            KeyAction::Up => "up",
        }
    }
}

impl fmt::Display for KeyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyAction {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "down" => Ok(KeyAction::Down),
            "up" => Ok(KeyAction::Up),
            _ => Err(InputError::UnknownAction { text: s.to_owned() }),
        }
    }
}

/// One key event as named in the text form `"seq:action:name"`.
///
/// Its serde form is a plain struct (dumps and logs); the wire form is the text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InputEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// Down or up.
    pub action: KeyAction,
    /// The command name, e.g. `forward`.
    pub name: String,
}

impl InputEvent {
    /// Builds an event, checking the name with [`validate_name`].
    pub fn new(seq: u32, action: KeyAction, name: impl Into<String>) -> Result<Self, InputError> {
        let name = name.into();
        validate_name(&name)?;
        Ok(InputEvent { seq, action, name })
    }

    /// Reads the text form `"seq:action:name"` (see the module docs).
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let parts: Vec<&str> = text.split(':').collect();
        let [seq, action, name] = parts.as_slice() else {
            return Err(InputError::WrongPartCount { input: text.to_owned(), found: parts.len() });
        };
        let seq = parse_seq(seq)?;
        let action = action.parse::<KeyAction>()?;
        validate_name(name)?;
        Ok(InputEvent { seq, action, name: (*name).to_owned() })
    }
}

/// Reads the seq part of the text form.
fn parse_seq(text: &str) -> Result<u32, InputError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InputError::InvalidSeq { text: text.to_owned() });
    }
    let out_of_range = || InputError::SeqOutOfRange { text: text.to_owned() };
    if text.len() > MAX_SEQ_DIGITS {
        return Err(out_of_range());
    }
    // Only ASCII digits and at most 10 of them: overflow is the only possible failure.
    text.parse::<u32>().map_err(|_| out_of_range())
}

impl fmt::Display for InputEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.seq, self.action, self.name)
    }
}

impl FromStr for InputEvent {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InputEvent::parse(s)
    }
}
