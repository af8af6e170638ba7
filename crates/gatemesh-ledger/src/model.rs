//! What the ledger records. Every record is one JSON string under a flat key in one of the
//! document's root maps (see `doc.rs` for why flat, and why one scalar per record).

use gatemesh_ticket::TicketId;
pub use gatemesh_wire::{Action, Direction, NodeId, RedemptionId, ResolutionId, Standing};
use serde::{Deserialize, Serialize};

/// A hybrid logical clock reading: wall time in milliseconds, a counter for events in the
/// same millisecond (or when the wall clock stepped back), and the node as tie-break. Orders
/// events across nodes consistently with causality, and stays close to wall time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hlc {
    pub wall_ms: i64,
    pub counter: u32,
    pub node: NodeId,
}

/// The clock of one node.
#[derive(Debug, Clone)]
pub struct HlcClock {
    node: NodeId,
    last_wall: i64,
    last_counter: u32,
}

impl HlcClock {
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
    pub id: RedemptionId,
    pub tid: TicketId,
    pub direction: Direction,
    pub node: NodeId,
    /// The gate's human name ("North 1").
    pub gate: String,
    pub scanner: String,
    /// Wall time at the gate, milliseconds since 1970.
    pub at_ms: i64,
    pub hlc: Hlc,
    /// Every redemption of this ticket the gate knew of when it wrote this one. Two
    /// redemptions where neither saw the other were made concurrently.
    #[serde(default)]
    pub seen: Vec<RedemptionId>,
    /// Admitted although the loaded manifest does not list the ticket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlisted: bool,
}

/// A staff resolution, itself a replicated and audited entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub id: ResolutionId,
    pub tid: TicketId,
    pub action: Action,
    pub staff: String,
    pub note: String,
    pub node: NodeId,
    pub at_ms: i64,
    pub hlc: Hlc,
    /// The redemptions this decision is about: those the resolver saw.
    pub covers: Vec<RedemptionId>,
    /// Taken at the central server and brought in by a gate's uplink (so no gate sends it
    /// back up).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_server: bool,
}

/// A status entry; the latest by HLC wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub tid: TicketId,
    #[serde(flatten)]
    pub standing: Standing,
    /// Who said so: "manifest", "server", or a staff name.
    pub by: String,
    pub at_ms: i64,
    pub hlc: Hlc,
}

/// One line of the audit trail: who did what, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub hlc: Hlc,
    pub at_ms: i64,
    pub node: NodeId,
    pub actor: String,
    pub action: String,
    pub tid: Option<TicketId>,
    pub detail: String,
}
