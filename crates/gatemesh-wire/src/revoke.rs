//! Device revocation: the organizer's word that a device's certificate no longer counts
//! (`POST /v1/events/{eid}/devices/{name}/revoke`, and re-pairing a name). The record is
//! signed by the event's mesh CA and travels in the manifest, the change stream and every
//! gate's ledger (`revocations` map), so a gate with no uplink learns it from its peers.

use serde::{Deserialize, Serialize};

use crate::{CertFingerprint, DeviceName, Label, NodeId, Note, Timestamp};

/// One revoked device certificate, as the event's CA signed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    /// The device's node id (derived from its key): whose records stop counting.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub node: NodeId,
    /// The device's name, for people.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: DeviceName,
    /// The SHA-256 of the revoked certificate's DER: what the mesh refuses at the handshake.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub cert: CertFingerprint,
    /// When it was revoked, ms since 1970: the device's records dated from then on are set
    /// aside.
    pub at_ms: i64,
    /// Set aside its records from this earlier time on too (ms since 1970), when the
    /// organizer asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<i64>,
    /// Who revoked it.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub by: Label,
    /// Why.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub reason: Note,
    /// The event CA's signature (base64url of r‖s) over the record without this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

impl Revocation {
    /// The earliest time from which the device's records are set aside.
    pub fn cut_ms(&self) -> i64 {
        self.since_ms.map_or(self.at_ms, |s| s.min(self.at_ms))
    }

    /// The key the ledger keeps it under: the device and the time, so a later revocation of
    /// the same device (with an earlier `since`) is a record of its own.
    pub fn key(&self) -> String {
        format!("{},{:016x}", self.node, self.at_ms)
    }

    /// The record's JSON without its signature: what the signature covers.
    pub fn unsigned_json(&self) -> serde_json::Result<String> {
        let mut unsigned = self.clone();
        unsigned.sig = None;
        serde_json::to_string(&unsigned)
    }
}

/// What an organizer says when revoking a device (the body is optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// Why (at most 500 bytes).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub reason: Note,
    /// Also set aside the device's records since this time (RFC 3339), e.g. when it was
    /// stolen.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub since: Option<Timestamp>,
}

/// The answer to a revocation: every certificate of the device it revoked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revoked {
    /// The revocations made now, as gates receive them.
    pub revocations: Vec<Revocation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Revocation {
        Revocation {
            node: NodeId::parse("n1").unwrap(),
            name: DeviceName::parse("north-1").unwrap(),
            cert: CertFingerprint([7; 32]),
            at_ms: 2_000,
            since_ms: None,
            by: Label::parse("organizer").unwrap(),
            reason: Note::default(),
            sig: Some("x".into()),
        }
    }

    #[test]
    fn reads_back_and_the_signature_is_not_signed() {
        let r = sample();
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Revocation>(&json).unwrap(), r);
        assert!(!r.unsigned_json().unwrap().contains("\"sig\""));
        assert!(serde_json::from_str::<Revocation>(&json.replace("}", ",\"x\":1}")).is_err());
    }

    #[test]
    fn since_sets_aside_earlier_never_later() {
        let mut r = sample();
        assert_eq!(r.cut_ms(), 2_000);
        r.since_ms = Some(1_000);
        assert_eq!(r.cut_ms(), 1_000);
        r.since_ms = Some(5_000);
        assert_eq!(r.cut_ms(), 2_000);
    }
}
