use super::{
    HandshakeResult, PacketSendError, PeerDataSender, SignallerBuilder, SocketPlace,
    messages::{PeerEvent, PeerRequest},
    place::{PortLease, reflexive_beside},
};
use crate::{
    CandidatePair, CandidateType, RtcIceServerConfig,
    webrtc_socket::{
        ChannelConfig, Messenger, Packet, Signaller,
        error::SignalingError,
        messages::PeerSignal,
        signal_peer::SignalPeer,
        socket::{
            SignaledCandidates, create_data_channels_ready_fut, record_signaled_candidate,
            signaled_type,
        },
    },
};
use async_trait::async_trait;
use async_tungstenite::{
    WebSocketStream,
    smol::{ConnectStream, client_async_tls},
    tungstenite::{Message, client::IntoClientRequest},
};
use bytes::BytesMut;
use futures::{
    Future, FutureExt, StreamExt,
    future::{Fuse, FusedFuture, join_all},
    stream::FuturesUnordered,
};
use futures_channel::mpsc::{Receiver, Sender, TrySendError, UnboundedReceiver, UnboundedSender};
use futures_timer::Delay;
use futures_util::select;
use log::{debug, error, info, trace, warn};
use matchbox_protocol::PeerId;
use std::{
    fmt::Display,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use webrtc::{
    data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit},
    peer_connection::{
        PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder,
        RTCDtlsRole, RTCIceCandidateInit, RTCIceCandidateType, RTCIceConnectionState, RTCIceServer,
        RTCPeerConnectionIceEvent, RTCPeerConnectionState, RTCSessionDescription, SettingEngine, SettingEngineBuilder,
    },
    runtime::{Runtime, SmolRuntime},
};

pub(crate) struct NativeSignaller {
    websocket_stream: WebSocketStream<ConnectStream>,
}

#[derive(Debug, Default)]
pub(crate) struct NativeSignallerBuilder;

#[async_trait]
impl SignallerBuilder for NativeSignallerBuilder {
    async fn new_signaller(
        &self,
        mut attempts: Option<u16>,
        room_url: String,
    ) -> Result<Box<dyn Signaller>, SignalingError> {
        let websocket_stream = 'signaling: loop {
            match connect_nodelay(&room_url).await.map_err(SignalingError::from) {
                Ok((wss, _)) => break wss,
                Err(e) => {
                    if let Some(attempts) = attempts.as_mut() {
                        if *attempts <= 1 {
                            return Err(SignalingError::NegotiationFailed(Box::new(e)));
                        } else {
                            *attempts -= 1;
                            warn!(
                                "connection to signaling server failed, {attempts} attempt(s) remain"
                            );
                            warn!("waiting 3 seconds to re-try connection...");
                            Delay::new(Duration::from_secs(3)).await;
                            info!("retrying connection...");
                            continue 'signaling;
                        }
                    } else {
                        continue 'signaling;
                    }
                }
            };
        };
        Ok(Box::new(NativeSignaller { websocket_stream }))
    }
}

/// `async_tungstenite::smol::connect_async` with Nagle's algorithm off. Signalling is a
/// handful of small messages, each one waited for: an answer and then its candidates. With
/// Nagle each message after the first waited for the server's ACK of the one before (a round
/// trip, plus its delayed ACK), which cost a join about a round trip of the signalling path.
async fn connect_nodelay(
    room_url: &str,
) -> Result<(WebSocketStream<ConnectStream>, async_tungstenite::tungstenite::handshake::client::Response), async_tungstenite::tungstenite::Error>
{
    use async_tungstenite::tungstenite::{Error, error::UrlError};
    let request = room_url.into_client_request()?;
    let uri = request.uri();
    let host = uri.host().ok_or(Error::Url(UrlError::NoHostName))?;
    // An IPv6 host comes in brackets, which are not part of the address.
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri
        .port_u16()
        .or_else(|| match uri.scheme_str() {
            Some("wss") => Some(443),
            Some("ws") => Some(80),
            _ => None,
        })
        .ok_or(Error::Url(UrlError::UnsupportedUrlScheme))?;
    let socket = connect_racing(&host, port).await.map_err(Error::Io)?;
    if let Err(err) = socket.set_nodelay(true) {
        warn!("failed to set TCP_NODELAY on the signalling connection: {err}");
    }
    client_async_tls(request, socket).await
}

/// How long a connection attempt to the signalling server waits before another one starts
/// beside it, and how many may wait at once.
const CONNECT_STAGGER: Duration = Duration::from_millis(250);
const CONNECT_ATTEMPTS: usize = 8;

/// Connects to `host:port`, starting another attempt beside the ones still waiting every
/// [`CONNECT_STAGGER`] (up to [`CONNECT_ATTEMPTS`]) until one connects. A lost SYN or SYN-ACK
/// costs TCP its initial retransmission timeout, 1 s (then 2 s, 4 s): on a line that loses 2 %
/// each way that was one join in a dozen waiting a second or more for the signalling server.
/// A refusal ends it at once.
async fn connect_racing(host: &str, port: u16) -> std::io::Result<async_net::TcpStream> {
    let attempt = |delay: Duration| {
        let host = host.to_owned();
        async move {
            if !delay.is_zero() {
                Delay::new(delay).await;
            }
            async_net::TcpStream::connect((host.as_str(), port)).await
        }
        .boxed()
    };
    let mut attempts: FuturesUnordered<_> = (0..CONNECT_ATTEMPTS)
        .map(|i| attempt(CONNECT_STAGGER * i as u32))
        .collect();
    let mut last_error = None;
    while let Some(result) = attempts.next().await {
        match result {
            Ok(socket) => return Ok(socket),
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => return Err(err),
            Err(err) => last_error = Some(err),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::ErrorKind::TimedOut.into()))
}

#[async_trait]
impl Signaller for NativeSignaller {
    async fn send(&mut self, request: PeerRequest) -> Result<(), SignalingError> {
        let request = serde_json::to_string(&request).expect("serializing request");
        self.websocket_stream
            .send(Message::Text(request.into()))
            .await
            .map_err(SignalingError::from)
    }

    async fn next_message(&mut self) -> Result<PeerEvent, SignalingError> {
        let message = match self.websocket_stream.next().await {
            Some(Ok(Message::Text(message))) => Ok(message),
            Some(Ok(_)) => Err(SignalingError::UnknownFormat),
            Some(Err(err)) => Err(SignalingError::from(err)),
            None => Err(SignalingError::StreamExhausted),
        }?;
        let message = serde_json::from_str(&message).map_err(|e| {
            error!("failed to deserialize message: {e:?}");
            SignalingError::UnknownFormat
        })?;
        Ok(message)
    }
}

pub(crate) struct NativeMessenger;

impl PeerDataSender for UnboundedSender<Packet> {
    fn send(&mut self, packet: Packet) -> Result<(), PacketSendError> {
        self.unbounded_send(packet)
            .map_err(|source| PacketSendError {
                source: TrySendError::into_send_error(source),
            })
    }
}

/// Forwards the events of a peer's data channels, completing once all of them have closed.
type EventForwarding = Pin<Box<dyn FusedFuture<Output = ()> + Send>>;

/// Adds the remote peer's ICE candidates to the connection for as long as signaling is up.
type CandidateListener =
    Pin<Box<dyn FusedFuture<Output = Result<(), webrtc::error::Error>> + Send>>;

pub(crate) struct NativeHandshakeMeta {
    to_peer_message_rx: Vec<UnboundedReceiver<Packet>>,
    data_channels: Vec<Arc<dyn DataChannel>>,
    event_forwarding: EventForwarding,
    trickle_fut: CandidateListener,
    peer_disconnected_rx: Receiver<()>,
    connection: ConnectionGuard,
    signaled: SignaledCandidates,
}

#[async_trait]
impl Messenger for NativeMessenger {
    type DataChannel = UnboundedSender<Packet>;
    type HandshakeMeta = NativeHandshakeMeta;
    type Spare = NativeSpare;

    async fn make_spares(ice_server_config: &RtcIceServerConfig, count: usize, place: &SocketPlace) -> Vec<Self::Spare> {
        let mut spares = Vec::with_capacity(count);
        for _ in 0..count {
            let generation = place.generation();
            match build_rtc_peer_connection(ice_server_config, place).await {
                Ok((connection, handler)) => {
                    if let Err(e) = connection.gather_ahead().await {
                        warn!("a connection made ahead cannot gather: {e}");
                        continue;
                    }
                    spares.push(NativeSpare { connection, handler, generation });
                }
                Err(e) => {
                    warn!("cannot make a connection ahead: {e}");
                    place.connection_failed();
                }
            }
        }
        spares
    }

    async fn offer_handshake(
        signal_peer: SignalPeer,
        mut peer_signal_rx: UnboundedReceiver<PeerSignal>,
        messages_from_peers_tx: Vec<UnboundedSender<(PeerId, Packet)>>,
        ice_server_config: &RtcIceServerConfig,
        channel_configs: &[ChannelConfig],
        spare: Option<Self::Spare>,
        place: &SocketPlace,
    ) -> Option<HandshakeResult<Self::DataChannel, Self::HandshakeMeta>> {
        let (to_peer_message_tx, to_peer_message_rx) = new_senders_and_receivers(channel_configs);
        let (peer_disconnected_tx, peer_disconnected_rx) = futures_channel::mpsc::channel(1);

        debug!("making offer");
        let phases = Phases::new(signal_peer.id);
        let (connection, trickle) =
            connection_for(spare, &signal_peer, phases, ice_server_config, place, &peer_disconnected_tx).await?;

        let (data_channel_ready_txs, data_channels_ready_fut) =
            create_data_channels_ready_fut(channel_configs);

        let (data_channels, mut event_forwarding) = create_data_channels(
            &**connection,
            data_channel_ready_txs,
            phases,
            peer_disconnected_tx,
            messages_from_peers_tx,
            channel_configs,
        )
        .await
        .map_err(|e| warn!("peer {}: cannot make its data channels, dropping the peer: {e}", signal_peer.id))
        .ok()?;

        // A connection that cannot offer ends this handshake only.
        let offer = connection
            .create_offer(None)
            .await
            .map_err(|e| warn!("peer {}: cannot make an offer, dropping the peer: {e}", signal_peer.id))
            .ok()?;
        let sdp = offer.sdp.clone();
        connection
            .set_local_description(offer)
            .await
            .map_err(|e| warn!("peer {}: cannot set the offer, dropping the peer: {e}", signal_peer.id))
            .ok()?;
        signal_peer.send(PeerSignal::Offer(sdp));
        phases.note("offer sent");
        // The signalling channel keeps order, so candidates sent now reach the peer after the
        // offer, and it applies them once it has set it. Held back until the answer, as
        // before, they cost a round trip of the signalling path.
        trickle.send_pending_candidates();

        let answer = loop {
            let Some(signal) = peer_signal_rx.next().await else {
                warn!("peer {}: the signalling server went away in the middle of a handshake", signal_peer.id);
                return None;
            };

            match signal {
                PeerSignal::Answer(answer) => {
                    phases.note("answer in");
                    break answer;
                }
                PeerSignal::Offer(_) => {
                    warn!("Got an unexpected Offer, while waiting for Answer. Ignoring.")
                }
                PeerSignal::IceCandidate(_) => {
                    warn!("Got an unexpected IceCandidate, while waiting for Answer. Ignoring.")
                }
            };
        };

        // What a peer sends is untrusted: a malformed answer ends this handshake only.
        let remote_description = RTCSessionDescription::answer(answer)
            .map_err(|e| warn!("peer {}: a malformed answer, dropping the peer: {e}", signal_peer.id))
            .ok()?;
        connection
            .set_remote_description(remote_description)
            .await
            .map_err(|e| warn!("peer {}: an answer that does not apply, dropping the peer: {e}", signal_peer.id))
            .ok()?;

        let signaled = SignaledCandidates::default();
        let trickle_fut = complete_handshake(
            &trickle,
            &connection,
            peer_signal_rx,
            data_channels_ready_fut,
            &mut event_forwarding,
            signaled.clone(),
            phases,
        )
        .await?;
        phases.note("every data channel open: connected");

        Some(HandshakeResult::<Self::DataChannel, Self::HandshakeMeta> {
            peer_id: signal_peer.id,
            data_channels: to_peer_message_tx,
            metadata: NativeHandshakeMeta {
                to_peer_message_rx,
                data_channels,
                event_forwarding,
                trickle_fut,
                peer_disconnected_rx,
                connection,
                signaled,
            },
        })
    }

    async fn accept_handshake(
        signal_peer: SignalPeer,
        mut peer_signal_rx: UnboundedReceiver<PeerSignal>,
        messages_from_peers_tx: Vec<UnboundedSender<(PeerId, Packet)>>,
        ice_server_config: &RtcIceServerConfig,
        channel_configs: &[ChannelConfig],
        spare: Option<Self::Spare>,
        place: &SocketPlace,
    ) -> Option<HandshakeResult<Self::DataChannel, Self::HandshakeMeta>> {
        let (to_peer_message_tx, to_peer_message_rx) = new_senders_and_receivers(channel_configs);
        let (peer_disconnected_tx, peer_disconnected_rx) = futures_channel::mpsc::channel(1);

        debug!("handshake_accept");
        let phases = Phases::new(signal_peer.id);
        let (connection, trickle) =
            connection_for(spare, &signal_peer, phases, ice_server_config, place, &peer_disconnected_tx).await?;

        let (data_channel_ready_txs, data_channels_ready_fut) =
            create_data_channels_ready_fut(channel_configs);

        let (data_channels, mut event_forwarding) = create_data_channels(
            &**connection,
            data_channel_ready_txs,
            phases,
            peer_disconnected_tx,
            messages_from_peers_tx,
            channel_configs,
        )
        .await
        .map_err(|e| warn!("peer {}: cannot make its data channels, dropping the peer: {e}", signal_peer.id))
        .ok()?;

        let offer = loop {
            let Some(signal) = peer_signal_rx.next().await else {
                warn!("peer {}: the signalling server went away in the middle of a handshake", signal_peer.id);
                return None;
            };
            match signal {
                PeerSignal::Offer(offer) => {
                    phases.note("offer in");
                    break offer;
                }
                _ => {
                    warn!("ignoring other signal!!!");
                }
            }
        };
        debug!("received offer");
        // What a peer sends is untrusted: a malformed offer ends this handshake only.
        let remote_description = RTCSessionDescription::offer(offer)
            .map_err(|e| warn!("peer {}: a malformed offer, dropping the peer: {e}", signal_peer.id))
            .ok()?;
        connection
            .set_remote_description(remote_description)
            .await
            .map_err(|e| warn!("peer {}: an offer that does not apply, dropping the peer: {e}", signal_peer.id))
            .ok()?;

        let answer = connection
            .create_answer(None)
            .await
            .map_err(|e| warn!("peer {}: cannot answer its offer: {e}", signal_peer.id))
            .ok()?;
        signal_peer.send(PeerSignal::Answer(answer.sdp.clone()));
        phases.note("answer sent");
        connection
            .set_local_description(answer)
            .await
            .map_err(|e| warn!("peer {}: cannot set the answer: {e}", signal_peer.id))
            .ok()?;

        let signaled = SignaledCandidates::default();
        let trickle_fut = complete_handshake(
            &trickle,
            &connection,
            peer_signal_rx,
            data_channels_ready_fut,
            &mut event_forwarding,
            signaled.clone(),
            phases,
        )
        .await?;
        phases.note("every data channel open: connected");

        Some(HandshakeResult::<Self::DataChannel, Self::HandshakeMeta> {
            peer_id: signal_peer.id,
            data_channels: to_peer_message_tx,
            metadata: NativeHandshakeMeta {
                to_peer_message_rx,
                data_channels,
                event_forwarding,
                trickle_fut,
                peer_disconnected_rx,
                connection,
                signaled,
            },
        })
    }

    async fn peer_loop(
        peer_uuid: PeerId,
        handshake_meta: Self::HandshakeMeta,
        candidate_pair_tx: UnboundedSender<(PeerId, CandidatePair)>,
    ) -> PeerId {
        let NativeHandshakeMeta {
            mut to_peer_message_rx,
            data_channels,
            mut event_forwarding,
            mut trickle_fut,
            mut peer_disconnected_rx,
            connection,
            signaled,
        } = handshake_meta;
        let mut candidate_pairs = Box::pin(
            report_candidate_pairs(&connection, peer_uuid, candidate_pair_tx, signaled).fuse(),
        );

        assert_eq!(
            data_channels.len(),
            to_peer_message_rx.len(),
            "amount of data channels and receivers differ"
        );

        let mut message_loop_futs: FuturesUnordered<_> = data_channels
            .iter()
            .zip(to_peer_message_rx.iter_mut())
            .map(|(data_channel, rx)| async move {
                while let Some(message) = rx.next().await {
                    trace!("sending packet {message:?}");
                    if let Err(e) = data_channel.send(BytesMut::from(&message[..])).await {
                        error!("error sending to data channel: {e:?}")
                    }
                }
            })
            .collect();

        loop {
            select! {
                _ = peer_disconnected_rx.next() => break,

                _ = message_loop_futs.next() => break,
                // Every data channel closed, which is reported on `peer_disconnected_rx`.
                _ = event_forwarding => continue,
                // TODO: this means that the signaling is down, should return an
                // error
                _ = trickle_fut => continue,
                _ = candidate_pairs => continue,
            }
        }

        peer_uuid
    }
}

/// Reports the candidate pair the connection uses, and again whenever it changes
async fn report_candidate_pairs(
    connection: &Arc<dyn PeerConnection>,
    peer: PeerId,
    tx: UnboundedSender<(PeerId, CandidatePair)>,
    signaled: SignaledCandidates,
) {
    let mut reported = None;
    loop {
        if let Some(pair) = selected_candidate_pair(connection, &signaled).await
            && reported != Some(pair)
        {
            reported = Some(pair);
            if tx.unbounded_send((peer, pair)).is_err() {
                // socket dropped
                return;
            }
        }
        Delay::new(Duration::from_secs(1)).await;
    }
}

async fn selected_candidate_pair(
    connection: &Arc<dyn PeerConnection>,
    signaled: &SignaledCandidates,
) -> Option<CandidatePair> {
    let pair = connection
        .sctp()
        .await?
        .transport()
        .ice_transport()
        .get_selected_candidate_pair()
        .await
        .ok()??;
    let candidate_type = |typ| match typ {
        RTCIceCandidateType::Host => Some(CandidateType::Host),
        RTCIceCandidateType::Srflx => Some(CandidateType::ServerReflexive),
        RTCIceCandidateType::Prflx => Some(CandidateType::PeerReflexive),
        RTCIceCandidateType::Relay => Some(CandidateType::Relay),
        _ => None,
    };
    let remote = pair.remote();
    Some(CandidatePair {
        local: candidate_type(pair.local().typ)?,
        remote: match remote.typ {
            RTCIceCandidateType::Prflx => signaled_type(signaled, &remote.address, remote.port)
                .unwrap_or(CandidateType::PeerReflexive),
            typ => candidate_type(typ)?,
        },
    })
}

/// The runtime driving the peer connections.
///
/// smol's executor runs on threads of its own, so the connections don't depend on the executor
/// the socket is polled by, and no tokio context is needed.
fn runtime() -> Arc<dyn Runtime> {
    Arc::new(SmolRuntime)
}

/// Closes the peer connection when dropped.
///
/// A webrtc-rs peer connection that is dropped without being closed keeps its driver task, and
/// with it its sockets, running. The remote peer would then see it as connected until ICE times
/// out, even though no data channel is served anymore.
///
/// It holds the forwarded port its connection is bound to, if any ([`SocketPlace::set_reach`]),
/// until the connection has closed its sockets.
struct ConnectionGuard(Arc<dyn PeerConnection>, Option<PortLease>);

impl std::ops::Deref for ConnectionGuard {
    type Target = Arc<dyn PeerConnection>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let connection = Arc::clone(&self.0);
        let lease = self.1.take();
        // Dropping the returned handle detaches the task.
        runtime().spawn(Box::pin(async move {
            if let Err(e) = connection.close().await {
                debug!("failed to close peer connection: {e:?}");
            }
            // Free for another connection once this one's sockets are closed.
            drop(lease);
        }));
    }
}

/// Handles the events of a peer connection.
///
/// A connection made ahead of its peer ([`NativeMessenger::make_spares`]) has no peer to
/// signal its candidates to yet: they wait in [`Handled::Ahead`] until a handshake takes the
/// connection ([`Self::bind`]).
struct ConnectionEventHandler {
    handled: Mutex<Handled>,
}

enum Handled {
    /// Made ahead: the local candidates gathered so far.
    Ahead(Vec<RTCPeerConnectionIceEvent>),
    /// A handshake's connection to its peer.
    Peer {
        trickle: Arc<CandidateTrickle>,
        peer_disconnected_tx: Sender<()>,
        phases: Phases,
    },
}

impl ConnectionEventHandler {
    /// Hands the connection to a handshake with its peer: the candidates gathered ahead go
    /// to that peer's trickle, in order, and every later event is that peer's.
    fn bind(&self, trickle: Arc<CandidateTrickle>, peer_disconnected_tx: Sender<()>, phases: Phases) {
        let mut handled = self.handled.lock().unwrap_or_else(|e| e.into_inner());
        if let Handled::Ahead(gathered) = &mut *handled {
            for event in gathered.drain(..) {
                trickle.on_local_candidate(event);
            }
        }
        *handled = Handled::Peer { trickle, peer_disconnected_tx, phases };
    }

    /// The phases and the disconnect sender of the peer this connection is bound to.
    fn peer(&self) -> Option<(Phases, Sender<()>)> {
        match &*self.handled.lock().unwrap_or_else(|e| e.into_inner()) {
            Handled::Ahead(_) => None,
            Handled::Peer { phases, peer_disconnected_tx, .. } => Some((*phases, peer_disconnected_tx.clone())),
        }
    }
}

#[async_trait]
impl PeerConnectionEventHandler for ConnectionEventHandler {
    async fn on_ice_candidate(&self, event: RTCPeerConnectionIceEvent) {
        match &mut *self.handled.lock().unwrap_or_else(|e| e.into_inner()) {
            Handled::Ahead(gathered) => gathered.push(event),
            Handled::Peer { trickle, .. } => trickle.on_local_candidate(event),
        }
    }

    /// `checking` once the remote candidates are in, `connected` once a pair answered.
    async fn on_ice_connection_state_change(&self, state: RTCIceConnectionState) {
        if let Some((phases, _)) = self.peer() {
            phases.note(format_args!("ICE {state}"));
        }
    }

    /// Treats the peer connection failing like a data channel closing.
    ///
    /// A peer that vanishes without closing its data channels (a crash, lost network, a socket
    /// dropped without closing the connection) never closes them on our side, so it would stay
    /// connected forever whenever the signaling server cannot report it gone (e.g. after the
    /// signaling connection is lost). ICE declares the connection failed about 30 seconds after
    /// the peer stops answering.
    async fn on_connection_state_change(&self, state: RTCPeerConnectionState) {
        let Some((phases, mut peer_disconnected_tx)) = self.peer() else { return };
        // `connected` is ICE connected and the DTLS handshake done.
        phases.note(format_args!("peer connection {state}"));
        if matches!(
            state,
            RTCPeerConnectionState::Failed | RTCPeerConnectionState::Closed
        ) {
            debug!("peer connection {state}");
            // Full only when a disconnect is already pending, which is just as good.
            let _ = peer_disconnected_tx.try_send(());
        }
    }
}

fn new_senders_and_receivers<T>(
    channel_configs: &[ChannelConfig],
) -> (Vec<UnboundedSender<T>>, Vec<UnboundedReceiver<T>>) {
    (0..channel_configs.len())
        .map(|_| futures_channel::mpsc::unbounded())
        .unzip()
}

/// Trickles candidates both ways until every data channel is open: `None` when one closed
/// first (the peer went away in the middle of the handshake), which ends this handshake only.
async fn complete_handshake<T: Future<Output = bool>>(
    trickle: &CandidateTrickle,
    connection: &Arc<dyn PeerConnection>,
    peer_signal_rx: UnboundedReceiver<PeerSignal>,
    mut wait_for_channels: Pin<Box<Fuse<T>>>,
    event_forwarding: &mut EventForwarding,
    signaled: SignaledCandidates,
    phases: Phases,
) -> Option<CandidateListener> {
    trickle.send_pending_candidates();
    let mut trickle_fut = Box::pin(
        CandidateTrickle::listen_for_remote_candidates(
            Arc::clone(connection),
            peer_signal_rx,
            signaled,
            phases,
        )
        .fuse(),
    );

    loop {
        select! {
            ready = wait_for_channels => {
                if !ready {
                    warn!("peer {}: a data channel closed before it opened, dropping the peer", trickle.signal_peer.id);
                    return None;
                }
                break;
            },
            // The channels open through their events.
            _ = event_forwarding.as_mut() => continue,
            // TODO: this means that the signaling is down, should return an
            // error
            _ = trickle_fut => continue,
        };
    }

    Some(trickle_fut)
}

struct CandidateTrickle {
    signal_peer: SignalPeer,
    /// Local candidates gathered before this side's offer or answer was sent, `None` once
    /// they have been sent.
    pending: Mutex<Option<Vec<String>>>,
    /// The port the router forwards to the connection, and the router's public address: a
    /// host candidate on that port goes with its server reflexive twin at that address.
    reach: Option<(u16, std::net::IpAddr)>,
}

impl CandidateTrickle {
    fn new(signal_peer: SignalPeer, reach: Option<(u16, std::net::IpAddr)>) -> Self {
        Self {
            signal_peer,
            pending: Mutex::new(Some(Vec::new())),
            reach,
        }
    }

    fn on_local_candidate(&self, event: RTCPeerConnectionIceEvent) {
        let candidate_init = match event.candidate.to_json() {
            Ok(candidate_init) => candidate_init,
            Err(err) => {
                error!("failed to convert ice candidate to candidate init, ignoring: {err}");
                return;
            }
        };
        // On a forwarded port, the router's public address with it: a peer behind any NAT
        // reaches this connection there (no STUN gives it: the router forwards the port).
        let twin = self.reach.and_then(|(port, public_ip)| {
            let candidate = reflexive_beside(&candidate_init.candidate, port, public_ip)?;
            serde_json::to_string(&RTCIceCandidateInit { candidate, ..candidate_init.clone() }).ok()
        });
        let Ok(candidate_json) = serde_json::to_string(&candidate_init) else {
            error!("failed to serialize an ice candidate, ignoring it");
            return;
        };
        self.send_or_keep(candidate_json);
        if let Some(twin) = twin {
            debug!("the forwarded port's public twin: {twin}");
            self.send_or_keep(twin);
        }
    }

    /// Sends a local candidate, or keeps it until this side's description went.
    fn send_or_keep(&self, candidate_json: String) {
        // Local candidates can only be sent after the description they belong to: the
        // offerer's after its offer, the answerer's after its answer.
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match pending.as_mut() {
            Some(pending) => {
                debug!("storing pending IceCandidate signal: {candidate_json:?}");
                pending.push(candidate_json);
            }
            None => {
                debug!("sending IceCandidate signal: {candidate_json:?}");
                self.signal_peer
                    .send(PeerSignal::IceCandidate(candidate_json));
            }
        }
    }

    fn send_pending_candidates(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for candidate in pending.take().into_iter().flatten() {
            self.signal_peer.send(PeerSignal::IceCandidate(candidate));
        }
    }

    async fn listen_for_remote_candidates(
        peer_connection: Arc<dyn PeerConnection>,
        mut peer_signal_rx: UnboundedReceiver<PeerSignal>,
        signaled: SignaledCandidates,
        phases: Phases,
    ) -> Result<(), webrtc::error::Error> {
        while let Some(signal) = peer_signal_rx.next().await {
            match signal {
                PeerSignal::IceCandidate(candidate_json) => {
                    debug!("received ice candidate: {candidate_json:?}");
                    match serde_json::from_str::<RTCIceCandidateInit>(&candidate_json) {
                        Ok(candidate_init) => {
                            debug!("ice candidate received: {}", candidate_init.candidate);
                            let typ = candidate_init.candidate.split(" typ ").nth(1);
                            let typ = typ.and_then(|rest| rest.split(' ').next()).unwrap_or("?");
                            phases.note(format_args!("remote {typ} candidate in"));
                            record_signaled_candidate(&signaled, &candidate_init.candidate);
                            // A candidate this stack cannot use (malformed, or of a kind it
                            // does not know) is that one candidate lost, not the rest.
                            if let Err(err) = peer_connection.add_ice_candidate(candidate_init).await {
                                warn!("ignoring an ice candidate that does not apply: {err}");
                            }
                        }
                        Err(err) => {
                            if *candidate_json == *"null" {
                                debug!(
                                    "Received null ice candidate, this means there are no further ice candidates"
                                );
                            } else {
                                warn!("failed to parse ice candidate json, ignoring: {err:?}");
                            }
                        }
                    }
                }
                PeerSignal::Offer(_) => {
                    warn!("Got an unexpected Offer, while waiting for IceCandidate. Ignoring.")
                }
                PeerSignal::Answer(_) => {
                    warn!("Got an unexpected Answer, while waiting for IceCandidate. Ignoring.")
                }
            }
        }

        Ok(())
    }
}

/// The connection a handshake with `signal_peer` makes, `spare` or a new one, bound to that
/// peer: its candidates (those gathered ahead first) go to the trickle it returns. `None`, said
/// why, when no connection can be made: that handshake ends, and nothing else.
async fn connection_for(
    spare: Option<NativeSpare>,
    signal_peer: &SignalPeer,
    phases: Phases,
    ice_server_config: &RtcIceServerConfig,
    place: &SocketPlace,
    peer_disconnected_tx: &Sender<()>,
) -> Option<(ConnectionGuard, Arc<CandidateTrickle>)> {
    // One made ahead before the ICE servers or the forwarded ports changed is made again.
    let spare = spare.filter(|s| s.generation == place.generation());
    let (connection, handler) = match spare {
        Some(NativeSpare { connection, handler, .. }) => {
            phases.note("connection made ahead taken");
            (connection, handler)
        }
        None => match build_rtc_peer_connection(ice_server_config, place).await {
            Ok(made) => made,
            Err(e) => {
                warn!("cannot make a peer connection for {}: {e}", signal_peer.id);
                place.connection_failed();
                return None;
            }
        },
    };
    let reach = connection.1.as_ref().map(|lease| (lease.port, lease.public_ip));
    let trickle = Arc::new(CandidateTrickle::new(signal_peer.clone(), reach));
    handler.bind(Arc::clone(&trickle), peer_disconnected_tx.clone(), phases);
    Some((connection, trickle))
}

/// A peer connection with no peer yet: its events wait in its handler until
/// [`ConnectionEventHandler::bind`]. It uses the ICE servers `place` names, else
/// `ice_server_config`, and binds a port the router forwards here when `place` has one free.
async fn build_rtc_peer_connection(
    ice_server_config: &RtcIceServerConfig,
    place: &SocketPlace,
) -> Result<(ConnectionGuard, Arc<ConnectionEventHandler>), webrtc::error::Error> {
    let ice_server_config = place.ice_server().unwrap_or_else(|| ice_server_config.clone());
    let config = RTCConfigurationBuilder::new()
        .with_ice_servers(vec![RTCIceServer {
            urls: ice_server_config.urls.clone(),
            username: ice_server_config.username.clone().unwrap_or_default(),
            credential: ice_server_config.credential.clone().unwrap_or_default(),
        }])
        .build();

    // One socket per local interface. A family the host doesn't have is skipped. On IPv4, a
    // port the router forwards here, when one is free.
    let lease = place.lease_port();
    let v4 = format!("0.0.0.0:{}", lease.as_ref().map_or(0, |l| l.port));
    let handler = Arc::new(ConnectionEventHandler { handled: Mutex::new(Handled::Ahead(Vec::new())) });
    let connection = PeerConnectionBuilder::new()
        .with_configuration(config)
        .with_setting_engine(ice_timing())
        .with_runtime(runtime())
        .with_handler(Arc::clone(&handler) as Arc<dyn PeerConnectionEventHandler>)
        .with_udp_addrs(vec![v4, "[::]:0".to_owned()])
        .build()
        .await?;

    Ok((ConnectionGuard(Arc::new(connection), lease), handler))
}

/// A peer connection made ahead of the offer it will answer, gathering its candidates
/// ([`NativeMessenger::make_spares`]).
pub(crate) struct NativeSpare {
    connection: ConnectionGuard,
    handler: Arc<ConnectionEventHandler>,
    /// What it was made with ([`SocketPlace::generation`]).
    generation: u64,
}

/// ICE timing for a game's links, instead of webrtc's defaults (checks every 200 ms, and the
/// controlling side waiting 500 ms before it nominates a server-reflexive pair, 1 s for a
/// peer-reflexive one and 2 s for a relayed one, counted from the start of the checks).
///
/// Checks run every 50 ms (as many checks, so a silent pair still fails after 1.4 s). The
/// waits before nominating a worse pair, which let a better one turn up first, are shorter:
/// none for server-reflexive, 300 ms for peer-reflexive and 1 s for relayed pairs. A
/// host pair on a LAN is checked first and answers in milliseconds (a server-reflexive pair
/// there needs the router to hairpin), and a hole punched through two NATs validates
/// once the candidates are in and a round trip later: within 1 s on paths up to about 400 ms
/// between the homes (measured in the home-network lab), so a relay is taken only when
/// nothing else works, and then a relayed link comes up in about 1 s.
///
/// The answerer is the DTLS server: with `patches/rtc-ice` it selects its pair half a round
/// trip before the offerer, so the offerer's ClientHello finds it ready, where the
/// answerer's could overtake the answer to the nomination and be dropped.
///
/// And the data channels' SCTP association opens without its handshake (SNAP, `patches/rtc`):
/// the offer and the answer each carry their side's SCTP INIT as `a=sctp-init`, and both sides
/// start the association established once DTLS is up, two round trips sooner. A peer whose
/// description has none gets the usual handshake.
fn ice_timing() -> SettingEngine {
    SettingEngineBuilder::new()
        .with_ice_connection_attempts(Some(Duration::from_millis(50)), Some(28))
        .with_host_acceptance_min_wait(Some(Duration::ZERO))
        .with_srflx_acceptance_min_wait(Some(Duration::ZERO))
        .with_prflx_acceptance_min_wait(Some(Duration::from_millis(300)))
        .with_relay_acceptance_min_wait(Some(Duration::from_millis(1000)))
        .with_answering_dtls_role(RTCDtlsRole::Server)
        .with_sctp_snap(true)
        .build()
}

async fn create_data_channels(
    connection: &dyn PeerConnection,
    mut data_channel_ready_txs: Vec<futures_channel::mpsc::Sender<()>>,
    phases: Phases,
    peer_disconnected_tx: Sender<()>,
    from_peer_message_tx: Vec<UnboundedSender<(PeerId, Packet)>>,
    channel_configs: &[ChannelConfig],
) -> Result<(Vec<Arc<dyn DataChannel>>, EventForwarding), String> {
    let mut channels = vec![];
    let mut event_forwarding = vec![];
    for (i, channel_config) in channel_configs.iter().enumerate() {
        let channel = create_data_channel(connection, channel_config, i).await?;
        let (Some(ready), Some(from_peer)) = (data_channel_ready_txs.pop(), from_peer_message_tx.get(i)) else {
            return Err(format!("no channel {i} among {}", channel_configs.len()));
        };

        event_forwarding.push(forward_data_channel_events(
            Arc::clone(&channel),
            ready,
            phases,
            i,
            peer_disconnected_tx.clone(),
            from_peer.clone(),
        ));
        channels.push(channel);
    }

    Ok((
        channels,
        Box::pin(join_all(event_forwarding).map(|_| ()).fuse()),
    ))
}

async fn create_data_channel(
    connection: &dyn PeerConnection,
    channel_config: &ChannelConfig,
    channel_index: usize,
) -> Result<Arc<dyn DataChannel>, String> {
    let config = RTCDataChannelInit {
        ordered: channel_config.ordered,
        negotiated: Some(channel_index as u16),
        max_retransmits: channel_config.max_retransmits,
        ..Default::default()
    };

    connection
        .create_data_channel(&format!("matchbox_socket_{channel_index}"), Some(config))
        .await
        .map_err(|e| e.to_string())
}

/// Forwards a data channel's events until it closes, then reports the peer disconnected.
async fn forward_data_channel_events(
    channel: Arc<dyn DataChannel>,
    mut channel_ready: futures_channel::mpsc::Sender<()>,
    phases: Phases,
    channel_index: usize,
    mut peer_disconnected_tx: Sender<()>,
    from_peer_message_tx: UnboundedSender<(PeerId, Packet)>,
) {
    while let Some(event) = channel.poll().await {
        match event {
            DataChannelEvent::OnOpen => {
                debug!("Data channel ready");
                phases.note(format_args!("data channel {channel_index} open"));
                // Fails if the socket was dropped mid-handshake
                if let Err(e) = channel_ready.try_send(()) {
                    debug!("data channel opened after handshake teardown: {e:?}");
                }
            }
            DataChannelEvent::OnMessage(message) => {
                let packet = message.data.freeze();
                trace!("data channel message received: {packet:?}");
                if let Err(e) = from_peer_message_tx.unbounded_send((phases.peer, packet)) {
                    // should only happen if the socket is dropped, or we are out of memory
                    warn!("failed to notify about data channel message: {e:?}");
                }
            }
            DataChannelEvent::OnError => {
                // TODO: handle this somehow
                warn!("data channel error");
            }
            DataChannelEvent::OnClose => break,
            _ => {}
        }
    }

    debug!("Data channel closed");
    if let Err(err) = peer_disconnected_tx.try_send(()) {
        // should only happen if the socket is dropped, or we are out of memory
        warn!("failed to notify about data channel closing: {err:?}");
    }
}

/// The log target of a handshake's phases: `RUST_LOG=matchbox_socket::phases=info` shows,
/// for each peer, when the offer and answer went and came, each remote candidate came, ICE
/// and the peer connection changed state (`connected` is ICE and DTLS done) and each data
/// channel opened (SCTP's association up), in milliseconds since the handshake began.
const PHASES: &str = "matchbox_socket::phases";

/// When one peer's handshake began, to log its phases ([`PHASES`]).
#[derive(Debug, Clone, Copy)]
struct Phases {
    peer: PeerId,
    start: Instant,
}

impl Phases {
    fn new(peer: PeerId) -> Self {
        Self { peer, start: Instant::now() }
    }

    fn note(&self, what: impl Display) {
        info!(target: PHASES, "peer {}: {what} at +{} ms", self.peer, self.start.elapsed().as_millis());
    }
}
