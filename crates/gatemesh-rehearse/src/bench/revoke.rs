//! `gatemesh bench revoke`, and the scene it plays ([`Drill`], which the revocation tests
//! play too): a server (in this process, SQLite or PostgreSQL) and three gates meshed over
//! QUIC on loopback with static peers (no mDNS). A and C have uplinks; B has none and hears
//! only from its peers. The organizer revokes C at the server; the figure is the time from
//! that call until every gate refuses C (A learns by the change stream, B by the mesh from
//! A). Each round pairs a new C, so the revocation is always news.

use std::{
    net::SocketAddr,
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use gatemesh_mesh::session::{MeshConfig, REVOKED_REASON};
use gatemesh_node::{Config, Node, UplinkConfig};
use gatemesh_ticket::{EventId, Keyring, PublicKey};
use serde_json::{Value, json};

use crate::stats::{percentile, round};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Revocations timed, each of a newly paired gate.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Database for the server (default: SQLite in a temporary directory).
    #[arg(long)]
    db: Option<String>,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
}

const TOKEN: &str = "bench-revoke-admin-token-0001";

/// The server in this process, with one event, and the organizer's client.
#[derive(Debug)]
struct Central {
    dir: tempfile::TempDir,
    base: String,
    client: reqwest::Client,
    event: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// How long the gates' uplinks leave their peers' redemptions to their writers.
    peer_grace: std::time::Duration,
}

/// A server and gates A (uplink), B (no uplink, meshed with A) and, added by
/// [`Drill::join`], gates like C (uplink, meshed with A and B).
#[derive(Debug)]
pub struct Drill {
    central: Central,
    /// A gate on the server's uplink.
    pub a: Node,
    /// A gate with no uplink: it hears of the server only through its peers.
    pub b: Node,
    a_addr: SocketAddr,
    b_addr: SocketAddr,
}

/// A gate with its name and its mesh address.
#[derive(Debug)]
pub struct Joined {
    pub node: Node,
    pub name: String,
    pub addr: SocketAddr,
}

impl Central {
    async fn start(
        db: Option<gatemesh_server::Database>,
        peer_grace: std::time::Duration,
    ) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let opened =
            gatemesh_server::Server::open(&dir.path().join("server"), db, Some(TOKEN.into()))?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(gatemesh_server::api::serve(
            listener,
            opened.server,
            async {
                let _ = stopped.await;
            },
        ));
        let central = Self {
            dir,
            base,
            client: gatemesh_node::edge::pinned_builder(None)?.build()?,
            event: format!("REVOKE-{}", std::process::id()),
            stop: Some(stop),
            server,
            peer_grace,
        };
        central
            .post(
                "/v1/events",
                json!({ "id": central.event, "name": "revoke drill" }),
            )
            .await?;
        Ok(central)
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "POST {path}: {status}: {body}");
        Ok(body)
    }

    /// A gate named `name`, paired by its link, meshed with `peers`, with an uplink or not.
    async fn gate(&self, name: &str, peers: &[SocketAddr], uplink: bool) -> Result<Joined> {
        let code = self
            .post(
                &format!("/v1/events/{}/devices", self.event),
                json!({ "name": name }),
            )
            .await?;
        let link = gatemesh_node::pairing::PairingLink::parse(
            code["link"].as_str().context("a pairing link")?,
        )?;
        let pairing = gatemesh_node::pairing::pair(&link).await?;
        let id_dir = self.dir.path().join(format!("id-{name}"));
        pairing.write_identity(&id_dir)?;
        let identity = gatemesh_mesh::pki::Identity::load(&id_dir)?;
        let mut config = Config::new(
            self.dir.path().join(format!("data-{name}")),
            EventId::new(&self.event)?,
            name.into(),
        );
        let keys = pairing
            .issuer_pems()
            .iter()
            .map(|p| PublicKey::from_pem(p))
            .collect::<Result<Vec<_>, _>>()?;
        config.keyring = Keyring::from_keys(keys)?;
        config.identity = Some(identity.clone());
        let node = Node::start(config)?;
        let addr = node.start_mesh(MeshConfig {
            identity,
            bind: "127.0.0.1:0".parse()?,
            static_peers: peers.to_vec(),
            discovery: None,
            exchange_peers: false,
        })?;
        if uplink {
            let file = pairing.gate_file();
            node.start_uplink(UplinkConfig {
                server: file.server,
                token: file.token,
                fingerprint: file.fingerprint,
                peer_grace: self.peer_grace,
            })?;
        }
        Ok(Joined {
            node,
            name: name.into(),
            addr,
        })
    }
}

impl Drill {
    /// Starts the server on `db` (SQLite in a temporary directory when `None`) with an
    /// event, and gates A and B.
    pub async fn start(db: Option<gatemesh_server::Database>) -> Result<Self> {
        Self::start_with(db, gatemesh_node::PEER_GRACE).await
    }

    /// [`Drill::start`], the gates leaving their peers' redemptions to their writers for
    /// `peer_grace` (and a share of it, by name) before they ask the server.
    pub async fn start_with(
        db: Option<gatemesh_server::Database>,
        peer_grace: std::time::Duration,
    ) -> Result<Self> {
        let central = Central::start(db, peer_grace).await?;
        let a = central.gate("gate-a", &[], true).await?;
        let b = central.gate("gate-b", &[a.addr], false).await?;
        Ok(Self {
            central,
            a: a.node,
            b: b.node,
            a_addr: a.addr,
            b_addr: b.addr,
        })
    }

    /// The event.
    pub fn event(&self) -> &str {
        &self.central.event
    }

    /// An organizer's POST; the answer, which must be a success.
    pub async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.central.post(path, body).await
    }

    /// Issues `n` tickets; their codes.
    pub async fn tickets(&self, n: usize) -> Result<Vec<String>> {
        let issued = self
            .post(
                &format!("/v1/events/{}/tickets", self.event()),
                json!({ "count": n }),
            )
            .await?;
        issued["tickets"]
            .as_array()
            .context("tickets")?
            .iter()
            .map(|t| t["code"].as_str().map(str::to_owned).context("code"))
            .collect()
    }

    /// A gate named `name`, paired by its link, meshed with A and B, on the uplink.
    pub async fn join(&self, name: &str) -> Result<Joined> {
        self.central
            .gate(name, &[self.a_addr, self.b_addr], true)
            .await
    }

    /// Revokes the device `name` at the server; the answer (the revocations made).
    pub async fn revoke(&self, name: &str) -> Result<Value> {
        self.post(
            &format!("/v1/events/{}/devices/{name}/revoke", self.event()),
            json!({ "reason": "drill" }),
        )
        .await
    }

    /// Stops the gates and the server.
    pub async fn shutdown(mut self) {
        self.a.shutdown().await;
        self.b.shutdown().await;
        if let Some(stop) = self.central.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.central.server).await;
    }
}

/// Whether `node` refuses the device `name`: no connection to it, and a refusal saying it
/// is revoked.
pub fn refuses(node: &Node, name: &str) -> bool {
    !node.peers().iter().any(|p| p.name == name)
        && node
            .refusals()
            .iter()
            .any(|r| r.name == name && r.reason == REVOKED_REASON)
}

/// Whether `node` and `peer` are connected.
pub fn connected(node: &Node, peer: &str) -> bool {
    node.peers().iter().any(|p| p.name == peer && p.connected)
}

/// Runs the revocation bench.
pub async fn run(args: &Args) -> Result<Value> {
    let db = args
        .db
        .as_deref()
        .map(gatemesh_server::Database::parse)
        .transpose()?;
    let drill = Drill::start(db).await?;
    let mut times = Vec::with_capacity(args.rounds);
    for round in 0..args.rounds {
        let c = drill.join(&format!("gate-c{round}")).await?;
        let up = Instant::now();
        while !(connected(&drill.a, &c.name)
            && connected(&drill.b, &c.name)
            && c.node.uplink_status().is_some_and(|s| s.streaming))
        {
            anyhow::ensure!(
                up.elapsed() < Duration::from_secs(30),
                "gate {} never joined",
                c.name
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let started = Instant::now();
        drill.revoke(&c.name).await?;
        while !(refuses(&drill.a, &c.name) && refuses(&drill.b, &c.name)) {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(30),
                "the gates did not refuse {} within 30 s",
                c.name
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.push(started.elapsed());
        c.node.shutdown().await;
    }
    drill.shutdown().await;
    times.sort();
    let ms = |p: f64| round(percentile(&times, p));
    Ok(json!({
        "bench": "revoke",
        "database": if args.db.is_some() { "postgres" } else { "sqlite" },
        "rounds": times.len(),
        "every_gate_refuses_ms": {
            "p50": ms(0.5), "p90": ms(0.9), "max": ms(1.0),
        },
        "note": "the organizer's POST …/revoke until gate A (change stream) and gate B (no uplink, by the mesh from A) both refuse C and have closed its connections (polled every 2 ms); server and gates in one process on loopback",
    }))
}
