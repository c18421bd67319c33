//! `vimp signal`: runs the signalling server that introduces the peers of a lobby.

use std::net::SocketAddr;

use vimp_netcode::signal::{IceConfig, IceServer, SignalConfig, SignalServer};

/// What `vimp signal` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct SignalArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:3536")]
    pub bind: SocketAddr,
    /// A STUN server to hand to joining peers (repeatable), e.g. `stun:stun.example.net:3478`.
    #[arg(long = "stun", value_name = "URL")]
    pub stun: Vec<String>,
    /// A TURN server to hand to joining peers (repeatable), e.g. `turn:turn.example.net:3478`.
    #[arg(long = "turn", value_name = "URL")]
    pub turn: Vec<String>,
    /// The TURN user name.
    #[arg(long, requires = "turn")]
    pub turn_user: Option<String>,
    /// The TURN password.
    #[arg(long, requires = "turn")]
    pub turn_pass: Option<String>,
}

impl SignalArgs {
    /// The ICE servers these flags describe (none by default).
    pub fn ice(&self) -> IceConfig {
        let mut ice = IceConfig::default();
        if !self.stun.is_empty() {
            ice.ice_servers.push(IceServer { urls: self.stun.clone(), ..IceServer::default() });
        }
        if !self.turn.is_empty() {
            ice.ice_servers.push(IceServer {
                urls: self.turn.clone(),
                username: self.turn_user.clone(),
                credential: self.turn_pass.clone(),
            });
        }
        ice
    }
}

/// Starts the server, prints where it listens and serves until the process is stopped.
pub fn run(args: &SignalArgs) -> anyhow::Result<i32> {
    let server = SignalServer::start(SignalConfig { bind: args.bind, ice: args.ice() })?;
    println!("vimp signal: listening on {} ({})", server.addr(), server.url());
    println!("rooms are lobby codes: peers join at {}/CODE; ICE servers at {}/ice", server.url(), server.url());
    server.wait()?;
    Ok(0)
}
