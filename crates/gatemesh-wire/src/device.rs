//! Devices and the server: registering one and spending its pairing code
//! (`POST /v1/events/{eid}/devices`, `POST /v1/pair`), the issuer keys, a gate's heartbeat
//! and the gates view a manager reads.

use gatemesh_ticket::{EventId, KeyId};
use serde::{Deserialize, Serialize};

use crate::{DeviceName, Label, NodeId, Role, Timestamp};

/// An organizer registering a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewDevice {
    /// 1-63 characters of A-Z a-z 0-9 . _ -
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "North-1"))]
    pub name: DeviceName,
    /// `gate` (admits) or `observer` (watches, admits no one).
    #[serde(default)]
    pub role: Role,
}

/// A device's pairing code: good once, until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PairingCode {
    /// The device's event.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub event: EventId,
    /// The device.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: DeviceName,
    /// What it is.
    pub role: Role,
    /// Ten characters shown as `XXXXX-XXXXX`; case, dashes and spaces do not matter.
    #[cfg_attr(feature = "openapi", schema(example = "7K2QM-X9D4R"))]
    pub code: String,
    /// RFC 3339.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: Timestamp,
    /// The pairing link (`gatemesh://pair?server=…&code=…&fp=sha256:…`, see
    /// [`crate::PairingLink`]): the server's URL, this code and its TLS certificate's
    /// fingerprint in one string, for a QR code or a paste. Absent when the server was not told
    /// the URL it is reached at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// A device spending its pairing code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PairRequest {
    /// As typed: case, dashes and spaces do not matter; O, I and L read as 0, 1 and 1.
    #[cfg_attr(feature = "openapi", schema(example = "7K2QM-X9D4R"))]
    pub code: String,
    /// A PKCS#10 certificate signing request (PEM) for the device's mesh key, made on the
    /// device: the private key never leaves it. Only its public key and signature count; who
    /// the device is comes from the code.
    pub csr: String,
}

/// Everything a paired device needs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Paired {
    /// The device's event.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub event: EventId,
    /// The device.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: DeviceName,
    /// What it is.
    pub role: Role,
    /// The device's credential for the gate endpoints (the `device` bearer scheme). Shown
    /// once: the server keeps only its hash.
    pub token: String,
    /// The issuer keys that sign the event's tickets.
    pub keys: Vec<IssuerKey>,
    /// Its identity on the event's mesh.
    pub identity: MeshIdentity,
}

// Never the credential or the private key, whatever logs it.
impl std::fmt::Debug for Paired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paired")
            .field("event", &self.event)
            .field("name", &self.name)
            .field("role", &self.role)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

/// The device's mesh certificate under the event's mesh CA (its key stayed on the device).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MeshIdentity {
    /// The device certificate, PEM, for the key of its signing request.
    pub device_pem: String,
    /// The event's mesh CA certificate, PEM.
    pub ca_pem: String,
}

impl std::fmt::Debug for MeshIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshIdentity").finish_non_exhaustive()
    }
}

/// A public key that signs tickets, for gates to verify them offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IssuerKey {
    /// Its key id.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kid: KeyId,
    /// SPKI PEM.
    pub pem: String,
}

/// The issuer keys that sign a server's tickets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Keys {
    /// Every key valid now (several while keys rotate).
    pub keys: Vec<IssuerKey>,
}

/// Counts of verdicts since a gate started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(default)]
pub struct VerdictCounts {
    /// Green.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub admit: u64,
    /// Yellow.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub duplicate: u64,
    /// Red.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub reject: u64,
}

/// What a gate's uplink to the server is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct UplinkStatus {
    /// The server's base URL.
    pub server: String,
    /// The change stream is connected.
    pub streaming: bool,
    /// Position in the server's change sequence this gate has applied.
    pub cursor: Option<i64>,
    /// Redemptions in the ledger the server has not acknowledged yet that are this gate's
    /// to upload, as of the last look (a few times a second at most): its own, and its
    /// peers' held here longer than its grace (their writers upload them before). At least 1
    /// while the ledger has changed since, so 0 always means all of those are uploaded.
    pub backlog: usize,
    /// Redemptions the server acknowledged since start.
    pub uploaded: u64,
    /// Peers' redemptions this gate found the server held already (their writers, or
    /// another gate, uploaded them), so it did not upload them, since start.
    pub found_held: u64,
    /// Redemptions the server told this gate about (written into the ledger).
    pub learned: u64,
    /// Items this gate could not take or send since start: manifest entries and answers it
    /// cannot read, records the server would refuse. Each is logged; none stalls the rest.
    pub skipped: u64,
    /// The last item skipped, and why.
    pub last_skipped: Option<String>,
    /// Last successful exchange with the server (ms since 1970).
    pub last_contact_ms: Option<i64>,
    /// Last heartbeat the server took.
    pub last_heartbeat_ms: Option<i64>,
    /// The last failure, until the next success.
    pub last_error: Option<String>,
}

/// A mesh peer, as a heartbeat reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct PeerReport {
    /// Its device name.
    pub name: String,
    /// Its role, as its certificate says.
    pub role: Option<Role>,
    /// A connection is up.
    pub connected: bool,
    /// Round-trip time of that connection.
    pub rtt_ms: Option<f64>,
}

/// A gate's heartbeat: who it is, its counts, peers and uplink. Every field may be left out,
/// so gates of another version still report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Heartbeat {
    /// The reporting gate's name. Read only with the organizer's token (then it must be a
    /// device name); a device's credential names it.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub name: Option<Label>,
    /// Its ledger node id.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub node_id: Option<NodeId>,
    /// With the organizer's token only: what it is (a device's pairing says).
    pub role: Option<Role>,
    /// Its gatemesh version.
    pub version: Option<String>,
    /// Its verdicts at this event (kept across its restarts).
    pub counts: VerdictCounts,
    /// Scans it refused at this event, kept across its restarts, by reason (forged, void, not on its lists, out of
    /// their validity…): where bad tickets are being tried.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub refusals: std::collections::BTreeMap<crate::Reason, u64>,
    /// Redemptions in its ledger.
    pub redemptions: u64,
    /// Tickets flagged in its ledger.
    pub flagged: u64,
    /// Tickets in its manifest, when it has one.
    pub manifest_tickets: Option<u64>,
    /// Its mesh peers.
    pub peers: Vec<PeerReport>,
    /// Its uplink.
    pub uplink: Option<UplinkStatus>,
}

/// The server taking a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeartbeatAck {
    /// Always true.
    pub ok: bool,
    /// The gate may compare its clock.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub server_time: Timestamp,
}

/// Every device of an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Gates {
    /// Online or not, each with its last heartbeat.
    pub gates: Vec<GateStatus>,
}

/// A device as a manager sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GateStatus {
    /// The device.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: DeviceName,
    /// What it is.
    pub role: Role,
    /// It holds a credential; devices that report with the organizer's token do not.
    pub paired: bool,
    /// It reported within the last 30 s.
    pub online: bool,
    /// Null before its first heartbeat.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub last_seen: Option<Timestamp>,
    /// Its last heartbeat, as the server read it.
    pub heartbeat: Option<Heartbeat>,
}
