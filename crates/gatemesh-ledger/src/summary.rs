//! What a ledger holds, writer by writer, in a few bytes ([`Summary`]), and the changes it
//! took recently, to relay from ([`Recent`]).
//!
//! Peers tell each other their summaries every second. That is the steady-state check that
//! nothing was missed, in place of a round of automerge's sync protocol (a bloom filter of
//! every change since the last round, and a walk of the change graph to answer it: in a
//! busy mesh, where two gates never agree for long, a round every two seconds with each
//! peer). Comparing two summaries costs what the event has writers, not what it has changes.
//!
//! Automerge holds a writer's changes in order: it takes a change only after the one before
//! it of the same writer (sequence numbers 1, 2, …, each applied once). So a ledger holds,
//! of each writer, every change up to its newest, and the summary's newest change of each
//! writer (its number and hash) says which changes of it the ledger holds. Two ledgers whose
//! summaries are equal hold the same changes from every honest writer (an honest writer's
//! change builds on its previous one, so its hash covers them all); a dishonest one that
//! writes two different changes under one number is seen where the hashes differ, and the
//! sync protocol's round then compares the changes themselves.
//!
//! What a peer lacks is relayed from [`Recent`], as the changes came, to a bound: a gap
//! larger than that, or older than what is at hand, goes to the sync protocol, which is built
//! for catch-up. A writer's own changes reach a peer by its pushes; another writer's are
//! relayed only to a peer that writer cannot reach itself, and then by one peer first (a
//! rank drawn from the writer and the relayer's names), the others only if the peer still
//! lacks them a while later: a gate whose link to one writer is down gets that writer's
//! admissions once, not from each of its thirty peers.

use std::{
    collections::{BTreeMap, HashMap, HashSet, VecDeque},
    sync::Arc,
};

use automerge::{ActorId, Change, ChangeHash};

use crate::doc::LedgerError;

/// The newest change of one writer that a ledger holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tip {
    /// Its sequence number: the ledger holds this writer's changes 1 to `seq`.
    pub seq: u64,
    /// Its hash.
    pub hash: ChangeHash,
}

/// What a ledger holds: the newest change of each writer (automerge actor).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary(BTreeMap<ActorId, Tip>);

/// The version of a summary message this build writes. Version 2 added what the sender
/// wants relayed ([`Wants`]), version 3 what of each writer is on its way into its ledger
/// ([`Told::coming`]), version 4 what of each writer waits past a gap ([`Told::beyond`]).
/// Versions 2 to 4 are read (a gate of an earlier build, in a mesh being upgraded, is told
/// of nothing coming or waiting); any other is refused ([`LedgerError::BadMessage`]).
pub const SUMMARY_VERSION: u8 = 4;

/// The oldest summary version this build reads.
const SUMMARY_VERSION_OLDEST: u8 = 2;

/// What the sender of a summary wants relayed to it, its last byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wants {
    /// The peer's own changes, and those of the writers the sender does not reach: the
    /// steady state (see the module's documentation).
    #[default]
    Relays,
    /// Every writer's changes it lacks that the peer has at hand: it lacks a large gap (a
    /// partition's, after it heals), and catches up from this one peer.
    Gap,
    /// None: it catches up a large gap from another peer, which sends every writer's
    /// changes; this one's would come twice. What the peer pushes still goes.
    Nothing,
}

impl Wants {
    fn byte(self) -> u8 {
        match self {
            Wants::Relays => 0,
            Wants::Gap => 1,
            Wants::Nothing => 2,
        }
    }

    fn of(byte: u8) -> Option<Wants> {
        [Wants::Relays, Wants::Gap, Wants::Nothing]
            .into_iter()
            .find(|w| w.byte() == byte)
    }
}

/// A peer's summary message, read ([`Summary::decode`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// What the peer holds.
    pub summary: Summary,
    /// The devices it reaches now.
    pub reaches: Vec<String>,
    /// What it wants relayed to it.
    pub wants: Wants,
    /// Per writer, the newest of the changes after its newest held there that the peer was
    /// sent and has yet to take, one after another (it takes a large push a part at a
    /// time): none of them is relayed to it again, unless it lacked the writer's changes
    /// for [`RELAY_LOST_ANYWAY_MS`]. The peer counts only changes it found signed by
    /// their writers; a dishonest peer's summary could say anything, and that bound is
    /// what stands against it.
    pub coming: BTreeMap<ActorId, u64>,
    /// Per writer, the first run of changes one after another (the first and last numbers)
    /// that the peer was sent and has yet to take past a gap after what is coming: what the
    /// writer pushed to it while it catches up a partition's gap of the writer's changes
    /// from another peer. None of them is relayed to it, as for [`Told::coming`]: every
    /// peer relaying the gap relayed the writer's fresh changes too, which the writer's
    /// pushes had brought already.
    pub beyond: BTreeMap<ActorId, (u64, u64)>,
}

/// Most writers one summary message may name: an event has tens of devices (gates,
/// observers, their replacements).
pub const SUMMARY_WRITERS_MOST: usize = 1024;

/// Most devices one summary message may say its sender reaches.
pub const SUMMARY_REACHES_MOST: usize = 256;

/// Longest writer id (automerge actor) and device name a summary message carries, in bytes:
/// a node id (at most 64) and an incarnation (`~` and 8, `authored::incarnation`).
const ID_MOST: usize = 73;

impl Summary {
    /// A change the ledger took (or made): the newest of its writer if it is newer.
    pub(crate) fn note(&mut self, actor: &ActorId, seq: u64, hash: ChangeHash) {
        match self.0.get_mut(actor) {
            Some(tip) if tip.seq >= seq => {}
            Some(tip) => *tip = Tip { seq, hash },
            None => {
                self.0.insert(actor.clone(), Tip { seq, hash });
            }
        }
    }

    /// The newest change of `actor` held, if any.
    pub fn tip(&self, actor: &ActorId) -> Option<&Tip> {
        self.0.get(actor)
    }

    /// Every writer and its newest change, in the order of their ids.
    pub fn tips(&self) -> impl Iterator<Item = (&ActorId, &Tip)> {
        self.0.iter()
    }

    /// How many changes the ledger holds, of every writer.
    pub fn held(&self) -> usize {
        self.0.values().fold(0usize, |n, tip| {
            n.saturating_add(usize::try_from(tip.seq).unwrap_or(usize::MAX))
        })
    }

    /// How many changes this summary's ledger holds that `other`'s lacks, by the writers'
    /// sequence numbers.
    pub fn lacked_by(&self, other: &Summary) -> usize {
        // Both are in writer order: one pass over each, no lookups (asked several times per
        // peer's summary, a summary from each of up to 31 peers a second).
        let mut theirs = other.0.iter().peekable();
        let mut lack = 0usize;
        for (actor, tip) in &self.0 {
            while theirs.next_if(|(a, _)| *a < actor).is_some() {}
            let their_seq = theirs
                .next_if(|(a, _)| *a == actor)
                .map_or(0, |(_, t)| t.seq);
            let lacked = usize::try_from(tip.seq.saturating_sub(their_seq)).unwrap_or(usize::MAX);
            lack = lack.saturating_add(lacked);
        }
        lack
    }

    /// The writers of which this summary's ledger holds changes that `other`'s lacks, in
    /// writer order.
    pub(crate) fn lacked_writers<'a>(
        &'a self,
        other: &'a Summary,
    ) -> impl Iterator<Item = &'a ActorId> + 'a {
        let mut theirs = other.0.iter().peekable();
        self.0.iter().filter_map(move |(actor, tip)| {
            while theirs.next_if(|(a, _)| *a < actor).is_some() {}
            let their_seq = theirs
                .next_if(|(a, _)| *a == actor)
                .map_or(0, |(_, t)| t.seq);
            (tip.seq > their_seq).then_some(actor)
        })
    }

    /// The message that tells a peer this summary, the devices its sender reaches now
    /// (their names; at most [`SUMMARY_REACHES_MOST`], longer ones left out), and what the
    /// sender wants relayed: version, then each writer (its id's length and bytes, its
    /// newest change's number as LEB128 and hash), then each device name (length and
    /// bytes), then a byte of what it wants ([`Wants`]: 0 the usual relays, 1 a gap, 2
    /// nothing).
    pub fn encode(&self, reaches: &[String], wants: Wants) -> Vec<u8> {
        self.encode_with(reaches, wants, &BTreeMap::new(), &BTreeMap::new())
    }

    /// [`Summary::encode`], saying what of each writer is on its way ([`Told::coming`]):
    /// after each writer's newest change, how many more are coming (LEB128, 0 for none);
    /// then how many are lacked between them and the run that waits past them
    /// ([`Told::beyond`]: LEB128, 0 for none), and if some are, how many the run holds.
    pub(crate) fn encode_with(
        &self,
        reaches: &[String],
        wants: Wants,
        coming: &BTreeMap<ActorId, u64>,
        beyond: &BTreeMap<ActorId, (u64, u64)>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.0.len() * 72 + reaches.len() * 24);
        out.push(SUMMARY_VERSION);
        let writers: Vec<_> = self
            .0
            .iter()
            .filter(|(actor, _)| (1..=ID_MOST).contains(&actor.to_bytes().len()))
            .take(SUMMARY_WRITERS_MOST)
            .collect();
        write_leb128(&mut out, writers.len() as u64);
        for (actor, tip) in writers {
            let id = actor.to_bytes();
            out.push(id.len() as u8);
            out.extend_from_slice(id);
            write_leb128(&mut out, tip.seq);
            out.extend_from_slice(&tip.hash.0);
            let more = coming.get(actor).map_or(0, |c| c.saturating_sub(tip.seq));
            write_leb128(&mut out, more);
            let upto = tip.seq.saturating_add(more);
            match beyond.get(actor) {
                Some(&(from, last)) if from > upto.saturating_add(1) && last >= from => {
                    write_leb128(&mut out, from - upto - 1);
                    write_leb128(&mut out, last - from + 1);
                }
                _ => write_leb128(&mut out, 0),
            }
        }
        let names: Vec<&String> = reaches
            .iter()
            .filter(|n| (1..=ID_MOST).contains(&n.len()))
            .take(SUMMARY_REACHES_MOST)
            .collect();
        write_leb128(&mut out, names.len() as u64);
        for name in names {
            out.push(name.len() as u8);
            out.extend_from_slice(name.as_bytes());
        }
        out.push(wants.byte());
        out
    }

    /// Reads a peer's summary message ([`Summary::encode`]). Anything but exactly such a
    /// message, within the bounds, is refused with [`LedgerError::BadMessage`].
    pub fn decode(bytes: &[u8]) -> Result<Told, LedgerError> {
        let bad = |why: &str| LedgerError::BadMessage(format!("a summary message: {why}"));
        let mut at = bytes;
        let version = match take(&mut at, 1).map_err(|_| bad("empty"))? {
            [v] if (SUMMARY_VERSION_OLDEST..=SUMMARY_VERSION).contains(v) => *v,
            [v] => {
                return Err(bad(&format!(
                    "of version {v}, this build reads {SUMMARY_VERSION_OLDEST} to {SUMMARY_VERSION}"
                )));
            }
            _ => return Err(bad("empty")),
        };
        let writers = bounded_count(&mut at, SUMMARY_WRITERS_MOST).map_err(|e| bad(&e))?;
        let mut summary = Summary::default();
        let (mut coming, mut beyond) = (BTreeMap::new(), BTreeMap::new());
        for _ in 0..writers {
            let id = id(&mut at).map_err(|e| bad(&e))?;
            let seq = read_leb128(&mut at).map_err(|e| bad(&e))?;
            let hash: [u8; 32] = take(&mut at, 32)
                .map_err(|e| bad(&e))?
                .try_into()
                .map_err(|_| bad("a hash cut short"))?;
            let more = if version >= 3 {
                read_leb128(&mut at).map_err(|e| bad(&e))?
            } else {
                0
            };
            let lacked = if version >= 4 {
                read_leb128(&mut at).map_err(|e| bad(&e))?
            } else {
                0
            };
            let run = if lacked > 0 {
                read_leb128(&mut at).map_err(|e| bad(&e))?
            } else {
                0
            };
            if seq == 0 {
                return Err(bad("a writer with no changes"));
            }
            let actor = ActorId::from(id);
            if summary.0.contains_key(&actor) {
                return Err(bad("a writer named twice"));
            }
            let upto = seq
                .checked_add(more)
                .ok_or_else(|| bad("changes coming past 64 bits"))?;
            if more > 0 {
                coming.insert(actor.clone(), upto);
            }
            if lacked > 0 {
                if run == 0 {
                    return Err(bad("an empty run of changes waiting past a gap"));
                }
                let from = upto
                    .checked_add(lacked)
                    .and_then(|n| n.checked_add(1))
                    .ok_or_else(|| bad("changes waiting past 64 bits"))?;
                let last = from
                    .checked_add(run - 1)
                    .ok_or_else(|| bad("changes waiting past 64 bits"))?;
                beyond.insert(actor.clone(), (from, last));
            }
            summary.0.insert(
                actor,
                Tip {
                    seq,
                    hash: ChangeHash(hash),
                },
            );
        }
        let names = bounded_count(&mut at, SUMMARY_REACHES_MOST).map_err(|e| bad(&e))?;
        let mut reaches = Vec::with_capacity(names);
        for _ in 0..names {
            let name = std::str::from_utf8(id(&mut at).map_err(|e| bad(&e))?)
                .map_err(|_| bad("a device name that is not UTF-8"))?;
            reaches.push(name.to_owned());
        }
        let wants = take(&mut at, 1).map_err(|e| bad(&e))?[0];
        let wants = Wants::of(wants)
            .ok_or_else(|| bad(&format!("wants {wants}, which this build does not know")))?;
        if !at.is_empty() {
            return Err(bad("bytes after its end"));
        }
        Ok(Told {
            summary,
            reaches,
            wants,
            coming,
            beyond,
        })
    }
}

fn take<'a>(at: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if at.len() < n {
        return Err("cut short".into());
    }
    let (head, rest) = at.split_at(n);
    *at = rest;
    Ok(head)
}

/// A writer id or device name: its length (1 to [`ID_MOST`]), then its bytes.
fn id<'a>(at: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = usize::from(take(at, 1)?[0]);
    if !(1..=ID_MOST).contains(&len) {
        return Err(format!("an id of {len} bytes"));
    }
    take(at, len)
}

fn bounded_count(at: &mut &[u8], most: usize) -> Result<usize, String> {
    let n = read_leb128(at)?;
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= most)
        .ok_or_else(|| format!("{n} items, more than {most}"))
}

fn write_leb128(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb128(at: &mut &[u8]) -> Result<u64, String> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = take(at, 1)?[0];
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            return Err("a number past 64 bits".into());
        }
        n |= bits << shift;
        if byte & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err("a number past 64 bits".into())
}

/// Most changes [`Recent`] keeps, and their bytes: a stadium's busiest minutes (32 gates at
/// ~10 admissions a second) are ~20,000 changes, ~11 MB.
const RECENT_MOST: usize = 65_536;
const RECENT_BYTES: usize = 48 * 1024 * 1024;

/// One change [`Recent`] keeps.
#[derive(Debug)]
pub(crate) struct Slot {
    pub actor: ActorId,
    pub seq: u64,
    /// Where it came in the order the ledger took changes ([`Recent::noted`]).
    pub noted: u64,
    pub bytes: Arc<[u8]>,
}

/// The changes a ledger made or took most recently, as they came (automerge 0.12 keeps no
/// change's bytes, and rebuilds one it is asked for from its operations at a cost that
/// grows with the ledger), by hash and by writer and number: what a peer's summary or
/// request says it lacks is relayed from here.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    slots: HashMap<ChangeHash, Slot>,
    by_writer: HashMap<ActorId, BTreeMap<u64, ChangeHash>>,
    /// In the order noted, oldest first: the next to go.
    order: VecDeque<ChangeHash>,
    bytes: usize,
    noted: u64,
}

impl Recent {
    /// A change the ledger made or took, in the order it did.
    pub fn note(&mut self, change: &Change) {
        self.noted += 1;
        let hash = change.hash();
        if self.slots.contains_key(&hash) {
            return;
        }
        let bytes: Arc<[u8]> = change.raw_bytes().into();
        self.bytes += bytes.len();
        self.by_writer
            .entry(change.actor_id().clone())
            .or_default()
            .insert(change.seq(), hash);
        self.slots.insert(
            hash,
            Slot {
                actor: change.actor_id().clone(),
                seq: change.seq(),
                noted: self.noted,
                bytes,
            },
        );
        self.order.push_back(hash);
        while self.order.len() > RECENT_MOST || self.bytes > RECENT_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(slot) = self.slots.remove(&old) {
                self.bytes -= slot.bytes.len();
                if let Some(seqs) = self.by_writer.get_mut(&slot.actor) {
                    seqs.remove(&slot.seq);
                    if seqs.is_empty() {
                        self.by_writer.remove(&slot.actor);
                    }
                }
            }
        }
    }

    /// How many changes were noted so far (kept or not): a position in their order.
    pub fn noted(&self) -> u64 {
        self.noted
    }

    /// The change of `actor` numbered `seq`, if it is kept.
    pub fn get(&self, actor: &ActorId, seq: u64) -> Option<&Slot> {
        let hash = self.by_writer.get(actor)?.get(&seq)?;
        self.slots.get(hash)
    }

    /// The change `hash`, if it is kept.
    pub fn by_hash(&self, hash: &ChangeHash) -> Option<&Slot> {
        self.slots.get(hash)
    }
}

/// What this node relays to one peer, kept per connection with its sync state.
#[derive(Debug, Default)]
pub(crate) struct Relayed {
    /// Per writer, the newest change sent to the peer on this connection (pushed or
    /// relayed): the changes up to it are on their way, and not sent again.
    pub sent: HashMap<ActorId, u64>,
    /// Per writer, since when the peer has lacked what follows its newest change of it:
    /// the relayers after the first relay once [`RELAY_BACKUP_MS`] passed with the peer
    /// still there, and what it still lacks [`RELAY_STUCK_MS`] after, once the peer is seen
    /// past it ([`Lost`]), goes again.
    pub lacking: HashMap<ActorId, Lacking>,
    /// The peer's last summary.
    pub theirs: Option<Summary>,
    /// While this node lacks more than [`CATCH_UP_LACK`] of the peer's changes: how many
    /// changes it held when it last took one (or first lacked them), and when (ms).
    pub behind: Option<(usize, i64)>,
    /// Changes relayed to the peer on this connection, by why.
    pub by_why: RelayedBy,
    /// The peer's last summary asked this node for its gap ([`Wants::Gap`]).
    pub asks_gap: bool,
}

/// Changes relayed to a peer, by why each went ([`plan_relay`]): what a heal's relays
/// cost, rule by rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RelayedBy {
    /// The peer catches up a gap from this node ([`Wants::Gap`]).
    pub gap: u64,
    /// This node's own changes the peer lacked (its pushes carry the rest).
    pub own: u64,
    /// Of a writer the peer does not reach, by the first of its relayers.
    pub first: u64,
    /// Of a writer the peer does not reach, by another relayer, once the peer had lacked
    /// them [`RELAY_BACKUP_MS`].
    pub backup: u64,
    /// Sent before and counted lost on their way ([`RELAY_STUCK_MS`]), or of a writer the
    /// peer reaches whose link to it carries nothing: sent again.
    pub again: u64,
    /// Asked for by hash: what changes waiting at the peer build on
    /// ([`crate::Ledger::answer_need`]).
    pub asked: u64,
}

impl std::ops::AddAssign for RelayedBy {
    fn add_assign(&mut self, other: Self) {
        self.gap += other.gap;
        self.own += other.own;
        self.first += other.first;
        self.backup += other.backup;
        self.again += other.again;
        self.asked += other.asked;
    }
}

/// Why a change is relayed ([`RelayedBy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Gap,
    Own,
    First,
    Backup,
    Again,
}

impl RelayedBy {
    fn count(&mut self, why: Why) {
        let n = match why {
            Why::Gap => &mut self.gap,
            Why::Own => &mut self.own,
            Why::First => &mut self.first,
            Why::Backup => &mut self.backup,
            Why::Again => &mut self.again,
        };
        *n += 1;
    }
}

/// Since when a peer has lacked what follows its newest change of one writer
/// ([`Relayed::lacking`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lacking {
    /// The peer's newest change of the writer.
    seq: u64,
    /// When it was first seen lacking what follows (ms).
    since_ms: i64,
    /// How many changes this node had noted then ([`Recent::noted`]).
    noted: u64,
    /// When the changes were first counted as lost ([`Lost`]), if they were: the writer's
    /// other relayers wait [`RELAY_BACKUP_MS`] from then.
    lost_ms: Option<i64>,
}

impl Lacking {
    fn new(seq: u64, now_ms: i64, recent: &Recent) -> Self {
        Self {
            seq,
            since_ms: now_ms,
            noted: recent.noted(),
            lost_ms: None,
        }
    }
}

/// How long a peer may lack a writer's changes that a first relayer should have sent before
/// every other peer that holds them sends them too (a first relayer that lacks them as
/// well, or whose link is slow).
pub const RELAY_BACKUP_MS: i64 = 3_000;

/// How long a peer may lack a writer's changes, its newest change of that writer not moving,
/// before what was sent of them counts as lost and they go again; and before a writer the
/// peer reaches, whose own link to it evidently carries nothing, is relayed by the others
/// (the first of them; every other one [`RELAY_BACKUP_MS`] later). A push in flight when its
/// connection was replaced is lost after it was counted as sent, and a link that stays open
/// but carries nothing (both ends of a connection once waited for each other to read, for
/// good) left the changes of its writer behind it lacked at the other end until something
/// else brought them.
///
/// Time alone is not the sign: a peer whose writer is many seconds behind (a loaded
/// machine) lacks everything of the last seconds, and by time alone every other gate would
/// send it again what only waits in its queue — up to 31 copies of each change at 32 gates,
/// which load it more. So the changes count as lost only once the peer is seen past them
/// ([`Lost`]).
pub const RELAY_STUCK_MS: i64 = 10_000;

/// How long a peer may lack a writer's changes, its newest change of that writer not moving,
/// before they go again even with no sign that it is past them ([`Lost`]): a peer that
/// lacks the last changes of several writers after everyone went quiet.
pub const RELAY_LOST_ANYWAY_MS: i64 = 6 * RELAY_STUCK_MS;

/// Whether a peer still lacking a writer's changes [`RELAY_STUCK_MS`] after it first did
/// lost them on their way, rather than not having taken them yet: it holds a change this
/// node took after it first saw the lack (the peer took what was sent after them), or they
/// are all it lacks (nothing else is on its way), or [`RELAY_LOST_ANYWAY_MS`] passed.
#[derive(Debug, Clone, Copy)]
struct Lost {
    /// The latest in this node's order ([`Recent::noted`]) of the peer's newest changes of
    /// each writer that are at hand here.
    peer_past: u64,
    /// How many writers' changes the peer lacks.
    writers_lacked: usize,
}

impl Lost {
    fn of(mine: &Summary, theirs: &Summary, recent: &Recent) -> Self {
        let peer_past = theirs
            .0
            .iter()
            .filter_map(|(actor, tip)| recent.get(actor, tip.seq))
            .map(|slot| slot.noted)
            .max()
            .unwrap_or(0);
        let writers_lacked = mine
            .0
            .iter()
            .filter(|(actor, tip)| theirs.0.get(*actor).map_or(0, |t| t.seq) < tip.seq)
            .count();
        Self {
            peer_past,
            writers_lacked,
        }
    }

    /// For a writer whose changes the peer has lacked `lacked` ms, first seen when this node
    /// had noted `noted_then`.
    fn is_lost(&self, lacked: i64, noted_then: u64) -> bool {
        lacked >= RELAY_LOST_ANYWAY_MS
            || (lacked >= RELAY_STUCK_MS
                && (self.peer_past > noted_then || self.writers_lacked == 1))
    }
}

/// How a relay is planned ([`crate::Ledger::relay`]).
#[derive(Debug, Clone, Copy)]
pub struct RelayPlan<'a> {
    /// This node's time, ms.
    pub now_ms: i64,
    /// Only this node's own changes noted before this position ([`crate::Ledger::noted`])
    /// are relayed: one made a moment ago may still be on its way to the peer by a push
    /// whose mark has not come back yet. A peer catching up from this node likewise
    /// gets only those noted before it of a writer it reaches: the writer pushes it the
    /// newer ones.
    pub noted_before: u64,
    /// This device's name.
    pub me: &'a str,
    /// Most changes relayed in one answer; the rest goes with the answers to the peer's next
    /// summaries.
    pub most: usize,
    /// Most changes relayed in one answer to a peer that catches up from this node
    /// ([`Wants::Gap`]).
    pub catch_up_most: usize,
    /// Most bytes of changes per frame.
    pub frame_most: usize,
}

/// What to send a peer after its summary or its request for changes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Relay {
    /// Frames of changes, each change chunks one after another (as pushed), in the order
    /// this node took them.
    pub frames: Vec<Vec<u8>>,
    /// How many changes they hold.
    pub changes: usize,
    /// Why a round of the sync protocol should follow, when one should: what the peer lacks
    /// is not at hand, too much for a relay (and not so much that the peer catches up by a
    /// round of its own, see [`CATCH_UP_LACK`]), or a writer's newest change differs.
    pub round: Option<&'static str>,
    /// This node lacks more than [`CATCH_UP_LACK`] changes the peer holds: it starts a
    /// round itself.
    pub catch_up: bool,
    /// To a peer catching up from this node ([`Wants::Gap`]): what it lacks that this
    /// answer does not carry, by why.
    pub left_out: LeftOut,
}

/// What an answer to a peer catching up from this node ([`Wants::Gap`]) left out of what
/// the peer lacks, by why (changes; a writer counted under the first why that stopped its
/// changes). A peer that stops getting its gap from the one it asked gives it up after
/// `RELAY_ASK_STALE` (the node's), and every other peer sends it again what it still
/// lacks: this says what the one asked held back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LeftOut {
    /// Sent to the peer on this connection before: on their way.
    pub on_their_way: u64,
    /// The peer said they are coming (being taken, or waiting past what it lacks).
    pub coming: u64,
    /// Of a writer the peer reaches (or this node's own), taken here too lately: the
    /// writer's push of them may be on its way ([`RelayPlan::noted_before`]).
    pub too_recent: u64,
    /// No longer at hand here (the peer's round brings them).
    pub not_at_hand: u64,
    /// More than one answer carries: the next answers'.
    pub next_answers: u64,
}

impl LeftOut {
    /// Every change left out.
    pub fn total(&self) -> u64 {
        self.on_their_way + self.coming + self.too_recent + self.not_at_hand + self.next_answers
    }
}

/// Whether `me` is the first of the devices `candidates` to relay `actor`'s changes to a
/// peer: the one whose SHA-256 of the writer's id and the device's name is lowest, so each
/// writer's changes have a first relayer, and each relayer a share of writers.
pub(crate) fn first_relayer<'a>(
    actor: &ActorId,
    me: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> bool {
    use sha2::{Digest, Sha256};
    let rank = |name: &str| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(actor.to_bytes());
        h.update([0]);
        h.update(name.as_bytes());
        h.finalize().into()
    };
    let mine = rank(me);
    candidates
        .into_iter()
        .filter(|c| *c != me)
        .all(|c| rank(c) > mine)
}

/// Frames of the `slots`' changes, in the order given, each at most `frame_most` bytes of
/// changes (one larger change alone).
pub(crate) fn frames_of<'a>(
    slots: impl IntoIterator<Item = &'a Slot>,
    frame_most: usize,
) -> Vec<Vec<u8>> {
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for slot in slots {
        match frames.last_mut() {
            Some(last) if last.len() + slot.bytes.len() <= frame_most => {
                last.extend_from_slice(&slot.bytes);
            }
            _ => frames.push(slot.bytes.to_vec()),
        }
    }
    frames
}

/// What to relay to a peer that `told` this node what it holds, from a ledger whose summary
/// is `mine`, recent changes `recent` and node `node`; `name_of` names the device that
/// writes under an actor, when the ledger knows it. `relayed` (kept per connection) learns
/// what is sent.
///
/// A peer that catches up from this node ([`Wants::Gap`]) gets every writer's changes it
/// lacks that are at hand, up to [`RelayPlan::catch_up_most`] an answer; a writer whose
/// changes it lacks are no longer at hand is left to the round the peer starts itself once
/// nothing comes ([`CATCH_UP_STALL_MS`]). One that catches up from another peer
/// ([`Wants::Nothing`]) gets nothing.
pub(crate) fn plan_relay(
    (mine, recent, node): (&Summary, &Recent, &ActorId),
    mut name_of: impl FnMut(&ActorId) -> Option<String>,
    relayed: &mut Relayed,
    told: Told,
    plan: &RelayPlan<'_>,
) -> Relay {
    let Told {
        summary: theirs,
        reaches,
        wants,
        coming,
        beyond,
    } = told;
    let catch_me_up = wants == Wants::Gap;
    relayed.asks_gap = catch_me_up;
    let most = if catch_me_up {
        plan.catch_up_most
    } else {
        plan.most
    };
    let reached: HashSet<&str> = reaches.iter().map(String::as_str).collect();
    let candidates: Vec<&str> = reached.iter().copied().chain([plan.me]).collect();
    // Read only for a writer lacked past RELAY_STUCK_MS, once per summary.
    let mut lost: Option<Lost> = None;
    let mut round = None;
    let mut picked: Vec<(&Slot, Why)> = Vec::new();
    let mut left_out = LeftOut::default();
    // Both summaries are in writer order: read side by side, no lookups.
    let mut their_tips = theirs.0.iter().peekable();
    'writers: for (actor, tip) in &mine.0 {
        while their_tips.next_if(|(a, _)| *a < actor).is_some() {}
        let their = their_tips.next_if(|(a, _)| *a == actor).map(|(_, t)| t);
        let their_seq = their.map_or(0, |t| t.seq);
        if their_seq >= tip.seq {
            relayed.lacking.remove(actor);
            if their.is_some_and(|t| t.seq == tip.seq && t.hash != tip.hash) {
                round = Some(DIFFERS);
            }
            continue;
        }
        if wants == Wants::Nothing {
            continue;
        }
        let own = actor == node;
        // How long the peer has lacked what follows its newest change of this writer.
        let since = relayed
            .lacking
            .entry(actor.clone())
            .or_insert_with(|| Lacking::new(their_seq, plan.now_ms, recent));
        if since.seq != their_seq {
            *since = Lacking::new(their_seq, plan.now_ms, recent);
        }
        let lacked = plan.now_ms.saturating_sub(since.since_ms);
        // In a catch-up, the changes of a writer the peer reaches that came here a moment
        // ago were pushed to the peer too, as this node's own: they wait there past the gap
        // (unless the peer's summary was made before they came, when they would be sent
        // twice, one copy waiting while the other is taken).
        let pushes_itself = own
            || catch_me_up && name_of(actor).is_some_and(|name| reached.contains(name.as_str()));
        // What the peer has yet to take is not sent again, unless it lacked the writer so
        // long that what it says is coming may never come.
        let coming_upto = coming
            .get(actor)
            .copied()
            .filter(|_| lacked < RELAY_LOST_ANYWAY_MS)
            .unwrap_or(0);
        let waits_beyond = beyond
            .get(actor)
            .copied()
            .filter(|_| lacked < RELAY_LOST_ANYWAY_MS);
        let stuck = lacked >= RELAY_STUCK_MS
            && lost
                .get_or_insert_with(|| Lost::of(mine, &theirs, recent))
                .is_lost(lacked, since.noted);
        if stuck && since.lost_ms.is_none() {
            since.lost_ms = Some(plan.now_ms);
        }
        let lost_for = since.lost_ms.map(|at| plan.now_ms.saturating_sub(at));
        let why = if catch_me_up {
            Why::Gap
        } else if own {
            Why::Own
        } else {
            let name = name_of(actor);
            let why = match name.as_deref().filter(|n| reached.contains(n)) {
                // Its writer pushes to the peer itself, unless that link carries nothing.
                Some(writer) => {
                    let others = candidates.iter().copied().filter(|c| *c != writer);
                    (stuck
                        && (lost_for >= Some(RELAY_BACKUP_MS)
                            || first_relayer(actor, plan.me, others)))
                    .then_some(Why::Again)
                }
                None if first_relayer(actor, plan.me, candidates.iter().copied()) => {
                    Some(Why::First)
                }
                None => (lacked >= RELAY_BACKUP_MS).then_some(Why::Backup),
            };
            let Some(why) = why else {
                continue;
            };
            why
        };
        let why = if stuck { Why::Again } else { why };
        // What was sent long ago and is still lacked was lost on its way: it goes again.
        let sent = if stuck {
            0
        } else {
            relayed.sent.get(actor).copied().unwrap_or(0)
        };
        let of_writer = picked.len();
        if catch_me_up {
            left_out.on_their_way += sent.min(tip.seq).saturating_sub(their_seq);
            left_out.coming += coming_upto.min(tip.seq).saturating_sub(their_seq.max(sent));
        }
        let from = their_seq.max(sent).max(coming_upto).saturating_add(1);
        for seq in from..=tip.seq {
            // What waits at the peer past a gap is not sent again (nor needed at hand here).
            if waits_beyond.is_some_and(|(from, last)| (from..=last).contains(&seq)) {
                if catch_me_up {
                    left_out.coming += 1;
                }
                continue;
            }
            let rest = tip.seq - seq + 1;
            match recent.get(actor, seq) {
                // Asked to catch the peer up: the writers at hand go (the changes after one
                // not at hand would only wait at the peer for it).
                None if catch_me_up => {
                    left_out.not_at_hand += rest + (picked.len() - of_writer) as u64;
                    picked.truncate(of_writer);
                    continue 'writers;
                }
                None => {
                    round = Some("the peer lacks changes no longer at hand here");
                    break 'writers;
                }
                // This node's own, too recent: a push of it may be on its way (the rest are
                // newer still). So, in a catch-up, may a writer's the peer reaches. Another
                // writer's goes at once: it does not reach the peer.
                Some(slot) if pushes_itself && slot.noted >= plan.noted_before => {
                    if catch_me_up {
                        left_out.too_recent += rest;
                    }
                    break;
                }
                // No writer's share is larger than a full answer.
                Some(_) if picked.len() - of_writer >= most => {
                    if catch_me_up {
                        left_out.next_answers += rest;
                    }
                    break;
                }
                Some(slot) => picked.push((slot, why)),
            }
        }
        // Sent again: lost again only if still lacked as long.
        if stuck && picked.len() > of_writer {
            relayed
                .lacking
                .insert(actor.clone(), Lacking::new(their_seq, plan.now_ms, recent));
        }
    }
    // A peer that lacks most of this ledger (joining late, or back after a long outage)
    // takes it whole, by a round it starts itself: its round's first message is small (its
    // bloom filter holds what it has), ours would hold every change held here. So does a
    // peer that lacks a catch-up's worth this node no longer has at hand.
    // What the peer has yet to take does not count.
    let on_its_way = coming.iter().fold(0usize, |n, (actor, upto)| {
        let (held_here, held_there) = (
            mine.tip(actor).map_or(0, |t| t.seq),
            theirs.tip(actor).map_or(0, |t| t.seq),
        );
        let more = (*upto).min(held_here).saturating_sub(held_there);
        n.saturating_add(usize::try_from(more).unwrap_or(usize::MAX))
    });
    let on_its_way = beyond.iter().fold(on_its_way, |n, (actor, (from, last))| {
        let held_here = mine.tip(actor).map_or(0, |t| t.seq);
        let run = (*last)
            .min(held_here)
            .saturating_sub(from.saturating_sub(1));
        n.saturating_add(usize::try_from(run).unwrap_or(usize::MAX))
    });
    let peer_lack = mine.lacked_by(&theirs).saturating_sub(on_its_way);
    let peer_takes_whole = peer_lack > CATCH_UP_LACK && takes_whole(peer_lack, mine.held());
    let catch_up = catching_up(
        relayed,
        (theirs.lacked_by(mine), theirs.held(), mine.held()),
        plan.now_ms,
    );
    relayed.theirs = Some(theirs);
    if round.is_some() || peer_takes_whole {
        if peer_lack > CATCH_UP_LACK && round != Some(DIFFERS) {
            round = None;
        }
        return Relay {
            round,
            catch_up,
            left_out,
            ..Relay::default()
        };
    }
    // The oldest first, in the order this node took them (each writer's in order, and what
    // a change builds on before it): the rest goes with the answer to the peer's next
    // summary.
    picked.sort_by_key(|(s, _)| s.noted);
    if catch_me_up {
        left_out.next_answers += picked.len().saturating_sub(most) as u64;
    }
    picked.truncate(most);
    for (slot, why) in &picked {
        let sent = relayed.sent.entry(slot.actor.clone()).or_insert(0);
        *sent = (*sent).max(slot.seq);
        relayed.by_why.count(*why);
    }
    Relay {
        frames: frames_of(picked.iter().map(|(s, _)| *s), plan.frame_most),
        changes: picked.len(),
        round: None,
        catch_up,
        left_out,
    }
}

const DIFFERS: &str = "a writer's newest change differs here and at the peer";

/// Changes a node lacks, by a peer's summary, past which it may catch up by a round of the
/// sync protocol it starts itself rather than by its peers' relays: at once when it lacks
/// most of the ledger (joining late, back after a long outage: it takes it whole), and when
/// it has taken no change for [`CATCH_UP_STALL_MS`] (what it lacks is no longer at hand at
/// its peers). A gap relays carry, such as a partition's after it heals, comes
/// by them alone: each change at hand as it came, where a round costs a pass over every
/// change since the two last agreed (on a new connection, the whole ledger), on both sides.
pub const CATCH_UP_LACK: usize = 2048;

/// How long a node that lacks more than [`CATCH_UP_LACK`] of a peer's changes waits for
/// any change to come (by relays) before it starts a round of the sync protocol itself.
pub const CATCH_UP_STALL_MS: i64 = 3_000;

/// Whether a ledger that lacks `lack` of `held` changes takes a whole document rather than
/// the changes themselves (see `doc.rs`, where automerge's own rule is bounded by it).
pub(crate) fn takes_whole(lack: usize, held: usize) -> bool {
    lack.saturating_mul(crate::doc::WHOLE_WHEN_LACKING) > held
}

/// Whether this node, lacking `lack` of the `held` changes of the peer's ledger by its
/// summary now and holding `ours`, starts a catch-up round (see [`CATCH_UP_LACK`]).
/// `relayed.behind` remembers since when this node has taken no change: what it lacks of
/// one peer may not shrink while it takes relays from all of them under load (that peer
/// admits meanwhile too), so any change taken counts as the relays flowing.
fn catching_up(
    relayed: &mut Relayed,
    (lack, held, ours): (usize, usize, usize),
    now_ms: i64,
) -> bool {
    if lack <= CATCH_UP_LACK {
        relayed.behind = None;
        return false;
    }
    let since = match relayed.behind {
        Some((was, since)) if ours <= was => since,
        _ => now_ms,
    };
    relayed.behind = Some((ours, since));
    takes_whole(lack, held) || now_ms.saturating_sub(since) >= CATCH_UP_STALL_MS
}

/// The version of a request for changes by hash ([`crate::Ledger::need_message`]).
pub const NEED_VERSION: u8 = 1;

/// Most hashes one request for changes asks for.
pub const NEED_MOST: usize = 1024;

/// A request for the changes `hashes`: version, their count as LEB128, then each.
pub(crate) fn encode_need(hashes: &[ChangeHash]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 32 * hashes.len());
    out.push(NEED_VERSION);
    write_leb128(&mut out, hashes.len() as u64);
    for h in hashes {
        out.extend_from_slice(&h.0);
    }
    out
}

/// Reads a request for changes ([`encode_need`]); anything else is refused with
/// [`LedgerError::BadMessage`].
pub(crate) fn decode_need(bytes: &[u8]) -> Result<Vec<ChangeHash>, LedgerError> {
    let bad = |why: String| LedgerError::BadMessage(format!("a request for changes: {why}"));
    let mut at = bytes;
    match take(&mut at, 1).map_err(bad)? {
        [NEED_VERSION] => {}
        [v] => {
            return Err(bad(format!(
                "of version {v}, this build reads {NEED_VERSION}"
            )));
        }
        _ => return Err(bad("empty".into())),
    }
    let n = bounded_count(&mut at, NEED_MOST).map_err(bad)?;
    if at.len() != 32 * n {
        return Err(bad(format!("{} bytes for {n} hashes", at.len())));
    }
    let mut seen = HashSet::with_capacity(n);
    let hashes: Vec<ChangeHash> = at
        .chunks_exact(32)
        .map(|c| {
            let mut h = [0u8; 32];
            h.copy_from_slice(c);
            ChangeHash(h)
        })
        .filter(|h| seen.insert(*h))
        .collect();
    Ok(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn summary(tips: &[(&str, u64, u8)]) -> Summary {
        let mut s = Summary::default();
        for (actor, seq, h) in tips {
            s.note(&ActorId::from(actor.as_bytes()), *seq, ChangeHash([*h; 32]));
        }
        s
    }

    #[test]
    fn a_summary_reads_back_as_it_was_written() {
        let s = summary(&[
            ("NODE-A", 1, 1),
            ("NODE-B", 300, 2),
            ("NODE-C", u64::MAX, 3),
        ]);
        let reaches = vec!["Main-Entrance".to_owned(), "VIP-Door".to_owned()];
        for wants in [Wants::Relays, Wants::Gap, Wants::Nothing] {
            let told = Summary::decode(&s.encode(&reaches, wants)).unwrap();
            assert_eq!(
                told,
                Told {
                    summary: s.clone(),
                    reaches: reaches.clone(),
                    wants,
                    coming: BTreeMap::new(),
                    beyond: BTreeMap::new(),
                }
            );
        }
        // What is on its way reads back; nothing for a writer with nothing coming.
        let coming = BTreeMap::from([(ActorId::from("NODE-B".as_bytes()), 4_300)]);
        let beyond = BTreeMap::from([(ActorId::from("NODE-B".as_bytes()), (4_310, 4_320))]);
        let told =
            Summary::decode(&s.encode_with(&reaches, Wants::Relays, &coming, &beyond)).unwrap();
        assert_eq!((&told.coming, &told.beyond), (&coming, &beyond));
        // The longest actor a node writes under: a node id of 64 and an incarnation.
        let longest = gatemesh_wire::NodeId::parse(&"n".repeat(64)).unwrap();
        let mut s = Summary::default();
        s.note(
            &crate::authored::incarnation(&longest),
            1,
            ChangeHash([1; 32]),
        );
        assert_eq!(
            Summary::decode(&s.encode(&[], Wants::Relays))
                .unwrap()
                .summary,
            s
        );
    }

    #[test]
    fn a_summary_of_the_last_version_reads_with_nothing_coming() {
        // Version 2: each writer's id, number and hash, with no count of what is coming.
        let mut v2 = vec![2, 1, 1, b'A', 5];
        v2.extend([7; 32]);
        v2.extend([1, 4]);
        v2.extend(b"gate");
        v2.push(1);
        let told = Summary::decode(&v2).unwrap();
        assert_eq!(told.summary, summary(&[("A", 5, 7)]));
        assert_eq!(
            (told.reaches, told.wants, told.coming),
            (vec!["gate".to_owned()], Wants::Gap, BTreeMap::new())
        );
        // Version 3: what is coming, and nothing of what waits past a gap.
        let mut v3 = vec![3, 1, 1, b'A', 5];
        v3.extend([7; 32]);
        v3.extend([2, 0, 0]);
        let told = Summary::decode(&v3).unwrap();
        let a = ActorId::from("A".as_bytes());
        assert_eq!(
            (told.coming, told.beyond),
            (BTreeMap::from([(a, 7)]), BTreeMap::new())
        );
    }

    #[test]
    fn a_newer_change_moves_the_tip_and_an_older_one_does_not() {
        let mut s = summary(&[("NODE-A", 5, 5)]);
        let a = ActorId::from("NODE-A".as_bytes());
        s.note(&a, 3, ChangeHash([3; 32]));
        assert_eq!(s.tip(&a).unwrap().seq, 5);
        s.note(&a, 6, ChangeHash([6; 32]));
        assert_eq!(
            s.tip(&a).unwrap(),
            &Tip {
                seq: 6,
                hash: ChangeHash([6; 32])
            }
        );
        let other = summary(&[("NODE-A", 2, 2), ("NODE-Z", 9, 9)]);
        assert_eq!(s.lacked_by(&other), 4);
        assert_eq!(other.lacked_by(&s), 9);
    }

    #[test]
    fn summaries_out_of_bounds_or_malformed_are_refused() {
        let ok = summary(&[("NODE-A", 1, 1)]).encode(&["gate".into()], Wants::Relays);
        let mut cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("another version", {
                let mut b = ok.clone();
                b[0] = SUMMARY_VERSION + 1;
                b
            }),
            ("cut short", ok[..ok.len() - 1].to_vec()),
            ("a want this build does not know", {
                let mut b = ok.clone();
                *b.last_mut().unwrap() = 3;
                b
            }),
            ("the first version, which had no flags", {
                let mut b = ok.clone();
                b[0] = 1;
                b.pop();
                b
            }),
            ("bytes after its end", {
                let mut b = ok.clone();
                b.push(0);
                b
            }),
        ];
        // Too many writers: the count alone is refused, before anything is read.
        let mut many = vec![SUMMARY_VERSION];
        write_leb128(&mut many, SUMMARY_WRITERS_MOST as u64 + 1);
        cases.push(("too many writers", many));
        // A writer named twice, a writer at number 0, an id of 0 or 74 bytes.
        let mut twice = vec![SUMMARY_VERSION, 2];
        for _ in 0..2 {
            twice.extend([1, b'A', 1]);
            twice.extend([7; 32]);
            twice.extend([0, 0]);
        }
        twice.extend([0, 0]);
        cases.push(("a writer named twice", twice));
        let mut zero = vec![SUMMARY_VERSION, 1, 1, b'A', 0];
        zero.extend([7; 32]);
        zero.extend([0, 0, 0, 0]);
        cases.push(("number 0", zero));
        // Changes coming past the last number there is.
        let mut past = vec![SUMMARY_VERSION, 1, 1, b'A'];
        write_leb128(&mut past, u64::MAX - 1);
        past.extend([7; 32]);
        write_leb128(&mut past, 2);
        past.extend([0, 0, 0]);
        cases.push(("coming past 64 bits", past));
        // A run waiting past a gap that holds nothing, or ends past the last number.
        let mut empty_run = vec![SUMMARY_VERSION, 1, 1, b'A', 5];
        empty_run.extend([7; 32]);
        empty_run.extend([0, 3, 0, 0, 0]);
        cases.push(("an empty run past a gap", empty_run));
        let mut run_past = vec![SUMMARY_VERSION, 1, 1, b'A', 5];
        run_past.extend([7; 32]);
        run_past.extend([0, 3]);
        write_leb128(&mut run_past, u64::MAX - 5);
        run_past.extend([0, 0]);
        cases.push(("a run past 64 bits", run_past));
        cases.push(("an empty id", vec![SUMMARY_VERSION, 1, 0]));
        let mut long = vec![SUMMARY_VERSION, 1, 74];
        long.extend([b'A'; 74]);
        cases.push(("an id too long", long));
        let mut not_utf8 = vec![SUMMARY_VERSION, 0, 1, 2, 0xff, 0xfe];
        not_utf8.truncate(6);
        cases.push(("a name that is not UTF-8", not_utf8));
        for (what, bytes) in cases {
            assert!(
                matches!(Summary::decode(&bytes), Err(LedgerError::BadMessage(_))),
                "{what}: {:?}",
                Summary::decode(&bytes)
            );
        }
    }

    #[test]
    fn requests_for_changes_read_back_and_malformed_ones_are_refused() {
        let hashes = vec![ChangeHash([1; 32]), ChangeHash([2; 32])];
        assert_eq!(decode_need(&encode_need(&hashes)).unwrap(), hashes);
        let mut twice = encode_need(&[ChangeHash([1; 32]), ChangeHash([1; 32])]);
        assert_eq!(decode_need(&twice).unwrap(), vec![ChangeHash([1; 32])]);
        twice.pop();
        let mut too_many = vec![NEED_VERSION];
        write_leb128(&mut too_many, NEED_MOST as u64 + 1);
        for bytes in [vec![], vec![2, 0], twice, too_many] {
            assert!(matches!(
                decode_need(&bytes),
                Err(LedgerError::BadMessage(_))
            ));
        }
    }

    #[test]
    fn each_writer_has_one_first_relayer_among_the_same_candidates() {
        let names = ["gate-a", "gate-b", "gate-c", "gate-d", "observer"];
        for writer in ["NODE-1", "NODE-2", "NODE-3"] {
            let actor = ActorId::from(writer.as_bytes());
            let first: Vec<_> = names
                .iter()
                .filter(|me| first_relayer(&actor, me, names))
                .collect();
            assert_eq!(first.len(), 1, "{writer}: {first:?}");
        }
    }

    proptest! {
        #[test]
        fn no_bytes_make_the_readers_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = Summary::decode(&bytes);
            let _ = decode_need(&bytes);
        }

        #[test]
        fn any_summary_reads_back(
            tips in proptest::collection::btree_map(
                "[A-Z0-9]{1,64}",
                (1u64..u64::MAX / 2, any::<u8>(), prop_oneof![Just(0u64), 1u64..100_000]),
                0..40,
            ),
            reaches in proptest::collection::vec("[a-zA-Z0-9._-]{1,63}", 0..20),
            wants in prop_oneof![Just(Wants::Relays), Just(Wants::Gap), Just(Wants::Nothing)],
        ) {
            let mut s = Summary::default();
            let (mut coming, mut beyond) = (BTreeMap::new(), BTreeMap::new());
            for (actor, (seq, h, more)) in &tips {
                let actor = ActorId::from(actor.as_bytes());
                s.note(&actor, *seq, ChangeHash([*h; 32]));
                if *more > 0 {
                    coming.insert(actor.clone(), seq + more);
                }
                // A run past a gap, for some writers.
                if h % 3 == 0 {
                    let from = seq + more + 2 + u64::from(*h);
                    beyond.insert(actor, (from, from + more));
                }
            }
            let told = Summary::decode(&s.encode_with(&reaches, wants, &coming, &beyond)).unwrap();
            prop_assert_eq!(told, Told { summary: s, reaches, wants, coming, beyond });
        }

        /// The one-pass count is the sum, writer by writer, of what the other lacks.
        #[test]
        fn what_one_summary_lacks_of_another_is_counted_writer_by_writer(
            a in proptest::collection::btree_map("[A-F]{1,2}", 1u64..1_000, 0..12),
            b in proptest::collection::btree_map("[A-F]{1,2}", 1u64..1_000, 0..12),
        ) {
            let of = |tips: &std::collections::BTreeMap<String, u64>| {
                let mut s = Summary::default();
                for (actor, seq) in tips {
                    s.note(&ActorId::from(actor.as_bytes()), *seq, ChangeHash([0; 32]));
                }
                s
            };
            let (sa, sb) = (of(&a), of(&b));
            let lacked = |x: &std::collections::BTreeMap<String, u64>,
                          y: &std::collections::BTreeMap<String, u64>| {
                x.iter()
                    .map(|(w, seq)| seq.saturating_sub(y.get(w).copied().unwrap_or(0)) as usize)
                    .sum::<usize>()
            };
            prop_assert_eq!(sa.lacked_by(&sb), lacked(&a, &b));
            prop_assert_eq!(sb.lacked_by(&sa), lacked(&b, &a));
            let writers: Vec<&[u8]> = sa.lacked_writers(&sb).map(|w| w.to_bytes()).collect();
            let expected: Vec<&[u8]> = a
                .iter()
                .filter(|(w, seq)| b.get(*w).copied().unwrap_or(0) < **seq)
                .map(|(w, _)| w.as_bytes())
                .collect();
            prop_assert_eq!(writers, expected);
        }
    }
}
