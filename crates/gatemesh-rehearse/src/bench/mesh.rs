//! `gatemesh bench mesh` and `mesh-remote`: propagation between two gates over the QUIC
//! mesh (both in this process on loopback, or this one and a `gatemesh gate` across a
//! bridge), convergence after a partition, and bytes on the wire per redemption.

use std::time::{Duration, Instant};

use anyhow::Result;
use gatemesh_ledger::Direction;
use gatemesh_node::{Config, Node};
use gatemesh_ticket::{EventId, IssuerKey, Keyring};
use serde_json::json;

use crate::stats::{round, summary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Admissions timed from A until B knows them.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Admissions on each side of the partition.
    #[arg(long, default_value_t = 5_000)]
    diverged: usize,
    /// Admissions both gates hold before the partition (one's ledger imported into the
    /// other): the heal's gap is then a part of each ledger, sent as changes and taken in
    /// parts, as at a venue, not a whole ledger.
    #[arg(long, default_value_t = 0)]
    held: usize,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
    /// A `perf record --control fifo:PATH -D -1` control FIFO: `enable` is written to it as
    /// the partition heals and `disable` once both gates converged, so a profile holds the
    /// convergence alone, not the set-up.
    #[arg(long)]
    perf_control: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RemoteArgs {
    /// The mesh CA directory both gates are enrolled under.
    #[arg(long)]
    ca: std::path::PathBuf,
    /// Issuer key pair directory (from `gatemesh keygen`) of the remote gate's tickets.
    #[arg(long)]
    keys: std::path::PathBuf,
    /// The event both gates belong to.
    #[arg(long)]
    event: EventId,
    /// Where this side's mesh endpoint listens.
    #[arg(long)]
    bind: std::net::SocketAddr,
    /// The remote gate's mesh endpoint.
    #[arg(long)]
    peer: std::net::SocketAddr,
    /// The remote gate's API base URL.
    #[arg(long)]
    remote_api: String,
    /// The remote gate's API token (its data directory's `api.token`).
    #[arg(long, env = "GATEMESH_API_TOKEN", hide_env_values = true)]
    remote_token: String,
    /// Admissions timed from this side until the remote gate knows them.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Admissions on each side before the two gates first connect.
    #[arg(long, default_value_t = 5_000)]
    diverged: usize,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
}

use super::local::LocalEvent as MeshBench;

impl MeshBench {
    /// A gate enrolled under the bench's CA: it signs its records from its first scan.
    fn node(&self, name: &str) -> Result<Node> {
        Node::start(self.config(name, &self.dir.join(format!("data-{name}")))?)
    }

    fn join(
        &self,
        node: &Node,
        name: &str,
        peers: Vec<std::net::SocketAddr>,
    ) -> Result<std::net::SocketAddr> {
        node.start_mesh(self.mesh(name, peers)?)
    }
}

async fn wait_until<F: std::future::Future<Output = Result<bool>>>(
    mut check: impl FnMut() -> F,
    poll: Duration,
) -> Result<Duration> {
    let start = Instant::now();
    while !check().await? {
        anyhow::ensure!(start.elapsed() < Duration::from_secs(120), "timed out");
        tokio::time::sleep(poll).await;
    }
    Ok(start.elapsed())
}

/// Two gates in this process.
pub async fn run(args: &Args) -> Result<serde_json::Value> {
    let dir = super::scratch_dir()?;
    let b = MeshBench::create(dir.clone(), "BENCH-MESH")?;

    eprintln!("propagation of {} admissions from A to B…", args.samples);
    let (a, bn) = (b.node("gate-a")?, b.node("gate-b")?);
    let a_addr = b.join(&a, "gate-a", vec![])?;
    b.join(&bn, "gate-b", vec![a_addr])?;
    wait_until(
        || async { Ok(!bn.peers().is_empty() && !a.peers().is_empty()) },
        Duration::from_millis(10),
    )
    .await?;
    let codes = b.codes(args.samples)?;
    let bytes_before = bn.peers().iter().map(|p| p.bytes_received).sum::<u64>()
        + a.peers().iter().map(|p| p.bytes_received).sum::<u64>();
    let mut latencies = Vec::with_capacity(codes.len());
    for (tid, code) in &codes {
        a.scan(code, "a1", Direction::Entry).await?;
        let t = Instant::now();
        loop {
            let (state, _) = bn.ticket(tid.clone()).await?;
            if !state.redemptions.is_empty() {
                break;
            }
            anyhow::ensure!(
                t.elapsed() < Duration::from_secs(30),
                "B never learned {tid}"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        latencies.push(t.elapsed());
    }
    let bytes_after = bn.peers().iter().map(|p| p.bytes_received).sum::<u64>()
        + a.peers().iter().map(|p| p.bytes_received).sum::<u64>();
    let per_redemption = (bytes_after - bytes_before) as f64 / codes.len() as f64;
    a.shutdown().await;
    bn.shutdown().await;

    eprintln!(
        "convergence after a partition with {} admissions on each side…",
        args.diverged
    );
    let (c, d) = (b.node("gate-c")?, b.node("gate-d")?);
    if args.held > 0 {
        eprintln!("both gates holding {} admissions first…", args.held);
        for (_, code) in &b.codes(args.held)? {
            c.scan(code, "s", Direction::Entry).await?;
        }
        d.import_ledger(c.export_ledger().await?).await?;
    }
    let codes = b.codes(2 * args.diverged)?;
    for (i, (_, code)) in codes.iter().enumerate() {
        let side = if i % 2 == 0 { &c } else { &d };
        side.scan(code, "s", Direction::Entry).await?;
    }
    let c_addr = b.join(&c, "gate-c", vec![])?;
    let cpu_before = crate::rehearse::load::cpu_time(std::process::id())?;
    let perf = |command: &str| super::perf(args.perf_control.as_deref(), command);
    perf("enable")?;
    let start = Instant::now();
    b.join(&d, "gate-d", vec![c_addr])?;
    let total = args.held + 2 * args.diverged;
    wait_until(
        || async {
            Ok(
                c.snapshot().await?.redemptions == total
                    && d.snapshot().await?.redemptions == total,
            )
        },
        Duration::from_millis(5),
    )
    .await?;
    let converged = start.elapsed();
    let cpu = crate::rehearse::load::cpu_time(std::process::id())? - cpu_before;
    perf("disable")?;
    let wire: u64 = d
        .peers()
        .iter()
        .map(|p| p.bytes_sent + p.bytes_received)
        .sum();
    c.shutdown().await;
    d.shutdown().await;
    std::fs::remove_dir_all(&dir).ok();

    Ok(json!({
        "transport": "QUIC + mutual TLS on loopback, two gates in one process",
        "propagation_admit_to_known": summary(latencies),
        "wire_bytes_per_redemption": per_redemption.round(),
        "partition_each_side": args.diverged,
        "held_before": args.held,
        "convergence_ms": round(converged.as_secs_f64() * 1000.0),
        "convergence_cpu_ms": round(cpu.as_secs_f64() * 1000.0),
        "convergence_cpu_us_per_change_taken": round(
            cpu.as_secs_f64() * 1e6 / (2 * args.diverged).max(1) as f64
        ),
        "convergence_wire_bytes": wire,
    }))
}

/// This process's gate and a remote one.
pub async fn run_remote(args: &RemoteArgs) -> Result<serde_json::Value> {
    use gatemesh_mesh::{identity::Role, pki, session::MeshConfig};
    let dir = super::scratch_dir()?;
    let key = IssuerKey::from_pem(&std::fs::read_to_string(args.keys.join("issuer.key.pem"))?)?;
    let mut config = Config::new(dir.join("data"), args.event.clone(), "bench-local".into());
    config.keyring = Keyring::from_keys([key.public()])?;
    pki::enroll_into(&args.ca, &dir.join("id"), Role::Gate, "bench-local", 1)?;
    let identity = pki::Identity::load(&dir.join("id"))?;
    config.identity = Some(identity.clone());
    let node = Node::start(config)?;
    let b = MeshBench {
        dir: dir.clone(),
        event: args.event.clone(),
        key,
    };
    let mut auth = reqwest::header::HeaderMap::new();
    auth.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", args.remote_token.trim()).parse()?,
    );
    let client = gatemesh_node::edge::pinned_builder(None)?
        .default_headers(auth)
        .build()?;

    // Both sides admit different tickets while apart, then meet.
    eprintln!(
        "{} admissions on each side before the gates meet…",
        args.diverged
    );
    let diverged = b.codes(2 * args.diverged)?;
    for (_, code) in &diverged[..args.diverged] {
        node.scan(code, "local", Direction::Entry).await?;
    }
    for (_, code) in &diverged[args.diverged..] {
        client
            .post(format!("{}/v1/scan", args.remote_api))
            .json(&json!({ "code": code, "scanner": "remote" }))
            .send()
            .await?
            .error_for_status()?;
    }
    let remote_redemptions = || async {
        let status: serde_json::Value = client
            .get(format!("{}/v1/status", args.remote_api))
            .send()
            .await?
            .json()
            .await?;
        Ok::<_, anyhow::Error>(status["redemptions"].as_u64().unwrap_or(0) as usize)
    };
    let base_remote = remote_redemptions().await?;
    let start = Instant::now();
    node.start_mesh(MeshConfig {
        identity,
        bind: args.bind,
        static_peers: vec![args.peer],
        discovery: None,
        exchange_peers: false,
    })?;
    let total = 2 * args.diverged;
    wait_until(
        || async {
            Ok(node.snapshot().await?.redemptions >= total
                && remote_redemptions().await? >= base_remote + args.diverged)
        },
        Duration::from_millis(5),
    )
    .await?;
    let converged_ms = round(start.elapsed().as_secs_f64() * 1000.0);
    let codes = b.codes(args.samples)?;
    let sent_before: u64 = node
        .peers()
        .iter()
        .map(|p| p.bytes_sent + p.bytes_received)
        .sum();
    let mut latencies = Vec::with_capacity(codes.len());
    for (tid, code) in &codes {
        node.scan(code, "local", Direction::Entry).await?;
        let t = Instant::now();
        loop {
            let r = client
                .get(format!("{}/v1/tickets/{tid}", args.remote_api))
                .send()
                .await?;
            if r.status().is_success() {
                break;
            }
            anyhow::ensure!(
                t.elapsed() < Duration::from_secs(30),
                "the remote gate never learned {tid}"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        latencies.push(t.elapsed());
    }
    let sent_after: u64 = node
        .peers()
        .iter()
        .map(|p| p.bytes_sent + p.bytes_received)
        .sum();
    node.shutdown().await;
    std::fs::remove_dir_all(&dir).ok();
    Ok(json!({
        "transport": format!("QUIC + mutual TLS from {} to {}", args.bind, args.peer),
        "propagation_admit_to_known_over_remote_api": summary(latencies),
        "wire_bytes_per_redemption": ((sent_after - sent_before) as f64 / codes.len() as f64).round(),
        "partition_each_side": args.diverged,
        "convergence_ms_including_connect": converged_ms,
    }))
}
