//! The rehearsal's verdict: the invariants, checked against what every scanner was told and
//! what the server and every gate hold at the end, and the numbers the event produced.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    fmt::Write,
};

use anyhow::Result;
use futures_util::{StreamExt, stream};
use serde_json::{Value, json};

use super::{
    At,
    load::{Cpu, Seen},
    plan::{Plan, Who},
    round, str_of,
    watch::{Propagation, ScanRecord, Shared},
};

/// The published production report we measure ourselves against (SPEC: performance).
const PUBLISHED: &str = "3,000 seats, 4 scanners, 25 minutes; scan to result 120 ms average, 180 ms p95; 500 people/hour/scanner";

/// One ticket as the server holds it at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub entries: HashSet<String>,
    pub flagged: bool,
    pub standing: String,
    /// Staff's last word on a flag (`accept`, `deny`, `revert`), if any.
    pub resolution: String,
}

/// Whether the server and every gate hold the same thing for every ticket.
#[derive(Debug, Default)]
pub struct Agreement {
    pub disagreements: Vec<String>,
    pub server: HashMap<String, Held>,
    pub tickets: usize,
    /// Per gate whose uplink skipped items in its current life (what the server would not
    /// take from it, what it could not read: each one shown to its staff), how many and
    /// the last; in a rehearsal every one is a fault.
    pub skipped: Vec<(usize, u64, String)>,
    /// In the first gate's audit trail: the tickets whose standing was written, and the
    /// standings written in all (each gate that writes one writes its audit line): how many
    /// gates wrote each refund or transfer.
    pub standing_writes: (usize, usize),
    /// How long this look took to read the server, then the gates (s).
    pub look: (f64, f64),
    /// Of the gates' part, the first gate read whole (s).
    pub first_gate_s: f64,
    /// Gates besides the first whose ledgers were read whole (their digest was not the first
    /// gate's).
    pub read_whole: usize,
}

impl Agreement {
    fn to_json(&self) -> Value {
        let (tickets, writes) = self.standing_writes;
        json!({
            "tickets_checked": self.tickets,
            "disagreements": self.disagreements.iter().take(20).collect::<Vec<_>>(),
            "disagreement_count": self.disagreements.len(),
            "uplink_items_skipped": self.skipped_total(),
            "standing_writes": { "tickets": tickets, "writes": writes },
            "look_s": {
                "server": round(self.look.0),
                "gates": round(self.look.1),
                "of_it_the_first_gate_read_whole": round(self.first_gate_s),
            },
            "gates_read_whole": self.read_whole + 1,
        })
    }

    /// Compares what gate `g` holds (`view`, its records' view `held`: its own, or the first
    /// gate's when it holds the same records) with the server, for every ticket `tids`.
    fn compare(
        &mut self,
        g: usize,
        view: &GateView,
        held: Option<&HashMap<String, Held>>,
        tids: &[String],
    ) {
        if view.backlog != 0 {
            self.disagreements.push(format!(
                "gate {g}: {} redemptions not yet uploaded",
                view.backlog
            ));
        }
        if let Some((skipped, last)) = &view.skipped {
            self.skipped.push((g, *skipped, last.clone()));
        }
        if let Some(writes) = view.standing_writes {
            self.standing_writes = writes;
        }
        // Compared in place: a copy of both sides of every ticket for every gate was 3.8
        // million sets copied at the stadium.
        let none = Held::default();
        for tid in tids {
            let server = self.server.get(tid).unwrap_or(&none);
            let at_gate = held.and_then(|h| h.get(tid)).unwrap_or(&none);
            let flagged = view.flags.contains(tid);
            // A ticket no standing was written for is active at a gate.
            let standing = match at_gate.standing.as_str() {
                "" => "active",
                written => written,
            };
            let same = server.entries == at_gate.entries
                && server.flagged == flagged
                && server.standing == standing
                && server.resolution == at_gate.resolution;
            if !same {
                self.disagreements.push(format!(
                    "{tid}: server {} entries, flagged {}, {} {}; gate {g} {} entries, flagged {}, {} {}",
                    server.entries.len(),
                    server.flagged,
                    server.standing,
                    server.resolution,
                    at_gate.entries.len(),
                    flagged,
                    standing,
                    at_gate.resolution
                ));
            }
        }
    }

    /// Items the gates' uplinks skipped, all together.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.iter().map(|(_, n, _)| n).sum()
    }

    /// Each gate that skipped items, and the last one it skipped.
    fn skipped_details(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(g, n, last)| format!("gate {g}: {n} skipped, the last: {last}"))
            .collect()
    }
}

/// Every ticket ever issued in this rehearsal (transfers included).
fn all_tids(shared: &Shared) -> Vec<String> {
    let mut tids: Vec<String> = shared.codes.iter().map(|(t, _)| t.clone()).collect();
    if let Ok(m) = shared.new_codes.lock() {
        tids.extend(m.values().flatten().map(|(t, _)| t.clone()));
    }
    tids
}

/// Compares the server's view of every ticket with every gate's ledger.
pub(super) async fn agreement(
    org: &At,
    gates: &[At],
    eid: &str,
    shared: &Shared,
) -> Result<Agreement> {
    let mut out = Agreement::default();
    let tids = all_tids(shared);
    out.tickets = tids.len();
    // The server's listing, a thousand tickets a page (a read of each ticket was 60,000
    // requests at the stadium).
    let started = std::time::Instant::now();
    let mut path = format!("/v1/events/{eid}/tickets?limit=1000");
    loop {
        let page: ServerPage = org.get_as(&path).await?;
        for t in page.tickets {
            out.server.insert(t.tid.clone(), Held::from(t));
        }
        match page.next {
            Some(next) => path = format!("/v1/events/{eid}/tickets?limit=1000&after={next}"),
            None => break,
        }
    }
    out.look.0 = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    // Tickets whose standing or resolutions the export does not show: read one by one.
    let mut detailed: Vec<String> = out
        .server
        .iter()
        .filter(|(_, h)| h.standing != "active")
        .map(|(t, _)| t.clone())
        .collect();
    if let Ok(r) = shared.resolved.lock() {
        detailed.extend(r.iter().cloned());
    }
    // Gate 0 is read whole. A gate whose ledger digest is gate 0's holds the same records (the
    // same changes), so what it holds of each ticket is read at gate 0; its flags (kept as
    // changes come, apart from the records) and its uplink are read at every gate. (Reading
    // every gate whole was 2.2 s of a 2.3 s look at 32 gates and 10,000 attendees, once the
    // server was read by its listing.)
    let Some(first) = gates.first() else {
        return Ok(out);
    };
    let reference = gate_view(first, &detailed, true, None).await?;
    out.first_gate_s = started.elapsed().as_secs_f64();
    out.compare(0, &reference, reference.held.as_ref(), &tids);
    // The others side by side (one after another, a look at 32 gates took 11 s on two busy
    // cores). Each compared as it comes (in order), so at most eight are held at once: at
    // 60,000 redemptions a gate's view read whole is ~12 MB.
    let (detailed, digest) = (&detailed, reference.digest.as_str());
    let mut views = stream::iter(gates.iter().enumerate().skip(1))
        .map(|(g, gate)| async move {
            let view = gate_view(gate, detailed, false, Some(digest)).await;
            (g, view)
        })
        .buffered(8);
    while let Some((g, view)) = views.next().await {
        let view = view?;
        let held = view.held.as_ref().or(reference.held.as_ref());
        out.compare(g, &view, held, &tids);
        if view.held.is_some() {
            out.read_whole += 1;
        }
    }
    out.look.1 = started.elapsed().as_secs_f64();
    Ok(out)
}

/// A page of the server's listing (`GET /v1/events/{eid}/tickets`).
#[derive(serde::Deserialize)]
struct ServerPage {
    tickets: Vec<ServerTicket>,
    #[serde(default)]
    next: Option<String>,
}

/// What [`agreement`] reads of a ticket at the server, and nothing else of it.
#[derive(serde::Deserialize)]
struct ServerTicket {
    tid: String,
    #[serde(default)]
    admissions: Vec<ServerAdmission>,
    #[serde(default)]
    flagged: bool,
    #[serde(default)]
    status: Value,
    #[serde(default)]
    resolution: Option<ServerResolution>,
}

#[derive(serde::Deserialize)]
struct ServerAdmission {
    #[serde(default)]
    redemption_id: Value,
}

#[derive(serde::Deserialize)]
struct ServerResolution {
    #[serde(default)]
    action: Value,
}

impl From<ServerTicket> for Held {
    fn from(t: ServerTicket) -> Self {
        Held {
            entries: t
                .admissions
                .iter()
                .map(|a| str_of(&a.redemption_id))
                .collect(),
            flagged: t.flagged,
            standing: str_of(&t.status),
            resolution: t.resolution.map(|r| str_of(&r.action)).unwrap_or_default(),
        }
    }
}

/// What [`gate_view`] reads of a gate's export (`GET /v1/export`): of each redemption its
/// direction, ticket and id, of each audit line its action and ticket.
#[derive(serde::Deserialize)]
struct GateExport {
    #[serde(default)]
    redemptions: Vec<ExportedRedemption>,
    #[serde(default)]
    audit: Vec<ExportedAudit>,
}

#[derive(serde::Deserialize)]
struct ExportedRedemption {
    #[serde(default)]
    direction: Value,
    #[serde(default)]
    tid: Value,
    #[serde(default)]
    id: Value,
}

#[derive(serde::Deserialize)]
struct ExportedAudit {
    #[serde(default)]
    action: Value,
    #[serde(default)]
    tid: Value,
}

/// What one gate holds at the end, as [`agreement`] compares it with the server.
struct GateView {
    /// Redemptions its uplink has not uploaded yet.
    backlog: u64,
    /// Items its uplink skipped in its current life, and the last, if any.
    skipped: Option<(u64, String)>,
    /// The standing writes of its audit trail ([`Agreement::standing_writes`]), when asked.
    standing_writes: Option<(usize, usize)>,
    /// Its ledger's digest; empty when it read whole and its ledger changed while it was.
    digest: String,
    /// The tickets it shows flagged.
    flags: HashSet<String>,
    /// Per ticket it holds anything of, its entries, standing and last resolution (not its
    /// flag); `None` when its digest was the one given ([`gate_view`]).
    held: Option<HashMap<String, Held>>,
}

/// Reads what `gate` holds: its flags, its uplink, and unless its ledger's digest is `same`
/// (a gate read whole already holds the same records), its entries and the standing and
/// resolutions of the tickets `detailed`; its audit trail's standing writes when `audit`.
async fn gate_view(
    gate: &At,
    detailed: &[String],
    audit: bool,
    same: Option<&str>,
) -> Result<GateView> {
    let status = gate.get("/v1/status").await?;
    let backlog = status["uplink"]["backlog"].as_u64().unwrap_or(u64::MAX);
    let skipped = status["uplink"]["skipped"].as_u64().unwrap_or(0);
    let skipped = (skipped > 0).then(|| (skipped, str_of(&status["uplink"]["last_skipped"])));
    let digest = str_of(&status["ledger_digest"]);
    let flags = gate.get("/v1/flags").await?;
    let flags = flags["flags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| str_of(&f["tid"]))
        .collect();
    if same.is_some_and(|d| d == digest && !digest.is_empty()) {
        return Ok(GateView {
            backlog,
            skipped,
            standing_writes: None,
            digest,
            flags,
            held: None,
        });
    }
    let export: GateExport = gate.get_as("/v1/export").await?;
    let standing_writes = audit.then(|| {
        let mut written: HashMap<String, usize> = HashMap::new();
        for a in &export.audit {
            if a.action.as_str().is_some_and(|x| x.starts_with("status:")) {
                *written.entry(str_of(&a.tid)).or_default() += 1;
            }
        }
        (written.len(), written.values().sum())
    });
    let mut held: HashMap<String, Held> = HashMap::new();
    for r in &export.redemptions {
        if r.direction == "entry" {
            held.entry(str_of(&r.tid))
                .or_default()
                .entries
                .insert(str_of(&r.id));
        }
    }
    drop(export);
    let tickets: Vec<(&String, Result<Value>)> = stream::iter(detailed)
        .map(|tid| async move { (tid, gate.get(&format!("/v1/tickets/{tid}")).await) })
        .buffer_unordered(8)
        .collect()
        .await;
    for (tid, t) in tickets {
        let t = t?;
        let h = held.entry(tid.clone()).or_default();
        h.standing = str_of(&t["standing"]["state"]);
        let resolutions = t["resolutions"].as_array().cloned().unwrap_or_default();
        let reverted: HashSet<String> = resolutions
            .iter()
            .filter(|r| r["action"] == "revert")
            .flat_map(|r| r["covers"].as_array().cloned().unwrap_or_default())
            .map(|id| str_of(&id))
            .collect();
        h.entries.retain(|id| !reverted.contains(id));
        h.resolution = resolutions
            .last()
            .map(|r| str_of(&r["action"]))
            .unwrap_or_default();
    }
    // The digest stands for what was read only if nothing came meanwhile.
    let after = gate.get("/v1/status").await?;
    let digest = if str_of(&after["ledger_digest"]) == digest {
        digest
    } else {
        String::new()
    };
    Ok(GateView {
        backlog,
        skipped,
        standing_writes,
        digest,
        flags,
        held: Some(held),
    })
}

/// Tickets admitted more than once (distinct redemptions) in one scope so far: what the
/// gates must flag.
pub(super) fn admitted_twice(shared: &Shared) -> Vec<String> {
    let Ok(scans) = shared.scans.lock() else {
        return Vec::new();
    };
    twice_in_a_scope(&scans).into_iter().collect()
}

/// Tickets a scanner was told were admitted twice (distinct redemptions) on one list in one
/// window, as the plan places them (an event without lists has one scope).
fn twice_in_a_scope(scans: &[ScanRecord]) -> BTreeSet<String> {
    let mut ids: HashMap<(&str, Option<&str>), HashSet<&str>> = HashMap::new();
    for s in scans {
        for shot in std::iter::once(&s.first).chain(&s.second) {
            if let (true, Some(id)) = (shot.verdict == "admit", &shot.redemption_id) {
                ids.entry((&s.tid, s.scope.as_deref()))
                    .or_default()
                    .insert(id);
            }
        }
    }
    ids.into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|((tid, _), _)| tid.to_owned())
        .collect()
}

/// Per ticket, every admission (redemption id) a scanner was told of.
fn admissions_told(scans: &[ScanRecord]) -> HashMap<&str, HashSet<&str>> {
    let mut ids: HashMap<&str, HashSet<&str>> = HashMap::new();
    for s in scans {
        for shot in std::iter::once(&s.first).chain(&s.second) {
            if let (true, Some(id)) = (shot.verdict == "admit", &shot.redemption_id) {
                ids.entry(&s.tid).or_default().insert(id);
            }
        }
    }
    ids
}

/// Count, mean and percentiles of milliseconds, as every gatemesh bench reports them.
fn percentiles(ms: Vec<f64>) -> Value {
    crate::stats::summary(
        ms.into_iter()
            .map(|m| std::time::Duration::from_secs_f64(m.max(0.0) / 1000.0))
            .collect(),
    )
}

/// Staff's resolution of every flag after the event, and what followed.
#[derive(Debug)]
pub(super) struct Resolution {
    pub flagged: usize,
    pub actions: BTreeMap<String, usize>,
    pub flags_left: usize,
    pub agreement: Agreement,
    pub converged_s: f64,
}

pub(super) struct Inputs<'a> {
    pub args: Value,
    pub plan: &'a Plan,
    pub shared: &'a Shared,
    pub observed: Vec<Value>,
    pub agreement: Agreement,
    pub stats: Value,
    pub setup_s: f64,
    pub played_s: f64,
    pub converged_s: f64,
    pub resolution: Resolution,
    /// What the sampler saw while the event played: load, push queues, redemptions held.
    pub seen: Seen,
    /// Each gate's CPU time from the doors opening to the end (`None`: not readable).
    pub cpu: Vec<Option<Cpu>>,
    /// The server's CPU time over the same span (`None`: not readable).
    pub server_cpu: Option<std::time::Duration>,
}

/// The report: the invariants, then the numbers.
pub(super) fn build(i: Inputs<'_>) -> Result<Value> {
    let shared = i.shared;
    let scans = snapshot(&shared.scans)?;
    let reached = shared.reached();
    let changed_at = snapshot(&shared.changed_at)?;
    let findings = Findings::of(&scans, &reached, &i.agreement, i.plan);
    let pass_most_ms = crate::stats::round(snapshot(&shared.standing_pass_most)? * 1000.0);
    let push_ms: Vec<f64> = reached
        .iter()
        .filter_map(|((ticket, _), at)| changed_at.get(ticket).map(|c| (at - c) * 1000.0))
        .collect();
    let mut void_and_transfer = percentiles(push_ms);
    void_and_transfer["watch_pass_most_ms"] = json!(pass_most_ms);
    let answered_at = snapshot(&shared.answered_at)?;
    let answered: Vec<f64> = answered_at
        .iter()
        .filter_map(|(ticket, at)| changed_at.get(ticket).map(|c| (at - c) * 1000.0))
        .collect();
    void_and_transfer["server_answered"] = percentiles(answered);
    // From the server's answer on: what the mesh took, apart from the server (on this
    // machine it shares the cores with every gate). A gate that showed it before the answer
    // reached the box office counts 0.
    let after_answer: Vec<f64> = reached
        .iter()
        .filter_map(|((ticket, _), at)| answered_at.get(ticket).map(|a| (at - a).max(0.0) * 1000.0))
        .collect();
    void_and_transfer["after_the_answer"] = percentiles(after_answer);
    let (by_stream, by_lookup) = shared.reached_by();
    void_and_transfer["seen_on_live_stream"] = json!(by_stream);
    void_and_transfer["seen_by_lookup"] = json!(by_lookup);
    void_and_transfer["box_office_failed"] = json!(snapshot(&shared.box_office_failed)?);

    // Latency and throughput.
    let answered: Vec<&ScanRecord> = scans
        .iter()
        .filter(|s| s.first.verdict != "unanswered")
        .collect();
    let latency = percentiles(answered.iter().map(|s| s.first.latency_ms).collect());
    let (mut per_gate, series) = per_gate(&answered, i.plan);
    let admitted: Vec<usize> = per_gate
        .iter()
        .map(|g| g["admitted"].as_u64().unwrap_or(0) as usize)
        .collect();
    let (cost_per_gate, cost) = super::load::report(&i.seen, &i.cpu, &admitted);
    let admitted_all: usize = admitted.iter().sum();
    let server_cpu = i.server_cpu.map(|t| {
        json!({
            "s": round(t.as_secs_f64()),
            "ms_per_admission": (admitted_all > 0)
                .then(|| round(t.as_secs_f64() * 1000.0 / admitted_all as f64)),
        })
    });
    for (g, c) in per_gate.iter_mut().zip(cost_per_gate) {
        if let (Some(g), Value::Object(c)) = (g.as_object_mut(), c) {
            g.extend(c);
        }
    }
    let propagation = snapshot(&shared.propagation)?;

    let mut invariants = findings.invariants(&i.agreement, &i.resolution);
    let mut observed = json!({});
    for o in i.observed {
        if let (Some(obj), Value::Object(m)) = (observed.as_object_mut(), o) {
            obj.extend(m);
        }
    }
    if i.plan.festival.is_some() {
        // The lists changed mid-event reach every gate, those without an uplink through
        // their peers.
        let release = &observed["lists_release"];
        let missed: Vec<String> = match release["reached_gate_s"].as_array() {
            Some(gates) => gates
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_number())
                .map(|(g, _)| format!("gate {g}"))
                .collect(),
            None => vec![format!("the release failed: {}", release["error"])],
        };
        invariants.push(inv(
            "gates_the_changed_lists_did_not_reach",
            missed.len(),
            0,
            &missed,
        ));
    }
    let ok = invariants.iter().all(|v| v["ok"] == true);
    let faults = snapshot(&shared.faults)?;
    let (copies, changed) = (&findings.copies, &findings.changed);
    Ok(json!({
        "ok": ok,
        "config": i.args,
        "plan": i.plan,
        "invariants": invariants,
        "counts": {
            "presentations": scans.len(),
            "admitted": answered.iter().filter(|s| s.first.verdict == "admit").count(),
            "copies": copies.copies,
            "copies_caught_at_the_gate": copies.caught,
            "copies_admitted_then_flagged": copies.flagged,
            "copies_where_the_first_gate_could_be_reached": copies.reachable,
            "of_them_caught_at_the_gate": copies.reachable_caught,
            "double_fires": findings.double_fires,
            "double_fires_past_the_window_after_a_restart": findings.double_fires_past_the_window,
            "void_or_transferred_presented": changed.refused + changed.before_reach + changed.after_reach.len(),
            "void_or_transferred_refused": changed.refused,
            "void_or_transferred_admitted_before_it_reached_the_gate": changed.before_reach,
            "wrong_day_presented": findings.lists.wrong_day.0,
            "wrong_day_refused_not_valid_now": findings.lists.wrong_day.1,
            "wrong_door_presented": findings.lists.wrong_door.0,
            "wrong_door_refused_not_on_list": findings.lists.wrong_door.1,
            "server": i.stats,
        },
        "scan_to_result": latency,
        "per_gate": per_gate,
        "admissions_per_minute": series,
        "propagation": propagation_summary(&propagation),
        "void_and_transfer_push": void_and_transfer,
        "faults": faults,
        "observed": observed,
        "timing": {
            "setup_s": round(i.setup_s),
            "played_s": round(i.played_s),
            "converged_after_s": round(i.converged_s),
        },
        "machine": cost["machine"],
        "gate_cpu": cost["gate_cpu"],
        "server_cpu": server_cpu,
        "gate_memory": cost["gate_memory"],
        "push_queues": cost["push_queues"],
        "agreement": i.agreement.to_json(),
        "staff_resolution": {
            "flagged": i.resolution.flagged,
            "actions": i.resolution.actions,
            "flags_left": i.resolution.flags_left,
            "agreed_after_s": round(i.resolution.converged_s),
            "agreement": i.resolution.agreement.to_json(),
        },
        "published": PUBLISHED,
    }))
}

/// A copy of what a mutex holds now.
fn snapshot<T: Clone>(m: &std::sync::Mutex<T>) -> Result<T> {
    Ok(m.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.clone())
}

/// What every scanner was told, held against what the server holds at the end.
struct Findings {
    copies: Copies,
    unanswered: usize,
    double_fires: usize,
    /// Double fires whose second shot waited for the gate to come back from a crash until
    /// the repeat window had passed: the gate rightly took it as the code held up again.
    double_fires_past_the_window: usize,
    /// Double fires whose second shot got another answer than the first.
    double_mismatch: Vec<String>,
    admissions: Admissions,
    changed: Changed,
    lists: ListsFindings,
}

/// What the check-in lists decided (an event with lists).
#[derive(Default)]
struct ListsFindings {
    /// Presentations the lists must refuse (wrong day, wrong door), and those they refused
    /// for that reason.
    wrong_day: (usize, usize),
    wrong_door: (usize, usize),
    /// Refused for another reason than the one expected, or admitted.
    not_refused_as_expected: Vec<String>,
    /// A holder's (or copy's) presentation refused by the lists although one of the gate's
    /// lists takes the ticket then.
    refused_by_a_list_that_admits_it: Vec<String>,
    /// Flagged at the server, though no ticket was admitted twice in one scope.
    flagged_without_two_entries_in_a_scope: Vec<String>,
}

impl ListsFindings {
    fn of(scans: &[ScanRecord], agreement: &Agreement) -> Self {
        let mut out = Self::default();
        for s in scans {
            match s.who.refused_for() {
                Some(reason) => {
                    let tally = if s.who == Who::WrongDay {
                        &mut out.wrong_day
                    } else {
                        &mut out.wrong_door
                    };
                    tally.0 += 1;
                    if s.first.verdict == "reject" && s.first.reason == reason {
                        tally.1 += 1;
                    } else {
                        out.not_refused_as_expected.push(format!(
                            "{} ({:?} at gate {}): {} {}, not reject {reason}",
                            s.tid, s.who, s.gate, s.first.verdict, s.first.reason
                        ));
                    }
                }
                None if s.scope.is_some()
                    && matches!(s.first.reason.as_str(), "not_on_list" | "not_valid_now") =>
                {
                    out.refused_by_a_list_that_admits_it.push(format!(
                        "{} ({:?} at gate {}, {}): {}",
                        s.tid,
                        s.who,
                        s.gate,
                        s.scope.as_deref().unwrap_or_default(),
                        s.first.reason
                    ));
                }
                None => {}
            }
        }
        let twice = twice_in_a_scope(scans);
        out.flagged_without_two_entries_in_a_scope = agreement
            .server
            .iter()
            .filter(|(tid, h)| h.flagged && !twice.contains(*tid))
            .map(|(tid, _)| tid.clone())
            .collect();
        out.flagged_without_two_entries_in_a_scope.sort();
        out
    }
}

/// The codes of tickets presented by people entitled to them (holders, friends with a
/// screenshot, new holders after a transfer).
struct Copies {
    /// The first genuine presentation of a ticket was not admitted.
    false_rejects: Vec<String>,
    /// Presentations after the first.
    copies: usize,
    caught: usize,
    /// Admitted, and the ticket ends flagged everywhere.
    flagged: usize,
    /// Neither caught nor flagged.
    missed: Vec<String>,
    /// Copies shown at a gate that the partition did not keep from the first admission's
    /// gate at any time between the two (`Copies::reachable`), and of them those caught.
    reachable: usize,
    reachable_caught: usize,
}

/// Admissions scanners were told of, against the ones the server holds.
struct Admissions {
    /// Told of, and not held by the server.
    lost: Vec<String>,
    server_entries: usize,
    told: usize,
}

/// Refunded and transferred-away codes presented at a gate.
struct Changed {
    /// Admitted although the change had reached that gate: a broken promise.
    after_reach: Vec<String>,
    /// Admitted before the change reached the gate (offline is offline).
    before_reach: usize,
    refused: usize,
}

impl Findings {
    fn of(
        scans: &[ScanRecord],
        reached: &HashMap<(usize, usize), f64>,
        agreement: &Agreement,
        plan: &Plan,
    ) -> Self {
        // A second shot that waited out a gate's restart past the repeat window is decided
        // as the code held up again (yellow), not as the scanner firing twice.
        let window_ms = gatemesh_ledger::Policy::default().repeat_window_ms as f64;
        let past_window =
            |s: &ScanRecord| s.second_waited_ms > 0.0 && s.second_apart_ms > window_ms;
        let double_fired: Vec<_> = scans
            .iter()
            .filter(|s| s.second.is_some() && !past_window(s))
            .collect();
        let double_mismatch: Vec<String> = double_fired
            .iter()
            .filter_map(|s| {
                let second = s.second.as_ref()?;
                let same = second.verdict == s.first.verdict
                    && (s.first.verdict != "admit"
                        || second.redemption_id == s.first.redemption_id);
                (!same).then(|| format!("{}: {} then {}", s.tid, s.first.verdict, second.verdict))
            })
            .collect();
        Self {
            copies: Copies::of(scans, agreement, plan),
            unanswered: scans
                .iter()
                .filter(|s| s.first.verdict == "unanswered")
                .count(),
            double_fires: double_fired.len(),
            double_fires_past_the_window: scans
                .iter()
                .filter(|s| s.second.is_some() && past_window(s))
                .count(),
            double_mismatch,
            admissions: Admissions::of(scans, &agreement.server),
            changed: Changed::of(scans, reached),
            lists: ListsFindings::of(scans, agreement),
        }
    }

    fn invariants(&self, agreement: &Agreement, resolution: &Resolution) -> Vec<Value> {
        let (copies, changed, admissions) = (&self.copies, &self.changed, &self.admissions);
        vec![
            inv(
                "false_rejects",
                copies.false_rejects.len(),
                0,
                &copies.false_rejects,
            ),
            inv("unanswered_scans", self.unanswered, 0, &[]),
            inv(
                "lost_admissions",
                admissions.lost.len(),
                0,
                &admissions.lost,
            ),
            inv(
                "copies_not_caught_or_flagged",
                copies.missed.len(),
                0,
                &copies.missed,
            ),
            inv(
                "void_or_transferred_admitted_after_it_reached_the_gate",
                changed.after_reach.len(),
                0,
                &changed.after_reach,
            ),
            inv(
                "double_fires_answered_differently",
                self.double_mismatch.len(),
                0,
                &self.double_mismatch,
            ),
            inv(
                "server_and_gates_disagree",
                agreement.disagreements.len(),
                0,
                &agreement.disagreements,
            ),
            inv(
                "flags_left_after_staff_resolved_them",
                resolution.flags_left,
                0,
                &[],
            ),
            inv(
                "server_and_gates_disagree_after_staff_resolved_the_flags",
                resolution.agreement.disagreements.len(),
                0,
                &resolution.agreement.disagreements,
            ),
            inv(
                "uplink_items_skipped",
                usize::try_from(resolution.agreement.skipped_total()).unwrap_or(usize::MAX),
                0,
                &resolution.agreement.skipped_details(),
            ),
            inv(
                "server_admissions_minus_admissions_scanners_saw",
                admissions.server_entries.abs_diff(admissions.told),
                0,
                &[],
            ),
            inv(
                "refused_by_a_list_that_admits_it",
                self.lists.refused_by_a_list_that_admits_it.len(),
                0,
                &self.lists.refused_by_a_list_that_admits_it,
            ),
            inv(
                "wrong_day_or_door_not_refused_for_it",
                self.lists.not_refused_as_expected.len(),
                0,
                &self.lists.not_refused_as_expected,
            ),
            inv(
                "flagged_without_two_entries_on_one_list_in_one_window",
                self.lists.flagged_without_two_entries_in_a_scope.len(),
                0,
                &self.lists.flagged_without_two_entries_in_a_scope,
            ),
        ]
    }
}

impl Copies {
    /// Per ticket, its genuine presentations in the order they happened: the first must be
    /// admitted, each later one caught at the gate or admitted and then flagged everywhere.
    fn of(scans: &[ScanRecord], agreement: &Agreement, plan: &Plan) -> Self {
        let flagged_everywhere = |tid: &str| {
            agreement.server.get(tid).is_some_and(|h| h.flagged)
                && agreement.disagreements.is_empty()
        };
        // A ticket is used once per scope (once per list and day at a festival): each scope's
        // presentations are a story of their own.
        let mut by_tid: BTreeMap<(&str, Option<&str>), Vec<&ScanRecord>> = BTreeMap::new();
        for s in scans.iter().filter(|s| s.who.refused_for().is_none()) {
            by_tid
                .entry((&s.tid, s.scope.as_deref()))
                .or_default()
                .push(s);
        }
        for v in by_tid.values_mut() {
            v.sort_by(|a, b| a.sent_s.total_cmp(&b.sent_s));
        }
        let legit = |w: Who| matches!(w, Who::Holder | Who::Friend | Who::NewHolder);
        let mut out = Self {
            false_rejects: Vec::new(),
            copies: 0,
            caught: 0,
            flagged: 0,
            missed: Vec::new(),
            reachable: 0,
            reachable_caught: 0,
        };
        for (&(tid, _), presented) in &by_tid {
            let mut genuine: Vec<&ScanRecord> =
                presented.iter().copied().filter(|s| legit(s.who)).collect();
            // Presentations that overlapped (one sent while an earlier one still waited for
            // its answer) reached their gates in either order: when the first sent was
            // turned away and one sent meanwhile was admitted, that one came first.
            if let Some(first) = genuine.first()
                && first.first.verdict != "admit"
            {
                let answered = first.sent_s + (first.waited_ms + first.first.latency_ms) / 1000.0;
                if let Some(i) = genuine
                    .iter()
                    .position(|s| s.sent_s < answered && s.first.verdict == "admit")
                {
                    let admitted = genuine.remove(i);
                    genuine.insert(0, admitted);
                }
            }
            let mut genuine = genuine.into_iter();
            let first = genuine.next();
            if let Some(first) = first
                && first.first.verdict != "admit"
            {
                out.false_rejects.push(format!(
                    "{tid} ({:?} at gate {}): {} {}",
                    first.who, first.gate, first.first.verdict, first.first.reason
                ));
            }
            for copy in genuine {
                out.copies += 1;
                let reachable = first.is_some_and(|f| Self::reachable(plan, f, copy));
                out.reachable += usize::from(reachable);
                match copy.first.verdict.as_str() {
                    "duplicate" => {
                        out.caught += 1;
                        out.reachable_caught += usize::from(reachable);
                    }
                    "admit" if flagged_everywhere(tid) => out.flagged += 1,
                    _ => out.missed.push(format!(
                        "{tid}: copy at gate {} got {} and the ticket is not flagged everywhere",
                        copy.gate, copy.first.verdict
                    )),
                }
            }
        }
        out
    }
}

impl Copies {
    /// Whether the gate a copy was shown at could hear of the first admission all along: the
    /// two gates are on one side of the partition, or the partition did not stand at any
    /// moment from the first admission to the copy. Copies across it are admitted by design
    /// (and flagged once it heals), so they do not count against the gate-to-gate catch rate.
    fn reachable(plan: &Plan, first: &ScanRecord, copy: &ScanRecord) -> bool {
        let (p0, p1) = plan.faults.partition;
        let side = |gate: usize| plan.faults.side_b.contains(&gate);
        side(first.gate) == side(copy.gate) || first.event_s >= p1 || copy.event_s < p0
    }
}

impl Admissions {
    /// Every admission any scanner was told of is held by the server (and, by the
    /// agreement, by every gate).
    fn of(scans: &[ScanRecord], server: &HashMap<String, Held>) -> Self {
        let told = admissions_told(scans);
        let lost: Vec<String> = told
            .iter()
            .flat_map(|(tid, ids)| {
                ids.iter()
                    .filter(|id| !server.get(*tid).is_some_and(|h| h.entries.contains(**id)))
                    .map(move |id| format!("{tid}: {id}"))
            })
            .collect();
        Self {
            lost,
            server_entries: server.values().map(|h| h.entries.len()).sum(),
            told: told.values().map(HashSet::len).sum(),
        }
    }
}

impl Changed {
    /// A refunded or transferred-away code admitted after the change reached that gate is
    /// a broken promise; before, it is what offline means.
    fn of(scans: &[ScanRecord], reached: &HashMap<(usize, usize), f64>) -> Self {
        let mut out = Self {
            after_reach: Vec::new(),
            before_reach: 0,
            refused: 0,
        };
        for s in scans
            .iter()
            .filter(|s| matches!(s.who, Who::Refunded | Who::OldHolder))
        {
            let reach = reached.get(&(s.ticket, s.gate)).copied();
            if s.first.verdict == "admit" {
                match reach {
                    Some(r) if r < s.sent_s => out.after_reach.push(format!(
                        "{} ({:?}) admitted at gate {} {:.3} s after the change reached it",
                        s.tid,
                        s.who,
                        s.gate,
                        s.sent_s - r
                    )),
                    _ => out.before_reach += 1,
                }
            } else {
                out.refused += 1;
            }
        }
        out
    }
}

/// Each gate's numbers, and its admissions per event minute (the chart's series).
fn per_gate(answered: &[&ScanRecord], plan: &Plan) -> (Vec<Value>, Vec<Vec<u64>>) {
    let minutes = (plan.duration_s / 60.0).ceil() as usize;
    let mut per_gate = Vec::new();
    let mut series = Vec::new();
    for g in 0..plan.gates {
        let mine: Vec<_> = answered.iter().filter(|s| s.gate == g).collect();
        let mut per_minute = vec![0u64; minutes.max(1)];
        for s in mine.iter().filter(|s| s.first.verdict == "admit") {
            let m = ((s.event_s / 60.0) as usize).min(per_minute.len() - 1);
            per_minute[m] += 1;
        }
        let count = |v: &str| mine.iter().filter(|s| s.first.verdict == v).count();
        let admitted = count("admit");
        per_gate.push(json!({
            "gate": super::net::gate_name(g),
            "admitted": admitted,
            "duplicate": count("duplicate"),
            "reject": count("reject"),
            "peak_per_minute": per_minute.iter().max(),
            "per_scanner_per_hour": round(admitted as f64 / 2.0 / (plan.duration_s / 3600.0)),
            "scan_latency": percentiles(mine.iter().map(|s| s.first.latency_ms).collect()),
            "waited_for_restart": mine.iter().filter(|s| s.waited_ms > 0.0).count(),
        }));
        series.push(per_minute);
    }
    (per_gate, series)
}

/// Gate-to-gate propagation: steady state apart from the samples a fault disturbed.
fn propagation_summary(propagation: &[Propagation]) -> Value {
    let clean: Vec<f64> = propagation
        .iter()
        .filter(|p| !p.disturbed)
        .filter_map(|p| p.ms)
        .collect();
    let recovering: Vec<f64> = propagation
        .iter()
        .filter(|p| p.disturbed)
        .filter_map(|p| p.ms)
        .collect();
    let never = propagation.iter().filter(|p| p.ms.is_none()).count();
    json!({
        "clean": percentiles(clean),
        "during_or_just_after_a_fault": percentiles(recovering),
        "samples": propagation.len(),
        "disturbed_by_a_fault": propagation.iter().filter(|p| p.disturbed).count(),
        "not_seen_within_60_s": never,
        "points": propagation.iter().filter_map(|p| p.ms.map(|ms| json!([round(p.event_s), ms, p.disturbed]))).collect::<Vec<_>>(),
    })
}

fn inv(name: &str, value: usize, must: usize, examples: &[String]) -> Value {
    json!({
        "name": name,
        "value": value,
        "must_be": must,
        "ok": value == must,
        "examples": examples.iter().take(10).collect::<Vec<_>>(),
    })
}

/// The report as a person reads it.
pub fn text(r: &Value) -> String {
    let mut s = String::new();
    let c = &r["config"];
    let _ = writeln!(
        s,
        "gatemesh rehearsal: {} gates, {} attendees, {} event minutes at {}x, seed {} ({}; server on {})",
        c["gates"],
        c["attendees"],
        c["minutes"],
        c["speed"],
        c["seed"],
        c["network"].as_str().unwrap_or_default(),
        c["database"].as_str().unwrap_or_default()
    );
    let k = &r["counts"];
    let _ = writeln!(
        s,
        "  presented {}  admitted {}  copies {} (caught at the gate {}, admitted then flagged {})  double fires {}{}",
        k["presentations"],
        k["admitted"],
        k["copies"],
        k["copies_caught_at_the_gate"],
        k["copies_admitted_then_flagged"],
        k["double_fires"],
        match k["double_fires_past_the_window_after_a_restart"].as_u64() {
            Some(n) if n > 0 =>
                format!(" (and {n} whose second read waited out a restart past the repeat window)"),
            _ => String::new(),
        }
    );
    let _ = writeln!(
        s,
        "  copies at a gate that could reach the first one {}: caught there {}",
        k["copies_where_the_first_gate_could_be_reached"], k["of_them_caught_at_the_gate"],
    );
    let _ = writeln!(
        s,
        "  refunded/transferred codes presented {}: refused {}, admitted before the change reached the gate {}",
        k["void_or_transferred_presented"],
        k["void_or_transferred_refused"],
        k["void_or_transferred_admitted_before_it_reached_the_gate"]
    );
    if c["scenario"] == "festival" {
        let lr = &r["observed"]["lists_release"];
        let door = r["plan"]["festival"]["vip_door"]
            .as_u64()
            .unwrap_or_default() as usize;
        let _ = writeln!(
            s,
            "  festival: the VIP area's door is {}; wrong day presented {} (refused not_valid_now {}), wrong door {} (refused not_on_list {}); lists v{} reached the gates in {} s (uplink down at {})",
            r["per_gate"][door]["gate"].as_str().unwrap_or_default(),
            k["wrong_day_presented"],
            k["wrong_day_refused_not_valid_now"],
            k["wrong_door_presented"],
            k["wrong_door_refused_not_on_list"],
            lr["version"],
            lr["reached_gate_s"],
            lr["gates_without_uplink"]
        );
    }
    let l = &r["scan_to_result"];
    let _ = writeln!(
        s,
        "  scan to result: mean {} ms, p95 {} ms, p99 {} ms, max {} ms (published: 120 ms mean, 180 ms p95)",
        l["mean_ms"], l["p95_ms"], l["p99_ms"], l["max_ms"]
    );
    let p = &r["propagation"]["clean"];
    let _ = writeln!(
        s,
        "  gate-to-gate propagation, steady: p50 {} ms, p95 {} ms, p99 {} ms, max {} ms ({} samples)",
        p["p50_ms"], p["p95_ms"], p["p99_ms"], p["max_ms"], p["n"]
    );
    let p = &r["propagation"]["during_or_just_after_a_fault"];
    let _ = writeln!(
        s,
        "  gate-to-gate propagation, during or < 5 s after a fault: p50 {} ms, p99 {} ms, max {} ms ({} samples; {} not seen within 60 s)",
        p["p50_ms"], p["p99_ms"], p["max_ms"], p["n"], r["propagation"]["not_seen_within_60_s"]
    );
    let v = &r["void_and_transfer_push"];
    let _ = writeln!(
        s,
        "  refund/transfer reaching each gate, from the box office's request: p50 {} ms, p99 {} ms, max {} ms ({} seen on the gates' live streams, {} by lookups, 4 at a time, the longest pass {} ms)",
        v["p50_ms"],
        v["p99_ms"],
        v["max_ms"],
        v["seen_on_live_stream"],
        v["seen_by_lookup"],
        v["watch_pass_most_ms"]
    );
    if let Some(failed) = v["box_office_failed"].as_array().filter(|f| !f.is_empty()) {
        let _ = writeln!(
            s,
            "  box office requests the server did not answer well: {} (the first: {})",
            failed.len(),
            failed[0].as_str().unwrap_or("")
        );
    }
    let w = &r["agreement"]["standing_writes"];
    let _ = writeln!(
        s,
        "  standings written into the ledger: {} for {} tickets (each gate that writes one adds a change every gate takes in); the server answered the box office in p50 {} ms, p99 {} ms; from its answer, each gate showed it in p50 {} ms, p99 {} ms",
        w["writes"],
        w["tickets"],
        v["server_answered"]["p50_ms"],
        v["server_answered"]["p99_ms"],
        v["after_the_answer"]["p50_ms"],
        v["after_the_answer"]["p99_ms"]
    );
    let o = &r["observed"];
    // Every gate's time, or none when one never flagged them all.
    let per_gate = &o["flagged_after_heal"]["s_per_gate"];
    let everywhere = per_gate.as_array().and_then(|all| {
        all.iter()
            .map(Value::as_f64)
            .try_fold(0.0f64, |most, s| Some(most.max(s?)))
    });
    let _ = writeln!(
        s,
        "  uplink back: gate reconciled in {} s; LAN healed: flags on every gate after {} s (each gate: {per_gate} s); SIGKILL: back in {} s",
        o["uplink_reconciled"]["s"],
        everywhere.map_or_else(|| "(never, on some gate)".to_owned(), |s| s.to_string()),
        o["kill"]["down_s"]
    );
    for g in r["per_gate"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {:<14} admitted {:>5}  duplicate {:>3}  reject {:>3}  peak {:>4}/min  {:>6}/h per scanner",
            g["gate"].as_str().unwrap_or_default(),
            g["admitted"],
            g["duplicate"],
            g["reject"],
            g["peak_per_minute"],
            g["per_scanner_per_hour"]
        );
    }
    let m = &r["machine"];
    let q = &r["push_queues"];
    let _ = writeln!(
        s,
        "  machine: {} cores, load average (1 min) mean {}, max {} ({} samples); gates' CPU {} ms per admission, the server's {} ms; gates' peak memory mean {} MiB, max {} MiB",
        m["cores"],
        m["load_average_1m"]["mean"],
        m["load_average_1m"]["max"],
        m["load_average_1m"]["samples"],
        r["gate_cpu"]["ms_per_admission"],
        r["server_cpu"]["ms_per_admission"],
        r["gate_memory"]["peak_mib_mean"],
        r["gate_memory"]["peak_mib_max"]
    );
    let _ = writeln!(
        s,
        "  push queues to peers: backlog max {} commits, p99 {} over {} peer links; {} of {} sessions fell behind ({} times)",
        q["backlog_max"],
        q["backlog_max_p99"],
        q["peer_links"],
        q["sessions_fell_behind"],
        q["sessions"],
        q["fell_behind"]
    );
    let by_minute: Vec<String> = q["relayed_and_received_again_by_event_minute"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, m)| m[0].as_u64().unwrap_or(0) + m[1].as_u64().unwrap_or(0) > 0)
        .map(|(minute, m)| format!("{minute}: {}/{}", m[0], m[1]))
        .collect();
    if !by_minute.is_empty() {
        let _ = writeln!(
            s,
            "  changes relayed / received again (all gates) by event minute: {}",
            by_minute.join("  ")
        );
    }
    if let Some(by) = q["relayed_by"].as_object().filter(|by| !by.is_empty()) {
        let by: Vec<String> = by.iter().map(|(why, n)| format!("{why} {n}")).collect();
        let _ = writeln!(s, "  changes relayed (all gates) by why: {}", by.join(", "));
    }
    if let Some(t) = q["as_the_gates_total_them"]
        .as_object()
        .filter(|t| t.get("came").is_some())
    {
        let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
        let sent = n("pushed") + n("relayed");
        let placed = n("taken")
            + n("held")
            + n("waiting_already")
            + n("held_when_taken")
            + n("dropped")
            + n("waiting")
            + n("dropped_waiting_when_a_connection_ended");
        // A push is counted sent by a mark that waits for a busy writer, and is lost if the
        // connection ends first: more can come than was counted sent.
        let short = match sent.checked_sub(n("came")) {
            Some(lost) => format!("{lost} short of sent: lost on the way"),
            None => format!(
                "{} more than counted sent: marks of pushes still waiting for the writer when a connection ended",
                n("came") - sent
            ),
        };
        let _ = writeln!(
            s,
            "  links' books (all gates, over their lives): sent {sent} (pushed {}, relayed {}), came {} ({short}); of what came: new {} (of them {} by the peer that wrote them), held already {}, sent again while waiting {}, held by the time it was taken {}, dropped {}, dropped waiting when a connection ended {}, waiting at the last look {}, not placed {}",
            n("pushed"),
            n("relayed"),
            n("came"),
            n("taken"),
            n("taken_own"),
            n("held"),
            n("waiting_already"),
            n("held_when_taken"),
            n("dropped"),
            n("dropped_waiting_when_a_connection_ended"),
            n("waiting"),
            n("came").saturating_sub(placed),
        );
    }
    for g in r["per_gate"].as_array().into_iter().flatten() {
        let (c, p) = (&g["cpu"], &g["push_queue"]);
        let _ = writeln!(
            s,
            "  {:<14} CPU {:>7} s ({})  {:>7} ms/admission  {:>7} ms/redemption held ({} held)  push backlog max {:>4}  fell behind {} in {} sessions  sync rounds {}  relayed {}  received again {}  peak memory {} MiB",
            g["gate"].as_str().unwrap_or_default(),
            c["s"],
            if c["lives"] == 1 {
                "1 life".to_owned()
            } else {
                format!("{} lives", c["lives"])
            },
            c["ms_per_admission"],
            c["ms_per_redemption_held"],
            c["redemptions_held"],
            p["backlog_max"],
            p["fell_behind"],
            p["sessions_fell_behind"],
            p["rounds"],
            p["relayed"],
            p["already_held"],
            g["memory"]["peak_mib"]
        );
    }
    let z = &r["staff_resolution"];
    let _ = writeln!(
        s,
        "  staff resolved {} flags at the gates ({}); server and gates agreed {} s later",
        z["flagged"], z["actions"], z["agreed_after_s"]
    );
    let t = &r["timing"];
    let _ = writeln!(
        s,
        "  set-up {} s, played {} s, server and gates agreed {} s after the last scan",
        t["setup_s"], t["played_s"], t["converged_after_s"]
    );
    for i in r["invariants"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  [{}] {} = {}",
            if i["ok"] == true { " ok " } else { "FAIL" },
            i["name"].as_str().unwrap_or_default(),
            i["value"]
        );
        for e in i["examples"].as_array().into_iter().flatten() {
            let _ = writeln!(s, "         {}", e.as_str().unwrap_or_default());
        }
    }
    let _ = writeln!(
        s,
        "{}",
        if r["ok"] == true {
            "all invariants hold"
        } else {
            "AN INVARIANT DOES NOT HOLD"
        }
    );
    s
}

#[cfg(test)]
mod tests;
