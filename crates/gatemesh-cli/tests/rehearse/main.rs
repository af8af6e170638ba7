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
