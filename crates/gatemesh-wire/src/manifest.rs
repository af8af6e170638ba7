//! The manifest and its change stream: the server's word on each ticket, as gates take it
//! into their ledgers (`GET /v1/events/{eid}/manifest`, `GET …/changes`).

use gatemesh_ticket::TicketId;
use serde::{Deserialize, Serialize};

use crate::{
    Action, Label, Lenient, Note, RedemptionId, Revocation, Skipped, Standing, TicketStatus,
    Timestamp, WireError,
};

/// The manifest whole, or what changed after a cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Manifest {
    /// Ask with `since` set to this for the next delta.
    #[serde(default)]
    pub cursor: i64,
    /// The tickets, or those that changed.
    pub tickets: Vec<ManifestEntry>,
    /// Device certificates the organizer revoked (all of them, or those revoked after the
    /// cursor), each signed by the event's mesh CA.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revocations: Vec<Revocation>,
    /// The event's check-in lists as the server last released them (in a delta: when it
    /// released them after the cursor): the ledger record its identity signed, with its
    /// certificate under `cert`. Gates write it into their ledgers as it is, so it reaches
    /// every gate of the mesh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub lists: Option<serde_json::Value>,
}

/// The same document read item by item (see [`Manifest::read_lenient`]).
#[derive(Deserialize)]
struct LenientManifest {
    #[serde(default)]
    cursor: i64,
    tickets: Vec<Lenient<ManifestEntry>>,
    #[serde(default)]
    revocations: Vec<Lenient<Revocation>>,
    #[serde(default)]
    lists: Option<serde_json::Value>,
}

impl Manifest {
    /// Reads a manifest whose items are taken one by one: an entry this side cannot read
    /// (a status it does not know, a bad id) is skipped and reported, and the rest stand.
    /// Fails only when the document as a whole is not a manifest.
    pub fn read_lenient(json: &[u8]) -> Result<(Self, Vec<Skipped>), serde_json::Error> {
        let m: LenientManifest = serde_json::from_slice(json)?;
        let (tickets, mut skipped) = crate::lenient::split(m.tickets);
        let (revocations, unread) = crate::lenient::split(m.revocations);
        skipped.extend(unread);
        Ok((
            Self {
                cursor: m.cursor,
                tickets,
                revocations,
                lists: m.lists,
            },
            skipped,
        ))
    }
}

/// A ticket as gates need it: its standing, the admissions staff reverted, and for a flag
/// the admissions involved and staff's decision. Fields that do not apply are left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ManifestEntry {
    /// The ticket.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub tid: TicketId,
    /// Its seat label.
    #[serde(default)]
    pub seat: Option<String>,
    /// Who holds it, when the event lets gates find guests (otherwise never sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// The order it was bought in, when the event lets gates find guests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// Its product (a code, or the number GM1 carries), when the event lets gates find
    /// guests: a guest checked in by name is checked against the gate's lists by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub product: Option<gatemesh_ticket::Product>,
    /// `active` when left out (hand-written manifest files).
    #[serde(default = "active")]
    pub status: TicketStatus,
    /// The ticket that replaced it (status `transferred`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub to: Option<TicketId>,
    /// Why it was voided (status `void`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a ticket that is not active: its standing as the ledger record the server's
    /// identity signed (its certificate under `cert`). Gates with a mesh identity write this
    /// record into their ledgers as it is, and take no standing without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub record: Option<serde_json::Value>,
    /// Redemption ids staff reverted, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub reverted: Vec<RedemptionId>,
    /// Present (and true) while staff must look at it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
    /// Staff's decision on the flag, taken at the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ServerResolution>,
    /// For a flagged or resolved ticket: the admissions involved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admissions: Vec<Admission>,
}

fn active() -> TicketStatus {
    TicketStatus::Active
}

impl ManifestEntry {
    /// The ticket's standing: its status with the reason or the new ticket. A transfer that
    /// names no new ticket is refused.
    pub fn standing(&self) -> Result<Standing, WireError> {
        Ok(match self.status {
            TicketStatus::Active => Standing::Active,
            TicketStatus::Void => Standing::Void {
                reason: self
                    .reason
                    .clone()
                    .unwrap_or_else(|| "voided at the server".to_owned()),
            },
            TicketStatus::Transferred => Standing::Transferred {
                to: self.to.clone().ok_or_else(|| {
                    WireError::Inconsistent(format!(
                        "ticket {} is transferred but names no new ticket",
                        self.tid
                    ))
                })?,
            },
        })
    }
}

/// An admission that counts: who let the holder in, where and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Admission {
    /// The gate's id for the redemption.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub redemption_id: RedemptionId,
    /// The gate's name.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub gate: Label,
    /// The scanner at that gate.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub scanner: Label,
    /// When, RFC 3339.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The gate ledger's record of it, when a gate's journal reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub record: Option<serde_json::Value>,
}

/// Staff's decision on a flagged ticket, taken at the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ServerResolution {
    /// What was decided.
    pub action: Action,
    /// Who decided.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub staff: Label,
    /// Why.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub note: Note,
    /// The admissions (redemption ids) the decision is about.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub covers: Vec<RedemptionId>,
    /// When, RFC 3339.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The decision as the ledger record the server's identity signed (its certificate
    /// under `cert`): what gates with a mesh identity write into their ledgers as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub record: Option<serde_json::Value>,
}

/// Staff's decision on a flag, as a gate (or the organizer) sends it to the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// `accept`, `deny` or `revert`.
    pub action: Action,
    /// Who decided (1-64 bytes).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub staff: Label,
    /// At most 500 bytes.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub note: Note,
}

/// The names of the change stream's server-sent events.
pub mod change {
    /// Data: a [`Manifest`](crate::Manifest) delta; id: its cursor.
    pub const TICKETS: &str = "tickets";
    /// Data: text. The database failed; the client reconnects from its last cursor.
    pub const ERROR: &str = "error";
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_unreadable_entry_is_skipped_and_named() {
        let doc = json!({ "cursor": 7, "tickets": [
            { "tid": "A1", "status": "active" },
            { "tid": "A2", "status": "lost_in_space" },
            { "tid": "A3", "status": "active", "reverted": ["bad id with spaces"] },
            { "tid": "A4", "status": "void", "reason": "refund" },
        ]});
        let (m, skipped) = Manifest::read_lenient(doc.to_string().as_bytes()).unwrap();
        assert_eq!(m.cursor, 7);
        let tids: Vec<&str> = m.tickets.iter().map(|t| t.tid.as_str()).collect();
        assert_eq!(tids, ["A1", "A4"]);
        let named: Vec<_> = skipped.iter().map(|s| s.tid.as_deref()).collect();
        assert_eq!(named, [Some("A2"), Some("A3")]);
        assert!(Manifest::read_lenient(b"[]").is_err());
    }

    #[test]
    fn standings() {
        let entry = |v: serde_json::Value| serde_json::from_value::<ManifestEntry>(v).unwrap();
        assert_eq!(
            entry(json!({ "tid": "A1" })).standing().unwrap(),
            Standing::Active
        );
        assert_eq!(
            entry(json!({ "tid": "A1", "status": "void" }))
                .standing()
                .unwrap(),
            Standing::Void {
                reason: "voided at the server".into()
            }
        );
        assert!(
            entry(json!({ "tid": "A1", "status": "transferred" }))
                .standing()
                .is_err()
        );
    }
}
