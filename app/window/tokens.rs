//! Session tokens remembered per room, so that a player whose window closed — or whose
//! hosting process crashed and whose match a friend took over — comes back to their
//! slot, with its team and score, by joining the same lobby code again.
//!
//! The host keeps a dropped slot for 5 minutes; a token is remembered as long. They are
//! kept in `tokens.json` beside `settings.json` (see [`crate::window::settings`]), written
//! through a temporary file; a file that does not parse is treated as empty (a token is
//! only a shortcut back into a slot: without it the player joins as someone new).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use vimp_netcode::session::SessionToken;

/// How long a token is worth keeping: the host's resume window.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// One remembered token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    token: SessionToken,
    /// When it was last seen in use, seconds since the Unix epoch.
    seen_at: u64,
}

/// The tokens file (see the module docs).
#[derive(Clone, Debug)]
pub struct Tokens {
    path: PathBuf,
}

impl Tokens {
    /// The tokens file beside the settings file at `settings`.
    pub fn beside(settings: &Path) -> Tokens {
        Tokens { path: settings.with_file_name("tokens.json") }
    }

    /// The token last used in `room`, if it was in use within [`TOKEN_LIFETIME`] of `now`.
    pub fn recall(&self, room: &str, now: SystemTime) -> Option<SessionToken> {
        let entry = self.read().remove(room)?;
        (unix(now).saturating_sub(entry.seen_at) <= TOKEN_LIFETIME.as_secs()).then_some(entry.token)
    }

    /// Remembers `token` as in use in `room` at `now` (and forgets the expired ones).
    pub fn remember(&self, room: &str, token: SessionToken, now: SystemTime) -> std::io::Result<()> {
        let now = unix(now);
        let mut all = self.read();
        all.retain(|_, e| now.saturating_sub(e.seen_at) <= TOKEN_LIFETIME.as_secs());
        all.insert(room.to_owned(), Entry { token, seen_at: now });
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(&all).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, &self.path)
    }

    fn read(&self) -> BTreeMap<String, Entry> {
        std::fs::read_to_string(&self.path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> Tokens {
        let dir = std::env::temp_dir().join(format!("vimp-tokens-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Tokens::beside(&dir.join("settings.json"))
    }

    #[test]
    fn a_token_comes_back_for_its_room_within_five_minutes_only() {
        let tokens = scratch("window");
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let a = SessionToken([7; 16]);
        tokens.remember("ws://h:3536/K7MP2Q", a, t0).unwrap();
        assert_eq!(tokens.recall("ws://h:3536/K7MP2Q", t0 + Duration::from_secs(299)), Some(a));
        assert_eq!(tokens.recall("ws://h:3536/OTHER1", t0), None);
        assert_eq!(tokens.recall("ws://h:3536/K7MP2Q", t0 + Duration::from_secs(301)), None);
        // Remembering another room later drops the expired one from the file.
        tokens.remember("ws://h:3536/OTHER1", SessionToken([8; 16]), t0 + Duration::from_secs(400)).unwrap();
        let text = std::fs::read_to_string(&tokens.path).unwrap();
        assert!(!text.contains("K7MP2Q") && text.contains("OTHER1"), "{text}");
    }

    #[test]
    fn a_broken_file_is_no_token() {
        let tokens = scratch("broken");
        std::fs::create_dir_all(tokens.path.parent().unwrap()).unwrap();
        std::fs::write(&tokens.path, "{not json").unwrap();
        assert_eq!(tokens.recall("room", SystemTime::now()), None);
        tokens.remember("room", SessionToken([1; 16]), SystemTime::now()).unwrap();
        assert_eq!(tokens.recall("room", SystemTime::now()), Some(SessionToken([1; 16])));
    }
}
