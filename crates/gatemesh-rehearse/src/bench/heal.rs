//! `gatemesh bench heal`: a partition of many gates healing, in one process, without the
//! rest of a rehearsal around it (the server, the load, 32 processes): what it costs to
//! bring every gate the other side's admissions, how many changes come twice, and how the
//! scans made meanwhile are answered.
//!
//! The gates are full nodes (ledger, SQLite store, QUIC endpoint with mutual TLS on
//! loopback, static peers, no discovery), each on a tokio runtime of its own. They are
//! split into two sides (the first half and the rest); every gate admits its own tickets
//! while apart, and each side's gates hold each other's (their ledgers merged, as a side's
//! mesh would have them). Then every gate joins one mesh with every other, at once: each
//! connection is new, as after a partition long enough for QUIC to give its connections up,
//! and each gate lacks what every gate of the other side admitted. Meanwhile new tickets are
//! scanned across the gates at a steady rate, each timed until its answer. A gate has
//! healed once it holds the other side's last admissions (each gate's last one apart is
//! made after all its others, and a ledger takes a writer's changes in order).
//!
//! CPU time is the process's own (every gate and the bench's driver) from the kernel's
//! accounting, not the wall clock; per change, it is divided by the changes that had to
//! reach a gate of the other side.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use gatemesh_ledger::Direction;
use gatemesh_node::Node;
use serde_json::{Map, Value, json};

use crate::stats::{cores, round, summary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Gates, split into two sides of the partition (the first half and the rest).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(2..=64))]
    gates: u32,
    /// Admissions each gate made while the sides were apart.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    each: u64,
    /// Admissions every gate held before the partition (made at one gate, its ledger
    /// merged into every other's).
    #[arg(long, default_value_t = 0)]
    held: usize,
    /// New tickets scanned a second across the gates (one gate after another) while they
    /// heal; 0 scans none.
    #[arg(long, default_value_t = 10)]
    scans_per_s: u32,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
    /// A `perf record --control fifo:PATH -D -1` control FIFO: `enable` is written to it as
    /// the gates join and `disable` once every gate holds everything, so a profile holds
    /// the heal alone, not the set-up.
    #[arg(long)]
    perf_control: Option<std::path::PathBuf>,
}

/// The most scans timed during one heal (their tickets are signed before it starts).
const SCANS_MOST: usize = 20_000;
/// How often the bench asks every gate how much it holds.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// A heal not done in this long fails the bench.
const HEAL_MOST: Duration = Duration::from_secs(600);

use super::local::{LocalEvent as Bench, Runtime, admit_all};

impl Bench {
    fn gate_name(i: usize) -> String {
        format!("gate-{i}")
    }
}

/// Every gate's links' books and relays, summed: over the connections it has and those
/// that ended.
async fn books(nodes: &[Node]) -> Result<Value> {
    let mut sum = Map::new();
    let mut add = |prefix: &str, v: Value| {
        if let Value::Object(m) = v {
            for (k, v) in m {
                let n = v.as_u64().unwrap_or(0);
                let key = format!("{prefix}{k}");
                let was = sum.get(&key).and_then(Value::as_u64).unwrap_or(0);
                sum.insert(key, json!(was + n));
            }
        }
    };
    let mut sent_twice = 0;
    for node in nodes {
        for (_, lag) in node.peer_report().await? {
            sent_twice += lag.books.sent_twice();
            add("", serde_json::to_value(lag.books)?);
            add("relayed_by_", serde_json::to_value(lag.relayed_by)?);
        }
        let ended = node.snapshot().await?.peers_ended;
        sent_twice += ended.books.sent_twice();
        add("", serde_json::to_value(ended.books)?);
        add("relayed_by_", serde_json::to_value(ended.relayed_by)?);
    }
    sum.insert("received_twice".into(), json!(sent_twice));
    Ok(Value::Object(sum))
}

/// Scans `codes` one after another across `nodes`, one every `every`, until `stop`: each
/// one's time to its answer.
async fn scan_meanwhile(
    nodes: Vec<Node>,
    codes: Vec<(gatemesh_ticket::TicketId, String)>,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> Result<Vec<Duration>> {
    let mut latencies = Vec::new();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut asked = tokio::task::JoinSet::new();
    for (i, (_, code)) in codes.into_iter().enumerate() {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let node = nodes[i % nodes.len()].clone();
        // Each on its own: a slow answer does not hold the next scan back.
        asked.spawn(async move {
            let t = Instant::now();
            let r = node.scan(&code, "bench-heal", Direction::Entry).await?;
            anyhow::ensure!(
                r.verdict == gatemesh_ledger::Verdict::Admit,
                "a new ticket was not admitted while healing: {r:?}"
            );
            Ok::<_, anyhow::Error>(t.elapsed())
        });
    }
    while let Some(took) = asked.join_next().await {
        latencies.push(took??);
    }
    Ok(latencies)
}

pub async fn run(args: &Args) -> Result<Value> {
    let dir = super::scratch_dir()?;
    let result = heal(args, &dir).await;
    std::fs::remove_dir_all(&dir).ok();
    result
}

async fn heal(args: &Args, dir: &std::path::Path) -> Result<Value> {
    let b = Bench::create(dir.to_path_buf(), "BENCH-HEAL")?;
    let gates = args.gates as usize;
    let each = usize::try_from(args.each)?;
    let side_a = gates / 2;
    // Each gate on a runtime of its own, as each is a process of its own at a venue: on one
    // shared runtime, thirty-two writers busy with a heal starved every gate's network, and
    // connections timed out.
    let runtimes = (0..gates)
        .map(|i| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(format!("gm-heal-{i}"))
                .enable_all()
                .build()
                .map(|rt| Runtime(Some(rt)))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut nodes = Vec::with_capacity(gates);
    for (i, rt) in runtimes.iter().enumerate() {
        let name = Bench::gate_name(i);
        let _inside = rt.enter();
        nodes.push(Node::start(
            b.config(&name, &dir.join(format!("data-{name}")))?,
        )?);
    }

    if args.held > 0 {
        eprintln!("every gate holding {} admissions first…", args.held);
        admit_all(&nodes[0], b.codes(args.held)?).await?;
        let saved = nodes[0].export_ledger().await?;
        for node in &nodes[1..] {
            node.import_ledger(saved.clone()).await?;
        }
    }

    eprintln!(
        "{} gates admitting {} each, apart ({} and {} a side)…",
        gates,
        each,
        side_a,
        gates - side_a
    );
    let codes = b.codes(gates * each)?;
    // Each gate's last admission apart, made after all its others.
    let lasts: Vec<gatemesh_ticket::TicketId> = codes
        .chunks(each)
        .map(|mine| mine[mine.len() - 1].0.clone())
        .collect();
    let mut admitting = tokio::task::JoinSet::new();
    for (node, mine) in nodes.iter().zip(codes.chunks(each)) {
        let (node, mut mine) = (node.clone(), mine.to_vec());
        let last = mine.split_off(mine.len() - 1);
        admitting.spawn(async move {
            admit_all(&node, mine).await?;
            admit_all(&node, last).await
        });
    }
    while let Some(done) = admitting.join_next().await {
        done??;
    }
    // Each side's gates hold what the side admitted: merged into its first gate, and that
    // into every other.
    for side in [&nodes[..side_a], &nodes[side_a..]] {
        let (first, rest) = side.split_first().context("a side without gates")?;
        for node in rest {
            first.import_ledger(node.export_ledger().await?).await?;
        }
        let saved = first.export_ledger().await?;
        for node in rest {
            node.import_ledger(saved.clone()).await?;
        }
    }
    let diverged = args.held + gates * each;
    for (i, node) in nodes.iter().enumerate() {
        let holds = node.snapshot().await?.redemptions;
        let side = if i < side_a { side_a } else { gates - side_a };
        anyhow::ensure!(
            holds == args.held + side * each,
            "gate {i} holds {holds} before the heal"
        );
    }
    let to_move = 2 * side_a * (gates - side_a) * each;
    let scan_codes = if args.scans_per_s == 0 {
        Vec::new()
    } else {
        b.codes(SCANS_MOST.min(args.scans_per_s as usize * HEAL_MOST.as_secs() as usize))?
    };

    eprintln!("healing: every gate joins one mesh, {to_move} changes to move…");
    let cpu0 = crate::rehearse::load::cpu_time(std::process::id())?;
    super::perf(args.perf_control.as_deref(), "enable")?;
    let start = Instant::now();
    let mut addrs = Vec::with_capacity(gates);
    for (i, (node, rt)) in nodes.iter().zip(&runtimes).enumerate() {
        let name = Bench::gate_name(i);
        let _inside = rt.enter();
        addrs.push(node.start_mesh(b.mesh(&name, addrs.clone())?)?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let scanning = (!scan_codes.is_empty()).then(|| {
        tokio::spawn(scan_meanwhile(
            nodes.clone(),
            scan_codes,
            Duration::from_secs(1) / args.scans_per_s,
            stop.clone(),
        ))
    });

    // When each gate first held everything the other side admitted apart: every one of
    // that side's last admissions, each of which its writer made after all its others (a
    // ledger takes a writer's changes in order). Not by counting: the scans made meanwhile
    // count too.
    let mut lacks: Vec<Vec<&gatemesh_ticket::TicketId>> = (0..gates)
        .map(|i| {
            let other = if i < side_a { side_a..gates } else { 0..side_a };
            lasts[other].iter().collect()
        })
        .collect();
    let mut healed: Vec<Option<Duration>> = vec![None; gates];
    while healed.iter().any(Option::is_none) {
        anyhow::ensure!(
            start.elapsed() < HEAL_MOST,
            "not healed after {HEAL_MOST:?}: {healed:?}"
        );
        tokio::time::sleep(LOOK_EVERY).await;
        for (i, node) in nodes.iter().enumerate() {
            while let Some(tid) = lacks[i].last() {
                if node.ticket((*tid).clone()).await?.0.redemptions.is_empty() {
                    break;
                }
                lacks[i].pop();
            }
            if lacks[i].is_empty() && healed[i].is_none() {
                healed[i] = Some(start.elapsed());
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let latencies = match scanning {
        Some(task) => task.await??,
        None => Vec::new(),
    };
    // And the scans made meanwhile, everywhere.
    let total = diverged + latencies.len();
    loop {
        anyhow::ensure!(
            start.elapsed() < HEAL_MOST,
            "the scans made while healing did not reach every gate"
        );
        let mut held = Vec::with_capacity(gates);
        for node in &nodes {
            held.push(node.snapshot().await?.redemptions);
        }
        anyhow::ensure!(
            held.iter().all(|h| *h <= total),
            "a gate holds more than was admitted: {held:?} of {total}"
        );
        if held.iter().all(|h| *h == total) {
            break;
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
    let converged = start.elapsed();
    let cpu = crate::rehearse::load::cpu_time(std::process::id())? - cpu0;
    super::perf(args.perf_control.as_deref(), "disable")?;
    let books = books(&nodes).await?;
    for (node, rt) in nodes.into_iter().zip(&runtimes) {
        rt.spawn(async move { node.shutdown().await }).await?;
    }

    let mut healed: Vec<Duration> = healed.into_iter().flatten().collect();
    healed.sort();
    let s = |d: Duration| round(d.as_secs_f64());
    Ok(json!({
        "transport": "QUIC + mutual TLS on loopback, every gate in one process",
        "cores": cores(),
        "gates": gates,
        "sides": [side_a, gates - side_a],
        "each_admitted_apart": args.each,
        "held_before": args.held,
        "changes_to_move": to_move,
        "healed_s": {
            "first_gate": s(healed[0]),
            "median_gate": s(healed[healed.len() / 2]),
            "last_gate": s(healed[healed.len() - 1]),
        },
        "converged_with_the_scans_s": s(converged),
        "cpu_s": round(cpu.as_secs_f64()),
        "cpu_us_per_change_moved": round(cpu.as_secs_f64() * 1e6 / to_move.max(1) as f64),
        "scans_while_healing": summary(latencies),
        "links": books,
    }))
}
