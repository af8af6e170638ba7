//! `gatemesh bench voids`: a box office's burst of refunds against a running central server,
//! while gates follow the event's change stream. A fresh event and its tickets, `--streams`
//! change streams open (one per gate's uplink), then `--clients` concurrent clients void
//! `--voids` tickets as fast as they are answered. It checks as it goes that every void was
//! answered with the ticket void and that every stream showed every void.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use super::server::{Target, clip, create_event, issue, run_id};
use crate::stats::{cores, percentile, round};

/// How long the streams may take to show the last void once it was answered.
const SHOWN_WITHIN: Duration = Duration::from_secs(20);

/// A burst of voids with change streams open.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// Concurrent clients (box-office terminals; tasks sharing one keep-alive pool).
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Tickets voided, each once.
    #[arg(long, default_value_t = 1000)]
    voids: usize,
    /// Change streams open meanwhile (gates following the event).
    #[arg(long, default_value_t = 32)]
    streams: usize,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
}

/// The voided tickets one change stream showed, and whether it broke.
#[derive(Default)]
struct Seen {
    voided: HashSet<String>,
    broke: Option<String>,
}

/// Runs the voids bench against `args.target`.
pub async fn run(args: &Args) -> Result<Value> {
    ensure!(args.clients >= 1, "--clients must be at least 1");
    ensure!((1..=10_000).contains(&args.voids), "--voids is 1 to 10000");
    ensure!(args.streams <= 256, "--streams is at most 256");
    let base = args.target.url.trim_end_matches('/').to_string();
    let client = gatemesh_node::edge::pinned_builder(args.target.fingerprint)?
        .pool_max_idle_per_host(args.clients + args.streams)
        .build()
        .context("building the HTTP client")?;
    let event = format!("VOIDS-{}", run_id());
    create_event(&client, &base, &args.target.token, &event, args.voids).await?;
    let tids = Arc::new(issue(&client, &base, &args.target.token, &event, args.voids).await?);

    eprintln!("opening {} change streams…", args.streams);
    let seen: Vec<Arc<Mutex<Seen>>> = (0..args.streams).map(|_| Arc::default()).collect();
    let mut followers = Vec::new();
    for s in &seen {
        let response = client
            .get(format!("{base}/v1/events/{event}/changes"))
            .bearer_auth(&args.target.token)
            .send()
            .await
            .context("opening a change stream")?;
        ensure!(
            response.status().is_success(),
            "the change stream answered HTTP {}",
            response.status()
        );
        followers.push(tokio::spawn(follow(response, s.clone())));
    }

    eprintln!("{} clients voiding {} tickets…", args.clients, args.voids);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..args.clients)
        .map(|_| {
            let (client, base, token, event, tids, next) = (
                client.clone(),
                base.clone(),
                args.target.token.clone(),
                event.clone(),
                tids.clone(),
                next.clone(),
            );
            tokio::spawn(async move {
                let mut log: Vec<(Duration, Result<(), String>)> = Vec::new();
                while let Some(tid) = tids.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let t = Instant::now();
                    let answer = void(&client, &base, &token, &event, tid).await;
                    log.push((t.elapsed(), answer));
                }
                log
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    for t in tasks {
        for (took, answer) in t.await.context("a bench client panicked")? {
            match answer {
                Ok(()) => latencies.push(took),
                Err(e) => errors.push(e),
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();

    // Every stream shows every void, soon after the last was answered.
    let shown_by = Instant::now() + SHOWN_WITHIN;
    loop {
        let all = seen.iter().all(|s| {
            s.lock()
                .map(|s| s.voided.len() >= latencies.len() || s.broke.is_some())
                .unwrap_or(true)
        });
        if all || Instant::now() > shown_by {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shown_after_s = start.elapsed().as_secs_f64() - elapsed;
    for f in followers {
        f.abort();
    }
    let mut short = Vec::new();
    for (i, s) in seen.iter().enumerate() {
        let s = s.lock().map_err(|_| anyhow::anyhow!("a stream's tally"))?;
        if s.voided.len() != latencies.len() || s.broke.is_some() {
            short.push(json!({
                "stream": i,
                "voids_seen": s.voided.len(),
                "broke": s.broke,
            }));
        }
    }

    latencies.sort();
    let ok = errors.is_empty() && short.is_empty();
    Ok(json!({
        "target": base,
        "event": event,
        "clients": args.clients,
        "streams": args.streams,
        "machine": { "cores": cores() },
        "voids": latencies.len(),
        "duration_s": round(elapsed),
        "voids_per_s": (latencies.len() as f64 / elapsed.max(1e-9)).round(),
        "latency_ms": {
            "n": latencies.len(),
            "p50": round(percentile(&latencies, 0.50)),
            "p90": round(percentile(&latencies, 0.90)),
            "p99": round(percentile(&latencies, 0.99)),
            "max": round(percentile(&latencies, 1.0)),
        },
        "every_stream_showed_every_void_after_s": round(shown_after_s),
        "checks": {
            "ok": ok,
            "failed_voids": errors.len(),
            "failure_examples": errors.iter().take(5).collect::<Vec<_>>(),
            "streams_short": short.len(),
            "short_examples": short.iter().take(5).collect::<Vec<_>>(),
        },
    }))
}

/// Voids `tid`; `Err` with a short description unless the answer says it is void.
async fn void(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    event: &str,
    tid: &str,
) -> Result<(), String> {
    let response = client
        .post(format!("{base}/v1/events/{event}/tickets/{tid}/void"))
        .bearer_auth(token)
        .json(&json!({ "reason": "refund", "actor": "bench" }))
        .send()
        .await
        .map_err(|e| format!("transport: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("reading: {e}"))?;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !status.is_success() || v["status"] != "void" || v["tid"] != tid {
        return Err(format!("HTTP {}: {}", status.as_u16(), clip(&text)));
    }
    Ok(())
}

/// Follows one change stream, noting every ticket a `tickets` event shows void.
async fn follow(mut response: reqwest::Response, seen: Arc<Mutex<Seen>>) {
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                note_broke(&seen, "the stream ended".into());
                return;
            }
            Err(e) => {
                note_broke(&seen, e.to_string());
                return;
            }
        };
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = pending.drain(..end + 2).collect();
            let block = String::from_utf8_lossy(&block);
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            let Ok(delta) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            let Ok(mut s) = seen.lock() else { return };
            for t in delta["tickets"].as_array().into_iter().flatten() {
                if t["status"] == "void"
                    && let Some(tid) = t["tid"].as_str()
                {
                    s.voided.insert(tid.to_owned());
                }
            }
        }
    }
}

fn note_broke(seen: &Mutex<Seen>, why: String) {
    if let Ok(mut s) = seen.lock() {
        s.broke.get_or_insert(why);
    }
}
