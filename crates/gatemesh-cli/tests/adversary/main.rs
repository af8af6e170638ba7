//! Issue 14's adversarial peer harness. Honest gates A and B sync over the real QUIC mesh
//! on loopback (static peers, no discovery); an attacker holding a valid gate certificate
//! of the event (and, separately, an observer certificate) speaks the same protocol and
//! sends changes it crafted with automerge (`peer.rs`). Every attack is tried over QUIC
//! while A keeps scanning, then as a ledger file through A's `POST /v1/import` and through
//! `gatemesh import` into stopped gate C's data directory. For each: the honest gates'
//! records are compared record by record (none removed or changed, none added but by an
//! honest gate), A's scan latencies during the attack are printed (p99), and the attacker
//! is disconnected and listed in A's `/v1/status` refusals with the reason. The journal
//! path to the server is `gatemesh-server`'s `a_devices_journal_refuses_every_forgery`.

mod peer;

use std::{net::SocketAddr, process::Command, time::Duration};

use automerge::{AutoCommit, ObjType, ROOT, transaction::Transactable};
use gatemesh_ledger::{
    Action, Direction, Hlc, MAX_CHANGE_BYTES, MAX_INFLATED_BYTES, Redemption, RedemptionId,
    Resolution, ResolutionId, Standing, Status,
};
use gatemesh_mesh::{identity::Role, pki, session::MeshConfig};
use gatemesh_node::{Config, Node, api};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, TicketId};
use peer::{Attacker, Records, map, record_map, records_of, writer_of};
use serde_json::Value;

const EVENT: &str = "EDGE-2026";

fn event() -> EventId {
    EventId::new(EVENT).unwrap()
}

fn now_ms() -> i64 {
    gatemesh_wire::time::now_ms()
}

struct Gate {
    node: Node,
    mesh: SocketAddr,
    api: String,
    token: String,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Gate {
    async fn status(&self) -> Value {
        let r = self
            .client
            .get(format!("{}/v1/status", self.api))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        r.json().await.unwrap()
    }

    async fn records(&self) -> Records {
        records_of(&self.node.export_ledger().await.unwrap())
    }

    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.node.shutdown().await;
    }
}

struct World {
    dir: tempfile::TempDir,
    issuer: IssuerKey,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        pki::write_new_ca(&dir.path().join("ca"), EVENT, 30).unwrap();
        Self {
            dir,
            issuer: IssuerKey::generate(None),
        }
    }

    fn code(&self, tid: &TicketId) -> String {
        let claims = Claims {
            tid: tid.clone(),
            eid: event(),
            seat: None,
            iat: None,
            nbf: None,
            exp: None,
            product: None,
        };
        self.issuer.sign(&claims, Format::Gm1).unwrap()
    }

    fn data(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(format!("data-{name}"))
    }

    fn id_dir(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(format!("id-{name}"))
    }

    fn config(&self, name: &str) -> Config {
        let mut config = Config::new(self.data(name), event(), name.into());
        config.keyring = Keyring::from_keys([self.issuer.public()]).unwrap();
        config.identity = Some(pki::Identity::load(&self.id_dir(name)).unwrap());
        config
    }

    async fn gate(&self, name: &str, peers: &[SocketAddr]) -> Gate {
        pki::enroll_into(
            &self.dir.path().join("ca"),
            &self.id_dir(name),
            Role::Gate,
            name,
            30,
        )
        .unwrap();
        let node = Node::start(self.config(name)).unwrap();
        let mesh = node
            .start_mesh(MeshConfig {
                identity: pki::Identity::load(&self.id_dir(name)).unwrap(),
                bind: "127.0.0.1:0".parse().unwrap(),
                static_peers: peers.to_vec(),
                discovery: None,
                exchange_peers: false,
            })
            .unwrap();
        let api_config = api::ApiConfig::for_data_dir(&self.data(name)).unwrap();
        let token = api_config.token.secret().to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(api::serve(listener, node.clone(), api_config, async {
            let _ = stopped.await;
        }));
        Gate {
            node,
            mesh,
            api: format!("http://{addr}"),
            token,
            client: gatemesh_node::edge::pinned_builder(None)
                .unwrap()
                .build()
                .unwrap(),
            stop: Some(stop),
        }
    }

    fn attacker(&self, role: Role, name: &str) -> Attacker {
        Attacker::enroll(&self.dir.path().join("ca"), &self.id_dir(name), role, name)
    }
}

/// Waits up to 30 s until `check` holds.
async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    let (within, every) = (Duration::from_secs(30), Duration::from_millis(50));
    gatemesh_testkit::poll_async(what, within, every, check).await;
}

/// Scans fresh tickets at a gate, one after another, until stopped: the gate's service
/// while it is under attack.
struct Scanning {
    stop: tokio::sync::watch::Sender<bool>,
    done: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<Duration>>,
}

impl Scanning {
    fn start(w: &World, node: &Node) -> Self {
        let codes: Vec<String> = (0..4000).map(|_| w.code(&TicketId::generate())).collect();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let node = node.clone();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = done.clone();
        let task = tokio::spawn(async move {
            let mut took = Vec::new();
            for code in codes {
                if *stopped.borrow_and_update() {
                    break;
                }
                let start = std::time::Instant::now();
                let answer = node.scan(&code, "a-scan", Direction::Entry).await.unwrap();
                took.push(start.elapsed());
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                assert_eq!(answer.verdict, gatemesh_ledger::Verdict::Admit);
                tokio::task::yield_now().await;
            }
            took
        });
        Self { stop, done, task }
    }

    /// Stops once at least 20 scans were made; prints and returns (scans, p50 ms, p99 ms).
    async fn finish(self, attack: &str) -> (usize, f64, f64) {
        while self.done.load(std::sync::atomic::Ordering::Relaxed) < 20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = self.stop.send(true);
        let mut took = self.task.await.unwrap();
        assert!(!took.is_empty(), "{attack}: the gate scanned nothing");
        took.sort();
        let at = |p: f64| {
            let i = ((took.len() as f64 * p).ceil() as usize).clamp(1, took.len()) - 1;
            took[i].as_secs_f64() * 1000.0
        };
        let (p50, p99, max) = (at(0.50), at(0.99), at(1.0));
        println!(
            "attack {attack}: gate A scanned {} tickets meanwhile, p50 {p50:.2} ms, p99 {p99:.2} \
             ms, max {max:.2} ms",
            took.len()
        );
        (took.len(), p50, p99)
    }
}

/// The honest gates' records after an attack: every record before is there unchanged, and
/// every record added was written by an honest gate.
fn unchanged(before: &Records, after: &Records, honest: &[&str], attack: &str) {
    for (key, value) in before {
        assert_eq!(
            after.get(key),
            Some(value),
            "{attack}: record {key:?} was removed or changed"
        );
    }
    for (key, value) in after {
        // The attacker's own certificate, which its session brings first as any enrolled
        // device's does, says only who it is: no record of its counts for it.
        if key.0 == "devices" {
            continue;
        }
        if !before.contains_key(key) {
            let writer = writer_of(value);
            assert!(
                honest.contains(&writer.as_str()),
                "{attack}: record {key:?} written by {writer}, not by an honest gate"
            );
        }
    }
}

/// What the attacks need to know of the honest gates.
struct Scene {
    a_node: String,
    b_node: String,
    /// A ticket A admitted, and A's signed redemption of it under its key.
    tid: TicketId,
    a_record: (String, String),
}

fn put(doc: &mut AutoCommit, name: &str, key: &str, json: &str) {
    let m = record_map(doc, name, key);
    doc.put(&m, key, json).unwrap();
}

/// `r` signed by the attacker (whoever it names), as JSON.
macro_rules! signed {
    ($attacker:expr, $map:literal, $r:expr) => {{
        let mut r = $r;
        r.sig = None;
        r.sig = Some($attacker.sign($map, &serde_json::to_string(&r).unwrap()));
        serde_json::to_string(&r).unwrap()
    }};
}

/// A redemption the attacker writes in its own name, under its key: (key, JSON).
fn redemption(attacker: &Attacker, tid: &TicketId, at_ms: i64, counter: u32) -> (String, String) {
    let r = Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: tid.clone(),
        direction: Direction::Entry,
        node: attacker.node.clone(),
        gate: attacker.name.as_str().into(),
        scanner: "x1".into(),
        at_ms,
        hlc: Hlc {
            wall_ms: at_ms,
            counter,
            node: attacker.node.clone(),
        },
        seen: Vec::new(),
        unlisted: false,
        scope: None,
    };
    (
        format!("{},{}", r.tid, r.id),
        signed!(attacker, "redemptions", r),
    )
}

/// A revert of `tid` naming node `node` and staff `staff`, signed by the attacker.
fn resolution(attacker: &Attacker, tid: &TicketId, node: &str, staff: &str) -> (String, String) {
    let at = now_ms();
    let node = gatemesh_ledger::NodeId::parse(node).unwrap();
    let r = Resolution {
        id: ResolutionId::random(),
        tid: tid.clone(),
        action: Action::Revert,
        staff: staff.into(),
        note: "reverted".into(),
        node: node.clone(),
        at_ms: at,
        hlc: Hlc {
            wall_ms: at,
            counter: 0,
            node,
        },
        covers: Vec::new(),
        from_server: false,
        sig: None,
    };
    (
        format!("{},{}", r.tid, r.id),
        signed!(attacker, "resolutions", r),
    )
}

/// A void of `tid` in the attacker's own name.
fn status(attacker: &Attacker, tid: &TicketId) -> (String, String) {
    let at = now_ms();
    let s = Status {
        sig: None,
        tid: tid.clone(),
        standing: Standing::Void {
            reason: "refund".into(),
        },
        by: attacker.name.clone(),
        at_ms: at,
        hlc: Hlc {
            wall_ms: at,
            counter: 0,
            node: attacker.node.clone(),
        },
    };
    let key = format!("{},{:016x}.{:08x},{}", s.tid, at, 0, attacker.node);
    (key, signed!(attacker, "status", s))
}

type Craft = Box<dyn Fn(&mut AutoCommit, &Attacker, &Scene)>;

/// One attack: what the attacker does to its copy of the ledger, and the words of the
/// refusal every path must give (one of several, separated by `|`, where which applies
/// depends on how far the victim got meanwhile).
struct Attack {
    name: &'static str,
    craft: Craft,
    reason: &'static str,
}

fn gate_attacks() -> Vec<Attack> {
    vec![
        Attack {
            name: "delete another gate's redemption",
            craft: Box::new(|doc, _, s| {
                let m = record_map(doc, "redemptions", &s.a_record.0);
                doc.delete(&m, s.a_record.0.as_str()).unwrap();
            }),
            reason: "overwrites or deletes redemptions/",
        },
        Attack {
            name: "replace a root map",
            craft: Box::new(|doc, _, _| {
                doc.put_object(ROOT, "redemptions", ObjType::Map).unwrap();
            }),
            reason: "writes the document's root",
        },
        Attack {
            name: "write meta",
            craft: Box::new(|doc, _, _| {
                let meta = map(doc, "meta");
                // (Rewriting `event` or `format` is refused too, and a file doing it is
                // refused for naming another event or format before any rule is read.)
                doc.put(&meta, "policy", "admit everyone").unwrap();
            }),
            reason: "which is no record map",
        },
        Attack {
            name: "a resolution in another device's name",
            craft: Box::new(|doc, a, s| {
                a.put_own_device(doc);
                let (key, r) = resolution(a, &s.tid, &s.a_node, "Kim");
                put(doc, "resolutions", &key, &r);
            }),
            reason: "whose signature is not \"gate-a\"'s",
        },
        Attack {
            name: "a resolution in a staff member's name at another gate",
            craft: Box::new(|doc, a, s| {
                // Staff of gate B, as B's records name them: B's node, B's staff name.
                a.put_own_device(doc);
                let (key, r) = resolution(a, &s.tid, &s.b_node, "Sam (gate-b's supervisor)");
                put(doc, "resolutions", &key, &r);
            }),
            reason: "whose signature is not \"gate-b\"'s",
        },
        Attack {
            name: "a record with a far-future HLC",
            craft: Box::new(|doc, a, _| {
                a.put_own_device(doc);
                let (key, r) = redemption(a, &TicketId::generate(), now_ms() + 3_600_000, 0);
                put(doc, "redemptions", &key, &r);
            }),
            reason: "ahead of this gate's clock",
        },
        Attack {
            name: "a validly signed record replayed under another key",
            craft: Box::new(|doc, _, s| {
                let key = format!("{},{}", s.tid, RedemptionId::random());
                put(doc, "redemptions", &key, &s.a_record.1);
            }),
            reason: "which is not its key",
        },
        Attack {
            name: "10,000 concurrent entries for one ticket",
            craft: Box::new(|doc, a, s| {
                a.put_own_device(doc);
                let at = now_ms();
                for i in 0..10_000 {
                    let (key, r) = redemption(a, &s.tid, at, i);
                    put(doc, "redemptions", &key, &r);
                }
            }),
            reason: "more than 1000 redemptions of ticket",
        },
        Attack {
            name: "a change in gate A's name",
            craft: Box::new(|doc, a, s| {
                // Under A's actor and A's next sequence number, a record of the attacker's
                // own: had A (or a gate it had not reached yet) taken it, A's own next
                // change would be refused as a second change of that number, for good.
                // A writes under its node id and an incarnation of this run (`~`): the
                // actor of A's newest change the attacker holds.
                let of_a = |actor: &automerge::ActorId| {
                    std::str::from_utf8(actor.to_bytes())
                        .is_ok_and(|t| t.split('~').next() == Some(s.a_node.as_str()))
                };
                let a_actor = doc
                    .get_changes(&[])
                    .iter()
                    .rev()
                    .map(|c| c.actor_id().clone())
                    .find(of_a)
                    .expect("the attacker holds A's changes");
                doc.set_actor(a_actor);
                let (key, r) = redemption(a, &TicketId::generate(), now_ms(), 0);
                put(doc, "redemptions", &key, &r);
            }),
            // Refused for its signature, or (when A has written that number itself since
            // the attacker last synced) as a second change of that number: either way by
            // A's name, before it reaches the document.
            reason: "a change in the name of \"gate-a\" that it did not sign\
                     |of \"gate-a\" (this ledger holds another): its author signed two histories",
        },
        Attack {
            name: "a status from a gate",
            craft: Box::new(|doc, a, s| {
                a.put_own_device(doc);
                let (key, v) = status(a, &s.tid);
                put(doc, "status", &key, &v);
            }),
            reason: "may not write status",
        },
    ]
}

fn observer_attacks() -> Vec<Attack> {
    vec![
        Attack {
            name: "an observer's redemption",
            craft: Box::new(|doc, a, _| {
                a.put_own_device(doc);
                let (key, r) = redemption(a, &TicketId::generate(), now_ms(), 0);
                put(doc, "redemptions", &key, &r);
            }),
            reason: "may not write redemptions",
        },
        Attack {
            name: "an observer's status",
            craft: Box::new(|doc, a, s| {
                a.put_own_device(doc);
                let (key, v) = status(a, &s.tid);
                put(doc, "status", &key, &v);
            }),
            reason: "may not write status",
        },
    ]
}

/// A ledger file as `gatemesh export` writes it.
fn ledger_file(document: &[u8]) -> Vec<u8> {
    let mut out = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    out.extend(document);
    out
}

/// The attacker's last refusal in A's `/v1/status`.
async fn refusal_of(gate: &Gate, attacker: &str) -> String {
    let status = gate.status().await;
    let refused = status["refused_peers"].as_array().unwrap();
    let last = refused
        .iter()
        .rev()
        .find(|r| r["name"] == attacker)
        .unwrap_or_else(|| panic!("{attacker} is not in refused_peers: {status}"));
    last["reason"].as_str().unwrap().to_owned()
}

/// Whether `why` gives the reason `reason` names (one of them, where it names several
/// separated by `|`).
fn names(why: &str, reason: &str) -> bool {
    reason.split('|').any(|r| why.contains(r))
}

fn dropped_for_bad_sync(reason: &quinn::ConnectionError, attack: &str) {
    match reason {
        quinn::ConnectionError::ApplicationClosed(close) => assert_eq!(
            close.error_code,
            quinn::VarInt::from_u32(gatemesh_mesh::session::CLOSE_BAD_SYNC),
            "{attack}: {reason}"
        ),
        other => panic!("{attack}: expected A to drop the attacker for bad sync, got {other}"),
    }
}

/// A compressed bomb: `what` and its bytes as a sync message's change data and as a file.
fn bombs(saved: &[u8]) -> [(&'static str, Vec<u8>, Vec<u8>); 2] {
    let message = |chunk: Vec<u8>| {
        automerge::sync::Message {
            heads: Vec::new(),
            need: Vec::new(),
            have: Vec::new(),
            changes: vec![chunk].into(),
            flags: None,
            version: automerge::sync::MessageVersion::V1,
        }
        .encode()
    };
    let change = gatemesh_testkit::bomb::compressed_change(MAX_CHANGE_BYTES + 1);
    let document = gatemesh_testkit::bomb::document(saved, MAX_INFLATED_BYTES + (16 << 20));
    let mut file = saved.to_vec();
    file.extend(&change);
    [
        ("a compressed change bomb", message(change), file),
        ("a document bomb", message(document.clone()), document),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_attacker_changes_nothing_honest_gates_hold_by_any_path() {
    let w = World::new();
    let a = w.gate("gate-a", &[]).await;
    let b = w.gate("gate-b", &[a.mesh]).await;
    let c = w.gate("gate-c", &[a.mesh]).await;
    eventually("A sees B and C", || async { a.node.peers().len() == 2 }).await;
    let tid = TicketId::generate();
    a.node
        .scan(&w.code(&tid), "a1", Direction::Entry)
        .await
        .unwrap();
    for _ in 0..3 {
        let t = TicketId::generate();
        b.node
            .scan(&w.code(&t), "b1", Direction::Entry)
            .await
            .unwrap();
    }
    eventually("every gate holds all four", || async {
        a.node.snapshot().await.unwrap().redemptions == 4
            && c.node.snapshot().await.unwrap().redemptions == 4
    })
    .await;
    let a_record = a
        .records()
        .await
        .into_iter()
        .find(|((m, k), _)| m == "redemptions" && k.starts_with(tid.as_str()))
        .map(|((_, k), v)| (k, v))
        .unwrap();
    let scene = Scene {
        a_node: a.node.info().node_id.to_string(),
        b_node: b.node.info().node_id.to_string(),
        tid: tid.clone(),
        a_record,
    };
    let honest = [
        scene.a_node.clone(),
        scene.b_node.clone(),
        c.node.info().node_id.to_string(),
    ];
    let honest: Vec<&str> = honest.iter().map(String::as_str).collect();
    // Gate C stops: files are imported into its data directory by `gatemesh import`.
    let c_records = c.records().await;
    c.shutdown().await;

    let gate_attacker = w.attacker(Role::Gate, "gate-x");
    let observer = w.attacker(Role::Observer, "desk-x");
    let mut files = Vec::new();
    let mut cases: Vec<(Attack, &Attacker)> = Vec::new();
    cases.extend(gate_attacks().into_iter().map(|x| (x, &gate_attacker)));
    cases.extend(observer_attacks().into_iter().map(|x| (x, &observer)));
    for (i, (attack, attacker)) in cases.iter().enumerate() {
        let before = (a.records().await, b.records().await);
        let count = a.node.snapshot().await.unwrap().redemptions;
        let mut session = attacker.connect(a.mesh, count).await;
        // Crafted with automerge, and signed with the attacker's key as their author signs
        // a change (whatever actor it writes under).
        let base = session.doc.get_heads();
        (attack.craft)(&mut session.doc, attacker, &scene);
        session.doc.commit();
        attacker.sign_changes(&mut session.doc, &base);
        let file = session.doc.save();
        let scanning = Scanning::start(&w, &a.node);
        // Every other attack comes as a push, the way a gate sends its own commits; the
        // ledger's own tests try every attack both ways.
        let reason = if i % 2 == 1 {
            session.push_crafted().await
        } else {
            session.offer().await.expect("A took the attack")
        };
        let (_, _, p99) = scanning.finish(attack.name).await;
        if attack.name.starts_with("10,000") {
            println!("BENCH adversary 10,000 entries for one ticket: scan p99 {p99:.2} ms");
        }
        dropped_for_bad_sync(&reason, attack.name);
        let why = refusal_of(&a, &attacker.name).await;
        assert!(names(&why, attack.reason), "{}: {why}", attack.name);
        unchanged(&before.0, &a.records().await, &honest, attack.name);
        unchanged(&before.1, &b.records().await, &honest, attack.name);
        files.push((attack.name, attack.reason, ledger_file(&file)));
    }

    // Compressed bombs, as sync messages.
    let saved = a.node.export_ledger().await.unwrap();
    for (name, message, file) in bombs(&saved) {
        let before = (a.records().await, b.records().await);
        let count = a.node.snapshot().await.unwrap().redemptions;
        let session = gate_attacker.connect(a.mesh, count).await;
        let scanning = Scanning::start(&w, &a.node);
        let reason = session.send_raw(&message).await;
        scanning.finish(name).await;
        dropped_for_bad_sync(&reason, name);
        let why = refusal_of(&a, &gate_attacker.name).await;
        assert!(why.contains("that inflates past"), "{name}: {why}");
        unchanged(&before.0, &a.records().await, &honest, name);
        unchanged(&before.1, &b.records().await, &honest, name);
        files.push((name, "that inflates past", ledger_file(&file)));
    }

    // The same ledgers as files, through A's local API.
    for (name, reason, file) in &files {
        let before = a.records().await;
        let r = a
            .client
            .post(format!("{}/v1/import", a.api))
            .bearer_auth(&a.token)
            .header("content-type", "application/octet-stream")
            .body(file.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::BAD_REQUEST, "{name}");
        let body: Value = r.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(names(message, reason), "POST /v1/import, {name}: {body}");
        assert_eq!(a.records().await, before, "POST /v1/import, {name}");
    }

    // And through `gatemesh import` into stopped gate C.
    for (name, reason, file) in &files {
        let path = w.dir.path().join("attack.ledger");
        std::fs::write(&path, file).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
            .arg("import")
            .arg("--data")
            .arg(w.data("gate-c"))
            .args(["--event", EVENT])
            .arg("--identity")
            .arg(w.id_dir("gate-c"))
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "gatemesh import, {name}: it was taken"
        );
        assert!(names(&stderr, reason), "gatemesh import, {name}: {stderr}");
        assert_eq!(exported(&w, "gate-c"), c_records, "gatemesh import, {name}");
    }

    // Honest traffic still flows both ways.
    let next = TicketId::generate();
    b.node
        .scan(&w.code(&next), "b1", Direction::Entry)
        .await
        .unwrap();
    eventually("A still hears from B", || async {
        let (state, _) = a.node.ticket(next.clone()).await.unwrap();
        !state.redemptions.is_empty()
    })
    .await;
    for g in [a, b] {
        g.shutdown().await;
    }
}

/// A stopped gate's records, by `gatemesh export`.
fn exported(w: &World, name: &str) -> Records {
    let path = w.dir.path().join(format!("{name}.export"));
    let out = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .arg("export")
        .arg("--data")
        .arg(w.data(name))
        .args(["--event", EVENT])
        .arg("--out")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&path).unwrap();
    let start = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    records_of(&bytes[start..])
}

/// What an observer may write besides audit lines: a resolution. Taken, and the device
/// stays connected (a gate's status and an observer's are refused above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observers_resolution_is_taken() {
    let w = World::new();
    let a = w.gate("gate-a", &[]).await;
    let tid = TicketId::generate();
    a.node
        .scan(&w.code(&tid), "a1", Direction::Entry)
        .await
        .unwrap();

    // An observer's resolution is taken: the one kind of record it writes besides audit.
    let observer = w.attacker(Role::Observer, "desk-x");
    let mut session = observer.connect(a.mesh, 1).await;
    let base = session.doc.get_heads();
    observer.put_own_device(&mut session.doc);
    let (key, r) = resolution(&observer, &tid, observer.node.as_str(), "Manager");
    put(&mut session.doc, "resolutions", &key, &r);
    session.doc.commit();
    observer.sign_changes(&mut session.doc, &base);
    assert!(
        session.offer().await.is_none(),
        "an observer's resolution was refused"
    );
    eventually("A holds the observer's resolution", || async {
        let (state, _) = a.node.ticket(tid.clone()).await.unwrap();
        state.resolutions.iter().any(|x| x.node == observer.node)
    })
    .await;
    assert!(
        a.status().await["refused_peers"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    a.shutdown().await;
}
