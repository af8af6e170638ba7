//! What crosses into the web UI: the view models the screens show, and the events they
//! react to. `bindings.rs` writes their TypeScript declarations.

use gatemesh_node::ScanResult;
use gatemesh_wire::{Reason, Verdict};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::StaffRole;

/// A signed-in staff member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct StaffView {
    pub name: String,
    pub role: StaffRole,
}

/// A demo PIN, shown on the sign-in screen of a demo event.
#[derive(Debug, Clone, Serialize, TS)]
pub struct DemoPin {
    pub name: String,
    pub role: StaffRole,
    pub pin: String,
}

/// Who and where this app is.
#[derive(Debug, Clone, Serialize, TS)]
pub struct AppInfo {
    /// No event set up yet: the app opens on the set-up screen.
    pub needs_setup: bool,
    pub event: Option<String>,
    pub gate_name: Option<String>,
    pub capacity: Option<u32>,
    pub observer: bool,
    pub signed_in: Option<StaffView>,
    /// Who may sign in here, for the sign-in screen to list.
    pub staff_names: Vec<String>,
    pub demo_pins: Vec<DemoPin>,
    /// The gate's local HTTP API (`http://…`), when it runs.
    pub api: Option<String>,
    /// The file holding the token every call to the local API needs
    /// (`Authorization: Bearer <token>`).
    pub api_token_file: Option<String>,
    /// Where the demo's printable tickets are.
    pub tickets_pdf: Option<String>,
}

impl AppInfo {
    /// An app with no event yet: it opens on the set-up screen.
    pub fn not_set_up() -> Self {
        Self {
            needs_setup: true,
            event: None,
            gate_name: None,
            capacity: None,
            observer: false,
            signed_in: None,
            staff_names: Vec::new(),
            demo_pins: Vec::new(),
            api: None,
            api_token_file: None,
            tickets_pdf: None,
        }
    }
}

/// Where and when a ticket was first used.
#[derive(Debug, Clone, Serialize, TS)]
pub struct FirstUseView {
    pub gate: String,
    pub scanner: String,
    #[ts(type = "number")]
    pub at_ms: i64,
}

/// The check-in list a scan was taken under, and who is inside it now.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ListView {
    /// The list's name ("VIP area").
    pub name: String,
    /// Holders inside now, across every gate.
    #[ts(type = "number")]
    pub inside: u64,
    pub capacity: Option<u32>,
    /// `near` from 90 % of the capacity, `full` from 100 %.
    pub level: gatemesh_wire::CapacityLevel,
}

/// A guest found by name, order, ticket or seat, for the Scan screen's search.
#[derive(Debug, Clone, Serialize, TS)]
pub struct GuestView {
    pub tid: String,
    pub seat: Option<String>,
    pub holder: Option<String>,
    pub order: Option<String>,
    /// Entries that count, at every gate this one has heard of.
    pub entries: u32,
    /// The first of them: the gate, and when.
    pub first_gate: Option<String>,
    #[ts(type = "number | null")]
    pub first_at_ms: Option<i64>,
}

/// What a search found; `search` is false where this gate has no one to search (the
/// organizer does not let gates find guests, or the server's manifest has not come yet).
#[derive(Debug, Clone, Serialize, TS)]
pub struct GuestsView {
    pub search: bool,
    pub guests: Vec<GuestView>,
}

/// One scan's answer, for the verdict screen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ScanView {
    pub verdict: Verdict,
    pub reason: Reason,
    pub tid: Option<String>,
    pub seat: Option<String>,
    pub scanner: String,
    pub first: Option<FirstUseView>,
    pub transferred_to: Option<String>,
    #[ts(type = "number")]
    pub at_ms: i64,
    /// At a gate with check-in lists: the list it was taken under, and who is inside it.
    pub list: Option<ListView>,
    /// For a refusal by the ticket itself or by the gate's lists: what was wrong, in words.
    pub detail: Option<String>,
}

impl From<ScanResult> for ScanView {
    fn from(r: ScanResult) -> Self {
        Self {
            verdict: r.verdict,
            reason: r.reason,
            tid: r.ticket.as_ref().map(|c| c.tid.to_string()),
            seat: r
                .ticket
                .as_ref()
                .and_then(|c| c.seat.as_ref().map(|s| s.to_string())),
            scanner: r.scanner,
            first: r.first.map(|f| FirstUseView {
                gate: f.gate,
                scanner: f.scanner,
                at_ms: f.at_ms,
            }),
            transferred_to: r.transferred_to.map(|t| t.to_string()),
            at_ms: r.at_ms,
            list: r.occupancy.map(|o| ListView {
                name: o.name.to_string(),
                inside: o.inside,
                capacity: o.capacity,
                level: o.level,
            }),
            detail: r.detail,
        }
    }
}

/// One gate on the dashboard: this one, a mesh peer, or a gate only the ledger knows of.
#[derive(Debug, Clone, Serialize, TS)]
pub struct GateRow {
    pub name: String,
    pub this_gate: bool,
    pub online: bool,
    #[ts(type = "number | null")]
    pub last_seen_ms: Option<i64>,
    /// Admissions recorded by this gate (from the shared ledger, so peers count too).
    pub admitted: u32,
    /// This gate's, and a connected peer's as it last told its counts over the mesh; none
    /// for a gate only the ledger knows of.
    pub duplicates: Option<u32>,
    pub rejects: Option<u32>,
    /// Its refused scans by reason, most first (known as `rejects` is).
    pub refusals: Vec<RefusalCount>,
    /// Admissions in the last full minute.
    pub scans_per_minute: u32,
    /// Admissions per minute for the last 30 minutes, oldest first.
    pub per_minute: Vec<u32>,
    /// This gate only.
    pub uplink: Option<UplinkState>,
    pub pending_uploads: Option<u32>,
    pub rtt_ms: Option<f64>,
}

/// This gate's link to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UplinkState {
    /// Following the server's change stream.
    Connected,
    /// A server is set up, but the uplink is down.
    Offline,
    /// No server is set up.
    #[serde(rename = "none")]
    NoServer,
}

/// The whole event as this gate sees it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct StatusView {
    pub event: String,
    pub gate_name: String,
    pub capacity: Option<u32>,
    /// Holders inside by the ledger, every gate counted.
    pub admitted_total: u32,
    pub flagged: u32,
    pub gates: Vec<GateRow>,
    /// The minute `per_minute` ends with (ms since 1970).
    #[ts(type = "number")]
    pub minute_ms: i64,
    /// Each of this gate's check-in lists: who is inside it now, every gate counted.
    pub lists: Vec<ListView>,
    /// Scans this gate refused at this event (kept across its restarts), by reason, most first: where forged, void
    /// or wrong-list tickets are being tried.
    pub refusals: Vec<RefusalCount>,
}

/// Scans refused for one reason.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RefusalCount {
    pub reason: Reason,
    pub count: u32,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct RedemptionView {
    pub id: String,
    pub gate: String,
    pub scanner: String,
    #[ts(type = "number")]
    pub at_ms: i64,
    /// Made while this admission's gate could not see the others (part of the flag).
    pub concurrent: bool,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct AuditView {
    #[ts(type = "number")]
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct FlagView {
    pub tid: String,
    pub open: bool,
    pub redemptions: Vec<RedemptionView>,
    pub audit: Vec<AuditView>,
}

/// Flagged tickets, open ones first, then those staff resolved (with their audit).
#[derive(Debug, Clone, Serialize, TS)]
pub struct FlagsView {
    pub open: Vec<FlagView>,
    pub resolved: Vec<FlagView>,
}

/// What the set-up screen's "from files" form sends.
#[derive(Debug, Clone, Deserialize, TS)]
pub struct FileSetup {
    pub event: String,
    pub gate_name: String,
    /// The issuer's public key: SPKI PEM text, or a JWK Set (`issuer.jwks.json`, which
    /// keeps a chosen key id; the set may hold several keys).
    pub issuer_pem: String,
    /// A device identity directory (`gatemesh enroll`), for the mesh.
    pub identity_dir: Option<String>,
    pub capacity: Option<u32>,
}

/// The set-up as a manager sees it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SettingsView {
    /// The gate's name as saved (used from the next start).
    pub gate_name: String,
    /// The name the running gate records admissions under.
    pub running_gate_name: String,
    pub reentry: bool,
    pub reject_unlisted: bool,
    /// Minutes without a command before the app signs the person out (applies at once).
    pub idle_sign_out_min: u32,
    /// A saved change waits for the app to start again.
    pub restart_needed: bool,
    pub staff: Vec<StaffView>,
    /// Names locked after too many wrong PINs, until a manager unlocks them.
    pub locked: Vec<String>,
    pub server: Option<String>,
    /// The gate has a mesh identity.
    pub mesh: bool,
    pub discovery: bool,
    pub peers: Vec<String>,
    /// The event's check-in lists this gate could check, and which it does (applies at
    /// once); empty for an event without lists.
    pub lists: Vec<ListChoice>,
}

/// One of the event's check-in lists, on the Setup screen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ListChoice {
    pub id: String,
    pub name: String,
    /// This gate checks tickets against it.
    pub chosen: bool,
}

/// Something the UI should react to at once.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DeskEvent {
    /// A scan decided by this gate (from any scanner, the local API included).
    Verdict { scan: Box<ScanView> },
    /// The flags changed (a new flag, a resolution, an import, news from a peer).
    Flags,
}

/// What a node event means for the UI.
pub fn desk_event(e: &gatemesh_node::NodeEvent) -> DeskEvent {
    match e {
        gatemesh_node::NodeEvent::Verdict(r) => DeskEvent::Verdict {
            scan: Box::new((**r).clone().into()),
        },
        _ => DeskEvent::Flags,
    }
}
