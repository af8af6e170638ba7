//! What a rehearsal does while the event plays: people presenting codes at scanners, the box
//! office refunding and transferring, gates killed and restarted — and what it watches
//! meanwhile (propagation, changes reaching each gate, the uplink's backlog, flags after the
//! heal), all noted in [`Shared`] for the report.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{
    fleet::{At, Gates},
    plan::{Scan, Who},
    report, round, str_of,
};

/// Propagation samples measured at once, at most.
const MAX_PROBING: u64 = 3;
/// How often a propagation probe asks a gate.
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// How often each gate's standing watch looks again, and how many lookups it has in flight.
const STANDING_EVERY: Duration = Duration::from_millis(25);
const STANDING_LOOKS: usize = 4;
/// How soon a gate's live stream is followed again after it ended or broke.
const FOLLOW_AGAIN: Duration = Duration::from_millis(250);

/// How long after a fault propagation samples count as recovery rather than steady state.
const RECOVERY: Duration = Duration::from_secs(5);

/// What one presentation of a code got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shot {
    pub verdict: String,
    pub reason: String,
    /// The check-in list the gate decided on, if it has lists.
    pub list: Option<String>,
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
    /// What the plan says the presentation counts against (a festival's list and day).
    pub scope: Option<String>,
    /// Wall seconds since the doors opened, when the code was first sent.
    pub sent_s: f64,
    /// Event seconds since the doors opened (for the plot).
    pub event_s: f64,
    /// Time spent waiting for a gate that was down (killed and restarting).
    pub waited_ms: f64,
    pub first: Shot,
    /// The second shot of a double-firing scanner.
    pub second: Option<Shot>,
    /// For a double fire, how long the second shot waited for a gate that was down, and
    /// the time from the first shot's answer to the second's last try: the gate's two
    /// decisions were at least that far apart.
    pub second_waited_ms: f64,
    pub second_apart_ms: f64,
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
pub(super) struct Shared {
    pub(super) t0: Instant,
    speed: f64,
    pub(super) codes: Vec<(String, String)>,
    /// Each transferred ticket's new `(tid, code)` once the server answered, or `None`
    /// when the transfer failed: the new holder then has no ticket to present.
    pub(super) new_codes: Mutex<HashMap<usize, Option<(String, String)>>>,
    new_code: Notify,
    /// The box office's requests the server did not answer well (an error, or no answer
    /// within the client's 10 s on a loaded machine), each `"void <tid>: why"` or
    /// `"transfer <tid>: why"`. A transfer's new holder then has no ticket to present.
    pub(super) box_office_failed: Mutex<Vec<String>>,
    pub(super) scans: Mutex<Vec<ScanRecord>>,
    /// Wall seconds when the box office asked the server for a void / transfer (the gates
    /// may hear of it before the server's answer reaches the box office).
    pub(super) changed_at: Mutex<HashMap<usize, f64>>,
    /// Wall seconds when the server's answer to each of those requests came.
    pub(super) answered_at: Mutex<HashMap<usize, f64>>,
    /// Wall seconds when gate g first showed the ticket's new standing (its live stream's
    /// event, or the answer to the lookup that showed it) and whether the stream showed it
    /// ([`Shared::reached`]).
    reached: Mutex<HashMap<(usize, usize), (f64, bool)>>,
    /// The longest pass of any gate's standing watch, seconds: how late at most it can
    /// see a change that showed just after its lookup of the ticket.
    pub(super) standing_pass_most: Mutex<f64>,
    /// The changed tickets each gate does not show yet, and what its live stream showed.
    standings: Mutex<Standings>,
    pub(super) propagation: Mutex<Vec<Propagation>>,
    pub(super) faults: Mutex<Vec<Value>>,
    epoch: AtomicU64,
    /// Tickets staff resolved.
    pub(super) resolved: Mutex<Vec<String>>,
    /// When the last fault began or ended.
    last_fault: Mutex<Option<Instant>>,
    pub(super) done: AtomicBool,
    /// Gates currently on side B of a partition, and gates down.
    pub(super) side_b: Mutex<Vec<usize>>,
    /// Gates whose uplink is down now.
    pub(super) uplinks_down: Mutex<Vec<usize>>,
    down: Mutex<Vec<usize>>,
    admitted: AtomicU64,
    sample_every: u64,
    /// Propagation samples being measured now (each polls the other gates).
    probing: AtomicU64,
}

impl Shared {
    pub(super) fn new(codes: Vec<(String, String)>, speed: f64, attendees: usize) -> Self {
        Self {
            t0: Instant::now(),
            speed,
            codes,
            new_codes: Mutex::default(),
            new_code: Notify::new(),
            box_office_failed: Mutex::default(),
            scans: Mutex::default(),
            changed_at: Mutex::default(),
            answered_at: Mutex::default(),
            standing_pass_most: Mutex::default(),
            reached: Mutex::default(),
            standings: Mutex::default(),
            propagation: Mutex::default(),
            faults: Mutex::default(),
            epoch: AtomicU64::new(0),
            last_fault: Mutex::new(None),
            resolved: Mutex::default(),
            done: AtomicBool::new(false),
            side_b: Mutex::default(),
            uplinks_down: Mutex::default(),
            down: Mutex::default(),
            admitted: AtomicU64::new(0),
            sample_every: (attendees as u64 / 600).max(1),
            probing: AtomicU64::new(0),
        }
    }
    pub(super) fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    pub(super) fn event_now(&self) -> f64 {
        self.now() * self.speed
    }
    pub(super) fn fault(&self, what: Value) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut l) = self.last_fault.lock() {
            *l = Some(Instant::now());
        }
        if let Ok(mut f) = self.faults.lock() {
            f.push(json!({ "event_s": round(self.event_now()), "wall_s": round(self.now()), "what": what }));
        }
    }
    /// Gate `g`'s live stream says ticket `tid` is no longer active: reached now, if the
    /// rehearsal changed it; otherwise noted, for when the box office's answer comes.
    fn stream_showed(&self, g: usize, tid: &str) {
        let at = self.now();
        let Ok(mut w) = self.standings.lock() else {
            return;
        };
        let outstanding = w.outstanding.entry(g).or_default();
        match outstanding.iter().position(|(_, t)| t == tid) {
            Some(i) => {
                let (ticket, _) = outstanding.remove(i);
                drop(w);
                self.reach(ticket, g, at, true);
            }
            None => {
                w.shown.entry((g, tid.to_owned())).or_insert(at);
            }
        }
    }

    /// Ticket `ticket`'s new standing reached gate `g` at `at`, seen on its live stream or by
    /// a lookup: the earliest sighting counts (a lookup in flight may answer after the
    /// stream showed it, or before).
    fn reach(&self, ticket: usize, g: usize, at: f64, by_stream: bool) {
        if let Ok(mut r) = self.reached.lock() {
            let seen = r.entry((ticket, g)).or_insert((at, by_stream));
            if at < seen.0 {
                *seen = (at, by_stream);
            }
        }
    }

    /// Of the sightings that counted, how many a gate's live stream showed and how many a
    /// lookup did.
    pub(super) fn reached_by(&self) -> (usize, usize) {
        self.reached
            .lock()
            .map(|r| {
                let stream = r.values().filter(|(_, by_stream)| *by_stream).count();
                (stream, r.len() - stream)
            })
            .unwrap_or_default()
    }

    /// When each gate first showed each changed ticket's new standing, by (ticket, gate).
    pub(super) fn reached(&self) -> HashMap<(usize, usize), f64> {
        self.reached
            .lock()
            .map(|r| r.iter().map(|(k, (at, _))| (*k, *at)).collect())
            .unwrap_or_default()
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

/// Which gate shows which changed standing.
#[derive(Default)]
struct Standings {
    /// Per gate whose standing watch runs, the changed tickets (plan index, id) it does not
    /// show yet.
    outstanding: HashMap<usize, Vec<(usize, String)>>,
    /// What a gate's live stream showed of tickets not (yet) known as changed: when.
    shown: HashMap<(usize, String), f64>,
}

/// The tasks that act on the plan and watch its effects.
#[derive(Clone)]
pub(super) struct Watch {
    pub(super) shared: Arc<Shared>,
    pub(super) gates: Vec<At>,
    pub(super) org: At,
    pub(super) eid: String,
    /// A festival's lists, by version.
    pub(super) releases: Option<Arc<Releases>>,
}

/// The versions of a festival's lists file the organizer releases.
pub(super) struct Releases {
    pub(super) files: std::collections::BTreeMap<u64, Value>,
}

impl Releases {
    pub(super) fn file(&self, version: u64) -> anyhow::Result<Value> {
        self.files
            .get(&version)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the plan has no version {version} of the lists"))
    }
}

/// The version of the server's lists a gate checks in with now, if it checks with a release.
pub(super) async fn lists_version(gate: &At) -> Option<u64> {
    let s = gate.get("/v1/status").await.ok()?;
    let c = &s["check_in"];
    (c["source"] == "release").then(|| c["version"].as_u64())?
}

impl Watch {
    /// One holder (or friend, or refunded holder…) at a scanner.
    pub(super) async fn present(self, scan: Scan, event_s: f64) {
        let (tid, code) = if scan.who == Who::NewHolder {
            // No ticket to present when its transfer failed.
            let Some(new) = self.new_code(scan.ticket).await else {
                return;
            };
            new
        } else {
            self.shared.codes[scan.ticket].clone()
        };
        let gate = &self.gates[scan.gate];
        let scanner = format!("lane-{}", scan.lane + 1);
        let sent_s = self.shared.now();
        let sent = Instant::now();
        let (first, waited_ms) = shoot(gate, &code, &scanner).await;
        let (mut second_waited_ms, mut second_apart_ms) = (0.0, 0.0);
        let second = match scan.double_fire_ms {
            Some(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let second_sent = Instant::now();
                let (shot, waited) = shoot(gate, &code, &scanner).await;
                second_waited_ms = waited;
                let first_answered =
                    sent + Duration::from_secs_f64((waited_ms + first.latency_ms) / 1000.0);
                let second_last_try = second_sent + Duration::from_secs_f64(waited / 1000.0);
                second_apart_ms = round(
                    second_last_try
                        .saturating_duration_since(first_answered)
                        .as_secs_f64()
                        * 1000.0,
                );
                Some(shot)
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
                scope: scan.scope,
                sent_s,
                event_s,
                waited_ms,
                first,
                second,
                second_waited_ms,
                second_apart_ms,
            });
        }
    }

    /// The code the transfer of `ticket` gave its new holder, once the server answered;
    /// `None` if the transfer failed.
    async fn new_code(&self, ticket: usize) -> Option<(String, String)> {
        loop {
            let notified = self.shared.new_code.notified();
            if let Some(answer) = self
                .shared
                .new_codes
                .lock()
                .ok()
                .and_then(|m| m.get(&ticket).cloned())
            {
                return answer;
            }
            notified.await;
        }
    }

    /// Notes a request of the box office's that failed.
    fn box_office_failed(&self, what: &str, tid: &str, e: &anyhow::Error) {
        eprintln!("rehearsal: the box office's {what} of {tid} failed: {e:#}");
        if let Ok(mut f) = self.shared.box_office_failed.lock() {
            f.push(format!("{what} {tid}: {e:#}"));
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
    pub(super) async fn void(self, ticket: usize) {
        let tid = self.shared.codes[ticket].0.clone();
        let path = format!("/v1/events/{}/tickets/{tid}/void", self.eid);
        let asked = self.shared.now();
        match self
            .org
            .post(&path, json!({ "reason": "refund", "actor": "box-office" }))
            .await
        {
            Ok(_) => self.changed(ticket, tid, asked).await,
            Err(e) => self.box_office_failed("void", &tid, &e),
        }
    }

    pub(super) async fn transfer(self, ticket: usize) {
        let tid = self.shared.codes[ticket].0.clone();
        let path = format!("/v1/events/{}/tickets/{tid}/transfer", self.eid);
        let asked = self.shared.now();
        let new = match self
            .org
            .post(
                &path,
                json!({ "holder": format!("friend of {tid}"), "actor": "box-office" }),
            )
            .await
        {
            Ok(new) => new,
            Err(e) => {
                // The new holder, waiting for a code, learns there is none.
                self.box_office_failed("transfer", &tid, &e);
                if let Ok(mut m) = self.shared.new_codes.lock() {
                    m.insert(ticket, None);
                }
                self.shared.new_code.notify_waiters();
                return;
            }
        };
        if let Ok(mut m) = self.shared.new_codes.lock() {
            m.insert(ticket, Some((str_of(&new["tid"]), str_of(&new["code"]))));
        }
        self.shared.new_code.notify_waiters();
        self.changed(ticket, tid, asked).await;
    }

    /// Once the server confirmed a change of standing the box office asked for at `asked`:
    /// notes when, takes what the gates' live streams showed of it already, and hands the
    /// ticket to the standing watch of each gate that does not show it yet
    /// ([`Watch::watch_standings`]).
    async fn changed(&self, ticket: usize, tid: String, asked: f64) {
        if let Ok(mut c) = self.shared.changed_at.lock() {
            c.insert(ticket, asked);
        }
        if let Ok(mut a) = self.shared.answered_at.lock() {
            a.insert(ticket, self.shared.now());
        }
        for g in 0..self.gates.len() {
            let (first, shown) = match self.shared.standings.lock() {
                Ok(mut w) => {
                    let first = !w.outstanding.contains_key(&g);
                    let shown = w.shown.remove(&(g, tid.clone()));
                    let outstanding = w.outstanding.entry(g).or_default();
                    if shown.is_none() {
                        outstanding.push((ticket, tid.clone()));
                    }
                    (first, shown)
                }
                Err(_) => (false, None),
            };
            if let Some(at) = shown {
                self.shared.reach(ticket, g, at, true);
            }
            if first {
                tokio::spawn(self.clone().watch_standings(g));
            }
        }
    }

    /// Gate `g`'s live stream (`/v1/stream`), followed while the event plays: a ticket's new
    /// standing counts as reached when the gate's event says so, not at a lookup's pass.
    /// After a break (the gate killed, or restarting) it follows again; what it missed
    /// meanwhile, [`Watch::watch_standings`] finds by lookups.
    pub(super) async fn follow_standings(self, g: usize) {
        let shared = self.shared.clone();
        while !shared.done.load(Ordering::SeqCst) {
            let seen = shared.clone();
            let followed = self.gates[g]
                .follow("/v1/stream", move |name, data| {
                    if name != "standing" {
                        return;
                    }
                    let Ok(event) = serde_json::from_str::<Value>(data) else {
                        return;
                    };
                    let changed = event["standing"]["state"]
                        .as_str()
                        .is_some_and(|state| state != "active");
                    if let (true, Some(tid)) = (changed, event["tid"].as_str()) {
                        seen.stream_showed(g, tid);
                    }
                })
                .await;
            // Broken or ended: the lookups cover the gap (the report counts what each showed).
            let _ = followed;
            tokio::time::sleep(FOLLOW_AGAIN).await;
        }
    }

    /// Gate `g`'s standing watch: looks up every changed ticket it does not show yet, a few
    /// at a time, every [`STANDING_EVERY`], and notes when each first shows its new standing.
    /// One watch per gate with at most [`STANDING_LOOKS`] lookups in flight, however many
    /// changes are on their way: a watch per ticket and gate (every 25 ms) added load in
    /// proportion to the lag it measured — 800 refunds, 8 gates and a ten-second lag made
    /// thousands of lookups a second on the gates' writer threads, slowing the very sync
    /// being measured. The price is resolution: a change is seen within one pass over the
    /// gate's outstanding tickets.
    async fn watch_standings(self, g: usize) {
        use futures_util::{StreamExt, stream};
        let shared = self.shared.clone();
        while !shared.done.load(Ordering::SeqCst) {
            let outstanding = shared
                .standings
                .lock()
                .map(|w| w.outstanding.get(&g).cloned().unwrap_or_default())
                .unwrap_or_default();
            let gate = &self.gates[g];
            let pass = shared.now();
            let looked = !outstanding.is_empty();
            // Each ticket's time is its own lookup's answer, not the pass's end: at 32 gates
            // the 80 changes of the event's first seconds made passes of 5 s on a loaded
            // machine, and the pass's end was most of what the report called a refund's
            // way to the gate.
            let shown: Vec<(usize, f64)> = stream::iter(outstanding)
                .map(|(ticket, tid)| {
                    let shared = &shared;
                    async move {
                        let t = gate.get(&format!("/v1/tickets/{tid}")).await.ok()?;
                        let at = shared.now();
                        t["standing"]["state"]
                            .as_str()
                            .is_some_and(|s| s != "active")
                            .then_some((ticket, at))
                    }
                })
                .buffer_unordered(STANDING_LOOKS)
                .filter_map(|seen| async move { seen })
                .collect()
                .await;
            if looked && let Ok(mut most) = shared.standing_pass_most.lock() {
                *most = most.max(shared.now() - pass);
            }
            if !shown.is_empty() {
                // The stream may have shown some first: the earlier sighting counts.
                for &(ticket, at) in &shown {
                    shared.reach(ticket, g, at, false);
                }
                if let Ok(mut w) = shared.standings.lock()
                    && let Some(watch) = w.outstanding.get_mut(&g)
                {
                    watch.retain(|(ticket, _)| !shown.iter().any(|(t, _)| t == ticket));
                }
            }
            tokio::time::sleep(STANDING_EVERY).await;
        }
    }

    /// The organizer releases another version of the lists: when each gate checks in with
    /// it, and which gates had no uplink then (so that it reached them through their peers).
    pub(super) async fn release_lists(self, version: u64) -> Value {
        let no_uplink = self
            .shared
            .uplinks_down
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default();
        let path = format!("/v1/events/{}/lists", self.eid);
        let released = match &self.releases {
            Some(r) => match r.file(version) {
                Ok(file) => self.org.put(&path, file).await,
                Err(e) => Err(e),
            },
            None => Err(anyhow::anyhow!("this event has no lists")),
        };
        if let Err(e) = released {
            return json!({ "lists_release": { "version": version, "error": e.to_string() } });
        }
        // Every gate watched at once, so that each one's time is its own.
        let start = Instant::now();
        let reached: Vec<Option<f64>> =
            futures_util::future::join_all(self.gates.iter().map(|gate| async move {
                while start.elapsed() < Duration::from_secs(120) {
                    if lists_version(gate).await >= Some(version) {
                        return Some(round(start.elapsed().as_secs_f64()));
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                None
            }))
            .await;
        json!({ "lists_release": {
            "version": version,
            "reached_gate_s": reached,
            "gates_without_uplink": no_uplink,
        } })
    }

    /// SIGKILL for a gate, as a crash or a power cut would, and its restart on the same data
    /// `down` seconds later.
    pub(super) async fn kill(self, fleet: Arc<Gates>, gate: usize, down: f64) -> Value {
        let shared = self.shared;
        let killed = Instant::now();
        if let Ok(mut d) = shared.down.lock() {
            d.push(gate);
        }
        let f = fleet.clone();
        let kill = tokio::task::spawn_blocking(move || f.kill(gate)).await;
        shared.fault(json!({ "sigkill": gate }));
        tokio::time::sleep(Duration::from_secs_f64(down)).await;
        let started = Instant::now();
        let restart = tokio::task::spawn_blocking(move || fleet.start(gate)).await;
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
    }

    /// After the uplink returns: until the gate has nothing left to upload.
    pub(super) async fn reconciled(self, gate: usize) -> Value {
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

    /// After the LAN heals: until each gate flags every ticket admitted twice so far, every
    /// gate watched at once. (Watched one after another, each gate's time held the waits for
    /// the gates before it: under the heal's load a gate took up to a second to answer, and
    /// the last gates' times were the sum.)
    pub(super) async fn flagged_after_heal(self) -> Value {
        let start = Instant::now();
        let twice = report::admitted_twice(&self.shared);
        let per_gate = futures_util::future::join_all(
            self.gates.iter().map(|gate| flags_all(gate, &twice, start)),
        )
        .await;
        json!({ "flagged_after_heal": { "tickets": twice.len(), "s_per_gate": per_gate } })
    }
}

/// Seconds from `start` until `gate` flags every ticket of `twice` (`None` after 5 minutes),
/// asked every [`FLAGS_POLL`].
async fn flags_all(gate: &At, twice: &[String], start: Instant) -> Option<f64> {
    while start.elapsed() < Duration::from_secs(300) {
        if let Ok(f) = gate.get("/v1/flags").await {
            let flagged: std::collections::HashSet<String> = f["flags"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| str_of(&f["tid"]))
                .collect();
            if twice.iter().all(|t| flagged.contains(t)) {
                return Some(round(start.elapsed().as_secs_f64()));
            }
        }
        tokio::time::sleep(FLAGS_POLL).await;
    }
    None
}

/// How often each gate is asked for its flags after a heal: every gate at once, each ask
/// a command on its writer, when the writers are at their busiest.
const FLAGS_POLL: Duration = Duration::from_millis(200);

/// Sends one code to a gate and waits for the answer; a gate that is down (killed,
/// restarting) or that did not answer in time is asked again every 100 ms, as a scanner's
/// queue would, naming the presentation (the same id with each ask) so that the gate gives
/// every ask the first one's answer.
async fn shoot(gate: &At, code: &str, scanner: &str) -> (Shot, f64) {
    static PRESENTED: AtomicU64 = AtomicU64::new(0);
    let presentation = format!("p{}", PRESENTED.fetch_add(1, Ordering::Relaxed));
    let first_try = Instant::now();
    // The first ask the gate took in and did not answer in time: the answer's latency counts
    // from it (the wait before it, a gate down or restarting, is the time waited).
    let mut taken_in: Option<Instant> = None;
    loop {
        let sent = Instant::now();
        let ask = json!({ "code": code, "scanner": scanner, "presentation": presentation });
        match gate.scan(ask).await {
            Ok(v) => {
                let asked = taken_in.unwrap_or(sent);
                let shot = Shot {
                    verdict: str_of(&v["verdict"]),
                    reason: str_of(&v["reason"]),
                    list: v["list"].as_str().map(str::to_owned),
                    redemption_id: v["redemption_id"].as_str().map(str::to_owned),
                    latency_ms: round(asked.elapsed().as_secs_f64() * 1000.0),
                };
                let waited = (asked - first_try).as_secs_f64() * 1000.0;
                return (shot, round(waited));
            }
            Err(e) if first_try.elapsed() < Duration::from_secs(120) => {
                if super::fleet::timed_out(&e) {
                    taken_in.get_or_insert(sent);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                return (
                    Shot {
                        verdict: "unanswered".into(),
                        reason: e.to_string(),
                        list: None,
                        redemption_id: None,
                        latency_ms: 0.0,
                    },
                    round(first_try.elapsed().as_secs_f64() * 1000.0),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::rehearse::fleet::SCAN_TIMEOUT;

    /// A gate on loopback that answers its first scan only after the scanner gave up on it
    /// and every later one at once, each with a green answer; keeps the bodies of the scans
    /// it took in.
    async fn slow_first_gate() -> (std::net::SocketAddr, Arc<std::sync::Mutex<Vec<Value>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let asks = Arc::new(std::sync::Mutex::new(Vec::new()));
        let counted = Arc::new(AtomicUsize::new(0));
        let kept = asks.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    // The request whole: its head, then as many bytes as it says.
                    loop {
                        let Ok(k) = sock.read(&mut buf).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..k]);
                        let text = String::from_utf8_lossy(&got).to_lowercase();
                        if let Some(head) = text.find("\r\n\r\n") {
                            let length = text
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if got.len() >= head + 4 + length {
                                let body =
                                    serde_json::from_slice(&got[head + 4..]).unwrap_or(Value::Null);
                                kept.lock().unwrap().push(body);
                                break;
                            }
                        }
                    }
                    if n == 0 {
                        tokio::time::sleep(SCAN_TIMEOUT + Duration::from_secs(1)).await;
                    }
                    let body = r#"{"verdict":"admit","reason":"valid","redemption_id":"r1"}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(answer.as_bytes()).await;
                });
            }
        });
        (addr, asks)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_scan_the_gate_was_slow_to_answer_is_asked_again_and_timed_from_the_first_ask() {
        let (addr, asks) = slow_first_gate().await;
        let gate = At::new(
            tokio::runtime::Handle::current(),
            format!("http://{addr}"),
            None,
            None,
        )
        .unwrap();
        let (shot, waited) = shoot(&gate, "GM1:code", "lane-1").await;
        // The scanner gave up on its first ask and asked again, naming the presentation
        // the same; the second got the answer.
        let asks = asks.lock().unwrap().clone();
        assert_eq!(asks.len(), 2, "{asks:?}");
        assert!(asks[0]["presentation"].is_string(), "{asks:?}");
        assert_eq!(asks[0]["presentation"], asks[1]["presentation"]);
        assert_eq!(
            (shot.verdict.as_str(), shot.reason.as_str()),
            ("admit", "valid")
        );
        // The gate had the first ask all along: the holder waited from then, and that is the
        // scan's latency, not the wait before a gate that was down.
        let timeout_ms = SCAN_TIMEOUT.as_secs_f64() * 1000.0;
        assert!(shot.latency_ms >= timeout_ms, "{} ms", shot.latency_ms);
        assert!(waited < shot.latency_ms, "{waited} ms waited");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transfer_the_server_fails_leaves_its_new_holder_nothing_to_wait_for() {
        // A box office whose server is not there: the transfer fails (on a loaded machine,
        // an answer later than the client's 10 s). The new holder, whose scan the plan has
        // waiting for the transfer's code, once waited for it for good, and the rehearsal
        // never ended.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let at = || {
            At::new(
                tokio::runtime::Handle::current(),
                format!("http://{addr}"),
                None,
                None,
            )
            .unwrap()
        };
        let shared = Arc::new(Shared::new(
            vec![("T1".to_owned(), "GM1:code".to_owned())],
            1.0,
            1,
        ));
        let watch = Watch {
            shared: shared.clone(),
            gates: vec![at()],
            org: at(),
            eid: "e".to_owned(),
            releases: None,
        };
        let new_holder = || Scan {
            gate: 0,
            lane: 0,
            ticket: 0,
            who: Who::NewHolder,
            double_fire_ms: None,
            scope: None,
        };
        let holder = tokio::spawn(watch.clone().present(new_holder(), 0.0));
        tokio::time::sleep(Duration::from_millis(50)).await;
        watch.clone().transfer(0).await;
        // A guard against a hang, not a timing: the holder returns once the transfer failed.
        tokio::time::timeout(Duration::from_secs(30), holder)
            .await
            .expect("the new holder still waits")
            .unwrap();
        let failed = shared.box_office_failed.lock().unwrap().clone();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].starts_with("transfer T1:"), "{failed:?}");
        assert!(
            shared.scans.lock().unwrap().is_empty(),
            "nothing was presented"
        );
        // A holder who comes after the failure does not wait either.
        tokio::time::timeout(Duration::from_secs(30), watch.present(new_holder(), 1.0))
            .await
            .expect("a later holder waits");
    }
}
