//! The running mesh: accepts peers, dials static peers with backoff, keeps one connection per
//! pair of devices, and runs one sync session on each.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use quinn::{Connection, Endpoint, RecvStream, SendStream, VarInt};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::{
    Result,
    identity::PeerId,
    invalid,
    net::{CLOSE_OK, checked_peer, dial, mesh_endpoint, read_frame, write_frame},
    pki::Identity,
};

/// Close code for a peer whose sync messages the ledger refused.
pub const CLOSE_BAD_SYNC: u32 = 3;
/// Close code for the losing connection of a pair that connected both ways.
pub const CLOSE_DUPLICATE: u32 = 4;
/// Close code for a peer whose certificate the event's CA revoked (or, sent by a revoked
/// device itself, for every peer once it learned so).
pub const CLOSE_REVOKED: u32 = 5;
/// The reason a refusal of a revoked peer gives.
pub const REVOKED_REASON: &str = "its certificate is revoked by the event's CA";

/// What a sync session asks of the ledger's owner.
#[derive(Debug)]
pub enum SyncRequest {
    /// The next sync message for `peer`, if it lacks anything.
    Generate {
        /// The peer's device name.
        peer: String,
        /// Where in a round of the protocol the message is.
        turn: Turn,
        /// Gets the message, or `None` when the peer lacks nothing.
        reply: oneshot::Sender<Option<Vec<u8>>>,
    },
    /// A message from `peer`; the reply comes once anything new is stored.
    Receive {
        /// The peer's device name.
        peer: String,
        /// The message as it came, at most [`crate::net::MAX_FRAME`] bytes, not yet decoded.
        bytes: Vec<u8>,
        /// `Ok` once anything new is stored; `Err` with why, and the peer loses its
        /// connection.
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Changes `peer` pushed as it made them (change chunks, one after another, at most
    /// [`crate::net::MAX_FRAME`] bytes, not yet decoded); the reply comes once anything new
    /// is stored.
    Push {
        /// The peer's device name.
        peer: String,
        /// The changes as they came.
        bytes: Vec<u8>,
        /// `Ok(true)` when some of them wait for changes they build on (the session then
        /// sends a sync message, which asks for those); `Err` with why, and the peer loses
        /// its connection.
        reply: oneshot::Sender<Result<bool, String>>,
    },
    /// These changes were pushed to `peer` (written to its stream): the sync protocol
    /// counts them as sent, so a round that starts while they are on their way does not
    /// send them again (automerge would rebuild each from its document to do so). No reply.
    Pushed {
        /// The peer's device name.
        peer: String,
        /// The hashes of the changes pushed.
        hashes: Vec<[u8; 32]>,
    },
    /// The connection to `peer` ended: forget what it was believed to have.
    Forget {
        /// The peer's device name.
        peer: String,
    },
    /// This node's summary for `peer` (what it holds, writer by writer, and the devices it
    /// reaches now: `gatemesh_ledger::Summary`), sent every [`SUMMARY_EVERY`] while it
    /// changes or the peer holds what this node lacks ([`summary_due`]).
    Summary {
        /// The peer's device name.
        peer: String,
        /// The devices this node is connected to now, by name.
        reaches: Vec<String>,
        /// Gets the message.
        reply: oneshot::Sender<OurSummary>,
    },
    /// `peer`'s summary, as it came ([`SUMMARY_FRAME`]); the reply says what to send it.
    TheirSummary {
        /// The peer's device name.
        peer: String,
        /// The message, not yet decoded.
        bytes: Vec<u8>,
        /// When it was read from the connection: changes taken here within a moment of it
        /// may still be on their way to the peer, and are not relayed yet.
        received: std::time::Instant,
        /// Whether changes may be relayed to the peer now: not while more than
        /// [`RELAY_WAITING_MOST`] bytes wait to go to it already (its summary is taken all
        /// the same).
        relay: bool,
        /// What to send the peer; `Err` with why, and the peer loses its connection.
        reply: oneshot::Sender<Result<Answer, String>>,
    },
    /// `peer` asks for changes by hash ([`NEED_FRAME`]): what its pushed changes build on.
    Need {
        /// The peer's device name.
        peer: String,
        /// The request, not yet decoded.
        bytes: Vec<u8>,
        /// What to send the peer; `Err` with why, and the peer loses its connection.
        reply: oneshot::Sender<Result<Answer, String>>,
    },
}

/// This node's summary for a peer ([`SyncRequest::Summary`]).
#[derive(Debug, Default)]
pub struct OurSummary {
    /// The message.
    pub message: Vec<u8>,
    /// The peer's last summary named changes this node lacks: it keeps telling the peer
    /// (whose relays to this node are decided on its summaries) until it has them.
    pub behind: bool,
    /// The message asks the peer to relay this node every writer's changes it lacks (a
    /// large gap): the next summary goes as soon as a push from the peer was taken, for the
    /// next part.
    pub catching_up: bool,
}

/// Whether this node's summary `message` goes to the peer at this tick: the first; one while
/// this node lacks what the peer would relay to it (`behind`); one that differs from the
/// last sent (`last`: the message and when) once `pace` passed since it ([`summary_pace`]);
/// and otherwise one every [`SUMMARY_QUIET_MOST`] — two gates that hold the same and change
/// nothing do not tell each other so every second (at 32 gates, each summary a few
/// kilobytes to each of 31 peers).
pub fn summary_due(
    last: Option<&(Vec<u8>, tokio::time::Instant)>,
    message: &[u8],
    behind: bool,
    (now, pace): (tokio::time::Instant, Duration),
) -> bool {
    match last {
        None => true,
        Some((sent, at)) => {
            let since = now.duration_since(*at);
            behind || (sent.as_slice() != message && since >= pace) || since >= SUMMARY_QUIET_MOST
        }
    }
}

/// How often a summary that changed goes to each peer when this node reaches `peers`
/// devices: every [`SUMMARY_EVERY`] up to [`SUMMARY_PEERS_AT_PACE`] of them, then less often
/// in proportion (at most every [`SUMMARY_QUIET_MOST`]), so a gate takes in about that many
/// summaries a second however large the mesh. In a busy mesh every summary changed: at 32
/// gates, one a second from each of 31 peers was a large part of an idle gate's work. What
/// waits for a summary meanwhile: relays of the writers a node does not reach, and those
/// go at once while it lacks them (`behind`).
pub fn summary_pace(peers: usize) -> Duration {
    let times = u32::try_from(peers.div_ceil(SUMMARY_PEERS_AT_PACE).max(1)).unwrap_or(u32::MAX);
    SUMMARY_EVERY.saturating_mul(times).min(SUMMARY_QUIET_MOST)
}

/// Peers up to which a changed summary goes to each every [`SUMMARY_EVERY`].
pub const SUMMARY_PEERS_AT_PACE: usize = 8;

/// What a session sends a peer after its summary or its request for changes.
#[derive(Debug, Default)]
pub struct Answer {
    /// Frames of changes (change chunks, one after another), each sent as a push.
    pub frames: Vec<Vec<u8>>,
    /// How many changes they hold.
    pub changes: usize,
    /// A round of the sync protocol should follow: what the peer lacks is not at hand, or
    /// more than a relay carries.
    pub round: bool,
}

/// The ledger side of the mesh: a request channel, and the owner's own changes as it stores
/// them.
///
/// Propagation costs what changed, not the ledger: each commit's own changes go to every
/// peer at once, as they are (a push frame; no sync state is consulted). Every
/// [`SUMMARY_EVERY`] the two sides tell each other what they hold, writer by writer (a
/// summary: the check that nothing was missed, costing what the event has writers), and
/// each relays from its recent changes what the other lacks and cannot get from its writer
/// directly; a pushed change that waits for one it builds on asks the peer for it by hash
/// ([`MISSING_GRACE`] later, if it still waits). The sync protocol runs in rounds for
/// catch-up only: after a session missed pushes, and when what a peer lacks (on connect,
/// after a partition, when it joins late) is not at hand or more than a relay carries (at
/// most one round per [`ROUND_EVERY`]).
#[derive(Debug, Clone)]
pub struct SyncPort {
    /// Where sessions send their requests; the ledger's owner answers each.
    pub requests: mpsc::Sender<SyncRequest>,
    /// The owner's own changes, one item per commit, once stored: every session sends them
    /// to its peer at once. A session that falls [`PUSH_QUEUE`] commits behind (a slow
    /// link) misses some and catches up by a sync round instead, holding no one back.
    pub pushes: broadcast::Sender<Pushed>,
    /// The owner's own counts, JSON, as they change: every session sends the latest to its
    /// peer (on connect, and after each change), which shows them on its dashboard.
    pub stats: tokio::sync::watch::Receiver<Arc<Vec<u8>>>,
}

/// Where a sync message is in a round of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Begins a round (after missed pushes, or when the peer's summary shows a gap that a
    /// relay does not carry): by what the peer says from now on, not by what it said it had
    /// before
    /// (`gatemesh_ledger::PeerSync::start_round`). Sent as a [`ROUND_FRAME`]; the peer
    /// answers it.
    Start,
    /// Answers a peer's round start: this node's heads, what it has, and what the peer
    /// lacks by what it said it has.
    Answer,
    /// Goes on with a round: sent only if it
    /// carries changes or asks for some (`gatemesh_ledger::Ledger::sync_followup`), so a
    /// round ends instead of the two sides telling each other their moving heads forever.
    FollowUp,
    /// Asks for what pushed changes build on, by hash, if they still wait for it: nothing
    /// otherwise. Asked [`MISSING_GRACE`] after such a push, by when what they build on has
    /// mostly arrived by its own writer's push (in a busy mesh a change often reaches a gate
    /// before one it builds on, from a third gate, does). Sent as a [`NEED_FRAME`]; the peer
    /// answers with the changes, or a round when they are no longer at hand.
    Missing,
}

/// How long a session waits, after the peer pushed changes that build on changes this node
/// lacks, before it asks the peer for them ([`Turn::Missing`]).
pub const MISSING_GRACE: Duration = Duration::from_millis(500);

/// A frame on a sync session, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// An empty frame: the dialler's hello.
    Hello,
    /// Changes the peer pushed as it made them ([`PUSH_FRAME`]).
    Push(&'a [u8]),
    /// A sync message that begins a round ([`ROUND_FRAME`]): answer it.
    Start(&'a [u8]),
    /// The peer's own counts, JSON ([`STATS_FRAME`]).
    Stats(&'a [u8]),
    /// The peer's summary ([`SUMMARY_FRAME`]).
    Summary(&'a [u8]),
    /// The peer asks for changes by hash ([`NEED_FRAME`]).
    Need(&'a [u8]),
    /// The addresses of the devices the peer is connected to ([`PEERS_FRAME`]).
    Peers(&'a [u8]),
    /// Any other sync message.
    Sync(&'a [u8]),
}

impl<'a> Frame<'a> {
    /// What `bytes` (one frame, as read) is.
    pub fn of(bytes: &'a [u8]) -> Self {
        match bytes.split_first() {
            None => Self::Hello,
            Some((&PUSH_FRAME, rest)) => Self::Push(rest),
            Some((&ROUND_FRAME, rest)) => Self::Start(rest),
            Some((&STATS_FRAME, rest)) => Self::Stats(rest),
            Some((&SUMMARY_FRAME, rest)) => Self::Summary(rest),
            Some((&NEED_FRAME, rest)) => Self::Need(rest),
            Some((&PEERS_FRAME, rest)) => Self::Peers(rest),
            Some(_) => Self::Sync(bytes),
        }
    }
}

/// One commit's changes, as pushed.
#[derive(Debug)]
pub struct Commit {
    /// The change chunks, one after another.
    pub bytes: Vec<u8>,
    /// Their hashes.
    pub hashes: Vec<[u8; 32]>,
}

/// One commit's changes, shared by every session.
pub type Pushed = Arc<Commit>;

/// Commits a session may fall behind on its pushes before it catches up by a sync round
/// instead (the capacity of [`SyncPort::pushes`]).
pub const PUSH_QUEUE: usize = 64;

/// Most bytes of changes one commit pushes; a larger commit (an import) reaches peers by the
/// next sync round. With [`PUSH_QUEUE`], bounds what the queue holds (16 MiB).
pub const PUSH_MOST: usize = 256 * 1024;

/// The first byte of a frame of pushed changes. A sync message starts with automerge's
/// message type (0x42 or 0x43); an empty frame is a hello.
pub const PUSH_FRAME: u8 = 0x01;

/// The first byte of a frame whose sync message (after this byte) begins a round.
pub const ROUND_FRAME: u8 = 0x02;

/// The first byte of a frame of the sender's own counts (JSON, at most [`STATS_MOST`]
/// bytes): what its staff see of it, for its peers' dashboards. Not part of the ledger.
pub const STATS_FRAME: u8 = 0x03;

/// Most bytes of counts a peer may send in one frame; a larger frame is ignored.
pub const STATS_MOST: usize = 4096;

/// The first byte of a frame of the sender's summary (`gatemesh_ledger::Summary`: what it
/// holds, writer by writer, and the devices it reaches).
pub const SUMMARY_FRAME: u8 = 0x04;

/// The first byte of a frame that asks for changes by hash (what pushed changes build on).
pub const NEED_FRAME: u8 = 0x05;

/// The first byte of a frame that tells the peer where the devices this node is connected to
/// are: `IP:port`, one a line, at most [`PEERS_MOST`] (the peer's own left out), sent when
/// they change. mDNS loses packets when a stadium's 32 gates start at once (a gate resolved
/// with no IPv4 address is left out of the answers to later queries): what one peer found,
/// every peer finds. Sent and taken only with [`MeshConfig::exchange_peers`].
pub const PEERS_FRAME: u8 = 0x06;

/// Most addresses one [`PEERS_FRAME`] carries, and its most bytes.
pub const PEERS_MOST: usize = 256;
const PEERS_BYTES: usize = PEERS_MOST * 48;

/// How often a session tells its peer its summary (a few kilobytes at a stadium's 32 gates),
/// while there is news in it ([`summary_due`]).
pub const SUMMARY_EVERY: Duration = Duration::from_secs(1);

/// Longest a session goes without telling its peer its summary, unchanged.
pub const SUMMARY_QUIET_MOST: Duration = Duration::from_secs(5);

/// Fewest time between two rounds of the sync protocol a session starts because of what a
/// summary or a request showed (a dishonest peer that says it lacks everything gets a round
/// at this pace at most).
pub const ROUND_EVERY: Duration = Duration::from_secs(2);

/// Frames from this size on are logged (at debug) as they are written and read: a heal's
/// relays, not a gate's own pushes of a few scans.
const LARGE_FRAME: usize = 64 * 1024;

/// Most bytes of changes one push frame carries: a backlog goes in several.
const PUSH_FRAME_MOST: usize = 1024 * 1024;

/// Bytes waiting to go to a peer past which this node relays it nothing more until they
/// went ([`SyncRequest::TheirSummary`]'s `relay`): one answer to a gate catching up is
/// ~3 MB.
pub const RELAY_WAITING_MOST: usize = 2 * 1024 * 1024;

/// Bytes waiting to go to a peer past which its session ends: a peer that asks (rounds,
/// changes by hash) and reads nothing would otherwise have this node queue its answers
/// without end. A whole 100,000-redemption ledger is ~21 MB.
pub const OUT_WAITING_MOST: usize = 64 * 1024 * 1024;

/// What a session's sync side has to send, on its way to the sending side ([`sending`]).
///
/// Never waits: a sync side that waited for room here stopped reading the peer's frames,
/// and when both ends of a connection did so at once (two gates relaying each other a
/// heal's gap, megabytes each way) each waited for the other to read, and the connection
/// carried nothing more, in either direction, for the rest of its life. What waits is
/// counted instead: relays wait past [`RELAY_WAITING_MOST`], and the session ends past
/// [`OUT_WAITING_MOST`].
struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes sent here and not yet written to the connection.
    waiting: Arc<AtomicUsize>,
}

impl Outbox {
    fn new() -> (Self, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let waiting = Arc::new(AtomicUsize::new(0));
        (Self { tx, waiting }, rx)
    }

    fn send(&self, frame: Vec<u8>) -> Result<()> {
        let waiting = self.waiting.fetch_add(frame.len(), Ordering::AcqRel) + frame.len();
        if waiting > OUT_WAITING_MOST {
            return Err(invalid!(
                "the peer reads nothing: {waiting} bytes wait to go to it"
            ));
        }
        self.tx
            .send(frame)
            .map_err(|_| invalid!("the session's sending side ended"))
    }

    fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

impl SyncPort {
    async fn generate(&self, peer: &str, turn: Turn) -> Result<Option<Vec<u8>>> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(SyncRequest::Generate {
                peer: peer.into(),
                turn,
                reply,
            })
            .await
            .map_err(|_| invalid!("the ledger stopped"))?;
        rx.await.map_err(|_| invalid!("the ledger stopped"))
    }

    async fn summary(&self, peer: &str, reaches: Vec<String>) -> Result<OurSummary> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(SyncRequest::Summary {
                peer: peer.into(),
                reaches,
                reply,
            })
            .await
            .map_err(|_| invalid!("the ledger stopped"))?;
        rx.await.map_err(|_| invalid!("the ledger stopped"))
    }

    async fn their_summary(
        &self,
        peer: &str,
        bytes: Vec<u8>,
        received: std::time::Instant,
        relay: bool,
    ) -> Result<Answer> {
        self.ask(|reply| SyncRequest::TheirSummary {
            peer: peer.into(),
            bytes,
            received,
            relay,
            reply,
        })
        .await
    }

    async fn need(&self, peer: &str, bytes: Vec<u8>) -> Result<Answer> {
        self.ask(|reply| SyncRequest::Need {
            peer: peer.into(),
            bytes,
            reply,
        })
        .await
    }

    async fn push(&self, peer: &str, bytes: Vec<u8>) -> Result<bool> {
        self.ask(|reply| SyncRequest::Push {
            peer: peer.into(),
            bytes,
            reply,
        })
        .await
    }

    async fn receive(&self, peer: &str, bytes: Vec<u8>) -> Result<()> {
        self.ask(|reply| SyncRequest::Receive {
            peer: peer.into(),
            bytes,
            reply,
        })
        .await
    }

    /// Sends the request `make` builds and waits for its answer; a refusal is the peer's
    /// fault ([`crate::MeshError::Refused`]).
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<std::result::Result<T, String>>) -> SyncRequest,
    ) -> Result<T> {
        let (reply, rx) = oneshot::channel();
        self.requests
            .send(make(reply))
            .await
            .map_err(|_| invalid!("the ledger stopped"))?;
        rx.await
            .map_err(|_| invalid!("the ledger stopped"))?
            .map_err(crate::MeshError::Refused)
    }
}

/// A peer as the status page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PeerStatus {
    /// The peer's device name.
    pub name: String,
    /// Gate or observer.
    pub role: crate::identity::Role,
    /// Its address on this connection, `IP:port`.
    pub address: String,
    /// Whether the connection is up.
    pub connected: bool,
    /// The connection's round-trip time estimate, ms.
    pub rtt_ms: Option<f64>,
    /// Milliseconds since 1970 of the last message received that says what the peer holds
    /// (a push, a summary, a sync message).
    pub last_sync_ms: Option<i64>,
    /// Sync messages received from this peer on the current connection.
    pub messages: u64,
    /// Bytes of sync messages sent to this peer on the current connection, frame headers
    /// included.
    pub bytes_sent: u64,
    /// Likewise, received.
    pub bytes_received: u64,
    /// Frames of pushed changes received from this peer on the current connection.
    pub pushes: u64,
    /// The most commits this session had queued for the peer at once (pushes not yet
    /// written to the connection).
    pub push_backlog_max: u64,
    /// Times the session fell [`PUSH_QUEUE`] commits behind (a slow link) and caught up by
    /// a sync round instead.
    pub fell_behind: u64,
    /// Rounds of the sync protocol this side started on the current connection.
    pub rounds: u64,
    /// Changes relayed to this peer on the current connection (what its summary or its
    /// requests showed it lacked), pushes of this node's own not counted.
    pub relayed: u64,
    /// The peer's own counts, as it last sent them ([`STATS_FRAME`]), if it sent any that
    /// read as JSON.
    pub stats: Option<serde_json::Value>,
}

#[derive(Debug)]
struct Live {
    conn: Connection,
    dialer: String,
    status: PeerStatus,
    /// The SHA-256 of the peer's certificate (DER).
    cert: [u8; 32],
    /// When a packet last came on the connection ([`Heard`]).
    heard: Heard,
}

impl Live {
    /// Whether the connection is open and the peer was heard on it lately: a peer that
    /// crashed or lost its network leaves its connection open here until the idle timeout
    /// (10 s), and its next connection, made on restarting, must not wait for that.
    fn alive(&self) -> bool {
        self.conn.close_reason().is_none() && self.heard.within(HEARD_WITHIN)
    }
}

/// When a packet last came on a connection (or it was made): sampled from QUIC's counts
/// every [`HEARD_LOOK`], so it says whether the peer is there even while the sync session
/// on it waits for the ledger. Both ends send a keep-alive every 2 s (`crate::net`), so an
/// open link is heard at least that often.
#[derive(Debug, Clone)]
struct Heard(Arc<Mutex<tokio::time::Instant>>);

impl Heard {
    fn now() -> Self {
        Self(Arc::new(Mutex::new(tokio::time::Instant::now())))
    }

    fn within(&self, most: Duration) -> bool {
        self.0.lock().map_or(true, |at| at.elapsed() <= most)
    }

    /// Samples `conn`'s received packets until it closes.
    async fn watch(self, conn: Connection) {
        let mut seen = conn.stats().udp_rx.datagrams;
        let mut look = tokio::time::interval(HEARD_LOOK);
        loop {
            tokio::select! {
                _ = conn.closed() => return,
                _ = look.tick() => {
                    let now = conn.stats().udp_rx.datagrams;
                    if now != seen {
                        seen = now;
                        if let Ok(mut at) = self.0.lock() {
                            *at = tokio::time::Instant::now();
                        }
                    }
                }
            }
        }
    }
}

/// How often a connection's received packets are looked at ([`Heard`]).
const HEARD_LOOK: Duration = Duration::from_millis(500);
/// Longest a connection may go unheard and still count as alive ([`Live::alive`]): two
/// keep-alives and some (a loaded machine answers late).
pub const HEARD_WITHIN: Duration = Duration::from_secs(5);

/// A peer whose sync message the ledger refused, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    /// The peer's device name.
    pub name: String,
    /// Its role, as its certificate says.
    pub role: crate::identity::Role,
    /// Its address on the connection that was closed.
    pub address: String,
    /// Why the ledger refused it.
    pub reason: String,
    /// When, ms since 1970.
    pub at_ms: i64,
}

/// Refusals kept for the status page, the latest last.
const REFUSALS_KEPT: usize = 32;

#[derive(Debug, Default)]
struct Registry {
    live: BTreeMap<String, Live>,
    refusals: std::collections::VecDeque<Refusal>,
    /// Peers whose connection ended, with their certificate, role and address: one revoked
    /// later (a revoked device that heard of it first and hung up) is listed as refused.
    ended: BTreeMap<String, ([u8; 32], crate::identity::Role, String)>,
}

/// Ended connections remembered for [`Registry::ended`].
const ENDED_KEPT: usize = 256;

impl Registry {
    /// Keeps a refusal for the status page; one that repeats the latest of its peer (a
    /// revoked peer dialling again) only moves its time.
    fn refused(&mut self, refusal: Refusal) {
        if let Some(same) = self
            .refusals
            .iter_mut()
            .rev()
            .find(|r| r.name == refusal.name)
            .filter(|r| r.reason == refusal.reason)
        {
            same.at_ms = refusal.at_ms;
            same.address = refusal.address;
            return;
        }
        if self.refusals.len() == REFUSALS_KEPT {
            self.refusals.pop_front();
        }
        self.refusals.push_back(refusal);
    }
}

/// Options of the mesh.
#[derive(Debug, Clone)]
pub struct MeshConfig {
    /// This device: who it is, its credentials, the CA it trusts.
    pub identity: Identity,
    /// The UDP address to accept and dial from; port 0 picks one.
    pub bind: SocketAddr,
    /// Peers to dial whether or not discovery finds them.
    pub static_peers: Vec<SocketAddr>,
    /// Find peers by mDNS on these interfaces; `None` for static peers only. Never start
    /// discovery where multicast must not leave the machine (see ARCHITECTURE.md).
    pub discovery: Option<crate::discovery::Interfaces>,
    /// Tell peers where this node's other peers are, and dial those they tell of
    /// ([`PEERS_FRAME`]): what mDNS missed (packets lost when many gates start at once, or
    /// multicast blocked on the venue's Wi-Fi and one peer given by hand), one peer's
    /// connections complete. Off where the topology is the point (tests of relays).
    pub exchange_peers: bool,
}

/// A running mesh.
#[derive(Debug)]
pub struct Mesh {
    endpoint: Endpoint,
    registry: Arc<Mutex<Registry>>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _discovery: Option<crate::discovery::Discovery>,
    /// Set once this device found its own certificate revoked: it syncs with no one.
    self_revoked: Arc<std::sync::atomic::AtomicBool>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

struct Ctx {
    me: PeerId,
    port: SyncPort,
    registry: Arc<Mutex<Registry>>,
    stop: watch::Receiver<bool>,
    revoked: crate::revoked::Revoked,
    /// The SHA-256 of this device's certificate.
    me_cert: [u8; 32],
    self_revoked: Arc<std::sync::atomic::AtomicBool>,
    /// Where the addresses peers tell of go to be dialled ([`PEERS_FRAME`]), when this
    /// device exchanges them ([`MeshConfig::exchange_peers`]).
    told: std::sync::OnceLock<mpsc::UnboundedSender<SocketAddr>>,
    /// Moves whenever the open connections may have changed (one registered, ended or
    /// closed): each session reads the devices this node reaches and their addresses again
    /// only then, not at every summary (each of up to 31 sessions once a second, each a
    /// look at every connection).
    neighbours: Arc<std::sync::atomic::AtomicU64>,
}

impl Ctx {
    fn is_self_revoked(&self) -> bool {
        self.self_revoked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a connection with `peer` is registered, open, and heard lately.
    fn live_with(&self, peer: &str) -> bool {
        self.registry
            .lock()
            .is_ok_and(|registry| registry.live.get(peer).is_some_and(Live::alive))
    }

    /// The open connections may have changed.
    fn neighbours_changed(&self) {
        self.neighbours
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Mesh {
    /// Binds the QUIC endpoint and starts accepting and dialing. Needs a tokio runtime.
    pub fn start(config: MeshConfig, port: SyncPort) -> Result<Self> {
        Self::start_with(config, port, crate::revoked::Revoked::default())
    }

    /// [`Mesh::start`], refusing the peers whose certificates are in `revoked` (and closing
    /// connections to those added later); once this device's own certificate is in it,
    /// syncing with no one.
    pub fn start_with(
        config: MeshConfig,
        port: SyncPort,
        revoked: crate::revoked::Revoked,
    ) -> Result<Self> {
        let id = &config.identity;
        let endpoint = mesh_endpoint(&id.trust, &id.creds, config.bind)?;
        let registry = Arc::new(Mutex::new(Registry::default()));
        let (stop, stop_rx) = watch::channel(false);
        let me_cert = crate::revoked::fingerprint(
            id.creds
                .chain
                .first()
                .map(|c| c.as_ref())
                .unwrap_or_default(),
        );
        let self_revoked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ctx = Arc::new(Ctx {
            me: id.peer.clone(),
            port,
            registry: registry.clone(),
            stop: stop_rx,
            revoked,
            me_cert,
            self_revoked: self_revoked.clone(),
            told: std::sync::OnceLock::new(),
            neighbours: Arc::default(),
        });
        // Set before any session starts: a session reads it when its neighbours change.
        let (told_tx, mut told) = mpsc::unbounded_channel::<SocketAddr>();
        if config.exchange_peers {
            let _ = ctx.told.set(told_tx);
        }
        let mut tasks = vec![
            tokio::spawn(accept_loop(endpoint.clone(), ctx.clone())),
            tokio::spawn(watch_revoked(ctx.clone())),
        ];
        let (found_tx, mut found) = mpsc::unbounded_channel();
        for addr in &config.static_peers {
            let _ = found_tx.send(*addr);
        }
        let discovery = match config.discovery.clone() {
            Some(interfaces) => Some(crate::discovery::Discovery::start(
                crate::discovery::DiscoveryConfig {
                    event: id.peer.event.clone(),
                    name: id.peer.name.clone(),
                    port: endpoint.local_addr()?.port(),
                    cert_der: id
                        .creds
                        .chain
                        .first()
                        .map(|c| c.to_vec())
                        .unwrap_or_default(),
                    interfaces,
                },
                found_tx,
            )?),
            None => {
                drop(found_tx);
                None
            }
        };
        // One dialer per address, however often it is announced or told.
        let (dial_endpoint, dial_ctx) = (endpoint.clone(), ctx.clone());
        tasks.push(tokio::spawn(async move {
            let dialing: Dialing = Default::default();
            let (mut found_open, mut told_open) = (true, true);
            while found_open || told_open {
                let (addr, tries) = tokio::select! {
                    addr = found.recv(), if found_open => match addr {
                        Some(addr) => (addr, None),
                        None => { found_open = false; continue }
                    },
                    addr = told.recv(), if told_open => match addr {
                        Some(addr) => (addr, Some(TOLD_TRIES)),
                        None => { told_open = false; continue }
                    },
                };
                let new = dialing
                    .lock()
                    .is_ok_and(|mut d| d.take(addr, tries, tokio::time::Instant::now()));
                if new {
                    tokio::spawn(dial_loop(
                        dial_endpoint.clone(),
                        addr,
                        dial_ctx.clone(),
                        dialing.clone(),
                    ));
                }
            }
        }));
        Ok(Self {
            endpoint,
            registry,
            stop,
            tasks,
            _discovery: discovery,
            self_revoked,
        })
    }

    /// Whether this device learned that its own certificate is revoked (it then syncs with
    /// no one).
    pub fn self_revoked(&self) -> bool {
        self.self_revoked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bound UDP address, with the port that was picked.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.endpoint.local_addr()?)
    }

    /// Connected peers, by name.
    pub fn peers(&self) -> Vec<PeerStatus> {
        let Ok(registry) = self.registry.lock() else {
            return Vec::new();
        };
        registry
            .live
            .values()
            .map(|l| PeerStatus {
                rtt_ms: Some(l.conn.rtt().as_secs_f64() * 1000.0),
                ..l.status.clone()
            })
            .collect()
    }

    /// Peers whose sync messages were refused (they lost their connection), the latest last;
    /// the last 32.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.registry
            .lock()
            .map(|r| r.refusals.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Closes every connection and stops.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        self.endpoint
            .close(VarInt::from_u32(CLOSE_OK), b"shutting down");
        for t in self.tasks {
            t.abort();
        }
        self.endpoint.wait_idle().await;
    }
}

async fn accept_loop(endpoint: Endpoint, ctx: Arc<Ctx>) {
    while let Some(incoming) = endpoint.accept().await {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let conn = match incoming.await {
                Ok(c) => c,
                Err(e) => return tracing::info!("refused an incoming peer: {e}"),
            };
            let peer = match checked_peer(&conn, &ctx.me.event) {
                Ok(p) => p,
                Err(e) => return tracing::info!("refused an incoming peer: {e}"),
            };
            let streams = match conn.accept_bi().await {
                Ok(s) => s,
                Err(e) => return tracing::info!("peer {} left before syncing: {e}", peer.name),
            };
            serve(conn, streams, peer.clone(), peer.name, &ctx).await;
        });
    }
}

/// The addresses dial loops run for (with the attempts a told one makes), and the told
/// addresses given up on lately, until when they are not dialled again.
#[derive(Debug, Default)]
struct DialingState {
    at: std::collections::HashMap<SocketAddr, Option<u32>>,
    quiet: std::collections::HashMap<SocketAddr, tokio::time::Instant>,
}

type Dialing = Arc<Mutex<DialingState>>;

impl DialingState {
    /// An address to dial, found (by mDNS or the configuration: `tries` is `None`) or told of
    /// by a peer (at most `tries` failed attempts in a row): whether a dial loop must start
    /// for it. An address found while a told one's loop runs makes that loop dial until the
    /// mesh stops: otherwise a partition longer than the told loop's attempts (about ten
    /// seconds) ended it, and the pair stayed apart after the heal — mDNS had announced the
    /// address once, before.
    fn take(&mut self, addr: SocketAddr, tries: Option<u32>, now: tokio::time::Instant) -> bool {
        if tries.is_some() {
            self.quiet.retain(|_, until| *until > now);
            let told = self.at.values().filter(|t| t.is_some()).count();
            if self.quiet.contains_key(&addr) || told >= TOLD_DIALLING_MOST {
                return false;
            }
        }
        match self.at.get_mut(&addr) {
            Some(running) => {
                if tries.is_none() {
                    *running = None;
                }
                false
            }
            None => {
                self.at.insert(addr, tries);
                true
            }
        }
    }

    /// How many failed attempts in a row the loop for `addr` may make, if it is limited.
    fn tries(&self, addr: &SocketAddr) -> Option<u32> {
        self.at.get(addr).copied().flatten()
    }
}

/// Failed attempts in a row after which a dial loop for an address a peer told of gives up
/// (about ten seconds), and how long that address is then not dialled again when told of:
/// a dishonest peer's made-up addresses cost a few packets each every few minutes, not a
/// packet a second for ever. Addresses mDNS or the configuration found are dialled until
/// the mesh stops.
const TOLD_TRIES: u32 = 5;
const TOLD_QUIET: Duration = Duration::from_secs(600);

/// Most dial loops for told addresses at once (a mesh has tens of devices).
const TOLD_DIALLING_MOST: usize = 64;

/// Dials `addr` (again whenever its connection ends) until the mesh stops, or, while the
/// address is only told of ([`DialingState::tries`]), until that many attempts in a row
/// failed (it then leaves `dialing`).
async fn dial_loop(endpoint: Endpoint, addr: SocketAddr, ctx: Arc<Ctx>, dialing: Dialing) {
    let mut failed = 0u32;
    let mut backoff = Duration::from_millis(200);
    let mut stop = ctx.stop.clone();
    // Who answered at this address last time; while that device is connected (whoever
    // dialed), there is nothing to do here.
    let mut known: Option<String> = None;
    loop {
        if *stop.borrow() || ctx.is_self_revoked() {
            return;
        }
        let connected = known.as_ref().and_then(|name| {
            let registry = ctx.registry.lock().ok()?;
            let live = registry.live.get(name)?;
            live.conn
                .close_reason()
                .is_none()
                .then(|| live.conn.clone())
        });
        if let Some(conn) = connected {
            // Woken when it closes (not every half second: 31 dial loops a gate at a
            // stadium); then the device is looked up again, perhaps connected anew.
            tokio::select! {
                _ = conn.closed() => continue,
                _ = stop.changed() => return,
            }
        }
        // A handshake to an unreachable peer would wait for the idle timeout (10 s), its
        // first packet resent after 1, 3, 7 s: after a partition healed, the link came back
        // only when the next resend went out (2–2.6 s in the rehearsal). Short attempts,
        // each starting over, keep a first packet going out at least every 1.5 s.
        // Read each time: an address found since it was told of is dialled for good.
        let tries = dialing.lock().ok().and_then(|d| d.tries(&addr));
        if tries.is_some_and(|most| failed >= most) {
            tracing::debug!("peer at {addr}: given up after {failed} attempts");
            if let Ok(mut d) = dialing.lock() {
                d.at.remove(&addr);
                d.quiet
                    .insert(addr, tokio::time::Instant::now() + TOLD_QUIET);
            }
            return;
        }
        failed += 1;
        let attempt = tokio::time::timeout(DIAL_ATTEMPT, dial(&endpoint, addr, &ctx.me.event));
        match attempt.await {
            Err(_) => tracing::debug!("peer at {addr}: no answer within {DIAL_ATTEMPT:?}"),
            Ok(Ok((conn, peer))) if peer.name == ctx.me.name => {
                conn.close(VarInt::from_u32(CLOSE_OK), b"that is me");
                return;
            }
            Ok(Ok((conn, peer))) => {
                known = Some(peer.name.clone());
                failed = 0;
                // The peer dialled too, and its connection is up (its session running,
                // perhaps for seconds under load: a partition healed, both sides redialling).
                // This one, opening a session, would take that one's place on both sides
                // (see `serve`), and what was asked and relayed on it would be done again.
                // Closed before any stream opens, the peer never serves it.
                if ctx.live_with(&peer.name) {
                    tracing::debug!("peer {}: already connected, dropping our dial", peer.name);
                    conn.close(VarInt::from_u32(CLOSE_DUPLICATE), b"already connected");
                    continue;
                }
                match conn.open_bi().await {
                    Ok((mut send, recv)) => {
                        // Streams open lazily; a first empty frame makes it exist for the peer.
                        if write_frame(&mut send, &[]).await.is_ok() {
                            backoff = Duration::from_millis(200);
                            serve(conn, (send, recv), peer, ctx.me.name.clone(), &ctx).await;
                        }
                    }
                    Err(e) => tracing::info!("peer at {addr}: {e}"),
                }
            }
            Ok(Err(e)) => tracing::debug!("peer at {addr} unreachable: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(DIAL_BACKOFF_MAX);
    }
}

/// Longest one dial attempt waits for the handshake: two round trips and a resend of the
/// first packet on a poor Wi-Fi link (a wired LAN answers in milliseconds).
const DIAL_ATTEMPT: Duration = Duration::from_secs(2);
/// Longest wait between two attempts at one address. With [`DIAL_ATTEMPT`] a first packet
/// goes out at least every 1.5 s: a peer that is back is found within that, and one that
/// is gone costs about a packet a second.
const DIAL_BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Registers the connection (keeping one per pair of devices) and runs its sync session.
async fn serve(
    conn: Connection,
    (send, recv): (SendStream, RecvStream),
    peer: PeerId,
    dialer: String,
    ctx: &Ctx,
) {
    let cert = peer_cert(&conn);
    if ctx.is_self_revoked() {
        conn.close(
            VarInt::from_u32(CLOSE_REVOKED),
            b"this device's certificate is revoked",
        );
        return;
    }
    if ctx.revoked.contains(&cert) {
        conn.close(VarInt::from_u32(CLOSE_REVOKED), REVOKED_REASON.as_bytes());
        if let Ok(mut registry) = ctx.registry.lock() {
            registry.refused(Refusal {
                name: peer.name.clone(),
                role: peer.role,
                address: conn.remote_address().to_string(),
                reason: REVOKED_REASON.into(),
                at_ms: now_ms(),
            });
        }
        return;
    }
    let cert = crate::revoked::fingerprint(&cert);
    let status = PeerStatus {
        name: peer.name.clone(),
        role: peer.role,
        address: conn.remote_address().to_string(),
        connected: true,
        rtt_ms: None,
        last_sync_ms: None,
        messages: 0,
        bytes_sent: 0,
        bytes_received: 0,
        pushes: 0,
        push_backlog_max: 0,
        fell_behind: 0,
        rounds: 0,
        relayed: 0,
        stats: None,
    };
    let heard = Heard::now();
    let replaced = {
        let Ok(mut registry) = ctx.registry.lock() else {
            return;
        };
        let replaced = registry.live.contains_key(&peer.name);
        if let Some(existing) = registry.live.get(&peer.name) {
            // Both dialed: the connection dialed by the smaller name wins, on both sides.
            // Unless it is no longer heard: the peer crashed and, restarted, dialled anew
            // (it would otherwise be turned away until the old one's idle timeout).
            let winner = ctx.me.name.clone().min(peer.name.clone());
            if existing.alive() && existing.dialer == winner && dialer != winner {
                conn.close(VarInt::from_u32(CLOSE_DUPLICATE), b"duplicate connection");
                return;
            }
            existing
                .conn
                .close(VarInt::from_u32(CLOSE_DUPLICATE), b"duplicate connection");
        }
        registry.ended.remove(&peer.name);
        registry.live.insert(
            peer.name.clone(),
            Live {
                conn: conn.clone(),
                dialer,
                status,
                cert,
                heard: heard.clone(),
            },
        );
        replaced
    };
    // The peer's sync state is per connection: one that took another's place starts afresh
    // (the session it replaced, ending, leaves the state alone: see below).
    if replaced {
        let _ = ctx
            .port
            .requests
            .send(SyncRequest::Forget {
                peer: peer.name.clone(),
            })
            .await;
    }
    ctx.neighbours_changed();
    // Closed by either side, for any reason: the sessions read who is reached again.
    let closed = tokio::spawn({
        let (conn, neighbours) = (conn.clone(), ctx.neighbours.clone());
        async move {
            heard.watch(conn).await;
            neighbours.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
    });
    let result = session(&conn, send, recv, &peer.name, ctx).await;
    if let Err(e) = &result {
        // Why the connection ended, when it did (a stream's error says only that it was
        // lost): timed out, reset, or closed by the peer and with what.
        match conn.close_reason() {
            Some(why) => tracing::warn!("sync with {} ended: {e} ({why})", peer.name),
            None => tracing::warn!("sync with {} ended: {e}", peer.name),
        }
        conn.close(VarInt::from_u32(CLOSE_BAD_SYNC), b"sync failed");
    }
    if let Err(crate::MeshError::Refused(reason)) = &result
        && let Ok(mut registry) = ctx.registry.lock()
    {
        registry.refused(Refusal {
            name: peer.name.clone(),
            role: peer.role,
            address: conn.remote_address().to_string(),
            reason: reason.clone(),
            at_ms: now_ms(),
        });
    }
    let mut was_live = false;
    if let Ok(mut registry) = ctx.registry.lock()
        && registry
            .live
            .get(&peer.name)
            .is_some_and(|l| l.conn.stable_id() == conn.stable_id())
    {
        was_live = true;
        registry.live.remove(&peer.name);
        ctx.neighbours_changed();
        let address = conn.remote_address().to_string();
        if ctx.revoked.contains_fingerprint(&cert) {
            registry.refused(Refusal {
                name: peer.name.clone(),
                role: peer.role,
                address,
                reason: REVOKED_REASON.into(),
                at_ms: now_ms(),
            });
        } else {
            if registry.ended.len() >= ENDED_KEPT {
                registry.ended.clear();
            }
            registry
                .ended
                .insert(peer.name.clone(), (cert, peer.role, address));
        }
    }
    // Its end is known now (and it is no longer registered); a connection left open is
    // closed with the endpoint.
    closed.abort();
    // Only the live connection's end forgets the peer's sync state. One that another took
    // the place of (both sides dialled, or it was lost and the peer came back) ends while
    // the new one syncs: forgetting then wiped the new session's state mid-round (what the
    // peer has, its last summary), and at a 32-gate heal peers that lacked a third of the
    // ledger were sent it whole.
    if was_live {
        let _ = ctx
            .port
            .requests
            .send(SyncRequest::Forget { peer: peer.name })
            .await;
    }
}

/// The peer's certificate (DER), as the handshake gave it.
fn peer_cert(conn: &Connection) -> Vec<u8> {
    conn.peer_identity()
        .and_then(|id| {
            id.downcast::<Vec<rustls_pki_types::CertificateDer<'static>>>()
                .ok()
        })
        .and_then(|chain| chain.first().map(|c| c.to_vec()))
        .unwrap_or_default()
}

/// Closes the connection to every peer the moment its certificate is revoked (each is
/// listed as refused), and every connection once this device's own is.
async fn watch_revoked(ctx: Arc<Ctx>) {
    let mut changes = ctx.revoked.subscribe();
    let mut stop = ctx.stop.clone();
    loop {
        let revoked = changes.borrow_and_update().clone();
        if revoked.contains(&ctx.me_cert) {
            tracing::warn!("this device's certificate is revoked: it syncs with no one");
            ctx.self_revoked
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if let Ok(mut registry) = ctx.registry.lock() {
            let gone: Vec<String> = registry
                .ended
                .iter()
                .filter(|(_, (cert, _, _))| revoked.contains(cert))
                .map(|(name, _)| name.clone())
                .collect();
            for name in gone {
                if let Some((_, role, address)) = registry.ended.remove(&name) {
                    registry.refused(Refusal {
                        name,
                        role,
                        address,
                        reason: REVOKED_REASON.into(),
                        at_ms: now_ms(),
                    });
                }
            }
            let closing: Vec<String> = registry
                .live
                .iter()
                .filter(|(_, l)| ctx.is_self_revoked() || revoked.contains(&l.cert))
                .map(|(name, _)| name.clone())
                .collect();
            for name in closing {
                if let Some(live) = registry.live.remove(&name) {
                    ctx.neighbours_changed();
                    if ctx.is_self_revoked() {
                        live.conn.close(
                            VarInt::from_u32(CLOSE_REVOKED),
                            b"this device's certificate is revoked",
                        );
                        continue;
                    }
                    tracing::warn!("closing the connection to {name}: {REVOKED_REASON}");
                    live.conn
                        .close(VarInt::from_u32(CLOSE_REVOKED), REVOKED_REASON.as_bytes());
                    registry.refused(Refusal {
                        name,
                        role: live.status.role,
                        address: live.status.address,
                        reason: REVOKED_REASON.into(),
                        at_ms: now_ms(),
                    });
                }
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = stop.changed() => return,
        }
    }
}

async fn session(
    conn: &Connection,
    mut send: SendStream,
    mut recv: RecvStream,
    peer: &str,
    ctx: &Ctx,
) -> Result<()> {
    // Frames are read by their own task: reading is not cancel-safe inside a select.
    let (frames_tx, frames) = mpsc::channel::<Result<Vec<u8>>>(8);
    let (me, from) = (ctx.me.name.clone(), peer.to_owned());
    let reader = tokio::spawn(async move {
        loop {
            let frame = read_frame(&mut recv).await.transpose();
            // Where a large answer waits, read with the sender's log and the ledger's.
            if let Some(Ok(f)) = &frame
                && f.len() >= LARGE_FRAME
            {
                tracing::debug!("{me}: read a frame of {} bytes from {from}", f.len());
            }
            let end = !matches!(frame, Some(Ok(_)));
            if let Some(frame) = frame
                && frames_tx.send(frame).await.is_err()
            {
                return;
            }
            if end {
                return;
            }
        }
    });
    // Subscribed before the first round: whatever is committed after it is pushed.
    let pushes = ctx.port.pushes.subscribe();
    // What the sync side has to send (its messages, the owner's counts) goes through the
    // sending side, which also writes the pushes: a session waiting for the ledger to take
    // the peer's changes goes on pushing its own meanwhile.
    let (out, out_rx) = Outbox::new();
    let waiting = out.waiting.clone();
    let behind = tokio::sync::Notify::new();
    let result = tokio::select! {
        r = sending(&mut send, (out_rx, waiting), pushes, &behind, peer, ctx) => r,
        r = syncing(conn, frames, out, &behind, peer, ctx) => r,
    };
    reader.abort();
    result
}

/// A session's sync side: answers the peer's frames (pushes, sync messages, counts) through
/// the ledger's owner, and runs the rounds of the sync protocol. Its frames go out through
/// `out` ([`sending`]).
async fn syncing(
    conn: &Connection,
    mut frames: mpsc::Receiver<Result<Vec<u8>>>,
    out: Outbox,
    behind: &tokio::sync::Notify,
    peer: &str,
    ctx: &Ctx,
) -> Result<()> {
    let mut stop = ctx.stop.clone();
    // The owner's counts as they stand go out first, then each change.
    let mut stats = ctx.port.stats.clone();
    stats.mark_changed();
    let mut summary = tokio::time::interval(SUMMARY_EVERY);
    summary.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // What the sync protocol sends next. Nothing on connect: the summaries go first (the
    // first at once), and a round starts only if they show a gap a relay does not carry
    // (the first message of a round from a fresh state holds a bloom filter of every change
    // the ledger holds: a second of the writer at 100,000, once per peer after a restart).
    let mut next = None;
    // When this side last started a round.
    let mut last_round: Option<tokio::time::Instant> = None;
    // The addresses of this node's other peers, as last told to this one.
    let mut told_peer: Option<String> = None;
    // The devices this node reaches, as read when the open connections last changed
    // ([`Ctx::neighbours`]).
    let mut reaches: Option<(u64, Vec<String>)> = None;
    // A frame read while gathering pushes that is not one: handled next.
    let mut held: Option<Vec<u8>> = None;
    // When to ask for what pushed changes build on, if they still wait for it.
    let mut ask_at: Option<tokio::time::Instant> = None;
    // The summary last sent, and when.
    let mut last_summary: Option<(Vec<u8>, tokio::time::Instant)> = None;
    // The last summary asked the peer to relay a gap ([`OurSummary::catching_up`]).
    let mut catching_up = false;
    // The peer told no summary on this connection yet: until then this node does not know
    // what it lacks, and its first summary asks for no relays (the owner's rule).
    let mut first_of_theirs = true;
    loop {
        if let Some(turn) = next.take()
            && let Some(mut message) = ctx.port.generate(peer, turn).await?
        {
            match turn {
                Turn::Start => {
                    message.insert(0, ROUND_FRAME);
                    last_round = Some(tokio::time::Instant::now());
                    update(ctx, peer, |s| s.rounds += 1);
                }
                Turn::Missing => message.insert(0, NEED_FRAME),
                Turn::Answer | Turn::FollowUp => {}
            }
            out.send(message)?;
        }
        let bytes = match held.take() {
            Some(bytes) => bytes,
            None => tokio::select! {
                frame = frames.recv() => match frame {
                    Some(Ok(bytes)) => bytes,
                    Some(Err(e)) => return Err(e),
                    None => return Ok(()),
                },
                _ = behind.notified() => {
                    next = Some(Turn::Start);
                    continue;
                }
                _ = tokio::time::sleep_until(ask_at.unwrap_or_else(tokio::time::Instant::now)),
                    if ask_at.is_some() => {
                    ask_at = None;
                    next = Some(Turn::Missing);
                    continue;
                }
                // Sent while it changes, or while this node lacks what the peer holds: the
                // peer decides what to relay when one arrives, and what it held back a
                // moment ago (too recent, or another's to relay first) is due by the next.
                // Unchanged and lacking nothing, once every few seconds ([`summary_due`]).
                now = summary.tick() => {
                    // Read again only when a connection came, went or closed.
                    let seen = ctx.neighbours.load(std::sync::atomic::Ordering::Acquire);
                    if reaches.as_ref().is_none_or(|(at, _)| *at != seen) {
                        if ctx.told.get().is_some() {
                            let addresses = addresses_except(ctx, peer);
                            if told_peer.as_ref() != Some(&addresses) {
                                let mut frame = Vec::with_capacity(addresses.len() + 1);
                                frame.push(PEERS_FRAME);
                                frame.extend_from_slice(addresses.as_bytes());
                                out.send(frame)?;
                                told_peer = Some(addresses);
                            }
                        }
                        reaches = Some((seen, reached(ctx)));
                    }
                    let reached_now = reaches.as_ref().map(|(_, r)| r.clone()).unwrap_or_default();
                    let ours = ctx.port.summary(peer, reached_now).await?;
                    let pace = summary_pace(reaches.as_ref().map_or(0, |(_, r)| r.len()));
                    if !summary_due(last_summary.as_ref(), &ours.message, ours.behind, (now, pace)) {
                        continue;
                    }
                    let mut frame = Vec::with_capacity(ours.message.len() + 1);
                    frame.push(SUMMARY_FRAME);
                    frame.extend_from_slice(&ours.message);
                    out.send(frame)?;
                    last_summary = Some((ours.message, now));
                    catching_up = ours.catching_up;
                    continue;
                }
                changed = stats.changed() => {
                    if changed.is_err() {
                        // The owner stopped publishing: nothing more to send.
                        stats = tokio::sync::watch::channel(Arc::new(Vec::new())).1;
                        continue;
                    }
                    let json = stats.borrow_and_update().clone();
                    if !json.is_empty() && json.len() <= STATS_MOST {
                        let mut frame = Vec::with_capacity(json.len() + 1);
                        frame.push(STATS_FRAME);
                        frame.extend_from_slice(&json);
                        out.send(frame)?;
                    }
                    continue;
                }
                _ = stop.changed() => return Ok(()),
                _ = conn.closed() => return Ok(()),
            },
        };
        let len = bytes.len() as u64 + 4;
        match Frame::of(&bytes) {
            Frame::Hello => {}
            Frame::Push(changes) => {
                // Pushes that queued up while the ledger was busy go to it as one: a
                // backlog costs the owner one request, not one per commit.
                let (mut changes, mut count, mut len) = (changes.to_vec(), 1, len);
                while changes.len() < PUSH_FRAME_MOST {
                    match frames.try_recv() {
                        Ok(Ok(more)) => match Frame::of(&more) {
                            Frame::Push(more_changes) => {
                                changes.extend_from_slice(more_changes);
                                count += 1;
                                len += more.len() as u64 + 4;
                            }
                            _ => {
                                held = Some(more);
                                break;
                            }
                        },
                        Ok(Err(e)) => return Err(e),
                        Err(_) => break,
                    }
                }
                if ctx.port.push(peer, changes).await? {
                    ask_at.get_or_insert_with(|| tokio::time::Instant::now() + MISSING_GRACE);
                }
                // Catching up from this peer: what it sent is taken (or waits its turn on the
                // writer), and the next part is asked for now, not at the next tick.
                if catching_up {
                    summary.reset_immediately();
                }
                update(ctx, peer, |s| {
                    s.last_sync_ms = Some(now_ms());
                    s.pushes += count;
                    s.bytes_received += len;
                });
            }
            Frame::Start(message) => {
                ctx.port.receive(peer, message.to_vec()).await?;
                count_message(ctx, peer, len);
                next = Some(Turn::Answer);
            }
            Frame::Sync(message) => {
                ctx.port.receive(peer, message.to_vec()).await?;
                count_message(ctx, peer, len);
                next = Some(Turn::FollowUp);
            }
            Frame::Summary(message) => {
                // Relays wait while much waits to go to the peer already (a slow link, or a
                // peer that sends as much as it is sent: see [`Outbox`]).
                let relay = out.waiting() < RELAY_WAITING_MOST;
                let answer = ctx
                    .port
                    .their_summary(peer, message.to_vec(), std::time::Instant::now(), relay)
                    .await?;
                update(ctx, peer, |s| {
                    s.last_sync_ms = Some(now_ms());
                    s.bytes_received += len;
                });
                // What this node lacks of the peer is known now: its summary says what it
                // wants relayed at once, not at the next tick.
                if std::mem::take(&mut first_of_theirs) {
                    summary.reset_immediately();
                }
                if answered(&out, answer, last_round, peer, ctx)? {
                    next = Some(Turn::Start);
                }
            }
            Frame::Need(message) => {
                let answer = ctx.port.need(peer, message.to_vec()).await?;
                update(ctx, peer, |s| s.bytes_received += len);
                if answered(&out, answer, last_round, peer, ctx)? {
                    next = Some(Turn::Start);
                }
            }
            Frame::Peers(list) => {
                update(ctx, peer, |s| s.bytes_received += len);
                if let Some(told) = ctx.told.get() {
                    let addresses = told_addresses(list, conn.remote_address(), ctx);
                    tracing::debug!("{peer} tells of {} peers new here", addresses.len());
                    for addr in addresses {
                        let _ = told.send(addr);
                    }
                }
            }
            Frame::Stats(json) => {
                // Shown, never decided on: what does not read is left out.
                let read = (json.len() <= STATS_MOST)
                    .then(|| serde_json::from_slice::<serde_json::Value>(json).ok())
                    .flatten();
                if read.is_none() {
                    tracing::debug!("{peer} sent counts that do not read");
                }
                update(ctx, peer, |s| {
                    s.bytes_received += len;
                    if read.is_some() {
                        s.stats = read;
                    }
                });
            }
        }
    }
}

/// Sends the changes of `answer` as pushes; whether a round of the sync protocol is to start
/// now (the answer asks for one, and this side started none within [`ROUND_EVERY`]).
fn answered(
    out: &Outbox,
    answer: Answer,
    last_round: Option<tokio::time::Instant>,
    peer: &str,
    ctx: &Ctx,
) -> Result<bool> {
    for changes in answer.frames {
        let mut frame = Vec::with_capacity(changes.len() + 1);
        frame.push(PUSH_FRAME);
        frame.extend_from_slice(&changes);
        out.send(frame)?;
    }
    if answer.changes > 0 {
        update(ctx, peer, |s| s.relayed += answer.changes as u64);
    }
    Ok(answer.round && last_round.is_none_or(|at| at.elapsed() >= ROUND_EVERY))
}

/// The addresses of the devices this node is connected to now, but `peer`'s, sorted, one a
/// line ([`PEERS_FRAME`]).
fn addresses_except(ctx: &Ctx, peer: &str) -> String {
    let mut addresses: Vec<String> = ctx
        .registry
        .lock()
        .map(|r| {
            r.live
                .iter()
                .filter(|(name, l)| name.as_str() != peer && l.conn.close_reason().is_none())
                .map(|(_, l)| l.conn.remote_address().to_string())
                .collect()
        })
        .unwrap_or_default();
    addresses.sort();
    addresses.truncate(PEERS_MOST);
    addresses.join("\n")
}

/// The addresses a peer at `from` told of ([`PEERS_FRAME`]) that no connection of this
/// node's is to: at most [`PEERS_MOST`] of a frame of at most its bytes; what does not read
/// as `IP:port`, or is unspecified or multicast, is left out, and so is a loopback address
/// told by a peer that is not on this machine itself.
fn told_addresses(list: &[u8], from: SocketAddr, ctx: &Ctx) -> Vec<SocketAddr> {
    if list.len() > PEERS_BYTES {
        return Vec::new();
    }
    let connected: std::collections::HashSet<SocketAddr> = ctx
        .registry
        .lock()
        .map(|r| r.live.values().map(|l| l.conn.remote_address()).collect())
        .unwrap_or_default();
    String::from_utf8_lossy(list)
        .lines()
        .take(PEERS_MOST)
        .filter_map(|line| line.trim().parse::<SocketAddr>().ok())
        .filter(|a| {
            let ip = a.ip();
            a.port() != 0
                && !ip.is_unspecified()
                && (!ip.is_loopback() || from.ip().is_loopback())
                && !ip.is_multicast()
                && !connected.contains(a)
        })
        .collect()
}

/// The devices this node is connected to now, by name.
fn reached(ctx: &Ctx) -> Vec<String> {
    ctx.registry
        .lock()
        .map(|r| {
            r.live
                .iter()
                .filter(|(_, l)| l.conn.close_reason().is_none())
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A session's sending side: writes what the sync side hands it (`out`) and the owner's
/// commits as they are stored (`pushes`). It never waits for the ledger, so a peer gets
/// this node's admissions while the ledger is busy with what the peer sent. Falling
/// [`PUSH_QUEUE`] commits behind (a slow link) wakes the sync side (`behind`) for a round.
async fn sending(
    send: &mut SendStream,
    (mut out, waiting): (mpsc::UnboundedReceiver<Vec<u8>>, Arc<AtomicUsize>),
    mut pushes: broadcast::Receiver<Pushed>,
    behind: &tokio::sync::Notify,
    peer: &str,
    ctx: &Ctx,
) -> Result<()> {
    let mut marks = Marks::default();
    loop {
        tokio::select! {
            frame = out.recv() => {
                let Some(frame) = frame else { return Ok(()) };
                write_frame(send, &frame).await?;
                let left = waiting
                    .fetch_sub(frame.len(), Ordering::AcqRel)
                    .saturating_sub(frame.len());
                if frame.len() >= LARGE_FRAME {
                    tracing::debug!(
                        "{}: wrote a frame of {} bytes to {peer}, {left} bytes wait behind it",
                        ctx.me.name,
                        frame.len()
                    );
                }
                update(ctx, peer, |s| s.bytes_sent += frame.len() as u64 + 4);
            }
            () = tokio::time::sleep(MARK_AGAIN), if !marks.0.is_empty() => {
                marks.tell(Vec::new(), peer, ctx);
            }
            pushed = pushes.recv() => match pushed {
                Ok(first) => if push_frames(send, &mut pushes, (first, &mut marks), peer, ctx).await? {
                    update(ctx, peer, |s| s.fell_behind += 1);
                    behind.notify_one();
                },
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::info!("{peer} fell {missed} commits behind; catching up by sync");
                    update(ctx, peer, |s| s.fell_behind += 1);
                    behind.notify_one();
                }
                // The owner is gone: the node is stopping.
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
        }
    }
}

/// Sends `first` and every push already queued behind it, coalesced into frames of at most
/// [`PUSH_FRAME_MOST`] bytes of changes: a burst costs a frame, not one per commit. Returns
/// whether the session fell behind meanwhile and missed some (a sync round must follow).
async fn push_frames(
    send: &mut SendStream,
    pushes: &mut broadcast::Receiver<Pushed>,
    (first, marks): (Pushed, &mut Marks),
    peer: &str,
    ctx: &Ctx,
) -> Result<bool> {
    let backlog = pushes.len() as u64 + 1;
    update(ctx, peer, |s| {
        s.push_backlog_max = s.push_backlog_max.max(backlog);
    });
    let mut frame = Vec::with_capacity(1 + first.bytes.len());
    frame.push(PUSH_FRAME);
    frame.extend_from_slice(&first.bytes);
    let mut hashes = first.hashes.clone();
    let mut missed = false;
    loop {
        let next = if frame.len() < PUSH_FRAME_MOST {
            match pushes.try_recv() {
                Ok(more) => Some(more),
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    missed = true;
                    None
                }
                Err(_) => None,
            }
        } else {
            None
        };
        match next {
            Some(more) if frame.len() + more.bytes.len() <= PUSH_FRAME_MOST => {
                frame.extend_from_slice(&more.bytes);
                hashes.extend_from_slice(&more.hashes);
            }
            more => {
                write_frame(send, &frame).await?;
                update(ctx, peer, |s| s.bytes_sent += frame.len() as u64 + 4);
                marks.tell(std::mem::take(&mut hashes), peer, ctx);
                let Some(more) = more else {
                    return Ok(missed);
                };
                frame.truncate(1);
                frame.extend_from_slice(&more.bytes);
                hashes.extend_from_slice(&more.hashes);
            }
        }
    }
}

/// The marks of pushes written to a peer that the owner was not told of yet: its queue of
/// requests was full (a loaded writer). Without a mark the owner counts the change as not
/// sent, and relays it again (a stadium's books showed ~10,000 such).
#[derive(Debug, Default)]
struct Marks(Vec<[u8; 32]>);

/// How soon marks the owner could not take are offered again, when no push comes meanwhile.
const MARK_AGAIN: Duration = Duration::from_millis(100);

/// Most marks kept for an owner that takes none: past it the oldest are given up (each a
/// change the owner may relay again).
const MARKS_KEPT: usize = 1 << 16;

impl Marks {
    /// Tells the owner that `hashes` were pushed, with the marks it could not take before;
    /// keeps them all if it cannot take them now either.
    fn tell(&mut self, hashes: Vec<[u8; 32]>, peer: &str, ctx: &Ctx) {
        let hashes = if self.0.is_empty() {
            hashes
        } else {
            let mut all = std::mem::take(&mut self.0);
            all.extend(hashes);
            all
        };
        if hashes.is_empty() {
            return;
        }
        let request = SyncRequest::Pushed {
            peer: peer.to_owned(),
            hashes,
        };
        if let Err(mpsc::error::TrySendError::Full(SyncRequest::Pushed { mut hashes, .. })) =
            ctx.port.requests.try_send(request)
        {
            let over = hashes.len().saturating_sub(MARKS_KEPT);
            hashes.drain(..over);
            self.0 = hashes;
        }
    }
}

fn count_message(ctx: &Ctx, peer: &str, len: u64) {
    update(ctx, peer, |s| {
        s.last_sync_ms = Some(now_ms());
        s.messages += 1;
        s.bytes_received += len;
    });
}

/// Updates the status of the live connection to `peer`.
fn update(ctx: &Ctx, peer: &str, f: impl FnOnce(&mut PeerStatus)) {
    if let Ok(mut registry) = ctx.registry.lock()
        && let Some(live) = registry.live.get_mut(peer)
    {
        f(&mut live.status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_found_while_its_told_dial_loop_runs_is_dialled_for_good() {
        let now = tokio::time::Instant::now();
        let addr: SocketAddr = "10.0.0.7:7443".parse().unwrap();
        let mut d = DialingState::default();
        // A peer told of it first: one loop, with a limit.
        assert!(d.take(addr, Some(TOLD_TRIES), now));
        assert_eq!(d.tries(&addr), Some(TOLD_TRIES));
        assert!(!d.take(addr, Some(TOLD_TRIES), now), "one loop an address");
        // mDNS found it: no second loop, and the one running no longer gives up (a
        // partition longer than its attempts would have ended it, and the pair stayed
        // apart after the heal).
        assert!(!d.take(addr, None, now));
        assert_eq!(d.tries(&addr), None);
        // Told of again, it stays unlimited.
        assert!(!d.take(addr, Some(TOLD_TRIES), now));
        assert_eq!(d.tries(&addr), None);
        // A told address given up on is quiet for a while, unless found.
        let other: SocketAddr = "10.0.0.8:7443".parse().unwrap();
        d.quiet.insert(other, now + TOLD_QUIET);
        assert!(!d.take(other, Some(TOLD_TRIES), now));
        assert!(d.take(other, None, now));
        assert_eq!(d.tries(&other), None);
    }

    #[test]
    fn a_summary_goes_when_it_is_news_and_otherwise_every_few_seconds() {
        let t0 = tokio::time::Instant::now();
        let later = |s: f64| (t0 + Duration::from_secs_f64(s), SUMMARY_EVERY);
        let sent = (b"holds A:5".to_vec(), t0);
        // The first of a connection.
        assert!(summary_due(None, b"holds A:5", false, (t0, SUMMARY_EVERY)));
        // The same, lacking nothing: not before SUMMARY_QUIET_MOST.
        assert!(!summary_due(Some(&sent), b"holds A:5", false, later(1.0)));
        let quiet = SUMMARY_QUIET_MOST.as_secs_f64();
        assert!(!summary_due(
            Some(&sent),
            b"holds A:5",
            false,
            later(quiet - 0.5)
        ));
        assert!(summary_due(Some(&sent), b"holds A:5", false, later(quiet)));
        // Changed (a change taken or made, a peer reached or lost): at the next tick.
        assert!(summary_due(Some(&sent), b"holds A:6", false, later(1.0)));
        // Unchanged, but the peer holds what this node lacks: the peer relays on it.
        assert!(summary_due(Some(&sent), b"holds A:5", true, later(1.0)));
        // Changed, with many peers: once the pace passed; lacking, at once all the same.
        let pace = summary_pace(31);
        let at = |s: f64| (t0 + Duration::from_secs_f64(s), pace);
        assert!(!summary_due(Some(&sent), b"holds A:6", false, at(1.0)));
        assert!(summary_due(
            Some(&sent),
            b"holds A:6",
            false,
            at(pace.as_secs_f64())
        ));
        assert!(summary_due(Some(&sent), b"holds A:6", true, at(1.0)));
    }

    #[test]
    fn a_gate_takes_in_about_as_many_summaries_a_second_however_many_peers_it_has() {
        for peers in 0..=SUMMARY_PEERS_AT_PACE {
            assert_eq!(summary_pace(peers), SUMMARY_EVERY, "{peers} peers");
        }
        assert_eq!(summary_pace(9), SUMMARY_EVERY * 2);
        assert_eq!(summary_pace(16), SUMMARY_EVERY * 2);
        assert_eq!(summary_pace(31), SUMMARY_EVERY * 4);
        // 31 peers, each every 4 s: under 8 a second.
        assert!(31.0 / summary_pace(31).as_secs_f64() <= SUMMARY_PEERS_AT_PACE as f64);
        assert_eq!(summary_pace(1_000), SUMMARY_QUIET_MOST);
    }
}
