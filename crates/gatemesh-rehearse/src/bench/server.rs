//! `gatemesh bench server`: redemptions against a running central server over its HTTP API,
//! the way gates reach it. A fresh event, its tickets issued through the API, then concurrent
//! clients on one keep-alive connection pool post redemptions for a fixed time.
//!
//! `distinct`: every request redeems a different ticket (all should be admitted).
//! `hot`: requests come in groups on one ticket at a time, so every client races on the same
//! ticket; each ticket must end with exactly one admit. Both end by replaying a sample of
//! requests with their redemption ids: a retry must get the stored answer back.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::stats::{cores, percentile, round};

/// Most tickets one issue call may ask for (the server's limit).
const ISSUE_BATCH: usize = 10_000;
/// Every request whose sequence number is a multiple of this is kept for the replay check
/// (a prime, so hot groups are sampled at every position, first request or not).
const SAMPLE_EVERY: u64 = 97;
const REPLAYS: usize = 100;
/// Examples of failures kept in the report.
const EXAMPLES: usize = 5;

/// The running server a bench measures, and how to reach it.
#[derive(Debug, clap::Args)]
pub(super) struct Target {
    /// The server's base URL, e.g. https://127.0.0.1:8080.
    #[arg(long)]
    pub(super) url: String,
    /// The server's certificate fingerprint (sha256:HEX, as `gatemesh server` prints it):
    /// the only certificate trusted, for an https:// --url.
    #[arg(long)]
    pub(super) fingerprint: Option<gatemesh_wire::CertFingerprint>,
    /// The server's admin (organizer) token.
    #[arg(long, env = "GATEMESH_ADMIN_TOKEN", hide_env_values = true)]
    pub(super) token: String,
}

/// Redemptions per second and latency of a running `gatemesh server`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// Concurrent clients (tasks sharing one keep-alive connection pool).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Tickets issued for the run; a `distinct` run stops early when they are used up.
    #[arg(long, default_value_t = 20_000)]
    tickets: usize,
    /// How long the clients post redemptions.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// What the clients post: each ticket once (distinct) or the same tickets over and over.
    #[arg(long, value_enum, default_value_t = Mode::Distinct)]
    mode: Mode,
    /// Requests on each ticket in `hot` mode before the clients move to the next one.
    #[arg(long, default_value_t = 40)]
    hot_group: u64,
    /// Redemptions per request: above 1, each request is a gate's journal upload of this
    /// many (distinct mode only), answered item by item and committed together.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Write the results as JSON here too.
    /// Also write the report (JSON, as printed) to this file.
    #[arg(long)]
    pub(crate) report: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Each request a different ticket.
    Distinct,
    /// All clients race on one ticket at a time.
    Hot,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Distinct => "distinct",
            Mode::Hot => "hot",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Admit,
    Duplicate,
    Reject,
}

impl Verdict {
    fn parse(answer: &Value) -> Option<Self> {
        match answer.get("verdict")?.as_str()? {
            "admit" => Some(Self::Admit),
            "duplicate" => Some(Self::Duplicate),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// One request's fate: its ticket (index into the issued list) and the verdict, or the error.
struct Outcome {
    ticket: usize,
    result: Result<Verdict, String>,
}

/// A request kept for the replay check, with the answer it got.
struct Sample {
    seq: u64,
    body: Value,
    answer: Value,
}

#[derive(Default)]
struct ClientLog {
    outcomes: Vec<Outcome>,
    latencies: Vec<Duration>,
    samples: Vec<Sample>,
}

/// What every client shares.
struct Shared {
    client: reqwest::Client,
    redeem_url: String,
    token: String,
    run_id: String,
    at: String,
    tids: Vec<String>,
    mode: Mode,
    hot_group: u64,
    batch: u64,
    next: AtomicU64,
    exhausted: AtomicBool,
}

impl Shared {
    /// Posts one redemption; the answer on 200, a short description of anything else.
    async fn redeem(&self, body: &Value) -> Result<Value, String> {
        let response = self
            .client
            .post(&self.redeem_url)
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|e| format!("transport: {e}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("HTTP {}: {}", status.as_u16(), clip(&text)));
        }
        serde_json::from_str(&text)
            .map_err(|e| format!("answer is not JSON ({e}): {}", clip(&text)))
    }
}

pub(super) fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

/// Runs the server bench against `args.target`.
pub async fn run(args: &Args) -> Result<Value> {
    ensure!(args.clients >= 1, "--clients must be at least 1");
    ensure!(args.tickets >= 1, "--tickets must be at least 1");
    ensure!(
        args.batch == 1 || args.mode == Mode::Distinct,
        "--batch (journal uploads) goes with --mode distinct"
    );
    ensure!((1..=10_000).contains(&args.batch), "--batch is 1 to 10000");
    ensure!(args.hot_group >= 1, "--hot-group must be at least 1");
    let base = args.target.url.trim_end_matches('/').to_string();
    let client = gatemesh_node::edge::pinned_builder(args.target.fingerprint)?
        .pool_max_idle_per_host(args.clients)
        .timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")?;

    let health = client
        .get(format!("{base}/v1/health"))
        .send()
        .await
        .with_context(|| format!("reaching the server at {base}"))?;
    ensure!(
        health.status().is_success(),
        "{base}/v1/health answered HTTP {}",
        health.status()
    );

    let run_id = run_id();
    let event = format!("BENCH-{run_id}");
    create_event(&client, &base, &args.target.token, &event, args.tickets).await?;

    eprintln!("issuing {} tickets for {event}…", args.tickets);
    let issue_start = Instant::now();
    let mut tids = Vec::with_capacity(args.tickets);
    while tids.len() < args.tickets {
        let count = (args.tickets - tids.len()).min(ISSUE_BATCH);
        tids.extend(issue(&client, &base, &args.target.token, &event, count).await?);
    }
    let issue_secs = issue_start.elapsed().as_secs_f64();

    let shared = Arc::new(Shared {
        client: client.clone(),
        redeem_url: format!("{base}/v1/events/{event}/redemptions"),
        token: args.target.token.clone(),
        run_id,
        at: now_rfc3339(),
        tids,
        mode: args.mode,
        hot_group: args.hot_group,
        batch: args.batch,
        next: AtomicU64::new(0),
        exhausted: AtomicBool::new(false),
    });

    eprintln!(
        "{} clients posting {} redemptions for {} s…",
        args.clients,
        args.mode.name(),
        args.duration_secs
    );
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.duration_secs);
    let tasks: Vec<_> = (0..args.clients)
        .map(|c| tokio::spawn(client_loop(shared.clone(), c, deadline)))
        .collect();
    let mut logs = Vec::with_capacity(tasks.len());
    for t in tasks {
        logs.push(t.await.context("a bench client panicked")?);
    }
    let elapsed = start.elapsed().as_secs_f64();

    let mut latencies = Vec::new();
    let mut outcomes = Vec::new();
    let mut samples = Vec::new();
    for log in logs {
        latencies.extend(log.latencies);
        outcomes.extend(log.outcomes);
        samples.extend(log.samples);
    }
    let requests = outcomes.len();

    let (mut admit, mut duplicate, mut reject) = (0u64, 0u64, 0u64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut error_examples = Vec::new();
    // Per ticket: admits, answered requests, failed requests.
    let mut per_ticket = vec![(0u32, 0u32, 0u32); shared.tids.len()];
    for o in &outcomes {
        let t = &mut per_ticket[o.ticket];
        match &o.result {
            Ok(v) => {
                t.1 += 1;
                match v {
                    Verdict::Admit => {
                        admit += 1;
                        t.0 += 1;
                    }
                    Verdict::Duplicate => duplicate += 1,
                    Verdict::Reject => reject += 1,
                }
            }
            Err(e) => {
                t.2 += 1;
                let kind = e.split(':').next().unwrap_or("error").to_string();
                *errors.entry(kind).or_default() += 1;
                if error_examples.len() < EXAMPLES {
                    error_examples.push(e.clone());
                }
            }
        }
    }
    let error_count: u64 = errors.values().sum();

    let (touched, violation_ids) = one_admit_violations(args.mode, &per_ticket);
    let violation_count = violation_ids.len();
    let violations: Vec<Value> = violation_ids
        .iter()
        .take(EXAMPLES)
        .map(|&i| {
            let (admits, answered, failed) = per_ticket[i];
            json!({
                "tid": shared.tids[i], "admits": admits, "answered": answered, "failed": failed,
            })
        })
        .collect();

    eprintln!("replaying up to {REPLAYS} requests with their redemption ids…");
    samples.sort_by_key(|s| s.seq);
    let picks = samples.len().min(REPLAYS);
    let mut replayed = 0u64;
    let mut mismatches = Vec::new();
    let mut mismatch_count = 0u64;
    for s in (0..picks).filter_map(|k| samples.get(k * samples.len() / picks)) {
        replayed += 1;
        let again = shared.redeem(&s.body).await;
        let same = matches!(&again, Ok(a) if *a == s.answer);
        if !same {
            mismatch_count += 1;
            if mismatches.len() < EXAMPLES {
                mismatches.push(json!({
                    "request": s.body,
                    "first": s.answer,
                    "replay": match again { Ok(a) => a, Err(e) => Value::String(e) },
                }));
            }
        }
    }

    let ok = violation_count == 0 && mismatch_count == 0 && replayed > 0;
    let stopped_by = if shared.exhausted.load(Ordering::Relaxed) {
        "tickets"
    } else {
        "duration"
    };
    let mean = latencies.iter().map(Duration::as_secs_f64).sum::<f64>()
        / latencies.len().max(1) as f64
        * 1000.0;
    latencies.sort();
    let mut report = json!({
        "target": base,
        "event": event,
        "mode": args.mode.name(),
        "clients": args.clients,
        "machine": { "cores": cores() },
        "tickets_issued": shared.tids.len(),
        "issue_tickets_per_s": (shared.tids.len() as f64 / issue_secs.max(1e-9)).round(),
        "duration_s": round(elapsed),
        "stopped_by": stopped_by,
        "requests": requests,
        // Answered ones only: a fast failure is not throughput.
        "requests_per_s": (latencies.len() as f64 / elapsed.max(1e-9)).round(),
        "batch": args.batch,
        "redemptions_per_s": ((admit + duplicate + reject) as f64 / elapsed.max(1e-9)).round(),
        "latency_ms": {
            "n": latencies.len(),
            "mean": round(mean),
            "p50": round(percentile(&latencies, 0.50)),
            "p90": round(percentile(&latencies, 0.90)),
            "p99": round(percentile(&latencies, 0.99)),
            "max": round(percentile(&latencies, 1.0)),
        },
        "verdicts": { "admit": admit, "duplicate": duplicate, "reject": reject },
        "errors": { "count": error_count, "by_kind": errors, "examples": error_examples },
        "checks": {
            "ok": ok,
            "tickets_touched": touched,
            "one_admit_per_ticket_violations": violation_count,
            "violation_examples": violations,
            "idempotent_replays": replayed,
            "replay_mismatches": mismatch_count,
            "mismatch_examples": mismatches,
        },
    });
    if args.mode == Mode::Hot {
        report["hot_group"] = json!(args.hot_group);
    }
    Ok(report)
}

/// Per ticket (admits, answered requests, failed requests): how many tickets were asked
/// for, and which of them break the rule. Every ticket asked for ends with exactly one admit;
/// a request that failed in transit may have been that admit, so a ticket with failures and
/// no admit is not counted against the server.
fn one_admit_violations(mode: Mode, per_ticket: &[(u32, u32, u32)]) -> (u64, Vec<usize>) {
    let mut touched = 0;
    let mut wrong = Vec::new();
    for (i, &(admits, answered, failed)) in per_ticket.iter().enumerate() {
        if answered + failed == 0 {
            continue;
        }
        touched += 1;
        let bad = match mode {
            Mode::Hot => admits > 1 || (admits == 0 && failed == 0),
            // Each ticket is asked once, and it is fresh.
            Mode::Distinct => admits != 1 && failed == 0,
        };
        if bad {
            wrong.push(i);
        }
    }
    (touched, wrong)
}

/// Now, to the second, as RFC 3339: the time every redemption of the run claims.
fn now_rfc3339() -> String {
    gatemesh_wire::time::format_secs(super::unix_now())
}

/// A run-unique suffix for the event and redemption ids: the start time in base 36.
pub(super) fn run_id() -> String {
    let mut n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut out = Vec::new();
    loop {
        let d = (n % 36) as u8;
        out.push(if d < 10 { b'0' + d } else { b'a' + d - 10 });
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// Creates the bench's event `event` for `capacity` tickets.
pub(super) async fn create_event(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    event: &str,
    capacity: usize,
) -> Result<()> {
    let created = client
        .post(format!("{base}/v1/events"))
        .bearer_auth(token)
        .json(&json!({ "id": event, "name": "gatemesh bench", "capacity": capacity }))
        .send()
        .await
        .with_context(|| format!("creating the bench event at {base}"))?;
    if !created.status().is_success() {
        let status = created.status();
        let text = created.text().await.unwrap_or_default();
        bail!("creating event {event}: HTTP {status}: {}", clip(&text));
    }
    Ok(())
}

pub(super) async fn issue(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    event: &str,
    count: usize,
) -> Result<Vec<String>> {
    let response = client
        .post(format!("{base}/v1/events/{event}/tickets"))
        .bearer_auth(token)
        .json(&json!({ "count": count, "format": "gm1" }))
        .send()
        .await
        .context("issuing tickets")?;
    let status = response.status();
    let text = response
        .text()
        .await
        .context("reading the issued tickets")?;
    ensure!(
        status.is_success(),
        "issuing {count} tickets: HTTP {status}: {}",
        clip(&text)
    );
    let v: Value = serde_json::from_str(&text).context("the issue answer is not JSON")?;
    let tids: Vec<String> = v["tickets"]
        .as_array()
        .context("the issue answer has no tickets list")?
        .iter()
        .filter_map(|t| t["tid"].as_str().map(str::to_string))
        .collect();
    ensure!(
        tids.len() == count,
        "asked for {count} tickets, got {} ids",
        tids.len()
    );
    Ok(tids)
}

/// A client posting journals of `shared.batch` distinct tickets.
async fn journal_loop(shared: Arc<Shared>, client: usize, deadline: Instant) -> ClientLog {
    let mut log = ClientLog::default();
    let scanner = format!("bench-{client}");
    while Instant::now() < deadline {
        let first = shared.next.fetch_add(shared.batch, Ordering::Relaxed);
        let mut items = Vec::new();
        for seq in first..first + shared.batch {
            let Some(tid) = usize::try_from(seq).ok().and_then(|t| shared.tids.get(t)) else {
                shared.exhausted.store(true, Ordering::Relaxed);
                break;
            };
            items.push((
                seq,
                json!({
                    "redemption_id": format!("{}-{seq}", shared.run_id),
                    "tid": tid, "gate": "bench", "scanner": scanner, "at": shared.at,
                }),
            ));
        }
        if items.is_empty() {
            break;
        }
        let body =
            json!({ "redemptions": items.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>() });
        let t = Instant::now();
        let answer = shared.redeem(&body).await;
        let took = t.elapsed();
        match answer.map(|a| a["answers"].as_array().cloned().unwrap_or_default()) {
            Ok(answers) if answers.len() == items.len() => {
                log.latencies.push(took);
                for ((seq, body), answer) in items.into_iter().zip(answers) {
                    let result = Verdict::parse(&answer)
                        .ok_or_else(|| format!("no verdict: {}", clip(&answer.to_string())));
                    if seq.is_multiple_of(SAMPLE_EVERY) || seq < REPLAYS as u64 {
                        log.samples.push(Sample { seq, body, answer });
                    }
                    log.outcomes.push(Outcome {
                        ticket: seq as usize,
                        result,
                    });
                }
            }
            Ok(answers) => {
                for (seq, _) in items {
                    log.outcomes.push(Outcome {
                        ticket: seq as usize,
                        result: Err(format!("{} answers for a batch", answers.len())),
                    });
                }
            }
            Err(e) => {
                for (seq, _) in items {
                    log.outcomes.push(Outcome {
                        ticket: seq as usize,
                        result: Err(e.clone()),
                    });
                }
            }
        }
    }
    log
}

async fn client_loop(shared: Arc<Shared>, client: usize, deadline: Instant) -> ClientLog {
    if shared.batch > 1 {
        return journal_loop(shared, client, deadline).await;
    }
    let mut log = ClientLog::default();
    let scanner = format!("bench-{client}");
    while Instant::now() < deadline {
        let seq = shared.next.fetch_add(1, Ordering::Relaxed);
        let ticket = match shared.mode {
            Mode::Distinct => seq,
            Mode::Hot => seq / shared.hot_group,
        };
        let Some(tid) = usize::try_from(ticket)
            .ok()
            .and_then(|t| shared.tids.get(t).map(|tid| (t, tid)))
        else {
            shared.exhausted.store(true, Ordering::Relaxed);
            break;
        };
        let (ticket, tid) = tid;
        let body = json!({
            "redemption_id": format!("{}-{seq}", shared.run_id),
            "tid": tid,
            "gate": "bench",
            "scanner": scanner,
            "at": shared.at,
        });
        let t = Instant::now();
        let answer = shared.redeem(&body).await;
        let took = t.elapsed();
        let result = match answer {
            Ok(answer) => match Verdict::parse(&answer) {
                Some(v) => {
                    log.latencies.push(took);
                    if seq.is_multiple_of(SAMPLE_EVERY) || seq < REPLAYS as u64 {
                        log.samples.push(Sample { seq, body, answer });
                    }
                    Ok(v)
                }
                None => Err(format!("no verdict: {}", clip(&answer.to_string()))),
            },
            Err(e) => Err(e),
        };
        log.outcomes.push(Outcome { ticket, result });
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_tickets_need_exactly_one_admit() {
        let per_ticket = [
            (1, 40, 0), // fine
            (0, 0, 0),  // never asked
            (2, 40, 0), // two admits
            (0, 40, 0), // none, and every request answered
            (0, 39, 1), // none answered, but one request was lost: it may have been the admit
        ];
        assert_eq!(
            one_admit_violations(Mode::Hot, &per_ticket),
            (4, vec![2, 3])
        );
    }

    #[test]
    fn distinct_tickets_are_all_admitted() {
        let per_ticket = [(1, 1, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)];
        assert_eq!(
            one_admit_violations(Mode::Distinct, &per_ticket),
            (3, vec![1])
        );
    }
}
