//! `gatemesh bench fanout`: what one gate pays per admission, sync included, against the
//! size of the ledger it holds and the number of peers connected to it.
//!
//! The measured gate runs in this process on a tokio runtime of its own (threads named
//! `gm-measured`) with its own writer thread; its peers are full gate nodes (ledger,
//! SQLite store, QUIC endpoint) on this process's other runtime, each dialling the
//! measured gate over QUIC with mutual TLS on loopback (static peers, no discovery). Every
//! node starts from a copy of one seed ledger, so they are in sync before the first
//! admission. Admissions are made one at a time at the measured gate, each waited for
//! until every peer holds it (no coalescing: the cost of one admission as it travels).
//!
//! CPU time is read from the kernel's accounting of the measured gate's threads
//! (`/proc/self/task/TID/schedstat`: time on a CPU, whoever else shares the machine), not
//! from the wall clock. Bytes are the sync frames the measured gate sent and received
//! (lengths and frame headers; QUIC's and TLS's own overhead not counted).

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use gatemesh_ledger::{Direction, Durability};
use gatemesh_node::Node;
use serde_json::{Value, json};

use crate::stats::{cores, round, summary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Redemptions every node holds before measuring (a comma-separated list).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    ledgers: Vec<usize>,
    /// Peers connected to the measured gate (a comma-separated list; 0 measures the gate
    /// alone).
    #[arg(long, value_delimiter = ',', default_value = "0,1,7,31")]
    peers: Vec<usize>,
    /// Admissions measured at each point.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Also measure, at each ledger size, a gate that joins late: how long a fresh gate
    /// takes to hold the whole ledger from one peer, scanning meanwhile.
    #[arg(long)]
    catch_up: bool,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// A `perf record --control fifo:PATH -D -1` control FIFO: `enable` is written to it as
    /// each point's admissions start and `disable` once they are done, so a profile holds
    /// the admissions travelling alone, not the seeds and set-ups.
    #[arg(long)]
    perf_control: Option<PathBuf>,
}

const MEASURED: &str = "gate-0";
/// How often the late gate's staff scan while it catches up.
const CATCH_UP_SCAN_EVERY: Duration = Duration::from_millis(10);
/// Thread name of the measured gate's runtime (`comm` keeps 15 bytes).
const THREADS: &str = "gm-measured";

use super::local::{LocalEvent as Bench, Runtime, admit_all};

impl Bench {
    /// The measured gate admits `n` tickets (16 at a time) and stops: its compacted store is
    /// the seed every node of the runs at this size starts from. The rows its last
    /// compaction folded are deleted before: a gate's commits delete them 256 at a time
    /// for the ~80 commits after each compaction, and with up to 100,000 left every
    /// measured commit did (at 100,000 held and 31 peers a peer's cost per admission was
    /// 1,481 µs with them, 704 µs without).
    async fn seed(&self, n: usize) -> Result<PathBuf> {
        let data = self.dir.join(format!("seed-{n}"));
        let node = Node::start(self.config(MEASURED, &data)?)?;
        admit_all(&node, self.codes(n)?).await?;
        node.shutdown().await;
        let mut store =
            gatemesh_ledger::Store::open(&data.join("ledger.sqlite"), Durability::Process)?;
        store.delete_folded_now()?;
        Ok(data)
    }
}

/// A data directory holding a copy of the seed's ledger. A node started on it under
/// another identity writes as that device from then on (the ledger's records are all
/// signed, see `Ledger::may_become`).
fn copy_seed(seed: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(seed)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("ledger.sqlite") {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}

fn tasks() -> Result<HashSet<u32>> {
    let mut out = HashSet::new();
    for entry in std::fs::read_dir("/proc/self/task")? {
        if let Ok(tid) = entry?.file_name().to_string_lossy().parse() {
            out.insert(tid);
        }
    }
    Ok(out)
}

fn comm(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Nanoseconds thread `tid` has spent on a CPU (0 once it is gone).
fn cpu_ns(tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of the measured gate: its writer thread, and its runtime's threads.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    writer_ns: u64,
    runtime_ns: u64,
}

fn measured_cpu(writer: u32) -> Result<Cpu> {
    let mut cpu = Cpu {
        writer_ns: cpu_ns(writer),
        runtime_ns: 0,
    };
    for tid in tasks()? {
        if comm(tid).starts_with(THREADS) {
            cpu.runtime_ns += cpu_ns(tid);
        }
    }
    Ok(cpu)
}

/// This process's CPU time: every thread alive now (a thread that ended takes its time
/// with it; tokio's idle blocking threads are the only ones that do here).
fn process_ns() -> u64 {
    tasks().unwrap_or_default().into_iter().map(cpu_ns).sum()
}

async fn wait_for(mut check: impl AsyncFnMut() -> Result<bool>, what: &str) -> Result<()> {
    let start = Instant::now();
    while !check().await? {
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(300),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// One point: `peers` peers around the measured gate, every node from `seed` (which holds
/// `ledger` redemptions).
async fn point(
    b: &Bench,
    seed: &Path,
    (ledger, peers, samples): (usize, usize, usize),
    perf_control: Option<&Path>,
) -> Result<Value> {
    let run = b.dir.join(format!("run-{ledger}-{peers}"));
    copy_seed(seed, &run.join(MEASURED))?;
    let rt = Runtime(Some(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(THREADS)
            .enable_all()
            .build()?,
    ));
    let rt = rt.0.as_ref().context("the measured gate's runtime")?;
    let before = tasks()?;
    let gate = Node::start(b.config(MEASURED, &run.join(MEASURED))?)?;
    // A thread names itself once it runs: look until it has.
    let mut writer = None;
    for _ in 0..1000 {
        writer = tasks()?
            .difference(&before)
            .copied()
            .find(|t| comm(*t) == "gate-writer");
        if writer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let writer = writer.context("the measured gate's writer thread")?;
    eprintln!("the measured gate's writer is thread {writer}");
    let addr = {
        let _inside = rt.enter();
        gate.start_mesh(b.mesh(MEASURED, vec![])?)?
    };
    let mut others = Vec::new();
    for i in 1..=peers {
        let name = format!("peer-{i}");
        copy_seed(seed, &run.join(&name))?;
        let mut config = b.config(&name, &run.join(&name))?;
        // Their cost is not what is measured; a killed process is the fault they survive.
        config.durability = Durability::Process;
        let node = Node::start(config)?;
        node.start_mesh(b.mesh(&name, vec![addr])?)?;
        others.push(node);
    }
    wait_for(
        async || Ok(gate.peers().len() == peers && others.iter().all(|o| o.peers().len() == 1)),
        "every peer to connect",
    )
    .await?;
    // Let the first rounds (heads compared, nothing to send) settle.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let codes = b.codes(samples)?;
    let frames = |gate: &Node| {
        gate.peers().iter().fold((0u64, 0u64, 0u64), |acc, p| {
            (
                acc.0 + p.bytes_sent,
                acc.1 + p.bytes_received,
                acc.2 + p.messages,
            )
        })
    };
    let (sent0, received0, messages0) = frames(&gate);
    let cpu0 = measured_cpu(writer)?;
    let process0 = process_ns();
    super::perf(perf_control, "enable")?;
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(samples);
    for (i, (_, code)) in codes.into_iter().enumerate() {
        let g = gate.clone();
        let t = Instant::now();
        rt.spawn(async move { g.scan(&code, "bench", Direction::Entry).await })
            .await??;
        let target = ledger + i + 1;
        for other in &others {
            wait_for(
                async || Ok(other.snapshot().await?.redemptions >= target),
                "a peer to learn an admission",
            )
            .await?;
        }
        latencies.push(t.elapsed());
    }
    // The peers' answers to the last admission.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let wall = start.elapsed();
    super::perf(perf_control, "disable")?;
    let cpu1 = measured_cpu(writer)?;
    let process1 = process_ns();
    let (sent1, received1, messages1) = frames(&gate);

    let n = samples as f64;
    let per = |ns: u64| round(ns as f64 / n / 1000.0);
    let per_peer = |x: u64| {
        if peers == 0 {
            Value::Null
        } else {
            json!((x as f64 / n / peers as f64).round())
        }
    };
    let writer_ns = cpu1.writer_ns - cpu0.writer_ns;
    let runtime_ns = cpu1.runtime_ns - cpu0.runtime_ns;
    let measured_ns = writer_ns + runtime_ns;
    let rest_ns = (process1 - process0).saturating_sub(measured_ns);
    let report = json!({
        "ledger": ledger,
        "peers": peers,
        "admissions": samples,
        "cpu_us_per_admission": per(measured_ns),
        "writer_cpu_us_per_admission": per(writer_ns),
        "runtime_cpu_us_per_admission": per(runtime_ns),
        "wire_bytes_per_admission_per_peer": {
            "sent": per_peer(sent1 - sent0),
            "received": per_peer(received1 - received0),
        },
        "messages_received_per_admission_per_peer": if peers == 0 { Value::Null } else {
            json!(round((messages1 - messages0) as f64 / n / peers as f64))
        },
        "peers_and_driver_cpu_us_per_admission_per_peer": if peers == 0 { Value::Null } else {
            json!(round(rest_ns as f64 / n / peers as f64 / 1000.0))
        },
        "admit_to_every_peer": summary(latencies),
        "wall_s": round(wall.as_secs_f64()),
    });
    eprintln!("{report}");
    for other in others {
        other.shutdown().await;
    }
    let g = gate.clone();
    rt.spawn(async move { g.shutdown().await }).await?;
    std::fs::remove_dir_all(&run).ok();
    Ok(report)
}

pub async fn run(args: &Args) -> Result<Value> {
    let dir = super::scratch_dir()?;
    let b = Bench::create(dir.clone(), "BENCH-FANOUT")?;
    let mut points = Vec::new();
    let mut catch_ups = Vec::new();
    for &ledger in &args.ledgers {
        eprintln!("a seed ledger of {ledger} redemptions…");
        let seed = b.seed(ledger).await?;
        for &peers in &args.peers {
            eprintln!("{peers} peers around a gate holding {ledger} redemptions…");
            let at = (ledger, peers, args.samples);
            points.push(point(&b, &seed, at, args.perf_control.as_deref()).await?);
        }
        if args.catch_up {
            eprintln!("a fresh gate joins one holding {ledger} redemptions…");
            catch_ups.push(catch_up(&b, &seed, ledger).await?);
        }
        std::fs::remove_dir_all(&seed).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(json!({
        "transport": "QUIC + mutual TLS on loopback; the measured gate on its own runtime and \
                      writer thread, its peers full gates in the same process",
        "cpu": "kernel accounting of the measured gate's threads (schedstat), not wall time",
        "machine": { "cores": cores() },
        "points": points,
        "catch_up": catch_ups,
    }))
}

/// A gate with an empty ledger (a laptop set up during the event) dials one that holds
/// `ledger` redemptions while its staff go on scanning: a scan of a fresh ticket every
/// [`CATCH_UP_SCAN_EVERY`] on a task of its own (so a writer busy taking the ledger in
/// shows as a slow scan, whichever request it holds up), until the gate holds the whole
/// ledger and its own scans. Reports how long that took and the scans' latencies meanwhile.
async fn catch_up(b: &Bench, seed: &Path, ledger: usize) -> Result<Value> {
    let run = b.dir.join(format!("catch-up-{ledger}"));
    copy_seed(seed, &run.join(MEASURED))?;
    let source = Node::start(b.config(MEASURED, &run.join(MEASURED))?)?;
    let addr = source.start_mesh(b.mesh(MEASURED, vec![])?)?;
    let late = Node::start(b.config("gate-late", &run.join("gate-late"))?)?;
    let codes = b.codes(20_000)?;
    let start = Instant::now();
    late.start_mesh(b.mesh("gate-late", vec![addr])?)?;
    let (done_tx, done) = tokio::sync::watch::channel(false);
    let scanned = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let scanner = {
        let (late, scanned) = (late.clone(), scanned.clone());
        tokio::spawn(async move {
            let (mut latencies, mut slowest) = (Vec::new(), Vec::new());
            for (_, code) in &codes {
                if *done.borrow() {
                    break;
                }
                let t = Instant::now();
                late.scan(code, "late", Direction::Entry).await?;
                latencies.push(t.elapsed());
                slowest.push((t.elapsed(), t.duration_since(start)));
                slowest.sort_by(|a, b| b.cmp(a));
                slowest.truncate(5);
                scanned.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(CATCH_UP_SCAN_EVERY).await;
            }
            anyhow::Ok((latencies, slowest))
        })
    };
    let mut connected = None;
    let mut caught_up = None;
    while !scanner.is_finished() {
        if connected.is_none() && !late.peers().is_empty() {
            connected = Some(start.elapsed());
        }
        // Its own scans counted after the snapshot: at least those it holds.
        let held = late.snapshot().await?.redemptions;
        if held >= ledger + scanned.load(std::sync::atomic::Ordering::SeqCst) {
            caught_up = Some(start.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = done_tx.send(true);
    let (latencies, slowest) = scanner.await??;
    let caught_up = caught_up.with_context(|| {
        format!(
            "the late gate did not catch up within {} scans",
            latencies.len()
        )
    })?;
    let wire: u64 = late
        .peers()
        .iter()
        .map(|p| p.bytes_sent + p.bytes_received)
        .sum();
    let report = json!({
        "ledger": ledger,
        "connected_ms": connected.map(|d| round(d.as_secs_f64() * 1000.0)),
        "caught_up_ms": round(caught_up.as_secs_f64() * 1000.0),
        "scans_meanwhile": summary(latencies),
        // The longest waits, and when their scans began (ms after the late gate dialled).
        "slowest_scans": slowest
            .iter()
            .map(|(took, at)| json!({
                "ms": round(took.as_secs_f64() * 1000.0),
                "at_ms": round(at.as_secs_f64() * 1000.0),
            }))
            .collect::<Vec<_>>(),
        "wire_bytes": wire,
    });
    eprintln!("{report}");
    late.shutdown().await;
    source.shutdown().await;
    std::fs::remove_dir_all(&run).ok();
    Ok(report)
}
