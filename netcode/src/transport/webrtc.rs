//! The WebRTC transport: this process's full-mesh link to a lobby, over matchbox data channels.
//!
//! [`WebRtcTransport::connect`] joins the room named by a signalling URL
//! (`ws://HOST:PORT/CODE`, see [`signal`](crate::signal)) with one matchbox socket: the
//! signalling server introduces every peer in the room to every other one, and each pair
//! opens one WebRTC peer connection carrying two data channels, added in the same order by
//! every peer: `0` reliable and ordered ([`Channel::Reliable`]), `1` unreliable and unordered
//! ([`Channel::Unreliable`]). The transport then behaves like any other [`Transport`]:
//! [`poll`](Transport::poll) reports peers connecting and disconnecting and the messages
//! they sent, [`send`](Transport::send) queues a message for one peer.
//!
//! # What another WebRTC stack needs to join
//!
//! A browser or any other stack is a peer like this one if it does what matchbox does:
//!
//! - **Signalling**: a websocket to `ws://HOST:PORT/ROOM` carrying JSON text messages. The
//!   server sends `{"IdAssigned": ID}` first, then `{"NewPeer": ID}` for each peer that joins
//!   later, `{"PeerLeft": ID}`, and `{"Signal": {"sender": ID, "data": SIGNAL}}`; a peer sends
//!   `{"Signal": {"receiver": ID, "data": SIGNAL}}` (and `"KeepAlive"`). `SIGNAL` is
//!   `{"Offer": SDP}`, `{"Answer": SDP}` or `{"IceCandidate": JSON}` (an `RTCIceCandidateInit`
//!   as a JSON string; `"null"` ends the candidates). IDs are UUIDs as strings. A peer may add
//!   `?key=KEY` (16 to 64 letters, digits, `-`, `_`, kept secret) to be named by it: its id is
//!   then the same on every rendezvous, and it may come back into its room under it.
//! - **Who offers**: the peer already in the room, on `NewPeer`; the newcomer answers.
//! - **Data channels, pre-negotiated** (`negotiated: true`, no DCEP): id `0`, label
//!   `matchbox_socket_0`, ordered and reliable ([`Channel::Reliable`]); id `1`, label
//!   `matchbox_socket_1`, unordered with `maxRetransmits: 0` ([`Channel::Unreliable`]). Both
//!   sides create both before the offer; a peer counts as connected once both are open.
//! - **ICE servers**: `GET /ice` on the signalling server ([`signal`](crate::signal)).
//!
//! What a peer sends through signalling is untrusted: a malformed offer or answer ends that
//! peer's handshake only (matchbox is used patched for this, `patches/matchbox_socket`).
//!
//! # Threads
//!
//! matchbox splits a socket in two: a [`WebRtcSocket`] that only moves messages through
//! in-memory queues, and a message loop future that does the work (the signalling
//! websocket, the handshakes, one loop per peer). The transport owns the socket and a
//! thread of its own, `vimp-webrtc`, that runs the message loop future to completion
//! with a small executor. So:
//!
//! - [`poll`](Transport::poll) and [`send`](Transport::send) never block and never do I/O:
//!   they drain and fill the socket's queues. The transport is `Send`, so it can live on the
//!   embedded host's thread or in a Bevy resource.
//! - Dropping the transport (or [`close`](WebRtcTransport::close)) stops the message loop:
//!   matchbox then closes every peer connection and the signalling websocket, so the other
//!   peers see this one disconnect within milliseconds. `close` also waits for the thread;
//!   `Drop` only signals it.
//! - The peer connections themselves are driven by webrtc-rs on smol's global executor,
//!   process-wide threads (`smol-1`…, one unless `SMOL_THREADS` says otherwise) that
//!   outlive the transport.
//! - When the message loop ends on its own (the signalling server was unreachable, or it
//!   went away while no peer was connected), the next [`poll`](Transport::poll) reports every
//!   peer disconnected and the transport is [closed](WebRtcTransport::is_closed), with the
//!   error kept in [`close_reason`](WebRtcTransport::close_reason). Established links survive
//!   the signalling server going away, and while one stands the socket joins its room again
//!   (backing off up to 5 s between tries) under the same id (`?key=`, see
//!   [`signal`](crate::signal)): once the rendezvous is back, or the balancer in front of it sends
//!   the room to another server, a newcomer finds this peer again.
//!
//! # Facts to design around
//!
//! - **64 KiB per message.** webrtc-rs's SCTP refuses a data channel message above
//!   [`MAX_MESSAGE`] (65,536) bytes, its maximum message size, and the error only reaches a
//!   log line in matchbox: the message is silently lost. [`send`](Transport::send) therefore never hands one to matchbox: it counts it in
//!   [`WebRtcStats::oversized`] ([`try_send`](WebRtcTransport::try_send) returns
//!   [`WebRtcError::TooLarge`]). Bigger frames go through a [`Chunker`](crate::frame::Chunker).
//! - **A hung peer is noticed late.** A peer whose process dies is reported
//!   [`Disconnected`](TransportEvent::Disconnected) within milliseconds (the signalling server
//!   sees its websocket close, or its connections close). A peer that hangs or loses its
//!   network is only noticed by ICE after about 30 s (its 5 s disconnected, then 25 s failed
//!   timeouts),
//!   and not at all by the signalling server: sessions need their own heartbeat
//!   ([`op::PING`](crate::frame::op::PING)) and close the peer on silence.
//! - **No default STUN server.** matchbox defaults to Google's STUN servers; this transport
//!   passes only the ICE servers it is given, possibly none, so no third-party server is
//!   contacted unless the user's settings or the signalling server
//!   ([`signal::ICE_PATH`](crate::signal::ICE_PATH)) name one. Without STUN only host
//!   candidates are gathered: enough on a LAN, not across NATs.
//! - **No per-peer close.** matchbox 0.15 cannot close one peer's connection
//!   (`WebRtcSocket::disconnect` is a to-do upstream), so
//!   [`disconnect`](Transport::disconnect) is local: see
//!   [`WebRtcTransport`]'s `Transport` implementation.
//! - **How fast a link comes up, and why.** webrtc-rs 0.21 spends a join waiting on timers,
//!   not on the network. Measured in the home-network lab (`scripts/lab.sh`, release builds,
//!   from starting `vimp join` to the host's welcome), with webrtc's defaults a join through
//!   two symmetric NATs via TURN took 4.2 s, through two port-preserving NATs 0.8 s, on one
//!   segment 0.63 s. Where the time went, with the fixes (`patches/`):
//!   - ICE checks run on a 200 ms tick, and the controlling side waits before it nominates a
//!     pair that is not host-to-host: 500 ms for server-reflexive, 1 s for peer-reflexive, 2 s
//!     for relayed pairs, counted from the start of the checks. matchbox now sets a 50 ms tick
//!     and waits of none, 300 ms and 1 s (`patches/matchbox_socket/PATCHED.md`).
//!   - Over a relay every packet waited in webrtc's TURN relayer until the driver next woke
//!     (the ICE tick, or a 1 s DTLS or SCTP retransmission), and what arrived through the relay
//!     raised its events one wake-up late: DTLS took 0.8–1.2 s and opening the channels 1 s.
//!     Without a relay, the SCTP INIT queued when DTLS completes waited for the next tick
//!     (~200 ms). The patched driver sends all of it in the same pass
//!     (`patches/webrtc/PATCHED.md`).
//!   - Now (`scripts/lab-figures.sh`, 20 joins each, p50): relayed 1.08 s, port-preserving
//!     NATs 0.14 s, one segment 0.08 s; a hole is still punched through two NATs 400 ms
//!     apart rather than relayed. Gathering is not the cost: the relay candidate (two TURN
//!     round trips) is there within milliseconds.
//!   - What is left is round trips: the signalling (`GET /ice`, the websocket, the offer and
//!     answer), ICE's check, DTLS's three (with its HelloVerifyRequest), SCTP's two, then the
//!     hello and welcome. With homes 400 ms apart and the rendezvous 200 ms from each, a
//!     join takes about 5 s.
//!   - On a lossy line the timers came back: a lost DTLS flight was sent again only after 1 s
//!     (rtc-dtls's fixed interval; webrtc sets none), a lost SCTP INIT, COOKIE-ECHO or lone
//!     DATA chunk (a hello, a welcome) after SCTP's 1 s minimum RTO, backing off to 60 s. Now
//!     a flight goes again after 250 ms, doubling (`patches/rtc-dtls/PATCHED.md`), and SCTP's
//!     RTO starts at 500 ms and stays between 300 ms and 3 s (`patches/rtc-sctp/PATCHED.md`).
//!     Measured in the lab (`--home a:cone --home b:cone`, both lines `25:8:1`, about 100 ms
//!     and 2 % loss each way between the homes; 20 joins): p50 1.38 s → 1.37 s, p90 2.3 s →
//!     1.7 s, worst 4.7 s → 1.8 s; on `50:15:2` (200 ms, 4 %) p50 3.0 s → 3.2 s, p90 4.6 s
//!     → 3.7 s, 18 → 19 of 20 in within 5 s, the DTLS handshake's p50 1.1 s → 0.76 s. Where a
//!     join's time goes: `vimp join --json` has `join_phases_ms` (the websocket's id, the link,
//!     the welcome, the first snapshot), and `RUST_LOG=matchbox_socket::phases=info` logs each
//!     handshake's phases per peer (offer, answer, candidates, ICE, DTLS, each data channel).
//!     Lossless at 25:8:1 the link took ~950 ms from the offer: candidates ~190 ms, ICE
//!     ~210 ms more, DTLS ~350 ms (three round trips), SCTP ~200 ms (two); then hello and
//!     welcome one round trip, and the first snapshot another.
//!   - Several of those waits were not the protocol's. The offerer held its candidates until
//!     the answer came back; the signalling websockets ran Nagle's algorithm, so a message
//!     sent right after another (an answer, then its candidates) waited for the ACK of the
//!     first; `GET /ice` wrote its request in pieces, each after the first held the same way;
//!     a lost SYN to the rendezvous cost TCP's 1 s initial timeout; DTLS made a cookie round
//!     trip that ICE's checks had already made pointless; and SCTP's 4380-byte initial window
//!     held the first snapshot behind the welcome, config and map for a round trip. Now
//!     candidates follow the offer, nothing is Nagled, connection attempts race every 250 ms,
//!     the DTLS server skips the cookie and SCTP starts with ten MTUs
//!     (`patches/*/PATCHED.md`). At 25:8:1 the link takes ~720 ms from the offer (candidates
//!     in within 50 ms, ICE ~290 ms, DTLS ~230 ms, SCTP ~200 ms) and the first snapshot
//!     follows the welcome by 15–40 ms. `join_phases_ms` now starts with `ice_servers` (the
//!     list fetched from the rendezvous, ~100 ms there), which the join's clock now counts.
//!     [`WebRtcTransport::connect_fetching`] fetches it while the websocket connects
//!     (`patches/matchbox_socket`: `ice_server_later`): the websocket is up at ~105 ms
//!     instead of ~205 ms.
//!   - ICE then took two round trips after its checks could get through: a check, then a
//!     nomination, and the controlled side answered a nomination only once its own check of
//!     the pair had succeeded. Now every check nominates and the controlled side takes a
//!     nomination at once (`patches/rtc-ice/PATCHED.md`; the `nomination` test counts the
//!     crossings), the answerer is the DTLS server so the offerer's ClientHello finds it
//!     ready, and the joiner's hello, which as the side established first it sends before
//!     the host has its COOKIE ACK, is no longer dropped (`patches/rtc/PATCHED.md`,
//!     `patches/rtc-sctp/PATCHED.md`; the `sctp_handshake` test). At 25:8:1 a join is the
//!     offer's arrival plus about five and a half round trips between the homes: ICE ~200 ms
//!     from the offer, DTLS ~200 ms, SCTP ~200 ms, the welcome ~100 ms.
//!   - SCTP's own handshake was two more round trips after DTLS. Now the offer and the answer
//!     carry each side's SCTP INIT (`a=sctp-init`, SNAP: `patches/rtc/PATCHED.md`,
//!     `patches/rtc-sctp/PATCHED.md`; the `snap` test), and the association is up with DTLS.
//!     The joiner's hello then goes right behind its DTLS Finished, and jitter put it ahead of
//!     the Finished at the host in half the joins, where DTLS dropped it (`patches/rtc-dtls`,
//!     fourth change; the `dtls_reorder` test). At 25:8:1 a join is now the offer's arrival
//!     plus three and a half round trips: ICE ~160 ms, DTLS ~200 ms, the welcome ~100 ms; p50
//!     922 → 693 ms, and 1,992 → 1,521 ms at 50:15:2.
//!   - Each side's server-reflexive candidate was gathered after its offer or answer, a STUN
//!     round trip on its line, and the other side's checks through the NATs waited for it.
//!     Now a socket keeps connections made ahead, gathering before any handshake, and makes
//!     its offers and answers with them (`patches/matchbox_socket`, `patches/webrtc`; the
//!     `gather_ahead` test): the candidate is in the description. At 25:8:1 ICE connects
//!     ~100 ms after the offer instead of ~150 ms; the join's p50 went from 676–747 ms to
//!     635–659 ms over three runs of 20, and from 1,491 to 1,435 ms at 50:15:2.
//!   - On a lossy line the snapshots waited behind reliable data. A checkpoint to a successor
//!     (~13 kB, at each join and leave) was one message of a dozen SCTP chunks, which must
//!     leave in one run of TSNs: while the congestion window held its rest back, no snapshot
//!     went. And after any lost reliable chunk, fast recovery halved the window (a T3 expiry
//!     made it one MTU) below what was in flight. Now a checkpoint goes in parts of one chunk
//!     each ([`crate::migration::PART_DATA`]), and chunks sent once (the unreliable channel's)
//!     have a window of their own (`patches/rtc-sctp/PATCHED.md`). At 50:15:2, with a
//!     player joining and leaving every 5 s, a successor's gaps went from p99 176 / max
//!     835 ms to p99 80 / max 107 ms.
//! - **Loopback is never an ICE candidate.** In a network namespace with only `lo`, the host
//!   candidate is the wildcard address `0.0.0.0`, which Linux delivers to loopback: the pair
//!   that works is then peer-reflexive, nominated after its 300 ms wait.
//! - **mDNS needs multicast.** webrtc-rs opens a multicast DNS socket for every peer
//!   connection; where no interface can join the group (a namespace with only `lo` and no
//!   `ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo`), no peer connection can be
//!   made: each handshake ends with a warning, counted in
//!   [`RoomPlace::connections_failed`], and the socket goes on (matchbox unwrapped the error and
//!   its message loop panicked, taking every link of the socket with it, before it was patched).
//!
//! ```no_run
//! use std::time::Instant;
//! use vimp_netcode::frame::Channel;
//! use vimp_netcode::transport::{Transport, TransportEvent, webrtc::WebRtcTransport};
//!
//! let mut transport = WebRtcTransport::connect("ws://127.0.0.1:3536/K7MP2Q", &[])?;
//! let start = Instant::now();
//! loop {
//!     for event in transport.poll(start.elapsed()) {
//!         if let TransportEvent::Connected(peer) = event {
//!             transport.send(start.elapsed(), peer, Channel::Reliable, b"hello".to_vec());
//!         }
//!     }
//!     # break;
//! }
//! # Ok::<(), vimp_netcode::transport::webrtc::WebRtcError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::mem;
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{Either, select};
use matchbox_socket::{ChannelConfig, Packet, PeerId, PeerState, RtcIceServerConfig, WebRtcSocket};
use thiserror::Error;

pub use matchbox_socket::{CandidatePair, CandidateType};

use crate::frame::{Channel, MAX_MESSAGE};
use crate::signal::IceServer;
use crate::transport::{LinkPath, PeerKey, Transport, TransportEvent};

/// Most messages kept for a peer whose data channels delivered before its connection was reported.
///
/// matchbox reports a peer connected once its handshake completes, but a message the peer
/// sends right after its own handshake may overtake that report; such messages wait for it.
pub const MAX_EARLY_MESSAGES: usize = 256;

/// Why the transport could not start, stopped, or refused a message.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WebRtcError {
    /// The room URL is not `ws://` or `wss://` followed by a host and a room.
    #[error("invalid room URL {url:?}: {reason}")]
    InvalidRoomUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An ICE server URL matchbox would fail on.
    #[error("invalid ICE server URL {url:?}: {reason}")]
    InvalidIceServer {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The message loop thread could not be started.
    #[error("cannot start the WebRTC thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// The signalling server could not be reached (nothing was joined).
    #[error(
        "cannot reach the rendezvous at {server}: {}. Check the address; the host (or its `vimp signal`) must be \
         running there",
        plain_reason(reason)
    )]
    ConnectFailed {
        /// The rendezvous (`ws://HOST:PORT`).
        server: String,
        /// matchbox's account of it.
        reason: String,
    },
    /// The signalling connection ended while no peer was connected, so no peer can ever join.
    #[error("the signalling connection ended: {reason}")]
    SignallingLost {
        /// matchbox's account of it.
        reason: String,
    },
    /// The message loop panicked (a bug in the WebRTC stack: a peer connection that cannot be
    /// made no longer panics it, see the module docs). The payload's message, for the log.
    #[error("the WebRTC message loop panicked: {0}")]
    Panicked(String),
    /// A message above [`MAX_MESSAGE`] bytes: WebRTC would drop it, so it was not sent.
    #[error("message of {len} bytes exceeds the {MAX_MESSAGE}-byte limit (chunk it with frame::Chunker)")]
    TooLarge {
        /// The message's size.
        len: usize,
    },
    /// A message for a peer that is not connected.
    #[error("peer {0} is not connected")]
    NotConnected(PeerKey),
    /// The transport is closed.
    #[error("the WebRTC transport is closed")]
    Closed,
}

/// Message and byte counts of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChannelStats {
    /// Messages received and reported by [`poll`](Transport::poll).
    pub messages_in: u64,
    /// Bytes of those messages.
    pub bytes_in: u64,
    /// Messages handed to WebRTC (refused ones are not counted).
    pub messages_out: u64,
    /// Bytes of those messages.
    pub bytes_out: u64,
}

/// Counters of a [`WebRtcTransport`], see [`WebRtcTransport::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WebRtcStats {
    /// Channel `0`, reliable.
    pub reliable: ChannelStats,
    /// Channel `1`, unreliable.
    pub unreliable: ChannelStats,
    /// Messages refused for being above [`MAX_MESSAGE`] bytes.
    pub oversized: u64,
    /// Messages refused because their peer was not connected or the transport was closed.
    pub unsent: u64,
    /// Messages received and dropped: from a peer already disconnected, or beyond
    /// [`MAX_EARLY_MESSAGES`] before its connection was reported.
    pub dropped_in: u64,
}

impl WebRtcStats {
    /// The counts of one channel.
    pub fn channel(&self, channel: Channel) -> &ChannelStats {
        match channel {
            Channel::Reliable => &self.reliable,
            Channel::Unreliable => &self.unreliable,
        }
    }

    fn channel_mut(&mut self, channel: Channel) -> &mut ChannelStats {
        match channel {
            Channel::Reliable => &mut self.reliable,
            Channel::Unreliable => &mut self.unreliable,
        }
    }
}

/// A peer the transport reported connected and has not yet forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerStatus {
    /// Its channels are open.
    Connected,
    /// [`Transport::disconnect`] was called: reported disconnected, its messages are dropped,
    /// until matchbox reports it gone.
    ClosedLocally,
}

/// How the message loop thread ended.
#[derive(Debug)]
enum LoopEnd {
    /// The transport asked it to stop (or was dropped).
    Stopped,
    /// The message loop future completed by itself.
    Ended(Result<(), matchbox_socket::Error>),
}

/// One process's WebRTC connection to a lobby's mesh, see the [module docs](self).
#[derive(Debug)]
pub struct WebRtcTransport {
    socket: WebRtcSocket,
    /// The rendezvous joined (`ws://HOST:PORT`), for what a failure says.
    server: String,
    local_id: Option<PeerKey>,
    /// Peers reported connected, by key, with matchbox's id for sending.
    peers: BTreeMap<PeerKey, (PeerId, PeerStatus)>,
    /// Messages of peers not reported connected yet, in arrival order.
    early: BTreeMap<PeerKey, Vec<(Channel, Vec<u8>)>>,
    /// Peers matchbox reported gone: their late messages are dropped, not kept as early.
    gone: BTreeSet<PeerKey>,
    /// Events produced outside `poll` (by `disconnect`, `close`), reported by the next `poll`.
    pending: Vec<TransportEvent>,
    stats: WebRtcStats,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<LoopEnd>>,
    /// Held while the ICE list's fetch and renewal ([`renew_in`]) may run: dropped with the
    /// transport, which ends them.
    _renewing: Option<std::sync::mpsc::Sender<()>>,
    closed: bool,
    close_reason: Option<WebRtcError>,
}

impl WebRtcTransport {
    /// Joins the room of `room_url` (`ws://HOST:PORT/CODE` or `wss://…`) through its
    /// signalling server, using `ice_servers` (possibly none) for ICE.
    ///
    /// Returns at once: the signalling server is contacted by the message loop thread, and
    /// peers appear as [`TransportEvent::Connected`] on later polls. If the server cannot be
    /// reached (one attempt, no retries), a later [`poll`](Transport::poll) finds the
    /// transport [closed](Self::is_closed) with [`WebRtcError::ConnectFailed`].
    ///
    /// matchbox takes a single ICE server entry, so the URLs of all `ice_servers` are merged
    /// into one; TURN URLs need a user name and credential, and every TURN server must share
    /// the same ones ([`WebRtcError::InvalidIceServer`] otherwise).
    pub fn connect(room_url: &str, ice_servers: &[IceServer]) -> Result<Self, WebRtcError> {
        Self::connect_in(&RoomPlace::new(), room_url, ice_servers)
    }

    /// As [`connect`](Self::connect), sharing `place` with the socket: where the room moves,
    /// the ICE servers of its new rendezvous and the ports the router forwards here, which the
    /// process changes while the transport runs (every transport it dials shares one).
    pub fn connect_in(place: &RoomPlace, room_url: &str, ice_servers: &[IceServer]) -> Result<Self, WebRtcError> {
        check_room_url(room_url)?;
        let ice_server = merge_ice_servers(ice_servers)?;
        Self::start(WebRtcSocket::builder(keyed(room_url)).ice_server(ice_server).place(place.0.clone()), room_url)
    }

    /// As [`connect`](Self::connect), with the ICE servers to use coming from `fetch` (e.g.
    /// `known` and what [`fetch_ice_in`](crate::signal::fetch_ice_in) gets from the rendezvous),
    /// which runs on a thread of its own while the websocket connects: the two waits overlap
    /// instead of adding up. No peer handshake starts before `fetch` returns. `fetch` is given
    /// the room URL with the key this socket names itself by (`?key=`), which a rendezvous
    /// that mints TURN credentials wants before it mints one for a peer in its room.
    ///
    /// A list that holds minted TURN credentials (user name `EXPIRY:…`) is fetched again while
    /// the transport lives, at half each one's remaining life, from the room's rendezvous of
    /// the moment ([`RoomPlace::move_room`]), for the peer connections made later.
    ///
    /// `known` is checked here ([`WebRtcError::InvalidIceServer`]), and used should `fetch`'s
    /// list not go to [`connect`](Self::connect) as it is (check it there with
    /// [`check_ice_servers`](Self::check_ice_servers) to say so) or `fetch` panic.
    pub fn connect_fetching(
        room_url: &str,
        known: &[IceServer],
        fetch: impl Fn(&str) -> Vec<IceServer> + Send + 'static,
    ) -> Result<Self, WebRtcError> {
        Self::connect_fetching_in(&RoomPlace::new(), room_url, known, fetch)
    }

    /// As [`connect_fetching`](Self::connect_fetching), sharing `place` with the socket (see
    /// [`connect_in`](Self::connect_in)).
    pub fn connect_fetching_in(
        place: &RoomPlace,
        room_url: &str,
        known: &[IceServer],
        fetch: impl Fn(&str) -> Vec<IceServer> + Send + 'static,
    ) -> Result<Self, WebRtcError> {
        check_room_url(room_url)?;
        let known = merge_ice_servers(known)?;
        let keyed_url = keyed(room_url);
        let (ice_tx, ice_rx) = oneshot::channel();
        let (renewing, stopped) = std::sync::mpsc::channel::<()>();
        let (place_there, asked_at) = (place.clone(), keyed_url.clone());
        std::thread::Builder::new()
            .name("vimp-ice-fetch".into())
            .spawn(move || {
                let mut list = fetch(&asked_at);
                // The socket may have ended already; then nobody waits for this.
                if let Ok(fetched) = merge_ice_servers(&list) {
                    let _ = ice_tx.send(fetched);
                }
                let key = crate::signal::room_key(&asked_at).map(|(_, key)| key.to_owned()).unwrap_or_default();
                while let Some(wait) = renew_in(&list, crate::identity::unix_now()) {
                    match stopped.recv_timeout(wait) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        // The transport is gone.
                        _ => return,
                    }
                    let room = place_there.0.room_url().unwrap_or_else(|| room_url_of(&asked_at).to_owned());
                    list = fetch(&format!("{room}?key={key}"));
                    if let Ok(fetched) = merge_ice_servers(&list) {
                        place_there.0.set_ice_server(fetched);
                    }
                }
            })
            .map_err(WebRtcError::Spawn)?;
        let mut transport = Self::start(
            WebRtcSocket::builder(keyed_url).ice_server(known).ice_server_later(ice_rx).place(place.0.clone()),
            room_url,
        )?;
        transport._renewing = Some(renewing);
        Ok(transport)
    }

    /// Whether `ice_servers` can go to [`connect`](Self::connect) as they are.
    pub fn check_ice_servers(ice_servers: &[IceServer]) -> Result<(), WebRtcError> {
        merge_ice_servers(ice_servers).map(drop)
    }

    /// Starts the socket `builder` describes, with the channels and timers every link uses.
    fn start(builder: matchbox_socket::WebRtcSocketBuilder, room_url: &str) -> Result<Self, WebRtcError> {
        let server = room_url.rsplit_once('/').map_or(room_url, |(server, _)| server).to_owned();
        let (socket, message_loop) = builder
            .reconnect_attempts(Some(1))
            // The rendezvous hears this process every half second, so that a successor asking
            // it (`GET /rooms/CODE`) learns soon whether a silent host's process is still there.
            .signaling_keep_alive_interval(Some(crate::signal::KEEP_ALIVE))
            // A rendezvous that goes away (restarted, or one behind a balancer) is joined again
            // under the same id (`keyed`): a friend who comes to the room later finds this one.
            .signaling_rejoin(true)
            .add_channel(ChannelConfig::reliable())
            .add_channel(ChannelConfig::unreliable())
            .build();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("vimp-webrtc".into())
            .spawn(move || {
                // `stopped` also resolves when the transport drops its sender.
                futures::executor::block_on(async move {
                    match select(message_loop, stopped).await {
                        Either::Left((result, _)) => LoopEnd::Ended(result),
                        Either::Right(_) => LoopEnd::Stopped,
                    }
                })
            })
            .map_err(WebRtcError::Spawn)?;
        Ok(WebRtcTransport {
            socket,
            server,
            local_id: None,
            peers: BTreeMap::new(),
            early: BTreeMap::new(),
            gone: BTreeSet::new(),
            pending: Vec::new(),
            stats: WebRtcStats::default(),
            stop: Some(stop),
            thread: Some(thread),
            _renewing: None,
            closed: false,
            close_reason: None,
        })
    }

    /// Sends one message to a connected peer, or says why not (the refusal is also counted).
    ///
    /// `Ok` means matchbox took the message, not that it will arrive: a reliable message
    /// arrives unless the link fails, an unreliable one may be lost or reordered.
    pub fn try_send(&mut self, peer: PeerKey, channel: Channel, bytes: Vec<u8>) -> Result<(), WebRtcError> {
        if bytes.len() > MAX_MESSAGE {
            self.stats.oversized += 1;
            return Err(WebRtcError::TooLarge { len: bytes.len() });
        }
        if self.closed {
            self.stats.unsent += 1;
            return Err(WebRtcError::Closed);
        }
        let Some(&(id, PeerStatus::Connected)) = self.peers.get(&peer) else {
            self.stats.unsent += 1;
            return Err(WebRtcError::NotConnected(peer));
        };
        let len = bytes.len() as u64;
        let Ok(channel_ref) = self.socket.get_channel_mut(usize::from(channel.id())) else {
            self.stats.unsent += 1;
            return Err(WebRtcError::Closed);
        };
        if channel_ref.try_send(Packet::from(bytes), id).is_err() {
            self.stats.unsent += 1;
            return Err(WebRtcError::Closed);
        }
        let stats = self.stats.channel_mut(channel);
        stats.messages_out += 1;
        stats.bytes_out += len;
        Ok(())
    }

    /// The counters so far.
    pub fn stats(&self) -> WebRtcStats {
        self.stats
    }

    /// The peers currently connected, in key order.
    pub fn connected_peers(&self) -> impl Iterator<Item = PeerKey> + '_ {
        self.peers.iter().filter(|(_, (_, status))| *status == PeerStatus::Connected).map(|(key, _)| *key)
    }

    /// Which kinds of ICE candidates a connected peer is reached through (direct, via its
    /// NAT's public address, or relayed by TURN), for diagnostics.
    ///
    /// `None` until known: matchbox checks about once a second, refreshed by
    /// [`poll`](Transport::poll).
    pub fn candidate_pair(&self, peer: PeerKey) -> Option<CandidatePair> {
        match self.peers.get(&peer) {
            Some(&(id, PeerStatus::Connected)) => self.socket.candidate_pair(id),
            _ => None,
        }
    }

    /// Whether the transport is closed, as of the last [`poll`](Transport::poll): closed by
    /// [`close`](Self::close), or its message loop ended (see [`close_reason`](Self::close_reason)).
    /// A closed transport has no peers and sends nothing.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Why the message loop ended by itself, if it did (as of the last [`poll`](Transport::poll)).
    ///
    /// `None` while open and after [`close`](Self::close).
    pub fn close_reason(&self) -> Option<&WebRtcError> {
        self.close_reason.as_ref()
    }

    /// Leaves the room: stops the message loop, which closes every peer connection and the
    /// signalling websocket, and waits for its thread. The next [`poll`](Transport::poll)
    /// reports every connected peer disconnected. Does nothing on a closed transport.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.socket.close();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let end = self.thread.take().map(JoinHandle::join);
        if let Some(Err(payload)) = end {
            self.close_reason = Some(WebRtcError::Panicked(panic_message(payload.as_ref())));
        }
        self.finish();
    }

    /// Marks the transport closed and queues a disconnection for every connected peer.
    fn finish(&mut self) {
        self.closed = true;
        for (key, (_, status)) in mem::take(&mut self.peers) {
            if status == PeerStatus::Connected {
                self.pending.push(TransportEvent::Disconnected(key));
            }
        }
        self.early.clear();
    }

    /// If the message loop thread has ended by itself, joins it and closes the transport.
    fn check_message_loop(&mut self, socket_gone: bool) {
        let finished = self.thread.as_ref().is_none_or(JoinHandle::is_finished);
        if !(finished || socket_gone) {
            return;
        }
        self.stop = None;
        self.close_reason = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(LoopEnd::Ended(Err(matchbox_socket::Error::ConnectionFailed(e))))) => {
                Some(WebRtcError::ConnectFailed { server: self.server.clone(), reason: e.to_string() })
            }
            Some(Ok(LoopEnd::Ended(Err(matchbox_socket::Error::Disconnected(e))))) => {
                Some(WebRtcError::SignallingLost { reason: e.to_string() })
            }
            Some(Err(payload)) => Some(WebRtcError::Panicked(panic_message(payload.as_ref()))),
            Some(Ok(LoopEnd::Ended(Ok(())) | LoopEnd::Stopped)) | None => None,
        };
        self.finish();
    }

    /// Reports a received message, or keeps or drops it by what is known of its peer.
    fn receive(&mut self, events: &mut Vec<TransportEvent>, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
        match self.peers.get(&peer) {
            Some((_, PeerStatus::Connected)) => {
                let stats = self.stats.channel_mut(channel);
                stats.messages_in += 1;
                stats.bytes_in += bytes.len() as u64;
                events.push(TransportEvent::Message { peer, channel, bytes });
            }
            Some((_, PeerStatus::ClosedLocally)) => self.stats.dropped_in += 1,
            None if self.gone.contains(&peer) => self.stats.dropped_in += 1,
            None => {
                let early = self.early.entry(peer).or_default();
                if early.len() < MAX_EARLY_MESSAGES {
                    early.push((channel, bytes));
                } else {
                    self.stats.dropped_in += 1;
                }
            }
        }
    }
}

impl Transport for WebRtcTransport {
    /// The id the signalling server gave this process (matchbox's peer id as a `u128`),
    /// known from the first [`poll`](Transport::poll) after the server assigned it.
    fn local_id(&self) -> Option<PeerKey> {
        self.local_id
    }

    /// Peers connected, then the messages received on both channels, then peers
    /// disconnected. A peer's messages never come before its `Connected` nor after its
    /// `Disconnected`. `now` is not used: WebRTC runs on real time.
    fn poll(&mut self, _now: Duration) -> Vec<TransportEvent> {
        let mut events = mem::take(&mut self.pending);
        if self.closed {
            return events;
        }
        if self.local_id.is_none() {
            self.local_id = self.socket.id().map(peer_key);
        }
        let (changes, socket_gone) = match self.socket.try_update_peers() {
            Ok(changes) => (changes, false),
            Err(_) => (Vec::new(), true),
        };
        let mut left = Vec::new();
        for (id, state) in changes {
            let key = peer_key(id);
            match state {
                PeerState::Connected if !self.gone.contains(&key) && !self.peers.contains_key(&key) => {
                    self.peers.insert(key, (id, PeerStatus::Connected));
                    events.push(TransportEvent::Connected(key));
                    for (channel, bytes) in self.early.remove(&key).unwrap_or_default() {
                        self.receive(&mut events, key, channel, bytes);
                    }
                }
                PeerState::Connected => {}
                PeerState::Disconnected => {
                    self.gone.insert(key);
                    self.stats.dropped_in += self.early.remove(&key).map_or(0, |early| early.len() as u64);
                    left.push(key);
                }
            }
        }
        for channel in Channel::ALL {
            let Ok(channel_ref) = self.socket.get_channel_mut(usize::from(channel.id())) else { continue };
            for (id, packet) in channel_ref.receive() {
                self.receive(&mut events, peer_key(id), channel, Vec::from(packet));
            }
        }
        for key in left {
            if let Some((_, PeerStatus::Connected)) = self.peers.remove(&key) {
                events.push(TransportEvent::Disconnected(key));
            }
        }
        self.check_message_loop(socket_gone);
        events.append(&mut self.pending);
        events
    }

    /// Sends through [`try_send`](WebRtcTransport::try_send), which counts a refusal: a
    /// message above [`MAX_MESSAGE`] bytes is never handed to matchbox.
    fn send(&mut self, _now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
        let _ = self.try_send(peer, channel, bytes);
    }

    /// Best effort, and local only: matchbox 0.15 cannot close a single peer's connection.
    ///
    /// The peer is reported [`Disconnected`](TransportEvent::Disconnected) by the next
    /// [`poll`](Transport::poll), nothing more is sent to it and whatever it still sends is
    /// dropped (counted in [`WebRtcStats::dropped_in`]). The WebRTC link itself stays open
    /// until the peer leaves or this transport closes, and the peer is not told: send it a
    /// [`CLOSE`](crate::frame::op::CLOSE) frame first; a peer that ignores it is still noticed
    /// by its own heartbeat.
    fn disconnect(&mut self, peer: PeerKey) {
        if let Some((_, status @ PeerStatus::Connected)) = self.peers.get_mut(&peer) {
            *status = PeerStatus::ClosedLocally;
            self.pending.push(TransportEvent::Disconnected(peer));
        }
    }

    /// [`WebRtcTransport::close_reason`], in words.
    fn failure(&self) -> Option<String> {
        self.close_reason().map(ToString::to_string)
    }

    /// From [`WebRtcTransport::candidate_pair`]: relayed when either end is a TURN relay, else
    /// reflexive when either end is a NAT's address, else direct.
    fn path(&self, peer: PeerKey) -> Option<LinkPath> {
        let pair = self.candidate_pair(peer)?;
        Some(if pair.is_relayed() {
            LinkPath::Relayed
        } else if pair.local == CandidateType::Host && pair.remote == CandidateType::Host {
            LinkPath::Direct
        } else {
            LinkPath::Reflexive
        })
    }
}

impl Drop for WebRtcTransport {
    /// Stops the message loop (which closes the peer connections) without waiting for its thread.
    fn drop(&mut self) {
        self.socket.close();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A matchbox peer id as a [`PeerKey`].
fn peer_key(id: PeerId) -> PeerKey {
    PeerKey(id.0.as_u128())
}

/// Checks that `url` is `ws://` or `wss://`, a host, and a non-empty room (the first path segment).
/// `room_url` with a key of this socket's own (`key=`, 122 random bits): the rendezvous derives
/// the peer's id from it (see [`signal`](crate::signal)), so that the socket, should it lose its
/// websocket, joins its room again under the id its links know it by.
/// Where a process's room is and how its peers reach it, shared by every transport the
/// process dials into that room ([`WebRtcTransport::connect_in`]), and changed while they run:
///
/// - [`RoomPlace::move_room`]: the room moved to another rendezvous (a new host serves it in
///   its own process): the socket leaves its rendezvous and joins the room there at once,
///   under the id its links know it by;
/// - [`RoomPlace::set_ice_servers`]: the ICE servers of the peer connections made from now on
///   (the new rendezvous's STUN);
/// - [`RoomPlace::set_reach`]: the router's public address and the UDP ports it forwards to
///   this machine (`portmap`): each peer connection made from now on binds one of them while it
///   lives, and offers the public address with it as a server reflexive candidate, which a peer
///   behind any NAT, a strict one included, reaches directly.
#[derive(Clone, Debug, Default)]
pub struct RoomPlace(matchbox_socket::SocketPlace);

impl RoomPlace {
    /// A place that changes nothing yet.
    pub fn new() -> RoomPlace {
        RoomPlace::default()
    }

    /// The room is at `room_url` (`ws://HOST:PORT/CODE`) now.
    pub fn move_room(&self, room_url: &str) -> Result<(), WebRtcError> {
        check_room_url(room_url)?;
        self.0.move_room(room_url_of(room_url));
        Ok(())
    }

    /// The ICE servers of the peer connections made from now on.
    pub fn set_ice_servers(&self, ice_servers: &[IceServer]) -> Result<(), WebRtcError> {
        self.0.set_ice_server(merge_ice_servers(ice_servers)?);
        Ok(())
    }

    /// How many peer connections could not be made (webrtc-rs refused to build one: no
    /// interface to bind, or no multicast for its mDNS socket, see the module docs): each
    /// ended one handshake, and nothing else.
    pub fn connections_failed(&self) -> usize {
        self.0.connections_failed()
    }

    /// The router's public address and the UDP ports it forwards here (each to the same port
    /// on this machine), or `None`.
    pub fn set_reach(&self, reach: Option<(std::net::IpAddr, Vec<u16>)>) {
        self.0.set_reach(reach.map(|(public_ip, ports)| matchbox_socket::Reach { public_ip, ports }));
    }
}

/// What a failed connection to the rendezvous comes to, in a player's words.
fn plain_reason(reason: &str) -> &'static str {
    let reason = reason.to_ascii_lowercase();
    if reason.contains("refused") {
        "nothing answers at that address (connection refused)"
    } else if reason.contains("timed out") || reason.contains("timeout") {
        "no answer from that address in time"
    } else if reason.contains("resolve") || reason.contains("lookup") || reason.contains("dns") {
        "that name resolves to no address"
    } else if reason.contains("unreachable") {
        "no route to that address"
    } else if reason.contains("tls") || reason.contains("certificate") {
        "its TLS certificate is not trusted"
    } else {
        "the connection failed"
    }
}

/// How long until `list`'s minted TURN credentials (user name `EXPIRY:…`, Unix seconds) are
/// fetched again at `now`: half the remaining life of the one that expires first, at least 30
/// s. `None` when it holds none (static credentials, or none at all): nothing to renew.
fn renew_in(list: &[IceServer], now: u64) -> Option<Duration> {
    let expiry = list
        .iter()
        .filter_map(|s| s.username.as_deref()?.split_once(':')?.0.parse::<u64>().ok())
        .filter(|&expiry| expiry > 1_000_000_000)
        .min()?;
    Some(Duration::from_secs((expiry.saturating_sub(now) / 2).max(30)))
}

/// The room URL without its query.
fn room_url_of(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}

fn keyed(room_url: &str) -> String {
    let join = if room_url.contains('?') { '&' } else { '?' };
    format!("{room_url}{join}key={}", uuid::Uuid::new_v4().simple())
}

fn check_room_url(url: &str) -> Result<(), WebRtcError> {
    let invalid = |reason| Err(WebRtcError::InvalidRoomUrl { url: url.to_owned(), reason });
    let Some(rest) = url.strip_prefix("ws://").or_else(|| url.strip_prefix("wss://")) else {
        return invalid("the scheme must be ws:// or wss://");
    };
    let Some((host, path)) = rest.split_once('/') else {
        return invalid("no room: expected ws://HOST:PORT/ROOM");
    };
    if host.is_empty() {
        return invalid("no host");
    }
    match path.split(['/', '?', '#']).next() {
        Some(room) if !room.is_empty() => Ok(()),
        _ => invalid("no room: expected ws://HOST:PORT/ROOM"),
    }
}

/// Merges `servers` into matchbox's single ICE server entry, checking what matchbox would panic on.
///
/// No server gives an entry with no URL: no STUN server is ever added by default.
fn merge_ice_servers(servers: &[IceServer]) -> Result<RtcIceServerConfig, WebRtcError> {
    let mut merged = RtcIceServerConfig { urls: Vec::new(), username: None, credential: None };
    for server in servers {
        for url in &server.urls {
            let invalid = |reason| Err(WebRtcError::InvalidIceServer { url: url.clone(), reason });
            let Some((scheme, rest)) = url.split_once(':') else {
                return invalid("expected stun:HOST[:PORT] or turn:HOST[:PORT]");
            };
            if rest.is_empty() || rest.starts_with(':') {
                return invalid("no host");
            }
            match scheme {
                "stun" | "stuns" => {}
                "turn" | "turns" => {
                    let (Some(username), Some(credential)) = (&server.username, &server.credential) else {
                        return invalid("a TURN server needs a username and a credential");
                    };
                    if username.is_empty() || credential.is_empty() {
                        return invalid("a TURN server needs a username and a credential");
                    }
                    match (&merged.username, &merged.credential) {
                        (None, None) => {
                            merged.username = Some(username.clone());
                            merged.credential = Some(credential.clone());
                        }
                        (Some(u), Some(c)) if u == username && c == credential => {}
                        _ => return invalid("matchbox takes one set of TURN credentials for all TURN servers"),
                    }
                }
                _ => return invalid("the scheme must be stun:, stuns:, turn: or turns:"),
            }
            merged.urls.push(url.clone());
        }
    }
    Ok(merged)
}

/// The message of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(no message)".to_owned()
    }
}

#[cfg(test)]
mod dtls_reorder;
#[cfg(test)]
mod gather_ahead;
#[cfg(test)]
mod nomination;
#[cfg(test)]
mod sctp_handshake;
#[cfg(test)]
mod snap;

#[cfg(test)]
mod tests;
