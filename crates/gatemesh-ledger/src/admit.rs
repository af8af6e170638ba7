//! The gate every change from outside passes before any of it reaches the document: a
//! peer's sync message, an imported ledger. Automerge would apply anything a peer wrote —
//! deleting other gates' redemptions, replacing a root map, rewriting `meta` — so each new
//! change is decoded and its operations checked first:
//!
//! - only puts of text into the record maps (`audit`, `devices`, `revocations`, and the
//!   shards of `redemptions`, `resolutions` and `status`, a ticket's records in its own
//!   shard: see `layout.rs`), never into the root, `meta`, a map of shards or any other
//!   object; no deletes, increments, marks, list inserts or new objects;
//! - each put writes a key not yet written, or the very value already there (two gates
//!   that learned the same admission from the server write it alike), and overwrites
//!   nothing (`pred` empty);
//! - each value is the record its map holds, under the key derived from it (so a record
//!   cannot be replayed under another key), with its times no further ahead of this node's
//!   clock than [`MAX_CLOCK_AHEAD_MS`].
//!
//! A change that breaks one rule refuses the whole message or file
//! ([`LedgerError::Refused`]): nothing of it is stored or passed on. Compressed data —
//! whole compressed change chunks, and the DEFLATE columns of a document chunk — is
//! inflated (and thrown away) under a bound before automerge sees any of it
//! ([`LedgerError::TooLarge`]): automerge 0.12 inflates with no bound at all.
//!
//! - each change is written under the node id of a device whose certificate (from the
//!   event's mesh CA) the ledger holds or the same batch brings, and signed by that device
//!   in its one form, or vouched for by its seal (`authored.rs`, `seal.rs`): nobody makes a
//!   change in another device's name;
//! - each record is signed by its writer, a device whose certificate (from the event's mesh
//!   CA) the ledger holds or the same batch brings, whose role may write that record, and
//!   whose clock readings name it (see `sign.rs`): nobody writes in another device's name.
//!   A record whose writer is its change's author is vouched for by the change (its
//!   signature is not verified again); a record relayed in another's change is verified;
//! - each revocation is signed by the event's mesh CA itself (no device may write one);
//! - each release of the check-in lists is the server's (no gate or observer may write
//!   one), for this event, and a lists file every gate can check in with
//!   ([`lists_rule`]).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use automerge::{AutoCommit, Change, ChangeHash, ObjId, ReadDoc, ScalarValue, legacy};
use gatemesh_ticket::{EventId, TicketId};
use serde::de::DeserializeOwned;

use crate::{
    LedgerError,
    layout::{Map, Roots, audit_key, lists_key, record_key, shard_of, status_key, ticket_of_key},
    model::{AuditEntry, ListsRecord, NodeId, Record, Redemption, Resolution, Status},
    sign::{Checked, Device, DeviceRecord, Trust},
};

/// How far ahead of this node's clock a record's times may be. Venue laptops run without
/// NTP for days; ten minutes forgives a drifting clock, not a record dated next year (whose
/// HLC would win every later status, and whose time would open the repeat window).
pub const MAX_CLOCK_AHEAD_MS: i64 = 10 * 60 * 1000;
/// The largest change this node inflates: a change of one record is a few hundred bytes, a
/// gate's busiest commit a few hundred kilobytes.
pub const MAX_CHANGE_BYTES: usize = 16 * 1024 * 1024;
/// The most one sync message or one file may inflate to, all its chunks together. A saved
/// ledger of 100,000 signed redemptions inflates to about 40 MB (2,000 make 787 KB); an
/// import body is at most 256 MiB, which a DEFLATE bomb could make a thousand times larger.
pub const MAX_INFLATED_BYTES: usize = 256 * 1024 * 1024;

const MAGIC: [u8; 4] = [0x85, 0x6f, 0x4a, 0x83];
const DOCUMENT: u8 = 0;
const CHANGE: u8 = 1;
const COMPRESSED: u8 = 2;
/// The DEFLATE bit of a column specification.
const DEFLATE_COLUMN: u64 = 0b1000;

fn refused(why: impl Into<String>) -> LedgerError {
    LedgerError::Refused(why.into())
}

/// The automerge chunks in `bytes` (a sync message's change data or a saved file): each as
/// its type and its whole bytes, header included. Anything that is not a sequence of whole
/// chunks is refused.
fn chunks(mut bytes: &[u8]) -> Result<Vec<(u8, &[u8])>, LedgerError> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 10 || bytes[..4] != MAGIC {
            return Err(LedgerError::BadMessage("not an automerge chunk".into()));
        }
        let kind = bytes[8];
        let (len, leb) = leb128(&bytes[9..])
            .ok_or_else(|| LedgerError::BadMessage("a chunk's length is unreadable".into()))?;
        let total = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(9 + leb))
            .filter(|&t| t <= bytes.len())
            .ok_or_else(|| LedgerError::BadMessage("a chunk runs past its data".into()))?;
        out.push((kind, &bytes[..total]));
        bytes = &bytes[total..];
    }
    Ok(out)
}

/// An unsigned LEB128 number and how many bytes it took.
fn leb128(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// What is left of the inflation bound of one sync message or file.
pub(crate) struct Inflation(usize);

impl Default for Inflation {
    fn default() -> Self {
        Self(MAX_INFLATED_BYTES)
    }
}

impl Inflation {
    /// Inflates the raw DEFLATE stream `data` into a scratch buffer, keeping nothing,
    /// and takes its size from what is left; refuses it once it passes `most` or what is
    /// left, before it is fully inflated.
    fn take(&mut self, data: &[u8], most: usize, what: &str) -> Result<(), LedgerError> {
        use miniz_oxide::{DataFormat, MZFlush, MZStatus, inflate::stream};
        let bound = most.min(self.0);
        let mut state = stream::InflateState::new_boxed(DataFormat::Raw);
        let mut scratch = vec![0u8; 64 * 1024];
        let (mut input, mut total) = (data, 0usize);
        loop {
            let step = stream::inflate(&mut state, input, &mut scratch, MZFlush::None);
            input = &input[step.bytes_consumed..];
            total = total.saturating_add(step.bytes_written);
            if total > bound {
                return Err(LedgerError::TooLarge {
                    what: what.into(),
                    bound,
                });
            }
            match step.status {
                Ok(MZStatus::StreamEnd) => break,
                Ok(_) if step.bytes_consumed > 0 || step.bytes_written > 0 => {}
                _ => {
                    return Err(LedgerError::BadMessage(format!(
                        "{what} that is not DEFLATE data"
                    )));
                }
            }
        }
        self.0 -= total;
        Ok(())
    }

    /// Bounds what automerge would inflate of one chunk: a compressed change's body, or
    /// the DEFLATE columns of a document. Any other chunk inflates nothing (change chunks
    /// may not hold compressed columns), except a bundle, which gatemesh never makes.
    fn chunk(&mut self, kind: u8, chunk: &[u8]) -> Result<(), LedgerError> {
        let unreadable = || LedgerError::BadMessage("a chunk that does not read".into());
        let (len, leb) = leb128(&chunk[9..]).ok_or_else(unreadable)?;
        let body = &chunk[9 + leb..][..usize::try_from(len).map_err(|_| unreadable())?];
        match kind {
            CHANGE => Ok(()),
            COMPRESSED => self.take(body, MAX_CHANGE_BYTES, "a compressed change"),
            DOCUMENT => {
                for column in deflated_columns(body).ok_or_else(unreadable)? {
                    self.take(column, usize::MAX, "a document's compressed columns")?;
                }
                Ok(())
            }
            other => Err(refused(format!("a chunk of type {other}"))),
        }
    }

    /// Bounds every chunk of a sync message's change data or of a file.
    pub(crate) fn all(&mut self, bytes: &[u8]) -> Result<(), LedgerError> {
        for (kind, chunk) in chunks(bytes)? {
            self.chunk(kind, chunk)?;
        }
        Ok(())
    }
}

/// The DEFLATE-compressed columns of a document chunk's body, as automerge lays it out:
/// actors, heads, the change and the operation column specifications, then the columns'
/// data in that order. `None` when the layout does not read.
fn deflated_columns(body: &[u8]) -> Option<Vec<&[u8]>> {
    let mut at = 0usize;
    let number = |at: &mut usize| -> Option<u64> {
        let (value, len) = leb128(body.get(*at..)?)?;
        *at += len;
        Some(value)
    };
    let actors = number(&mut at)?;
    for _ in 0..actors {
        let len = usize::try_from(number(&mut at)?).ok()?;
        at = at.checked_add(len)?;
    }
    let heads = usize::try_from(number(&mut at)?).ok()?;
    at = at.checked_add(heads.checked_mul(32)?)?;
    let mut specs = Vec::new();
    for _ in 0..2 {
        let columns = number(&mut at)?;
        for _ in 0..columns {
            let spec = number(&mut at)?;
            let len = usize::try_from(number(&mut at)?).ok()?;
            specs.push((spec, len));
        }
    }
    let mut out = Vec::new();
    for (spec, len) in specs {
        let data = body.get(at..at.checked_add(len)?)?;
        at += len;
        if spec & DEFLATE_COLUMN != 0 {
            out.push(data);
        }
    }
    Some(out)
}

/// The changes `bytes` carries that `doc` does not hold yet (of a document, those of its
/// history `doc` lacks), and how many of the changes it carried `doc` held; its compressed
/// data must have passed [`Inflation`] already. Automerge can panic on crafted input; the
/// caller guards this.
pub(crate) fn new_changes(
    doc: &mut AutoCommit,
    bytes: &[u8],
) -> Result<(Vec<Change>, usize), LedgerError> {
    let mut out = parsed(bytes, |other| missing_from(doc, other))?;
    let carried = out.len();
    out.retain(|c| !crate::doc::holds(doc, &c.hash()));
    let held = carried - out.len();
    Ok((out, held))
}

/// Every change `bytes` carries (of a document, its whole history), with no document to
/// compare with: for parsing off the thread that owns the ledger. Its compressed data must
/// have passed [`Inflation`] already. Automerge can panic on crafted input; the caller
/// guards this.
pub(crate) fn all_changes(bytes: &[u8]) -> Result<Vec<Change>, LedgerError> {
    parsed(bytes, |other| {
        automerge::Automerge::new().get_changes_added(other)
    })
}

/// `bytes` when they are one whole document (a catch-up's sync message): the document,
/// loaded, and every change of it, found in one pass over its operations. `None` for
/// anything else (changes, or a document with changes after it).
pub(crate) fn whole_document(bytes: &[u8]) -> Result<Option<Whole>, LedgerError> {
    let [(DOCUMENT, chunk)] = chunks(bytes)?[..] else {
        return Ok(None);
    };
    let mut doc = AutoCommit::load(chunk).map_err(|e| LedgerError::BadMessage(e.to_string()))?;
    let changes = automerge::Automerge::new().get_changes_added(doc.document());
    Ok(Some((doc, changes, chunk.to_vec())))
}

/// A whole document as [`whole_document`] reads it: loaded, its changes, and its bytes.
pub(crate) type Whole = (AutoCommit, Vec<Change>, Vec<u8>);

/// The changes of `bytes`' chunks, a document's as `of_document` finds them.
fn parsed(
    bytes: &[u8],
    mut of_document: impl FnMut(&automerge::Automerge) -> Vec<Change>,
) -> Result<Vec<Change>, LedgerError> {
    let mut out = Vec::new();
    for (kind, chunk) in chunks(bytes)? {
        match kind {
            CHANGE | COMPRESSED => out.push(parse_change(chunk)?),
            DOCUMENT => {
                let other = automerge::Automerge::load(chunk)
                    .map_err(|e| LedgerError::BadMessage(e.to_string()))?;
                out.extend(of_document(&other));
            }
            other => return Err(refused(format!("a chunk of type {other}"))),
        }
    }
    Ok(out)
}

/// The changes of `other` that `doc` lacks, found from `other`'s heads down to what `doc`
/// holds (a document that shares most of its history costs only what it adds), built in
/// one pass over `other`'s operations: built one by one, 10,000 changes took 1.4 s.
pub(crate) fn missing_from(doc: &mut AutoCommit, other: &automerge::Automerge) -> Vec<Change> {
    doc.document().get_changes_added(other)
}

/// A change chunk from outside, parsed, its checksum checked: automerge's parser does not,
/// and a change damaged on the way (its message, its time) would otherwise be taken as a
/// change of its author's it never made, under another hash (the sync fuzzer found one
/// with a byte of its message zeroed). The checksum is the first four bytes of the hash of
/// the change as it is (uncompressed), in the chunk's header after the magic bytes.
fn parse_change(chunk: &[u8]) -> Result<Change, LedgerError> {
    let change = Change::try_from(chunk).map_err(|e| LedgerError::BadMessage(e.to_string()))?;
    if chunk.get(4..8) != Some(&change.hash().0[..4]) {
        return Err(LedgerError::BadMessage(format!(
            "a change whose checksum does not match its bytes (damaged), read as {}",
            change.hash()
        )));
    }
    Ok(change)
}

/// What the check knows of who may write: the event's CA and the devices already checked.
pub(crate) struct Checker<'a> {
    pub event: &'a EventId,
    /// Without it nothing from outside is taken: no writer could be checked.
    pub trust: Option<&'a Trust>,
    /// Devices whose certificates the ledger holds, checked; grows with those a taken
    /// batch brings.
    pub devices: &'a mut HashMap<NodeId, Arc<Device>>,
    /// Redemptions per ticket the ledger holds, all writers.
    pub per_ticket: &'a HashMap<gatemesh_ticket::TicketId, usize>,
    /// Signatures found good already ([`precheck`]).
    pub checked: &'a Checked,
    /// Where signatures verified here are kept for later prechecks, if anywhere.
    pub vouched: Option<&'a Vouched>,
    /// The newest change of each writer the ledger holds: it holds each writer's changes
    /// numbered up to it.
    pub held: &'a crate::summary::Summary,
}

/// Every put of `changes`, read (a put anywhere the layout does not allow refuses them).
fn puts_of(roots: &Roots, changes: &[Change]) -> Result<Vec<Put>, LedgerError> {
    let mut puts = Vec::new();
    for change in changes {
        let hash = change.hash();
        let expanded = change.decode();
        for op in &expanded.operations {
            let (place, key, value) = put_of(roots, op).map_err(|why| in_change(&hash, why))?;
            puts.push(Put {
                change: hash,
                map: place.map,
                obj: place.obj.clone(),
                key,
                value: value.to_owned(),
            });
        }
    }
    Ok(puts)
}

/// The device certificates `puts` bring, each checked against the event's CA.
fn brought_by(trust: &Trust, puts: &[Put]) -> Result<HashMap<NodeId, Arc<Device>>, LedgerError> {
    let mut brought = HashMap::new();
    for put in puts.iter().filter(|p| p.map == Map::Devices) {
        let device =
            device_of(trust, &put.key, &put.value).map_err(|why| in_change(&put.change, why))?;
        brought.insert(device.node.clone(), Arc::new(device));
    }
    Ok(brought)
}

/// Checks, on every core, the signatures of the changes in `changes` whose authors'
/// certificates `changes` bring (a catch-up carries a whole ledger, certificates and all)
/// and no seal of their author vouches for, and of the records they relay for other
/// writers, and keeps those found good. Nothing else is decided here: the changes are
/// checked in full when they are taken ([`check`]), and a check that finds its signature
/// kept skips only the ECDSA verification. What does not read is left to that check to
/// refuse. Signatures `vouched` found good before (in an earlier message) are not verified
/// again; those found good now join it. One precheck at a time holds `vouched`, so a message
/// that comes from several peers at once is verified once.
pub(crate) fn precheck(
    roots: &Roots,
    trust: &Trust,
    event: &EventId,
    changes: &[Change],
    vouched: &Vouched,
) -> Checked {
    // Change by change: a document's history starts with genesis, which makes the maps
    // (no puts of records), and what does not read is the full check's to refuse.
    let puts: Vec<Put> = changes
        .iter()
        .filter_map(|c| puts_of(roots, std::slice::from_ref(c)).ok())
        .flatten()
        .collect();
    // The certificates the message carries, and those the node's ledger holds: a message
    // after a partition heals carries none (they went into every ledger at the start), and
    // without them nothing would be checked here but on the writer, between scans.
    let mut devices: HashMap<NodeId, Arc<Device>> = puts
        .iter()
        .filter(|p| p.map == Map::Devices)
        .filter_map(|p| device_of(trust, &p.key, &p.value).ok())
        .map(|d| (d.node.clone(), Arc::new(d)))
        .collect();
    if !devices.is_empty() {
        vouched.know_devices(trust, &devices);
    }
    for (node, device) in vouched.devices_for(trust) {
        devices.entry(node).or_insert(device);
    }
    // The writers' seals first (a few hundred signatures at 100,000 redemptions): what
    // they vouch for is not verified record by record.
    let mut found = Checked::default();
    let seals = seals_of(
        &puts,
        event,
        &mut |node| devices.get(node).cloned(),
        &Checked::default(),
    );
    let pairs: Vec<(NodeId, ChangeHash)> = seals
        .into_iter()
        .map(|seal| {
            found.insert(seal.fact);
            (seal.writer, seal.through)
        })
        .collect();
    let sealed = crate::seal::sealed(changes, &pairs);
    // What they vouch for is kept as found good, with what is verified below: a large
    // push is taken a part at a time, each part checked with its own seals only, and a
    // change whose writer's seal came in a later part had its signature verified on the
    // writer. (A catch-up's parts are checked with the precheck's seals themselves.)
    let mut kept = Checked::default();
    for (hash, writer) in &sealed {
        if let Some(device) = devices.get(writer) {
            kept.insert(Checked::change_fact(device, hash));
        }
    }
    let mut sealed_records = 0;
    // Each change's author (`authored.rs`): its own records in it are vouched for by the
    // change, signed or sealed; the signature of a change no seal vouches for is a fact to
    // verify.
    let authors: HashMap<ChangeHash, NodeId> = changes
        .iter()
        .filter_map(|c| Some((c.hash(), crate::authored::node_of(c.actor_id())?)))
        .collect();
    let claims = changes.iter().filter_map(|c| {
        let hash = c.hash();
        let author = authors.get(&hash)?;
        if sealed.get(&hash) == Some(author) {
            return None;
        }
        let device = devices.get(author)?.clone();
        let (message, sig) = crate::authored::claim(c, event).ok()?;
        Some((Checked::change_fact(&device, &hash), message, sig, device))
    });
    // Each record's signature as one fact to verify: what it covers, the signature, by whom.
    let records = puts
        .iter()
        .filter_map(|p| Some((p, Signed::read(p)?.ok()?)))
        .filter(|(p, r)| {
            let by_seal = sealed.get(&p.change) == Some(r.writer());
            sealed_records += usize::from(by_seal);
            authors.get(&p.change) != Some(r.writer())
        })
        .filter_map(|(_, r)| {
            let device = devices.get(r.writer())?.clone();
            let (message, sig) = r.message(event)?;
            Some((
                Checked::fact(&device, &message, sig),
                message,
                sig.to_owned(),
                device,
            ))
        });
    let candidates: Vec<Fact> = claims.chain(records).collect();
    // Held only to read what is known, not while the candidates are read (a change
    // encoded twice each) or verified (seconds for a catch-up): the writer keeps every
    // signature it makes there, and a scan it decides would wait for the precheck.
    let known = vouched
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let unknown: Vec<Fact> = candidates
        .into_iter()
        .filter(|(fact, ..)| {
            let seen = known.contains(fact);
            if seen {
                found.insert(*fact);
            }
            !seen
        })
        .collect();
    drop(known);
    let check = |items: &[Fact]| {
        let mut checked = Checked::default();
        for (fact, message, sig, device) in items {
            if device.verifies(message, sig) {
                checked.insert(*fact);
            }
        }
        checked
    };
    let threads = cores();
    let checked = if unknown.len() < PARALLEL_FROM || threads < 2 {
        check(&unknown)
    } else {
        std::thread::scope(|scope| {
            let running: Vec<_> = unknown
                .chunks(unknown.len().div_ceil(threads))
                .map(|part| scope.spawn(move || check(part)))
                .collect();
            let mut all = Checked::default();
            for thread in running {
                if let Ok(part) = thread.join() {
                    all.extend(part);
                }
            }
            all
        })
    };
    for fact in checked.facts() {
        kept.insert(*fact);
    }
    vouched
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remember(&kept);
    found.extend(checked);
    found.seal(sealed, sealed_records);
    found
}

/// A seal (`seal.rs`) a batch carries, its signature verified.
struct Seal {
    /// Its index among the batch's puts.
    put: usize,
    writer: NodeId,
    /// The change it seals.
    through: ChangeHash,
    /// Its signature, as [`Checked`] keeps it.
    fact: [u8; 32],
}

/// The seals among `puts` whose writers' certificates `lookup` finds and whose signatures
/// verify (or `checked` holds).
fn seals_of(
    puts: &[Put],
    event: &EventId,
    lookup: &mut dyn FnMut(&NodeId) -> Option<Arc<Device>>,
    checked: &Checked,
) -> Vec<Seal> {
    puts.iter()
        .enumerate()
        .filter(|(_, p)| p.map == Map::Audit)
        .filter_map(|(i, p)| {
            let record = Signed::read(p)?.ok()?;
            let Signed::Audit(a) = &record else {
                return None;
            };
            if a.action != crate::seal::ACTION || a.tid.is_some() {
                return None;
            }
            let through = crate::seal::through(&a.detail)?;
            let device = lookup(&a.node)?;
            signed_by_checked(a, &device, event, checked).ok()?;
            let (message, sig) = record.message(event)?;
            Some(Seal {
                put: i,
                writer: a.node.clone(),
                through,
                fact: Checked::fact(&device, &message, sig),
            })
        })
        .collect()
}

/// A signature to verify, a change's or a record's: its digest as [`Checked`] keeps it, the
/// bytes it covers, the signature, and the signer.
type Fact = ([u8; 32], Vec<u8>, String, Arc<Device>);

/// Signatures a node's prechecks found good ([`precheck`]), shared by all of them, at most
/// [`VOUCHED_MOST`]. After a partition heals every peer on the other side sends the same
/// thousands of records, and a round two seconds later sends them again while the first is
/// still being taken: each is verified once.
#[derive(Debug, Default)]
pub struct Vouched(std::sync::Mutex<Checked>, std::sync::Mutex<KnownDevices>);

/// The devices a ledger sharing [`Vouched`] holds, each found vouched for by the event's CA
/// there, and that CA's certificate.
#[derive(Debug, Default)]
struct KnownDevices {
    ca: Option<(EventId, Vec<u8>)>,
    devices: HashMap<NodeId, Arc<Device>>,
}

/// Most signatures [`Vouched`] keeps (32 bytes each); past it, it starts over.
const VOUCHED_MOST: usize = 262_144;

impl Vouched {
    /// How many signatures it holds.
    pub fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the signature `fact` stands for was found good.
    pub(crate) fn contains(&self, fact: &[u8; 32]) -> bool {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(fact)
    }

    /// Keeps the devices a ledger holds, or a message carried (each checked against
    /// `trust`), for the prechecks of messages that do not carry their writers'
    /// certificates: a writer's changes after a heal come in many messages, and only the
    /// first carries its certificate when the other side never held it. Only the CA can
    /// make a device, so what is kept is bounded by the event's devices; a device the
    /// ledger has yet to take only lets a precheck verify its signatures, which the
    /// ledger's own check still rules on.
    pub(crate) fn know_devices(&self, trust: &Trust, devices: &HashMap<NodeId, Arc<Device>>) {
        let mut known = self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ca = (trust.event(), trust.ca_key());
        if known
            .ca
            .as_ref()
            .is_none_or(|(e, k)| (e, k.as_slice()) != ca)
        {
            known.ca = Some((ca.0.clone(), ca.1.to_vec()));
            known.devices.clear();
        }
        for (node, device) in devices {
            known
                .devices
                .entry(node.clone())
                .or_insert_with(|| device.clone());
        }
    }

    /// The devices kept by [`Vouched::know_devices`], when they were checked against the CA
    /// `trust` holds (none otherwise).
    fn devices_for(&self, trust: &Trust) -> HashMap<NodeId, Arc<Device>> {
        let known = self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known
            .ca
            .as_ref()
            .is_some_and(|(e, k)| (e, k.as_slice()) == (trust.event(), trust.ca_key()))
        {
            known.devices.clone()
        } else {
            HashMap::new()
        }
    }

    /// Keeps that the signature `fact` stands for was found good.
    pub(crate) fn keep(&self, fact: [u8; 32]) {
        let mut found = Checked::default();
        found.insert(fact);
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remember(&found);
    }
}

impl Checked {
    /// Keeps `found` too, starting over first if that would hold more than [`VOUCHED_MOST`].
    fn remember(&mut self, found: &Checked) {
        if self.len() + found.len() > VOUCHED_MOST {
            *self = Checked::default();
        }
        for fact in found.facts() {
            self.insert(*fact);
        }
    }
}

/// One put of a change, as `put_of` read it.
struct Put {
    change: ChangeHash,
    map: Map,
    /// The object it writes.
    obj: ObjId,
    key: String,
    value: String,
}

/// Checks every change in `changes` (none of which `doc` holds) against the rules in the
/// module docs, at this node's time `now_ms`: first the device certificates the changes
/// bring, then every record against its writer's.
pub(crate) fn check(
    doc: &AutoCommit,
    roots: &Roots,
    changes: &[Change],
    now_ms: i64,
    checker: &mut Checker<'_>,
) -> Result<HashSet<TicketId>, LedgerError> {
    let puts = puts_of(roots, changes)?;
    if changes.is_empty() {
        return Ok(HashSet::new());
    }
    let Some(trust) = checker.trust else {
        return Err(refused(
            "this node has no mesh identity, so it cannot check who wrote the records it is \
             given (pair it with the event first)",
        ));
    };
    // Keys written by the changes checked so far, and the value each wrote.
    let mut written: HashMap<(Map, String), &str> = HashMap::new();
    for put in &puts {
        let held = doc
            .get_all(&put.obj, put.key.as_str())
            .map_err(LedgerError::from)?;
        if held
            .iter()
            .any(|(v, _)| v.as_str() != Some(put.value.as_str()))
        {
            return Err(in_change(
                &put.change,
                format!(
                    "overwrites {}/{} with another value",
                    put.map.name(),
                    put.key
                ),
            ));
        }
        match written.get(&(put.map, put.key.clone())) {
            Some(earlier) if *earlier != put.value => {
                return Err(in_change(
                    &put.change,
                    format!(
                        "writes {}/{} twice with different values",
                        put.map.name(),
                        put.key
                    ),
                ));
            }
            Some(_) => {}
            None => {
                written.insert((put.map, put.key.clone()), &put.value);
            }
        }
    }
    // Devices first: a batch may bring a certificate after records it signed.
    let brought = brought_by(trust, &puts)?;
    let mut lookup = |node: &NodeId| -> Option<Arc<Device>> {
        if let Some(d) = brought.get(node).or_else(|| checker.devices.get(node)) {
            return Some(d.clone());
        }
        let text = doc
            .get(&roots.devices, node.as_str())
            .ok()
            .flatten()
            .and_then(|(v, _)| v.as_str().map(str::to_owned))?;
        let device = Arc::new(device_of(trust, node.as_str(), &text).ok()?);
        checker.devices.insert(node.clone(), device.clone());
        Some(device)
    };
    // Every change is a device's of this event: written under the node id of a device whose
    // certificate the ledger holds or the batch brings. A peer cannot pass records on (even
    // good ones, signed by their writers) under an author it made up.
    let mut authors: HashMap<ChangeHash, Arc<Device>> = HashMap::with_capacity(changes.len());
    for change in changes {
        let actor = change.actor_id();
        let device = crate::authored::node_of(actor).and_then(|node| lookup(&node));
        let Some(device) = device else {
            return Err(in_change(
                &change.hash(),
                format!("written by actor {actor}, which is no device of this event"),
            ));
        };
        authors.insert(change.hash(), device);
    }
    // One history per author. Automerge holds one change per author and number, and refuses
    // any other for good, with every change that builds on it: two changes of one number,
    // both signed by their author, are a device that signed two histories: a stolen one,
    // splitting the mesh, or two copies of its data run by an earlier gatemesh (this one
    // writes each opening under an actor of its own, `authored::incarnation`). Refused here
    // by name, before automerge (which would fail half-way and leave the gate to reload its
    // ledger each time the other history is offered).
    let mut numbered: HashMap<(&automerge::ActorId, u64), ChangeHash> = HashMap::new();
    for change in changes {
        let (actor, seq, hash) = (change.actor_id(), change.seq(), change.hash());
        let held = checker.held.tip(actor).is_some_and(|t| seq <= t.seq);
        let twice = numbered
            .insert((actor, seq), hash)
            .is_some_and(|h| h != hash);
        if held || twice {
            return Err(in_change(
                &hash,
                format!(
                    "a second change numbered {seq} of {:?} ({}): its author signed two \
                     histories (a stolen device, or two copies of its data run by an \
                     earlier gatemesh)",
                    authors[&hash].peer.name,
                    if held {
                        "this ledger holds another"
                    } else {
                        "the same batch brings another"
                    }
                ),
            ));
        }
    }
    // What the batch's seals vouch for (`seal.rs`), and what a precheck's did: a seal whose
    // sealed change the precheck found vouched for by that writer was walked from there
    // already, over the whole message this batch is part of. The seals themselves were
    // verified just now.
    let seals = seals_of(&puts, checker.event, &mut lookup, checker.checked);
    let verified: HashSet<usize> = seals.iter().map(|s| s.put).collect();
    let to_walk: Vec<(NodeId, ChangeHash)> = seals
        .into_iter()
        .filter(|s| checker.checked.sealed_by(&s.through) != Some(&s.writer))
        .map(|s| (s.writer, s.through))
        .collect();
    let sealed = crate::seal::sealed(changes, &to_walk);
    let sealed_by =
        |hash: &ChangeHash| sealed.get(hash).or_else(|| checker.checked.sealed_by(hash));
    // ... and signed by it otherwise (`authored.rs`): in its one form, checked now; its
    // signature verified with the records' below. Nobody makes a change in another's name.
    let mut claims = Vec::new();
    for change in changes {
        let hash = change.hash();
        let device = &authors[&hash];
        if sealed_by(&hash) == Some(&device.node) {
            continue;
        }
        let claim = Claim::of(
            change,
            device,
            checker.event,
            checker.checked,
            checker.vouched,
        )
        .map_err(|why| in_change(&hash, why))?;
        claims.extend(claim);
    }
    // The flood bound first, with no signature checked: a flood is refused at the cost of
    // reading it, not of verifying a thousand signatures on the writer's thread.
    let mut flood = Flood::default();
    for put in puts.iter().filter(|p| p.map == Map::Redemptions) {
        let why = |why| in_change(&put.change, why);
        let r = read::<Redemption>(put.map, &put.value).map_err(why)?;
        flood
            .check(doc, roots, checker.per_ticket, &r)
            .map_err(why)?;
    }
    // Every rule but the signature, record by record; then the signatures, on every core
    // when there are many (a gate catching up checks 100,000).
    let mut signed = Vec::new();
    for (i, put) in puts.iter().enumerate() {
        let why = |why| in_change(&put.change, why);
        let (key, value) = (&put.key, &put.value);
        let record = match Signed::read(put) {
            Some(read) => read.map_err(why)?,
            None if put.map == Map::Revocations => {
                revocation_taken(trust, key, value, now_ms).map_err(why)?;
                continue;
            }
            None => continue,
        };
        if let Signed::Lists(l) = &record {
            lists_rule(l, checker.event).map_err(why)?;
        }
        let device = record.taken(key, now_ms, &mut lookup).map_err(why)?;
        // A record of the change's author is vouched for by the change (its signature or
        // its author's seal); a verified seal was verified just now.
        let vouched_for = verified.contains(&i) || authors[&put.change].node == *record.writer();
        signed.push((i, record, device, vouched_for));
    }
    // What is verified here is kept for later prechecks; what a precheck found good, it
    // kept itself.
    let keep = checker.vouched.filter(|_| checker.checked.len() == 0);
    on_every_core(&claims, claims.len(), |claim| {
        if !claim.holds() {
            return Err(in_change(
                &claim.hash,
                format!(
                    "a change in the name of {:?} that it did not sign",
                    claim.device.peer.name
                ),
            ));
        }
        if let Some(keep) = keep {
            keep.keep(claim.fact);
        }
        Ok(())
    })?;
    signatures(&signed, checker.event, (checker.checked, keep))
        .map_err(|(i, why)| in_change(&puts[i].change, why))?;
    checker.devices.extend(brought);
    // The tickets these changes write records of: what the ledger recomputes once they are
    // in (only puts of new keys get this far, so this is what a diff of the document would
    // find, at no cost of its own).
    Ok(puts
        .iter()
        .filter(|p| p.map.sharded())
        .filter_map(|p| ticket_of_key(&p.key))
        .collect())
}

/// Most redemptions one writer may hold of one ticket. An honest gate writes one per entry
/// or exit of the holder (a ten-day festival pass with re-entry: a few hundred); a device
/// writing thousands for one ticket is flooding it.
pub const MAX_PER_TICKET: usize = 1000;
/// Most redemption ids a redemption may list as seen: a ticket's whole history, bounded
/// as above for every gate of a large venue.
pub const MAX_SEEN: usize = 4096;

/// Counts, per writer and ticket, the redemptions a batch adds to those the ledger holds.
#[derive(Default)]
struct Flood {
    batch: HashMap<(NodeId, gatemesh_ticket::TicketId), usize>,
    /// Per ticket, how many the batch adds (all writers).
    added: HashMap<gatemesh_ticket::TicketId, usize>,
    /// Per writer and ticket, how many the ledger held before the batch.
    held: HashMap<(NodeId, gatemesh_ticket::TicketId), usize>,
}

impl Flood {
    fn check(
        &mut self,
        doc: &AutoCommit,
        roots: &Roots,
        per_ticket: &HashMap<gatemesh_ticket::TicketId, usize>,
        r: &Redemption,
    ) -> Result<(), String> {
        if r.seen.len() > MAX_SEEN {
            return Err(format!(
                "a redemption that lists {} seen (at most {MAX_SEEN})",
                r.seen.len()
            ));
        }
        let key = (r.node.clone(), r.tid.clone());
        let mine = {
            let mine = self.batch.entry(key.clone()).or_default();
            *mine += 1;
            *mine
        };
        let added = {
            let added = self.added.entry(r.tid.clone()).or_default();
            *added += 1;
            *added
        };
        // The ticket's records of every writer, with the batch's: far from the bound (the
        // everyday case), the writer's own cannot be near it, and nothing is read.
        if per_ticket.get(&r.tid).copied().unwrap_or(0) + added <= MAX_PER_TICKET {
            return Ok(());
        }
        // What the ledger already holds of this writer for this ticket, read once.
        let held = *self.held.entry(key).or_insert_with(|| {
            doc.map_range(
                roots.redemptions.of(&r.tid),
                crate::layout::ticket_prefix(&r.tid),
            )
            .filter(|item| {
                matches!(&item.value, automerge::ValueRef::Scalar(automerge::ScalarValueRef::Str(t))
                        if serde_json::from_str::<Redemption>(t).is_ok_and(|h| h.node == r.node))
            })
            .count()
        });
        if held + mine > MAX_PER_TICKET {
            return Err(format!(
                "node {} writes more than {MAX_PER_TICKET} redemptions of ticket {}",
                r.node, r.tid
            ));
        }
        Ok(())
    }
}

fn in_change(hash: &ChangeHash, why: String) -> LedgerError {
    refused(format!("change {hash}: {why}"))
}

/// The device a `devices` record names under `key`, vouched for by the CA.
pub(crate) fn device_of(trust: &Trust, key: &str, text: &str) -> Result<Device, String> {
    let record: DeviceRecord = serde_json::from_str(text)
        .map_err(|e| format!("a devices record that does not read: {e}"))?;
    if record.node.as_str() != key {
        return Err(format!(
            "a devices record under {key:?}, which is not its node id ({})",
            record.node
        ));
    }
    record.device(trust)
}

/// The place, key and text of an operation that puts a record; anything else is refused.
/// A ticket's record goes in its ticket's shard only (`layout.rs`).
fn put_of<'a, 'r>(
    roots: &'r Roots,
    op: &'a legacy::Op,
) -> Result<(&'r crate::layout::Place, String, &'a str), String> {
    let Some(place) = roots.place(&op.obj) else {
        return Err(if op.obj == legacy::ObjectId::Root {
            "writes the document's root (the record maps are made once, at genesis)".into()
        } else if let Some(map) = roots.parent(&op.obj) {
            format!(
                "writes the {} map itself (its records sit in its shards, made at genesis)",
                map.name()
            )
        } else {
            format!("writes object {}, which is no record map", op.obj)
        });
    };
    let map = place.map;
    let legacy::Key::Map(key) = &op.key else {
        return Err(format!("a list operation in {}", map.name()));
    };
    if let Some(shard) = place.shard {
        let Some(tid) = ticket_of_key(key) else {
            return Err(format!("a {} key {key:?} that names no ticket", map.name()));
        };
        let own = shard_of(&tid);
        if own != shard {
            return Err(format!(
                "a {} record of ticket {tid} in shard {shard:02x}, not its own ({own:02x})",
                map.name()
            ));
        }
    }
    if op.insert {
        return Err(format!("a list insert in {}", map.name()));
    }
    if !op.pred.is_empty() {
        return Err(format!("overwrites or deletes {}/{key}", map.name()));
    }
    match &op.action {
        legacy::OpType::Put(ScalarValue::Str(text)) => Ok((place, key.to_string(), text.as_str())),
        legacy::OpType::Put(_) => Err(format!("puts a value that is no record in {}", map.name())),
        legacy::OpType::Delete => Err(format!("deletes {}/{key}", map.name())),
        legacy::OpType::Make(_) => Err(format!("makes an object in {}", map.name())),
        legacy::OpType::Increment(_) => Err(format!("increments {}/{key}", map.name())),
        legacy::OpType::MarkBegin(_) | legacy::OpType::MarkEnd(_) => {
            Err(format!("marks text in {}", map.name()))
        }
    }
}

fn read<T: DeserializeOwned>(map: Map, text: &str) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("a {} record that does not read: {e}", map.name()))
}

/// A revocation is taken when it sits under its own key, is not dated ahead of `now_ms`,
/// and the event's CA signed it.
fn revocation_taken(trust: &Trust, key: &str, text: &str, now_ms: i64) -> Result<(), String> {
    let r = read::<crate::revoke::Revocation>(Map::Revocations, text)?;
    if r.key() != key {
        return Err(format!(
            "a revocation under {key:?}, which is not its key ({:?})",
            r.key()
        ));
    }
    let ahead = r.at_ms.saturating_sub(now_ms);
    if ahead > MAX_CLOCK_AHEAD_MS {
        return Err(format!(
            "a revocation dated {} s ahead of this gate's clock",
            ahead / 1000
        ));
    }
    trust.check_revocation(&r)
}

/// What a release of the check-in lists must be besides signed by the server: for this
/// event, and a lists file that checks ([`gatemesh_wire::Lists::new`]) — so no gate ever
/// holds lists it could not check in with. The lists, checked.
pub(crate) fn lists_rule(l: &ListsRecord, event: &EventId) -> Result<gatemesh_wire::Lists, String> {
    if l.version == 0 {
        return Err("a release of the lists with version 0 (versions count from 1)".into());
    }
    if l.lists.event != *event {
        return Err(format!(
            "a release of the lists of event {}, not {event}",
            l.lists.event
        ));
    }
    gatemesh_wire::Lists::new(l.lists.clone())
        .map_err(|e| format!("a release of the lists that does not check: {e}"))
}

/// A record of a batch from outside, read, its signature not checked yet.
enum Signed {
    Redemption(Redemption),
    Resolution(Resolution),
    Status(Status),
    Audit(AuditEntry),
    Lists(Box<ListsRecord>),
}

impl Signed {
    /// Every rule of [`taken`] but the signature; the writer's device, to check it with.
    fn taken(
        &self,
        key: &str,
        now_ms: i64,
        lookup: &mut impl FnMut(&NodeId) -> Option<Arc<Device>>,
    ) -> Result<Arc<Device>, String> {
        match self {
            Self::Redemption(r) => taken(
                r,
                key,
                |r| record_key(&r.tid, r.id.as_str()),
                now_ms,
                lookup,
            ),
            Self::Resolution(r) => taken(
                r,
                key,
                |r| record_key(&r.tid, r.id.as_str()),
                now_ms,
                lookup,
            ),
            Self::Status(s) => taken(s, key, status_key, now_ms, lookup),
            Self::Audit(a) => taken(a, key, |a| audit_key(&a.hlc), now_ms, lookup),
            Self::Lists(l) => taken(l.as_ref(), key, lists_key, now_ms, lookup),
        }
    }

    /// [`signed_by_keeping`]; its signature not verified when `sealed` (its writer's seal
    /// vouches for the change that carries it).
    fn signed_by(
        &self,
        device: &Device,
        event: &EventId,
        (checked, keep): (&Checked, Option<&Vouched>),
        sealed: bool,
    ) -> Result<(), String> {
        let how = Verify {
            checked,
            keep,
            sealed,
        };
        match self {
            Self::Redemption(r) => signed_by_keeping(r, device, event, how),
            Self::Resolution(r) => signed_by_keeping(r, device, event, how),
            Self::Status(s) => signed_by_keeping(s, device, event, how),
            Self::Audit(a) => signed_by_keeping(a, device, event, how),
            Self::Lists(l) => signed_by_keeping(l.as_ref(), device, event, how),
        }
    }

    /// The record a put of a signed map holds (`None` for a device or a revocation).
    fn read(put: &Put) -> Option<Result<Self, String>> {
        let value = &put.value;
        Some(match put.map {
            Map::Redemptions => read(put.map, value).map(Self::Redemption),
            Map::Resolutions => read(put.map, value).map(Self::Resolution),
            Map::Status => read(put.map, value).map(Self::Status),
            Map::Audit => read(put.map, value).map(Self::Audit),
            Map::Lists => read(put.map, value).map(|l| Self::Lists(Box::new(l))),
            Map::Revocations | Map::Devices => return None,
        })
    }

    fn writer(&self) -> &NodeId {
        match self {
            Self::Redemption(r) => r.writer(),
            Self::Resolution(r) => r.writer(),
            Self::Status(s) => s.writer(),
            Self::Audit(a) => a.writer(),
            Self::Lists(l) => l.writer(),
        }
    }

    /// What its signature signs, and the signature.
    fn message(&self, event: &EventId) -> Option<(Vec<u8>, &str)> {
        fn of<'r, R: Record>(r: &'r R, event: &EventId) -> Option<(Vec<u8>, &'r str)> {
            let unsigned = r.unsigned_json().ok()?;
            Some((crate::sign::message(event, R::MAP, &unsigned), r.sig()?))
        }
        match self {
            Self::Redemption(r) => of(r, event),
            Self::Resolution(r) => of(r, event),
            Self::Status(s) => of(s, event),
            Self::Audit(a) => of(a, event),
            Self::Lists(l) => of(l.as_ref(), event),
        }
    }
}

/// A record of a batch (its index among the batch's puts), its writer's device, and whether
/// its signature is not to be verified: its writer's seal vouches for the change that
/// carries it (`seal.rs`), or it is a seal verified already.
type ToVerify = (usize, Signed, Arc<Device>, bool);

/// Below this many records a batch's signatures are checked on the calling thread: starting
/// threads costs more than a few dozen checks (each ~50 µs).
const PARALLEL_FROM: usize = 64;

/// The threads a batch's signatures are checked on: the cores this process may use, at
/// most 8. Asked once: the standard library reads the cgroup's quota files each time it
/// is asked, and the writer asks for every batch it takes.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}

/// Checks every record's signature (`signed_by`), on every core for a large batch; those
/// verified join `keep`, if given. The error is the first in the batch's order, with its
/// index, whichever thread found it.
fn signatures(
    items: &[ToVerify],
    event: &EventId,
    (checked, keep): (&Checked, Option<&Vouched>),
) -> Result<(), (usize, String)> {
    // Found good already or vouched for, they cost a digest or nothing each: no threads for
    // those.
    let unsealed = items.iter().filter(|item| !item.3).count();
    let costly = if checked.len() >= unsealed {
        0
    } else {
        unsealed
    };
    on_every_core(items, costly, |(i, r, device, sealed)| {
        r.signed_by(device, event, (checked, keep), *sealed)
            .map_err(|why| (*i, why))
    })
}

/// A change's signature by its author, to verify (`authored.rs`).
struct Claim {
    hash: ChangeHash,
    /// What it covers.
    message: Vec<u8>,
    sig: String,
    device: Arc<Device>,
    /// What it is kept as once found good.
    fact: [u8; 32],
}

impl Claim {
    /// `change`'s signature by `device`, its author, to verify; `None` if it was found good
    /// before (ahead in `checked`, or from another peer in `vouched`: the hash fixes every
    /// byte). An error if the change does not carry it in its one form.
    fn of(
        change: &Change,
        device: &Arc<Device>,
        event: &EventId,
        checked: &Checked,
        vouched: Option<&Vouched>,
    ) -> Result<Option<Self>, String> {
        let hash = change.hash();
        let fact = Checked::change_fact(device, &hash);
        if checked.contains(&fact) || vouched.is_some_and(|v| v.contains(&fact)) {
            return Ok(None);
        }
        let (message, sig) = crate::authored::claim(change, event)?;
        Ok(Some(Self {
            hash,
            message,
            sig,
            device: device.clone(),
            fact,
        }))
    }

    /// Whether its author signed it (an ECDSA verification).
    fn holds(&self) -> bool {
        self.device.verifies(&self.message, &self.sig)
    }
}

/// Whether `change` is signed by `device`, its author (`authored.rs`), as [`check`] finds
/// it: found good before it costs a digest; otherwise an ECDSA verification, whose good
/// result is kept in `vouched` for the check that takes the change.
pub(crate) fn signed_by_author(
    change: &Change,
    device: &Arc<Device>,
    event: &EventId,
    vouched: Option<&Vouched>,
) -> bool {
    match Claim::of(change, device, event, &Checked::default(), vouched) {
        Ok(None) => true,
        Ok(Some(claim)) if claim.holds() => {
            if let Some(vouched) = vouched {
                vouched.keep(claim.fact);
            }
            true
        }
        Ok(Some(_)) | Err(_) => false,
    }
}

/// `check` of every item, in order, on every core when `costly` of them cost an ECDSA
/// verification each and that is at least [`PARALLEL_FROM`]: the first error in the items'
/// order, whichever thread found it.
fn on_every_core<T: Sync, E: Send>(
    items: &[T],
    costly: usize,
    check: impl Fn(&T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let run = |items: &[T]| items.iter().try_for_each(&check);
    let threads = cores();
    if costly < PARALLEL_FROM || threads < 2 {
        return run(items);
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let running: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || run(part)))
            .collect();
        // Chunks are in order and each stops at its first error: the first error of the
        // first chunk that has one is the batch's first.
        let mut first = None;
        for thread in running {
            match thread.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first.get_or_insert(e);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// A record is taken when it sits under its own key, is not dated ahead of `now_ms`, and
/// its writer — a device whose certificate the ledger holds — signed it (checked apart, by
/// `signatures`) and may write it. Returns the writer's device.
fn taken<R: Record>(
    r: &R,
    key: &str,
    derive: impl Fn(&R) -> String,
    now_ms: i64,
    lookup: &mut impl FnMut(&NodeId) -> Option<Arc<Device>>,
) -> Result<Arc<Device>, String> {
    let derived = derive(r);
    if derived != key {
        return Err(format!(
            "a {} record under {key:?}, which is not its key ({derived:?})",
            R::MAP
        ));
    }
    let ahead = r.at_ms().max(r.hlc().wall_ms).saturating_sub(now_ms);
    if ahead > MAX_CLOCK_AHEAD_MS {
        return Err(format!(
            "a {} record dated {} s ahead of this gate's clock",
            R::MAP,
            ahead / 1000
        ));
    }
    let writer = r.writer();
    let device = lookup(writer).ok_or_else(|| {
        format!(
            "a {} record of node {writer}, whose certificate the ledger does not hold",
            R::MAP
        )
    })?;
    Ok(device)
}

/// Whether `device` wrote `r`: its signature, its role's rights, its HLC in its own name.
/// (Not the certificate's validity at the record's time: a device sets its own clock, so
/// that would prove nothing, and records must stay checkable after the event. An expired
/// or revoked device is kept out at the handshake.)
pub(crate) fn signed_by<R: Record>(r: &R, device: &Device, event: &EventId) -> Result<(), String> {
    signed_by_checked(r, device, event, &Checked::default())
}

/// [`signed_by`], a signature in `checked` counting as verified.
pub(crate) fn signed_by_checked<R: Record>(
    r: &R,
    device: &Device,
    event: &EventId,
    checked: &Checked,
) -> Result<(), String> {
    let how = Verify {
        checked,
        keep: None,
        sealed: false,
    };
    signed_by_keeping(r, device, event, how)
}

/// How [`signed_by_keeping`] takes a record's signature.
#[derive(Clone, Copy)]
struct Verify<'a> {
    /// Signatures found good already.
    checked: &'a Checked,
    /// Where a signature verified is kept.
    keep: Option<&'a Vouched>,
    /// The writer's seal vouches for the record: its signature is not verified (nor kept,
    /// since it was not found good).
    sealed: bool,
}

/// [`signed_by_checked`], and the signature kept in `keep` (if given) once found good; not
/// verified when `sealed`.
fn signed_by_keeping<R: Record>(
    r: &R,
    device: &Device,
    event: &EventId,
    Verify {
        checked,
        keep,
        sealed,
    }: Verify<'_>,
) -> Result<(), String> {
    let what = R::MAP;
    if r.writer() != &device.node || r.hlc().node != device.node {
        return Err(format!(
            "a {what} record whose clock reading names node {}, not its writer {}",
            r.hlc().node,
            device.node
        ));
    }
    if !crate::sign::may_write(device.role(), what) {
        return Err(format!(
            "a {what} record from {} {:?}, whose role may not write {what}",
            device.role(),
            device.peer.name
        ));
    }
    let Some(sig) = r.sig() else {
        return Err(format!("an unsigned {what} record of node {}", device.node));
    };
    if sealed {
        return Ok(());
    }
    let unsigned = r.unsigned_json().map_err(|e| e.to_string())?;
    let message = crate::sign::message(event, what, &unsigned);
    if !device.verifies_with(&message, sig, checked) {
        return Err(format!(
            "a {what} record whose signature is not {:?}'s",
            device.peer.name
        ));
    }
    if let Some(keep) = keep {
        keep.keep(Checked::fact(device, &message, sig));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use automerge::transaction::Transactable;

    use super::*;

    #[test]
    fn chunks_are_split_by_their_own_lengths_and_nothing_else_is_taken() {
        let mut doc = AutoCommit::new();
        doc.put(automerge::ROOT, "k", "v").unwrap();
        doc.commit();
        let change = doc.get_last_local_change().unwrap().raw_bytes().to_vec();
        let two = [change.clone(), change.clone()].concat();
        assert_eq!(chunks(&two).unwrap().len(), 2);
        assert!(chunks(&two[..two.len() - 1]).is_err());
        assert!(chunks(b"not automerge at all").is_err());
        let mut long = change.clone();
        long[9] = 0xff; // a length that runs past the data
        assert!(chunks(&long).is_err());
        assert!(chunks(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_change_altered_on_the_way_is_refused_by_its_checksum() {
        let mut doc = AutoCommit::new();
        doc.put(automerge::ROOT, "k", "v").unwrap();
        doc.commit_with(
            automerge::transaction::CommitOptions::default().with_message("redemption".to_owned()),
        );
        let change = doc.get_last_local_change().unwrap().raw_bytes().to_vec();
        assert!(parse_change(&change).is_ok());
        // Its message altered: automerge still reads it, as another change of its author's.
        let at = change.windows(10).position(|w| w == b"redemption").unwrap();
        let mut altered = change.clone();
        altered[at] = 0;
        assert!(Change::try_from(&altered[..]).is_ok());
        let why = parse_change(&altered).unwrap_err().to_string();
        assert!(why.contains("checksum"), "{why}");
    }

    #[test]
    fn leb128_reads_what_it_should() {
        assert_eq!(leb128(&[0x05]), Some((5, 1)));
        assert_eq!(leb128(&[0x80, 0x01]), Some((128, 2)));
        assert_eq!(leb128(&[0x80; 11]), None);
        assert_eq!(leb128(&[]), None);
    }
}
