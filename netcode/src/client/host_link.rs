//! A client's session with the host it follows: the hello said to every peer that may be the
//! host, the one that answered, what it said of the match (its welcome and config), and how
//! long it has been silent.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{ClientConfig, SilenceWatch};
use crate::frame::{Channel, op};
use crate::migration::Links;
use crate::session::{ClientSession, ClientSessionConfig, Hello, SessionToken, Welcome};
use crate::transport::PeerKey;

/// The session with the host followed, and the sessions of the peers said hello to while no
/// host answered (candidates): a peer that answers the hello, with a welcome or a refusal,
/// is the host. Whom to follow after a loss, and when, is
/// [`Following`](super::following::Following)'s and [`ClientCore`](super::ClientCore)'s.
#[derive(Debug)]
pub(super) struct HostLink {
    /// The hello said to every peer that may be the host (with the session token of its slot
    /// once welcomed, to be given the slot back).
    pub(super) hello: Hello,
    /// The sessions of the peers said hello to, none having answered yet.
    pub(super) candidates: BTreeMap<PeerKey, ClientSession>,
    /// The host followed and its session, once it answered.
    pub(super) host: Option<(PeerKey, ClientSession)>,
    /// The host's welcome, once accepted.
    pub(super) welcome: Option<Welcome>,
    /// The host's `CONFIG_DATA`, once received.
    pub(super) config: Option<serde_json::Value>,
    /// Whether a new peer gets a hello (before the host answered, and after a hand-over).
    pub(super) searching: bool,
    /// When the newest peer this client says hello to while it looks for a host linked.
    pub(super) last_candidate_at: Duration,
    /// When the host followed was last heard.
    pub(super) host_heard_at: Duration,
    /// The gaps between the host's frames: how long it may be silent
    /// ([`ClientCore::host_timeout`](super::ClientCore::host_timeout)).
    pub(super) silence: SilenceWatch,
    /// The links last reported to the host followed (`None`: not since its welcome).
    pub(super) links_reported: Option<Vec<PeerKey>>,
}

impl HostLink {
    /// No host yet: `hello` goes to every peer linked.
    pub(super) fn new(hello: Hello) -> HostLink {
        HostLink {
            hello,
            candidates: BTreeMap::new(),
            host: None,
            welcome: None,
            config: None,
            searching: true,
            last_candidate_at: Duration::ZERO,
            host_heard_at: Duration::ZERO,
            silence: SilenceWatch::default(),
            links_reported: None,
        }
    }

    /// The host followed, once it answered.
    pub(super) fn peer(&self) -> Option<PeerKey> {
        self.host.as_ref().map(|(p, _)| *p)
    }

    /// The host's session, while the host has welcomed this client and not closed.
    pub(super) fn active(&mut self) -> Option<&mut ClientSession> {
        self.host.as_mut().map(|(_, s)| s).filter(|s| s.is_active())
    }

    /// How long the host may be silent before it counts as lost: what its link has shown,
    /// within `settings`' floor and ceiling.
    pub(super) fn timeout(&self, settings: &ClientConfig) -> Duration {
        self.silence.timeout(settings.min_host_timeout, settings.host_timeout)
    }

    /// A frame from `peer` at `now`: the host's session takes it if `peer` is the host.
    /// Returns whether it did.
    pub(super) fn take_host_frame(&mut self, peer: PeerKey, channel: Channel, bytes: &[u8], now: Duration) -> bool {
        let Some((_, session)) = self.host.as_mut().filter(|(h, _)| *h == peer) else { return false };
        self.silence.heard(now);
        self.host_heard_at = now;
        session.handle_message(now, channel, bytes);
        true
    }

    /// From now on the hello carries `token`: a host, new or the same, gives the slot back.
    pub(super) fn resume_with(&mut self, token: SessionToken) {
        self.hello.resume_token = Some(token);
    }

    /// A new session that says the hello.
    pub(super) fn hello(&self, now: Duration) -> ClientSession {
        ClientSession::new(ClientSessionConfig::new(self.hello.clone()), now)
    }

    /// A new session that says the hello both ways: a lost reliable hello waits for the
    /// association's first retransmission timeout (500 ms, no round trip measured yet).
    pub(super) fn hello_both_ways(&self, now: Duration) -> ClientSession {
        let mut session = self.hello(now);
        session.hello_unreliably();
        session
    }

    /// Says the hello to `peer`, both ways, and waits for its answer.
    pub(super) fn dial(&mut self, peer: PeerKey, now: Duration) {
        let session = self.hello_both_ways(now);
        self.candidates.insert(peer, session);
    }

    /// Says the hello again to every peer that may be the host until one answers, and follows
    /// the one that answered (a welcome or a refusal); following a host, nobody else's answer
    /// is wanted (a hello said ahead to a successor, when the host it lost spoke again).
    pub(super) fn search(&mut self, now: Duration) {
        for session in self.candidates.values_mut() {
            session.repeat_hello(now);
        }
        if self.host.is_some() {
            self.candidates.clear();
        }
        if self.host.is_none()
            && let Some(peer) =
                self.candidates.iter().find(|(_, s)| s.is_active() || s.close_code().is_some()).map(|(p, _)| *p)
            && let Some(session) = self.candidates.remove(&peer)
        {
            self.candidates.clear();
            self.searching = false;
            self.silence.reset();
            // What the candidate said so far (its welcome, at least) was heard from the host.
            self.host_heard_at = session.last_heard();
            self.host = Some((peer, session));
        }
    }

    /// Since when the hello waits for an answer: the newest candidate's link, while no host is
    /// followed and some peer is said hello to.
    pub(super) fn waiting_since(&self) -> Option<Duration> {
        (self.host.is_none() && !self.candidates.is_empty()).then_some(self.last_candidate_at)
    }

    /// Sends the host the open mesh links, `peers` (`LINKS`), when they differ from the last
    /// report.
    pub(super) fn report_links(&mut self, peers: &BTreeSet<PeerKey>) {
        let Some((_, session)) = self.host.as_mut().filter(|(_, s)| s.is_active()) else { return };
        if self.links_reported.as_ref().is_some_and(|r| r.iter().eq(peers.iter())) {
            return;
        }
        let links = Links { peers: peers.iter().copied().collect() };
        session.send_meta(op::LINKS, &links.encode());
        self.links_reported = Some(links.peers);
    }

    /// What the host's session and the candidates' have to send, in order.
    pub(super) fn transmit(&mut self) -> Vec<(PeerKey, Channel, Vec<u8>)> {
        let mut out = Vec::new();
        if let Some((peer, session)) = self.host.as_mut() {
            while let Some((ch, bytes)) = session.poll_transmit() {
                out.push((*peer, ch, bytes));
            }
        }
        for (peer, session) in &mut self.candidates {
            while let Some((ch, bytes)) = session.poll_transmit() {
                out.push((*peer, ch, bytes));
            }
        }
        out
    }

    /// When a session's timer is due next: the host's, or a candidate's next hello.
    pub(super) fn session_due(&self) -> Option<Duration> {
        let host = self.host.as_ref().and_then(|(_, s)| s.poll_timeout());
        host.into_iter().chain(self.candidates.values().filter_map(ClientSession::hello_due)).min()
    }

    /// A tick's match time, ms: the host config's `engine.timeStepMs` (120 Hz without one).
    pub(super) fn tick_ms(&self) -> f64 {
        let configured = self.config.as_ref().and_then(|c| c["engine"]["timeStepMs"].as_f64());
        configured.filter(|ms| ms.is_finite() && *ms > 0.0).unwrap_or(1000.0 / 120.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;
    use crate::session::{HostEvent, HostSession, HostSessionConfig, test_support};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A host session on `peer` that welcomes the hello `link` says to it, at `now`.
    fn welcomed_by(link: &mut HostLink, peer: PeerKey, now: Duration) -> HostSession {
        let mut host = HostSession::new(HostSessionConfig::default(), now);
        for _ in 0..4 {
            for (to, channel, bytes) in link.transmit() {
                if to == peer {
                    host.handle_message(now, channel, &bytes);
                }
            }
            while let Some(event) = host.poll_event() {
                if let HostEvent::Hello(_) = event {
                    host.accept(&test_support::welcome(), &serde_json::json!({}));
                }
            }
            while let Some((channel, bytes)) = host.poll_transmit() {
                if !link.take_host_frame(peer, channel, &bytes, now)
                    && let Some(session) = link.candidates.get_mut(&peer)
                {
                    session.handle_message(now, channel, &bytes);
                }
            }
            link.search(now);
        }
        host
    }

    #[test]
    fn the_peer_that_answers_the_hello_is_followed_and_the_others_are_forgotten() {
        let mut link = HostLink::new(Hello::new("ann", "test"));
        for peer in [PeerKey(1), PeerKey(2)] {
            link.dial(peer, ms(0));
        }
        link.last_candidate_at = ms(0);
        let sent = link.transmit();
        let to_one: Vec<Channel> = sent.iter().filter(|(p, ..)| *p == PeerKey(1)).map(|(_, c, _)| *c).collect();
        assert_eq!(to_one.len(), 2, "the hello both ways: {to_one:?}");
        assert!(sent.iter().all(|(_, _, b)| frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO)));
        assert_eq!(link.waiting_since(), Some(ms(0)));
        assert_eq!(link.peer(), None);
        welcomed_by(&mut link, PeerKey(2), ms(30));
        assert_eq!(link.peer(), Some(PeerKey(2)));
        assert!(link.candidates.is_empty() && !link.searching, "nobody else is waited for");
        assert_eq!(link.waiting_since(), None);
        assert_eq!(link.host_heard_at, ms(30), "its welcome was heard from the host");
        assert!(link.active().is_some());
        assert!(!link.take_host_frame(PeerKey(1), Channel::Reliable, &[], ms(40)), "not the host");
        link.dial(PeerKey(3), ms(50));
        link.search(ms(50));
        assert!(link.candidates.is_empty(), "following a host, no hello said ahead waits");
    }

    #[test]
    fn the_links_go_to_the_host_once_each_time_they_change() {
        let mut link = HostLink::new(Hello::new("ann", "test"));
        let mut peers = BTreeSet::from([PeerKey(1)]);
        link.report_links(&peers);
        assert_eq!(link.links_reported, None, "no host to report to");
        link.dial(PeerKey(1), ms(0));
        let mut host = welcomed_by(&mut link, PeerKey(1), ms(0));
        let links_sent = |link: &mut HostLink, host: &mut HostSession| {
            for (_, channel, bytes) in link.transmit() {
                host.handle_message(ms(1), channel, &bytes);
            }
            std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::Links(_))).count()
        };
        link.report_links(&peers);
        assert_eq!(links_sent(&mut link, &mut host), 1);
        link.report_links(&peers);
        assert_eq!(links_sent(&mut link, &mut host), 0, "the same links");
        peers.insert(PeerKey(5));
        link.report_links(&peers);
        assert_eq!(link.links_reported, Some(vec![PeerKey(1), PeerKey(5)]));
        assert_eq!(links_sent(&mut link, &mut host), 1);
    }

    #[test]
    fn a_tick_lasts_what_the_config_says_or_a_120th_of_a_second() {
        let mut link = HostLink::new(Hello::new("ann", "test"));
        assert_eq!(link.tick_ms(), 1000.0 / 120.0, "no config yet");
        link.config = Some(serde_json::json!({ "engine": { "timeStepMs": 16.5 } }));
        assert_eq!(link.tick_ms(), 16.5);
        for bad in [serde_json::json!(0.0), serde_json::json!(-5.0), serde_json::json!("fast")] {
            link.config = Some(serde_json::json!({ "engine": { "timeStepMs": bad } }));
            assert_eq!(link.tick_ms(), 1000.0 / 120.0, "{bad}");
        }
    }

    #[test]
    fn the_hello_carries_the_token_once_given_and_the_silence_allowed_follows_the_link() {
        let mut link = HostLink::new(Hello::new("ann", "test"));
        let token = test_support::welcome().token;
        link.resume_with(token);
        let session = link.hello(ms(0));
        assert!(!session.answered());
        assert_eq!(link.hello.resume_token, Some(token));
        let settings = ClientConfig::default();
        assert_eq!(link.timeout(&settings), settings.host_timeout, "a link not judged yet: the ceiling");
        link.dial(PeerKey(1), ms(0));
        welcomed_by(&mut link, PeerKey(1), ms(0));
        let mut chat = Vec::new();
        frame::encode(op::CHAT_DATA, br#"["hi", "bob", 1]"#, &mut chat);
        for n in 1..=20 {
            assert!(link.take_host_frame(PeerKey(1), Channel::Reliable, &chat, ms(33 * n)));
        }
        assert!(link.active().is_some(), "the host's frames keep its session up");
        assert_eq!(link.host_heard_at, ms(660));
        assert_eq!(link.timeout(&settings), settings.min_host_timeout, "a steady link: the floor");
    }
}
