//! `gatemesh rehearse`: a whole event played against the real parts — a `gatemesh server`
//! and N `gatemesh gate` processes paired with it — with the faults a venue has, then
//! checked end to end.
//!
//! - `plan` draws the event from a seed (arrivals, copies, refunds, transfers, faults);
//! - `net` places the processes (network namespaces when root, loopback otherwise) and
//!   makes partitions and lost uplinks;
//! - this module plays the plan in scaled time and watches what happens;
//! - `report` checks the invariants and writes the report, `plot` the chart.
//!
//! [`Rehearsal::prepare`] checks the options and picks the network and the directory;
//! [`Rehearsal::play`] returns the report ([`text`] for a person, [`svg`] for the chart).

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::{runtime::Handle, sync::Notify, task::JoinHandle};

mod net;
mod plan;
mod plot;
mod report;

pub use plot::svg;
pub use report::text;

use net::{Children, Lan, Place};
use plan::{Scan, What, Who};

/// Play a whole event against a server and N gates, with faults, and check it end to end.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Gates (entrances), each a `gatemesh gate` process paired with the server.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..=16))]
    pub gates: u16,
    /// Tickets issued; nearly every holder comes.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u32).range(100..=200_000))]
    pub attendees: u32,
    /// The same seed plays the same event.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many times faster than real time the event is played (1: real time).
    #[arg(long, default_value_t = 15.0)]
    pub speed: f64,
    /// Length of the entry window in event minutes.
    #[arg(long, default_value_t = 25.0)]
    pub minutes: f64,
    /// Write the report as JSON here, and the chart next to it (same name, `.svg`).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Keep the server's and gates' data and logs in this directory (a temporary one,
    /// removed at the end, otherwise).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// auto: network namespaces when root, loopback otherwise.
    #[arg(long, default_value = "auto", value_parser = ["auto", "netns", "loopback"])]
    pub network: String,
    /// The server's database (`postgres://…`; default: SQLite in its data directory). A
    /// PostgreSQL cluster on this machine's loopback is out of the namespaces' reach, so this
    /// plays on loopback.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// An extra argument for every `gatemesh gate` (repeat for several), for experiments:
    /// `--gate-arg=--repeat-window=0` makes double fires yellow, which the rehearsal catches.
    #[arg(long = "gate-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub gate_args: Vec<String>,
}

/// A rehearsal ready to play: options checked, network and directory chosen.
#[derive(Debug)]
pub struct Rehearsal {
    options: Options,
    netns: bool,
    dir: PathBuf,
    /// The temporary directory when none was given; removed on drop.
    _temp: Option<tempfile::TempDir>,
    /// The `gatemesh` binary the server and the gates run.
    bin: PathBuf,
}

impl Rehearsal {
    /// Checks `options`, picks namespaces or loopback and makes the directory; `gatemesh` is
    /// the binary to play with.
    pub fn prepare(options: &Options, gatemesh: PathBuf) -> Result<Self> {
        let args = options;
        anyhow::ensure!(
            args.speed.is_finite() && args.speed > 0.0,
            "--speed must be a positive number"
        );
        anyhow::ensure!(
            args.minutes.is_finite() && args.minutes >= 1.0,
            "--minutes must be at least 1"
        );
        let netns = match args.network.as_str() {
            "netns" => {
                anyhow::ensure!(
                    gatemesh_netns::available(),
                    "--network netns needs root and iproute2"
                );
                anyhow::ensure!(
                    args.db.is_none(),
                    "--db plays on loopback: the server's namespace cannot reach a database on this machine's loopback"
                );
                true
            }
            "loopback" => false,
            _ => args.db.is_none() && gatemesh_netns::available(),
        };
        let (dir, temp) = match &args.dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                (d.clone(), None)
            }
            None => {
                let temp = tempfile::tempdir()?;
                (temp.path().to_owned(), Some(temp))
            }
        };
        Ok(Self {
            options: options.clone(),
            netns,
            dir,
            _temp: temp,
            bin: gatemesh,
        })
    }

    /// Sets the venue up, plays the event, lets staff resolve the flags and checks it all;
    /// the report says whether every invariant held (`ok`). Everything it started is stopped
    /// when it returns, or when the future is dropped.
    pub async fn play(&self) -> Result<Value> {
        rehearse(&self.options, self.netns, &self.dir, &self.bin).await
    }
}

/// Propagation samples measured at once, at most.
const MAX_PROBING: u64 = 3;
/// How often a propagation probe asks a gate.
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// How long after a fault propagation samples count as recovery rather than steady state.
const RECOVERY: Duration = Duration::from_secs(5);

/// What one presentation of a code got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shot {
    pub verdict: String,
    pub reason: String,
    pub redemption_id: Option<String>,
    /// Request to answer, as the scanner saw it.
    pub latency_ms: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ScanRecord {
    pub gate: usize,
    pub ticket: usize,
    pub tid: String,
    pub who: Who,
    /// Wall seconds since the doors opened, when the code was first sent.
    pub sent_s: f64,
    /// Event seconds since the doors opened (for the plot).
    pub event_s: f64,
    /// Time spent waiting for a gate that was down (killed and restarting).
    pub waited_ms: f64,
    pub first: Shot,
    /// The second shot of a double-firing scanner.
    pub second: Option<Shot>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Propagation {
    pub from: usize,
    pub to: usize,
    pub event_s: f64,
    /// `None`: not seen within the limit.
    pub ms: Option<f64>,
    /// A fault began or ended while it was measured, or less than `RECOVERY` before.
    pub disturbed: bool,
}

/// What the rehearsal watches while it plays.
struct Shared {
    t0: Instant,
    speed: f64,
    codes: Vec<(String, String)>,
    new_codes: Mutex<HashMap<usize, (String, String)>>,
    new_code: Notify,
    scans: Mutex<Vec<ScanRecord>>,
    /// Wall seconds when the server confirmed a void / transfer.
    changed_at: Mutex<HashMap<usize, f64>>,
    /// Wall seconds when gate g first showed the ticket's new standing.
    reached: Mutex<HashMap<(usize, usize), f64>>,
    propagation: Mutex<Vec<Propagation>>,
    faults: Mutex<Vec<Value>>,
    epoch: AtomicU64,
    /// Tickets staff resolved.
    resolved: Mutex<Vec<String>>,
    /// When the last fault began or ended.
    last_fault: Mutex<Option<Instant>>,
    done: AtomicBool,
    /// Gates currently on side B of a partition, and gates down.
    side_b: Mutex<Vec<usize>>,
    down: Mutex<Vec<usize>>,
    admitted: AtomicU64,
    sample_every: u64,
    /// Propagation samples being measured now (each polls the other gates).
    probing: AtomicU64,
}

impl Shared {
    fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    fn event_now(&self) -> f64 {
        self.now() * self.speed
    }
    fn fault(&self, what: Value) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut l) = self.last_fault.lock() {
            *l = Some(Instant::now());
        }
        if let Ok(mut f) = self.faults.lock() {
            f.push(json!({ "event_s": round(self.event_now()), "wall_s": round(self.now()), "what": what }));
        }
    }
    fn connected(&self, a: usize, b: usize) -> bool {
        let apart = self
            .side_b
            .lock()
            .map(|s| s.contains(&a) != s.contains(&b))
            .unwrap_or(true);
        let down = self
            .down
            .lock()
            .map(|d| d.contains(&a) || d.contains(&b))
            .unwrap_or(true);
        !apart && !down
    }
}

pub(crate) use crate::stats::round;

/// An HTTP client acting from one place (each namespace needs its own connection pool:
/// `127.0.0.1:7070` is a different gate in each).
#[derive(Clone)]
struct At {
    handle: Handle,
    client: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl At {
    fn new(handle: Handle, base: String, token: Option<String>) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .no_proxy()
            .build()?;
        Ok(Self {
            handle,
            client,
            base,
            token,
        })
    }

    /// A request made from this place; `Err` for a transport failure or a non-2xx answer.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let this = self.clone();
        let path = path.to_owned();
        self.handle
            .spawn(async move {
                let mut req = this.client.request(method, format!("{}{path}", this.base));
                if let Some(t) = &this.token {
                    req = req.bearer_auth(t);
                }
                if let Some(b) = body {
                    req = req.json(&b);
                }
                let resp = req.send().await?;
                let status = resp.status();
                let value: Value = resp.json().await.unwrap_or(Value::Null);
                if !status.is_success() {
                    bail!("{status} for {path}: {value}");
                }
                Ok(value)
            })
            .await?
    }

    async fn get(&self, path: &str) -> Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}

/// Starts a gatemesh service and reads the one JSON line it prints when ready.
fn spawn_ready(
    mut command: std::process::Command,
    log: &Path,
) -> Result<(std::process::Child, Value)> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut line = String::new();
    let out = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let mut reader = BufReader::new(out);
    reader.read_line(&mut line)?;
    // Keep draining, so the process never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let ready = serde_json::from_str(&line).map_err(|_| {
        let _ = child.kill();
        anyhow!("{command:?} did not start (see the log next to its data): {line:?}")
    })?;
    Ok((child, ready))
}

struct Gates {
    commands: Vec<Vec<String>>,
    children: Mutex<Children>,
}

impl Gates {
    fn start(&self, lan: &Lan, bin: &Path, dir: &Path, i: usize) -> Result<()> {
        let mut cmd = lan.command(Place::Gate(i), bin);
        cmd.args(&self.commands[i]);
        let (child, _) = spawn_ready(cmd, &dir.join(format!("gate-{i}.log")))?;
        self.children
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .0
            .insert(format!("gate-{i}"), child);
        Ok(())
    }

    fn kill(&self, i: usize) -> Result<()> {
        let mut children = self.children.lock().map_err(|_| anyhow!("poisoned"))?;
        if let Some(mut c) = children.0.remove(&format!("gate-{i}")) {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }
}

async fn rehearse(args: &Options, netns: bool, dir: &Path, bin: &Path) -> Result<Value> {
    let (gates, attendees) = (usize::from(args.gates), args.attendees as usize);
    let bin = bin.to_owned();
    let plan = plan::draw(gates, attendees, args.minutes * 60.0, args.seed);
    let lan = Arc::new(Lan::new(gates, netns).await?);
    eprintln!(
        "rehearsal: {gates} gates, {attendees} attendees, {} event minutes at {}x, seed {}; {}",
        args.minutes,
        args.speed,
        args.seed,
        lan.mode()
    );
    let mut server_proc = Children::default();
    let setup = Instant::now();

    // The server, the event, its tickets.
    let mut cmd = lan.command(Place::Server, &bin);
    cmd.arg("server")
        .arg("--data")
        .arg(dir.join("server"))
        .args(["--listen", &lan.server_listen().to_string()])
        .env_remove("GATEMESH_ADMIN_TOKEN");
    if let Some(db) = &args.db {
        cmd.args(["--db", db]);
    }
    let log = dir.join("server.log");
    let (child, _) = tokio::task::spawn_blocking(move || spawn_ready(cmd, &log)).await??;
    server_proc.0.insert("server".into(), child);
    // The token the server made for itself on first start.
    let token = std::fs::read_to_string(dir.join("server/admin.token"))
        .context("reading the server's admin token")?
        .trim()
        .to_owned();
    let org = At::new(lan.handle(Place::Server), lan.server_url(), Some(token))?;
    let eid = format!("rehearsal-{}", args.seed);
    org.post(
        "/v1/events",
        json!({ "id": eid, "name": "Rehearsal", "capacity": attendees }),
    )
    .await?;
    let mut codes = Vec::with_capacity(attendees);
    while codes.len() < attendees {
        let n = (attendees - codes.len()).min(5000);
        let issued = org
            .post(
                &format!("/v1/events/{eid}/tickets"),
                json!({ "count": n, "format": "gm1" }),
            )
            .await?;
        for t in issued["tickets"].as_array().into_iter().flatten() {
            codes.push((str_of(&t["tid"]), str_of(&t["code"])));
        }
    }

    // The gates, each paired by code as a supervisor would.
    let mut commands = Vec::new();
    for i in 0..gates {
        let name = net::gate_name(i);
        let pairing = org
            .post(
                &format!("/v1/events/{eid}/devices"),
                json!({ "name": name, "role": "gate" }),
            )
            .await?;
        let paired = dir.join(format!("paired-{i}"));
        let mut cmd = lan.command(Place::Gate(i), &bin);
        cmd.args(["pair", "--server", &lan.uplink_url(i), "--code"])
            .arg(str_of(&pairing["code"]))
            .arg("--out")
            .arg(&paired);
        let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
        anyhow::ensure!(
            out.status.success(),
            "pairing gate {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = vec![
            "gate".to_owned(),
            "--paired".into(),
            path_str(&paired),
            "--data".into(),
            path_str(&dir.join(format!("gate-{i}"))),
        ];
        c.extend(lan.gate_args(i));
        c.extend(args.gate_args.iter().cloned());
        commands.push(c);
    }
    let fleet = Arc::new(Gates {
        commands,
        children: Mutex::new(Children::default()),
    });
    for i in 0..gates {
        let (fleet, lan, bin, dir) = (fleet.clone(), lan.clone(), bin.clone(), dir.to_owned());
        tokio::task::spawn_blocking(move || fleet.start(&lan, &bin, &dir, i)).await??;
    }
    let at_gate: Vec<At> = (0..gates)
        .map(|i| At::new(lan.handle(Place::Gate(i)), lan.gate_api(i), None))
        .collect::<Result<_>>()?;
    // Ready to open the doors: every gate has the manifest and sees every other.
    let ready_by = Instant::now() + Duration::from_secs(90);
    for (i, g) in at_gate.iter().enumerate() {
        loop {
            let s = g.get("/v1/status").await.unwrap_or(Value::Null);
            let connected = s["peers"]
                .as_array()
                .map_or(0, |p| p.iter().filter(|p| p["connected"] == true).count());
            if s["manifest_tickets"].as_u64() == Some(attendees as u64) && connected >= gates - 1 {
                break;
            }
            if Instant::now() > ready_by {
                bail!("gate {i} was not ready in 90 s (manifest and mesh): {s}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let setup_s = setup.elapsed().as_secs_f64();

    let shared = Arc::new(Shared {
        t0: Instant::now(),
        speed: args.speed,
        codes,
        new_codes: Mutex::default(),
        new_code: Notify::new(),
        scans: Mutex::default(),
        changed_at: Mutex::default(),
        reached: Mutex::default(),
        propagation: Mutex::default(),
        faults: Mutex::default(),
        epoch: AtomicU64::new(0),
        last_fault: Mutex::new(None),
        resolved: Mutex::default(),
        done: AtomicBool::new(false),
        side_b: Mutex::default(),
        down: Mutex::default(),
        admitted: AtomicU64::new(0),
        sample_every: (attendees as u64 / 600).max(1),
        probing: AtomicU64::new(0),
    });
    let watch = Watch {
        shared: shared.clone(),
        gates: at_gate.clone(),
        org: org.clone(),
        eid: eid.clone(),
    };
    let progress = indicatif::ProgressBar::new(plan.steps.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} event {msg} [{bar:30}] {pos}/{len} steps",
        )?
        .progress_chars("=> "),
    );
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    let mut watchers: Vec<JoinHandle<Value>> = Vec::new();
    for step in &plan.steps {
        let due = shared.t0 + Duration::from_secs_f64(step.at / args.speed);
        tokio::time::sleep_until(due.into()).await;
        progress.set_message(format!("{:>5.1}/{} min", step.at / 60.0, args.minutes));
        progress.inc(1);
        match &step.what {
            What::Scan(scan) => {
                tasks.push(tokio::spawn(watch.clone().present(scan.clone(), step.at)));
            }
            What::Void { ticket } => {
                tasks.push(tokio::spawn(watch.clone().void(*ticket)));
            }
            What::Transfer { ticket } => {
                tasks.push(tokio::spawn(watch.clone().transfer(*ticket)));
            }
            What::UplinkDown { gate } => {
                lan.uplink(*gate, false)?;
                shared.fault(json!({ "uplink_down": gate }));
            }
            What::UplinkUp { gate } => {
                lan.uplink(*gate, true)?;
                shared.fault(json!({ "uplink_up": gate }));
                watchers.push(tokio::spawn(watch.clone().reconciled(*gate)));
            }
            What::Partition { side_b } => {
                lan.partition(side_b)?;
                if let Ok(mut s) = shared.side_b.lock() {
                    *s = side_b.clone();
                }
                shared.fault(json!({ "partition": side_b }));
            }
            What::Heal => {
                lan.heal()?;
                if let Ok(mut s) = shared.side_b.lock() {
                    s.clear();
                }
                shared.fault(json!({ "heal": true }));
                watchers.push(tokio::spawn(watch.clone().flagged_after_heal()));
            }
            What::Kill { gate, down_s } => {
                let (fleet, lan, bin, dir) =
                    (fleet.clone(), lan.clone(), bin.clone(), dir.to_owned());
                let (shared, gate, down) = (shared.clone(), *gate, down_s / args.speed);
                watchers.push(tokio::spawn(async move {
                    let killed = Instant::now();
                    if let Ok(mut d) = shared.down.lock() {
                        d.push(gate);
                    }
                    let f = fleet.clone();
                    let kill = tokio::task::spawn_blocking(move || f.kill(gate)).await;
                    shared.fault(json!({ "sigkill": gate }));
                    tokio::time::sleep(Duration::from_secs_f64(down)).await;
                    let started = Instant::now();
                    let restart =
                        tokio::task::spawn_blocking(move || fleet.start(&lan, &bin, &dir, gate))
                            .await;
                    if let Ok(mut d) = shared.down.lock() {
                        d.retain(|g| *g != gate);
                    }
                    shared.fault(json!({ "restarted": gate }));
                    let ok = matches!(kill, Ok(Ok(()))) && matches!(restart, Ok(Ok(())));
                    json!({
                        "kill": {
                            "gate": gate, "ok": ok,
                            "down_s": round(killed.elapsed().as_secs_f64()),
                            "restart_to_ready_s": round(started.elapsed().as_secs_f64()),
                        }
                    })
                }));
            }
        }
    }
    // Everyone who came has been answered.
    for t in tasks {
        t.await?;
    }
    progress.finish_and_clear();
    let played_s = shared.now();
    let mut observed = Vec::new();
    for w in watchers {
        observed.push(w.await?);
    }
    eprintln!(
        "rehearsal: event played in {played_s:.1} s; waiting for every gate and the server to agree"
    );
    let converge = Instant::now();
    let agreement = converged(&org, &at_gate, &eid, &shared).await?;
    let converged_s = converge.elapsed().as_secs_f64();

    // Staff resolve every flag, at the gates in turn: accept, deny, revert.
    let flags = org.get(&format!("/v1/events/{eid}/flags")).await?;
    let flagged: Vec<String> = flags["flags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| str_of(&f["tid"]))
        .collect();
    let mut resolutions: HashMap<&str, usize> = HashMap::new();
    for (k, tid) in flagged.iter().enumerate() {
        let action = ["accept", "deny", "revert"][k % 3];
        at_gate[k % gates]
            .post(
                &format!("/v1/flags/{tid}/resolve"),
                json!({ "action": action, "staff": "Kim", "note": "rehearsal: checked at the door" }),
            )
            .await
            .with_context(|| format!("resolving the flag on {tid}"))?;
        *resolutions.entry(action).or_default() += 1;
    }
    if let Ok(mut r) = shared.resolved.lock() {
        r.extend(flagged.iter().cloned());
    }
    let resolve = Instant::now();
    let after_resolution = converged(&org, &at_gate, &eid, &shared).await?;
    let resolved_s = resolve.elapsed().as_secs_f64();
    let flags_left = org.get(&format!("/v1/events/{eid}/flags")).await?["flags"]
        .as_array()
        .map_or(0, Vec::len);
    shared.done.store(true, Ordering::SeqCst);

    let stats = org.get(&format!("/v1/events/{eid}/stats")).await?;
    let report = report::build(report::Inputs {
        args: json!({
            "gates": gates, "attendees": attendees, "seed": args.seed, "speed": args.speed,
            "minutes": args.minutes, "network": lan.mode(),
            "database": if args.db.is_some() { "postgresql" } else { "sqlite" },
        }),
        plan: &plan,
        shared: &shared,
        observed,
        agreement,
        stats,
        setup_s,
        played_s,
        converged_s,
        resolution: report::Resolution {
            flagged: flagged.len(),
            actions: resolutions
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            flags_left,
            agreement: after_resolution,
            converged_s: resolved_s,
        },
    })?;
    drop(fleet);
    drop(server_proc);
    Ok(report)
}

/// Waits (up to 3 minutes) until the server and every gate hold the same for every ticket.
async fn converged(
    org: &At,
    gates: &[At],
    eid: &str,
    shared: &Shared,
) -> Result<report::Agreement> {
    let start = Instant::now();
    loop {
        let agreement = report::agreement(org, gates, eid, shared).await?;
        if agreement.disagreements.is_empty() || start.elapsed() > Duration::from_secs(180) {
            return Ok(agreement);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The tasks that act on the plan and watch its effects.
#[derive(Clone)]
struct Watch {
    shared: Arc<Shared>,
    gates: Vec<At>,
    org: At,
    eid: String,
}

impl Watch {
    /// One holder (or friend, or refunded holder…) at a scanner.
    async fn present(self, scan: Scan, event_s: f64) {
        let (tid, code) = if scan.who == Who::NewHolder {
            self.new_code(scan.ticket).await
        } else {
            self.shared.codes[scan.ticket].clone()
        };
        let gate = &self.gates[scan.gate];
        let scanner = format!("lane-{}", scan.lane + 1);
        let sent_s = self.shared.now();
        let (first, waited_ms) = shoot(gate, &code, &scanner).await;
        let second = match scan.double_fire_ms {
            Some(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Some(shoot(gate, &code, &scanner).await.0)
            }
            None => None,
        };
        if first.verdict == "admit" {
            let n = self.shared.admitted.fetch_add(1, Ordering::Relaxed);
            // A few samples at a time: the probes read through each gate's writer thread,
            // and more of them would slow the very sync they measure.
            if n.is_multiple_of(self.shared.sample_every)
                && self.shared.probing.load(Ordering::SeqCst) < MAX_PROBING
                && let Some(id) = &first.redemption_id
            {
                self.propagation(scan.gate, &tid, id, event_s).await;
            }
        }
        if let Ok(mut s) = self.shared.scans.lock() {
            s.push(ScanRecord {
                gate: scan.gate,
                ticket: scan.ticket,
                tid,
                who: scan.who,
                sent_s,
                event_s,
                waited_ms,
                first,
                second,
            });
        }
    }

    async fn new_code(&self, ticket: usize) -> (String, String) {
        loop {
            let notified = self.shared.new_code.notified();
            if let Some(c) = self
                .shared
                .new_codes
                .lock()
                .ok()
                .and_then(|m| m.get(&ticket).cloned())
            {
                return c;
            }
            notified.await;
        }
    }

    /// How long until every gate connected to `from` knows this admission.
    async fn propagation(&self, from: usize, tid: &str, id: &str, event_s: f64) {
        let start = Instant::now();
        let epoch = self.shared.epoch.load(Ordering::SeqCst);
        // Links come back some seconds after a fault ends (QUIC's probe backoff, a redial):
        // what is measured then is recovery, not the steady state.
        let recovering = self
            .shared
            .last_fault
            .lock()
            .ok()
            .and_then(|l| *l)
            .is_some_and(|at| at.elapsed() < RECOVERY);
        self.shared.probing.fetch_add(1, Ordering::SeqCst);
        let mut probes = Vec::new();
        for to in 0..self.gates.len() {
            if to == from || !self.shared.connected(from, to) {
                continue;
            }
            let (g, tid, id, shared) = (
                self.gates[to].clone(),
                tid.to_owned(),
                id.to_owned(),
                self.shared.clone(),
            );
            probes.push(tokio::spawn(async move {
                let mut ms = None;
                while start.elapsed() < Duration::from_secs(60) {
                    if let Ok(t) = g.get(&format!("/v1/tickets/{tid}")).await
                        && t["redemptions"]
                            .as_array()
                            .is_some_and(|r| r.iter().any(|r| r["id"] == id.as_str()))
                    {
                        ms = Some(start.elapsed().as_secs_f64() * 1000.0);
                        break;
                    }
                    tokio::time::sleep(PROBE_EVERY).await;
                }
                let disturbed = recovering || shared.epoch.load(Ordering::SeqCst) != epoch;
                Propagation {
                    from,
                    to,
                    event_s,
                    ms: ms.map(round),
                    disturbed,
                }
            }));
        }
        let shared = self.shared.clone();
        tokio::spawn(async move {
            for p in probes {
                if let (Ok(p), Ok(mut all)) = (p.await, shared.propagation.lock()) {
                    all.push(p);
                }
            }
            shared.probing.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// A refund at the server, then watch it reach every gate.
    async fn void(self, ticket: usize) {
        let tid = self.shared.codes[ticket].0.clone();
        let path = format!("/v1/events/{}/tickets/{tid}/void", self.eid);
        if self
            .org
            .post(&path, json!({ "reason": "refund", "actor": "box-office" }))
            .await
            .is_ok()
        {
            self.changed(ticket, tid).await;
        }
    }

    async fn transfer(self, ticket: usize) {
        let tid = self.shared.codes[ticket].0.clone();
        let path = format!("/v1/events/{}/tickets/{tid}/transfer", self.eid);
        let Ok(new) = self
            .org
            .post(
                &path,
                json!({ "holder": format!("friend of {tid}"), "actor": "box-office" }),
            )
            .await
        else {
            return;
        };
        if let Ok(mut m) = self.shared.new_codes.lock() {
            m.insert(ticket, (str_of(&new["tid"]), str_of(&new["code"])));
        }
        self.shared.new_code.notify_waiters();
        self.changed(ticket, tid).await;
    }

    /// Records when the server confirmed a change of standing and when each gate shows it.
    async fn changed(&self, ticket: usize, tid: String) {
        let at = self.shared.now();
        if let Ok(mut c) = self.shared.changed_at.lock() {
            c.insert(ticket, at);
        }
        for (g, gate) in self.gates.iter().enumerate() {
            let (gate, tid, shared) = (gate.clone(), tid.clone(), self.shared.clone());
            tokio::spawn(async move {
                while !shared.done.load(Ordering::SeqCst) {
                    if let Ok(t) = gate.get(&format!("/v1/tickets/{tid}")).await
                        && t["standing"]["state"]
                            .as_str()
                            .is_some_and(|s| s != "active")
                    {
                        let now = shared.now();
                        if let Ok(mut r) = shared.reached.lock() {
                            r.insert((ticket, g), now);
                        }
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            });
        }
    }

    /// After the uplink returns: until the gate has nothing left to upload.
    async fn reconciled(self, gate: usize) -> Value {
        let start = Instant::now();
        let at = &self.gates[gate];
        let before = at.get("/v1/status").await.ok();
        while start.elapsed() < Duration::from_secs(300) {
            if let Ok(s) = at.get("/v1/status").await {
                let u = &s["uplink"];
                let fresh = u["last_contact_ms"].as_i64()
                    > before
                        .as_ref()
                        .and_then(|b| b["uplink"]["last_contact_ms"].as_i64());
                if fresh && u["backlog"] == 0 {
                    return json!({ "uplink_reconciled": {
                        "gate": gate,
                        "backlog_at_return": before.as_ref().map(|b| b["uplink"]["backlog"].clone()),
                        "s": round(start.elapsed().as_secs_f64()),
                    }});
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        json!({ "uplink_reconciled": { "gate": gate, "s": null } })
    }

    /// After the LAN heals: until every gate flags every ticket admitted twice so far.
    async fn flagged_after_heal(self) -> Value {
        let start = Instant::now();
        let twice = report::admitted_twice(&self.shared);
        let mut per_gate = Vec::new();
        for gate in &self.gates {
            let mut s = None;
            while start.elapsed() < Duration::from_secs(300) {
                if let Ok(f) = gate.get("/v1/flags").await {
                    let flagged: std::collections::HashSet<String> = f["flags"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| str_of(&f["tid"]))
                        .collect();
                    if twice.iter().all(|t| flagged.contains(t)) {
                        s = Some(round(start.elapsed().as_secs_f64()));
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            per_gate.push(s);
        }
        json!({ "flagged_after_heal": { "tickets": twice.len(), "s_per_gate": per_gate } })
    }
}

/// Sends one code to a gate and waits for the answer; a gate that is down (killed,
/// restarting) is tried again every 100 ms, as a scanner's queue would.
async fn shoot(gate: &At, code: &str, scanner: &str) -> (Shot, f64) {
    let first_try = Instant::now();
    loop {
        let sent = Instant::now();
        match gate
            .post("/v1/scan", json!({ "code": code, "scanner": scanner }))
            .await
        {
            Ok(v) => {
                let shot = Shot {
                    verdict: str_of(&v["verdict"]),
                    reason: str_of(&v["reason"]),
                    redemption_id: v["redemption_id"].as_str().map(str::to_owned),
                    latency_ms: round(sent.elapsed().as_secs_f64() * 1000.0),
                };
                let waited = (sent - first_try).as_secs_f64() * 1000.0;
                return (shot, round(waited));
            }
            Err(_) if first_try.elapsed() < Duration::from_secs(120) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                return (
                    Shot {
                        verdict: "unanswered".into(),
                        reason: e.to_string(),
                        redemption_id: None,
                        latency_ms: 0.0,
                    },
                    round(first_try.elapsed().as_secs_f64() * 1000.0),
                );
            }
        }
    }
}

pub(crate) fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
