//! What the ledger records. Every record is one JSON string under a flat key in one of the
//! document's root maps (see `doc.rs` for why flat, and why one scalar per record).

use std::fmt;

use gatemesh_ticket::TicketId;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

/// Makes 128 random bits into 26 lower-case base32 characters.
fn random_id() -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    let value = u128::from_be_bytes(bytes);
    (0..26)
        .map(|i| ALPHABET[((value >> (5 * (25 - i))) & 0x1f) as usize] as char)
        .collect()
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn random() -> Self {
                Self(random_id())
            }

            /// Accepts 1-64 characters of `A-Z a-z 0-9 . _ -`: ids travel in keys, URLs and logs.
            pub fn parse(s: &str) -> Option<Self> {
                let ok = (1..=64).contains(&s.len())
                    && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
                ok.then(|| Self(s.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A node (gate or observer) of the event, stable across restarts.
    NodeId
);
id_type!(
    /// A redemption, unique across every node and the server: 128 random bits, so no
    /// coordination and no counter that a crash could roll back.
    RedemptionId
);
id_type!(
    /// A staff resolution of a flagged ticket.
    ResolutionId
);

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

/// Which way a holder passed the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Entry,
    /// Only under the re-entry policy: the holder left and may come back in.
    Exit,
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

/// What staff decided about a flagged ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Same person: the admission stands and the flag is cleared.
    Accept,
    /// A second person: the ticket is refused (`denied`) from now on.
    Deny,
    /// Undo the redemptions: the ticket counts as unused again.
    Revert,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Deny => "deny",
            Self::Revert => "revert",
        }
    }
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

/// A ticket's standing as the issuer or server last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Standing {
    Active,
    /// Refunded or annulled.
    Void {
        reason: String,
    },
    /// Replaced by another ticket; the holder must show the new one.
    Transferred {
        to: TicketId,
    },
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
