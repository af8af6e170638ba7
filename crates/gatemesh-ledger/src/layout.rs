//! Where each record sits in the ledger's document (format 6).
//!
//! The genesis change (fixed actor, time 0, so every node of an event builds the same bytes
//! and no map is ever created twice) makes seven root maps — `redemptions`, `resolutions`,
//! `status`, `audit`, `devices`, `revocations`, `lists` — and a `meta` map naming the event
//! and the format. The three maps of ticket records (`redemptions`, `resolutions`, `status`) hold
//! [`SHARDS`] maps each, named `"00"` … `"ff"`, also made at genesis; a ticket's records sit
//! in the shard [`shard_of`] its id. Each record is one JSON string under a flat key derived
//! from the record itself, written once and never overwritten: `"<tid>,<id>"` for
//! redemptions and resolutions, `"<tid>,<hlc>,<node>"` for statuses (`,` never occurs in a
//! ticket id, so a range scan over `"<tid>,"` reads exactly one ticket), `"<hlc>,<node>"`
//! for audit lines (a writer's seals over its own history among them, `seal.rs`),
//! `"<node>"` for a device's certificate, `"<node>,<at>"` for a revocation,
//! `"<version>,<node>"` for a release of the event's check-in lists (the version as 16 hex
//! digits, so the latest sorts last).
//!
//! Why shards: automerge 0.12 applies a change from outside by walking its map's
//! operations from the first one up to the key it writes (`BatchApply` → `walk_map`). In
//! one map of 100,000 redemptions every peer's admission cost every gate a walk of half the
//! ledger — 16 ms at 100,000, most of a gate's time in a busy mesh (`gatemesh bench
//! fanout`). A shard holds 1/256 of it. Writing one's own records seeks, and does not walk.
//! The workspace now builds a patched automerge (`vendor/automerge/GATEMESH.md`) whose apply
//! seeks to the keys a change writes too; the shards stay, as the format, and because
//! automerge's apply still handles a map's operations at each key it writes.
//!
//! Why flat keys: two nodes that concurrently create the same nested map each make their own,
//! and one of them disappears from view; the shards are made once, at genesis, for that
//! reason. Why one scalar per record: a nested map of six fields costs seven operations and
//! made 100,000 inserts 8 times slower (automerge 0.12: 15 s against 2 s).
//!
//! (Format 1 kept one status per ticket and overwrote it; format 2 had no signatures;
//! format 3 no revocations; format 4 kept ticket records in one map each; format 5 had no
//! check-in lists.)

use std::{collections::HashMap, sync::Arc};

use automerge::{ActorId, AutoCommit, ObjId, ObjType, ROOT, ReadDoc, legacy};
use automerge::{transaction::CommitOptions, transaction::Transactable};
use gatemesh_ticket::{EventId, TicketId};
use sha2::{Digest, Sha256};

use crate::{LedgerError, model::Hlc};

const GENESIS_ACTOR: &[u8; 16] = b"gatemesh-genesis";
/// Layout version, in the genesis `meta` map.
pub(crate) const FORMAT: i64 = 6;
/// How many maps each map of ticket records is split into.
pub const SHARDS: usize = 256;

/// A record map of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Map {
    Redemptions,
    Resolutions,
    Status,
    Audit,
    Devices,
    Revocations,
    Lists,
}

impl Map {
    const ALL: [Self; 7] = [
        Self::Redemptions,
        Self::Resolutions,
        Self::Status,
        Self::Audit,
        Self::Devices,
        Self::Revocations,
        Self::Lists,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Redemptions => "redemptions",
            Self::Resolutions => "resolutions",
            Self::Status => "status",
            Self::Audit => "audit",
            Self::Devices => "devices",
            Self::Revocations => "revocations",
            Self::Lists => "lists",
        }
    }

    /// Whether the map holds ticket records, split into shards.
    pub(crate) fn sharded(self) -> bool {
        matches!(self, Self::Redemptions | Self::Resolutions | Self::Status)
    }
}

/// The shard that holds `tid`'s records: the first byte of the SHA-256 of its id, so every
/// node puts a ticket in the same shard, and the ticket ids of an event (often sequential)
/// spread evenly.
pub fn shard_of(tid: &TicketId) -> usize {
    usize::from(Sha256::digest(tid.as_str().as_bytes())[0])
}

fn shard_name(i: usize) -> String {
    format!("{i:02x}")
}

/// The genesis document of `event`: the same bytes on every machine.
pub fn genesis(event: &EventId) -> Vec<u8> {
    let mut doc = AutoCommit::new().with_actor(ActorId::from(&GENESIS_ACTOR[..]));
    // Writing fresh keys into a fresh document cannot fail.
    let _ = (|| -> Result<(), automerge::AutomergeError> {
        let meta = doc.put_object(ROOT, "meta", ObjType::Map)?;
        doc.put(&meta, "event", event.as_str())?;
        doc.put(&meta, "format", FORMAT)?;
        for map in Map::ALL {
            let obj = doc.put_object(ROOT, map.name(), ObjType::Map)?;
            if map.sharded() {
                for i in 0..SHARDS {
                    doc.put_object(&obj, shard_name(i), ObjType::Map)?;
                }
            }
        }
        Ok(())
    })();
    doc.commit_with(
        CommitOptions::default()
            .with_time(0)
            .with_message("genesis"),
    );
    doc.save()
}

/// One map of ticket records: its shards, by [`shard_of`].
#[derive(Debug, Clone)]
pub(crate) struct Sharded(Arc<[ObjId]>);

impl Sharded {
    /// The shard of `tid`.
    pub(crate) fn of(&self, tid: &TicketId) -> &ObjId {
        &self.0[shard_of(tid)]
    }

    /// Shard `i` (of [`SHARDS`]).
    pub(crate) fn shard(&self, i: usize) -> &ObjId {
        &self.0[i]
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &ObjId> {
        self.0.iter()
    }
}

/// Where a change's operation may put a record.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) map: Map,
    /// The object in the document.
    pub(crate) obj: ObjId,
    /// Its shard, in a map of ticket records.
    pub(crate) shard: Option<usize>,
}

/// The document's record maps, found once per document value.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    pub(crate) redemptions: Sharded,
    pub(crate) resolutions: Sharded,
    pub(crate) status: Sharded,
    pub(crate) audit: ObjId,
    pub(crate) devices: ObjId,
    pub(crate) revocations: ObjId,
    pub(crate) lists: ObjId,
    /// Every object a record may be put in, by the id a decoded change names it with.
    places: Arc<HashMap<legacy::ObjectId, Place>>,
    /// The maps of ticket records themselves, which hold shards and no record.
    parents: Arc<HashMap<legacy::ObjectId, Map>>,
}

impl Roots {
    /// The object `obj` of a decoded change, when a record may be put in it.
    pub(crate) fn place(&self, obj: &legacy::ObjectId) -> Option<&Place> {
        self.places.get(obj)
    }

    /// The map of ticket records `obj` is, itself (not one of its shards).
    pub(crate) fn parent(&self, obj: &legacy::ObjectId) -> Option<Map> {
        self.parents.get(obj).copied()
    }

    /// Whether `obj` is a shard of a map of ticket records.
    pub(crate) fn is_ticket_shard(&self, obj: &ObjId) -> bool {
        self.places
            .get(&legacy_id(obj))
            .is_some_and(|p| p.shard.is_some())
    }
}

pub(crate) fn legacy_id(id: &ObjId) -> legacy::ObjectId {
    match id {
        ObjId::Root => legacy::ObjectId::Root,
        ObjId::Id(counter, actor, _) => legacy::ObjectId::Id(legacy::OpId(*counter, actor.clone())),
    }
}

fn map_in(doc: &AutoCommit, parent: &ObjId, name: &str) -> Result<ObjId, LedgerError> {
    match doc.get(parent, name)? {
        Some((automerge::Value::Object(ObjType::Map), id)) => Ok(id),
        _ => Err(LedgerError::Corrupt(format!("no {name} map"))),
    }
}

/// The root maps alone: that they are still there (a cheap check after a change).
pub(crate) fn check_roots(doc: &AutoCommit) -> Result<(), LedgerError> {
    for map in Map::ALL {
        map_in(doc, &ROOT, map.name())?;
    }
    Ok(())
}

/// Finds every record map of `doc`, shards included.
pub(crate) fn roots_of(doc: &AutoCommit) -> Result<Roots, LedgerError> {
    let mut places = HashMap::new();
    let mut parents = HashMap::new();
    let mut sharded = |map: Map| -> Result<Sharded, LedgerError> {
        let parent = map_in(doc, &ROOT, map.name())?;
        let shards = (0..SHARDS)
            .map(|i| {
                let obj = map_in(doc, &parent, &shard_name(i)).map_err(|_| {
                    LedgerError::Corrupt(format!("no {}/{:02x} map", map.name(), i))
                })?;
                places.insert(
                    legacy_id(&obj),
                    Place {
                        map,
                        obj: obj.clone(),
                        shard: Some(i),
                    },
                );
                Ok(obj)
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        parents.insert(legacy_id(&parent), map);
        Ok(Sharded(shards.into()))
    };
    let redemptions = sharded(Map::Redemptions)?;
    let resolutions = sharded(Map::Resolutions)?;
    let status = sharded(Map::Status)?;
    let mut flat = |map: Map| -> Result<ObjId, LedgerError> {
        let obj = map_in(doc, &ROOT, map.name())?;
        places.insert(
            legacy_id(&obj),
            Place {
                map,
                obj: obj.clone(),
                shard: None,
            },
        );
        Ok(obj)
    };
    let audit = flat(Map::Audit)?;
    let devices = flat(Map::Devices)?;
    let revocations = flat(Map::Revocations)?;
    let lists = flat(Map::Lists)?;
    Ok(Roots {
        redemptions,
        resolutions,
        status,
        audit,
        devices,
        revocations,
        lists,
        places: Arc::new(places),
        parents: Arc::new(parents),
    })
}

/// The map `doc` keeps `tid`'s records of kind `map` in (`"redemptions"`, `"resolutions"`
/// or `"status"`), for tests and tools that write a document by hand; `None` when `doc`
/// has no such map.
pub fn ticket_map(doc: &impl ReadDoc, map: &str, tid: &TicketId) -> Option<ObjId> {
    let parent = match doc.get(ROOT, map).ok()?? {
        (automerge::Value::Object(ObjType::Map), id) => id,
        _ => return None,
    };
    match doc.get(&parent, shard_name(shard_of(tid))).ok()?? {
        (automerge::Value::Object(ObjType::Map), id) => Some(id),
        _ => None,
    }
}

/// Every shard of the map of ticket records `map`, in order (empty when `doc` has no such
/// map), for tests and tools that read or write a document by hand.
pub fn ticket_maps(doc: &impl ReadDoc, map: &str) -> Vec<ObjId> {
    let Some((automerge::Value::Object(ObjType::Map), parent)) = doc.get(ROOT, map).ok().flatten()
    else {
        return Vec::new();
    };
    (0..SHARDS)
        .filter_map(|i| match doc.get(&parent, shard_name(i)).ok()?? {
            (automerge::Value::Object(ObjType::Map), id) => Some(id),
            _ => None,
        })
        .collect()
}

/// The key of a redemption or resolution: its ticket and its id.
pub(crate) fn record_key(tid: &TicketId, id: &str) -> String {
    format!("{tid},{id}")
}

/// The sortable form of an HLC reading in keys.
fn hlc_key(hlc: &Hlc) -> String {
    format!("{:016x}.{:08x},{}", hlc.wall_ms, hlc.counter, hlc.node)
}

/// The key of a status record: its ticket and its HLC reading (which names its writer).
pub(crate) fn status_key(s: &crate::model::Status) -> String {
    format!("{},{}", s.tid, hlc_key(&s.hlc))
}

/// The key of a release of the check-in lists: its version (16 hex digits, so versions sort
/// in order) and its writer.
pub(crate) fn lists_key(l: &crate::model::ListsRecord) -> String {
    format!("{:016x},{}", l.version, l.hlc.node)
}

/// The key of an audit line: its HLC reading.
pub(crate) fn audit_key(hlc: &Hlc) -> String {
    hlc_key(hlc)
}

/// The keys of one ticket's records in its shard.
pub(crate) fn ticket_prefix(tid: &TicketId) -> std::ops::Range<String> {
    // ',' is 0x2c and never part of a ticket id; '-' (0x2d) bounds the range.
    format!("{tid},")..format!("{tid}-")
}

/// The ticket a key of a ticket record names (what precedes its first `,`).
pub(crate) fn ticket_of_key(key: &str) -> Option<TicketId> {
    TicketId::new(key.split(',').next().unwrap_or_default()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_spread_over_the_shards() {
        let mut counts = [0usize; SHARDS];
        for n in 0..60_000 {
            let tid = TicketId::new(format!("T{n:06}")).unwrap();
            counts[shard_of(&tid)] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        // 234 a shard on average; a fair spread stays well within a factor of two.
        assert!(*min > 150 && *max < 330, "min {min}, max {max}");
    }

    #[test]
    fn every_node_builds_the_same_genesis_with_every_shard() {
        let event = EventId::new("ROCK-2026").unwrap();
        assert_eq!(genesis(&event), genesis(&event));
        let doc = AutoCommit::load(&genesis(&event)).unwrap();
        let roots = roots_of(&doc).unwrap();
        assert_eq!(roots.redemptions.all().count(), SHARDS);
        assert_eq!(
            ticket_maps(&doc, "redemptions"),
            roots.redemptions.0.to_vec()
        );
        let tid = TicketId::new("T1").unwrap();
        assert_eq!(
            ticket_map(&doc, "status", &tid).as_ref(),
            Some(roots.status.of(&tid))
        );
        assert!(roots.is_ticket_shard(roots.resolutions.of(&tid)));
        assert!(!roots.is_ticket_shard(&roots.audit));
    }
}
