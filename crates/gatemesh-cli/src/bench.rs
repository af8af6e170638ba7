//! `gatemesh bench gate`: the gate's numbers on this machine, through the same code paths a
//! real gate uses (the node in-process, then its HTTP API on loopback, then a separate gate
//! process for start-up time and memory).

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use gatemesh_ledger::{Direction, Durability, Ledger, NodeId, Redemption, RedemptionId, genesis};
use gatemesh_node::{Config, Manifest, Node};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, Seat, TicketId};
use rayon::prelude::*;
use serde_json::json;

/// Measure a gate.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Scan latency and throughput, cold start, memory and merge time of one gate.
    Gate(GateArgs),
    /// Propagation between two gates over the QUIC mesh on loopback, convergence after a
    /// partition, bytes on the wire per redemption.
    Mesh(MeshArgs),
    /// Propagation from a gate in this process to a `gatemesh gate` elsewhere (another
    /// network namespace across a bridge: `scripts/bench-mesh-bridge.sh`).
    MeshRemote(MeshRemoteArgs),
    /// Redemptions per second and latency of a running `gatemesh server` over its HTTP API,
    /// with distinct tickets or all clients racing on one ticket (which must be admitted
    /// exactly once).
    Server(crate::bench_server::Args),
    /// What the server's word costs a gate: manifest bytes in full and as a delta, and the
    /// push latency of a void to a gate connected by its uplink.
    Uplink(crate::bench_uplink::Args),
}

#[derive(Debug, clap::Args)]
struct MeshRemoteArgs {
    /// The mesh CA directory both gates are enrolled under.
    #[arg(long)]
    ca: std::path::PathBuf,
    /// Issuer key pair directory (from `gatemesh keygen`) of the remote gate's tickets.
    #[arg(long)]
    keys: std::path::PathBuf,
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
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Admissions on each side before the two gates first connect.
    #[arg(long, default_value_t = 5_000)]
    diverged: usize,
    #[arg(long)]
    report: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
struct MeshArgs {
    /// Admissions timed from A until B knows them.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Admissions on each side of the partition.
    #[arg(long, default_value_t = 5_000)]
    diverged: usize,
    #[arg(long)]
    report: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
struct GateArgs {
    /// Tickets in the event (all listed in the manifest).
    #[arg(long, default_value_t = 100_000)]
    tickets: usize,
    /// Tickets redeemed before measuring.
    #[arg(long, default_value_t = 50_000)]
    redeemed: usize,
    /// Scans timed one at a time (half first entries, half duplicates).
    #[arg(long, default_value_t = 4_000)]
    samples: usize,
    /// Concurrent clients for throughput runs.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Redemptions on each side for the merge measurement.
    #[arg(long, default_value_t = 10_000)]
    diverged: usize,
    #[arg(long, default_value = "power", value_parser = ["process", "power"])]
    durability: String,
    /// Write the results as JSON here too.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

pub(crate) fn summary(mut lat: Vec<Duration>) -> serde_json::Value {
    lat.sort();
    let mean =
        lat.iter().map(Duration::as_secs_f64).sum::<f64>() / lat.len().max(1) as f64 * 1000.0;
    json!({
        "n": lat.len(),
        "mean_ms": round(mean),
        "p50_ms": round(percentile(&lat, 0.50)),
        "p95_ms": round(percentile(&lat, 0.95)),
        "p99_ms": round(percentile(&lat, 0.99)),
        "max_ms": round(percentile(&lat, 1.0)),
    })
}

pub(crate) fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn run(args: Args) -> Result<std::process::ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (report, path) = match args.what {
        What::Gate(args) => (runtime.block_on(bench_gate(&args))?, args.report),
        What::Mesh(args) => (runtime.block_on(bench_mesh(&args))?, args.report),
        What::MeshRemote(args) => (runtime.block_on(bench_mesh_remote(&args))?, args.report),
        What::Server(args) => (
            runtime.block_on(crate::bench_server::run(&args))?,
            args.report,
        ),
        What::Uplink(args) => (
            runtime.block_on(crate::bench_uplink::run(&args))?,
            args.report.clone(),
        ),
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(path) = &path {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    // A bench that checks correctness as it goes (the server's) reports a failed check after
    // the numbers, so they are kept for the diagnosis.
    if report.pointer("/checks/ok") == Some(&serde_json::Value::Bool(false)) {
        eprintln!("error: a correctness check failed; see \"checks\" in the report");
        return Ok(std::process::ExitCode::FAILURE);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

async fn concurrent<F, Fut>(clients: usize, items: Vec<String>, f: F) -> Result<(Duration, usize)>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let f = Arc::new(f);
    let queue = Arc::new(std::sync::Mutex::new(items));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (f, queue) = (f.clone(), queue.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop());
                let Some(code) = next else {
                    return Ok::<usize, anyhow::Error>(n);
                };
                f(code).await?;
                n += 1;
            }
        }));
    }
    let mut done = 0;
    for t in tasks {
        done += t.await??;
    }
    Ok((start.elapsed(), done))
}

async fn bench_gate(args: &GateArgs) -> Result<serde_json::Value> {
    anyhow::ensure!(
        args.redeemed + args.samples <= args.tickets,
        "--tickets must cover --redeemed plus --samples"
    );
    let dir = tempfile_dir()?;
    let event = EventId::new("BENCH-2026")?;
    let key = IssuerKey::generate(None);
    eprintln!("signing {} tickets…", args.tickets);
    let exp = Some(crate::timefmt::now() + 86_400);
    let tickets: Vec<(TicketId, String)> = (0..args.tickets)
        .into_par_iter()
        .map(|i| {
            let tid = TicketId::generate();
            let claims = Claims {
                tid: tid.clone(),
                eid: event.clone(),
                seat: Seat::new(format!("S{i}")).ok(),
                iat: None,
                nbf: None,
                exp,
            };
            key.sign(&claims, Format::Gm1).map(|code| (tid, code))
        })
        .collect::<Result<_, _>>()?;
    let manifest = Manifest {
        listed: tickets.iter().map(|t| t.0.clone()).collect(),
        ..Manifest::default()
    };
    let durability = if args.durability == "process" {
        Durability::Process
    } else {
        Durability::Power
    };
    let mut config = Config::new(dir.join("gate"), event.clone(), "Bench 1".into());
    config.keyring = Keyring::from_keys([key.public()])?;
    config.manifest = Some(manifest);
    config.durability = durability;
    let node = Node::start(config.clone())?;

    eprintln!(
        "redeeming {} tickets with {} concurrent clients…",
        args.redeemed, args.clients
    );
    let fill: Vec<String> = tickets[..args.redeemed]
        .iter()
        .map(|t| t.1.clone())
        .collect();
    let n = node.clone();
    let (took, done) = concurrent(args.clients, fill, move |code| {
        let n = n.clone();
        async move {
            n.scan(&code, "fill", Direction::Entry).await?;
            Ok(())
        }
    })
    .await?;
    let fill_rate = done as f64 / took.as_secs_f64();

    eprintln!("timing {} scans one at a time in the node…", args.samples);
    let fresh = &tickets[args.redeemed..args.redeemed + args.samples / 2];
    let mut admits = Vec::new();
    let mut dups = Vec::new();
    for (i, (_, code)) in fresh.iter().enumerate() {
        let t = Instant::now();
        let r = node.scan(code, "lat", Direction::Entry).await?;
        admits.push(t.elapsed());
        anyhow::ensure!(
            r.verdict == gatemesh_ledger::Verdict::Admit,
            "expected admit, got {:?}",
            r.verdict
        );
        let (_, old) = &tickets[i * 7 % args.redeemed.max(1)];
        let t = Instant::now();
        node.scan(old, "lat2", Direction::Entry).await?;
        dups.push(t.elapsed());
    }

    eprintln!("throughput of duplicates with {} clients…", args.clients);
    let dup_codes: Vec<String> = tickets[..args.redeemed.min(20_000)]
        .iter()
        .map(|t| t.1.clone())
        .collect();
    let n = node.clone();
    let (took, done) = concurrent(args.clients, dup_codes, move |code| {
        let n = n.clone();
        async move {
            n.scan(&code, "tp", Direction::Entry).await?;
            Ok(())
        }
    })
    .await?;
    let dup_rate = done as f64 / took.as_secs_f64();

    // What a dashboard refresh costs the writer thread (scans wait behind it): the entry
    // tally the desk reads, against reading every record as the desk used to.
    eprintln!("a dashboard refresh at this ledger size…");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut tally = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let a = node.activity(now_ms - 29 * 60_000, 60_000, 30).await?;
        tally.push(t.elapsed());
        anyhow::ensure!(
            a.tickets_entered >= args.redeemed,
            "the tally missed entries"
        );
    }
    let mut full_read = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (all, _) = node.records().await?;
        full_read.push(t.elapsed());
        anyhow::ensure!(all.len() >= args.redeemed, "the read missed records");
    }

    eprintln!("the same through the HTTP API…");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(gatemesh_node::api::serve(listener, node.clone(), async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let http_fresh = &tickets[args.redeemed + args.samples / 2..args.redeemed + args.samples];
    let mut http_admits = Vec::new();
    for (_, code) in http_fresh {
        let t = Instant::now();
        let v: serde_json::Value = client
            .post(format!("{base}/v1/scan"))
            .json(&json!({ "code": code, "scanner": "http" }))
            .send()
            .await?
            .json()
            .await?;
        http_admits.push(t.elapsed());
        anyhow::ensure!(v["verdict"] == "admit", "expected admit over HTTP, got {v}");
    }
    let http_codes: Vec<String> = tickets[..args.redeemed.min(20_000)]
        .iter()
        .map(|t| t.1.clone())
        .collect();
    let (c, b) = (client.clone(), base.clone());
    let (took, done) = concurrent(args.clients, http_codes, move |code| {
        let (c, b) = (c.clone(), b.clone());
        async move {
            c.post(format!("{b}/v1/scan"))
                .json(&json!({ "code": code, "scanner": "http-tp" }))
                .send()
                .await?
                .error_for_status()?;
            Ok(())
        }
    })
    .await?;
    let http_rate = done as f64 / took.as_secs_f64();
    let _ = stop.send(());
    server.await??;
    node.shutdown().await;

    eprintln!("cold start of a gate process on that data…");
    let (start_ms, rss_mb) = cold_start(&dir, &event, &key)?;

    eprintln!(
        "merging two ledgers that diverged by {} redemptions each…",
        args.diverged
    );
    let merge_ms = merge(&event, args.diverged)?;

    std::fs::remove_dir_all(&dir).ok();
    Ok(json!({
        "machine": { "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) },
        "event_tickets": args.tickets,
        "redeemed_before": args.redeemed,
        "durability": args.durability,
        "fill_scans_per_s": fill_rate.round(),
        "node_admit_latency": summary(admits),
        "node_duplicate_latency": summary(dups),
        "node_duplicate_scans_per_s": dup_rate.round(),
        "dashboard_refresh": { "entry_tally": summary(tally), "reading_every_record": summary(full_read) },
        "http_admit_latency": summary(http_admits),
        "http_duplicate_scans_per_s": http_rate.round(),
        "cold_start_ms": start_ms,
        "gate_rss_mb": rss_mb,
        "merge_ms": merge_ms,
        "clients": args.clients,
    }))
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("gatemesh-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Starts `gatemesh gate` on the bench's data and times it to its ready line; reads its
/// resident memory once it is ready.
fn cold_start(dir: &Path, event: &EventId, key: &IssuerKey) -> Result<(f64, f64)> {
    let public = dir.join("issuer.pub.pem");
    std::fs::write(&public, key.public().to_pem())?;
    let exe = std::env::current_exe()?;
    let t = Instant::now();
    let mut child = Command::new(exe)
        .args(["gate", "--data"])
        .arg(dir.join("gate"))
        .args([
            "--event",
            event.as_str(),
            "--name",
            "Bench 1",
            "--api",
            "127.0.0.1:0",
            "--issuer",
        ])
        .arg(&public)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the gate process")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let start_ms = t.elapsed().as_secs_f64() * 1000.0;
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let rss_kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    child.kill()?;
    child.wait()?;
    Ok((round(start_ms), round(rss_kb / 1024.0)))
}

fn merge(event: &EventId, n: usize) -> Result<f64> {
    let g = genesis(event);
    let mut sides = Vec::new();
    for side in ["A", "B"] {
        let mut ledger = Ledger::open(event, NodeId::random(), &g, None, [])?;
        for i in 0..n {
            let at = 1_780_000_000_000 + i as i64;
            let r = Redemption {
                id: RedemptionId::random(),
                tid: TicketId::generate(),
                direction: Direction::Entry,
                node: ledger.node().clone(),
                gate: side.into(),
                scanner: "s".into(),
                at_ms: at,
                hlc: ledger.tick(at),
                seen: Vec::new(),
                unlisted: false,
            };
            ledger.record_redemption(&r)?;
        }
        sides.push(ledger);
    }
    let mut b = sides.pop().context("two sides")?;
    let mut a = sides.pop().context("two sides")?;
    let t = Instant::now();
    let bytes = b.save();
    let new = a.merge_saved(&bytes)?;
    let took = t.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        new.len() >= n,
        "the merge brought {} changes, expected {n}",
        new.len()
    );
    Ok(round(took))
}

struct MeshBench {
    dir: std::path::PathBuf,
    event: EventId,
    key: IssuerKey,
}

impl MeshBench {
    fn node(&self, name: &str) -> Result<Node> {
        let mut config = Config::new(
            self.dir.join(format!("data-{name}")),
            self.event.clone(),
            name.into(),
        );
        config.keyring = Keyring::from_keys([self.key.public()])?;
        Node::start(config)
    }

    fn join(
        &self,
        node: &Node,
        name: &str,
        peers: Vec<std::net::SocketAddr>,
    ) -> Result<std::net::SocketAddr> {
        use gatemesh_mesh::{identity::Role, pki, session::MeshConfig};
        let id = self.dir.join(format!("id-{name}"));
        pki::enroll_into(&self.dir.join("ca"), &id, Role::Gate, name, 1)?;
        let identity = pki::Identity::load(&id)?;
        node.start_mesh(MeshConfig {
            identity,
            bind: "127.0.0.1:0".parse()?,
            static_peers: peers,
            discovery: None,
        })
    }

    fn codes(&self, n: usize) -> Result<Vec<(TicketId, String)>> {
        Ok((0..n)
            .into_par_iter()
            .map(|_| {
                let tid = TicketId::generate();
                let claims = Claims {
                    tid: tid.clone(),
                    eid: self.event.clone(),
                    seat: None,
                    iat: None,
                    nbf: None,
                    exp: None,
                };
                self.key.sign(&claims, Format::Gm1).map(|code| (tid, code))
            })
            .collect::<Result<_, _>>()?)
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

async fn bench_mesh(args: &MeshArgs) -> Result<serde_json::Value> {
    let dir = tempfile_dir()?;
    let b = MeshBench {
        dir: dir.clone(),
        event: EventId::new("BENCH-MESH")?,
        key: IssuerKey::generate(None),
    };
    gatemesh_mesh::pki::write_new_ca(&dir.join("ca"), b.event.as_str(), 1)?;

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
    let codes = b.codes(2 * args.diverged)?;
    for (i, (_, code)) in codes.iter().enumerate() {
        let side = if i % 2 == 0 { &c } else { &d };
        side.scan(code, "s", Direction::Entry).await?;
    }
    let c_addr = b.join(&c, "gate-c", vec![])?;
    let start = Instant::now();
    b.join(&d, "gate-d", vec![c_addr])?;
    let total = 2 * args.diverged;
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
        "convergence_ms": round(converged.as_secs_f64() * 1000.0),
        "convergence_wire_bytes": wire,
    }))
}

async fn bench_mesh_remote(args: &MeshRemoteArgs) -> Result<serde_json::Value> {
    use gatemesh_mesh::{identity::Role, pki, session::MeshConfig};
    let dir = tempfile_dir()?;
    let key = IssuerKey::from_pem(&std::fs::read_to_string(args.keys.join("issuer.key.pem"))?)?;
    let mut config = Config::new(dir.join("data"), args.event.clone(), "bench-local".into());
    config.keyring = Keyring::from_keys([key.public()])?;
    let node = Node::start(config)?;
    let b = MeshBench {
        dir: dir.clone(),
        event: args.event.clone(),
        key,
    };
    let client = reqwest::Client::new();

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
    pki::enroll_into(&args.ca, &dir.join("id"), Role::Gate, "bench-local", 1)?;
    let identity = pki::Identity::load(&dir.join("id"))?;
    let start = Instant::now();
    node.start_mesh(MeshConfig {
        identity,
        bind: args.bind,
        static_peers: vec![args.peer],
        discovery: None,
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
