//! `vimp signal`: runs the signalling server that introduces the peers of a lobby.

use std::net::SocketAddr;

use vimp_netcode::signal::{DEFAULT_TURN_TTL_SECS, IceConfig, SignalConfig, SignalServer, TurnSecret};
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
    /// No STUN responder (e.g. when a TURN server on this machine answers STUN on 3478).
    #[arg(long)]
    pub no_stun: bool,
    /// The ICE servers handed to joining peers.
    #[command(flatten)]
    pub ice: crate::setup::IceArgs,
    /// The secret the `--turn` servers share (coturn: `use-auth-secret` and
    /// `static-auth-secret=S`): every peer gets its own time-limited credential instead of a
    /// static password.
    #[arg(long, value_name = "S", requires = "turn", conflicts_with_all = ["turn_user", "turn_pass"])]
    pub turn_secret: Option<String>,
    /// How long a minted TURN credential lasts, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TURN_TTL_SECS, requires = "turn_secret")]
    pub turn_ttl: u64,
}

/// Starts the server, prints where it listens and serves until the process is stopped.
pub fn run(args: &SignalArgs) -> anyhow::Result<i32> {
    let mut ice_servers = args.ice.servers();
    let turn_secret = args.turn_secret.as_ref().map(|secret| {
        // The TURN URLs get minted credentials instead of the static entry.
        ice_servers.retain(|s| s.urls != args.ice.turn);
        TurnSecret { urls: args.ice.turn.clone(), secret: secret.clone(), ttl_secs: args.turn_ttl }
    });
    let stun = if args.no_stun { None } else { Some(StunServer::start(args.stun_bind)?) };
    let stun_port = stun.as_ref().map(|s| s.addr().port());
    let server =
        SignalServer::start(SignalConfig { bind: args.bind, ice: IceConfig { ice_servers }, turn_secret, stun_port })?;
    println!("vimp signal: listening on {} ({})", server.addr(), server.url());
    if let Some(stun) = &stun {
        println!("STUN: answering binding requests on UDP {}", stun.addr());
    }
    if args.turn_secret.is_some() {
        println!("TURN credentials are minted per peer, valid for {} s", args.turn_ttl);
    }
    println!("rooms are lobby codes: peers join at {}/CODE; ICE servers at {}/ice", server.url(), server.url());
    server.wait()?;
    Ok(0)
}
