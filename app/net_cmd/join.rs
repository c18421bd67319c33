//! `vimp join`: a match joined by lobby code or room URL, headless (the window joins through
//! its node thread): the client drives bot inputs, takes the match over when its turn comes,
//! and prints its figures.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use vimp_host::PlayerId;
use vimp_host::engine::game::Game;
use vimp_host::engine::node::{Node, RoleChange};
use vimp_netcode::client::{ClientChange, ClientCore};
use vimp_netcode::input::KeyAction;
use vimp_netcode::lobby::JoinTarget;
use vimp_netcode::session::{Hello, close};
use vimp_netcode::signal::IceServer;
use vimp_netcode::transport::webrtc::{RoomPlace, WebRtcTransport};
use vimp_netcode::transport::{LinkPath, Transport};

use crate::home_room::{HomeRoom, RoomFollower};
use crate::setup::{DEFAULT_SIGNAL, IceArgs, JoinFailure, Redialer, UNREACHABLE, Witnesser, client_config, linger};

/// Says how friends join the room this process serves: on stdout, or with `--json` (whose
/// stdout is the report alone) on stderr.
fn say_invite(args: &JoinArgs, url: &str) {
    if args.json {
        eprintln!("friends join with: vimp join {url}");
    } else {
        println!("friends join with: vimp join {url}");
    }
}

/// How long a leaving player waits for the answers to its round reports still on their way.
const REPORTS_WAIT: Duration = Duration::from_secs(10);

/// The `--help` heading of the flags a headless run takes (tests, measurements, bots).
const HEADLESS: &str = "Headless runs (tests, measurements; with --headless)";

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
    /// Headless: the snapshot format to ask the host for: 6 (delta frames against the last frame this
    /// client acknowledged) or 5 (every frame whole, as an older client gets).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u8).range(5..=6), requires = "headless", help_heading = HEADLESS)]
    pub snapshot_format: u8,
    /// Headless: leave after this many seconds.
    #[arg(long, default_value_t = 10.0, requires = "headless", help_heading = HEADLESS)]
    pub seconds: f64,
    /// Headless: give up when the host has not welcomed us after this many seconds, saying why: exit code
    /// 4 when there is no host in the room (or it did not welcome us), 5 when there is one but
    /// no network path to it was found (3: the signalling server could not be reached; 6: the
    /// host refused us, and said why).
    #[arg(long, value_name = "SECONDS", default_value_t = 15.0, requires = "headless", help_heading = HEADLESS)]
    pub join_timeout: f64,
    /// Headless: a chat line to say once joined, or a chat command (`/spectate`, `/w name
    /// text`, `/help`).
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub say: Option<String>,
    /// Headless: seconds after the welcome to wait before saying it (so friends joining
    /// meanwhile hear it).
    #[arg(long, default_value_t = 3.0, requires = "headless", help_heading = HEADLESS)]
    pub say_after: f64,
    /// The longest the host may stay silent (nothing on either channel) before it counts as
    /// lost and the successors take over, ms; a link that has shown itself steady is judged
    /// sooner (three times its longest gap between the host's frames over the last 10 s, at
    /// least 150 ms).
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub host_timeout: u64,
    /// Headless: call the `@changeHost` vote this many seconds after the welcome (or as soon
    /// after as the host lists this player as a successor).
    #[arg(long, value_name = "S", requires = "headless", help_heading = HEADLESS)]
    pub call_change_host: Option<f64>,
    /// Headless: how to answer a `@changeHost` vote someone else called (unanswered by default).
    #[arg(long, value_name = "yes|no", value_parser = ["yes", "no"], requires = "headless")]
    pub change_host_answer: Option<String>,
    /// Headless: print the figures as JSON when leaving.
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub json: bool,
    /// Headless: a file that keeps this player's session token: read when joining (back to
    /// the slot it names, its team and score, if the host kept it: 5 minutes after a drop),
    /// written once welcomed. A client killed and started again with it is back in its slot.
    #[arg(long, value_name = "FILE", requires = "headless", help_heading = HEADLESS)]
    pub token_file: Option<PathBuf>,
    /// Headless: predict the player's own tank as the window does (the game's prediction on
    /// the host's sim code) and report its corrections: how far each frame from the host moved it.
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub predict: bool,
    /// Headless: say a numbered chat line (`NICK #N`) every this many seconds after the welcome.
    #[arg(long, value_name = "S", requires = "headless", help_heading = HEADLESS)]
    pub say_every: Option<f64>,
    /// Headless: do not dial the match again after a drop (by default: at once, then 2, 10
    /// and 30 s after each failed attempt, with the slot's token).
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub no_reconnect: bool,
    /// Headless: after taking over a match whose host served the room, do not ask the home
    /// router to open ports for it.
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub no_port_mapping: bool,
    /// Headless: never answer the room's check before a takeover, and say so in the hello,
    /// as a client of another make may: a member that is no voter (for soaks and tests of a
    /// room with a silent member).
    #[arg(long, requires = "headless", help_heading = HEADLESS)]
    pub no_host_checks: bool,
    /// The player's identity: an Ed25519 key pair, made on first use, for which the
    /// rendezvous registers the nickname and hands out the tokens a host checks. The window
    /// uses `identity.json` beside the settings by default; a headless player plays
    /// unverified unless given one.
    #[arg(long, value_name = "FILE", conflicts_with = "unverified")]
    pub identity: Option<PathBuf>,
    /// Play unverified: ask the rendezvous for no token.
    #[arg(long)]
    pub unverified: bool,
    /// ICE servers for the WebRTC links.
    #[command(flatten)]
    pub ice: IceArgs,
    /// In the window: render frames and save a picture.
    #[command(flatten)]
    pub capture: crate::setup::CaptureArgs,
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
/// Joins a match by code or URL; a headless client drives bot inputs and reports figures.
pub fn join(args: &JoinArgs, game: &Game) -> anyhow::Result<i32> {
    let mut run = JoinRun::dial(args, game)?;
    let failure = loop {
        let now = run.start.elapsed();
        match run.turn(now) {
            Turn::GoOn => {}
            Turn::End(failure) => break failure,
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    run.finish(failure)
}

/// How a turn of the join's loop ended.
enum Turn {
    /// The run goes on.
    GoOn,
    /// The run is over (out of time, closed, given up), or the client could not get in and
    /// says why.
    End(Option<JoinFailure>),
}

/// A headless join while it runs: the node and what dials it, and what the player did.
struct JoinRun<'a> {
    args: &'a JoinArgs,
    start: Instant,
    /// The room's URL, and its signalling server's.
    url: String,
    signal: String,
    /// The ICE servers of the flags, and the list in use with when it came (the rendezvous's
    /// added once fetched): for `join_phases_ms` and for dialing again.
    known: Vec<IceServer>,
    ice: Arc<OnceLock<(Vec<IceServer>, Duration)>>,
    node: Node<Box<dyn Transport>>,
    redialer: Redialer,
    witness: Option<Witnesser>,
    watch: JoinWatch,
    player: Player,
    /// The player's tokens from the rendezvous (none: it plays unverified).
    tokens: Option<vimp_netcode::identity::TokenSource>,
    /// Once it hosts a match whose tokens are checked, the players' places in the top.
    places: Option<crate::setup::Places>,
    /// Where the room is: its transports follow it to a host that serves it.
    follower: RoomFollower,
    /// The room this process serves, once it took over a match whose host served it.
    home: Option<HomeRoom>,
    /// Whether anyone else is in the room, asked as soon as the socket is in it.
    empty: crate::setup::EmptyRoom,
}

/// What the headless player did and saw in the match.
#[derive(Default)]
struct Player {
    token_written: Option<vimp_netcode::session::SessionToken>,
    predicting: Predicting,
    said_lines: Vec<String>,
    said: bool,
    next_say: Option<Duration>,
    promoted: Option<(u32, u32)>,
    said_shadow: bool,
    snapshots_at_change: u64,
    rtts: Vec<f64>,
    next_sample: Duration,
    score: Option<i64>,
    held: Option<&'static str>,
    called: bool,
    seen_vote: u32,
    said_passed: bool,
    host_path: Option<LinkPath>,
    /// The nickname the rendezvous's token names, once one went to the host.
    verified_as: Option<String>,
    /// Why the player plays unverified, when it does.
    unverified: Option<String>,
    /// The round reports it sent, with what the rendezvous said (or why not).
    rounds: Vec<serde_json::Value>,
    /// Its place in the global top, as the host said last (`ACCOLADES_DATA`).
    place: Option<u64>,
}

impl<'a> JoinRun<'a> {
    /// Dials the room: the ICE list's fetch runs while the websocket connects (no handshake
    /// starts before it is in), and the join's clock counts it.
    fn dial(args: &'a JoinArgs, game: &Game) -> anyhow::Result<JoinRun<'a>> {
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
        let start = Instant::now();
        let (known, fetch_list) = args.ice.fetching(&signal)?;
        let ice: Arc<OnceLock<(Vec<IceServer>, Duration)>> = Arc::default();
        let fetch = {
            let (fetch_list, ice) = (fetch_list.clone(), ice.clone());
            move |keyed: &str| {
                let list = fetch_list(keyed);
                // The first list and when it came, for the join's phases.
                let _ = ice.set((list.clone(), start.elapsed()));
                list
            }
        };
        let place = RoomPlace::new();
        let transport: Box<dyn Transport> =
            Box::new(WebRtcTransport::connect_fetching_in(&place, &url, &known, fetch)?);
        let witness = Witnesser::new(&url);
        let config = match witness {
            Some(_) => Witnesser::config(client_config(args.host_timeout)),
            None => client_config(args.host_timeout),
        };
        let tokens = if args.spectate || (args.headless && args.identity.is_none()) {
            None
        } else {
            let identity = args.identity.as_deref();
            crate::setup::token_source(&signal, &target.code(), identity, &hello.nickname, args.unverified)
        };
        let node = Node::playing(*game, transport, ClientCore::new(hello, config));
        let (dial_url, dial_known, dial_place) = (url.clone(), known.clone(), place.clone());
        let redialer = Redialer::new(Box::new(move || {
            // A fresh list each time: minted TURN credentials are for this socket's key.
            let fetch = fetch_list.clone();
            let fetch = move |keyed: &str| fetch(keyed);
            Ok(Box::new(WebRtcTransport::connect_fetching_in(&dial_place, &dial_url, &dial_known, fetch)?)
                as Box<dyn Transport>)
        }));
        let empty = crate::setup::EmptyRoom::new(&signal, &url);
        Ok(JoinRun {
            follower: RoomFollower::new(place, &url),
            args,
            start,
            url,
            signal,
            known,
            ice,
            node,
            redialer,
            witness,
            watch: JoinWatch::default(),
            player: Player::default(),
            tokens,
            places: None,
            home: None,
            empty,
        })
    }

    /// One turn at `now`: the node and its changes, dialing again, the rendezvous's word,
    /// getting in, then what the player does and reads.
    fn turn(&mut self, now: Duration) -> Turn {
        let args = self.args;
        if self.watch.ice_servers.is_none() {
            self.watch.ice_servers = self.ice.get().map(|(_, at)| *at);
        }
        let node = &mut self.node;
        node.update(now);
        if let Some(client) = node.client() {
            let id_assigned = node.transport().local_id().is_some();
            self.watch.turn(now, id_assigned, client.linked_peers() > 0, client.stats().snapshots);
        }
        while let Some(change) = node.poll_change() {
            eprintln!("{change}");
            if let RoleChange::Promoted { tick, epoch, .. } = change {
                self.player.promoted = Some((tick, epoch));
                // The host it took over from served the room: this process serves it now.
                let served = node.client().and_then(ClientCore::room).is_some_and(|(_, invite)| invite.served);
                if served && self.home.is_none() {
                    self.home = HomeRoom::take_over(&mut self.follower, !args.no_port_mapping);
                    if let Some(home) = &self.home {
                        say_invite(args, &home.best_url());
                    }
                }
            }
        }
        // Stepped down (a rival claimant won, or the players voted this host away): the room is
        // the new host's to serve; the router forwards nothing here any more.
        if self.home.is_some() && !node.is_hosting() {
            self.home = None;
            eprintln!("no longer serving the room here: it follows its new host");
        }
        if let Some(home) = self.home.as_mut() {
            if let Some(said) = home.turn(self.follower.place()) {
                eprintln!("{}", said.unwrap_or_else(|e| e));
                say_invite(args, &home.best_url());
            }
            if let Some(server) = node.server_mut() {
                server.set_room(Some(home.invite().clone()));
            }
        }
        if node.server().is_none()
            && let Some(client) = node.client()
            && let Some((invite, true)) = self.follower.turn(client, self.witness.as_mut())
        {
            let at = invite.public.as_deref().or(invite.lan.as_deref()).unwrap_or_default();
            eprintln!("the room moved to the new host's rendezvous: {at}");
            // The new invite, where the first one was said.
            if !at.is_empty() {
                say_invite(args, at);
            }
        }
        if !args.no_reconnect {
            for note in self.redialer.turn(node, now) {
                eprintln!("{note}");
            }
        }
        if let Some(witness) = self.witness.as_mut() {
            witness.turn(node);
        }
        // Hosting after a takeover from a host that checked tokens: its players' places too.
        if let Some(server) = node.server_mut() {
            crate::setup::Places::turn_lazily(&mut self.places, Some(&self.signal), server);
        }
        let (checkpoints, transport_failure) = (node.checkpoints(), node.transport().failure());
        let in_room = node.transport().local_id().is_some();
        let host_path = node.client().and_then(ClientCore::host_peer).and_then(|h| node.transport().path(h));
        let client = node.client_mut().expect("a player's node has its client");
        while let Some(change) = client.poll_event() {
            eprintln!("{change}");
            if let ClientChange::HostChanged { .. } = change {
                self.player.snapshots_at_change = client.stats().snapshots;
            }
        }
        // At least one: under load two can come in between two turns of this loop.
        if checkpoints >= 1 && !self.player.said_shadow {
            self.player.said_shadow = true;
            eprintln!("shadowing the host (first checkpoint in)");
        }
        let servers = self.ice.get().map_or(&self.known, |(list, _)| list);
        // A room with nobody else in it is said at once: a wrong code.
        let empty = if client.welcome().is_none() { self.empty.turn(in_room, client.linked_peers()) } else { None };
        if let Some(why) =
            empty.or_else(|| getting_in(args, client, transport_failure, (&self.signal, &self.url, servers), now))
        {
            eprintln!("vimp join: {}", why.reason);
            return Turn::End(Some(why));
        }
        self.player.keep_token(args, client);
        // A drop is dialed back (until every attempt failed); any other close is the end.
        let redialing = self.redialer.state().is_some() && !self.redialer.gave_up();
        if (client.closed().is_some() && !redialing) || self.redialer.gave_up() || now.as_secs_f64() >= args.seconds {
            return Turn::End(None);
        }
        if let Some(tokens) = self.tokens.as_mut()
            && client.welcome().is_some()
            && let Some(event) = tokens.poll()
        {
            match event {
                vimp_netcode::identity::TokenEvent::Token(t) => {
                    crate::setup::send_token(client, tokens, &t.token);
                    if self.player.verified_as.replace(t.nickname.clone()).is_none() {
                        eprintln!("token sent to the host: {} (registered at the rendezvous)", t.nickname);
                    }
                }
                vimp_netcode::identity::TokenEvent::Unverified(why) => {
                    eprintln!("playing unverified: {why}");
                    self.player.unverified = Some(why);
                }
                vimp_netcode::identity::TokenEvent::Reported { round, answer } => self.player.reported(round, answer),
            }
        }
        // A round's end: this player's signed copy of what its scoreboard showed, to the top.
        if let Some(tokens) = self.tokens.as_mut() {
            for why in crate::setup::report_rounds(client, tokens) {
                self.player.rounds.push(json!({ "error": why }));
            }
        }
        if client.welcome().is_some() {
            self.player.talk(args, client, now);
            self.player.vote(args, client);
            self.player.drive(client, now);
        }
        self.player.read(args, client, host_path, now);
        Turn::GoOn
    }

    /// Leaves (handing the match on if this process hosts it now), prints the figures and
    /// gives the exit code.
    fn finish(mut self, failure: Option<JoinFailure>) -> anyhow::Result<i32> {
        let end = self.start.elapsed();
        let node = &mut self.node;
        if node.hand_off(end) {
            eprintln!("handed the match on");
            crate::setup::await_successor(node, || self.start.elapsed());
        }
        node.leave(end);
        // Round reports on their way get their answers (a few seconds at most).
        if let Some(tokens) = self.tokens.as_mut() {
            let deadline = Instant::now() + REPORTS_WAIT;
            while let Some(event) = tokens.wait_report(deadline.saturating_duration_since(Instant::now())) {
                if let vimp_netcode::identity::TokenEvent::Reported { round, answer } = event {
                    self.player.reported(round, answer);
                }
            }
        }
        if node.client().is_some_and(|c| c.welcome().is_some() && c.closed().is_none()) {
            // The close frame on its way, the links still open: the host sees a player who
            // left, not one whose link dropped.
            linger();
        }
        let report = self.report(end, failure.as_ref());
        if self.args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            let chat: Vec<String> =
                self.node.client().map(|c| c.chat().iter().map(chat_words).collect()).unwrap_or_default();
            for line in plain_lines(&report, &chat) {
                println!("{line}");
            }
        }
        let client = self.node.client().expect("a player's node has its client");
        Ok(match (client.closed(), failure) {
            (_, Some(why)) => why.code,
            (Some((code, _)), _) if *code != close::NORMAL => 1,
            _ if self.redialer.gave_up() => 1,
            _ if client.welcome().is_none() => 1,
            _ => 0,
        })
    }

    /// The figures `vimp join` prints (`docs/cli.md` says what each means).
    fn report(&mut self, end: Duration, failure: Option<&JoinFailure>) -> serde_json::Value {
        let (node, redialer, player, args) = (&self.node, &self.redialer, &mut self.player, self.args);
        let client = node.client().expect("a player's node has its client");
        let stats = client.stats();
        let wall = end.as_secs_f64();
        let since_first = stats.first_snapshot_at.map(|t| (end - t).as_secs_f64()).unwrap_or(0.0);
        player.rtts.sort_by(f64::total_cmp);
        let predicting = &player.predicting;
        let identity =
            json!({ "verified_as": player.verified_as.clone(), "unverified_reason": player.unverified.clone() });
        let mut report = json!({
            "joined": client.welcome().is_some(),
            "reason": failure.map(|why| why.reason.clone())
                .or_else(|| redialer.gave_up().then(|| crate::setup::RedialNote::GaveUp.to_string())),
            "url": self.url,
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
            "rtt_ms_p50": player.rtts.get(player.rtts.len() / 2),
            "host_path": player.host_path.map(LinkPath::as_str),
            "player_id": client.welcome().map(|w| w.player_id),
            "nickname": client.welcome().map(|w| w.nickname.clone()),
            "score": player.score,
            "chat": client.chat(),
            "close_code": client.closed().map(|c| c.0),
            "migrations": stats.migrations,
            "snapshots_after_host_change": (stats.migrations > 0).then(|| stats.snapshots - player.snapshots_at_change),
            "host_epoch": stats.host_epoch,
            "resume_ms": stats.resume.map(|d| d.as_secs_f64() * 1000.0),
            "freeze_ms": stats.freeze.map(|d| d.as_secs_f64() * 1000.0),
            "host_timeout_ms": client.host_timeout().as_secs_f64() * 1000.0,
            "peer_frames_refused": stats.peer_frames_refused,
            "reconnects": redialer.history,
            "said": player.said_lines,
            "corrections": args.predict.then_some(predicting.corrections.len()),
            "correction_snaps": args.predict.then_some(predicting.snaps),
            "correction_p99": args.predict.then(|| percentile(&predicting.corrections, 0.99)),
            "correction_p50": args.predict.then(|| percentile(&predicting.corrections, 0.5)),
            "reconnect_gave_up": redialer.gave_up(),
            "resumed": client.welcome().map(|w| w.resumed),
            "rewind_ms": stats.rewind_ms,
            "promoted_at_tick": player.promoted.map(|(tick, _)| tick),
            "shadow_checkpoints": node.checkpoints(),
            "shadow_mismatches": node.mismatches(),
            "shadow_errors": node.errors(),
        });
        // Asking the room before a claim (one `json!` holds only so many fields).
        report["verified_as"] = identity["verified_as"].clone();
        report["unverified_reason"] = identity["unverified_reason"].clone();
        report["rounds_reported"] = json!(player.rounds);
        report["place"] = json!(player.place);
        report["host_checks"] = json!(stats.host_checks);
        report["takeovers_held"] = json!(stats.takeovers_held);
        report["host_checks_answered"] = json!(stats.host_checks_answered);
        report["witness_answers"] = json!(stats.witness_answers);
        report["claims_dialed"] = json!(stats.claims_dialed);
        report["hellos_ahead"] = json!(stats.hellos_ahead);
        report["join_phases_ms"] = self.watch.phases_ms(stats);
        report["snapshot_gap_ms_p50"] = json!(self.watch.gap_ms(0.5));
        report["snapshot_gap_ms_p99"] = json!(self.watch.gap_ms(0.99));
        report["snapshot_gap_ms_max"] = json!(self.watch.gap_ms(1.0));
        report
    }
}

/// A chat line as a player reads it: `alice: hi`, `alice → bob: hi` (a whisper), or the
/// engine's words for a system line (`alice joined`).
fn chat_words(line: &serde_json::Value) -> String {
    use vimp_netcode::meta::ChatMessage;
    match ChatMessage::from_json(line.clone()) {
        Ok(ChatMessage::User { text, author, .. }) => format!("{author}: {text}"),
        Ok(ChatMessage::Personal { text, author, to, .. }) => format!("{author} → {to}: {text}"),
        Ok(system) => crate::window::net::system_text(&system),
        Err(_) => line.to_string(),
    }
}

/// What `vimp join --headless` prints without `--json`: plain lines from its report, and the
/// chat (`chat`, already in words).
fn plain_lines(r: &serde_json::Value, chat: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let ms = |key: &str| r[key].as_f64().map(|v| format!("{v:.0} ms"));
    if r["joined"] == true {
        let nickname = r["nickname"].as_str().unwrap_or("player");
        let path = match r["host_path"].as_str() {
            Some("direct") => ", directly",
            Some("reflexive") => ", through a NAT",
            Some("relayed") => ", relayed by a TURN server",
            _ => "",
        };
        let took = ms("join_ms").map_or_else(String::new, |t| format!(" in {t}"));
        lines.push(format!("joined {} as {nickname}{took}{path}", r["url"].as_str().unwrap_or_default()));
        let rtt = ms("rtt_ms_p50").map_or_else(String::new, |t| format!(", a round trip of {t}"));
        let score = r["score"].as_i64().map_or_else(String::new, |s| format!(", score {s}"));
        let per_s = r["snapshots_per_s"].as_f64().unwrap_or(0.0);
        lines.push(format!("{} snapshots ({per_s:.1} a second){rtt}{score}", r["snapshots"]));
        if let Some(n) = r["migrations"].as_u64().filter(|n| *n > 0) {
            let freeze = ms("freeze_ms").map_or_else(String::new, |t| format!("; play froze {t}"));
            lines.push(format!("the host changed {n} time(s){freeze}"));
        }
        if let Some(tick) = r["promoted_at_tick"].as_u64() {
            lines.push(format!("this player took the match over at tick {tick}"));
        }
    } else {
        lines.push(format!("did not get in: {}", r["reason"].as_str().unwrap_or("no host welcomed this player")));
    }
    if let Some(name) = r["verified_as"].as_str() {
        let place = r["place"].as_u64().map_or_else(String::new, |p| format!(", #{p} in the top"));
        lines.push(format!("verified as {name}{place}"));
    }
    if !chat.is_empty() {
        lines.push("chat:".to_owned());
        lines.extend(chat.iter().map(|l| format!("  {l}")));
    }
    lines
}

/// Whether a client not in yet has failed to get in, and why: the signalling server lost,
/// out of time (`--join-timeout`, or `--seconds` first), or refused by the host.
fn getting_in(
    args: &JoinArgs,
    client: &ClientCore,
    transport_failure: Option<String>,
    (signal, url, servers): (&str, &str, &[IceServer]),
    now: Duration,
) -> Option<JoinFailure> {
    if client.welcome().is_some() {
        return None;
    }
    if let Some((code, reason)) = client.closed() {
        return Some(JoinFailure::refused(*code, reason));
    }
    match transport_failure {
        Some(reason) => Some(JoinFailure { code: UNREACHABLE, reason }),
        None if now.as_secs_f64() >= args.join_timeout.min(args.seconds) => {
            Some(JoinFailure::diagnose(signal, url, servers, client.linked_peers(), now.as_secs_f64()))
        }
        None => None,
    }
}

impl Player {
    /// What the rendezvous said of one of its round reports: said, and kept for the figures.
    fn reported(&mut self, round: String, answer: Result<vimp_netcode::identity::ReportAnswer, String>) {
        eprintln!("{}", crate::setup::report_line(&round, &answer));
        self.rounds.push(match answer {
            Ok(a) => json!({ "id": round, "signed": a.signed, "needed": a.needed, "recorded": a.recorded }),
            Err(why) => json!({ "id": round, "error": why }),
        });
    }

    /// Keeps the session token in `--token-file` once welcomed (a player's, not a spectator's).
    fn keep_token(&mut self, args: &JoinArgs, client: &ClientCore) {
        if let (Some(path), Some(w)) = (&args.token_file, client.welcome())
            && self.token_written != Some(w.token)
            && !w.spectator
        {
            self.token_written = Some(w.token);
            if let Err(e) = write_token(path, w.token) {
                eprintln!("vimp join: cannot keep the session token in {}: {e}", path.display());
            }
        }
    }

    /// `--say` once, `--say-after` seconds after the welcome, and a numbered line every
    /// `--say-every` seconds.
    fn talk(&mut self, args: &JoinArgs, client: &mut ClientCore, now: Duration) {
        let since_welcome = client.stats().welcomed_at.map_or(Duration::ZERO, |t| now.saturating_sub(t));
        if !self.said
            && since_welcome.as_secs_f64() >= args.say_after
            && let Some(text) = &args.say
        {
            client.say(text);
            self.said_lines.push(text.clone());
            self.said = true;
        }
        if let Some(every) = args.say_every.filter(|s| *s > 0.0) {
            let due = *self.next_say.get_or_insert(now + Duration::from_secs_f64(every));
            if now >= due {
                self.next_say = Some(due + Duration::from_secs_f64(every));
                let nick = client.welcome().map_or("player", |w| w.nickname.as_str());
                let line = format!("{nick} #{}", self.said_lines.len() + 1);
                client.say(&line);
                self.said_lines.push(line);
            }
        }
        if let Some(after) = args.call_change_host
            && !self.called
            && since_welcome.as_secs_f64() >= after
            && client.may_call_change_host()
        {
            self.called = true;
            if let Some(id) = client.call_change_host() {
                eprintln!("called the @changeHost vote ({id:08x})");
            }
        }
    }

    /// The `@changeHost` vote under way: says how it stands, answers it with
    /// `--change-host-answer`.
    fn vote(&mut self, args: &JoinArgs, client: &mut ClientCore) {
        let Some(vote) = client.host_vote() else { return };
        if vote.id != self.seen_vote {
            self.seen_vote = vote.id;
            eprintln!("@changeHost vote {:08x}: {} of {} say yes", vote.id, vote.yes, vote.electorate);
        }
        if vote.answer.is_none()
            && let Some(answer) = &args.change_host_answer
            && client.answer_change_host(answer == "yes")
        {
            eprintln!("answered the @changeHost vote: {answer}");
        }
        if vote.passed && !self.said_passed {
            self.said_passed = true;
            eprintln!("the @changeHost vote passed ({} of {})", vote.yes, vote.electorate);
        }
    }

    /// Bot inputs: a new key every 700 ms and a shot every 300 ms; a spectator switches the
    /// watched player every 2 s.
    fn drive(&mut self, client: &mut ClientCore, now: Duration) {
        if client.keyset() == Some(vimp_netcode::meta::Keyset::Spectator) {
            if now.as_millis() % 2000 < 2 {
                let seq = client.key(KeyAction::Down, "nextPlayer");
                self.predicting.key(seq, KeyAction::Down, "nextPlayer");
            }
            return;
        }
        let phase = now.as_millis() / 700;
        let keys = ["forward", "left", "forward", "right", "back", "gunLeft", "gunRight"];
        let want = keys[(phase % 7) as usize];
        if self.held != Some(want) {
            if let Some(old) = self.held {
                let seq = client.key(KeyAction::Up, old);
                self.predicting.key(seq, KeyAction::Up, old);
            }
            let seq = client.key(KeyAction::Down, want);
            self.predicting.key(seq, KeyAction::Down, want);
            self.held = Some(want);
        }
        if now.as_millis() % 300 < 2 {
            let seq = client.key(KeyAction::Down, "fire");
            self.predicting.key(seq, KeyAction::Down, "fire");
        }
    }

    /// What comes from the host: the link's path and round trip, the frames (predicted with
    /// `--predict`), the game's form, the score.
    fn read(&mut self, args: &JoinArgs, client: &mut ClientCore, host_path: Option<LinkPath>, now: Duration) {
        if let Some(path) = host_path
            && self.host_path != Some(path)
        {
            self.host_path = Some(path);
            eprintln!("the link to the host is {}", path.words());
        }
        if now >= self.next_sample {
            self.next_sample = now + Duration::from_secs(1);
            if let Some(rtt) = client.rtt_ms().filter(|r| *r > 0.0) {
                self.rtts.push(rtt);
            }
        }
        let meta = client.take_meta();
        if args.predict {
            self.predicting.turn(client, &meta, now);
        } else {
            let _ = client.take_frames();
        }
        for (port, payload) in meta {
            answer_form(client, port, &payload);
            if let (Ok(vimp_netcode::meta::MetaMessage::Accolades(room)), Some(w)) =
                (vimp_netcode::meta::MetaMessage::decode(port, &payload), client.welcome())
            {
                self.place = room.of(u32::from(w.player_id)).and_then(|a| a.place);
            }
            if port == vimp_netcode::meta::STAT_DATA
                && let (Ok(stat), Some(w)) = (serde_json::from_slice::<serde_json::Value>(&payload), client.welcome())
            {
                for row in stat[0].as_array().into_iter().flatten() {
                    if row[0] == w.player_id as u64 && row[2][2].is_number() {
                        self.score = row[2][2].as_i64();
                    }
                }
            }
        }
    }
}

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

/// The `q` quantile of `values` (0 when empty).
fn percentile(values: &[f32], q: f64) -> f32 {
    let mut v = values.to_vec();
    v.sort_by(f32::total_cmp);
    v.get(((v.len().saturating_sub(1)) as f64 * q).round() as usize).copied().unwrap_or(0.0)
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

    #[test]
    fn the_report_reads_as_plain_lines_and_chat_as_people_write_it() {
        let report = json!({
            "joined": true, "url": "ws://h:3536/K7MP2Q", "nickname": "ann", "join_ms": 412.3, "host_path": "reflexive",
            "snapshots": 300, "snapshots_per_s": 30.0, "rtt_ms_p50": 21.0, "score": 3, "migrations": 1,
            "freeze_ms": 180.4, "promoted_at_tick": null, "verified_as": null,
        });
        let chat = [json!(["hi", "bob", 2]), json!(["psst", "bob", 2, "ann"]), json!("s:1:bob")];
        let chat: Vec<String> = chat.iter().map(chat_words).collect();
        assert_eq!(chat, ["bob: hi", "bob → ann: psst", "bob joined"]);
        let lines = plain_lines(&report, &chat);
        assert_eq!(lines[0], "joined ws://h:3536/K7MP2Q as ann in 412 ms, through a NAT");
        assert_eq!(lines[1], "300 snapshots (30.0 a second), a round trip of 21 ms, score 3");
        assert_eq!(lines[2], "the host changed 1 time(s); play froze 180 ms");
        assert_eq!(&lines[3..], ["chat:", "  bob: hi", "  bob → ann: psst", "  bob joined"]);
        let refused = json!({ "joined": false, "reason": "no host in room K7M-P2Q: check the code" });
        assert_eq!(plain_lines(&refused, &[]), ["did not get in: no host in room K7M-P2Q: check the code"]);
    }
}
