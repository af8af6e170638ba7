//! The gate⇄server contract through the real server on loopback: what the server writes
//! (manifest, change events, journal answers, the pairing answer) is read back by the gate's
//! own uplink and pairing into its ledger and files; and what a gate cannot take — an entry
//! or an answer from a newer server, a record the server would refuse — is skipped and
//! counted (status, heartbeat, the server's `/metrics`), never a stall.

use std::{path::Path, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use gatemesh_ledger::{Direction, Hlc, Ledger, NodeId, Redemption, RedemptionId, Standing};
use gatemesh_node::{Config, Node, UplinkConfig};
use gatemesh_ticket::{EventId, Keyring, PublicKey, TicketId};
use gatemesh_wire::Role;
use serde_json::{Value, json};

pub(crate) const TOKEN: &str = "contract-test-admin-token";

/// A real server on loopback, serving HTTPS with its self-signed certificate.
pub(crate) struct Central {
    pub(crate) base: String,
    pub(crate) pem: String,
    /// The certificate it presents.
    pub(crate) pin: gatemesh_wire::CertFingerprint,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
    _db: Option<gatemesh_testkit::pg::Database>,
}

impl Central {
    pub(crate) async fn start() -> Self {
        Self::on(gatemesh_testkit::pg::Backend::Sqlite).await
    }

    pub(crate) async fn on(backend: gatemesh_testkit::pg::Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = backend.database();
        let opened = gatemesh_server::Server::open(
            dir.path(),
            db.as_ref()
                .map(|d| gatemesh_server::Database::Postgres(d.url.clone())),
            Some(TOKEN.into()),
        )
        .unwrap();
        let pem = opened.server.issuer_public_pem();
        let tls = gatemesh_server::tls::TlsIdentity::self_signed(dir.path()).unwrap();
        let pin = tls.fingerprint();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            gatemesh_server::api::serve_tls(listener, opened.server, &tls, async {
                let _ = stopped.await;
            })
            .await
        });
        Self {
            base,
            pem,
            pin,
            stop: Some(stop),
            _dir: dir,
            _db: db,
        }
    }

    /// A client trusting exactly this server's certificate.
    pub(crate) fn client(&self) -> reqwest::Client {
        gatemesh_node::edge::pinned_builder(Some(self.pin))
            .unwrap()
            .build()
            .unwrap()
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut r = self
            .client()
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.unwrap()
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub(crate) async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// An event with `n` tickets; their ids.
    pub(crate) async fn event(&self, eid: &str, n: usize) -> Vec<String> {
        self.event_with(eid, json!({}), n).await
    }

    /// [`Central::event`], the event made with `more` in its body as well.
    pub(crate) async fn event_with(&self, eid: &str, more: Value, n: usize) -> Vec<String> {
        // The event's mesh CA is the one the tests' gates are enrolled under (a server makes
        // its own at the first pairing otherwise): gates check the server's records by it.
        let ca = self._dir.path().join("mesh-ca").join(eid);
        std::fs::create_dir_all(&ca).unwrap();
        for f in std::fs::read_dir(super::ca_dir(eid)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), ca.join(f.file_name())).unwrap();
        }
        let mut body = json!({ "id": eid, "name": eid });
        if let (Some(body), Some(more)) = (body.as_object_mut(), more.as_object()) {
            body.extend(more.clone());
        }
        self.post("/v1/events", body).await;
        let issued = self
            .post(&format!("/v1/events/{eid}/tickets"), json!({ "count": n }))
            .await;
        issued["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tid"].as_str().unwrap().to_owned())
            .collect()
    }

    pub(crate) fn keyring(&self) -> Keyring {
        Keyring::from_keys([PublicKey::from_pem(&self.pem).unwrap()]).unwrap()
    }
}

impl Drop for Central {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A gate ledger's record of an entry at `gate`, seeing nothing before it.
fn record(tid: &str, gate: &str) -> Redemption {
    let node = NodeId::random();
    let at_ms = gatemesh_wire::time::now_ms();
    Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: TicketId::new(tid).unwrap(),
        direction: Direction::Entry,
        node: node.clone(),
        gate: gate.into(),
        scanner: "s1".into(),
        at_ms,
        hlc: Hlc {
            wall_ms: at_ms,
            counter: 0,
            node,
        },
        seen: Vec::new(),
        unlisted: false,
        scope: None,
    }
}

/// A journal item carrying `r` as its record.
fn item(r: &Redemption) -> Value {
    json!({
        "redemption_id": r.id, "tid": r.tid, "gate": r.gate, "scanner": r.scanner,
        "at": gatemesh_wire::time::format_ms(r.at_ms), "record": r,
    })
}

/// `r` as the device `gate` of event `eid` writes it: signed, its certificate in the journal
/// item's record (as a gate's uplink sends it).
fn signed_item(eid: &str, r: &Redemption) -> Value {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let identity = super::identity(eid, dir.path(), &r.gate);
    let event = EventId::new(eid).unwrap();
    let (signer, _) = gatemesh_ledger::Signer::from_identity(&identity, &event).unwrap();
    let mut r = r.clone();
    signer.sign_redemption(&event, &mut r).unwrap();
    let mut item = item(&r);
    item["record"]["cert"] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(identity.creds.chain[0].as_ref())
        .into();
    item
}

/// Waits up to 30 s until `check` holds.
pub(crate) async fn until(what: &str, check: impl AsyncFnMut() -> bool) {
    let (within, every) = (Duration::from_secs(30), Duration::from_millis(100));
    gatemesh_testkit::poll_async(what, within, every, check).await;
}

fn gate_config(dir: &Path, eid: &str, name: &str, keyring: Keyring) -> Config {
    let mut config = Config::new(dir.to_owned(), EventId::new(eid).unwrap(), name.into());
    config.keyring = keyring;
    config.identity = Some(super::identity(eid, dir, name));
    config
}

fn tid(s: &str) -> TicketId {
    TicketId::new(s).unwrap()
}

#[tokio::test]
async fn the_gate_reads_what_the_server_writes() {
    let central = Central::start().await;
    let t = central.event("WIRE", 6).await;
    let e = "/v1/events/WIRE";
    central
        .post(
            &format!("{e}/tickets/{}/void", t[0]),
            json!({ "reason": "refund" }),
        )
        .await;
    let moved = central
        .post(&format!("{e}/tickets/{}/transfer", t[1]), json!({}))
        .await;
    // Two gates admitted t2 without seeing each other: a flag, which staff deny.
    let (a, b) = (record(&t[2], "North 1"), record(&t[2], "South 2"));
    let answers = central
        .post(
            &format!("{e}/redemptions"),
            json!({ "redemptions": [signed_item("WIRE", &a), signed_item("WIRE", &b)] }),
        )
        .await;
    assert_eq!(answers["answers"][1]["verdict"], "duplicate");
    central
        .post(
            &format!("{e}/flags/{}/resolve", t[2]),
            json!({ "action": "deny", "staff": "Ana", "note": "a second person" }),
        )
        .await;
    let c = record(&t[3], "South 2");
    central
        .post(
            &format!("{e}/redemptions"),
            json!({ "redemptions": [signed_item("WIRE", &c)] }),
        )
        .await;
    central
        .post(
            &format!("{e}/tickets/{}/revert", t[3]),
            json!({ "actor": "Ana", "reason": "scanned by mistake" }),
        )
        .await;

    // The pairing answer, read by the gate's pairing into its files, by the server's link.
    let code = central
        .post(&format!("{e}/devices"), json!({ "name": "North-1" }))
        .await;
    let link = gatemesh_wire::PairingLink::parse(code["link"].as_str().unwrap()).unwrap();
    assert_eq!(
        (link.server.as_str(), link.code.as_str(), link.fingerprint),
        (
            central.base.as_str(),
            code["code"].as_str().unwrap(),
            Some(central.pin)
        )
    );
    let pairing = gatemesh_node::pairing::pair(&link).await.unwrap();
    assert_eq!(pairing.answer.event.as_str(), "WIRE");
    assert_eq!(pairing.answer.name.as_str(), "North-1");
    assert_eq!(pairing.answer.role, Role::Gate);
    assert_eq!(pairing.issuer_pems(), std::slice::from_ref(&central.pem));
    let dir = tempfile::tempdir().unwrap();
    pairing
        .write_identity(&dir.path().join("identity"))
        .unwrap();
    let file = pairing.gate_file();
    file.create(dir.path()).unwrap();
    let back = gatemesh_node::pairing::GateFile::load(dir.path()).unwrap();
    assert_eq!(
        (
            back.event,
            back.name,
            back.role,
            back.token,
            back.server,
            back.fingerprint
        ),
        (
            file.event,
            file.name,
            file.role,
            file.token.clone(),
            file.server,
            Some(central.pin)
        )
    );

    // The gate, with the pairing's credential: the manifest first, then the change stream.
    let node = Node::start(gate_config(
        &dir.path().join("gate"),
        "WIRE",
        "North-1",
        central.keyring(),
    ))
    .unwrap();
    node.start_uplink(UplinkConfig {
        server: central.base.clone(),
        token: file.token,
        fingerprint: back.fingerprint,
        peer_grace: gatemesh_node::PEER_GRACE,
    })
    .unwrap();
    let to = tid(moved["tid"].as_str().unwrap());
    until("the manifest's word is in the ledger", async || {
        let standing = |s: &gatemesh_ledger::TicketState| s.standing();
        let (void, _) = node.ticket(tid(&t[0])).await.unwrap();
        let (transferred, _) = node.ticket(tid(&t[1])).await.unwrap();
        let (denied, _) = node.ticket(tid(&t[2])).await.unwrap();
        let (reverted, _) = node.ticket(tid(&t[3])).await.unwrap();
        standing(&void)
            == Standing::Void {
                reason: "refund".into(),
            }
            && standing(&transferred) == Standing::Transferred { to: to.clone() }
            && denied.denied()
            // The void a deny makes, as the server's identity signed it.
            && matches!(standing(&denied), Standing::Void { .. })
            && denied.redemption_ids().len() == 2
            && [&a.id, &b.id]
                .iter()
                .all(|id| denied.redemption_ids().contains(id))
            && reverted
                .resolutions
                .iter()
                .any(|r| r.from_server && r.covers.contains(&c.id))
    })
    .await;
    // Staff's decision at the server, and the organizer's revert of a ticket nobody flagged,
    // are the records the server's identity signed (the same writer, under its role), not
    // ones in the gate's name.
    let (denied, _) = node.ticket(tid(&t[2])).await.unwrap();
    let (reverted, _) = node.ticket(tid(&t[3])).await.unwrap();
    let deny = denied
        .resolutions
        .iter()
        .find(|r| r.action == gatemesh_wire::Action::Deny)
        .unwrap();
    let reverts: Vec<_> = reverted
        .resolutions
        .iter()
        .filter(|r| r.from_server)
        .collect();
    assert_eq!(reverts.len(), 1, "{reverts:?}");
    let revert = reverts[0];
    assert!(deny.from_server && deny.sig.is_some() && deny.staff == "Ana");
    assert!(revert.sig.is_some() && revert.staff == "Ana" && revert.note == "scanned by mistake");
    assert_eq!(revert.covers, std::slice::from_ref(&c.id));
    assert_eq!(deny.node, revert.node, "both in the server's name");
    let server_node = deny.node.clone();
    let gate_written = denied
        .redemptions
        .iter()
        .chain(&reverted.redemptions)
        .all(|r| r.node != server_node);
    assert!(gate_written, "the server's identity is not a gate's");
    // A change made now reaches the gate on the stream.
    central
        .post(
            &format!("{e}/tickets/{}/void", t[4]),
            json!({ "reason": "chargeback" }),
        )
        .await;
    until("the stream's void is in the ledger", async || {
        let (s, _) = node.ticket(tid(&t[4])).await.unwrap();
        s.standing()
            == Standing::Void {
                reason: "chargeback".into(),
            }
    })
    .await;
    let status = node.uplink_status().unwrap();
    assert!(status.streaming, "{status:?}");
    assert_eq!(status.skipped, 0, "{status:?}");
    node.shutdown().await;
}

/// A newer server, played by a proxy in front of the real one: it adds a manifest entry with
/// a status this gate does not know, and answers every journal item with a reason it does
/// not know.
async fn newer_server(
    State((upstream, pin)): State<(String, gatemesh_wire::CertFingerprint)>,
    request: Request,
) -> Result<Response, StatusCode> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let body = axum::body::to_bytes(body, 16 << 20)
        .await
        .map_err(|_| StatusCode::BAD_REQUEST)?;
    let mut forward = gatemesh_node::edge::pinned_builder(Some(pin))
        .unwrap()
        .build()
        .unwrap()
        .request(parts.method.clone(), format!("{upstream}{path}"))
        .body(body);
    for name in ["authorization", "content-type", "last-event-id"] {
        if let Some(v) = parts.headers.get(name) {
            forward = forward.header(name, v.as_bytes());
        }
    }
    let answer = forward.send().await.map_err(|_| StatusCode::BAD_GATEWAY)?;
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
    let kind = answer.headers().get("content-type").cloned();
    let rewrite = |mut v: Value| -> Bytes {
        if let Some(tickets) = v["tickets"].as_array_mut() {
            tickets.push(json!({ "tid": "FROM-THE-FUTURE", "status": "teleported" }));
        }
        if let Some(answers) = v["answers"].as_array_mut() {
            // A question whether it holds a redemption is answered `null` where it holds none.
            for a in answers.iter_mut().filter(|a| !a.is_null()) {
                a["reason"] = json!("a_reason_from_the_future");
            }
        }
        v.to_string().into()
    };
    let body = if path.contains("/manifest") || path.contains("/redemptions") {
        let bytes = answer.bytes().await.map_err(|_| StatusCode::BAD_GATEWAY)?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| StatusCode::BAD_GATEWAY)?;
        Body::from(rewrite(value))
    } else {
        Body::from_stream(answer.bytes_stream())
    };
    let mut response = (status, body).into_response();
    if let Some(kind) = kind {
        response.headers_mut().insert("content-type", kind);
    }
    Ok(response)
}

#[tokio::test]
async fn items_the_gate_cannot_take_are_skipped_and_counted_not_a_stall() {
    let central = Central::start().await;
    let t = central.event("SKIP", 2).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .fallback(newer_server)
        .with_state((central.base.clone(), central.pin));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(gate_config(
        dir.path(),
        "SKIP",
        "North-1",
        central.keyring(),
    ))
    .unwrap();
    // A ledger from an older gate, whose name the server's rules refuse: its record can
    // never be sent.
    let event = EventId::new("SKIP").unwrap();
    let old_dir = tempfile::tempdir().unwrap();
    let (signer, trust) = gatemesh_ledger::Signer::from_identity(
        &super::identity("SKIP", old_dir.path(), "Old"),
        &event,
    )
    .unwrap();
    let mut old = Ledger::open(
        &event,
        signer.node().clone(),
        &gatemesh_ledger::genesis(&event),
        None,
        [],
    )
    .unwrap();
    let mut unsendable = record(&t[0], &"G".repeat(100));
    unsendable.node = signer.node().clone();
    unsendable.hlc.node = signer.node().clone();
    old.sign_with(signer, trust).unwrap();
    old.record_redemption(&unsendable).unwrap();
    node.import_ledger(old.save()).await.unwrap();
    // The proxy plays a newer server on loopback: plain HTTP, allowed there only. The old
    // gate's record is a peer's: asked about (and sent) with no grace.
    node.start_uplink(UplinkConfig {
        server: proxy,
        token: TOKEN.into(),
        fingerprint: None,
        peer_grace: std::time::Duration::ZERO,
    })
    .unwrap();
    // A scan the gate admits: its upload is answered in words the gate cannot read.
    let code = central
        .get(&format!("/v1/events/SKIP/tickets/{}", t[1]))
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let scan = node.scan(&code, "s1", Direction::Entry).await.unwrap();
    assert_eq!(scan.verdict, gatemesh_ledger::Verdict::Admit);

    until(
        "the admission is at the server and the backlog is empty",
        async || {
            let ticket = central
                .get(&format!("/v1/events/SKIP/tickets/{}", t[1]))
                .await;
            let status = node.uplink_status().unwrap();
            let listed = node.snapshot().await.unwrap().manifest_tickets;
            ticket["admissions"].as_array().unwrap().len() == 1
                && status.backlog == 0
                && status.skipped >= 3
                && listed == Some(2)
        },
    )
    .await;
    let status = node.uplink_status().unwrap();
    // The manifest entry, the record and the answer: each skipped once, nothing else.
    assert_eq!(status.skipped, 3, "{status:?}");
    assert!(status.last_error.is_none(), "{status:?}");
    // The rest of the manifest was taken (the gate lists the event's two tickets), and the
    // record the server would refuse never reached it.
    let refused = central
        .get(&format!("/v1/events/SKIP/tickets/{}", t[0]))
        .await;
    assert_eq!(refused["admissions"], json!([]));

    // The heartbeat carries the count to the server's /metrics.
    until(
        "the server's /metrics shows what the gate skipped",
        async || {
            let text = central
                .client()
                .get(format!("{}/metrics", central.base))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            text.lines().any(|l| {
                l.starts_with("gatemesh_gate_skipped_items{")
                    && l.contains("gate=\"North-1\"")
                    && l.ends_with(" 3")
            })
        },
    )
    .await;
    node.shutdown().await;
}
