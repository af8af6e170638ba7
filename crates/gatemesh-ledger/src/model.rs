//! What the ledger records. Every record is one JSON string under a flat key in one of the
//! document's root maps (see `doc.rs` for why flat, and why one scalar per record).

use gatemesh_ticket::TicketId;
pub use gatemesh_wire::{Action, Direction, NodeId, RedemptionId, ResolutionId, Role, Standing};
use serde::{Deserialize, Serialize};

/// A hybrid logical clock reading: wall time in milliseconds, a counter for events in the
/// same millisecond (or when the wall clock stepped back), and the node as tie-break. Orders
/// events across nodes consistently with causality, and stays close to wall time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hlc {
    /// Wall time, ms since 1970.
    pub wall_ms: i64,
    /// Orders readings within one `wall_ms`.
    pub counter: u32,
    /// The node that took the reading; breaks ties.
    pub node: NodeId,
}

/// The clock of one node.
#[derive(Debug, Clone)]
pub(crate) struct HlcClock {
    node: NodeId,
    last_wall: i64,
    last_counter: u32,
}

impl HlcClock {
    /// A clock that has seen no reading yet.
    pub fn new(node: NodeId) -> Self {
        Self {
            node,
            last_wall: i64::MIN,
            last_counter: 0,
        }
    }

    /// A reading for a local event at wall time `now_ms`; strictly after every reading this
    /// clock gave or observed.
    pub fn tick(&mut self, now_ms: i64) -> Hlc {
        if now_ms > self.last_wall {
            self.last_wall = now_ms;
            self.last_counter = 0;
        } else {
            self.last_counter = self.last_counter.saturating_add(1);
        }
        Hlc {
            wall_ms: self.last_wall,
            counter: self.last_counter,
            node: self.node.clone(),
        }
    }

    /// Moves the clock past every reading `other` gave or observed (the clock of the same
    /// node's ledger that this one replaces).
    pub fn join(&mut self, other: &HlcClock) {
        if (other.last_wall, other.last_counter) > (self.last_wall, self.last_counter) {
            self.last_wall = other.last_wall;
            self.last_counter = other.last_counter;
        }
    }

    /// Moves the clock past a reading seen in a record from elsewhere.
    pub fn observe(&mut self, seen: &Hlc) {
        if (seen.wall_ms, seen.counter) > (self.last_wall, self.last_counter) {
            self.last_wall = seen.wall_ms;
            self.last_counter = seen.counter;
        }
    }
}

/// One use of a ticket at a gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redemption {
    /// Unique within the event; with `tid`, the record's key.
    pub id: RedemptionId,
    /// The ticket used.
    pub tid: TicketId,
    /// Entry or exit.
    pub direction: Direction,
    /// The node that recorded it.
    pub node: NodeId,
    /// The gate's human name ("North 1").
    pub gate: String,
    /// The scanner that read the code, as the scan request named it.
    pub scanner: String,
    /// Wall time at the gate, milliseconds since 1970.
    pub at_ms: i64,
    /// Orders it among the ticket's records.
    pub hlc: Hlc,
    /// Every redemption of this ticket the gate knew of when it wrote this one. Two
    /// redemptions where neither saw the other were made concurrently.
    #[serde(default)]
    pub seen: Vec<RedemptionId>,
    /// Admitted although the loaded manifest does not list the ticket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlisted: bool,
    /// The check-in list and window it counts against, at a gate with lists: a ticket is
    /// single-use per scope (a three-day pass once per event day, the VIP area apart from
    /// the main entrance). `None` at a gate without lists: the event's one scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<gatemesh_wire::Scope>,
    /// A guest checked in without their code, found by name or order in the server's
    /// manifest: the staff member who did it (audited with the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<String>,
    /// The writer's signature of the record (see `sign.rs`); absent only on a gate with no
    /// mesh identity, whose records no other device takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// A staff resolution, itself a replicated and audited entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// Unique within the event; with `tid`, the record's key.
    pub id: ResolutionId,
    /// The flagged ticket.
    pub tid: TicketId,
    /// Accept, deny or revert.
    pub action: Action,
    /// Who decided.
    pub staff: String,
    /// Why, in staff's words.
    pub note: String,
    /// The node it was recorded on.
    pub node: NodeId,
    /// Wall time there, ms since 1970.
    pub at_ms: i64,
    /// Orders it among the ticket's records; the latest accept or deny is staff's word.
    pub hlc: Hlc,
    /// The redemptions this decision is about: those the resolver saw.
    pub covers: Vec<RedemptionId>,
    /// Taken at the central server and brought in by a gate's uplink (so no gate sends it
    /// back up).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_server: bool,
    /// The writer's signature of the record (see `sign.rs`); absent only on a gate with no
    /// mesh identity, whose records no other device takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// A status entry; the latest by HLC wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The ticket.
    pub tid: TicketId,
    /// Active, void or transferred.
    #[serde(flatten)]
    pub standing: Standing,
    /// Who said so: "manifest", "server", or a staff name.
    pub by: String,
    /// Wall time where it was written, ms since 1970.
    pub at_ms: i64,
    /// Decides which status wins.
    pub hlc: Hlc,
    /// The writer's signature of the record (see `sign.rs`); absent only on a gate with no
    /// mesh identity, whose records no other device takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// One line of the audit trail: who did what, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// The reading of the record it audits; the trail is in this order.
    pub hlc: Hlc,
    /// Wall time, ms since 1970.
    pub at_ms: i64,
    /// The node that wrote the line.
    pub node: NodeId,
    /// Who: the staff name, or `manifest` or `server` for a standing.
    pub actor: String,
    /// What: `resolve:<action>` or `status:<standing>` (`status:void`, …).
    pub action: String,
    /// The ticket concerned.
    pub tid: Option<TicketId>,
    /// Why: the resolution's note and the redemptions it covers, or the standing's detail.
    pub detail: String,
    /// The writer's signature of the record (see `sign.rs`); absent only on a gate with no
    /// mesh identity, whose records no other device takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// A release of the event's check-in lists, as the server published it: every gate checks in
/// with the latest version its ledger holds (a list changed mid-event reaches gates with no
/// uplink through their peers). Only the server's identity writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListsRecord {
    /// Counts up from 1 for each release of the event's lists; the latest wins.
    pub version: u64,
    /// The lists, as a lists file writes them.
    pub lists: gatemesh_wire::ListsFile,
    /// Who published them (the organizer's name for the change).
    pub by: String,
    /// Wall time at the server, ms since 1970.
    pub at_ms: i64,
    /// The writer's reading; names the writer.
    pub hlc: Hlc,
    /// The writer's signature of the record (see `sign.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// What every signed record offers the signing code.
pub(crate) trait Record: Serialize + Clone {
    /// The root map that holds it.
    const MAP: &'static str;
    /// The node that wrote it, whose key signs it.
    fn writer(&self) -> &NodeId;
    /// Its HLC reading, which must name the writer too.
    fn hlc(&self) -> &Hlc;
    /// Wall time at the writer.
    fn at_ms(&self) -> i64;
    /// Its signature.
    fn sig(&self) -> Option<&str>;
    /// Its signature, to set.
    fn sig_mut(&mut self) -> &mut Option<String>;
    /// Makes `node` its writer (its HLC too).
    fn set_writer(&mut self, node: &NodeId);

    /// The JSON its signature covers: the record without `sig`.
    fn unsigned_json(&self) -> Result<String, serde_json::Error> {
        let mut bare = self.clone();
        *bare.sig_mut() = None;
        serde_json::to_string(&bare)
    }
}

macro_rules! record {
    ($ty:ty, $map:literal, |$r:ident| $writer:expr, |$w:ident, $n:ident| $set:expr) => {
        impl Record for $ty {
            const MAP: &'static str = $map;
            fn writer(&self) -> &NodeId {
                let $r = self;
                $writer
            }
            fn hlc(&self) -> &Hlc {
                &self.hlc
            }
            fn at_ms(&self) -> i64 {
                self.at_ms
            }
            fn sig(&self) -> Option<&str> {
                self.sig.as_deref()
            }
            fn sig_mut(&mut self) -> &mut Option<String> {
                &mut self.sig
            }
            fn set_writer(&mut self, node: &NodeId) {
                let ($w, $n) = (self, node);
                $set
            }
        }
    };
}

record!(Redemption, "redemptions", |r| &r.node, |r, n| {
    r.node = n.clone();
    r.hlc.node = n.clone();
});
record!(Resolution, "resolutions", |r| &r.node, |r, n| {
    r.node = n.clone();
    r.hlc.node = n.clone();
});
record!(Status, "status", |s| &s.hlc.node, |s, n| s.hlc.node =
    n.clone());
record!(ListsRecord, "lists", |l| &l.hlc.node, |l, n| l.hlc.node =
    n.clone());
record!(AuditEntry, "audit", |a| &a.node, |a, n| {
    a.node = n.clone();
    a.hlc.node = n.clone();
});
