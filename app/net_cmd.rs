//! `vimp host` and `vimp join`: a match over WebRTC, found by lobby code; headless here (the
//! window hosts and joins through its node thread).

mod join;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use vimp_host::PlayerId;
use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::node::{Node, RoleChange};
use vimp_host::engine::server::{PlayerLink, ServerConfig, ServerCore, ServerEvent, ServerStats};
use vimp_netcode::lobby::{LobbyCode, room_url};
use vimp_netcode::session::Hello;
use vimp_netcode::transport::Transport;
use vimp_netcode::transport::webrtc::{RoomPlace, WebRtcError, WebRtcTransport};

pub use join::{JoinArgs, join};

use crate::home_room::{HomeRoom, RoomFollower};
use crate::setup::{IceArgs, Redialer, Witnesser, client_config, linger, new_match};

/// What `vimp host` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The signalling server (`ws://HOST:PORT`); without it one is embedded, listening on `--bind`.
    #[arg(long, value_name = "URL")]
    pub signal: Option<String>,
    /// Where the embedded signalling server listens.
    #[arg(long, default_value = "0.0.0.0:3536")]
    pub bind: std::net::SocketAddr,
    /// Without --signal: do not ask the home router to open ports (UPnP, PCP, NAT-PMP); friends
    /// in other homes then reach this host only through ports forwarded by hand.
    #[arg(long)]
    pub no_port_mapping: bool,
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
    #[arg(long, default_value = "normal", value_parser = crate::setup::bot_skill)]
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
    /// Stop after this many seconds (default: run until stopped); with --headless.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Print the figures as JSON when stopping; with --headless.
    #[arg(long)]
    pub json: bool,
    /// The match seed (a random one by default).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How long a round lasts, seconds (the game's rules by default: 180).
    #[arg(long, value_name = "SECONDS", value_parser = round_seconds)]
    pub round_seconds: Option<f32>,
    /// ICE servers for the WebRTC links.
    #[command(flatten)]
    pub ice: IceArgs,
    /// In the window: render frames and save a picture.
    #[command(flatten)]
    pub capture: crate::setup::CaptureArgs,
}

/// A round's length: 1 second to a day.
fn round_seconds(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(s) if (1.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("{text:?} is not a round's length in seconds (1 to 86400)")),
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
    let mut run = HostRun::open(args, game)?;
    loop {
        let now = run.start.elapsed();
        if !run.turn(now) || args.seconds.is_some_and(|s| now.as_secs_f64() >= s) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    run.finish()
}

/// The transport a node runs over.
type Dial = Box<dyn Fn() -> anyhow::Result<Box<dyn Transport>>>;

/// A headless host while it runs: the node, what dials the room again, and what the report
/// says.
struct HostRun<'a> {
    args: &'a HostArgs,
    code: LobbyCode,
    url: String,
    start: Instant,
    cpu0: Option<f64>,
    node: Node<Box<dyn Transport>>,
    witness: Option<Witnesser>,
    /// A fresh socket to the room (to ask it whether the match went on without this host).
    dial: Dial,
    redialer: Redialer,
    /// The room this process serves (its rendezvous, the router's mappings, the invite), when
    /// no rendezvous was named; kept while the process runs, as a member too.
    home: Option<HomeRoom>,
    /// Where the room is: a successor that serves it moves every transport there.
    follower: RoomFollower,
    peak_peers: usize,
    /// Every player's link while it was there, last seen.
    links: BTreeMap<PlayerId, PlayerLink>,
    next_links: Duration,
    /// What this process last said of its place as a member (after stepping down): the epoch
    /// it was welcomed at and the code its client closed with, so each is said once.
    member_said: (Option<u32>, Option<u16>),
    /// What the JSON report says of the match, as of the last turn this process hosted it.
    stats: ServerStats,
    ticks: u32,
    /// Asking the room whether the match went on without this host (every player dropped):
    /// first the rendezvous, then the room itself.
    rechecking: bool,
    asking_room: Option<std::sync::mpsc::Receiver<Option<bool>>>,
    /// The verified players' places in the top, from the rendezvous (not on a LAN).
    places: Option<crate::setup::Places>,
}

impl<'a> HostRun<'a> {
    /// Opens the match and its room, and says how friends join.
    fn open(args: &'a HostArgs, game: &Game) -> anyhow::Result<HostRun<'a>> {
        let code = match &args.code {
            Some(c) => LobbyCode::parse(c)?,
            None => LobbyCode::from_random(random_u64()),
        };
        // Without a rendezvous named, this process serves the room itself, and asks its
        // router to open it to other homes.
        let place = RoomPlace::new();
        let mut home = match &args.signal {
            Some(_) => None,
            None => Some(HomeRoom::open(code, args.bind, false, args.max_players, !args.no_port_mapping)?),
        };
        let signal_url = match (&args.signal, &home) {
            (Some(url), _) => url.trim_end_matches('/').to_owned(),
            (None, Some(home)) => home.signal(),
            (None, None) => unreachable!("a home room without a rendezvous named"),
        };
        let seed = args.seed.unwrap_or_else(random_u64);
        let (host, config) = new_match(game, &args.map, args.bots, args.bot_skill, seed, args.round_seconds)?;
        let vote_maps = crate::setup::load_vote_maps(&args.vote_maps)?;
        let url = room_url(&signal_url, &code);
        // A host that serves its room gathers no candidate from its own STUN responder: its
        // router's public address comes from the router.
        let (ice, fetch) = if home.is_some() {
            (args.ice.known()?, None)
        } else {
            let (known, fetch) = args.ice.fetching(&signal_url)?;
            (known, Some(fetch))
        };
        let connect = move |place: &RoomPlace, url: &str| -> Result<WebRtcTransport, WebRtcError> {
            match &fetch {
                Some(fetch) => {
                    let fetch = fetch.clone();
                    WebRtcTransport::connect_fetching_in(place, url, &ice, move |keyed: &str| fetch(keyed))
                }
                None => WebRtcTransport::connect_in(place, url, &ice),
            }
        };
        let transport: Box<dyn Transport> = Box::new(connect(&place, &url)?);
        let server_config = ServerConfig {
            match_id: format!("{code}-{seed:016x}"),
            max_players: args.max_players,
            password: args.password.clone(),
            client_config: (game.client_config)(&config),
            session: vimp_host::engine::server::session_config(&config.game),
            maps: vote_maps,
            // A rendezvous of one's own checks who players are; an embedded one (a LAN) does not.
            identities: args.signal.as_ref().and_then(|_| crate::setup::host_identities(&signal_url, &code)),
            ..ServerConfig::default()
        };
        // Unseated by a claim that holds the room (this host's line was cut, or it slept), it
        // stays in the room as a member that may take the match back.
        let member = Hello::new("host", env!("CARGO_PKG_VERSION"));
        let node = Node::hosting(*game, transport, ServerCore::new(host, server_config), None)
            .stays_as_member(member, Witnesser::config(client_config(500)));
        let (dial_url, dial_place) = (url.clone(), place.clone());
        let dial = move || -> anyhow::Result<Box<dyn Transport>> { Ok(Box::new(connect(&dial_place, &dial_url)?)) };
        // As a member, a hello nobody answered, or a link that dropped, is dialed again: the
        // links it had may have failed while this process slept.
        let redialer = Redialer::new(Box::new(dial.clone()));
        println!("lobby code: {}", code.grouped());
        if let Some(home) = home.as_mut() {
            // The router's answer (a few seconds at most) makes the invite.
            match home.wait(&place, Duration::from_secs(8)) {
                Some(Ok(said)) => eprintln!("{said}"),
                Some(Err(said)) => eprintln!("{said}"),
                None => {}
            }
            if let Some(lan) = &home.invite().lan {
                println!("on this network, friends join with: vimp join {lan}");
            }
            match &home.invite().public {
                Some(public) => println!("friends join with: vimp join {public}"),
                None if home.invite().lan.is_none() => println!("friends join with: vimp join {url}"),
                None => {}
            }
        } else {
            println!("friends join with: vimp join {url}");
        }
        Ok(HostRun {
            follower: RoomFollower::new(place.clone(), &url),
            args,
            code,
            witness: Witnesser::new(&url),
            url,
            start: Instant::now(),
            cpu0: cpu_seconds(),
            node,
            dial: Box::new(dial),
            redialer,
            home,
            peak_peers: 0,
            links: BTreeMap::new(),
            next_links: Duration::ZERO,
            member_said: (None, None),
            stats: ServerStats::default(),
            ticks: 0,
            rechecking: false,
            asking_room: None,
            places: args.signal.as_ref().map(|_| crate::setup::Places::new(&signal_url)),
        })
    }

    /// One turn at `now`; false once the match is handed to another host.
    fn turn(&mut self, now: Duration) -> bool {
        self.node.update(now);
        self.watch_server(now);
        if !self.follow_role_change() {
            return false;
        }
        self.ask_room(now);
        for note in self.redialer.turn(&mut self.node, now) {
            eprintln!("as a member: {note}");
        }
        self.say_membership();
        if let Some(witness) = self.witness.as_mut() {
            witness.turn(&mut self.node);
        }
        if let (Some(places), Some(server)) = (self.places.as_mut(), self.node.server_mut()) {
            places.turn(server);
        }
        self.keep_room();
        true
    }

    /// The room's whereabouts: while this process hosts and serves the room, its invite goes to
    /// every player; as a member, it follows the room to a host that serves it.
    fn keep_room(&mut self) {
        // Stepped down: the room is the new host's to serve. Hosting again a match whose host
        // served the room: this process serves it again.
        if self.home.is_some() && self.node.server().is_none() {
            self.home = None;
            eprintln!("no longer serving the room here: it follows its new host");
        }
        let me = self.node.transport().local_id();
        if self.home.is_none()
            && self.node.server().is_some()
            && self
                .node
                .client()
                .and_then(vimp_netcode::client::ClientCore::room)
                .is_some_and(|(host, invite)| invite.served && Some(host) != me)
        {
            self.home = HomeRoom::take_over(&mut self.follower, !self.args.no_port_mapping);
            if let Some(home) = &self.home {
                println!("friends join with: vimp join {}", home.best_url());
            }
        }
        if let Some(home) = self.home.as_mut() {
            match home.turn(self.follower.place()) {
                Some(Ok(said)) => {
                    eprintln!("{said}");
                    if let Some(public) = &home.invite().public {
                        println!("friends join with: vimp join {public}");
                    }
                }
                Some(Err(said)) => eprintln!("{said}"),
                None => {}
            }
            if let Some(server) = self.node.server_mut() {
                server.set_room(Some(home.invite().clone()));
            }
        }
        if self.node.server().is_none()
            && let Some(client) = self.node.client()
            && let Some((invite, true)) = self.follower.turn(client, self.witness.as_mut())
        {
            eprintln!(
                "the room moved to the new host's rendezvous: {}",
                invite.public.as_deref().or(invite.lan.as_deref()).unwrap_or_default()
            );
        }
    }

    /// While this process hosts: who joins and leaves, the figures, each player's link.
    fn watch_server(&mut self, now: Duration) {
        while let Some(event) = self.node.server_mut().and_then(ServerCore::poll_event) {
            // A better claim and a handoff are the node's changes of role.
            if let ServerEvent::Joined { .. } | ServerEvent::Left { .. } | ServerEvent::KeptTheMatch { .. } = event {
                eprintln!("{event}");
            }
        }
        let Some(server) = self.node.server() else { return };
        self.peak_peers = self.peak_peers.max(server.peer_count());
        (self.stats, self.ticks) = (server.stats(), server.host().tick());
        if now < self.next_links {
            return;
        }
        self.next_links = now + Duration::from_secs(1);
        for link in self.node.links() {
            let known =
                self.links.get(&link.player).is_some_and(|l| l.path == link.path && l.nickname == link.nickname);
            if let (Some(path), false) = (link.path, known) {
                eprintln!("the link to {} is {}", link.nickname, path.words());
            }
            self.links.insert(link.player, link);
        }
    }

    /// Says a change of this process's role; false when the players voted for another host
    /// (`@changeHost`), which has the match now.
    fn follow_role_change(&mut self) -> bool {
        match self.node.poll_change() {
            Some(change @ RoleChange::HandedOff { .. }) => {
                eprintln!("{change}");
                linger();
                return false;
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
        true
    }

    /// Every player's link dropped: the match may have gone on without this host (it slept,
    /// or its line was cut, for longer than its players' links lasted), with no link left to
    /// tell it so. It asks the room over a fresh socket; first the rendezvous: a room with
    /// nobody else in it holds no match that went on (the players' processes left: the usual
    /// end of a player's run).
    fn ask_room(&mut self, now: Duration) {
        if self.node.wants_recheck() {
            // Without a rendezvous to ask, the room is asked at once.
            self.asking_room = match (self.witness.as_ref(), self.node.transport().local_id()) {
                (Some(w), Some(me)) => Some(w.others_than(me)),
                _ => None,
            };
            if self.asking_room.is_none() {
                self.rechecking = self.recheck(now);
            }
        }
        let others = self.asking_room.as_ref().and_then(|rx| match rx.try_recv() {
            Ok(others) => Some(others),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Some(None),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
        });
        match others {
            None => {}
            Some(Some(false)) => {
                self.asking_room = None;
                eprintln!("every player's link dropped, and nobody else is in the room: hosting on");
            }
            Some(Some(true) | None) => {
                self.asking_room = None;
                self.rechecking = self.recheck(now);
            }
        }
        if self.rechecking && !self.node.is_rechecking() {
            self.rechecking = false;
            if self.node.is_hosting() {
                eprintln!("no other host in the room: hosting on");
            }
        }
    }

    /// Asks the room over a fresh socket whether the match went on without this host.
    fn recheck(&mut self, now: Duration) -> bool {
        match (self.dial)() {
            Ok(transport) => {
                eprintln!("every player's link dropped: asking the room whether the match went on without this host");
                self.node.recheck(transport, now)
            }
            Err(e) => {
                eprintln!("every player's link dropped, and the room cannot be asked again: {e}");
                false
            }
        }
    }

    /// As a member (after stepping down): says once each where it stands.
    fn say_membership(&mut self) {
        if self.node.server().is_some() {
            return;
        }
        let Some(client) = self.node.client() else { return };
        let now_member = (client.welcome().map(|w| w.epoch), client.closed().map(|(code, _)| *code));
        if now_member != self.member_said {
            match (now_member.0, client.closed()) {
                (_, Some((code, why))) => eprintln!("as a member: {why} ({code})"),
                (Some(epoch), None) => eprintln!("a member of the match at epoch {epoch}, ready to host it again"),
                (None, None) => {}
            }
            self.member_said = now_member;
        }
    }

    /// Leaves gracefully: the first successor gets the log, a final checkpoint and the
    /// handoff, and continues from this very tick (nothing to hand off unless this process
    /// hosts now). Then the figures, with `--json`.
    fn finish(mut self) -> anyhow::Result<i32> {
        if self.node.hand_off(self.start.elapsed()) {
            self.node.update(self.start.elapsed());
            if let Some(change) = self.node.poll_change() {
                eprintln!("{change}");
            }
            linger();
        }
        let wall = self.start.elapsed().as_secs_f64();
        let cpu = cpu_seconds().zip(self.cpu0).map(|(b, a)| b - a);
        let stats = &self.stats;
        if self.args.json {
            let report = json!({
                "code": self.code.as_str(),
                "url": self.url,
                "seconds": wall,
                "ticks": self.ticks,
                "peers_peak": self.peak_peers,
                "frames_sent": stats.frames_sent,
                "delta_frames_sent": stats.delta_frames_sent,
                "pack_errors": stats.pack_errors,
                "meta_refused": stats.meta_refused,
                "bytes_out_per_s": stats.bytes_out as f64 / wall,
                "bytes_in_per_s": stats.bytes_in as f64 / wall,
                "kicked": stats.kicked,
                "cpu_seconds": cpu,
                "cpu_percent": cpu.map(|c| 100.0 * c / wall),
                "links": self.links.values().map(|l| json!({
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
}
