//! The gate's writer: one thread owns the ledger and its store. Commands arrive on a channel;
//! the thread takes everything waiting, applies it in order, commits all resulting changes
//! in one SQLite transaction (group commit), and only then answers. Under load many scans
//! share one commit; alone, a scan waits for exactly one.

use std::{collections::HashSet, path::PathBuf};

use gatemesh_ledger::{
    Action, Answer, AuditEntry, Direction, Durability, Ledger, Listing, Outcome, Policy, Reason,
    Redemption, RedemptionId, Resolution, ResolutionId, Scan, Standing, Status, Store,
    StoredChange, TicketState, Verdict, decide,
};
use gatemesh_mesh::session::SyncRequest;
use gatemesh_ticket::{Claims, TicketId, Verified, VerifyError};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::{NodeError, manifest::Manifest};

/// Change rows kept before the store is compacted into one snapshot, at the next moment the
/// gate is idle (the default of `Config::compact_after`): compaction saves the whole
/// document off the writer, but storing it writes megabytes, which no scan should wait for
/// during a rush.
pub(crate) const COMPACT_AFTER: i64 = 20_000;
/// Past this many times `compact_after`, compaction runs even under load, so the change
/// table stays bounded.
const COMPACT_ANYWAY: i64 = 10;
/// Most commands applied under one commit.
const MAX_BATCH: usize = 512;

// Every sync message the ledger makes fits in one mesh frame, with the byte that marks a
// round's start.
const _: () = assert!(gatemesh_ledger::SYNC_MESSAGE_MOST < gatemesh_mesh::net::MAX_FRAME);

/// The answer to one scan, as the node gives it.
#[derive(Debug, Clone, Serialize)]
pub struct ScanResult {
    pub verdict: Verdict,
    pub reason: Reason,
    /// The ticket, when the code verified.
    pub ticket: Option<Claims>,
    pub first: Option<gatemesh_ledger::FirstUse>,
    pub redemption_id: Option<RedemptionId>,
    pub transferred_to: Option<TicketId>,
    pub scanner: String,
    pub at_ms: i64,
    /// For a code refused for itself (unreadable, forged, another event's, out of its
    /// validity) or by the gate's lists: what was wrong, in words (instants in RFC 3339).
    pub detail: Option<String>,
    /// The check-in list the ticket was taken under, at a gate with lists.
    pub list: Option<gatemesh_wire::ListId>,
    /// Who is inside that list now (this admission counted), with its capacity's warning.
    pub occupancy: Option<gatemesh_wire::ListOccupancy>,
}

/// A gate's own counts since it started, as it tells its mesh peers: what the ledger does
/// not carry (admissions it does). Reasons by their codes, so a reason one side does not know
/// is only left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GateStats {
    pub duplicate: u64,
    pub reject: u64,
    #[serde(default)]
    pub refusals: std::collections::BTreeMap<String, u64>,
}

/// Counts by verdict since the node started.
pub use gatemesh_wire::VerdictCounts as Counts;

/// What the node knows about itself.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub counts: Counts,
    /// Scans refused since the node started, by reason.
    pub refusals: std::collections::BTreeMap<Reason, u64>,
    pub redemptions: usize,
    pub flagged: usize,
    pub manifest_tickets: Option<usize>,
    /// The ledger's digest ([`gatemesh_ledger::Ledger::digest`]): gates showing the same one
    /// hold the same records.
    pub ledger_digest: String,
    /// What its peer connections that ended counted (`GET /v1/status` shows it).
    #[serde(skip)]
    pub peers_ended: Ended,
}

/// Something for live views: a verdict or a change of flags.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NodeEvent {
    Verdict(Box<ScanResult>),
    Flagged {
        tid: TicketId,
    },
    Resolved {
        tid: TicketId,
        action: Action,
        staff: String,
    },
    Imported {
        changes: usize,
    },
    /// The gate took a peer's whole ledger in one step (a catch-up): `changes` were new
    /// here.
    CaughtUp {
        peer: String,
        changes: usize,
    },
    /// A ticket's standing changed here (a refund, a void or a transfer, from the server or
    /// from a peer): what holds now.
    Standing {
        tid: TicketId,
        standing: gatemesh_ledger::Standing,
    },
}

type Reply<T> = oneshot::Sender<Result<T, NodeError>>;

pub(crate) enum Command {
    Scan {
        verified: Box<Result<Verified, VerifyError>>,
        /// The gate's lists' word on a verified ticket, when the gate has lists.
        lists: Option<Result<gatemesh_wire::ListAdmission, gatemesh_wire::ListRefusal>>,
        scanner: String,
        direction: Direction,
        /// When the code was presented (this node's clock as the request came in): the scan
        /// is judged at that moment, however long it waited for the writer. A double fire
        /// decided seconds after it was presented is still within the repeat window.
        presented_ms: i64,
        /// A guest checked in without their code: the staff member who did it.
        manual: Option<String>,
        reply: Reply<ScanResult>,
    },
    Resolve {
        tid: TicketId,
        action: Action,
        staff: String,
        note: String,
        reply: Reply<Resolution>,
    },
    Ticket {
        tid: TicketId,
        reply: Reply<(TicketState, bool)>,
    },
    Flags {
        reply: Reply<Vec<(TicketId, TicketState)>>,
    },
    Snapshot {
        reply: Reply<Snapshot>,
    },
    Records {
        reply: Reply<(Vec<Redemption>, Vec<AuditEntry>)>,
    },
    /// Entries per gate over `minutes` windows of `minute_ms` from `first_ms`, from the
    /// ledger's tally (no document read).
    Activity {
        first_ms: i64,
        minute_ms: i64,
        minutes: usize,
        reply: Reply<gatemesh_ledger::Activity>,
    },
    Audit {
        reply: Reply<Vec<AuditEntry>>,
    },
    ExportLedger {
        reply: Reply<Vec<u8>>,
    },
    Import {
        bytes: Vec<u8>,
        reply: Reply<usize>,
    },
    /// A mesh session's request.
    Sync(SyncRequest),
    /// A peer's sync message, parsed off the writer (a large one: a catch-up), to take in
    /// parts. Otherwise as [`gatemesh_mesh::session::SyncRequest::Receive`].
    /// A large push of `peer`'s (a relay after a heal), read and its signatures checked
    /// off the writer ([`gatemesh_ledger::PushAhead`]); answered as
    /// [`SyncRequest::Push`] is.
    PushAhead {
        peer: String,
        push: gatemesh_ledger::PushAhead,
        reply: tokio::sync::oneshot::Sender<Result<bool, String>>,
    },
    SyncParsed {
        peer: String,
        parts: Result<gatemesh_ledger::SyncInParts, gatemesh_ledger::LedgerError>,
        reply: tokio::sync::oneshot::Sender<Result<(), String>>,
        /// Times what the writer held beside a whole ledger was applied onto it off the
        /// writer ([`Writer::receive`]).
        rounds: u32,
    },
    /// The next part of a peer's sync message being taken in parts ([`Writer::taking`]);
    /// the writer adds it to a batch itself, never sent.
    TakePart,
    /// Holders inside each scope (who came in since its everyone-out time, if any), as the
    /// ledger counts them.
    Inside {
        scopes: Vec<(gatemesh_wire::Scope, Option<i64>)>,
        reply: Reply<Vec<u64>>,
    },
    /// How many changes each peer lacks, and how many it sent on this connection that were
    /// held here already, by device name.
    PeerLag {
        reply: Reply<std::collections::HashMap<String, PeerLag>>,
    },
    /// The uplink asks for redemptions it has not sent yet (ids not in `sent`), looking
    /// from `from` (where its last look found the first unsent one) on: this gate's own,
    /// and its peers' that are due ([`PeersDue`]).
    Unsent {
        sent: std::sync::Arc<HashSet<String>>,
        from: UnsentCursor,
        peers_due: PeersDue,
        limit: usize,
        reply: Reply<Unsent>,
    },
    /// Resolutions made by staff on the mesh that the uplink has not sent yet.
    UnsentResolutions {
        sent: std::sync::Arc<HashSet<String>>,
        reply: Reply<Vec<Resolution>>,
    },
    /// The revocations the ledger holds, the records they set aside, and whether this
    /// device's own certificate is revoked.
    Revocations {
        reply: Reply<Revocations>,
    },
    /// What the server said, to write into the ledger.
    FromServer {
        update: ServerUpdate,
        reply: Reply<usize>,
    },
    /// The server's standings of `tickets` this gate held ([`ServerUpdate::hold`]), written
    /// now where no gate of the mesh wrote them yet.
    WriteStandings {
        tickets: Vec<ServerTicket>,
        reply: Reply<usize>,
    },
    /// A compaction's snapshot, saved off the writer ([`Writer::compact_apart`]): it holds
    /// every change row up to `through` (`None`: the save failed, the rows stay).
    Saved {
        snapshot: Option<Vec<u8>>,
        through: i64,
        generation: u64,
    },
    /// Finish what is queued, compact and stop.
    Shutdown,
}

impl Command {
    /// Whether the command may keep the writer for long (its cost grows with the ledger, a
    /// peer's backlog or the server's news): it gets a batch of its own, so that the scans
    /// queued before it are answered without waiting for it, and those after it in the
    /// next batch.
    fn heavy(&self) -> bool {
        matches!(
            self,
            Command::Records { .. }
                | Command::Audit { .. }
                | Command::ExportLedger { .. }
                | Command::Import { .. }
                | Command::Sync(SyncRequest::Generate { .. })
                | Command::SyncParsed { .. }
                | Command::PeerLag { .. }
                | Command::Unsent { .. }
                | Command::FromServer { .. }
                | Command::WriteStandings { .. }
                | Command::Saved { .. }
        )
    }

    /// What the command is, for the writer's log of slow batches.
    fn kind(&self) -> &'static str {
        match self {
            Command::Scan { .. } => "scan",
            Command::Resolve { .. } => "resolve",
            Command::Ticket { .. } => "ticket",
            Command::Flags { .. } => "flags",
            Command::Snapshot { .. } => "snapshot",
            Command::Records { .. } => "records",
            Command::Activity { .. } => "activity",
            Command::Audit { .. } => "audit",
            Command::ExportLedger { .. } => "export",
            Command::Import { .. } => "import",
            Command::Sync(request) => match request {
                SyncRequest::Generate { .. } => "sync message",
                SyncRequest::Receive { .. } => "peer message",
                SyncRequest::Push { .. } => "peer push",
                SyncRequest::Pushed { .. } => "pushed",
                SyncRequest::Forget { .. } => "forget",
                SyncRequest::Summary { .. } => "summary",
                SyncRequest::TheirSummary { .. } => "peer summary",
                SyncRequest::Need { .. } => "peer request for changes",
            },
            Command::PushAhead { .. } => "peer push",
            Command::SyncParsed { .. } => "peer catch-up",
            Command::TakePart => "catch-up part",
            Command::Inside { .. } => "inside",
            Command::PeerLag { .. } => "peer lag",
            Command::Unsent { .. } => "uplink unsent",
            Command::UnsentResolutions { .. } => "uplink resolutions",
            Command::Revocations { .. } => "revocations",
            Command::FromServer { .. } => "server news",
            Command::WriteStandings { .. } => "server standings",
            Command::Saved { .. } => "compaction",
            Command::Shutdown => "shutdown",
        }
    }
}

/// How long a writer batch took until its answers went out, and which command took longest:
/// a batch that holds its scans' answers for over [`SLOW_BATCH`] is logged, so that an
/// operator (or someone reading a rehearsal's gate logs) can see what the gate was doing.
struct SlowBatch {
    began: std::time::Instant,
    commands: usize,
    slowest: Option<(&'static str, std::time::Duration)>,
}

/// A batch that takes longer than this is logged ([`SlowBatch`]).
const SLOW_BATCH: std::time::Duration = std::time::Duration::from_millis(500);

impl SlowBatch {
    fn new(commands: usize) -> Self {
        Self {
            began: std::time::Instant::now(),
            commands,
            slowest: None,
        }
    }

    fn note(&mut self, kind: &'static str, took: std::time::Duration) {
        if self.slowest.is_none_or(|(_, t)| took > t) {
            self.slowest = Some((kind, took));
        }
    }

    fn report(&self, changes: usize) {
        let took = self.began.elapsed();
        if took < SLOW_BATCH {
            return;
        }
        let (kind, longest) = self
            .slowest
            .unwrap_or(("nothing", std::time::Duration::ZERO));
        tracing::warn!(
            "a batch of {} commands and {changes} changes took {} ms to answer; \
             the longest was a {kind} ({} ms)",
            self.commands,
            took.as_millis(),
            longest.as_millis()
        );
    }
}

/// How long the writer's batches take lately, for what waits on a gate as busy as this one:
/// the uplink spaces the gates' turns to write a refund by it (`uplink::standing_turn`).
/// The longest batch of this [`PACE_WINDOW`] and the one before; nothing older.
#[derive(Debug, Default)]
pub(crate) struct Pace(std::sync::Mutex<PaceWindows>);

#[derive(Debug, Default)]
struct PaceWindows {
    /// When this window began.
    since: Option<std::time::Instant>,
    /// The longest batch of this window, and of the one before.
    now_most: std::time::Duration,
    before_most: std::time::Duration,
}

/// How long one window of [`Pace`] lasts.
const PACE_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

impl Pace {
    /// A batch took `took`, ending at `at`.
    pub(crate) fn batch(&self, took: std::time::Duration, at: std::time::Instant) {
        let mut w = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match w.since.map(|since| at.saturating_duration_since(since)) {
            Some(age) if age < PACE_WINDOW => w.now_most = w.now_most.max(took),
            Some(age) if age < PACE_WINDOW * 2 => {
                w.before_most = w.now_most;
                w.now_most = took;
                w.since = Some(at);
            }
            _ => {
                *w = PaceWindows {
                    since: Some(at),
                    now_most: took,
                    before_most: std::time::Duration::ZERO,
                };
            }
        }
    }

    /// The longest batch of the last one or two windows, as of `at`.
    pub(crate) fn lately(&self, at: std::time::Instant) -> std::time::Duration {
        let w = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match w.since.map(|since| at.saturating_duration_since(since)) {
            Some(age) if age < PACE_WINDOW => w.now_most.max(w.before_most),
            Some(age) if age < PACE_WINDOW * 2 => w.now_most,
            _ => std::time::Duration::ZERO,
        }
    }
}

/// A ticket as the server's manifest or change stream describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTicket {
    pub tid: TicketId,
    pub standing: Standing,
    /// The standing as the server's identity signed it (for a ticket that is not active):
    /// what a gate that checks signatures writes into its ledger.
    pub status: Option<Status>,
    /// Redemptions of this ticket that staff reverted at the server.
    pub reverted: Vec<RedemptionId>,
    /// For a ticket flagged at the server: every admission gates reported.
    pub admissions: Vec<Redemption>,
    /// Staff's decision on the flag, taken at the server.
    pub resolution: Option<ServerDecision>,
    /// Who holds it and how to find them, when the event lets gates find guests.
    pub guest: Option<crate::Guest>,
}

/// A resolution taken at the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDecision {
    pub action: Action,
    pub staff: String,
    pub note: String,
    pub covers: Vec<RedemptionId>,
    /// The decision as the server's identity signed it: what a gate that checks
    /// signatures writes into its ledger, rather than a record in its own name.
    pub record: Option<Resolution>,
}

/// One batch of news from the server.
#[derive(Debug, Clone, Default)]
pub struct ServerUpdate {
    pub tickets: Vec<ServerTicket>,
    /// `tickets` is the whole manifest: it becomes the gate's listing.
    pub full: bool,
    /// Redemptions the server knows of (another gate's admission of a ticket this gate also
    /// admitted); written into the ledger, where concurrent admissions become flags.
    pub learned: Vec<Redemption>,
    /// Certificates (DER) of the devices that wrote the records above, as the server relays
    /// them: learned first, so each record can be checked against its writer's.
    pub certs: Vec<Vec<u8>>,
    /// Device certificates the organizer revoked, signed by the event's CA: written into the
    /// ledger first, so they spread over the mesh to gates with no uplink.
    pub revocations: Vec<gatemesh_ledger::Revocation>,
    /// The event's check-in lists as the server last released them, as its identity signed
    /// them: written into the ledger (after the certificates), so they reach every gate.
    pub lists: Option<gatemesh_ledger::ListsRecord>,
    /// On a gate of a mesh, the tickets' new standings are held (they count at once) and not
    /// written: the uplink has one gate write each a moment later
    /// ([`Command::WriteStandings`]), as every gate hears the server at once.
    pub hold: bool,
}

/// Revoked devices as the ledger knows them, for staff.
#[derive(Debug, Clone, Serialize)]
pub struct Revocations {
    /// Every revocation, signed by the event's CA.
    pub revocations: Vec<gatemesh_ledger::Revocation>,
    /// Redemptions of revoked devices that do not count (kept, for staff to look at).
    pub set_aside: Vec<Redemption>,
    /// This device's own certificate is revoked: it syncs with no one.
    pub revoked: bool,
}

/// Where the uplink's next look for unsent redemptions starts: a position in the ledger's
/// arrivals (see [`gatemesh_ledger::Ledger::arrivals`]) and the ledger value it belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnsentCursor {
    epoch: u64,
    position: usize,
}

impl UnsentCursor {
    /// Whether both are positions in one ledger value.
    pub(crate) fn same_ledger(&self, other: &Self) -> bool {
        self.epoch == other.epoch
    }

    /// Its position, if it is one in the ledger value `epoch` (0 otherwise).
    fn in_ledger(&self, epoch: u64) -> usize {
        if self.epoch == epoch {
            self.position
        } else {
            0
        }
    }
}

/// Which of its peers' redemptions the uplink uploads now (after asking the server which it
/// holds): those held here long enough that their writers would have uploaded them.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeersDue {
    /// Those that arrived before it: held here for the gate's grace.
    pub after_grace: UnsentCursor,
    /// Those that arrived before it, held a tenth of the grace: a lagging writer's are due;
    /// the others' the uplink asks about (their writers have uploaded them by then, most
    /// often), uploading none: so its backlog ends a moment after the peers' admissions
    /// stop, not a whole grace after.
    pub lagging_before: UnsentCursor,
    /// Writers of which a redemption was not at the server after the grace (their uplink
    /// is down, most likely), until one is found there.
    pub lagging: std::sync::Arc<HashSet<gatemesh_ledger::NodeId>>,
}

/// What a look for unsent redemptions found.
#[derive(Debug)]
pub(crate) struct Unsent {
    /// The first `limit` of them: this gate's own first, then its peers' that are due.
    pub redemptions: Vec<Redemption>,
    /// Then, in the room `limit` leaves, its peers' only to ask about ([`PeersDue`]): their
    /// ids alone, as none of them is uploaded (one the server lacks waits until it is due,
    /// and is read then). Read from the document, a waiting one was read again at every
    /// look, on the thread that decides scans.
    pub to_ask: Vec<(TicketId, RedemptionId)>,
    /// How many there are in all (peers' not yet due left out).
    pub total: usize,
    /// Where the next look starts: the first unsent one (everything before it was sent).
    pub next: UnsentCursor,
    /// How far the look saw: every redemption before it arrived by now.
    pub seen: UnsentCursor,
    /// How many of `redemptions`, from the first, are this gate's own; the rest are its
    /// peers' that are due.
    pub own: usize,
    /// Peers' unsent redemptions not yet due.
    pub not_due: usize,
    /// The certificates (DER) of their writers that the ledger holds: they travel with the
    /// records, so the server and gates elsewhere can check who wrote each.
    pub certs: std::collections::HashMap<gatemesh_ledger::NodeId, Vec<u8>>,
}

/// What writing or holding the server's standing of `tid` gave: the change to store (how
/// many: 0 or 1), a refusal logged (another's record this ledger cannot check: nothing was
/// taken), or an error that fails the batch.
fn standing_taken(
    tid: &TicketId,
    taken: Result<Option<StoredChange>, gatemesh_ledger::LedgerError>,
    changes: &mut Vec<StoredChange>,
) -> Result<usize, NodeError> {
    match taken {
        Ok(change) => {
            let n = usize::from(change.is_some());
            changes.extend(change);
            Ok(n)
        }
        Err(gatemesh_ledger::LedgerError::Refused(why)) => {
            tracing::warn!("the server's standing of ticket {tid}: {why}");
            Ok(0)
        }
        Err(e) => Err(e.into()),
    }
}

/// A reply held back until the batch's changes are on disk.
type Deferred = Box<dyn FnOnce(Option<&NodeError>) + Send>;

/// A mesh session's answer, sent once the batch is stored (or with why it was not).
fn answer_after_store(
    reply: tokio::sync::oneshot::Sender<Result<(), String>>,
    taken: Result<(), String>,
) -> Deferred {
    Box::new(move |failed| {
        let _ = reply.send(match failed {
            Some(e) => Err(e.to_string()),
            None => taken,
        });
    })
}

fn defer<T: Send + 'static>(reply: Reply<T>, result: Result<T, NodeError>) -> Deferred {
    Box::new(move |failed| {
        let _ = reply.send(match failed {
            Some(e) => Err(e.clone()),
            None => result,
        });
    })
}

/// A gate's counts as its store keeps them: `verdict:admit`, …, `refusal:<reason>`.
fn tally_rows(
    counts: &Counts,
    refusals: &std::collections::BTreeMap<Reason, u64>,
) -> Vec<(String, u64)> {
    let mut rows = vec![
        ("verdict:admit".to_owned(), counts.admit),
        ("verdict:duplicate".to_owned(), counts.duplicate),
        ("verdict:reject".to_owned(), counts.reject),
    ];
    for (reason, n) in refusals {
        if let Ok(serde_json::Value::String(name)) = serde_json::to_value(reason) {
            rows.push((format!("refusal:{name}"), *n));
        }
    }
    rows
}

/// The counts back from the store's rows; a reason this build does not know is left out.
pub(crate) fn tally_of(
    rows: &[(String, u64)],
) -> (Counts, std::collections::BTreeMap<Reason, u64>) {
    let mut counts = Counts::default();
    let mut refusals = std::collections::BTreeMap::new();
    for (key, n) in rows {
        match key.split_once(':') {
            Some(("verdict", "admit")) => counts.admit = *n,
            Some(("verdict", "duplicate")) => counts.duplicate = *n,
            Some(("verdict", "reject")) => counts.reject = *n,
            Some(("refusal", name)) => {
                if let Ok(reason) = serde_json::from_value(serde_json::Value::String(name.into())) {
                    refusals.insert(reason, *n);
                }
            }
            _ => {}
        }
    }
    (counts, refusals)
}

/// Lateness past which an answer is noted in [`LateAnswers`]: under it, a scanner that asks
/// again near the end of the window meets the window as it always was.
const LATE_MS: i64 = 500;

/// The entries this gate answered late (its writer behind: a heal's catch-up on a loaded
/// laptop), each with how long after its presentation: the repeat window runs from the
/// answer (`gatemesh_ledger::Scan::answered_late`). A scanner whose ask timed out asks again;
/// an ask presented 12 s after the first, answered 15 s late, is the same holder, not a
/// copy. Kept while the window after the answer lasts; empty while the gate keeps up.
#[derive(Debug, Default)]
pub(crate) struct LateAnswers {
    /// How late, ms after the presentation: what [`gatemesh_ledger::Scan::answered_late`]
    /// reads.
    late: std::collections::HashMap<RedemptionId, i64>,
    /// Until when each matters (its answer plus the window).
    until_of: std::collections::HashMap<RedemptionId, i64>,
    /// The same, oldest first, to let go of.
    until: std::collections::VecDeque<(i64, RedemptionId)>,
    /// Entries decided in the batch under way, `(id, presented)`: noted again once their
    /// answers go out with the batch's commit, which on a held writer is later still.
    pending: Vec<(RedemptionId, i64)>,
}

impl LateAnswers {
    /// Notes entry `id` presented at `at_ms` and answered at `now_ms`, if it was late (a
    /// later note of the same entry, at its answer, replaces one made at its decision).
    fn note(&mut self, id: &RedemptionId, at_ms: i64, now_ms: i64, window_ms: i64) {
        self.forget(now_ms);
        let late = now_ms.saturating_sub(at_ms);
        if late >= LATE_MS {
            let until = now_ms.saturating_add(window_ms);
            self.late.insert(id.clone(), late);
            self.until_of.insert(id.clone(), until);
            self.until.push_back((until, id.clone()));
        }
    }

    /// An entry decided in this batch: noted now, and again when the batch answers.
    fn decided(&mut self, id: &RedemptionId, at_ms: i64, now_ms: i64, window_ms: i64) {
        self.note(id, at_ms, now_ms, window_ms);
        self.pending.push((id.clone(), at_ms));
    }

    /// The batch's answers went out at `now_ms`.
    fn answered(&mut self, now_ms: i64, window_ms: i64) {
        for (id, at_ms) in std::mem::take(&mut self.pending) {
            self.note(&id, at_ms, now_ms, window_ms);
        }
    }

    /// Lets go of the answers whose window has passed.
    fn forget(&mut self, now_ms: i64) {
        while let Some((until, id)) = self.until.front() {
            if *until >= now_ms {
                break;
            }
            // Only if no later note of it holds it longer.
            if self.until_of.get(id) == Some(until) {
                self.until_of.remove(id);
                self.late.remove(id);
            }
            self.until.pop_front();
        }
    }

    /// What the decision reads; `None` while nothing was late.
    fn get(&self) -> Option<&std::collections::HashMap<RedemptionId, i64>> {
        (!self.late.is_empty()).then_some(&self.late)
    }
}

pub(crate) struct Writer {
    pub ledger: Ledger,
    pub store: Store,
    pub store_path: PathBuf,
    pub durability: Durability,
    /// The device identity the ledger signs and checks with, for a reload to take up again.
    pub identity: Option<gatemesh_mesh::pki::Identity>,
    pub gate_name: String,
    pub policy: Policy,
    /// The guests the server's manifest names, for finding one by name.
    pub guests: std::sync::Arc<crate::guests::Guests>,
    /// The gate's check-in lists (checked before the writer; here for exits, which count
    /// where the holder came in, and to follow the ledger's releases of them).
    pub check_in: std::sync::Arc<crate::check_in::GateCheckIn>,
    pub manifest: Option<HashSet<TicketId>>,
    /// This gate's verdicts since it first opened its ledger (kept in the store, so that a
    /// restart does not reset what managers see).
    pub counts: Counts,
    /// Its refused scans, by reason, likewise.
    pub refusals: std::collections::BTreeMap<Reason, u64>,
    /// The counts changed since they were last stored.
    pub tally_dirty: bool,
    /// This gate's entries it answered late, for the repeat window ([`LateAnswers`]).
    pub late_answers: LateAnswers,
    /// How long its batches take lately ([`Pace`]).
    pub pace: std::sync::Arc<Pace>,
    /// Where this gate's counts go to its mesh sessions, for its peers' dashboards, and the
    /// duplicates and refusals they were last published at.
    pub stats: tokio::sync::watch::Sender<std::sync::Arc<Vec<u8>>>,
    pub stats_published: Option<(u64, u64)>,
    pub events: broadcast::Sender<NodeEvent>,
    /// Change rows stored since the last compaction.
    pub uncompacted: i64,
    /// What each connected peer is believed to have.
    pub peers: std::collections::HashMap<String, gatemesh_ledger::PeerSync>,
    /// How many changes each peer lacked when last counted, and when ([`Writer::peer_lag`]).
    pub lag: std::collections::HashMap<String, (std::time::Instant, Option<usize>)>,
    /// Moves on every commit that added changes (sessions run a sync round at their next
    /// check).
    pub changed: tokio::sync::watch::Sender<u64>,
    /// This node's own changes, one item per commit once it is stored: every mesh session
    /// pushes them to its peer.
    pub pushes: broadcast::Sender<gatemesh_mesh::session::Pushed>,
    /// Peers' sync messages being taken a part at a time, one part per batch, so scans are
    /// decided between them (a gate catching up a stadium's ledger in one message would
    /// otherwise answer no one for seconds).
    pub taking: std::collections::VecDeque<Taking>,
    /// The one peer this gate asks for a large gap at a time ([`CatchUp`]).
    pub catch_up: CatchUp,
    /// The one peer this gate asks to relay it a large gap at a time ([`CatchUpRelay`]).
    pub relay_from: CatchUpRelay,
    /// Signatures found good, shared with the mesh's prechecks (every ledger the writer
    /// opens keeps what it signs and verifies there).
    pub vouched: std::sync::Arc<gatemesh_ledger::Vouched>,
    /// Peers' held-back changes may be ready to take, more than one batch takes
    /// ([`Writer::take_waiting`]): the next batches take them, a part's worth at a time,
    /// taking turns with what staff ask as parts do.
    pub waiting_due: bool,
    /// How many changes the next part takes ([`next_part`]): as many as the last part's
    /// pace fits in [`PART_BUDGET`], from [`PART_FIRST`]; a message of more is taken in
    /// parts.
    pub part: usize,
    /// A peer's message was refused after it may have reached the document.
    pub reload_after_commit: bool,
    /// A whole ledger taken from a peer this batch, to store in place of every change row
    /// with the batch's own ([`gatemesh_ledger::TakenWhole`]).
    pub replacing: Option<gatemesh_ledger::TakenWhole>,
    /// Peers whose held-back changes were refused when another peer's changes let them be
    /// taken ([`Writer::take_waiting`]): why, answered to the peer's next message, which
    /// ends its connection as a refusal of its own message would have.
    pub refused_waiting: std::collections::HashMap<String, String>,
    /// What the peer connections that ended counted ([`Ended`]).
    pub ended: Ended,
    /// The ledger in memory may hold changes that are not on disk and reopening it failed
    /// (the file still locked, the disk gone): until a reload succeeds, nothing is stored
    /// and every command is answered with the storage's failure.
    pub reload_pending: bool,
    /// The certificates the mesh refuses, kept equal to the ledger's revocations.
    pub revoked: gatemesh_mesh::revoked::Revoked,
    /// The writer's own command channel, held weakly (every sender gone still means the
    /// node is shutting down): a compaction saved off the writer comes back through it.
    pub wake: mpsc::WeakSender<Command>,
    /// A compaction is being saved off the writer.
    pub saving: bool,
    /// Moves on every reload: a snapshot saved from the ledger before it is not stored.
    pub generation: u64,
    /// The generation and [`Ledger::written`] at the last commit: a batch that leaves them
    /// as they were holds none of this node's own changes.
    pub stored_own: (u64, u64),
    /// Change rows kept before compacting ([`COMPACT_AFTER`] unless configured).
    pub compact_after: i64,
    /// How many changes the ledger had taken, a moment ago and before (for relays).
    pub marks: Marks,
}

/// A peer's sync message being taken a part at a time ([`Writer::taking`]).
pub(crate) struct Taking {
    peer: String,
    parts: gatemesh_ledger::SyncInParts,
    /// Answered once the last part is stored: the session sends nothing to this peer
    /// until then.
    reply: tokio::sync::oneshot::Sender<Result<(), String>>,
}

/// The one peer a gate asks for a large gap (more than [`PART`] changes it lacks) at a time.
///
/// After a partition heals, every gate of one side lacks the same changes from every gate of
/// the other, and a gate that joins late lacks the whole ledger from every peer. Asked by
/// each (each sync message says what this node has, and the peer answers with what it
/// lacks), each sends the same gap: sixteen times over in a stadium, a whole ledger per peer
/// for a late gate. So one peer is asked; the others get this node's heads and what they
/// lack, but not what it has or needs, and send nothing back but their heads. The others
/// are asked once the one answered the message that asked it and then went
/// [`CATCH_UP_WAIT`] without being asked for a gap or sending a large part of one: by then
/// this node holds the gap, and they send only what it still lacks. Its answer may take
/// seconds (the peer saves its ledger on its own writer, the message crosses a busy LAN):
/// a 32-gate heal on two cores took 5-7 s, and with a wait counted from the ask instead,
/// each gate asked a new peer every two seconds and took the same gap from up to seven of
/// them, whole ledgers included. A peer that does not answer within [`CATCH_UP_ANSWER`]
/// (or whose connection ends) stops holding the others. A peer's first messages on a new connection count as a gap (what it has is not
/// known yet); what a peer's bloom filter says this node lacks decides after that, so in
/// steady state (a few changes apart) every peer is asked at every round.
///
/// One peer holds the others back for at most [`CATCH_UP_MOST`] in a row, and is then not
/// made the one again for as long: an enrolled device gone dishonest that keeps sending
/// large messages (or says it holds much this node lacks) delays what the others send, and
/// cannot stop it.
#[derive(Debug, Default)]
pub struct CatchUp {
    /// The peer asked: until when it holds the others back, and since when it has.
    from: Option<(String, std::time::Instant, std::time::Instant)>,
    /// When a message that asks the one peer for its gap went out, while its answer has
    /// not come.
    awaiting: Option<std::time::Instant>,
    /// A peer that held the others back for [`CATCH_UP_MOST`], and until when it waits its
    /// turn.
    rested: Option<(String, std::time::Instant)>,
    /// Peers whose large sync message is being parsed off the writer (at most one each: a
    /// session waits for its message to be taken before it sends anything else).
    pub(crate) arriving: Arriving,
}

/// Peers whose large sync message is being parsed off the writer ([`CatchUp::arriving`]).
pub(crate) type Arriving = std::sync::Arc<std::sync::Mutex<HashSet<String>>>;

/// How long the peer asked for a gap keeps the others waiting without sending a part of it.
const CATCH_UP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Longest the peer asked for a gap keeps the others waiting for its answer to the ask
/// (its message of the gap arriving: then [`CATCH_UP_WAIT`] counts).
const CATCH_UP_ANSWER: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest one peer holds the others back (a gate joining 100,000 late takes ~17 s on two
/// busy cores), and how long it then waits before it is the one again.
const CATCH_UP_MOST: std::time::Duration = std::time::Duration::from_secs(30);

impl CatchUp {
    /// Whether this node may ask `peer` for what it lacks of its `lack` changes (`None`:
    /// not known yet, counted as a gap); asking for a large gap makes `peer` the one.
    /// `sending(p)`: a large message of `p`'s is being parsed or taken.
    fn may_ask(
        &mut self,
        peer: &str,
        lack: Option<usize>,
        sending: impl Fn(&str) -> bool,
        now: std::time::Instant,
    ) -> bool {
        if let Some((from, until, since)) = &self.from {
            let answering = self
                .awaiting
                .is_some_and(|asked| now.duration_since(asked) < CATCH_UP_ANSWER);
            if *until <= now && !sending(from) && !answering {
                self.from = None;
            } else if now.duration_since(*since) > CATCH_UP_MOST {
                tracing::warn!(
                    "{from} held the others back for {} s: they are asked now",
                    CATCH_UP_MOST.as_secs()
                );
                self.rested = Some((from.clone(), now + CATCH_UP_MOST));
                self.from = None;
            }
            if self.from.is_none() {
                self.awaiting = None;
            }
        }
        let small = lack.is_some_and(|n| n <= PART);
        match &self.from {
            // While one peer sends a gap, another is not asked even for a small one: what it
            // holds that this node lacks is, mostly, what the one is sending (its count
            // shrinks as the gap arrives, and past a point it would be sent twice). Its
            // changes still come as it pushes and relays them.
            Some((from, _, _)) if from != peer => return false,
            _ if small => return true,
            _ => {}
        }
        if let Some((rested, until)) = &self.rested
            && rested == peer
            && *until > now
        {
            return false;
        }
        match &mut self.from {
            Some((_, until, _)) => *until = now + CATCH_UP_WAIT,
            None => {
                tracing::info!(
                    "catching up from {peer}: other peers are asked once it sent its gap"
                );
                self.from = Some((peer.into(), now + CATCH_UP_WAIT, now));
            }
        }
        true
    }

    /// A message that asks `peer` for what this node lacks went out (`may_ask` said yes):
    /// if it is the one peer asked for a gap, the others wait for its answer.
    fn asked(&mut self, peer: &str, now: std::time::Instant) {
        if self.from.as_ref().is_some_and(|(from, _, _)| from == peer) {
            self.awaiting.get_or_insert(now);
        }
    }

    /// A sync message from `peer` came (as it came off the connection, before it is
    /// parsed): if it is the one peer asked, its answer is here, and [`CATCH_UP_WAIT`]
    /// counts from now (while the message is parsed and taken, it holds the others anyway).
    fn heard(&mut self, peer: &str, now: std::time::Instant) {
        if let Some((from, until, _)) = &mut self.from
            && from == peer
            && self.awaiting.take().is_some()
        {
            *until = (*until).max(now + CATCH_UP_WAIT);
        }
    }

    /// The connection to `peer` ended: if it was the one asked, the others are asked now.
    fn gone(&mut self, peer: &str) {
        if self.from.as_ref().is_some_and(|(from, _, _)| from == peer) {
            self.from = None;
            self.awaiting = None;
        }
    }

    /// A large message from `peer` was parsed, and is taken next.
    fn parsed(&mut self, peer: &str) {
        if let Ok(mut arriving) = self.arriving.lock() {
            arriving.remove(peer);
        }
    }

    /// A large message from `peer` (more than [`PART`] changes) was taken: if it is the one
    /// peer asked, the others wait a while longer for what else it sends.
    fn taken(&mut self, peer: &str, now: std::time::Instant) {
        if let Some((from, until, _)) = &mut self.from
            && from == peer
        {
            *until = now + CATCH_UP_WAIT;
        }
    }
}

/// A gap of more changes than this is a large one, asked of one peer at a time
/// ([`CatchUp`], [`CatchUpRelay`]); a message's parts are smaller ([`PART_MOST`]).
pub(crate) const PART: usize = 1024;

/// The one peer a gate asks to relay it a large gap at a time: every writer's changes the
/// gate lacks, from what that peer has at hand (`gatemesh_ledger::Wants::Gap`).
///
/// After a partition heals, a gate lacks what the other side admitted meanwhile, from every
/// gate of it. Unasked, each writer's changes come from that writer (or the one peer first
/// to relay them) once this gate is connected to it again, a part at a time: the gap is
/// complete only once most of the other side is reached (about 2 s at the median gate of a
/// 32-gate heal on two cores). Asked, the first peer of the other side reached sends all of
/// it, as a round of the sync protocol did, without the round's pass over every change
/// since the two sides last agreed. One peer is asked, not each: each would send the same
/// gap. Meanwhile the others are asked to relay nothing (`gatemesh_ledger::Wants::Nothing`):
/// their own changes of the gap, and what they relay of the writers this gate does not
/// reach yet, would come twice (what they push still comes).
///
/// A gate asks when it lacks more than [`RELAY_ASK_PAST`] of a peer's changes, and goes on
/// asking that peer (no other) while it lacks more than [`RELAY_ASK_UNTIL`] of them: the rest
/// is on its way by each writer's pushes. What the one peer no longer has at hand comes by
/// the round this gate starts once nothing came for `gatemesh_ledger::CATCH_UP_STALL_MS`.
/// One peer that sends nothing for [`RELAY_ASK_STALE`] (no longer at hand, a stuck
/// connection, or a dishonest peer that says it holds much this gate lacks) rests for
/// [`CATCH_UP_MOST`], and another may be asked; so does one that sent fewer than
/// [`CATCH_UP_NEWS_LEAST`] new changes in its last [`CATCH_UP_MOST`] (one that trickles).
/// One that sends more stays the one however long the gap takes: each peer asked next sent
/// again what the one before had on its way (its answers queued behind a loaded writer's,
/// megabytes), and at the stadium, where the gates on the smaller side of a heal took
/// their gap of 22,000 changes in two to four minutes and moved on every 30 s, a third of
/// what the heal relayed came twice. Meanwhile the others' pushes still come. What the
/// peers asked before in the same catch-up sent, taken now a part at a time, counts as news
/// from the one asked now: on a loaded gate they still wait here, and the one asked now has
/// nothing to send but what they do not bring (given up on for that, each next peer asked
/// sent what had come since).
/// What the peer asked wrote itself is news only while no other peer offers the gap: a
/// stolen device could otherwise stay the one asked, and hold every other peer's relays
/// back, by writing records of its own as fast as it likes ([`CatchUpRelay::took`]); it
/// still shows the peer sending. A peer that catches up from this gate is asked only when
/// no other offers the gap ([`CatchUpRelay::passes_over`]).
#[derive(Debug, Default)]
pub struct CatchUpRelay {
    /// The peer asked, and what it sent.
    from: Option<Asked>,
    /// A peer that was asked for [`CATCH_UP_MOST`], and until when it is not asked again.
    rested: Option<(String, std::time::Instant)>,
    /// The peers asked before in this catch-up (since the gate last lacked little), while
    /// still connected.
    asked_before: Vec<String>,
    /// The peers whose last summary named more than [`RELAY_ASK_PAST`] changes this gate
    /// lacks: those that could be asked for the gap.
    offering: HashSet<String>,
    /// The peers whose last summary asked this gate for its gap: each catches up from here.
    asking_here: HashSet<String>,
    /// Since when this gate has not asked a peer that offers the gap because it catches up
    /// from here, waiting for another to offer ([`ASK_OTHER_WAIT`]).
    passed_over: Option<std::time::Instant>,
    /// Peers whose large push is being read and checked ahead, off the writer
    /// ([`gatemesh_ledger::PushAhead`]), until the writer takes it: the peer asked is not
    /// given up on as sending nothing meanwhile.
    pub(crate) checking: Arriving,
}

/// The peer a gate asks to relay it a gap ([`CatchUpRelay`]), and what it sent.
#[derive(Debug)]
struct Asked {
    peer: String,
    /// When this gate last took a change it sent (or asked it first).
    took: std::time::Instant,
    /// Since when new changes it sent are counted, and how many were: a window of
    /// [`CATCH_UP_MOST`].
    window: (std::time::Instant, usize),
}

/// Fewest new changes the peer asked for a gap sends in [`CATCH_UP_MOST`] to stay the one
/// ([`CatchUpRelay`]): the gates on the smaller side of a stadium's heal took ~4,000 of
/// their gap every 30 s on two loaded cores.
const CATCH_UP_NEWS_LEAST: usize = PART;

/// Changes a gate lacks of a peer's (by its summary) past which it asks that peer to relay
/// it every writer's changes ([`CatchUpRelay`]).
pub(crate) const RELAY_ASK_PAST: usize = PART;

/// Changes a gate lacks of the peer it asks to relay it a gap at most which it no longer
/// asks ([`CatchUpRelay`]): the rest comes by the usual relays, each writer's from itself
/// or, for writers this gate does not reach, from whichever peer answers first.
pub const RELAY_ASK_UNTIL: usize = RELAY_MOST / 2;

/// How long the peer asked to relay a gap stays the one while this gate takes nothing new
/// from it ([`CatchUpRelay`]).
///
/// Its first answer comes only after this gate's summary waited its turn on the peer's
/// writer, and the answer its turn on this one's: after a heal both are loaded (batches of
/// a second and more on two cores), and at 3 s the gates of a 16-gate heal moved on to
/// another peer every few seconds, each sending again the gap the one before had on its
/// way.
const RELAY_ASK_STALE: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a gate that could ask for its gap only peers that catch up from it waits for
/// another to offer it ([`CatchUpRelay`]): each peer's summary comes every second or so.
const ASK_OTHER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Most changes relayed in one answer to a peer that catches up from this gate (its summary
/// asks, [`CatchUpRelay`]); it tells its next summary as soon as it took them, for the next.
const CATCH_UP_RELAY_MOST: usize = 4 * PART;

impl CatchUpRelay {
    /// What this gate's summary for `peer`, of whose changes it lacks `lack`, asks it to
    /// relay. Nothing while what it lacks is not known (`None`: no summary of the peer's on
    /// this connection yet): after a heal, a peer told to relay as usual before this gate
    /// knows it lacks a gap sends its own part of it, which the one asked sends too.
    fn wants(
        &mut self,
        peer: &str,
        lack: Option<usize>,
        now: std::time::Instant,
    ) -> gatemesh_ledger::Wants {
        use gatemesh_ledger::Wants;
        if let Some(asked) = &mut self.from {
            let (since, news) = asked.window;
            // A push of its being checked ahead is news on its way: after a heal every gate
            // checks thousands of signatures at once, and on a machine that many gates
            // share, the first answers can wait there past the 10 s (in one 32-gate bench
            // heal 31 gates gave up the peer they asked, 10 s after asking, and the gap
            // went again from every other peer).
            let checking = self
                .checking
                .lock()
                .is_ok_and(|checking| checking.contains(&asked.peer));
            let why = if now.duration_since(asked.took) > RELAY_ASK_STALE && !checking {
                Some(format!(
                    "sent nothing new for {} s",
                    RELAY_ASK_STALE.as_secs()
                ))
            } else if now.duration_since(since) > CATCH_UP_MOST {
                // A window ends: the peer stays if it sent enough, and is counted afresh.
                asked.window = (now, 0);
                (news < CATCH_UP_NEWS_LEAST)
                    .then(|| format!("sent {news} new changes in {} s", CATCH_UP_MOST.as_secs()))
            } else {
                None
            };
            if let Some(why) = why {
                let from = asked.peer.clone();
                tracing::warn!("{from}, asked to relay a gap, {why}: other peers may be asked now");
                self.rested = Some((from.clone(), now + CATCH_UP_MOST));
                if !self.asked_before.contains(&from) {
                    self.asked_before.push(from);
                }
                self.from = None;
            }
        }
        let Some(lack) = lack else {
            return Wants::Nothing;
        };
        if lack > RELAY_ASK_PAST {
            if !self.offering.contains(peer) {
                self.offering.insert(peer.into());
            }
        } else {
            self.offering.remove(peer);
            if self.offering.is_empty() {
                self.passed_over = None;
            }
        }
        let offers = self.from.is_none() && lack > RELAY_ASK_PAST && !self.rests(peer, now);
        // Passed over, it relays nothing meanwhile: the one asked next sends the gap.
        let passed = offers && self.passes_over(peer, now);
        let askable = offers && !passed;
        match &mut self.from {
            Some(asked) if asked.peer == peer => {
                if lack > RELAY_ASK_UNTIL {
                    return Wants::Gap;
                }
                self.from = None;
                self.asked_before.clear();
                Wants::Relays
            }
            Some(_) => Wants::Nothing,
            None if askable => {
                tracing::info!(
                    "catching up from {peer} by its relays: this gate lacks {lack} of its changes"
                );
                self.passed_over = None;
                self.from = Some(Asked {
                    peer: peer.into(),
                    took: now,
                    window: (now, 0),
                });
                Wants::Gap
            }
            None if passed => Wants::Nothing,
            None => Wants::Relays,
        }
    }

    /// Whether `peer` was given up on lately, and is not asked again yet.
    fn rests(&self, peer: &str, now: std::time::Instant) -> bool {
        self.rested
            .as_ref()
            .is_some_and(|(rested, until)| rested == peer && *until > now)
    }

    /// Whether `peer`, which offers the gap, is not asked for it because it catches up from
    /// this gate: another peer offers it too, or may within [`ASK_OTHER_WAIT`].
    ///
    /// Asked, it would send its gap on the connection that carries this gate's relays to
    /// it, and its session reads this gate's summaries (the ask, then each next one) only
    /// after the relays before them are taken: in a 32-gate bench heal on a loaded
    /// machine the ask reached the peer's writer 13 s after it was made, and this gate gave
    /// the peer up before its first answer came, while the peers each side asked each
    /// other.
    fn passes_over(&mut self, peer: &str, now: std::time::Instant) -> bool {
        if !self.asking_here.contains(peer) {
            return false;
        }
        let other = self
            .offering
            .iter()
            .any(|p| p != peer && !self.asking_here.contains(p) && !self.rests(p, now));
        let since = *self.passed_over.get_or_insert(now);
        other || now.duration_since(since) < ASK_OTHER_WAIT
    }

    /// `peer`'s last summary asked this gate for its gap (`asks`), or did not.
    fn told(&mut self, peer: &str, asks: bool) {
        if asks {
            if !self.asking_here.contains(peer) {
                self.asking_here.insert(peer.into());
            }
        } else {
            self.asking_here.remove(peer);
        }
    }

    /// Changes `peer` sent that were new here were taken, `others` that other devices wrote
    /// and `own` that it wrote itself: from the peer asked, if that is `peer` or one asked
    /// before in this catch-up, they show it sending ([`RELAY_ASK_STALE`]), and they are
    /// news for its window ([`CATCH_UP_NEWS_LEAST`]). What it wrote itself is news only
    /// while no other peer offers the gap: a stolen device asked for it would otherwise stay
    /// the one asked, and the others asked for nothing, by writing records of its own as
    /// fast as it likes (it is given up on as its window ends), while a gate whose gap is
    /// one peer's own admissions (two gates, one of them back from a partition) has nothing
    /// else to take them from. They still show it sending: an honest peer's answer starts
    /// with its own records of the partition, and taken 32 at a time on a loaded machine
    /// they took past 10 s (a 32-gate bench heal gave up four such peers so).
    fn took(&mut self, peer: &str, (others, own): (usize, usize), now: std::time::Instant) {
        let elsewhere = self.offering.iter().any(|p| p != peer);
        let n = if elsewhere { others } else { others + own };
        let sent = others + own;
        if own > 0 && elsewhere && self.from.as_ref().is_some_and(|asked| asked.peer == peer) {
            tracing::debug!(
                "took {own} records {peer} wrote and {others} others wrote, sent as asked: \
                 its own show it sending, and are no news while others offer the gap"
            );
        }
        if sent > 0
            && let Some(asked) = &mut self.from
            && (asked.peer == peer || self.asked_before.iter().any(|p| p == peer))
        {
            // Anything taken shows the peer sending; only news keeps its window.
            asked.took = now;
            asked.window.1 = asked.window.1.saturating_add(n);
        }
    }

    /// The writer took the push of `peer`'s checked ahead (or its connection ended).
    fn checked(&self, peer: &str) {
        if let Ok(mut checking) = self.checking.lock() {
            checking.remove(peer);
        }
    }

    /// Whether this gate asks a peer by hash for what the changes it pushed build on
    /// ([`gatemesh_ledger::Ledger::need_message`]), given what it lacks of each peer's by
    /// their summaries (`lacks`). Not while it catches up a gap: asked of a peer, or about
    /// to be (it lacks more than [`RELAY_ASK_PAST`] of some peer's). The gap comes by that
    /// peer's relays a part at a time, and every fresh change the other side pushes builds
    /// on some of it: asked by hash, each pusher sent the gap again, change by change
    /// (18,400 of the 107,800 changes a 16-gate heal relayed in session 32). What the gap
    /// does not bring is asked for once the gate lacks little, at the next push.
    fn asks_by_hash(&self, lacks: impl IntoIterator<Item = Option<usize>>) -> bool {
        self.from.is_none()
            && !lacks
                .into_iter()
                .any(|lack| lack.is_some_and(|lack| lack > RELAY_ASK_PAST))
    }

    /// The connection to `peer` ended: if it was the one asked, another may be.
    fn gone(&mut self, peer: &str) {
        self.checked(peer);
        if self.from.as_ref().is_some_and(|asked| asked.peer == peer) {
            self.from = None;
        }
        // What it sent that waited here went with its connection.
        self.asked_before.retain(|p| p != peer);
        self.offering.remove(peer);
        self.asking_here.remove(peer);
    }
}

/// Most changes the writer applies onto a whole ledger before taking it
/// ([`Writer::receive`]); more go onto it off the writer first, at most [`WHOLE_ROUNDS`]
/// times.
const WHOLE_BESIDES_HERE: usize = 32;
const WHOLE_ROUNDS: u32 = 4;

/// Fewest changes of a part ([`Writer::part`]).
const PART_LEAST: usize = 32;

/// Changes of a message's first part, before the gate knows what one costs at this moment
/// ([`next_part`]): on two busy cores a first part of 1,024 took 0.7 s, after a
/// partition healed, and every scan meanwhile waited as long.
pub(crate) const PART_FIRST: usize = 128;

/// Most changes of a part ([`next_part`]): a pace measured at a quiet moment does not hold
/// when the machine gets busy again (parts grown to 1,024 took 1.9 s after a heal, at
/// 1.7 ms a change on two busy cores).
pub(crate) const PART_MOST: usize = 256;

/// How many changes the part after one of `most` changes, `took` long for `taken` of them,
/// takes: as many as fit [`PART_BUDGET`] at the pace it went, between [`PART_LEAST`] and
/// [`PART_MOST`], and at most twice as many as this one (one quick part, its machine idle
/// for a moment, does not make the next one long).
fn next_part(most: usize, taken: usize, took: std::time::Duration) -> usize {
    let Some(each) = took.checked_div(taken.max(1) as u32) else {
        return most;
    };
    let fit = if each.is_zero() {
        PART_MOST
    } else {
        (PART_BUDGET.as_nanos() / each.as_nanos()) as usize
    };
    fit.min(most.saturating_mul(2)).clamp(PART_LEAST, PART_MOST)
}

/// How long taking one part should keep the writer: on a laptop whose cores are busy a
/// part of 1,024 changes took seconds, and the scans after it waited as long, so parts
/// shrink (to [`PART_LEAST`]) while they take longer than this and grow back when quick.
const PART_BUDGET: std::time::Duration = std::time::Duration::from_millis(50);

/// Most changes relayed to a peer after one summary: the rest of a larger gap goes with the
/// answers to its next summaries (unless it catches up from this gate:
/// [`CATCH_UP_RELAY_MOST`]).
const RELAY_MOST: usize = 512;

/// A sync message that takes this long to make is logged, with what it carried.
const SLOW_MESSAGE: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a change taken here waits before it is relayed to a peer whose summary lacks
/// it: meanwhile it may be on its way to the peer already (this node's own push, whose mark
/// comes back from the session after it was written).
const RELAY_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How many changes the ledger had taken at moments of the last few seconds, for
/// [`gatemesh_ledger::RelayPlan::noted_before`].
#[derive(Debug, Default)]
pub(crate) struct Marks(std::collections::VecDeque<(std::time::Instant, u64)>);

/// How long [`Marks`] are kept, but for the newest one older than that.
const MARKS_FOR: std::time::Duration = std::time::Duration::from_secs(10);

impl Marks {
    /// Marks the ledger's count `noted` now (at most every 100 ms; kept [`MARKS_FOR`]).
    pub(crate) fn mark(&mut self, noted: u64) {
        self.mark_at(noted, std::time::Instant::now());
    }

    /// Marks `noted` at `now`. Marks older than [`MARKS_FOR`] go, but for the newest of
    /// them: it says what was taken before a writer's quiet spell. Without it a quiet gate
    /// (no scan for 10 s) kept only the mark of its first batch after the spell, no mark was
    /// a second old, and every change it held counted as taken a moment ago: asked for a
    /// gap as a partition healed, it left out its own records as on their way by push,
    /// though it made them long before it reached the peer (they came 10 s later, sent
    /// again as lost).
    fn mark_at(&mut self, noted: u64, now: std::time::Instant) {
        if self
            .0
            .back()
            .is_some_and(|(at, _)| now.duration_since(*at) < std::time::Duration::from_millis(100))
        {
            return;
        }
        self.0.push_back((now, noted));
        while self
            .0
            .get(1)
            .is_some_and(|(at, _)| now.duration_since(*at) > MARKS_FOR)
        {
            self.0.pop_front();
        }
    }

    /// Forgets every mark (the ledger was reopened, and counts again), then marks `noted`.
    pub(crate) fn restart(&mut self, noted: u64) {
        self.0.clear();
        self.mark(noted);
    }

    /// The position before which changes were taken at least [`RELAY_GRACE`] before
    /// `received`; none if no mark is that old.
    fn noted_before(&self, received: std::time::Instant) -> u64 {
        let Some(by) = received.checked_sub(RELAY_GRACE) else {
            return 0;
        };
        self.0
            .iter()
            .rev()
            .find(|(at, _)| *at <= by)
            .map_or(0, |(_, noted)| noted + 1)
    }
}

/// What this gate's peer connections that ended had counted, over its life (each
/// connection's counters leave with it; a heal replaces many connections at once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ended {
    /// Changes relayed to the peers, by why each went.
    pub relayed_by: gatemesh_ledger::RelayedBy,
    /// Changes the peers had sent that still waited here for what they build on when the
    /// connection ended: dropped with it, and sent again by someone.
    pub waiting_dropped: u64,
    /// The connections' books ([`gatemesh_ledger::LinkBooks`]).
    pub books: gatemesh_ledger::LinkBooks,
}

/// What the writer knows of a peer's sync ([`Command::PeerLag`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct PeerLag {
    /// Changes the peer lacks, when counted.
    pub behind: Option<usize>,
    /// Changes relayed to the peer on this connection, by why each went.
    pub relayed_by: gatemesh_ledger::RelayedBy,
    /// This connection's books ([`gatemesh_ledger::LinkBooks`]).
    pub books: gatemesh_ledger::LinkBooks,
    /// Changes the peer sent that wait here for what they build on.
    pub waiting: usize,
}

/// How long a count of what a peer lacks stands (see [`Writer::peer_lag`]).
pub(crate) const LAG_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How long one look at the peers' lag may spend recounting (see [`Writer::peer_lag`]).
const LAG_BUDGET: std::time::Duration = std::time::Duration::from_millis(20);

/// The sync state of `peer` (by its device name), a fresh one named for it if there is none
/// ([`gatemesh_ledger::PeerSync::of`]).
fn peer_state<'a>(
    peers: &'a mut std::collections::HashMap<String, gatemesh_ledger::PeerSync>,
    peer: &str,
) -> &'a mut gatemesh_ledger::PeerSync {
    peers
        .entry(peer.to_owned())
        .or_insert_with(|| gatemesh_ledger::PeerSync::of(peer))
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Writer {
    /// Takes a manifest file's standings as this gate's local knowledge: each holds where
    /// no status in the ledger says otherwise, and none is written into the ledger (a
    /// standing there is the server's, as its identity signed it; every gate given the file
    /// knows it alike).
    pub fn apply_manifest(&mut self, manifest: &Manifest) -> Result<(), NodeError> {
        let now = now_ms();
        let standings: Vec<Status> = manifest
            .standings
            .iter()
            .map(|(tid, standing)| Status {
                sig: None,
                tid: tid.clone(),
                standing: standing.clone(),
                by: "manifest".into(),
                at_ms: now,
                hlc: gatemesh_ledger::Hlc {
                    wall_ms: now,
                    counter: 0,
                    node: self.ledger.node().clone(),
                },
            })
            .collect();
        self.ledger.set_local_standings(standings);
        self.manifest = Some(manifest.listed.clone());
        self.guests.take(
            true,
            manifest
                .guests
                .iter()
                .map(|g| (g.tid.clone(), Some(g.clone()))),
        );
        Ok(())
    }

    /// The standing the server gave `t`, as this ledger may write it: the record its
    /// identity signed on a gate that checks signatures (none without it: the gate takes no
    /// standing it cannot check), or this gate's own unsigned record on a gate with no mesh
    /// identity (which takes nothing from outside).
    fn server_standing(&mut self, t: &ServerTicket) -> Option<Status> {
        if self.ledger.is_signing() {
            let status = t
                .status
                .as_ref()
                .filter(|s| s.tid == t.tid && s.standing == t.standing);
            if status.is_none() {
                tracing::warn!(
                    "the server gave ticket {} a standing without its signed record",
                    t.tid
                );
            }
            return status.cloned();
        }
        let now = now_ms();
        Some(Status {
            sig: None,
            tid: t.tid.clone(),
            standing: t.standing.clone(),
            by: "server".into(),
            at_ms: now,
            hlc: self.ledger.tick(now),
        })
    }

    pub fn run(mut self, mut rx: mpsc::Receiver<Command>) {
        // Every line the writer logs names its gate: gates sharing a process (`gatemesh
        // bench`, tests) are otherwise told apart by nothing.
        let span = tracing::info_span!("gate", name = %self.gate_name);
        let _entered = span.enter();
        self.marks.mark(self.ledger.noted());
        let mut stopping = false;
        // While a peer's message is being taken in parts, batches of what was asked and
        // parts take turns: a scan's answer waits for its batch to be stored, so it must not
        // share a batch with a part.
        let mut part_turn = false;
        // A heavy command that ended the last batch's collection: it starts the next one.
        let mut held: Option<Command> = None;
        loop {
            // Otherwise the writer sleeps until asked.
            let mut batch = Vec::new();
            if let Some(first) = held.take() {
                batch.push(first);
            } else if self.taking.is_empty() && !self.waiting_due {
                part_turn = false;
                match rx.blocking_recv() {
                    Some(first) => batch.push(first),
                    None => break,
                }
            }
            while batch.len() < MAX_BATCH && !part_turn && !batch.last().is_some_and(Command::heavy)
            {
                match rx.try_recv() {
                    Ok(c) if c.heavy() && !batch.is_empty() => {
                        held = Some(c);
                        break;
                    }
                    Ok(c) => batch.push(c),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        // Every sender is gone: the node is shutting down.
                        self.taking.clear();
                        self.waiting_due = false;
                        break;
                    }
                }
            }
            if batch.is_empty() && self.taking.is_empty() && !self.waiting_due {
                break;
            }
            if !self.taking.is_empty() || self.waiting_due {
                if part_turn || batch.is_empty() {
                    batch.push(Command::TakePart);
                    part_turn = false;
                } else {
                    part_turn = true;
                }
            }
            let mut changes = Vec::new();
            let mut replies = Vec::with_capacity(batch.len());
            let mut events = Vec::new();
            // A commit made early in the batch (see below): its failure answers the batch.
            let mut early: Option<NodeError> = None;
            let mut stored_early = false;
            if self.reload_pending {
                self.reload();
            }
            if self.reload_pending {
                // Nothing built on a ledger that differs from the disk is stored or answered.
                early = Some(NodeError::Storage(
                    "the ledger could not be reopened from disk after a failed write; \
                     retrying with every request"
                        .into(),
                ));
            }
            let mut slow = SlowBatch::new(batch.len());
            // This node's own changes of the batch, to push. A peer's are not passed on by
            // push (each peer has them from their writer, or by the next sync round).
            let mut own: Vec<StoredChange> = Vec::new();
            for command in batch {
                if let Command::Shutdown = command {
                    stopping = true;
                    continue;
                }
                let from_peer = matches!(
                    command,
                    Command::Sync(_)
                        | Command::PushAhead { .. }
                        | Command::SyncParsed { .. }
                        | Command::TakePart
                );
                let made = changes.len();
                let (kind, began) = (command.kind(), std::time::Instant::now());
                replies.push(self.handle(command, &mut changes, &mut events));
                slow.note(kind, began.elapsed());
                if !from_peer {
                    own.extend(changes.get(made..).unwrap_or_default().iter().cloned());
                }
                if std::mem::take(&mut self.reload_after_commit) && early.is_none() {
                    // A peer's message failed after it reached the document: what it left
                    // there must not stay, be passed on or be built upon by the next scan.
                    // Keep what the batch made before it, then start again from disk.
                    let replacing = self.replacing.is_some();
                    match self.store_batch(&changes, &[]) {
                        Ok(()) => stored_early |= replacing || !changes.is_empty(),
                        Err(e) => early = Some(NodeError::from(e)),
                    }
                    changes.clear();
                    self.reload();
                }
            }

            // Every few hundred changes of its own, the gate seals its history: one
            // signature that a peer catching up takes in place of theirs (`seal.rs`). It is
            // stored with the batch, and pushed with it.
            if early.is_none() {
                match self.ledger.seal_if_due(now_ms()) {
                    Ok(Some(seal)) => {
                        own.push(seal.clone());
                        changes.push(seal);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("could not seal this gate's history: {e}"),
                }
            }
            // The counts ride along with a commit the batch makes anyway.
            let tally = if self.tally_dirty && !changes.is_empty() {
                tally_rows(&self.counts, &self.refusals)
            } else {
                Vec::new()
            };
            let replaced = self.replacing.is_some();
            let failed = early.or_else(|| {
                self.store_batch(&changes, &tally)
                    .err()
                    .map(NodeError::from)
            });
            if failed.is_none() && !tally.is_empty() {
                self.tally_dirty = false;
            }
            if let Some(e) = &failed {
                tracing::error!(
                    "could not store {} changes: {e}; reloading the ledger",
                    changes.len()
                );
                self.reload();
            }
            for reply in replies {
                reply(failed.as_ref());
            }
            self.late_answers
                .answered(now_ms(), self.policy.repeat_window_ms);
            slow.report(changes.len());
            self.pace
                .batch(slow.began.elapsed(), std::time::Instant::now());
            // A batch of refusals and duplicates makes no record: its counts are stored after
            // the answers, so that no refused scan waits for a sync.
            if self.tally_dirty && failed.is_none() {
                match self.store.commit_replacing(
                    None,
                    &[],
                    &tally_rows(&self.counts, &self.refusals),
                    gatemesh_ledger::Wait::Never,
                ) {
                    Ok(()) => self.tally_dirty = false,
                    Err(e) => tracing::warn!("could not store the gate's counts: {e}"),
                }
            }
            if failed.is_none() {
                for event in events {
                    let _ = self.events.send(event);
                }
                if !changes.is_empty() || stored_early || replaced {
                    self.changed.send_modify(|n| *n += 1);
                }
                self.push(&own);
            }
            // The mesh refuses what the ledger (as stored) says is revoked.
            self.revoked.set(self.ledger.revoked_certs());
            // A release of the lists (from the uplink or a peer) counts from the next scan.
            self.check_in.follow(self.ledger.lists());
            self.publish_stats();
            self.marks.mark(self.ledger.noted());
            if stopping {
                break;
            }
            // Not between the parts of a message: they would each save the document again.
            let idle = rx.is_empty() && self.taking.is_empty() && !self.waiting_due;
            if failed.is_none()
                && ((self.uncompacted > self.compact_after && idle)
                    || self.uncompacted > COMPACT_ANYWAY * self.compact_after)
            {
                self.compact_apart();
            }
        }
        // Every sender is gone: the node is shutting down.
        self.compact();
    }

    /// Publishes this gate's duplicates and refusals (by reason) to its mesh sessions when
    /// they changed: admissions are in the ledger already, these are not.
    fn publish_stats(&mut self) {
        let now = (self.counts.duplicate, self.counts.reject);
        if self.stats_published == Some(now) {
            return;
        }
        self.stats_published = Some(now);
        let stats = GateStats {
            duplicate: self.counts.duplicate,
            reject: self.counts.reject,
            refusals: self
                .refusals
                .iter()
                .map(|(r, n)| (r.as_str().to_owned(), *n))
                .collect(),
        };
        match serde_json::to_vec(&stats) {
            Ok(json) => {
                let _ = self.stats.send(std::sync::Arc::new(json));
            }
            Err(e) => tracing::warn!("this gate's counts for its peers: {e}"),
        }
    }

    /// Hands this node's stored changes to every mesh session at once, so each peer gets
    /// them in one frame without a sync round. A commit too large for a push (an import)
    /// reaches peers by the next round.
    fn push(&self, own: &[StoredChange]) {
        let size: usize = own.iter().map(|c| c.bytes.len()).sum();
        if own.is_empty()
            || size > gatemesh_mesh::session::PUSH_MOST
            || self.pushes.receiver_count() == 0
        {
            return;
        }
        let mut bytes = Vec::with_capacity(size);
        for c in own {
            bytes.extend_from_slice(&c.bytes);
        }
        let hashes = own.iter().map(|c| c.hash).collect();
        let _ = self
            .pushes
            .send(std::sync::Arc::new(gatemesh_mesh::session::Commit {
                bytes,
                hashes,
            }));
    }

    /// Compacts with the document saved on a thread of its own: the writer copies it (a
    /// few milliseconds) and goes on deciding scans while it is saved (a third of a second
    /// to two seconds at 100,000 redemptions), then stores the snapshot when it comes back
    /// ([`Command::Saved`]). Rows stored meanwhile stay rows. One at a time.
    fn compact_apart(&mut self) {
        if self.saving {
            return;
        }
        let through = match self.store.last_seq() {
            Ok(through) => through,
            Err(e) => {
                tracing::warn!("compaction put off (the change rows stay): {e}");
                return;
            }
        };
        let (copy, generation) = (self.ledger.to_save(), self.generation);
        let saving = self.apart("gate-compact", move || {
            // automerge 0.12 can panic; the writer must still hear that it ended.
            let saved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| copy.save()));
            Command::Saved {
                snapshot: saved.ok(),
                through,
                generation,
            }
        });
        match saving {
            Ok(()) => self.saving = true,
            Err(e) => tracing::warn!("compaction put off (the change rows stay): {e}"),
        }
    }

    /// Runs `work` on a thread of its own and hands the command it makes back to this
    /// writer (dropped when the node shut down meanwhile).
    fn apart(
        &self,
        name: &str,
        work: impl FnOnce() -> Command + Send + 'static,
    ) -> std::io::Result<()> {
        let wake = self.wake.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let command = work();
                if let Some(writer) = wake.upgrade() {
                    let _ = writer.blocking_send(command);
                }
            })
            .map(|_| ())
    }

    /// Commits a batch's changes and counters, after the whole ledger taken this batch in
    /// place of every row stored before, if one was ([`Writer::replacing`]): the batch's
    /// changes build on it. Counts what is left uncompacted either way; a failure drops
    /// the whole ledger with the rest (the caller reloads from disk).
    fn store_batch(
        &mut self,
        changes: &[StoredChange],
        tally: &[(String, u64)],
    ) -> Result<(), gatemesh_ledger::StoreError> {
        let replacing = self.replacing.take();
        let replace = replacing
            .as_ref()
            .map(|w| (w.snapshot.as_slice(), w.rows.as_slice()));
        // A batch with no change of this node's own (only peers', which they hold) does not
        // wait for the disk: a gate with many peers takes far more changes than it makes.
        let written = (self.generation, self.ledger.written());
        let wait = if replacing.is_none() && self.stored_own == written {
            gatemesh_ledger::Wait::Never
        } else {
            gatemesh_ledger::Wait::AsOpened
        };
        self.store.commit_replacing(replace, changes, tally, wait)?;
        self.stored_own = written;
        match &replacing {
            // What is left to fold is what was stored after the peer's document; an earlier
            // compaction still saving is older and changes nothing.
            Some(w) => self.uncompacted = (w.rows.len() + changes.len()) as i64,
            None => self.uncompacted += changes.len() as i64,
        }
        Ok(())
    }

    /// Stores a snapshot saved off the writer ([`Writer::compact_apart`]), unless the ledger
    /// was reloaded since it was copied.
    fn saved(&mut self, snapshot: Option<&[u8]>, through: i64, generation: u64) {
        if generation != self.generation {
            return;
        }
        self.saving = false;
        let Some(snapshot) = snapshot else {
            tracing::warn!("compaction failed saving the document (the change rows stay)");
            return;
        };
        let stored = self
            .store
            .compact_through(snapshot, through)
            .and_then(|()| self.store.pending_changes());
        match stored {
            Ok(left) => self.uncompacted = left,
            Err(e) => tracing::warn!("compaction failed (the change rows stay): {e}"),
        }
    }

    fn compact(&mut self) {
        let snapshot = self.ledger.snapshot();
        match self.store.compact(&snapshot) {
            Ok(()) => self.uncompacted = 0,
            Err(e) => tracing::warn!("compaction failed (the change rows stay): {e}"),
        }
    }

    /// After a failed commit the ledger in memory holds changes that are not on disk; start
    /// again from what is.
    fn reload(&mut self) {
        // A whole ledger taken but not stored goes with the ledger in memory.
        self.replacing = None;
        // As the gate opened it: signing its own records and checking everyone else's with
        // its identity (a ledger reopened without them would take nothing from peers and
        // write unsigned records), with the manifest file's standings.
        let event = self.ledger.event().clone();
        let reopened = crate::keys_of(self.identity.as_ref(), &event).and_then(|keys| {
            let dir = self
                .store_path
                .parent()
                .unwrap_or(std::path::Path::new("."));
            crate::open_ledger(dir, &event, self.durability, keys)
        });
        match reopened {
            Ok((store, mut ledger)) => {
                ledger.set_local_standings(self.ledger.local_standings());
                ledger.share_vouched(self.vouched.clone());
                self.store = store;
                self.ledger = ledger;
                // Peers may have been told of changes that are gone: start their sync over.
                self.peers.clear();
                // What they began to take is gone with it: their sessions end and start over.
                self.taking.clear();
                self.reload_pending = false;
                // A compaction being saved is of the ledger before: it is not stored.
                self.generation += 1;
                self.saving = false;
                self.marks.restart(self.ledger.noted());
            }
            Err(e) => {
                tracing::error!("could not reload the ledger from disk (trying again): {e}");
                self.reload_pending = true;
            }
        }
    }

    fn listing(&self, tid: &TicketId) -> Listing {
        match &self.manifest {
            None => Listing::NoManifest,
            Some(listed) if listed.contains(tid) => Listing::Listed,
            Some(_) => Listing::Unlisted,
        }
    }

    fn handle(
        &mut self,
        command: Command,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Deferred {
        match command {
            Command::Scan {
                verified,
                lists,
                scanner,
                direction,
                presented_ms,
                manual,
                reply,
            } => {
                let at = (scanner, direction, presented_ms);
                let result = self.scan(*verified, lists, at, manual, changes, events);
                defer(reply, result)
            }
            Command::Resolve {
                tid,
                action,
                staff,
                note,
                reply,
            } => {
                let result = self.resolve(tid, action, staff, note, changes, events);
                defer(reply, result)
            }
            Command::Ticket { tid, reply } => {
                let state = self.ledger.ticket(&tid);
                let flagged = !state.flagged().is_empty();
                defer(reply, Ok((state, flagged)))
            }
            Command::Flags { reply } => {
                let tids: Vec<TicketId> = self.ledger.flagged().cloned().collect();
                let flags = tids
                    .into_iter()
                    .map(|tid| {
                        let s = self.ledger.ticket(&tid);
                        (tid, s)
                    })
                    .collect();
                defer(reply, Ok(flags))
            }
            Command::Snapshot { reply } => {
                let snapshot = Snapshot {
                    counts: self.counts,
                    refusals: self.refusals.clone(),
                    redemptions: self.ledger.redemption_count(),
                    flagged: self.ledger.flagged().count(),
                    manifest_tickets: self.manifest.as_ref().map(HashSet::len),
                    ledger_digest: self.ledger.digest(),
                    peers_ended: self.ended,
                };
                defer(reply, Ok(snapshot))
            }
            Command::Records { reply } => {
                defer(reply, Ok((self.ledger.redemptions(), self.ledger.audit())))
            }
            Command::Activity {
                first_ms,
                minute_ms,
                minutes,
                reply,
            } => {
                let activity = self
                    .ledger
                    .entry_tally()
                    .activity(first_ms, minute_ms, minutes);
                defer(reply, Ok(activity))
            }
            Command::Audit { reply } => defer(reply, Ok(self.ledger.audit())),
            Command::ExportLedger { reply } => defer(reply, Ok(self.ledger.save())),
            Command::Import { bytes, reply } => {
                let _ = self.ledger.take_newly_flagged();
                let result = self
                    .ledger
                    .merge_saved(&bytes, now_ms())
                    .map_err(NodeError::from)
                    .map(|new| {
                        let n = new.len();
                        changes.extend(new);
                        n
                    });
                if let Ok(n) = result {
                    events.push(NodeEvent::Imported { changes: n });
                    self.report_flags(events);
                }
                defer(reply, result)
            }
            Command::Sync(request) => self.sync(request, changes, events),
            Command::PushAhead { peer, push, reply } => {
                tracing::debug!("taking {peer}'s push checked ahead");
                self.relay_from.checked(&peer);
                self.take_push(peer, push, reply, changes, events)
            }
            Command::SyncParsed {
                peer,
                parts,
                reply,
                rounds,
            } => {
                self.catch_up.parsed(&peer);
                self.catch_up.heard(&peer, std::time::Instant::now());
                // Its session ended while it was parsed: its state is forgotten already.
                if reply.is_closed() {
                    return Box::new(|_| {});
                }
                self.receive(peer, parts, (reply, rounds), changes, events)
            }
            Command::TakePart => self.take_part(changes, events),
            Command::Unsent {
                sent,
                from,
                peers_due,
                limit,
                reply,
            } => defer(reply, Ok(self.unsent(&sent, (from, peers_due), limit))),
            Command::UnsentResolutions { sent, reply } => {
                let unsent = self
                    .ledger
                    .resolutions_where(|r| !r.from_server && !sent.contains(r.id.as_str()));
                defer(reply, Ok(unsent))
            }
            Command::FromServer { update, reply } => {
                let result = self.apply_server_news(update, changes, events);
                defer(reply, result)
            }
            Command::WriteStandings { tickets, reply } => {
                let result = self.write_standings(&tickets, changes, events);
                defer(reply, result)
            }
            Command::Revocations { reply } => {
                let report = Revocations {
                    revocations: self.ledger.revocations().to_vec(),
                    set_aside: self.ledger.set_aside(),
                    revoked: self.ledger.own_revoked(),
                };
                defer(reply, Ok(report))
            }
            Command::Inside { scopes, reply } => {
                let occupancy = self.ledger.occupancy();
                let inside = scopes
                    .iter()
                    .map(|(s, since)| occupancy.inside_since(s, *since))
                    .collect();
                defer(reply, Ok(inside))
            }
            Command::PeerLag { reply } => defer(reply, Ok(self.peer_lag())),
            Command::Saved {
                snapshot,
                through,
                generation,
            } => {
                self.saved(snapshot.as_deref(), through, generation);
                Box::new(|_| {})
            }
            Command::Shutdown => Box::new(|_| {}),
        }
    }

    /// How many changes each connected peer lacks, recounted once [`LAG_EVERY`] old. A count
    /// walks the change graph from what the peer last said it has (hundreds of
    /// milliseconds for a peer a partition's worth behind), so one look recounts the oldest
    /// counts only until [`LAG_BUDGET`] is spent (at least one): status pages poll every
    /// second, and scans wait while the writer counts.
    fn peer_lag(&mut self) -> std::collections::HashMap<String, PeerLag> {
        let began = std::time::Instant::now();
        let peers = &self.peers;
        self.lag.retain(|name, _| peers.contains_key(name));
        let mut due: Vec<(Option<std::time::Instant>, String)> = peers
            .keys()
            .map(|name| (self.lag.get(name).map(|(at, _)| *at), name.clone()))
            .filter(|(at, _)| at.is_none_or(|at| at.elapsed() >= LAG_EVERY))
            .collect();
        // Never counted first, then the oldest.
        due.sort();
        for (i, (_, name)) in due.into_iter().enumerate() {
            if i > 0 && began.elapsed() >= LAG_BUDGET {
                break;
            }
            if let Some(state) = self.peers.get(&name) {
                let behind = self.ledger.peer_lag(state);
                self.lag.insert(name, (std::time::Instant::now(), behind));
            }
        }
        self.peers
            .iter()
            .map(|(name, state)| {
                let lag = PeerLag {
                    behind: self.lag.get(name).and_then(|(_, behind)| *behind),
                    relayed_by: state.relayed_by(),
                    books: state.books(),
                    waiting: state.waiting(),
                };
                (name.clone(), lag)
            })
            .collect()
    }

    /// Redemptions whose ids are not in `sent`, looking only at what arrived from `from` on:
    /// the cost follows the backlog and the news, not the ledger's size (a whole-ledger look
    /// took 23 ms at 50,000 redemptions, on the thread that decides scans). A cursor from
    /// another ledger value (a reload) starts over. This gate's own come first; its peers'
    /// only once they are due ([`PeersDue`]; a cursor of another value: none): a peer's are
    /// read from the document only then, and only their ids given before.
    fn unsent(
        &mut self,
        sent: &HashSet<String>,
        (from, peers_due): (UnsentCursor, PeersDue),
        limit: usize,
    ) -> Unsent {
        let epoch = self.ledger.epoch();
        let start = from.in_ledger(epoch);
        let due_before = peers_due.after_grace.in_ledger(epoch);
        let lagging_before = peers_due.lagging_before.in_ledger(epoch);
        let lagging = |at: usize| {
            self.ledger
                .arrival_writer(at)
                .is_some_and(|w| peers_due.lagging.contains(w))
        };
        let mut first_unsent = None;
        let (mut total, mut not_due) = (0, 0);
        let mut own = Vec::new();
        let mut peers = Vec::new();
        let mut to_ask = Vec::new();
        let arrivals = self.ledger.arrivals(start);
        let seen_all = start + arrivals.len();
        for (i, (tid, id)) in arrivals.iter().enumerate() {
            if sent.contains(id.as_str()) {
                continue;
            }
            let at = start + i;
            first_unsent.get_or_insert(at);
            if self.ledger.arrived_own(at) {
                own.push((tid, id));
            } else if at < due_before || (at < lagging_before && lagging(at)) {
                peers.push((tid, id));
            } else if at < lagging_before {
                to_ask.push((tid, id));
            } else {
                not_due += 1;
                continue;
            }
            total += 1;
        }
        let ledger = &self.ledger;
        let read = |(tid, id): (&TicketId, &RedemptionId)| ledger.redemption(tid, id);
        let mut redemptions: Vec<Redemption> =
            own.into_iter().take(limit).filter_map(read).collect();
        let own = redemptions.len();
        redemptions.extend(
            peers
                .into_iter()
                .take(limit.saturating_sub(own))
                .filter_map(read),
        );
        let room = limit.saturating_sub(redemptions.len());
        let to_ask = to_ask
            .into_iter()
            .take(room)
            .map(|(tid, id)| (tid.clone(), id.clone()))
            .collect();
        let mut certs = std::collections::HashMap::new();
        for r in &redemptions {
            if !certs.contains_key(&r.node)
                && let Some(cert) = self.ledger.device_cert(&r.node)
            {
                certs.insert(r.node.clone(), cert);
            }
        }
        Unsent {
            redemptions,
            to_ask,
            total,
            next: UnsentCursor {
                epoch,
                position: first_unsent.unwrap_or(seen_all),
            },
            seen: UnsentCursor {
                epoch,
                position: seen_all,
            },
            own,
            not_due,
            certs,
        }
    }

    fn sync(
        &mut self,
        request: SyncRequest,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Deferred {
        match request {
            SyncRequest::Generate { peer, turn, reply } => {
                use gatemesh_mesh::session::Turn;
                let began = std::time::Instant::now();
                // What the peer's changes waiting here build on, unless another peer's
                // waiting here brings it.
                let need = match turn {
                    Turn::Missing => {
                        let (ledger, peers) = (&mut self.ledger, &self.peers);
                        let relay_from = &self.relay_from;
                        // Each peer's lack is a walk of its summary: only for a peer with
                        // changes waiting here.
                        peers
                            .get(&peer)
                            .filter(|s| s.waiting() > 0)
                            .filter(|_| {
                                relay_from.asks_by_hash(peers.values().map(|s| ledger.lacked_of(s)))
                            })
                            .and_then(|state| {
                                let others = peers.iter().filter(|(p, _)| **p != peer);
                                ledger.need_message_besides(state, others.map(|(_, s)| s))
                            })
                    }
                    _ => None,
                };
                let state = peer_state(&mut self.peers, &peer);
                // A request for changes by hash is no round: it asks for no gap (counted as
                // one, it made its peer the one asked and held the others' rounds back).
                let round = !matches!(turn, Turn::Missing);
                let lack = if round {
                    self.ledger.lack_from(state)
                } else {
                    None
                };
                let lack_took = began.elapsed();
                let served = self.ledger.sync_served();
                let (taking, catch_up) = (&self.taking, &mut self.catch_up);
                let arriving = catch_up.arriving.clone();
                let sending = |p: &str| {
                    taking.iter().any(|t| t.peer == p)
                        || arriving.lock().is_ok_and(|a| a.contains(p))
                };
                let now = std::time::Instant::now();
                let asking = round && catch_up.may_ask(&peer, lack, sending, now);
                if round {
                    state.set_asking(asking);
                }
                let message = match turn {
                    Turn::Start if self.ledger.agrees_with(state) => None,
                    Turn::Start => {
                        state.start_round();
                        self.ledger.sync_message(state)
                    }
                    Turn::Answer => {
                        state.answer_round();
                        self.ledger.sync_message(state)
                    }
                    Turn::FollowUp => self.ledger.sync_followup(state),
                    Turn::Missing => need,
                };
                let took = began.elapsed();
                if took >= SLOW_MESSAGE {
                    let now = self.ledger.sync_served();
                    tracing::info!(
                        "the {turn:?} message for {peer} took {} ms (telling what it lacks \
                         {} ms): {} bytes, {} changes at hand, {} rebuilt, {} whole documents",
                        took.as_millis(),
                        lack_took.as_millis(),
                        message.as_ref().map_or(0, Vec::len),
                        now.at_hand - served.at_hand,
                        now.rebuilt - served.rebuilt,
                        now.whole - served.whole,
                    );
                }
                // A round's start and the answer to one are always answered (with the gap,
                // when the peer holds it): the others wait for that answer. A follow-up is
                // answered only if the peer has more to send.
                if asking
                    && message.is_some()
                    && matches!(turn, Turn::Start | Turn::Answer)
                    && lack.is_none_or(|n| n > PART)
                {
                    self.catch_up.asked(&peer, now);
                }
                // Sent only once this batch is on disk: a peer never holds a change that a
                // failed commit could take back.
                Box::new(move |failed| {
                    let _ = reply.send(if failed.is_some() { None } else { message });
                })
            }
            SyncRequest::Receive { peer, bytes, reply } => {
                self.catch_up.heard(&peer, std::time::Instant::now());
                let parts = gatemesh_ledger::SyncInParts::parse(&bytes);
                self.receive(peer, parts, (reply, 0), changes, events)
            }
            SyncRequest::Push { peer, bytes, reply } => {
                let push = gatemesh_ledger::PushAhead::unread(bytes);
                self.take_push(peer, push, reply, changes, events)
            }
            SyncRequest::Pushed { peer, hashes } => {
                if let Some(state) = self.peers.get_mut(&peer) {
                    self.ledger.pushed(state, hashes);
                }
                Box::new(|_| {})
            }
            SyncRequest::Summary {
                peer,
                reaches,
                reply,
            } => {
                use gatemesh_ledger::Wants;
                let now = std::time::Instant::now();
                let lack = self
                    .peers
                    .get(&peer)
                    .and_then(|state| self.ledger.lacked_of(state));
                let wants = self.relay_from.wants(&peer, lack, now);
                // While this gate asks a peer for a gap, its summaries go every second (the
                // next part is relayed on each); to the others, only as usual.
                let behind = wants == Wants::Gap
                    || wants == Wants::Relays
                        && self.peers.get(&peer).is_some_and(|state| {
                            self.ledger.lacks_what_peer_said(state, &peer, &reaches)
                        });
                let _ = reply.send(gatemesh_mesh::session::OurSummary {
                    // Saying what waits here to be taken: a large push is taken a part
                    // at a time, and without it every peer would send again what is
                    // on its way.
                    message: self
                        .ledger
                        .summary_message_with(&reaches, wants, self.peers.values()),
                    behind,
                    catching_up: wants == Wants::Gap,
                });
                Box::new(|_| {})
            }
            SyncRequest::TheirSummary {
                peer,
                bytes,
                received,
                relay,
                reply,
            } => {
                // Nothing relayed while much waits to go to the peer: its summary is taken,
                // and what it lacks goes with the answer to a later one.
                let most = |n| if relay { n } else { 0 };
                let plan = gatemesh_ledger::RelayPlan {
                    now_ms: now_ms(),
                    noted_before: self.marks.noted_before(received),
                    me: &self.gate_name,
                    most: most(RELAY_MOST),
                    catch_up_most: most(CATCH_UP_RELAY_MOST),
                    frame_most: gatemesh_mesh::session::PUSH_MOST,
                };
                let state = peer_state(&mut self.peers, &peer);
                let answer = self.ledger.relay(state, &bytes, &plan);
                self.relay_from
                    .told(&peer, self.ledger.catches_up_from_here(state));
                // Where a gap's answer waited, read with the asker's log: here, for this
                // writer, or there.
                if let Ok(a) = &answer
                    && (a.changes > 0 || a.left_out.total() > 0)
                {
                    tracing::debug!(
                        "{peer}'s summary answered after {} ms here: {} changes relayed in {} \
                         frames, left out {:?}",
                        received.elapsed().as_millis(),
                        a.changes,
                        a.frames.len(),
                        a.left_out
                    );
                }
                self.answer(&peer, answer, reply)
            }
            SyncRequest::Need { peer, bytes, reply } => {
                let state = peer_state(&mut self.peers, &peer);
                let answer =
                    self.ledger
                        .answer_need(state, &bytes, gatemesh_mesh::session::PUSH_MOST);
                self.answer(&peer, answer, reply)
            }
            SyncRequest::Forget { peer } => {
                self.catch_up.gone(&peer);
                self.relay_from.gone(&peer);
                if let Some(state) = self.peers.remove(&peer) {
                    self.ended.relayed_by += state.relayed_by();
                    self.ended.waiting_dropped += state.waiting() as u64;
                    self.ended.books += state.books();
                }
                self.refused_waiting.remove(&peer);
                self.taking.retain(|t| t.peer != peer);
                Box::new(|_| {})
            }
        }
    }

    /// What the session sends a peer after its summary or request: the changes relayed go
    /// out once this batch is stored (a peer never holds a change a failed commit could
    /// take back); a message that does not read ends the peer's connection.
    fn answer(
        &mut self,
        peer: &str,
        relay: Result<gatemesh_ledger::Relay, gatemesh_ledger::LedgerError>,
        reply: tokio::sync::oneshot::Sender<Result<gatemesh_mesh::session::Answer, String>>,
    ) -> Deferred {
        let answer = match self.refused_waiting.remove(peer) {
            Some(why) => Err(why),
            None => relay
                .map(|r| gatemesh_mesh::session::Answer {
                    frames: r.frames,
                    changes: r.changes,
                    round: r.round.is_some() || r.catch_up,
                })
                .map_err(|e| self.refused(peer, e)),
        };
        Box::new(move |failed| {
            let _ = reply.send(match failed {
                Some(_) => Ok(Default::default()),
                None => answer,
            });
        })
    }

    /// A peer's sync message: taken at once when it is one part, otherwise queued to be
    /// taken a part per batch ([`Writer::take_part`]).
    fn receive(
        &mut self,
        peer: String,
        parts: Result<gatemesh_ledger::SyncInParts, gatemesh_ledger::LedgerError>,
        (reply, rounds): (tokio::sync::oneshot::Sender<Result<(), String>>, u32),
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Deferred {
        // A whole ledger checked and derived off the writer (a catch-up): taken in one step,
        // once what this gate did while it was checked (hundreds of scans, each milliseconds
        // onto a loaded document) was applied onto it off the writer too, in rounds that
        // shrink.
        let mut parts = parts;
        let hand_over = match &mut parts {
            Ok(parts) if parts.is_ready_whole() && rounds < WHOLE_ROUNDS => {
                self.ledger.hand_besides(parts) > WHOLE_BESIDES_HERE
            }
            _ => false,
        };
        let parts = match parts {
            Ok(mut parts) if hand_over => {
                if let Ok(mut arriving) = self.catch_up.arriving.lock() {
                    arriving.insert(peer.clone());
                }
                let now = now_ms();
                let applying = self.apart("gate-catch-up", move || {
                    parts.take_besides(now);
                    Command::SyncParsed {
                        peer,
                        parts: Ok(parts),
                        reply,
                        rounds: rounds + 1,
                    }
                });
                if let Err(e) = applying {
                    tracing::warn!("a catch-up's thread did not start: {e}");
                }
                return Box::new(|_| {});
            }
            Ok(mut parts) if parts.is_ready_whole() => {
                match self.ledger.take_whole(&mut parts, now_ms()) {
                    Some(whole) => {
                        tracing::info!(
                            "took the whole ledger from {peer}: {} changes new here",
                            whole.new
                        );
                        events.push(NodeEvent::CaughtUp {
                            peer: peer.clone(),
                            changes: whole.new,
                        });
                        self.catch_up.taken(&peer, std::time::Instant::now());
                        // Stored with the batch, in place of the rows: the peer's document
                        // as it came, and what this gate held that it lacked.
                        self.replacing = Some(whole);
                        // The copies the document brought to light (taking_in starts afresh).
                        self.report_flags(events);
                        let taken = self.taking_in(&peer, changes, events, |ledger, state| {
                            ledger.finish_sync(state, parts)?;
                            Ok(Vec::new())
                        });
                        if taken.is_ok() {
                            // Peers' pushes that waited for what the document brought (none
                            // of it is a row, so taking_in did not look).
                            self.take_waiting(changes, self.part);
                            self.report_flags(events);
                        }
                        return answer_after_store(reply, taken.map(|_| ()));
                    }
                    None => Ok(parts),
                }
            }
            parts => parts,
        };
        let taken = match parts {
            // A message starts at most at PART_FIRST whatever the last one's pace: that was
            // then (quick parts at a quiet moment grew it to 1,024, and the first part after
            // a heal, the machine busy, held scans 0.7 s).
            Ok(parts) if parts.left() > self.part.min(PART_FIRST) => {
                self.part = self.part.min(PART_FIRST);
                self.taking.push_back(Taking { peer, parts, reply });
                return Box::new(|_| {});
            }
            Ok(mut parts) => self
                .taking_in(&peer, changes, events, |ledger, state| {
                    let new = ledger.take_sync_part(state, &mut parts, PART, now_ms())?;
                    ledger.finish_sync(state, parts)?;
                    Ok(new)
                })
                .map(|_| ()),
            Err(e) => Err(self.refused(&peer, e)),
        };
        answer_after_store(reply, taken)
    }

    /// The next part of the first message being taken in parts; once its last part is
    /// taken, what the message says of the peer is taken too and the session is answered
    /// (after the batch is stored).
    fn take_part(
        &mut self,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Deferred {
        // Held-back changes left from the last batch go first: a part may add to them.
        if self.waiting_due {
            let _ = self.ledger.take_newly_flagged();
            let (most, before, began) = (self.part, changes.len(), std::time::Instant::now());
            self.take_waiting(changes, most);
            self.paced(most, changes.len() - before, began.elapsed());
            self.report_flags(events);
            return Box::new(|_| {});
        }
        let Some(Taking {
            peer,
            mut parts,
            reply,
        }) = self.taking.pop_front()
        else {
            return Box::new(|_| {});
        };
        let (most, left, began) = (self.part, parts.left(), std::time::Instant::now());
        let taken = self.taking_in(&peer, changes, events, |ledger, state| {
            ledger.take_sync_part(state, &mut parts, most, now_ms())
        });
        self.part = next_part(most, left.saturating_sub(parts.left()), began.elapsed());
        let taken = match taken {
            Ok(_) if parts.left() > 0 => {
                self.taking.push_back(Taking { peer, parts, reply });
                return Box::new(|_| {});
            }
            Ok(_) => {
                self.catch_up.taken(&peer, std::time::Instant::now());
                self.taking_in(&peer, changes, events, |ledger, state| {
                    ledger.finish_sync(state, parts)?;
                    Ok(Vec::new())
                })
            }
            Err(e) => Err(e),
        };
        answer_after_store(reply, taken.map(|_| ()))
    }

    /// Takes a push of `peer`'s: a part's worth now, the rest in the batches after (a
    /// relayed gap is thousands of changes), as a sync message's parts are, and paced alike.
    fn take_push(
        &mut self,
        peer: String,
        push: gatemesh_ledger::PushAhead,
        reply: tokio::sync::oneshot::Sender<Result<bool, String>>,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Deferred {
        let (most, before, began) = (self.part, changes.len(), std::time::Instant::now());
        let taken = self.taking_in(&peer, changes, events, |ledger, state| {
            ledger.receive_push_upto(state, push, now_ms(), most)
        });
        self.paced(most, changes.len() - before, began.elapsed());
        Box::new(move |failed| {
            let _ = reply.send(match failed {
                Some(e) => Err(e.to_string()),
                None => taken,
            });
        })
    }

    /// A part of at most `most` pushed or held-back changes took `took` for `taken` of them:
    /// the next part fits [`PART_BUDGET`] at that pace ([`next_part`]), as a sync message's
    /// do. Since a heal's gap comes by relays, sync messages are rare, and the parts stayed
    /// at [`PART_FIRST`]: 128 changes took 0.5-1.8 s on two busy cores, the scans waiting.
    /// A push of a few changes says little of the pace (its fixed costs, spread over one
    /// or two), and leaves it as it was.
    fn paced(&mut self, most: usize, taken: usize, took: std::time::Duration) {
        if taken >= PART_LEAST {
            self.part = next_part(most, taken, took);
        }
    }

    /// Reports the tickets the ledger flagged, and those whose standing changed, since it was
    /// last asked.
    fn report_flags(&mut self, events: &mut Vec<NodeEvent>) {
        events.extend(
            self.ledger
                .take_newly_flagged()
                .into_iter()
                .map(|tid| NodeEvent::Flagged { tid }),
        );
        events.extend(
            self.ledger
                .take_newly_standing()
                .into_iter()
                .map(|(tid, standing)| NodeEvent::Standing { tid, standing }),
        );
    }

    /// What was taken from `peer` since its books were `before`: news from it, if it was
    /// asked for a gap ([`CatchUpRelay::took`]), told apart into what other devices wrote and
    /// what it wrote itself.
    fn took_from(&mut self, peer: &str, before: gatemesh_ledger::LinkBooks) {
        let Some(now) = self.peers.get(peer).map(|s| s.books()) else {
            return;
        };
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let (others, own) = (
            count(now.taken_of_others() - before.taken_of_others()),
            count(now.taken_own - before.taken_own),
        );
        if others + own > 0 {
            self.relay_from
                .took(peer, (others, own), std::time::Instant::now());
        }
    }

    /// Takes what `take` takes from a peer into the ledger (a push, a sync message or a
    /// part of one), with the peer's sync state: the new changes join the batch's, newly
    /// flagged tickets its events. `Ok(true)` when some of the peer's changes wait for
    /// changes they build on.
    fn taking_in(
        &mut self,
        peer: &str,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
        take: impl FnOnce(
            &mut gatemesh_ledger::Ledger,
            &mut gatemesh_ledger::PeerSync,
        ) -> Result<Vec<StoredChange>, gatemesh_ledger::LedgerError>,
    ) -> Result<bool, String> {
        if let Some(why) = self.refused_waiting.remove(peer) {
            return Err(why);
        }
        let _ = self.ledger.take_newly_flagged();
        let state = peer_state(&mut self.peers, peer);
        let before = state.books();
        match take(&mut self.ledger, state) {
            Ok(new) => {
                self.took_from(peer, before);
                let (took, budget) = (!new.is_empty(), self.part.saturating_sub(new.len()));
                changes.extend(new);
                if took {
                    self.take_waiting(changes, budget);
                }
                self.report_flags(events);
                Ok(self.peers.get(peer).is_some_and(|s| s.waiting() > 0))
            }
            Err(e) => Err(self.refused(peer, e)),
        }
    }

    /// After changes were taken: the changes any peer pushed that waited for what they build
    /// on, and now may have it (a gate's push often arrives before the changes of a third
    /// gate it builds on, which that gate pushes itself), are taken too, until none more
    /// are. A peer whose held-back changes are refused loses them, and its connection at
    /// its next message ([`Writer::refused_waiting`]).
    ///
    /// At most `budget` (a part's worth, [`Writer::part`], less what the batch's take just
    /// took): after a heal thousands wait on one catch-up part (one batch took 3,040
    /// changes and 1.7 s, its scans waiting as long). What is left is taken by the batches
    /// after ([`Writer::waiting_due`]).
    fn take_waiting(&mut self, changes: &mut Vec<StoredChange>, mut budget: usize) {
        loop {
            let mut took = false;
            let waiting: Vec<String> = self
                .peers
                .iter()
                .filter(|(_, s)| s.waiting() > 0)
                .map(|(p, _)| p.clone())
                .collect();
            for peer in waiting {
                if budget == 0 {
                    self.waiting_due = true;
                    return;
                }
                let Some(state) = self.peers.get_mut(&peer) else {
                    continue;
                };
                let before = state.books();
                match self.ledger.take_waiting(state, budget, now_ms()) {
                    Ok(new) => {
                        // The gap a peer was asked for is taken a part at a time: each part
                        // taken is that peer still sending.
                        self.took_from(&peer, before);
                        took |= !new.is_empty();
                        budget = budget.saturating_sub(new.len());
                        changes.extend(new);
                    }
                    Err(e) => {
                        let why = self.refused(&peer, e);
                        self.refused_waiting.insert(peer, why);
                    }
                }
            }
            if !took {
                self.waiting_due = false;
                return;
            }
        }
    }

    /// A peer's message was refused: why, for the session (the peer loses its connection).
    fn refused(&mut self, peer: &str, e: gatemesh_ledger::LedgerError) -> String {
        tracing::warn!("refused a message from {peer}: {e}");
        // Only a message that reached the document can have left traces: one that did not
        // decode or broke the rules was refused before it did.
        self.reload_after_commit |= !matches!(
            e,
            gatemesh_ledger::LedgerError::BadMessage(_)
                | gatemesh_ledger::LedgerError::Refused(_)
                | gatemesh_ledger::LedgerError::TooLarge { .. }
        );
        e.to_string()
    }

    fn scan(
        &mut self,
        verified: Result<Verified, VerifyError>,
        lists: Option<Result<gatemesh_wire::ListAdmission, gatemesh_wire::ListRefusal>>,
        (scanner, direction, presented_ms): (String, Direction, i64),
        manual: Option<String>,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Result<ScanResult, NodeError> {
        let now = presented_ms;
        let claims = verified.as_ref().ok().map(|v| v.claims.clone());
        let known = claims.as_ref().map(|c| self.ledger.ticket(&c.tid));
        // A holder leaving counts where they came in (their latest entry on one of the
        // gate's lists), whatever window or event day it is now.
        let gate_lists = self.check_in.lists();
        let lists = match (direction, gate_lists.as_deref(), &known) {
            (Direction::Exit, Some(gate_lists), Some(known)) => {
                let entries: Vec<&gatemesh_wire::Scope> = known
                    .effective()
                    .filter(|r| r.direction == Direction::Entry)
                    .filter_map(|r| r.scope.as_ref())
                    .collect();
                match gate_lists.exit_under(&entries, now) {
                    Some(under) => Some(Ok(under)),
                    None => lists,
                }
            }
            _ => lists,
        };
        // Under a list, the ticket is single-use per list and window, with the list's entry
        // policy: decided on its redemptions in that scope only.
        let admitted = lists.as_ref().and_then(|l| l.as_ref().ok());
        let scope = admitted.map(gatemesh_wire::ListAdmission::scope);
        let state = match &scope {
            Some(scope) => known.as_ref().map(|k| {
                let mut state = k.scoped(Some(scope));
                // After the list's everyone-out time, who came in before it is out: on a
                // re-entry list they come in again (single entry stays single).
                if let Some(a) = admitted
                    && a.entry == gatemesh_wire::Entry::Reentry
                    && let Some(cut) = a.everyone_out_ms
                {
                    state.redemptions.retain(|r| r.at_ms >= cut);
                }
                state
            }),
            None => known.clone(),
        };
        let policy = match admitted {
            Some(a) => Policy {
                entry: match a.entry {
                    gatemesh_wire::Entry::Single => gatemesh_ledger::EntryPolicy::Single,
                    gatemesh_wire::Entry::Reentry => gatemesh_ledger::EntryPolicy::Reentry,
                },
                ..self.policy
            },
            None => self.policy,
        };
        let listing = claims
            .as_ref()
            .map_or(Listing::NoManifest, |c| self.listing(&c.tid));
        let node = self.ledger.node().clone();
        let scan = Scan {
            node: &node,
            scanner: &scanner,
            direction,
            now_ms: now,
            answered_late: self.late_answers.get(),
        };
        let refusal = lists.as_ref().and_then(|l| l.as_ref().err());
        let outcome = match refusal {
            Some(refused) => Outcome::Answer(Answer {
                verdict: Verdict::Reject,
                reason: refused.reason(),
                first: None,
                redemption_id: None,
                transferred_to: None,
            }),
            None => decide(&verified, state.as_ref(), listing, &policy, &scan),
        };
        let answer = match outcome {
            Outcome::Answer(answer) => answer,
            Outcome::Record {
                direction,
                reason,
                unlisted,
            } => {
                let (Some(c), Some(known)) = (&claims, &known) else {
                    return Err(NodeError::Internal(
                        "a redemption without a verified ticket".into(),
                    ));
                };
                let redemption = Redemption {
                    manual: manual.clone(),
                    sig: None,
                    id: RedemptionId::random(),
                    tid: c.tid.clone(),
                    direction,
                    node: node.clone(),
                    gate: self.gate_name.clone(),
                    scanner: scanner.clone(),
                    at_ms: now,
                    hlc: self.ledger.tick(now),
                    // Every redemption of the ticket this gate knows of, whatever its scope.
                    seen: known.redemption_ids(),
                    unlisted,
                    scope: scope.clone(),
                };
                changes.extend(if redemption.manual.is_some() {
                    self.ledger.record_manual(&redemption)?
                } else {
                    self.ledger.record_redemption(&redemption)?
                });
                if direction == Direction::Entry {
                    let window = self.policy.repeat_window_ms;
                    self.late_answers
                        .decided(&redemption.id, now, now_ms(), window);
                }
                Answer {
                    verdict: Verdict::Admit,
                    reason,
                    first: None,
                    redemption_id: Some(redemption.id),
                    transferred_to: None,
                }
            }
        };
        self.tally_dirty = true;
        match answer.verdict {
            Verdict::Admit => self.counts.admit += 1,
            Verdict::Duplicate => self.counts.duplicate += 1,
            Verdict::Reject => {
                self.counts.reject += 1;
                *self.refusals.entry(answer.reason).or_default() += 1;
            }
        }
        let result = ScanResult {
            verdict: answer.verdict,
            reason: answer.reason,
            ticket: claims,
            first: answer.first,
            redemption_id: answer.redemption_id,
            transferred_to: answer.transferred_to,
            scanner,
            at_ms: now,
            detail: match refusal {
                Some(refused) => Some(refused.to_string()),
                None => verified.as_ref().err().map(ToString::to_string),
            },
            occupancy: match (&lists, &scope) {
                (Some(Ok(admitted)), Some(scope)) if answer.verdict != Verdict::Reject => {
                    let inside = self
                        .ledger
                        .occupancy()
                        .inside_since(scope, admitted.everyone_out_ms);
                    Some(gatemesh_wire::ListOccupancy {
                        list: admitted.list.clone(),
                        name: admitted.name.clone(),
                        scope: Some(scope.clone()),
                        inside,
                        capacity: admitted.capacity,
                        level: gatemesh_wire::CapacityLevel::of(inside, admitted.capacity),
                    })
                }
                _ => None,
            },
            list: match lists {
                Some(Ok(admitted)) if answer.verdict != Verdict::Reject => Some(admitted.list),
                _ => None,
            },
        };
        events.push(NodeEvent::Verdict(Box::new(result.clone())));
        Ok(result)
    }

    /// Writes the server's word into the ledger where it says something new; returns how
    /// many records were written.
    /// The server's standings of `tickets` that this gate held ([`ServerUpdate::hold`]):
    /// written where the ledger does not hold them written yet (by another gate of the mesh,
    /// whose turn came first), and held no longer. How many were written here.
    fn write_standings(
        &mut self,
        tickets: &[ServerTicket],
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Result<usize, NodeError> {
        if !self.ledger.is_signing() {
            // A gate with no mesh identity held nothing: it wrote the news as it came.
            return Ok(0);
        }
        let mut written = 0;
        for t in tickets {
            let Some(status) = self.server_standing(t) else {
                continue;
            };
            let there = self
                .ledger
                .written_status(&t.tid)
                .is_some_and(|w| w.hlc >= status.hlc);
            if !there {
                let taken = self.ledger.record_status(&status, "from the server");
                written += standing_taken(&t.tid, taken, changes)?;
            }
            self.ledger.release_held(&t.tid);
        }
        self.report_flags(events);
        Ok(written)
    }

    fn apply_server_news(
        &mut self,
        update: ServerUpdate,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Result<usize, NodeError> {
        let _ = self.ledger.take_newly_flagged();
        let mut written = 0;
        if self.ledger.is_signing() {
            for r in &update.revocations {
                match self.ledger.record_revocation(r) {
                    Ok(Some(change)) => {
                        tracing::warn!("device {} ({}) is revoked: {}", r.name, r.node, r.reason);
                        changes.push(change);
                        written += 1;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("a revocation from the server: {e}"),
                }
            }
            for cert in &update.certs {
                match self.ledger.learn_device(cert) {
                    Ok(change) => changes.extend(change),
                    Err(e) => tracing::warn!("a device certificate from the server: {e}"),
                }
            }
        }
        if let Some(l) = &update.lists {
            match self.ledger.record_lists(l, now_ms()) {
                Ok(Some(change)) => {
                    tracing::info!("the server released version {} of the lists", l.version);
                    changes.push(change);
                    written += 1;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("the check-in lists from the server: {e}"),
            }
        }
        self.guests.take(
            update.full,
            update
                .tickets
                .iter()
                .map(|t| (t.tid.clone(), t.guest.clone())),
        );
        if update.full {
            self.manifest = Some(update.tickets.iter().map(|t| t.tid.clone()).collect());
        } else if let Some(listed) = &mut self.manifest {
            listed.extend(update.tickets.iter().map(|t| t.tid.clone()));
        }
        for t in &update.tickets {
            let state = self.ledger.ticket(&t.tid);
            if state.standing() != t.standing
                && let Some(status) = self.server_standing(t)
            {
                let taken = if update.hold && self.ledger.is_signing() {
                    // Counts at once; one gate of the mesh writes it (`WriteStandings`).
                    self.ledger.hold_status(status).map(|()| None)
                } else {
                    self.ledger.record_status(&status, "from the server")
                };
                written += standing_taken(&t.tid, taken, changes)?;
            }
            let mut covered: HashSet<&RedemptionId> = state
                .resolutions
                .iter()
                .filter(|r| r.action == Action::Revert)
                .flat_map(|r| &r.covers)
                .collect();
            // The server's revert (on a flag, or of a ticket nobody flagged) is written below
            // as its decision: by a gate that checks signatures only as the server signed it.
            if let Some(d) = t.resolution.as_ref().filter(|d| {
                d.action == Action::Revert && (d.record.is_some() || !self.ledger.is_signing())
            }) {
                covered.extend(&d.covers);
            }
            let covers: Vec<RedemptionId> = t
                .reverted
                .iter()
                .filter(|id| !covered.contains(id))
                .cloned()
                .collect();
            if !covers.is_empty() && self.ledger.is_signing() {
                // A gate that checks signatures takes a revert only as the server's identity
                // signed it (the decision below, which covers every revert so far); it
                // writes none in the server's name.
                tracing::warn!(
                    "ticket {}: {} admissions reverted at the server came without a signed \
                     revert",
                    t.tid,
                    covers.len()
                );
            } else if !covers.is_empty() {
                let now = now_ms();
                let resolution = Resolution {
                    sig: None,
                    id: ResolutionId::random(),
                    tid: t.tid.clone(),
                    action: Action::Revert,
                    staff: "server".into(),
                    note: "reverted at the server".into(),
                    node: self.ledger.node().clone(),
                    at_ms: now,
                    hlc: self.ledger.tick(now),
                    covers,
                    from_server: true,
                };
                changes.extend(self.ledger.record_resolution(&resolution)?);
                written += 1;
            }
        }
        for t in &update.tickets {
            for r in &t.admissions {
                if !self.ledger.has_redemption(&r.tid, &r.id) {
                    written += self.relay(r, changes)?;
                }
            }
            let Some(decision) = &t.resolution else {
                continue;
            };
            let state = self.ledger.ticket(&t.tid);
            let known = state.resolutions.iter().any(|r| {
                r.action == decision.action && decision.covers.iter().all(|c| r.covers.contains(c))
            });
            if !known && !decision.covers.is_empty() && self.ledger.is_signing() {
                // Only as the server's identity signed it (a gate takes no decision in the
                // server's name that it cannot check).
                let Some(record) = decision.record.as_ref().filter(|r| {
                    r.tid == t.tid && r.action == decision.action && r.covers == decision.covers
                }) else {
                    tracing::warn!(
                        "the server's decision on ticket {} came without its signed record",
                        t.tid
                    );
                    continue;
                };
                match self.ledger.record_resolution(record) {
                    Ok(change) => {
                        changes.extend(change);
                        events.push(NodeEvent::Resolved {
                            tid: t.tid.clone(),
                            action: decision.action,
                            staff: decision.staff.clone(),
                        });
                        written += 1;
                    }
                    Err(gatemesh_ledger::LedgerError::Refused(why)) => {
                        tracing::warn!("the server's decision on ticket {}: {why}", t.tid);
                    }
                    Err(e) => return Err(e.into()),
                }
            } else if !known && !decision.covers.is_empty() {
                let now = now_ms();
                let resolution = Resolution {
                    sig: None,
                    id: ResolutionId::random(),
                    tid: t.tid.clone(),
                    action: decision.action,
                    staff: decision.staff.clone(),
                    note: decision.note.clone(),
                    node: self.ledger.node().clone(),
                    at_ms: now,
                    hlc: self.ledger.tick(now),
                    covers: decision.covers.clone(),
                    from_server: true,
                };
                changes.extend(self.ledger.record_resolution(&resolution)?);
                events.push(NodeEvent::Resolved {
                    tid: t.tid.clone(),
                    action: decision.action,
                    staff: decision.staff.clone(),
                });
                written += 1;
            }
        }
        for r in &update.learned {
            if !self.ledger.has_redemption(&r.tid, &r.id) {
                written += self.relay(r, changes)?;
            }
        }
        self.report_flags(events);
        Ok(written)
    }

    /// Writes another device's redemption that the server relayed; one that its writer did
    /// not sign (or whose writer's certificate did not come with it), or that breaks another
    /// rule a peer's record would meet, is left out, and said.
    fn relay(
        &mut self,
        r: &Redemption,
        changes: &mut Vec<StoredChange>,
    ) -> Result<usize, NodeError> {
        match self.ledger.record_relayed(r, now_ms()) {
            Ok(change) => {
                changes.extend(change);
                Ok(1)
            }
            Err(gatemesh_ledger::LedgerError::Refused(why)) => {
                tracing::warn!(
                    "left out redemption {} of ticket {} from the server: {why}",
                    r.id,
                    r.tid
                );
                Ok(0)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn resolve(
        &mut self,
        tid: TicketId,
        action: Action,
        staff: String,
        note: String,
        changes: &mut Vec<StoredChange>,
        events: &mut Vec<NodeEvent>,
    ) -> Result<Resolution, NodeError> {
        let state = self.ledger.ticket(&tid);
        let flagged: Vec<RedemptionId> = state.flagged().iter().map(|r| r.id.clone()).collect();
        let covers = match action {
            Action::Accept | Action::Deny if flagged.is_empty() => {
                return Err(NodeError::Conflict(format!("ticket {tid} is not flagged")));
            }
            Action::Accept | Action::Deny => flagged,
            // Revert also undoes a single mistaken admission.
            Action::Revert if flagged.is_empty() => {
                let all: Vec<RedemptionId> = state.effective().map(|r| r.id.clone()).collect();
                if all.is_empty() {
                    return Err(NodeError::Conflict(format!(
                        "ticket {tid} has no redemption to revert"
                    )));
                }
                all
            }
            Action::Revert => flagged,
        };
        let now = now_ms();
        let resolution = Resolution {
            sig: None,
            id: ResolutionId::random(),
            tid: tid.clone(),
            action,
            staff: staff.clone(),
            note,
            node: self.ledger.node().clone(),
            at_ms: now,
            hlc: self.ledger.tick(now),
            covers,
            from_server: false,
        };
        changes.extend(self.ledger.record_resolution(&resolution)?);
        events.push(NodeEvent::Resolved { tid, action, staff });
        Ok(resolution)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ASK_OTHER_WAIT, CATCH_UP_ANSWER, CATCH_UP_MOST, CATCH_UP_WAIT, CatchUp, CatchUpRelay,
        LATE_MS, LateAnswers, PACE_WINDOW, PART, PART_BUDGET, PART_FIRST, PART_LEAST, PART_MOST,
        Pace, RELAY_ASK_PAST, RELAY_ASK_STALE, RELAY_ASK_UNTIL, RedemptionId, next_part,
    };
    use gatemesh_ledger::Wants;
    use std::time::{Duration, Instant};

    #[test]
    fn a_quiet_writers_first_mark_after_the_quiet_keeps_what_it_held_before_relayable() {
        use std::time::Duration;
        let (t0, s) = (std::time::Instant::now(), Duration::from_secs);
        let mut marks = super::Marks::default();
        marks.mark_at(100, t0);
        // No batch for 15 s, then one (a peer connected as a partition healed), and a peer's
        // summary 50 ms later: the 100 changes held before the quiet are a second old.
        marks.mark_at(100, t0 + s(15));
        let summary = t0 + s(15) + Duration::from_millis(50);
        assert_eq!(
            marks.noted_before(summary),
            101,
            "none counted as a moment old"
        );
        marks.mark_at(150, t0 + s(15) + Duration::from_millis(500));
        assert_eq!(
            marks.noted_before(t0 + s(16)),
            101,
            "the 50 after are a moment old"
        );
        assert_eq!(marks.noted_before(t0 + s(17)), 151);
        // A busy writer keeps 10 s of marks (one every 100 ms) and the one before them.
        for i in 0..1_000u32 {
            marks.mark_at(
                200 + u64::from(i),
                t0 + s(20) + Duration::from_millis(100) * i,
            );
        }
        assert!(marks.0.len() <= 102, "{}", marks.0.len());
        let last = t0 + s(20) + Duration::from_millis(100) * 999;
        assert_eq!(marks.noted_before(last + s(1)), 200 + 999 + 1);
    }

    /// A gate that lacks a gap asks the first peer that has it to relay it all, the others
    /// for nothing meanwhile, and goes back to the usual relays once it lacks little.
    #[test]
    fn one_peer_is_asked_to_relay_a_gap_and_the_others_for_nothing_meanwhile() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let gap = Some(RELAY_ASK_PAST + 1);
        assert_eq!(r.wants("a", Some(RELAY_ASK_PAST), t0), Wants::Relays);
        assert_eq!(r.wants("a", None, t0), Wants::Nothing, "not known yet");
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        assert_eq!(r.wants("b", gap, t0), Wants::Nothing, "b has it too");
        assert_eq!(r.wants("c", Some(0), t0), Wants::Nothing);
        // A's relays come: the gap shrinks, and A is asked until little is left.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(r.wants("a", Some(RELAY_ASK_UNTIL + 1), t1), Wants::Gap);
        assert_eq!(r.wants("a", Some(RELAY_ASK_UNTIL), t1), Wants::Relays);
        assert_eq!(r.wants("b", Some(RELAY_ASK_UNTIL), t1), Wants::Relays);
        // Another gap: B is asked first this time; its connection ends, and A may be asked.
        assert_eq!(r.wants("b", gap, t1), Wants::Gap);
        assert_eq!(r.wants("a", gap, t1), Wants::Nothing);
        r.gone("b");
        assert_eq!(r.wants("a", gap, t1), Wants::Gap);
    }

    /// While a gate catches up a gap (asked of a peer, or about to be), it asks no peer by
    /// hash for what its pushes build on: that is in the gap, and each pusher would send it
    /// again. Before, and once it lacks little, it does.
    #[test]
    fn no_peer_is_asked_by_hash_while_a_gap_comes_by_relays() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let gap = Some(RELAY_ASK_PAST + 1);
        assert!(r.asks_by_hash([None, Some(0), Some(RELAY_ASK_PAST)]));
        assert!(!r.asks_by_hash([Some(0), gap]), "about to ask for the gap");
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        assert!(
            !r.asks_by_hash([Some(RELAY_ASK_PAST), Some(0)]),
            "asked of A"
        );
        assert_eq!(r.wants("a", Some(RELAY_ASK_UNTIL), t0), Wants::Relays);
        assert!(
            r.asks_by_hash([Some(RELAY_ASK_UNTIL), Some(0)]),
            "A sent it"
        );
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        r.gone("a");
        assert!(r.asks_by_hash([None]), "A went; B not asked yet");
    }

    /// A peer asked for a gap whose push is being checked ahead (off the writer) when the
    /// 10 s run out is not given up on: its news is on its way. A dishonest peer that keeps
    /// a push in the checks for good still has to send enough news a window
    /// ([`CATCH_UP_NEWS_LEAST`]), and a peer whose connection ended leaves nothing checked.
    #[test]
    fn the_peer_asked_for_a_gap_is_not_given_up_while_its_push_is_checked_ahead() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let gap = Some(RELAY_ASK_PAST + 1);
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        r.checking.lock().unwrap().insert("a".into());
        let stale = t0 + RELAY_ASK_STALE + Duration::from_millis(1);
        assert_eq!(
            r.wants("a", gap, stale),
            Wants::Gap,
            "A's push is being checked"
        );
        assert_eq!(r.wants("b", gap, stale), Wants::Nothing);
        // The writer takes it, and A sent nothing new since: now A rests.
        r.checked("a");
        assert_eq!(r.wants("a", gap, stale), Wants::Relays, "A rests");
        assert_eq!(r.wants("b", gap, stale), Wants::Gap);
        // B's push is in the checks, and B never sends news: the window ends it.
        r.checking.lock().unwrap().insert("b".into());
        let window = stale + CATCH_UP_MOST + Duration::from_millis(1);
        assert_eq!(
            r.wants("b", gap, window),
            Wants::Relays,
            "B trickled nothing"
        );
        r.gone("b");
        assert!(r.checking.lock().unwrap().is_empty());
    }

    /// A peer that catches up from this gate is asked for this gate's gap only when no other
    /// offers it: not at once, another may within `ASK_OTHER_WAIT`, and meanwhile it relays
    /// nothing. Asked, it answers only once this gate's relays to it ahead of the ask are
    /// taken (in a loaded bench heal, 13 s: the asker gave it up first).
    #[test]
    fn a_peer_that_catches_up_from_this_gate_is_asked_for_its_gap_only_if_no_other_offers_it() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let gap = Some(RELAY_ASK_PAST + 1);
        r.told("a", true);
        assert_eq!(
            r.wants("a", gap, t0),
            Wants::Nothing,
            "A catches up from here"
        );
        assert_eq!(r.wants("b", gap, t0), Wants::Gap, "B offers it too");
        assert_eq!(r.wants("a", gap, t0), Wants::Nothing, "B is the one");
        r.gone("b");
        // A alone offers it: asked once another had time to offer.
        let gone = t0 + Duration::from_millis(1);
        let later = gone + ASK_OTHER_WAIT;
        assert_eq!(r.wants("a", gap, gone), Wants::Nothing);
        assert_eq!(r.wants("a", gap, later), Wants::Gap, "no other offers it");
        // A no longer catches up from here, and the next catch-up asks it at once.
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        r.told("a", true);
        assert_eq!(r.wants("a", gap, t0), Wants::Nothing);
        r.told("a", false);
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        // A peer it waited on before, long ago, does not shorten the next wait.
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        r.told("a", true);
        assert_eq!(r.wants("a", gap, t0), Wants::Nothing);
        assert_eq!(
            r.wants("a", Some(0), t0),
            Wants::Relays,
            "caught up meanwhile"
        );
        let much_later = t0 + ASK_OTHER_WAIT * 10;
        assert_eq!(r.wants("a", gap, much_later), Wants::Nothing);
        assert_eq!(r.wants("a", gap, much_later + ASK_OTHER_WAIT), Wants::Gap);
    }

    /// The peer asked for a gap holds the others back while it sends what this gate lacks;
    /// one that sends nothing new (a dishonest peer that says it holds much, a stuck
    /// connection) only for [`RELAY_ASK_STALE`], and one that trickles for a window of
    /// [`CATCH_UP_MOST`]. Then it rests for [`CATCH_UP_MOST`], and another is asked.
    #[test]
    fn the_peer_asked_for_a_gap_stays_while_it_sends_and_rests_once_it_stalls_or_trickles() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let gap = Some(RELAY_ASK_PAST + 1);
        assert_eq!(r.wants("a", gap, t0), Wants::Gap);
        // A sends nothing new: B may be asked once A went stale.
        let stale = t0 + RELAY_ASK_STALE + Duration::from_millis(1);
        assert_eq!(r.wants("b", gap, t0 + RELAY_ASK_STALE), Wants::Nothing);
        assert_eq!(r.wants("a", gap, stale), Wants::Relays, "A rests");
        assert_eq!(r.wants("b", gap, stale), Wants::Gap);
        // B sends a part's worth of what this gate lacks every second: it stays the one past
        // the bound, however long the gap takes (each peer asked next sent again what the
        // one before had on its way).
        let mut t = stale;
        while t < stale + 2 * CATCH_UP_MOST {
            r.took("b", (PART, 0), t);
            assert_eq!(r.wants("b", gap, t), Wants::Gap);
            assert_eq!(r.wants("a", gap, t), Wants::Nothing);
            t += Duration::from_secs(1);
        }
        // Then it trickles, a change a second: it rests once a whole window passed with
        // fewer than CATCH_UP_NEWS_LEAST from it, and A, rested long enough, is asked.
        let trickle = t;
        let over = loop {
            assert!(t < trickle + 3 * CATCH_UP_MOST, "B never rests");
            r.took("b", (1, 0), t);
            if r.wants("b", gap, t) == Wants::Relays {
                break t;
            }
            assert_eq!(r.wants("a", gap, t), Wants::Nothing);
            t += Duration::from_secs(1);
        };
        assert!(over > trickle + CATCH_UP_MOST, "{:?}", over - trickle);
        assert_eq!(r.wants("a", gap, over), Wants::Gap, "A rested long enough");
        r.gone("a");
        assert_eq!(
            r.wants("b", gap, over + Duration::from_secs(1)),
            Wants::Relays
        );
        assert_eq!(r.wants("b", gap, over + CATCH_UP_MOST), Wants::Gap);
    }

    /// What the peer asked wrote itself keeps it the one while no other peer offers the gap
    /// (two gates, one back from a partition: the gap is the other's own admissions), and is
    /// no news once another does: a stolen device that writes records of its own as fast as
    /// it likes, and relays nothing of the gap, is given up on as its window of
    /// [`CATCH_UP_MOST`] ends with none of the others'. Sending, it is not given up on
    /// sooner ([`RELAY_ASK_STALE`]): an honest peer's answer starts with its own records.
    #[test]
    fn a_peers_own_changes_keep_it_asked_only_while_no_other_peer_offers_the_gap() {
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        let (gap, second) = (Some(RELAY_ASK_PAST + 1), Duration::from_secs(1));
        assert_eq!(r.wants("d", gap, t0), Wants::Gap);
        let mut t = t0;
        while t < t0 + 2 * CATCH_UP_MOST {
            t += second;
            r.took("d", (0, PART), t);
            assert_eq!(r.wants("d", gap, t), Wants::Gap, "{:?}", t - t0);
        }
        // H says it holds the gap too: D's own are no news from now on.
        assert_eq!(r.wants("h", gap, t), Wants::Nothing);
        let offered = t;
        while r.wants("d", gap, t) == Wants::Gap {
            assert!(
                t <= offered + 2 * CATCH_UP_MOST + second,
                "D is never given up on"
            );
            t += second;
            r.took("d", (0, PART), t);
        }
        assert!(
            t > offered + RELAY_ASK_STALE,
            "D sent every second: given up on as its window ended, {:?}",
            t - offered
        );
        assert_eq!(r.wants("h", gap, t), Wants::Gap, "H is asked");
        // What H relays of other writers is news from it; what D wrote was, of others', too.
        r.took("h", (PART, 0), t + RELAY_ASK_STALE);
        assert_eq!(r.wants("h", gap, t + RELAY_ASK_STALE + second), Wants::Gap);
        // Once H is gone, nobody else offers: its own keep the next one asked.
        let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
        assert_eq!(r.wants("d", gap, t0), Wants::Gap);
        assert_eq!(r.wants("h", gap, t0), Wants::Nothing);
        r.gone("h");
        r.took("d", (0, PART), t0 + RELAY_ASK_STALE);
        assert_eq!(r.wants("d", gap, t0 + RELAY_ASK_STALE + second), Wants::Gap);
    }

    /// A peer given up on while its parts still wait here: taking them is news from the one
    /// asked next, which has nothing to send but what they do not bring, and is not given
    /// up on for that. Once the gate lacks little, or the first peer's connection ended, it
    /// no longer is.
    #[test]
    fn parts_of_a_peer_asked_before_taken_now_are_news_from_the_one_asked_now() {
        let gap = Some(RELAY_ASK_PAST + 1);
        let ms = Duration::from_millis;
        // A is asked, sends nothing new for 10 s, and is given up on; B is asked.
        let given_up_on_a = || {
            let (mut r, t0) = (CatchUpRelay::default(), Instant::now());
            assert_eq!(r.wants("a", gap, t0), Wants::Gap);
            let t1 = t0 + RELAY_ASK_STALE + ms(1);
            assert_eq!(r.wants("a", gap, t1), Wants::Relays, "A given up on");
            assert_eq!(r.wants("b", gap, t1), Wants::Gap);
            (r, t1)
        };
        // For 15 s the gate takes A's parts, one every 5 s, and nothing of B's: B stays.
        let (mut r, t1) = given_up_on_a();
        let mut t = t1;
        while t < t1 + Duration::from_secs(15) {
            t += Duration::from_secs(5);
            r.took("a", (PART, 0), t);
            assert_eq!(r.wants("b", gap, t), Wants::Gap, "{:?}", t - t1);
            assert_eq!(r.wants("c", gap, t), Wants::Nothing);
        }
        // A stranger's parts are no news: B is given up on 10 s after A's last.
        r.took("c", (PART, 0), t + ms(5000));
        assert_eq!(r.wants("b", gap, t + RELAY_ASK_STALE), Wants::Gap);
        assert_eq!(
            r.wants("b", gap, t + RELAY_ASK_STALE + ms(1)),
            Wants::Relays,
            "B given up on"
        );
        // A's connection ended: what it sent went with it, and its parts are no news.
        let (mut r, t1) = given_up_on_a();
        r.gone("a");
        r.took("a", (PART, 0), t1 + ms(5000));
        assert_eq!(
            r.wants("b", gap, t1 + RELAY_ASK_STALE + ms(1)),
            Wants::Relays
        );
        // Once the gate lacked little, a catch-up is over: A's parts are no news to the next.
        let (mut r, t1) = given_up_on_a();
        assert_eq!(r.wants("b", Some(RELAY_ASK_UNTIL), t1), Wants::Relays);
        assert_eq!(r.wants("b", gap, t1), Wants::Gap);
        r.took("a", (PART, 0), t1 + ms(5000));
        assert_eq!(
            r.wants("b", gap, t1 + RELAY_ASK_STALE + ms(1)),
            Wants::Relays
        );
    }

    /// An entry answered late is kept, with how late, while the window after its answer
    /// lasts; one answered in time is not kept at all.
    #[test]
    fn late_answers_are_kept_for_the_window_after_the_answer() {
        let mut late = LateAnswers::default();
        let (quick, slow) = (RedemptionId::random(), RedemptionId::random());
        late.note(&quick, 1_000, 1_000 + LATE_MS - 1, 10_000);
        assert!(late.get().is_none());
        // Decided 15 s after its presentation, answered with its batch 3 s later still.
        late.decided(&slow, 1_000, 16_000, 10_000);
        assert_eq!(late.get().and_then(|l| l.get(&slow)), Some(&15_000));
        late.answered(19_000, 10_000);
        assert_eq!(late.get().and_then(|l| l.get(&slow)), Some(&18_000));
        // The decision's note runs out first; the answer's holds on.
        late.forget(28_000);
        assert!(
            late.get().is_some(),
            "the window after the answer still lasts"
        );
        late.forget(29_001);
        assert!(late.get().is_none());
        assert!(late.until.is_empty() && late.until_of.is_empty());
    }

    #[test]
    fn a_part_takes_what_fits_the_budget_at_the_last_ones_pace() {
        let ms = Duration::from_millis;
        // 128 changes in 400 ms (3 ms each, two busy cores): 16 fit 50 ms, at least 32.
        assert_eq!(next_part(PART_FIRST, PART_FIRST, ms(400)), PART_LEAST);
        // 128 in 100 ms: 64 fit.
        assert_eq!(next_part(PART_FIRST, PART_FIRST, ms(100)), 64);
        // Quick: at most twice the last, at most PART_MOST.
        assert_eq!(next_part(PART_FIRST, PART_FIRST, ms(1)), 2 * PART_FIRST);
        assert_eq!(next_part(PART_MOST, PART_MOST, Duration::ZERO), PART_MOST);
        assert_eq!(next_part(PART, PART, Duration::ZERO), PART_MOST);
        // Fewer taken than asked (the message's end): the pace is of those taken.
        assert_eq!(next_part(PART_MOST, 10, ms(5)), 100);
        assert_eq!(
            next_part(PART, 0, PART_BUDGET),
            PART_LEAST,
            "none taken: one budget's worth for nothing"
        );
    }

    const GAP: Option<usize> = Some(PART + 1);

    #[test]
    fn one_peer_is_asked_for_a_gap_the_others_once_it_is_done() {
        let (mut c, t0) = (CatchUp::default(), Instant::now());
        let idle = |_: &str| false;
        assert!(c.may_ask("north", GAP, idle, t0));
        assert!(!c.may_ask("south", GAP, idle, t0), "one peer at a time");
        assert!(
            !c.may_ask("east", None, idle, t0),
            "not known yet counts as a gap"
        );
        assert!(
            !c.may_ask("south", Some(PART), idle, t0),
            "a small gap waits too: it is mostly what north sends"
        );
        assert!(c.may_ask("north", Some(PART), idle, t0), "north's rest is");
        // North's large part keeps the others waiting; so does one still being taken.
        c.taken("north", t0 + CATCH_UP_WAIT);
        assert!(!c.may_ask("south", GAP, idle, t0 + CATCH_UP_WAIT * 3 / 2));
        let late = t0 + CATCH_UP_WAIT * 4;
        assert!(!c.may_ask("south", GAP, |p: &str| p == "north", late));
        assert!(
            c.may_ask("south", GAP, idle, late),
            "north went quiet: south is asked"
        );
        assert!(!c.may_ask("north", GAP, idle, late), "now south is the one");
    }

    #[test]
    fn the_pace_is_the_longest_batch_of_the_last_window_or_two() {
        let (pace, t0) = (Pace::default(), Instant::now());
        let ms = Duration::from_millis;
        assert_eq!(pace.lately(t0), Duration::ZERO, "no batch yet");
        pace.batch(ms(40), t0);
        pace.batch(ms(1_200), t0 + ms(100));
        pace.batch(ms(30), t0 + ms(200));
        assert_eq!(pace.lately(t0 + ms(300)), ms(1_200));
        // The next window: its own batches, and the one before's longest, count.
        pace.batch(ms(20), t0 + PACE_WINDOW);
        assert_eq!(pace.lately(t0 + PACE_WINDOW), ms(1_200));
        assert_eq!(
            pace.lately(t0 + PACE_WINDOW * 2),
            ms(20),
            "the slow window is two back"
        );
        assert_eq!(
            pace.lately(t0 + PACE_WINDOW * 3),
            Duration::ZERO,
            "idle since"
        );
        // After a quiet spell, the old windows are forgotten.
        pace.batch(ms(10), t0 + PACE_WINDOW * 4);
        assert_eq!(pace.lately(t0 + PACE_WINDOW * 4), ms(10));
    }

    #[test]
    fn the_one_peer_asked_holds_the_others_until_its_answer_comes() {
        let (mut c, t0) = (CatchUp::default(), Instant::now());
        let idle = |_: &str| false;
        assert!(c.may_ask("north", GAP, idle, t0));
        c.asked("north", t0);
        // Its answer is slow (it saves its ledger on a busy writer): no one else is asked.
        let slow = t0 + CATCH_UP_WAIT * 3;
        assert!(
            !c.may_ask("south", GAP, idle, slow),
            "north has not answered"
        );
        c.asked("south", slow);
        // The answer comes: the usual wait counts from then.
        c.heard("south", slow);
        assert!(!c.may_ask("south", GAP, idle, slow), "south is not the one");
        c.heard("north", slow);
        assert!(!c.may_ask("south", GAP, idle, slow + CATCH_UP_WAIT / 2));
        let after = slow + CATCH_UP_WAIT * 3 / 2;
        assert!(
            c.may_ask("south", GAP, idle, after),
            "north answered and went quiet"
        );

        // A peer that never answers holds the others for CATCH_UP_ANSWER at most.
        let (mut c, t0) = (CatchUp::default(), Instant::now());
        assert!(c.may_ask("north", GAP, idle, t0));
        c.asked("north", t0);
        assert!(!c.may_ask("south", GAP, idle, t0 + CATCH_UP_ANSWER / 2));
        assert!(c.may_ask("south", GAP, idle, t0 + CATCH_UP_ANSWER));

        // Nor does one whose connection ended.
        let (mut c, t0) = (CatchUp::default(), Instant::now());
        assert!(c.may_ask("north", GAP, idle, t0));
        c.asked("north", t0);
        c.gone("east");
        assert!(!c.may_ask("south", GAP, idle, t0));
        c.gone("north");
        assert!(c.may_ask("south", GAP, idle, t0), "north is gone");
        // Asking another (not the one) leaves nothing awaited.
        c.asked("east", t0);
        c.heard("south", t0 + CATCH_UP_WAIT);
        assert!(c.may_ask("east", GAP, idle, t0 + CATCH_UP_WAIT * 4));
    }

    #[test]
    fn a_peer_that_keeps_sending_large_parts_holds_the_others_back_for_a_while_only() {
        // A dishonest device sends a large message every second, forever.
        let (mut c, t0) = (CatchUp::default(), Instant::now());
        let idle = |_: &str| false;
        assert!(c.may_ask("rogue", GAP, idle, t0));
        let mut t = t0;
        while t < t0 + CATCH_UP_MOST {
            t += Duration::from_secs(1);
            c.taken("rogue", t);
            assert!(c.may_ask("rogue", GAP, idle, t));
            if t < t0 + CATCH_UP_MOST {
                assert!(!c.may_ask("north", GAP, idle, t));
            }
        }
        t += Duration::from_secs(1);
        c.taken("rogue", t);
        assert!(
            c.may_ask("north", GAP, idle, t),
            "held them long enough: north is asked"
        );
        // The rogue waits its turn: north's gap done, another honest peer comes next.
        let after = t + CATCH_UP_WAIT * 2;
        assert!(!c.may_ask("rogue", GAP, idle, after));
        assert!(c.may_ask("south", GAP, idle, after));
        assert!(c.may_ask("rogue", GAP, idle, t + CATCH_UP_MOST + CATCH_UP_WAIT * 3));
    }
}
