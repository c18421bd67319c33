//! `vimp signal`: runs the signalling server that introduces the peers of a lobby.

use std::net::SocketAddr;

use vimp_netcode::signal::{IceConfig, SignalConfig, SignalServer};

/// What `vimp signal` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct SignalArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:3536")]
    pub bind: SocketAddr,
    /// The ICE servers handed to joining peers.
    #[command(flatten)]
    pub ice: crate::net_cmd::IceArgs,
}

/// Starts the server, prints where it listens and serves until the process is stopped.
pub fn run(args: &SignalArgs) -> anyhow::Result<i32> {
    let server =
        SignalServer::start(SignalConfig { bind: args.bind, ice: IceConfig { ice_servers: args.ice.servers() } })?;
    println!("vimp signal: listening on {} ({})", server.addr(), server.url());
    println!("rooms are lobby codes: peers join at {}/CODE; ICE servers at {}/ice", server.url(), server.url());
    server.wait()?;
    Ok(0)
}
