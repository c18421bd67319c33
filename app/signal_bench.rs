//! `vimp signal-bench`: a load on a rendezvous, measured from outside. It starts `vimp signal` as
//! a process of its own (or loads the one at `--url`), fills rooms with peers over real
//! websockets (matchbox's protocol: each joins, the first peer of a room relays a few signals to
//! the second, as an offerer relays its ICE candidates, they stay `--hold-s`, then all leave) and
//! prints what the server spent: joins a second, its CPU seconds, its peak and per-peer memory,
//! how long a relayed signal took, and how many held rooms the server closed.

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::Message;

/// What `vimp signal-bench` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct SignalBenchArgs {
    /// How many rooms to fill, a run each (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 5000])]
    pub rooms: Vec<usize>,
    /// Peers in each room.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=8))]
    pub peers: u8,
    /// Signals the first peer of each room relays to the second.
    #[arg(long, default_value_t = 5)]
    pub signals: usize,
    /// Over how long the rooms' signals are spread once all have joined, ms (matches start over
    /// time, not at one instant).
    #[arg(long, default_value_t = 1000)]
    pub spread_ms: u64,
    /// How many rooms fill at once.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Load the rendezvous at this URL (`ws://HOST:PORT`: a balancer in front of several, say)
    /// instead of starting one; the server's CPU and memory are then not measured.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Keep every room's sockets open this long after its signals, seconds, noting the rooms
    /// whose server closed one meanwhile (`rooms_closed`).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub hold_s: f64,
    /// Print each run's figures as a line of JSON.
    #[arg(long)]
    pub json: bool,
}

/// One run's figures.
#[derive(Debug, serde::Serialize)]
struct Figures {
    rooms: usize,
    peers: usize,
    joins_per_s: f64,
    /// The server's CPU time (user and system) over the whole run: joins, signals and leaves
    /// (not measured with `--url`, nor the memory).
    server_cpu_s: Option<f64>,
    peak_rss_mib: Option<f64>,
    /// What the server's resident memory grew by with every peer in a room, per peer.
    rss_per_peer_kib: Option<f64>,
    relay_p50_ms: f64,
    relay_p99_ms: f64,
    /// Rooms one of whose sockets the server closed while they were held (`--hold-s`).
    rooms_closed: usize,
}

/// Runs the load once per `--rooms`; returns the exit code.
pub fn run(args: &SignalBenchArgs) -> anyhow::Result<i32> {
    let files = vimp_netcode::signal::raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the load's runtime")?;
    for &rooms in &args.rooms {
        let peers = rooms * usize::from(args.peers);
        if peers as u64 + 64 > files {
            bail!("{peers} peers need as many open files, and this process may open {files}: raise `ulimit -n`");
        }
        let figures = runtime.block_on(once(args, rooms))?;
        if args.json {
            println!("{}", serde_json::to_string(&figures)?);
        } else {
            let server = match (figures.server_cpu_s, figures.peak_rss_mib, figures.rss_per_peer_kib) {
                (Some(cpu), Some(peak), Some(per_peer)) => {
                    format!(" server_cpu_s={cpu:.2} peak_rss_mib={peak:.1} rss_per_peer_kib={per_peer:.1}")
                }
                _ => String::new(),
            };
            let held =
                if args.hold_s > 0.0 { format!(" rooms_closed={}", figures.rooms_closed) } else { String::new() };
            println!(
                "rooms={} peers={} joins_per_s={:.0}{server} relay_p50_ms={:.2} relay_p99_ms={:.2}{held}",
                figures.rooms, figures.peers, figures.joins_per_s, figures.relay_p50_ms, figures.relay_p99_ms,
            );
        }
    }
    Ok(0)
}

/// The server under load: a `vimp signal` process with the per-address limits out of the way
/// (every peer here comes from one address). `vimp ranks-bench` loads one too.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
}

impl Server {
    /// Starts `vimp signal` on loopback with `extra` flags (`--no-db`, or a `--db`).
    pub(crate) fn start(extra: &[&str]) -> anyhow::Result<Server> {
        let exe = std::env::current_exe().context("finding this program")?;
        let mut child = Command::new(exe)
            .args(["signal", "--bind", "127.0.0.1:0", "--no-stun", "--max-per-address", "1000000"])
            .args(["--upgrades-per-second", "1000000000", "--requests-per-second", "1000000000"])
            .args(["--messages-per-second", "1000000000", "--messages-per-address", "1000000000"])
            // No database unless one is named: not the data folder of whoever runs the bench.
            .args(if extra.contains(&"--db") { &[][..] } else { &["--no-db"][..] })
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting vimp signal")?;
        let stdout = child.stdout.take().context("its output")?;
        let mut lines = std::io::BufReader::new(stdout).lines();
        let first = lines.next().context("vimp signal printed nothing")??;
        // "vimp signal: listening on ADDR (ws://ADDR)"
        let url = first
            .split('(')
            .nth(1)
            .and_then(|s| s.strip_suffix(')'))
            .with_context(|| format!("no address in {first:?}"))?
            .to_owned();
        // The rest of what it prints, read so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Ok(Server { child, url })
    }

    /// Its CPU time so far, seconds.
    pub(crate) fn cpu_s(&self) -> anyhow::Result<f64> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the server's CPU time from {path} (the bench needs Linux's /proc)"))?;
        // The fields after the command name (in parentheses, which may hold spaces).
        let rest = stat.rsplit_once(')').context("a stat line")?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name and state.
        Ok((ticks(11) + ticks(12)) / clock_ticks())
    }

    /// A figure of its `/proc/PID/status` (`VmRSS`, `VmHWM`), MiB.
    fn memory_mib(&self, field: &str) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status.lines().find(|l| l.starts_with(field)).with_context(|| format!("no {field}"))?;
        let kib: f64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).context("a size")?;
        Ok(kib / 1024.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clock ticks per second, the unit of `/proc/PID/stat`'s CPU times.
#[cfg(unix)]
fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// Elsewhere there is no `/proc` to read (the bench says so when it reads it).
#[cfg(not(unix))]
fn clock_ticks() -> f64 {
    100.0
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next text event of `ws`, as JSON.
async fn event(ws: &mut Ws) -> anyhow::Result<serde_json::Value> {
    loop {
        match ws.next().await.context("the socket closed")?? {
            Message::Text(t) => return Ok(serde_json::from_str(&t)?),
            Message::Close(frame) => bail!("closed: {frame:?}"),
            _ => {}
        }
    }
}

/// One room: its peers join in turn (each waits for its id; the first hears of each); once all
/// rooms have (`joined`) and `offset` later, the first relays `signals` to the second, which notes
/// how long each took (from `epoch`'s clock); once all have (`relayed`) they stay `hold`, then
/// leave. The relay times, ms, and whether the server closed a socket while they stayed.
async fn room(
    url: String,
    (peers, signals, hold): (usize, usize, Duration),
    (epoch, offset): (Instant, Duration),
    (joined, relayed): (Arc<tokio::sync::Barrier>, Arc<tokio::sync::Barrier>),
    permit: tokio::sync::OwnedSemaphorePermit,
) -> anyhow::Result<(Vec<f64>, bool)> {
    let mut sockets = Vec::with_capacity(peers);
    let mut ids = Vec::with_capacity(peers);
    for n in 0..peers {
        // Without Nagle's algorithm, as matchbox_socket connects (each signal goes at once).
        let (mut ws, _) =
            tokio_tungstenite::connect_async_with_config(url.as_str(), None, true).await.context("joining")?;
        let first = event(&mut ws).await?;
        ids.push(first["IdAssigned"].as_str().context("IdAssigned first")?.to_owned());
        sockets.push(ws);
        if n > 0 {
            let news = event(&mut sockets[0]).await?;
            anyhow::ensure!(news["NewPeer"] == ids[n].as_str(), "the first peer heard {news}");
        }
    }
    // The next room fills while this one waits for the rest.
    drop(permit);
    joined.wait().await;
    tokio::time::sleep(offset).await;
    let mut times = Vec::with_capacity(signals);
    for i in 0..signals {
        let sent_us = epoch.elapsed().as_micros() as u64;
        let request =
            serde_json::json!({ "Signal": { "receiver": ids[1], "data": { "candidate": i, "sent_us": sent_us } } });
        sockets[0].send(Message::text(request.to_string())).await?;
    }
    for _ in 0..signals {
        let got = event(&mut sockets[1]).await?;
        let sent_us = got["Signal"]["data"]["sent_us"].as_u64().context("a relayed signal")?;
        times.push((epoch.elapsed().as_micros() as u64).saturating_sub(sent_us) as f64 / 1000.0);
    }
    relayed.wait().await;
    let closed = hold_open(&mut sockets, hold).await;
    for mut ws in sockets {
        let _ = ws.close(None).await;
    }
    Ok((times, closed))
}

/// How often a held socket says it is alive: well within the server's idle timeout, far less
/// often than a player's (which speaks every 250 ms), so that holding costs the server little.
const HOLD_KEEP_ALIVE: Duration = Duration::from_secs(5);

/// Keeps `sockets` open for `hold`, reading what comes and saying a keep-alive every
/// [`HOLD_KEEP_ALIVE`]: whether the server closed one meanwhile.
async fn hold_open(sockets: &mut [Ws], hold: Duration) -> bool {
    let until = tokio::time::Instant::now() + hold;
    let mut beat = tokio::time::Instant::now() + HOLD_KEEP_ALIVE;
    loop {
        let next = futures::future::select_all(sockets.iter_mut().map(|ws| ws.next()));
        match tokio::time::timeout_at(until.min(beat), next).await {
            Err(_) if beat >= until => return false,
            Err(_) => {
                for ws in sockets.iter_mut() {
                    if ws.send(Message::text("\"KeepAlive\"")).await.is_err() {
                        return true;
                    }
                }
                beat += HOLD_KEEP_ALIVE;
            }
            Ok((Some(Ok(Message::Close(_))) | Some(Err(_)) | None, _, _)) => return true,
            Ok(_) => {}
        }
    }
}

/// One run of `rooms` rooms.
async fn once(args: &SignalBenchArgs, rooms: usize) -> anyhow::Result<Figures> {
    let server = match &args.url {
        Some(_) => None,
        None => Some(Server::start(&[])?),
    };
    let url = match (&args.url, &server) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, Some(server)) => server.url.clone(),
        (None, None) => unreachable!("a server started when no URL is given"),
    };
    let peers = usize::from(args.peers);
    let hold = Duration::from_secs_f64(args.hold_s.max(0.0));
    let rss_before = server.as_ref().map(|s| s.memory_mib("VmRSS:")).transpose()?;
    let cpu_before = server.as_ref().map(Server::cpu_s).transpose()?;
    let epoch = Instant::now();
    let joined = Arc::new(tokio::sync::Barrier::new(rooms + 1));
    let relayed = Arc::new(tokio::sync::Barrier::new(rooms + 1));
    let gate = Arc::new(tokio::sync::Semaphore::new(args.concurrency as usize));
    let mut tasks = Vec::with_capacity(rooms);
    for r in 0..rooms {
        let url = format!("{url}/BENCH{r:06}");
        let barriers = (joined.clone(), relayed.clone());
        let gate = gate.clone();
        let signals = args.signals;
        let offset = Duration::from_millis(args.spread_ms).mul_f64(r as f64 / rooms as f64);
        tasks.push(tokio::spawn(async move {
            // Rooms fill `concurrency` at a time.
            let permit = gate.acquire_owned().await?;
            room(url, (peers, signals, hold), (epoch, offset), barriers, permit).await
        }));
    }
    let started = Instant::now();
    let joining = joined.wait();
    tokio::time::timeout(Duration::from_secs(600), joining).await.context("the rooms did not fill in 10 minutes")?;
    let join_s = started.elapsed().as_secs_f64();
    let rss_joined = server.as_ref().map(|s| s.memory_mib("VmRSS:")).transpose()?;
    relayed.wait().await;
    if !hold.is_zero() {
        eprintln!("signal-bench: {rooms} rooms in and relayed; holding them {:.0} s", hold.as_secs_f64());
    }
    let mut times = Vec::with_capacity(rooms * args.signals);
    let mut rooms_closed = 0;
    for task in tasks {
        let (relayed, closed) = task.await??;
        times.extend(relayed);
        rooms_closed += usize::from(closed);
    }
    // Until the server has dealt with the leaves: its CPU time stands still.
    let mut cpu = server.as_ref().map(Server::cpu_s).transpose()?;
    let settle = Instant::now() + Duration::from_secs(10);
    while let Some(server) = &server {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = Some(server.cpu_s()?);
        if now == cpu || Instant::now() > settle {
            break;
        }
        cpu = now;
    }
    times.sort_by(f64::total_cmp);
    let quantile = |p: f64| times.get(((times.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0.0);
    Ok(Figures {
        rooms,
        peers: rooms * peers,
        joins_per_s: (rooms * peers) as f64 / join_s.max(1e-9),
        server_cpu_s: cpu.zip(cpu_before).map(|(after, before)| after - before),
        peak_rss_mib: server.as_ref().map(|s| s.memory_mib("VmHWM:")).transpose()?,
        rss_per_peer_kib: rss_joined
            .zip(rss_before)
            .map(|(joined, before)| (joined - before) * 1024.0 / (rooms * peers).max(1) as f64),
        relay_p50_ms: quantile(0.5),
        relay_p99_ms: quantile(0.99),
        rooms_closed,
    })
}
