//! The binary batch form: key events, aims and views, and its codec.

use super::*;

/// One key event in the binary form: the key is named by its bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BinaryKeyEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// Down or up.
    pub action: KeyAction,
    /// The key's bit.
    pub bit: u8,
}

impl From<(u32, KeyAction, u8)> for BinaryKeyEvent {
    fn from((seq, action, bit): (u32, KeyAction, u8)) -> Self {
        BinaryKeyEvent { seq, action, bit }
    }
}

impl From<BinaryKeyEvent> for (u32, KeyAction, u8) {
    fn from(ev: BinaryKeyEvent) -> Self {
        (ev.seq, ev.action, ev.bit)
    }
}

/// An aim event: the binary form's aim, in the keys' seq space (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AimEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// The point aimed at, or `None` to let go of the aim.
    pub aim: Option<Aim>,
}

/// A view event: the world the player saw for the one-shots that follow (see
/// [Views](self#views-lag-compensation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViewEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// The moment drawn.
    pub view: ViewTime,
}

/// One event of a binary batch: a key event, an aim or a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireInput {
    /// A key went down or up.
    Key(BinaryKeyEvent),
    /// The pointer aims somewhere, or lets go.
    Aim(AimEvent),
    /// The world the player saw, for the one-shots that follow.
    View(ViewEvent),
}

impl WireInput {
    /// The event's sequence number.
    pub fn seq(&self) -> u32 {
        match self {
            WireInput::Key(e) => e.seq,
            WireInput::Aim(e) => e.seq,
            WireInput::View(e) => e.seq,
        }
    }
}

impl From<ViewEvent> for WireInput {
    fn from(ev: ViewEvent) -> Self {
        WireInput::View(ev)
    }
}

impl From<BinaryKeyEvent> for WireInput {
    fn from(ev: BinaryKeyEvent) -> Self {
        WireInput::Key(ev)
    }
}

impl From<(u32, KeyAction, u8)> for WireInput {
    fn from(ev: (u32, KeyAction, u8)) -> Self {
        WireInput::Key(ev.into())
    }
}

impl From<AimEvent> for WireInput {
    fn from(ev: AimEvent) -> Self {
        WireInput::Aim(ev)
    }
}

/// Appends a batch of `(seq, action, bit)` key events to `out` in the binary form (see
/// [`encode_inputs`]).
pub fn encode_events(events: &[(u32, KeyAction, u8)], out: &mut Vec<u8>) -> Result<(), InputError> {
    let inputs: Vec<WireInput> = events.iter().copied().map(WireInput::from).collect();
    encode_inputs(&inputs, out)
}

/// Appends a batch of events to `out` in the binary form (see the module docs).
///
/// Fails, leaving `out` untouched, on more than 255 events, a bit of 64 or above, an aim
/// that is not [`Aim::is_valid`], or seqs that are not strictly increasing or jump by
/// more than 255.
pub fn encode_inputs(events: &[WireInput], out: &mut Vec<u8>) -> Result<(), InputError> {
    let count = u8::try_from(events.len()).map_err(|_| InputError::TooManyEvents { count: events.len() })?;
    let mut previous: Option<u32> = None;
    let mut len = 1;
    for (index, event) in events.iter().enumerate() {
        match event {
            WireInput::Key(e) if e.bit >= KEY_BITS => return Err(InputError::InvalidEventBit { index, bit: e.bit }),
            WireInput::Aim(AimEvent { aim: Some(aim), .. }) if !aim.is_valid() => {
                return Err(InputError::InvalidAim { index });
            }
            WireInput::Aim(AimEvent { aim: Some(_), .. }) => len += AIM_BYTES,
            WireInput::View(_) => len += VIEW_BYTES,
            _ => {}
        }
        let seq = event.seq();
        match previous {
            None => len += 5,
            Some(previous) if seq <= previous => return Err(InputError::SeqNotIncreasing { index, previous, seq }),
            Some(previous) if seq - previous > u32::from(u8::MAX) => {
                return Err(InputError::SeqGapTooLarge { index, previous, seq });
            }
            Some(_) => len += 2,
        }
        previous = Some(seq);
    }

    out.reserve(len);
    out.push(count);
    let mut previous: Option<u32> = None;
    for event in events {
        let seq = event.seq();
        match previous {
            None => out.extend_from_slice(&seq.to_be_bytes()),
            // Checked above: 1..=255.
            Some(previous) => out.push(u8::try_from(seq - previous).unwrap_or(u8::MAX)),
        }
        match event {
            WireInput::Key(e) => out.push(if e.action == KeyAction::Down { CODE_DOWN } else { 0 } | e.bit),
            WireInput::Aim(AimEvent { aim: None, .. }) => out.push(CODE_AIM_OFF),
            WireInput::Aim(AimEvent { aim: Some(aim), .. }) => {
                out.push(CODE_AIM);
                out.extend_from_slice(&aim.x.to_be_bytes());
                out.extend_from_slice(&aim.y.to_be_bytes());
                out.push(aim.flags);
            }
            WireInput::View(ViewEvent { view, .. }) => {
                out.push(CODE_VIEW);
                out.extend_from_slice(&view.tick.to_be_bytes());
                out.push(view.frac);
            }
        }
        previous = Some(seq);
    }
    Ok(())
}

/// Reads one binary batch (see the module docs); the whole of `bytes` must be the batch.
pub fn decode_inputs(bytes: &[u8]) -> Result<Vec<WireInput>, InputError> {
    let Some((&count, rest)) = bytes.split_first() else {
        return Err(InputError::Truncated { expected: 1, found: 0 });
    };
    if count == 0 {
        return match rest.len() {
            0 => Ok(Vec::new()),
            extra => Err(InputError::TrailingBytes { extra }),
        };
    }
    // The length of the batch as far as known: every event's seq and code, plus the points
    // of the aims read so far.
    let mut expected = 4 + 2 * usize::from(count);
    if bytes.len() < expected {
        return Err(InputError::Truncated { expected, found: bytes.len() });
    }
    let mut r = Reader::new(rest);
    let mut events = Vec::with_capacity(usize::from(count));
    let mut seq = 0;
    for index in 0..usize::from(count) {
        let truncated = |expected| InputError::Truncated { expected, found: bytes.len() };
        if index == 0 {
            seq = r.u32("first seq").map_err(|_| truncated(expected))?;
        } else {
            let delta = r.u8("seq delta").map_err(|_| truncated(expected))?;
            if delta == 0 {
                return Err(InputError::ZeroSeqDelta { index });
            }
            seq = seq.checked_add(u32::from(delta)).ok_or(InputError::BatchSeqOverflow { index })?;
        }
        let code = r.u8("code").map_err(|_| truncated(expected))?;
        let event = match code {
            CODE_AIM => {
                expected += AIM_BYTES;
                let [x0, x1, x2, x3, y0, y1, y2, y3, flags] =
                    r.array::<AIM_BYTES>("aim").map_err(|_| truncated(expected))?;
                let aim =
                    Aim { x: f32::from_be_bytes([x0, x1, x2, x3]), y: f32::from_be_bytes([y0, y1, y2, y3]), flags };
                if !aim.is_valid() {
                    return Err(InputError::InvalidAim { index });
                }
                WireInput::Aim(AimEvent { seq, aim: Some(aim) })
            }
            CODE_AIM_OFF => WireInput::Aim(AimEvent { seq, aim: None }),
            CODE_VIEW => {
                expected += VIEW_BYTES;
                let [t0, t1, t2, t3, frac] = r.array::<VIEW_BYTES>("view").map_err(|_| truncated(expected))?;
                WireInput::View(ViewEvent { seq, view: ViewTime { tick: u32::from_be_bytes([t0, t1, t2, t3]), frac } })
            }
            code if code & !CODE_DOWN >= KEY_BITS => {
                return Err(InputError::InvalidEventBit { index, bit: code & !CODE_DOWN });
            }
            code => {
                let action = if code & CODE_DOWN != 0 { KeyAction::Down } else { KeyAction::Up };
                WireInput::Key(BinaryKeyEvent { seq, action, bit: code & !CODE_DOWN })
            }
        };
        events.push(event);
    }
    if !r.is_empty() {
        return Err(InputError::TrailingBytes { extra: r.remaining() });
    }
    Ok(events)
}
