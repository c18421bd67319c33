//! Votes: the teams and maps lists, a team pick, and the map-change vote ([`MAP_CHANGE_VOTE`],
//! `yes`/`no` for [`MAP_VOTE_TIME`]) that loads the map picked when more than half of the
//! connected players say yes.

use std::time::Duration;

use vimp_netcode::frame::op;
use vimp_netcode::meta::{ClientMeta, EngineLine, ListRequest, MetaMessage, Vote, VoteAnswer, VoteValues};
use vimp_netcode::transport::PeerKey;

use super::ServerCore;
use crate::engine::players::{HostCommand, PlayerId};

/// The name of the map-change vote players answer `yes` or `no`.
pub const MAP_CHANGE_VOTE: &str = "mapChange";

/// How long a map vote stays open.
pub const MAP_VOTE_TIME: Duration = Duration::from_secs(15);

/// A map vote in progress.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct MapVote {
    pub(super) map: String,
    pub(super) until: Duration,
    pub(super) yes: std::collections::BTreeSet<PlayerId>,
    pub(super) no: std::collections::BTreeSet<PlayerId>,
}

impl ServerCore {
    /// The maps a vote may pick: the current one, then the configured ones.
    pub(super) fn map_names(&self) -> Vec<String> {
        let current = self.host.world().resource::<crate::engine::map::state::MapState>();
        let mut names: Vec<String> = current.config.iter().map(|c| c.name.clone()).collect();
        for m in &self.config.maps {
            if !names.contains(&m.name) {
                names.push(m.name.clone());
            }
        }
        names
    }

    /// Ends the map vote once more than half of the connected players said yes (the map loads),
    /// more than half said no, or its time is up. System chat `v:1:map` — passed, `v:2:map` — failed.
    pub(super) fn settle_map_vote(&mut self, now: Duration) {
        let Some(vote) = &self.map_vote else { return };
        let voters = self.roster.seats().filter(|s| s.peer.is_some()).count().max(1);
        let passed = vote.yes.len() * 2 > voters;
        if !passed && vote.no.len() * 2 < voters && now < vote.until {
            return;
        }
        let map_name = vote.map.clone();
        self.map_vote = None;
        self.migration.meta_dirty = true;
        let chosen = if passed {
            let current = self.host.world().resource::<crate::engine::map::state::MapState>().config.clone();
            current
                .filter(|c| c.name == map_name)
                .or_else(|| self.config.maps.iter().find(|m| m.name == map_name).cloned())
        } else {
            None
        };
        let loaded = chosen.is_some_and(|map| self.host.load_map(map).is_ok());
        self.announce(if loaded { EngineLine::VotePassed } else { EngineLine::VoteFailed }, [map_name]);
    }

    /// Votes: a team request answers with the teams; a team pick asks the game to move the
    /// player (it decides); the map list is the current map until map rotation exists.
    pub(super) fn on_vote(&mut self, peer: PeerKey, payload: &[u8]) {
        let Some(player) = self.roster.player_of(peer) else { return };
        let answer = match ClientMeta::decode(op::client::VOTE, payload) {
            Ok(ClientMeta::Vote(answer)) => answer,
            _ => {
                self.protocol_error(peer);
                return;
            }
        };
        let reply = match answer {
            VoteAnswer::Request(ListRequest::Teams) => Some(Vote {
                name: "teams".into(),
                params: None,
                values: Some(VoteValues::List(vec![1.into(), 2.into()])),
            }),
            VoteAnswer::Request(ListRequest::Maps) => {
                let names = self.map_names().into_iter().map(Into::into).collect();
                Some(Vote { name: "maps".into(), params: None, values: Some(VoteValues::List(names)) })
            }
            VoteAnswer::Pick { name, value } if name == "maps" => {
                let wanted = value.as_str().unwrap_or_default().to_owned();
                if self.map_vote.is_none() && self.map_names().contains(&wanted) {
                    let mut vote = MapVote {
                        map: wanted.clone(),
                        until: self.last.unwrap_or_default() + MAP_VOTE_TIME,
                        yes: Default::default(),
                        no: Default::default(),
                    };
                    vote.yes.insert(player);
                    self.map_vote = Some(vote);
                    self.migration.meta_dirty = true;
                    let ask = Vote {
                        name: MAP_CHANGE_VOTE.into(),
                        params: Some(vec![wanted]),
                        values: Some(VoteValues::List(vec!["yes".into(), "no".into()])),
                    };
                    self.send_all(&MetaMessage::Vote(ask).encoded());
                }
                None
            }
            VoteAnswer::Pick { name, value } if name == MAP_CHANGE_VOTE => {
                if let Some(vote) = self.map_vote.as_mut() {
                    let (add, remove) =
                        if value == "yes" { (&mut vote.yes, &mut vote.no) } else { (&mut vote.no, &mut vote.yes) };
                    remove.remove(&player);
                    add.insert(player);
                    self.migration.meta_dirty = true;
                }
                None
            }
            VoteAnswer::Pick { name, value } if name == "teams" => {
                let team = value.as_u64().or_else(|| value.as_str().and_then(|s| s.parse().ok()));
                if let Some(team) = team.and_then(|t| u8::try_from(t).ok()) {
                    self.host.push(HostCommand::SetTeam { player, team });
                }
                None
            }
            VoteAnswer::Pick { .. } => None,
        };
        if let Some(vote) = reply {
            self.send_to(peer, &MetaMessage::Vote(vote).encoded());
        }
    }
}
