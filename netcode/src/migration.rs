//! Host migration on the wire: the succession list, its ranking rule, checkpoint parts.
//!
//! The host publishes a [`Succession`] to every peer (`SUCCESSION` frames, on every
//! change) and streams to the first ones checkpoints (`CHECKPOINT`, in parts) and the log
//! (`INPUT_LOG`). What checkpoints and logs hold is the host crate's business; here they
//! are bytes.
//!
//! # Ranking
//!
//! [`rank`] orders the candidates: peers that are connected, past their handshake, play
//! (no spectators), do not live in the host's own process and can reach everyone. They
//! are sorted by
//!
//! 1. their smoothed RTT to the host, in [`RTT_BUCKET_MS`] buckets (so that jitter does
//!    not reorder the list); peers without a sample yet come after those with one;
//! 2. then join order (who joined first ranks first);
//! 3. then peer key, so the order is total.
//!
//! A successor that takes over can only serve the peers it has a link to, so every client
//! reports its open mesh links to the host (`LINKS`, see below) once after its welcome and
//! whenever they change. A candidate *reaches everyone* ([`reaches_all`]) when its last
//! report names every other connected remote peer of the host: players and spectators past
//! their handshake, but neither the host itself nor the peers in the host's own process
//! (its local player). A candidate that has not reported yet is left out of the list, even
//! alone (a client that never reports is one that cannot take over), and so is one whose
//! report misses a peer, until a report says it reaches everyone. So is a client whose hello
//! did not say it can host (`canHost`, [`crate::session::Hello::can_host`]).
//!
//! # `SUCCESSION` payload (big-endian)
//!
//! | offset | size   | field   | meaning                                  |
//! |-------:|-------:|---------|------------------------------------------|
//! | 0      | 4      | `epoch` | the host's epoch (`u32`)                 |
//! | 4      | 1      | `n`     | number of successors (≤ [`MAX_SUCCESSORS`]) |
//! | 5      | 16 × n | `peers` | successors' peer keys (`u128`), best first |
//! | 5 + 16n | 1     | `m`     | number of voters (optional, with what follows) |
//! | 6 + 16n | 16 × m | `voters` | the peers that answer the room's check (`u128`), ascending |
//!
//! Without the voters' section every linked peer counts as a voter.
//!
//! # `CHECKPOINT` payload (big-endian)
//!
//! A checkpoint of any size up to [`MAX_CHECKPOINT`] is split into parts of at most
//! [`MAX_PART_DATA`] bytes, one frame each. A host sends parts of [`PART_DATA`] bytes: each
//! is then one chunk of the reliable channel's SCTP association, a message of its own, so the
//! unreliable channel's snapshots go out between two parts instead of waiting behind a
//! checkpoint whose chunks must leave in one run:
//!
//! | offset | size | field   | meaning                                          |
//! |-------:|-----:|---------|--------------------------------------------------|
//! | 0      | 4    | `id`    | checkpoint id (`u32`), the same in all its parts |
//! | 4      | 2    | `index` | this part's position (`u16`), `0..count`         |
//! | 6      | 2    | `count` | number of parts (`u16`), `≥ 1`                   |
//! | 8      | rest | `data`  | the next slice of the checkpoint's bytes          |
//!
//! # `CLAIM` payload (big-endian)
//!
//! A successor that took the match over sends it to every peer before anything else:
//!
//! | offset | size | field   | meaning                                                 |
//! |-------:|-----:|---------|---------------------------------------------------------|
//! | 0      | 4    | `epoch` | the new host's epoch (`u32`): the old one plus one      |
//! | 4      | 1    | `rank`  | the claimant's place in the old succession list (`u8`)  |
//! | 5      | 4    | `tick`  | the tick the new host continues from (`u32`)            |
//! | 9      | 1    | `lost`  | members that said the host is lost, the claimant included (`u8`) |
//! | 10     | 1    | `answered` | members that answered, the claimant included (`u8`)  |
//!
//! The last two are the claim's [`Evidence`] (255 of 255 for a handed-off successor's,
//! [`Evidence::HANDED`]; a 9-byte claim reads as resting on nothing, 0 of 0).
//!
//! A client that follows the claim reckons the match time it lost from `tick`: the newest
//! match time it saw from the old host minus `tick`'s ([`ClientStats::rewind_ms`](crate::client::ClientStats::rewind_ms)).
//!
//! A client takes a claim only when it beats the host it follows by `(epoch, −rank)`:
//! a stale claim (an epoch not above the one known) or a lower-ranked one at the same
//! epoch is refused, so two claimants resolve to one, the best ranked.
//!
//! Two claimants at the same epoch can hold the same rank: each went by a different list
//! (the newest list was lost with the host's line and reached only one of them, or one
//! claims after a list that did not name it yet). Then the lower mesh key goes first
//! ([`Claim::precedes`]), for the hosts and their clients alike: the other host steps down,
//! and the room follows one host. A new host heeds such a rival, which its own list may not
//! rank where the rival's did, for [`RIVAL_WINDOW`] after its takeover, and only one whose
//! claim holds the room.
//!
//! # `HANDOFF` payload (big-endian)
//!
//! A host that leaves gracefully sends, after a final log batch and checkpoint to its
//! successors, to every peer:
//!
//! | offset | size | field   | meaning                                  |
//! |-------:|-----:|---------|------------------------------------------|
//! | 0      | 4    | `epoch` | the leaving host's epoch (`u32`)          |
//! | 4      | 16   | `to`    | the successor's peer key (`u128`)         |
//!
//! # `LINKS` payload (big-endian)
//!
//! A client → host report of the mesh peers the client has an open link to (the host
//! among them; see [Ranking](#ranking)), on the reliable channel:
//!
//! | offset | size   | field   | meaning                                      |
//! |-------:|-------:|---------|----------------------------------------------|
//! | 0      | 1      | `n`     | number of peers (≤ [`MAX_LINKS`])             |
//! | 1      | 16 × n | `peers` | their peer keys (`u128`)                      |
//!
//! # `CHECKPOINT_REQUEST` payload (client → host)
//!
//! Empty. A successor whose shadow diverged from the host's log or missed entries of it
//! asks for a fresh checkpoint instead of waiting for the periodic one. The host answers a
//! peer it streams to with a checkpoint (after the log so far, like any checkpoint), at most
//! one per [`MIN_REQUEST_INTERVAL`] per peer, and ignores requests from other peers; a
//! client sends no more often either. A request with a payload is a protocol violation.
//!
//! # The `@changeHost` vote
//!
//! Players may vote the host away (spec 000, votes): the vote runs between the clients,
//! not on port 7, so the host it is about never sees it; a window shows it as the engine
//! vote [`CHANGE_HOST_VOTE`] (`@changeHost`; names starting with `@` are reserved for the
//! engine's votes).
//!
//! - **Electorate**: the peers of the host's newest succession list as each client holds
//!   it — the connected remote players that can reach everyone (no spectators, not the
//!   host's own local player, see [Ranking](#ranking)). Every client has that list, so
//!   every client counts the same way, and the host's own count is the same list.
//! - **Calling**: a client of the electorate sends `HOST_VOTE` to every mesh peer but the
//!   host, on the reliable channel; the caller votes yes. A client takes it when its epoch
//!   is the one of the host it follows, the sender is the caller and in its electorate, it
//!   is in the electorate itself and no other vote is open; the vote is open for
//!   [`HOST_VOTE_TIME`] from when it arrived.
//! - **Answering**: `HOST_BALLOT` to every mesh peer but the host; a later ballot from
//!   the same voter replaces its earlier one. Ballots from outside the electorate are ignored.
//! - **Passing**: once the yes votes a client counts are a strict majority of its
//!   electorate, it sends `STEP_DOWN` to the host (once per vote; every client that counts
//!   the majority does, so the vote passes even if one of them is gone). The vote fails when
//!   a majority said no (a strict yes majority can no longer come) or its time is up.
//! - **Stepping down**: the host takes a `STEP_DOWN` only from a peer of its succession list
//!   (connected, past its handshake, remote, a player) and only if `yes × 2` exceeds the
//!   length of that list — its own count, not the sender's. It then hands the match off
//!   (log, final checkpoint, `HANDOFF` to the first successor): no tick is lost. The host
//!   cannot check the ballots (it never sees them); it checks that the majority claimed is
//!   one of its own electorate.
//!
//! # `HOST_VOTE` payload (big-endian, client → clients)
//!
//! | offset | size | field    | meaning                                                   |
//! |-------:|-----:|----------|-----------------------------------------------------------|
//! | 0      | 4    | `epoch`  | the epoch of the host the vote is about (`u32`)           |
//! | 4      | 16   | `caller` | the caller's peer key (`u128`), the sender itself          |
//! | 20     | 4    | `id`     | the vote's id (`u32`), chosen by the caller ([`HostVote::id_for`]) |
//!
//! # `HOST_BALLOT` payload (big-endian, client → clients)
//!
//! | offset | size | field | meaning                          |
//! |-------:|-----:|-------|----------------------------------|
//! | 0      | 4    | `id`  | the vote's id (`u32`)            |
//! | 4      | 1    | `yes` | `1` yes, `0` no (anything else is an error) |
//!
//! # `STEP_DOWN` payload (big-endian, client → host)
//!
//! | offset | size | field        | meaning                                              |
//! |-------:|-----:|--------------|------------------------------------------------------|
//! | 0      | 4    | `id`         | the vote's id (`u32`)                                |
//! | 4      | 2    | `yes`        | yes votes counted (`u16`), `≤ electorate`            |
//! | 6      | 2    | `electorate` | the electorate's size as the sender counts it (`u16`), `≥ 1` |
//!
//! # Before a claim: asking the room
//!
//! A successor counts the host lost on its own link's evidence, and its own link (or its own
//! process: a stall, a starved CPU) can be the one that failed while the host plays on for
//! everyone else. So before it claims, a successor whose turn it is asks the room (Raft's
//! pre-vote, in spirit): `HOST_CHECK` to every fellow peer it was linked to when it lost the
//! host, on the unreliable channel, again every round until it decides. Each answers, on the
//! unreliable channel too, with `HOST_SEEN`: the epoch of the host it follows and how long ago
//! it last heard that host. A lost check or answer is made up for by the next round; a reliable
//! copy, lost, would hold up what follows it on that mesh link's reliable channel (the claim,
//! the hello to the new host, its welcome) until its retransmission, 500 ms or more on a link
//! that has carried little. For the same reason the new host sends its `CLAIM` on both
//! channels, and a follower its hello to the claimer; the other copies of either are ignored.
//! The unreliable copy is said twice, [`ECHO_AFTER`](crate::session::ECHO_AFTER) apart, so
//! that the two never share a packet: copies on both channels said at once go in one packet,
//! and one loss would take them all, leaving the reliable one to its retransmission.
//!
//! - An answer says **the host is alive** when it is about the same epoch and the host was
//!   heard within [`ALIVE_WITHIN`]: a host that plays on sends every client 30 snapshots a
//!   second, while after a crash every client has been silent about as long as the asker,
//!   at least its turn's timeout (150 ms or more). An answer about a newer epoch says a new
//!   host exists (its claim is on its way): the old one counts as lost.
//! - The successor **claims** once the answers saying the host is lost, with its own view,
//!   are a strict majority of the room (the peers asked and itself): with two others, the
//!   first "lost"; with four, two of them. It also claims when a round's time is up
//!   ([`CHECK_TIME`], or its turn's timeout if longer) and more answers said lost than
//!   alive. Otherwise the round ends with no claim and it asks again: while the host plays on
//!   for most of the room, and while nobody answers (a successor whose own links all died
//!   would otherwise host a match of one beside the real one). With nobody else in the room
//!   but the host, it claims at once. A handed-off successor (the host named it) never asks.
//! - A welcomed client answers any peer of the mesh, at most once per [`MIN_CHECK_INTERVAL`]
//!   each: the host's lists travel on lossy lines, and the newest (naming the asker) may have
//!   been lost with the host's line. The answer says only what the client hears. A host (a
//!   process that took the match over) ignores both frames. A lying peer cannot hold a
//!   takeover, nor push one, against the room's majority.
//! - A client **still joining** (linked, its hello said, no welcome yet) answers too, with
//!   epoch 0 and the time since its newest link: a live host answers a hello a round trip
//!   after the link comes up, so a joiner that heard nothing long after it says the host is
//!   lost like any client. The host may have named it a voter already (its welcome lost with
//!   the host's line), and a room waiting on its silence would wait for the rendezvous.
//! - **Every successor asks at once.** A successor counts the host lost when it was silent
//!   for the successor's own timeout, and a successor that waits for its turn still asks the
//!   room when it loses the host. A client asked, silent itself for half its own timeout
//!   (judged from the gaps it has seen, between its floor and half its ceiling), counts the
//!   host lost then: the successor first in line, whose own timeout may be the longer, takes
//!   its turn a timeout sooner.
//! - **A successor that cannot take over passes.** One the host listed before its first
//!   checkpoint came (it keeps no shadow) says so in its own `HOST_CHECK` (`passes`), and every
//!   successor that hears it drops it from its order: the next in line takes its turn at once
//!   instead of after the passer's turn and a claim's way. Only the asker's own turn can be
//!   given up this way.
//! - **Answers to a warning count.** The answers a successor gets to its warning before its
//!   turn (the room's word that the host is lost, or not) count in its first round when they
//!   came within a round's time of it: it claims as soon as its turn comes, rather than a
//!   round trip later.
//! - **A fellow's own check is its answer.** A peer asks (or warns) only once it counts the
//!   host of that epoch lost, so its `HOST_CHECK` says what its `HOST_SEEN` would: while the
//!   successor counts that host lost too, a voter's check counts as that peer's answer
//!   "lost", in the successor's round or among the answers to its warning. One of the two
//!   lost on the line no longer costs the successor a round. Not a fellow successor's that
//!   may claim itself (it did not pass): its check may be its own turn's, the two having gone
//!   by different lists, and taken for an answer it would have both claim at once, where
//!   waiting for its answer lets one hear the other's claim first.
//! - **Only voters count.** A client says in its hello that it answers checks
//!   ([`Hello::checks`](crate::session::Hello::checks)); the host lists those peers in its
//!   succession list ([`Succession::voters`]). A successor asks every peer it is linked to,
//!   but counts toward the majority only the voters and whoever else answers: a peer of
//!   another make that never answers cannot hold a takeover by its silence, and a newcomer
//!   the host's last list had not named yet counts once it answers.
//! - **The rendezvous is a witness.** With a rendezvous to ask
//!   ([`ClientConfig::witness`](crate::client::ClientConfig::witness)), a successor alone with
//!   its host, or whose room is silent, does not claim on its own silence: its driver asks
//!   the rendezvous's room list ([`RoomInfo::holds`](crate::signal::RoomInfo::holds)) whether
//!   the host's socket is still there and speaking. Once it says the host is gone, and no
//!   answer of the round says the host plays on, the successor claims: at once when alone
//!   with the host or when a round already ended with the room silent, else at the round's
//!   end. A room that may still answer is heard first: the rendezvous hears only the host's
//!   signalling socket, which a lossy line can stall while the match plays on. While the
//!   rendezvous says the host is there, or cannot be reached, the successor holds (until
//!   [`ClientConfig::give_up`](crate::client::ClientConfig::give_up)).
//! - **A rendezvous in the host's own process speaks by going.** In the default setup the
//!   host serves the room's rendezvous itself, and says so in its invite
//!   ([`Invite::served`](crate::lobby::Invite::served), the `ROOM` message). That rendezvous
//!   dies with the host, so its room list never says the host left: instead, a question its
//!   machine refuses (nothing listens there: the process died) or that nobody answers (the
//!   host's whole line went quiet) says the host is gone, weighed with the room's answers
//!   exactly as a rendezvous apart saying the host's socket left. A rendezvous apart that
//!   refuses or does not answer says nothing of the host. The successor that then takes over
//!   serves the room in its own process and says so in its own invite; every player's socket
//!   moves there.
//!
//! # Claims a live host refuses
//!
//! A host that plays on and hears a claim of the next epoch steps down only to a claimant
//! that holds the room: its claim's [`Evidence`] says a strict majority of the members that
//! answered had lost the host ([`Evidence::holds_the_room`]). Otherwise it keeps the match:
//! it takes the next epoch itself and sends every peer a `CLAIM` of it (rank 0, resting on
//! nothing), and the claimant, whose process hosts a match of its own by then, yields to
//! its predecessor (it heeds a claim of its predecessor's beside its rivals') and joins it
//! again with its token. The host's own clients take their host's claim as a new epoch
//! and carry on. A client that still hears its host refuses such a claim itself, so the
//! room never splits over it; one that had lost the host too and followed the claimant is
//! left without a host when the claimant yields, and dials the match again. This is about a
//! claim of a newer epoch than the host followed: a rival of that host at its own epoch (two
//! claimants that both promoted) is judged by rank alone, as the host itself judges it and
//! steps down to a better one.
//!
//! # Hellos at a new host
//!
//! The players of the checkpoint's roster say hello to the new host with their tokens and take
//! their slots back. Each slot also names the peer that held it last (the rendezvous's id for
//! it, which every member shares), and a hello *without* a token from that peer, while its
//! slot waits, takes that slot back too, with a fresh token in the welcome: a player's join
//! hello goes to every member it is linked to, and on a lossy link the copy to the successor
//! can reach it only after it hosts, ahead of the player's resume hello on the same channel;
//! and a player whose welcome was lost with the old host has no token to show. Either is that
//! player's, not a newcomer's, and was seated a second time before.
//!
//! # Hellos said ahead
//!
//! A player that lost its host says its hello, with its token and on both channels, to the
//! first successor of its list at once (when that is a fellow), or to every fellow when no
//! list reached it (it had just joined), without waiting for a claim.
//! The successor, still a client, keeps the newest such hello of each fellow (only one with a
//! token: a join's hello, said to every peer met, has none). When it takes the match over, its
//! new host takes the hellos that came within [`HELLO_AHEAD_FRESH`](crate::client::HELLO_AHEAD_FRESH)
//! as if they came then, and each welcome goes right behind the claim: the player follows
//! the new host a claim's way after the takeover, not a claim's way and a round trip. A
//! welcome ahead of its claim (the claim's copies lost or late) is followed as well; the
//! claim, when it comes, only names the rank. The new host admits such a hello by the rules
//! of any hello (the token must hold a waiting slot), so keeping one trusts nothing.
//!
//! # Claimers and shadows the list does not name
//!
//! A client whose host is lost and that hears a claim from a peer its list does not name
//! (the host's newest list was lost with its line) says hello to the claimer with its token,
//! as after dialing the room again, and follows it if it hosts and welcomes it
//! ([`ClientStats::claims_dialed`](crate::client::ClientStats::claims_dialed)); the claim
//! itself is still refused.
//!
//! A client that keeps a shadow of the host but whose list no longer names it, linked to
//! every successor the list names, takes its turn after them: a successor ahead of it that
//! has no shadow yet cannot take over, and the room is not left without a host. Only while
//! its shadow is still streamed (a checkpoint or log batch within 2 s): one the host stopped
//! streaming to is behind the match, and would set everyone back to where it stopped.
//!
//! # `HOST_CHECK` payload (big-endian, client → clients)
//!
//! | offset | size | field   | meaning                                        |
//! |-------:|-----:|---------|------------------------------------------------|
//! | 0      | 4    | `epoch` | the epoch of the host the asker lost (`u32`)    |
//! | 4      | 1    | `flags` | bit 0: the asker keeps no shadow of that host and passes its turn (see [Before a claim](self#before-a-claim-asking-the-room)); other bits ignored. Absent from a client of an earlier build (4 bytes): no flags |
//!
//! # `HOST_SEEN` payload (big-endian, client → client)
//!
//! | offset | size | field       | meaning                                                  |
//! |-------:|-----:|-------------|----------------------------------------------------------|
//! | 0      | 4    | `asked`     | the epoch asked about (`u32`), the check's own            |
//! | 4      | 4    | `following` | the epoch of the host the answerer follows (`u32`)        |
//! | 8      | 4    | `silence`   | ms since the answerer last heard that host (`u32`, saturating); `u32::MAX` when it counts that host lost (its link dropped, or it was silent past the answerer's own timeout) |
//!
//! # Checkpoint parts
//!
//! Parts come in order on the reliable channel: [`CheckpointAssembler`] takes index 0 as
//! the start of a new checkpoint (dropping one left incomplete) and every later part must
//! follow its predecessor. Decoders return errors, never panic.

use thiserror::Error;

use crate::bytes::{Reader, Truncated, WriteBe};
use crate::transport::PeerKey;

/// Most successors a [`Succession`] lists.
pub const MAX_SUCCESSORS: usize = 32;

/// Shortest time between two checkpoints a successor asks for (`CHECKPOINT_REQUEST`): the
/// host answers at most one request per peer in it, and a client sends no more often.
pub const MIN_REQUEST_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// Most peers a [`Links`] report names.
pub const MAX_LINKS: usize = u8::MAX as usize;

/// The engine vote a window shows for a `HOST_VOTE` (see [the `@changeHost` vote](self#the-changehost-vote)).
pub const CHANGE_HOST_VOTE: &str = "@changeHost";

/// A `HOST_SEEN` whose host was heard less than this long ago says the host is alive (see
/// [Before a claim](self#before-a-claim-asking-the-room)).
pub const ALIVE_WITHIN: std::time::Duration = std::time::Duration::from_millis(100);

/// How long a successor waits for the room's answers to a `HOST_CHECK` at least, before it
/// counts them (and asks again).
pub const CHECK_TIME: std::time::Duration = std::time::Duration::from_millis(200);

/// A peer answers one asker's `HOST_CHECK` at most once per this long.
pub const MIN_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a `@changeHost` vote stays open.
pub const HOST_VOTE_TIME: std::time::Duration = std::time::Duration::from_secs(15);

/// Width of the RTT buckets of the ranking rule, ms.
pub const RTT_BUCKET_MS: f64 = 20.0;

/// Largest checkpoint [`CheckpointAssembler`] puts together: 16 MiB.
pub const MAX_CHECKPOINT: usize = 16 * 1024 * 1024;

/// Size of a checkpoint part's header.
pub const PART_HEADER_LEN: usize = 4 + 2 + 2;

/// Most checkpoint bytes in one part a receiver takes (the frame stays well under the 256 KiB
/// frame limit).
pub const MAX_PART_DATA: usize = 192 * 1024;

/// Checkpoint bytes in one part a sender makes ([`checkpoint_parts`]): the part's frame fits
/// one DATA chunk of the SCTP association under a data channel (about 1,150 bytes at its
/// 1,200-byte MTU). A message of several chunks must leave in one run of TSNs, and while the
/// congestion window holds its rest back, nothing else of the association goes.
pub const PART_DATA: usize = 1024;

/// Why a migration frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MigrationError {
    /// A `SUCCESSION` payload of the wrong length.
    #[error("succession list of {len} bytes does not match its count")]
    BadSuccession {
        /// The payload's size.
        len: usize,
    },
    /// More successors than [`MAX_SUCCESSORS`].
    #[error("{n} successors, at most {MAX_SUCCESSORS}")]
    TooManySuccessors {
        /// The count.
        n: usize,
    },
    /// A part shorter than its header, with no data, a zero count or an index past it.
    #[error("malformed checkpoint part")]
    BadPart,
    /// A part that does not follow the previous one.
    #[error("checkpoint part {index} of {id} out of order")]
    OutOfOrder {
        /// The checkpoint id.
        id: u32,
        /// The part's index.
        index: u16,
    },
    /// A `CLAIM` or `HANDOFF` payload of the wrong length.
    #[error("migration control payload of {len} bytes")]
    BadControl {
        /// The payload's size.
        len: usize,
    },
    /// A `LINKS` payload whose length does not match its count.
    #[error("links report of {len} bytes does not match its count")]
    BadLinks {
        /// The payload's size.
        len: usize,
    },
    /// A checkpoint above [`MAX_CHECKPOINT`] bytes.
    #[error("checkpoint of {len} bytes or more exceeds {MAX_CHECKPOINT}")]
    TooLarge {
        /// The size reached.
        len: usize,
    },
    /// A `HOST_BALLOT` whose answer is neither 0 nor 1, or a `STEP_DOWN` counting more yes
    /// votes than voters or no voters at all.
    #[error("malformed change-host vote payload")]
    BadVote,
}

/// The host's succession list: who takes over, in order, if it goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Succession {
    /// The host's epoch.
    pub epoch: u32,
    /// The successors, best first.
    pub peers: Vec<PeerKey>,
    /// The peers that answer the room's check before a claim (their hellos said
    /// [`checks`](crate::session::Hello::checks)); `None`: every linked peer counts.
    pub voters: Option<Vec<PeerKey>>,
}

impl Succession {
    /// The `SUCCESSION` payload (at most [`MAX_SUCCESSORS`] peers are written).
    pub fn encode(&self) -> Vec<u8> {
        let peers = &self.peers[..self.peers.len().min(MAX_SUCCESSORS)];
        let mut out = Vec::with_capacity(5 + 16 * peers.len());
        out.put_u32(self.epoch);
        out.push(peers.len() as u8);
        for p in peers {
            out.put_u128(p.0);
        }
        if let Some(voters) = &self.voters {
            let voters = &voters[..voters.len().min(MAX_LINKS)];
            out.push(voters.len() as u8);
            for p in voters {
                out.put_u128(p.0);
            }
        }
        out
    }

    /// Reads a `SUCCESSION` payload.
    pub fn decode(bytes: &[u8]) -> Result<Succession, MigrationError> {
        let bad = MigrationError::BadSuccession { len: bytes.len() };
        let mut r = Reader::new(bytes);
        let (Ok(epoch), Ok(n)) = (r.u32("epoch"), r.u8("successor count")) else { return Err(bad) };
        let n = n as usize;
        if n > MAX_SUCCESSORS {
            return Err(MigrationError::TooManySuccessors { n });
        }
        let rest = r.rest();
        let peers = peer_keys(rest.get(..16 * n).ok_or(bad.clone())?, n).ok_or(bad.clone())?;
        let voters = match &rest[16 * n..] {
            [] => None,
            [m, keys @ ..] => Some(peer_keys(keys, usize::from(*m)).ok_or(bad)?),
        };
        Ok(Succession { epoch, peers, voters })
    }
}

/// A successor's announcement that it took the match over (`CLAIM`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The new host's epoch.
    pub epoch: u32,
    /// Its place in the succession list it succeeded by (0 is the first successor).
    pub rank: u8,
    /// The tick the new host continues from (its shadow's).
    pub tick: u32,
    /// What the claim rests on: the room's answers ([`Evidence::HANDED`] for a handed-off
    /// successor's; nothing for a live host's that answers a claim it refused).
    pub evidence: Evidence,
}

/// What a claim rests on (see [Claims a live host refuses](self#claims-a-live-host-refuses)):
/// of the members that answered the claimant's check (the claimant among them), how many
/// had lost the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Members that said the host is lost, the claimant included.
    pub lost: u8,
    /// Members that answered, the claimant included.
    pub answered: u8,
}

impl Evidence {
    /// A handed-off successor's: the host itself gave the match up (the `@changeHost` vote,
    /// or it left), which holds the room like any majority.
    pub const HANDED: Evidence = Evidence { lost: u8::MAX, answered: u8::MAX };

    /// Whether the claimant holds the room: a strict majority of the members that answered
    /// had lost the host.
    pub fn holds_the_room(&self) -> bool {
        u16::from(self.lost) * 2 > u16::from(self.answered)
    }

    /// What it says, for a log line: `handed over`, or `2 of 3 lost the host`.
    pub fn said(&self) -> String {
        if *self == Evidence::HANDED {
            "handed over".to_owned()
        } else {
            format!("{} of {} lost the host", self.lost, self.answered)
        }
    }
}

impl Claim {
    /// A claim resting on nothing but its epoch and rank (a handed-off successor's).
    pub fn new(epoch: u32, rank: u8, tick: u32) -> Claim {
        Claim { epoch, rank, tick, evidence: Evidence::default() }
    }

    /// The `CLAIM` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(11);
        out.put_u32(self.epoch);
        out.push(self.rank);
        out.put_u32(self.tick);
        out.push(self.evidence.lost);
        out.push(self.evidence.answered);
        out
    }

    /// Reads a `CLAIM` payload (one without its evidence, 9 bytes, rests on nothing).
    pub fn decode(bytes: &[u8]) -> Result<Claim, MigrationError> {
        whole(bytes, |r| {
            let (epoch, rank, tick) = (r.u32("epoch")?, r.u8("rank")?, r.u32("tick")?);
            let evidence = match r.is_empty() {
                true => Evidence::default(),
                false => Evidence { lost: r.u8("lost")?, answered: r.u8("answered")? },
            };
            Ok(Claim { epoch, rank, tick, evidence })
        })
        .ok_or(MigrationError::BadControl { len: bytes.len() })
    }

    /// Whether this claim beats a host at `epoch` with `rank`: a newer epoch, or the same
    /// epoch and a better (lower) rank.
    pub fn beats(&self, epoch: u32, rank: u8) -> bool {
        (self.epoch, std::cmp::Reverse(self.rank)) > (epoch, std::cmp::Reverse(rank))
    }

    /// Whether this claim, `claimer`'s, goes before a rival host's at the same epoch, `host`
    /// at `rank`: a better rank, or the same rank and the lower mesh key (two successors
    /// whose lists differed, see [the module docs](self#claim-payload-big-endian)). Both
    /// sides of a race reckon the same order, so exactly one of them goes first.
    pub fn precedes(&self, claimer: PeerKey, rank: u8, host: PeerKey) -> bool {
        (self.rank, claimer) < (rank, host)
    }
}

/// How long after its takeover a new host heeds a rival at its own epoch that its list does
/// not rank where the rival's list did ([`Claim::precedes`]): rivals that each went first by
/// their own list claim at the end of the same turn, within a check of the room and a claim's
/// way of one another (tens to hundreds of ms), and a claim later than this is not a rival's.
/// The window is all a member of the mesh that claims falsely gets: it
/// unseats a new host only in the first two seconds, only with a claim that says it holds
/// the room, and the clients follow only a claimer their list names.
pub const RIVAL_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// A leaving host's last word (`HANDOFF`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The leaving host's epoch.
    pub epoch: u32,
    /// The successor that takes over.
    pub to: PeerKey,
}

impl Handoff {
    /// The `HANDOFF` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20);
        out.put_u32(self.epoch);
        out.put_u128(self.to.0);
        out
    }

    /// Reads a `HANDOFF` payload.
    pub fn decode(bytes: &[u8]) -> Result<Handoff, MigrationError> {
        whole(bytes, |r| Ok(Handoff { epoch: r.u32("epoch")?, to: PeerKey(r.u128("successor")?) }))
            .ok_or(MigrationError::BadControl { len: bytes.len() })
    }
}

/// A client's open mesh links (`LINKS`, see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    /// The peers it has an open link to (a client sends them in ascending order).
    pub peers: Vec<PeerKey>,
}

impl Links {
    /// The `LINKS` payload (at most [`MAX_LINKS`] peers are written).
    pub fn encode(&self) -> Vec<u8> {
        let peers = &self.peers[..self.peers.len().min(MAX_LINKS)];
        let mut out = Vec::with_capacity(1 + 16 * peers.len());
        out.push(peers.len() as u8);
        for p in peers {
            out.put_u128(p.0);
        }
        out
    }

    /// Reads a `LINKS` payload.
    pub fn decode(bytes: &[u8]) -> Result<Links, MigrationError> {
        let bad = MigrationError::BadLinks { len: bytes.len() };
        let mut r = Reader::new(bytes);
        let n = r.u8("link count").map_err(|_| bad.clone())?;
        Ok(Links { peers: peer_keys(r.rest(), usize::from(n)).ok_or(bad)? })
    }
}

/// What `read` reads from `bytes`, if it reads them all and no more.
fn whole<T>(bytes: &[u8], read: impl FnOnce(&mut Reader<'_>) -> Result<T, Truncated>) -> Option<T> {
    let mut r = Reader::new(bytes);
    let value = read(&mut r).ok()?;
    r.is_empty().then_some(value)
}

/// Exactly `n` peer keys of 16 bytes, if `bytes` holds that and no more.
fn peer_keys(bytes: &[u8], n: usize) -> Option<Vec<PeerKey>> {
    if bytes.len() != 16 * n {
        return None;
    }
    let mut r = Reader::new(bytes);
    (0..n).map(|_| r.u128("peer key").ok().map(PeerKey)).collect()
}

/// Whether `peer`, with its last links `report` (`None`: none yet, which reaches nobody),
/// reaches every one of `remote`, the host's other connected remote peers (see
/// [Ranking](self#ranking); `peer` itself may be among them).
pub fn reaches_all(peer: PeerKey, report: Option<&[PeerKey]>, remote: &[PeerKey]) -> bool {
    report.is_some_and(|linked| remote.iter().filter(|p| **p != peer).all(|p| linked.contains(p)))
}

/// A call for the `@changeHost` vote (`HOST_VOTE`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostVote {
    /// The epoch of the host the vote is about.
    pub epoch: u32,
    /// Who called it (it votes yes).
    pub caller: PeerKey,
    /// The vote's id.
    pub id: u32,
}

impl HostVote {
    /// The id of `caller`'s `n`-th vote: its key folded to 32 bits plus `n`, so that two
    /// callers' votes hardly ever share an id and one caller's never do.
    pub fn id_for(caller: PeerKey, n: u32) -> u32 {
        let k = caller.0;
        ((k ^ (k >> 32) ^ (k >> 64) ^ (k >> 96)) as u32).wrapping_add(n)
    }

    /// The `HOST_VOTE` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        out.put_u32(self.epoch);
        out.put_u128(self.caller.0);
        out.put_u32(self.id);
        out
    }

    /// Reads a `HOST_VOTE` payload.
    pub fn decode(bytes: &[u8]) -> Result<HostVote, MigrationError> {
        whole(bytes, |r| Ok(HostVote { epoch: r.u32("epoch")?, caller: PeerKey(r.u128("caller")?), id: r.u32("id")? }))
            .ok_or(MigrationError::BadControl { len: bytes.len() })
    }
}

/// An answer to the `@changeHost` vote (`HOST_BALLOT`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBallot {
    /// The vote's id.
    pub id: u32,
    /// Yes (change the host) or no.
    pub yes: bool,
}

impl HostBallot {
    /// The `HOST_BALLOT` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5);
        out.put_u32(self.id);
        out.push(u8::from(self.yes));
        out
    }

    /// Reads a `HOST_BALLOT` payload.
    pub fn decode(bytes: &[u8]) -> Result<HostBallot, MigrationError> {
        match whole(bytes, |r| Ok((r.u32("id")?, r.u8("answer")?))) {
            Some((id, yes @ (0 | 1))) => Ok(HostBallot { id, yes: yes == 1 }),
            Some(_) => Err(MigrationError::BadVote),
            None => Err(MigrationError::BadControl { len: bytes.len() }),
        }
    }
}

/// A passed `@changeHost` vote, to the host (`STEP_DOWN`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepDown {
    /// The vote's id.
    pub id: u32,
    /// Yes votes counted.
    pub yes: u16,
    /// The electorate's size, as the sender counts it.
    pub electorate: u16,
}

impl StepDown {
    /// The `STEP_DOWN` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8);
        out.put_u32(self.id);
        out.put_u16(self.yes);
        out.put_u16(self.electorate);
        out
    }

    /// Reads a `STEP_DOWN` payload.
    pub fn decode(bytes: &[u8]) -> Result<StepDown, MigrationError> {
        let (id, yes, electorate) = whole(bytes, |r| Ok((r.u32("id")?, r.u16("yes")?, r.u16("electorate")?)))
            .ok_or(MigrationError::BadControl { len: bytes.len() })?;
        if electorate == 0 || yes > electorate {
            return Err(MigrationError::BadVote);
        }
        Ok(StepDown { id, yes, electorate })
    }
}

/// A successor asks the room whether the host it lost plays on (`HOST_CHECK`, see
/// [Before a claim](self#before-a-claim-asking-the-room)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCheck {
    /// The epoch of the host the asker lost.
    pub epoch: u32,
    /// The asker keeps no shadow of that host, so it will not take over: a successor listed
    /// after it need not wait out its turn.
    pub passes: bool,
}

impl HostCheck {
    /// The `HOST_CHECK` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5);
        out.put_u32(self.epoch);
        out.push(u8::from(self.passes));
        out
    }

    /// Reads a `HOST_CHECK` payload: the epoch, and the flags byte if there is one (a client
    /// of an earlier build sends none: it does not pass). Flag bits other than the first are
    /// ignored.
    pub fn decode(bytes: &[u8]) -> Result<HostCheck, MigrationError> {
        let bad = || MigrationError::BadControl { len: bytes.len() };
        match bytes.len() {
            4 => whole(bytes, |r| Ok(HostCheck { epoch: r.u32("epoch")?, passes: false })).ok_or_else(bad),
            5 => whole(bytes, |r| Ok(HostCheck { epoch: r.u32("epoch")?, passes: r.u8("flags")? & 1 != 0 }))
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }
}

/// A peer's answer to a [`HostCheck`] (`HOST_SEEN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostSeen {
    /// The epoch asked about.
    pub asked: u32,
    /// The epoch of the host the answerer follows; 0 while it is still joining (no host
    /// answered its hello yet, and the silence counts from its newest link).
    pub following: u32,
    /// Ms since the answerer last heard that host.
    pub silence_ms: u32,
}

impl HostSeen {
    /// The `HOST_SEEN` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12);
        out.put_u32(self.asked);
        out.put_u32(self.following);
        out.put_u32(self.silence_ms);
        out
    }

    /// Reads a `HOST_SEEN` payload.
    pub fn decode(bytes: &[u8]) -> Result<HostSeen, MigrationError> {
        whole(bytes, |r| {
            Ok(HostSeen { asked: r.u32("asked")?, following: r.u32("following")?, silence_ms: r.u32("silence")? })
        })
        .ok_or(MigrationError::BadControl { len: bytes.len() })
    }

    /// Whether this answer says the host of epoch `asked` plays on: the answerer follows it
    /// and heard it within [`ALIVE_WITHIN`].
    pub fn alive(&self) -> bool {
        self.alive_within(ALIVE_WITHIN)
    }

    /// Whether this answer says the host of epoch `asked` plays on: the answerer follows it
    /// (or is still joining) and heard it (or linked last) within `within` (a successor
    /// allows half the silence that made it count the host lost, and at least
    /// [`ALIVE_WITHIN`]: a lossy line's gaps are longer).
    pub fn alive_within(&self, within: std::time::Duration) -> bool {
        (self.following == self.asked || self.following == 0) && u128::from(self.silence_ms) < within.as_millis()
    }
}

/// A peer the host may rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The peer.
    pub peer: PeerKey,
    /// Its smoothed RTT to the host, ms, once measured.
    pub rtt_ms: Option<f64>,
    /// Its place in join order (lower joined earlier).
    pub joined: u64,
    /// Whether it may succeed at all (connected, a player that can host, not in the host's
    /// process).
    pub eligible: bool,
    /// Whether it has a link to every other remote peer ([`reaches_all`]).
    pub reaches_all: bool,
}

/// The eligible candidates in succession order (see the module docs for the rule).
pub fn rank(candidates: &[Candidate]) -> Vec<PeerKey> {
    let bucket = |c: &Candidate| match c.rtt_ms {
        Some(ms) if ms.is_finite() => (ms.max(0.0) / RTT_BUCKET_MS).floor() as u64,
        _ => u64::MAX,
    };
    let mut eligible: Vec<&Candidate> = candidates.iter().filter(|c| c.eligible && c.reaches_all).collect();
    eligible.sort_by_key(|c| (bucket(c), c.joined, c.peer));
    eligible.into_iter().map(|c| c.peer).collect()
}

/// Splits checkpoint bytes into `CHECKPOINT` payloads (see the module docs).
pub fn checkpoint_parts(id: u32, bytes: &[u8]) -> Result<Vec<Vec<u8>>, MigrationError> {
    if bytes.len() > MAX_CHECKPOINT {
        return Err(MigrationError::TooLarge { len: bytes.len() });
    }
    let slices: Vec<&[u8]> = if bytes.is_empty() { vec![&[][..]] } else { bytes.chunks(PART_DATA).collect() };
    let count = slices.len() as u16;
    Ok(slices
        .into_iter()
        .enumerate()
        .map(|(i, data)| {
            let mut part = Vec::with_capacity(PART_HEADER_LEN + data.len());
            part.put_u32(id);
            part.put_u16(i as u16);
            part.put_u16(count);
            part.extend_from_slice(data);
            part
        })
        .collect())
}

/// Puts checkpoint parts back together (one receiver per host).
#[derive(Debug, Default)]
pub struct CheckpointAssembler {
    current: Option<(u32, u16, u16, Vec<u8>)>,
}

impl CheckpointAssembler {
    /// A receiver with nothing in progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one `CHECKPOINT` payload; returns the checkpoint's bytes when it completes one.
    /// After an error nothing is in progress and the next index 0 starts afresh.
    pub fn push(&mut self, payload: &[u8]) -> Result<Option<Vec<u8>>, MigrationError> {
        let mut r = Reader::new(payload);
        let (Ok(id), Ok(index), Ok(count)) = (r.u32("part id"), r.u16("part index"), r.u16("part count")) else {
            self.current = None;
            return Err(MigrationError::BadPart);
        };
        let data = r.rest();
        if count == 0 || index >= count || (data.is_empty() && count > 1) {
            self.current = None;
            return Err(MigrationError::BadPart);
        }
        if index == 0 {
            self.current = Some((id, 0, count, Vec::new()));
        }
        let Some((cur_id, next, cur_count, buf)) = self.current.as_mut() else {
            return Err(MigrationError::OutOfOrder { id, index });
        };
        if *cur_id != id || *next != index || *cur_count != count {
            self.current = None;
            return Err(MigrationError::OutOfOrder { id, index });
        }
        if buf.len() + data.len() > MAX_CHECKPOINT {
            let len = buf.len() + data.len();
            self.current = None;
            return Err(MigrationError::TooLarge { len });
        }
        buf.extend_from_slice(data);
        *next += 1;
        if *next < count {
            return Ok(None);
        }
        Ok(self.current.take().map(|(_, _, _, bytes)| bytes))
    }
}

/// A migration frame a client received, for the app to feed its shadow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrationPayload {
    /// A whole checkpoint (its parts put together).
    Checkpoint(Vec<u8>),
    /// A log batch (`INPUT_LOG`).
    Log(Vec<u8>),
    /// A handoff message (`HANDOFF`).
    Handoff(Vec<u8>),
}

#[cfg(test)]
mod tests;
