//! The gate every change from outside passes before any of it reaches the document: a
//! peer's sync message, an imported ledger. Automerge would apply anything a peer wrote —
//! deleting other gates' redemptions, replacing a root map, rewriting `meta` — so each new
//! change is decoded and its operations checked first:
//!
//! - only puts of text into the four record maps (`redemptions`, `resolutions`, `status`,
//!   `audit`), never into the root, `meta` or any other object; no deletes, increments,
//!   marks, list inserts or new objects;
//! - each put writes a key not yet written, or the very value already there (two gates
//!   that learned the same admission from the server write it alike), and overwrites
//!   nothing (`pred` empty);
//! - each value is the record its map holds, under the key derived from it (so a record
//!   cannot be replayed under another key), with its times no further ahead of this node's
//!   clock than [`MAX_CLOCK_AHEAD_MS`].
//!
//! A change that breaks one rule refuses the whole message or file
//! ([`LedgerError::Refused`]): nothing of it is stored or passed on. Compressed change
//! chunks are inflated under a bound before automerge sees them.
//!
//! What this cannot tell yet is *who* wrote a record: a peer may still write a well-formed
//! record in another device's name (until records are signed).

use std::collections::HashMap;

use automerge::{AutoCommit, Change, ChangeHash, ObjId, ReadDoc, ScalarValue, legacy};
use serde::de::DeserializeOwned;

use crate::{
    LedgerError,
    doc::{Roots, audit_key, record_key, status_key},
    model::{AuditEntry, Hlc, Redemption, Resolution, Status},
};

/// How far ahead of this node's clock a record's times may be. Venue laptops run without
/// NTP for days; ten minutes forgives a drifting clock, not a record dated next year (whose
/// HLC would win every later status, and whose time would open the repeat window).
pub const MAX_CLOCK_AHEAD_MS: i64 = 10 * 60 * 1000;
/// The largest change this node inflates: a change of one record is a few hundred bytes, a
/// gate's busiest commit a few hundred kilobytes.
pub const MAX_CHANGE_BYTES: usize = 16 * 1024 * 1024;

const MAGIC: [u8; 4] = [0x85, 0x6f, 0x4a, 0x83];
const DOCUMENT: u8 = 0;
const CHANGE: u8 = 1;
const COMPRESSED: u8 = 2;

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

/// The changes `bytes` carries that `doc` does not hold yet (of a document, those of its
/// history `doc` lacks). Automerge can panic on crafted input; the caller guards this.
pub(crate) fn new_changes(doc: &mut AutoCommit, bytes: &[u8]) -> Result<Vec<Change>, LedgerError> {
    let mut out = Vec::new();
    for (kind, chunk) in chunks(bytes)? {
        match kind {
            CHANGE => out.push(parse_change(chunk)?),
            COMPRESSED => {
                let (len, leb) = leb128(&chunk[9..]).unwrap_or_default();
                let body = &chunk[9 + leb..][..usize::try_from(len).unwrap_or(0)];
                miniz_oxide::inflate::decompress_to_vec_with_limit(body, MAX_CHANGE_BYTES)
                    .map_err(|_| {
                        refused(format!(
                            "a compressed change that does not inflate within {MAX_CHANGE_BYTES} \
                             bytes"
                        ))
                    })?;
                out.push(parse_change(chunk)?);
            }
            DOCUMENT => {
                let other = automerge::Automerge::load(chunk)
                    .map_err(|e| LedgerError::BadMessage(e.to_string()))?;
                out.extend(missing_from(doc, &other));
            }
            other => return Err(refused(format!("a chunk of type {other}"))),
        }
    }
    out.retain(|c| !holds(doc, &c.hash()));
    Ok(out)
}

/// Whether `doc` holds the change (its metadata only: building the change would cost its
/// operations).
fn holds(doc: &mut AutoCommit, hash: &ChangeHash) -> bool {
    doc.get_change_meta_by_hash(hash).is_some()
}

/// The changes of `other` that `doc` lacks, found from `other`'s heads down to what `doc`
/// holds: a document that shares most of its history costs only what it adds.
pub(crate) fn missing_from(doc: &mut AutoCommit, other: &automerge::Automerge) -> Vec<Change> {
    let mut stack = other.get_heads();
    let mut seen = std::collections::HashSet::new();
    let mut missing = Vec::new();
    while let Some(hash) = stack.pop() {
        if !seen.insert(hash) || holds(doc, &hash) {
            continue;
        }
        if let Some(meta) = other.get_change_meta_by_hash(&hash) {
            stack.extend(meta.deps.iter().copied());
        }
        missing.extend(other.get_change_by_hash(&hash));
    }
    missing
}

fn parse_change(chunk: &[u8]) -> Result<Change, LedgerError> {
    Change::try_from(chunk).map_err(|e| LedgerError::BadMessage(e.to_string()))
}

/// The record maps, as the operations of a decoded change name them.
struct Maps {
    redemptions: legacy::ObjectId,
    resolutions: legacy::ObjectId,
    status: legacy::ObjectId,
    audit: legacy::ObjectId,
}

fn legacy_id(id: &ObjId) -> legacy::ObjectId {
    match id {
        ObjId::Root => legacy::ObjectId::Root,
        ObjId::Id(counter, actor, _) => legacy::ObjectId::Id(legacy::OpId(*counter, actor.clone())),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Map {
    Redemptions,
    Resolutions,
    Status,
    Audit,
}

impl Map {
    fn name(self) -> &'static str {
        match self {
            Self::Redemptions => "redemptions",
            Self::Resolutions => "resolutions",
            Self::Status => "status",
            Self::Audit => "audit",
        }
    }
}

/// Checks every change in `changes` (none of which `doc` holds) against the rules in the
/// module docs, at this node's time `now_ms`.
pub(crate) fn check(
    doc: &AutoCommit,
    roots: &Roots,
    changes: &[Change],
    now_ms: i64,
) -> Result<(), LedgerError> {
    let maps = Maps {
        redemptions: legacy_id(&roots.redemptions),
        resolutions: legacy_id(&roots.resolutions),
        status: legacy_id(&roots.status),
        audit: legacy_id(&roots.audit),
    };
    // Keys written by the changes checked so far, and the value each wrote.
    let mut written: HashMap<(Map, String), String> = HashMap::new();
    for change in changes {
        let hash = change.hash();
        let expanded = change.decode();
        for op in &expanded.operations {
            let (map, key, value) = put_of(&maps, op).map_err(|why| in_change(&hash, why))?;
            check_record(map, &key, value, now_ms).map_err(|why| in_change(&hash, why))?;
            let root = match map {
                Map::Redemptions => &roots.redemptions,
                Map::Resolutions => &roots.resolutions,
                Map::Status => &roots.status,
                Map::Audit => &roots.audit,
            };
            let held = doc.get_all(root, key.as_str()).map_err(LedgerError::from)?;
            if held.iter().any(|(v, _)| v.as_str() != Some(value)) {
                return Err(in_change(
                    &hash,
                    format!("overwrites {}/{key} with another value", map.name()),
                ));
            }
            match written.get(&(map, key.clone())) {
                Some(earlier) if earlier != value => {
                    return Err(in_change(
                        &hash,
                        format!("writes {}/{key} twice with different values", map.name()),
                    ));
                }
                Some(_) => {}
                None => {
                    written.insert((map, key), value.to_owned());
                }
            }
        }
    }
    Ok(())
}

fn in_change(hash: &ChangeHash, why: String) -> LedgerError {
    refused(format!("change {hash}: {why}"))
}

/// The map, key and text of an operation that puts a record; anything else is refused.
fn put_of<'a>(maps: &Maps, op: &'a legacy::Op) -> Result<(Map, String, &'a str), String> {
    let map = if op.obj == maps.redemptions {
        Map::Redemptions
    } else if op.obj == maps.resolutions {
        Map::Resolutions
    } else if op.obj == maps.status {
        Map::Status
    } else if op.obj == maps.audit {
        Map::Audit
    } else if op.obj == legacy::ObjectId::Root {
        return Err(
            "writes the document's root (the record maps are made once, at genesis)".into(),
        );
    } else {
        return Err(format!("writes object {}, which is no record map", op.obj));
    };
    let legacy::Key::Map(key) = &op.key else {
        return Err(format!("a list operation in {}", map.name()));
    };
    if op.insert {
        return Err(format!("a list insert in {}", map.name()));
    }
    if !op.pred.is_empty() {
        return Err(format!("overwrites or deletes {}/{key}", map.name()));
    }
    match &op.action {
        legacy::OpType::Put(ScalarValue::Str(text)) => Ok((map, key.to_string(), text.as_str())),
        legacy::OpType::Put(_) => Err(format!("puts a value that is no record in {}", map.name())),
        legacy::OpType::Delete => Err(format!("deletes {}/{key}", map.name())),
        legacy::OpType::Make(_) => Err(format!("makes an object in {}", map.name())),
        legacy::OpType::Increment(_) => Err(format!("increments {}/{key}", map.name())),
        legacy::OpType::MarkBegin(_) | legacy::OpType::MarkEnd(_) => {
            Err(format!("marks text in {}", map.name()))
        }
    }
}

fn record<T: DeserializeOwned>(map: Map, text: &str) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("a {} record that does not read: {e}", map.name()))
}

/// The value is the record its map holds, under its own key, not dated ahead of `now_ms`.
fn check_record(map: Map, key: &str, text: &str, now_ms: i64) -> Result<(), String> {
    let (derived, at_ms, hlc): (String, i64, Hlc) = match map {
        Map::Redemptions => {
            let r: Redemption = record(map, text)?;
            (record_key(&r.tid, r.id.as_str()), r.at_ms, r.hlc)
        }
        Map::Resolutions => {
            let r: Resolution = record(map, text)?;
            (record_key(&r.tid, r.id.as_str()), r.at_ms, r.hlc)
        }
        Map::Status => {
            let s: Status = record(map, text)?;
            (status_key(&s), s.at_ms, s.hlc)
        }
        Map::Audit => {
            let a: AuditEntry = record(map, text)?;
            (audit_key(&a.hlc), a.at_ms, a.hlc)
        }
    };
    if derived != key {
        return Err(format!(
            "a {} record under {key:?}, which is not its key ({derived:?})",
            map.name()
        ));
    }
    let ahead = at_ms.max(hlc.wall_ms).saturating_sub(now_ms);
    if ahead > MAX_CLOCK_AHEAD_MS {
        return Err(format!(
            "a {} record dated {} s ahead of this gate's clock",
            map.name(),
            ahead / 1000
        ));
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
    fn leb128_reads_what_it_should() {
        assert_eq!(leb128(&[0x05]), Some((5, 1)));
        assert_eq!(leb128(&[0x80, 0x01]), Some((128, 2)));
        assert_eq!(leb128(&[0x80; 11]), None);
        assert_eq!(leb128(&[]), None);
    }
}
