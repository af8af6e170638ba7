//! The gate through its real HTTP API on loopback: verdicts and reasons, the repeat window,
//! flags and resolutions, bad requests, the live stream, restarts; and (`contract`) the
//! gate⇄server contract through the real server.

mod abuse;
mod browser;
mod contract;
mod edge;
mod guests;
mod lists;

use std::{
    path::{Path, PathBuf},
    sync::{LazyLock, Mutex},
    time::Duration,
};

use gatemesh_ledger::{EntryPolicy, Policy, UnlistedPolicy};
use gatemesh_node::{Config, Manifest, Node};
use gatemesh_testkit::fuzz;
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, Seat, TicketId};
use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

const EVENT: &str = "ROCK-2026";

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

struct Issuer {
    key: IssuerKey,
}

impl Issuer {
    fn new() -> Self {
        Self {
            key: IssuerKey::generate(None),
        }
    }

    fn ticket_with(
        &self,
        tid: &TicketId,
        eid: &str,
        nbf: Option<i64>,
        exp: Option<i64>,
        format: Format,
    ) -> String {
        let claims = Claims {
            tid: tid.clone(),
            eid: EventId::new(eid).unwrap(),
            seat: Some(Seat::new("A-12").unwrap()),
            iat: None,
            nbf,
            exp,
            product: None,
        };
        self.key.sign(&claims, format).unwrap()
    }

    fn ticket(&self, tid: &TicketId) -> String {
        self.ticket_with(tid, EVENT, None, Some(now_s() + 3600), Format::Gm1)
    }
}

/// The events' mesh CAs of this test binary, made on first use.
static CAS: LazyLock<Mutex<tempfile::TempDir>> =
    LazyLock::new(|| Mutex::new(tempfile::tempdir().unwrap()));

pub(crate) fn ca_dir(event: &str) -> PathBuf {
    let root = CAS.lock().unwrap();
    let dir = root.path().join(event);
    if !dir.join(gatemesh_mesh::pki::CA_CERT).exists() {
        gatemesh_mesh::pki::write_new_ca(&dir, event, 30).unwrap();
    }
    dir
}

/// The device identity of the gate in `data` (made on first start, kept after): a gate
/// signs its records, and takes others' only as their writers signed them.
pub(crate) fn identity(event: &str, data: &Path, name: &str) -> gatemesh_mesh::pki::Identity {
    let dir = data.join("identity");
    if !dir.join(gatemesh_mesh::pki::DEVICE_CERT).exists() {
        let device: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        gatemesh_mesh::pki::enroll_into(
            &ca_dir(event),
            &dir,
            gatemesh_wire::Role::Gate,
            &device,
            30,
        )
        .unwrap();
    }
    gatemesh_mesh::pki::Identity::load(&dir).unwrap()
}

struct Gate {
    node: Node,
    base: String,
    /// A client that sends the gate's token with every request, as the gate's operator.
    client: reqwest::Client,
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Gate {
    async fn start(
        dir: &Path,
        name: &str,
        issuer: &Issuer,
        manifest: Option<Manifest>,
        policy: Policy,
    ) -> Self {
        Self::start_with(dir, name, issuer, |config| {
            config.manifest = manifest;
            config.policy = policy;
        })
        .await
    }

    /// A gate whose config `edit` finishes.
    async fn start_with(
        dir: &Path,
        name: &str,
        issuer: &Issuer,
        edit: impl FnOnce(&mut Config),
    ) -> Self {
        let mut config = Config::new(dir.to_owned(), EventId::new(EVENT).unwrap(), name.into());
        config.keyring = Keyring::from_keys([issuer.key.public()]).unwrap();
        config.identity = Some(identity(EVENT, dir, name));
        edit(&mut config);
        Self::serving(dir, config).await
    }

    /// A gate of `config` (its data in `dir`) with its HTTP API.
    async fn serving(dir: &Path, config: Config) -> Self {
        let node = Node::start(config).unwrap();
        let api = gatemesh_node::api::ApiConfig::for_data_dir(dir).unwrap();
        let token = api.token.secret().to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(gatemesh_node::api::serve(
            listener,
            node.clone(),
            api,
            async {
                let _ = stopped.await;
            },
        ));
        let mut auth = reqwest::header::HeaderMap::new();
        auth.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        Self {
            node,
            base,
            client: gatemesh_node::edge::pinned_builder(None)
                .unwrap()
                .default_headers(auth)
                .build()
                .unwrap(),
            token,
            stop: Some(stop),
            server,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.server.await.unwrap().unwrap();
        self.node.shutdown().await;
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn scan(&self, code: &str, scanner: &str) -> Value {
        self.scan_dir(code, scanner, "entry").await
    }

    async fn scan_dir(&self, code: &str, scanner: &str, direction: &str) -> Value {
        let (status, body) = self
            .post(
                "/v1/scan",
                json!({ "code": code, "scanner": scanner, "direction": direction }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

fn verdict(v: &Value) -> (&str, &str) {
    (
        v["verdict"].as_str().unwrap(),
        v["reason"].as_str().unwrap(),
    )
}

#[tokio::test]
async fn admit_repeat_and_duplicate_naming_the_first_gate() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start(dir.path(), "North 1", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    let (_, before) = gate.get("/v1/status").await;

    let first = gate.scan(&code, "s1").await;
    assert_eq!(verdict(&first), ("admit", "valid"));
    assert_eq!(first["ticket"]["tid"], tid.as_str());
    assert_eq!(first["ticket"]["seat"], "A-12");
    // The scanner double-fires: the same answer, not a yellow.
    let again = gate.scan(&format!("{code}\n"), "s1").await;
    assert_eq!(verdict(&again), ("admit", "valid"));
    assert_eq!(again["redemption_id"], first["redemption_id"]);
    // A second scanner: yellow, saying where and when the first use was.
    let dup = gate.scan(&code, "s2").await;
    assert_eq!(verdict(&dup), ("duplicate", "already_admitted"));
    assert_eq!(dup["first"]["gate"], "North 1");
    assert_eq!(dup["first"]["scanner"], "s1");
    assert_eq!(dup["first"]["redemption_id"], first["redemption_id"]);
    assert!(dup["first"]["ago_s"].as_i64().unwrap() >= 0);

    let (status, t) = gate.get(&format!("/v1/tickets/{tid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(t["redemptions"].as_array().unwrap().len(), 1);
    let (_, s) = gate.get("/v1/status").await;
    assert_eq!(
        s["counts"],
        json!({ "admit": 2, "duplicate": 1, "reject": 0 })
    );
    assert_eq!(s["name"], "North 1");
    assert_eq!(s["peers"], json!([]));
    // The ledger's digest moved with what the scans wrote, and not with a look.
    let digest = s["ledger_digest"].as_str().unwrap();
    assert_eq!(digest.len(), 32);
    assert_ne!(before["ledger_digest"], digest);
    assert_eq!(gate.get("/v1/status").await.1["ledger_digest"], digest);
    gate.stop().await;
}

/// A scanner that names its presentations gets the first ask's answer with every ask of
/// one, whenever it asks: here the repeat window is off (0 ms), so without the name the
/// scanner's retry would be yellow.
#[tokio::test]
async fn every_ask_of_a_named_presentation_gets_the_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let policy = Policy {
        repeat_window_ms: 0,
        ..Policy::default()
    };
    let gate = Gate::start(dir.path(), "North 1", &issuer, None, policy).await;
    let ask = |code: &str, presentation: Option<&str>| {
        let mut body = json!({ "code": code, "scanner": "s1" });
        if let Some(p) = presentation {
            body["presentation"] = json!(p);
        }
        gate.post("/v1/scan", body)
    };
    let (tid, other) = (TicketId::generate(), TicketId::generate());
    let code = issuer.ticket(&tid);

    // Asked twice at once (the first ask's reply lost, the scanner asking again): one
    // decision, one redemption, the same answer.
    let ((s1, a1), (s2, a2)) = tokio::join!(ask(&code, Some("p-1")), ask(&code, Some("p-1")));
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK));
    assert_eq!(verdict(&a1), ("admit", "valid"), "{a1}");
    assert_eq!(a1, a2);
    // Asked again later, past the window: the first answer still.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (_, again) = ask(&code, Some("p-1")).await;
    assert_eq!(again, a1);
    // A new presentation of the code (another id, or none) is a copy.
    let (_, copy) = ask(&code, Some("p-2")).await;
    assert_eq!(verdict(&copy), ("duplicate", "already_admitted"), "{copy}");
    assert_eq!(copy["first"]["redemption_id"], a1["redemption_id"]);
    let (_, copy) = ask(&code, None).await;
    assert_eq!(verdict(&copy), ("duplicate", "already_admitted"), "{copy}");
    // The same id for another code is the scanner's fault: refused, nothing stored.
    let (status, body) = ask(&issuer.ticket(&other), Some("p-1")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (_, t) = gate.get(&format!("/v1/tickets/{other}")).await;
    assert!(t["redemptions"].as_array().is_none_or(Vec::is_empty), "{t}");
    // So is it for the same code the other way.
    let (status, body) = gate
        .post(
            "/v1/scan",
            json!({ "code": code, "scanner": "s1", "presentation": "p-1", "direction": "exit" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Ids are another scanner's own: its p-1 is its first presentation.
    let (_, theirs) = gate
        .post(
            "/v1/scan",
            json!({ "code": issuer.ticket(&other), "scanner": "s2", "presentation": "p-1" }),
        )
        .await;
    assert_eq!(verdict(&theirs), ("admit", "valid"), "{theirs}");
    for bad in ["", &"x".repeat(65), "a\nb"] {
        let (status, body) = ask(&code, Some(bad)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
    }

    let (_, t) = gate.get(&format!("/v1/tickets/{tid}")).await;
    assert_eq!(t["redemptions"].as_array().unwrap().len(), 1, "{t}");
    gate.stop().await;
}

#[tokio::test]
async fn every_reject_reason() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let stranger = Issuer::new();
    let [void, moved, new, listed, unlisted] = std::array::from_fn(|_| TicketId::generate());
    let manifest = Manifest::from_json(
        &json!({ "tickets": [
            { "tid": void, "status": "void", "reason": "refunded" },
            { "tid": moved, "status": "transferred", "to": new },
            { "tid": new },
            { "tid": listed },
        ]})
        .to_string(),
    )
    .unwrap();
    let policy = Policy {
        unlisted: UnlistedPolicy::Reject,
        ..Policy::default()
    };
    let gate = Gate::start(dir.path(), "South", &issuer, Some(manifest), policy).await;
    let now = now_s();
    let forged = {
        let mut c = issuer.ticket(&listed).into_bytes();
        let n = c.len();
        c[n - 5] = if c[n - 5] == b'A' { b'B' } else { b'A' };
        String::from_utf8(c).unwrap()
    };
    let cases = [
        ("GM1:NOT A TICKET".to_owned(), "unreadable"),
        ("hello".to_owned(), "unreadable"),
        (forged, "bad_signature"),
        (stranger.ticket(&listed), "unknown_key"),
        (
            issuer.ticket_with(&listed, "JAZZ-2026", None, None, Format::Jwt),
            "wrong_event",
        ),
        (
            issuer.ticket_with(&listed, EVENT, None, Some(now - 3600), Format::Gm1),
            "expired",
        ),
        (
            issuer.ticket_with(&listed, EVENT, Some(now + 3600), None, Format::Jwt),
            "not_yet_valid",
        ),
        (issuer.ticket(&void), "void"),
        (issuer.ticket(&moved), "transferred"),
        (issuer.ticket(&unlisted), "unknown_ticket"),
    ];
    for (code, reason) in cases {
        let v = gate.scan(&code, "s1").await;
        assert_eq!(verdict(&v), ("reject", reason), "{v}");
        if reason == "transferred" {
            assert_eq!(v["transferred_to"], new.as_str());
        }
        // A code refused for itself says why in words, its instants in RFC 3339.
        let from_the_code = ["unreadable", "bad_signature", "unknown_key", "wrong_event"];
        if from_the_code.contains(&reason) || reason.ends_with("valid") || reason == "expired" {
            assert!(v["detail"].as_str().is_some_and(|d| !d.is_empty()), "{v}");
        }
        if reason == "expired" {
            let detail = v["detail"].as_str().unwrap();
            assert!(
                detail.contains("expired at 20") && detail.contains("Z (checked at 20"),
                "{v}"
            );
        }
    }
    assert_eq!(
        verdict(&gate.scan(&issuer.ticket(&new), "s1").await),
        ("admit", "valid")
    );
    let (_, s) = gate.get("/v1/status").await;
    assert_eq!(s["counts"]["reject"], 10);
    assert_eq!(s["manifest_tickets"], 4);
    gate.stop().await;
}

#[tokio::test]
async fn a_flag_from_an_imported_ledger_is_resolved_and_audited() {
    let issuer = Issuer::new();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Gate::start(da.path(), "A", &issuer, None, Policy::default()).await;
    let b = Gate::start(db.path(), "B", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    // A screenshot used at two gates that cannot see each other: both admit.
    assert_eq!(verdict(&a.scan(&code, "a1").await).0, "admit");
    assert_eq!(verdict(&b.scan(&code, "b1").await).0, "admit");
    let (_, flags) = a.get("/v1/flags").await;
    assert_eq!(flags["flags"], json!([]));

    // B's ledger reaches A on a USB stick.
    let mut file = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    file.extend(b.node.export_ledger().await.unwrap());
    let r = a
        .client
        .post(format!("{}/v1/import", a.base))
        .header("content-type", "application/octet-stream")
        .body(file.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (_, flags) = a.get("/v1/flags").await;
    let list = flags["flags"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["tid"], tid.as_str());
    let gates: Vec<&str> = list[0]["redemptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gate"].as_str().unwrap())
        .collect();
    assert_eq!(gates.len(), 2);
    assert!(gates.contains(&"A") && gates.contains(&"B"));
    // Importing the same file again changes nothing.
    let r = a
        .client
        .post(format!("{}/v1/import", a.base))
        .header("content-type", "application/octet-stream")
        .body(file)
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["new_changes"], 0);

    let (status, res) = a
        .post(
            &format!("/v1/flags/{tid}/resolve"),
            json!({ "action": "deny", "staff": "Sam", "note": "two different people" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{res}");
    let (_, flags) = a.get("/v1/flags").await;
    assert_eq!(flags["flags"], json!([]));
    assert_eq!(verdict(&a.scan(&code, "a2").await), ("reject", "denied"));
    // Resolving a ticket that is not flagged is a conflict, not a server error.
    let (status, _) = a
        .post(
            &format!("/v1/flags/{tid}/resolve"),
            json!({ "action": "accept", "staff": "Sam" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let (_, export) = a.get("/v1/export?format=json").await;
    let audit = export["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["actor"], "Sam (api token)");
    assert_eq!(audit[0]["action"], "resolve:deny");
    let redemptions = export["redemptions"].as_array().unwrap();
    assert_eq!(redemptions.len(), 2);
    for r in redemptions {
        assert!(
            r["id"].is_string() && r["tid"].is_string() && r["gate"].is_string(),
            "{r}"
        );
    }
    let csv = a
        .client
        .get(format!("{}/v1/export?format=csv", a.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(csv.starts_with("record,id,tid,at,"));
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("redemption,")).count(),
        2
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("audit,") && l.contains("resolve:deny"))
    );
    a.stop().await;
    b.stop().await;
}

/// A ledger file rewritten with automerge itself, as an attacker with a stopped gate's file
/// (or a page posting to the local API) would: the import is refused and the admitted ticket
/// stays admitted.
#[tokio::test]
async fn a_tampered_ledger_import_changes_nothing() {
    use automerge::{ObjType, ROOT, ReadDoc, transaction::Transactable};
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let a = Gate::start(dir.path(), "A", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    assert_eq!(verdict(&a.scan(&code, "a1").await).0, "admit");
    let saved = a.node.export_ledger().await.unwrap();
    type Tamper = fn(&mut automerge::AutoCommit);
    let tampered: [(&str, Tamper); 2] = [
        ("delete every redemption", |doc| {
            for m in gatemesh_ledger::ticket_maps(doc, "redemptions") {
                for key in doc.keys(&m).collect::<Vec<_>>() {
                    doc.delete(&m, key.as_str()).unwrap();
                }
            }
        }),
        ("swap the redemptions map for an empty one", |doc| {
            doc.put_object(ROOT, "redemptions", ObjType::Map).unwrap();
        }),
    ];
    let (_, before) = a.get(&format!("/v1/tickets/{tid}")).await;
    for (what, tamper) in tampered {
        let mut doc = automerge::AutoCommit::load(&saved).unwrap();
        // As the gate itself would have written it.
        doc.set_actor(automerge::ActorId::from(
            a.node.info().node_id.as_str().as_bytes(),
        ));
        tamper(&mut doc);
        doc.commit();
        let mut file = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
        file.extend(doc.save());
        let r = a
            .client
            .post(format!("{}/v1/import", a.base))
            .header("content-type", "application/octet-stream")
            .body(file)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{what}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().contains("rules"),
            "{what}: {body}"
        );
        assert_eq!(
            a.get(&format!("/v1/tickets/{tid}")).await.1,
            before,
            "{what}"
        );
        assert_eq!(verdict(&a.scan(&code, "a9").await).0, "duplicate", "{what}");
    }
}

#[tokio::test]
async fn bad_requests_get_json_4xx_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start(dir.path(), "G", &issuer, None, Policy::default()).await;
    let url = |p: &str| format!("{}{p}", gate.base);
    let c = &gate.client;
    let big = json!({ "code": "x".repeat(70 * 1024), "scanner": "s" }).to_string();
    let requests = [
        c.post(url("/v1/scan"))
            .header("content-type", "application/json")
            .body("{not json"),
        c.post(url("/v1/scan"))
            .header("content-type", "application/json")
            .body("{\"code\":\"x\"}"),
        c.post(url("/v1/scan"))
            .header("content-type", "application/json")
            .body("{\"code\":\"x\",\"scanner\":\"s\",\"extra\":1}"),
        c.post(url("/v1/scan"))
            .header("content-type", "application/json")
            .body("[]"),
        c.post(url("/v1/scan")).body("code=x"),
        c.post(url("/v1/scan"))
            .header("content-type", "application/json")
            .body(big),
        c.post(url("/v1/scan"))
            .json(&json!({ "code": "x", "scanner": "" })),
        c.post(url("/v1/scan"))
            .json(&json!({ "code": "x", "scanner": "s", "direction": "sideways" })),
        c.get(url("/v1/tickets/a,b")),
        c.get(url("/v1/tickets/UNKNOWN0TICKET")),
        c.post(url("/v1/flags/T1/resolve"))
            .json(&json!({ "action": "explode", "staff": "x" })),
        c.post(url("/v1/flags/T1/resolve"))
            .json(&json!({ "action": "accept", "staff": " " })),
        c.post(url("/v1/flags/T1/resolve"))
            .json(&json!({ "action": "revert", "staff": "x" })),
        c.get(url("/v1/export?format=xml")),
        c.post(url("/v1/import"))
            .header("content-type", "application/octet-stream")
            .body("garbage"),
        c.post(url("/v1/import"))
            .header("content-type", "application/octet-stream")
            .body("gatemesh-ledger 1 OTHER\nxx"),
        c.post(url("/v1/import"))
            .header("content-type", "application/octet-stream")
            .body(format!("gatemesh-ledger 1 {EVENT}\nnot automerge")),
        c.get(url("/v1/nothing-here")),
    ];
    for request in requests {
        let r = request.send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_client_error(), "{status}: {body}");
        assert!(body["error"]["message"].is_string(), "{status}: {body}");
    }
    let (_, s) = gate.get("/v1/status").await;
    assert_eq!(s["redemptions"], 0);
    assert_eq!(s["counts"]["admit"], 0);
    gate.stop().await;
}

#[tokio::test]
async fn the_live_stream_carries_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start(dir.path(), "G", &issuer, None, Policy::default()).await;
    let mut stream = gate
        .client
        .get(format!("{}/v1/stream", gate.base))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let tid = TicketId::generate();
    gate.scan(&issuer.ticket(&tid), "s1").await;
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: verdict"), "{seen}");
    assert!(seen.contains(tid.as_str()), "{seen}");
    drop(stream);
    gate.stop().await;
}

#[tokio::test]
async fn a_restart_restores_the_same_node_and_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let tids: Vec<TicketId> = (0..20).map(|_| TicketId::generate()).collect();
    let policy = Policy {
        entry: EntryPolicy::Single,
        ..Policy::default()
    };
    let gate = Gate::start(dir.path(), "G", &issuer, None, policy).await;
    let node_id = gate.node.info().node_id.clone();
    for tid in &tids {
        assert_eq!(
            verdict(&gate.scan(&issuer.ticket(tid), "s1").await).0,
            "admit"
        );
    }
    gate.stop().await;

    let gate = Gate::start(dir.path(), "G", &issuer, None, policy).await;
    assert_eq!(gate.node.info().node_id, node_id);
    for tid in &tids {
        let v = gate.scan(&issuer.ticket(tid), "s2").await;
        assert_eq!(verdict(&v), ("duplicate", "already_admitted"));
    }
    let (_, s) = gate.get("/v1/status").await;
    assert_eq!(s["redemptions"], 20);
    // One process at a time owns a data directory.
    let mut config = Config::new(
        dir.path().to_owned(),
        EventId::new(EVENT).unwrap(),
        "G".into(),
    );
    config.keyring = Keyring::from_keys([issuer.key.public()]).unwrap();
    assert!(Node::start(config).is_err());
    gate.stop().await;
}

#[tokio::test]
async fn a_compaction_saved_off_the_writer_folds_the_rows_and_a_restart_finds_everything() {
    // Compacting after every 10 rows, the gate copies its document at an idle moment,
    // saves it on a thread of its own and stores the snapshot when it comes back, while it
    // goes on admitting: what it admitted, before and after, is there after a restart.
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let tids: Vec<TicketId> = (0..60).map(|_| TicketId::generate()).collect();
    let gate = Gate::start_with(dir.path(), "G", &issuer, |c| c.compact_after = 10).await;
    let store_path = dir.path().join("ledger.sqlite");
    let pending = || {
        gatemesh_ledger::Store::open(&store_path, gatemesh_ledger::Durability::Power)
            .unwrap()
            .pending_changes()
            .unwrap()
    };
    let folded = || async {
        for _ in 0..1500 {
            if pending() <= 10 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("{} rows, none folded into a snapshot", pending());
    };
    for tid in &tids[..30] {
        assert_eq!(
            verdict(&gate.scan(&issuer.ticket(tid), "s1").await).0,
            "admit"
        );
    }
    folded().await;
    for tid in &tids[30..] {
        assert_eq!(
            verdict(&gate.scan(&issuer.ticket(tid), "s1").await).0,
            "admit"
        );
    }
    folded().await;
    gate.stop().await;
    let gate = Gate::start(dir.path(), "G", &issuer, None, Policy::default()).await;
    for tid in &tids {
        let v = gate.scan(&issuer.ticket(tid), "s2").await;
        assert_eq!(verdict(&v), ("duplicate", "already_admitted"));
    }
    gate.stop().await;
}

/// Arbitrary JSON and bytes to every gate endpoint that takes a body: never a 5xx, every
/// refusal a JSON error, and a refused request changes nothing in the ledger.
#[test]
fn arbitrary_bodies_get_4xx_and_change_nothing() {
    let runtime = fuzz::runtime();
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = runtime.block_on(Gate::start(
        dir.path(),
        "North",
        &issuer,
        None,
        Policy::default(),
    ));
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    runtime.block_on(gate.scan(&code, "s1"));
    // What is stored, as the API shows it.
    let snapshot = || {
        runtime.block_on(async {
            let status = gate.get("/v1/status").await.1;
            (
                status["redemptions"].clone(),
                status["flagged"].clone(),
                gate.get(&format!("/v1/tickets/{tid}")).await.1,
                gate.get("/v1/export?format=json").await.1,
            )
        })
    };
    let paths = fuzz::json_paths(["/v1/scan".to_owned(), format!("/v1/flags/{tid}/resolve")]);
    let body = fuzz::bodies(
        vec![
            "code",
            "scanner",
            "direction",
            "action",
            "staff",
            "note",
            "x",
        ],
        vec![
            json!("entry"),
            json!("exit"),
            json!("revert"),
            json!(code.clone()),
        ],
    );
    let api = fuzz::Api {
        client: &gate.client,
        base: &gate.base,
        token: Some(&gate.token),
        paths,
    };
    fuzz::post_bodies(&runtime, api, body, snapshot);

    // Ledger files, as `application/octet-stream`, so they reach the file's parser and the
    // ledger's checks: another gate's real export, damaged, and noise behind the header.
    let other_dir = tempfile::tempdir().unwrap();
    let other = runtime.block_on(Gate::start(
        other_dir.path(),
        "South",
        &issuer,
        None,
        Policy::default(),
    ));
    runtime.block_on(other.scan(&issuer.ticket(&TicketId::generate()), "s2"));
    let header = format!("gatemesh-ledger 1 {}\n", gate.node.info().event).into_bytes();
    let mut real = header.clone();
    real.extend(runtime.block_on(other.node.export_ledger()).unwrap());
    runtime.block_on(other.stop());
    let files = prop_oneof![
        3 => fuzz::damaged(real),
        1 => prop::collection::vec(any::<u8>(), 0..400).prop_map(move |noise| {
            let mut v = header.clone();
            v.extend(noise);
            v
        }),
    ]
    .boxed();
    let api = fuzz::Api {
        client: &gate.client,
        base: &gate.base,
        token: Some(&gate.token),
        paths: vec![("/v1/import".to_owned(), "application/octet-stream")],
    };
    fuzz::post_bodies(&runtime, api, files, snapshot);
    runtime.block_on(gate.stop());
}

/// A scan whose commit fails (another process holds the ledger's SQLite file locked past the
/// busy timeout) is answered with an error and leaves nothing of itself in memory: the gate
/// starts again from disk, as it opened it (its records still signed), so the next scan of
/// that ticket by another scanner admits instead of finding a redemption that was never
/// stored.
#[tokio::test]
async fn a_scan_whose_commit_fails_leaves_nothing_behind_and_the_gate_keeps_signing() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start(dir.path(), "North 1", &issuer, None, Policy::default()).await;
    let (kept, lost) = (TicketId::generate(), TicketId::generate());
    assert_eq!(
        verdict(&gate.scan(&issuer.ticket(&kept), "s1").await),
        ("admit", "valid")
    );

    let lock = rusqlite::Connection::open(dir.path().join("ledger.sqlite")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (status, body) = gate
        .post(
            "/v1/scan",
            json!({ "code": issuer.ticket(&lost), "scanner": "s1" }),
        )
        .await;
    assert!(status.is_server_error(), "{status}: {body}");
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);

    let again = gate.scan(&issuer.ticket(&lost), "s2").await;
    assert_eq!(verdict(&again), ("admit", "valid"), "{again}");
    let (_, t) = gate.get(&format!("/v1/tickets/{lost}")).await;
    let redemptions = t["redemptions"].as_array().unwrap();
    assert_eq!(redemptions.len(), 1, "{t}");
    assert!(
        redemptions[0]["sig"].is_string(),
        "signed after the reload: {t}"
    );
    assert_eq!(
        verdict(&gate.scan(&issuer.ticket(&kept), "s2").await),
        ("duplicate", "already_admitted")
    );
    gate.stop().await;
}
