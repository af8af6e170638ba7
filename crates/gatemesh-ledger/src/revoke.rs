//! Revoked devices, as the ledger's `revocations` map says: which writers' records stop
//! counting from when. A record of a revoked writer whose clock reading is at or after the
//! cut (the revocation's time, or the earlier `since` the organizer gave) is kept in the
//! document — it happened, and staff see it — but set aside: decisions, flags and tallies
//! do not see it. Derived from the document alone, so every replica that holds the same
//! records sets aside the same ones, whatever order it learned them in.
//!
//! A revoked device sets its own clock, so one that backdates its records escapes the cut;
//! `since` (set aside everything since the device was lost) is the organizer's answer to that.

use std::collections::{HashMap, HashSet};

pub use gatemesh_wire::Revocation;

use crate::model::{Hlc, NodeId};

/// Every revocation the ledger holds, by device.
#[derive(Debug, Clone, Default)]
pub(crate) struct Revoked {
    /// Per revoked node, the earliest cut of its revocations.
    cuts: HashMap<NodeId, i64>,
    /// The revoked certificates (SHA-256 of their DER).
    certs: HashSet<[u8; 32]>,
    /// The records, in key order.
    records: Vec<Revocation>,
}

/// Per revoked device, the earliest cut of its revocations: its records whose clock reading
/// is at or after it are set aside. The server sets aside relayed records by the same rule.
pub fn cuts<'a>(records: impl IntoIterator<Item = &'a Revocation>) -> HashMap<NodeId, i64> {
    let mut cuts: HashMap<NodeId, i64> = HashMap::new();
    for r in records {
        let cut = cuts.entry(r.node.clone()).or_insert(i64::MAX);
        *cut = (*cut).min(r.cut_ms());
    }
    cuts
}

impl Revoked {
    pub(crate) fn from_records(records: Vec<Revocation>) -> Self {
        Self {
            cuts: cuts(&records),
            certs: records.iter().map(|r| r.cert.0).collect(),
            records,
        }
    }

    /// Whether a record `writer` made at `hlc` is set aside.
    pub(crate) fn sets_aside(&self, writer: &NodeId, hlc: &Hlc) -> bool {
        self.cuts.get(writer).is_some_and(|cut| hlc.wall_ms >= *cut)
    }

    pub(crate) fn records(&self) -> &[Revocation] {
        &self.records
    }

    pub(crate) fn certs(&self) -> &HashSet<[u8; 32]> {
        &self.certs
    }
}
