//! `vimp signal`: runs the signalling server that introduces the peers of a lobby.
//!
//! Beside coturn on one machine, the two must not fight over UDP 3478: the STUN responder
//! never binds the port of a TURN server it hands out on this machine (coturn answers STUN
//! there itself, and a coturn started second would lose its UDP listener to us and relay
//! over TCP only), and a STUN port another program holds stops `vimp signal` with the reason
//! and the flag to use instead of leaving it running half configured.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};

use anyhow::{Context as _, bail};
use vimp_ranks::service::{Ranks, RanksConfig};
use vimp_ranks::store::Store;

use vimp_netcode::signal::{
    DEFAULT_IDLE, DEFAULT_MESSAGES_PER_ADDRESS, DEFAULT_MESSAGES_PER_SECOND, DEFAULT_PER_ADDRESS,
    DEFAULT_TURN_TTL_SECS, DEFAULT_UPGRADES_PER_SECOND, IceConfig, Limits, SignalConfig, SignalServer, TurnSecret,
    connections_allowed, raise_open_files_limit,
};
use vimp_netcode::stun::StunServer;

/// What `vimp signal` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct SignalArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:3536")]
    pub bind: SocketAddr,
    /// Where the STUN responder listens (UDP); peers are handed `stun:HOST:PORT`, HOST being
    /// the host they reached this server at.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:3478", conflicts_with = "no_stun")]
    pub stun_bind: SocketAddr,
    /// No STUN responder (e.g. when a TURN server on this machine answers STUN on 3478; a
    /// `--turn` server on this machine on the STUN port keeps the responder off that port anyway).
    #[arg(long)]
    pub no_stun: bool,
    /// The ICE servers handed to joining peers.
    #[command(flatten)]
    pub ice: crate::setup::IceArgs,
    /// A file holding the secret the `--turn` servers share (coturn: `use-auth-secret` and
    /// `static-auth-secret=S`; the file's first line): every peer gets its own time-limited
    /// credential instead of a static password. Or the secret in `VIMP_TURN_SECRET`; never on
    /// the command line, which every user of the machine can read.
    #[arg(long, value_name = "PATH", requires = "turn", conflicts_with_all = ["turn_user", "turn_pass"])]
    pub turn_secret_file: Option<std::path::PathBuf>,
    /// Refused, with why: a secret on the command line is readable by every user of the machine.
    #[arg(long, value_name = "S", hide = true)]
    pub turn_secret: Option<String>,
    /// How long a minted TURN credential lasts, seconds (at most ten minutes; a relay made with
    /// it lives on, and a player in its room fetches a fresh one for the links it makes later).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TURN_TTL_SECS,
          value_parser = clap::value_parser!(u64).range(60..=DEFAULT_TURN_TTL_SECS))]
    pub turn_ttl: u64,
    /// The most connections one address may hold open (HTTP requests and websockets; a home's
    /// players share one address); past it, its new ones are refused at once (HTTP 429).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PER_ADDRESS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_per_address: u32,
    /// How many websockets a second one address may open, on average (bursts of twice that).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_UPGRADES_PER_SECOND)]
    pub upgrades_per_second: f64,
    /// How long a connection has to send its whole HTTP request (a websocket's upgrade
    /// included) before it is closed, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub request_deadline: f64,
    /// How many messages a second one peer's websocket may send, on average (bursts of twice
    /// that): signals and keep-alives. Past it, its socket is closed (code 1008).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MESSAGES_PER_SECOND)]
    pub messages_per_second: f64,
    /// How many messages a second all websockets from one address may send together, on
    /// average (bursts of twice that). Past it, the socket that sends is closed (code 1008).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MESSAGES_PER_ADDRESS)]
    pub messages_per_address: f64,
    /// How long a websocket may say nothing before it is closed, seconds (a player's says a
    /// keep-alive four times a second).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE.as_secs_f64())]
    pub idle: f64,
    /// The most connections in all (default: what the open-files limit allows, raised to
    /// its hard limit at start); past it, new ones are refused at once (HTTP 503).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// The database of registered nicknames and of this rendezvous's signing key: a SQLite
    /// file (a path, or `sqlite://PATH`), or `postgres://USER@HOST/DB` for several processes
    /// behind one address (default: `rendezvous.db` in the platform's data folder,
    /// `$VIMP_DATA_DIR` or `~/.local/share/vimp` on Linux). A URL with a password belongs in
    /// `VIMP_DB`, not on the command line.
    #[arg(long, value_name = "PATH|URL", env = "VIMP_DB", hide_env_values = true, conflicts_with = "no_db")]
    pub db: Option<String>,
    /// No identities: signalling, STUN and TURN only (players join unverified).
    #[arg(long)]
    pub no_db: bool,
    /// What the tokens this rendezvous signs name as their issuer (`iss`): its public URL,
    /// or any name; hosts learn it with its keys.
    #[arg(long, value_name = "NAME", default_value = "vimp-signal")]
    pub issuer: String,
    /// How many requests a second one address may make of the identity and top routes, and
    /// of the lookups (`/ice`, `/rooms`), on average (bursts of twice that); past it, HTTP 429.
    #[arg(long, value_name = "N", default_value_t = 20.0)]
    pub requests_per_second: f64,
    /// A balancer in front of this server (repeatable): its requests are taken as coming from
    /// the address its `X-Forwarded-For` adds (HAProxy's `option forwardfor`), for the rate
    /// above and the homes a round's players play from.
    #[arg(long, value_name = "IP")]
    pub trusted_proxy: Vec<std::net::IpAddr>,
}

/// Where a rendezvous keeps its SQLite file by default: the platform's data folder
/// (`$VIMP_DATA_DIR` when set).
pub fn default_db_path() -> Option<std::path::PathBuf> {
    crate::shipped::data_dir().map(|dir| dir.join("rendezvous.db"))
}

/// The identity routes over a database, and the runtime that keeps its connections.
struct Opened {
    _runtime: tokio::runtime::Runtime,
    ranks: std::sync::Arc<Ranks>,
    db: String,
    registered: u64,
}

/// The identity routes over the database `args` name; `None` with `--no-db`.
fn open_ranks(args: &SignalArgs) -> anyhow::Result<Option<Opened>> {
    if args.no_db {
        return Ok(None);
    }
    let db = match &args.db {
        Some(db) => db.clone(),
        None => match default_db_path() {
            Some(path) => path.display().to_string(),
            None => bail!("no data folder is known (no HOME): pass --db PATH or --no-db"),
        },
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().thread_name("vimp-store").build()?;
    if !(args.requests_per_second > 0.0 && args.requests_per_second.is_finite()) {
        bail!("--requests-per-second must be a positive number, not {}", args.requests_per_second);
    }
    let config = RanksConfig {
        issuer: args.issuer.clone(),
        requests_per_second: args.requests_per_second,
        ..RanksConfig::default()
    };
    let (ranks, registered) = runtime
        .block_on(async {
            let ranks = Ranks::new(Store::open(&db).await?, config).await?;
            let registered = ranks.store().identities().await?;
            Ok::<_, vimp_ranks::store::StoreError>((ranks, registered))
        })
        .with_context(|| format!("opening the rendezvous's database {}", shown_db(&db)))?;
    Ok(Some(Opened { _runtime: runtime, ranks, db, registered }))
}

/// `db` as it may be printed: a PostgreSQL URL without its password.
fn shown_db(db: &str) -> String {
    match db.split_once("://").and_then(|(scheme, rest)| Some((scheme, rest.split_once('@')?))) {
        Some((scheme, (user, host))) => format!("{scheme}://{}@{host}", user.split(':').next().unwrap_or_default()),
        None => db.to_owned(),
    }
}

/// Where `VIMP_TURN_SECRET` is read from.
pub const TURN_SECRET_ENV: &str = "VIMP_TURN_SECRET";

/// The TURN servers' shared secret: `--turn-secret-file`'s first line, or `VIMP_TURN_SECRET`;
/// `None` when neither is given.
fn turn_secret(args: &SignalArgs) -> anyhow::Result<Option<String>> {
    if args.turn_secret.is_some() {
        bail!(
            "--turn-secret is no more: a secret on the command line can be read by every user of this machine \
             (/proc/PID/cmdline). Put it in a file only the service reads (--turn-secret-file PATH) or in \
             {TURN_SECRET_ENV}"
        );
    }
    let secret = match &args.turn_secret_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the TURN secret from {}", path.display()))?;
            warn_if_open(path);
            text.lines().next().unwrap_or_default().trim().to_owned()
        }
        None => match std::env::var(TURN_SECRET_ENV) {
            Ok(secret) => secret.trim().to_owned(),
            Err(_) => return Ok(None),
        },
    };
    if secret.is_empty() {
        bail!(
            "the TURN secret is empty ({})",
            args.turn_secret_file.as_ref().map_or_else(|| TURN_SECRET_ENV.to_owned(), |p| p.display().to_string())
        );
    }
    if args.ice.turn.is_empty() {
        bail!(
            "a TURN secret is given ({TURN_SECRET_ENV} or --turn-secret-file) but no --turn server to mint credentials for"
        );
    }
    if args.ice.turn_user.is_some() || args.ice.turn_pass.is_some() {
        bail!(
            "a TURN secret ({TURN_SECRET_ENV}) and --turn-user/--turn-pass both name the TURN servers' credentials: give one"
        );
    }
    Ok(Some(secret))
}

/// Says so when `path`, a secret's file, may be read by other users than its owner.
fn warn_if_open(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            eprintln!(
                "vimp signal: {} may be read by other users (mode {:o}): chmod 600 it",
                path.display(),
                meta.permissions().mode() & 0o777
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Starts the server, prints where it listens and serves until the process is stopped.
pub fn run(args: &SignalArgs) -> anyhow::Result<i32> {
    let mut ice_servers = args.ice.servers();
    let turn_secret = turn_secret(args)?.map(|secret| {
        // The TURN URLs get minted credentials instead of the static entry.
        ice_servers.retain(|s| s.urls != args.ice.turn);
        TurnSecret { urls: args.ice.turn.clone(), secret, ttl_secs: args.turn_ttl }
    });
    let minting = turn_secret.is_some();
    let conflict =
        if args.no_stun { None } else { turn_on_stun_port(args.stun_bind, &args.ice.turn, is_local, resolve) };
    let stun = match (&conflict, args.no_stun) {
        (None, false) => match StunServer::start(args.stun_bind) {
            Ok(stun) => Some(stun),
            Err(e) => bail!(
                "{e}\nvimp signal: cannot answer STUN on UDP {}: another program holds the port (coturn answers \
                 STUN there itself). Pass --no-stun to leave STUN to it, or --stun-bind ADDR:PORT for another port.",
                args.stun_bind
            ),
        },
        _ => None,
    };
    let stun_port = stun.as_ref().map(|s| s.addr().port());
    let mut handed_out = None;
    if let Some(url) = &conflict {
        // The TURN server answers STUN where it listens: hand that out unless told otherwise.
        let stun_url = format!("stun:{}", url.split_once(':').map_or(url.as_str(), |(_, rest)| rest));
        if args.ice.stun.is_empty() {
            ice_servers
                .insert(0, vimp_netcode::signal::IceServer { urls: vec![stun_url.clone()], ..Default::default() });
        }
        handed_out = Some((url, stun_url));
    }
    if !(args.upgrades_per_second > 0.0 && args.upgrades_per_second.is_finite()) {
        bail!("--upgrades-per-second must be a positive number, not {}", args.upgrades_per_second);
    }
    if !(args.request_deadline > 0.0 && args.request_deadline <= 3600.0) {
        bail!("--request-deadline must be between 0 and 3600 seconds, not {}", args.request_deadline);
    }
    for (flag, rate) in [
        ("--messages-per-second", args.messages_per_second),
        ("--messages-per-address", args.messages_per_address),
        ("--requests-per-second", args.requests_per_second),
    ] {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("{flag} must be a positive number, not {rate}");
        }
    }
    if !(args.idle >= 1.0 && args.idle <= 86_400.0) {
        bail!("--idle must be between 1 and 86400 seconds, not {}", args.idle);
    }
    // Each peer holds an open file (its socket): as many as the system lets this process have.
    let files = raise_open_files_limit();
    let total = args.max_connections.unwrap_or_else(|| connections_allowed(files)).max(1);
    let limits = Limits {
        per_address: args.max_per_address as usize,
        upgrades_per_second: args.upgrades_per_second,
        total,
        request_deadline: std::time::Duration::from_secs_f64(args.request_deadline),
        lookups_per_second: args.requests_per_second,
        messages_per_second: args.messages_per_second,
        messages_per_address: args.messages_per_address,
        idle: std::time::Duration::from_secs_f64(args.idle),
    };
    let config = SignalConfig {
        bind: args.bind,
        ice: IceConfig { ice_servers },
        turn_secret,
        stun_port,
        limits,
        trusted_proxies: args.trusted_proxy.clone(),
    };
    let ranks = open_ranks(args)?;
    let routes = ranks.as_ref().map_or_else(axum::Router::new, |opened| opened.ranks.router());
    let server = SignalServer::start_with(config, routes)?;
    println!("vimp signal: listening on {} ({})", server.addr(), server.url());
    if let Some(stun) = &stun {
        println!("STUN: answering binding requests on UDP {}", stun.addr());
    }
    if let Some((url, stun_url)) = &handed_out {
        println!(
            "STUN: not answering on UDP {}: the TURN server handed out ({url}) listens there on this machine and \
             answers STUN itself (peers get {stun_url}); --stun-bind ADDR:PORT puts this server's STUN elsewhere",
            args.stun_bind
        );
    }
    if minting {
        println!("TURN credentials are minted for peers in rooms alone, each valid for {} s", args.turn_ttl);
    }
    match &ranks {
        Some(opened) => println!(
            "identities: {} registered in {}; nicknames at {2}/identity/register, tokens at {2}/identity/token, \
             keys at {2}/identity/keys (issuer {3:?})",
            opened.registered,
            shown_db(&opened.db),
            server.url().replacen("ws://", "http://", 1),
            args.issuer,
        ),
        None => println!("identities: none served (--no-db): players join unverified"),
    }
    println!(
        "holds up to {total} connections (open-files limit {files}); {} per address, {} websockets a second per \
         address, {} s to send a request; {} messages a second per socket, {} per address; {} s of silence",
        limits.per_address,
        limits.upgrades_per_second,
        args.request_deadline,
        limits.messages_per_second,
        limits.messages_per_address,
        args.idle
    );
    println!(
        "rooms are lobby codes: peers join at {0}/CODE; ICE servers at {0}/ice; who is in a room at {0}/rooms/CODE",
        server.url()
    );
    server.wait()?;
    Ok(0)
}

/// The `--turn` URL (`turn:HOST[:PORT]`, `turns:` too) whose server listens on this machine
/// on the STUN responder's port `stun_bind` would take: the same port, on an address of this
/// machine (`is_local`) that the responder would bind (any, when it binds `0.0.0.0`).
/// `resolve` turns a URL's host into addresses.
fn turn_on_stun_port(
    stun_bind: SocketAddr,
    turn: &[String],
    is_local: impl Fn(IpAddr) -> bool,
    resolve: impl Fn(&str, u16) -> Vec<IpAddr>,
) -> Option<&String> {
    turn.iter().find(|url| {
        let Some((scheme, rest)) = url.split_once(':') else { return false };
        let rest = rest.split(['?', '/']).next().unwrap_or_default();
        let default_port = if scheme == "turns" { 5349 } else { 3478 };
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && !port.contains(']') => {
                (host, port.parse().unwrap_or(default_port))
            }
            _ => (rest, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        port == stun_bind.port()
            && resolve(host, port)
                .into_iter()
                .any(|ip| is_local(ip) && (stun_bind.ip().is_unspecified() || stun_bind.ip() == ip))
    })
}

/// Whether `ip` is an address of this machine: a socket can be bound to it.
fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind((ip, 0)).is_ok()
}

/// A host's addresses (none when it does not resolve).
fn resolve(host: &str, port: u16) -> Vec<IpAddr> {
    (host, port).to_socket_addrs().map(|a| a.map(|a| a.ip()).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn a_turn_server_on_this_machine_on_the_stun_port_keeps_the_responder_off_it() {
        let local = |a: IpAddr| a == ip("203.0.113.10") || a.is_loopback();
        let resolve = |host: &str, _| match host {
            "rdv.example" => vec![ip("203.0.113.10")],
            "far.example" => vec![ip("198.51.100.7")],
            other => other.parse().into_iter().collect(),
        };
        let any: SocketAddr = "0.0.0.0:3478".parse().unwrap();
        let turn = |urls: &[&str]| urls.iter().map(|u| (*u).to_owned()).collect::<Vec<_>>();
        let urls = turn(&["turn:203.0.113.10:3478"]);
        assert_eq!(turn_on_stun_port(any, &urls, local, resolve), Some(&urls[0]));
        let urls = turn(&["turn:rdv.example"]);
        assert_eq!(turn_on_stun_port(any, &urls, local, resolve), Some(&urls[0]), "3478 by default, by name");
        let urls = turn(&["turn:far.example:3478", "turn:203.0.113.10:3479", "turns:203.0.113.10"]);
        assert_eq!(turn_on_stun_port(any, &urls, local, resolve), None, "elsewhere, another port, 5349");
        let urls = turn(&["turn:127.0.0.1:3478?transport=udp"]);
        assert_eq!(turn_on_stun_port(any, &urls, local, resolve), Some(&urls[0]));
        let other_addr: SocketAddr = "203.0.113.10:3478".parse().unwrap();
        assert_eq!(turn_on_stun_port(other_addr, &urls, local, resolve), None, "the responder binds another address");
        let urls = turn(&["turn:[::1]:3478"]);
        assert_eq!(turn_on_stun_port(any, &urls, local, resolve), Some(&urls[0]));
    }
}
