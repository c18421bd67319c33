//! `vimp host` and `vimp join`: a match over WebRTC, found by lobby code (headless for now).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use vimp_host::PlayerId;
use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::node::{Node, RoleChange};
use vimp_host::engine::server::{ServerConfig, ServerCore, ServerEvent};
use vimp_netcode::client::{ClientChange, ClientCore};
use vimp_netcode::input::KeyAction;
use vimp_netcode::lobby::{JoinTarget, LobbyCode, room_url};
use vimp_netcode::session::{Hello, close};
use vimp_netcode::signal::{IceServer, SignalConfig, SignalServer};
use vimp_netcode::transport::webrtc::WebRtcTransport;

use crate::setup::{
    DEFAULT_SIGNAL, IceArgs, JoinFailure, Redialer, UNREACHABLE, Witnesser, client_config, linger, new_match,
};

/// What `vimp host` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The signalling server (`ws://HOST:PORT`); without it one is embedded, listening on `--bind`.
    #[arg(long, value_name = "URL")]
    pub signal: Option<String>,
    /// Where the embedded signalling server listens.
    #[arg(long, default_value = "0.0.0.0:3536")]
    pub bind: std::net::SocketAddr,
    /// The lobby code (6 characters); a random one by default.
    #[arg(long)]
    pub code: Option<String>,
    /// Run without a window (a home server): print the lobby code and serve until stopped.
    #[arg(long)]
    pub headless: bool,
    /// Bots in the match.
    #[arg(long, default_value_t = 0)]
    pub bots: u8,
    /// How good the bots are: easy, normal or hard.
    #[arg(long, default_value = "normal", value_parser = crate::cli::bot_skill)]
    pub bot_skill: BotSkill,
    /// The map file.
    #[arg(long, default_value = "maps/default.json")]
    pub map: PathBuf,
    /// A map players may vote for (repeatable), besides the one being played.
    #[arg(long = "vote-map", value_name = "FILE")]
    pub vote_maps: Vec<PathBuf>,
    /// A lobby password.
    #[arg(long)]
    pub password: Option<String>,
    /// Most players, bots included.
    #[arg(long, default_value_t = 16)]
    pub max_players: usize,
    /// Stop after this many seconds (default: run until stopped).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Print the figures as JSON when stopping.
    #[arg(long)]
    pub json: bool,
    /// The match seed (a random one by default).
    #[arg(long)]
    pub seed: Option<u64>,
    /// ICE servers for the WebRTC links.
    #[command(flatten)]
    pub ice: IceArgs,
    /// In the window: render frames and save a picture.
    #[command(flatten)]
    pub capture: crate::cli::CaptureArgs,
}

/// What `vimp join` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct JoinArgs {
    /// A lobby code (`K7M-P2Q`) or a room URL (`ws://HOST:PORT/K7MP2Q`).
    pub target: String,
    /// The signalling server for a bare code.
    #[arg(long, default_value = DEFAULT_SIGNAL, value_name = "URL")]
    pub signal: String,
    /// Run without a window, driving bot inputs, and print figures (for tests and benchmarks).
    #[arg(long)]
    pub headless: bool,
    /// The nickname (default: the window's settings, `player` headless).
    #[arg(long, value_name = "NICK")]
    pub name: Option<String>,
    /// Watch instead of play (the headless spectator switches the observed player now and then).
    #[arg(long)]
    pub spectate: bool,
    /// The lobby password.
    #[arg(long)]
    pub password: Option<String>,
    /// The snapshot format to ask the host for: 6 (delta frames against the last frame this
    /// client acknowledged) or 5 (every frame whole, as an older client gets).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u8).range(5..=6))]
    pub snapshot_format: u8,
    /// Leave after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Give up when the host has not welcomed us after this many seconds, saying why: exit code
    /// 4 when there is no host in the room (or it did not welcome us), 5 when there is one but
    /// no network path to it was found (3: the signalling server could not be reached; 6: the
    /// host refused us, and said why).
    #[arg(long, value_name = "SECONDS", default_value_t = 15.0)]
    pub join_timeout: f64,
    /// A chat line to say once joined, or a chat command (`/spectate`, `/w name text`, `/help`).
    #[arg(long)]
    pub say: Option<String>,
    /// Seconds after the welcome to wait before saying it (so friends joining meanwhile hear it).
    #[arg(long, default_value_t = 3.0)]
    pub say_after: f64,
    /// The longest the host may stay silent (nothing on either channel) before it counts as
    /// lost and the successors take over, ms; a link that has shown itself steady is judged
    /// sooner (three times its longest gap between the host's frames over the last 10 s, at
    /// least 150 ms).
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub host_timeout: u64,
    /// Headless: call the `@changeHost` vote this many seconds after the welcome (or as soon
    /// after as the host lists this player as a successor).
    #[arg(long, value_name = "S")]
    pub call_change_host: Option<f64>,
    /// Headless: how to answer a `@changeHost` vote someone else called (unanswered by default).
    #[arg(long, value_name = "yes|no", value_parser = ["yes", "no"])]
    pub change_host_answer: Option<String>,
    /// Print the figures as JSON when leaving.
    #[arg(long)]
    pub json: bool,
    /// Headless: a file that keeps this player's session token: read when joining (back to
    /// the slot it names, its team and score, if the host kept it: 5 minutes after a drop),
    /// written once welcomed. A client killed and started again with it is back in its slot.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Headless: predict the player's own tank as the window does (the game's prediction on
    /// the host's sim code) and report its corrections: how far each frame from the host moved it.
    #[arg(long)]
    pub predict: bool,
    /// Headless: say a numbered chat line (`NICK #N`) every this many seconds after the welcome.
    #[arg(long, value_name = "S")]
    pub say_every: Option<f64>,
    /// Do not dial the match again after a drop (by default: at once, then 2, 10 and 30 s
    /// after each failed attempt, with the slot's token).
    #[arg(long)]
    pub no_reconnect: bool,
    /// Never answer the room's check before a takeover, and say so in the hello, as a
    /// client of another make may: a member that is no voter (for soaks and tests of a room
    /// with a silent member).
    #[arg(long)]
    pub no_host_checks: bool,
    /// ICE servers for the WebRTC links.
    #[command(flatten)]
    pub ice: IceArgs,
    /// In the window: render frames and save a picture.
    #[command(flatten)]
    pub capture: crate::cli::CaptureArgs,
}

/// The token in `path`, if it holds one (a missing or unreadable file is no token).
fn read_token(path: &std::path::Path) -> Option<vimp_netcode::session::SessionToken> {
    vimp_netcode::session::SessionToken::parse(std::fs::read_to_string(path).ok()?.trim())
}

/// Writes `token` to `path` through a temporary file.
fn write_token(path: &std::path::Path, token: vimp_netcode::session::SessionToken) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{token}\n"))?;
    std::fs::rename(&tmp, path)
}

/// The headless client's prediction of its own tank (`--predict`), and its corrections.
#[derive(Default)]
struct Predicting {
    map: Option<vimp_host::engine::map::MapConfig>,
    map_version: u64,
    built: Option<(u64, u8)>,
    predictor: Option<Box<dyn crate::window::predict::LocalPrediction>>,
    predicted_to: Duration,
    /// Every correction's distance, world units.
    corrections: Vec<f32>,
    snaps: u64,
}

impl Predicting {
    /// A turn at `now`: the map from the meta, a predictor once config, map and welcome are
    /// there (again after a map change or a new slot), the frames reconciled, the steps due.
    fn turn(&mut self, client: &mut ClientCore, meta: &[(u8, Vec<u8>)], now: Duration) {
        for (port, payload) in meta {
            if let Ok(vimp_netcode::meta::MetaMessage::Map(json)) =
                vimp_netcode::meta::MetaMessage::decode(*port, payload)
                && let Ok(map) = serde_json::from_value(json)
            {
                self.map = Some(map);
                self.map_version += 1;
            }
        }
        if let (Some(config), Some(map), Some(w)) = (client.config(), &self.map, client.welcome())
            && self.built != Some((self.map_version, w.player_id))
            && !w.spectator
        {
            self.built = Some((self.map_version, w.player_id));
            self.predictor = crate::PREDICTION(config, map, PlayerId(w.player_id));
            self.predicted_to = now;
        }
        let frames = client.take_frames();
        let Some(p) = self.predictor.as_mut() else { return };
        for mut frame in frames {
            if let Some(c) = p.on_frame(&mut frame)
                && (c.distance > 1e-3 || c.snapped)
            {
                self.corrections.push(c.distance);
                self.snaps += u64::from(c.snapped);
            }
        }
        let dt = Duration::from_secs_f64(f64::from(p.dt()));
        while self.predicted_to + dt <= now {
            p.step();
            self.predicted_to += dt;
        }
        let _ = (p.take_tracers(), p.take_divergence());
    }

    /// The player pressed or released `name`, sent with `seq`.
    fn key(&mut self, seq: Option<u32>, action: KeyAction, name: &str) {
        if let (Some(p), Some(seq)) = (self.predictor.as_mut(), seq) {
            p.key(seq, action, name);
        }
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
            as u64;
    }
    u64::from_le_bytes(b)
}

/// CPU seconds this process has used (user + system), from `/proc/self/stat`.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Hosts a match: prints the lobby code and the room URL, serves until stopped.
pub fn host(args: &HostArgs, game: &Game) -> anyhow::Result<i32> {
    let code = match &args.code {
        Some(c) => LobbyCode::parse(c)?,
        None => LobbyCode::from_random(random_u64()),
    };
    let (signal_url, _embedded) = match &args.signal {
        Some(url) => (url.trim_end_matches('/').to_owned(), None),
        None => {
            let server = SignalServer::start(SignalConfig { bind: args.bind, ..Default::default() })?;
            (server.url(), Some(server))
        }
    };
    let seed = args.seed.unwrap_or_else(random_u64);
    let (host, config) = new_match(game, &args.map, args.bots, args.bot_skill, seed)?;
    let mut vote_maps = Vec::new();
    for path in &args.vote_maps {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {label}"))?;
        vote_maps.push(vimp_host::engine::map::MapConfig::from_json(&label, &text)?);
    }
    let url = room_url(&signal_url, &code);
    let ice = args.ice.resolve(&signal_url)?;
    let transport: Box<dyn vimp_netcode::transport::Transport> = Box::new(WebRtcTransport::connect(&url, &ice)?);
    let server_config = ServerConfig {
        match_id: format!("{code}-{seed:016x}"),
        max_players: args.max_players,
        password: args.password.clone(),
        client_config: (game.client_config)(&config),
        session: vimp_host::engine::server::session_config(&config.game),
        maps: vote_maps,
        ..ServerConfig::default()
    };
    // Unseated by a claim that holds the room (this host's line was cut, or it slept), it
    // stays in the room as a member that may take the match back.
    let member = Hello::new("host", env!("CARGO_PKG_VERSION"));
    let mut node = Node::hosting(*game, transport, ServerCore::new(host, server_config), None)
        .stays_as_member(member, Witnesser::config(client_config(500)));
    let mut witness = Witnesser::new(&url);
    let (dial_url, dial_ice) = (url.clone(), ice.clone());
    let dial = move || -> anyhow::Result<Box<dyn vimp_netcode::transport::Transport>> {
        Ok(Box::new(WebRtcTransport::connect(&dial_url, &dial_ice)?))
    };
    // As a member, a hello nobody answered, or a link that dropped, is dialed again: the
    // links it had may have failed while this process slept.
    let mut redialer = Redialer::new(Box::new(dial.clone()));
    // Asks the room over a fresh socket whether the match went on without this host.
    let recheck = |node: &mut Node<Box<dyn vimp_netcode::transport::Transport>>, now| match dial() {
        Ok(transport) => {
            eprintln!("every player's link dropped: asking the room whether the match went on without this host");
            node.recheck(transport, now)
        }
        Err(e) => {
            eprintln!("every player's link dropped, and the room cannot be asked again: {e}");
            false
        }
    };
    println!("lobby code: {}", code.grouped());
    println!("friends join with: vimp join {url}");
    if args.signal.is_none() {
        println!(
            "(signalling embedded at {signal_url}; on a LAN, give friends this machine's address instead of 127.0.0.1)"
        );
    }

    let start = Instant::now();
    let cpu0 = cpu_seconds();
    let mut peak_peers = 0;
    // Every player's link while it was there, last seen.
    let mut links = std::collections::BTreeMap::<PlayerId, vimp_host::engine::server::PlayerLink>::new();
    // What this process last said of its place as a member (after stepping down):
    // (the epoch it was welcomed at, the code its client closed with), so each is said once.
    let mut member_said = (None, None);
    let mut next_links = Duration::ZERO;
    // What the JSON report says of the match, as of the last turn this process hosted it.
    let (mut stats, mut ticks) = (Default::default(), 0);
    // Asking the room whether the match went on without this host (every player dropped).
    let mut rechecking = false;
    let mut asking_room: Option<std::sync::mpsc::Receiver<Option<bool>>> = None;
    loop {
        let now = start.elapsed();
        node.update(now);
        while let Some(event) = node.server_mut().and_then(ServerCore::poll_event) {
            // A better claim and a handoff are the node's changes of role, below.
            if let ServerEvent::Joined { .. } | ServerEvent::Left { .. } | ServerEvent::KeptTheMatch { .. } = event {
                eprintln!("{event}");
            }
        }
        if let Some(server) = node.server() {
            peak_peers = peak_peers.max(server.peer_count());
            (stats, ticks) = (server.stats(), server.host().tick());
            if now >= next_links {
                next_links = now + Duration::from_secs(1);
                for link in node.links() {
                    let known =
                        links.get(&link.player).is_some_and(|l| l.path == link.path && l.nickname == link.nickname);
                    if let (Some(path), false) = (link.path, known) {
                        eprintln!("the link to {} is {}", link.nickname, path.as_str());
                    }
                    links.insert(link.player, link);
                }
            }
        }
        match node.poll_change() {
            Some(change @ RoleChange::HandedOff { .. }) => {
                // The players voted for another host (@changeHost): it has the match now.
                eprintln!("{change}");
                linger();
                break;
            }
            Some(RoleChange::SteppedDown { winner, claim }) => {
                // This host went silent (a stall, a sleeping laptop, a cut line) long enough
                // for a successor to take the match over with the room behind it: the match
                // is theirs now, and this process stays in the room to take it back should
                // they leave.
                eprintln!(
                    "{winner} took the match over at epoch {} ({}) while this host was silent: stepping down, \
                     staying in the room as a member",
                    claim.epoch,
                    claim.evidence.said()
                );
            }
            Some(change @ (RoleChange::Promoted { .. } | RoleChange::Rejoined { .. })) => eprintln!("{change}"),
            None => {}
        }
        // Every player's link dropped: the match may have gone on without this host (it
        // slept, or its line was cut, for longer than its players' links lasted), with no
        // link left to tell it so. It asks the room over a fresh socket.
        // First the rendezvous: a room with nobody else in it holds no match that went on
        // (the players' processes left: the usual end of a player's run).
        if node.wants_recheck() {
            // Without a rendezvous to ask, the room is asked at once.
            asking_room = match (witness.as_ref(), node.transport().local_id()) {
                (Some(w), Some(me)) => Some(w.others_than(me)),
                _ => None,
            };
            if asking_room.is_none() {
                rechecking = recheck(&mut node, now);
            }
        }
        let others = asking_room.as_ref().and_then(|rx| match rx.try_recv() {
            Ok(others) => Some(others),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Some(None),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
        });
        match others {
            None => {}
            Some(Some(false)) => {
                asking_room = None;
                eprintln!("every player's link dropped, and nobody else is in the room: hosting on");
            }
            Some(Some(true) | None) => {
                asking_room = None;
                rechecking = recheck(&mut node, now);
            }
        }
        if rechecking && !node.is_rechecking() {
            rechecking = false;
            if node.is_hosting() {
                eprintln!("no other host in the room: hosting on");
            }
        }
        for note in redialer.turn(&mut node, now) {
            eprintln!("as a member: {note}");
        }
        if node.server().is_none()
            && let Some(client) = node.client()
        {
            let now_member = (client.welcome().map(|w| w.epoch), client.closed().map(|(code, _)| *code));
            if now_member != member_said {
                match (now_member.0, client.closed()) {
                    (_, Some((code, why))) => eprintln!("as a member: {why} ({code})"),
                    (Some(epoch), None) => eprintln!("a member of the match at epoch {epoch}, ready to host it again"),
                    (None, None) => {}
                }
                member_said = now_member;
            }
        }
        if let Some(witness) = witness.as_mut() {
            witness.turn(&mut node);
        }
        if args.seconds.is_some_and(|s| now.as_secs_f64() >= s) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Leaving gracefully: the first successor gets the log, a final checkpoint and the
    // handoff, and continues from this very tick (nothing to hand off unless this process
    // hosts now).
    if node.hand_off(start.elapsed()) {
        node.update(start.elapsed());
        if let Some(change) = node.poll_change() {
            eprintln!("{change}");
        }
        linger();
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    let stats: vimp_host::engine::server::ServerStats = stats;
    if args.json {
        let report = json!({
            "code": code.as_str(),
            "url": url,
            "seconds": wall,
            "ticks": ticks,
            "peers_peak": peak_peers,
            "frames_sent": stats.frames_sent,
            "delta_frames_sent": stats.delta_frames_sent,
            "pack_errors": stats.pack_errors,
            "meta_refused": stats.meta_refused,
            "bytes_out_per_s": stats.bytes_out as f64 / wall,
            "bytes_in_per_s": stats.bytes_in as f64 / wall,
            "kicked": stats.kicked,
            "cpu_seconds": cpu,
            "cpu_percent": cpu.map(|c| 100.0 * c / wall),
            "links": links.values().map(|l| json!({
                "player_id": l.player,
                "nickname": l.nickname,
                "path": l.path.map(vimp_netcode::transport::LinkPath::as_str),
                "rtt_ms": l.rtt_ms,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(0)
}

/// The `q` quantile of `values` (0 when empty).
/// A headless player answers the game's form (`AUTH_DATA`) with the form's own values, and
/// says what the host thought of an answer it refused.
fn answer_form(client: &mut vimp_netcode::client::ClientCore, port: u8, payload: &[u8]) {
    use vimp_netcode::meta::{AuthResponse, AuthResult, ClientMeta, MetaMessage};
    match MetaMessage::decode(port, payload) {
        Ok(MetaMessage::AuthData(form)) => {
            let fields = form.params.into_iter().map(|p| (p.name, p.value)).collect();
            eprintln!("the game asks for a form: answered with its own values");
            let answer = ClientMeta::AuthResponse(AuthResponse(fields)).encode();
            client.send_meta(vimp_netcode::meta::AUTH_RESPONSE, &answer);
        }
        Ok(MetaMessage::AuthResult(AuthResult::Rejected(errors))) => {
            let errors: Vec<String> = errors.iter().map(|(field, why)| format!("{field}: {why}")).collect();
            eprintln!("the host refused the form: {}", errors.join("; "));
        }
        _ => {}
    }
}

fn percentile(values: &[f32], q: f64) -> f32 {
    let mut v = values.to_vec();
    v.sort_by(f32::total_cmp);
    v.get(((v.len().saturating_sub(1)) as f64 * q).round() as usize).copied().unwrap_or(0.0)
}

/// Joins a match by code or URL; a headless client drives bot inputs and reports figures.
pub fn join(args: &JoinArgs, game: &Game) -> anyhow::Result<i32> {
    let target = JoinTarget::parse(&args.target)?;
    let url = target.room_url(&args.signal);
    let hello = Hello {
        password: args.password.clone(),
        spectator: args.spectate,
        snapshot_formats: if args.snapshot_format == 6 { vec![6] } else { Vec::new() },
        resume_token: args.token_file.as_deref().filter(|_| !args.spectate).and_then(read_token),
        checks: !args.no_host_checks,
        ..Hello::new(args.name.as_deref().unwrap_or("player"), env!("CARGO_PKG_VERSION"))
    };
    let signal = url.rsplit_once('/').map_or(url.as_str(), |(server, _)| server).to_owned();
    // The join's clock counts the ICE list's fetch, which runs while the websocket connects:
    // no handshake starts before it is in.
    let start = Instant::now();
    let known = args.ice.known()?;
    // The list in use and when it came, for `join_phases_ms` and for dialing again.
    let ice: Arc<OnceLock<(Vec<IceServer>, Duration)>> = Arc::default();
    let fetch = {
        let (signal, known, ice) = (signal.clone(), known.clone(), ice.clone());
        move || {
            let fetched = crate::setup::fetch_ice(&signal, known.len());
            let all: Vec<_> = known.iter().chain(&fetched).cloned().collect();
            let list = match WebRtcTransport::check_ice_servers(&all) {
                Ok(()) => all,
                Err(e) => {
                    eprintln!("note: {e}; going on without the rendezvous's ICE servers");
                    known
                }
            };
            let _ = ice.set((list.clone(), start.elapsed()));
            list
        }
    };
    let transport: Box<dyn vimp_netcode::transport::Transport> =
        Box::new(WebRtcTransport::connect_fetching(&url, &known, fetch)?);
    let mut witness = Witnesser::new(&url);
    let config = match witness {
        Some(_) => Witnesser::config(client_config(args.host_timeout)),
        None => client_config(args.host_timeout),
    };
    let mut node = Node::playing(*game, transport, ClientCore::new(hello, config));
    let (dial_url, dial_ice, dial_known) = (url.clone(), ice.clone(), known.clone());
    let mut redialer = Redialer::new(Box::new(move || {
        let servers = dial_ice.get().map_or(&dial_known, |(list, _)| list);
        Ok(Box::new(WebRtcTransport::connect(&dial_url, servers)?) as Box<dyn vimp_netcode::transport::Transport>)
    }));
    let mut token_written = None;
    let mut predicting = Predicting::default();
    let mut said_lines = Vec::new();
    let mut next_say = None;
    let mut promoted = None;
    let mut said_shadow = false;
    let mut snapshots_at_change = 0;
    let mut rtts = Vec::new();
    let mut said = false;
    let mut next_sample = Duration::ZERO;
    let mut score = None;
    let mut held: Option<&str> = None;
    let (mut called, mut seen_vote, mut said_passed) = (false, 0, false);
    let mut failure: Option<JoinFailure> = None;
    let mut host_path = None;
    let mut watch = JoinWatch::default();
    loop {
        let now = start.elapsed();
        if watch.ice_servers.is_none() {
            watch.ice_servers = ice.get().map(|(_, at)| *at);
        }
        node.update(now);
        if let Some(client) = node.client() {
            watch.turn(now, node.transport().local_id().is_some(), client.linked_peers() > 0, client.stats().snapshots);
        }
        while let Some(change) = node.poll_change() {
            eprintln!("{change}");
            if let RoleChange::Promoted { tick, epoch, .. } = change {
                promoted = Some((tick, epoch));
            }
        }
        if !args.no_reconnect {
            for note in redialer.turn(&mut node, now) {
                eprintln!("{note}");
            }
        }
        if let Some(witness) = witness.as_mut() {
            witness.turn(&mut node);
        }
        let (checkpoints, transport_failure) = (node.checkpoints(), node.transport().failure());
        let host_path_now = node.client().and_then(ClientCore::host_peer).and_then(|h| node.transport().path(h));
        let client = node.client_mut().expect("a player's node has its client");
        while let Some(change) = client.poll_event() {
            eprintln!("{change}");
            if let ClientChange::HostChanged { .. } = change {
                snapshots_at_change = client.stats().snapshots;
            }
        }
        // At least one: under load two can come in between two turns of this loop.
        if checkpoints >= 1 && !said_shadow {
            said_shadow = true;
            eprintln!("shadowing the host (first checkpoint in)");
        }
        if client.welcome().is_none() && client.closed().is_none() {
            // Not in yet: the signalling server lost, or out of time (`--join-timeout`, or
            // `--seconds` first), is the end, and says why.
            let why = match transport_failure {
                Some(reason) => Some(JoinFailure { code: UNREACHABLE, reason }),
                None if now.as_secs_f64() >= args.join_timeout.min(args.seconds) => Some(JoinFailure::diagnose(
                    &signal,
                    &url,
                    ice.get().map_or(&known, |(list, _)| list),
                    client.linked_peers(),
                    now.as_secs_f64(),
                )),
                None => None,
            };
            if let Some(why) = why {
                eprintln!("vimp join: {}", why.reason);
                failure = Some(why);
                break;
            }
        }
        if let (None, Some((code, reason))) = (client.welcome(), client.closed()) {
            let why = JoinFailure::refused(*code, reason);
            eprintln!("vimp join: {}", why.reason);
            failure = Some(why);
            break;
        }
        if let (Some(path), Some(w)) = (&args.token_file, client.welcome())
            && token_written != Some(w.token)
            && !w.spectator
        {
            token_written = Some(w.token);
            if let Err(e) = write_token(path, w.token) {
                eprintln!("vimp join: cannot keep the session token in {}: {e}", path.display());
            }
        }
        // A drop is dialed back (until every attempt failed); any other close is the end.
        let redialing = redialer.state().is_some() && !redialer.gave_up();
        if (client.closed().is_some() && !redialing) || redialer.gave_up() || now.as_secs_f64() >= args.seconds {
            break;
        }
        if client.welcome().is_some() {
            let since_welcome = client.stats().welcomed_at.map_or(Duration::ZERO, |t| now.saturating_sub(t));
            if !said
                && since_welcome.as_secs_f64() >= args.say_after
                && let Some(text) = &args.say
            {
                client.say(text);
                said_lines.push(text.clone());
                said = true;
            }
            if let Some(every) = args.say_every.filter(|s| *s > 0.0) {
                let due = *next_say.get_or_insert(now + Duration::from_secs_f64(every));
                if now >= due {
                    next_say = Some(due + Duration::from_secs_f64(every));
                    let nick = client.welcome().map_or("player", |w| w.nickname.as_str());
                    let line = format!("{nick} #{}", said_lines.len() + 1);
                    client.say(&line);
                    said_lines.push(line);
                }
            }
            if let Some(after) = args.call_change_host
                && !called
                && since_welcome.as_secs_f64() >= after
                && client.may_call_change_host()
            {
                called = true;
                if let Some(id) = client.call_change_host() {
                    eprintln!("called the @changeHost vote ({id:08x})");
                }
            }
            if let Some(vote) = client.host_vote() {
                if vote.id != seen_vote {
                    seen_vote = vote.id;
                    eprintln!("@changeHost vote {:08x}: {} of {} say yes", vote.id, vote.yes, vote.electorate);
                }
                if vote.answer.is_none()
                    && let Some(answer) = &args.change_host_answer
                {
                    let yes = answer == "yes";
                    if client.answer_change_host(yes) {
                        eprintln!("answered the @changeHost vote: {answer}");
                    }
                }
                if vote.passed && !said_passed {
                    said_passed = true;
                    eprintln!("the @changeHost vote passed ({} of {})", vote.yes, vote.electorate);
                }
            }
            if client.keyset() == Some(vimp_netcode::meta::Keyset::Spectator) {
                // A spectator switches the watched player every 2 s.
                if now.as_millis() % 2000 < 2 {
                    let seq = client.key(KeyAction::Down, "nextPlayer");
                    predicting.key(seq, KeyAction::Down, "nextPlayer");
                }
            } else {
                // Bot inputs: a new key every 700 ms, and a shot every 300 ms.
                let phase = now.as_millis() / 700;
                let keys = ["forward", "left", "forward", "right", "back", "gunLeft", "gunRight"];
                let want = keys[(phase % 7) as usize];
                if held != Some(want) {
                    if let Some(old) = held {
                        let seq = client.key(KeyAction::Up, old);
                        predicting.key(seq, KeyAction::Up, old);
                    }
                    let seq = client.key(KeyAction::Down, want);
                    predicting.key(seq, KeyAction::Down, want);
                    held = Some(want);
                }
                if now.as_millis() % 300 < 2 {
                    let seq = client.key(KeyAction::Down, "fire");
                    predicting.key(seq, KeyAction::Down, "fire");
                }
            }
        }
        if let Some(path) = host_path_now
            && host_path != Some(path)
        {
            host_path = Some(path);
            eprintln!("the link to the host is {}", path.as_str());
        }
        if now >= next_sample {
            next_sample = now + Duration::from_secs(1);
            if let Some(rtt) = client.rtt_ms().filter(|r| *r > 0.0) {
                rtts.push(rtt);
            }
        }
        let meta = client.take_meta();
        if args.predict {
            predicting.turn(client, &meta, now);
        } else {
            let _ = client.take_frames();
        }
        for (port, payload) in meta {
            answer_form(client, port, &payload);
            if port == vimp_netcode::meta::STAT_DATA
                && let (Ok(stat), Some(w)) = (serde_json::from_slice::<serde_json::Value>(&payload), client.welcome())
            {
                for row in stat[0].as_array().into_iter().flatten() {
                    if row[0] == w.player_id as u64 && row[2][2].is_number() {
                        score = row[2][2].as_i64();
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = start.elapsed();
    if node.hand_off(end) {
        eprintln!("handed the match on");
        crate::setup::await_successor(&mut node, || start.elapsed());
    }
    node.leave(end);
    if node.client().is_some_and(|c| c.welcome().is_some() && c.closed().is_none()) {
        // The close frame on its way, the links still open: the host sees a player who
        // left, not one whose link dropped.
        linger();
    }
    let client = node.client().expect("a player's node has its client");
    let stats = client.stats().clone();
    let wall = end.as_secs_f64();
    let since_first = stats.first_snapshot_at.map(|t| (end - t).as_secs_f64()).unwrap_or(0.0);
    rtts.sort_by(f64::total_cmp);
    let mut report = json!({
        "joined": client.welcome().is_some(),
        "reason": failure.as_ref().map(|why| why.reason.clone())
            .or_else(|| redialer.gave_up().then(|| crate::setup::RedialNote::GaveUp.to_string())),
        "url": url,
        "join_ms": stats.first_snapshot_at.map(|t| t.as_secs_f64() * 1000.0),
        "welcome_ms": stats.welcomed_at.map(|t| t.as_secs_f64() * 1000.0),
        "snapshots": stats.snapshots,
        "snapshots_per_s": if since_first > 0.0 { stats.snapshots as f64 / since_first } else { 0.0 },
        "snapshot_format": client.welcome().map(|w| w.snapshot_format),
        "delta_frames": stats.delta_frames,
        "keyframes": stats.keyframes,
        "missing_baselines": stats.missing_baselines,
        "bytes_in_per_s": stats.bytes_in as f64 / wall,
        "bytes_out_per_s": stats.bytes_out as f64 / wall,
        "rtt_ms_p50": rtts.get(rtts.len() / 2),
        "host_path": host_path.map(vimp_netcode::transport::LinkPath::as_str),
        "player_id": client.welcome().map(|w| w.player_id),
        "nickname": client.welcome().map(|w| w.nickname.clone()),
        "score": score,
        "chat": client.chat(),
        "close_code": client.closed().map(|c| c.0),
        "migrations": stats.migrations,
        "snapshots_after_host_change": (stats.migrations > 0).then(|| stats.snapshots - snapshots_at_change),
        "host_epoch": stats.host_epoch,
        "resume_ms": stats.resume.map(|d| d.as_secs_f64() * 1000.0),
        "freeze_ms": stats.freeze.map(|d| d.as_secs_f64() * 1000.0),
        "host_timeout_ms": client.host_timeout().as_secs_f64() * 1000.0,
        "peer_frames_refused": stats.peer_frames_refused,
        "reconnects": redialer.history,
        "said": said_lines,
        "corrections": args.predict.then_some(predicting.corrections.len()),
        "correction_snaps": args.predict.then_some(predicting.snaps),
        "correction_p99": args.predict.then(|| percentile(&predicting.corrections, 0.99)),
        "correction_p50": args.predict.then(|| percentile(&predicting.corrections, 0.5)),
        "reconnect_gave_up": redialer.gave_up(),
        "resumed": client.welcome().map(|w| w.resumed),
        "rewind_ms": stats.rewind_ms,
        "promoted_at_tick": promoted.map(|(tick, _)| tick),
        "shadow_checkpoints": node.checkpoints(),
        "shadow_mismatches": node.mismatches(),
        "shadow_errors": node.errors(),
    });
    // Asking the room before a claim (one `json!` holds only so many fields).
    report["host_checks"] = json!(stats.host_checks);
    report["takeovers_held"] = json!(stats.takeovers_held);
    report["host_checks_answered"] = json!(stats.host_checks_answered);
    report["witness_answers"] = json!(stats.witness_answers);
    report["claims_dialed"] = json!(stats.claims_dialed);
    report["hellos_ahead"] = json!(stats.hellos_ahead);
    report["join_phases_ms"] = watch.phases_ms(&stats);
    report["snapshot_gap_ms_p50"] = json!(watch.gap_ms(0.5));
    report["snapshot_gap_ms_p99"] = json!(watch.gap_ms(0.99));
    report["snapshot_gap_ms_max"] = json!(watch.gap_ms(1.0));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(match (client.closed(), failure) {
        (_, Some(why)) => why.code,
        (Some((code, _)), _) if *code != close::NORMAL => 1,
        _ if redialer.gave_up() => 1,
        _ if client.welcome().is_none() => 1,
        _ => 0,
    })
}

/// A join's phases and the host's snapshots' arrivals, as the join's loop sees them (its turns
/// are about a millisecond apart).
#[derive(Debug, Default)]
struct JoinWatch {
    /// When the ICE servers were in (the rendezvous's list, `GET /ice`).
    ice_servers: Option<Duration>,
    /// When the signalling server's id came (its websocket is up).
    id_assigned: Option<Duration>,
    /// When the first peer's data channels were all open (alone in a room with the host: the
    /// host's link).
    first_link: Option<Duration>,
    /// Snapshots decoded so far, and when the newest came.
    snapshots: u64,
    last_snapshot: Option<Duration>,
    /// The gaps between consecutive snapshots' arrivals, after the first.
    gaps_ms: Vec<f32>,
}

impl JoinWatch {
    /// Notes what changed since the last turn.
    fn turn(&mut self, now: Duration, id_assigned: bool, linked: bool, snapshots: u64) {
        if id_assigned {
            self.id_assigned.get_or_insert(now);
        }
        if linked {
            self.first_link.get_or_insert(now);
        }
        if snapshots > self.snapshots {
            if let Some(last) = self.last_snapshot {
                self.gaps_ms.push(now.saturating_sub(last).as_micros() as f32 / 1000.0);
            }
            // Two or more in one turn came together.
            let together = snapshots - self.snapshots - 1;
            self.gaps_ms.extend((0..together).map(|_| 0.0));
            self.snapshots = snapshots;
            self.last_snapshot = Some(now);
        }
    }

    /// The `q` quantile of the gaps (`1.0` is the longest), `None` before two snapshots.
    fn gap_ms(&self, q: f64) -> Option<f32> {
        (!self.gaps_ms.is_empty()).then(|| percentile(&self.gaps_ms, q))
    }

    /// Milliseconds from the start of the join to the end of each phase: the ICE servers'
    /// list, the signalling server's id, the first peer link (offer and answer, ICE, DTLS,
    /// SCTP), the host's welcome, the first snapshot.
    fn phases_ms(&self, stats: &vimp_netcode::client::ClientStats) -> serde_json::Value {
        let ms = |t: Option<Duration>| t.map(|t| t.as_secs_f64() * 1000.0);
        json!({
            "ice_servers": ms(self.ice_servers),
            "id_assigned": ms(self.id_assigned),
            "link": ms(self.first_link),
            "welcome": ms(stats.welcomed_at),
            "first_snapshot": ms(stats.first_snapshot_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_gaps_are_counted_between_arrivals_after_the_first() {
        let ms = Duration::from_millis;
        let mut watch = JoinWatch { ice_servers: Some(ms(4)), ..JoinWatch::default() };
        watch.turn(ms(10), true, false, 0);
        watch.turn(ms(300), true, true, 0);
        assert_eq!(watch.gap_ms(1.0), None, "no gap before two snapshots");
        watch.turn(ms(400), true, true, 1);
        watch.turn(ms(450), true, true, 2);
        // Two in one turn: the second came with the first.
        watch.turn(ms(650), true, true, 4);
        assert_eq!(watch.gaps_ms, vec![50.0, 200.0, 0.0]);
        assert_eq!(watch.gap_ms(1.0), Some(200.0));
        let phases = watch.phases_ms(&Default::default());
        assert_eq!(phases["ice_servers"], json!(4.0));
        assert_eq!(phases["id_assigned"], json!(10.0));
        assert_eq!(phases["link"], json!(300.0));
    }
}
