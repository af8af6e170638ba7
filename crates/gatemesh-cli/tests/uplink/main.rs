//! Gates and the central server as real processes on loopback: the server's word (voids,
//! transfers, reverts, flags and their resolutions) reaching gates through the uplink, gates
//! with no mesh between them caught by the server, and the faults an uplink meets: the
//! server killed while gates upload, responses lost on the way back, a gate offline for a
//! long stretch. Each ends with the same check: nothing lost, nothing counted twice, server
//! and gates agree.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    process::{Child, Command},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use gatemesh_testkit::{
    on_both_backends,
    pg::{self, Backend},
    poll_async, spawn_ready,
};
use gatemesh_wire::CertFingerprint;
use serde_json::{Value, json};

const TOKEN: &str = "uplink-test-admin-token-0123";

fn gatemesh() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gatemesh"))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A free loopback port (bound, read, released), for a server that must come back on the
/// same address after a restart.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct ServerProc {
    child: Option<Child>,
    data: PathBuf,
    port: u16,
    db: Option<String>,
    base: String,
    plain: bool,
    /// The certificate it presents (the same across restarts: it lives in `data`).
    pin: Option<CertFingerprint>,
}

/// The certificate of each server a test started, by base URL: what the test's own client
/// and its gates trust.
static PINS: std::sync::Mutex<Vec<(String, CertFingerprint)>> = std::sync::Mutex::new(Vec::new());

fn pin_for(url: &str) -> Option<CertFingerprint> {
    PINS.lock()
        .unwrap()
        .iter()
        .find(|(base, _)| url.starts_with(base.as_str()))
        .map(|(_, pin)| *pin)
}

impl ServerProc {
    /// A server over HTTPS (its default), with the certificate it makes in `data`.
    fn start(data: &Path, db: Option<String>, port: u16) -> Self {
        Self::start_as(data, db, port, false)
    }

    /// A server over plain HTTP on loopback (`--plain-http`), for a proxy that must see HTTP.
    fn start_plain(data: &Path, port: u16) -> Self {
        Self::start_as(data, None, port, true)
    }

    fn start_as(data: &Path, db: Option<String>, port: u16, plain: bool) -> Self {
        let scheme = if plain { "http" } else { "https" };
        let mut s = Self {
            child: None,
            data: data.to_owned(),
            port,
            db,
            base: format!("{scheme}://127.0.0.1:{port}"),
            plain,
            pin: None,
        };
        s.restart();
        s
    }

    fn restart(&mut self) {
        let mut cmd = gatemesh();
        cmd.args(["server", "--data", p(&self.data), "--admin-token", TOKEN])
            .args(["--listen", &format!("127.0.0.1:{}", self.port)]);
        if let Some(db) = &self.db {
            cmd.args(["--db", db]);
        }
        if self.plain {
            cmd.arg("--plain-http");
        }
        let (child, ready) = spawn_ready(cmd);
        assert_eq!(ready["api"], format!("127.0.0.1:{}", self.port));
        assert_eq!(ready["url"], self.base.as_str());
        let pin = ready["fingerprint"].as_str().map(|f| f.parse().unwrap());
        assert_eq!(pin.is_some(), !self.plain, "{ready}");
        if self.pin.is_some() {
            assert_eq!(
                pin, self.pin,
                "a restarted server presents the same certificate"
            );
        }
        if let Some(pin) = pin {
            PINS.lock().unwrap().push((self.base.clone(), pin));
        }
        self.pin = pin;
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        self.kill();
    }
}

struct GateProc {
    child: Child,
    api: String,
}

impl Drop for GateProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_gate(dir: &Path, event: &str, name: &str, issuer: &Path, server: &str) -> GateProc {
    let mut cmd = gatemesh();
    cmd.args(["gate", "--data", p(&dir.join(name)), "--event", event])
        .args([
            "--name",
            name,
            "--issuer",
            p(issuer),
            "--api",
            "127.0.0.1:0",
        ])
        .args(["--durability", "process", "--server", server])
        .env("GATEMESH_SERVER_TOKEN", TOKEN);
    if let Some(pin) = pin_for(server) {
        cmd.args(["--server-fingerprint", &pin.to_string()]);
    }
    let (child, ready) = spawn_ready(cmd);
    GateProc::new(child, &ready)
}

/// The API tokens of the gates started, by API base: a call to a gate sends its token,
/// any other call the server's.
static GATE_TOKENS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

impl GateProc {
    fn new(child: Child, ready: &Value) -> Self {
        let api = format!("http://{}", ready["api"].as_str().unwrap());
        let token = gatemesh_testkit::api_token(ready);
        GATE_TOKENS.lock().unwrap().push((format!("{api}/"), token));
        Self { child, api }
    }
}

fn token_for(url: &str) -> String {
    let tokens = GATE_TOKENS.lock().unwrap();
    // The newest gate at that address: a port a gate of an earlier test had is free to be
    // another's (found first, the old gate's token had the call refused, 401).
    tokens
        .iter()
        .rev()
        .find(|(base, _)| url.starts_with(base.as_str()))
        .map_or_else(|| TOKEN.to_owned(), |(_, t)| t.clone())
}

async fn call(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let client = gatemesh_node::edge::pinned_builder(pin_for(url))
        .unwrap()
        .build()
        .unwrap();
    let mut r = client
        .request(method, url)
        .bearer_auth(token_for(url))
        .timeout(Duration::from_secs(30));
    if let Some(b) = body {
        r = r.json(&b);
    }
    match r.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

async fn get(url: &str) -> Value {
    let (status, body) = call(reqwest::Method::GET, url, None).await;
    assert_eq!(status, 200, "GET {url}: {body}");
    body
}

async fn post(url: &str, body: Value) -> Value {
    let (status, out) = call(reqwest::Method::POST, url, Some(body)).await;
    assert!((200..300).contains(&status), "POST {url}: {status} {out}");
    out
}

async fn scan(gate: &GateProc, code: &str, scanner: &str) -> Value {
    post(
        &format!("{}/v1/scan", gate.api),
        json!({ "code": code, "scanner": scanner }),
    )
    .await
}

/// Waits (up to 120 s: the fault tests retry with backoff on a loaded machine) until `check` holds.
async fn until(what: &str, check: impl AsyncFnMut() -> bool) {
    let (within, every) = (Duration::from_secs(120), Duration::from_millis(100));
    poll_async(what, within, every, check).await;
}

/// An event at the server with `count` tickets; returns `(tid, code)` pairs and the issuer
/// key file gates verify with.
async fn event(
    server: &ServerProc,
    dir: &Path,
    eid: &str,
    count: usize,
) -> (Vec<(String, String)>, PathBuf) {
    post(
        &format!("{}/v1/events", server.base),
        json!({ "id": eid, "name": "Uplink night", "capacity": count }),
    )
    .await;
    let mut tickets = Vec::new();
    while tickets.len() < count {
        let n = (count - tickets.len()).min(5000);
        let issued = post(
            &format!("{}/v1/events/{eid}/tickets", server.base),
            json!({ "count": n }),
        )
        .await;
        for t in issued["tickets"].as_array().unwrap() {
            tickets.push((
                t["tid"].as_str().unwrap().to_owned(),
                t["code"].as_str().unwrap().to_owned(),
            ));
        }
    }
    let keys = get(&format!("{}/v1/keys", server.base)).await;
    let issuer = dir.join(format!("{eid}-issuer.pub.pem"));
    std::fs::write(&issuer, keys["keys"][0]["pem"].as_str().unwrap()).unwrap();
    (tickets, issuer)
}

/// The gate's live stream (`/v1/stream`), open.
async fn live_stream(gate: &GateProc) -> reqwest::Response {
    let url = format!("{}/v1/stream", gate.api);
    let live = gatemesh_node::edge::pinned_builder(None)
        .unwrap()
        .build()
        .unwrap()
        .get(&url)
        .bearer_auth(token_for(&url))
        .send()
        .await
        .unwrap();
    assert!(live.status().is_success(), "{}", live.status());
    live
}

/// The data of the next event named `name` on a live stream (`pending`: what was read of
/// it and not yet looked at); other events are passed over.
async fn next_event(live: &mut reqwest::Response, pending: &mut String, name: &str) -> Value {
    let named = format!("event: {name}");
    // Keep-alives come every 15 s: a deadline for the event, not for each chunk.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        while let Some(end) = pending.find("\n\n") {
            let block: String = pending.drain(..end + 2).collect();
            if block.lines().any(|l| l == named) {
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                return serde_json::from_str(data.unwrap_or("null")).unwrap();
            }
        }
        let chunk = tokio::time::timeout_at(deadline, live.chunk())
            .await
            .unwrap_or_else(|_| panic!("no {name} event within 30 s"))
            .unwrap()
            .expect("the live stream goes on");
        pending.push_str(&String::from_utf8_lossy(&chunk));
    }
}

async fn uplink(gate: &GateProc) -> Value {
    get(&format!("{}/v1/status", gate.api)).await["uplink"].clone()
}

async fn gate_ticket(gate: &GateProc, tid: &str) -> Value {
    call(
        reqwest::Method::GET,
        &format!("{}/v1/tickets/{tid}", gate.api),
        None,
    )
    .await
    .1
}

/// Every redemption on every gate reached the server, each ticket the server counts as
/// admitted is the one the gates admitted, and nothing was counted twice.
async fn agree(server: &ServerProc, eid: &str, gates: &[&GateProc], admitted: &[&str]) {
    for g in gates {
        until("the gate has uploaded everything", || async {
            let u = uplink(g).await;
            u["backlog"] == 0 && u["cursor"].is_i64()
        })
        .await;
    }
    let stats = get(&format!("{}/v1/events/{eid}/stats", server.base)).await;
    assert_eq!(stats["admitted"], admitted.len(), "{stats}");
    assert_eq!(
        stats["answered_duplicate"], 0,
        "nothing counted twice: {stats}"
    );
    assert_eq!(stats["flagged"], 0, "{stats}");
    for tid in admitted {
        let at_server = get(&format!("{}/v1/events/{eid}/tickets/{tid}", server.base)).await;
        let server_ids: Vec<&str> = at_server["admissions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["redemption_id"].as_str().unwrap())
            .collect();
        let mut gate_ids = HashSet::new();
        for g in gates {
            let t = gate_ticket(g, tid).await;
            for r in t["redemptions"].as_array().into_iter().flatten() {
                gate_ids.insert(r["id"].as_str().unwrap().to_owned());
            }
        }
        assert_eq!(server_ids.len(), 1, "{tid}: {at_server}");
        assert!(
            gate_ids.contains(server_ids[0]),
            "{tid}: {server_ids:?} vs {gate_ids:?}"
        );
    }
}

on_both_backends!(
    the_servers_word_reaches_a_connected_gate,
    gates_with_no_mesh_between_them_are_flagged_by_the_server,
    a_burst_of_voids_reaches_every_change_stream,
);

fn server_for(backend: Backend, dir: &Path) -> (ServerProc, Option<pg::Database>) {
    let pg = backend.database();
    let server = ServerProc::start(
        &dir.join("server"),
        pg.as_ref().map(|d| d.url.clone()),
        free_port(),
    );
    (server, pg)
}

/// `gatemesh bench voids`: a box office's burst of refunds from many clients while change
/// streams follow the event (the server stores voids that arrive together together, and its
/// streams share each read). Every void is answered void and every stream shows every one.
async fn a_burst_of_voids_reaches_every_change_stream(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (server, _pg) = server_for(backend, dir.path());
    let report = dir.path().join("voids.json");
    let pin = server.pin.unwrap().to_string();
    let out = gatemesh()
        .args([
            "bench",
            "voids",
            "--url",
            &server.base,
            "--fingerprint",
            &pin,
        ])
        .args([
            "--token",
            TOKEN,
            "--clients",
            "16",
            "--voids",
            "300",
            "--streams",
            "8",
        ])
        .args(["--report", p(&report)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["voids"], 300, "{r}");
    assert_eq!(r["checks"]["ok"], true, "{r}");
    assert_eq!(r["checks"]["streams_short"], 0, "{r}");
    assert_eq!(r["checks"]["failed_voids"], 0, "{r}");
    // The server agrees: 300 tickets void, each voided once in its audit.
    let event = r["event"].as_str().unwrap();
    let stats = get(&format!("{}/v1/events/{event}/stats", server.base)).await;
    assert_eq!(
        (&stats["tickets"], &stats["void"]),
        (&json!(300), &json!(300)),
        "{stats}"
    );
    let audit = get(&format!("{}/v1/events/{event}/audit", server.base)).await;
    let voids = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["action"] == "void")
        .count();
    assert_eq!(voids, 300, "{audit}");
}

async fn the_servers_word_reaches_a_connected_gate(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (server, _pg) = server_for(backend, dir.path());
    let (tickets, issuer) = event(&server, dir.path(), "WORD", 6).await;
    let gate = start_gate(dir.path(), "WORD", "North", &issuer, &server.base);
    until("the gate streams the server's changes", || async {
        let status = get(&format!("{}/v1/status", gate.api)).await;
        status["uplink"]["streaming"] == true && status["manifest_tickets"] == 6
    })
    .await;

    // An admission at the gate reaches the server.
    let (t0, c0) = &tickets[0];
    assert_eq!(scan(&gate, c0, "s1").await["verdict"], "admit");

    // A refund at the server reaches the gate, which then turns the ticket away; its live
    // stream says so (what a supervisor's screen and the rehearsal follow).
    let (mut live, mut pending) = (live_stream(&gate).await, String::new());
    let (t1, c1) = &tickets[1];
    post(
        &format!("{}/v1/events/WORD/tickets/{t1}/void", server.base),
        json!({ "reason": "refunded" }),
    )
    .await;
    until("the void reached the gate", || async {
        gate_ticket(&gate, t1).await["standing"]["state"] == "void"
    })
    .await;
    let r = scan(&gate, c1, "s1").await;
    assert_eq!(
        (r["verdict"].as_str(), r["reason"].as_str()),
        (Some("reject"), Some("void"))
    );
    let e = next_event(&mut live, &mut pending, "standing").await;
    assert_eq!(
        (
            e["tid"].as_str(),
            e["standing"]["state"].as_str(),
            e["standing"]["reason"].as_str()
        ),
        (Some(t1.as_str()), Some("void"), Some("refunded")),
        "{e}"
    );

    // A transfer: the old code is refused, the new one (issued after the gate started) admits.
    let (t2, c2) = &tickets[2];
    let new = post(
        &format!("{}/v1/events/WORD/tickets/{t2}/transfer", server.base),
        json!({ "holder": "Robin" }),
    )
    .await;
    until("the transfer reached the gate", || async {
        gate_ticket(&gate, t2).await["standing"]["state"] == "transferred"
    })
    .await;
    assert_eq!(scan(&gate, c2, "s1").await["reason"], "transferred");
    let e = next_event(&mut live, &mut pending, "standing").await;
    assert_eq!(
        (
            e["tid"].as_str(),
            e["standing"]["state"].as_str(),
            &e["standing"]["to"]
        ),
        (Some(t2.as_str()), Some("transferred"), &new["tid"]),
        "{e}"
    );
    let r = scan(&gate, new["code"].as_str().unwrap(), "s1").await;
    assert_eq!(
        (r["verdict"].as_str(), r["reason"].as_str()),
        (Some("admit"), Some("valid"))
    );

    // A mistaken admission reverted at the server: the gate admits the ticket again.
    until("the admission reached the server", || async {
        let t = get(&format!("{}/v1/events/WORD/tickets/{t0}", server.base)).await;
        t["admissions"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    post(
        &format!("{}/v1/events/WORD/tickets/{t0}/revert", server.base),
        json!({ "actor": "Kim", "reason": "scanned the wrong person" }),
    )
    .await;
    until("the revert reached the gate", || async {
        gate_ticket(&gate, t0).await["resolutions"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["action"] == "revert"))
    })
    .await;
    // One revert, with the organizer's name and reason (this gate has no mesh identity, so
    // it writes the server's decision as its own; a gate that signs takes the server's
    // signed record: `gatemesh-node`'s contract test).
    let t = gate_ticket(&gate, t0).await;
    let revert = &t["resolutions"][0];
    assert_eq!(t["resolutions"].as_array().map(Vec::len), Some(1), "{t}");
    assert_eq!(
        (&revert["staff"], &revert["note"]),
        (&json!("Kim"), &json!("scanned the wrong person")),
        "{t}"
    );
    let r = scan(&gate, c0, "s2").await;
    assert_eq!(r["verdict"], "admit", "{r}");
    agree(
        &server,
        "WORD",
        &[&gate],
        &[t0, new["tid"].as_str().unwrap()],
    )
    .await;

    // After the event: the server holds every redemption, so the gate's data may go.
    drop(gate);
    let data = dir.path().join("North");
    let out = gatemesh()
        .args(["gate", "--data", p(&data), "--event", "WORD", "--forget"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let forgot: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(forgot["unsent"], 0, "{forgot}");
    assert!(forgot["redemptions"].as_u64() >= Some(3), "{forgot}");
    assert!(!data.exists());
}

async fn gates_with_no_mesh_between_them_are_flagged_by_the_server(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (server, _pg) = server_for(backend, dir.path());
    let (tickets, issuer) = event(&server, dir.path(), "COPY", 4).await;
    let a = start_gate(dir.path(), "COPY", "North", &issuer, &server.base);
    let b = start_gate(dir.path(), "COPY", "South", &issuer, &server.base);
    for g in [&a, &b] {
        until("the gate streams", || async {
            uplink(g).await["streaming"] == true
        })
        .await;
    }
    // A screenshot: the holder at North, a friend at South. No LAN between the gates, so
    // both admit; the server sees both journals and flags the ticket.
    let (tid, code) = &tickets[0];
    assert_eq!(scan(&a, code, "n1").await["verdict"], "admit");
    until("North uploaded", || async {
        uplink(&a).await["backlog"] == 0
    })
    .await;
    assert_eq!(scan(&b, code, "s1").await["verdict"], "admit");
    for g in [&a, &b] {
        until("the flag reached the gate", || async {
            let flags = get(&format!("{}/v1/flags", g.api)).await;
            flags["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["tid"] == tid.as_str()))
        })
        .await;
    }
    let flags = get(&format!("{}/v1/events/COPY/flags", server.base)).await;
    assert_eq!(flags["flags"][0]["tid"], tid.as_str());
    assert_eq!(flags["flags"][0]["admissions"].as_array().unwrap().len(), 2);
    // Staff accept it at the server (the same person, back in): the flag clears everywhere.
    post(
        &format!("{}/v1/events/COPY/flags/{tid}/resolve", server.base),
        json!({ "action": "accept", "staff": "Kim", "note": "same person, re-scanned" }),
    )
    .await;
    for g in [&a, &b] {
        until("the resolution reached the gate", || async {
            let flags = get(&format!("{}/v1/flags", g.api)).await;
            flags["flags"].as_array().is_some_and(Vec::is_empty)
        })
        .await;
    }
    let audit = get(&format!("{}/v1/events/COPY/audit", server.base)).await;
    assert_eq!(audit["audit"][0]["action"], "resolve:accept");

    // A second copy, this time resolved by staff at a gate: the server learns the decision
    // through the uplink, and the other gate through the server.
    let (tid, code) = &tickets[1];
    assert_eq!(scan(&a, code, "n1").await["verdict"], "admit");
    until("North uploaded", || async {
        uplink(&a).await["backlog"] == 0
    })
    .await;
    assert_eq!(scan(&b, code, "s1").await["verdict"], "admit");
    until("the flag reached North", || async {
        get(&format!("{}/v1/tickets/{tid}", a.api)).await["flagged"] == true
    })
    .await;
    post(
        &format!("{}/v1/flags/{tid}/resolve", a.api),
        json!({ "action": "deny", "staff": "Ana", "note": "two people, one ticket" }),
    )
    .await;
    until("the server took the gate's decision", || async {
        let t = get(&format!("{}/v1/events/COPY/tickets/{tid}", server.base)).await;
        t["status"] == "void" && t["flagged"] == false
    })
    .await;
    until("South learned the decision", || async {
        let t = gate_ticket(&b, tid).await;
        t["flagged"] == false
            && t["resolutions"]
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r["action"] == "deny"))
    })
    .await;
    assert_eq!(scan(&b, code, "s1").await["verdict"], "reject");
    let stats = get(&format!("{}/v1/events/COPY/stats", server.base)).await;
    assert_eq!(stats["flagged"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gate_paired_by_link_reports_to_the_manager_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&dir.path().join("server"), None, free_port());
    let (tickets, _) = event(&server, dir.path(), "PAIR", 3).await;
    let code = post(
        &format!("{}/v1/events/PAIR/devices", server.base),
        json!({ "name": "North-1" }),
    )
    .await;
    let paired = dir.path().join("paired");
    let link = code["link"].as_str().unwrap();
    // Through a man in the middle with a certificate of its own: refused, nothing written.
    let upstream = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let mitm = gatemesh_testkit::mitm::Mitm::start(upstream).await;
    let intercepted = link.replace(&server.base, &format!("https://{}", mitm.addr));
    let out = gatemesh()
        .args(["pair", "--link", &intercepted, "--out", p(&paired)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certificate other than"), "{stderr}");
    assert!(!paired.exists(), "nothing is written");
    assert_eq!(mitm.intercepted.load(Ordering::Relaxed), 0);
    // Plain HTTP off loopback is refused before anything is sent (TEST-NET-1).
    let out = gatemesh()
        .args([
            "pair",
            "--server",
            "http://192.0.2.7:8080",
            "--code",
            "ABCDE-12345",
        ])
        .args(["--out", p(&paired)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not loopback"));
    assert!(!paired.exists());
    // The real link: the code was not spent by the refused attempt.
    let out = gatemesh()
        .args(["pair", "--link", link])
        .args(["--out", p(&paired)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Everything comes from the pairing directory; no mDNS outside a test namespace.
    let mut cmd = gatemesh();
    cmd.args([
        "gate",
        "--data",
        p(&dir.path().join("gate")),
        "--paired",
        p(&paired),
    ])
    .args([
        "--api",
        "127.0.0.1:0",
        "--mesh",
        "127.0.0.1:0",
        "--discovery",
        "off",
    ])
    .args(["--durability", "process"]);
    let (child, ready) = spawn_ready(cmd);
    let gate = GateProc::new(child, &ready);
    assert!(
        ready["mesh"].is_string(),
        "the paired identity joins the mesh: {ready}"
    );
    assert_eq!(scan(&gate, &tickets[0].1, "s1").await["verdict"], "admit");
    until("the manager sees the gate and its admission", || async {
        let gates = get(&format!("{}/v1/events/PAIR/gates", server.base)).await;
        let g = &gates["gates"][0];
        g["name"] == "North-1"
            && g["online"] == true
            && g["paired"] == true
            && g["heartbeat"]["counts"]["admit"] == 1
            && g["heartbeat"]["uplink"]["backlog"] == 0
    })
    .await;
    agree(&server, "PAIR", &[&gate], &[tickets[0].0.as_str()]).await;

    // Staff at the paired gate resolve a flag: the server records it as the gate's, by the
    // name its credential carries, whatever name staff gave ("organizer" is only a name),
    // marked as made with the gate's API token.
    let (t1, c1) = &tickets[1];
    assert_eq!(scan(&gate, c1, "s1").await["verdict"], "admit");
    until("the admission reached the server", || async {
        let t = get(&format!("{}/v1/events/PAIR/tickets/{t1}", server.base)).await;
        t["admissions"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    let elsewhere = json!({ "redemptions": [{
        "redemption_id": "south-copy", "tid": t1, "gate": "South", "scanner": "s9",
        "at": "2026-11-29T20:00:00Z",
    }] });
    post(
        &format!("{}/v1/events/PAIR/redemptions", server.base),
        elsewhere,
    )
    .await;
    until("the flag reached the gate", || async {
        gate_ticket(&gate, t1).await["flagged"] == true
    })
    .await;
    post(
        &format!("{}/v1/flags/{t1}/resolve", gate.api),
        json!({ "action": "accept", "staff": "organizer", "note": "same person" }),
    )
    .await;
    until("the server took the gate's decision", || async {
        let t = get(&format!("{}/v1/events/PAIR/tickets/{t1}", server.base)).await;
        t["flagged"] == false && t["resolution"]["staff"] == "North-1 / organizer (api token)"
    })
    .await;
    // A revert of an admission nobody flagged is the organizer's: the server refuses it from
    // the gate, which skips it (and says so) instead of sending it for ever.
    post(
        &format!("{}/v1/flags/{}/resolve", gate.api, tickets[0].0),
        json!({ "action": "revert", "staff": "Ana", "note": "wrong person" }),
    )
    .await;
    until("the gate skipped the revert", || async {
        uplink(&gate).await["last_skipped"]
            .as_str()
            .is_some_and(|s| s.contains(tickets[0].0.as_str()))
    })
    .await;
    let t = get(&format!(
        "{}/v1/events/PAIR/tickets/{}",
        server.base, tickets[0].0
    ))
    .await;
    assert_eq!(t["admissions"].as_array().unwrap().len(), 1, "{t}");
    let audit = get(&format!("{}/v1/events/PAIR/audit", server.base)).await;
    let actors: Vec<&str> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["North-1 / organizer (api token)"], "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_server_killed_and_restarted_while_gates_upload() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&dir.path().join("server"), None, free_port());
    let (tickets, issuer) = event(&server, dir.path(), "KILL", 300).await;
    let a = start_gate(dir.path(), "KILL", "North", &issuer, &server.base);
    let b = start_gate(dir.path(), "KILL", "South", &issuer, &server.base);
    let (north, south) = tickets.split_at(150);
    let scans = |gate: &GateProc, list: &[(String, String)]| {
        let api = gate.api.clone();
        let codes: Vec<String> = list.iter().map(|(_, c)| c.clone()).collect();
        tokio::spawn(async move {
            for code in codes {
                let r = post(
                    &format!("{api}/v1/scan"),
                    json!({ "code": code, "scanner": "s" }),
                )
                .await;
                assert_eq!(r["verdict"], "admit");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let (ta, tb) = (scans(&a, north), scans(&b, south));
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        server.kill();
        tokio::time::sleep(Duration::from_millis(600)).await;
        server.restart();
    }
    ta.await.unwrap();
    tb.await.unwrap();
    let all: Vec<&str> = tickets.iter().map(|(t, _)| t.as_str()).collect();
    agree(&server, "KILL", &[&a, &b], &all).await;
}

/// A TCP proxy that passes every request to the server but, on every other connection,
/// throws the server's response away and hangs up: the request was done, the answer lost.
async fn lossy_proxy(upstream: u16) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    tokio::spawn(async move {
        let mut n = 0usize;
        while let Ok((client, _)) = listener.accept().await {
            n += 1;
            let lose = n.is_multiple_of(2);
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                });
                if lose {
                    use tokio::io::AsyncReadExt;
                    let mut buf = [0u8; 4096];
                    // The server answered: swallow it and hang up on the client.
                    if matches!(sr.read(&mut buf).await, Ok(n) if n > 0) {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    up.abort();
                } else {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                    up.abort();
                }
            });
        }
    });
    (port, dropped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn responses_lost_on_the_way_back_cost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Plain HTTP on loopback: the proxy loses HTTP answers, which it could not see in TLS.
    let server = ServerProc::start_plain(&dir.path().join("server"), free_port());
    let (tickets, issuer) = event(&server, dir.path(), "LOSSY", 200).await;
    let (proxy, dropped) = lossy_proxy(server.port).await;
    let gate = start_gate(
        dir.path(),
        "LOSSY",
        "North",
        &issuer,
        &format!("http://127.0.0.1:{proxy}"),
    );
    for (i, (_, code)) in tickets.iter().enumerate() {
        assert_eq!(scan(&gate, code, "s").await["verdict"], "admit");
        if i.is_multiple_of(20) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let all: Vec<&str> = tickets.iter().map(|(t, _)| t.as_str()).collect();
    agree(&server, "LOSSY", &[&gate], &all).await;
    assert!(
        dropped.load(Ordering::Relaxed) > 0,
        "the proxy lost some answers"
    );
    assert_eq!(
        uplink(&gate).await["learned"],
        0,
        "a retry is answered as the first try was"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gate_offline_for_a_long_stretch_uploads_thousands() {
    const N: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&dir.path().join("server"), None, free_port());
    let (tickets, issuer) = event(&server, dir.path(), "LONG", N).await;
    // The uplink is down for the whole show; the gate decides alone.
    server.kill();
    let gate = start_gate(dir.path(), "LONG", "North", &issuer, &server.base);
    let next = Arc::new(AtomicUsize::new(0));
    let codes: Arc<Vec<String>> = Arc::new(tickets.iter().map(|(_, c)| c.clone()).collect());
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (api, next, codes) = (gate.api.clone(), next.clone(), codes.clone());
        let token = token_for(&format!("{api}/"));
        workers.push(tokio::spawn(async move {
            let client = gatemesh_testkit::api_client(&token, Duration::from_secs(30));
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(code) = codes.get(i) else { return };
                let r: Value = client
                    .post(format!("{api}/v1/scan"))
                    .json(&json!({ "code": code, "scanner": "s" }))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                assert_eq!(r["verdict"], "admit");
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    until(
        "the gate counts everything as waiting for the server",
        || async {
            let u = uplink(&gate).await;
            u["backlog"] == N && u["last_error"].is_string() && u["uploaded"] == 0
        },
    )
    .await;
    // The uplink returns.
    server.restart();
    let all: Vec<&str> = tickets.iter().map(|(t, _)| t.as_str()).collect();
    agree(&server, "LONG", &[&gate], &all).await;
}

/// A pairing the server cannot finish (here: the event's mesh CA key on disk is damaged) is
/// logged by `gatemesh server` with its cause, `gatemesh pair` exits 3 saying the code is
/// still good, and once the key is back the same code pairs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pairing_the_server_cannot_finish_is_logged_and_the_code_stays_good() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("srv");
    let log = dir.path().join("server.log");
    let mut child = gatemesh()
        .args(["server", "--data", p(&data), "--admin-token", TOKEN])
        .args(["--plain-http", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    let base = ready["url"].as_str().unwrap().to_owned();
    post(
        &format!("{base}/v1/events"),
        json!({ "id": "LOGS", "name": "Logs" }),
    )
    .await;
    let code = post(
        &format!("{base}/v1/events/LOGS/devices"),
        json!({ "name": "North-1" }),
    )
    .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    // The event's mesh CA, damaged: made aside if the server has not made it yet.
    let ca = data.join("mesh-ca/LOGS");
    let before = ca.join("ca.key").exists();
    let good = before.then(|| std::fs::read(ca.join("ca.key")).unwrap());
    std::fs::create_dir_all(&ca).unwrap();
    if !before {
        std::fs::write(ca.join("ca.pem"), "not a certificate").unwrap();
    }
    std::fs::write(ca.join("ca.key"), "not a key").unwrap();
    let pair = |out: &str| {
        gatemesh()
            .args(["pair", "--server", &base, "--code", &code, "--out"])
            .arg(dir.path().join(out))
            .output()
            .unwrap()
    };
    let failed = pair("p1");
    let said = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(3), "{said}");
    assert!(said.contains("still good"), "{said}");
    assert!(!dir.path().join("p1").exists());
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("issuing the mesh identity failed") && logged.contains("North-1"),
        "the server's log: {logged}"
    );
    match good {
        Some(key) => std::fs::write(ca.join("ca.key"), key).unwrap(),
        None => std::fs::remove_dir_all(&ca).unwrap(),
    }
    let paired = pair("p2");
    assert!(
        paired.status.success(),
        "{}",
        String::from_utf8_lossy(&paired.stderr)
    );
    let _ = child.kill();
    let _ = child.wait();
}
