//! The gate-supervisor desk: everything the desktop app shows and does, over a running
//! [`Node`]. The Tauri shell only forwards calls here, so this is where the app's behaviour
//! lives and is tested.
//!
//! - The app's configuration (`app.json` in its directory): the event, the gate's name, the
//!   issuer keys, an optional mesh identity and server, the entry policy, and the staff with
//!   their PINs (salted hashes) and roles.
//! - Staff sign-in: `staff` may scan, `supervisor` also resolves flags, `manager` also
//!   changes the set-up.
//! - View models for the screens, with TypeScript declarations generated from these types
//!   (`ui/src/bindings.ts`; a test keeps the file in step).
//! - A demo event that sets itself up on first start: keys, a printable batch of tickets, a
//!   mesh CA, and a second gate on loopback so the mesh and the dashboard have something to
//!   show.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Mutex,
};

use anyhow::{Context, Result};
use gatemesh_ledger::{Action, Direction, EntryPolicy, Policy, Reason, UnlistedPolicy, Verdict};
use gatemesh_ticket::{EventId, Keyring, PublicKey, TicketId};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ts_rs::TS;

use gatemesh_node::{Config, Node, NodeError, ScanResult};

/// What a signed-in person may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StaffRole {
    /// Scans tickets.
    Staff,
    /// Also resolves flagged tickets.
    Supervisor,
    /// Everything, set-up included.
    Manager,
}

/// A staff member as the app knows them. The PIN is kept as a salted SHA-256.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaffEntry {
    pub name: String,
    pub role: StaffRole,
    pub salt: String,
    pub pin_hash: String,
}

impl StaffEntry {
    pub fn new(name: &str, role: StaffRole, pin: &str) -> Self {
        let salt = random_hex(8);
        Self {
            name: name.to_owned(),
            role,
            pin_hash: pin_hash(&salt, pin),
            salt,
        }
    }
}

fn pin_hash(salt: &str, pin: &str) -> String {
    hex(&Sha256::digest(format!("{salt}:{pin}").as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(n: usize) -> String {
    use rand_core::{OsRng, RngCore};
    let mut bytes = vec![0u8; n];
    OsRng.fill_bytes(&mut bytes);
    hex(&bytes)
}

/// The app's set-up, kept as `app.json` in its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeskConfig {
    pub event: String,
    pub gate_name: String,
    /// Issuer public keys (SPKI PEM).
    pub issuer_pems: Vec<String>,
    #[serde(default)]
    pub capacity: Option<u32>,
    /// The device's mesh identity (from `gatemesh enroll` or a pairing); none: no mesh.
    #[serde(default)]
    pub identity_dir: Option<PathBuf>,
    #[serde(default = "any_addr")]
    pub mesh_bind: SocketAddr,
    #[serde(default)]
    pub peers: Vec<SocketAddr>,
    /// Find the event's other gates by mDNS.
    #[serde(default)]
    pub discovery: bool,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub server_token: Option<String>,
    /// The gate's local HTTP API, for scanners on the network and for tests.
    #[serde(default = "local_api")]
    pub api: SocketAddr,
    #[serde(default)]
    pub reentry: bool,
    #[serde(default)]
    pub reject_unlisted: bool,
    pub staff: Vec<StaffEntry>,
    /// Set up by `--demo`: the sign-in screen shows the demo PINs.
    #[serde(default)]
    pub demo: bool,
}

fn any_addr() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}

fn local_api() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

const CONFIG_FILE: &str = "app.json";

/// A new set-up may be written in `root`: none is there yet, and someone can manage it.
fn ready_for_set_up(root: &Path, staff: &[StaffEntry]) -> Result<()> {
    anyhow::ensure!(
        DeskConfig::load(root)?.is_none(),
        "this app is already set up for an event"
    );
    anyhow::ensure!(
        staff.iter().any(|s| s.role == StaffRole::Manager),
        "set up at least one manager PIN"
    );
    Ok(())
}

impl DeskConfig {
    /// A gate of `event` with the defaults of a real event: no mesh identity or server yet,
    /// discovery on, the local API on a free loopback port, single entry, unlisted tickets
    /// admitted and marked.
    pub fn new_event(
        event: String,
        gate_name: String,
        issuer_pems: Vec<String>,
        staff: Vec<StaffEntry>,
    ) -> Self {
        Self {
            event,
            gate_name,
            issuer_pems,
            capacity: None,
            identity_dir: None,
            mesh_bind: any_addr(),
            peers: Vec::new(),
            discovery: true,
            server: None,
            server_token: None,
            api: local_api(),
            reentry: false,
            reject_unlisted: false,
            staff,
            demo: false,
        }
    }

    pub fn load(root: &Path) -> Result<Option<Self>> {
        let path = root.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("reading {}", path.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes the set-up (readable by its owner only: it holds the server credential).
    pub fn save(&self, root: &Path) -> Result<()> {
        std::fs::create_dir_all(root)?;
        let aside = root.join(format!("{CONFIG_FILE}.new"));
        write_private(&aside, &serde_json::to_string_pretty(self)?)?;
        std::fs::rename(&aside, root.join(CONFIG_FILE))?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// What crosses into the web UI.

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
    pub demo_pins: Vec<DemoPin>,
    /// The gate's local HTTP API (`http://…`), when it runs.
    pub api: Option<String>,
    /// Where the demo's printable tickets are.
    pub tickets_pdf: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum VerdictView {
    Admit,
    Duplicate,
    Reject,
}

impl From<Verdict> for VerdictView {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Admit => Self::Admit,
            Verdict::Duplicate => Self::Duplicate,
            Verdict::Reject => Self::Reject,
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

/// One scan's answer, for the verdict screen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ScanView {
    pub verdict: VerdictView,
    /// The typed reason (`valid`, `already_admitted`, `bad_signature`, …).
    pub reason: String,
    pub tid: Option<String>,
    pub seat: Option<String>,
    pub scanner: String,
    pub first: Option<FirstUseView>,
    pub transferred_to: Option<String>,
    #[ts(type = "number")]
    pub at_ms: i64,
}

fn reason_name(r: Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unreadable".into())
}

impl From<ScanResult> for ScanView {
    fn from(r: ScanResult) -> Self {
        Self {
            verdict: r.verdict.into(),
            reason: reason_name(r.reason),
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
    /// Known for this gate only (peers do not share their turned-away scans).
    pub duplicates: Option<u32>,
    pub rejects: Option<u32>,
    /// Admissions in the last full minute.
    pub scans_per_minute: u32,
    /// Admissions per minute for the last 30 minutes, oldest first.
    pub per_minute: Vec<u32>,
    /// `connected`, `offline` (its uplink is down) or `none` (no server configured); this
    /// gate only.
    pub uplink: Option<String>,
    pub pending_uploads: Option<u32>,
    pub rtt_ms: Option<f64>,
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ResolveAction {
    Accept,
    Deny,
    Revert,
}

impl From<ResolveAction> for Action {
    fn from(a: ResolveAction) -> Self {
        match a {
            ResolveAction::Accept => Action::Accept,
            ResolveAction::Deny => Action::Deny,
            ResolveAction::Revert => Action::Revert,
        }
    }
}

/// What the set-up screen's "from files" form sends.
#[derive(Debug, Clone, Deserialize, TS)]
pub struct FileSetup {
    pub event: String,
    pub gate_name: String,
    /// The issuer's public key, PEM text.
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
    /// A saved change waits for the app to start again.
    pub restart_needed: bool,
    pub staff: Vec<StaffView>,
    pub server: Option<String>,
    /// The gate has a mesh identity.
    pub mesh: bool,
    pub discovery: bool,
    pub peers: Vec<String>,
}

/// Something the UI should react to at once.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DeskEvent {
    /// A scan decided by this gate (from any scanner, the local API included).
    Verdict { scan: ScanView },
    /// The flags changed (a new flag, a resolution, an import, news from a peer).
    Flags,
}

/// Every type above as TypeScript, for `ui/src/bindings.ts`.
pub fn typescript_bindings() -> String {
    let decls = [
        StaffRole::decl(),
        StaffView::decl(),
        DemoPin::decl(),
        AppInfo::decl(),
        VerdictView::decl(),
        FirstUseView::decl(),
        ScanView::decl(),
        GateRow::decl(),
        StatusView::decl(),
        RedemptionView::decl(),
        AuditView::decl(),
        FlagView::decl(),
        FlagsView::decl(),
        ResolveAction::decl(),
        SettingsView::decl(),
        FileSetup::decl(),
        DeskEvent::decl(),
    ];
    let mut out = String::from(
        "// Generated from crates/gatemesh-desk/src/lib.rs by ts-rs. Do not edit: run\n\
         // `UPDATE_BINDINGS=1 cargo test -p gatemesh-desk bindings` after changing those types.\n\n",
    );
    for d in decls {
        out.push_str("export ");
        out.push_str(&d);
        out.push_str("\n\n");
    }
    out.trim_end().to_owned() + "\n"
}

// ---------------------------------------------------------------------------------------

/// Why a desk call was refused.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    #[error("sign in first")]
    SignedOut,
    #[error("a {0:?} may not do this")]
    NotAllowed(StaffRole),
    #[error("wrong PIN")]
    WrongPin,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

/// The running desk: the gate, its set-up and who is signed in.
#[derive(Debug)]
pub struct Desk {
    root: PathBuf,
    /// The set-up as saved; staff and settings changes apply here at once (a new gate name
    /// or policy at the next start: the running gate keeps the one it started with).
    config: Mutex<DeskConfig>,
    /// The set-up the running gate started with.
    started: DeskConfig,
    node: Node,
    /// The demo's second gate, in this process.
    side_gate: Option<Node>,
    api: Option<SocketAddr>,
    signed_in: Mutex<Option<StaffView>>,
    stop_api: tokio::sync::watch::Sender<bool>,
}

fn node_config(data: PathBuf, config: &DeskConfig) -> Result<Config> {
    let mut c = Config::new(data, EventId::new(&config.event)?, config.gate_name.clone());
    let keys = config
        .issuer_pems
        .iter()
        .map(|p| PublicKey::from_pem(p))
        .collect::<Result<Vec<_>, _>>()
        .context("reading the issuer keys")?;
    c.keyring = Keyring::from_keys(keys).context("the issuer keys")?;
    c.policy = Policy {
        entry: if config.reentry {
            EntryPolicy::Reentry
        } else {
            EntryPolicy::Single
        },
        unlisted: if config.reject_unlisted {
            UnlistedPolicy::Reject
        } else {
            UnlistedPolicy::AdmitAndMark
        },
        ..Policy::default()
    };
    Ok(c)
}

/// Starts a node for `config` in `data`, with its mesh and uplink when set up, and its
/// local API; returns it and the API address.
async fn start_gate(
    data: PathBuf,
    config: &DeskConfig,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(Node, SocketAddr)> {
    let node = Node::start(node_config(data, config)?)?;
    if let Some(dir) = &config.identity_dir {
        let identity = gatemesh_mesh::pki::Identity::load(dir)
            .with_context(|| format!("loading the device identity in {}", dir.display()))?;
        node.start_mesh(gatemesh_mesh::session::MeshConfig {
            identity,
            bind: config.mesh_bind,
            static_peers: config.peers.clone(),
            discovery: config
                .discovery
                .then_some(gatemesh_mesh::discovery::Interfaces::Physical),
        })?;
    }
    if let (Some(server), Some(token)) = (&config.server, &config.server_token) {
        node.start_uplink(gatemesh_node::UplinkConfig {
            server: server.clone(),
            token: token.clone(),
        })?;
    }
    let listener = tokio::net::TcpListener::bind(config.api)
        .await
        .with_context(|| format!("listening on {}", config.api))?;
    let addr = listener.local_addr()?;
    let served = node.clone();
    tokio::spawn(async move {
        let mut stop = stop;
        let _ = gatemesh_node::api::serve(listener, served, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    });
    Ok((node, addr))
}

impl Desk {
    /// Opens the app set up in `root`; `None` when it has not been set up yet.
    pub async fn open(root: &Path) -> Result<Option<Self>> {
        let Some(config) = DeskConfig::load(root)? else {
            return Ok(None);
        };
        let (stop_api, stop) = tokio::sync::watch::channel(false);
        let (node, api) = start_gate(root.join("gate"), &config, stop.clone()).await?;
        let side_gate = if config.demo {
            let side = demo_side_config(root)?;
            Some(start_gate(root.join("side-gate"), &side, stop).await?.0)
        } else {
            None
        };
        Ok(Some(Self {
            root: root.to_owned(),
            config: Mutex::new(config.clone()),
            started: config,
            node,
            side_gate,
            api: Some(api),
            signed_in: Mutex::new(None),
            stop_api,
        }))
    }

    /// Opens the demo event in `root`, setting it up on first start.
    pub async fn demo(root: &Path) -> Result<Self> {
        if DeskConfig::load(root)?.is_none() {
            set_up_demo(root)?;
        }
        Self::open(root)
            .await?
            .context("the demo set-up did not take")
    }

    /// Joins an event with a pairing code from the server and opens it. `pins` are the
    /// staff to create (name, role, PIN).
    pub async fn pair(
        root: &Path,
        server: &str,
        code: &str,
        staff: Vec<StaffEntry>,
    ) -> Result<Self> {
        ready_for_set_up(root, &staff)?;
        let paired = gatemesh_node::pairing::pair(server, code).await?;
        let identity = root.join("identity");
        gatemesh_node::pairing::write_identity(&identity, &paired.answer.identity)?;
        let issuer_pems = paired.issuer_pems();
        let answer = paired.answer;
        let config = DeskConfig {
            identity_dir: Some(identity),
            server: Some(paired.server),
            server_token: Some(answer.token),
            ..DeskConfig::new_event(
                answer.event.to_string(),
                answer.name.to_string(),
                issuer_pems,
                staff,
            )
        };
        Self::install(root, config).await
    }

    /// Sets up an event from files an organizer handed over: the issuer's public key (PEM
    /// text) and, for the mesh, a device identity directory from `gatemesh enroll`. Discovery
    /// finds the event's other gates by mDNS.
    pub async fn from_files(root: &Path, setup: FileSetup, staff: Vec<StaffEntry>) -> Result<Self> {
        ready_for_set_up(root, &staff)?;
        let event = EventId::new(setup.event.trim()).context("the event id")?;
        PublicKey::from_pem(&setup.issuer_pem).context("the issuer key (a PEM public key)")?;
        let identity_dir = match setup.identity_dir.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let id = gatemesh_mesh::pki::Identity::load(&dir)
                    .with_context(|| format!("no device identity in {}", dir.display()))?;
                anyhow::ensure!(
                    id.peer.event == event.as_str(),
                    "the identity in {} is for event {}",
                    dir.display(),
                    id.peer.event
                );
                Some(dir)
            }
        };
        let gate_name = setup.gate_name.trim().to_owned();
        anyhow::ensure!(!gate_name.is_empty(), "the gate needs a name");
        let config = DeskConfig {
            capacity: setup.capacity,
            identity_dir,
            ..DeskConfig::new_event(event.to_string(), gate_name, vec![setup.issuer_pem], staff)
        };
        Self::install(root, config).await
    }

    /// Saves a new set-up and starts the gate on it.
    async fn install(root: &Path, config: DeskConfig) -> Result<Self> {
        config.save(root)?;
        Self::open(root)
            .await?
            .context("the new set-up did not take")
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    pub fn info(&self) -> AppInfo {
        let demo_pins = if self.started.demo {
            DEMO_STAFF
                .iter()
                .map(|(name, role, pin)| DemoPin {
                    name: (*name).into(),
                    role: *role,
                    pin: (*pin).into(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let pdf = self.root.join("tickets").join("tickets.pdf");
        AppInfo {
            needs_setup: false,
            event: Some(self.started.event.clone()),
            gate_name: Some(self.started.gate_name.clone()),
            capacity: self.started.capacity,
            observer: self.node.is_observer(),
            signed_in: self.signed_in.lock().ok().and_then(|s| s.clone()),
            demo_pins,
            api: self.api.map(|a| format!("http://{a}")),
            tickets_pdf: pdf.exists().then(|| pdf.display().to_string()),
        }
    }

    pub fn sign_in(&self, pin: &str) -> Result<StaffView, DeskError> {
        let staff = self.live().staff;
        let found = staff
            .iter()
            .find(|s| pin_hash(&s.salt, pin) == s.pin_hash)
            .ok_or(DeskError::WrongPin)?;
        let who = StaffView {
            name: found.name.clone(),
            role: found.role,
        };
        if let Ok(mut s) = self.signed_in.lock() {
            *s = Some(who.clone());
        }
        Ok(who)
    }

    fn live(&self) -> DeskConfig {
        self.config
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The set-up as managers see and change it.
    pub fn settings(&self) -> SettingsView {
        let c = self.live();
        SettingsView {
            gate_name: c.gate_name.clone(),
            running_gate_name: self.started.gate_name.clone(),
            reentry: c.reentry,
            reject_unlisted: c.reject_unlisted,
            restart_needed: c.gate_name != self.started.gate_name
                || c.reentry != self.started.reentry
                || c.reject_unlisted != self.started.reject_unlisted,
            staff: c
                .staff
                .iter()
                .map(|s| StaffView {
                    name: s.name.clone(),
                    role: s.role,
                })
                .collect(),
            server: c.server.clone(),
            mesh: c.identity_dir.is_some(),
            discovery: c.discovery,
            peers: c.peers.iter().map(ToString::to_string).collect(),
        }
    }

    fn change(
        &self,
        f: impl FnOnce(&mut DeskConfig) -> Result<(), DeskError>,
    ) -> Result<SettingsView, DeskError> {
        self.require(StaffRole::Manager)?;
        {
            let mut c = self
                .config
                .lock()
                .map_err(|_| DeskError::Other(anyhow::anyhow!("settings lock")))?;
            let mut next = c.clone();
            f(&mut next)?;
            next.save(&self.root)?;
            *c = next;
        }
        Ok(self.settings())
    }

    /// A new gate name or entry policy, saved; the gate takes it at its next start.
    pub fn update_settings(
        &self,
        gate_name: &str,
        reentry: bool,
        reject_unlisted: bool,
    ) -> Result<SettingsView, DeskError> {
        let name = gate_name.trim().to_owned();
        if name.is_empty() || name.len() > 63 || name.chars().any(char::is_control) {
            return Err(DeskError::Invalid(
                "a gate name is 1-63 printable characters".into(),
            ));
        }
        self.change(|c| {
            c.gate_name = name;
            c.reentry = reentry;
            c.reject_unlisted = reject_unlisted;
            Ok(())
        })
    }

    /// Adds a staff member, or gives an existing one a new PIN and role.
    pub fn put_staff(
        &self,
        name: &str,
        role: StaffRole,
        pin: &str,
    ) -> Result<SettingsView, DeskError> {
        let name = name.trim().to_owned();
        if name.is_empty() || name.len() > 64 {
            return Err(DeskError::Invalid("a name is 1-64 characters".into()));
        }
        if pin.len() < 4 || pin.len() > 12 || !pin.chars().all(|c| c.is_ascii_digit()) {
            return Err(DeskError::Invalid("a PIN is 4-12 digits".into()));
        }
        self.change(|c| {
            if c.staff
                .iter()
                .any(|s| s.name != name && pin_hash(&s.salt, pin) == s.pin_hash)
            {
                return Err(DeskError::Invalid(
                    "someone else has this PIN; choose another".into(),
                ));
            }
            c.staff.retain(|s| s.name != name);
            c.staff.push(StaffEntry::new(&name, role, pin));
            Ok(())
        })
    }

    /// Removes a staff member; the last manager stays.
    pub fn remove_staff(&self, name: &str) -> Result<SettingsView, DeskError> {
        self.change(|c| {
            let left: Vec<StaffEntry> =
                c.staff.iter().filter(|s| s.name != name).cloned().collect();
            if !left.iter().any(|s| s.role == StaffRole::Manager) {
                return Err(DeskError::Invalid("keep at least one manager".into()));
            }
            c.staff = left;
            Ok(())
        })
    }

    pub fn sign_out(&self) {
        if let Ok(mut s) = self.signed_in.lock() {
            *s = None;
        }
    }

    fn require(&self, role: StaffRole) -> Result<StaffView, DeskError> {
        let who = self
            .signed_in
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .ok_or(DeskError::SignedOut)?;
        if who.role < role {
            return Err(DeskError::NotAllowed(who.role));
        }
        Ok(who)
    }

    pub async fn scan(&self, code: &str, scanner: &str) -> Result<ScanView, DeskError> {
        self.require(StaffRole::Staff)?;
        Ok(self
            .node
            .scan(code, scanner, Direction::Entry)
            .await?
            .into())
    }

    pub async fn resolve(
        &self,
        tid: &str,
        action: ResolveAction,
        note: &str,
    ) -> Result<(), DeskError> {
        let who = self.require(StaffRole::Supervisor)?;
        let tid = TicketId::new(tid).map_err(|e| DeskError::Other(e.into()))?;
        self.node
            .resolve(tid, action.into(), &who.name, note)
            .await?;
        Ok(())
    }

    pub async fn status(&self) -> Result<StatusView, DeskError> {
        let snap = self.node.snapshot().await?;
        let now = gatemesh_wire::time::now_ms();
        let minute = 60_000;
        let this_minute = now - now.rem_euclid(minute);
        let first_minute = this_minute - 29 * minute;
        let activity = self.node.activity(first_minute, minute, 30).await?;
        let peers = self.node.peers();
        let uplink = self.node.uplink_status();
        // By name, as the tally lists them.
        let by_gate: HashMap<&str, &gatemesh_ledger::GateActivity> = activity
            .gates
            .iter()
            .map(|g| (g.gate.as_str(), g))
            .collect();
        let peer_by_name: HashMap<&str, &gatemesh_mesh::session::PeerStatus> =
            peers.iter().map(|p| (p.name.as_str(), p)).collect();
        let mut names: Vec<String> = activity.gates.iter().map(|g| g.gate.clone()).collect();
        for n in peers
            .iter()
            .map(|p| p.name.clone())
            .chain([self.started.gate_name.clone()])
        {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let gates = names
            .into_iter()
            .map(|name| {
                let seen = by_gate.get(name.as_str());
                let admitted = seen.map_or(0, |g| u32::try_from(g.entries).unwrap_or(u32::MAX));
                let per_minute = seen.map_or_else(|| vec![0; 30], |g| g.per_minute.clone());
                let last = seen.map_or(0, |g| g.last_ms);
                let this_gate = name == self.started.gate_name;
                let peer = peer_by_name.get(name.as_str());
                let online = this_gate || peer.is_some_and(|p| p.connected);
                let last_seen_ms = if this_gate {
                    Some(now)
                } else {
                    peer.and_then(|p| p.last_sync_ms)
                        .or((last > 0).then_some(last))
                };
                GateRow {
                    scans_per_minute: per_minute.get(28).copied().unwrap_or(0),
                    per_minute,
                    admitted,
                    duplicates: this_gate.then_some(snap.counts.duplicate as u32),
                    rejects: this_gate.then_some(snap.counts.reject as u32),
                    uplink: this_gate.then(|| match &uplink {
                        None => "none".to_owned(),
                        Some(u) if u.streaming => "connected".to_owned(),
                        Some(_) => "offline".to_owned(),
                    }),
                    pending_uploads: if this_gate {
                        uplink.as_ref().map(|u| u.backlog as u32)
                    } else {
                        None
                    },
                    rtt_ms: peer.and_then(|p| p.rtt_ms),
                    online,
                    last_seen_ms,
                    this_gate,
                    name,
                }
            })
            .collect();
        Ok(StatusView {
            event: self.started.event.clone(),
            gate_name: self.started.gate_name.clone(),
            capacity: self.started.capacity,
            admitted_total: u32::try_from(activity.tickets_entered).unwrap_or(u32::MAX),
            flagged: snap.flagged as u32,
            gates,
            minute_ms: this_minute,
        })
    }

    pub async fn flags(&self) -> Result<FlagsView, DeskError> {
        let open_flags = self.node.flags().await?;
        let audit = self.node.audit().await?;
        let audit_of = |tid: &str| -> Vec<AuditView> {
            audit
                .iter()
                .filter(|a| a.tid.as_ref().is_some_and(|t| t.as_str() == tid))
                .map(|a| AuditView {
                    at_ms: a.at_ms,
                    actor: a.actor.clone(),
                    action: a.action.clone(),
                    detail: a.detail.clone(),
                })
                .collect()
        };
        let mut open = Vec::new();
        let mut open_ids = std::collections::HashSet::new();
        for (tid, state) in &open_flags {
            let flagged: Vec<_> = state.flagged().iter().map(|r| r.id.clone()).collect();
            open_ids.insert(tid.to_string());
            open.push(FlagView {
                tid: tid.to_string(),
                open: true,
                redemptions: state
                    .redemptions
                    .iter()
                    .map(|r| RedemptionView {
                        id: r.id.to_string(),
                        gate: r.gate.clone(),
                        scanner: r.scanner.clone(),
                        at_ms: r.at_ms,
                        concurrent: flagged.contains(&r.id),
                    })
                    .collect(),
                audit: audit_of(tid.as_str()),
            });
        }
        // Resolved: tickets with a staff resolution in the audit, newest first.
        let mut resolved_tids: Vec<String> = Vec::new();
        for a in audit.iter().rev() {
            if a.action.starts_with("resolve:")
                && let Some(t) = &a.tid
                && !open_ids.contains(t.as_str())
                && !resolved_tids.iter().any(|x| x == t.as_str())
            {
                resolved_tids.push(t.to_string());
            }
        }
        let mut resolved = Vec::new();
        for tid in resolved_tids.into_iter().take(50) {
            let Ok(id) = TicketId::new(&tid) else {
                continue;
            };
            let (state, _) = self.node.ticket(id).await?;
            resolved.push(FlagView {
                redemptions: state
                    .redemptions
                    .iter()
                    .map(|r| RedemptionView {
                        id: r.id.to_string(),
                        gate: r.gate.clone(),
                        scanner: r.scanner.clone(),
                        at_ms: r.at_ms,
                        concurrent: false,
                    })
                    .collect(),
                audit: audit_of(&tid),
                open: false,
                tid,
            });
        }
        Ok(FlagsView { open, resolved })
    }

    /// Events for the UI, as they happen.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<gatemesh_node::NodeEvent> {
        self.node.subscribe()
    }

    pub async fn shutdown(self) {
        self.stop_api.send_replace(true);
        if let Some(side) = self.side_gate {
            side.shutdown().await;
        }
        self.node.shutdown().await;
    }
}

/// What a node event means for the UI.
pub fn desk_event(e: &gatemesh_node::NodeEvent) -> DeskEvent {
    match e {
        gatemesh_node::NodeEvent::Verdict(r) => DeskEvent::Verdict {
            scan: (**r).clone().into(),
        },
        _ => DeskEvent::Flags,
    }
}

use gatemesh_mesh::fs::write_private;

// ---------------------------------------------------------------------------------------
// The demo event.

/// The demo's staff: name, role, PIN (shown on its sign-in screen).
pub const DEMO_STAFF: [(&str, StaffRole, &str); 3] = [
    ("Sam", StaffRole::Staff, "1111"),
    ("Kim", StaffRole::Supervisor, "2222"),
    ("Alex", StaffRole::Manager, "3333"),
];
/// Tickets in the demo batch.
pub const DEMO_TICKETS: usize = 200;

fn demo_side_config(root: &Path) -> Result<DeskConfig> {
    let main = DeskConfig::load(root)?.context("the demo is not set up")?;
    let side: DeskConfig = serde_json::from_str(
        &std::fs::read_to_string(root.join("side-gate.json")).context("reading side-gate.json")?,
    )?;
    anyhow::ensure!(
        side.event == main.event,
        "side-gate.json is for another event"
    );
    Ok(side)
}

/// Sets up the demo in `root`: an issuer key, the event, a batch of tickets with a printable
/// PDF and their list, a mesh CA and two gates that find each other on loopback (static
/// peers; no mDNS).
pub fn set_up_demo(root: &Path) -> Result<()> {
    use gatemesh_mesh::identity::Role;
    std::fs::create_dir_all(root)?;
    let date = time::OffsetDateTime::now_utc().date();
    let event = format!(
        "DEMO-{}{:02}{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    );
    let eid = EventId::new(&event)?;
    let key = gatemesh_ticket::IssuerKey::generate(None);
    write_private(&root.join("issuer.key.pem"), &key.to_pem()?)?;
    let public = key.public().to_pem();
    std::fs::write(root.join("issuer.pub.pem"), &public)?;

    // The batch: every ticket signed here, listed in tickets.csv, printed in tickets.pdf.
    let tickets = root.join("tickets");
    std::fs::create_dir_all(&tickets)?;
    let mut sheet = gatemesh_qr::SheetWriter::new(&format!("{event} tickets"));
    let mut csv = String::from("tid,eid,seat,format,code\n");
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    for i in 0..DEMO_TICKETS {
        let seat = gatemesh_ticket::Seat::new(format!(
            "{}-{}",
            (b'A' + (i / 20) as u8) as char,
            i % 20 + 1
        ))?;
        let claims = gatemesh_ticket::Claims {
            tid: TicketId::generate(),
            eid: eid.clone(),
            seat: Some(seat),
            iat: Some(iat),
            nbf: None,
            exp: None,
        };
        let code = key.sign(&claims, gatemesh_ticket::Format::Gm1)?;
        let symbol = gatemesh_qr::Symbol::encode(&code)?;
        let seat = claims.seat.as_ref().map(|s| s.to_string());
        sheet.add(
            &symbol,
            &gatemesh_qr::TicketLabel {
                event: &event,
                seat: seat.as_deref(),
                tid: claims.tid.as_str(),
                format: "gm1",
            },
        );
        csv.push_str(&format!(
            "{},{},{},gm1,{}\n",
            claims.tid,
            event,
            seat.unwrap_or_default(),
            code
        ));
    }
    std::fs::write(tickets.join("tickets.csv"), csv)?;
    std::fs::write(tickets.join("tickets.pdf"), sheet.finish())?;

    // The mesh: a CA and two gates on loopback that dial each other.
    let ca = root.join("mesh-ca");
    gatemesh_mesh::pki::write_new_ca(&ca, &event, 30)?;
    gatemesh_mesh::pki::enroll_into(&ca, &root.join("identity"), Role::Gate, "Main-Entrance", 30)?;
    gatemesh_mesh::pki::enroll_into(
        &ca,
        &root.join("side-identity"),
        Role::Gate,
        "Side-Door",
        30,
    )?;
    // Two free loopback UDP ports, both held while they are chosen so they differ.
    let (a, b) = (
        std::net::UdpSocket::bind(("127.0.0.1", 0))?,
        std::net::UdpSocket::bind(("127.0.0.1", 0))?,
    );
    let (main_mesh, side_mesh) = (a.local_addr()?, b.local_addr()?);
    drop((a, b));
    let staff: Vec<StaffEntry> = DEMO_STAFF
        .iter()
        .map(|(name, role, pin)| StaffEntry::new(name, *role, pin))
        .collect();
    // Loopback and static peers: the demo never starts mDNS.
    let main = DeskConfig {
        capacity: Some(DEMO_TICKETS as u32),
        identity_dir: Some(root.join("identity")),
        mesh_bind: main_mesh,
        peers: vec![side_mesh],
        discovery: false,
        demo: true,
        ..DeskConfig::new_event(
            event.clone(),
            "Main-Entrance".into(),
            vec![public.clone()],
            staff.clone(),
        )
    };
    let side = DeskConfig {
        gate_name: "Side-Door".into(),
        identity_dir: Some(root.join("side-identity")),
        mesh_bind: side_mesh,
        peers: vec![main_mesh],
        demo: false,
        ..main.clone()
    };
    std::fs::write(
        root.join("side-gate.json"),
        serde_json::to_string_pretty(&side)?,
    )?;
    main.save(root)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_bindings_are_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/bindings.ts");
        let fresh = typescript_bindings();
        if std::env::var_os("UPDATE_BINDINGS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "ui/src/bindings.ts is out of date: run UPDATE_BINDINGS=1 cargo test -p gatemesh-desk bindings"
        );
    }

    #[test]
    fn pins_are_salted_and_roles_ordered() {
        let a = StaffEntry::new("A", StaffRole::Staff, "1234");
        let b = StaffEntry::new("B", StaffRole::Staff, "1234");
        assert_ne!(a.pin_hash, b.pin_hash);
        assert!(StaffRole::Manager > StaffRole::Supervisor);
        assert!(StaffRole::Supervisor > StaffRole::Staff);
    }
}
