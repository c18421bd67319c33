//! What a client does with what its host says: the welcome, snapshots (decoded against
//! their baselines), the key set, chat, the scoreboard and round ends, and the migration
//! streams its shadow is fed from.

use super::snapshots::Decoded;
use super::*;

impl ClientCore {
    /// The host named the key set (see [`Keys::switch`](super::keys::Keys::switch)): the
    /// inputs sent under the other set count as applied.
    pub(super) fn switch_keyset(&mut self, keyset: Keyset) {
        if let Some(applied) = self.keys.switch(keyset)
            && let Some((_, session)) = self.link.host.as_mut()
        {
            session.ack_inputs(applied);
        }
    }

    pub(super) fn on_event(&mut self, event: ClientEvent, now: Duration) {
        match event {
            ClientEvent::Welcomed(w) => {
                if w.epoch < self.following.epoch() {
                    // A host older than the one known: refused, and the search goes on.
                    self.stats.claims_refused += 1;
                    if let Some((_, session)) = self.link.host.as_mut() {
                        session.close(crate::session::close::NORMAL);
                    }
                    self.flush();
                    self.link.host = None;
                    self.link.searching = true;
                    return;
                }
                self.stats.welcomed_at = Some(now);
                tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: welcomed at epoch {}", now.as_secs_f64(), w.epoch);
                // Someone hosts the match: nothing left to take over (a host lost before, whose
                // claimer this client dialed, or an orphan's).
                if self.redialing.welcomed() {
                    self.stats.reconnects += 1;
                }
                self.link.links_reported = None;
                // A new session: the host knows no baseline of this client's yet, and the old
                // host's seqs mean nothing to it.
                self.snapshots.new_session();
                self.stats.host_epoch = w.epoch;
                if self.following.welcomed(w.epoch, w.tick) {
                    // A new host welcomed this client before its claim came (a hello said
                    // ahead, or to a claimer the list did not name): the old host's parts
                    // are of no use to it, as at a claim.
                    self.shadow.forget();
                }
                self.keys.welcomed(&w);
                // A new host: the inputs it has not applied go again.
                if let Some((_, session)) = self.link.host.as_mut() {
                    for e in self.keys.unapplied(&w) {
                        session.push(e);
                    }
                }
                self.link.welcome = Some(w);
            }
            ClientEvent::Rejected(r) => self.closed = Some((r.code, r.reason)),
            ClientEvent::Closed { code: crate::session::close::HEARTBEAT, by_peer: false, .. }
                if self.link.welcome.is_some() =>
            {
                self.on_host_lost(now, None, "no frame from the host in time")
            }
            ClientEvent::Closed { code, reason, .. } => {
                if self.closed.is_none() {
                    self.closed = Some((code, reason));
                }
            }
            ClientEvent::Meta { port: op::CONFIG_DATA, payload } => {
                let config: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
                self.snapshots.configured(SnapshotSchema::from_value(config["engine"]["snapshot"].clone()).ok());
                self.keys.configured(serde_json::from_value(config["game"]["playerKeys"].clone()).ok());
                self.link.config = Some(config);
                self.stats.configs += 1;
            }
            ClientEvent::Meta { port: op::CHAT_DATA, payload } => {
                // The host refused this player's token: it plays unverified, and has no round
                // to sign until a token of its holds.
                if let Ok(MetaMessage::Chat(ChatMessage::System { group, code, .. })) =
                    MetaMessage::decode(op::CHAT_DATA, &payload)
                    && EngineLine::of(&group, code) == Some(EngineLine::TokenRefused)
                {
                    self.rounds.set_key(None);
                }
                if let Ok(line) = serde_json::from_slice(&payload) {
                    self.chat.heard(line);
                }
            }
            ClientEvent::Meta { port: op::STAT_DATA, payload } => {
                if let Ok(MetaMessage::Stat(update)) = MetaMessage::decode(op::STAT_DATA, &payload) {
                    self.rounds.stat(&update);
                }
                self.meta.push((op::STAT_DATA, payload));
            }
            ClientEvent::Meta { port: op::KEYSET_DATA, payload } => {
                if let Ok(MetaMessage::Keyset(keyset)) = MetaMessage::decode(op::KEYSET_DATA, &payload) {
                    self.switch_keyset(keyset);
                }
                self.meta.push((op::KEYSET_DATA, payload));
            }
            ClientEvent::Meta { port, payload } => self.meta.push((port, payload)),
            ClientEvent::Snapshot(bytes) => self.on_snapshot(&bytes, now),
            ClientEvent::Engine { opcode, payload } => self.on_migration(opcode, &payload),
        }
    }

    /// A snapshot from the host: decoded (a delta frame against the baseline it names), kept
    /// as a baseline and shown, counted; the first from a new host ends the host change.
    fn on_snapshot(&mut self, bytes: &[u8], now: Duration) {
        let Some(decoded) = self.snapshots.decode(bytes) else { return };
        match decoded {
            Err(DecodeError::MissingBaseline { .. }) => self.stats.missing_baselines += 1,
            Ok(Decoded { frame, delta: is_delta, kept }) => {
                if is_delta {
                    self.stats.delta_frames += 1;
                    self.stats.delta_bytes += bytes.len() as u64;
                    if delta::baseline_of(bytes).is_ok_and(|b| b == 0) {
                        self.stats.keyframes += 1;
                    }
                    // The host is told of each world kept as a baseline.
                    if let (Some(seq), Some((_, session))) = (kept, self.link.host.as_mut()) {
                        session.ack_frame(seq);
                    }
                }
                self.stats.snapshots += 1;
                self.stats.first_snapshot_at.get_or_insert(now);
                if let Some((r, resume_tick)) = self.following.resumed() {
                    self.stats.migrations += 1;
                    self.stats.resume = Some(now.saturating_sub(r.lost_at));
                    self.stats.freeze = Some(now.saturating_sub(r.heard_at));
                    tracing::debug!(
                        target: TAKEOVER_LOG,
                        "{:.3} s: the new host's first snapshot, {} ms after the old one was last heard",
                        now.as_secs_f64(),
                        now.saturating_sub(r.heard_at).as_millis()
                    );
                    let from_ms = match resume_tick {
                        Some(tick) => tick as f64 * self.tick_ms(),
                        None => frame.server_time_ms,
                    };
                    self.stats.rewind_ms = r.last_time_ms.map(|t| (t - from_ms).max(0.0));
                }
                if let (Some(p), Some((_, session))) = (&frame.player, self.link.host.as_mut()) {
                    session.ack_inputs(p.last_input_seq);
                }
                self.snapshots.show(frame);
            }
            Err(_) => self.stats.bad_snapshots += 1,
        }
    }

    /// Migration frames (and the chat history after a resumed welcome, and round ends). One that does not decode is counted and ignored: the sender is the
    /// host, and closing the client's only link to the match would lose more than it protects.
    pub(super) fn on_migration(&mut self, opcode: u8, payload: &[u8]) {
        if opcode == op::CHAT_HISTORY {
            match ChatHistory::decode(payload) {
                Ok(history) => self.chat.merge(history.0.iter().map(ChatMessage::to_json).collect()),
                Err(_) => self.stats.bad_migration_frames += 1,
            }
            return;
        }
        if opcode == op::ROOM {
            let host = self.link.host.as_ref().map(|(peer, _)| *peer);
            match (crate::lobby::Invite::decode(payload), host) {
                (Ok(invite), Some(host)) => self.room = Some((host, invite)),
                (Ok(_), None) => {}
                (Err(_), _) => self.stats.bad_migration_frames += 1,
            }
            return;
        }
        if opcode == op::ROUND_RESULTS {
            let me = self.link.welcome.as_ref().map(|w| u32::from(w.player_id));
            self.rounds.heard(payload, me);
            return;
        }
        self.stats.migration_frames += 1;
        let payload = match opcode {
            op::SUCCESSION => {
                match Succession::decode(payload) {
                    Ok(list) => self.following.take_succession(list),
                    Err(_) => self.stats.bad_migration_frames += 1,
                }
                return;
            }
            op::CHECKPOINT => match self.shadow.checkpoint_part(payload, self.now) {
                Ok(Some(whole)) => whole,
                Ok(None) => return,
                Err(_) => {
                    self.stats.bad_migration_frames += 1;
                    return;
                }
            },
            op::INPUT_LOG => self.shadow.log(payload, self.now),
            // The host kept the match against a claim that did not hold the room and took a
            // new epoch (see [Claims a live host refuses](crate::migration#claims-a-live-host-refuses)).
            op::CLAIM => {
                match Claim::decode(payload) {
                    Ok(claim) if claim.epoch > self.following.epoch() => {
                        self.following.follow_unclaimed(claim.epoch, 0);
                        self.stats.host_epoch = claim.epoch;
                    }
                    // The other copy of the claim that made this peer the host (it comes on
                    // both channels).
                    Ok(claim) if claim.epoch == self.following.epoch() && claim.rank == self.following.rank() => {}
                    Ok(_) => self.stats.claims_refused += 1,
                    Err(_) => self.stats.bad_migration_frames += 1,
                }
                return;
            }
            op::HANDOFF => match Handoff::decode(payload) {
                Ok(h) => {
                    let now = self.now;
                    self.on_host_lost(now, Some(h.to), "the host handed the match off");
                    MigrationPayload::Handoff(payload.to_vec())
                }
                Err(_) => {
                    self.stats.bad_migration_frames += 1;
                    return;
                }
            },
            _ => {
                self.stats.bad_migration_frames += 1;
                return;
            }
        };
        if self.shadow.queue(payload) {
            self.stats.migration_dropped += 1;
        }
    }
}
