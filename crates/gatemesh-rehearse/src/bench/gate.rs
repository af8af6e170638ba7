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
use gatemesh_ledger::{Direction, Durability, Ledger, Redemption, RedemptionId, genesis};
use gatemesh_node::{Config, Manifest, Node};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, Seat, TicketId};
use rayon::prelude::*;
use serde_json::json;

use crate::stats::{cores, round, summary};

#[derive(Debug, clap::Args)]
pub struct Args {
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
    /// process: admissions survive the process being killed; power: also a power cut (as
    /// `gatemesh gate --durability`).
    #[arg(long, default_value = "power", value_parser = ["process", "power"])]
    durability: String,
    /// Write the results as JSON here too.
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
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

/// Runs the gate bench; `gatemesh` is the binary whose gate process is timed from cold.
pub async fn run(args: &Args, gatemesh: &Path) -> Result<serde_json::Value> {
    anyhow::ensure!(
        args.redeemed + args.samples <= args.tickets,
        "--tickets must cover --redeemed plus --samples"
    );
    let dir = super::scratch_dir()?;
    let event = EventId::new("BENCH-2026")?;
    let key = IssuerKey::generate(None);
    eprintln!("signing {} tickets…", args.tickets);
    let exp = Some(super::unix_now() + 86_400);
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
                product: None,
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
    // The gate signs its records, as every enrolled gate does.
    let ca = dir.join("mesh-ca");
    gatemesh_mesh::pki::write_new_ca(&ca, event.as_str(), 1)?;
    let mut config = Config::new(dir.join("gate"), event.clone(), "Bench 1".into());
    config.keyring = Keyring::from_keys([key.public()])?;
    config.manifest = Some(manifest);
    config.durability = durability;
    config.identity = Some(enrolled(&ca, &dir.join("identity"), "Bench-1")?);
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
    let api = gatemesh_node::api::ApiConfig::for_data_dir(&dir.join("gate"))?;
    let mut auth = reqwest::header::HeaderMap::new();
    auth.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", api.token.secret()).parse()?,
    );
    let client = gatemesh_node::edge::pinned_builder(None)?
        .default_headers(auth)
        .build()?;
    let server = tokio::spawn(gatemesh_node::api::serve(
        listener,
        node.clone(),
        api,
        async {
            let _ = stopped.await;
        },
    ));
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
    let (start_ms, rss_mb) = cold_start(gatemesh, &dir, &event, &key)?;

    eprintln!(
        "merging two ledgers that diverged by {} redemptions each…",
        args.diverged
    );
    let merge_ms = merge(&event, args.diverged)?;

    std::fs::remove_dir_all(&dir).ok();
    Ok(json!({
        "machine": { "cores": cores() },
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

/// Starts `gatemesh gate` on the bench's data and times it to its ready line; reads its
/// resident memory once it is ready.
fn cold_start(gatemesh: &Path, dir: &Path, event: &EventId, key: &IssuerKey) -> Result<(f64, f64)> {
    let public = dir.join("issuer.pub.pem");
    std::fs::write(&public, key.public().to_pem())?;
    let t = Instant::now();
    let mut child = Command::new(gatemesh)
        .args(["gate", "--data"])
        .arg(dir.join("gate"))
        .args([
            "--event",
            event.as_str(),
            "--name",
            "Bench-1",
            "--api",
            "127.0.0.1:0",
            "--mesh",
            "127.0.0.1:0",
            "--discovery",
            "off",
            "--identity",
        ])
        .arg(dir.join("identity"))
        .arg("--issuer")
        .arg(&public)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the gate process")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let start_ms = t.elapsed().as_secs_f64() * 1000.0;
    // Ready is the one JSON line it prints; anything else is a gate that did not start,
    // whose few milliseconds are no cold start.
    if serde_json::from_str::<serde_json::Value>(line.trim()).is_err() {
        let _ = child.kill();
        let output = child.wait_with_output()?;
        anyhow::bail!(
            "the gate did not start ({line:?}): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
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

/// A device identity enrolled under the CA in `ca`, in `dir`.
fn enrolled(ca: &Path, dir: &Path, name: &str) -> Result<gatemesh_mesh::pki::Identity> {
    use gatemesh_mesh::{identity::Role, pki};
    pki::enroll_into(ca, dir, Role::Gate, name, 1)?;
    Ok(pki::Identity::load(dir)?)
}

/// Two gates' diverged ledgers of `n` signed admissions each, merged: the cost includes
/// checking every record's signature.
fn merge(event: &EventId, n: usize) -> Result<f64> {
    let g = genesis(event);
    let scratch = super::scratch_dir()?.join("merge");
    let ca = scratch.join("mesh-ca");
    gatemesh_mesh::pki::write_new_ca(&ca, event.as_str(), 1)?;
    let mut sides = Vec::new();
    for side in ["A", "B"] {
        let identity = enrolled(&ca, &scratch.join(side), side)?;
        let (signer, trust) = gatemesh_ledger::Signer::from_identity(&identity, event)?;
        let mut ledger = Ledger::open(event, signer.node().clone(), &g, None, [])?;
        ledger.sign_with(signer, trust)?;
        for i in 0..n {
            let at = 1_780_000_000_000 + i as i64;
            let r = Redemption {
                manual: None,
                sig: None,
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
                scope: None,
            };
            ledger.record_redemption(&r)?;
        }
        sides.push(ledger);
    }
    let mut b = sides.pop().context("two sides")?;
    let mut a = sides.pop().context("two sides")?;
    let t = Instant::now();
    let bytes = b.save();
    let new = a.merge_saved(&bytes, gatemesh_wire::time::now_ms())?;
    let took = t.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        new.len() >= n,
        "the merge brought {} changes, expected {n}",
        new.len()
    );
    Ok(round(took))
}
