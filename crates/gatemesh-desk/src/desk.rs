//! The running desk: the gate (and the demo's second gate), its set-up, and who is signed
//! in; every command the app's screens send.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use anyhow::{Context, Result};
use gatemesh_ledger::{EntryPolicy, Policy, UnlistedPolicy};
use gatemesh_node::{Config, Node};
use gatemesh_ticket::{EventId, Keyring, PublicKey, TicketId};
use gatemesh_wire::{Action, Direction};

use crate::{
    AppInfo, AuditView, DemoPin, DeskConfig, DeskError, FileSetup, FlagView, FlagsView, GateRow,
    GuestView, GuestsView, ListChoice, ListView, RedemptionView, RefusalCount, ScanView,
    SettingsView, StaffEntry, StaffRole, StaffView, StatusView, UplinkState,
    config::{PinMatch, check_gate_name, check_idle_minutes, check_pin, ready_for_set_up},
    demo::{DEMO_STAFF, demo_side_config, set_up_demo},
    session::{self, Clock, LOCK_AFTER_FAILURES, Session, delay_after},
};

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
    /// The file holding the local API's token.
    api_token: PathBuf,
    signed_in: Mutex<Option<Session>>,
    clock: Arc<dyn Clock>,
    /// Per name, after wrong PINs: no try before this time (ms).
    not_before: Mutex<HashMap<String, i64>>,
    /// One sign-in at a time: each spends an Argon2id hash, and two at once must not both
    /// get past a name's delay.
    signing: tokio::sync::Mutex<()>,
    stop_api: tokio::sync::watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Refused scans by reason, most first.
fn refusal_counts(counts: impl Iterator<Item = (gatemesh_wire::Reason, u64)>) -> Vec<RefusalCount> {
    let mut r: Vec<RefusalCount> = counts
        .map(|(reason, n)| RefusalCount {
            reason,
            count: u32::try_from(n).unwrap_or(u32::MAX),
        })
        .collect();
    r.sort_by_key(|c| std::cmp::Reverse(c.count));
    r
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
    c.manifest = config
        .manifest
        .as_deref()
        .map(gatemesh_node::Manifest::load)
        .transpose()
        .context("the event's ticket list in app.json")?;
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
    let file = config
        .check_in
        .as_ref()
        .map(|file| {
            let lists = gatemesh_wire::Lists::new(file.clone())
                .context("the check-in lists in app.json")?;
            lists.check_event(&c.event)?;
            lists
                .for_gate(&config.lists)
                .context("the gate's check-in lists")?;
            anyhow::Ok(lists)
        })
        .transpose()?;
    c.check_in = Some(gatemesh_node::CheckIn {
        lists: config.lists.clone(),
        file,
    });
    Ok(c)
}

/// Starts a node for `config` in `data`, with its mesh and uplink when set up, and its
/// local API; returns it, the API address and the API token's file.
async fn start_gate(
    data: PathBuf,
    config: &DeskConfig,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(Node, SocketAddr, PathBuf)> {
    anyhow::ensure!(
        !gatemesh_node::api::is_public(&config.api) || config.api_public,
        "the local API address {} in app.json is reachable from other machines: set \
         \"api_public\": true to serve it there, or use 127.0.0.1",
        config.api
    );
    let identity = config
        .identity_dir
        .as_ref()
        .map(|dir| {
            gatemesh_mesh::pki::Identity::load(dir)
                .with_context(|| format!("loading the device identity in {}", dir.display()))
        })
        .transpose()?;
    let mut node_config = node_config(data.clone(), config)?;
    node_config.identity = identity.clone();
    let node = Node::start(node_config)?;
    let api = gatemesh_node::api::ApiConfig::for_data_dir(&data)?;
    let token_file = api.token.path().to_owned();
    if let Some(identity) = identity {
        node.start_mesh(gatemesh_mesh::session::MeshConfig {
            identity,
            bind: config.mesh_bind,
            static_peers: config.peers.clone(),
            discovery: config
                .discovery
                .then_some(gatemesh_mesh::discovery::Interfaces::Physical),
            exchange_peers: true,
        })?;
    }
    if let (Some(server), Some(token)) = (&config.server, &config.server_token) {
        node.start_uplink(gatemesh_node::UplinkConfig {
            server: server.clone(),
            token: token.clone(),
            fingerprint: config.server_fingerprint,
            peer_grace: gatemesh_node::PEER_GRACE,
        })?;
    }
    let listener = tokio::net::TcpListener::bind(config.api)
        .await
        .with_context(|| format!("listening on {}", config.api))?;
    let addr = listener.local_addr()?;
    let served = node.clone();
    tokio::spawn(async move {
        let mut stop = stop;
        let _ = gatemesh_node::api::serve(listener, served, api, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    });
    Ok((node, addr, token_file))
}

impl Desk {
    /// Opens the app set up in `root`; `None` when it has not been set up yet.
    pub async fn open(root: &Path) -> Result<Option<Self>, DeskError> {
        Self::open_with_clock(root, session::system()).await
    }

    /// As [`Desk::open`], telling the time (sign-in delays, idle sign-out) by `clock`.
    pub async fn open_with_clock(
        root: &Path,
        clock: Arc<dyn Clock>,
    ) -> Result<Option<Self>, DeskError> {
        let Some(config) = DeskConfig::load(root)? else {
            return Ok(None);
        };
        let (stop_api, stop) = tokio::sync::watch::channel(false);
        let (node, api, api_token) = start_gate(root.join("gate"), &config, stop.clone()).await?;
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
            api_token,
            signed_in: Mutex::new(None),
            clock,
            not_before: Mutex::new(HashMap::new()),
            signing: tokio::sync::Mutex::new(()),
            stop_api,
        }))
    }

    /// Opens the demo event in `root`, setting it up on first start.
    pub async fn demo(root: &Path) -> Result<Self, DeskError> {
        Self::demo_with_clock(root, session::system()).await
    }

    /// As [`Desk::demo`], telling the time by `clock`.
    pub async fn demo_with_clock(root: &Path, clock: Arc<dyn Clock>) -> Result<Self, DeskError> {
        if DeskConfig::load(root)?.is_none() {
            set_up_demo(root)?;
        }
        Ok(Self::open_with_clock(root, clock)
            .await?
            .context("the demo set-up did not take")?)
    }

    /// Joins an event with a pairing link from the server (pasted, typed or scanned) and
    /// opens it: the server's certificate is pinned for the uplink, and the mesh key is made
    /// here. `staff` are the staff to create (name, role, PIN).
    pub async fn pair(root: &Path, link: &str, staff: Vec<StaffEntry>) -> Result<Self, DeskError> {
        ready_for_set_up(root, &staff)?;
        let link = gatemesh_node::pairing::PairingLink::parse(link)
            .map_err(|e| DeskError::BadInput(e.to_string()))?;
        let paired = gatemesh_node::pairing::pair(&link)
            .await
            .map_err(pairing_refused)?;
        let identity = root.join("identity");
        paired.write_identity(&identity)?;
        let issuer_pems = paired.issuer_pems();
        let fingerprint = paired.fingerprint;
        let answer = paired.answer;
        let config = DeskConfig {
            identity_dir: Some(identity),
            server: Some(paired.server),
            server_fingerprint: fingerprint,
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
    /// text or a JWK Set) and, for the mesh, a device identity directory from `gatemesh enroll`. Discovery
    /// finds the event's other gates by mDNS.
    pub async fn from_files(
        root: &Path,
        setup: FileSetup,
        staff: Vec<StaffEntry>,
    ) -> Result<Self, DeskError> {
        ready_for_set_up(root, &staff)?;
        let event = EventId::new(setup.event.trim())
            .map_err(|e| DeskError::BadInput(format!("the event id: {e}")))?;
        // A PEM or a JWK Set; kept as PEM with its `kid:` line, so a chosen id survives.
        let issuer_pems: Vec<String> = PublicKey::from_file_text(&setup.issuer_pem)
            .map_err(|e| {
                DeskError::BadInput(format!(
                    "the issuer key (a PEM public key or a JWK Set): {e}"
                ))
            })?
            .iter()
            .map(PublicKey::to_pem)
            .collect();
        let identity_dir = match setup.identity_dir.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let id = gatemesh_mesh::pki::Identity::load(&dir).map_err(|e| {
                    DeskError::BadInput(format!("no device identity in {}: {e:#}", dir.display()))
                })?;
                if id.peer.event != event.as_str() {
                    return Err(DeskError::BadInput(format!(
                        "the identity in {} is for event {}",
                        dir.display(),
                        id.peer.event
                    )));
                }
                Some(dir)
            }
        };
        let gate_name = check_gate_name(&setup.gate_name)?;
        let config = DeskConfig {
            capacity: setup.capacity,
            identity_dir,
            ..DeskConfig::new_event(event.to_string(), gate_name, issuer_pems, staff)
        };
        Self::install(root, config).await
    }

    /// Saves a new set-up and starts the gate on it.
    async fn install(root: &Path, config: DeskConfig) -> Result<Self, DeskError> {
        config.save(root)?;
        Ok(Self::open(root)
            .await?
            .context("the new set-up did not take")?)
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
            signed_in: self.current(false).ok(),
            staff_names: self.live().staff.iter().map(|s| s.name.clone()).collect(),
            demo_pins,
            api: self.api.map(|a| format!("http://{a}")),
            api_token_file: Some(self.api_token.display().to_string()),
            tickets_pdf: pdf.exists().then(|| pdf.display().to_string()),
        }
    }

    /// Signs `name` in with `pin`. A wrong PIN makes the name's next try wait (1 s, then
    /// twice as long each time) and the fifth in a row locks it until a manager unlocks it;
    /// a try while it waits or is locked is refused without looking at the PIN. A PIN kept
    /// the old way (salted SHA-256) is kept as Argon2id from its first good sign-in on.
    pub async fn sign_in(&self, name: &str, pin: &str) -> Result<StaffView, DeskError> {
        check_pin(pin)?;
        let name = name.trim();
        let _one = self.signing.lock().await;
        let now = self.clock.now_ms();
        let entry = self
            .live()
            .staff
            .into_iter()
            .find(|s| s.name == name)
            .ok_or(DeskError::WrongPin)?;
        if entry.locked {
            return Err(DeskError::Locked(entry.name));
        }
        if let Some(&at) = lock(&self.not_before).get(name)
            && now < at
        {
            return Err(DeskError::TooSoon {
                wait_ms: u64::try_from(at - now).unwrap_or(0),
            });
        }
        let verdict = {
            let (entry, pin) = (entry.clone(), pin.to_owned());
            tokio::task::spawn_blocking(move || entry.matches(&pin))
                .await
                .context("checking a PIN")?
        };
        if verdict == PinMatch::No {
            // The wait first: it holds even when saving the count fails.
            let failures = entry.failures.saturating_add(1);
            let wait = i64::try_from(delay_after(failures)).unwrap_or(i64::MAX);
            lock(&self.not_before).insert(name.to_owned(), now.saturating_add(wait));
            self.edit(|c| {
                if let Some(s) = c.staff.iter_mut().find(|s| s.name == name) {
                    s.failures = failures;
                    s.locked = failures >= LOCK_AFTER_FAILURES;
                }
                Ok(())
            })?;
            return Err(if failures >= LOCK_AFTER_FAILURES {
                DeskError::Locked(entry.name)
            } else {
                DeskError::WrongPin
            });
        }
        if verdict == PinMatch::YesLegacy || entry.failures > 0 {
            self.edit(|c| {
                if let Some(s) = c.staff.iter_mut().find(|s| s.name == name) {
                    s.failures = 0;
                    if verdict == PinMatch::YesLegacy {
                        s.rehash(pin)?;
                    }
                }
                Ok(())
            })?;
        }
        lock(&self.not_before).remove(name);
        *lock(&self.signed_in) = Some(Session {
            name: entry.name.clone(),
            last_ms: now,
        });
        Ok(StaffView {
            name: entry.name,
            role: entry.role,
        })
    }

    /// Who is signed in, when they may do what `role` may, as the staff list says now (a
    /// role changed or a person removed counts at once). An idle session ends here. A
    /// command of the person's (`touch`) counts as activity; the screens' polls do not.
    fn current(&self, touch: bool) -> Result<StaffView, DeskError> {
        let now = self.clock.now_ms();
        let config = self.live();
        let mut slot = lock(&self.signed_in);
        let session = slot.as_mut().ok_or(DeskError::SignedOut)?;
        let idle = config.idle_sign_out_min;
        let found = config
            .staff
            .into_iter()
            .find(|s| s.name == session.name && !s.locked);
        let who = match found {
            Some(s) if !session.expired(now, idle) => StaffView {
                name: s.name,
                role: s.role,
            },
            _ => {
                *slot = None;
                return Err(DeskError::SignedOut);
            }
        };
        if touch {
            session.last_ms = now;
        }
        Ok(who)
    }

    /// Who is signed in, if their role reaches `role`; a command of theirs (`touch`).
    fn require_as(&self, role: StaffRole, touch: bool) -> Result<StaffView, DeskError> {
        let who = self.current(touch)?;
        if who.role < role {
            return Err(DeskError::NotAllowed(who.role));
        }
        Ok(who)
    }

    /// A person's command: they must be signed in with at least `role`.
    fn require(&self, role: StaffRole) -> Result<StaffView, DeskError> {
        self.require_as(role, true)
    }

    fn live(&self) -> DeskConfig {
        self.config
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The set-up as managers see and change it (anyone signed in may look).
    pub fn settings(&self) -> Result<SettingsView, DeskError> {
        self.require_as(StaffRole::Staff, false)?;
        Ok(self.settings_view())
    }

    fn settings_view(&self) -> SettingsView {
        let c = self.live();
        SettingsView {
            gate_name: c.gate_name.clone(),
            running_gate_name: self.started.gate_name.clone(),
            reentry: c.reentry,
            reject_unlisted: c.reject_unlisted,
            idle_sign_out_min: c.idle_sign_out_min,
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
            locked: c
                .staff
                .iter()
                .filter(|s| s.locked)
                .map(|s| s.name.clone())
                .collect(),
            server: c.server.clone(),
            mesh: c.identity_dir.is_some(),
            discovery: c.discovery,
            peers: c.peers.iter().map(ToString::to_string).collect(),
            lists: self
                .node
                .event_lists()
                .into_iter()
                .map(|(id, name, chosen)| ListChoice {
                    id: id.to_string(),
                    name,
                    chosen,
                })
                .collect(),
        }
    }

    /// The check-in lists this gate checks (none: all of the event's), at once and from
    /// every start after (managers). Refused, changing nothing, for a list the event does
    /// not have.
    pub fn choose_lists(&self, ids: &[String]) -> Result<SettingsView, DeskError> {
        self.require(StaffRole::Manager)?;
        let ids = ids
            .iter()
            .map(|id| {
                gatemesh_wire::ListId::parse(id)
                    .ok_or_else(|| DeskError::BadInput(format!("{id:?} is no list id")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.node.choose_lists(ids.clone())?;
        self.change(|c| {
            c.lists = ids;
            Ok(())
        })
    }

    /// A manager's change to the set-up, saved.
    fn change(
        &self,
        f: impl FnOnce(&mut DeskConfig) -> Result<(), DeskError>,
    ) -> Result<SettingsView, DeskError> {
        self.require(StaffRole::Manager)?;
        self.edit(f)?;
        Ok(self.settings_view())
    }

    /// Changes the set-up and saves it: all of `f`'s change or none of it.
    fn edit(
        &self,
        f: impl FnOnce(&mut DeskConfig) -> Result<(), DeskError>,
    ) -> Result<(), DeskError> {
        let mut c = lock(&self.config);
        let mut next = c.clone();
        f(&mut next)?;
        next.save(&self.root)?;
        *c = next;
        Ok(())
    }

    /// A new gate name or entry policy, saved; the gate takes it at its next start. The idle
    /// sign-out applies at once.
    pub fn update_settings(
        &self,
        gate_name: &str,
        reentry: bool,
        reject_unlisted: bool,
        idle_sign_out_min: u32,
    ) -> Result<SettingsView, DeskError> {
        let name = check_gate_name(gate_name)?;
        let idle = check_idle_minutes(idle_sign_out_min)?;
        self.change(|c| {
            c.gate_name = name;
            c.reentry = reentry;
            c.reject_unlisted = reject_unlisted;
            c.idle_sign_out_min = idle;
            Ok(())
        })
    }

    /// Lets a name locked after wrong PINs sign in again.
    pub fn unlock_staff(&self, name: &str) -> Result<SettingsView, DeskError> {
        let view = self.change(|c| {
            let s =
                c.staff.iter_mut().find(|s| s.name == name).ok_or_else(|| {
                    DeskError::BadInput(format!("no staff member is named {name}"))
                })?;
            s.failures = 0;
            s.locked = false;
            Ok(())
        })?;
        lock(&self.not_before).remove(name);
        Ok(view)
    }

    /// Adds a staff member, or gives an existing one a new PIN and role (and unlocks them).
    /// Two people may share a PIN: sign-in asks for the name too.
    pub fn put_staff(
        &self,
        name: &str,
        role: StaffRole,
        pin: &str,
    ) -> Result<SettingsView, DeskError> {
        self.require(StaffRole::Manager)?;
        let entry = StaffEntry::new(name, role, pin)?;
        let name = entry.name.clone();
        let view = self.change(|c| {
            c.staff.retain(|s| s.name != entry.name);
            c.staff.push(entry);
            Ok(())
        })?;
        lock(&self.not_before).remove(&name);
        Ok(view)
    }

    /// Removes a staff member; the last manager stays.
    pub fn remove_staff(&self, name: &str) -> Result<SettingsView, DeskError> {
        self.change(|c| {
            let left: Vec<StaffEntry> =
                c.staff.iter().filter(|s| s.name != name).cloned().collect();
            if !left.iter().any(|s| s.role == StaffRole::Manager) {
                return Err(DeskError::Conflict("keep at least one manager".into()));
            }
            c.staff = left;
            Ok(())
        })
    }

    pub fn sign_out(&self) {
        *lock(&self.signed_in) = None;
    }

    /// QR texts in a camera frame, for a signed-in person (a frame is no activity of theirs:
    /// the camera sends them on its own).
    pub fn decode_frame(&self, frame: &[u8]) -> Result<Vec<String>, DeskError> {
        self.require_as(StaffRole::Staff, false)?;
        crate::decode_frame(frame)
    }

    pub async fn scan(&self, code: &str, scanner: &str) -> Result<ScanView, DeskError> {
        self.require(StaffRole::Staff)?;
        Ok(self
            .node
            .scan(code, scanner, Direction::Entry)
            .await?
            .into())
    }

    /// Guests found by part of their name or order, or by ticket id or seat (staff).
    pub async fn search_guests(&self, query: &str) -> Result<GuestsView, DeskError> {
        self.require(StaffRole::Staff)?;
        let Some(found) = self.node.search_guests(query).await? else {
            return Ok(GuestsView {
                search: false,
                guests: Vec::new(),
            });
        };
        let guests = found
            .into_iter()
            .map(|f| GuestView {
                tid: f.guest.tid.to_string(),
                seat: f.guest.seat,
                holder: f.guest.holder,
                order: f.guest.order,
                entries: u32::try_from(f.entries).unwrap_or(u32::MAX),
                first_gate: f.first_gate,
                first_at_ms: f.first_at_ms,
            })
            .collect();
        Ok(GuestsView {
            search: true,
            guests,
        })
    }

    /// Checks in a guest found by search, in the signed-in person's name (staff): the
    /// verdict a scan of their code would get, recorded as a manual admission naming them.
    pub async fn check_in_guest(&self, tid: &str, scanner: &str) -> Result<ScanView, DeskError> {
        let who = self.require(StaffRole::Staff)?;
        let tid = TicketId::new(tid).map_err(|e| DeskError::BadInput(e.to_string()))?;
        Ok(self
            .node
            .check_in_guest(&tid, &who.name, scanner)
            .await?
            .into())
    }

    pub async fn resolve(&self, tid: &str, action: Action, note: &str) -> Result<(), DeskError> {
        let who = self.require(StaffRole::Supervisor)?;
        let tid = TicketId::new(tid).map_err(|e| DeskError::BadInput(e.to_string()))?;
        self.node.resolve(tid, action, &who.name, note).await?;
        Ok(())
    }

    /// The dashboard, for anyone signed in (a poll: no activity of theirs).
    pub async fn status(&self) -> Result<StatusView, DeskError> {
        self.require_as(StaffRole::Staff, false)?;
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
                // A peer's own counts, as it sent them over the mesh.
                let told: Option<gatemesh_node::GateStats> = peer
                    .and_then(|p| p.stats.clone())
                    .and_then(|v| serde_json::from_value(v).ok());
                let (duplicates, rejects, refusals) = if this_gate {
                    (
                        Some(snap.counts.duplicate as u32),
                        Some(snap.counts.reject as u32),
                        refusal_counts(snap.refusals.iter().map(|(r, n)| (*r, *n))),
                    )
                } else {
                    match &told {
                        Some(t) => (
                            Some(u32::try_from(t.duplicate).unwrap_or(u32::MAX)),
                            Some(u32::try_from(t.reject).unwrap_or(u32::MAX)),
                            // A reason this side does not know is left out.
                            refusal_counts(t.refusals.iter().filter_map(|(code, n)| {
                                let reason = serde_json::from_value::<gatemesh_wire::Reason>(
                                    serde_json::Value::String(code.clone()),
                                );
                                reason.ok().map(|r| (r, *n))
                            })),
                        ),
                        None => (None, None, Vec::new()),
                    }
                };
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
                    duplicates,
                    rejects,
                    refusals,
                    uplink: this_gate.then_some(match &uplink {
                        None => UplinkState::NoServer,
                        Some(u) if u.streaming => UplinkState::Connected,
                        Some(_) => UplinkState::Offline,
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
            lists: self
                .node
                .occupancy()
                .await?
                .into_iter()
                .map(|o| ListView {
                    name: o.name.to_string(),
                    inside: o.inside,
                    capacity: o.capacity,
                    level: o.level,
                })
                .collect(),
            refusals: refusal_counts(snap.refusals.iter().map(|(r, n)| (*r, *n))),
        })
    }

    /// Open and resolved flags, for anyone signed in (supervisors resolve them).
    pub async fn flags(&self) -> Result<FlagsView, DeskError> {
        self.require_as(StaffRole::Staff, false)?;
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

/// A pairing that failed: the server did not answer (or not as a server, or it failed), or
/// it refused the code.
fn pairing_refused(e: gatemesh_node::pairing::PairError) -> DeskError {
    if e.is_unavailable() {
        DeskError::Unavailable(e.to_string())
    } else {
        DeskError::BadInput(e.to_string())
    }
}
