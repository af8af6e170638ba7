//! `gatemesh bench uplink`: what the server's word costs a gate. A server (in this process,
//! SQLite by default, or on PostgreSQL) with an event of N tickets, and a gate (in this
//! process) connected to it by its uplink:
//! - the manifest in full, then after 1% of the tickets changed, the delta: bytes of each;
//! - the push latency of a void: from the organizer's request to the void being in the
//!   gate's ledger (the gate would refuse the ticket from then on), over many voids.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use gatemesh_ledger::Standing;
use gatemesh_ticket::{EventId, TicketId};
use serde_json::{Value, json};

use crate::stats::{percentile, round};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tickets in the event.
    #[arg(long, default_value_t = 100_000)]
    tickets: usize,
    /// Share of the tickets changed (voided) before the delta is taken, in percent.
    #[arg(long, default_value_t = 1.0)]
    changed_percent: f64,
    /// Voids whose push latency is measured, one after another.
    #[arg(long, default_value_t = 200)]
    voids: usize,
    /// Database for the server (default: SQLite in a temporary directory).
    #[arg(long)]
    db: Option<String>,
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
}

const TOKEN: &str = "bench-uplink-admin-token-0001";

/// Runs the uplink bench: a server and a gate in this process.
pub async fn run(args: &Args) -> Result<Value> {
    let dir = tempfile::tempdir()?;
    let db = args
        .db
        .as_deref()
        .map(gatemesh_server::Database::parse)
        .transpose()?;
    let opened = gatemesh_server::Server::open(&dir.path().join("server"), db, Some(TOKEN.into()))?;
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
    let client = gatemesh_node::edge::pinned_builder(None)?.build()?;
    let post = |path: String, body: Value| {
        let r = client
            .post(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .json(&body);
        async move {
            let r = r.send().await?;
            let status = r.status();
            let body: Value = r.json().await?;
            anyhow::ensure!(status.is_success(), "{status}: {body}");
            Ok::<Value, anyhow::Error>(body)
        }
    };
    let event = format!("UPLINK-{}", std::process::id());
    post("/v1/events".into(), json!({ "id": event, "name": "bench" })).await?;
    let mut tids: Vec<String> = Vec::with_capacity(args.tickets);
    let issue_started = Instant::now();
    while tids.len() < args.tickets {
        let n = (args.tickets - tids.len()).min(10_000);
        let issued = post(
            format!("/v1/events/{event}/tickets"),
            json!({ "count": n, "seat_prefix": "S-" }),
        )
        .await?;
        for t in issued["tickets"].as_array().context("tickets")? {
            tids.push(t["tid"].as_str().context("tid")?.to_owned());
        }
    }
    let issue_s = issue_started.elapsed().as_secs_f64();
    eprintln!("issued {} tickets in {issue_s:.1} s", tids.len());

    // Manifest, full and delta.
    let get_bytes = |path: String| {
        let r = client.get(format!("{base}{path}")).bearer_auth(TOKEN);
        async move {
            let body = r.send().await?.error_for_status()?.bytes().await?;
            Ok::<_, anyhow::Error>(body)
        }
    };
    let full = get_bytes(format!("/v1/events/{event}/manifest")).await?;
    let full_json: Value = serde_json::from_slice(&full)?;
    let cursor = full_json["cursor"].as_i64().context("cursor")?;
    let changed = ((args.tickets as f64) * args.changed_percent / 100.0).round() as usize;
    for tid in tids.iter().take(changed) {
        post(
            format!("/v1/events/{event}/tickets/{tid}/void"),
            json!({ "reason": "refund" }),
        )
        .await?;
    }
    let delta = get_bytes(format!("/v1/events/{event}/manifest?since={cursor}")).await?;
    let delta_json: Value = serde_json::from_slice(&delta)?;
    let delta_count = delta_json["tickets"].as_array().map_or(0, Vec::len);
    anyhow::ensure!(
        delta_count == changed,
        "the delta holds {delta_count} tickets, {changed} changed"
    );

    // A gate with an uplink, then voids one at a time.
    let mut config = gatemesh_node::Config::new(
        dir.path().join("gate"),
        EventId::new(&event)?,
        "bench-gate".into(),
    );
    config.durability = gatemesh_ledger::Durability::Power;
    let node = gatemesh_node::Node::start(config)?;
    node.start_uplink(gatemesh_node::UplinkConfig {
        server: base.clone(),
        token: TOKEN.into(),
        fingerprint: None,
        peer_grace: gatemesh_node::PEER_GRACE,
    })?;
    let ready = Instant::now();
    loop {
        let s = node.uplink_status().unwrap_or_default();
        if s.streaming && s.cursor.is_some() {
            break;
        }
        anyhow::ensure!(
            ready.elapsed() < Duration::from_secs(120),
            "the gate never connected: {:?}",
            s.last_error
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first_sync_s = ready.elapsed().as_secs_f64();
    let mut latencies = Vec::with_capacity(args.voids);
    for tid in tids.iter().skip(changed).take(args.voids) {
        let id = TicketId::new(tid)?;
        let started = Instant::now();
        post(
            format!("/v1/events/{event}/tickets/{tid}/void"),
            json!({ "reason": "refund" }),
        )
        .await?;
        loop {
            let (state, _) = node.ticket(id.clone()).await?;
            if matches!(state.standing(), Standing::Void { .. }) {
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(30),
                "a void never reached the gate"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        latencies.push(started.elapsed());
    }
    latencies.sort();
    node.shutdown().await;
    let _ = stop.send(());
    let _ = server.await;
    let ms = |p: f64| round(percentile(&latencies, p));
    Ok(json!({
        "bench": "uplink",
        "database": if args.db.is_some() { "postgres" } else { "sqlite" },
        "tickets": args.tickets,
        "issue_seconds": round(issue_s),
        "manifest": {
            "full_bytes": full.len(),
            "changed_tickets": changed,
            "delta_bytes": delta.len(),
            "delta_over_full": round(delta.len() as f64 / full.len() as f64),
        },
        "gate_first_sync_seconds": round(first_sync_s),
        "void_push_ms": {
            "n": latencies.len(), "p50": ms(0.5), "p90": ms(0.9), "p99": ms(0.99), "max": ms(1.0),
        },
        "note": "void push = organizer's POST …/void until the void is in the gate's ledger (polled every 1 ms); server and gate in one process on loopback",
    }))
}
