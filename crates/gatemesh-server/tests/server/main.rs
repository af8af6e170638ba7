//! The server through its real HTTP API on loopback, on SQLite: auth, issuing, idempotent
//! and atomic redemption, voids, manifest deltas, bad input.

use std::collections::HashSet;

use gatemesh_server::Server;
use gatemesh_ticket::{EventId, Keyring, PublicKey, Verifier};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "test-admin-token-0123456789";

struct Running {
    _dir: tempfile::TempDir,
    base: String,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let opened = Server::open_sqlite(dir.path(), Some(TOKEN.into())).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(gatemesh_server::api::serve(
            listener,
            opened.server,
            async {
                let _ = stopped.await;
            },
        ));
        Self {
            _dir: dir,
            base,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap().unwrap();
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn event_with_tickets(&self, eid: &str, count: usize) -> Vec<Value> {
        let (status, _) = self
            .post(
                "/v1/events",
                json!({ "id": eid, "name": "Test night", "capacity": 5000 }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, body) = self
            .post(
                &format!("/v1/events/{eid}/tickets"),
                json!({ "count": count, "seat_prefix": "A-" }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["tickets"].as_array().unwrap().clone()
    }
}

fn redemption(rid: &str, tid: &Value, gate: &str) -> Value {
    json!({ "redemption_id": rid, "tid": tid, "gate": gate, "scanner": "s1", "at": "2026-11-29T20:00:00Z" })
}

#[tokio::test]
async fn organizer_calls_need_the_admin_token() {
    let s = Running::start().await;
    let r = s
        .client
        .get(format!("{}/v1/events", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = s
        .client
        .get(format!("{}/v1/events", s.base))
        .bearer_auth("wrong-token-wrong-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = s
        .client
        .get(format!("{}/v1/health", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn issued_tickets_verify_and_ids_never_repeat() {
    let s = Running::start().await;
    let mut tickets = s.event_with_tickets("ROCK-2026", 2_000).await;
    let (_, more) = s
        .post(
            "/v1/events/ROCK-2026/tickets",
            json!({ "count": 1, "format": "jwt" }),
        )
        .await;
    tickets.extend(more["tickets"].as_array().unwrap().clone());
    let ids: HashSet<&str> = tickets.iter().map(|t| t["tid"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2_001);

    let (_, keys) = s.get("/v1/keys").await;
    let key = PublicKey::from_pem(keys["keys"][0]["pem"].as_str().unwrap()).unwrap();
    let v = Verifier::new(Keyring::from_keys([key]).unwrap())
        .for_event(EventId::new("ROCK-2026").unwrap());
    for t in [&tickets[0], &tickets[1999], &tickets[2000]] {
        let ok = v
            .verify(t["code"].as_str().unwrap(), 1_800_000_000)
            .unwrap();
        assert_eq!(ok.claims.tid.as_str(), t["tid"]);
    }
    assert_eq!(tickets[0]["seat"], "A-1");
    let (status, _) = s
        .post("/v1/events", json!({ "id": "ROCK-2026", "name": "again" }))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, events) = s.get("/v1/events").await;
    assert_eq!(events["events"].as_array().unwrap().len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn redemption_is_idempotent_and_names_the_first_use() {
    let s = Running::start().await;
    let tickets = s.event_with_tickets("E1", 3).await;
    let tid = &tickets[0]["tid"];
    let (_, first) = s
        .post("/v1/events/E1/redemptions", redemption("r-1", tid, "North"))
        .await;
    assert_eq!(first["verdict"], "admit");
    let (_, dup) = s
        .post("/v1/events/E1/redemptions", redemption("r-2", tid, "South"))
        .await;
    assert_eq!(dup["verdict"], "duplicate");
    assert_eq!(dup["first"]["gate"], "North");
    // The first response was lost: the gate retries and gets the same answer, even though
    // the ticket has been used again since.
    let (_, retry) = s
        .post("/v1/events/E1/redemptions", redemption("r-1", tid, "North"))
        .await;
    assert_eq!(retry, first);
    // A journal upload answers item by item.
    let journal = json!({ "redemptions": [redemption("r-3", &tickets[1]["tid"], "North"), redemption("r-1", tid, "North"), redemption("r-4", &json!("NOPE"), "North")] });
    let (status, answers) = s.post("/v1/events/E1/redemptions", journal).await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    let verdicts: Vec<&str> = answers["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["admit", "admit", "reject"]);
    assert_eq!(answers["answers"][2]["reason"], "unknown_ticket");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_gates_racing_on_one_ticket_get_exactly_one_admit() {
    let s = Running::start().await;
    let tickets = s.event_with_tickets("RACE", 1).await;
    let tid = tickets[0]["tid"].clone();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (client, base, tid) = (s.client.clone(), s.base.clone(), tid.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(format!("{base}/v1/events/RACE/redemptions"))
                .bearer_auth(TOKEN)
                .json(&redemption(
                    &format!("race-{i}"),
                    &tid,
                    &format!("gate-{i}"),
                ))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()["verdict"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut verdicts = Vec::new();
    for t in tasks {
        verdicts.push(t.await.unwrap());
    }
    assert_eq!(
        verdicts.iter().filter(|v| *v == "admit").count(),
        1,
        "{verdicts:?}"
    );
    assert_eq!(verdicts.iter().filter(|v| *v == "duplicate").count(), 39);
    s.stop().await;
}

#[tokio::test]
async fn a_void_rejects_and_appears_in_the_manifest_delta() {
    let s = Running::start().await;
    let tickets = s.event_with_tickets("E2", 50).await;
    let (_, full) = s.get("/v1/events/E2/manifest").await;
    assert_eq!(full["tickets"].as_array().unwrap().len(), 50);
    let cursor = full["cursor"].as_i64().unwrap();
    let tid = tickets[7]["tid"].as_str().unwrap();
    let (status, voided) = s
        .post(
            &format!("/v1/events/E2/tickets/{tid}/void"),
            json!({ "reason": "refunded" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{voided}");
    assert_eq!(voided["status"], "void");
    let (_, delta) = s
        .get(&format!("/v1/events/E2/manifest?since={cursor}"))
        .await;
    let changed = delta["tickets"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{delta}");
    assert_eq!(changed[0]["tid"], tid);
    assert_eq!(changed[0]["status"], "void");
    let (_, empty) = s
        .get(&format!("/v1/events/E2/manifest?since={}", delta["cursor"]))
        .await;
    assert_eq!(empty["tickets"], json!([]));
    let (_, r) = s
        .post(
            "/v1/events/E2/redemptions",
            redemption("v-1", &json!(tid), "North"),
        )
        .await;
    assert_eq!(
        (r["verdict"].as_str(), r["reason"].as_str()),
        (Some("reject"), Some("void"))
    );
    let (status, _) = s
        .post(
            &format!("/v1/events/E2/tickets/{tid}/void"),
            json!({ "reason": "again" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    s.stop().await;
}

#[tokio::test]
async fn bad_input_gets_4xx_never_5xx() {
    let s = Running::start().await;
    s.event_with_tickets("E3", 1).await;
    let url = |p: &str| format!("{}{p}", s.base);
    let c = &s.client;
    let big = "x".repeat(70 * 1024);
    let requests = [
        c.post(url("/v1/events")).bearer_auth(TOKEN).header("content-type", "application/json").body("{nope"),
        c.post(url("/v1/events")).bearer_auth(TOKEN).json(&json!({ "id": "bad id", "name": "x" })),
        c.post(url("/v1/events")).bearer_auth(TOKEN).json(&json!({ "id": "OK", "name": "x", "starts_at": "tomorrow" })),
        c.post(url("/v1/events")).bearer_auth(TOKEN).json(&json!({ "id": "OK", "name": big })),
        c.post(url("/v1/events/NOPE/tickets")).bearer_auth(TOKEN).json(&json!({ "count": 1 })),
        c.post(url("/v1/events/E3/tickets")).bearer_auth(TOKEN).json(&json!({ "count": 0 })),
        c.post(url("/v1/events/E3/tickets")).bearer_auth(TOKEN).json(&json!({ "count": 100_001 })),
        c.post(url("/v1/events/E3/tickets")).bearer_auth(TOKEN).json(&json!({ "count": 2, "seats": ["A"] })),
        c.post(url("/v1/events/E3/tickets")).bearer_auth(TOKEN).json(&json!({ "count": 1, "format": "pdf417" })),
        c.get(url("/v1/events/E3/tickets/UNKNOWN")).bearer_auth(TOKEN),
        c.post(url("/v1/events/E3/tickets/UNKNOWN/void")).bearer_auth(TOKEN).json(&json!({ "reason": "x" })),
        c.get(url("/v1/events/E3/manifest?since=abc")).bearer_auth(TOKEN),
        c.get(url("/v1/events/NOPE/manifest")).bearer_auth(TOKEN),
        c.post(url("/v1/events/E3/redemptions")).bearer_auth(TOKEN).json(&json!({ "redemption_id": "r", "tid": "T", "gate": "g", "scanner": "s", "at": "yesterday" })),
        c.post(url("/v1/events/E3/redemptions")).bearer_auth(TOKEN).json(&json!({ "redemption_id": "", "tid": "T", "gate": "g", "scanner": "s", "at": "2026-01-01T00:00:00Z" })),
        c.post(url("/v1/events/NOPE/redemptions")).bearer_auth(TOKEN).json(&redemption("r", &json!("T"), "g")),
        c.get(url("/v1/nothing")).bearer_auth(TOKEN),
    ];
    for r in requests {
        let r = r.send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_client_error(), "{status}: {body}");
        assert!(body["error"]["message"].is_string(), "{status}: {body}");
    }
    let (_, events) = s.get("/v1/events").await;
    assert_eq!(
        events["events"].as_array().unwrap().len(),
        1,
        "nothing was created"
    );
    s.stop().await;
}

#[tokio::test]
async fn transfers_chain_and_reverts_are_audited() {
    let s = Running::start().await;
    let tickets = s.event_with_tickets("E4", 2).await;
    let t0 = tickets[0]["tid"].as_str().unwrap().to_owned();
    let (status, t1) = s
        .post(
            &format!("/v1/events/E4/tickets/{t0}/transfer"),
            json!({ "holder": "Robin", "actor": "box-office" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{t1}");
    assert_eq!(t1["transferred_from"], t0.as_str());
    assert_eq!(t1["seat"], tickets[0]["seat"]);
    let t1id = t1["tid"].as_str().unwrap().to_owned();
    let (_, t2) = s
        .post(
            &format!("/v1/events/E4/tickets/{t1id}/transfer"),
            json!({ "holder": "Sam" }),
        )
        .await;
    let t2id = t2["tid"].as_str().unwrap().to_owned();
    // The chain reads the same from any link.
    for link in [&t0, &t1id, &t2id] {
        let (_, chain) = s.get(&format!("/v1/events/E4/tickets/{link}/chain")).await;
        let ids: Vec<&str> = chain["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tid"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [t0.as_str(), t1id.as_str(), t2id.as_str()],
            "from {link}"
        );
    }
    // The old codes are refused; the new one admits; a transferred ticket cannot move again.
    let (_, old) = s
        .post(
            "/v1/events/E4/redemptions",
            redemption("t-1", &json!(t0), "North"),
        )
        .await;
    assert_eq!(old["reason"], "transferred");
    let (_, new) = s
        .post(
            "/v1/events/E4/redemptions",
            redemption("t-2", &json!(t2id), "North"),
        )
        .await;
    assert_eq!(new["verdict"], "admit");
    let (status, _) = s
        .post(&format!("/v1/events/E4/tickets/{t0}/transfer"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    // A mistaken admission is reverted: the ticket admits again.
    let (status, r) = s
        .post(
            &format!("/v1/events/E4/tickets/{t2id}/revert"),
            json!({ "actor": "Sam", "reason": "scanned the wrong person" }),
        )
        .await;
    assert_eq!((status, r["reverted"].as_i64()), (StatusCode::OK, Some(1)));
    let (_, again) = s
        .post(
            "/v1/events/E4/redemptions",
            redemption("t-3", &json!(t2id), "South"),
        )
        .await;
    assert_eq!(again["verdict"], "admit");
    let (status, _) = s
        .post(
            &format!(
                "/v1/events/E4/tickets/{}/revert",
                tickets[1]["tid"].as_str().unwrap()
            ),
            json!({ "actor": "Sam", "reason": "x" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "nothing to revert");

    let (_, audit) = s.get("/v1/events/E4/audit").await;
    let actions: Vec<(&str, &str)> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [
            ("transfer", "box-office"),
            ("transfer", "admin"),
            ("revert", "Sam")
        ]
    );
    s.stop().await;
}
