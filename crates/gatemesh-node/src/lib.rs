//! A running gate: it verifies scanned codes, decides in well under a millisecond with no
//! network, commits every admission to SQLite before answering, and serves a local HTTP API
//! that the desktop app, scanners and tests use.
//!
//! [`Node::start`] opens (or creates) the gate's data directory and starts the writer
//! thread that owns the ledger; [`api::serve`] serves it; [`Node::shutdown`] drains and
//! compacts. The mesh and the uplink plug in here in later steps.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use gatemesh_node::{Config, Node};
//! let config = Config::new("/var/lib/gatemesh/north-1".into(), "ROCK-2026".parse()?, "North 1".into());
//! let api = gatemesh_node::api::ApiConfig::for_data_dir(&config.data_dir)?;
//! let node = Node::start(config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7070").await?;
//! gatemesh_node::api::serve(listener, node.clone(), api, std::future::pending()).await?;
//! # Ok(()) }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
mod check_in;
pub mod edge;
pub mod forget;
mod gate;
mod guests;
mod ledger_file;
mod manifest;
pub mod pairing;
pub mod presented;
mod uplink;

use std::{
    fs::File,
    path::{Path, PathBuf},
    sync::Arc,
};

pub use check_in::{CheckIn, CheckInStatus, ListsSource};
pub use gate::{
    Counts, Ended, GateStats, NodeEvent, PeerLag, RELAY_ASK_UNTIL, Revocations, ScanResult,
    Snapshot,
};
use gatemesh_ledger::{
    Action, AuditEntry, Direction, Durability, Ledger, LedgerError, NodeId, Policy, Redemption,
    Resolution, Store, StoreError, TicketState,
};
use gatemesh_ticket::{EventId, Keyring, TicketId, Verifier};
pub use guests::{FoundGuest, Guest};
pub use ledger_file::{
    export_ledger_file, import_ledger_file, read_ledger_file, write_ledger_file,
};
pub use manifest::Manifest;
use tokio::sync::{broadcast, mpsc, oneshot};
pub use uplink::{PEER_GRACE, UplinkConfig, UplinkStatus};

/// Sync messages at least this long are parsed off the writer thread (a 100,000-redemption
/// catch-up is ~14 MB and takes a second to parse; a push is a few KB).
const PARSE_APART: usize = 256 * 1024;

/// Pushes from this many bytes (~50 changes) have their signatures checked off the writer
/// first ([`gatemesh_ledger::precheck_pushed`]): a gate's steady pushes are one change each,
/// a relay after a heal hundreds, which the writer verified between scans (~40 µs each on
/// a quiet core; 8 % of the writers in the 30 s after a 32-gate heal).
const PRECHECK_PUSH_FROM: usize = 32 * 1024;

/// Errors a caller of the node can see. Cloneable: one failed commit answers many requests.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the gate's storage failed: {0}")]
    Storage(String),
    #[error("the gate is shutting down")]
    Stopped,
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for NodeError {
    fn from(e: StoreError) -> Self {
        Self::Storage(e.to_string())
    }
}

impl From<LedgerError> for NodeError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Automerge(_) => Self::Storage(e.to_string()),
            _ => Self::BadInput(e.to_string()),
        }
    }
}

/// Refuses the first of `values` (named) that is not a label: 1-64 bytes of printable text.
fn labels(values: &[(&str, &str)]) -> Result<(), NodeError> {
    match values
        .iter()
        .find(|(_, value)| gatemesh_wire::Label::parse(value).is_none())
    {
        Some((what, _)) => Err(NodeError::BadInput(format!(
            "{what} must be 1-64 bytes of printable text"
        ))),
        None => Ok(()),
    }
}

/// How a gate is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub event: EventId,
    pub name: String,
    pub keyring: Keyring,
    pub manifest: Option<Manifest>,
    pub policy: Policy,
    pub durability: Durability,
    /// Seconds of clock skew forgiven on ticket validity times.
    pub leeway_s: u32,
    /// The device's mesh identity: the gate signs every record with its key, writes under
    /// the node id the key makes, and takes records from outside only as their writers
    /// signed them. Without one the gate works alone: its records stay unsigned, and it
    /// takes nothing from peers or files.
    pub identity: Option<gatemesh_mesh::pki::Identity>,
    /// The check-in lists this gate admits under (`gatemesh gate --list ID [--lists FILE]`):
    /// from the file until the server releases the event's lists, then the latest release.
    /// Without them every validly signed ticket of the event is taken, as before lists.
    pub check_in: Option<CheckIn>,
    /// Change rows kept before the store is compacted into one snapshot at the next moment
    /// the gate is idle (saved off the writer; past ten times as many, even under load).
    pub compact_after: i64,
}

impl Config {
    pub fn new(data_dir: PathBuf, event: EventId, name: String) -> Self {
        Self {
            data_dir,
            event,
            name,
            keyring: Keyring::default(),
            manifest: None,
            policy: Policy::default(),
            durability: Durability::default(),
            leeway_s: 60,
            identity: None,
            check_in: None,
            compact_after: gate::COMPACT_AFTER,
        }
    }
}

/// Who this node is.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeInfo {
    pub node_id: NodeId,
    pub name: String,
    pub event: EventId,
}

struct Shared {
    commands: mpsc::Sender<gate::Command>,
    verifier: Verifier,
    events: broadcast::Sender<NodeEvent>,
    info: NodeInfo,
    writer: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    changed: tokio::sync::watch::Receiver<u64>,
    /// The writer's own changes as it stores them, for the mesh sessions to push.
    pushes: broadcast::Sender<gatemesh_mesh::session::Pushed>,
    mesh: std::sync::Mutex<Option<gatemesh_mesh::session::Mesh>>,
    /// Set when the device's certificate names it an observer (a manager's laptop): it
    /// receives everything and may resolve flags, but admits no one.
    observer: std::sync::atomic::AtomicBool,
    /// The identity the gate signs with, if any; the mesh must use the same.
    identity: Option<gatemesh_mesh::pki::Identity>,
    data_dir: PathBuf,
    uplink: std::sync::Mutex<Option<Arc<uplink::Uplink>>>,
    /// The certificates the mesh refuses, as the ledger's revocations say.
    revoked: gatemesh_mesh::revoked::Revoked,
    /// The gate's check-in lists, when it has any.
    check_in: Arc<check_in::GateCheckIn>,
    /// The guests the server's manifest names (an event that lets gates find guests).
    guests: Arc<guests::Guests>,
    /// This gate's counts as its writer publishes them, for the mesh sessions to send.
    stats: tokio::sync::watch::Receiver<Arc<Vec<u8>>>,
    /// Peers whose large sync message is being parsed off the writer: the writer asks no
    /// other peer for a gap meanwhile ([`gate::CatchUp`]).
    arriving: gate::Arriving,
    /// Peers whose large push is being checked ahead, off the writer: the writer does not
    /// give up the peer it asked for a gap meanwhile ([`gate::CatchUpRelay`]).
    checking: gate::Arriving,
    /// Signatures found good: by the mesh's prechecks, and those the writer made or
    /// verified (`Ledger::share_vouched`).
    vouched: Arc<gatemesh_ledger::Vouched>,
    /// How long the writer's batches take lately ([`gate::Pace`]).
    pace: Arc<gate::Pace>,
    /// The answers of presentations scanners named ([`presented`]).
    presentations: presented::Presentations,
    _lock: File,
}

/// A handle on a running gate; cheap to clone.
#[derive(Clone)]
pub struct Node {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("info", &self.shared.info)
            .finish_non_exhaustive()
    }
}

/// The data directory's lock: one process at a time may own a gate's ledger. The directory
/// is made readable by its owner only.
pub fn lock_data_dir(dir: &Path) -> anyhow::Result<File> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // The ledger names staff and holds every redemption of the event: the operator's
    // alone, whoever else uses the laptop.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("making {} the operator's alone", dir.display()))?;
    }
    let path = dir.join("gate.lock");
    let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            anyhow::bail!("{} is in use by a running gate", dir.display())
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// The signer and trust of a device identity, for the ledger.
pub(crate) type Keys = Option<(gatemesh_ledger::Signer, gatemesh_ledger::Trust)>;

pub(crate) fn keys_of(
    identity: Option<&gatemesh_mesh::pki::Identity>,
    event: &EventId,
) -> anyhow::Result<Keys> {
    use anyhow::Context;
    identity
        .map(|id| {
            anyhow::ensure!(
                id.peer.event == event.as_str(),
                "the identity is for event {}, this gate checks in {}",
                id.peer.event,
                event
            );
            gatemesh_ledger::Signer::from_identity(id, event).context("the device identity")
        })
        .transpose()
}

pub(crate) fn open_ledger(
    dir: &Path,
    event: &EventId,
    durability: Durability,
    keys: Keys,
) -> anyhow::Result<(Store, Ledger)> {
    use anyhow::Context;
    let path = dir.join("ledger.sqlite");
    let mut store =
        Store::open(&path, durability).with_context(|| format!("opening {}", path.display()))?;
    let load = |store: &mut Store| -> anyhow::Result<Ledger> {
        let stored = store
            .load_or_init(event)
            .with_context(|| format!("reading {}", path.display()))?;
        Ledger::open(
            event,
            stored.node,
            &stored.genesis,
            stored.snapshot.as_deref(),
            stored.changes,
        )
        .with_context(|| format!("loading the ledger from {}", path.display()))
    };
    let mut ledger = load(&mut store)?;
    if let Some((signer, trust)) = keys {
        if ledger.node() != signer.node() {
            // A first identity, or a new one after pairing again: the node id is the key's.
            anyhow::ensure!(
                ledger.may_become(),
                "{} holds records this gate wrote without a mesh identity, which no other \
                 device would take; start the gate with this identity on a fresh data \
                 directory (export the old ledger first to keep it)",
                dir.display()
            );
            store.set_node(signer.node())?;
            ledger = load(&mut store)?;
        }
        ledger.sign_with(signer, trust)?;
    }
    Ok((store, ledger))
}

impl Node {
    /// Opens the gate's data directory (creating it on first start), restores its ledger
    /// exactly as it was, applies the manifest and starts the writer thread.
    pub fn start(config: Config) -> anyhow::Result<Self> {
        // Every redemption carries the name, and the server takes only what keeps the rule:
        // a gate must not start under a name its uplink could never send.
        anyhow::ensure!(
            gatemesh_wire::Label::parse(&config.name).is_some(),
            "the gate's name must be 1-64 bytes of printable text, not {:?}",
            config.name
        );
        // A lists file that cannot be checked in with stops the gate before it touches disk.
        let check_in = Arc::new(check_in::GateCheckIn::start(
            config.check_in.clone().unwrap_or_default(),
            &config.event,
        )?);
        let lock = lock_data_dir(&config.data_dir)?;
        let keys = keys_of(config.identity.as_ref(), &config.event)?;
        let (store, mut ledger) =
            open_ledger(&config.data_dir, &config.event, config.durability, keys)?;
        // What the writer signs and verifies, and what the mesh's prechecks found good.
        let vouched = Arc::new(gatemesh_ledger::Vouched::default());
        ledger.share_vouched(vouched.clone());
        let uncompacted = store.pending_changes()?;
        let (counts, refusals) = gate::tally_of(&store.tally()?);
        // The latest release of the lists the ledger holds replaces the file.
        check_in.follow(ledger.lists());
        let guests = Arc::new(guests::Guests::default());
        let (stats_tx, stats) = tokio::sync::watch::channel(Arc::new(Vec::new()));
        let info = NodeInfo {
            node_id: ledger.node().clone(),
            name: config.name.clone(),
            event: config.event.clone(),
        };
        let (events, _) = broadcast::channel(1024);
        let (changed, changed_rx) = tokio::sync::watch::channel(0u64);
        let (pushes, _) = broadcast::channel(gatemesh_mesh::session::PUSH_QUEUE);
        let revoked = gatemesh_mesh::revoked::Revoked::default();
        revoked.set(ledger.revoked_certs());
        let (commands, rx) = mpsc::channel(4096);
        let pace = Arc::new(gate::Pace::default());
        let mut writer = gate::Writer {
            ledger,
            store,
            store_path: config.data_dir.join("ledger.sqlite"),
            durability: config.durability,
            identity: config.identity.clone(),
            gate_name: config.name.clone(),
            policy: config.policy,
            check_in: check_in.clone(),
            guests: guests.clone(),
            manifest: None,
            counts,
            refusals,
            tally_dirty: false,
            late_answers: gate::LateAnswers::default(),
            pace: pace.clone(),
            stats: stats_tx,
            stats_published: None,
            events: events.clone(),
            uncompacted,
            peers: Default::default(),
            lag: Default::default(),
            changed,
            pushes: pushes.clone(),
            taking: Default::default(),
            catch_up: Default::default(),
            relay_from: Default::default(),
            vouched: vouched.clone(),
            part: gate::PART_FIRST,
            waiting_due: false,
            reload_after_commit: false,
            refused_waiting: Default::default(),
            ended: Default::default(),
            reload_pending: false,
            replacing: None,
            revoked: revoked.clone(),
            wake: commands.downgrade(),
            saving: false,
            generation: 0,
            stored_own: (0, 0),
            compact_after: config.compact_after.max(1),
            marks: gate::Marks::default(),
        };
        if let Some(manifest) = &config.manifest {
            writer.apply_manifest(manifest)?;
        }
        let arriving = writer.catch_up.arriving.clone();
        let checking = writer.relay_from.checking.clone();
        let handle = std::thread::Builder::new()
            .name("gate-writer".into())
            .spawn(move || writer.run(rx))?;
        let verifier = Verifier::new(config.keyring)
            .for_event(config.event)
            .with_leeway(config.leeway_s);
        Ok(Self {
            shared: Arc::new(Shared {
                commands,
                verifier,
                events,
                info,
                writer: std::sync::Mutex::new(Some(handle)),
                changed: changed_rx,
                pushes,
                mesh: std::sync::Mutex::new(None),
                observer: std::sync::atomic::AtomicBool::new(
                    config
                        .identity
                        .as_ref()
                        .is_some_and(|id| id.peer.role == gatemesh_mesh::identity::Role::Observer),
                ),
                identity: config.identity.clone(),
                data_dir: config.data_dir.clone(),
                uplink: std::sync::Mutex::new(None),
                revoked,
                check_in,
                guests,
                stats,
                arriving,
                checking,
                vouched,
                pace,
                presentations: Default::default(),
                _lock: lock,
            }),
        })
    }

    pub fn info(&self) -> &NodeInfo {
        &self.shared.info
    }

    pub fn subscribe(&self) -> broadcast::Receiver<NodeEvent> {
        self.shared.events.subscribe()
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, NodeError>>) -> gate::Command,
    ) -> Result<T, NodeError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .commands
            .send(make(tx))
            .await
            .map_err(|_| NodeError::Stopped)?;
        rx.await.map_err(|_| NodeError::Stopped)?
    }

    /// Decides one scan. The answer comes back only once an admission is on disk.
    pub async fn scan(
        &self,
        code: &str,
        scanner: &str,
        direction: Direction,
    ) -> Result<ScanResult, NodeError> {
        if self.is_observer() {
            return Err(NodeError::Conflict(
                "this device is an observer: it watches and resolves flags, it admits no one"
                    .into(),
            ));
        }
        labels(&[("scanner", scanner)])?;
        let now_ms = gate::now_ms();
        let verified = Box::new(self.shared.verifier.verify(code, now_ms / 1000));
        // Like the signature, the gate's lists are checked before the ledger: a ticket no list
        // of this gate admits now is refused whatever its history.
        let lists = match verified.as_ref() {
            Ok(v) => self
                .shared
                .check_in
                .check(v.claims.product.as_ref(), now_ms),
            Err(_) => None,
        };
        self.ask(|reply| gate::Command::Scan {
            verified,
            lists,
            scanner: scanner.to_owned(),
            direction,
            presented_ms: now_ms,
            manual: None,
            reply,
        })
        .await
    }

    /// Decides one scan of a presentation the scanner named (`presentation`: an id it sends
    /// again with each ask of one presentation, [`presented`]): the first ask is decided,
    /// and every ask of it gets that answer, also one that came while it was decided and
    /// one long after the repeat window. The decision goes on if the asking connection drops
    /// (the scanner gave up), so its retry gets it. Without an id, as [`Node::scan`].
    pub async fn scan_presented(
        &self,
        code: &str,
        scanner: &str,
        direction: Direction,
        presentation: Option<&str>,
    ) -> Result<ScanResult, NodeError> {
        let Some(id) = presentation else {
            return self.scan(code, scanner, direction).await;
        };
        labels(&[("presentation", id), ("scanner", scanner)])?;
        let asked = self.shared.presentations.ask(
            scanner,
            id,
            (code, direction),
            std::time::Instant::now(),
        )?;
        match asked {
            presented::Ask::Again(answer) => match presented::answer_of(answer).await {
                Some(result) => Ok(result),
                // Its first ask failed (nothing stored): this one decides.
                None => self.scan(code, scanner, direction).await,
            },
            presented::Ask::First(tx) => {
                let (node, code, scanner) = (self.clone(), code.to_owned(), scanner.to_owned());
                let deciding = tokio::spawn(async move {
                    let result = node.scan(&code, &scanner, direction).await;
                    presented::decided(tx, &result);
                    result
                });
                deciding
                    .await
                    .map_err(|e| NodeError::Internal(format!("deciding a scan: {e}")))?
            }
        }
    }

    /// Guests whose name or order contains `query`, or whose ticket id or seat starts with
    /// it (at most 20), each with whether and where they came in; `None` when this gate has no
    /// one to search (the event does not let gates find guests, or the manifest has not
    /// come since the gate started).
    pub async fn search_guests(&self, query: &str) -> Result<Option<Vec<FoundGuest>>, NodeError> {
        if self.shared.guests.is_empty() {
            return Ok(None);
        }
        let mut found = Vec::new();
        for guest in self.shared.guests.search(query) {
            let (state, _) = self.ticket(guest.tid.clone()).await?;
            found.push(FoundGuest::of(guest, &state));
        }
        Ok(Some(found))
    }

    /// Checks in a guest found by name (their code cannot be scanned): decided as a scan of
    /// their ticket would be, under the gate's lists, and, when admitted, recorded as a
    /// manual admission naming `staff`, with an audit line. Only a ticket the server's
    /// manifest names as a guest may be checked in this way.
    pub async fn check_in_guest(
        &self,
        tid: &TicketId,
        staff: &str,
        scanner: &str,
    ) -> Result<ScanResult, NodeError> {
        if self.is_observer() {
            return Err(NodeError::Conflict(
                "this device is an observer: it watches and resolves flags, it admits no one"
                    .into(),
            ));
        }
        labels(&[("staff", staff.trim()), ("scanner", scanner)])?;
        let Some(guest) = self.shared.guests.get(tid) else {
            return Err(NodeError::NotFound(format!(
                "no guest with ticket {tid} in the server's manifest (finding guests is the \
                 organizer's choice, and needs the uplink's manifest)"
            )));
        };
        let now_ms = gate::now_ms();
        let lists = self.shared.check_in.check(guest.product.as_ref(), now_ms);
        // The manifest's word on the ticket stands for its code: the server, over the
        // pinned uplink, said this ticket of this event exists.
        let verified = gatemesh_ticket::Verified {
            format: gatemesh_ticket::Format::Jwt,
            kid: gatemesh_ticket::KeyId::new("manifest")
                .map_err(|e| NodeError::Internal(e.to_string()))?,
            claims: gatemesh_ticket::Claims {
                tid: guest.tid.clone(),
                eid: self.shared.info.event.clone(),
                seat: guest
                    .seat
                    .as_deref()
                    .and_then(|s| gatemesh_ticket::Seat::new(s).ok()),
                iat: None,
                nbf: None,
                exp: None,
                product: guest.product.clone(),
            },
        };
        self.ask(|reply| gate::Command::Scan {
            verified: Box::new(Ok(verified)),
            lists,
            scanner: scanner.to_owned(),
            direction: Direction::Entry,
            presented_ms: now_ms,
            manual: Some(staff.trim().to_owned()),
            reply,
        })
        .await
    }

    /// The ticket's history and whether it is flagged.
    pub async fn ticket(&self, tid: TicketId) -> Result<(TicketState, bool), NodeError> {
        self.ask(|reply| gate::Command::Ticket { tid, reply }).await
    }

    pub async fn flags(&self) -> Result<Vec<(TicketId, TicketState)>, NodeError> {
        self.ask(|reply| gate::Command::Flags { reply }).await
    }

    pub async fn resolve(
        &self,
        tid: TicketId,
        action: Action,
        staff: &str,
        note: &str,
    ) -> Result<Resolution, NodeError> {
        // The wire's rules: what staff decide here reaches the server as it is.
        if gatemesh_wire::Label::parse(staff.trim()).is_none() {
            return Err(NodeError::BadInput(
                "staff must name who decides (1-64 bytes of printable text)".into(),
            ));
        }
        if gatemesh_wire::Note::parse(note).is_none() {
            return Err(NodeError::BadInput(format!(
                "a note is at most {} bytes of text",
                gatemesh_wire::Note::MAX
            )));
        }
        let (staff, note) = (staff.trim().to_owned(), note.to_owned());
        self.ask(|reply| gate::Command::Resolve {
            tid,
            action,
            staff,
            note,
            reply,
        })
        .await
    }

    pub async fn snapshot(&self) -> Result<Snapshot, NodeError> {
        self.ask(|reply| gate::Command::Snapshot { reply }).await
    }

    /// Every redemption and audit line. Reads and parses the whole ledger on the writer
    /// thread: for exports and tools, not for screens that refresh.
    pub async fn records(&self) -> Result<(Vec<Redemption>, Vec<AuditEntry>), NodeError> {
        self.ask(|reply| gate::Command::Records { reply }).await
    }

    /// Entries per gate over `minutes` windows of `minute_ms` from `first_ms`, and how many
    /// tickets have an entry: from the ledger's running tally, cheap at any ledger size.
    pub async fn activity(
        &self,
        first_ms: i64,
        minute_ms: i64,
        minutes: usize,
    ) -> Result<gatemesh_ledger::Activity, NodeError> {
        self.ask(|reply| gate::Command::Activity {
            first_ms,
            minute_ms,
            minutes,
            reply,
        })
        .await
    }

    /// The audit trail, oldest first.
    pub async fn audit(&self) -> Result<Vec<AuditEntry>, NodeError> {
        self.ask(|reply| gate::Command::Audit { reply }).await
    }

    /// The whole ledger as a saved document (for `gatemesh export`).
    pub async fn export_ledger(&self) -> Result<Vec<u8>, NodeError> {
        self.ask(|reply| gate::Command::ExportLedger { reply })
            .await
    }

    /// Merges another node's saved ledger; returns how many changes were new.
    pub async fn import_ledger(&self, bytes: Vec<u8>) -> Result<usize, NodeError> {
        self.ask(|reply| gate::Command::Import { bytes, reply })
            .await
    }

    /// Joins the event's mesh with this device identity: accepts peers on `config.bind`,
    /// dials `config.static_peers`, and syncs the ledger with every peer. Returns the bound
    /// address. Needs a tokio runtime.
    pub fn start_mesh(
        &self,
        config: gatemesh_mesh::session::MeshConfig,
    ) -> anyhow::Result<std::net::SocketAddr> {
        use anyhow::Context;
        let same = self
            .shared
            .identity
            .as_ref()
            .is_some_and(|own| own.creds.chain.first() == config.identity.creds.chain.first());
        anyhow::ensure!(
            same,
            "the mesh needs the identity the gate was started with (Config::identity): the gate \
             signs its records with it, and takes peers' records only as their writers signed them"
        );
        let (requests, mut rx) = mpsc::channel(256);
        let port = gatemesh_mesh::session::SyncPort {
            requests,
            pushes: self.shared.pushes.clone(),
            stats: self.shared.stats.clone(),
        };
        let mesh =
            gatemesh_mesh::session::Mesh::start_with(config, port, self.shared.revoked.clone())
                .context("starting the mesh")?;
        let addr = mesh.local_addr()?;
        let commands = self.shared.commands.clone();
        // A catch-up's signatures are checked as it is parsed, with the event's CA.
        let event = self.info().event.clone();
        let trust = keys_of(self.shared.identity.as_ref(), &event)?.map(|(_, trust)| trust);
        let trust = std::sync::Arc::new(trust.map(|t| (event, t)));
        // Shared by the mesh's prechecks and the writer: what one peer's message vouched for,
        // or the writer signed or verified, is not verified again when a peer (or the next
        // round) sends the same records.
        let vouched = self.shared.vouched.clone();
        let arriving = self.shared.arriving.clone();
        let checking = self.shared.checking.clone();
        let node = self.info().node_id.clone();
        let me = self.info().name.clone();
        tokio::spawn(async move {
            while let Some(request) = rx.recv().await {
                use gatemesh_mesh::session::SyncRequest;
                let command = match request {
                    // A large message (a catch-up: a whole ledger) is parsed off the writer,
                    // which decides scans meanwhile. Its session waits for the answer, so
                    // nothing else of that peer's overtakes it.
                    SyncRequest::Receive { peer, bytes, reply } if bytes.len() >= PARSE_APART => {
                        let (commands, trust, vouched, arriving, node) = (
                            commands.clone(),
                            trust.clone(),
                            vouched.clone(),
                            arriving.clone(),
                            node.clone(),
                        );
                        if let Ok(mut arriving) = arriving.lock() {
                            arriving.insert(peer.clone());
                        }
                        tokio::spawn(async move {
                            let from = peer.clone();
                            let parts = tokio::task::spawn_blocking(move || {
                                let mut parts = gatemesh_ledger::SyncInParts::parse(&bytes)?;
                                let began = std::time::Instant::now();
                                if let Some((event, trust)) = trust.as_ref() {
                                    parts.precheck(event, trust, &vouched);
                                    // A whole ledger (a catch-up) is checked and derived
                                    // here too, and taken in one step; one that fails a
                                    // check is left to the writer's parts to refuse.
                                    if let Err(e) =
                                        parts.prepare_whole(&node, event, trust, gate::now_ms())
                                    {
                                        tracing::info!(
                                            "the whole ledger from {from} goes in parts: {e}"
                                        );
                                    }
                                }
                                tracing::info!(
                                    "a sync message of {} bytes from {from}: {} changes, {} \
                                     signatures found good ahead and {} records vouched for \
                                     by their writers' seals, {} in {} ms",
                                    bytes.len(),
                                    parts.left(),
                                    parts.prechecked(),
                                    parts.sealed(),
                                    if parts.is_ready_whole() {
                                        "the whole ledger ready to take"
                                    } else {
                                        "to take in parts"
                                    },
                                    began.elapsed().as_millis()
                                );
                                Ok(parts)
                            })
                            .await;
                            match parts {
                                // The writer marks it parsed as it takes it.
                                Ok(parts) => {
                                    let parsed = gate::Command::SyncParsed {
                                        peer,
                                        parts,
                                        reply,
                                        rounds: 0,
                                    };
                                    let _ = commands.send(parsed).await;
                                }
                                Err(_) => {
                                    if let Ok(mut arriving) = arriving.lock() {
                                        arriving.remove(&peer);
                                    }
                                }
                            }
                        });
                        continue;
                    }
                    // A large push (a peer's relay after a heal: hundreds of changes) is
                    // read and has its signatures checked here first, off the writer,
                    // which then takes what was read and finds the signatures good. Its
                    // session waits for the answer, so nothing else of that peer's
                    // overtakes it.
                    SyncRequest::Push { peer, bytes, reply }
                        if bytes.len() >= PRECHECK_PUSH_FROM =>
                    {
                        let (commands, trust, vouched, checking) = (
                            commands.clone(),
                            trust.clone(),
                            vouched.clone(),
                            checking.clone(),
                        );
                        if let Ok(mut checking) = checking.lock() {
                            checking.insert(peer.clone());
                        }
                        let (push_peer, me) = (peer.clone(), me.clone());
                        tokio::spawn(async move {
                            let from = peer.clone();
                            let came = std::time::Instant::now();
                            let push = tokio::task::spawn_blocking(move || {
                                let began = std::time::Instant::now();
                                let size = bytes.len();
                                let push = match trust.as_ref() {
                                    Some((event, trust)) => gatemesh_ledger::PushAhead::check(
                                        bytes, event, trust, &vouched,
                                    ),
                                    None => gatemesh_ledger::PushAhead::unread(bytes),
                                };
                                // Where a gap's answer waits on a loaded gate: for a thread,
                                // in the check, then (the writer's log) for the writer.
                                tracing::debug!(
                                    "{me}: a push of {size} bytes from {push_peer}: {} \
                                     signatures found good ahead in {} ms, after {} ms waiting \
                                     for a thread",
                                    push.prechecked(),
                                    began.elapsed().as_millis(),
                                    began.duration_since(came).as_millis()
                                );
                                push
                            })
                            .await;
                            let sent = match push {
                                Ok(push) => {
                                    let push = gate::Command::PushAhead { peer, push, reply };
                                    commands.send(push).await.is_ok()
                                }
                                Err(_) => false,
                            };
                            // The writer clears it as it takes the push.
                            if !sent && let Ok(mut checking) = checking.lock() {
                                checking.remove(&from);
                            }
                        });
                        continue;
                    }
                    request => gate::Command::Sync(request),
                };
                if commands.send(command).await.is_err() {
                    return;
                }
            }
        });
        if let Ok(mut slot) = self.shared.mesh.lock() {
            *slot = Some(mesh);
        }
        Ok(addr)
    }

    /// Makes `lists` the check-in lists this gate checks (none: all of the event's), from
    /// its next scan. Refused, changing nothing, when the event has no such list.
    pub fn choose_lists(
        &self,
        lists: Vec<gatemesh_wire::ListId>,
    ) -> Result<Option<CheckInStatus>, NodeError> {
        self.shared
            .check_in
            .choose(lists)
            .map_err(|e| NodeError::BadInput(e.to_string()))?;
        Ok(self.check_in())
    }

    /// The event's check-in lists this gate could check (its file's or the server's latest
    /// release's): id, name, and whether it checks it now.
    pub fn event_lists(&self) -> Vec<(gatemesh_wire::ListId, String, bool)> {
        self.shared.check_in.available()
    }

    /// The gate's check-in lists as they stand (where they came from); `None` at a gate
    /// without lists.
    pub fn check_in(&self) -> Option<CheckInStatus> {
        self.shared.check_in.status()
    }

    /// Who is inside each of the gate's check-in lists now (the scope a holder entering now
    /// counts against), across every gate whose records this one holds; empty at a gate
    /// without lists.
    pub async fn occupancy(&self) -> Result<Vec<gatemesh_wire::ListOccupancy>, NodeError> {
        let Some(lists) = self.shared.check_in.lists() else {
            return Ok(Vec::new());
        };
        let at = gate::now_ms();
        let now = lists.scopes_at(at);
        let scopes = now
            .iter()
            .filter_map(|(list, s)| Some((s.clone()?, lists.everyone_out_ms(list, at))))
            .collect();
        let counts = self
            .ask(|reply| gate::Command::Inside { scopes, reply })
            .await?;
        let mut counts = counts.into_iter();
        Ok(now
            .into_iter()
            .map(|(list, scope)| {
                let inside = if scope.is_some() {
                    counts.next().unwrap_or(0)
                } else {
                    0
                };
                gatemesh_wire::ListOccupancy {
                    list: list.id.clone(),
                    name: list.name.clone(),
                    scope,
                    inside,
                    capacity: list.capacity,
                    level: gatemesh_wire::CapacityLevel::of(inside, list.capacity),
                }
            })
            .collect())
    }

    /// Peers, each with how many changes it lacks as far as it last told us, and how many
    /// it sent on its connection that were held here already.
    pub async fn peer_report(
        &self,
    ) -> Result<Vec<(gatemesh_mesh::session::PeerStatus, gate::PeerLag)>, NodeError> {
        let lag = self.ask(|reply| gate::Command::PeerLag { reply }).await?;
        Ok(self
            .peers()
            .into_iter()
            .map(|p| {
                let seen = lag.get(&p.name).copied().unwrap_or_default();
                (p, seen)
            })
            .collect())
    }

    /// Revoked devices, the records of theirs set aside, and whether this device itself is
    /// revoked (then its mesh syncs with no one).
    pub async fn revocations(&self) -> Result<Revocations, NodeError> {
        let mut report = self
            .ask(|reply| gate::Command::Revocations { reply })
            .await?;
        report.revoked |= self
            .shared
            .mesh
            .lock()
            .ok()
            .and_then(|m| m.as_ref().map(|m| m.self_revoked()))
            .unwrap_or(false);
        Ok(report)
    }

    /// Whether this device is an observer (by its mesh certificate).
    pub fn is_observer(&self) -> bool {
        self.shared
            .observer
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Peers of the mesh (empty without one).
    pub fn peers(&self) -> Vec<gatemesh_mesh::session::PeerStatus> {
        self.shared
            .mesh
            .lock()
            .ok()
            .and_then(|m| m.as_ref().map(|m| m.peers()))
            .unwrap_or_default()
    }

    /// Peers whose sync messages this gate refused (each lost its connection), the latest
    /// last (empty without a mesh).
    pub fn refusals(&self) -> Vec<gatemesh_mesh::session::Refusal> {
        self.shared
            .mesh
            .lock()
            .ok()
            .and_then(|m| m.as_ref().map(|m| m.refusals()))
            .unwrap_or_default()
    }

    /// Stops taking commands, lets the writer finish and compact, and waits for it.
    pub async fn shutdown(self) {
        let uplink = self.shared.uplink.lock().ok().and_then(|mut u| u.take());
        if let Some(uplink) = uplink {
            uplink.stop.send_replace(true);
        }
        let mesh = self.shared.mesh.lock().ok().and_then(|mut m| m.take());
        if let Some(mesh) = mesh {
            mesh.shutdown().await;
        }
        let _ = self.shared.commands.send(gate::Command::Shutdown).await;
        let handle = self.shared.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}
