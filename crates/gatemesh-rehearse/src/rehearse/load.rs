//! What the event cost the machine: each gate process's CPU time (`/proc/PID/stat`), the
//! machine's load average (`/proc/loadavg`), and the gates' push queues to their peers (each
//! gate's `/v1/status`), sampled every second while the event plays.

use std::{
    collections::BTreeMap,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};

use super::{fleet::At, round, str_of, watch::Shared};

/// How often the sampler reads the load average and every gate's status.
const EVERY: Duration = Duration::from_secs(1);

/// Clock ticks per second of `/proc/PID/stat`'s times.
fn ticks_per_s() -> f64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    }
}

/// CPU time (user and system, every thread, living or exited) of process `pid` so far; a
/// killed process not yet reaped still reports its whole life.
pub(crate) fn cpu_time(pid: u32) -> Result<Duration> {
    Ok(stat(pid)?.0)
}

/// The CPU time of `pid`, a child just sent SIGKILL and not yet reaped, once it has died (a
/// zombie: its whole life), or as last read if it takes longer than a second.
pub(super) fn cpu_time_of_killed(pid: u32) -> Result<Duration> {
    let mut last = stat(pid)?;
    for _ in 0..200 {
        if matches!(last.1, 'Z' | 'X') {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        last = stat(pid)?;
    }
    Ok(last.0)
}

fn stat(pid: u32) -> Result<(Duration, char)> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    cpu_of_stat(&stat).with_context(|| format!("{path}: {stat:?}"))
}

/// utime + stime, and the state, of a `/proc/PID/stat` line. Its second field, the command
/// name in parentheses, may hold spaces and parentheses itself: the fields are counted after
/// the last `)`.
fn cpu_of_stat(stat: &str) -> Result<(Duration, char)> {
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("no command name"))?;
    // After the name: state (field 3) … utime (14), stime (15).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .ok_or_else(|| anyhow!("field {} missing", i + 3))?
            .parse::<u64>()
            .with_context(|| format!("field {}", i + 3))
    };
    let total = ticks(11)? + ticks(12)?;
    let state = fields.first().and_then(|f| f.chars().next()).unwrap_or('?');
    Ok((Duration::from_secs_f64(total as f64 / ticks_per_s()), state))
}

/// The most memory process `pid` has held at once so far (its resident set's high-water
/// mark, `VmHWM` of `/proc/PID/status`), in bytes. A process that died has none to read.
pub(super) fn peak_memory(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    vm_hwm_of_status(&status).with_context(|| format!("{path}: no VmHWM"))
}

/// `VmHWM` of a `/proc/PID/status`, in bytes (the file says kB: KiB).
fn vm_hwm_of_status(status: &str) -> Result<u64> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .ok_or_else(|| anyhow!("no VmHWM line"))?;
    let kib = line
        .trim()
        .strip_suffix("kB")
        .ok_or_else(|| anyhow!("VmHWM not in kB: {line:?}"))?
        .trim()
        .parse::<u64>()
        .with_context(|| format!("VmHWM {line:?}"))?;
    Ok(kib * 1024)
}

/// The machine's 1-minute load average now.
fn load_1m() -> Result<f64> {
    let s = std::fs::read_to_string("/proc/loadavg").context("reading /proc/loadavg")?;
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("/proc/loadavg: {s:?}"))
}

/// One gate's push queue to one peer, over every session between them seen (a session's
/// counters start at zero with each connection, and with each life of the gate).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Link {
    /// The most commits queued for the peer at once, in any session.
    pub backlog_max: u64,
    /// Sessions seen.
    pub sessions: u64,
    /// Sessions that fell behind at least once, and times they did.
    pub sessions_fell_behind: u64,
    pub fell_behind: u64,
    /// Pushes received from the peer.
    pub pushes: u64,
    /// Rounds of the sync protocol the gate started with the peer: catch-up, which the
    /// steady state should rarely need (pushes and summaries' relays carry it).
    pub rounds: u64,
    /// Changes the gate relayed to the peer (what its summaries showed it lacked).
    pub relayed: u64,
    /// Changes the peer pushed or relayed to the gate that it held already: sent twice.
    pub already_held: u64,
    /// Changes the gate relayed to the peer by why each went ([`Link::WHY`]).
    pub relayed_by: [u64; 6],
    /// The current session's counters as last seen ([`Link::COUNTERS`]).
    current: [u64; 12],
}

impl Link {
    /// The counters of a peer entry of `/v1/status` a link sums over sessions (JSON
    /// pointers): the last six are the relays by why ([`Link::WHY`]).
    const COUNTERS: [&str; 12] = [
        "/messages",
        "/pushes",
        "/fell_behind",
        "/rounds",
        "/relayed",
        "/already_held",
        "/relayed_by/gap",
        "/relayed_by/own",
        "/relayed_by/first",
        "/relayed_by/backup",
        "/relayed_by/again",
        "/relayed_by/asked",
    ];

    /// Why changes were relayed, as the gate's status names them: to a peer catching up a
    /// gap from it, its own, first relayer of a writer the peer does not reach, a backup
    /// relayer of one, sent again after counted lost, asked for by hash.
    pub(super) const WHY: [&str; 6] = ["gap", "own", "first", "backup", "again", "asked"];

    /// Takes in a peer entry of the gate's `/v1/status`: returns the changes relayed to the
    /// peer, and received from it held already, since the last one.
    pub(super) fn observe(&mut self, peer: &Value) -> [u64; 2] {
        let now = Self::COUNTERS.map(|k| peer.pointer(k).and_then(Value::as_u64).unwrap_or(0));
        // Counters only grow within a session: one that went down is a new session.
        let new_session = self.sessions == 0 || now.iter().zip(&self.current).any(|(n, c)| n < c);
        let before = if new_session { [0; 12] } else { self.current };
        if new_session {
            self.sessions += 1;
        }
        let delta: [u64; 12] = std::array::from_fn(|i| now[i] - before[i]);
        let [_, pushes, fell, rounds, relayed, held, ..] = delta;
        for (sum, d) in self.relayed_by.iter_mut().zip(&delta[6..]) {
            *sum += d;
        }
        if before[2] == 0 && fell > 0 {
            self.sessions_fell_behind += 1;
        }
        self.pushes += pushes;
        self.fell_behind += fell;
        self.rounds += rounds;
        self.relayed += relayed;
        self.already_held += held;
        self.current = now;
        self.backlog_max = self
            .backlog_max
            .max(peer["push_backlog_max"].as_u64().unwrap_or(0));
        [relayed, held]
    }
}

/// What the sampler saw.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// 1-minute load averages, one a second.
    pub load: Vec<f64>,
    /// Per gate, its links by peer name.
    pub links: Vec<BTreeMap<String, Link>>,
    /// Per gate, the redemptions it held (its own and its peers') when last read.
    pub held: Vec<Option<u64>>,
    /// Per event minute, the changes every gate relayed and those received held already
    /// (sent twice), as read in that minute: whether relays are the steady state's or a
    /// fault's.
    pub relays_by_minute: Vec<[u64; 2]>,
    /// Per gate, its relays over its lives as the gate itself totals them ([`Totals`]).
    pub totals: Vec<Totals>,
}

/// A gate's changes relayed, received held already, dropped waiting when a connection
/// ended, and its links' books (`books` in `/v1/status`: what it pushed, and what came and
/// what became of it), over its lives: read from its own totals (its live connections'
/// counters and `peers_ended`, what those that ended had counted), so nothing counted
/// between the last sample and a connection's end is lost, as it is from the links'
/// samples. [`TOTALS`] names them, in order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Totals {
    /// Over its earlier lives.
    before: [u64; TOTALS.len()],
    /// In its current life, as last read.
    current: [u64; TOTALS.len()],
}

/// What [`Totals`] counts, in order: the first three, then a link's books
/// (`gatemesh_ledger::LinkBooks`), then what waits at the last read.
pub(super) const TOTALS: [&str; 12] = [
    "relayed",
    "received_again",
    "dropped_waiting_when_a_connection_ended",
    "pushed",
    "came",
    "taken",
    "held",
    "waiting_already",
    "held_when_taken",
    "dropped",
    "taken_own",
    "waiting",
];

/// Of [`TOTALS`], the books' (`books` in a gate's status, per peer and ended).
const BOOKS: std::ops::Range<usize> = 3..11;

impl Totals {
    /// Takes in the gate's `/v1/status`.
    fn observe(&mut self, status: &Value) {
        let relayed = |v: &Value| -> u64 {
            Link::WHY
                .iter()
                .map(|why| v["relayed_by"][why].as_u64().unwrap_or(0))
                .sum()
        };
        let ended = &status["peers_ended"];
        let peers = status["peers"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let live_and_ended =
            |f: &dyn Fn(&Value) -> u64| f(ended) + peers.iter().map(f).sum::<u64>();
        let mut now = [0u64; TOTALS.len()];
        now[0] = live_and_ended(&relayed);
        now[1] = live_and_ended(&|v| v["already_held"].as_u64().unwrap_or(0));
        now[2] = ended["waiting_dropped"].as_u64().unwrap_or(0);
        for i in BOOKS {
            now[i] = live_and_ended(&|v| v["books"][TOTALS[i]].as_u64().unwrap_or(0));
        }
        now[BOOKS.end] = peers
            .iter()
            .map(|p| p["waiting"].as_u64().unwrap_or(0))
            .sum();
        // Totals only grow within a life: one that went down is a new life. (What waits
        // comes and goes.)
        if now[..BOOKS.end]
            .iter()
            .zip(&self.current)
            .any(|(n, c)| n < c)
        {
            for (b, c) in self.before.iter_mut().zip(self.current) {
                *b += c;
            }
        }
        self.current = now;
    }

    /// Every count of [`TOTALS`], over every life.
    pub(super) fn all(&self) -> [u64; TOTALS.len()] {
        std::array::from_fn(|i| self.before[i] + self.current[i])
    }
}

impl Seen {
    fn new(gates: usize) -> Self {
        Self {
            load: Vec::new(),
            links: vec![BTreeMap::new(); gates],
            held: vec![None; gates],
            relays_by_minute: Vec::new(),
            totals: vec![Totals::default(); gates],
        }
    }

    /// Takes in a gate's `/v1/status`, read in event minute `minute`.
    fn take_status(&mut self, gate: usize, status: &Value, minute: usize) {
        if let Some(h) = status["redemptions"].as_u64() {
            self.held[gate] = Some(h);
        }
        self.totals[gate].observe(status);
        for p in status["peers"].as_array().into_iter().flatten() {
            let name = str_of(&p["name"]);
            let [relayed, held] = self.links[gate].entry(name).or_default().observe(p);
            if self.relays_by_minute.len() <= minute {
                self.relays_by_minute.resize(minute + 1, [0, 0]);
            }
            self.relays_by_minute[minute][0] += relayed;
            self.relays_by_minute[minute][1] += held;
        }
    }
}

/// Reads the load average and every gate's status each second until the rehearsal is done,
/// then every gate's status once more; returns what it saw.
pub(super) async fn sample(shared: Arc<Shared>, gates: Vec<At>) -> Seen {
    let mut seen = Seen::new(gates.len());
    let read_all = |seen: &mut Seen, statuses: Vec<Result<Value>>| {
        // Past the entry window too (the look for agreement, the staff's resolutions).
        let minute = (shared.event_now() / 60.0).max(0.0) as usize;
        for (g, s) in statuses.into_iter().enumerate() {
            // A gate that is down (killed, restarting) is read next time.
            if let Ok(s) = s {
                seen.take_status(g, &s, minute);
            }
        }
    };
    loop {
        let done = shared.done.load(Ordering::SeqCst);
        if !done && let Ok(l) = load_1m() {
            seen.load.push(l);
        }
        let statuses =
            futures_util::future::join_all(gates.iter().map(|g| g.get("/v1/status"))).await;
        read_all(&mut seen, statuses);
        if done {
            return seen;
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Each gate's CPU time through the event, over all its lives; and the most memory one of
/// its lives held at once (start-up included), when it could be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cpu {
    pub spent: Duration,
    pub lives: u32,
    pub peak_memory: Option<u64>,
}

/// What the event cost, for the report: `(per gate, summary)`; each gate's entry goes into
/// its `per_gate` numbers.
pub(super) fn report(seen: &Seen, cpu: &[Option<Cpu>], admitted: &[usize]) -> (Vec<Value>, Value) {
    let mut per_gate = Vec::new();
    let mut backlogs: Vec<u64> = Vec::new();
    let (mut fell, mut sessions_fell, mut sessions) = (0, 0, 0);
    let mut cpu_total = Duration::ZERO;
    let mib = |bytes: u64| round(bytes as f64 / (1024.0 * 1024.0));
    let peaks: Vec<u64> = cpu.iter().flatten().filter_map(|c| c.peak_memory).collect();
    for (g, links) in seen.links.iter().enumerate() {
        let admitted = admitted.get(g).copied().unwrap_or(0);
        let held = seen.held.get(g).copied().flatten();
        let c = cpu.get(g).copied().flatten();
        let per = |n: u64| -> Value {
            match c {
                Some(c) if n > 0 => json!(round(c.spent.as_secs_f64() * 1000.0 / n as f64)),
                _ => Value::Null,
            }
        };
        if let Some(c) = c {
            cpu_total += c.spent;
        }
        let link_fell: u64 = links.values().map(|l| l.fell_behind).sum();
        let link_sessions_fell: u64 = links.values().map(|l| l.sessions_fell_behind).sum();
        let link_sessions: u64 = links.values().map(|l| l.sessions).sum();
        backlogs.extend(links.values().map(|l| l.backlog_max));
        fell += link_fell;
        sessions_fell += link_sessions_fell;
        sessions += link_sessions;
        per_gate.push(json!({
            "cpu": {
                "s": c.map(|c| round(c.spent.as_secs_f64())),
                "lives": c.map(|c| c.lives),
                "ms_per_admission": per(admitted as u64),
                "redemptions_held": held,
                "ms_per_redemption_held": held.map_or(Value::Null, per),
            },
            "memory": {
                "peak_mib": c.and_then(|c| c.peak_memory).map(mib),
            },
            "push_queue": {
                "peer_links": links.len(),
                "backlog_max": links.values().map(|l| l.backlog_max).max().unwrap_or(0),
                "sessions": link_sessions,
                "sessions_fell_behind": link_sessions_fell,
                "fell_behind": link_fell,
                "rounds": links.values().map(|l| l.rounds).sum::<u64>(),
                "relayed": links.values().map(|l| l.relayed).sum::<u64>(),
                "already_held": links.values().map(|l| l.already_held).sum::<u64>(),
                "per_peer": links.iter().map(|(peer, l)| (peer.clone(), json!({
                    "push_backlog_max": l.backlog_max,
                    "pushes": l.pushes,
                    "sessions": l.sessions,
                    "sessions_fell_behind": l.sessions_fell_behind,
                    "fell_behind": l.fell_behind,
                    "rounds": l.rounds,
                    "relayed": l.relayed,
                    "already_held": l.already_held,
                }))).collect::<serde_json::Map<_, _>>(),
            },
        }));
    }
    backlogs.sort_unstable();
    let rank = |p: f64| -> u64 {
        if backlogs.is_empty() {
            return 0;
        }
        backlogs[((backlogs.len() as f64 - 1.0) * p).round() as usize]
    };
    let admitted_all: usize = admitted.iter().sum();
    let load = &seen.load;
    let summary = json!({
        "machine": {
            "cores": crate::stats::cores(),
            "load_average_1m": {
                "samples": load.len(),
                "mean": (!load.is_empty()).then(|| round(load.iter().sum::<f64>() / load.len() as f64)),
                "max": load.iter().copied().reduce(f64::max).map(round),
            },
        },
        "gate_memory": {
            "peak_mib_max": peaks.iter().max().copied().map(mib),
            "peak_mib_mean": (!peaks.is_empty())
                .then(|| mib(peaks.iter().sum::<u64>() / peaks.len() as u64)),
        },
        "gate_cpu": {
            "s": round(cpu_total.as_secs_f64()),
            "ms_per_admission": (admitted_all > 0)
                .then(|| round(cpu_total.as_secs_f64() * 1000.0 / admitted_all as f64)),
        },
        "push_queues": {
            "peer_links": backlogs.len(),
            "backlog_max": rank(1.0),
            "backlog_max_p99": rank(0.99),
            "backlog_max_p50": rank(0.5),
            "sessions": sessions,
            "sessions_fell_behind": sessions_fell,
            "fell_behind": fell,
            "relayed_and_received_again_by_event_minute": seen.relays_by_minute,
            "as_the_gates_total_them": TOTALS.iter().enumerate().map(|(i, key)| {
                ((*key).to_owned(), json!(seen.totals.iter().map(|t| t.all()[i]).sum::<u64>()))
            }).collect::<serde_json::Map<_, _>>(),
            "relayed_by": Link::WHY.iter().enumerate().map(|(i, why)| {
                let n: u64 = seen.links.iter().flat_map(|l| l.values()).map(|l| l.relayed_by[i]).sum();
                ((*why).to_owned(), json!(n))
            }).collect::<serde_json::Map<_, _>>(),
        },
    });
    (per_gate, summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_last_parenthesis() {
        let tck = ticks_per_s();
        // A command name with spaces and parentheses, as `(sd-pam)` or a renamed thread.
        let stat = "1234 (a ) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        let (t, state) = cpu_of_stat(stat).unwrap();
        assert!((t.as_secs_f64() - 300.0 / tck).abs() < 1e-9, "{t:?}");
        assert_eq!(state, 'S');
        assert!(cpu_of_stat("1234 (gatemesh) S 1 2").is_err(), "too short");
        assert!(cpu_of_stat("garbage").is_err(), "no name");
        assert!(
            cpu_of_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 5 0").is_err(),
            "not a number"
        );
    }

    #[test]
    fn a_process_cpu_time_grows_as_it_works_and_a_gone_one_is_an_error() {
        let me = std::process::id();
        let before = cpu_time(me).unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(cpu_time(me).unwrap() > before);
        // Pids are at most 2^22 on Linux.
        assert!(cpu_time(u32::MAX).is_err());
        assert!(load_1m().unwrap() >= 0.0);
    }

    #[test]
    fn a_killed_process_reports_its_whole_life_until_it_is_reaped() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        let pid = child.id();
        let alive = cpu_time(pid).unwrap();
        child.kill().unwrap();
        let whole = cpu_time_of_killed(pid).unwrap();
        assert!(
            whole >= alive && whole > Duration::ZERO,
            "{alive:?} {whole:?}"
        );
        assert_eq!(stat(pid).unwrap().1, 'Z');
        child.wait().unwrap();
        assert!(cpu_time_of_killed(pid).is_err(), "reaped: nothing to read");
    }

    fn peer(messages: u64, pushes: u64, backlog: u64, fell: u64) -> Value {
        json!({ "name": "b", "messages": messages, "pushes": pushes,
                "push_backlog_max": backlog, "fell_behind": fell })
    }

    #[test]
    fn a_link_sums_the_rounds_it_started_and_the_changes_it_relayed_over_sessions() {
        let mut l = Link::default();
        let at = |rounds: u64, relayed: u64| json!({ "name": "b", "messages": 3, "pushes": 9, "rounds": rounds, "relayed": relayed });
        assert_eq!(l.observe(&at(1, 10)), [10, 0]);
        assert_eq!(l.observe(&at(2, 25)), [15, 0]);
        // Only the rounds went down: the connection was redialled all the same.
        assert_eq!(l.observe(&at(1, 25)), [25, 0]);
        assert_eq!((l.sessions, l.rounds, l.relayed, l.pushes), (2, 3, 50, 18));
    }

    #[test]
    fn relays_are_summed_by_why_over_sessions_and_gates() {
        let mut seen = Seen::new(2);
        let status = |gap: u64, backup: u64| {
            json!({ "peers": [{ "name": "b", "relayed": gap + backup,
                "relayed_by": { "gap": gap, "own": 0, "first": 0, "backup": backup, "again": 0 } }] })
        };
        seen.take_status(0, &status(100, 2), 0);
        seen.take_status(0, &status(150, 2), 1);
        // A new session: counted from zero again.
        seen.take_status(0, &status(10, 0), 1);
        seen.take_status(1, &status(0, 7), 1);
        let (_, summary) = report(&seen, &[None, None], &[0, 0]);
        assert_eq!(
            summary["push_queues"]["relayed_by"],
            json!({ "gap": 160, "own": 0, "first": 0, "backup": 9, "again": 0, "asked": 0 })
        );
    }

    #[test]
    fn a_gates_own_totals_keep_what_ended_connections_counted_and_add_up_its_lives() {
        let mut t = Totals::default();
        let status = |live: u64, ended: u64, again: u64, dropped: u64| {
            json!({ "peers": [{ "name": "b", "already_held": again, "relayed_by": { "gap": live } }],
                    "peers_ended": { "already_held": 1, "relayed_by": { "gap": ended, "again": 2 },
                                     "waiting_dropped": dropped } })
        };
        t.observe(&status(10, 0, 0, 0));
        // The connection to b ended (its 30 moved to peers_ended) and a new one relayed 5.
        t.observe(&status(5, 30, 4, 7));
        assert_eq!(t.all()[..3], [5 + 30 + 2, 4 + 1, 7]);
        // The gate restarted: its totals count from zero again, the first life's kept.
        t.observe(&status(3, 0, 0, 0));
        assert_eq!(t.all()[..3], [37 + 3 + 2, 5 + 1, 7]);
    }

    #[test]
    fn a_gates_link_books_add_live_and_ended_connections_and_what_waits_is_not_a_new_life() {
        let mut t = Totals::default();
        let status = |came: u64, taken: u64, waiting: u64, ended_came: u64| {
            json!({ "peers": [{ "name": "b", "waiting": waiting,
                                "books": { "pushed": 4, "came": came, "taken": taken, "held": 1 } }],
                    "peers_ended": { "books": { "pushed": 2, "came": ended_came, "taken": ended_came } } })
        };
        let at = |key: &str| TOTALS.iter().position(|k| *k == key).unwrap();
        t.observe(&status(10, 6, 3, 0));
        // Fewer wait now, the rest were taken: the same life.
        t.observe(&status(12, 10, 1, 5));
        let all = t.all();
        assert_eq!(
            [
                all[at("pushed")],
                all[at("came")],
                all[at("taken")],
                all[at("held")],
                all[at("waiting")]
            ],
            [6, 17, 15, 1, 1]
        );
        // Restarted: the first life's books are kept, the new one's added.
        t.observe(&status(2, 2, 0, 0));
        assert_eq!(
            [t.all()[at("came")], t.all()[at("taken")]],
            [17 + 2, 15 + 2]
        );
    }

    #[test]
    fn relays_are_counted_in_the_event_minute_they_were_read() {
        let mut seen = Seen::new(2);
        let status = |relayed: u64, again: u64| json!({ "peers": [{ "name": "b", "relayed": relayed, "already_held": again }] });
        seen.take_status(0, &status(10, 1), 0);
        seen.take_status(1, &status(5, 0), 0);
        seen.take_status(0, &status(30, 4), 2);
        // A new session (the gate restarted): its counters count from zero.
        seen.take_status(0, &status(7, 0), 2);
        assert_eq!(seen.relays_by_minute, [[15, 1], [0, 0], [27, 3]]);
        let (_, summary) = report(&seen, &[None, None], &[0, 0]);
        assert_eq!(
            summary["push_queues"]["relayed_and_received_again_by_event_minute"],
            json!([[15, 1], [0, 0], [27, 3]])
        );
    }

    /// What a link counted: sessions, pushes, largest backlog, times and sessions behind.
    fn counted(l: &Link) -> (u64, u64, u64, u64, u64) {
        (
            l.sessions,
            l.pushes,
            l.backlog_max,
            l.fell_behind,
            l.sessions_fell_behind,
        )
    }

    #[test]
    fn a_link_sums_its_sessions_and_keeps_the_largest_backlog() {
        let mut l = Link::default();
        l.observe(&peer(10, 5, 3, 0));
        l.observe(&peer(20, 9, 7, 1));
        l.observe(&peer(30, 12, 7, 2));
        assert_eq!(counted(&l), (1, 12, 7, 2, 1));
        // The gate restarted (or the connection was redialled): counters from zero.
        l.observe(&peer(4, 2, 2, 0));
        l.observe(&peer(8, 6, 4, 1));
        assert_eq!(counted(&l), (2, 18, 7, 3, 2));
        // A peer entry without numbers counts as nothing, not as a failure.
        l.observe(&json!({ "name": "b" }));
        assert_eq!((l.sessions, l.pushes, l.backlog_max), (3, 18, 7));
    }

    #[test]
    fn the_report_divides_cpu_by_what_each_gate_did() {
        let mut seen = Seen {
            load: vec![1.0, 3.0],
            held: vec![Some(400), None],
            ..Seen::new(2)
        };
        seen.links[0]
            .entry("b".into())
            .or_default()
            .observe(&peer(1, 1, 5, 1));
        seen.links[1]
            .entry("a".into())
            .or_default()
            .observe(&peer(1, 1, 2, 0));
        let cpu = [
            Some(Cpu {
                spent: Duration::from_secs(2),
                lives: 2,
                peak_memory: Some(300 * 1024 * 1024),
            }),
            None,
        ];
        let (per_gate, summary) = report(&seen, &cpu, &[100, 0]);
        assert_eq!(per_gate[0]["cpu"]["ms_per_admission"], 20.0);
        assert_eq!(per_gate[0]["cpu"]["ms_per_redemption_held"], 5.0);
        assert_eq!(per_gate[0]["cpu"]["lives"], 2);
        assert_eq!(per_gate[0]["push_queue"]["backlog_max"], 5);
        assert_eq!(per_gate[0]["push_queue"]["sessions_fell_behind"], 1);
        // Nothing to divide by, or nothing read: no number rather than a made-up one.
        assert_eq!(per_gate[1]["cpu"]["ms_per_admission"], Value::Null);
        assert_eq!(per_gate[1]["cpu"]["s"], Value::Null);
        assert_eq!(summary["machine"]["load_average_1m"]["mean"], 2.0);
        assert_eq!(summary["machine"]["load_average_1m"]["max"], 3.0);
        assert_eq!(summary["push_queues"]["backlog_max"], 5);
        assert_eq!(summary["push_queues"]["peer_links"], 2);
        assert_eq!(summary["gate_cpu"]["ms_per_admission"], 20.0);
        assert_eq!(per_gate[0]["memory"]["peak_mib"], 300.0);
        assert_eq!(per_gate[1]["memory"]["peak_mib"], Value::Null);
        assert_eq!(summary["gate_memory"]["peak_mib_max"], 300.0);
    }

    #[test]
    fn peak_memory_is_the_high_water_mark_in_bytes() {
        let status = "Name:\tgatemesh\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(vm_hwm_of_status(status).unwrap(), 2048 * 1024);
        assert!(vm_hwm_of_status("Name:\tx\n").is_err(), "a zombie has none");
        assert!(vm_hwm_of_status("VmHWM:\t12 MB\n").is_err());
        assert!(vm_hwm_of_status("VmHWM:\tlots kB\n").is_err());
        // This process holds at least the buffer it touched.
        let buffer = vec![1u8; 32 * 1024 * 1024];
        std::hint::black_box(&buffer);
        assert!(peak_memory(std::process::id()).unwrap() >= 32 * 1024 * 1024);
        assert!(peak_memory(u32::MAX).is_err());
    }
}
