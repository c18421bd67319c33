//! The window's successor: a shadow of the match on its own thread, ready to host.
//!
//! A window that joined a match online can be chosen to take it over. Its shadow is a
//! Bevy `App`, which stays on the thread that built it, so — like the embedded host —
//! it lives on a thread of its own: the window hands it what the host streams
//! ([`Standby::update`]), and when this client's turn comes ([`Client::takeover_due`])
//! the client is handed over to an in-memory link and the mesh transport goes to the
//! thread, where the shadow becomes the host ([`Successor::promote`]). From then on the
//! window is a client of its own process's host, like the hosting player of an embedded
//! host; no menu, no reconnect screen, only the "host changed" banner.
//!
//! When the window leaves a match it hosts since it took over, the thread hands the
//! match to the next successor (log, final checkpoint, `HANDOFF`) before it stops. When
//! it stops hosting while the window stays — another claimant's claim won the race, or
//! the players voted for another host (`@changeHost`) — the mesh comes back to the
//! window's client, which follows the new host with its token; the thread shadows again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vimp_host::engine::game::Game;
use vimp_netcode::client::{Client, Handover};
use vimp_netcode::migration::MigrationPayload;
use vimp_netcode::transport::{MemoryTransport, Transport};

use vimp_host::engine::successor::{Retired, Successor, SuccessorEvent, promoted_link};

/// What the window asks of the standby thread.
enum Command {
    /// Migration payloads the host streamed, oldest first.
    Feed(Vec<MigrationPayload>),
    /// Take the match over now.
    Promote(Handover<Box<dyn Transport>>, MemoryTransport, Duration),
}

/// What the standby thread tells the window: a change of role, or why the shadow could
/// not become the host (the client then waits for another one).
pub type StandbyEvent = Result<SuccessorEvent, String>;

/// What the thread sends the window.
enum Report {
    Event(StandbyEvent),
    /// This process stopped hosting; the mesh comes back for the client.
    Retired(Retired<Box<dyn Transport>>),
}

/// Figures the thread keeps for the window's net graph.
#[derive(Debug, Default)]
struct Shared {
    shadowing: AtomicBool,
    wants_checkpoint: AtomicBool,
    checkpoints: AtomicU64,
    mismatches: AtomicU64,
    errors: AtomicU64,
}

impl Shared {
    /// What the window reads of `successor`.
    fn publish(&self, successor: &Successor<Box<dyn Transport>>) {
        self.shadowing.store(successor.is_shadowing(), Ordering::Relaxed);
        self.wants_checkpoint.store(successor.wants_checkpoint(), Ordering::Relaxed);
        self.checkpoints.store(successor.checkpoints(), Ordering::Relaxed);
        self.mismatches.store(successor.mismatches(), Ordering::Relaxed);
        self.errors.store(successor.errors().len() as u64, Ordering::Relaxed);
    }
}

/// A running standby (stopped, and handing the match off if it hosts, when dropped).
pub struct Standby {
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    commands: mpsc::Sender<Command>,
    reports: mpsc::Receiver<Report>,
    thread: Option<JoinHandle<()>>,
    promoting: bool,
    announced: bool,
}

impl std::fmt::Debug for Standby {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standby")
            .field("shadowing", &self.is_shadowing())
            .field("promoting", &self.promoting)
            .finish_non_exhaustive()
    }
}

impl Standby {
    /// Starts the thread; `clock` is the match's time base.
    pub fn start(game: Game, clock: Instant) -> std::io::Result<Standby> {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared::default());
        let (commands, rx) = mpsc::channel();
        let (tx, reports) = mpsc::channel();
        let (flag, figures) = (Arc::clone(&stop), Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("vimp-standby".into())
            .spawn(move || run(game, &flag, &figures, &rx, &tx, clock))?;
        Ok(Standby { stop, shared, commands, reports, thread: Some(thread), promoting: false, announced: false })
    }

    /// Whether a shadow is kept (this client is among the first successors).
    pub fn is_shadowing(&self) -> bool {
        self.shared.shadowing.load(Ordering::Relaxed)
    }

    /// Whether this process took the match over (or is doing so).
    pub fn is_promoted(&self) -> bool {
        self.promoting
    }

    /// Checkpoints received, shadow hash mismatches and shadowing errors so far.
    pub fn figures(&self) -> (u64, u64, u64) {
        (
            self.shared.checkpoints.load(Ordering::Relaxed),
            self.shared.mismatches.load(Ordering::Relaxed),
            self.shared.errors.load(Ordering::Relaxed),
        )
    }

    /// One window frame: passes on what the host streamed and, when this client's turn
    /// to take over has come and the shadow is there, hands the client over to the new
    /// host on the thread.
    pub fn update(&mut self, client: &mut Client<Box<dyn Transport>>, now: Duration) {
        if self.promoting {
            return;
        }
        let payloads = client.take_migration();
        if !payloads.is_empty() {
            let _ = self.commands.send(Command::Feed(payloads));
        }
        if self.shared.wants_checkpoint.load(Ordering::Relaxed) {
            // At most one request per 250 ms goes out, however often this asks.
            client.request_checkpoint();
        }
        if !self.announced && self.is_shadowing() {
            self.announced = true;
            bevy::log::info!("shadowing the host (first checkpoint in)");
        }
        if !client.takeover_due() || !self.is_shadowing() {
            return;
        }
        let (host_end, player_end) = promoted_link(client);
        if let Some(handover) = client.hand_over(Box::new(player_end)) {
            // The feed sent before is applied first: the channel keeps order.
            self.promoting = self.commands.send(Command::Promote(handover, host_end, now)).is_ok();
        }
    }

    /// What happened since the last call. When this process stopped hosting, the client
    /// is put back on the mesh, after the host that took over, before this returns.
    pub fn take_events(&mut self, client: &mut Client<Box<dyn Transport>>) -> Vec<StandbyEvent> {
        let mut events = Vec::new();
        for report in self.reports.try_iter() {
            match report {
                Report::Event(event) => events.push(event),
                Report::Retired(retired) => {
                    events.push(Ok(SuccessorEvent::from(retired.why)));
                    retired.rejoin(client);
                    self.promoting = false;
                    self.announced = false;
                }
            }
        }
        events
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: shadow until promoted, then host; hand off when stopped while hosting.
fn run(
    game: Game,
    stop: &AtomicBool,
    shared: &Shared,
    commands: &mpsc::Receiver<Command>,
    reports: &mpsc::Sender<Report>,
    clock: Instant,
) {
    let mut successor = Successor::new(game);
    while !stop.load(Ordering::Relaxed) {
        if successor.server().is_some() {
            successor.update_server(clock.elapsed());
            if let Some(retired) = successor.retire() {
                let _ = reports.send(Report::Retired(retired));
                shared.publish(&successor);
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        match commands.recv_timeout(Duration::from_millis(10)) {
            Ok(Command::Feed(payloads)) => successor.feed_all(payloads),
            Ok(Command::Promote(handover, host_end, now)) => {
                let event = successor.promote(handover, host_end, now);
                let _ = reports.send(Report::Event(event.ok_or("no shadow to take the match over from".into())));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        // After every command: a promoted successor has no shadow any more, so the window
        // never hands its client over to a successor that cannot take the match.
        shared.publish(&successor);
    }
    if successor.hand_off(clock.elapsed()) {
        crate::setup::linger();
    }
}
