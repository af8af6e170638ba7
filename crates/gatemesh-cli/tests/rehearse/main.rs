//! `gatemesh rehearse` end to end: a short event and the default one against a real server
//! and real gates, with every fault, pass their invariants — in network namespaces with mDNS when the tests run
//! as root (the README test command does), and on loopback through relays either way — and a
//! gate that misbehaves is caught with a non-zero exit.

use std::{path::Path, process::Command};

use serde_json::Value;

fn rehearse(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let report = dir.join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .arg("rehearse")
        .args(args)
        .arg("--report")
        .arg(&report)
        .arg("--dir")
        .arg(dir.join("run"))
        .output()
        .expect("gatemesh runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no report: {text}\n{stderr}"));
    (out.status.code().unwrap_or(-1), report, text)
}

fn n(r: &Value, pointer: &str) -> u64 {
    r.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} missing in the report"))
}

/// Every story of the plan happened and every invariant held.
fn assert_full_rehearsal(code: i32, r: &Value, text: &str) {
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["ok"], true, "{text}");
    for inv in r["invariants"].as_array().unwrap() {
        assert_eq!(inv["ok"], true, "{inv}");
    }
    // The faults and stories were really played, so the invariants had something to hold on.
    let copies = n(r, "/counts/copies");
    assert!(copies >= 5, "{text}");
    assert_eq!(
        n(r, "/counts/copies_caught_at_the_gate") + n(r, "/counts/copies_admitted_then_flagged"),
        copies
    );
    assert!(
        n(r, "/counts/copies_admitted_then_flagged") >= 1,
        "the partition let some copies in on both sides: {text}"
    );
    assert!(n(r, "/counts/double_fires") >= 1, "{text}");
    assert!(n(r, "/counts/void_or_transferred_refused") >= 1, "{text}");
    assert!(n(r, "/staff_resolution/flagged") >= 1, "{text}");
    assert_eq!(r["observed"]["kill"]["ok"], true, "{text}");
    assert!(
        r["observed"]["uplink_reconciled"]["s"].is_number(),
        "{text}"
    );
    let faults: Vec<String> = r["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["what"].to_string())
        .collect();
    for kind in [
        "uplink_down",
        "uplink_up",
        "partition",
        "heal",
        "sigkill",
        "restarted",
    ] {
        assert!(
            faults.iter().any(|f| f.contains(kind)),
            "{kind}: {faults:?}"
        );
    }
    // As many admitted as the server counts, less the ones staff reverted.
    assert!(n(r, "/counts/admitted") >= 400, "{text}");
    assert_cost_reported(r, text);
}

/// What the event cost: every gate's CPU time per admission and per redemption it holds,
/// its push queues to its peers, and the machine's load average.
fn assert_cost_reported(r: &Value, text: &str) {
    let gates = r["config"]["gates"].as_u64().unwrap() as usize;
    let per_gate = r["per_gate"].as_array().unwrap();
    assert_eq!(per_gate.len(), gates);
    for g in per_gate {
        let (cpu, queue) = (&g["cpu"], &g["push_queue"]);
        assert!(cpu["s"].as_f64().is_some_and(|s| s > 0.0), "{g}");
        if g["admitted"].as_u64().unwrap() > 0 {
            assert!(
                cpu["ms_per_admission"].as_f64().is_some_and(|ms| ms > 0.0),
                "{g}"
            );
        }
        // Every gate holds its own admissions and its peers'.
        assert!(
            cpu["redemptions_held"].as_u64().unwrap() >= g["admitted"].as_u64().unwrap(),
            "{g}"
        );
        assert!(
            cpu["ms_per_redemption_held"]
                .as_f64()
                .is_some_and(|ms| ms > 0.0),
            "{g}"
        );
        // A gate sees every other gate (and the server, when it is a peer).
        assert!(
            queue["peer_links"].as_u64().unwrap() as usize >= gates - 1,
            "{g}"
        );
        assert!(queue["sessions"].as_u64().unwrap() >= queue["peer_links"].as_u64().unwrap());
        for k in [
            "backlog_max",
            "sessions_fell_behind",
            "fell_behind",
            "rounds",
            "relayed",
            "already_held",
        ] {
            assert!(queue[k].is_u64(), "{k}: {g}");
        }
        // Every admission went out to the peers: some commit was queued for one.
        assert!(queue["backlog_max"].as_u64().unwrap() >= 1, "{g}");
        assert!(
            text.contains(&format!("{:<14} CPU", g["gate"].as_str().unwrap())),
            "{text}"
        );
    }
    // A partition that outlasts QUIC's idle timeout ends the connections across it, so no
    // push carried what each side admitted meanwhile: the gates relayed it after the heal
    // (summaries), or caught up by rounds of the sync protocol, and the counts say so. A
    // shorter one (the short rehearsals': 7.5 s) may leave them open, and QUIC's
    // retransmissions then carry the gap as pushes; the flagged copies above show it came.
    let carried: u64 = per_gate
        .iter()
        .map(|g| {
            let q = &g["push_queue"];
            q["rounds"].as_u64().unwrap() + q["relayed"].as_u64().unwrap()
        })
        .sum();
    let partition = &r["plan"]["faults"]["partition"];
    let apart_s = (partition[1].as_f64().unwrap() - partition[0].as_f64().unwrap())
        / r["config"]["speed"].as_f64().unwrap();
    // Room for the keep-alive before the split and the rehearsal's own timing.
    let ends_connections = gatemesh_mesh::net::IDLE_TIMEOUT.as_secs_f64() + 5.0;
    if apart_s > ends_connections {
        assert!(carried >= 1, "apart {apart_s:.1} s: {text}");
    }
    // The gate SIGKILLed lived twice, and both lives count.
    let killed = r["plan"]["faults"]["killed_gate"].as_u64().unwrap() as usize;
    assert_eq!(per_gate[killed]["cpu"]["lives"], 2, "{}", per_gate[killed]);
    let load = &r["machine"]["load_average_1m"];
    assert!(n(r, "/machine/load_average_1m/samples") >= 1, "{load}");
    let (mean, max) = (
        load["mean"].as_f64().unwrap(),
        load["max"].as_f64().unwrap(),
    );
    assert!(mean >= 0.0 && max >= mean, "{load}");
    let q = &r["push_queues"];
    assert!(
        n(r, "/push_queues/peer_links") >= (gates * (gates - 1)) as u64,
        "{q}"
    );
    assert!(n(r, "/push_queues/backlog_max") >= n(r, "/push_queues/backlog_max_p99"));
    assert!(text.contains("load average (1 min)"), "{text}");
    assert!(text.contains("push queues to peers"), "{text}");
}

/// A short event: 3 gates, 500 attendees, 10 minutes at 20x (30 s), plus `extra`.
/// The report says the event played on loopback (relays and proxies, no namespaces).
fn assert_on_loopback(r: &Value) {
    let network = r["config"]["network"].as_str().unwrap();
    assert!(network.starts_with("loopback"), "{network}");
}

fn short(dir: &Path, seed: &str, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "--gates",
        "3",
        "--attendees",
        "500",
        "--minutes",
        "10",
        "--speed",
        "20",
        "--seed",
        seed,
    ];
    args.extend_from_slice(extra);
    rehearse(dir, &args)
}

/// Whether a process other than this test's holds `needle` on its command line.
fn running_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
    })
}

/// SIGTERM (what a CI's time limit, a service manager or `kill` sends) stops a rehearsal as
/// Ctrl-C does: its server and gates stop and its network namespaces go. Without a handler
/// the signal ended the rehearsal alone, and 33 processes and 34 namespaces stayed.
#[test]
fn a_rehearsal_stopped_by_sigterm_leaves_no_process_or_namespace_behind() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .args([
            "rehearse",
            "--gates",
            "3",
            "--attendees",
            "2000",
            "--speed",
            "1",
        ])
        .arg("--dir")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let run = run.to_str().unwrap().to_owned();
    // Its gates are up once each holds its data directory.
    let started = Instant::now();
    while !(0..3).all(|g| Path::new(&format!("{run}/gate-{g}")).exists()) {
        assert!(started.elapsed() < Duration::from_secs(120), "no gates");
        assert!(child.try_wait().unwrap().is_none(), "the rehearsal ended");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(running_with(&run), "its gates run");
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "still running"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Stopped by its own hand (an error exit), not by the signal.
    assert!(status.code().is_some_and(|c| c != 0), "{status:?}");
    assert!(
        !running_with(&run),
        "a gate or server of the rehearsal runs on"
    );
    let namespaces = Command::new("ip").args(["netns", "list"]).output();
    if let Ok(out) = namespaces {
        let prefix = format!("gmr{}", child.id());
        let listed = String::from_utf8_lossy(&out.stdout);
        let left = listed.lines().any(|l| {
            l.strip_prefix(&prefix)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
        });
        assert!(!left, "{listed}");
    }
}

#[test]
fn a_short_rehearsal_holds_every_invariant() {
    let dir = tempfile::tempdir().unwrap();
    // Namespaces with mDNS as root, loopback otherwise (the command decides, as for a user).
    let (code, r, text) = short(dir.path(), "5", &[]);
    assert_full_rehearsal(code, &r, &text);
    let svg = std::fs::read_to_string(dir.path().join("report.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("South-Gate"));
    assert!(text.contains("all invariants hold"), "{text}");
}

/// The default event (4 gates, 3,000 attendees, 25 minutes at 15x), as a user runs it from a
/// clean checkout. This debug build on two shared cores is overloaded by it (scans take tens
/// of milliseconds, propagation seconds); the promises must hold all the same.
#[test]
fn the_default_rehearsal_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = rehearse(dir.path(), &[]);
    assert_eq!(r["config"]["gates"], 4);
    assert_eq!(r["config"]["attendees"], 3000);
    assert_full_rehearsal(code, &r, &text);
    assert!(n(&r, "/counts/admitted") >= 2900, "{text}");
}

#[test]
fn the_rehearsal_on_loopback_through_relays() {
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = short(dir.path(), "6", &["--network", "loopback"]);
    assert_on_loopback(&r);
    assert_full_rehearsal(code, &r, &text);
}

/// The same with the server on PostgreSQL (the test cluster the test command starts), where
/// online redemptions are gathered into shared transactions.
#[test]
fn the_rehearsal_with_the_server_on_postgresql() {
    let db = gatemesh_testkit::pg::Database::fresh();
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = short(dir.path(), "7", &["--db", &db.url]);
    assert_eq!(r["config"]["database"], "postgresql");
    assert_on_loopback(&r);
    assert_full_rehearsal(code, &r, &text);
}

/// A festival: three days with the server's check-in lists, passes once a day, day tickets
/// on their day only, a VIP area with its own door, the lists changed on the second day
/// while the main entrance's uplink is down — in namespaces with mDNS as root.
#[test]
fn a_festival_rehearsal_holds_every_invariant() {
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = short(dir.path(), "5", &["--scenario", "festival"]);
    assert_eq!(r["config"]["scenario"], "festival");
    assert_eq!(code, 0, "{text}");
    for inv in r["invariants"].as_array().unwrap() {
        assert_eq!(inv["ok"], true, "{inv}");
    }
    let names: Vec<&str> = r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"gates_the_changed_lists_did_not_reach"),
        "{names:?}"
    );
    // Every story was played, so the invariants had something to hold on.
    for (presented, refused) in [
        ("wrong_day_presented", "wrong_day_refused_not_valid_now"),
        ("wrong_door_presented", "wrong_door_refused_not_on_list"),
    ] {
        assert!(n(&r, &format!("/counts/{presented}")) >= 1, "{text}");
        assert_eq!(
            n(&r, &format!("/counts/{presented}")),
            n(&r, &format!("/counts/{refused}"))
        );
    }
    assert!(n(&r, "/counts/copies_caught_at_the_gate") >= 1, "{text}");
    assert!(n(&r, "/counts/copies_admitted_then_flagged") >= 1, "{text}");
    assert!(n(&r, "/staff_resolution/flagged") >= 1, "{text}");
    // The second version of the lists reached every gate, one of them with its uplink down.
    let release = &r["observed"]["lists_release"];
    assert_eq!(release["version"], 2, "{release}");
    let reached = release["reached_gate_s"].as_array().unwrap();
    assert_eq!(reached.len(), 3);
    assert!(reached.iter().all(Value::is_number), "{release}");
    assert_eq!(
        release["gates_without_uplink"],
        serde_json::json!([0]),
        "{release}"
    );
    // Passes came on every day: the admissions outnumber the tickets.
    assert!(n(&r, "/counts/admitted") > 500, "{text}");
    assert!(
        text.contains("festival: the VIP area's door is South-Gate; wrong day presented"),
        "{text}"
    );
}

#[test]
fn a_gate_that_answers_a_double_fire_with_yellow_fails_the_rehearsal() {
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = rehearse(
        dir.path(),
        &[
            "--network",
            "loopback",
            "--gates",
            "2",
            "--attendees",
            "300",
            "--minutes",
            "4",
            "--speed",
            "20",
            "--gate-arg=--repeat-window=0",
        ],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(r["ok"], false);
    let failed: Vec<&str> = r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["ok"] == false)
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["double_fires_answered_differently"], "{text}");
    assert!(text.contains("AN INVARIANT DOES NOT HOLD"));
}
