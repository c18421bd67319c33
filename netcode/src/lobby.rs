//! Lobby codes and join targets: how friends find a host's room on the signalling server.
//!
//! Friends join a host by a short code. The matchbox signalling server puts the peers
//! that connect to it in a room named by the first path segment of the URL they used,
//! and in vimp **the room is the code**: a host showing `K7M-P2Q` on the signalling
//! server `ws://HOST:3536` and every friend typing that code all connect to
//! `ws://HOST:3536/K7MP2Q` ([`room_url`]).
//!
//! # Lobby codes
//!
//! A [`LobbyCode`] is [`CODE_LEN`] (6) symbols from [`ALPHABET`],
//! `23456789ABCDEFGHJKMNPQRSTUVWXYZ`: the digits 2–9 and the capital letters without
//! `I`, `L` and `O`, so no code ever holds one of the look-alikes `0`/`O` or `1`/`I`/`L`.
//! That is 31 symbols and [`CODE_COUNT`] = 31⁶ = 887 503 681 codes.
//!
//! * [`LobbyCode::from_random`] turns a random `u64` from the caller (this crate has no
//!   random number generator) into a code: the value modulo 31⁶, written in base 31,
//!   most significant digit first, one symbol of [`ALPHABET`] per digit. For a uniform
//!   `u64` the codes are uniform to within a relative bias below 10⁻¹⁰ (2⁶⁴ is not a
//!   multiple of 31⁶, so some codes have one preimage more out of about 2·10¹⁰).
//! * [`LobbyCode::parse`] (also `FromStr`) reads a code the way people type it: letters
//!   in either case, grouped with dashes and spaces anywhere, surrounded by spaces.
//!   `"k7m-p2q"`, `"K7M P2Q"` and `" k7mp2q "` all read as `K7MP2Q`. Separators are
//!   whitespace, `-` and the Unicode dashes U+2010–U+2015 and U+2212. Every other
//!   character must be a symbol of the alphabet: nothing is mapped silently, so `0`, `O`,
//!   `1`, `I` or `L` are rejected with [`LobbyError::InvalidChar`] naming the character.
//!   The first bad character is reported before a wrong count of symbols
//!   ([`LobbyError::WrongLength`]); no symbol at all is [`LobbyError::Empty`].
//! * `Display` and [`LobbyCode::as_str`] give the canonical form, six upper-case
//!   symbols (`K7MP2Q`), which is also the room name; [`LobbyCode::grouped`] gives
//!   `K7M-P2Q` for showing big on screen.
//! * serde writes the canonical string and reads a string through
//!   [`LobbyCode::parse`], so deserializing validates.
//!
//! # Join targets
//!
//! What a friend types in the join box is a [`JoinTarget`], read by
//! [`JoinTarget::parse`] (also `FromStr`), after trimming surrounding whitespace:
//!
//! * a bare code ([`JoinTarget::Code`]), joined on the game's default signalling server;
//! * or a signalling URL `ws://HOST[:PORT]/CODE` or `wss://HOST[:PORT]/CODE`
//!   ([`JoinTarget::Url`]). The scheme is case-insensitive. `HOST` is a host name
//!   (ASCII letters, digits, `-`, `.` and `_`), an IPv4 address or an IPv6 address in
//!   brackets (`[::1]`); `PORT`, when present, is a decimal number from 1 to 65535
//!   (without it the client uses the scheme's default port). The path is exactly one
//!   segment, read like a bare code. User info (`user@`), a query (`?…`), a fragment
//!   (`#…`), an empty or extra path segment (including a trailing `/`) and any other
//!   scheme are errors. The server is kept in a canonical form: scheme and host in
//!   lower case, port as a plain number, no trailing slash (`ws://[::1]:3536`).
//!
//! An input without `://` that holds a `:` or a `/` looks like an address that lost its
//! scheme and is reported as [`LobbyError::MissingScheme`] rather than as a bad code.
//! `Display` of a target writes the bare code or the full room URL, and parsing that
//! text gives the same target back. Nothing here panics on any input.
//!
//! # Example
//!
//! ```
//! use vimp_netcode::lobby::{JoinTarget, LobbyCode, room_url};
//!
//! let code = LobbyCode::parse(" k7m-p2q ")?;
//! assert_eq!(code.as_str(), "K7MP2Q");
//! assert_eq!(code.grouped(), "K7M-P2Q");
//! assert_eq!(room_url("ws://127.0.0.1:3536/", &code), "ws://127.0.0.1:3536/K7MP2Q");
//!
//! let target = JoinTarget::parse("wss://[::1]:3536/K7MP2Q")?;
//! assert_eq!(target, JoinTarget::Url { server: "wss://[::1]:3536".to_owned(), code });
//! assert_eq!(JoinTarget::parse("K7M P2Q")?, JoinTarget::Code(code));
//! # Ok::<(), vimp_netcode::lobby::LobbyError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The symbols of a lobby code, in digit order: the value of a symbol is its position here.
pub const ALPHABET: &str = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Number of symbols in a lobby code.
pub const CODE_LEN: usize = 6;

/// Number of distinct lobby codes: 31⁶.
pub const CODE_COUNT: u32 = 887_503_681;

/// [`ALPHABET`] as bytes.
const SYMBOLS: &[u8; 31] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Number of symbols in [`ALPHABET`], the base of a code read as a number.
const BASE: u32 = 31;

/// Everything that can go wrong reading a lobby code or a join target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LobbyError {
    /// There is nothing to read: the input is empty or only separators.
    #[error("no lobby code given (a lobby code is {CODE_LEN} characters, such as K7M-P2Q)")]
    Empty,
    /// The code does not have exactly [`CODE_LEN`] symbols (separators not counted).
    #[error("lobby code has {len} character(s), expected {CODE_LEN}")]
    WrongLength {
        /// Number of symbols found.
        len: usize,
    },
    /// The code holds a character that is neither a symbol of [`ALPHABET`] (in either case)
    /// nor a separator.
    #[error(
        "{ch:?} is not used in lobby codes: they are made of the digits 2-9 and the letters A-Z without I, L and O"
    )]
    InvalidChar {
        /// The first offending character, as typed.
        ch: char,
    },
    /// The input looks like an address (it holds `:` or `/`) but does not start with a scheme.
    #[error("this looks like an address without a scheme: signalling URLs start with ws:// or wss://")]
    MissingScheme,
    /// The URL's scheme is neither `ws` nor `wss`.
    #[error("signalling URL scheme {scheme:?} is not supported: use ws:// or wss://")]
    UnsupportedScheme {
        /// The scheme as typed (the text before `://`).
        scheme: String,
    },
    /// The URL has no host.
    #[error("signalling URL has no host (expected ws://HOST:PORT/CODE)")]
    MissingHost,
    /// The URL's host is not a host name, an IPv4 address or a bracketed IPv6 address,
    /// or it carries user info (`user@`).
    #[error(
        "signalling URL host {host:?} is not a host name, an IPv4 address or a bracketed IPv6 address such as [::1]"
    )]
    InvalidHost {
        /// The host part as typed (everything between `://` and the path, port included).
        host: String,
    },
    /// The URL's port is empty, not a decimal number, or outside `1..=65535`.
    #[error("signalling URL port {port:?} is not a number from 1 to 65535")]
    InvalidPort {
        /// The port as typed (the text after the host's `:`).
        port: String,
    },
    /// The URL has no path segment to read the lobby code from.
    #[error("signalling URL has no lobby code (expected ws://HOST:PORT/CODE)")]
    MissingCode,
    /// The URL's path has more than one segment, or ends with `/`.
    #[error("signalling URL path {path:?} must be a single segment, the lobby code, as in /K7MP2Q")]
    ExtraPathSegments {
        /// The whole path as typed, from its first `/`.
        path: String,
    },
    /// The URL has a query string.
    #[error("signalling URL has a query string {query:?}: it must end with the lobby code")]
    UnexpectedQuery {
        /// The query as typed, from its `?` to the end.
        query: String,
    },
    /// The URL has a fragment.
    #[error("signalling URL has a fragment {fragment:?}: it must end with the lobby code")]
    UnexpectedFragment {
        /// The fragment as typed, from its `#` to the end.
        fragment: String,
    },
}

/// A lobby code: [`CODE_LEN`] symbols of [`ALPHABET`], always canonical (upper case,
/// no separators). See the [module docs](self) for how codes are made and read.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct LobbyCode([u8; CODE_LEN]);

impl LobbyCode {
    /// The code for a random value supplied by the caller: `random` modulo
    /// [`CODE_COUNT`], written in base 31 with the symbols of [`ALPHABET`], most
    /// significant digit first. `0` gives `222222` and `CODE_COUNT - 1` gives `ZZZZZZ`.
    /// A uniform `u64` gives codes uniform to within a relative bias below 10⁻¹⁰.
    pub fn from_random(random: u64) -> Self {
        let mut rest = random % u64::from(CODE_COUNT);
        let mut symbols = [SYMBOLS[0]; CODE_LEN];
        for slot in symbols.iter_mut().rev() {
            let digit = rest % u64::from(BASE);
            rest /= u64::from(BASE);
            if let Some(&symbol) = usize::try_from(digit).ok().and_then(|d| SYMBOLS.get(d)) {
                *slot = symbol;
            }
        }
        Self(symbols)
    }

    /// The code's position in `0..CODE_COUNT`: the code read as a base-31 number, the
    /// inverse of [`LobbyCode::from_random`] on that range.
    pub fn index(&self) -> u32 {
        self.0.iter().fold(0, |acc, &symbol| acc * BASE + symbol_value(symbol))
    }

    /// Reads a code as people type it: case-insensitive, with whitespace and dashes
    /// allowed anywhere. See the [module docs](self) for the exact rules and errors.
    pub fn parse(text: &str) -> Result<Self, LobbyError> {
        let mut symbols = [SYMBOLS[0]; CODE_LEN];
        let mut len = 0usize;
        for ch in text.chars() {
            if is_separator(ch) {
                continue;
            }
            let symbol = u8::try_from(ch.to_ascii_uppercase())
                .ok()
                .filter(|b| SYMBOLS.contains(b))
                .ok_or(LobbyError::InvalidChar { ch })?;
            if let Some(slot) = symbols.get_mut(len) {
                *slot = symbol;
            }
            len = len.saturating_add(1);
        }
        match len {
            0 => Err(LobbyError::Empty),
            CODE_LEN => Ok(Self(symbols)),
            _ => Err(LobbyError::WrongLength { len }),
        }
    }

    /// The canonical form, six upper-case symbols such as `K7MP2Q`: the room name.
    pub fn as_str(&self) -> &str {
        // Every byte comes from `SYMBOLS`, which is ASCII, so this never falls back.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The code in two groups of three, such as `K7M-P2Q`, for showing big on screen.
    /// [`LobbyCode::parse`] reads it back.
    pub fn grouped(&self) -> String {
        let mut out = String::with_capacity(CODE_LEN + 1);
        for (i, &symbol) in self.0.iter().enumerate() {
            if i == CODE_LEN / 2 {
                out.push('-');
            }
            out.push(char::from(symbol));
        }
        out
    }
}

/// Value of a symbol of [`ALPHABET`] (its position there); `0` for any other byte,
/// which a [`LobbyCode`] never holds.
fn symbol_value(symbol: u8) -> u32 {
    SYMBOLS.iter().position(|&s| s == symbol).and_then(|p| u32::try_from(p).ok()).unwrap_or(0)
}

/// Whether `ch` is a separator people put between the symbols of a code.
fn is_separator(ch: char) -> bool {
    ch.is_whitespace() || matches!(ch, '-' | '\u{2010}'..='\u{2015}' | '\u{2212}')
}

impl fmt::Display for LobbyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Debug for LobbyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LobbyCode").field(&self.as_str()).finish()
    }
}

impl FromStr for LobbyCode {
    type Err = LobbyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<&str> for LobbyCode {
    type Error = LobbyError;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::parse(value)
    }
}

impl TryFrom<String> for LobbyCode {
    type Error = LobbyError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<LobbyCode> for String {
    fn from(code: LobbyCode) -> Self {
        code.as_str().to_owned()
    }
}

impl AsRef<str> for LobbyCode {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// The room URL for `code` on the signalling server `server` (`ws://HOST:PORT`):
/// `ws://HOST:PORT/K7MP2Q`. Trailing slashes on `server` are dropped; `server` is not
/// otherwise checked.
pub fn room_url(server: &str, code: &LobbyCode) -> String {
    format!("{}/{code}", server.trim_end_matches('/'))
}

/// What a friend typed to join a game: a bare lobby code or a full signalling URL.
/// See the [module docs](self) for the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JoinTarget {
    /// A bare code, to be joined on the game's default signalling server.
    Code(LobbyCode),
    /// A signalling URL naming its own server.
    Url {
        /// The signalling server, canonical and without trailing slash: `ws://HOST:PORT`,
        /// `wss://HOST` or `ws://[::1]:3536`.
        server: String,
        /// The lobby code, the URL's only path segment.
        code: LobbyCode,
    },
}

impl JoinTarget {
    /// Reads a bare code or a `ws://` / `wss://` signalling URL, after trimming
    /// surrounding whitespace. See the [module docs](self) for the rules and errors.
    pub fn parse(text: &str) -> Result<Self, LobbyError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(LobbyError::Empty);
        }
        if let Some((scheme, rest)) = text.split_once("://") {
            let (server, code) = parse_url(scheme, rest)?;
            return Ok(Self::Url { server, code });
        }
        if text.contains([':', '/']) {
            return Err(LobbyError::MissingScheme);
        }
        LobbyCode::parse(text).map(Self::Code)
    }

    /// The lobby code, whichever the form.
    pub fn code(&self) -> LobbyCode {
        match self {
            Self::Code(code) | Self::Url { code, .. } => *code,
        }
    }

    /// The signalling server the target names, if it is a URL.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Code(_) => None,
            Self::Url { server, .. } => Some(server),
        }
    }

    /// The room URL to connect to: on the target's own server for a URL, on
    /// `default_server` for a bare code (see [`room_url`]).
    pub fn room_url(&self, default_server: &str) -> String {
        room_url(self.server().unwrap_or(default_server), &self.code())
    }
}

impl fmt::Display for JoinTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "{code}"),
            Self::Url { server, code } => f.write_str(&room_url(server, code)),
        }
    }
}

impl FromStr for JoinTarget {
    type Err = LobbyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Where a host's room is, as the host tells its players ([`op::ROOM`](crate::frame::op::ROOM),
/// JSON, at the welcome and at each change): the room URL friends in other homes join by
/// (`ws://PUBLIC:PORT/CODE`, when the host's router mapped its ports or a public rendezvous
/// serves the room), the one on the host's own network, and whether the rendezvous runs in
/// the host's own process (`served`: the default setup, where it goes with the host).
///
/// `{"public":"ws://45.0.113.21:3536/K7MP2Q","lan":"ws://192.168.1.10:3536/K7MP2Q","served":true}`;
/// `public` and `lan` may be left out, `served` is always written. Both URLs read as
/// [`JoinTarget::Url`] and name the same code; at most [`Invite::MAX_LEN`] bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invite {
    /// The room URL for friends in other homes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<String>,
    /// The room URL on the host's own network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lan: Option<String>,
    /// The rendezvous runs in the host's own process.
    pub served: bool,
}

/// Why an [`Invite`] does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InviteError {
    /// More than [`Invite::MAX_LEN`] bytes.
    #[error("a room's invite of {0} bytes is over {max}", max = Invite::MAX_LEN)]
    TooLong(usize),
    /// Not the JSON object described at [`Invite`].
    #[error("a room's invite does not read: {0}")]
    Shape(String),
    /// A URL that is not a room URL.
    #[error("a room's invite names {url:?}: {error}")]
    Url {
        /// The URL.
        url: String,
        /// Why it is not a room URL.
        error: LobbyError,
    },
    /// The two URLs name different rooms.
    #[error("a room's invite names two rooms")]
    TwoRooms,
}

impl Invite {
    /// The longest invite on the wire, bytes.
    pub const MAX_LEN: usize = 1024;

    /// Its bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads an invite from untrusted bytes.
    pub fn decode(bytes: &[u8]) -> Result<Invite, InviteError> {
        if bytes.len() > Self::MAX_LEN {
            return Err(InviteError::TooLong(bytes.len()));
        }
        let invite: Invite = serde_json::from_slice(bytes).map_err(|e| InviteError::Shape(e.to_string()))?;
        invite.validate()?;
        Ok(invite)
    }

    /// Checks the rules at [`Invite`].
    pub fn validate(&self) -> Result<(), InviteError> {
        let mut codes = Vec::new();
        for url in self.public.iter().chain(&self.lan) {
            match JoinTarget::parse(url) {
                Ok(JoinTarget::Url { code, .. }) => codes.push(code),
                Ok(JoinTarget::Code(_)) => {
                    return Err(InviteError::Url { url: url.clone(), error: LobbyError::MissingScheme });
                }
                Err(error) => return Err(InviteError::Url { url: url.clone(), error }),
            }
        }
        if codes.windows(2).any(|w| w[0] != w[1]) {
            return Err(InviteError::TwoRooms);
        }
        let len = self.encode().len();
        if len > Self::MAX_LEN {
            return Err(InviteError::TooLong(len));
        }
        Ok(())
    }

    /// The URL a player at `own` (its address on its network, when known) should reach the
    /// room by: the host's network's when both are on one network (the same /24, or /64), else
    /// the public one; `None` when there is none that reaches the player (the host's network's
    /// alone, for a player elsewhere). With `own` unknown, the public one, else the network's.
    pub fn for_player(&self, own: Option<std::net::IpAddr>) -> Option<&str> {
        let lan_host = self.lan.as_deref().and_then(|url| server_ip(JoinTarget::parse(url).ok()?.server()?));
        let near = match (own, lan_host) {
            (Some(std::net::IpAddr::V4(a)), Some(std::net::IpAddr::V4(b))) => a.octets()[..3] == b.octets()[..3],
            (Some(std::net::IpAddr::V6(a)), Some(std::net::IpAddr::V6(b))) => a.segments()[..4] == b.segments()[..4],
            _ => false,
        };
        match own {
            _ if near => self.lan.as_deref(),
            Some(_) => self.public.as_deref(),
            None => self.public.as_deref().or(self.lan.as_deref()),
        }
    }
}

/// The IP address a canonical server (`ws://HOST[:PORT]`, [`JoinTarget::server`]) names, if
/// its host is one.
fn server_ip(server: &str) -> Option<std::net::IpAddr> {
    let authority = server.split_once("://")?.1;
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.0,
        None => authority.split(':').next()?,
    };
    host.parse().ok()
}

/// Reads the parts of a signalling URL around its `://` into the canonical server and the code.
fn parse_url(scheme: &str, rest: &str) -> Result<(String, LobbyCode), LobbyError> {
    if scheme.is_empty() {
        return Err(LobbyError::MissingScheme);
    }
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "ws" => "ws",
        "wss" => "wss",
        _ => return Err(LobbyError::UnsupportedScheme { scheme: scheme.to_owned() }),
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let host = parse_authority(authority)?;
    let server = format!("{scheme}://{host}");

    if let Some(at) = tail.find(['?', '#']) {
        let suffix = tail.get(at..).unwrap_or_default().to_owned();
        return Err(if suffix.starts_with('?') {
            LobbyError::UnexpectedQuery { query: suffix }
        } else {
            LobbyError::UnexpectedFragment { fragment: suffix }
        });
    }
    let segment = tail.strip_prefix('/').unwrap_or(tail);
    if segment.is_empty() {
        return Err(LobbyError::MissingCode);
    }
    if segment.contains('/') {
        return Err(LobbyError::ExtraPathSegments { path: tail.to_owned() });
    }
    let code =
        LobbyCode::parse(segment).map_err(|e| if e == LobbyError::Empty { LobbyError::MissingCode } else { e })?;
    Ok((server, code))
}

/// Reads `HOST[:PORT]` (with `HOST` a name, an IPv4 address or `[IPv6]`) into its
/// canonical form: host in lower case, port as a plain number.
fn parse_authority(authority: &str) -> Result<String, LobbyError> {
    let invalid_host = || LobbyError::InvalidHost { host: authority.to_owned() };
    if authority.is_empty() {
        return Err(LobbyError::MissingHost);
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (inner, after) = bracketed.split_once(']').ok_or_else(invalid_host)?;
        let valid = inner.contains(':') && inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
        if !valid {
            return Err(invalid_host());
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(invalid_host)?),
        };
        (authority.get(..inner.len() + 2).unwrap_or_default(), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        // A second `:` is an IPv6 address without its brackets.
        if port.is_some_and(|p| p.contains(':')) {
            return Err(invalid_host());
        }
        if host.is_empty() {
            return Err(LobbyError::MissingHost);
        }
        if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')) {
            return Err(invalid_host());
        }
        (host, port)
    };
    let host = host.to_ascii_lowercase();
    match port {
        None => Ok(host),
        Some(port) => Ok(format!("{host}:{}", parse_port(port)?)),
    }
}

/// Reads a port: 1 to 5 ASCII digits with a value from 1 to 65535.
fn parse_port(port: &str) -> Result<u16, LobbyError> {
    let digits_only = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    digits_only
        .then(|| port.parse::<u16>().ok())
        .flatten()
        .filter(|&p| p != 0)
        .ok_or_else(|| LobbyError::InvalidPort { port: port.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error as DeError, StrDeserializer};

    fn code(text: &str) -> LobbyCode {
        LobbyCode::parse(text).expect("the test code is valid")
    }

    fn url(server: &str, code_text: &str) -> JoinTarget {
        JoinTarget::Url { server: server.to_owned(), code: code(code_text) }
    }

    fn deserialize(text: &str) -> Result<LobbyCode, DeError> {
        let de: StrDeserializer<'_, DeError> = text.into_deserializer();
        LobbyCode::deserialize(de)
    }

    #[test]
    fn alphabet_has_no_look_alikes() {
        assert_eq!(ALPHABET.as_bytes(), SYMBOLS);
        assert_eq!(ALPHABET.len(), 31);
        for bad in ['0', '1', 'O', 'I', 'L'] {
            assert!(!ALPHABET.contains(bad), "{bad} is in the alphabet");
        }
        assert_eq!(u64::from(CODE_COUNT), 31u64.pow(6));
    }

    #[test]
    fn from_random_fixed_values() {
        // Expected codes computed by hand: value mod 31^6 in base 31 over ALPHABET.
        let cases: [(u64, &str); 12] = [
            (0, "222222"),
            (1, "222223"),
            (30, "22222Z"),
            (31, "222232"),
            (32, "222233"),
            (887_503_680, "ZZZZZZ"),
            (887_503_681, "222222"),
            (887_503_682, "222223"),
            (491_868_651, "K7MP2Q"),
            (123_456_789, "6BQ524"),
            (0xDEAD_BEEF, "8HBMRH"),
            (0x0123_4567_89AB_CDEF, "Y93MSZ"),
        ];
        for (value, expected) in cases {
            assert_eq!(LobbyCode::from_random(value).as_str(), expected, "from_random({value})");
        }
        assert_eq!(LobbyCode::from_random(u64::MAX).as_str(), "67PA8H");
    }

    #[test]
    fn index_inverts_from_random() {
        assert_eq!(code("222222").index(), 0);
        assert_eq!(code("222233").index(), 32);
        assert_eq!(code("K7MP2Q").index(), 491_868_651);
        assert_eq!(code("ZZZZZZ").index(), CODE_COUNT - 1);
    }

    #[test]
    fn parse_is_forgiving_of_case_grouping_and_spacing() {
        let expected = LobbyCode::from_random(491_868_651);
        for text in [
            "K7MP2Q",
            "k7mp2q",
            "k7m-p2q",
            "K7M-P2Q",
            "K7M P2Q",
            " k7mp2q ",
            "\tK7m-p2Q\n",
            "k-7-m-p-2-q",
            "K7M  -  P2Q",
            "K7M\u{2011}P2Q",
            "K7M\u{2013}P2Q",
            "K7M\u{00A0}P2Q",
            "-K7MP2Q-",
        ] {
            assert_eq!(LobbyCode::parse(text), Ok(expected), "{text:?}");
            assert_eq!(text.parse::<LobbyCode>(), Ok(expected), "{text:?}");
        }
    }

    #[test]
    fn parse_rejects_bad_characters_by_name() {
        let cases: [(&str, char); 10] = [
            ("K7MP2O", 'O'),
            ("k7mp2o", 'o'),
            ("K7MP20", '0'),
            ("K7MP21", '1'),
            ("K7MP2I", 'I'),
            ("K7MP2l", 'l'),
            ("K7M_P2Q", '_'),
            ("K7M.P2Q", '.'),
            ("K7MP2É", 'É'),
            ("K7MP2Q😀", '😀'),
        ];
        for (text, ch) in cases {
            assert_eq!(LobbyCode::parse(text), Err(LobbyError::InvalidChar { ch }), "{text:?}");
        }
        // The first bad character is reported, before the length.
        assert_eq!(LobbyCode::parse("OK"), Err(LobbyError::InvalidChar { ch: 'O' }));
        assert_eq!(
            LobbyError::InvalidChar { ch: 'O' }.to_string(),
            "'O' is not used in lobby codes: they are made of the digits 2-9 and the letters A-Z without I, L and O"
        );
    }

    #[test]
    fn parse_rejects_wrong_lengths_and_empty_input() {
        assert_eq!(LobbyCode::parse("K7MP2"), Err(LobbyError::WrongLength { len: 5 }));
        assert_eq!(LobbyCode::parse("K7M-P2QX"), Err(LobbyError::WrongLength { len: 7 }));
        assert_eq!(LobbyCode::parse("K"), Err(LobbyError::WrongLength { len: 1 }));
        assert_eq!(LobbyCode::parse("K7MP2QK7MP2Q"), Err(LobbyError::WrongLength { len: 12 }));
        assert_eq!(LobbyCode::parse(""), Err(LobbyError::Empty));
        assert_eq!(LobbyCode::parse("   "), Err(LobbyError::Empty));
        assert_eq!(LobbyCode::parse(" - - "), Err(LobbyError::Empty));
        assert_eq!(LobbyError::WrongLength { len: 5 }.to_string(), "lobby code has 5 character(s), expected 6");
    }

    #[test]
    fn display_as_str_and_grouped() {
        let c = code("k7m p2q");
        assert_eq!(c.to_string(), "K7MP2Q");
        assert_eq!(c.as_str(), "K7MP2Q");
        assert_eq!(c.as_ref(), "K7MP2Q");
        assert_eq!(c.grouped(), "K7M-P2Q");
        assert_eq!(String::from(c), "K7MP2Q");
        assert_eq!(format!("{c:>8}"), "  K7MP2Q");
        assert_eq!(format!("{c:?}"), "LobbyCode(\"K7MP2Q\")");
        assert_eq!(LobbyCode::from_random(0).grouped(), "222-222");
    }

    #[test]
    fn serde_reads_and_validates_strings() {
        assert_eq!(deserialize("K7MP2Q"), Ok(code("K7MP2Q")));
        assert_eq!(deserialize("k7m-p2q"), Ok(code("K7MP2Q")));
        let err = deserialize("K7MP2O").expect_err("O is not a symbol");
        assert_eq!(err.to_string(), LobbyError::InvalidChar { ch: 'O' }.to_string());
        assert!(deserialize("K7MP2").is_err());
        assert_eq!(LobbyCode::try_from("k7mp2q".to_owned()), Ok(code("K7MP2Q")));
        assert_eq!(LobbyCode::try_from("k7mp2q"), Ok(code("K7MP2Q")));
    }

    #[test]
    fn join_target_bare_codes() {
        assert_eq!(JoinTarget::parse("k7m-p2q"), Ok(JoinTarget::Code(code("K7MP2Q"))));
        assert_eq!(JoinTarget::parse("  K7M P2Q \n"), Ok(JoinTarget::Code(code("K7MP2Q"))));
        assert_eq!(JoinTarget::parse("K7MP2O"), Err(LobbyError::InvalidChar { ch: 'O' }));
        assert_eq!(JoinTarget::parse("K7MP"), Err(LobbyError::WrongLength { len: 4 }));
        assert_eq!(JoinTarget::parse(""), Err(LobbyError::Empty));
        assert_eq!(JoinTarget::parse(" \t "), Err(LobbyError::Empty));
        assert_eq!(JoinTarget::parse("-"), Err(LobbyError::Empty));
    }

    #[test]
    fn join_target_urls() {
        let cases: [(&str, &str, &str); 12] = [
            ("ws://127.0.0.1:3536/K7MP2Q", "ws://127.0.0.1:3536", "K7MP2Q"),
            ("ws://localhost:3536/k7m-p2q", "ws://localhost:3536", "K7MP2Q"),
            ("wss://signal.example.com/K7MP2Q", "wss://signal.example.com", "K7MP2Q"),
            ("wss://signal.example.com:443/K7MP2Q", "wss://signal.example.com:443", "K7MP2Q"),
            ("ws://[::1]:3536/K7MP2Q", "ws://[::1]:3536", "K7MP2Q"),
            ("wss://[::1]/K7MP2Q", "wss://[::1]", "K7MP2Q"),
            ("ws://[2001:DB8::a:1]:9000/222222", "ws://[2001:db8::a:1]:9000", "222222"),
            ("ws://[::ffff:192.0.2.1]:3536/ZZZZZZ", "ws://[::ffff:192.0.2.1]:3536", "ZZZZZZ"),
            ("WS://LocalHost:3536/K7MP2Q", "ws://localhost:3536", "K7MP2Q"),
            ("Wss://host_1.lan:03536/K7MP2Q", "wss://host_1.lan:3536", "K7MP2Q"),
            ("  ws://my-box:65535/K7MP2Q  ", "ws://my-box:65535", "K7MP2Q"),
            ("ws://h:1/K7M-P2Q", "ws://h:1", "K7MP2Q"),
        ];
        for (text, server, code_text) in cases {
            assert_eq!(JoinTarget::parse(text), Ok(url(server, code_text)), "{text:?}");
        }
    }

    #[test]
    fn join_target_url_errors() {
        let unsupported = |scheme: &str| LobbyError::UnsupportedScheme { scheme: scheme.to_owned() };
        let host = |host: &str| LobbyError::InvalidHost { host: host.to_owned() };
        let port = |port: &str| LobbyError::InvalidPort { port: port.to_owned() };
        let extra = |path: &str| LobbyError::ExtraPathSegments { path: path.to_owned() };
        let cases: Vec<(&str, LobbyError)> = vec![
            // Schemes.
            ("http://127.0.0.1:3536/K7MP2Q", unsupported("http")),
            ("https://example.com/K7MP2Q", unsupported("https")),
            ("wsss://example.com/K7MP2Q", unsupported("wsss")),
            ("://example.com/K7MP2Q", LobbyError::MissingScheme),
            ("127.0.0.1:3536/K7MP2Q", LobbyError::MissingScheme),
            ("localhost:3536", LobbyError::MissingScheme),
            ("example.com/K7MP2Q", LobbyError::MissingScheme),
            // Hosts.
            ("ws:///K7MP2Q", LobbyError::MissingHost),
            ("ws://", LobbyError::MissingHost),
            ("ws://:3536/K7MP2Q", LobbyError::MissingHost),
            ("ws://::1:3536/K7MP2Q", host("::1:3536")),
            ("ws://fe80::1/K7MP2Q", host("fe80::1")),
            ("ws://[::1/K7MP2Q", host("[::1")),
            ("ws://[]:3536/K7MP2Q", host("[]:3536")),
            ("ws://[1.2.3.4]/K7MP2Q", host("[1.2.3.4]")),
            ("ws://[::1]x/K7MP2Q", host("[::1]x")),
            ("ws://[fe80::1%25eth0]/K7MP2Q", host("[fe80::1%25eth0]")),
            ("ws://user@host:3536/K7MP2Q", host("user@host:3536")),
            ("ws://ex ample/K7MP2Q", host("ex ample")),
            // Ports.
            ("ws://host:/K7MP2Q", port("")),
            ("ws://host:0/K7MP2Q", port("0")),
            ("ws://host:65536/K7MP2Q", port("65536")),
            ("ws://host:123456/K7MP2Q", port("123456")),
            ("ws://host:+80/K7MP2Q", port("+80")),
            ("ws://host:http/K7MP2Q", port("http")),
            ("ws://[::1]:/K7MP2Q", port("")),
            // Paths.
            ("ws://host:3536", LobbyError::MissingCode),
            ("ws://host:3536/", LobbyError::MissingCode),
            ("ws://host:3536/-", LobbyError::MissingCode),
            ("ws://host:3536/lobby/K7MP2Q", extra("/lobby/K7MP2Q")),
            ("ws://host:3536/K7MP2Q/", extra("/K7MP2Q/")),
            ("ws://host:3536//K7MP2Q", extra("//K7MP2Q")),
            ("ws://host:3536/K7MP2Q?next=1", LobbyError::UnexpectedQuery { query: "?next=1".to_owned() }),
            ("ws://host:3536?room=K7MP2Q", LobbyError::UnexpectedQuery { query: "?room=K7MP2Q".to_owned() }),
            ("ws://host:3536/K7MP2Q#x", LobbyError::UnexpectedFragment { fragment: "#x".to_owned() }),
            // The code itself.
            ("ws://host:3536/K7MP2O", LobbyError::InvalidChar { ch: 'O' }),
            ("ws://host:3536/K7MP2", LobbyError::WrongLength { len: 5 }),
            ("ws://host:3536/K7M%20P2Q", LobbyError::InvalidChar { ch: '%' }),
        ];
        for (text, expected) in cases {
            assert_eq!(JoinTarget::parse(text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn room_urls() {
        let c = code("K7MP2Q");
        assert_eq!(room_url("ws://127.0.0.1:3536", &c), "ws://127.0.0.1:3536/K7MP2Q");
        assert_eq!(room_url("ws://127.0.0.1:3536/", &c), "ws://127.0.0.1:3536/K7MP2Q");
        assert_eq!(room_url("wss://[::1]:3536//", &c), "wss://[::1]:3536/K7MP2Q");
        assert_eq!(JoinTarget::Code(c).room_url("ws://localhost:3536/"), "ws://localhost:3536/K7MP2Q");
        let target = url("wss://[::1]:9", "K7MP2Q");
        assert_eq!(target.room_url("ws://localhost:3536"), "wss://[::1]:9/K7MP2Q");
        assert_eq!(target.server(), Some("wss://[::1]:9"));
        assert_eq!(target.code(), c);
        assert_eq!(JoinTarget::Code(c).server(), None);
    }

    #[test]
    fn join_target_display_round_trips() {
        let target = JoinTarget::parse("WS://LocalHost:03536/k7m-p2q").expect("valid URL");
        assert_eq!(target.to_string(), "ws://localhost:3536/K7MP2Q");
        assert_eq!(target.to_string().parse::<JoinTarget>(), Ok(target));
        assert_eq!(JoinTarget::Code(code("K7MP2Q")).to_string(), "K7MP2Q");
    }

    fn any_code() -> impl Strategy<Value = LobbyCode> {
        any::<u64>().prop_map(LobbyCode::from_random)
    }

    fn any_server() -> impl Strategy<Value = String> {
        let host = prop_oneof![
            "[a-z0-9_][a-z0-9_.-]{0,20}",
            any::<[u8; 4]>().prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}")),
            any::<[u16; 8]>().prop_map(|g| {
                let groups: Vec<String> = g.iter().map(|x| format!("{x:x}")).collect();
                format!("[{}]", groups.join(":"))
            }),
            Just("[::1]".to_owned()),
        ];
        (prop_oneof![Just("ws"), Just("wss")], host, proptest::option::of(1u16..)).prop_map(|(scheme, host, port)| {
            match port {
                Some(port) => format!("{scheme}://{host}:{port}"),
                None => format!("{scheme}://{host}"),
            }
        })
    }

    #[test]
    fn an_invite_reads_its_two_urls_and_a_player_takes_the_nearer() {
        let json = r#"{"public":"ws://45.0.113.21:3536/K7MP2Q","lan":"ws://192.168.1.10:3536/K7MP2Q","served":true}"#;
        let invite = Invite::decode(json.as_bytes()).expect("reads");
        assert_eq!(invite.encode(), json.as_bytes(), "one byte string per value");
        assert_eq!(invite.public.as_deref(), Some("ws://45.0.113.21:3536/K7MP2Q"));
        assert!(invite.served);
        let at = |ip: &str| invite.for_player(Some(ip.parse().expect("an address")));
        assert_eq!(at("192.168.1.33"), Some("ws://192.168.1.10:3536/K7MP2Q"), "on the host's network");
        assert_eq!(at("10.2.0.10"), Some("ws://45.0.113.21:3536/K7MP2Q"), "in another home");
        assert_eq!(invite.for_player(None), Some("ws://45.0.113.21:3536/K7MP2Q"));
        let lan_only = Invite { public: None, ..invite.clone() };
        assert_eq!(lan_only.for_player(Some("10.2.0.10".parse().expect("an address"))), None, "out of reach");
        assert_eq!(lan_only.for_player(None), invite.lan.as_deref());
        assert_eq!(Invite::decode(br#"{"served":false}"#), Ok(Invite::default()));
    }

    #[test]
    fn an_invite_that_breaks_a_rule_is_refused() {
        for (json, why) in [
            (r#"{"public":"K7MP2Q","served":true}"#, "a bare code"),
            (r#"{"public":"http://h:1/K7MP2Q","served":true}"#, "another scheme"),
            (r#"{"public":"ws://a:1/K7MP2Q","lan":"ws://b:1/K7MP2R","served":true}"#, "two rooms"),
            (r#"{"public":"ws://a:1/K7MP2Q"}"#, "served left out"),
            (r#"{"public":"ws://a:1/K7MP2Q","served":true,"more":1}"#, "an unknown field"),
            (r#"[1]"#, "not an object"),
        ] {
            assert!(Invite::decode(json.as_bytes()).is_err(), "{why}: {json}");
        }
        let long = format!(r#"{{"public":"ws://{}:1/K7MP2Q","served":true}}"#, "a".repeat(2000));
        assert!(matches!(Invite::decode(long.as_bytes()), Err(InviteError::TooLong(_))));
    }

    proptest! {
        #[test]
        fn code_round_trips(value in any::<u64>()) {
            let c = LobbyCode::from_random(value);
            prop_assert_eq!(c.as_str().len(), CODE_LEN);
            prop_assert!(c.as_str().chars().all(|ch| ALPHABET.contains(ch)));
            prop_assert_eq!(u64::from(c.index()), value % u64::from(CODE_COUNT));
            prop_assert_eq!(LobbyCode::from_random(u64::from(c.index())), c);
            let shown = format!("{c}");
            prop_assert_eq!(shown.as_str(), c.as_str());
            prop_assert_eq!(LobbyCode::parse(&shown), Ok(c));
            prop_assert_eq!(LobbyCode::parse(&c.grouped()), Ok(c));
            prop_assert_eq!(LobbyCode::parse(&format!(" {} ", c.grouped().to_lowercase().replace('-', " "))), Ok(c));
            prop_assert_eq!(deserialize(&String::from(c)), Ok(c));
        }

        #[test]
        fn join_target_round_trips(server in any_server(), c in any_code(), bare in any::<bool>()) {
            let target = if bare { JoinTarget::Code(c) } else { JoinTarget::Url { server: server.clone(), code: c } };
            prop_assert_eq!(JoinTarget::parse(&target.to_string()), Ok(target.clone()));
            prop_assert_eq!(JoinTarget::parse(&target.room_url(&server)), Ok(JoinTarget::Url { server, code: c }));
        }

        #[test]
        fn invites_round_trip(public in proptest::option::of(any_server()), lan in proptest::option::of(any_server()), c in any_code(), served in any::<bool>()) {
            let invite = Invite { public: public.map(|s| room_url(&s, &c)), lan: lan.map(|s| room_url(&s, &c)), served };
            if invite.validate().is_ok() {
                prop_assert_eq!(Invite::decode(&invite.encode()), Ok(invite));
            }
        }

        #[test]
        fn garbage_invites_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1200), text in "[{}\\[\\]\":,a-z0-9./ ]{0,200}") {
            let _ = Invite::decode(&bytes);
            if let Ok(invite) = Invite::decode(text.as_bytes()) {
                prop_assert_eq!(Invite::decode(&invite.encode()), Ok(invite));
            }
        }

        #[test]
        fn arbitrary_strings_never_panic(text in any::<String>()) {
            if let Ok(c) = LobbyCode::parse(&text) {
                prop_assert_eq!(LobbyCode::parse(c.as_str()), Ok(c));
            }
            if let Ok(target) = JoinTarget::parse(&text) {
                prop_assert_eq!(JoinTarget::parse(&target.to_string()), Ok(target));
            }
        }

        #[test]
        fn near_valid_strings_never_panic(
            prefix in prop_oneof![Just(""), Just("ws://"), Just("WSS://"), Just("http://"), Just("ws://[")],
            body in "[a-z0-9A-Z:/?#@\\[\\]. _-]{0,40}",
        ) {
            let text = format!("{prefix}{body}");
            if let Ok(c) = LobbyCode::parse(&text) {
                prop_assert_eq!(LobbyCode::parse(c.as_str()), Ok(c));
            }
            if let Ok(target) = JoinTarget::parse(&text) {
                prop_assert_eq!(JoinTarget::parse(&target.to_string()), Ok(target));
            }
        }
    }
}
