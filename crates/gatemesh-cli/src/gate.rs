use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use gatemesh_ledger::{Durability, EntryPolicy, Policy, UnlistedPolicy};
use gatemesh_node::{Config, Manifest, Node};
use gatemesh_ticket::EventId;
use gatemesh_wire::{DeviceName, Role};

use crate::{exit::UsageExt, verify::load_keyring};

/// Run a headless gate: offline decisions on a durable ledger, served on a local HTTP API.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("identity_source").args(["identity", "paired"])))]
pub struct Args {
    /// The gate's data directory (created on first start; holds ledger.sqlite).
    #[arg(long)]
    data: PathBuf,
    /// A directory from `gatemesh pair`: the event, name, issuer key, identity and server
    /// credential all come from it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["event", "name", "issuers", "identity", "server", "role"])]
    paired: Option<PathBuf>,
    /// The event this gate admits to (1-64 characters of A-Z a-z 0-9 . _ -).
    #[arg(long, required_unless_present = "paired")]
    event: Option<EventId>,
    /// The gate's name, as staff, peers and the server know it (North-1): 1-63 characters
    /// of A-Z a-z 0-9 . _ -, the rule `gatemesh enroll` and pairing keep.
    #[arg(long, required_unless_present_any = ["paired", "forget"])]
    name: Option<DeviceName>,
    /// Issuer public key: SPKI PEM or a JWK Set (issuer.jwks.json); repeat during a key
    /// rotation.
    #[arg(
        long = "issuer",
        required_unless_present_any = ["paired", "forget"],
        value_name = "PUB.pem|JWKS.json"
    )]
    issuers: Vec<PathBuf>,
    /// The event's ticket list (tickets.csv from `gatemesh issue`, or a JSON manifest);
    /// without one, every validly signed ticket of the event is admitted.
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// The event's check-in lists (a JSON lists file), for an event whose server releases
    /// none: the gate admits only the products its lists take, when they take them. Lists the
    /// server releases (through the uplink or a peer) take its place. Without either, every
    /// product at any time.
    #[arg(long, value_name = "FILE.json")]
    lists: Option<PathBuf>,
    /// A list this gate checks against (repeat for several: the VIP door takes `--list vip
    /// --list backstage`); by default all of them. Without `--lists`, the gate refuses every
    /// ticket until the server's lists reach it.
    #[arg(long = "list", value_name = "ID")]
    list: Vec<gatemesh_wire::ListId>,
    /// Address of the local HTTP API (port 0 picks a free one). Every call needs the token
    /// in DATA/api.token (`gatemesh token --data DATA`).
    #[arg(long, default_value = "127.0.0.1:7070")]
    api: SocketAddr,
    /// Serve the local API beyond this machine (an --api address that is not loopback), for
    /// scanners on the venue network; callers still need the token.
    #[arg(long)]
    api_public: bool,
    /// single: one entry per ticket; reentry: holders leave through exit scans and return.
    #[arg(long, default_value = "single", value_parser = ["single", "reentry"])]
    entry: String,
    /// What to do with a signed ticket the manifest does not list.
    #[arg(long, default_value = "admit", value_parser = ["admit", "reject"])]
    unlisted: String,
    /// process: admissions survive the process being killed (SQLite synchronous=NORMAL);
    /// power: they also survive a power cut (synchronous=FULL).
    #[arg(long, default_value = "power", value_parser = ["process", "power"])]
    durability: String,
    /// Seconds a scanner may repeat a code and get the first answer again.
    #[arg(long, default_value_t = 10)]
    repeat_window: u32,
    /// Device identity from `gatemesh enroll`: joins the event's mesh. Without one the gate
    /// opens no socket but its local API.
    #[arg(long, value_name = "DIR")]
    identity: Option<PathBuf>,
    /// UDP address of the mesh endpoint (port 0 picks a free one).
    #[arg(long, default_value = "0.0.0.0:0", requires = "identity_source")]
    mesh: SocketAddr,
    /// A peer to dial directly (HOST:PORT of its mesh endpoint); repeat for several. For
    /// networks that block multicast.
    #[arg(long = "peer", value_name = "ADDR", requires = "identity_source")]
    peers: Vec<SocketAddr>,
    /// Find the event's other devices by mDNS (on: physical interfaces; off: static peers
    /// only, for networks that block multicast).
    #[arg(long, default_value = "on", value_parser = ["on", "off"], requires = "identity_source")]
    discovery: String,
    /// What this device is: a gate admits; an observer (a manager's laptop) watches every
    /// gate and resolves flags but admits no one. Must match the role its certificate names.
    #[arg(long, default_value = "gate")]
    role: Role,
    /// Announce and browse only on this interface; repeat for several.
    #[arg(
        long = "mdns-interface",
        value_name = "NAME",
        requires = "identity_source"
    )]
    mdns_interfaces: Vec<String>,
    /// The central server (https://HOST:PORT, or http:// on loopback): the gate pulls the
    /// manifest and its changes, and uploads every redemption it knows, whenever the uplink
    /// works.
    #[arg(long, value_name = "URL", requires = "server_token")]
    server: Option<String>,
    /// The server's TLS certificate fingerprint (sha256:HEX, as the server prints it): the
    /// only certificate the uplink accepts. Needed for an https:// --server.
    #[arg(long, value_name = "FP", requires = "server")]
    server_fingerprint: Option<gatemesh_wire::CertFingerprint>,
    /// The gate's credential for the server (also from GATEMESH_SERVER_TOKEN).
    #[arg(long, env = "GATEMESH_SERVER_TOKEN", hide_env_values = true)]
    server_token: Option<String>,
    /// After the event: remove the gate's data directory (its ledger of every redemption,
    /// staff names and check-ins, its uplink's records, its API token) instead of starting.
    /// Refused while the gate runs, and while the server has not acknowledged every
    /// redemption the ledger holds.
    #[arg(long)]
    forget: bool,
    /// With --forget: remove it even though some redemptions have not reached the server
    /// (an event with no server, whose ledger was exported or is not wanted).
    #[arg(long, requires = "forget")]
    discard_unsent: bool,
    /// Log lines on standard error (the ready line is on standard output): text for people,
    /// json (one object a line) for a log collector. GATEMESH_LOG (or RUST_LOG) chooses
    /// what is logged (default: info).
    #[arg(long, value_enum, default_value_t)]
    log_format: crate::log::LogFormat,
}

pub fn run(mut args: Args) -> Result<ExitCode> {
    crate::log::init(args.log_format);
    let public = gatemesh_node::api::is_public(&args.api);
    crate::exit::ensure_usage!(
        !public || args.api_public,
        "--api {} is reachable from other machines: serve the API there with --api-public \
         (anyone who reaches it with the token can scan, resolve flags, import a ledger and \
         export every redemption), or keep it on 127.0.0.1",
        args.api
    );
    if let Some(dir) = &args.paired {
        let paired = gatemesh_node::pairing::GateFile::load(dir)?;
        args.event = Some(paired.event);
        args.name = Some(paired.name);
        args.issuers = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("issuer") && n.ends_with(".pub.pem"))
            })
            .collect();
        args.issuers.sort();
        args.identity = Some(dir.join("identity"));
        args.role = paired.role;
        args.server = Some(paired.server);
        args.server_fingerprint = paired.fingerprint;
        args.server_token = Some(paired.token);
    }
    if args.forget {
        let Some(event) = &args.event else {
            crate::exit::bail_usage!("--forget needs --event (or --paired)");
        };
        return forget(&args.data, event, args.discard_unsent);
    }
    let (Some(event), Some(name)) = (args.event.clone(), args.name.clone()) else {
        crate::exit::bail_usage!("--event and --name (or --paired) are needed");
    };
    let mut config = Config::new(args.data.clone(), event, name.to_string());
    config.keyring = load_keyring(&args.issuers)?;
    config.manifest = args.manifest.as_deref().map(Manifest::load).transpose()?;
    let file = match &args.lists {
        Some(path) => {
            let lists = crate::lists::load(path)?;
            lists.check_event(&config.event).usage()?;
            lists.for_gate(&args.list).usage()?;
            Some(lists)
        }
        None => None,
    };
    config.check_in = Some(gatemesh_node::CheckIn {
        lists: args.list.clone(),
        file,
    });
    config.policy = Policy {
        entry: if args.entry == "reentry" {
            EntryPolicy::Reentry
        } else {
            EntryPolicy::Single
        },
        unlisted: if args.unlisted == "reject" {
            UnlistedPolicy::Reject
        } else {
            UnlistedPolicy::AdmitAndMark
        },
        repeat_window_ms: i64::from(args.repeat_window) * 1000,
    };
    config.durability = if args.durability == "process" {
        Durability::Process
    } else {
        Durability::Power
    };

    let identity = match &args.identity {
        Some(dir) => {
            let identity = gatemesh_mesh::pki::Identity::load(dir)
                .with_context(|| format!("loading the device identity in {}", dir.display()))?;
            crate::exit::ensure_usage!(
                identity.peer.role == args.role,
                "the identity in {} is enrolled as {}, not {} (enroll it again with --role {})",
                dir.display(),
                identity.peer.role,
                args.role,
                args.role
            );
            Some(identity)
        }
        None => None,
    };
    config.identity = identity.clone();

    // The API's port is taken before the data directory is touched: a gate that cannot
    // start leaves nothing behind, and one whose data directory is new removes it again.
    let listener = std::net::TcpListener::bind(args.api).with_context(|| {
        format!(
            "listening on {} (another gate on this port? pick another --api)",
            args.api
        )
    })?;
    listener.set_nonblocking(true)?;
    let new_data = !args.data.exists();
    let ready = std::sync::atomic::AtomicBool::new(false);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let ran = runtime.block_on(async {
        let node = Node::start(config)?;
        let api = gatemesh_node::api::ApiConfig::for_data_dir(&args.data)?;
        let mesh_addr = match identity {
            Some(identity) => {
                use gatemesh_mesh::discovery::Interfaces;
                let discovery = match (args.discovery.as_str(), args.mdns_interfaces.is_empty()) {
                    ("off", _) => None,
                    (_, true) => Some(Interfaces::Physical),
                    (_, false) => Some(Interfaces::Named(args.mdns_interfaces.clone())),
                };
                let mesh = gatemesh_mesh::session::MeshConfig {
                    identity,
                    bind: args.mesh,
                    static_peers: args.peers.clone(),
                    discovery,
                    exchange_peers: true,
                };
                Some(node.start_mesh(mesh)?.to_string())
            }
            None => None,
        };
        if let (Some(server), Some(token)) = (&args.server, &args.server_token) {
            node.start_uplink(gatemesh_node::UplinkConfig {
                server: server.clone(),
                token: token.clone(),
                fingerprint: args.server_fingerprint,
                peer_grace: gatemesh_node::PEER_GRACE,
            })?;
        }
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        ready.store(true, std::sync::atomic::Ordering::SeqCst);
        // One line on stdout that scripts and tests can wait for.
        let token_file = api.token.path().display().to_string();
        println!(
            "{}",
            serde_json::json!({ "api": addr.to_string(), "api_token": token_file, "mesh": mesh_addr, "node_id": node.info().node_id, "event": node.info().event })
        );
        eprintln!("gate {:?} ready: http://{addr}/v1/status", node.info().name);
        eprintln!("the API wants Authorization: Bearer <the token in {token_file}>");
        if public {
            eprintln!(
                "the API is served beyond this machine on {addr}: whoever reaches it with the token \
                 can scan, resolve flags, import ledgers and export every redemption"
            );
        }
        gatemesh_node::api::serve(listener, node.clone(), api, crate::stop::asked()).await?;
        node.shutdown().await;
        anyhow::Ok(())
    });
    drop(runtime);
    if ran.is_err() && new_data && !ready.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = std::fs::remove_dir_all(&args.data);
    }
    ran?;
    Ok(ExitCode::SUCCESS)
}

/// `gatemesh gate --forget`: what was removed on stdout (JSON), why not on stderr (exit code
/// 1 when redemptions have not reached the server).
fn forget(data: &std::path::Path, event: &EventId, discard_unsent: bool) -> Result<ExitCode> {
    use gatemesh_node::forget::ForgetError;
    match gatemesh_node::forget::forget(data, event, discard_unsent) {
        Ok(f) => {
            println!("{}", serde_json::to_string(&f)?);
            eprintln!(
                "forgot {}: {} files removed ({} redemptions, {} of them never sent to the server){}",
                data.display(),
                f.removed.len(),
                f.redemptions,
                f.unsent,
                if f.left.is_empty() {
                    String::new()
                } else {
                    format!("; left {} files gatemesh did not write", f.left.len())
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        // A check that failed: nothing was removed.
        Err(e @ ForgetError::Unsent { .. }) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
        Err(e @ ForgetError::NotAGate(_)) => Err(anyhow::Error::new(e)).usage(),
        Err(ForgetError::Other(e)) => Err(e),
    }
}

/// Print the token of a gate's local API (made on its first start), for a client to send as
/// `Authorization: Bearer <token>`.
#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    /// The gate's data directory.
    #[arg(long)]
    data: PathBuf,
}

pub fn token(args: TokenArgs) -> Result<ExitCode> {
    let path = gatemesh_node::api::ApiToken::path_in(&args.data);
    anyhow::ensure!(
        path.exists(),
        "no API token in {}: it is made when the gate first starts (gatemesh gate --data {})",
        args.data.display(),
        args.data.display()
    );
    let token = gatemesh_node::api::ApiToken::load_or_create(&args.data)?;
    println!("{}", token.secret());
    Ok(ExitCode::SUCCESS)
}

/// Write a stopped gate's ledger to a file, for a gate with no network at all.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The stopped gate's data directory (`gatemesh gate --data`).
    #[arg(long)]
    data: PathBuf,
    /// The gate's event.
    #[arg(long)]
    event: EventId,
    /// The ledger file to write (for `gatemesh import` on another gate).
    #[arg(long)]
    out: PathBuf,
    /// Say what was written as one JSON object (file, event, bytes), for scripts.
    #[arg(long)]
    json: bool,
}

pub fn export(args: ExportArgs) -> Result<ExitCode> {
    gatemesh_node::export_ledger_file(&args.data, &args.event, &args.out)?;
    if args.json {
        let bytes = std::fs::metadata(&args.out)
            .with_context(|| format!("reading {}", args.out.display()))?
            .len();
        println!(
            "{}",
            serde_json::json!({ "file": args.out, "event": args.event.as_str(), "bytes": bytes })
        );
    } else {
        println!("wrote {}", args.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Merge a ledger file from another gate into a stopped gate's ledger (idempotent).
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The stopped gate's data directory (`gatemesh gate --data`).
    #[arg(long)]
    data: PathBuf,
    /// The gate's event; the file must hold this event's ledger.
    #[arg(long)]
    event: EventId,
    /// The gate's device identity (`device.pem`, `device.key`, `ca.pem`): every record in
    /// the file is checked against the event's mesh CA before any of it is merged.
    #[arg(long)]
    identity: PathBuf,
    /// A file written by `gatemesh export`.
    file: PathBuf,
    /// Say what was merged as one JSON object (file, event, new_changes), for scripts.
    #[arg(long)]
    json: bool,
}

pub fn import(args: ImportArgs) -> Result<ExitCode> {
    let (file_event, _) = gatemesh_node::read_ledger_file(&args.file)?;
    crate::exit::ensure_usage!(
        file_event == args.event,
        "{} holds the ledger of {file_event}, not {}: import it into a gate of {file_event}",
        args.file.display(),
        args.event
    );
    let identity = gatemesh_mesh::pki::Identity::load(&args.identity)
        .with_context(|| format!("loading the device identity in {}", args.identity.display()))?;
    let n = gatemesh_node::import_ledger_file(&args.data, &args.event, &args.file, &identity)?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "file": args.file, "event": args.event.as_str(), "new_changes": n })
        );
    } else {
        println!("merged {}: {n} new changes", args.file.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Create the event's mesh CA: DIR/ca.pem, DIR/ca.key (owner-only), DIR/event.
#[derive(Debug, clap::Args)]
pub struct MeshCaArgs {
    /// The event (1-64 characters of A-Z a-z 0-9 . _ -).
    #[arg(long)]
    event: EventId,
    /// The directory to create; keep it with the organizer (it signs device identities).
    #[arg(long)]
    out: PathBuf,
    /// Days the CA stays valid.
    #[arg(long, default_value_t = 365)]
    days: i64,
}

pub fn mesh_ca(args: MeshCaArgs) -> Result<ExitCode> {
    gatemesh_mesh::pki::write_new_ca(&args.out, args.event.as_str(), args.days)
        .with_context(|| format!("creating the mesh CA in {}", args.out.display()))?;
    println!("mesh CA for {} in {}", args.event, args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Enroll a device under the event's mesh CA: DIR/device.pem, DIR/device.key, DIR/ca.pem.
#[derive(Debug, clap::Args)]
pub struct EnrollArgs {
    /// The mesh CA directory from `gatemesh mesh-ca`.
    #[arg(long)]
    ca: PathBuf,
    /// Device name (North-1): 1-63 characters of A-Z a-z 0-9 . _ -.
    #[arg(long)]
    name: DeviceName,
    /// `gate` or `observer`.
    #[arg(long, default_value = "gate")]
    role: Role,
    /// The directory to write the identity into (for `gatemesh gate --identity`).
    #[arg(long)]
    out: PathBuf,
    /// Days the device certificate stays valid.
    #[arg(long, default_value_t = 30)]
    days: i64,
}

pub fn enroll(args: EnrollArgs) -> Result<ExitCode> {
    let ca = args.ca.join(gatemesh_mesh::pki::CA_CERT);
    anyhow::ensure!(
        ca.exists(),
        "no mesh CA in {} ({} is missing): make one with `gatemesh mesh-ca --event EID --out {}`",
        args.ca.display(),
        ca.display(),
        args.ca.display()
    );
    let id = gatemesh_mesh::pki::enroll_into(
        &args.ca,
        &args.out,
        args.role,
        args.name.as_str(),
        args.days,
    )
    .with_context(|| format!("enrolling {} into {}", args.name, args.out.display()))?;
    println!(
        "enrolled {} as {} for {} in {}",
        id.name,
        id.role.as_str(),
        id.event,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
