//! `gatemesh rehearse`: a whole event played against the real parts — a `gatemesh server`
//! and N `gatemesh gate` processes paired with it — with the faults a venue has, then
//! checked end to end.
//!
//! - `plan` draws the event from a seed (arrivals, copies, refunds, transfers, faults);
//! - `net` places the processes (network namespaces when root, loopback otherwise) and
//!   makes partitions and lost uplinks; `fleet` starts them and talks to them;
//! - this module sets the venue up and plays the plan in scaled time, `watch` acts out each
//!   step and watches what happens;
//! - `load` samples what the event costs: each gate's CPU time, the machine's load, the
//!   gates' push queues to their peers;
//! - `report` checks the invariants and writes the report, `plot` the chart.
//!
//! [`Rehearsal::prepare`] checks the options and picks the network and the directory;
//! [`Rehearsal::play`] returns the report ([`text`] for a person, [`svg`] for the chart).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

mod fleet;
pub(crate) mod load;
mod net;
mod plan;
mod plot;
mod report;
mod watch;

pub use plan::Scenario;
pub use plot::svg;
pub use report::text;

pub(crate) use crate::stats::round;
use fleet::{At, Children, Gates, spawn_ready};
use net::{Lan, Place};
use plan::{Festival, Plan, What};
use watch::{Shared, Watch};

/// Play a whole event against a server and N gates, with faults, and check it end to end.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The kind of event: `concert` (one evening, a ticket used once at any gate) or
    /// `festival` (three days, check-in lists from the server, a VIP area with its own door).
    #[arg(long, value_enum, default_value_t = Scenario::Concert)]
    pub scenario: Scenario,
    /// Gates (entrances), each a `gatemesh gate` process paired with the server.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..=32))]
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
        let args = &self.options;
        let (gates, attendees) = (usize::from(args.gates), args.attendees as usize);
        let duration_s = args.minutes * 60.0;
        let plan = match args.scenario {
            Scenario::Concert => plan::draw(gates, attendees, duration_s, args.seed),
            Scenario::Festival => plan::festival::draw(gates, attendees, duration_s, args.seed),
        };
        let lan = Arc::new(Lan::new(gates, self.netns).await?);
        eprintln!(
            "rehearsal: {gates} gates, {attendees} attendees, {} event minutes at {}x, seed {}; {}",
            args.minutes,
            args.speed,
            args.seed,
            lan.mode()
        );
        let setup = Instant::now();
        let (server_proc, org, pin) = self.start_server(&lan).await?;
        let eid = format!("rehearsal-{}", args.seed);
        let codes = open_event(&org, &eid, attendees, plan.festival.as_ref()).await?;
        let commands = self
            .pair_gates(&lan, &org, pin, &eid, plan.festival.as_ref())
            .await?;
        let fleet = Arc::new(Gates::new(
            lan.clone(),
            self.bin.clone(),
            self.dir.clone(),
            commands,
        ));
        for i in 0..gates {
            let fleet = fleet.clone();
            tokio::task::spawn_blocking(move || fleet.start(i)).await??;
        }
        // Each gate made its API token on its first start; the rehearsal is its operator.
        let at_gate: Vec<At> = (0..gates)
            .map(|i| {
                let data = self.dir.join(format!("gate-{i}"));
                let token = gatemesh_node::api::ApiToken::load_or_create(&data)
                    .with_context(|| format!("reading gate {i}'s API token"))?;
                At::new(
                    lan.handle(Place::Gate(i)),
                    lan.gate_api(i),
                    Some(token.secret().to_owned()),
                    None,
                )
            })
            .collect::<Result<_>>()?;
        wait_until_ready(&at_gate, attendees).await?;
        // A festival's lists are released now, their days counted from the doors opening.
        let releases = match &plan.festival {
            Some(f) => Some(open_the_festival(f, &org, &at_gate, &eid, args.speed).await?),
            None => None,
        };
        let setup_s = setup.elapsed().as_secs_f64();

        let shared = Arc::new(Shared::new(codes, args.speed, attendees));
        fleet.count_cpu_from_now()?;
        let server_pid = server_proc.0.get("server").map(std::process::Child::id);
        let server_cpu_before = server_pid.and_then(|pid| load::cpu_time(pid).ok());
        let mut sampler = AbortOnDrop(tokio::spawn(load::sample(shared.clone(), at_gate.clone())));
        let watch = Watch {
            shared: shared.clone(),
            gates: at_gate.clone(),
            org: org.clone(),
            eid: eid.clone(),
            releases: releases.map(Arc::new),
        };
        // Each gate's live stream, followed from before the doors open: a refund reaches a
        // gate when it says so.
        let _followers: Vec<AbortOnDrop<()>> = (0..at_gate.len())
            .map(|g| AbortOnDrop(tokio::spawn(watch.clone().follow_standings(g))))
            .collect();
        let (played_s, observed) = self.play_plan(&plan, &lan, &fleet, &watch).await?;
        eprintln!(
            "rehearsal: event played in {played_s:.1} s; waiting for every gate and the server to agree"
        );
        let converge = Instant::now();
        let agreement = converged(&org, &at_gate, &eid, &shared).await?;
        let converged_s = converge.elapsed().as_secs_f64();
        let resolution = resolve_flags(&org, &at_gate, &eid, &shared).await?;
        shared.done.store(true, std::sync::atomic::Ordering::SeqCst);
        let seen = (&mut sampler.0).await?;
        let cpu = (0..gates)
            .map(|i| fleet.cpu(i))
            .collect::<Result<Vec<_>>>()?;
        let server_cpu = server_pid
            .and_then(|pid| load::cpu_time(pid).ok())
            .zip(server_cpu_before)
            .map(|(now, before)| now.saturating_sub(before));

        let stats = org.get(&format!("/v1/events/{eid}/stats")).await?;
        let report = report::build(report::Inputs {
            args: json!({
                "scenario": args.scenario,
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
            resolution,
            seen,
            cpu,
            server_cpu,
        })?;
        drop(fleet);
        drop(server_proc);
        Ok(report)
    }

    /// The server in its place, and the organiser's client with the token the server made
    /// for itself on first start.
    async fn start_server(
        &self,
        lan: &Lan,
    ) -> Result<(Children, At, gatemesh_wire::CertFingerprint)> {
        let mut server_proc = Children::default();
        let mut cmd = lan.command(Place::Server, &self.bin);
        cmd.arg("server")
            .arg("--data")
            .arg(self.dir.join("server"))
            .args(["--listen", &lan.server_listen().to_string()])
            .env_remove("GATEMESH_ADMIN_TOKEN");
        if lan.server_listen().ip().is_unspecified() {
            // In the namespaces every gate reaches the server at one address.
            cmd.args(["--public-url", &lan.uplink_url(0)]);
        }
        if let Some(db) = &self.options.db {
            cmd.args(["--db", db]);
        }
        let log = self.dir.join("server.log");
        let (child, ready) = tokio::task::spawn_blocking(move || spawn_ready(cmd, &log)).await??;
        server_proc.0.insert("server".into(), child);
        let pin = ready["fingerprint"]
            .as_str()
            .and_then(gatemesh_wire::CertFingerprint::parse)
            .context("the server printed no certificate fingerprint")?;
        let token = std::fs::read_to_string(self.dir.join("server/admin.token"))
            .context("reading the server's admin token")?
            .trim()
            .to_owned();
        let org = At::new(
            lan.handle(Place::Server),
            lan.server_url(),
            Some(token),
            Some(pin),
        )?;
        Ok((server_proc, org, pin))
    }

    /// Pairs every gate by link over TLS, as a supervisor would (`gatemesh pair --link` in
    /// the gate's place; the link names the address that gate reaches the server at, its
    /// proxy on loopback); returns the `gatemesh gate` arguments of each.
    async fn pair_gates(
        &self,
        lan: &Lan,
        org: &At,
        pin: gatemesh_wire::CertFingerprint,
        eid: &str,
        festival: Option<&Festival>,
    ) -> Result<Vec<Vec<String>>> {
        let dir = &self.dir;
        let mut commands = Vec::new();
        for i in 0..usize::from(self.options.gates) {
            let name = net::gate_name(i);
            let pairing = org
                .post(
                    &format!("/v1/events/{eid}/devices"),
                    json!({ "name": name, "role": "gate" }),
                )
                .await?;
            let paired = dir.join(format!("paired-{i}"));
            let mut cmd = lan.command(Place::Gate(i), &self.bin);
            let link = gatemesh_wire::PairingLink::new(
                &lan.uplink_url(i),
                &str_of(&pairing["code"]),
                Some(pin),
            )?;
            cmd.args(["pair", "--link", &link.to_string()])
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
            // A festival's gates check in with their lists, which the server releases.
            for list in festival.map(|f| f.lists_of(i)).unwrap_or_default() {
                c.extend(["--list".to_owned(), (*list).to_owned()]);
            }
            c.extend(self.options.gate_args.iter().cloned());
            commands.push(c);
        }
        Ok(commands)
    }

    /// Every step of the plan at its time; returns when everyone who came has been answered
    /// and every watcher has reported: the wall seconds the event took, and what the
    /// watchers saw.
    async fn play_plan(
        &self,
        plan: &Plan,
        lan: &Lan,
        fleet: &Arc<Gates>,
        watch: &Watch,
    ) -> Result<(f64, Vec<Value>)> {
        let (speed, shared) = (self.options.speed, &watch.shared);
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
            let due = shared.t0 + Duration::from_secs_f64(step.at / speed);
            tokio::time::sleep_until(due.into()).await;
            progress.set_message(format!(
                "{:>5.1}/{} min",
                step.at / 60.0,
                self.options.minutes
            ));
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
                What::ReleaseLists { version } => {
                    watchers.push(tokio::spawn(watch.clone().release_lists(*version)));
                }
                What::Kill { gate, down_s } => {
                    let kill = watch.clone().kill(fleet.clone(), *gate, down_s / speed);
                    watchers.push(tokio::spawn(kill));
                }
                network => watchers.extend(network_fault(network, lan, watch)?),
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
        Ok((played_s, observed))
    }
}

/// The event at the server, and its tickets' `(tid, code)`: a festival's product by product,
/// as its plan numbers them.
async fn open_event(
    org: &At,
    eid: &str,
    attendees: usize,
    festival: Option<&Festival>,
) -> Result<Vec<(String, String)>> {
    org.post(
        "/v1/events",
        json!({ "id": eid, "name": "Rehearsal", "capacity": attendees }),
    )
    .await?;
    let batches: Vec<(usize, Option<u8>)> = match festival {
        Some(f) => f.issued.iter().map(|i| (i.count, Some(i.number))).collect(),
        None => vec![(attendees, None)],
    };
    let mut codes = Vec::with_capacity(attendees);
    for (count, product) in batches {
        let mut left = count;
        while left > 0 {
            let n = left.min(5000);
            let mut body = json!({ "count": n, "format": "gm1" });
            if let Some(p) = product {
                body["product"] = json!(p.to_string());
            }
            let issued = org.post(&format!("/v1/events/{eid}/tickets"), body).await?;
            let tickets = issued["tickets"].as_array().cloned().unwrap_or_default();
            anyhow::ensure!(
                tickets.len() == n,
                "the server issued {} of {n} tickets",
                tickets.len()
            );
            for t in &tickets {
                codes.push((str_of(&t["tid"]), str_of(&t["code"])));
            }
            left -= n;
        }
    }
    Ok(codes)
}

/// Releases the festival's lists at the server, their first day starting a few seconds from
/// now, and waits until every gate checks in with them; returns each version's file. Gates
/// started with `--list` refuse every ticket until then, so the doors open (the rehearsal's
/// clock starts) only when every gate has the lists.
async fn open_the_festival(
    festival: &Festival,
    org: &At,
    at_gate: &[At],
    eid: &str,
    speed: f64,
) -> Result<watch::Releases> {
    const LEAD: Duration = Duration::from_secs(10);
    let opens = Instant::now() + LEAD;
    let t0_ms = gatemesh_wire::time::now_ms() + LEAD.as_millis() as i64;
    let day_ms = (festival.day_s * 1000.0 / speed) as i64;
    let files = (1..=2)
        .map(|v| (v, festival.lists_file(eid, t0_ms, day_ms, v)))
        .collect();
    let releases = watch::Releases { files };
    org.put(&format!("/v1/events/{eid}/lists"), releases.file(1)?)
        .await
        .context("releasing the festival's lists")?;
    for (i, g) in at_gate.iter().enumerate() {
        while watch::lists_version(g).await != Some(1) {
            anyhow::ensure!(
                Instant::now() < opens,
                "gate {i} did not take up the festival's lists in {} s",
                LEAD.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep_until(opens.into()).await;
    Ok(releases)
}

/// Ready to open the doors: every gate has the manifest and sees every other (90 s at most).
async fn wait_until_ready(at_gate: &[At], attendees: usize) -> Result<()> {
    let gates = at_gate.len();
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
    Ok(())
}

/// Makes a network fault of the plan and notes it; returns the watcher that follows the end
/// of one (the uplink's reconciliation, the flags after the heal).
fn network_fault(what: &What, lan: &Lan, watch: &Watch) -> Result<Option<JoinHandle<Value>>> {
    let shared = &watch.shared;
    Ok(match what {
        What::UplinkDown { gate } => {
            lan.uplink(*gate, false)?;
            if let Ok(mut d) = shared.uplinks_down.lock() {
                d.push(*gate);
            }
            shared.fault(json!({ "uplink_down": gate }));
            None
        }
        What::UplinkUp { gate } => {
            lan.uplink(*gate, true)?;
            if let Ok(mut d) = shared.uplinks_down.lock() {
                d.retain(|g| g != gate);
            }
            shared.fault(json!({ "uplink_up": gate }));
            Some(tokio::spawn(watch.clone().reconciled(*gate)))
        }
        What::Partition { side_b } => {
            lan.partition(side_b)?;
            if let Ok(mut s) = shared.side_b.lock() {
                *s = side_b.clone();
            }
            shared.fault(json!({ "partition": side_b }));
            None
        }
        What::Heal => {
            lan.heal()?;
            if let Ok(mut s) = shared.side_b.lock() {
                s.clear();
            }
            shared.fault(json!({ "heal": true }));
            Some(tokio::spawn(watch.clone().flagged_after_heal()))
        }
        What::Scan(_)
        | What::Void { .. }
        | What::Transfer { .. }
        | What::ReleaseLists { .. }
        | What::Kill { .. } => None,
    })
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
        let pass = Instant::now();
        let agreement = report::agreement(org, gates, eid, shared).await?;
        if agreement.disagreements.is_empty() || start.elapsed() > Duration::from_secs(180) {
            return Ok(agreement);
        }
        // What still differs, so a slow agreement says why (a gate's uplink behind, a
        // ticket one gate lacks …), and how long one look at every ticket took.
        eprintln!(
            "rehearsal: not yet agreed after {:.1} s ({} differences; this look took {:.1} s, \
             {:.1} s of it at the server, {:.1} s at the gates, {:.1} s of that the first gate \
             read whole), the first: {}",
            start.elapsed().as_secs_f64(),
            agreement.disagreements.len(),
            pass.elapsed().as_secs_f64(),
            agreement.look.0,
            agreement.look.1,
            agreement.first_gate_s,
            agreement.disagreements[0],
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Staff resolve every flag, at the gates in turn: accept, deny, revert; then everyone
/// agrees again.
async fn resolve_flags(
    org: &At,
    at_gate: &[At],
    eid: &str,
    shared: &Shared,
) -> Result<report::Resolution> {
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
        at_gate[k % at_gate.len()]
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
    let agreement = converged(org, at_gate, eid, shared).await?;
    let converged_s = resolve.elapsed().as_secs_f64();
    let flags_left = org.get(&format!("/v1/events/{eid}/flags")).await?["flags"]
        .as_array()
        .map_or(0, Vec::len);
    Ok(report::Resolution {
        flagged: flagged.len(),
        actions: resolutions
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        flags_left,
        agreement,
        converged_s,
    })
}

/// A task stopped when the rehearsal stops, however it stops.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
