//! Gates on a real (virtual) LAN: each in its own network namespace, joined by veth pairs to a
//! bridge that lives in a namespace of its own, so nothing touches the machine's own network
//! and mDNS multicast stays inside. Discovery, partitions cut with `ip link set … down`,
//! static peers. Needs root and iproute2; without them the tests say so and skip, but the
//! README's test command runs as root and runs them.

use std::{path::Path, time::Duration};

use gatemesh_testkit::{Net, World, eventually};
use serde_json::{Value, json};

const EVENT: &str = "LAN-2026";
const MESH_PORT: u16 = 7400;

fn world(tickets: usize) -> World {
    World::new(Path::new(env!("CARGO_BIN_EXE_gatemesh")), EVENT, tickets)
}

fn mesh_addr(net: &Net, i: usize) -> String {
    format!("{}:{MESH_PORT}", net.ip(i))
}

/// Starts `gatemesh gate` (gate-a, gate-b, …) inside host `i`; returns its API base URL
/// (on that host's loopback) and its process handle.
fn gate_process(net: &mut Net, i: usize, w: &World, extra: &[String]) -> (String, usize) {
    let name = format!("gate-{}", (b'a' + i as u8) as char);
    let mut cmd = net.command(i, &w.bin);
    cmd.arg("gate")
        .arg("--data")
        .arg(w.root.join(format!("data-{name}")))
        .args(["--event", EVENT, "--name", &name, "--api", "127.0.0.1:7070"])
        .arg("--issuer")
        .arg(w.issuer_pub())
        .arg("--identity")
        .arg(w.identity(&name))
        .args(["--mesh", &format!("0.0.0.0:{MESH_PORT}")])
        .args(extra);
    let (ready, process) = net.start(cmd);
    net.set_token(i, gatemesh_testkit::api_token(&ready));
    (
        format!("http://{}", ready["api"].as_str().unwrap()),
        process,
    )
}

fn gate(net: &mut Net, i: usize, w: &World, extra: &[String]) -> String {
    gate_process(net, i, w, extra).0
}

fn scan(net: &Net, i: usize, api: &str, code: &str, scanner: &str) -> Value {
    net.http(
        i,
        "POST",
        &format!("{api}/v1/scan"),
        Some(json!({ "code": code, "scanner": scanner })),
    )
}

fn peer_names(net: &Net, i: usize, api: &str) -> Vec<String> {
    let status = net.http(i, "GET", &format!("{api}/v1/status"), None);
    let mut names: Vec<String> = status["peers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn knows(net: &Net, i: usize, api: &str, tid: &str, gate: &str) -> bool {
    let t = net.http(i, "GET", &format!("{api}/v1/tickets/{tid}"), None);
    t["redemptions"]
        .as_array()
        .is_some_and(|rs| rs.iter().any(|r| r["gate"] == gate))
}

fn flagged(net: &Net, i: usize, api: &str, tid: &str) -> bool {
    let f = net.http(i, "GET", &format!("{api}/v1/flags"), None);
    f["flags"]
        .as_array()
        .is_some_and(|fs| fs.iter().any(|x| x["tid"] == tid))
}

#[test]
fn gates_discover_each_other_catch_copies_and_flag_a_partition() {
    let w = world(10);
    let Some(mut net) = Net::new(3, true) else {
        return;
    };
    let apis: Vec<String> = (0..3).map(|i| gate(&mut net, i, &w, &[])).collect();
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate has found the two others by mDNS", || {
            peer_names(&net, i, api).len() == 2
        });
    }

    // A copy admitted at A is caught at B.
    let (tid, code) = &w.codes[0];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    for i in [1, 2] {
        eventually("B and C know A admitted it", || {
            knows(&net, i, &apis[i], tid, "gate-a")
        });
    }
    let dup = scan(&net, 1, &apis[1], code, "b1");
    assert_eq!(dup["verdict"], "duplicate");
    assert_eq!(dup["first"]["gate"], "gate-a");
    eventually("B's status shows both peers caught up", || {
        let peers = net.http(1, "GET", &format!("{}/v1/status", apis[1]), None)["peers"].clone();
        peers.as_array().is_some_and(|ps| {
            ps.len() == 2
                && ps.iter().all(|p| {
                    p["connected"] == true
                        && p["behind"] == 0
                        && p["last_sync"].is_string()
                        && p["rtt_ms"].is_number()
                })
        })
    });

    // Partition {A} | {B, C}: the same ticket is admitted on both sides.
    net.link(0, false);
    let (tid, code) = &w.codes[1];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    assert_eq!(scan(&net, 1, &apis[1], code, "b1")["verdict"], "admit");
    eventually("C hears of B's admit", || {
        knows(&net, 2, &apis[2], tid, "gate-b")
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !knows(&net, 0, &apis[0], tid, "gate-b"),
        "the partition is real"
    );
    net.link(0, true);
    for (i, api) in apis.iter().enumerate() {
        eventually("all three gates list the ticket under flags", || {
            flagged(&net, i, api, tid)
        });
    }

    // Staff resolve it at C; the resolution reaches A and B.
    let r = net.http(
        2,
        "POST",
        &format!("{}/v1/flags/{tid}/resolve", apis[2]),
        Some(json!({ "action": "accept", "staff": "Sam", "note": "same person" })),
    );
    assert!(r["resolution"].is_object(), "{r}");
    for (i, api) in apis.iter().enumerate() {
        eventually("the resolution reached every gate", || {
            !flagged(&net, i, api, tid)
        });
    }
}

#[test]
fn static_peers_work_where_multicast_is_blocked() {
    let w = world(10);
    let Some(mut net) = Net::new(2, false) else {
        return;
    };
    let peer_of_a = vec![
        "--discovery".into(),
        "off".into(),
        "--peer".into(),
        mesh_addr(&net, 1),
    ];
    let a = gate(&mut net, 0, &w, &peer_of_a);
    let b = gate(&mut net, 1, &w, &["--discovery".into(), "off".into()]);
    eventually("A and B are connected", || {
        peer_names(&net, 0, &a) == ["gate-b"] && peer_names(&net, 1, &b) == ["gate-a"]
    });
    let (tid, code) = &w.codes[2];
    assert_eq!(scan(&net, 1, &b, code, "b1")["verdict"], "admit");
    eventually("A knows B admitted it", || {
        knows(&net, 0, &a, tid, "gate-b")
    });
}

#[test]
fn a_gate_killed_mid_sync_converges_after_restart() {
    let w = world(150);
    let Some(mut net) = Net::new(2, true) else {
        return;
    };
    let a = gate(&mut net, 0, &w, &[]);
    for (_, code) in &w.codes {
        assert_eq!(scan(&net, 0, &a, code, "a1")["verdict"], "admit");
    }
    let redemptions = |net: &Net, i: usize, api: &str| {
        net.http(i, "GET", &format!("{api}/v1/status"), None)["redemptions"].as_u64()
    };
    // B joins, and dies with SIGKILL while it is taking A's history in.
    let (b, process) = gate_process(&mut net, 1, &w, &[]);
    eventually("B has started to sync", || {
        redemptions(&net, 1, &b).unwrap_or(0) > 0 || peer_names(&net, 1, &b).len() == 1
    });
    net.kill(process);
    let b = gate(&mut net, 1, &w, &[]);
    eventually("B holds every admission after its restart", || {
        redemptions(&net, 1, &b) == Some(150)
    });
    let (tid, code) = &w.codes[149];
    let dup = scan(&net, 1, &b, code, "b1");
    assert_eq!(dup["verdict"], "duplicate", "{tid}: {dup}");
    assert_eq!(dup["first"]["gate"], "gate-a");
}

/// Check-in lists on the LAN: two main gates take general admission once per event day, the
/// VIP door takes VIP only. A second entry the same day at the other main gate is yellow,
/// naming the first; a GA ticket at the VIP door is refused `not_on_list`; the same ticket
/// admitted at both main gates while they are apart (one list, one day) is flagged on every
/// gate once they meet.
#[test]
fn lists_on_the_lan_catch_a_second_entry_the_same_day_and_keep_ga_out_of_the_vip_area() {
    let w = world(4);
    let Some(mut net) = Net::new(3, true) else {
        return;
    };
    let lists = w.root.join("lists.json");
    std::fs::write(
        &lists,
        json!({
            "event": EVENT, "time_zone": "Europe/Berlin", "default_product": "GA",
            "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
            "lists": [
                {"id": "main", "name": "Main entrance", "all_products": true, "once_per_day": true},
                {"id": "vip", "name": "VIP area", "products": ["VIP"]}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let on = |list: &str| -> Vec<String> {
        vec![
            "--lists".into(),
            lists.display().to_string(),
            "--list".into(),
            list.into(),
        ]
    };
    let apis: Vec<String> = ["main", "main", "vip"]
        .iter()
        .enumerate()
        .map(|(i, list)| gate(&mut net, i, &w, &on(list)))
        .collect();
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate has found the two others by mDNS", || {
            peer_names(&net, i, api).len() == 2
        });
    }

    // A ticket without a product is GA: in at A, yellow at B the same day, naming A.
    let (tid, code) = &w.codes[0];
    let first = scan(&net, 0, &apis[0], code, "a1");
    assert_eq!(
        (&first["verdict"], &first["list"]),
        (&json!("admit"), &json!("main")),
        "{first}"
    );
    eventually("B knows A admitted it", || {
        knows(&net, 1, &apis[1], tid, "gate-a")
    });
    let again = scan(&net, 1, &apis[1], code, "b1");
    assert_eq!(again["verdict"], "duplicate", "{again}");
    assert_eq!(again["first"]["gate"], "gate-a");
    // At the VIP door: refused for its list, whatever the ledger says.
    let (_, other) = &w.codes[1];
    let vip = scan(&net, 2, &apis[2], other, "c1");
    assert_eq!(
        (&vip["verdict"], &vip["reason"]),
        (&json!("reject"), &json!("not_on_list")),
        "{vip}"
    );

    // Partition {A} | {B, C}: one ticket in at both main gates, on one list and day.
    net.link(0, false);
    let (tid, code) = &w.codes[2];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    assert_eq!(scan(&net, 1, &apis[1], code, "b1")["verdict"], "admit");
    net.link(0, true);
    for (i, api) in apis.iter().enumerate() {
        eventually("all three gates list the ticket under flags", || {
            flagged(&net, i, api, tid)
        });
    }
}

/// The next whole minute (UTC) at least 20 s away, in ms, and as the `HH:MM` a lists file's
/// `day_starts` takes: the event day changes then, by every gate's own clock.
fn next_day_boundary() -> (i64, String) {
    const MINUTE: i64 = 60_000;
    let now_ms = gatemesh_wire::time::now_ms();
    let mut at = (now_ms / MINUTE + 1) * MINUTE;
    if at - now_ms < 20_000 {
        at += MINUTE;
    }
    let hhmm = format!("{:02}:{:02}", (at / 3_600_000) % 24, (at / MINUTE) % 60);
    (at, hhmm)
}

/// Days on the LAN, by the gates' own clocks. The event day turns over a minute or so into
/// the test (`day_starts`); Friday's tickets are good until then. A 3-day pass is in once per
/// event day at two main gates: the same day's second entry is yellow at the other gate,
/// naming the first; after the turn it is green again, once. A Friday ticket is refused
/// after Friday with its reason. Then, while the LAN is split, one pass is admitted at both
/// main gates (one list, one day: flagged on every gate once they meet), and a VIP pass at a
/// main gate and at the VIP door (two lists: flagged nowhere).
#[test]
fn a_pass_counts_once_per_event_day_and_a_day_ticket_on_its_day_across_the_lan() {
    let w = world(1);
    let Some(mut net) = Net::new(3, true) else {
        return;
    };
    let (turn_ms, hhmm) = next_day_boundary();
    let lists = w.root.join("lists.json");
    std::fs::write(
        &lists,
        json!({
            "event": EVENT, "time_zone": "UTC", "day_starts": hhmm,
            "products": [
                {"code": "PASS", "number": 1}, {"code": "FRI", "number": 2},
                {"code": "VIP", "number": 3}
            ],
            "lists": [
                {"id": "pass", "name": "Festival entrance", "products": ["PASS", "VIP"],
                 "once_per_day": true},
                {"id": "fri", "name": "Friday tickets", "products": ["FRI"],
                 "windows": [{"until": gatemesh_wire::Timestamp::from_ms(turn_ms)}]},
                {"id": "vip", "name": "VIP area", "products": ["VIP"], "once_per_day": true}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let issue = |batch: &str, product: &str| {
        w.issue(
            batch,
            &[
                "--count",
                "2",
                "--product",
                product,
                "--lists",
                lists.to_str().unwrap(),
            ],
        )
    };
    let (passes, fridays, vips) = (
        issue("pass", "PASS"),
        issue("fri", "FRI"),
        issue("vip", "VIP"),
    );
    let on = |ids: &[&str]| -> Vec<String> {
        let mut args = vec!["--lists".to_owned(), lists.display().to_string()];
        for id in ids {
            args.extend(["--list".to_owned(), (*id).to_owned()]);
        }
        args
    };
    let apis = [
        gate(&mut net, 0, &w, &on(&["pass", "fri"])),
        gate(&mut net, 1, &w, &on(&["pass", "fri"])),
        gate(&mut net, 2, &w, &on(&["vip"])),
    ];
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate has found the two others by mDNS", || {
            peer_names(&net, i, api).len() == 2
        });
    }
    let said = |v: &Value| (v["verdict"].clone(), v["reason"].clone(), v["list"].clone());

    // Friday, at A: the pass in; at B the same day, yellow naming A. A Friday ticket in.
    let (pass, code) = &passes[0];
    let first = scan(&net, 0, &apis[0], code, "a1");
    assert_eq!(
        said(&first),
        (json!("admit"), json!("valid"), json!("pass")),
        "{first}"
    );
    eventually("B knows A admitted the pass", || {
        knows(&net, 1, &apis[1], pass, "gate-a")
    });
    let again = scan(&net, 1, &apis[1], code, "b1");
    assert_eq!(again["verdict"], "duplicate", "{again}");
    assert_eq!(again["first"]["gate"], "gate-a");
    let friday = scan(&net, 1, &apis[1], &fridays[0].1, "b1");
    assert_eq!(
        said(&friday),
        (json!("admit"), json!("valid"), json!("fri")),
        "{friday}"
    );
    assert!(
        gatemesh_wire::time::now_ms() < turn_ms,
        "the first day's scans took past its end: the test machine is too slow for this test"
    );

    // Saturday: the pass is green again at B, once; Friday's tickets are refused.
    std::thread::sleep(Duration::from_millis(
        (turn_ms - gatemesh_wire::time::now_ms() + 500).max(0) as u64,
    ));
    let saturday = scan(&net, 1, &apis[1], code, "b1");
    assert_eq!(
        said(&saturday),
        (json!("admit"), json!("valid"), json!("pass")),
        "{saturday}"
    );
    assert_ne!(saturday["redemption_id"], first["redemption_id"]);
    eventually("A knows B admitted the pass on Saturday", || {
        knows(&net, 0, &apis[0], pass, "gate-b")
    });
    let again = scan(&net, 0, &apis[0], code, "a1");
    assert_eq!(again["verdict"], "duplicate", "{again}");
    assert_eq!(again["first"]["gate"], "gate-b");
    for (_, code) in &fridays {
        let late = scan(&net, 0, &apis[0], code, "a1");
        assert_eq!(
            (&late["verdict"], &late["reason"]),
            (&json!("reject"), &json!("not_valid_now")),
            "{late}"
        );
    }

    // Apart: {A} | {B, C}.
    net.link(0, false);
    let (copied, code) = &passes[1];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    assert_eq!(scan(&net, 1, &apis[1], code, "b1")["verdict"], "admit");
    let (vip, vip_code) = &vips[0];
    assert_eq!(scan(&net, 0, &apis[0], vip_code, "a1")["list"], "pass");
    assert_eq!(scan(&net, 2, &apis[2], vip_code, "c1")["list"], "vip");
    net.link(0, true);
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate flags the pass admitted on both sides", || {
            flagged(&net, i, api, copied)
        });
        eventually("every gate holds both of the VIP pass's entries", || {
            knows(&net, i, api, vip, "gate-a") && knows(&net, i, api, vip, "gate-c")
        });
        assert!(
            !flagged(&net, i, api, vip) && !flagged(&net, i, api, pass),
            "entries on two lists, or on two days, are no copies (gate {i})"
        );
    }
}

/// A gate on a slow link falls behind without holding the others back. Three gates, all
/// connected; gate C's cable is throttled to 16 kbit/s each way (a saturated Wi-Fi link)
/// while gate A admits 1,000 people one after another: ~550 kB of pushes, past the 256 KiB
/// a connection may have in flight and the 64 commits a session may queue, however slowly
/// A admits them. B, on a good cable, holds every admission while C still lacks most;
/// A's session to B never falls behind. Once the link is back, C catches up and catches a
/// copy, and A's session to C has gone to catch-up (`fell_behind`, or a connection that
/// timed out and was dialled again).
#[test]
fn a_gate_on_a_throttled_link_falls_behind_and_catches_up_without_delaying_the_others() {
    const N: usize = 1000;
    let w = world(N);
    let Some(mut net) = Net::new(3, false) else {
        return;
    };
    // A dials B and C, B dials C: a full mesh of static peers.
    let off = ["--discovery".to_owned(), "off".to_owned()];
    let peers = |to: &[usize]| -> Vec<String> {
        let mut args = off.to_vec();
        for &j in to {
            args.extend(["--peer".to_owned(), mesh_addr(&net, j)]);
        }
        args
    };
    let (pa, pb) = (peers(&[1, 2]), peers(&[2]));
    let a = gate(&mut net, 0, &w, &pa);
    let b = gate(&mut net, 1, &w, &pb);
    let c = gate(&mut net, 2, &w, &off);
    let apis = [a, b, c];
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate is connected to the two others", || {
            peer_names(&net, i, api).len() == 2
        });
    }
    let redemptions = |i: usize| {
        net.http(i, "GET", &format!("{}/v1/status", apis[i]), None)["redemptions"]
            .as_u64()
            .unwrap_or(0) as usize
    };
    let peer_of_a = |name: &str| {
        let status = net.http(0, "GET", &format!("{}/v1/status", apis[0]), None);
        status["peers"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name).cloned())
            .unwrap_or(Value::Null)
    };

    net.throttle(2, "16kbit");
    let scans: Vec<Value> = w
        .codes
        .iter()
        .map(|(_, code)| json!({ "code": code, "scanner": "a1" }))
        .collect();
    let answers = net.http_many(0, "POST", &format!("{}/v1/scan", apis[0]), &scans);
    let admitted = answers.iter().filter(|r| r["verdict"] == "admit").count();
    assert_eq!(
        admitted,
        N,
        "{:?}",
        answers.iter().find(|r| r["verdict"] != "admit")
    );

    eventually("B holds every admission", || redemptions(1) == N);
    let c_meanwhile = redemptions(2);
    assert!(
        c_meanwhile < N,
        "C, on the throttled link, does not hold them all yet when B does"
    );
    let to_b = peer_of_a("gate-b");
    assert_eq!(to_b["fell_behind"], 0, "B was never held back: {to_b}");
    assert_eq!(to_b["connected"], true, "{to_b}");

    // C catches up once its link is back (by B's rounds or A's, whichever comes first).
    // A's session to C was stuck writing into a full window all along. If more commits
    // queued up for it meanwhile than its queue holds, once that drains it finds it missed
    // pushes and goes to catch-up by a round (`fell_behind`). Or the starved connection timed
    // out and was dialled again (its counters start over, the bytes sent go down), and the
    // round on connect caught up; if that happened before the first look, the new session's
    // counters show a queue that never filled. A queue that never filled missed nothing.
    net.unthrottle(2);
    eventually("C catches up once its link is back", || redemptions(2) == N);
    let mut sent_before = 0;
    eventually(
        "A's session to C missed nothing or went to catch-up",
        || {
            let c = peer_of_a("gate-c");
            let sent = c["bytes_sent"].as_u64().unwrap_or(0);
            let started_over = c["connected"] != true || sent < sent_before;
            sent_before = sent;
            let queue_filled = c["push_backlog_max"].as_u64().unwrap_or(0)
                >= gatemesh_mesh::session::PUSH_QUEUE as u64;
            started_over || c["fell_behind"].as_u64().unwrap_or(0) > 0 || !queue_filled
        },
    );
    let (tid, code) = &w.codes[N - 1];
    let dup = scan(&net, 2, &apis[2], code, "c1");
    assert_eq!(dup["verdict"], "duplicate", "{tid}: {dup}");
    assert_eq!(dup["first"]["gate"], "gate-a");
    eprintln!("C held {c_meanwhile} of {N} when B held them all");
    eprintln!("A's session to C: {}", peer_of_a("gate-c"));
}
