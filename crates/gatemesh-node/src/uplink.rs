//! The gate's uplink to the central server, for whenever the internet works.
//!
//! Two loops, each retrying with backoff for as long as the gate runs:
//! - **Down**: the whole manifest once (it becomes the gate's listing), then the server's
//!   change stream from that cursor, resumed from the last cursor after any break. Voids,
//!   transfers and reverts go into the ledger, so they spread over the mesh to gates with no
//!   uplink.
//! - **Up**: every redemption in the ledger that the server has not acknowledged, as a
//!   journal: the gate's own at once; those learned from peers once they have been here
//!   [`PEER_GRACE`] (and a share of it fixed by the gate's name), and only those the server
//!   does not hold when asked (`/redemptions/held`): their writers upload them themselves,
//!   and a peer's reach the server through this gate only when that peer's uplink is down.
//!   (Every gate uploading everything it held had the server take each admission of a
//!   32-gate mesh 32 times.) A peer's is asked about after a tenth of the grace already,
//!   uploading none, so the backlog ends soon after the admissions do; a writer whose
//!   redemption the server lacked after the grace has its next ones uploaded after a tenth
//!   of it, until one is found held. The server dedupes by redemption id, so a lost response costs
//!   nothing: the batch is sent again and answered from storage. When the server already
//!   holds another admission of a ticket, its answer names it (to the question as to the
//!   upload), and that redemption is written into the ledger; where the two were concurrent
//!   the ledger flags the ticket, on this gate and on every peer.
//!
//! What the server acknowledged is kept in `uplink.sqlite` in the data directory, so a
//! restarted gate does not send everything again (and if it did, nothing would count twice).
//!
//! Every body is a `gatemesh-wire` type, the same the server writes. An item the gate cannot
//! take (a manifest entry or an answer it cannot read) or cannot send (a record the server
//! would refuse) is skipped, logged and counted in [`UplinkStatus::skipped`] (the status
//! endpoint, the heartbeat and so the server's `/metrics`), never retried forever: one odd
//! item must not stall the uplink for everything after it.

use std::{
    collections::HashSet,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures_util::StreamExt;
use gatemesh_ledger::{Hlc, NodeId, Redemption, RedemptionId, Resolution};
use gatemesh_ticket::TicketId;
pub use gatemesh_wire::UplinkStatus;
use gatemesh_wire::{
    Admission, ErrorBody, Heartbeat, HeldAnswers, HeldQuery, Journal, JournalAnswers, Label,
    Lenient, Manifest, ManifestEntry, PeerReport, RedemptionAnswer, RedemptionRequest,
    ResolveRequest, Role, Skipped, Timestamp, Verdict, WireError, change,
};
use tokio::sync::watch;

use crate::{
    Node, NodeError,
    gate::{Command, PeersDue, ServerDecision, ServerTicket, ServerUpdate, UnsentCursor, now_ms},
};

/// Most redemptions in one journal upload.
const BATCH: usize = 1000;
/// A change stream silent for this long (the server sends a keep-alive every 15 s) is dead.
const STREAM_SILENCE: Duration = Duration::from_secs(40);
/// Longest wait between two attempts to reach the server. Short, because what it delays is
/// the gate's reconciliation once the venue's uplink is back (at 10 s a rehearsed outage took
/// 4.4 s to reconcile), and a failed attempt costs a TCP connect: a hundred gates retrying
/// every 3 s are 33 connects a second at a server that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(3);

/// Where the server is and how to authenticate.
#[derive(Debug, Clone)]
pub struct UplinkConfig {
    /// Base URL, e.g. `https://tickets.example.org`.
    pub server: String,
    /// The bearer token the server gave this gate.
    pub token: String,
    /// The server's certificate, pinned at pairing: the only one the uplink accepts. Needed
    /// for an `https://` server; a plain `http://` one must be on loopback.
    pub fingerprint: Option<gatemesh_wire::CertFingerprint>,
    /// How long a peer's redemption is held here before this gate asks the server whether
    /// it has it: [`PEER_GRACE`] (tests shorten it). Each gate waits a share of it more,
    /// fixed by its name.
    pub peer_grace: Duration,
}

/// How long a peer's redemption is held before the gate asks the server whether it has it
/// (and uploads it if not): its writer uploads it itself within a second or so while its
/// uplink works, and asked much sooner the server would often still lack it (a duplicate
/// upload costs the server a record to check, never a wrong answer).
pub const PEER_GRACE: Duration = Duration::from_secs(10);

/// A gate's grace for its peers' redemptions: `base` and a share of it up to as much again,
/// fixed by the gate's name. Gates ask at different moments, so the redemptions of a writer
/// whose uplink is down are uploaded by the first gate to ask, and the others find them held.
fn grace_of(name: &str, base: Duration) -> Duration {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same share on every start.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    let share = u32::try_from(h.finish() % 1000).unwrap_or(0);
    base + base * share / 1000
}

pub(crate) struct Uplink {
    pub status: Mutex<UplinkStatus>,
    pub stop: watch::Sender<bool>,
}

impl Uplink {
    fn update(&self, f: impl FnOnce(&mut UplinkStatus)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
        }
    }

    fn failed(&self, e: &anyhow::Error) {
        tracing::warn!("uplink: {e:#}");
        let text = format!("{e:#}");
        self.update(|s| s.last_error = Some(text));
    }

    /// An item skipped (see the module docs): logged and counted.
    fn skipped(&self, what: &str, why: &dyn std::fmt::Display) {
        let text = format!("{what}: {why}");
        tracing::warn!("uplink skipped {text}");
        self.update(|s| {
            s.skipped += 1;
            s.last_skipped = Some(text);
        });
    }

    fn contact(&self) {
        self.update(|s| {
            s.last_contact_ms = Some(now_ms());
            s.last_error = None;
        });
    }
}

/// The ids the server acknowledged, on disk.
struct Acks {
    conn: rusqlite::Connection,
}

impl Acks {
    fn open(path: &Path) -> anyhow::Result<(Self, HashSet<String>)> {
        let conn = rusqlite::Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // Losing the last acknowledgements in a power cut only means sending them again.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS sent (rid TEXT PRIMARY KEY)")?;
        let sent = {
            let mut stmt = conn.prepare("SELECT rid FROM sent")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<Result<HashSet<_>, _>>()?
        };
        Ok((Self { conn }, sent))
    }

    fn add(&mut self, ids: &[String]) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO sent (rid) VALUES (?1)")?;
            for id in ids {
                stmt.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

impl Node {
    /// Connects this gate to the central server (see the module docs). Needs a tokio
    /// runtime; runs until [`Node::shutdown`].
    pub fn start_uplink(&self, config: UplinkConfig) -> anyhow::Result<()> {
        let server = config.server.trim_end_matches('/').to_owned();
        let client = crate::edge::client_builder(&server, config.fingerprint.as_ref())?
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        let (acks, sent) = Acks::open(&self.shared.data_dir.join("uplink.sqlite"))?;
        let uplink = Arc::new(Uplink {
            status: Mutex::new(UplinkStatus {
                server: server.clone(),
                ..Default::default()
            }),
            stop: watch::Sender::new(false),
        });
        if let Ok(mut slot) = self.shared.uplink.lock() {
            anyhow::ensure!(slot.is_none(), "the uplink is already running");
            *slot = Some(uplink.clone());
        }
        let base = format!("{server}/v1/events/{}", self.info().event);
        let down = Down {
            node: self.clone(),
            uplink: uplink.clone(),
            client: client.clone(),
            base: base.clone(),
            token: config.token.clone(),
        };
        tokio::spawn(down.run());
        let beat = Beat {
            node: self.clone(),
            uplink: uplink.clone(),
            client: client.clone(),
            url: format!("{base}/heartbeat"),
            token: config.token.clone(),
        };
        tokio::spawn(beat.run());
        let up = Up {
            node: self.clone(),
            uplink,
            client,
            base,
            token: config.token,
            acks,
            sent: Arc::new(sent),
            last_scan: Duration::ZERO,
            unsent_from: UnsentCursor::default(),
            seen_at: std::collections::VecDeque::new(),
            grace: grace_of(&self.info().name, config.peer_grace),
            peers_waiting: false,
            lagging: Arc::default(),
            asked: std::collections::HashMap::new(),
        };
        tokio::spawn(up.run());
        Ok(())
    }

    /// What a heartbeat tells the server: who this is, its counts, peers and uplink.
    async fn heartbeat_body(&self) -> Result<Heartbeat, NodeError> {
        let snap = self.snapshot().await?;
        let peers = self
            .peers()
            .into_iter()
            .map(|p| PeerReport {
                name: p.name,
                role: Some(p.role),
                connected: p.connected,
                rtt_ms: p.rtt_ms,
            })
            .collect();
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Ok(Heartbeat {
            name: Label::parse(&self.info().name),
            node_id: Some(self.info().node_id.clone()),
            role: Some(if self.is_observer() {
                Role::Observer
            } else {
                Role::Gate
            }),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            counts: snap.counts,
            refusals: snap.refusals,
            redemptions: count(snap.redemptions),
            flagged: count(snap.flagged),
            manifest_tickets: snap.manifest_tickets.map(count),
            peers,
            uplink: self.uplink_status(),
        })
    }

    /// The uplink's state, when it runs.
    pub fn uplink_status(&self) -> Option<UplinkStatus> {
        let slot = self.shared.uplink.lock().ok()?;
        let uplink = slot.as_ref()?;
        uplink.status.lock().ok().map(|s| s.clone())
    }

    pub(crate) async fn apply_server_news(&self, update: ServerUpdate) -> Result<usize, NodeError> {
        self.ask(|reply| Command::FromServer { update, reply })
            .await
    }

    pub(crate) async fn write_standings(
        &self,
        tickets: Vec<ServerTicket>,
    ) -> Result<usize, NodeError> {
        self.ask(|reply| Command::WriteStandings { tickets, reply })
            .await
    }
}

/// Sleeps `delay` unless told to stop first; says whether to go on.
async fn pause(stop: &mut watch::Receiver<bool>, delay: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(delay) => true,
        _ = stop.wait_for(|s| *s) => false,
    }
}

/// The least time between two looks for unsent redemptions once all were sent: 250 ms, or
/// twenty times what the last look took, so the looks never take more than 5% of the writer
/// thread (a look costs the backlog and the news since the last one, so this is a guard for
/// a large backlog).
fn upload_pace(last_scan: Duration) -> Duration {
    (last_scan * 20).clamp(Duration::from_millis(250), Duration::from_secs(10))
}

/// Whether the uplink looks for unsent redemptions again at once: more are unsent than its
/// last look took (`looked` of `total`), and that look got some of them done (`done`). A look
/// whose window was all peers' redemptions waiting (asked a moment ago, or not held yet)
/// got none done; the next one would take the same window back, on the writer thread, again
/// and again until they may be asked about again: it waits for the ledger or for them.
fn more_to_look(total: usize, looked: usize, done: usize) -> bool {
    total > looked && done > 0
}

fn next_backoff(b: Duration) -> Duration {
    (b * 2).min(MAX_BACKOFF)
}

/// A manifest entry as the ledger takes it; its admissions that cannot be read as ledger
/// records are reported in `skipped`.
fn server_ticket(
    t: ManifestEntry,
    skipped: &mut Vec<Skipped>,
    certs: &mut Vec<Vec<u8>>,
) -> Result<ServerTicket, WireError> {
    let standing = t.standing()?;
    let resolution = match t.resolution {
        Some(r) => {
            let record = match r.record {
                Some(mut record) => {
                    let cert = take_cert(&mut record);
                    match serde_json::from_value::<gatemesh_ledger::Resolution>(record) {
                        Ok(rec) if rec.tid == t.tid => {
                            certs.extend(cert);
                            Some(rec)
                        }
                        Ok(_) => {
                            skipped.push(Skipped {
                                tid: Some(t.tid.to_string()),
                                error: "the decision's record is another ticket's".into(),
                            });
                            None
                        }
                        Err(e) => {
                            skipped.push(Skipped {
                                tid: Some(t.tid.to_string()),
                                error: format!("the decision's record: {e}"),
                            });
                            None
                        }
                    }
                }
                None => None,
            };
            Some(ServerDecision {
                action: r.action,
                staff: r.staff.to_string(),
                note: r.note.to_string(),
                covers: r.covers,
                record,
            })
        }
        None => None,
    };
    let mut admissions = Vec::with_capacity(t.admissions.len());
    for a in t.admissions {
        match learned(&t.tid, a) {
            Ok((r, cert)) => {
                admissions.push(r);
                certs.extend(cert);
            }
            Err(error) => skipped.push(Skipped {
                tid: Some(t.tid.to_string()),
                error,
            }),
        }
    }
    let status = match t.record {
        Some(record) => match signed_status(&t.tid, record) {
            Ok((status, cert)) => {
                certs.extend(cert);
                Some(status)
            }
            Err(error) => {
                skipped.push(Skipped {
                    tid: Some(t.tid.to_string()),
                    error,
                });
                None
            }
        },
        None => None,
    };
    let guest = (t.holder.is_some() || t.order.is_some()).then(|| crate::Guest {
        tid: t.tid.clone(),
        seat: t.seat.clone(),
        holder: t.holder.clone(),
        order: t.order.clone(),
        product: t.product.clone(),
    });
    Ok(ServerTicket {
        guest,
        tid: t.tid,
        standing,
        status,
        reverted: t.reverted,
        admissions,
        resolution,
    })
}

/// A manifest (or a delta) read leniently, as news for the ledger; every entry or admission
/// it could not take is reported to `uplink`.
fn update_from(body: &[u8], full: bool, uplink: &Uplink) -> anyhow::Result<(i64, ServerUpdate)> {
    let (manifest, mut skipped) = Manifest::read_lenient(body)?;
    let mut tickets = Vec::with_capacity(manifest.tickets.len());
    let mut certs = Vec::new();
    for entry in manifest.tickets {
        let tid = entry.tid.to_string();
        match server_ticket(entry, &mut skipped, &mut certs) {
            Ok(t) => tickets.push(t),
            Err(e) => uplink.skipped(&format!("ticket {tid} of the manifest"), &e),
        }
    }
    for s in &skipped {
        uplink.skipped("a manifest entry", s);
    }
    let lists = match manifest.lists {
        Some(mut record) => {
            let cert = take_cert(&mut record);
            match serde_json::from_value::<gatemesh_ledger::ListsRecord>(record) {
                Ok(l) => {
                    certs.extend(cert);
                    Some(l)
                }
                Err(e) => {
                    uplink.skipped("the event's check-in lists", &e);
                    None
                }
            }
        }
        None => None,
    };
    Ok((
        manifest.cursor,
        ServerUpdate {
            tickets,
            full,
            learned: Vec::new(),
            certs,
            revocations: manifest.revocations,
            lists,
            // Held, then written by one gate of the mesh (`Down::apply`).
            hold: true,
        },
    ))
}

/// How long after hearing the server's standing of a ticket a gate's turn comes to write it
/// into the ledger, each `spacing` ([`turn_spacing`]) after the one before: the gates connected
/// (`peers`, and this one, `me`) take turns in an order drawn from the ticket, so that one
/// writes what all of them heard from the server (at 32 gates, each writing every refund was
/// 32 changes a refund for every gate to take in), and the next one only if the one before
/// had not written it by then (it had no uplink, or was slow). Every gate holds the standing
/// meanwhile: its own door decides by it at once. Every gate has a turn of its own: when
/// the turns stopped at 500 ms, a box office's burst that slowed the mesh past it had the
/// 27 gates still waiting write every refund together (1,110 writes for 80 refunds).
fn standing_turn(tid: &TicketId, me: &str, peers: &[String], spacing: Duration) -> Duration {
    // FNV-1a: the same order on every gate, whatever its build.
    let rank = |name: &str| {
        tid.as_str()
            .bytes()
            .chain([0])
            .chain(name.bytes())
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
    };
    let mine = rank(me);
    let before = peers
        .iter()
        .filter(|p| p.as_str() != me && rank(p) < mine)
        .count();
    spacing.saturating_mul(u32::try_from(before).unwrap_or(u32::MAX))
}

/// The wait between two gates' turns to write a standing ([`standing_turn`]):
/// [`STANDING_TURN`], and as long again as this gate's writer batches take lately (`pace`,
/// [`crate::gate::Pace`]), at most [`STANDING_TURN_MOST`]. A gate's write reaches the next
/// one after its own writer and the next one's took their turns: on a busy gate (its batches
/// a second or more while it takes in a heal) 100 ms apart had the gates of a 32-gate
/// mesh write each refund 11 times over (3,664 writes for 320 refunds), each a change for
/// every gate to take in, which kept them busy. The gates of a venue are about as busy
/// as each other (the same queues, the same mesh), so this gate's pace stands for theirs.
fn turn_spacing(pace: Duration) -> Duration {
    (STANDING_TURN + pace).min(STANDING_TURN_MOST)
}

/// The wait between two gates' turns to write a standing on a quick gate: longer than a push
/// between two gates takes on a venue's LAN.
const STANDING_TURN: Duration = Duration::from_millis(100);

/// The longest wait between two gates' turns to write a standing, however busy the gate.
const STANDING_TURN_MOST: Duration = Duration::from_secs(5);

struct Down {
    node: Node,
    uplink: Arc<Uplink>,
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Down {
    async fn run(self) {
        let mut stop = self.uplink.stop.subscribe();
        let mut cursor: Option<i64> = None;
        let mut backoff = Duration::from_millis(500);
        loop {
            if *stop.borrow() {
                return;
            }
            let result = tokio::select! {
                r = self.once(&mut cursor) => r,
                _ = stop.wait_for(|s| *s) => return,
            };
            self.uplink.update(|s| s.streaming = false);
            match result {
                // The stream ended cleanly (the server restarted): reconnect at once.
                Ok(()) => backoff = Duration::from_millis(500),
                Err(e) => {
                    self.uplink.failed(&e);
                    if !pause(&mut stop, backoff).await {
                        return;
                    }
                    backoff = next_backoff(backoff);
                }
            }
        }
    }

    /// The server's news into the ledger: its standings held at once, each written in this
    /// gate's turn ([`standing_turn`]) where no gate of the mesh wrote it before.
    async fn apply(&self, update: ServerUpdate) -> Result<usize, NodeError> {
        let standings: Vec<ServerTicket> = update
            .tickets
            .iter()
            .filter(|t| t.status.is_some())
            .cloned()
            .collect();
        let written = self.node.apply_server_news(update).await?;
        if standings.is_empty() {
            return Ok(written);
        }
        let me = self.node.info().name.clone();
        let peers: Vec<String> = self
            .node
            .peers()
            .into_iter()
            .filter(|p| p.connected)
            .map(|p| p.name)
            .collect();
        let spacing = turn_spacing(self.node.shared.pace.lately(std::time::Instant::now()));
        let mut turns: std::collections::BTreeMap<Duration, Vec<ServerTicket>> =
            std::collections::BTreeMap::new();
        for t in standings {
            turns
                .entry(standing_turn(&t.tid, &me, &peers, spacing))
                .or_default()
                .push(t);
        }
        for (turn, tickets) in turns {
            let node = self.node.clone();
            tokio::spawn(async move {
                tokio::time::sleep(turn).await;
                if let Err(e) = node.write_standings(tickets).await {
                    tracing::warn!("uplink: writing the server's standings: {e}");
                }
            });
        }
        Ok(written)
    }

    /// The manifest if this is the first contact, then the change stream until it breaks.
    async fn once(&self, cursor: &mut Option<i64>) -> anyhow::Result<()> {
        if cursor.is_none() {
            let response = self
                .client
                .get(format!("{}/manifest", self.base))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(120))
                .send()
                .await?
                .error_for_status()?;
            let body = response.bytes().await?;
            let (at, update) = update_from(&body, true, &self.uplink)?;
            self.apply(update).await?;
            *cursor = Some(at);
            self.uplink.update(|s| s.cursor = Some(at));
            self.uplink.contact();
        }
        let since = cursor.unwrap_or(0);
        let response = self
            .client
            .get(format!("{}/changes?since={since}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?;
        self.uplink.update(|s| s.streaming = true);
        self.uplink.contact();
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        loop {
            let chunk = match tokio::time::timeout(STREAM_SILENCE, body.next()).await {
                Err(_) => anyhow::bail!("the change stream went silent"),
                Ok(None) => return Ok(()),
                Ok(Some(chunk)) => chunk?,
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            if buffer.len() > 64 * 1024 * 1024 {
                anyhow::bail!("the change stream sent an event over 64 MiB");
            }
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let (kind, data) = sse_fields(&block);
                match kind.as_str() {
                    change::TICKETS => {
                        let (at, update) = update_from(data.as_bytes(), false, &self.uplink)?;
                        if !update.tickets.is_empty()
                            || !update.revocations.is_empty()
                            || update.lists.is_some()
                        {
                            self.apply(update).await?;
                        }
                        *cursor = Some(at);
                        self.uplink.update(|s| s.cursor = Some(at));
                        self.uplink.contact();
                    }
                    change::ERROR => anyhow::bail!("the server: {data}"),
                    // Keep-alive comments and unknown events.
                    _ => {}
                }
            }
        }
    }
}

/// An SSE block's event name and data.
fn sse_fields(block: &str) -> (String, String) {
    let (mut kind, mut data) = (String::new(), String::new());
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            kind = v.trim().to_owned();
        } else if let Some(v) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    (kind, data)
}

struct Up {
    node: Node,
    uplink: Arc<Uplink>,
    client: reqwest::Client,
    base: String,
    token: String,
    acks: Acks,
    sent: Arc<HashSet<String>>,
    /// How long the last look for unsent redemptions held the writer thread.
    last_scan: Duration,
    /// Where the next look for unsent redemptions starts.
    unsent_from: UnsentCursor,
    /// How far each look saw, and when, oldest first: a peer's redemption that arrived
    /// before a look `grace` old is due ([`Up::peers_due`]).
    seen_at: std::collections::VecDeque<(UnsentCursor, tokio::time::Instant)>,
    /// This gate's grace for its peers' redemptions ([`grace_of`]).
    grace: Duration,
    /// The last look found peers' redemptions not due yet: they become due with no change
    /// of the ledger.
    peers_waiting: bool,
    /// Writers of which a redemption was not at the server when this gate asked (their
    /// uplink is down, most likely): theirs are asked about after a tenth of the grace,
    /// until one is found there. A copy such a gate admitted otherwise reached the server,
    /// and through its stream every gate's flags, a whole grace later.
    lagging: Arc<HashSet<NodeId>>,
    /// Peers' redemptions asked about before they were due and not held then, and when: not
    /// asked about again for a tenth of the grace.
    asked: std::collections::HashMap<String, tokio::time::Instant>,
}

/// The key of a journal item's record under which its writer's certificate travels.
const CERT: &str = "cert";

/// The certificate (DER) a relayed record carries under [`CERT`], taken out of it.
fn take_cert(record: &mut serde_json::Value) -> Option<Vec<u8>> {
    use base64::Engine;
    record
        .as_object_mut()
        .and_then(|o| o.remove(CERT))
        .and_then(|c| c.as_str().map(str::to_owned))
        .and_then(|c| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(c)
                .ok()
        })
}

/// A ticket's standing as the server's identity signed it, and the certificate beside it.
fn signed_status(
    tid: &TicketId,
    mut record: serde_json::Value,
) -> Result<(gatemesh_ledger::Status, Option<Vec<u8>>), String> {
    let cert = take_cert(&mut record);
    let s = serde_json::from_value::<gatemesh_ledger::Status>(record)
        .map_err(|e| format!("the standing record of ticket {tid}: {e}"))?;
    if &s.tid != tid {
        return Err(format!("the standing record of ticket {tid} is another's"));
    }
    Ok((s, cert))
}

/// The redemption the server holds as the first admission, as a ledger record (and the
/// certificate of its writer, when it came along): the writer's own signed record when the
/// server has it, else one made from what the server knows (which a gate that checks
/// signatures leaves out). Says why when it cannot be taken.
fn learned(tid: &TicketId, first: Admission) -> Result<(Redemption, Option<Vec<u8>>), String> {
    if let Some(mut record) = first.record {
        let cert = take_cert(&mut record);
        let r = serde_json::from_value::<Redemption>(record)
            .map_err(|e| format!("the record of admission {}: {e}", first.redemption_id))?;
        if &r.tid != tid || r.id != first.redemption_id {
            return Err(format!(
                "the record of admission {} is about another redemption",
                first.redemption_id
            ));
        }
        return Ok((r, cert));
    }
    let node = NodeId::parse("server").ok_or("the server's node id")?;
    let at_ms = first.at.ms();
    Ok((
        Redemption {
            manual: None,
            sig: None,
            id: first.redemption_id,
            tid: tid.clone(),
            direction: gatemesh_ledger::Direction::Entry,
            node: node.clone(),
            gate: first.gate.to_string(),
            scanner: first.scanner.to_string(),
            at_ms,
            hlc: Hlc {
                wall_ms: at_ms,
                counter: 0,
                node,
            },
            seen: Vec::new(),
            unlisted: false,
            scope: None,
        },
        None,
    ))
}

/// A ledger redemption as a journal item, when the server would take it; its writer's
/// certificate (DER) travels inside the record, for the server and for gates elsewhere.
fn journal_item(r: &Redemption, cert: Option<&Vec<u8>>) -> Result<RedemptionRequest, WireError> {
    use base64::Engine;
    let mut record = serde_json::to_value(r).map_err(|e| WireError::Inconsistent(e.to_string()))?;
    if let (Some(cert), Some(o)) = (cert, record.as_object_mut()) {
        o.insert(
            CERT.into(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(cert)
                .into(),
        );
    }
    let item = RedemptionRequest {
        redemption_id: r.id.clone(),
        tid: r.tid.clone(),
        gate: r.gate.parse()?,
        scanner: r.scanner.parse()?,
        at: Timestamp::from_ms(r.at_ms),
        record: Some(record),
    };
    item.check()?;
    Ok(item)
}

/// A staff resolution as the server takes it, when it would.
fn resolve_request(r: &Resolution) -> Result<ResolveRequest, WireError> {
    Ok(ResolveRequest {
        action: r.action,
        staff: r.staff.parse()?,
        note: r.note.parse()?,
    })
}

impl Up {
    async fn run(mut self) {
        let mut stop = self.uplink.stop.subscribe();
        let mut changed = self.node.shared.changed.clone();
        let mut backoff = Duration::from_millis(500);
        loop {
            if *stop.borrow() {
                return;
            }
            changed.mark_unchanged();
            match self.once().await {
                // More to send: straight on.
                Ok(true) => backoff = Duration::from_millis(500),
                // All sent: wait for the ledger to change, and not sooner than the pace
                // allows. A look reads only what arrived since the last one, but it runs
                // on the writer thread (the one that decides scans and applies peers'
                // changes), and at a busy gate the ledger changes many times a second.
                // Uploads are not the real-time path (the mesh is), so they go in batches a
                // few times a second rather than one request per scan.
                Ok(false) => {
                    backoff = Duration::from_millis(500);
                    let pace = upload_pace(self.last_scan);
                    // Peers' are asked about after a tenth of the grace.
                    let due_soon = self.grace / 20;
                    tokio::select! {
                        r = changed.changed() => if r.is_err() { return },
                        _ = stop.wait_for(|s| *s) => return,
                        () = tokio::time::sleep(due_soon), if self.peers_waiting => {}
                    }
                    // Until the next look, "nothing to upload" would be a stale promise.
                    self.uplink.update(|s| s.backlog = s.backlog.max(1));
                    if !pause(&mut stop, pace).await {
                        return;
                    }
                }
                Err(e) => {
                    self.uplink.failed(&e);
                    if !self.wait_counting(&mut stop, &mut changed, backoff).await {
                        return;
                    }
                    backoff = next_backoff(backoff);
                }
            }
        }
    }

    /// Waits `delay` before trying again, keeping the backlog figure current meanwhile (at
    /// most one recount a second); says whether to go on.
    async fn wait_counting(
        &mut self,
        stop: &mut watch::Receiver<bool>,
        changed: &mut watch::Receiver<u64>,
        delay: Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + delay;
        loop {
            let woke = tokio::select! {
                () = tokio::time::sleep_until(deadline) => return true,
                _ = stop.wait_for(|s| *s) => return false,
                r = changed.changed() => r.is_ok(),
            };
            if !woke {
                return false;
            }
            let (sent, from, peers_due) = (self.sent.clone(), self.unsent_from, self.peers_due());
            if let Ok(found) = self
                .node
                .ask(|reply| Command::Unsent {
                    sent,
                    from,
                    peers_due,
                    limit: 0,
                    reply,
                })
                .await
            {
                // Peers' redemptions age here while the server is out of reach too.
                self.saw(found.seen);
                self.uplink.update(|s| s.backlog = found.total);
            }
            if !pause(stop, Duration::from_secs(1)).await {
                return false;
            }
        }
    }

    /// Sends one batch of redemptions, or when none is waiting, staff's resolutions; says
    /// whether more is waiting.
    async fn once(&mut self) -> anyhow::Result<bool> {
        if self.redemptions().await? {
            return Ok(true);
        }
        self.resolutions().await?;
        Ok(false)
    }

    /// Resolutions staff made on this gate or its peers, so the server's flag clears too. A
    /// ticket the server has no flag for (it never saw both admissions, or another gate
    /// uploaded the decision first) answers 409, which settles it as well, and so does a
    /// revert another gate's upload carried out already; a revert of an admission nobody
    /// flagged answers 403 (the organizer's alone), skipped. The
    /// server records the decision as this gate's (`GATE / STAFF`, the gate's name from its
    /// credential).
    async fn resolutions(&mut self) -> anyhow::Result<()> {
        let sent = self.sent.clone();
        let unsent = self
            .node
            .ask(|reply| Command::UnsentResolutions { sent, reply })
            .await?;
        for r in unsent {
            let what = format!("resolution {} of ticket {}", r.id, r.tid);
            match resolve_request(&r) {
                Ok(body) => {
                    let response = self
                        .client
                        .post(format!("{}/flags/{}/resolve", self.base, r.tid))
                        .bearer_auth(&self.token)
                        .timeout(Duration::from_secs(30))
                        .json(&body)
                        .send()
                        .await?;
                    let status = response.status();
                    if status == reqwest::StatusCode::BAD_REQUEST
                        || status == reqwest::StatusCode::FORBIDDEN
                    {
                        // The server cannot take it (its rules are the wire's, so this gate
                        // could not either), or not from a device (a revert of a ticket it
                        // never flagged is the organizer's): sending it again would fail
                        // again.
                        let why = response
                            .json::<ErrorBody>()
                            .await
                            .map_or_else(|_| status.to_string(), |b| b.error.message);
                        self.uplink.skipped(&what, &why);
                    } else {
                        anyhow::ensure!(
                            status.is_success()
                                || status == reqwest::StatusCode::CONFLICT
                                || status == reqwest::StatusCode::NOT_FOUND,
                            "the server refused {what}: {status}"
                        );
                    }
                }
                Err(e) => self.uplink.skipped(&what, &e),
            }
            let id = r.id.to_string();
            self.acks.add(std::slice::from_ref(&id))?;
            Arc::make_mut(&mut self.sent).insert(id);
            self.uplink.contact();
        }
        Ok(())
    }

    /// Which peers' redemptions are due: those that arrived before the newest look at least
    /// `grace` old (none before the first such look), and a lagging writer's before the
    /// newest look a tenth of that old.
    fn peers_due(&mut self) -> PeersDue {
        let now = tokio::time::Instant::now();
        let grace = self.grace;
        let old = |at: &tokio::time::Instant| now.duration_since(*at) >= grace;
        while self.seen_at.get(1).is_some_and(|(_, at)| old(at)) {
            self.seen_at.pop_front();
        }
        let before = |grace: Duration| {
            self.seen_at
                .iter()
                .rev()
                .find(|(_, at)| now.duration_since(*at) >= grace)
                .map_or_else(UnsentCursor::default, |(cursor, _)| *cursor)
        };
        PeersDue {
            after_grace: before(grace),
            lagging_before: before(grace / 10),
            lagging: self.lagging.clone(),
        }
    }

    /// Notes how far a look saw, now.
    fn saw(&mut self, seen: UnsentCursor) {
        if self
            .seen_at
            .back()
            .is_some_and(|(c, _)| !c.same_ledger(&seen))
        {
            // Another ledger value (a reload): positions in the old one mean nothing.
            self.seen_at.clear();
        }
        if self.seen_at.back().is_none_or(|(c, _)| *c != seen) {
            self.seen_at.push_back((seen, tokio::time::Instant::now()));
        }
    }

    /// The answers the server gave those of `redemptions` (peers') it holds, in order;
    /// `None` for one it does not hold. A server that does not know the question (an older
    /// version: 404 or 405 for the path) holds none as far as this gate can tell: they are
    /// uploaded, as they were before.
    async fn held(
        (client, base, token): (&reqwest::Client, &str, &str),
        redemption_ids: Vec<RedemptionId>,
    ) -> anyhow::Result<Vec<Option<Lenient<RedemptionAnswer>>>> {
        if redemption_ids.is_empty() {
            return Ok(Vec::new());
        }
        let asked = redemption_ids.len();
        let query = HeldQuery { redemption_ids };
        let response = client
            .post(format!("{base}/redemptions/held"))
            .bearer_auth(token)
            .timeout(Duration::from_secs(60))
            .json(&query)
            .send()
            .await?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND
            || status == reqwest::StatusCode::METHOD_NOT_ALLOWED
        {
            return Ok(std::iter::repeat_with(|| None).take(asked).collect());
        }
        let answers = HeldAnswers::read_lenient(&response.error_for_status()?.bytes().await?)?;
        anyhow::ensure!(
            answers.len() == asked,
            "the server answered {} of {} questions whether it holds a redemption",
            answers.len(),
            asked
        );
        Ok(answers)
    }

    /// Sends one batch of redemptions (after asking which of its peers' the server holds);
    /// says whether more is waiting.
    async fn redemptions(&mut self) -> anyhow::Result<bool> {
        let (sent, from, peers_due) = (self.sent.clone(), self.unsent_from, self.peers_due());
        let asked = std::time::Instant::now();
        let found = self
            .node
            .ask(|reply| Command::Unsent {
                sent,
                from,
                peers_due,
                limit: BATCH,
                reply,
            })
            .await?;
        self.last_scan = asked.elapsed();
        self.unsent_from = found.next;
        self.saw(found.seen);
        self.peers_waiting = found.not_due > 0;
        let (batch, to_ask, total, certs) =
            (found.redemptions, found.to_ask, found.total, found.certs);
        self.uplink.update(|s| s.backlog = total);
        if batch.is_empty() && to_ask.is_empty() {
            return Ok(false);
        }
        // The peers' the server holds already are answered as their upload would be, and
        // not sent.
        let own = found.own.min(batch.len());
        // Every due one is asked about; one only to ask about, unless it was a moment ago.
        let now = tokio::time::Instant::now();
        let (grace, soon) = (self.grace, self.grace / 10);
        self.asked.retain(|_, at| now.duration_since(*at) < grace);
        let asked = &self.asked;
        let (ask_now, asked_lately): (Vec<_>, Vec<_>) = to_ask.iter().partition(|(_, id)| {
            asked
                .get(id.as_str())
                .is_none_or(|at| now.duration_since(*at) >= soon)
        });
        let server = (&self.client, self.base.as_str(), self.token.as_str());
        let ids = batch[own..]
            .iter()
            .map(|r| r.id.clone())
            .chain(ask_now.iter().map(|(_, id)| id.clone()))
            .collect();
        let mut held = Self::held(server, ids).await?;
        let held_of_asked = held.split_off(batch.len() - own);
        // A writer whose redemption the server lacks after the grace has no uplink now; one
        // whose redemption it holds, has.
        for (r, held) in batch[own..].iter().zip(&held) {
            let lagging = self.lagging.contains(&r.node);
            if held.is_none() && !lagging {
                Arc::make_mut(&mut self.lagging).insert(r.node.clone());
            } else if held.is_some() && lagging {
                Arc::make_mut(&mut self.lagging).remove(&r.node);
            }
        }
        let found_held =
            (held.iter().flatten().count() + held_of_asked.iter().flatten().count()) as u64;
        let mut answered: Vec<((&TicketId, &RedemptionId), Lenient<RedemptionAnswer>)> = Vec::new();
        // Asked about only, and not held yet (or asked a moment ago): left for a later look.
        let mut waiting: HashSet<&str> = asked_lately.iter().map(|(_, id)| id.as_str()).collect();
        for ((tid, id), held) in ask_now.into_iter().zip(held_of_asked) {
            if let Some(answer) = held {
                answered.push(((tid, id), answer));
            } else {
                self.asked.insert(id.to_string(), now);
                waiting.insert(id.as_str());
            }
        }
        // What the server would refuse is skipped here, so it cannot fail the batch.
        let mut items = Vec::with_capacity(batch.len());
        let mut sending = Vec::with_capacity(batch.len());
        let held = std::iter::repeat_with(|| None).take(own).chain(held);
        for (r, held) in batch.iter().zip(held) {
            if let Some(answer) = held {
                answered.push(((&r.tid, &r.id), answer));
                continue;
            }
            match journal_item(r, certs.get(&r.node)) {
                Ok(item) => {
                    items.push(item);
                    sending.push(r);
                }
                Err(e) => self
                    .uplink
                    .skipped(&format!("redemption {} of ticket {}", r.id, r.tid), &e),
            }
        }
        let mut learned_now = Vec::new();
        let mut learned_certs = Vec::new();
        if !items.is_empty() {
            let response = self
                .client
                .post(format!("{}/redemptions", self.base))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(60))
                .json(&Journal { redemptions: items })
                .send()
                .await?
                .error_for_status()?;
            let answers = JournalAnswers::read_lenient(&response.bytes().await?)?;
            anyhow::ensure!(
                answers.len() == sending.len(),
                "the server answered {} of {} redemptions",
                answers.len(),
                sending.len()
            );
            answered.extend(sending.iter().map(|r| (&r.tid, &r.id)).zip(answers));
        }
        for ((tid, id), answer) in answered {
            let answer = match answer {
                Lenient::Read(a) => a,
                Lenient::Skipped(s) => {
                    let what = format!("the server's answer to redemption {id}");
                    self.uplink.skipped(&what, &s);
                    continue;
                }
            };
            if answer.verdict != Verdict::Duplicate {
                continue;
            }
            if let Some(first) = answer.first
                && &first.redemption_id != id
            {
                match learned(tid, first) {
                    Ok((first, cert)) => {
                        learned_now.push(first);
                        learned_certs.extend(cert);
                    }
                    Err(e) => self.uplink.skipped(&format!("ticket {tid}"), &e),
                }
            }
        }
        // Sent or skipped, each is done with.
        let mut done: Vec<String> = batch
            .iter()
            .map(|r| &r.id)
            .chain(to_ask.iter().map(|(_, id)| id))
            .filter(|id| !waiting.contains(id.as_str()))
            .map(ToString::to_string)
            .collect();
        let (n_done, n_waiting) = (done.len(), waiting.len());
        self.peers_waiting |= n_waiting > 0;
        done.extend(learned_now.iter().map(|r| r.id.to_string()));
        let n_learned = learned_now.len() as u64;
        if !learned_now.is_empty() {
            self.node
                .apply_server_news(ServerUpdate {
                    learned: learned_now,
                    certs: learned_certs,
                    ..Default::default()
                })
                .await?;
        }
        self.acks.add(&done)?;
        Arc::make_mut(&mut self.sent).extend(done);
        let n = sending.len() as u64;
        self.uplink.update(|s| {
            s.uploaded += n;
            s.found_held += found_held;
            s.learned += n_learned;
            s.backlog = total.saturating_sub(n_done);
        });
        self.uplink.contact();
        Ok(more_to_look(total, batch.len() + to_ask.len(), n_done))
    }
}

/// How often a gate tells the server it is alive.
const HEARTBEAT: Duration = Duration::from_secs(5);

struct Beat {
    node: Node,
    uplink: Arc<Uplink>,
    client: reqwest::Client,
    url: String,
    token: String,
}

impl Beat {
    async fn run(self) {
        let mut stop = self.uplink.stop.subscribe();
        loop {
            if let Ok(body) = self.node.heartbeat_body().await {
                let sent = self
                    .client
                    .post(&self.url)
                    .bearer_auth(&self.token)
                    .timeout(HEARTBEAT)
                    .json(&body)
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status);
                match sent {
                    Ok(_) => self.uplink.update(|s| s.last_heartbeat_ms = Some(now_ms())),
                    Err(e) => tracing::debug!("heartbeat: {e}"),
                }
            }
            if !pause(&mut stop, HEARTBEAT).await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_that_got_nothing_done_is_not_made_again_at_once() {
        // 1,500 unsent, a window of 1,000: a look that did some goes straight on.
        assert!(more_to_look(1_500, 1_000, 1_000));
        assert!(more_to_look(1_500, 1_000, 1));
        // Its whole window waiting (peers' asked a moment ago): it waits instead of taking
        // the same window back at once.
        assert!(!more_to_look(1_500, 1_000, 0));
        // Nothing past the window: it waits in any case.
        assert!(!more_to_look(1_000, 1_000, 1_000));
    }

    #[test]
    fn the_gates_of_a_mesh_take_turns_to_write_a_standing_one_first() {
        let gates: Vec<String> = (1..=32).map(|i| format!("Gate-{i}")).collect();
        for _ in 0..50 {
            let tid = TicketId::generate();
            let mut turns: Vec<Duration> = gates
                .iter()
                .map(|me| standing_turn(&tid, me, &gates, STANDING_TURN))
                .collect();
            turns.sort();
            // One gate at once, each next one a turn after it: never two together.
            for (k, turn) in turns.iter().enumerate() {
                assert_eq!(*turn, STANDING_TURN * u32::try_from(k).unwrap(), "{tid}");
            }
            // The order is the ticket's: another ticket, most often another first gate.
        }
        let firsts: HashSet<String> = (0..50)
            .map(|_| {
                let tid = TicketId::generate();
                gates
                    .iter()
                    .find(|me| standing_turn(&tid, me, &gates, STANDING_TURN).is_zero())
                    .cloned()
                    .unwrap()
            })
            .collect();
        assert!(firsts.len() > 10, "{firsts:?}");
        // A gate alone writes at once.
        assert!(standing_turn(&TicketId::generate(), "Gate-1", &[], STANDING_TURN).is_zero());
    }

    #[test]
    fn turns_to_write_a_standing_are_as_far_apart_as_a_busy_gate_is_slow() {
        assert_eq!(turn_spacing(Duration::ZERO), STANDING_TURN);
        let busy = Duration::from_millis(1_500);
        assert_eq!(turn_spacing(busy), STANDING_TURN + busy);
        assert_eq!(turn_spacing(Duration::from_secs(60)), STANDING_TURN_MOST);
        let gates: Vec<String> = (1..=8).map(|i| format!("Gate-{i}")).collect();
        let tid = TicketId::generate();
        let mut turns: Vec<Duration> = gates
            .iter()
            .map(|me| standing_turn(&tid, me, &gates, turn_spacing(busy)))
            .collect();
        turns.sort();
        assert_eq!(turns[1], STANDING_TURN + busy);
        assert_eq!(turns[7], (STANDING_TURN + busy) * 7);
    }
}
