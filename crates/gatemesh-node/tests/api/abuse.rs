//! The local API against callers who are not the gate's operator: no token or a wrong one,
//! a web page on the laptop posting across origins (a "simple" `text/plain` POST needs no
//! preflight), a page under a rebound DNS name, and the app's own origin, which works with
//! the token. Each refusal changes nothing the gate stores.

use gatemesh_ledger::Policy;
use gatemesh_ticket::TicketId;
use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};

use super::{EVENT, Gate, Issuer, verdict};

/// What the gate stores, read from the node itself (not through the API under attack).
pub(super) async fn stored(gate: &Gate) -> Value {
    let (redemptions, audit) = gate.node.records().await.unwrap();
    let flags: Vec<String> = gate
        .node
        .flags()
        .await
        .unwrap()
        .into_iter()
        .map(|(tid, _)| tid.to_string())
        .collect();
    json!({ "redemptions": redemptions, "audit": audit, "flags": flags })
}

/// A ledger file of another gate that admitted `code` too: merged, it raises a flag.
async fn foreign_ledger(issuer: &Issuer, code: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let b = Gate::start(dir.path(), "B", issuer, None, Policy::default()).await;
    assert_eq!(verdict(&b.scan(code, "b1").await).0, "admit");
    let mut file = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    file.extend(b.node.export_ledger().await.unwrap());
    b.stop().await;
    file
}

/// A wiped ledger: the gate's own, every redemption deleted.
async fn wiped_ledger(gate: &Gate) -> Vec<u8> {
    use automerge::{ReadDoc, transaction::Transactable};
    let mut doc = automerge::AutoCommit::load(&gate.node.export_ledger().await.unwrap()).unwrap();
    // As the gate itself would have written it.
    doc.set_actor(automerge::ActorId::from(
        gate.node.info().node_id.as_str().as_bytes(),
    ));
    for m in gatemesh_ledger::ticket_maps(&doc, "redemptions") {
        for key in doc.keys(&m).collect::<Vec<_>>() {
            doc.delete(&m, key.as_str()).unwrap();
        }
    }
    doc.commit();
    let mut file = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    file.extend(doc.save());
    file
}

async fn refused(r: reqwest::RequestBuilder, want: StatusCode, what: &str) -> Value {
    let r = r.send().await.unwrap();
    let status = r.status();
    assert!(
        r.headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none(),
        "{what}: a refusal never lets a page read it"
    );
    let body: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(status, want, "{what}: {body}");
    assert!(body["error"]["message"].is_string(), "{what}: {body}");
    body
}

#[tokio::test]
async fn no_token_or_a_wrong_one_is_401_and_changes_nothing() {
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::start(dir.path(), "A", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    assert_eq!(verdict(&gate.scan(&code, "a1").await).0, "admit");
    let file = foreign_ledger(&issuer, &code).await;
    let before = stored(&gate).await;

    let stranger = gatemesh_node::edge::pinned_builder(None)
        .unwrap()
        .build()
        .unwrap();
    let other_gate = tempfile::tempdir().unwrap();
    let other_token = gatemesh_node::api::ApiToken::load_or_create(other_gate.path()).unwrap();
    let wrong = [
        None,
        Some(format!("Bearer {}", other_token.secret())),
        Some(format!("Bearer {}", &gate.token[..gate.token.len() - 1])),
        Some(format!("Bearer {}x", gate.token)),
        Some(format!("Basic {}", gate.token)),
        Some(gate.token.clone()),
        Some("Bearer ".into()),
    ];
    let url = |p: &str| format!("{}{p}", gate.base);
    for auth in &wrong {
        let requests = [
            stranger
                .post(url("/v1/scan"))
                .json(&json!({ "code": code, "scanner": "x" })),
            stranger
                .post(url(&format!("/v1/flags/{tid}/resolve")))
                .json(&json!({ "action": "deny", "staff": "Mallory" })),
            stranger
                .post(url("/v1/import"))
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .body(file.clone()),
            stranger.get(url("/v1/export?format=csv")),
            stranger.get(url("/v1/status")),
            stranger.get(url("/v1/flags")),
            stranger.get(url(&format!("/v1/tickets/{tid}"))),
            stranger.get(url("/v1/stream")),
        ];
        for request in requests {
            let request = match auth {
                Some(a) => request.header(header::AUTHORIZATION, a),
                None => request,
            };
            let body = refused(request, StatusCode::UNAUTHORIZED, &format!("{auth:?}")).await;
            assert_eq!(body["error"]["code"], "unauthorized");
        }
    }
    assert_eq!(stored(&gate).await, before);
    assert_eq!(
        verdict(&gate.scan(&code, "a2").await),
        ("duplicate", "already_admitted")
    );
    gate.stop().await;
}

/// The attack of the issue: a page in a browser on the laptop sends a ledger file as a
/// "simple" cross-site POST (`text/plain`, its own Origin). Neither a wiped ledger nor one
/// that would raise a flag gets in, whatever else the request gets right.
#[tokio::test]
async fn a_page_cannot_import_a_ledger() {
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::start(dir.path(), "A", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    assert_eq!(verdict(&gate.scan(&code, "a1").await).0, "admit");
    let flagging = foreign_ledger(&issuer, &code).await;
    let wiped = wiped_ledger(&gate).await;
    let before = stored(&gate).await;

    let page = "http://127.0.0.1:9999";
    let stranger = gatemesh_node::edge::pinned_builder(None)
        .unwrap()
        .build()
        .unwrap();
    let url = format!("{}/v1/import", gate.base);
    for (what, file) in [("flagging", &flagging), ("wiped", &wiped)] {
        let attempts = [
            (
                "a simple cross-site POST",
                stranger
                    .post(&url)
                    .header(header::ORIGIN, page)
                    .header(header::CONTENT_TYPE, "text/plain")
                    .body(file.clone()),
                StatusCode::FORBIDDEN,
            ),
            (
                "a form POST from a null origin",
                stranger
                    .post(&url)
                    .header(header::ORIGIN, "null")
                    .header(header::CONTENT_TYPE, "multipart/form-data; boundary=x")
                    .body(file.clone()),
                StatusCode::FORBIDDEN,
            ),
            (
                "a foreign origin holding the token",
                gate.client
                    .post(&url)
                    .header(header::ORIGIN, page)
                    .header(header::CONTENT_TYPE, "application/octet-stream")
                    .body(file.clone()),
                StatusCode::FORBIDDEN,
            ),
            (
                "text/plain with the token",
                gate.client
                    .post(&url)
                    .header(header::CONTENT_TYPE, "text/plain")
                    .body(file.clone()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (
                "no content type with the token",
                gate.client.post(&url).body(file.clone()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (
                "JSON with the token",
                gate.client
                    .post(&url)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(file.clone()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
        ];
        for (how, request, want) in attempts {
            refused(request, want, &format!("{what} ledger, {how}")).await;
            assert_eq!(stored(&gate).await, before, "{what} ledger, {how}");
        }
    }
    assert_eq!(
        verdict(&gate.scan(&code, "a2").await),
        ("duplicate", "already_admitted")
    );
    // The operator, with the token and the right type, merges the flagging file.
    let r = gate
        .client
        .post(&url)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(flagging)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(gate.node.flags().await.unwrap().len(), 1);
    gate.stop().await;
}

#[tokio::test]
async fn a_rebound_name_is_refused_even_with_the_token() {
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::start(dir.path(), "A", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    assert_eq!(verdict(&gate.scan(&code, "a1").await).0, "admit");
    let before = stored(&gate).await;
    let port = gate.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        "ads.example".to_owned(),
        format!("ads.example:{port}"),
        format!("localhost.ads.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        "127.0.0.1:1".to_owned(),
    ] {
        for (method, path) in [
            (Method::GET, "/v1/export?format=json"),
            (Method::GET, "/v1/status"),
            (Method::POST, "/v1/scan"),
        ] {
            let mut r = gate
                .client
                .request(method.clone(), format!("{}{path}", gate.base))
                .header(header::HOST, &host);
            if method == Method::POST {
                r = r.json(&json!({ "code": code, "scanner": "x" }));
            }
            let body = refused(r, StatusCode::MISDIRECTED_REQUEST, &host).await;
            assert_eq!(body["error"]["code"], "wrong_host", "{host}");
            assert!(
                !body.to_string().contains(tid.as_str()),
                "{host}: nothing of the ledger"
            );
        }
    }
    assert_eq!(stored(&gate).await, before);
    // The names of this machine work.
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let r = gate
            .client
            .get(format!("{}/v1/export?format=json", gate.base))
            .header(header::HOST, &host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{host}");
    }
    gate.stop().await;
}

#[tokio::test]
async fn a_foreign_origin_cannot_scan_or_resolve_and_the_apps_can() {
    let issuer = Issuer::new();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let gate = Gate::start(da.path(), "A", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    assert_eq!(verdict(&gate.scan(&code, "a1").await).0, "admit");
    drop(db);
    let file = foreign_ledger(&issuer, &code).await;
    let r = gate
        .client
        .post(format!("{}/v1/import", gate.base))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(file)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let before = stored(&gate).await;
    let fresh = issuer.ticket(&TicketId::generate());
    let resolve = format!("{}/v1/flags/{tid}/resolve", gate.base);
    let scan = format!("{}/v1/scan", gate.base);
    let stranger = gatemesh_node::edge::pinned_builder(None)
        .unwrap()
        .build()
        .unwrap();
    for page in [
        "http://127.0.0.1:9999",
        "http://localhost:9999",
        "https://ads.example",
        "null",
        "tauri://localhost.ads.example",
    ] {
        let attempts = [
            stranger
                .post(&scan)
                .header(header::ORIGIN, page)
                .header(header::CONTENT_TYPE, "text/plain")
                .body(json!({ "code": fresh, "scanner": "x" }).to_string()),
            gate.client
                .post(&scan)
                .header(header::ORIGIN, page)
                .json(&json!({ "code": fresh, "scanner": "x" })),
            stranger
                .post(&resolve)
                .header(header::ORIGIN, page)
                .header(header::CONTENT_TYPE, "text/plain")
                .body(json!({ "action": "deny", "staff": "Mallory" }).to_string()),
            gate.client
                .post(&resolve)
                .header(header::ORIGIN, page)
                .json(&json!({ "action": "deny", "staff": "Mallory" })),
            gate.client
                .request(Method::OPTIONS, &resolve)
                .header(header::ORIGIN, page)
                .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST"),
        ];
        for request in attempts {
            let body = refused(request, StatusCode::FORBIDDEN, page).await;
            assert_eq!(body["error"]["code"], "forbidden_origin", "{page}");
        }
    }
    assert_eq!(stored(&gate).await, before);
    // JSON endpoints take JSON only, whoever asks.
    let r = gate
        .client
        .post(&scan)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(json!({ "code": fresh, "scanner": "x" }).to_string());
    refused(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "text/plain scan").await;
    assert_eq!(stored(&gate).await, before);

    // The app's own page: its preflight is answered, and with the token it scans and
    // resolves, reading the answers.
    for app in gatemesh_node::api::APP_ORIGINS {
        let r = stranger
            .request(Method::OPTIONS, &scan)
            .header(header::ORIGIN, app)
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "authorization, content-type",
            )
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{app}: {}", r.status());
        assert_eq!(r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], app);
        assert!(
            r.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS]
                .to_str()
                .unwrap()
                .contains("authorization")
        );
        // Without the token even the app's page gets nothing.
        let r = stranger
            .post(&scan)
            .header(header::ORIGIN, app)
            .json(&json!({ "code": fresh, "scanner": "x" }));
        refused(r, StatusCode::UNAUTHORIZED, app).await;
    }
    let app = gatemesh_node::api::APP_ORIGINS[0];
    let r = gate
        .client
        .post(&scan)
        .header(header::ORIGIN, app)
        .json(&json!({ "code": fresh, "scanner": "app" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], app);
    assert_eq!(r.json::<Value>().await.unwrap()["verdict"], "admit");

    // The staff a resolution records says it was made with the token; a name with no room
    // for that mark is refused and changes nothing.
    let long = "S".repeat(60);
    let r = gate
        .client
        .post(&resolve)
        .header(header::ORIGIN, app)
        .json(&json!({ "action": "deny", "staff": long }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("(api token)"),
        "{body}"
    );
    assert_eq!(gate.node.flags().await.unwrap().len(), 1);
    let r = gate
        .client
        .post(&resolve)
        .header(header::ORIGIN, app)
        .json(&json!({ "action": "deny", "staff": " Sam ", "note": "two people" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let resolution = r.json::<Value>().await.unwrap()["resolution"].clone();
    assert_eq!(resolution["staff"], "Sam (api token)", "{resolution}");
    let audit = gate.node.audit().await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].actor, "Sam (api token)");
    assert!(gate.node.flags().await.unwrap().is_empty());
    gate.stop().await;
}
