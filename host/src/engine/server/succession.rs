//! The server's half of host migration: the succession list and streaming to the successors.
//!
//! Every update, after the ticks ran, [`ServerCore::stream_migration`]:
//!
//! 1. ranks the connected players by [`vimp_netcode::migration::rank`] (smoothed RTT in
//!    buckets, then join order; spectators (but keepers: a headless host that stepped down,
//!    [`Hello::keeper`](vimp_netcode::session::Hello::keeper)) and
//!    [`MigrationConfig::local_peers`] never, nor a
//!    player whose hello did not say it can host, nor one that has not reported its links);
//!    those whose last `LINKS` report reaches every other connected remote peer come first,
//!    then those that reach only some, and each is listed only if linked both ways to every
//!    successor listed before it (successors always reach one another); the list goes to
//!    every peer when it changed or someone new came in (`SUCCESSION`);
//! 2. keeps a stream for each of the first [`MigrationConfig::successors`]; a stream
//!    outlives its peer's place among them by [`MigrationConfig::stream_grace`] while
//!    the peer stays connected, so a successor that leaves the list for a moment (its links
//!    report racing a newcomer's handshake) keeps its shadow in step instead of starting over;
//! 3. sends the log entries recorded since the last batch (`INPUT_LOG`, at most every
//!    [`MigrationConfig::log_interval`], reliable) to every stream that has had a checkpoint;
//! 4. sends a checkpoint (`CHECKPOINT` parts) to a stream that is new, whose last one is
//!    [`MigrationConfig::checkpoint_interval`] old, or to all of them after a change of what
//!    only checkpoints carry (a join or a leave: the roster's tokens; a spectator's choice; the
//!    map vote), or that asked for one
//!    (`CHECKPOINT_REQUEST`: its shadow diverged; at most one per
//!    [`MIN_REQUEST_INTERVAL`] per peer, and a peer without a stream is ignored). The log is
//!    flushed first, so a successor always gets the log up to a checkpoint before the
//!    checkpoint.
//!
//! Chat lines the server broadcasts are kept for checkpoints and logged
//! ([`LogEvent::Chat`](crate::engine::migration::LogEvent::Chat)), so a successor that takes
//! over after a crash has the chat said since the last checkpoint.
//!
//! A passed `@changeHost` vote reaches the server as `STEP_DOWN` ([`ServerCore::on_step_down`]):
//! from a peer of the succession list, with yes votes that are a strict majority of that
//! list (the server's own count of its connected remote players), it hands the match off.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::migration::{
    self, Candidate, Claim, MIN_REQUEST_INTERVAL, RIVAL_WINDOW, StepDown, Succession, checkpoint_parts,
};
use vimp_netcode::transport::PeerKey;

use super::{MAP_CHANGE_VOTE, ServerCore, ServerEvent};
use crate::engine::migration::{Checkpoint, LogBatch, LogEntry, MetaState, MigrationConfig, VoteState};
use crate::engine::players::PlayerId;
use vimp_netcode::session::HostSession;

/// Figures of the migration traffic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MigrationStats {
    /// Succession lists published (each to every peer).
    pub successions: u64,
    /// Checkpoints sent, over all successors.
    pub checkpoints: u64,
    /// Their bytes (compressed, as sent).
    pub checkpoint_bytes: u64,
    /// The last checkpoint's size: compressed, uncompressed state dump.
    pub last_checkpoint: (usize, usize),
    /// Log batches sent, over all successors.
    pub log_batches: u64,
    /// Their bytes.
    pub log_bytes: u64,
    /// Log entries recorded.
    pub log_entries: u64,
    /// Checkpoint requests answered (each with a checkpoint to its successor).
    pub checkpoint_requests: u64,
    /// Checkpoint requests ignored: from a peer without a stream, or too soon after its last.
    pub checkpoint_requests_ignored: u64,
    /// Migration bytes sent to each successor (frames' opcode and payload).
    pub per_successor: BTreeMap<PeerKey, u64>,
    /// `STEP_DOWN` requests (passed `@changeHost` votes) received.
    pub step_down_requests: u64,
    /// Of those, the ones refused: from outside the succession list, without a majority of
    /// it, or with nobody to hand off to.
    pub step_downs_refused: u64,
    /// `CLAIM`s refused: garbage, not better than this host's, or from a peer the rules do
    /// not let claim ([`ServerCore::may_claim`]).
    pub claims_refused: u64,
    /// Claims of the next epoch that did not hold the room while this host played on: it
    /// kept the match ([`ServerCore::keep_the_match`]).
    pub claims_outheld: u64,
}

/// One successor's stream.
#[derive(Clone, Debug)]
struct Stream {
    /// When its next checkpoint is due (zero: at once).
    next_checkpoint: Duration,
    /// Whether it has had a checkpoint (log batches only follow one).
    synced: bool,
    /// Since when its peer is no longer among the first successors.
    unlisted_since: Option<Duration>,
    /// When its peer last asked for a checkpoint that it got.
    requested_at: Option<Duration>,
}

/// The server's migration state.
#[derive(Debug)]
pub(super) struct Migration {
    pub(super) config: MigrationConfig,
    succession: Vec<PeerKey>,
    /// The voters published with it.
    voters: Vec<PeerKey>,
    /// Someone new is in: publish the list even if it did not change.
    pub(super) publish_due: bool,
    /// The roster changed: every stream gets a checkpoint.
    pub(super) meta_dirty: bool,
    streams: BTreeMap<PeerKey, Stream>,
    pending: Vec<LogEntry>,
    next_log: Duration,
    checkpoint_id: u32,
    /// Join order of the slots.
    joined: BTreeMap<PlayerId, u64>,
    next_join: u64,
    chat: VecDeque<String>,
    /// Each peer's last `LINKS` report: the mesh peers it has an open link to.
    links: BTreeMap<PeerKey, Vec<PeerKey>>,
    pub(super) stats: MigrationStats,
}

impl Migration {
    pub(super) fn new(config: MigrationConfig) -> Self {
        Migration {
            config,
            succession: Vec::new(),
            voters: Vec::new(),
            publish_due: false,
            meta_dirty: false,
            streams: BTreeMap::new(),
            pending: Vec::new(),
            next_log: Duration::ZERO,
            checkpoint_id: 0,
            joined: BTreeMap::new(),
            next_join: 0,
            chat: VecDeque::new(),
            links: BTreeMap::new(),
            stats: MigrationStats::default(),
        }
    }

    /// A slot was taken (first come, first ranked; a resumed slot keeps its place).
    pub(super) fn joined(&mut self, player: PlayerId) {
        if !self.joined.contains_key(&player) {
            self.joined.insert(player, self.next_join);
            self.next_join += 1;
        }
        self.publish_due = true;
        self.meta_dirty = true;
    }

    /// A slot was freed for good.
    pub(super) fn freed(&mut self, player: PlayerId) {
        self.joined.remove(&player);
        self.meta_dirty = true;
    }

    /// A peer reported its open mesh links (`None`: it is gone, and so is its report).
    pub(super) fn links(&mut self, peer: PeerKey, links: Option<Vec<PeerKey>>) {
        match links {
            Some(links) => self.links.insert(peer, links),
            None => self.links.remove(&peer),
        };
    }

    /// A peer asked for a checkpoint: one is due to it now if it has a stream and its last
    /// answered request is [`MIN_REQUEST_INTERVAL`] old; otherwise the request is ignored.
    pub(super) fn checkpoint_requested(&mut self, peer: PeerKey, now: Duration) {
        let stream = self.streams.get_mut(&peer);
        match stream.filter(|s| s.requested_at.is_none_or(|at| now >= at + MIN_REQUEST_INTERVAL)) {
            Some(stream) => {
                stream.requested_at = Some(now);
                stream.next_checkpoint = Duration::ZERO;
                self.stats.checkpoint_requests += 1;
            }
            None => self.stats.checkpoint_requests_ignored += 1,
        }
    }

    /// The recent chat, oldest first: each line a `CHAT_DATA` payload.
    pub(super) fn recent_chat(&self) -> impl Iterator<Item = &str> {
        self.chat.iter().map(String::as_str)
    }

    /// The recent chat of a checkpoint, at a takeover.
    pub(super) fn restore_chat(&mut self, lines: Vec<String>) {
        let keep = lines.len().saturating_sub(self.config.recent_chat);
        self.chat = lines.into_iter().skip(keep).collect();
    }

    /// The first successor with a stream.
    pub(super) fn first_stream(&self) -> Option<PeerKey> {
        self.succession.iter().find(|p| self.streams.contains_key(p)).copied()
    }

    /// The successors with a stream.
    pub(super) fn stream_peers(&self) -> Vec<PeerKey> {
        self.streams.keys().copied().collect()
    }

    /// A chat line went out (its JSON text), kept for checkpoints.
    pub(super) fn chat_line(&mut self, line: &[u8]) {
        if self.config.recent_chat == 0 {
            return;
        }
        if self.chat.len() == self.config.recent_chat {
            self.chat.pop_front();
        }
        self.chat.push_back(String::from_utf8_lossy(line).into_owned());
    }
}

impl ServerCore {
    /// The succession list, best first (every eligible peer, not only the streamed ones).
    pub fn succession(&self) -> &[PeerKey] {
        &self.migration.succession
    }

    /// Whether `peer`'s `claim` unseats this host. It must beat this host's own
    /// ([`Claim::beats`]) and come from a peer allowed to make it, with its own place in the
    /// list it claims by as its rank:
    ///
    /// - at this host's epoch, a rival of the same takeover (a race: both were promoted from
    ///   the list this host took over by);
    /// - at the next epoch, a successor this host published itself (it went silent — a
    ///   stall, a sleeping laptop — and its successor took over);
    /// - at any later epoch, the host this one took over from: it played on and kept the
    ///   match, since this one's claim did not hold the room.
    ///
    /// A live host steps down only to a claim of the next epoch that holds the room
    /// ([`Evidence::holds_the_room`](vimp_netcode::migration::Evidence::holds_the_room));
    /// otherwise it keeps the match ([`ServerEvent::KeptTheMatch`](super::ServerEvent::KeptTheMatch)).
    ///
    /// A rival at this host's epoch whose list differed from this host's (the newest lost
    /// with the old host's line) may hold the same rank, or one this host's list gives it
    /// otherwise: within [`RIVAL_WINDOW`] of the takeover, a rival whose claim holds the room
    /// and goes first ([`Claim::precedes`]: the better rank, then the lower mesh key) unseats
    /// this host too. Both rivals reckon the same order, so one steps down and the room
    /// follows the other.
    ///
    /// Any other peer of the mesh, which anyone with the lobby code is, unseats nobody.
    pub fn may_claim(&self, peer: PeerKey, claim: &Claim, now: Duration) -> bool {
        let epoch = self.config.epoch;
        if self.predecessor == Some(peer) && claim.epoch > epoch {
            return true;
        }
        let list: &[PeerKey] = match claim.epoch {
            e if e == epoch => &self.rivals,
            e if e == epoch.wrapping_add(1) => &self.migration.succession,
            _ => return false,
        };
        if claim.beats(epoch, self.rank) && list.iter().position(|p| *p == peer) == Some(usize::from(claim.rank)) {
            return true;
        }
        let me = self.migration.config.local_peers.first().copied();
        let racing = self.took_over_at.is_some_and(|t| now < t + RIVAL_WINDOW);
        claim.epoch == epoch
            && racing
            && claim.evidence.holds_the_room()
            && self.peers.contains_key(&peer)
            && me.is_some_and(|me| claim.precedes(peer, self.rank, me))
    }

    /// A chat line goes out (its JSON text): kept for checkpoints, and logged, so that the
    /// successors' shadows hear it too.
    pub(super) fn chat_line(&mut self, line: &[u8]) {
        self.migration.chat_line(line);
        if self.migration.config.enabled {
            self.host.log_chat(&String::from_utf8_lossy(line));
        }
    }

    /// Figures of the migration traffic.
    pub fn migration_stats(&self) -> &MigrationStats {
        &self.migration.stats
    }

    /// What the meta layer owns, as a checkpoint carries it.
    pub fn meta_state(&self) -> MetaState {
        let now = self.last.unwrap_or_default();
        MetaState {
            roster: self.roster.clone(),
            watching: self.watching.iter().map(|(s, w)| (*s, *w)).collect(),
            chat: self.migration.chat.iter().cloned().collect(),
            vote: self.map_vote.as_ref().map(|v| VoteState {
                name: MAP_CHANGE_VOTE.into(),
                subject: v.map.clone(),
                remaining: v.until.saturating_sub(now),
                yes: v.yes.iter().copied().collect(),
                no: v.no.iter().copied().collect(),
            }),
        }
    }

    /// A checkpoint of the match now (between ticks).
    pub fn checkpoint(&mut self) -> Result<Checkpoint, crate::engine::migration::MigrationError> {
        let meta = self.meta_state();
        Checkpoint::capture(&mut self.host, self.config.epoch, meta)
    }

    /// A `STEP_DOWN` from `peer` (see the module docs): hands the match off when it holds.
    /// A payload that does not decode closes the peer with 4400.
    pub(super) fn on_step_down(&mut self, peer: PeerKey, payload: &[u8], now: Duration) {
        let request = match StepDown::decode(payload) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("a STEP_DOWN from {peer} does not decode: {e}");
                self.protocol_error(peer);
                return;
            }
        };
        self.migration.stats.step_down_requests += 1;
        let voters = self.migration.succession.len();
        let listed = self.migration.succession.contains(&peer) && self.peers.get(&peer).is_some_and(|s| s.is_active());
        if !listed || usize::from(request.yes) * 2 <= voters || self.hand_off(now).is_none() {
            tracing::info!(
                "STEP_DOWN from {peer} refused: {} yes of {} claimed, {voters} voters here, listed: {listed}",
                request.yes,
                request.electorate
            );
            self.migration.stats.step_downs_refused += 1;
        }
    }

    /// See the module docs.
    pub(super) fn stream_migration(&mut self, now: Duration) {
        if !self.migration.config.enabled {
            return;
        }
        self.publish_succession();
        let wanted: Vec<PeerKey> =
            self.migration.succession.iter().take(self.migration.config.successors).copied().collect();
        let grace = self.migration.config.stream_grace;
        let peers = &self.peers;
        self.migration.streams.retain(|p, s| {
            s.unlisted_since = if wanted.contains(p) { None } else { Some(s.unlisted_since.unwrap_or(now)) };
            let connected = peers.get(p).is_some_and(|s| s.is_active());
            connected && s.unlisted_since.is_none_or(|t| now < t + grace)
        });
        for peer in wanted {
            let fresh =
                Stream { next_checkpoint: Duration::ZERO, synced: false, unlisted_since: None, requested_at: None };
            self.migration.streams.entry(peer).or_insert(fresh);
        }

        let entries = self.host.take_log();
        self.migration.stats.log_entries += entries.len() as u64;
        self.migration.pending.extend(entries);
        let meta_dirty = std::mem::take(&mut self.migration.meta_dirty);
        let due: Vec<PeerKey> = self
            .migration
            .streams
            .iter()
            .filter(|(_, s)| meta_dirty || !s.synced || now >= s.next_checkpoint)
            .map(|(p, _)| *p)
            .collect();
        if !self.migration.pending.is_empty() && (now >= self.migration.next_log || !due.is_empty()) {
            self.send_log();
            self.migration.next_log = now + self.migration.config.log_interval;
        }
        if !due.is_empty() {
            self.send_checkpoint(&due, now);
        }
    }

    /// Sends the log recorded so far to the successors at once, whatever the log interval
    /// (before a graceful handoff, or to let a test's shadow catch up), and puts it on the
    /// transport.
    pub fn flush_migration(&mut self, now: Duration) {
        let entries = self.host.take_log();
        self.migration.stats.log_entries += entries.len() as u64;
        self.migration.pending.extend(entries);
        if !self.migration.pending.is_empty() {
            self.send_log();
        }
        self.flush(now);
    }

    /// `claimant`'s claim of the next epoch did not hold the room while this host plays on:
    /// this host keeps the match (see [Claims a live host
    /// refuses](vimp_netcode::migration#claims-a-live-host-refuses)). It takes the epoch
    /// after the claim's and says so to every peer (its clients take their host's new
    /// epoch); the claimant, which hosts a match of its own by now, gets a fresh session that
    /// says it first, steps down to this host and says hello again with its token, its seat
    /// kept for it meanwhile.
    pub(super) fn keep_the_match(&mut self, claimant: PeerKey, claim: Claim, now: Duration) {
        let epoch = claim.epoch.wrapping_add(1);
        self.config.epoch = epoch;
        self.rank = 0;
        self.rivals.clear();
        self.migration.stats.claims_outheld += 1;
        self.migration.publish_due = true;
        let ours = Claim::new(epoch, 0, self.host.tick()).encode();
        self.drop_peer(claimant, now);
        for session in self.peers.values_mut().filter(|s| s.is_active()) {
            session.send(Channel::Reliable, op::CLAIM, &ours);
        }
        let mut session = HostSession::new(self.config.session.clone(), now);
        session.send(Channel::Reliable, op::CLAIM, &ours);
        self.peers.insert(claimant, session);
        self.note(ServerEvent::KeptTheMatch { claimant, claim, epoch });
    }

    /// Ranks the candidates; publishes the list when it changed, someone new came in, or
    /// the voters changed.
    fn publish_succession(&mut self) {
        let local = &self.migration.config.local_peers;
        let remote: Vec<PeerKey> =
            self.peers.iter().filter(|(p, s)| s.is_active() && !local.contains(p)).map(|(p, _)| *p).collect();
        let candidates: Vec<Candidate> = self
            .peers
            .iter()
            .filter_map(|(peer, session)| {
                let player = self.roster.player_of(*peer)?;
                let roles = self.roles.get(peer).copied().unwrap_or_default();
                let eligible = session.is_active()
                    && roles.can_host
                    && (!self.watching.contains_key(&player) || roles.keeper)
                    && !local.contains(peer);
                Some(Candidate {
                    peer: *peer,
                    rtt_ms: self.latency.get(&player).copied(),
                    joined: self.migration.joined.get(&player).copied().unwrap_or(u64::MAX),
                    eligible,
                    reaches_all: migration::reaches_all(
                        *peer,
                        self.migration.links.get(peer).map(Vec::as_slice),
                        &remote,
                    ),
                })
            })
            .collect();
        // Those that reach everyone first, in the rule's order; then those that reached some
        // (a newcomer's mesh still coming up, a pair of homes whose link never does), in the
        // same order. Each is listed only if it is linked, both ways, to every successor
        // listed before it: successors always reach one another, so two of them never claim
        // apart, and a player a successor cannot reach dials the new host again.
        let full = migration::rank(&candidates);
        let partial: Vec<Candidate> = candidates
            .iter()
            .filter(|c| !c.reaches_all && self.migration.links.contains_key(&c.peer))
            .map(|c| Candidate { reaches_all: true, ..*c })
            .collect();
        let links = |p: &PeerKey| self.migration.links.get(p).map(Vec::as_slice).unwrap_or_default();
        let mut ranked: Vec<PeerKey> = Vec::new();
        for peer in full.into_iter().chain(migration::rank(&partial)) {
            if ranked.iter().all(|q| links(&peer).contains(q) && links(q).contains(&peer)) {
                ranked.push(peer);
            }
        }
        let voters: Vec<PeerKey> = self
            .roles
            .iter()
            .filter(|(p, r)| r.checks && self.peers.get(p).is_some_and(|s| s.is_active()))
            .map(|(p, _)| *p)
            .collect();
        if ranked == self.migration.succession && voters == self.migration.voters && !self.migration.publish_due {
            return;
        }
        self.migration.publish_due = false;
        self.migration.succession = ranked;
        self.migration.voters = voters;
        let list = Succession {
            epoch: self.config.epoch,
            peers: self.migration.succession.clone(),
            voters: Some(self.migration.voters.clone()),
        }
        .encode();
        for session in self.peers.values_mut().filter(|s| s.is_active()) {
            session.send(Channel::Reliable, op::SUCCESSION, &list);
        }
        self.migration.stats.successions += 1;
    }

    /// Sends the pending log entries to every stream that has had a checkpoint.
    fn send_log(&mut self) {
        let pending = std::mem::take(&mut self.migration.pending);
        let synced: Vec<PeerKey> = self.migration.streams.iter().filter(|(_, s)| s.synced).map(|(p, _)| *p).collect();
        if synced.is_empty() {
            return;
        }
        let bytes = match LogBatch::new(self.config.epoch, &pending).encode() {
            Ok(bytes) => bytes,
            Err(e) => return tracing::error!("the migration log does not encode: {e}"),
        };
        for peer in synced {
            if let Some(session) = self.peers.get_mut(&peer).filter(|s| s.is_active()) {
                session.send(Channel::Reliable, op::INPUT_LOG, &bytes);
                let stats = &mut self.migration.stats;
                stats.log_batches += 1;
                stats.log_bytes += 1 + bytes.len() as u64;
                *stats.per_successor.entry(peer).or_default() += 1 + bytes.len() as u64;
            }
        }
    }

    /// Takes a checkpoint and sends it to `to`.
    pub(super) fn send_checkpoint(&mut self, to: &[PeerKey], now: Duration) {
        let checkpoint = match self.checkpoint() {
            Ok(c) => c,
            Err(e) => return tracing::error!("no checkpoint: {e}"),
        };
        let state_len = checkpoint.state.len();
        let parts = match checkpoint
            .encode()
            .map(|bytes| (bytes.len(), checkpoint_parts(self.migration.checkpoint_id, &bytes)))
        {
            Ok((len, Ok(parts))) => {
                self.migration.stats.last_checkpoint = (len, state_len);
                parts
            }
            Ok((_, Err(e))) => return tracing::error!("the checkpoint does not split: {e}"),
            Err(e) => return tracing::error!("the checkpoint does not encode: {e}"),
        };
        self.migration.checkpoint_id = self.migration.checkpoint_id.wrapping_add(1);
        let size: u64 = parts.iter().map(|p| 1 + p.len() as u64).sum();
        for peer in to {
            let (Some(session), Some(stream)) =
                (self.peers.get_mut(peer).filter(|s| s.is_active()), self.migration.streams.get_mut(peer))
            else {
                continue;
            };
            for part in &parts {
                session.send(Channel::Reliable, op::CHECKPOINT, part);
            }
            stream.synced = true;
            stream.next_checkpoint = now + self.migration.config.checkpoint_interval;
            let stats = &mut self.migration.stats;
            stats.checkpoints += 1;
            stats.checkpoint_bytes += size;
            *stats.per_successor.entry(*peer).or_default() += size;
        }
    }
}
