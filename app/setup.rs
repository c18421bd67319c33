//! What the window and the headless commands share: the default rendezvous, the ICE server
//! flags, the client's settings, a new match, the wait after a handoff, and why a join
//! did not get in.

use std::time::Duration;

use anyhow::Context;
use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::{Host, HostCommand, PlayerId};
use vimp_netcode::client::ClientConfig;
use vimp_netcode::lobby::LobbyCode;
use vimp_netcode::signal::IceServer;

/// The signalling server used when none is named.
pub const DEFAULT_SIGNAL: &str = "ws://127.0.0.1:3536";

/// ICE servers from flags (none by default: no third-party server is contacted unless named).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IceArgs {
    /// A STUN server (repeatable), e.g. `stun:stun.example.net:3478`.
    #[arg(long = "stun", value_name = "URL")]
    pub stun: Vec<String>,
    /// A TURN server (repeatable).
    #[arg(long = "turn", value_name = "URL")]
    pub turn: Vec<String>,
    /// The TURN user name.
    #[arg(long, requires = "turn")]
    pub turn_user: Option<String>,
    /// The TURN password.
    #[arg(long, requires = "turn")]
    pub turn_pass: Option<String>,
}

/// The environment variable with more ICE servers, as JSON: `[{"urls": ["stun:…"]}, …]`.
pub const ICE_ENV: &str = "VIMP_ICE_SERVERS";

impl IceArgs {
    /// The ICE servers to use: these flags, then `VIMP_ICE_SERVERS`, then what the signalling
    /// server at `signal` hands out. None of them by default.
    pub fn resolve(&self, signal: &str) -> anyhow::Result<Vec<IceServer>> {
        let mut out = self.servers();
        if let Ok(json) = std::env::var(ICE_ENV) {
            let more: Vec<IceServer> =
                serde_json::from_str(&json).with_context(|| format!("{ICE_ENV} is not a JSON list of ICE servers"))?;
            out.extend(more);
        }
        match vimp_netcode::signal::fetch_ice(signal, Duration::from_secs(3)) {
            Ok(list) => out.extend(list.ice_servers),
            Err(e) => eprintln!("note: {e}; going on with {} ICE server(s)", out.len()),
        }
        Ok(out)
    }

    /// The ICE servers these flags name.
    pub fn servers(&self) -> Vec<IceServer> {
        let mut out = Vec::new();
        if !self.stun.is_empty() {
            out.push(IceServer { urls: self.stun.clone(), ..IceServer::default() });
        }
        if !self.turn.is_empty() {
            out.push(IceServer {
                urls: self.turn.clone(),
                username: self.turn_user.clone(),
                credential: self.turn_pass.clone(),
            });
        }
        out
    }
}

/// How long a host that handed the match off keeps its links open, so that what it put on
/// them (the last log, the final checkpoint, the handoff) gets out before the process ends.
const HANDOFF_LINGER: Duration = Duration::from_millis(300);

/// Waits for [`HANDOFF_LINGER`] with the links still open.
pub(crate) fn linger() {
    std::thread::sleep(HANDOFF_LINGER);
}

/// The client's settings with a host timeout of `host_timeout_ms`.
pub fn client_config(host_timeout_ms: u64) -> ClientConfig {
    ClientConfig { host_timeout: Duration::from_millis(host_timeout_ms.max(1)), ..ClientConfig::default() }
}

/// A match of `game` on the map file `map` with `bots` bots of `skill` joined and one tick stepped; with its config.
pub fn new_match(
    game: &Game,
    map: &std::path::Path,
    bots: u8,
    skill: BotSkill,
    seed: u64,
) -> anyhow::Result<(Host, vimp_host::InitConfig)> {
    let config = (game.init_config)(seed, skill);
    let label = map.display().to_string();
    let text = std::fs::read_to_string(map).with_context(|| format!("reading {label}"))?;
    let mut host = Host::new(config.clone(), *game)?;
    host.load_map_json(&label, &text)?;
    for i in 0..bots {
        host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{}", i + 1), team: None, bot: true });
    }
    host.step();
    Ok((host, config))
}

/// `vimp join`'s exit code when the signalling server cannot be reached or is lost before the
/// welcome.
pub const UNREACHABLE: i32 = 3;

/// `vimp join`'s exit code when no host welcomed us within `--join-timeout`: no host in the
/// room, or linked but not welcomed.
pub const TIMED_OUT: i32 = 4;

/// `vimp join`'s exit code when the room has a host but no network path to it was found
/// within `--join-timeout` (strict NATs on both sides and no TURN relay that gets through).
pub const NO_PATH: i32 = 5;

/// `vimp join`'s exit code when the host refused us (a `REJECT`, or a close before any
/// welcome): a wrong password, a full server, another protocol version; the host's reason is
/// said.
pub const REFUSED: i32 = 6;

/// Why a join got no welcome in time, and the exit code that says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinFailure {
    /// [`UNREACHABLE`], [`TIMED_OUT`], [`NO_PATH`] or [`REFUSED`].
    pub code: i32,
    /// What to tell the player.
    pub reason: String,
}

impl JoinFailure {
    /// The host refused us with close `code` and its `reason`.
    pub fn refused(code: u16, reason: &str) -> JoinFailure {
        JoinFailure { code: REFUSED, reason: format!("the host refused us: {reason} ({code})") }
    }

    /// Works out why: linked to a peer but not welcomed; or, asking the signalling server
    /// `signal` who is in the room of `room_url` (`GET /rooms/CODE`, `vimp signal` only), no
    /// host there, or a host with no network path to it (`ice`: were we given a TURN relay?).
    pub fn diagnose(signal: &str, room_url: &str, ice: &[IceServer], linked: usize, waited_s: f64) -> JoinFailure {
        let room = room_url.rsplit_once('/').map_or(room_url, |(_, room)| room);
        let code = LobbyCode::parse(room).map_or_else(|_| room.to_owned(), |c| c.grouped());
        let timed_out = |reason: String| JoinFailure { code: TIMED_OUT, reason };
        if linked > 0 {
            return timed_out(format!("linked to room {code}, but no host welcomed us in {waited_s:.0} s"));
        }
        match vimp_netcode::signal::fetch_room(signal, room, Duration::from_secs(2)) {
            // We are one of them.
            Ok(info) if info.peers <= 1 => {
                timed_out(format!("no host in room {code}: check the code (or the host has left)"))
            }
            Ok(_) => {
                let relayed =
                    ice.iter().flat_map(|s| &s.urls).any(|u| u.starts_with("turn:") || u.starts_with("turns:"));
                let reason = if relayed {
                    format!(
                        "room {code} has a host, but no network path to it was found in {waited_s:.0} s, not even \
                         through the TURN relay (can it be reached on UDP 3478 and its relay ports?)"
                    )
                } else {
                    format!(
                        "room {code} has a host, but no network path to it was found in {waited_s:.0} s: both sides \
                         are behind strict NATs, and a TURN relay is needed (the rendezvous hands out none: \
                         `vimp signal --turn URL --turn-secret S`)"
                    )
                };
                JoinFailure { code: NO_PATH, reason }
            }
            Err(_) => timed_out(format!(
                "no peer of room {code} could be reached in {waited_s:.0} s: no host in the room (check the code), \
                 or no network path to it (behind strict NATs on both sides a TURN relay is needed)"
            )),
        }
    }
}
