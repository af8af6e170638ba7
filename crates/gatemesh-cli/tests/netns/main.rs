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
