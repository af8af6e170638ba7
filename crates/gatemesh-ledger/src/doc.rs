//! The event's ledger as one Automerge document: where its records sit is `layout.rs`;
//! every record is signed by the device that wrote it (`sign.rs`). A status is the latest of
//! its ticket's status records by HLC.
//!
//! Changes from outside (a peer, an imported file) are checked before they reach the
//! document: see `admit.rs`.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    panic::{AssertUnwindSafe, catch_unwind},
    sync::Arc,
};

use automerge::{
    ActorId, AutoCommit, Change, ChangeHash, ObjId, ObjType, Prop, ROOT, ReadDoc, ScalarValueRef,
    ValueRef, legacy, patches::PatchAction,
};
use gatemesh_ticket::{EventId, TicketId};
use serde::de::DeserializeOwned;

use crate::{
    layout::{
        FORMAT, Roots, Sharded, audit_key, check_roots, record_key, roots_of, status_key,
        ticket_of_key, ticket_prefix,
    },
    model::{
        AuditEntry, HlcClock, NodeId, Record, Redemption, RedemptionId, Resolution, Standing,
        Status,
    },
    sign::{Device, DeviceRecord, Signer, Trust},
    state::TicketState,
    tally::EntryTally,
};

/// Anything that stops a ledger from loading or taking outside data. None of them changes
/// the ledger.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// Bytes that do not load, a change that does not match its hash, a document without a
    /// ledger's root maps, or a panic inside automerge.
    #[error("the ledger data is damaged: {0}")]
    Corrupt(String),
    /// The document names another event.
    #[error("the ledger belongs to event {found:?}, not {expected}")]
    WrongEvent {
        /// The event of this ledger.
        expected: EventId,
        /// The event the document names.
        found: String,
    },
    /// The document lacks this event's genesis change: it was started somewhere else.
    #[error("the ledger was not started from this event's genesis")]
    ForeignGenesis,
    /// Automerge refused a change or an operation.
    #[error("the ledger document failed: {0}")]
    Automerge(#[from] automerge::AutomergeError),
    /// Refused before it reached the document.
    #[error("not ledger data (a sync message or a saved ledger): {0}")]
    BadMessage(String),
    /// A change breaks the ledger's rules (see the module docs): refused whole, before any
    /// of it reached the document.
    #[error("a change breaks the ledger's rules: {0}")]
    Refused(String),
    /// Compressed data (a compressed change, a document's compressed columns) that would
    /// inflate past `bound` bytes: refused while it is being inflated, before automerge
    /// sees any of it (see `admit.rs`).
    #[error("{what} that inflates past {bound} bytes")]
    TooLarge {
        /// What was compressed.
        what: String,
        /// The bound it passed.
        bound: usize,
    },
    /// A device identity that cannot sign or check records: a certificate the CA did not
    /// sign, a key that is not the certificate's.
    #[error("the device identity cannot be used: {0}")]
    Identity(String),
    /// A ledger of another layout version.
    #[error(
        "this ledger is of format {found}, this gatemesh keeps format {expected}: it was made \
         by another version of gatemesh (export what it holds with that version)"
    )]
    Format {
        /// The format this build keeps.
        expected: i64,
        /// The format the document names.
        found: i64,
    },
}

/// A change made or learned by this node, in the form storage keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChange {
    /// Automerge's hash of the change; checked against `bytes` on load.
    pub hash: [u8; 32],
    /// The change as Automerge encodes it.
    pub bytes: Vec<u8>,
}

impl From<&Change> for StoredChange {
    fn from(c: &Change) -> Self {
        Self {
            hash: c.hash().0,
            bytes: c.raw_bytes().to_vec(),
        }
    }
}

/// One node's replica of the event ledger.
#[derive(Debug)]
pub struct Ledger {
    doc: AutoCommit,
    event: EventId,
    genesis_heads: Vec<ChangeHash>,
    roots: Roots,
    node: NodeId,
    /// What this opening writes under (`authored::incarnation`): the node id and a fresh
    /// incarnation, so no other copy of this node's data writes under it.
    actor: ActorId,
    clock: HlcClock,
    flagged: BTreeSet<TicketId>,
    /// Tickets with staff resolutions under their keys (any writer's, set aside or not), by
    /// shard: what [`Ledger::resolutions_where`] reads, instead of every shard.
    resolved: BTreeSet<(usize, TicketId)>,
    /// Tickets that joined `flagged` since [`Ledger::take_newly_flagged`] last took them.
    newly_flagged: Vec<TicketId>,
    /// The standing of each ticket with a status in the document (or held), as last
    /// derived: what tells a new standing from one derived again. A few hundred entries at
    /// an event with as many refunds and transfers.
    standings: HashMap<TicketId, Standing>,
    /// Tickets whose standing changed since [`Ledger::take_newly_standing`] last took them.
    newly_standing: Vec<TicketId>,
    /// The server's signed statuses this gate heard from its uplink and holds before one
    /// gate of the mesh writes them ([`Ledger::hold_status`]): they count as if written.
    held: HashMap<TicketId, Status>,
    /// Entry scans per gate, kept with the flags (see [`Ledger::entry_tally`]).
    entries: EntryTally,
    /// Who is inside now, per check-in scope.
    occupancy: crate::tally::Occupancy,
    /// Every redemption this ledger holds, in the order it learned of them (see
    /// [`Ledger::arrivals`]), and their ids.
    arrivals: Vec<(TicketId, RedemptionId)>,
    /// Beside each of `arrivals`: its writer, as an index into `writers`.
    arrived_by: Vec<u32>,
    /// The writers of `arrivals`, each once, and their indexes.
    writers: (Vec<NodeId>, HashMap<NodeId, u32>),
    arrived: HashSet<RedemptionId>,
    /// Names this value of the ledger: positions in `arrivals` mean nothing to another.
    epoch: u64,
    /// Signs this node's records (a gate with no mesh identity writes them unsigned).
    signer: Option<Signer>,
    /// Checks every record from outside; without it, nothing from outside is taken.
    trust: Option<Trust>,
    /// Devices whose certificates this ledger holds and the CA vouches for.
    devices: HashMap<NodeId, Arc<Device>>,
    /// How many device records the document held when `devices` last took them all
    /// ([`Ledger::share_devices`]).
    devices_read: usize,
    /// How many redemptions each ticket has (all writers): lets the flood check skip
    /// reading a ticket's records when it is far from the bound.
    per_ticket: HashMap<TicketId, usize>,
    /// The sum of `per_ticket`: every redemption the document holds, counted without reading
    /// the redemptions map (its length is a walk of every key).
    redemptions_held: usize,
    /// Standings this node was told locally (a manifest file): they hold where no status in
    /// the document says otherwise, and are never written into it — a standing in the
    /// ledger is the server's, as it signed it.
    local: HashMap<TicketId, Status>,
    /// The revocations the document holds (see `revoke.rs`).
    revoked: crate::revoke::Revoked,
    /// Per ticket, the redemptions of revoked devices that do not count.
    set_aside: HashMap<TicketId, Vec<Redemption>>,
    /// The latest release of the check-in lists the document holds, and how many releases
    /// it held when it was read.
    lists: (Option<Arc<ReleasedLists>>, usize),
    /// What the changes this ledger made or took in since it was opened build on.
    deps: Deps,
    /// Where the signatures this ledger made or verified are kept, when its owner shares
    /// one with its prechecks ([`Ledger::share_vouched`]).
    vouched: Option<Arc<crate::admit::Vouched>>,
    /// The newest change of each writer this ledger holds (see `summary.rs`).
    tips: crate::summary::Summary,
    /// The changes it made or took most recently, to relay.
    recent: crate::summary::Recent,
    /// The changes it put in its sync messages, by where their bytes came from.
    served: SyncServed,
    /// How much of this node's own history its last seal left out (`seal.rs`).
    sealing: Sealing,
    /// The puts of this node's next change, not yet made ([`Ledger::commit_own`]).
    draft: Vec<legacy::Op>,
}

/// This node's own changes since its last seal (`seal.rs`), and when the first of them was
/// seen to be unsealed.
#[derive(Debug, Default, Clone, Copy)]
struct Sealing {
    unsealed: usize,
    since_ms: Option<i64>,
    /// Sealed at the next chance, whatever the count or time: a history written before
    /// changes were signed.
    at_once: bool,
}

/// A device whose certificate the ledger holds and the CA vouches for: from `devices`, or
/// read from the document's devices map (`roots`) and checked with `trust`, then kept in
/// `devices`. A free function so a caller can hold other parts of the ledger meanwhile.
fn known_device_in(
    (devices, doc, roots, trust): (
        &mut HashMap<NodeId, Arc<Device>>,
        &AutoCommit,
        &Roots,
        Option<&Trust>,
    ),
    node: &NodeId,
) -> Option<Arc<Device>> {
    if let Some(d) = devices.get(node) {
        return Some(d.clone());
    }
    let trust = trust?;
    let text = match doc.get(&roots.devices, node.as_str()) {
        Ok(Some((value, _))) => value.as_str().map(str::to_owned)?,
        _ => return None,
    };
    let device = Arc::new(parse::<DeviceRecord>(&text)?.device(trust).ok()?);
    devices.insert(node.clone(), device.clone());
    Some(device)
}

/// The name of the device that writes under `actor`, when it is a device [`known_device_in`]
/// finds.
fn writer_name_in(
    parts: (
        &mut HashMap<NodeId, Arc<Device>>,
        &AutoCommit,
        &Roots,
        Option<&Trust>,
    ),
    actor: &ActorId,
) -> Option<String> {
    let node = crate::authored::node_of(actor)?;
    known_device_in(parts, &node).map(|device| device.peer.name.clone())
}

/// What changes build on, by hash, for every change a ledger holds (read at open, noted as
/// it makes or takes in more): [`trim_sent`] walks back through them after every sync
/// message, and automerge 0.12 answers "what does this change build on" only by building
/// the change's whole metadata from its columns (a tenth of a busy gate's time in a
/// rehearsal at 8 gates). It also says whether a change is held, a lookup where automerge
/// allocates and walks its queue ([`Ledger::knows`]): a peer's change that waits for one it
/// builds on is looked at again with each push, by each peer's. Past [`DEPS_KEPT`] it starts
/// again, and a change not noted is asked of automerge.
#[derive(Debug, Default)]
struct Deps {
    of: HashMap<ChangeHash, Box<[ChangeHash]>>,
    /// It holds every change the document holds: a hash it lacks is not held.
    complete: bool,
    /// The highest operation counter of any change noted: this node's next change starts
    /// after it, as automerge's own would.
    max_op: u64,
}

/// Changes [`Deps`] notes before it starts again, empty (about 120 bytes each).
const DEPS_KEPT: usize = 1 << 19;

impl Deps {
    /// Every change of `doc`, and its newest per writer ([`crate::summary::Summary`]), in
    /// one pass over its change metadata.
    fn of(doc: &automerge::Automerge) -> (Self, crate::summary::Summary) {
        let metas = doc.get_changes_meta(&[]);
        let mut summary = crate::summary::Summary::default();
        let complete = metas.len() < DEPS_KEPT;
        let mut of = HashMap::with_capacity(if complete { metas.len() } else { 0 });
        let mut max_op = 0;
        for meta in metas {
            summary.note(&meta.actor, meta.seq, meta.hash);
            max_op = max_op.max(meta.max_op);
            if complete {
                of.insert(meta.hash, meta.deps.into_boxed_slice());
            }
        }
        (
            Self {
                of,
                complete,
                max_op,
            },
            summary,
        )
    }

    fn note(&mut self, change: &Change) {
        if self.of.len() >= DEPS_KEPT {
            self.of.clear();
            self.complete = false;
        }
        self.max_op = self.max_op.max(change.max_op());
        self.of.insert(change.hash(), change.deps().into());
    }

    /// Whether the change `hash` is held: `None` when only automerge can tell.
    fn holds(&self, hash: &ChangeHash) -> Option<bool> {
        if self.of.contains_key(hash) {
            Some(true)
        } else if self.complete {
            Some(false)
        } else {
            None
        }
    }

    /// Adds what `hash` builds on to `into`; `false` if `doc` does not hold it.
    fn extend(&self, doc: &mut AutoCommit, hash: &ChangeHash, into: &mut Vec<ChangeHash>) -> bool {
        if let Some(deps) = self.of.get(hash) {
            into.extend_from_slice(deps);
            return true;
        }
        match doc.get_change_meta_by_hash(hash) {
            Some(meta) => {
                into.extend(meta.deps);
                true
            }
            None => false,
        }
    }
}

/// The event's check-in lists as the server released them (see [`Ledger::lists`]).
#[derive(Debug)]
pub struct ReleasedLists {
    /// The record, as its writer signed it.
    pub record: crate::model::ListsRecord,
    /// Its lists, checked.
    pub lists: gatemesh_wire::Lists,
}

/// From this many tickets on, [`Ledger::refresh`] reads whole shards rather than seeking
/// each ticket's records: a seek costs about what reading a few hundred records does.
const BULK_REFRESH: usize = 2048;

/// One ticket's redemptions, resolutions and statuses as read from its shard.
type TicketRecords = (Vec<Redemption>, Vec<Resolution>, Vec<Status>);

/// Every ledger value gets its own epoch, so a position kept from one (a reloaded ledger
/// learns its records in another order) is never used with another.
static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Runs `f` on the document, turning a panic inside automerge (which crafted input can
/// cause) into an error.
fn guarded<T>(f: impl FnOnce() -> Result<T, LedgerError>) -> Result<T, LedgerError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(LedgerError::Corrupt(
            "the document engine refused the data".into(),
        ))
    })
}

fn meta_of(doc: &AutoCommit, field: &str) -> Result<automerge::Value<'static>, LedgerError> {
    let meta = match doc.get(ROOT, "meta")? {
        Some((automerge::Value::Object(ObjType::Map), id)) => id,
        _ => return Err(LedgerError::Corrupt("no meta map".into())),
    };
    match doc.get(&meta, field)? {
        Some((v, _)) => Ok(v.into_owned()),
        None => Err(LedgerError::Corrupt(format!("no meta.{field}"))),
    }
}

fn event_of(doc: &AutoCommit) -> Result<String, LedgerError> {
    meta_of(doc, "event")?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| LedgerError::Corrupt("meta.event is not text".into()))
}

/// Refuses a document of another layout version.
fn check_format(doc: &AutoCommit) -> Result<(), LedgerError> {
    let found = match meta_of(doc, "format")? {
        automerge::Value::Scalar(s) => match s.as_ref() {
            automerge::ScalarValue::Int(n) => *n,
            automerge::ScalarValue::Uint(n) => i64::try_from(*n).unwrap_or(i64::MAX),
            _ => return Err(LedgerError::Corrupt("meta.format is not a number".into())),
        },
        _ => return Err(LedgerError::Corrupt("meta.format is not a number".into())),
    };
    if found == FORMAT {
        Ok(())
    } else {
        Err(LedgerError::Format {
            expected: FORMAT,
            found,
        })
    }
}

/// An object as a change's operations name it.
fn legacy_obj(obj: &ObjId) -> legacy::ObjectId {
    match obj {
        ObjId::Root => legacy::ObjectId::Root,
        ObjId::Id(counter, actor, _) => legacy::ObjectId::Id(legacy::OpId::new(*counter, actor)),
    }
}

fn text<'a>(value: &'a ValueRef<'_>) -> Option<&'a str> {
    match value {
        ValueRef::Scalar(ScalarValueRef::Str(s)) => Some(s),
        _ => None,
    }
}

fn parse<T: DeserializeOwned>(value: &str) -> Option<T> {
    serde_json::from_str(value).ok()
}

impl Ledger {
    /// Opens the ledger of `event` for `node` from the genesis bytes, an optional compacted
    /// snapshot and the changes stored since.
    pub fn open(
        event: &EventId,
        node: NodeId,
        genesis_bytes: &[u8],
        snapshot: Option<&[u8]>,
        changes: impl IntoIterator<Item = StoredChange>,
    ) -> Result<Self, LedgerError> {
        guarded(|| {
            let genesis_doc =
                AutoCommit::load(genesis_bytes).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
            let mut genesis_doc = genesis_doc;
            let genesis_heads = genesis_doc.get_heads();
            let mut doc = match snapshot {
                Some(bytes) => crate::snapshot::load(bytes)?,
                None => genesis_doc,
            };
            let mut batch = Vec::new();
            for c in changes {
                let change =
                    Change::from_bytes(c.bytes).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
                if change.hash().0 != c.hash {
                    return Err(LedgerError::Corrupt(
                        "a stored change does not match its hash".into(),
                    ));
                }
                batch.push(change);
            }
            apply_in_steps(&mut doc, batch.clone())?;
            let mut ledger = Self::from_doc(doc, event, genesis_heads, node)?;
            // The rows stored since the last compaction are what a peer may lack of late.
            for change in &batch {
                ledger.recent.note(change);
            }
            Ok(ledger)
        })
    }

    fn from_doc(
        mut doc: AutoCommit,
        event: &EventId,
        genesis_heads: Vec<ChangeHash>,
        node: NodeId,
    ) -> Result<Self, LedgerError> {
        let actor = crate::authored::incarnation(&node);
        doc.set_actor(actor.clone());
        let found = event_of(&doc)?;
        if found != event.as_str() {
            return Err(LedgerError::WrongEvent {
                expected: event.clone(),
                found,
            });
        }
        check_format(&doc)?;
        if genesis_heads
            .iter()
            .any(|h| doc.get_change_by_hash(h).is_none())
        {
            return Err(LedgerError::ForeignGenesis);
        }
        let roots = roots_of(&doc)?;
        let mut ledger = Self {
            doc,
            event: event.clone(),
            genesis_heads,
            roots,
            clock: HlcClock::new(node.clone()),
            node,
            actor,
            flagged: BTreeSet::new(),
            resolved: BTreeSet::new(),
            newly_flagged: Vec::new(),
            standings: HashMap::new(),
            newly_standing: Vec::new(),
            held: HashMap::new(),
            entries: EntryTally::default(),
            occupancy: Default::default(),
            arrivals: Vec::new(),
            arrived_by: Vec::new(),
            writers: Default::default(),
            arrived: HashSet::new(),
            epoch: EPOCHS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            signer: None,
            trust: None,
            devices: HashMap::new(),
            devices_read: 0,
            per_ticket: HashMap::new(),
            redemptions_held: 0,
            local: HashMap::new(),
            revoked: Default::default(),
            set_aside: HashMap::new(),
            lists: (None, 0),
            deps: Deps::default(),
            vouched: None,
            tips: crate::summary::Summary::default(),
            recent: crate::summary::Recent::default(),
            served: SyncServed::default(),
            sealing: Sealing::default(),
            draft: Vec::new(),
        };
        (ledger.deps, ledger.tips) = Deps::of(ledger.doc.document());
        // What its own last change was: a seal (signed) leaves nothing to seal, so a restart
        // adds no seal line; anything else is sealed as usual. A history written before
        // changes were signed (`authored.rs`) reaches a peer only under this node's seal: it
        // is sealed with the first batch.
        if let Some(tip) = ledger.own_newest() {
            let last = ledger.doc.get_change_by_hash(&tip.hash);
            let signed = last.as_ref().is_some_and(crate::authored::is_signed);
            let sealed = signed && last.is_some_and(|c| ledger.is_own_seal(&c));
            ledger.sealing.unsealed = usize::from(!sealed);
            ledger.sealing.at_once = !signed;
        }
        ledger.revoked = ledger.read_revocations();
        ledger.reread_lists();
        let all: HashSet<TicketId> = ledger.all_tickets();
        ledger.refresh(all);
        // What a ledger holds when it opens is not news.
        ledger.newly_standing.clear();
        Ok(ledger)
    }

    /// The event of this ledger.
    pub fn event(&self) -> &EventId {
        &self.event
    }

    /// This node: its own changes are written under an actor that names it (with this
    /// opening's incarnation, `authored::incarnation`).
    pub fn node(&self) -> &NodeId {
        &self.node
    }

    /// How many changes this opening of the ledger wrote (its actor's newest number): what
    /// did not move it wrote nothing of this node's own.
    pub fn written(&self) -> u64 {
        self.tips.tip(&self.actor).map_or(0, |t| t.seq)
    }

    /// The actor this opening of the ledger writes its changes under: the node id and an
    /// incarnation of its own, fresh each time a ledger is opened.
    pub fn actor(&self) -> &ActorId {
        &self.actor
    }

    /// Every ticket with at least one record.
    fn all_tickets(&self) -> HashSet<TicketId> {
        let mut out = HashSet::new();
        let roots = &self.roots;
        let shards = roots.redemptions.all();
        for obj in shards
            .chain(roots.resolutions.all())
            .chain(roots.status.all())
        {
            out.extend(self.doc.keys(obj).filter_map(|key| ticket_of_key(&key)));
        }
        out
    }

    /// Re-derives the flag set and the entry tally for `tickets` and moves the clock past
    /// their records.
    fn refresh(&mut self, tickets: impl IntoIterator<Item = TicketId>) {
        let tickets: HashSet<TicketId> = tickets.into_iter().collect();
        if tickets.len() < BULK_REFRESH {
            for tid in tickets {
                let (redemptions, resolutions, statuses) = self.ticket_records(&tid);
                let resolved = !resolutions.is_empty();
                let written = !statuses.is_empty() || self.held.contains_key(&tid);
                let (state, set_aside) = self.parts_of(&tid, redemptions, resolutions, statuses);
                self.standing_derived(&tid, written.then_some(&state));
                self.derived(tid, (state, set_aside), resolved);
            }
            return;
        }
        // Many tickets (a catch-up, a reload): each shard read once, front to back, instead
        // of a seek per ticket and map.
        let mut by_shard: Vec<Vec<TicketId>> = vec![Vec::new(); crate::layout::SHARDS];
        for tid in tickets {
            by_shard[crate::layout::shard_of(&tid)].push(tid);
        }
        for (shard, tickets) in by_shard.into_iter().enumerate() {
            if tickets.is_empty() {
                continue;
            }
            let mut read = self.shard_records(shard);
            for tid in tickets {
                let (redemptions, resolutions, statuses) = read.remove(&tid).unwrap_or_default();
                let resolved = !resolutions.is_empty();
                let written = !statuses.is_empty() || self.held.contains_key(&tid);
                let (state, set_aside) = self.parts_of(&tid, redemptions, resolutions, statuses);
                self.standing_derived(&tid, written.then_some(&state));
                self.derived(tid, (state, set_aside), resolved);
            }
        }
    }

    /// The redemptions, resolutions and statuses of one shard, by ticket: what a ticket's
    /// flags, counts, tally and standing derive from (statuses are few: a shard's map of
    /// them is most often empty).
    fn shard_records(&self, shard: usize) -> HashMap<TicketId, TicketRecords> {
        fn read<T: DeserializeOwned>(
            doc: &AutoCommit,
            obj: &ObjId,
            mut put: impl FnMut(TicketId, T),
        ) {
            for item in doc.map_range(obj, ..) {
                if let (Some(tid), Some(record)) = (
                    ticket_of_key(&item.key),
                    text(&item.value).and_then(parse::<T>),
                ) {
                    put(tid, record);
                }
            }
        }
        let mut out: HashMap<TicketId, TicketRecords> = HashMap::new();
        let roots = &self.roots;
        read(&self.doc, roots.redemptions.shard(shard), |tid, r| {
            out.entry(tid).or_default().0.push(r)
        });
        read(&self.doc, roots.resolutions.shard(shard), |tid, r| {
            out.entry(tid).or_default().1.push(r)
        });
        read(&self.doc, roots.status.shard(shard), |tid, s| {
            out.entry(tid).or_default().2.push(s)
        });
        out
    }

    /// Keeps the standing of a ticket with statuses in the document or held (`state`, `None`
    /// when it has none), and notes the ticket in `newly_standing` when that standing changed:
    /// a refund, a void or a transfer taken from a peer or written here.
    fn standing_derived(&mut self, tid: &TicketId, state: Option<&TicketState>) {
        let Some(status) = state.and_then(|s| s.status.as_ref()) else {
            if self.standings.remove(tid).is_some() {
                // Its statuses were all set aside (their writer revoked): the local one,
                // if any, holds again.
                self.newly_standing.push(tid.clone());
            }
            return;
        };
        // News when the standing itself changed: the same standing written again (under
        // another clock) is not.
        if self.standings.get(tid) != Some(&status.standing) {
            self.standings.insert(tid.clone(), status.standing.clone());
            self.newly_standing.push(tid.clone());
        }
    }

    /// Keeps what was derived of one ticket: its entries, counts, arrivals, clock and flag,
    /// and whether records of staff's resolutions are under its keys (`resolved`).
    fn derived(
        &mut self,
        tid: TicketId,
        (state, set_aside): (TicketState, Vec<Redemption>),
        resolved: bool,
    ) {
        let at = (crate::layout::shard_of(&tid), tid);
        if resolved {
            if !self.resolved.contains(&at) {
                self.resolved.insert(at.clone());
            }
        } else {
            self.resolved.remove(&at);
        }
        let tid = at.1;
        self.entries.set(&tid, &state.redemptions);
        self.occupancy.set(&tid, &state);
        let held = state.redemptions.len() + set_aside.len();
        let before = self.per_ticket.insert(tid.clone(), held).unwrap_or(0);
        self.redemptions_held = self.redemptions_held + held - before;
        if set_aside.is_empty() {
            self.set_aside.remove(&tid);
        } else {
            self.set_aside.insert(tid.clone(), set_aside);
        }
        for r in &state.redemptions {
            if self.arrived.insert(r.id.clone()) {
                self.arrivals.push((tid.clone(), r.id.clone()));
                let (names, index) = &mut self.writers;
                let at = *index.entry(r.node.clone()).or_insert_with(|| {
                    names.push(r.node.clone());
                    u32::try_from(names.len() - 1).unwrap_or(u32::MAX)
                });
                self.arrived_by.push(at);
            }
        }
        for r in &state.redemptions {
            self.clock.observe(&r.hlc);
        }
        for r in &state.resolutions {
            self.clock.observe(&r.hlc);
        }
        if state.flagged().is_empty() {
            self.flagged.remove(&tid);
        } else if self.flagged.insert(tid.clone()) {
            self.newly_flagged.push(tid);
        }
    }

    fn records<T: DeserializeOwned>(&self, map: &Sharded, tid: &TicketId) -> Vec<T> {
        self.doc
            .map_range(map.of(tid), ticket_prefix(tid))
            .filter_map(|item| text(&item.value).and_then(parse))
            .collect()
    }

    /// Everything the ledger knows about one ticket that counts: records of revoked
    /// devices made from their cut on are left out (see [`Ledger::set_aside`]).
    pub fn ticket(&self, tid: &TicketId) -> TicketState {
        self.ticket_parts(tid).0
    }

    /// The ticket's records that count, and its redemptions set aside.
    fn ticket_parts(&self, tid: &TicketId) -> (TicketState, Vec<Redemption>) {
        let (redemptions, resolutions, statuses) = self.ticket_records(tid);
        self.parts_of(tid, redemptions, resolutions, statuses)
    }

    /// The records under the ticket's keys, each map's.
    fn ticket_records(&self, tid: &TicketId) -> (Vec<Redemption>, Vec<Resolution>, Vec<Status>) {
        (
            self.records(&self.roots.redemptions, tid),
            self.records(&self.roots.resolutions, tid),
            self.records(&self.roots.status, tid),
        )
    }

    /// [`Ledger::ticket_parts`] from the records under the ticket's keys.
    fn parts_of(
        &self,
        tid: &TicketId,
        mut redemptions: Vec<Redemption>,
        mut resolutions: Vec<Resolution>,
        statuses: Vec<Status>,
    ) -> (TicketState, Vec<Redemption>) {
        let revoked = &self.revoked;
        redemptions.retain(|r| &r.tid == tid);
        redemptions.sort_by(|a, b| a.hlc.cmp(&b.hlc));
        let (set_aside, redemptions): (Vec<Redemption>, Vec<Redemption>) = redemptions
            .into_iter()
            .partition(|r| revoked.sets_aside(&r.node, &r.hlc));
        resolutions.retain(|r| &r.tid == tid && !revoked.sets_aside(&r.node, &r.hlc));
        resolutions.sort_by(|a, b| a.hlc.cmp(&b.hlc));
        // Every status ever written stays; the latest by HLC wins (a held one among them); a
        // local standing holds where none was written.
        let status = self
            .winning_status(tid, statuses.into_iter().chain(self.held.get(tid).cloned()))
            .or_else(|| self.local.get(tid).cloned());
        (
            TicketState {
                redemptions,
                resolutions,
                status,
            },
            set_aside,
        )
    }

    fn read_revocations(&self) -> crate::revoke::Revoked {
        crate::revoke::Revoked::from_records(
            self.doc
                .map_range(&self.roots.revocations, ..)
                .filter_map(|item| text(&item.value).and_then(parse))
                .collect(),
        )
    }

    /// After the document changed from `before` to `after`: re-reads the revocations when
    /// new ones came (then every ticket is derived again), else the tickets touched.
    /// [`Ledger::refresh_after`] for changes whose checked operations named the tickets they
    /// touch: no diff of the document (which cost a fifth of a gate's time taking a peer's
    /// admission in, `gatemesh bench fanout`).
    fn refresh_touched(&mut self, touched: HashSet<TicketId>) {
        self.reread_lists();
        if !self.reread_revocations() {
            self.refresh(touched);
        }
    }

    fn refresh_after(&mut self, before: &[ChangeHash], after: &[ChangeHash]) {
        self.reread_lists();
        if !self.reread_revocations() {
            let roots = self.roots.clone();
            let touched = touched_tickets(&mut self.doc, &roots, before, after);
            self.refresh(touched);
        }
    }

    /// When the document holds revocations this ledger has not read yet: reads them and
    /// recomputes every ticket (whose records are set aside may change anywhere).
    fn reread_revocations(&mut self) -> bool {
        if self.doc.length(&self.roots.revocations) == self.revoked.records().len() {
            return false;
        }
        self.revoked = self.read_revocations();
        let all = self.all_tickets();
        self.refresh(all);
        true
    }

    /// When the document holds releases of the lists this ledger has not read: takes the
    /// latest (the highest version; of one version, the last writer in key order) that
    /// checks. Says whether the lists changed.
    fn reread_lists(&mut self) -> bool {
        let held = self.doc.length(&self.roots.lists);
        if held == self.lists.1 {
            return false;
        }
        // A handful of releases an event: read them all, the latest last.
        let releases: Vec<crate::model::ListsRecord> = self
            .doc
            .map_range(&self.roots.lists, ..)
            .filter_map(|item| text(&item.value).and_then(parse))
            .collect();
        let latest = releases.into_iter().rev().find_map(|record| {
            let lists = crate::admit::lists_rule(&record, &self.event).ok()?;
            Some(Arc::new(ReleasedLists { record, lists }))
        });
        let changed = latest.as_ref().map(|l| l.record.version)
            != self.lists.0.as_ref().map(|l| l.record.version);
        self.lists = (latest, held);
        changed
    }

    /// The event's check-in lists as the latest release the ledger holds says, if the server
    /// released any: what every gate of the event checks in with.
    pub fn lists(&self) -> Option<&Arc<ReleasedLists>> {
        self.lists.0.as_ref()
    }

    /// Writes a release of the check-in lists (from the server, as its identity signed it,
    /// the certificate learned first) into the ledger, so that it reaches every peer, with
    /// this node's audit line; nothing is written when the ledger holds it already. Refused
    /// ([`LedgerError::Refused`]) under the rules a peer's copy would meet: signed by the
    /// server, for this event, lists that check, dated at most
    /// [`crate::MAX_CLOCK_AHEAD_MS`] ahead of this node's time `now_ms`.
    pub fn record_lists(
        &mut self,
        l: &crate::model::ListsRecord,
        now_ms: i64,
    ) -> Result<Option<StoredChange>, LedgerError> {
        crate::admit::lists_rule(l, &self.event).map_err(LedgerError::Refused)?;
        let ahead = l.at_ms.max(l.hlc.wall_ms).saturating_sub(now_ms);
        if ahead > crate::MAX_CLOCK_AHEAD_MS {
            return Err(LedgerError::Refused(format!(
                "a release of the lists dated {} s ahead of this gate's clock",
                ahead / 1000
            )));
        }
        let key = crate::layout::lists_key(l);
        if self.doc.get(&self.roots.lists, key.as_str())?.is_some() {
            return Ok(None);
        }
        if self.trust.is_some() {
            let writer = self.known_device(&l.hlc.node);
            if !writer.is_some_and(|d| d.role() == crate::model::Role::Server) {
                return Err(LedgerError::Refused(format!(
                    "a release of the lists by node {}, which is not the event's server",
                    l.hlc.node
                )));
            }
        }
        self.draft.clear();
        self.put_record(self.roots.lists.clone(), key, l)?;
        let hlc = self.tick(now_ms);
        let audit = AuditEntry {
            at_ms: hlc.wall_ms,
            node: hlc.node.clone(),
            hlc,
            actor: l.by.clone(),
            action: "lists:released".into(),
            tid: None,
            detail: format!("version {}", l.version),
            sig: None,
        };
        self.put_audit(&audit)?;
        let change = self.commit_own()?;
        self.reread_lists();
        Ok(change)
    }

    /// Every revocation this ledger holds, in key order.
    pub fn revocations(&self) -> &[crate::revoke::Revocation] {
        self.revoked.records()
    }

    /// The SHA-256 of every revoked device certificate's DER: what the mesh refuses.
    pub fn revoked_certs(&self) -> &HashSet<[u8; 32]> {
        self.revoked.certs()
    }

    /// Whether this node's own certificate is revoked.
    pub fn own_revoked(&self) -> bool {
        self.own_device().is_some_and(|d| {
            let hash: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(&d.cert_der).into();
            self.revoked.certs().contains(&hash)
        })
    }

    /// The redemptions of revoked devices that do not count, by ticket: kept, and shown to
    /// staff.
    pub fn set_aside(&self) -> Vec<Redemption> {
        let mut out: Vec<Redemption> = self.set_aside.values().flatten().cloned().collect();
        out.sort_by(|a, b| a.hlc.cmp(&b.hlc));
        out
    }

    /// Writes a revocation the event's CA signed (from the server) into the ledger, so it
    /// spreads to every peer; nothing is written when the ledger holds it already. Refused
    /// when the CA did not sign it, or when this ledger has no CA to check it with.
    pub fn record_revocation(
        &mut self,
        r: &crate::revoke::Revocation,
    ) -> Result<Option<StoredChange>, LedgerError> {
        let trust = self.trust.as_ref().ok_or_else(|| {
            LedgerError::Identity("this ledger has no mesh CA to check revocations with".into())
        })?;
        trust.check_revocation(r).map_err(LedgerError::Refused)?;
        let key = r.key();
        if self
            .doc
            .get(&self.roots.revocations, key.as_str())?
            .is_some()
        {
            return Ok(None);
        }
        let json = serde_json::to_string(r).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        self.draft.clear();
        self.put_own_device()?;
        self.put(&self.roots.revocations.clone(), key, json);
        let change = self.commit_own()?;
        self.revoked = self.read_revocations();
        let all = self.all_tickets();
        self.refresh(all);
        Ok(change)
    }

    /// Who is inside now, per check-in scope, across every gate whose records are here.
    pub fn occupancy(&self) -> &crate::tally::Occupancy {
        &self.occupancy
    }

    /// Entry scans per gate, as every record this ledger holds says (kept current as
    /// records arrive, so reading it costs no document access).
    pub fn entry_tally(&self) -> &EntryTally {
        &self.entries
    }

    /// Tickets currently flagged, in ticket-id order.
    pub fn flagged(&self) -> impl Iterator<Item = &TicketId> {
        self.flagged.iter()
    }

    /// The tickets flagged since the last call that are flagged still, each once: what a
    /// caller tells its viewers after taking something in, at the cost of what changed
    /// (collecting every flag before and after cost a copy of them all per push).
    pub fn take_newly_flagged(&mut self) -> Vec<TicketId> {
        let mut newly = std::mem::take(&mut self.newly_flagged);
        let mut told = HashSet::new();
        newly.retain(|t| self.flagged.contains(t) && told.insert(t.clone()));
        newly
    }

    /// The tickets whose standing changed since the last call (a status taken from a peer
    /// or written here, after a refund, a void or a transfer), each once, with the standing
    /// that holds now: what a caller tells its viewers after taking something in. What the
    /// ledger held when it opened is not listed.
    pub fn take_newly_standing(&mut self) -> Vec<(TicketId, Standing)> {
        let newly = std::mem::take(&mut self.newly_standing);
        let mut told = HashSet::new();
        newly
            .into_iter()
            .filter(|t| told.insert(t.clone()))
            .map(|t| {
                let standing = self.ticket(&t).standing();
                (t, standing)
            })
            .collect()
    }

    /// Takes the standings this node was told locally (a manifest file, for an event with
    /// no server), replacing any told before: each holds for its ticket where no status in
    /// the document says otherwise. Nothing is written into the document.
    pub fn set_local_standings(&mut self, standings: impl IntoIterator<Item = Status>) {
        self.local = standings.into_iter().map(|s| (s.tid.clone(), s)).collect();
    }

    /// Holds the server's signed status `s` (from this gate's uplink) as if it were written,
    /// without writing it: every gate of the mesh hears the server at once, and if each
    /// wrote what it heard, one refund would be as many changes as there are gates (at 32
    /// gates, 80 refunds in ten seconds were 2,560 changes for every gate to take in). The
    /// gate decides by it now; one gate writes it ([`Ledger::record_status`]), and the others
    /// find it written when their turn comes ([`Ledger::written_status`],
    /// [`Ledger::release_held`]). A held status competes with those written by its clock.
    /// It is checked as one written would be: signed by a device of the event whose role
    /// sets standings, whose certificate the ledger holds; else refused, and nothing held.
    pub fn hold_status(&mut self, s: Status) -> Result<(), LedgerError> {
        self.check_theirs(&s)?;
        let newer = self.held.get(&s.tid).is_none_or(|held| held.hlc < s.hlc);
        if newer {
            let tid = s.tid.clone();
            self.held.insert(tid.clone(), s);
            self.refresh([tid]);
        }
        Ok(())
    }

    /// The ticket's winning status as written into the document (a held one aside).
    pub fn written_status(&self, tid: &TicketId) -> Option<Status> {
        self.winning_status(tid, self.records::<Status>(&self.roots.status, tid))
    }

    /// Of `statuses`, the latest by HLC of the ticket's that count (none of a revoked
    /// writer's from its cut on).
    fn winning_status(
        &self,
        tid: &TicketId,
        statuses: impl IntoIterator<Item = Status>,
    ) -> Option<Status> {
        statuses
            .into_iter()
            .filter(|s| &s.tid == tid && !self.revoked.sets_aside(&s.hlc.node, &s.hlc))
            .max_by(|a, b| a.hlc.cmp(&b.hlc))
    }

    /// Stops holding the ticket's status: it is written now, by this gate or another.
    pub fn release_held(&mut self, tid: &TicketId) {
        if self.held.remove(tid).is_some() {
            self.refresh([tid.clone()]);
        }
    }

    /// How many of the server's statuses this gate holds unwritten.
    pub fn held_statuses(&self) -> usize {
        self.held.len()
    }

    /// The standings this node was told locally (see [`Ledger::set_local_standings`]).
    pub fn local_standings(&self) -> Vec<Status> {
        self.local.values().cloned().collect()
    }

    /// A clock reading for a new local record.
    pub fn tick(&mut self, now_ms: i64) -> crate::model::Hlc {
        self.clock.tick(now_ms)
    }

    /// Signs this node's records from now on with `signer`, and checks everything from
    /// outside against `trust`. The signer is this node: a node id is derived from its key,
    /// so a ledger opened under another node id is refused.
    pub fn sign_with(&mut self, signer: Signer, trust: Trust) -> Result<(), LedgerError> {
        if signer.node() != &self.node {
            return Err(LedgerError::Identity(format!(
                "the device key makes node {}, this ledger is written as node {}",
                signer.node(),
                self.node
            )));
        }
        if trust.event() != &self.event {
            return Err(LedgerError::Identity(format!(
                "the mesh CA is for event {}, this ledger for {}",
                trust.event(),
                self.event
            )));
        }
        self.devices
            .insert(signer.node().clone(), signer.device().clone());
        self.signer = Some(signer);
        self.trust = Some(trust);
        Ok(())
    }

    /// Checks everything from outside against `trust`, writing nothing of its own signed: a
    /// replica that only reads (a tool, a check at the server).
    pub fn check_with(&mut self, trust: Trust) -> Result<(), LedgerError> {
        if trust.event() != &self.event {
            return Err(LedgerError::Identity(format!(
                "the mesh CA is for event {}, this ledger for {}",
                trust.event(),
                self.event
            )));
        }
        self.trust = Some(trust);
        Ok(())
    }

    /// Whether this ledger may be written under another node id from now on: none of its
    /// records is this node's unsigned work (which no other device would take). A gate that
    /// ran without an identity and wrote records cannot take one on.
    pub fn may_become(&self) -> bool {
        let signed = matches!(
            self.doc.get(&self.roots.devices, self.node.as_str()),
            Ok(Some(_))
        );
        signed
            || (!self.redemptions().iter().any(|r| r.node == self.node)
                && !self.audit().iter().any(|a| a.node == self.node))
    }

    /// Keeps in `vouched` the signatures this ledger makes and those of peers' records it
    /// verifies: the gate's prechecks of large messages then skip them. After a partition
    /// heals, the whole document a gate gets holds every record it already has (its own,
    /// and its side's, taken by push), half of what it would verify again.
    pub fn share_vouched(&mut self, vouched: Arc<crate::admit::Vouched>) {
        self.vouched = Some(vouched);
        self.share_devices();
    }

    /// Keeps the devices this ledger holds in the shared [`crate::admit::Vouched`]: a large
    /// message's precheck finds there the writers whose certificates it does not carry.
    /// Called wherever the devices can grow: changes taken, a ledger file merged, a whole
    /// ledger taken, a device learned.
    ///
    /// Every device the document holds, not only those whose records were checked since it
    /// was opened: after a heal the first relays of the other side's writers came before
    /// any of their changes had been taken, and their prechecks, finding no certificate,
    /// left each signature to the writer thread (29% of the changes of a 16-gate
    /// `bench heal`, whose gates had imported their ledgers).
    fn share_devices(&mut self) {
        let Some(trust) = &self.trust else {
            return;
        };
        let held = self.doc.length(&self.roots.devices);
        if held != self.devices_read {
            self.devices_read = held;
            for item in self.doc.map_range(&self.roots.devices, ..) {
                if self.devices.keys().any(|node| node.as_str() == item.key) {
                    continue;
                }
                let device = text(&item.value)
                    .and_then(|text| crate::admit::device_of(trust, &item.key, text).ok());
                if let Some(device) = device {
                    self.devices.insert(device.node.clone(), Arc::new(device));
                }
            }
        }
        if let Some(vouched) = &self.vouched {
            vouched.know_devices(trust, &self.devices);
        }
    }

    /// This node's device, when it signs.
    pub fn own_device(&self) -> Option<&Arc<Device>> {
        self.signer.as_ref().map(Signer::device)
    }

    /// Whether this ledger signs its records and checks others'.
    pub fn is_signing(&self) -> bool {
        self.signer.is_some()
    }

    /// A device whose certificate this ledger holds and the CA vouches for.
    fn known_device(&mut self, node: &NodeId) -> Option<Arc<Device>> {
        known_device_in(
            (
                &mut self.devices,
                &self.doc,
                &self.roots,
                self.trust.as_ref(),
            ),
            node,
        )
    }

    /// The certificate (DER) of a device whose records this ledger holds, when it holds it
    /// and the CA vouches for it.
    pub fn device_cert(&mut self, node: &NodeId) -> Option<Vec<u8>> {
        self.known_device(node).map(|d| d.cert_der.clone())
    }

    /// Puts a device's certificate (DER) into the ledger, so that records it signed can be
    /// checked by every replica; nothing is written when the ledger already holds it.
    /// Refused when the event's CA does not vouch for it.
    pub fn learn_device(&mut self, cert_der: &[u8]) -> Result<Option<StoredChange>, LedgerError> {
        let trust = self.trust.as_ref().ok_or_else(|| {
            LedgerError::Identity("this ledger has no mesh CA to check devices with".into())
        })?;
        let device = trust.device(cert_der).map_err(LedgerError::Refused)?;
        if self.known_device(&device.node).is_some() {
            return Ok(None);
        }
        let record = DeviceRecord::of(&device);
        let json =
            serde_json::to_string(&record).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        self.draft.clear();
        self.put_own_device()?;
        self.put(&self.roots.devices.clone(), device.node.as_str(), json);
        let change = self.commit_own()?;
        self.devices.insert(device.node.clone(), Arc::new(device));
        self.share_devices();
        Ok(change)
    }

    /// Checks another device's record as its writer must have signed it: refused when the
    /// ledger holds no certificate of that writer, or the signature or the role's rights do
    /// not hold.
    fn check_theirs<R: Record>(&mut self, record: &R) -> Result<(), LedgerError> {
        let writer = record.writer().clone();
        let device = self.known_device(&writer).ok_or_else(|| {
            LedgerError::Refused(format!(
                "a {} record of node {writer}, whose certificate this ledger does not hold",
                R::MAP
            ))
        })?;
        crate::admit::signed_by(record, &device, &self.event).map_err(LedgerError::Refused)
    }

    /// Writes a record under `key`: this node's own, signed when it has an identity; another
    /// device's (relayed by the server) only as its writer signed it, when this ledger
    /// checks signatures.
    fn put_record<R: Record>(
        &mut self,
        obj: ObjId,
        key: String,
        record: &R,
    ) -> Result<(), LedgerError> {
        let mut record = record.clone();
        if record.writer() == &self.node {
            if let Some(signer) = &self.signer {
                let unsigned = record
                    .unsigned_json()
                    .map_err(|e| LedgerError::Corrupt(e.to_string()))?;
                let message = crate::sign::message(&self.event, R::MAP, &unsigned);
                let sig = signer.sign(&message)?;
                if let Some(vouched) = &self.vouched {
                    vouched.keep(crate::sign::Checked::fact(signer.device(), &message, &sig));
                }
                *record.sig_mut() = Some(sig);
            }
        } else if self.trust.is_some() {
            self.check_theirs(&record)?;
        }
        let json =
            serde_json::to_string(&record).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        self.put_own_device()?;
        self.put(&obj, key, json);
        Ok(())
    }

    /// Puts this node's certificate into the document when it is not there yet, with the
    /// first thing it writes: every change from outside must be a known device's (its actor
    /// the node id of a certificate peers hold), whatever the change carries — its own
    /// records, another device's relayed, a revocation, a certificate it learned.
    fn put_own_device(&mut self) -> Result<(), LedgerError> {
        let Some(signer) = &self.signer else {
            return Ok(());
        };
        let devices = self.roots.devices.clone();
        if self.doc.get(&devices, self.node.as_str())?.is_none()
            && !self.drafted(&devices, self.node.as_str())
        {
            let own = DeviceRecord::of(signer.device());
            let json =
                serde_json::to_string(&own).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
            let node = self.node.as_str().to_owned();
            self.put(&devices, node, json);
        }
        Ok(())
    }

    /// Puts the text `value` under `key` of the map `obj` in this node's next change
    /// ([`Ledger::commit_own`]): a new key, overwriting nothing (`pred` empty), as peers
    /// require (`admit.rs`).
    fn put(&mut self, obj: &ObjId, key: impl Into<String>, value: String) {
        self.draft.push(legacy::Op {
            action: legacy::OpType::Put(automerge::ScalarValue::Str(value.into())),
            obj: legacy_obj(obj),
            key: legacy::Key::Map(key.into().into()),
            pred: Vec::new().into(),
            insert: false,
        });
    }

    /// Whether this node's next change puts `key` into `obj` already.
    fn drafted(&self, obj: &ObjId, key: &str) -> bool {
        let obj = legacy_obj(obj);
        self.draft
            .iter()
            .any(|op| op.obj == obj && matches!(&op.key, legacy::Key::Map(k) if k == key))
    }

    /// Makes this node's next change of the puts since the last one, signs it as its author
    /// (`authored.rs`) and applies it: the very change peers receive, byte for byte. `None`
    /// when nothing was put. Automerge's own transactions cannot be signed (their bytes are
    /// fixed only once committed), so the change is written whole here, as automerge would
    /// write it: the next sequence number of this node, every head (and this node's last
    /// change) as what it builds on, its operations numbered after the highest held.
    fn commit_own(&mut self) -> Result<Option<StoredChange>, LedgerError> {
        let ops = std::mem::take(&mut self.draft);
        if ops.is_empty() {
            return Ok(None);
        }
        let actor = self.actor.clone();
        let last = self.tips.tip(&actor).copied();
        let mut deps = self.doc.get_heads();
        if let Some(last) = last
            && !deps.contains(&last.hash)
        {
            deps.push(last.hash);
        }
        deps.sort_unstable();
        let draft = crate::authored::Draft {
            actor,
            seq: last.map_or(1, |t| t.seq + 1),
            start_op: std::num::NonZeroU64::MIN.saturating_add(self.deps.max_op),
            deps,
            time: 0,
            ops,
        };
        let change = crate::authored::sign(draft, &self.event, self.signer.as_ref())?;
        if let (Some(signer), Some(vouched)) = (&self.signer, &self.vouched) {
            // Sent back by a peer (in a catch-up, after a heal), it is not verified again.
            vouched.keep(crate::sign::Checked::change_fact(
                signer.device(),
                &change.hash(),
            ));
        }
        let doc = &mut self.doc;
        guarded(|| {
            doc.apply_changes([change.clone()])
                .map_err(LedgerError::from)
        })?;
        self.note(&change);
        self.sealing.unsealed += 1;
        Ok(Some(StoredChange::from(&change)))
    }

    /// [`Ledger::commit_own`], then the ticket's state read again.
    fn commit(&mut self, tid: &TicketId) -> Result<Option<StoredChange>, LedgerError> {
        let change = self.commit_own()?;
        self.refresh([tid.clone()]);
        Ok(change)
    }

    /// A change this ledger made or took: what it builds on is noted for [`trim_sent`], its
    /// writer's newest change for the summary, and its bytes for relays.
    fn note(&mut self, change: &Change) {
        self.deps.note(change);
        self.tips
            .note(change.actor_id(), change.seq(), change.hash());
        self.recent.note(change);
    }

    /// This node's newest change: this opening's last, or before it writes, the newest of
    /// those it wrote under earlier incarnations (the most operations counted: each builds on
    /// what the node held, so a later one counts past an earlier one).
    fn own_newest(&self) -> Option<crate::summary::Tip> {
        if let Some(tip) = self.tips.tip(&self.actor) {
            return Some(*tip);
        }
        self.tips
            .tips()
            .filter(|(actor, _)| crate::authored::node_of(actor).as_ref() == Some(&self.node))
            .filter_map(|(_, tip)| Some((self.doc.get_change_by_hash(&tip.hash)?.max_op(), *tip)))
            .max_by_key(|(max_op, _)| *max_op)
            .map(|(_, tip)| tip)
    }

    /// Whether `change` is a seal of this node's own: its one put an audit line of this
    /// node's with the seal's action.
    fn is_own_seal(&self, change: &Change) -> bool {
        let expanded = change.decode();
        let [op] = &expanded.operations[..] else {
            return false;
        };
        let legacy::OpType::Put(automerge::ScalarValue::Str(text)) = &op.action else {
            return false;
        };
        self.roots
            .place(&op.obj)
            .is_some_and(|p| p.map == crate::layout::Map::Audit)
            && parse::<AuditEntry>(text).is_some_and(|a| {
                a.action == crate::seal::ACTION && a.tid.is_none() && a.node == self.node
            })
    }

    /// Seals this node's history when it is due (`seal.rs`): [`crate::SEAL_EVERY`] changes
    /// of its own since its last seal, or [`crate::SEAL_AFTER_MS`] since the first of them
    /// was seen at `now_ms`. Returns the seal's change, to store with the batch.
    pub fn seal_if_due(&mut self, now_ms: i64) -> Result<Option<StoredChange>, LedgerError> {
        let Sealing {
            unsealed,
            since_ms,
            at_once,
        } = &mut self.sealing;
        if *unsealed == 0 || self.signer.is_none() {
            return Ok(None);
        }
        let since = *since_ms.get_or_insert(now_ms);
        if !*at_once
            && *unsealed < crate::seal::SEAL_EVERY
            && now_ms - since < crate::seal::SEAL_AFTER_MS
        {
            return Ok(None);
        }
        self.seal(now_ms)
    }

    /// Seals this node's history now: an audit line of its own, signed like every record,
    /// naming its newest change, whose hash links back to every change it wrote before
    /// (`seal.rs`). A peer that takes this node's history with the seal takes this node's
    /// records in it without verifying their signatures one by one. Nothing when the node
    /// has no identity to sign with or has written nothing.
    pub fn seal(&mut self, now_ms: i64) -> Result<Option<StoredChange>, LedgerError> {
        self.draft.clear();
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let Some(newest) = self.own_newest().map(|t| t.hash) else {
            return Ok(None);
        };
        let actor = signer.device().peer.name.to_string();
        // An audit line is never overwritten (peers refuse that): after a restart the clock
        // reads only ticket records again, so a clock set back could meet an earlier line.
        let mut hlc = self.tick(now_ms);
        while self.doc.get(&self.roots.audit, audit_key(&hlc))?.is_some() {
            hlc = self.tick(now_ms);
        }
        let audit = AuditEntry {
            at_ms: now_ms,
            node: hlc.node.clone(),
            hlc,
            actor,
            action: crate::seal::ACTION.into(),
            tid: None,
            detail: crate::seal::detail(&newest),
            sig: None,
        };
        self.put_audit(&audit)?;
        let change = self.commit_own()?;
        self.sealing = Sealing::default();
        Ok(change)
    }

    /// Writes a redemption; returns the change to store before anyone is told.
    pub fn record_redemption(
        &mut self,
        r: &Redemption,
    ) -> Result<Option<StoredChange>, LedgerError> {
        self.draft.clear();
        self.put_record(
            self.roots.redemptions.of(&r.tid).clone(),
            record_key(&r.tid, r.id.as_str()),
            r,
        )?;
        self.commit(&r.tid)
    }

    /// Writes a guest's admission without their code (found by name or order): the
    /// redemption, whose `manual` names the staff member who checked them in, and this
    /// node's audit line for it, in one change. Refused when the redemption names no one.
    pub fn record_manual(&mut self, r: &Redemption) -> Result<Option<StoredChange>, LedgerError> {
        self.draft.clear();
        let Some(staff) = r.manual.clone() else {
            return Err(LedgerError::Refused(
                "a manual admission names the staff member who made it".into(),
            ));
        };
        self.put_record(
            self.roots.redemptions.of(&r.tid).clone(),
            record_key(&r.tid, r.id.as_str()),
            r,
        )?;
        let hlc = self.tick(r.at_ms);
        let audit = AuditEntry {
            at_ms: r.at_ms,
            node: hlc.node.clone(),
            hlc,
            actor: staff,
            action: "checkin:manual".into(),
            tid: Some(r.tid.clone()),
            detail: format!(
                "admission {} at {} without the code (the guest found by name or order)",
                r.id, r.gate
            ),
            sig: None,
        };
        self.put_audit(&audit)?;
        self.commit(&r.tid)
    }

    /// Writes another device's redemption that reached this node outside the mesh (relayed
    /// by the server) under the rules a peer's would meet (`admit.rs`), so that this node
    /// never holds what its peers must refuse from it: signed by its writer, dated at most
    /// [`crate::MAX_CLOCK_AHEAD_MS`] ahead of this node's time `now_ms`, and at most
    /// [`crate::MAX_PER_TICKET`] of its writer for its ticket. Refused with
    /// [`LedgerError::Refused`] otherwise.
    pub fn record_relayed(
        &mut self,
        r: &Redemption,
        now_ms: i64,
    ) -> Result<Option<StoredChange>, LedgerError> {
        let ahead = r.at_ms.max(r.hlc.wall_ms).saturating_sub(now_ms);
        if ahead > crate::MAX_CLOCK_AHEAD_MS {
            return Err(LedgerError::Refused(format!(
                "a redemptions record dated {} s ahead of this gate's clock",
                ahead / 1000
            )));
        }
        if self.per_ticket.get(&r.tid).copied().unwrap_or(0) >= crate::MAX_PER_TICKET {
            let writers = self
                .doc
                .map_range(self.roots.redemptions.of(&r.tid), ticket_prefix(&r.tid))
                .filter_map(|item| text(&item.value).and_then(parse::<Redemption>))
                .filter(|held| held.node == r.node)
                .count();
            if writers >= crate::MAX_PER_TICKET {
                return Err(LedgerError::Refused(format!(
                    "node {} writes more than {} redemptions of ticket {}",
                    r.node,
                    crate::MAX_PER_TICKET,
                    r.tid
                )));
            }
        }
        self.record_redemption(r)
    }

    /// Writes a staff resolution and its audit line.
    pub fn record_resolution(
        &mut self,
        r: &Resolution,
    ) -> Result<Option<StoredChange>, LedgerError> {
        self.draft.clear();
        self.put_record(
            self.roots.resolutions.of(&r.tid).clone(),
            record_key(&r.tid, r.id.as_str()),
            r,
        )?;
        // Another's decision (the server's, as it signed it): the audit line that says this
        // node took it is this node's own.
        let hlc = if r.node == self.node {
            r.hlc.clone()
        } else {
            self.tick(r.at_ms)
        };
        let audit = AuditEntry {
            at_ms: if r.node == self.node {
                r.at_ms
            } else {
                hlc.wall_ms
            },
            node: hlc.node.clone(),
            hlc,
            actor: r.staff.clone(),
            action: format!("resolve:{}", r.action.as_str()),
            tid: Some(r.tid.clone()),
            detail: format!(
                "{} (covers {})",
                r.note,
                r.covers
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            sig: None,
        };
        self.put_audit(&audit)?;
        self.commit(&r.tid)
    }

    /// Writes a ticket's standing (void, transfer, reactivation) and its audit line. On a
    /// node with a mesh identity a standing is the server's, written as its identity signed
    /// it (its certificate learned first, see [`Ledger::learn_device`]); the audit line that
    /// says this node took it is this node's own.
    pub fn record_status(
        &mut self,
        s: &Status,
        detail: &str,
    ) -> Result<Option<StoredChange>, LedgerError> {
        self.draft.clear();
        self.put_record(self.roots.status.of(&s.tid).clone(), status_key(s), s)?;
        let action = match &s.standing {
            crate::model::Standing::Active => "status:active",
            crate::model::Standing::Void { .. } => "status:void",
            crate::model::Standing::Transferred { .. } => "status:transferred",
        };
        let hlc = if s.hlc.node == self.node {
            s.hlc.clone()
        } else {
            // This node's reading, no earlier than the standing's.
            self.tick(s.at_ms)
        };
        let audit = AuditEntry {
            at_ms: hlc.wall_ms,
            node: hlc.node.clone(),
            hlc,
            actor: s.by.clone(),
            action: action.into(),
            tid: Some(s.tid.clone()),
            detail: detail.into(),
            sig: None,
        };
        self.put_audit(&audit)?;
        self.commit(&s.tid)
    }

    fn put_audit(&mut self, a: &AuditEntry) -> Result<(), LedgerError> {
        self.put_record(self.roots.audit.clone(), audit_key(&a.hlc), a)
    }

    /// The audit trail, oldest first.
    pub fn audit(&self) -> Vec<AuditEntry> {
        self.doc
            .map_range(&self.roots.audit, ..)
            .filter_map(|item| text(&item.value).and_then(parse))
            .collect()
    }

    /// Number of redemptions recorded, reverted ones included.
    pub fn redemption_count(&self) -> usize {
        debug_assert_eq!(
            self.redemptions_held,
            self.roots
                .redemptions
                .all()
                .map(|shard| self.doc.length(shard))
                .sum::<usize>()
        );
        self.redemptions_held
    }

    /// Every resolution that passes `keep`, shard by shard and ticket by ticket (in the same
    /// order on every replica that holds the same records). Reads only the tickets that
    /// have resolutions: the uplink asks a few times a second, and reading all 256 shards
    /// of the map cost half a millisecond of the writer each time, a tenth of its time at a
    /// 32-gate rehearsal.
    pub fn resolutions_where(&self, mut keep: impl FnMut(&Resolution) -> bool) -> Vec<Resolution> {
        let all: Vec<Resolution> = self
            .resolved
            .iter()
            .flat_map(|(_, tid)| self.records::<Resolution>(&self.roots.resolutions, tid))
            .collect();
        debug_assert_eq!(
            {
                let mut ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
                ids.sort_unstable();
                ids
            },
            {
                let mut ids: Vec<String> = self
                    .roots
                    .resolutions
                    .all()
                    .flat_map(|shard| self.doc.map_range(shard, ..))
                    .filter_map(|item| text(&item.value).and_then(parse::<Resolution>))
                    .map(|r| r.id.as_str().to_owned())
                    .collect();
                ids.sort_unstable();
                ids
            },
            "the tickets with resolutions are every ticket with a resolution record"
        );
        all.into_iter().filter(|r| keep(r)).collect()
    }

    /// The redemptions this ledger holds, by ticket and id, in the order it learned of them
    /// (on open, in no particular order), from position `from` on. Positions hold for this
    /// ledger value, named by [`Ledger::epoch`]: a reader keeps how far it got and reads
    /// only what arrived since, however large the ledger.
    pub fn arrivals(&self, from: usize) -> &[(TicketId, RedemptionId)] {
        self.arrivals.get(from..).unwrap_or_default()
    }

    /// Whether this node wrote the redemption at `position` of [`Ledger::arrivals`] (not
    /// one a peer or the server wrote); `false` past the end.
    pub fn arrived_own(&self, position: usize) -> bool {
        self.arrival_writer(position) == Some(&self.node)
    }

    /// The writer of the redemption at `position` of [`Ledger::arrivals`]; `None` past the
    /// end.
    pub fn arrival_writer(&self, position: usize) -> Option<&NodeId> {
        let at = *self.arrived_by.get(position)?;
        self.writers.0.get(usize::try_from(at).ok()?)
    }

    /// Names this ledger value (see [`Ledger::arrivals`]); never the same for two.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// One redemption, by ticket and id.
    pub fn redemption(&self, tid: &TicketId, id: &RedemptionId) -> Option<Redemption> {
        match self
            .doc
            .get(self.roots.redemptions.of(tid), record_key(tid, id.as_str()))
        {
            Ok(Some((value, _))) => value.as_str().and_then(parse),
            _ => None,
        }
    }

    /// Whether a redemption with this id is recorded for `tid`.
    pub fn has_redemption(&self, tid: &TicketId, id: &RedemptionId) -> bool {
        self.doc
            .get(self.roots.redemptions.of(tid), record_key(tid, id.as_str()))
            .ok()
            .flatten()
            .is_some()
    }

    /// Every redemption, ticket by ticket (in the same order on every replica that holds
    /// the same records).
    pub fn redemptions(&self) -> Vec<Redemption> {
        self.roots
            .redemptions
            .all()
            .flat_map(|shard| self.doc.map_range(shard, ..))
            .filter_map(|item| text(&item.value).and_then(parse))
            .collect()
    }

    /// The hashes of the document's latest changes: two replicas with the same heads hold
    /// the same records.
    pub fn heads(&mut self) -> Vec<ChangeHash> {
        self.doc.get_heads()
    }

    /// A short digest of the document's heads (32 hex digits): two replicas showing the same
    /// one hold the same records, and a person comparing two gates' screens sees whether
    /// they do.
    pub fn digest(&mut self) -> String {
        use sha2::{Digest, Sha256};
        let mut heads = self.doc.get_heads();
        heads.sort();
        let mut h = Sha256::new();
        for head in &heads {
            h.update(head.0);
        }
        h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// A compacted copy of the whole document, as automerge saves it (a ledger file,
    /// [`Ledger::merge_saved`]).
    pub fn save(&mut self) -> Vec<u8> {
        self.doc.save()
    }

    /// The whole document in the form a store keeps as its snapshot ([`Store::compact`],
    /// read back by [`Ledger::open`]): saved with a fraction of the memory automerge's own
    /// compression takes (`snapshot.rs`).
    ///
    /// [`Store::compact`]: crate::Store::compact
    pub fn snapshot(&mut self) -> Vec<u8> {
        crate::snapshot::save(&mut self.doc)
    }

    /// A copy of the document as it is now, to save on another thread ([`Saving::save`]):
    /// the copy costs milliseconds where saving 100,000 redemptions costs a third of a
    /// second to two seconds, which the thread that decides scans then need not spend.
    pub fn to_save(&mut self) -> Saving {
        Saving(Box::new(self.doc.clone()))
    }

    /// Merges another replica's saved document (`gatemesh import`, sneakernet). The other
    /// document must be of this event, of this format and from its genesis, and every change
    /// it holds that this one does not must keep the ledger's rules (`admit.rs`) at this
    /// node's time `now_ms`; on any error nothing changes. Returns the changes that were new
    /// here, to store.
    pub fn merge_saved(
        &mut self,
        bytes: &[u8],
        now_ms: i64,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        crate::admit::Inflation::default().all(bytes)?;
        let mut other =
            guarded(|| AutoCommit::load(bytes).map_err(|e| LedgerError::Corrupt(e.to_string())))?;
        let found = event_of(&other)?;
        if found != self.event.as_str() {
            return Err(LedgerError::WrongEvent {
                expected: self.event.clone(),
                found,
            });
        }
        check_format(&other)?;
        if self
            .genesis_heads
            .iter()
            .any(|h| other.get_change_by_hash(h).is_none())
        {
            return Err(LedgerError::ForeignGenesis);
        }
        let doc = &mut self.doc;
        let incoming = guarded(|| Ok(crate::admit::missing_from(doc, other.document())))?;
        let mut checker = crate::admit::Checker {
            event: &self.event,
            trust: self.trust.as_ref(),
            devices: &mut self.devices,
            per_ticket: &self.per_ticket,
            checked: &crate::sign::Checked::default(),
            vouched: self.vouched.as_deref(),
            held: &self.tips,
        };
        guarded(|| crate::admit::check(&self.doc, &self.roots, &incoming, now_ms, &mut checker))?;
        // Merge into a copy first: a change that the engine rejects half-way must not leave
        // this replica half-merged.
        let mut trial = self.doc.fork();
        let before = self.doc.get_heads();
        guarded(|| {
            trial.merge(&mut other)?;
            check_roots(&trial)
        })?;
        trial.set_actor(self.actor.clone());
        let merged = trial.get_changes(&before);
        // What came by the import is at hand to relay, as what came by a peer is: a gate
        // that imported its side's ledger and is asked for the gap after a heal relays it
        // (it sent its own changes alone, and was given up on every 10 s).
        for change in &merged {
            self.recent.note(change);
        }
        let new: Vec<StoredChange> = merged.iter().map(StoredChange::from).collect();
        let after = trial.get_heads();
        let roots = roots_of(&trial)?;
        self.doc = trial;
        self.roots = roots;
        (self.deps, self.tips) = Deps::of(self.doc.document());
        self.refresh_after(&before, &after);
        self.share_devices();
        Ok(new)
    }
}

/// A copy of a ledger's document, to save off the thread that owns the ledger
/// ([`Ledger::to_save`]).
#[derive(Debug)]
pub struct Saving(Box<AutoCommit>);

impl Saving {
    /// The document saved as a store's snapshot, as [`Ledger::snapshot`] would have.
    pub fn save(mut self) -> Vec<u8> {
        crate::snapshot::save(&mut self.0)
    }
}

/// A peer's sync message being taken in parts ([`SyncInParts::parse`]).
#[derive(Debug)]
pub struct SyncInParts {
    /// The message without its changes: what it says of the peer.
    message: automerge::sync::Message,
    /// Its changes not yet taken, in the order they came.
    changes: std::collections::VecDeque<Change>,
    /// Whether it carried changes at all.
    carried: bool,
    /// Its signatures found good already ([`SyncInParts::precheck`]).
    checked: crate::sign::Checked,
    /// The document it carried, when it carried one whole document and nothing else (a
    /// catch-up), loaded as it was parsed.
    whole: Option<Box<AutoCommit>>,
    /// That document as a ledger, checked and derived off the writer
    /// ([`SyncInParts::prepare_whole`]), for [`Ledger::take_whole`].
    ready: Option<Box<Ledger>>,
    /// What the writer's ledger held that the document lacked, to apply onto it off the
    /// writer ([`SyncInParts::take_besides`]).
    besides: Vec<Change>,
    /// The whole document as the peer sent it: what the store keeps in place of its change
    /// rows once the document is taken ([`TakenWhole`]).
    whole_bytes: Vec<u8>,
    /// Every change applied onto the whole document that it lacked, in the order applied:
    /// stored as rows after it.
    besides_taken: Vec<StoredChange>,
}

/// What [`Ledger::take_whole`] took, and how to store it.
#[derive(Debug)]
pub struct TakenWhole {
    /// How many of the document's changes were new to this ledger.
    pub new: usize,
    /// The document as the peer sent it, for the store's snapshot in place of every change
    /// row stored so far ([`crate::Store::commit_replacing`]): it and `rows` hold all this
    /// ledger now holds, where storing its changes one by one (100,000 rows, 0.5 s on the
    /// thread that decides scans) did the same.
    pub snapshot: Vec<u8>,
    /// What this ledger held that the document lacked (its own scans meanwhile, other
    /// peers' pushes, its own history the peer had not taken yet), as rows after it.
    pub rows: Vec<StoredChange>,
}

impl SyncInParts {
    /// A peer's sync message, to take in parts ([`Ledger::take_sync_part`], then
    /// [`Ledger::finish_sync`]) so that the owner of the ledger can do other work between
    /// them: a gate catching up 100,000 redemptions in one message goes on deciding scans.
    /// Bounded, decoded and checked as [`Ledger::receive_sync`] says, and every change it
    /// carries parsed (a document's whole history), with no ledger at hand: a large message
    /// is parsed off the thread that decides scans (a 100,000-redemption document takes a
    /// second). Nothing reaches a document or a peer's state.
    ///
    /// Parts are checked one by one, each with the peer's changes that wait for what they
    /// build on: a change is checked once everything it builds on is held or in its part,
    /// so a record is never checked before the change that brought its writer's
    /// certificate (an ancestor of every record its writer or a relay wrote).
    pub fn parse(bytes: &[u8]) -> Result<Self, LedgerError> {
        use automerge::sync::Message;
        bounded(bytes, "a sync message")?;
        let mut message =
            Message::decode(bytes).map_err(|e| LedgerError::BadMessage(e.to_string()))?;
        check_message(&message)?;
        // What the message would inflate to is bounded before automerge parses any of it.
        let mut inflation = crate::admit::Inflation::default();
        for chunk in message.changes.iter() {
            inflation.all(chunk)?;
        }
        let carried = !message.changes.is_empty();
        let (changes, whole, whole_bytes) = guarded(|| {
            let mut chunks = message.changes.iter();
            if let (Some(only), None) = (chunks.next(), chunks.next())
                && let Some((doc, changes, bytes)) = crate::admit::whole_document(only)?
            {
                return Ok((changes, Some(Box::new(doc)), bytes));
            }
            let mut all = Vec::new();
            for chunk in message.changes.iter() {
                all.extend(crate::admit::all_changes(chunk)?);
            }
            Ok((all, None, Vec::new()))
        })?;
        message.changes = Vec::<Vec<u8>>::new().into();
        Ok(Self {
            message,
            changes: changes.into(),
            carried,
            checked: Default::default(),
            whole,
            ready: None,
            besides: Vec::new(),
            whole_bytes,
            besides_taken: Vec::new(),
        })
    }

    /// When the message carried a whole document (a catch-up): checks every change of it as
    /// a ledger that holds only the event's genesis would ([`Ledger::receive_sync`]'s
    /// checks, with the signatures [`SyncInParts::precheck`] found good), and derives the
    /// ledger it makes for `node`, off the thread that decides scans. [`Ledger::take_whole`]
    /// then takes it in one step where taking it in parts of 1,024 changes cost ten
    /// seconds of the writer's time at 100,000 redemptions (each part a walk of the
    /// shards it touches, and every ticket derived again). A document that fails a check
    /// is left to the parts, which refuse it as they would have.
    pub fn prepare_whole(
        &mut self,
        node: &NodeId,
        event: &EventId,
        trust: &Trust,
        now_ms: i64,
    ) -> Result<(), LedgerError> {
        let Some(doc) = self.whole.take() else {
            return Ok(());
        };
        let changes = self.changes.make_contiguous();
        let ledger = guarded(|| {
            Ledger::checked_whole(*doc, changes, node, event, trust, &self.checked, now_ms)
        })?;
        self.ready = Some(Box::new(ledger));
        Ok(())
    }

    /// Whether a whole document is ready to take ([`SyncInParts::prepare_whole`]).
    pub fn is_ready_whole(&self) -> bool {
        self.ready.is_some()
    }

    /// Applies onto the whole document what the writer's ledger held that it lacked
    /// ([`Ledger::hand_besides`]), checked as they would be on the writer; when they do not
    /// go onto it, the document is dropped and the message goes to the parts.
    pub fn take_besides(&mut self, now_ms: i64) {
        let besides = std::mem::take(&mut self.besides);
        if let Some(ready) = self.ready.as_mut()
            && !ready.takes_besides(besides, now_ms, &mut self.besides_taken)
        {
            self.ready = None;
        }
    }

    /// Checks, on every core, the signatures of the records whose writers' certificates
    /// the message brings (a catch-up's whole ledger), off the thread that decides scans:
    /// each part then costs a digest per record where it cost an ECDSA verification (61 µs).
    /// Nothing is decided here; every part is checked in full as it is taken. Signatures
    /// `vouched` holds (found good in an earlier message) are not verified again.
    pub fn precheck(&mut self, event: &EventId, trust: &Trust, vouched: &crate::admit::Vouched) {
        let Some(roots) = genesis_roots(event) else {
            return;
        };
        // In place: a catch-up holds 100,000 changes, not worth copying to read.
        let changes = self.changes.make_contiguous();
        self.checked = crate::admit::precheck(&roots, trust, event, changes, vouched);
    }

    /// Signatures found good by [`SyncInParts::precheck`].
    pub fn prechecked(&self) -> usize {
        self.checked.len()
    }

    /// Records [`SyncInParts::precheck`] found their writers' seals vouching for, whose
    /// signatures it did not verify one by one (`seal.rs`).
    pub fn sealed(&self) -> usize {
        self.checked.sealed_records()
    }

    /// Changes still to take (some may turn out to be held already).
    pub fn left(&self) -> usize {
        self.changes.len()
    }
}

/// The maps of `event`'s ledger, as its genesis makes them: what a precheck reads a
/// message's puts against, before any ledger is at hand.
///
/// Made once per event and kept: making them builds, saves and loads a genesis of 768
/// shards, a millisecond or more, and a heal prechecks a push every few milliseconds (13% of
/// a heal's CPU went to it in `gatemesh bench mesh`). The genesis of an event is the same on
/// every machine, so its maps' ids never change.
fn genesis_roots(event: &EventId) -> Option<Roots> {
    /// Events whose maps are kept: a gate serves one; tests and benches run a few at once.
    const KEPT: usize = 8;
    static MADE: std::sync::Mutex<Vec<(EventId, Roots)>> = std::sync::Mutex::new(Vec::new());
    let kept = |made: &Vec<(EventId, Roots)>| {
        made.iter()
            .find(|(e, _)| e == event)
            .map(|(_, roots)| roots.clone())
    };
    if let Some(roots) = kept(&MADE.lock().unwrap_or_else(|e| e.into_inner())) {
        return Some(roots);
    }
    let genesis = AutoCommit::load(&crate::layout::genesis(event)).ok()?;
    let roots = roots_of(&genesis).ok()?;
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if kept(&made).is_none() {
        if made.len() == KEPT {
            made.remove(0);
        }
        made.push((event.clone(), roots.clone()));
    }
    Some(roots)
}

/// Checks ahead, on every core and off the thread that decides scans, the signatures of
/// changes a peer pushed or relayed (after a heal, hundreds of its own and its side's at a
/// time), as [`SyncInParts::precheck`] does a catch-up's: those found good join `vouched`,
/// and the writer's full check of the push ([`Ledger::receive_changes`]) then costs a
/// digest for each where it cost an ECDSA verification. Nothing is decided or kept but
/// that; a push that does not read, or that would inflate past the bounds, is left to the
/// writer to refuse. Returns how many signatures were found good.
pub fn precheck_pushed(
    bytes: &[u8],
    event: &EventId,
    trust: &Trust,
    vouched: &crate::admit::Vouched,
) -> usize {
    read_ahead(bytes).map_or(0, |changes| precheck_read(&changes, event, trust, vouched))
}

/// A push read and checked ahead, off the writer ([`PushAhead::check`]): what the writer
/// takes with [`Ledger::receive_push_upto`], without reading it again.
#[derive(Debug)]
pub struct PushAhead {
    read: Result<Vec<Change>, Vec<u8>>,
    prechecked: usize,
}

impl PushAhead {
    /// `bytes` pushed by a peer, read (within the bounds a push is read under) and their
    /// signatures checked as [`precheck_pushed`] does. Reading a relay of a thousand
    /// changes cost the writer as much again as checking what it read (3% of a 16-gate
    /// `bench heal`); bytes that do not read are kept as they came, for the writer to
    /// refuse as it refuses any push that does not read.
    pub fn check(
        bytes: Vec<u8>,
        event: &EventId,
        trust: &Trust,
        vouched: &crate::admit::Vouched,
    ) -> Self {
        match read_ahead(&bytes) {
            Ok(changes) => Self {
                prechecked: precheck_read(&changes, event, trust, vouched),
                read: Ok(changes),
            },
            Err(_) => Self {
                read: Err(bytes),
                prechecked: 0,
            },
        }
    }

    /// `bytes` pushed by a peer, to read on the writer (a small push: reading it ahead
    /// would cost more than it saves).
    pub fn unread(bytes: Vec<u8>) -> Self {
        Self {
            read: Err(bytes),
            prechecked: 0,
        }
    }

    /// How many signatures were found good ahead.
    pub fn prechecked(&self) -> usize {
        self.prechecked
    }
}

/// The changes of a push, within the bounds a push is read under (automerge may panic on a
/// crafted change as it is read: guarded).
fn read_ahead(bytes: &[u8]) -> Result<Vec<Change>, LedgerError> {
    bounded(bytes, "pushed changes")
        .and_then(|()| crate::admit::Inflation::default().all(bytes))
        .and_then(|()| guarded(|| crate::admit::all_changes(bytes)))
}

/// [`precheck_pushed`] of the changes read.
fn precheck_read(
    changes: &[Change],
    event: &EventId,
    trust: &Trust,
    vouched: &crate::admit::Vouched,
) -> usize {
    let Some(roots) = genesis_roots(event) else {
        return 0;
    };
    // automerge may panic on a crafted change as its operations are read: the writer's
    // check refuses such a push, this is only a look ahead.
    guarded(|| Ok(crate::admit::precheck(&roots, trust, event, changes, vouched).len()))
        .unwrap_or(0)
}

/// One peer's side of the Automerge sync protocol: what this node believes the peer has.
/// Kept per connection; a fresh state after a reconnect costs one extra round trip.
#[derive(Debug, Default)]
pub struct PeerSync(
    automerge::sync::State,
    Pending,
    Owed,
    Sizes,
    crate::summary::Relayed,
    LinkBooks,
    /// The peer's device name, when the node named it ([`PeerSync::of`]).
    Option<Box<str>>,
);

/// One connection's books: the changes this node pushed to the peer, and those the peer
/// sent (pushes, relays, sync messages) with what became of each. Every change counted in
/// `came` is counted once more, in `taken`, `held`, `waiting_already`, `held_when_taken` or
/// `dropped`, or still waits ([`PeerSync::waiting`]): what a heal's relays cost can be
/// followed change by change, from the relayer's count to the receiver's ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkBooks {
    /// This node's own changes pushed to the peer as it made them, counted once written to
    /// the connection (by the session's mark, which waits while the writer is too busy to
    /// take it; one still waiting when the connection ends is not counted: at most fewer).
    pub pushed: u64,
    /// Changes the peer sent.
    pub came: u64,
    /// Of them: new here, and taken into the ledger.
    pub taken: u64,
    /// Held here already when they came (another peer, or a catch-up, brought them first).
    pub held: u64,
    /// Sent again by the peer while the same change, sent before, still waited here for what
    /// it builds on.
    pub waiting_already: u64,
    /// Waited for what they build on, and were held by the time it came: another peer
    /// brought them meanwhile.
    pub held_when_taken: u64,
    /// Dropped while waiting (more waited than a peer may leave here, or the check refused
    /// the peer's changes and the connection ends), or left out by the document.
    pub dropped: u64,
    /// Of those taken, the ones the peer wrote itself (counted when the node named the peer,
    /// [`PeerSync::of`]); the rest it relayed of other writers. Not a place of its own in
    /// the books: a part of `taken`.
    pub taken_own: u64,
}

impl LinkBooks {
    /// Changes the peer sent that this node held already, had sent it already and still
    /// waited, or held by the time they were taken: work spent on sending them twice.
    pub fn sent_twice(&self) -> u64 {
        self.held + self.waiting_already + self.held_when_taken
    }

    /// Changes taken from the peer that another device wrote: what it relayed, not what it
    /// could have made up itself.
    pub fn taken_of_others(&self) -> u64 {
        self.taken - self.taken_own
    }
}

impl std::ops::AddAssign for LinkBooks {
    fn add_assign(&mut self, other: Self) {
        self.pushed += other.pushed;
        self.came += other.came;
        self.taken += other.taken;
        self.held += other.held;
        self.waiting_already += other.waiting_already;
        self.held_when_taken += other.held_when_taken;
        self.dropped += other.dropped;
        self.taken_own += other.taken_own;
    }
}

/// How much one sync message to this peer may carry, and ask for.
#[derive(Debug)]
struct Sizes {
    /// Whether messages to the peer say what this node has and needs (see
    /// [`PeerSync::set_asking`]).
    asking: bool,
    /// Most bytes of changes in one message (see [`SYNC_CHANGES_MOST`]).
    most: usize,
    /// Most bytes of a whole document in one message (see [`SYNC_MESSAGE_MOST`]).
    whole_most: usize,
}

impl Default for Sizes {
    fn default() -> Self {
        Self {
            asking: true,
            most: SYNC_CHANGES_MOST,
            whole_most: SYNC_MESSAGE_MOST - 64 * 1024,
        }
    }
}

/// A peer is sent this ledger as a whole document (when automerge would, for a gap of over a
/// third) only if it lacks more than one change in this many of those held, by its last
/// summary; otherwise the changes it lacks.
pub(crate) const WHOLE_WHEN_LACKING: usize = 2;

/// Most bytes of changes one sync message carries (a gap after a partition heals, or a
/// restart, larger than a third of the ledger goes as the whole document instead, which is
/// smaller): what is left goes in the next message of the round, which the peer's answer
/// asks for. Bounds how long a sync message holds up the pushes behind it on the
/// connection, and keeps a large gap under a mesh frame's limit (30,000 redemptions of
/// changes are ~16 MB). One change larger than this still goes, alone.
pub const SYNC_CHANGES_MOST: usize = 2 * 1024 * 1024;

/// Most bytes of a sync message this ledger makes. A whole document (automerge sends one
/// when more than a third of it is to be sent: columnar, about a quarter of the bytes of its
/// changes one by one) larger than this, less its heads and bloom filter, is not sent; its changes
/// go instead, [`SYNC_CHANGES_MOST`] at a time. A whole 100,000-redemption ledger is about
/// 21 MB (14.7 MB before each change carried its author's signature, ~67 bytes of it in the
/// document's deflated columns): this takes about 150,000. Below the mesh's frame limit
/// (32 MiB) with room for the frame's own bytes.
pub const SYNC_MESSAGE_MOST: usize = 31 * 1024 * 1024;

/// The changes this ledger put in its sync messages, by where their bytes came from. A
/// message capped to its size leaves the rest to the next, which puts them in again.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SyncServed {
    /// Taken as they came, from the changes at hand (`Recent`).
    pub at_hand: u64,
    /// Rebuilt by automerge from the document's operations (older than any at hand).
    pub rebuilt: u64,
    /// Whole documents sent.
    pub whole: u64,
}

impl SyncServed {
    /// Counts automerge's `message` (rebuilt changes, or a whole document) and `at_hand`
    /// changes taken from the changes at hand.
    fn count(&mut self, message: &automerge::sync::Message, at_hand: usize) {
        let whole = message.changes.iter().next().and_then(|c| c.get(8)) == Some(&DOCUMENT);
        if whole {
            self.whole += 1;
            return;
        }
        let all = change_slices(&message.changes)
            .map_or_else(|| message.changes.iter().count(), |c| c.len());
        self.at_hand += at_hand as u64;
        self.rebuilt += all as u64;
    }
}

/// Whether the peer's last sync message carried changes and this node has not sent a
/// message since: it is owed our heads (changes it sent that this node already knew reach
/// automerge as none, and without an answer the peer would believe this node lacks them).
#[derive(Debug, Default)]
struct Owed(bool);

/// Changes a peer sent before the changes they build on (the sync protocol does that when a
/// bloom filter wrongly says this node has a change): held here, unchecked and out of the
/// document, until what they build on arrives; then checked and applied with it. Automerge
/// would queue them itself and apply them later, past every check — and checked on arrival,
/// a record whose writer's certificate is in the change not yet here would refuse an honest
/// peer.
///
/// After a partition heals, thousands wait at once on each of a dozen peers, and every change
/// taken from anywhere may free some. So each waiting change counts what it still lacks, and
/// is ready when that is none (Kahn's order, kept as changes come and go): taking the ready
/// ones costs what is taken, and finding what arrived costs what is missing, not what waits.
/// (Sorting every waiting change again whenever anything arrived made a heal quadratic:
/// 35-40 % of the gates' writer threads in the 30 s after a 32-gate partition healed.)
#[derive(Debug, Default)]
struct Pending {
    /// The waiting changes, by hash.
    changes: HashMap<ChangeHash, Waiting>,
    /// Changes not held when a waiting change that builds on them came (waiting too, or
    /// missing), and the waiting changes that build on each.
    waiters: HashMap<ChangeHash, Vec<ChangeHash>>,
    /// Those of `waiters` neither held nor waiting here when last looked at: until one is
    /// held, nothing waiting here can be taken.
    missing: BTreeSet<ChangeHash>,
    /// The waiting changes that build only on what is held, by when they came.
    ready: std::collections::BTreeMap<u64, ChangeHash>,
    /// The waiting changes' bytes.
    bytes: usize,
    /// How many changes came to wait: the next one's place.
    came: u64,
    /// The sequence numbers of the waiting changes found signed by their authors, by
    /// writer: what is on its way into the ledger ([`Ledger::summary_message_with`]). A
    /// change nobody signed, or in a writer's name by another device, is never said to be
    /// coming: it may wait on a change that does not exist, and would hold back the
    /// writer's relays meanwhile.
    by_writer: HashMap<ActorId, BTreeSet<u64>>,
    /// Waiting changes whose authors' devices this ledger did not hold when they came, so
    /// their signatures could not be checked yet ([`Ledger::note_signed`]).
    unsigned: Vec<ChangeHash>,
    /// How many devices the ledger held when `unsigned` was last looked at.
    devices_seen: usize,
}

/// Whether a change is signed by its author ([`Ledger::authorship`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Authorship {
    /// By a device this ledger holds, and it verifies (or no device signs in this ledger).
    Signed,
    /// Its author's device is not held here (yet).
    Unknown,
    /// Unsigned, or a signature that does not verify.
    Bad,
}

/// A change waiting for what it builds on ([`Pending`]).
#[derive(Debug)]
struct Waiting {
    change: Change,
    /// When it came.
    came: u64,
    /// How many of the changes it builds on are not held yet.
    unmet: usize,
    /// Found signed by its author: counted in [`Pending::by_writer`].
    signed: bool,
}

impl Pending {
    /// Lets `change`, which the ledger does not hold (`knows` says what it holds), wait for
    /// what it builds on; ready at once if that is all held. A change waiting already is
    /// left as it is. Whether it was new here.
    fn add(&mut self, change: Change, knows: &mut impl FnMut(&ChangeHash) -> bool) -> bool {
        let hash = change.hash();
        if self.changes.contains_key(&hash) {
            return false;
        }
        self.missing.remove(&hash);
        let mut unmet = 0;
        for d in change.deps() {
            let waiting = self.changes.contains_key(d);
            if waiting || !knows(d) {
                unmet += 1;
                self.waiters.entry(*d).or_default().push(hash);
                if !waiting {
                    self.missing.insert(*d);
                }
            }
        }
        let came = self.came;
        self.came += 1;
        self.bytes += change.raw_bytes().len();
        if unmet == 0 {
            self.ready.insert(came, hash);
        }
        self.changes.insert(
            hash,
            Waiting {
                change,
                came,
                unmet,
                signed: false,
            },
        );
        true
    }

    /// The waiting change `hash` was found signed by its author: it counts as coming.
    fn vouch(&mut self, hash: &ChangeHash) {
        if let Some(waiting) = self.changes.get_mut(hash) {
            waiting.signed = true;
            self.by_writer
                .entry(waiting.change.actor_id().clone())
                .or_default()
                .insert(waiting.change.seq());
        }
    }

    /// The change `hash` is held (or about to be): what waited on it lacks one less.
    fn resolve(&mut self, hash: &ChangeHash) {
        self.missing.remove(hash);
        for w in self.waiters.remove(hash).unwrap_or_default() {
            if let Some(waiting) = self.changes.get_mut(&w) {
                waiting.unmet = waiting.unmet.saturating_sub(1);
                if waiting.unmet == 0 {
                    self.ready.insert(waiting.came, w);
                }
            }
        }
    }

    /// Resolves what was missing and is held now (`knows`), whoever brought it.
    fn settle(&mut self, mut knows: impl FnMut(&ChangeHash) -> bool) {
        let arrived: Vec<ChangeHash> = self.missing.iter().filter(|h| knows(h)).copied().collect();
        for hash in arrived {
            self.resolve(&hash);
        }
    }

    /// Takes out at most `most` of the changes that build only on what is held and on each
    /// other, in causal order (among the ready, those that came first first). One held
    /// already (`knows`: another peer brought it) is dropped, and what waited on it freed;
    /// how many were is the second of what this returns.
    fn take(
        &mut self,
        most: usize,
        mut knows: impl FnMut(&ChangeHash) -> bool,
    ) -> (Vec<Change>, u64) {
        let (mut out, mut held) = (Vec::new(), 0);
        while out.len() < most {
            let Some((_, hash)) = self.ready.pop_first() else {
                break;
            };
            let Some(waiting) = self.changes.remove(&hash) else {
                continue;
            };
            self.bytes = self.bytes.saturating_sub(waiting.change.raw_bytes().len());
            let actor = waiting.change.actor_id();
            if let Some(seqs) = self.by_writer.get_mut(actor).filter(|_| waiting.signed) {
                seqs.remove(&waiting.change.seq());
                if seqs.is_empty() {
                    self.by_writer.remove(actor);
                }
            }
            self.resolve(&hash);
            if knows(&hash) {
                held += 1;
            } else {
                out.push(waiting.change);
            }
        }
        (out, held)
    }

    /// Whether some waiting change can be taken now (after [`Pending::settle`]).
    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }
}

/// The newest of the numbers after `held` that follow one another in the union of `seqs`
/// (`held` if `held + 1` is in none): each run is walked once.
fn coming_upto(held: u64, seqs: &[&BTreeSet<u64>]) -> u64 {
    let mut upto = held;
    loop {
        let before = upto;
        for set in seqs {
            for &seq in set.range(upto.saturating_add(1)..) {
                if seq != upto.saturating_add(1) {
                    break;
                }
                upto = seq;
            }
        }
        if upto == before {
            return upto;
        }
    }
}

/// Most changes a ledger may hold that a whole document a peer sent lacks for
/// [`Ledger::take_whole`] to take the document in one step: they are checked and applied
/// onto it (off the writer first, [`Ledger::hand_besides`]), as a part of a message in
/// parts would be.
pub const WHOLE_BESIDES_MOST: usize = 1024;

/// Most changes waiting for the changes they build on, per peer, and their bytes.
const MAX_PENDING: usize = 200_000;
const MAX_PENDING_BYTES: usize = 64 * 1024 * 1024;

/// Most changes handed to automerge in one call ([`apply_in_steps`]).
const APPLY_AT_ONCE: usize = 16;

/// Applies `changes` to `doc` at most [`APPLY_AT_ONCE`] at a time. automerge 0.12 keeps a
/// loaded document's values (a snapshot the gate reopened, a whole ledger a peer sent) as
/// one block that only a change landing in it splits, and a large batch applied onto such
/// a block copies it over and over: 400 changes onto a loaded 100,000-record document took
/// 7-8 s in one call and 0.4 s in calls of 16 (0.7 s in calls of 32; a document built
/// change by change took them in 0.1 s either way).
fn apply_in_steps(doc: &mut AutoCommit, changes: Vec<Change>) -> Result<(), LedgerError> {
    for step in changes.chunks(APPLY_AT_ONCE) {
        doc.apply_changes(step.to_vec())?;
    }
    Ok(())
}

/// Whether `doc` holds the change: a lookup in its change graph. (`get_change_meta_by_hash`
/// builds the change's whole metadata from automerge's columns to say the same.) A change in
/// automerge's own queue lacks something it builds on, so it counts as not held.
pub(crate) fn holds(doc: &mut AutoCommit, hash: &ChangeHash) -> bool {
    doc.get_missing_deps(std::slice::from_ref(hash)).is_empty()
}

impl Ledger {
    /// Whether this ledger holds the change `hash`: a lookup in [`Deps`] while it holds
    /// every change, automerge's answer otherwise.
    fn knows(&mut self, hash: &ChangeHash) -> bool {
        self.deps
            .holds(hash)
            .unwrap_or_else(|| holds(&mut self.doc, hash))
    }
}

/// Refuses `what` from a peer when it is longer than [`MAX_SYNC_MESSAGE`], before parsing.
fn bounded(bytes: &[u8], what: &str) -> Result<(), LedgerError> {
    if bytes.len() > MAX_SYNC_MESSAGE {
        return Err(LedgerError::BadMessage(format!(
            "{what} of {} bytes",
            bytes.len()
        )));
    }
    Ok(())
}

/// Longest sync message accepted from a peer. A message carrying a whole 100,000-redemption
/// ledger is about 15 MB (and this ledger makes none over [`SYNC_MESSAGE_MOST`]); anything
/// far beyond that is refused, not parsed.
pub const MAX_SYNC_MESSAGE: usize = 64 * 1024 * 1024;

impl Ledger {
    /// How many changes this node holds that the peer, as far as it last told us, lacks.
    /// `None` before the peer has said what it has.
    pub fn peer_lag(&mut self, peer: &PeerSync) -> Option<usize> {
        // By the peer's last summary, writer by writer: what it lacked a second ago at most,
        // counted without walking the change graph.
        if let Some(theirs) = &peer.4.theirs {
            return Some(self.tips.lacked_by(theirs));
        }
        let theirs = peer.0.their_heads.as_ref()?;
        if *theirs == self.doc.get_heads() {
            return Some(0);
        }
        // Counted from the change graph: the changes themselves would be rebuilt from the
        // document's operations (a quarter of a busy gate's time, polled each second).
        Some(self.doc.get_changes_meta(theirs).len())
    }

    /// This ledger's summary: the newest change of each writer it holds.
    pub fn summary(&self) -> &crate::summary::Summary {
        &self.tips
    }

    /// How many changes this ledger made or took since it was opened (with those it was
    /// opened with since the last compaction): a position in their order, for
    /// [`crate::RelayPlan::noted_before`].
    pub fn noted(&self) -> u64 {
        self.recent.noted()
    }

    /// The message that tells a peer this ledger's summary, the devices this node reaches
    /// now, and what it wants relayed (see `summary.rs`).
    pub fn summary_message(&self, reaches: &[String], wants: crate::summary::Wants) -> Vec<u8> {
        self.summary_message_with(reaches, wants, [])
    }

    /// [`Ledger::summary_message`], saying too what of each writer is on its way into this
    /// ledger: the changes that follow its newest one held here, one after another, that
    /// `peers` sent and wait here to be taken (a part at a time after a large push, or for
    /// what they build on), each found signed by the writer itself. Signed, a change
    /// builds on changes that exist: its writer held them. (Unchecked, a device could make
    /// up changes in a writer's name that wait on a change nobody has, and hold back that
    /// writer's relays for [`crate::summary::RELAY_LOST_ANYWAY_MS`].) A peer relays none
    /// of those again
    /// ([`crate::summary::Told::coming`]). Only of writers held here: a summary names no
    /// other (a gate lacking a writer altogether is new, and takes the ledger whole).
    pub fn summary_message_with<'a>(
        &self,
        reaches: &[String],
        wants: crate::summary::Wants,
        peers: impl IntoIterator<Item = &'a PeerSync>,
    ) -> Vec<u8> {
        let pendings: Vec<&Pending> = peers
            .into_iter()
            .map(|p| &p.1)
            .filter(|p| !p.by_writer.is_empty())
            .collect();
        let (mut coming, mut beyond) = (BTreeMap::new(), BTreeMap::new());
        if !pendings.is_empty() {
            let writers: BTreeSet<&ActorId> =
                pendings.iter().flat_map(|p| p.by_writer.keys()).collect();
            for actor in writers {
                let Some(tip) = self.tips.tip(actor) else {
                    continue;
                };
                let seqs: Vec<&BTreeSet<u64>> = pendings
                    .iter()
                    .filter_map(|p| p.by_writer.get(actor))
                    .collect();
                let upto = coming_upto(tip.seq, &seqs);
                if upto > tip.seq {
                    coming.insert(actor.clone(), upto);
                }
                // The first run past the gap after them: the writer's own pushes, waiting
                // while a partition's gap of its changes comes from another peer.
                let from = seqs
                    .iter()
                    .filter_map(|set| set.range(upto.saturating_add(1)..).next())
                    .min();
                if let Some(&from) = from {
                    beyond.insert(actor.clone(), (from, coming_upto(from, &seqs)));
                }
            }
        }
        self.tips.encode_with(reaches, wants, &coming, &beyond)
    }

    /// Whether the peer's last summary asked this node for its gap: it catches up from
    /// here.
    pub fn catches_up_from_here(&self, peer: &PeerSync) -> bool {
        peer.4.asks_gap
    }

    /// How many changes this ledger lacks that the peer holds, by the peer's last summary;
    /// `None` before it told one.
    pub fn lacked_of(&self, peer: &PeerSync) -> Option<usize> {
        Some(peer.4.theirs.as_ref()?.lacked_by(&self.tips))
    }

    /// Whether the last summary of the peer `peer_name` (`relay` keeps it) names changes
    /// this ledger lacks that the peer would relay to it: the peer's own, or those of a
    /// writer whose device this node does not reach (`reaches`) or does not know. A writer
    /// this node reaches pushes its changes itself, and no peer relays them here; in a busy
    /// mesh a peer's summary nearly always names one of those a moment before its push
    /// lands.
    pub fn lacks_what_peer_said(
        &mut self,
        peer: &PeerSync,
        peer_name: &str,
        reaches: &[String],
    ) -> bool {
        let Some(theirs) = peer.4.theirs.as_ref() else {
            return false;
        };
        let (devices, doc, roots, trust) = (
            &mut self.devices,
            &self.doc,
            &self.roots,
            self.trust.as_ref(),
        );
        let mut lacked = theirs.lacked_writers(&self.tips);
        lacked.any(|actor| {
            let name = writer_name_in((&mut *devices, doc, roots, trust), actor);
            name.is_none_or(|n| n == peer_name || !reaches.contains(&n))
        })
    }

    /// Whether `actor` writes for the device named `name`, as far as the ledger knows its
    /// device.
    fn device_named(&mut self, actor: &ActorId, name: &str) -> bool {
        crate::authored::node_of(actor)
            .and_then(|node| self.known_device(&node))
            .is_some_and(|device| device.peer.name == name)
    }

    /// What to send `peer` after its summary message: the changes it lacks that this node
    /// relays to it (its own, and those of writers the peer does not reach, see
    /// `summary.rs`), from what is at hand, or a round of the sync protocol. A message that
    /// does not read is refused ([`LedgerError::BadMessage`]); nothing of the ledger
    /// changes either way.
    pub fn relay(
        &mut self,
        peer: &mut PeerSync,
        message: &[u8],
        plan: &crate::summary::RelayPlan<'_>,
    ) -> Result<crate::summary::Relay, LedgerError> {
        let told = crate::summary::Summary::decode(message)?;
        // Named only when the peer lacks a writer's changes (a few writers, of the dozens a
        // summary lists): a peer's summary comes every second from each of up to 31.
        let (devices, doc, roots, trust) = (
            &mut self.devices,
            &self.doc,
            &self.roots,
            self.trust.as_ref(),
        );
        let relay = crate::summary::plan_relay(
            (&self.tips, &self.recent, &self.actor),
            |actor| writer_name_in((&mut *devices, doc, roots, trust), actor),
            &mut peer.4,
            told,
            plan,
        );
        // A peer catching up from this node that gets nothing gives it up after a while,
        // and every other peer sends it again what it lacks: why nothing went.
        if relay.changes == 0 && relay.left_out.total() > 0 {
            tracing::debug!(
                me = plan.me,
                peer = peer.6.as_deref().unwrap_or("?"),
                left_out = ?relay.left_out,
                "asked for a gap, relayed nothing of it"
            );
        }
        Ok(relay)
    }

    /// These changes of this node's were pushed to `peer`: counted as sent by the relays (a
    /// summary the peer made before they arrived does not have them relayed). Not by the
    /// sync protocol, whose set of hashes sent would grow by every push for the
    /// connection's life now that rounds are rare (a round's bloom filter may miss what is
    /// in flight, and it is sent again: the peer ignores it).
    ///
    /// A push counts only what follows what the peer held or was sent before: one made
    /// past a gap (a partition healed, the peer lacks this writer's changes made apart)
    /// does not put the gap on its way. Counted so, a gate asked for a heal's gap left its
    /// own records out of it for as long as it scanned meanwhile, and the peer got them
    /// only once they counted as lost (`RELAY_STUCK_MS`), from every peer at once.
    pub fn pushed(&self, peer: &mut PeerSync, hashes: impl IntoIterator<Item = [u8; 32]>) {
        for hash in hashes {
            peer.5.pushed += 1;
            if let Some(slot) = self.recent.by_hash(&ChangeHash(hash)) {
                let held = peer
                    .4
                    .theirs
                    .as_ref()
                    .and_then(|theirs| theirs.tip(&slot.actor))
                    .map_or(0, |tip| tip.seq);
                let sent = peer.4.sent.entry(slot.actor.clone()).or_insert(0);
                if slot.seq <= (*sent).max(held).saturating_add(1) {
                    *sent = (*sent).max(slot.seq);
                }
            }
        }
    }

    /// A request for what the changes `peer` pushed that wait here build on (see
    /// [`PeerSync::waiting`]), `None` when none wait: the changes' hashes, at most
    /// [`crate::summary::NEED_MOST`]. The peer took or made them a moment before the
    /// changes that build on them, so it has them at hand ([`Ledger::answer_need`]).
    pub fn need_message(&mut self, peer: &PeerSync) -> Option<Vec<u8>> {
        self.need_message_besides(peer, [])
    }

    /// [`Ledger::need_message`], leaving out what waits here already, sent by `others`
    /// (the rest of this node's peers) and not taken yet. After a heal a gate takes the gap
    /// a part at a time, and every fresh change the other side pushes builds on some of it:
    /// asking each pusher for what its change builds on had it send the gap again, change
    /// by change — at 16 gates, more changes than every relay of the heal together.
    pub fn need_message_besides<'a>(
        &mut self,
        peer: &PeerSync,
        others: impl IntoIterator<Item = &'a PeerSync>,
    ) -> Option<Vec<u8>> {
        let others: Vec<&Pending> = others
            .into_iter()
            .map(|p| &p.1)
            .filter(|p| !p.changes.is_empty())
            .collect();
        let need: Vec<ChangeHash> = peer
            .1
            .missing
            .iter()
            .filter(|d| !others.iter().any(|p| p.changes.contains_key(*d)))
            .filter(|d| !self.knows(d))
            .take(crate::summary::NEED_MOST)
            .copied()
            .collect();
        if need.is_empty() {
            return None;
        }
        Some(crate::summary::encode_need(&need))
    }

    /// What to send `peer` after its request for changes ([`Ledger::need_message`]): those
    /// at hand, or a round of the sync protocol when any is not. A request that does not
    /// read is refused ([`LedgerError::BadMessage`]).
    pub fn answer_need(
        &mut self,
        peer: &mut PeerSync,
        message: &[u8],
        frame_most: usize,
    ) -> Result<crate::summary::Relay, LedgerError> {
        let hashes = crate::summary::decode_need(message)?;
        let mut slots = Vec::with_capacity(hashes.len());
        for hash in &hashes {
            match self.recent.by_hash(hash) {
                Some(slot) => slots.push(slot),
                None => {
                    return Ok(crate::summary::Relay {
                        round: Some("the peer asks for changes no longer at hand here"),
                        ..Default::default()
                    });
                }
            }
        }
        slots.sort_by_key(|s| s.noted);
        peer.4.by_why.asked += slots.len() as u64;
        Ok(crate::summary::Relay {
            frames: crate::summary::frames_of(slots.iter().copied(), frame_most),
            changes: slots.len(),
            round: None,
            catch_up: false,
            left_out: Default::default(),
        })
    }

    /// Whether this node and the peer agree, as far as this node knows: the peer last said
    /// our heads are its heads, it was last told them, and none of its changes wait here. A
    /// round of the sync protocol is due whenever they do not.
    pub fn agrees_with(&mut self, peer: &PeerSync) -> bool {
        let ours = self.doc.get_heads();
        peer.0.their_heads.as_ref() == Some(&ours)
            && peer.0.last_sent_heads == ours
            && peer.1.changes.is_empty()
    }

    /// The next message for a peer, if it lacks anything this node has.
    pub fn sync_message(&mut self, peer: &mut PeerSync) -> Option<Vec<u8>> {
        self.next_message(peer)
            .map(automerge::sync::Message::encode)
    }

    /// The next message of a round under way, only if it carries changes or asks for some.
    /// A message that would only say this node's heads and what it has is not sent (and the
    /// peer's state stays as if it had not been made): under pushes both sides' heads move
    /// all the time, so answering every such message with another would keep the two
    /// talking for as long as anyone admits anyone. The next round's start says them.
    ///
    /// It is sent anyway when the peer's last message carried changes (the peer is owed our
    /// heads), and when either side starts over from nothing (a reset, or a first message).
    /// A peer's first message says all it holds in a bloom filter, which holds about one
    /// change in a hundred it lacks by mistake: those are not sent, and only this node's
    /// heads show the peer that it lacks them (it then asks for them by hash). This node
    /// may share heads with the peer all the same (it took the peer's changes before), so
    /// its own side of that is not enough.
    pub fn sync_followup(&mut self, peer: &mut PeerSync) -> Option<Vec<u8>> {
        // What making a message without changes moves in automerge's state (the hashes it
        // sent grow only by the changes it carries; its reset flag is only ever set by a
        // switch to or from read-only, which this ledger never makes): kept, not the whole
        // state, whose sent hashes hold every change pushed since the peer last said its
        // heads.
        let kept = (
            peer.0.last_sent_heads.clone(),
            peer.0.have_responded,
            peer.0.in_flight,
        );
        let owed = peer.2.0;
        let peer_from_nothing = peer
            .0
            .their_have
            .as_ref()
            .and_then(|have| have.first())
            .is_some_and(|h| h.last_sync.is_empty());
        let message = self.next_message(peer)?;
        let from_nothing =
            peer_from_nothing || message.have.first().is_some_and(|h| h.last_sync.is_empty());
        if message.changes.is_empty() && message.need.is_empty() && !owed && !from_nothing {
            (
                peer.0.last_sent_heads,
                peer.0.have_responded,
                peer.0.in_flight,
            ) = kept;
            return None;
        }
        Some(message.encode())
    }

    /// The next message of automerge's protocol, as large as [`Sizes`] lets it be: a whole
    /// document up to [`SYNC_MESSAGE_MOST`], changes up to [`SYNC_CHANGES_MOST`].
    fn next_message(&mut self, peer: &mut PeerSync) -> Option<automerge::sync::Message> {
        use automerge::sync::MessageVersion;
        let kept = (
            peer.0.last_sent_heads.clone(),
            peer.0.have_responded,
            peer.0.in_flight,
        );
        // A whole document only for a peer that lacks most of this one (one joining late,
        // or back after a long outage), by its last summary: a whole document costs the
        // peer every change's check and a load of the whole ledger, and automerge sends one
        // for a gap of a third. After a 32-gate partition healed, gates that lacked 35 %
        // got whole ledgers that took 12 s each to check (their changes: ~0.2 ms each).
        let lacks_little = peer.4.theirs.as_ref().is_some_and(|theirs| {
            self.tips
                .lacked_by(theirs)
                .saturating_mul(WHOLE_WHEN_LACKING)
                <= self.tips.held()
        });
        let v2 = lacks_little && take_v2(&mut peer.0);
        let generated = self.generate(&mut peer.0);
        if v2 {
            give_v2(&mut peer.0);
        }
        let mut message = generated?;
        if message.version == MessageVersion::V2 {
            let whole = message.changes.iter().next().and_then(|c| c.get(8)) == Some(&DOCUMENT);
            if whole && chunk_bytes(&message) > peer.3.whole_most {
                // Too large for one frame: its changes instead, a part at a time. The
                // document's hashes all counted as sent; forgetting what was sent only means
                // a change may be sent again, which the peer ignores.
                let v2 = take_v2(&mut peer.0);
                peer.0.sent_hashes.clear();
                (
                    peer.0.last_sent_heads,
                    peer.0.have_responded,
                    peer.0.in_flight,
                ) = kept;
                let again = self.generate(&mut peer.0);
                if v2 {
                    give_v2(&mut peer.0);
                }
                message = again?;
            } else if !whole && chunk_bytes(&message) > peer.3.most {
                // Changes one after another in one chunk: as V1 writes them, one a chunk.
                if let Some(chunks) = split_changes(&message.changes) {
                    message.changes = chunks.into();
                    message.version = MessageVersion::V1;
                }
            }
        }
        if message.version == MessageVersion::V1 {
            cap_changes(&mut message, &mut peer.0.sent_hashes, peer.3.most);
        }
        peer.2 = Owed(false);
        // Ask for what the changes held back build on, as automerge asks for what its own
        // queue lacks.
        if !peer.1.changes.is_empty() {
            let mut need: BTreeSet<ChangeHash> = message.need.iter().copied().collect();
            for d in &peer.1.missing {
                if !holds(&mut self.doc, d) {
                    need.insert(*d);
                }
            }
            message.need = need.into_iter().collect();
        }
        if !peer.3.asking {
            // Says this node's heads and sends what the peer lacks, but neither what this
            // node has nor what it needs: by those the peer would send what this node lacks.
            message.have = Vec::new();
            message.need = Vec::new();
        }
        Some(message)
    }

    /// Automerge's next sync message for `state`, with the changes it would send that are at
    /// hand in [`Recent`] taken from there as they came, not rebuilt.
    ///
    /// automerge 0.12 keeps no change's bytes: the changes of a message are rebuilt from the
    /// document's operations (`get_changes_by_hashes`), at a cost that grows with the ledger.
    /// After a 32-gate partition healed, answering one peer's catch-up (a few thousand
    /// changes) held a gate's writer for 7 s. So the changes the message would carry
    /// ([`Ledger::due_to_send`], automerge's own rule) that [`Recent`] holds are marked sent
    /// before automerge makes it, which then rebuilds only the rest, and are added to it
    /// after those (everything not at hand is older than everything that is). The message
    /// carries the same changes either way.
    fn generate(&mut self, state: &mut automerge::sync::State) -> Option<automerge::sync::Message> {
        use automerge::sync::{MessageVersion, SyncDoc};
        let at_hand: Vec<ChangeHash> = self
            .due_to_send(state)
            .into_iter()
            .filter(|h| self.recent.by_hash(h).is_some() && state.sent_hashes.insert(*h))
            .collect();
        if at_hand.is_empty() {
            let message = self.doc.sync().generate_sync_message(state)?;
            self.served.count(&message, 0);
            return Some(message);
        }
        let Some(mut message) = self.doc.sync().generate_sync_message(state) else {
            // With nothing left to rebuild automerge may find nothing to say (its heads
            // unchanged and the peer's equal to them): asked again without the changes at
            // hand marked, it says what it would have.
            for h in &at_hand {
                state.sent_hashes.remove(h);
            }
            let message = self.doc.sync().generate_sync_message(state)?;
            self.served.count(&message, 0);
            return Some(message);
        };
        self.served.count(&message, at_hand.len());
        let mut chunks: Vec<Vec<u8>> = match message.version {
            MessageVersion::V1 => message.changes.iter().map(<[u8]>::to_vec).collect(),
            // Changes one after another in one chunk (automerge writes a whole document
            // only when it would send over a third of the ledger, which `due_to_send` leaves to
            // it).
            MessageVersion::V2 => split_changes(&message.changes)
                .unwrap_or_else(|| message.changes.iter().map(<[u8]>::to_vec).collect()),
        };
        let mut slots: Vec<&crate::summary::Slot> = at_hand
            .iter()
            .filter_map(|h| self.recent.by_hash(h))
            .collect();
        slots.sort_by_key(|s| s.noted);
        chunks.extend(slots.iter().map(|s| s.bytes.to_vec()));
        message.changes = chunks.into();
        message.version = MessageVersion::V1;
        Some(message)
    }

    /// The changes automerge's next message to `state`'s peer would carry, by its own rule
    /// (`get_hashes_to_send`): those it asked for, and those since the heads it last shared
    /// with this node that its bloom filter of what it has does not hold, with everything
    /// that builds on them. Less what was already sent. None when automerge would send none
    /// or a whole document instead (a peer that holds nothing, or a gap of over a third of
    /// the ledger to a peer that takes whole documents), or reset the round.
    fn due_to_send(&mut self, state: &automerge::sync::State) -> Vec<ChangeHash> {
        let (Some(have), Some(need)) = (state.their_have.as_ref(), state.their_need.as_ref())
        else {
            return Vec::new();
        };
        if state.peer_read_only {
            return Vec::new();
        }
        let whole_allowed = state
            .their_capabilities
            .as_ref()
            .is_some_and(|c| c.contains(&automerge::sync::Capability::MessageV2));
        if whole_allowed && state.their_heads.as_deref() == Some(&[]) {
            return Vec::new();
        }
        if let Some(first) = have.first()
            && !first.last_sync.iter().all(|h| holds(&mut self.doc, h))
        {
            return Vec::new();
        }
        let mut out: Vec<ChangeHash> = Vec::new();
        if have.is_empty() {
            for h in need {
                if holds(&mut self.doc, h) {
                    out.push(*h);
                }
            }
        } else {
            let last_sync: Vec<ChangeHash> = have
                .iter()
                .flat_map(|h| h.last_sync.iter().copied())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            // Since those heads, in automerge's order (each after what it builds on).
            let since: Vec<(ChangeHash, Vec<ChangeHash>)> = self
                .doc
                .get_changes_meta(&last_sync)
                .into_iter()
                .map(|m| (m.hash, m.deps))
                .collect();
            let mut dependents: HashMap<ChangeHash, Vec<ChangeHash>> = HashMap::new();
            let mut sending: HashSet<ChangeHash> = HashSet::new();
            for (hash, deps) in &since {
                for dep in deps {
                    dependents.entry(*dep).or_default().push(*hash);
                }
                if have.iter().all(|h| !h.bloom.contains_hash(hash)) {
                    sending.insert(*hash);
                }
            }
            let mut stack: Vec<ChangeHash> = sending.iter().copied().collect();
            while let Some(hash) = stack.pop() {
                for dependent in dependents.get(&hash).into_iter().flatten() {
                    if sending.insert(*dependent) {
                        stack.push(*dependent);
                    }
                }
            }
            for h in need {
                if !sending.contains(h) && holds(&mut self.doc, h) {
                    out.push(*h);
                }
            }
            out.extend(
                since
                    .iter()
                    .map(|(h, _)| *h)
                    .filter(|h| sending.contains(h)),
            );
        }
        out.retain(|h| !state.sent_hashes.contains(h));
        if whole_allowed && out.len() > self.tips.held() / 3 {
            return Vec::new();
        }
        out
    }

    /// The changes this ledger put in its sync messages so far, by where their bytes came
    /// from.
    pub fn sync_served(&self) -> SyncServed {
        self.served
    }

    /// How many changes the peer holds that this node lacks, as far as the bloom filter of
    /// what it has, in its last message, tells: every change of the filter (what the peer
    /// holds past the heads it believes it shares with this node) but those of this node's
    /// own past those heads that the filter holds. `Some(0)` when this node holds the
    /// peer's heads; `None` when it cannot tell (the peer has not said its heads, or not
    /// what it has since a round began).
    pub fn lack_from(&mut self, peer: &PeerSync) -> Option<usize> {
        let heads = peer.0.their_heads.as_ref()?;
        if heads.iter().all(|h| holds(&mut self.doc, h)) {
            return Some(0);
        }
        let Some([have]) = peer.0.their_have.as_deref() else {
            return None;
        };
        if !have.last_sync.iter().all(|h| holds(&mut self.doc, h)) {
            return None;
        }
        let theirs = bloom_entries(&have.bloom.to_bytes())?;
        let common = self
            .doc
            .get_changes_meta(&have.last_sync)
            .iter()
            .filter(|c| have.bloom.contains_hash(&c.hash))
            .count();
        Some(
            usize::try_from(theirs)
                .unwrap_or(usize::MAX)
                .saturating_sub(common),
        )
    }

    /// Takes a peer's sync message. Returns the changes that were new here, to store before
    /// anything else is sent. A message that does not decode, or that would make planning the
    /// next message for this peer fail (see `check_message`), is refused with
    /// [`LedgerError::BadMessage`] before it touches the document or the peer's state. A
    /// decodable message that the engine then rejects (or panics on), or that turns out to
    /// carry another event's history, is an error too, but may have reached the in-memory
    /// document: the caller drops this `Ledger` and reopens it from storage, where nothing of
    /// it was written. Peers are authenticated members of this event's mesh, so this is the
    /// path of a buggy peer, not of everyday traffic.
    pub fn receive_sync(
        &mut self,
        peer: &mut PeerSync,
        bytes: &[u8],
        now_ms: i64,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        let mut parts = SyncInParts::parse(bytes)?;
        let new = self.take_sync_part(peer, &mut parts, usize::MAX, now_ms)?;
        self.finish_sync(peer, parts)?;
        Ok(new)
    }

    /// Takes the next part of a message (at most `most` of its changes): checked before any
    /// reaches the document, as a push is ([`Ledger::receive_changes`]). Returns the changes
    /// that were new here, to store before anything else is sent. Errors mean what they
    /// mean for [`Ledger::receive_sync`]; after one, the rest of the message is dropped.
    ///
    /// At most `most` changes in all, in causal order: the part's and those `peer` pushed
    /// before that build on them (after a heal, thousands of a peer's pushes wait on the
    /// part that brings what they build on). What is left waits for the next part or
    /// [`Ledger::take_waiting`].
    pub fn take_sync_part(
        &mut self,
        peer: &mut PeerSync,
        parts: &mut SyncInParts,
        most: usize,
        now_ms: i64,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        let n = most.min(parts.changes.len());
        let part: Vec<Change> = parts.changes.drain(..n).collect();
        self.take_changes(peer, part, now_ms, &parts.checked, most)
    }

    /// After its last part: what the message says of the peer (its heads, what it has and
    /// needs) reaches the peer's sync state, as automerge's `receive_sync_message` would
    /// take it. Changes of the message still untaken are dropped (the next round sends
    /// them again).
    pub fn finish_sync(
        &mut self,
        peer: &mut PeerSync,
        parts: SyncInParts,
    ) -> Result<(), LedgerError> {
        // Its changes reach automerge as none: taken part by part, or all known here (this
        // node learned them from another peer first). Taking the message's heads, automerge
        // would then assume the peer already knows ours ("no changes and the same heads")
        // and never say them, so the peer would go on believing this node lacks what it
        // sent. automerge, handed the changes, answers with its heads; so do we.
        peer.2 = Owed(parts.carried);
        let last_sent = peer.0.last_sent_heads.clone();
        // automerge 0.12 can panic on crafted input; if it does, this replica's state may be
        // half-updated, so the caller must reload it from storage.
        let (doc, deps) = (&mut self.doc, &self.deps);
        guarded(|| take_message(doc, deps, &mut peer.0, parts.message))?;
        if parts.carried {
            peer.0.last_sent_heads = last_sent;
        }
        Ok(())
    }

    /// The ledger `doc` (a whole document a peer sent, `changes` every change of it) makes
    /// for `node`, every change checked as a ledger holding only the event's genesis
    /// checks what it is sent.
    fn checked_whole(
        doc: AutoCommit,
        changes: &[Change],
        node: &NodeId,
        event: &EventId,
        trust: &Trust,
        checked: &crate::sign::Checked,
        now_ms: i64,
    ) -> Result<Self, LedgerError> {
        let mut genesis = AutoCommit::load(&crate::layout::genesis(event))
            .map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        let genesis_heads = genesis.get_heads();
        let made: HashSet<ChangeHash> = genesis.get_changes(&[]).iter().map(|c| c.hash()).collect();
        let roots = roots_of(&genesis)?;
        let theirs: Vec<Change> = changes
            .iter()
            .filter(|c| !made.contains(&c.hash()))
            .cloned()
            .collect();
        let (mut devices, per_ticket) = (HashMap::new(), HashMap::new());
        let mut checker = crate::admit::Checker {
            event,
            trust: Some(trust),
            devices: &mut devices,
            per_ticket: &per_ticket,
            checked,
            vouched: None,
            held: &crate::summary::Summary::default(),
        };
        crate::admit::check(&genesis, &roots, &theirs, now_ms, &mut checker)?;
        check_roots(&doc)?;
        let mut ledger = Self::from_doc(doc, event, genesis_heads, node.clone())?;
        ledger.devices = devices;
        Ok(ledger)
    }

    /// What this ledger holds that the whole document of `parts` lacks, with what the
    /// document needs to check it (this ledger's trust, vouched signatures and devices);
    /// `None` (the document dropped) when it is no ledger of this node's or more than
    /// [`WHOLE_BESIDES_MOST`] are lacking.
    fn besides_of(&mut self, parts: &mut SyncInParts) -> Option<Vec<Change>> {
        let new = parts.ready.as_mut()?;
        if new.node != self.node
            || new.event != self.event
            || new.genesis_heads != self.genesis_heads
        {
            parts.ready = None;
            return None;
        }
        let (theirs, ours) = (new.doc.document(), self.doc.document());
        let besides = guarded(|| Ok(theirs.get_changes_added(ours))).ok();
        if besides
            .as_ref()
            .is_none_or(|b| b.len() > WHOLE_BESIDES_MOST)
        {
            parts.ready = None;
            return None;
        }
        new.trust = self.trust.clone();
        new.vouched = self.vouched.clone();
        for (node, device) in &self.devices {
            new.devices
                .entry(node.clone())
                .or_insert_with(|| device.clone());
        }
        besides
    }

    /// Checks and applies `besides` (what the ledger this one is to replace holds that it
    /// lacks), noting them in `taken` to store as rows after the document; `false` when
    /// they do not go onto it, and it is to be dropped.
    fn takes_besides(
        &mut self,
        besides: Vec<Change>,
        now_ms: i64,
        taken: &mut Vec<StoredChange>,
    ) -> bool {
        let rows: Vec<StoredChange> = besides.iter().map(StoredChange::from).collect();
        let mut scratch = PeerSync::default();
        let unchecked = crate::sign::Checked::default();
        let applied = self.take_changes(&mut scratch, besides, now_ms, &unchecked, usize::MAX);
        let took = applied.is_ok() && scratch.waiting() == 0;
        if took {
            taken.extend(rows);
        }
        took
    }

    /// Hands what this ledger holds that the whole document of `parts` lacks to `parts`, to
    /// apply onto the document off the writer ([`SyncInParts::take_besides`]): onto a
    /// loaded document each costs milliseconds (automerge splits its block of values where
    /// the change lands), and a gate scanning while the document was checked has hundreds.
    /// [`Ledger::take_whole`] then applies only what came since. Returns how many; none
    /// when `parts` holds no document for this ledger.
    pub fn hand_besides(&mut self, parts: &mut SyncInParts) -> usize {
        let besides = self.besides_of(parts).unwrap_or_default();
        let n = besides.len();
        parts.besides = besides;
        n
    }

    /// Takes the whole document of `parts` ([`SyncInParts::prepare_whole`]) in one step:
    /// what this ledger holds that the document lacks (the gate's own scans meanwhile,
    /// pushes from other peers) is checked and applied onto it, and the result replaces
    /// this ledger, which keeps its signer, trust, clock, local standings and the flags it
    /// had not reported. `None`, with nothing changed, when there is no such document,
    /// when this ledger holds more than [`WHOLE_BESIDES_MOST`] changes the document lacks
    /// (it is taken in parts), or when those changes do not go onto it (the parts then
    /// refuse the message, or take it, as they would have). Otherwise the message has no
    /// changes left to take ([`Ledger::finish_sync`] comes next), and what to store is
    /// returned: the document as the peer sent it, in place of every change row, and what
    /// this ledger held that it lacked, as rows after it ([`TakenWhole`]).
    pub fn take_whole(&mut self, parts: &mut SyncInParts, now_ms: i64) -> Option<TakenWhole> {
        parts.besides.clear();
        let besides = self.besides_of(parts)?;
        let mut new = parts.ready.take()?;
        // What this ledger took of late stays at hand to relay (the besides among it).
        new.recent = std::mem::take(&mut self.recent);
        if !new.takes_besides(besides, now_ms, &mut parts.besides_taken) {
            self.recent = std::mem::take(&mut new.recent);
            return None;
        }
        new.doc.set_actor(self.actor.clone());
        new.actor = self.actor.clone();
        new.signer = self.signer.take();
        new.sealing = self.sealing;
        new.clock.join(&self.clock);
        new.local = std::mem::take(&mut self.local);
        new.held = std::mem::take(&mut self.held);
        // The replacement was derived without them: its standings hold them now, so they are
        // not news again.
        let held: Vec<TicketId> = new.held.keys().cloned().collect();
        new.refresh(held);
        // Flags this ledger reported stay reported; those it had not, and the document's
        // new ones, are the replacement's to report.
        let mut newly = std::mem::take(&mut self.newly_flagged);
        let pending: HashSet<TicketId> = newly.iter().cloned().collect();
        newly.extend(
            new.flagged
                .iter()
                .filter(|t| !self.flagged.contains(*t) && !pending.contains(*t))
                .cloned(),
        );
        new.newly_flagged = newly;
        // Likewise the standings: those this ledger had not reported, and those the
        // document brought.
        let mut newly = std::mem::take(&mut self.newly_standing);
        newly.extend(
            new.standings
                .iter()
                .filter(|(t, now)| self.standings.get(*t) != Some(*now))
                .map(|(t, _)| t.clone()),
        );
        newly.extend(
            self.standings
                .keys()
                .filter(|t| !new.standings.contains_key(*t))
                .cloned(),
        );
        new.newly_standing = newly;
        let mut fresh = 0;
        for c in parts.changes.drain(..) {
            if !holds(&mut self.doc, &c.hash()) {
                new.deps.note(&c);
                fresh += 1;
            }
        }
        *self = *new;
        self.share_devices();
        Some(TakenWhole {
            new: fresh,
            snapshot: std::mem::take(&mut parts.whole_bytes),
            rows: std::mem::take(&mut parts.besides_taken),
        })
    }

    /// Takes changes a peer pushed as it made them (change chunks, one after another),
    /// through the checks of [`Ledger::receive_sync`]: bounded, decoded and checked before
    /// any reaches the document; one that builds on a change this node lacks waits with the
    /// peer's held-back changes ([`PeerSync::waiting`]), and the next sync message to the
    /// peer asks for what it builds on. The peer's sync state is not touched otherwise: the
    /// next round of the sync protocol learns from the peer what it holds. Returns the
    /// changes that were new here, to store before anything else is sent. Errors mean what
    /// they mean for [`Ledger::receive_sync`]. Costs what the changes hold, not the ledger:
    /// no change graph is walked.
    pub fn receive_changes(
        &mut self,
        peer: &mut PeerSync,
        bytes: &[u8],
        now_ms: i64,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        self.receive_changes_upto(peer, bytes, now_ms, usize::MAX)
    }

    /// [`Ledger::receive_changes`], taking at most `most` of them now (the first in causal
    /// order): the rest wait with the peer's held-back changes, ready, for
    /// [`Ledger::take_waiting`]. A relay of a partition's gap is thousands of changes; taken
    /// in one go they held a gate's scans for a second.
    pub fn receive_changes_upto(
        &mut self,
        peer: &mut PeerSync,
        bytes: &[u8],
        now_ms: i64,
        most: usize,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        bounded(bytes, "pushed changes")?;
        crate::admit::Inflation::default().all(bytes)?;
        let doc = &mut self.doc;
        let read = guarded(|| crate::admit::new_changes(doc, bytes))?;
        self.take_pushed(peer, read, now_ms, most)
    }

    /// [`Ledger::receive_changes_upto`] of a push read and checked ahead ([`PushAhead`]):
    /// not read again here.
    pub fn receive_push_upto(
        &mut self,
        peer: &mut PeerSync,
        push: PushAhead,
        now_ms: i64,
        most: usize,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        let changes = match push.read {
            Ok(changes) => changes,
            Err(bytes) => return self.receive_changes_upto(peer, &bytes, now_ms, most),
        };
        let carried = changes.len();
        let doc = &mut self.doc;
        let incoming: Vec<Change> = changes
            .into_iter()
            .filter(|c| !holds(doc, &c.hash()))
            .collect();
        let held = carried - incoming.len();
        self.take_pushed(peer, (incoming, held), now_ms, most)
    }

    /// Takes a push's changes this ledger lacks, `held` more having come that it holds.
    fn take_pushed(
        &mut self,
        peer: &mut PeerSync,
        (incoming, held): (Vec<Change>, usize),
        now_ms: i64,
        most: usize,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        peer.5.came += held as u64;
        peer.5.held += held as u64;
        self.take_changes(
            peer,
            incoming,
            now_ms,
            &crate::sign::Checked::default(),
            most,
        )
    }

    /// Takes those of `peer`'s held-back changes ([`PeerSync::waiting`]) whose changes they
    /// build on arrived since, by another peer or another path: checked as if pushed now.
    /// Without this a change that came before what it builds on would wait for the peer's
    /// next message, however long that is. Errors mean what they mean for
    /// [`Ledger::receive_changes`]; the peer's held-back changes are dropped with one.
    ///
    /// At most `most` are taken (the first in causal order); the rest stay held back, for
    /// the next call: after a heal thousands can wait on one catch-up part, and taking them
    /// in one go held a gate's scans for seconds.
    pub fn take_waiting(
        &mut self,
        peer: &mut PeerSync,
        most: usize,
        now_ms: i64,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        // Looked at again only once something they lack came (or a bound left some).
        peer.1.settle(|h| self.knows(h));
        if !peer.1.has_ready() {
            return Ok(Vec::new());
        }
        self.take_changes(
            peer,
            Vec::new(),
            now_ms,
            &crate::sign::Checked::default(),
            most,
        )
    }

    /// Checks `incoming` (none held here) with what `peer` holds back, and applies what
    /// passes and builds on what is here.
    fn take_changes(
        &mut self,
        peer: &mut PeerSync,
        incoming: Vec<Change>,
        now_ms: i64,
        checked: &crate::sign::Checked,
        most: usize,
    ) -> Result<Vec<StoredChange>, LedgerError> {
        let (incoming, touched) = self.checked(peer, incoming, now_ms, checked, most)?;
        if incoming.is_empty() {
            return Ok(Vec::new());
        }
        // automerge 0.12 can panic on crafted changes; if it does, this replica's document
        // may be half-updated, so the caller must reload it from storage.
        let doc = &mut self.doc;
        guarded(|| apply_in_steps(doc, incoming.clone()))?;
        let (taken, own) = self.applied(&incoming, touched, peer.6.as_deref())?;
        peer.5.taken += taken.len() as u64;
        peer.5.taken_own += own;
        peer.5.dropped += (incoming.len() - taken.len()) as u64;
        Ok(taken)
    }

    /// With the changes `peer` sent before that wait for what they build on: splits
    /// `incoming` (none held here) into what can be applied now, checked, with the tickets
    /// it touches, and what waits (unchecked, out of the document, kept in `peer`).
    fn checked(
        &mut self,
        peer: &mut PeerSync,
        incoming: Vec<Change>,
        now_ms: i64,
        checked: &crate::sign::Checked,
        most: usize,
    ) -> Result<(Vec<Change>, HashSet<TicketId>), LedgerError> {
        let (pending, books) = (&mut peer.1, &mut peer.5);
        let mut knows = |h: &ChangeHash| self.knows(h);
        let mut fresh = Vec::new();
        books.came += incoming.len() as u64;
        for c in incoming {
            let hash = c.hash();
            if knows(&hash) {
                books.held += 1;
                continue;
            }
            if pending.add(c, &mut knows) {
                fresh.push(hash);
            } else {
                books.waiting_already += 1;
            }
        }
        pending.settle(&mut knows);
        let (waiting, waiting_bytes) = (pending.changes.len(), pending.bytes);
        if waiting > MAX_PENDING || waiting_bytes > MAX_PENDING_BYTES {
            // The peer's connection ends with this, and what it sent with it.
            *pending = Pending::default();
            books.dropped += waiting as u64;
            return Err(LedgerError::Refused(format!(
                "{waiting} changes ({waiting_bytes} bytes) that build on changes never sent"
            )));
        }
        // In causal order: the first `most` build only on what is here and on each other.
        let (incoming, held_when_taken) = pending.take(most, knows);
        books.held_when_taken += held_when_taken;
        let mut checker = crate::admit::Checker {
            event: &self.event,
            trust: self.trust.as_ref(),
            devices: &mut self.devices,
            per_ticket: &self.per_ticket,
            checked,
            vouched: self.vouched.as_deref(),
            held: &self.tips,
        };
        let touched = guarded(|| {
            crate::admit::check(&self.doc, &self.roots, &incoming, now_ms, &mut checker)
        })
        .inspect_err(|_| peer.5.dropped += incoming.len() as u64)?;
        // After the check, which may have brought the devices of what still waits.
        self.note_signed(&mut peer.1, fresh);
        Ok((incoming, touched))
    }

    /// Of the changes `fresh` that came to wait with `pending`, and of those that waited
    /// for their authors' devices while the ledger holds more devices now, notes those
    /// signed by their authors: what a summary may say is coming. Each signature is
    /// verified once here, and kept with the node's prechecks' (`vouched`), so the check
    /// that takes the change does not verify it again; a large push's were found good
    /// ahead, off the writer.
    fn note_signed(&self, pending: &mut Pending, fresh: Vec<ChangeHash>) {
        let mut look = fresh;
        if pending.devices_seen != self.devices.len() {
            pending.devices_seen = self.devices.len();
            look.append(&mut pending.unsigned);
        } else if pending.unsigned.len() > 2 * pending.changes.len() + 64 {
            // Those taken since, or dropped, leave.
            let changes = &pending.changes;
            pending.unsigned.retain(|h| changes.contains_key(h));
        }
        for hash in look {
            let Some(waiting) = pending.changes.get(&hash) else {
                continue;
            };
            match self.authorship(&waiting.change) {
                Authorship::Signed => pending.vouch(&hash),
                Authorship::Unknown => pending.unsigned.push(hash),
                Authorship::Bad => {}
            }
        }
    }

    /// Whether `change` is signed by its author, a device this ledger holds (`authored.rs`).
    /// Found good before (by a precheck, or from another peer) it costs a digest; otherwise
    /// an ECDSA verification, whose result is kept (`vouched`). A ledger that nobody signs
    /// in (no trust) counts every change as signed.
    fn authorship(&self, change: &Change) -> Authorship {
        if self.trust.is_none() {
            return Authorship::Signed;
        }
        let Some(device) =
            crate::authored::node_of(change.actor_id()).and_then(|n| self.devices.get(&n))
        else {
            return Authorship::Unknown;
        };
        if crate::admit::signed_by_author(change, device, &self.event, self.vouched.as_deref()) {
            Authorship::Signed
        } else {
            Authorship::Bad
        }
    }

    /// After checked changes (`applied`, every one new here) reached the document: it must
    /// still be this event's; the tickets they touched are derived again. Returns the
    /// changes the document took, to store as they came. Costs what was added (automerge
    /// 0.12 rebuilds a change it is asked for from its operations, at a cost that grows
    /// with the ledger).
    fn applied(
        &mut self,
        applied: &[Change],
        touched: HashSet<TicketId>,
        writer: Option<&str>,
    ) -> Result<(Vec<StoredChange>, u64), LedgerError> {
        let found = event_of(&self.doc)?;
        if found != self.event.as_str() {
            return Err(LedgerError::WrongEvent {
                expected: self.event.clone(),
                found,
            });
        }
        check_roots(&self.doc)?;
        self.refresh_touched(touched);
        // Not every change checked is in: of two changes of one writer and sequence number
        // (one damaged in a field no rule reads, a copy of the real one), the document takes
        // one and drops the other.
        let mut taken = Vec::with_capacity(applied.len());
        let mut writers: HashMap<ActorId, bool> = HashMap::new();
        let mut own = 0;
        for c in applied {
            if holds(&mut self.doc, &c.hash()) {
                self.note(c);
                taken.push(StoredChange::from(c));
                if let Some(name) = writer {
                    let by = match writers.get(c.actor_id()) {
                        Some(by) => *by,
                        None => {
                            let by = self.device_named(c.actor_id(), name);
                            writers.insert(c.actor_id().clone(), by);
                            by
                        }
                    };
                    own += u64::from(by);
                }
            }
        }
        self.share_devices();
        Ok((taken, own))
    }
}

impl PeerSync {
    /// A peer's state whose messages carry at most `changes` bytes of changes each (one
    /// change larger than that still goes, alone) and whole documents of at most `whole`
    /// bytes, not [`SYNC_CHANGES_MOST`] and [`SYNC_MESSAGE_MOST`]: a peer on a slow link
    /// gets smaller messages, which hold up fewer pushes behind them.
    pub fn with_message_most(changes: usize, whole: usize) -> Self {
        Self(
            Default::default(),
            Default::default(),
            Default::default(),
            Sizes {
                most: changes,
                whole_most: whole,
                ..Sizes::default()
            },
            Default::default(),
            LinkBooks::default(),
            None,
        )
    }

    /// The state for the peer device named `name` (its certificate's name): the changes
    /// it wrote itself are told apart from those it relays ([`LinkBooks::taken_own`]). A
    /// gate that asked the peer for a gap counts what it wrote itself as the gap coming only
    /// while no other peer offers the gap: a stolen device could otherwise look busy by
    /// writing its own records as fast as it likes.
    pub fn of(name: &str) -> Self {
        Self {
            6: Some(name.into()),
            ..Self::default()
        }
    }

    /// Whether the next messages to the peer ask it for what this node lacks (say what this
    /// node has and needs): on by default. A gate catching up a large gap from one peer
    /// (after a heal, on joining late) turns it off for the others that hold the same gap,
    /// so it gets the gap once, not once from each; its own changes still go to them.
    pub fn set_asking(&mut self, asking: bool) {
        self.3.asking = asking;
    }

    /// Begins a round of the sync protocol (on a timer, after missed pushes): what the peer
    /// said it has in its last message is stale by now (pushes went both ways since), so
    /// the next message sends no changes by it, only this node's heads and what it has; the
    /// peer answers with what this node lacks and what it has, and only what it lacks then
    /// is sent. Without this, every gate would send every other gate all it had learned
    /// since the last round.
    pub fn start_round(&mut self) {
        self.0.their_have = None;
        self.0.their_need = None;
        // Sent even if automerge believes the peer knows our heads: a round is asked for
        // because this node believes otherwise.
        self.0.have_responded = false;
    }

    /// The peer began a round: the answer goes out (our heads, what we have) even when
    /// automerge believes the peer knows them, or the peer, not hearing them, would go on
    /// believing this node lacks what it has.
    pub fn answer_round(&mut self) {
        self.0.have_responded = false;
    }

    /// Changes of this peer waiting for the changes they build on.
    pub fn waiting(&self) -> usize {
        self.1.changes.len()
    }

    /// This connection's books ([`LinkBooks`]).
    pub fn books(&self) -> LinkBooks {
        self.5
    }

    /// Changes relayed to the peer on this connection, by why each went.
    pub fn relayed_by(&self) -> crate::summary::RelayedBy {
        self.4.by_why
    }
}

/// The type byte of a document chunk, after its magic bytes and checksum (a change's is 1).
const DOCUMENT: u8 = 0;

/// Stops automerge sending `state`'s peer whole documents (its message V2); whether it did.
fn take_v2(state: &mut automerge::sync::State) -> bool {
    use automerge::sync::Capability;
    let Some(capabilities) = state.their_capabilities.as_mut() else {
        return false;
    };
    let had = capabilities.contains(&Capability::MessageV2);
    capabilities.retain(|c| *c != Capability::MessageV2);
    had
}

/// Lets automerge send `state`'s peer whole documents again.
fn give_v2(state: &mut automerge::sync::State) {
    use automerge::sync::Capability;
    state
        .their_capabilities
        .get_or_insert_with(Vec::new)
        .push(Capability::MessageV2);
}

/// Change chunks written one after another (a V2 message's changes), one by one: each is 4
/// magic bytes, a 4-byte checksum, its type, its length (LEB128) and that many bytes.
/// `None` if they do not read so.
fn split_changes(chunks: &automerge::sync::ChunkList) -> Option<Vec<Vec<u8>>> {
    Some(
        change_slices(chunks)?
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// [`split_changes`], each change where it is.
fn change_slices(chunks: &automerge::sync::ChunkList) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    for mut rest in chunks.iter() {
        while !rest.is_empty() {
            let mut after_type = rest.get(9..)?;
            let len = usize::try_from(read_leb128(&mut after_type).ok()?).ok()?;
            let header = rest.len() - after_type.len();
            let end = header.checked_add(len)?;
            out.push(rest.get(..end)?);
            rest = &rest[end..];
        }
    }
    Some(out)
}

/// The bytes of the changes `message` carries.
fn chunk_bytes(message: &automerge::sync::Message) -> usize {
    message.changes.iter().map(<[u8]>::len).sum()
}

/// Keeps the changes of a V1 `message` (one change per chunk, in the order they build on
/// each other) up to `most` bytes, at least one; the rest leave `sent`, so the next message
/// to the peer carries them.
fn cap_changes(
    message: &mut automerge::sync::Message,
    sent: &mut std::collections::BTreeSet<ChangeHash>,
    most: usize,
) {
    if chunk_bytes(message) <= most {
        return;
    }
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let (mut bytes, mut full) = (0, false);
    for chunk in message.changes.iter() {
        full = full || (!kept.is_empty() && bytes + chunk.len() > most);
        if !full {
            bytes += chunk.len();
            kept.push(chunk.to_vec());
            continue;
        }
        match change_hash(chunk) {
            Some(hash) => {
                sent.remove(&hash);
            }
            // Not a change chunk as automerge writes them: forget everything sent instead
            // (the peer ignores what it already holds).
            None => sent.clear(),
        }
    }
    message.changes = kept.into();
}

/// The hash of a change chunk as automerge writes it (4 magic bytes, a 4-byte checksum,
/// then its type, 1 for a change, its length and its data): the SHA-256 of everything after
/// the checksum. `None` for any other chunk.
fn change_hash(chunk: &[u8]) -> Option<ChangeHash> {
    use sha2::{Digest, Sha256};
    const CHANGE: u8 = 1;
    match chunk.get(8) {
        Some(&CHANGE) => Some(ChangeHash(Sha256::digest(&chunk[8..]).into())),
        _ => None,
    }
}

/// What automerge 0.12's `receive_sync_message` does with a message (its state rules, step
/// by step), but for trimming the hashes sent to the peer. automerge removes from
/// `sent_hashes` every ancestor of the peer's heads by walking the *whole* change graph for
/// every message, however few hashes it holds: 68 % of a gate's time at 10,000 redemptions
/// and 7 peers, O(ledger × peers) per admission (`gatemesh bench fanout`). Here the walk
/// stops once nothing sent is left to find, or after a bounded number of changes; a hash it
/// does not reach stays in `sent_hashes`, which only means it is not sent again on this
/// connection (it was sent, and frames do not get lost on one).
fn take_message(
    doc: &mut AutoCommit,
    deps: &Deps,
    state: &mut automerge::sync::State,
    message: automerge::sync::Message,
) -> Result<(), LedgerError> {
    use automerge::sync::{Capability, Message, MessageFlags};
    state.in_flight = false;
    let before = doc.get_heads();
    let Message {
        heads,
        changes,
        need,
        have,
        flags,
        ..
    } = message;
    if let Some(flags) = flags {
        let mut capabilities = vec![Capability::MessageV2];
        if flags.contains(MessageFlags::SUPPORTS_SYNC_RESET) {
            capabilities.push(Capability::SyncReset);
        }
        state.their_capabilities = Some(capabilities);
        if flags.contains(MessageFlags::SYNC_RESET) {
            state.sent_hashes.clear();
        }
        state.peer_read_only = flags.contains(MessageFlags::READ_ONLY);
    }
    let no_changes = changes.is_empty();
    if !no_changes && !state.read_only {
        let bytes: Vec<u8> = changes.iter().flatten().copied().collect();
        doc.load_incremental(&bytes)?;
        let after: HashSet<ChangeHash> = doc.get_heads().into_iter().collect();
        // The heads both sides now hold: this node's new heads, and the shared heads it
        // still has as heads.
        let mut shared: Vec<ChangeHash> = after
            .iter()
            .filter(|h| !before.contains(h))
            .chain(state.shared_heads.iter().filter(|h| after.contains(h)))
            .copied()
            .collect();
        shared.sort();
        shared.dedup();
        state.shared_heads = shared;
    }
    trim_sent(doc, deps, &heads, &mut state.sent_hashes);
    if no_changes && heads == before {
        state.last_sent_heads.clone_from(&heads);
    }
    let known: Vec<ChangeHash> = heads.iter().filter(|h| holds(doc, h)).copied().collect();
    if known.len() == heads.len() {
        state.shared_heads.clone_from(&heads);
        // A peer that lost all its data: start over.
        if heads.is_empty() {
            state.last_sent_heads = Vec::new();
            state.sent_hashes = Default::default();
        }
    } else {
        state.shared_heads.extend(known);
        state.shared_heads.sort();
        state.shared_heads.dedup();
    }
    state.their_have = Some(have);
    state.their_heads = Some(heads);
    state.their_need = Some(need);
    Ok(())
}

/// Removes from `sent` the hashes the peer holds as `heads` or their ancestors, walking back
/// from `heads` until none is left or [`TRIM_WALK`] changes past what `sent` holds were
/// visited.
fn trim_sent(
    doc: &mut AutoCommit,
    deps: &Deps,
    heads: &[ChangeHash],
    sent: &mut std::collections::BTreeSet<ChangeHash>,
) {
    let budget = TRIM_WALK + 4 * sent.len();
    let mut to_visit: Vec<ChangeHash> = heads.to_vec();
    let mut visited: HashSet<ChangeHash> = HashSet::new();
    while let Some(hash) = to_visit.pop() {
        if sent.is_empty() || visited.len() >= budget {
            return;
        }
        if !visited.insert(hash) {
            continue;
        }
        if deps.extend(doc, &hash, &mut to_visit) {
            sent.remove(&hash);
        }
    }
}

/// Changes the walk of [`trim_sent`] may visit beyond four per hash it looks for.
const TRIM_WALK: usize = 256;

/// Most probes a peer's bloom filter may ask for; automerge uses 7.
const MAX_BLOOM_PROBES: u32 = 64;

/// Refuses what automerge 0.12 decodes but later trusts when it plans the next message for
/// this peer (`generate_sync_message`, outside any guard, on the gate's writer thread):
/// - a hash listed twice in `need` makes it panic (`MissingOps`), and heads out of order
///   come back as the last-sync hashes of our reply, whose encoder asserts they are sorted;
///   automerge itself always sends heads, needs and last-sync hashes sorted and unique, so
///   anything else is refused;
/// - a bloom filter with entries but no bits divides by zero on every probe;
/// - a bloom filter's probe count is trusted as is: `u32::MAX` probes allocate 16 GiB and
///   loop for minutes per hash.
fn check_message(message: &automerge::sync::Message) -> Result<(), LedgerError> {
    let ascending = |hashes: &[ChangeHash]| hashes.windows(2).all(|w| w[0] < w[1]);
    if !ascending(&message.heads)
        || !ascending(&message.need)
        || message.have.iter().any(|h| !ascending(&h.last_sync))
    {
        return Err(LedgerError::BadMessage(
            "hashes repeated or out of order".into(),
        ));
    }
    for have in &message.have {
        check_bloom(&have.bloom.to_bytes())?;
    }
    Ok(())
}

/// How many hashes a bloom filter holds (its first number, see [`check_bloom`]); `None` if
/// it does not read.
fn bloom_entries(mut bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return Some(0);
    }
    read_leb128(&mut bytes).ok()
}

/// Reads one unsigned LEB128 number off the front of `bytes`.
fn read_leb128(bytes: &mut &[u8]) -> Result<u64, LedgerError> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes
            .split_first()
            .ok_or_else(|| LedgerError::BadMessage("a truncated bloom filter".into()))?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(LedgerError::BadMessage(
        "a bloom filter's number overflows".into(),
    ))
}

/// `bytes` as `BloomFilter::to_bytes` writes them: nothing for an empty filter (never
/// probed), else entries, bits per entry and probes (LEB128), then the bits.
fn check_bloom(mut bytes: &[u8]) -> Result<(), LedgerError> {
    if bytes.is_empty() {
        return Ok(());
    }
    let mut read = || read_leb128(&mut bytes);
    let (_entries, _bits_per_entry, probes) = (read()?, read()?, read()?);
    if probes > u64::from(MAX_BLOOM_PROBES) {
        return Err(LedgerError::BadMessage(format!(
            "a bloom filter with {probes} probes"
        )));
    }
    if bytes.is_empty() {
        return Err(LedgerError::BadMessage(
            "a bloom filter with entries but no bits".into(),
        ));
    }
    Ok(())
}

/// Tickets whose records changed between two sets of heads.
fn touched_tickets(
    doc: &mut AutoCommit,
    roots: &Roots,
    before: &[ChangeHash],
    after: &[ChangeHash],
) -> HashSet<TicketId> {
    let mut out = HashSet::new();
    for patch in doc.diff(before, after) {
        if !roots.is_ticket_shard(&patch.obj) {
            continue;
        }
        let key = match &patch.action {
            PatchAction::PutMap { key, .. } | PatchAction::DeleteMap { key } => key.clone(),
            _ => match patch.path.last() {
                Some((_, Prop::Map(key))) => key.clone(),
                _ => continue,
            },
        };
        out.extend(ticket_of_key(&key));
    }
    out
}

#[cfg(test)]
mod tests {
    use automerge::{AutoCommit, ROOT, transaction::Transactable};

    use super::*;

    /// Changes of two writers, each building on the last: `a` writes `n`, `b` takes them
    /// and writes `n` on top, one after another.
    fn chain(n: usize) -> Vec<Change> {
        let (mut a, mut b) = (AutoCommit::new(), AutoCommit::new());
        let mut out = Vec::new();
        for i in 0..n {
            a.put(ROOT, format!("a{i}"), i as i64).unwrap();
            a.commit();
            let change = a.get_last_local_change().unwrap().clone();
            b.apply_changes([change.clone()]).unwrap();
            out.push(change);
            b.put(ROOT, format!("b{i}"), i as i64).unwrap();
            b.commit();
            let change = b.get_last_local_change().unwrap().clone();
            a.apply_changes([change.clone()]).unwrap();
            out.push(change);
        }
        out
    }

    fn hashes(changes: &[Change]) -> Vec<ChangeHash> {
        changes.iter().map(Change::hash).collect()
    }

    /// `changes` made to wait in the order given, none held but `held`.
    fn waiting(changes: &[Change], held: &[ChangeHash]) -> Pending {
        let mut pending = Pending::default();
        for c in changes {
            pending.add(c.clone(), &mut |h| held.contains(h));
        }
        pending
    }

    #[test]
    fn changes_given_last_first_are_taken_in_causal_order() {
        let changes = chain(50);
        let mut reversed = changes.clone();
        reversed.reverse();
        let mut pending = waiting(&reversed, &[]);
        assert_eq!(pending.changes.len(), 100);
        let taken = pending.take(usize::MAX, |_| false).0;
        assert_eq!(hashes(&taken), hashes(&changes));
        assert!(pending.changes.is_empty() && pending.waiters.is_empty());
        assert!(pending.missing.is_empty() && pending.bytes == 0);
    }

    #[test]
    fn what_builds_on_a_change_neither_here_nor_held_waits_and_names_it() {
        let changes = chain(10);
        // The fifth change is not given: the first four go, the rest wait on it alone.
        let mut given = changes.clone();
        let absent = given.remove(4);
        given.swap(0, 7);
        let mut pending = waiting(&given, &[]);
        assert_eq!(
            hashes(&pending.take(usize::MAX, |_| false).0),
            hashes(&changes[..4])
        );
        assert_eq!(pending.changes.len(), 15);
        assert_eq!(
            pending.missing.iter().copied().collect::<Vec<_>>(),
            [absent.hash()]
        );
        // Nothing arrived: nothing to take, and finding that out looked at one hash.
        let mut looked = 0;
        pending.settle(|_| {
            looked += 1;
            false
        });
        assert_eq!(looked, 1);
        assert!(!pending.has_ready());
        // It arrived (from another peer): the rest go, a bounded number at a time, each
        // after what it builds on.
        pending.settle(|h| *h == absent.hash());
        let mut taken = Vec::new();
        while pending.has_ready() {
            let part = pending.take(4, |_| false).0;
            assert!(part.len() <= 4);
            taken.extend(part);
        }
        assert_eq!(hashes(&taken), hashes(&changes[5..]));
        assert!(pending.changes.is_empty() && pending.missing.is_empty());
    }

    #[test]
    fn a_waiting_change_another_peer_brought_is_dropped_and_frees_what_builds_on_it() {
        let changes = chain(3);
        // The first is missing; the second and third wait, and then the first two come
        // from elsewhere: the third is taken, the second is not taken twice.
        let mut pending = waiting(&changes[1..], &[]);
        assert!(pending.take(usize::MAX, |_| false).0.is_empty());
        let held = [changes[0].hash(), changes[1].hash()];
        pending.settle(|h| held.contains(h));
        let (taken, held_when_taken) = pending.take(usize::MAX, |h| held.contains(h));
        assert_eq!(hashes(&taken), hashes(&changes[2..]));
        assert_eq!(held_when_taken, 1, "the second, brought meanwhile");
        assert!(pending.changes.is_empty());
        // A change that comes twice waits once.
        let mut pending = waiting(&[changes[2].clone(), changes[2].clone()], &[]);
        assert_eq!(pending.changes.len(), 1);
        assert_eq!(pending.bytes, changes[2].raw_bytes().len());
        assert!(pending.take(usize::MAX, |_| false).0.is_empty());
    }
}
