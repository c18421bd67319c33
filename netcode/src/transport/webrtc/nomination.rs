//! How many crossings of the path two ICE agents take to select a pair, as this stack's agent
//! (`patches/rtc-ice`) nominates: with every check once a pair may be nominated, and taken
//! at once by the controlled side. Driven sans-IO: each round hands each agent what the other
//! sent in the round before, as a path that takes one round each way would.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rtc_ice::agent::Agent;
use rtc_ice::agent::agent_config::AgentConfig;
use rtc_ice::candidate::candidate_host::CandidateHostConfig;
use rtc_ice::candidate::{Candidate, CandidateConfig};
use sansio::Protocol;
use shared::{TransportContext, TransportMessage, TransportProtocol};

fn host_candidate(addr: SocketAddr) -> Candidate {
    CandidateHostConfig {
        base_config: CandidateConfig {
            network: "udp".to_owned(),
            address: addr.ip().to_string(),
            port: addr.port(),
            component: 1,
            ..Default::default()
        },
        ..Default::default()
    }
    .new_candidate_host()
    .expect("a host candidate")
}

fn agent(now: Instant, own: SocketAddr, remote: SocketAddr) -> Agent {
    // A host pair may be nominated at once, as `ice_timing` in `patches/matchbox_socket` has it.
    let config = AgentConfig { host_acceptance_min_wait: Some(Duration::ZERO), ..AgentConfig::default() };
    let provider = rtc_ice::crypto::default_provider().expect("a crypto provider");
    let mut agent = Agent::new(now, Arc::new(config), provider).expect("an agent");
    agent.add_local_candidate(host_candidate(own)).expect("its own candidate");
    agent.add_remote_candidate(host_candidate(remote)).expect("the peer's candidate");
    agent
}

/// What `agent` sends by `now`, as the peer at the other end receives it.
fn sent(agent: &mut Agent, now: Instant) -> Vec<TransportMessage<BytesMut>> {
    agent.handle_timeout(now).expect("a timeout");
    std::iter::from_fn(|| agent.poll_write())
        .map(|m| TransportMessage {
            now,
            transport: TransportContext {
                local_addr: m.transport.peer_addr,
                peer_addr: m.transport.local_addr,
                transport_protocol: TransportProtocol::UDP,
                ecn: None,
            },
            message: m.message,
        })
        .collect()
}

#[test]
fn the_controlled_side_is_connected_one_crossing_after_the_first_check_and_the_controlling_side_one_after_that() {
    let start = Instant::now();
    let (host, joiner) = ("10.1.0.10:40000".parse().unwrap(), "10.2.0.10:50000".parse().unwrap());
    let mut offerer = agent(start, host, joiner);
    let mut answerer = agent(start, joiner, host);
    let (o, a) = (offerer.get_local_credentials().clone(), answerer.get_local_credentials().clone());
    offerer.start_connectivity_checks(start, true, a.ufrag, a.pwd).expect("controlling");
    answerer.start_connectivity_checks(start, false, o.ufrag, o.pwd).expect("controlled");

    // Round k: what each sent in round k - 1 arrives (a crossing of the path), and each
    // answers. Time moves a millisecond a round, so no check timer fires in between.
    let mut connected = [None, None];
    let (mut to_answerer, mut to_offerer) = (Vec::new(), Vec::new());
    for round in 1..=8 {
        let now = start + Duration::from_millis(round);
        for m in std::mem::take(&mut to_answerer) {
            answerer.handle_read(TransportMessage { now, ..m }).expect("a check the answerer takes");
        }
        for m in std::mem::take(&mut to_offerer) {
            offerer.handle_read(TransportMessage { now, ..m }).expect("a check the offerer takes");
        }
        for (side, agent) in [&offerer, &answerer].into_iter().enumerate() {
            if agent.get_selected_candidate_pair().is_some() {
                connected[side].get_or_insert(round - 1);
            }
        }
        to_answerer = sent(&mut offerer, now);
        to_offerer = sent(&mut answerer, now);
    }
    // The first checks leave in round 1 and cross in round 2 (crossing 1). Nominating a pair
    // only after a check of it had succeeded, and the controlled side answering a nomination
    // only for a pair whose own check had succeeded, took crossings 3 and 4.
    assert_eq!(connected, [Some(2), Some(1)], "crossings until the offerer and the answerer were connected");
}
