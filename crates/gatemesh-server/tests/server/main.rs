//! The server through its real HTTP API on loopback, every test run on SQLite and on a real
//! PostgreSQL: auth, issuing, idempotent and atomic redemption, voids, manifest deltas and
//! the live change stream, transfers, reverts, bad input; two server instances on one
//! PostgreSQL acting as one; and the OpenAPI document held against the router and against
//! real answers.

use std::{
    collections::{BTreeSet, HashSet},
    path::Path,
    time::Duration,
};

use futures_util::StreamExt;
use gatemesh_server::{Database, Server};
use gatemesh_testkit::{
    fuzz, on_both_backends,
    pg::{self, Backend},
};
use gatemesh_ticket::{EventId, Keyring, PublicKey, Verifier};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "test-admin-token-0123456789";

mod guests;
mod listing;
mod lists;
mod revoke;
mod service;
use guests::{
    a_database_of_the_previous_schema_is_brought_up_to_date,
    holders_and_orders_reach_gates_only_where_the_organizer_allows,
};
use listing::the_ticket_listing_pages_through_every_ticket_as_each_reads;
use lists::released_lists_reach_gates_in_the_manifest_and_the_change_stream;
use revoke::{
    a_revoked_device_is_refused_and_gates_hear_of_it,
    a_revoked_devices_later_records_do_not_count_whoever_relays_them,
};

on_both_backends!(
    organizer_calls_need_the_admin_token,
    issued_tickets_verify_and_ids_never_repeat,
    issued_tickets_carry_their_product_and_transfers_keep_it,
    redemption_is_idempotent_and_names_the_first_use,
    forty_gates_racing_on_one_ticket_get_exactly_one_admit,
    concurrent_redemptions_are_each_answered_as_if_alone,
    a_void_rejects_and_appears_in_the_manifest_delta,
    the_ticket_listing_pages_through_every_ticket_as_each_reads,
    bad_input_gets_4xx_never_5xx,
    transfers_chain_and_reverts_are_audited,
    the_change_stream_resumes_and_carries_voids_and_reverts,
    every_stream_of_an_event_gets_each_change_once_from_its_own_cursor,
    journal_records_come_back_as_the_first_use,
    a_gate_learns_which_redemptions_the_server_holds_with_their_answers,
    exits_and_reentries_a_gate_allowed_are_not_copies,
    journal_entries_count_once_per_check_in_scope,
    staff_accept_deny_or_revert_a_flag,
    devices_pair_once_and_reach_only_their_own_event,
    devices_resolve_only_flags_of_their_event_and_sign_as_themselves,
    wrong_codes_from_one_address_do_not_stop_pairing_from_another,
    a_pairing_the_server_fails_leaves_the_code_good_and_one_code_pairs_once,
    the_longest_event_id_and_device_name_pair,
    metrics_count_redemptions_by_gate_and_verdict,
    a_devices_journal_carries_only_records_their_writers_signed,
    online_admissions_reach_gates_signed_by_the_server,
    a_devices_journal_refuses_every_forgery_of_the_adversary_harness,
    a_revoked_device_is_refused_and_gates_hear_of_it,
    a_revoked_devices_later_records_do_not_count_whoever_relays_them,
    released_lists_reach_gates_in_the_manifest_and_the_change_stream,
    holders_and_orders_reach_gates_only_where_the_organizer_allows,
    a_database_of_the_previous_schema_is_brought_up_to_date,
);

/// The server's gatherers keep PostgreSQL connections of their own. When the database ends
/// them (a restart, a failover, an administrator), the redemptions in flight are still
/// answered, alone, and the next ones are gathered again on new connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redemptions_outlive_the_database_closing_the_gatherers_connections() {
    let dir = tempfile::tempdir().unwrap();
    let db = pg::Database::fresh();
    let s = Running::on(dir.path(), Some(&db)).await;
    let tickets = s.event_with_tickets("CUT", 12).await;
    let path = "/v1/events/CUT/redemptions";
    let (status, first) = s
        .post(path, redemption("cut-0", &tickets[0]["tid"], "North"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["verdict"], "admit");
    // Fails when no gatherer connection is there to end, so the test cannot pass vacuously.
    let end_gatherers = "DO $$ BEGIN
        IF (SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = 'gatemesh-gather' AND datname = current_database()) = 0
        THEN RAISE EXCEPTION 'no gatherer connection to end'; END IF; END $$";
    db.execute(end_gatherers).unwrap();

    // Ten at once on the ended connections: each answered as it would be alone.
    let mut tasks = Vec::new();
    for (i, t) in tickets[1..11].iter().enumerate() {
        let (client, base, tid) = (s.client.clone(), s.base.clone(), t["tid"].clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(format!("{base}/v1/events/CUT/redemptions"))
                .bearer_auth(TOKEN)
                .json(&redemption(&format!("cut-{}", i + 1), &tid, "South"))
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }));
    }
    for t in tasks {
        let (status, answer) = t.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["verdict"], "admit", "{answer}");
    }
    // What was stored before the cut is still the answer, and still the first use.
    let (_, again) = s
        .post(path, redemption("cut-0", &tickets[0]["tid"], "North"))
        .await;
    assert_eq!(again, first);
    let (_, copy) = s
        .post(path, redemption("copy", &tickets[0]["tid"], "East"))
        .await;
    assert_eq!(copy["verdict"], "duplicate");
    assert_eq!(copy["first"]["redemption_id"], "cut-0");
    // The gatherers connected again.
    let (status, _) = s
        .post(path, redemption("cut-11", &tickets[11]["tid"], "North"))
        .await;
    assert_eq!(status, StatusCode::OK);
    db.execute(end_gatherers).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_one_postgres_act_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = pg::Database::fresh();
    let a = Running::on(dir.path(), Some(&db)).await;
    let b = Running::on(dir.path(), Some(&db)).await;
    let tickets = a.event_with_tickets("TWIN", 3).await;
    // Tickets issued through A verify with the key B publishes: one service, one key.
    let (_, ka) = a.get("/v1/keys").await;
    let (_, kb) = b.get("/v1/keys").await;
    assert_eq!(ka, kb);

    // A void through A reaches B's change stream.
    let (_, m) = b.get("/v1/events/TWIN/manifest").await;
    let mut stream = Sse::open(
        &b,
        &format!("/v1/events/TWIN/changes?since={}", m["cursor"]),
    )
    .await;
    let first = stream.next_event().await;
    assert_eq!(first.1["tickets"], json!([]), "live, nothing new yet");
    let tid = tickets[1]["tid"].as_str().unwrap();
    let (status, _) = a
        .post(
            &format!("/v1/events/TWIN/tickets/{tid}/void"),
            json!({ "reason": "refund" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, data) = stream.next_event().await;
    assert_eq!(data["tickets"][0]["tid"], tid);
    assert_eq!(data["tickets"][0]["status"], "void");

    // Forty gates race on one ticket, half through each server: one admit.
    let tid = tickets[0]["tid"].clone();
    let verdicts = forty_gates_race(&[&a, &b], "TWIN", &tid, "twin").await;
    assert_eq!(
        verdicts.iter().filter(|v| *v == "admit").count(),
        1,
        "{verdicts:?}"
    );
    // A retry through the other instance gets the stored answer.
    let (_, again_a) = a
        .post(
            "/v1/events/TWIN/redemptions",
            redemption("twin-1", &tid, "gate-1"),
        )
        .await;
    let (_, again_b) = b
        .post(
            "/v1/events/TWIN/redemptions",
            redemption("twin-1", &tid, "gate-1"),
        )
        .await;
    assert_eq!(again_a, again_b);
    assert_eq!(again_a["verdict"].as_str(), Some(verdicts[1].as_str()));
    drop(stream);
    a.stop().await;
    b.stop().await;
}

/// A server-sent-events reader over a real HTTP response.
struct Sse {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl Sse {
    async fn open(s: &Running, path: &str) -> Self {
        Self::open_with(s, path, None).await
    }

    async fn open_with(s: &Running, path: &str, last_event_id: Option<&str>) -> Self {
        let mut r = s.client.get(format!("{}{path}", s.base)).bearer_auth(TOKEN);
        if let Some(id) = last_event_id {
            r = r.header("last-event-id", id);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        Self::from(r)
    }

    fn from(r: reqwest::Response) -> Self {
        Self {
            body: Box::pin(r.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next `tickets` event: its id and its data. Waits at most 20 s.
    async fn next_event(&mut self) -> (String, Value) {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let (mut id, mut kind, mut data) =
                        (String::new(), String::new(), String::new());
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            id = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("event:") {
                            kind = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push_str(v.trim());
                        }
                    }
                    if kind == "tickets" {
                        return (id, serde_json::from_str(&data).unwrap());
                    }
                    continue;
                }
                let chunk = self.body.next().await.expect("the stream ended").unwrap();
                self.buffer.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .expect("no change-stream event within 20 s")
    }
}

/// A client that trusts exactly the server certificate `pin`.
fn client(pin: gatemesh_wire::CertFingerprint) -> reqwest::Client {
    gatemesh_node::edge::pinned_builder(Some(pin))
        .unwrap()
        .build()
        .unwrap()
}

struct Running {
    _dir: Option<tempfile::TempDir>,
    _db: Option<pg::Database>,
    base: String,
    /// The certificate the server presents (self-signed, in its data directory).
    pin: gatemesh_wire::CertFingerprint,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    async fn start(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = backend.database();
        let mut s = Self::on(dir.path(), db.as_ref()).await;
        s._dir = Some(dir);
        s._db = db;
        s
    }

    /// A server on `data` and `db` (SQLite in `data` without one), over HTTPS with the
    /// self-signed certificate it keeps in `data`; several may share both.
    async fn on(data: &Path, db: Option<&pg::Database>) -> Self {
        Self::on_database(data, db.map(|d| Database::Postgres(d.url.clone()))).await
    }

    /// [`Running::on`] with any database (SQLite in `data` without one).
    async fn on_database(data: &Path, db: Option<Database>) -> Self {
        let opened = Server::open(data, db, Some(TOKEN.into())).unwrap();
        let tls = gatemesh_server::tls::TlsIdentity::self_signed(data).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let pin = tls.fingerprint();
        let task = tokio::spawn(async move {
            gatemesh_server::api::serve_tls(listener, opened.server, &tls, async {
                let _ = stopped.await;
            })
            .await
        });
        Self {
            _dir: None,
            _db: None,
            base,
            pin,
            client: client(pin),
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

    /// Fails unless the event's audit lines are `expected` (action, actor), oldest first.
    async fn assert_audit(&self, eid: &str, expected: &[(&str, &str)]) {
        let (_, audit) = self.get(&format!("/v1/events/{eid}/audit")).await;
        let actions: Vec<(&str, &str)> = audit["audit"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["action"].as_str().unwrap(), a["actor"].as_str().unwrap()))
            .collect();
        assert_eq!(actions, expected, "{audit}");
    }

    /// A device of `eid` named `name` in `role`, paired: its credential.
    async fn paired(&self, eid: &str, name: &str, role: &str) -> String {
        let (status, code) = self
            .post(
                &format!("/v1/events/{eid}/devices"),
                json!({ "name": name, "role": role }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{code}");
        let csr = gatemesh_mesh::pki::DeviceRequest::new().unwrap().csr_pem;
        let r = self
            .client
            .post(format!("{}/v1/pair", self.base))
            .json(&json!({ "code": code["code"], "csr": csr }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let paired: Value = r.json().await.unwrap();
        paired["token"].as_str().unwrap().to_owned()
    }

    /// A POST with a device's credential instead of the admin token.
    async fn post_as(&self, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
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

async fn organizer_calls_need_the_admin_token(backend: Backend) {
    let s = Running::start(backend).await;
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

async fn issued_tickets_verify_and_ids_never_repeat(backend: Backend) {
    let s = Running::start(backend).await;
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

async fn issued_tickets_carry_their_product_and_transfers_keep_it(backend: Backend) {
    let s = Running::start(backend).await;
    s.event_with_tickets("FEST", 1).await;
    let (_, keys) = s.get("/v1/keys").await;
    let key = PublicKey::from_pem(keys["keys"][0]["pem"].as_str().unwrap()).unwrap();
    let v =
        Verifier::new(Keyring::from_keys([key]).unwrap()).for_event(EventId::new("FEST").unwrap());
    let product = |t: &Value| {
        v.verify(t["code"].as_str().unwrap(), 1_800_000_000)
            .unwrap()
            .claims
            .product
            .map(|p| p.to_string())
    };
    let path = "/v1/events/FEST/tickets";
    let mut issued = Vec::new();
    for (body, expect) in [
        (
            json!({ "count": 2, "format": "jwt", "product": "VIP" }),
            Some("VIP"),
        ),
        (
            json!({ "count": 1, "format": "gm1", "product": "3" }),
            Some("#3"),
        ),
        (
            json!({ "count": 1, "format": "jwt", "product": "3" }),
            Some("#3"),
        ),
        (json!({ "count": 1 }), None),
    ] {
        let (status, answer) = s.post(path, body.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{body}: {answer}");
        for t in answer["tickets"].as_array().unwrap() {
            assert_eq!(product(t).as_deref(), expect, "{body}");
            issued.push(t.clone());
        }
    }
    // Bad products are typed 400s and issue nothing: a code GM1 cannot carry, a code that
    // breaks the rule, a number outside 1-255.
    for bad in [
        json!({ "count": 1, "product": "VIP" }),
        json!({ "count": 1, "format": "jwt", "product": "V I P" }),
        json!({ "count": 1, "format": "jwt", "product": "0" }),
        json!({ "count": 1, "format": "jwt", "product": "256" }),
        json!({ "count": 1, "format": "jwt", "product": "" }),
        json!({ "count": 1, "format": "jwt", "product": 3 }),
    ] {
        let (status, answer) = s.post(path, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {answer}");
        assert_eq!(answer["error"]["code"], "bad_request", "{bad}: {answer}");
    }
    let (_, manifest) = s.get("/v1/events/FEST/manifest").await;
    assert_eq!(
        manifest["tickets"].as_array().unwrap().len(),
        1 + issued.len()
    );
    // A transfer's new ticket is of the old one's product.
    let old = issued[0]["tid"].as_str().unwrap();
    let (status, moved) = s
        .post(
            &format!("/v1/events/FEST/tickets/{old}/transfer"),
            json!({ "holder": "Kim", "actor": "box office" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{moved}");
    assert_eq!(product(&moved).as_deref(), Some("VIP"), "{moved}");
    s.stop().await;
}

async fn redemption_is_idempotent_and_names_the_first_use(backend: Backend) {
    let s = Running::start(backend).await;
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

/// Forty gates redeem `tid` at once, gate `i` as `gate-{i}` with redemption id `{rid}-{i}`,
/// through `servers[i % servers.len()]`; their verdicts, gate by gate.
async fn forty_gates_race(servers: &[&Running], eid: &str, tid: &Value, rid: &str) -> Vec<String> {
    let mut tasks = Vec::new();
    for i in 0..40 {
        let s = servers[i % servers.len()];
        let url = format!("{}/v1/events/{eid}/redemptions", s.base);
        let body = redemption(&format!("{rid}-{i}"), tid, &format!("gate-{i}"));
        let client = s.client.clone();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(TOKEN)
                .json(&body)
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
    verdicts
}

async fn forty_gates_racing_on_one_ticket_get_exactly_one_admit(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("RACE", 1).await;
    let tid = tickets[0]["tid"].clone();
    let verdicts = forty_gates_race(&[&s], "RACE", &tid, "race").await;
    assert_eq!(
        verdicts.iter().filter(|v| *v == "admit").count(),
        1,
        "{verdicts:?}"
    );
    assert_eq!(verdicts.iter().filter(|v| *v == "duplicate").count(), 39);
    s.stop().await;
}

/// Many requests at once (on PostgreSQL the server gathers them into one call): distinct
/// tickets, one id retried five times at once, four racing on a ticket, and an id another
/// event already holds — each answered as it would be alone, the stray one refused alone.
async fn concurrent_redemptions_are_each_answered_as_if_alone(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("GATHER", 22).await;
    let other = s.event_with_tickets("ELSEWHERE", 1).await;
    let (status, _) = s
        .post(
            "/v1/events/ELSEWHERE/redemptions",
            redemption("taken", &other[0]["tid"], "North"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut bodies = Vec::new();
    for t in &tickets[..20] {
        let tid = t["tid"].as_str().unwrap();
        bodies.push(redemption(&format!("d-{tid}"), &t["tid"], "North"));
    }
    for _ in 0..5 {
        bodies.push(redemption("same", &tickets[20]["tid"], "South"));
    }
    for i in 0..4 {
        bodies.push(redemption(
            &format!("race-{i}"),
            &tickets[21]["tid"],
            "East",
        ));
    }
    bodies.push(redemption("taken", &tickets[0]["tid"], "North"));
    let mut tasks = Vec::new();
    for body in bodies {
        let (client, base) = (s.client.clone(), s.base.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(format!("{base}/v1/events/GATHER/redemptions"))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let (distinct, rest) = answers.split_at(20);
    let (same, rest) = rest.split_at(5);
    let (race, stray) = rest.split_at(4);
    for (status, a) in distinct {
        assert_eq!(
            (*status, a["verdict"].as_str()),
            (StatusCode::OK, Some("admit")),
            "{a}"
        );
    }
    assert!(same.iter().all(|a| a == &same[0]), "{same:?}");
    assert_eq!(same[0].1["verdict"], "admit");
    let admits = race.iter().filter(|(_, a)| a["verdict"] == "admit").count();
    assert_eq!(admits, 1, "{race:?}");
    assert_eq!(stray[0].0, StatusCode::CONFLICT, "{:?}", stray[0]);
    let (_, stats) = s.get("/v1/events/GATHER/stats").await;
    assert_eq!(stats["admitted"], 22, "{stats}");
    let (_, elsewhere) = s.get("/v1/events/ELSEWHERE/stats").await;
    assert_eq!(elsewhere["admitted"], 1, "{elsewhere}");
    s.stop().await;
}

async fn a_void_rejects_and_appears_in_the_manifest_delta(backend: Backend) {
    let s = Running::start(backend).await;
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

async fn bad_input_gets_4xx_never_5xx(backend: Backend) {
    let s = Running::start(backend).await;
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

async fn transfers_chain_and_reverts_are_audited(backend: Backend) {
    let s = Running::start(backend).await;
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
    // Reverted once more: gates learn it as one revert the server's identity signed,
    // covering both admissions (a gate that joins now needs only this one).
    let (status, r) = s
        .post(
            &format!("/v1/events/E4/tickets/{t2id}/revert"),
            json!({ "actor": "Sam", "reason": "scanned the wrong person again" }),
        )
        .await;
    assert_eq!((status, r["reverted"].as_i64()), (StatusCode::OK, Some(1)));
    let (_, manifest) = s.get("/v1/events/E4/manifest").await;
    let entry = manifest["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == json!(t2id))
        .unwrap()
        .clone();
    assert_eq!(entry["reverted"], json!(["t-2", "t-3"]), "{entry}");
    let decision = &entry["resolution"];
    assert_eq!(
        (&decision["action"], &decision["staff"], &decision["covers"]),
        (&json!("revert"), &json!("Sam"), &json!(["t-2", "t-3"])),
        "{entry}"
    );
    let record = &decision["record"];
    assert_eq!(
        (&record["action"], &record["covers"], &record["staff"]),
        (&json!("revert"), &json!(["t-2", "t-3"]), &json!("Sam"))
    );
    assert!(
        record["sig"].is_string() && record["cert"].is_string(),
        "{record}"
    );
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

    s.assert_audit(
        "E4",
        &[
            ("transfer", "box-office"),
            ("transfer", "admin"),
            ("revert", "Sam"),
            ("revert", "Sam"),
        ],
    )
    .await;
    s.stop().await;
}

async fn the_change_stream_resumes_and_carries_voids_and_reverts(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("LIVE", 4500).await;
    // From the start: the whole manifest, in pieces, each resumable.
    let mut stream = Sse::open(&s, "/v1/events/LIVE/changes").await;
    let mut seen = 0;
    let mut last = String::new();
    while seen < 4500 {
        let (id, data) = stream.next_event().await;
        seen += data["tickets"].as_array().unwrap().len();
        assert_eq!(data["cursor"].to_string(), id);
        last = id;
    }
    assert_eq!(seen, 4500);
    // Live: a void, then a revert of an admission, each as it commits.
    let t0 = tickets[0]["tid"].as_str().unwrap();
    s.post(
        &format!("/v1/events/LIVE/tickets/{t0}/void"),
        json!({ "reason": "refund" }),
    )
    .await;
    let (after_void, mut data) = stream.next_event().await;
    // With the standing as the server's identity signed it, which gates write as it is.
    let record = data["tickets"][0]
        .as_object_mut()
        .unwrap()
        .remove("record")
        .unwrap();
    assert_eq!(
        data["tickets"],
        json!([{ "tid": t0, "seat": "A-1", "status": "void", "reason": "refund" }])
    );
    assert_eq!(
        (
            &record["tid"],
            &record["state"],
            &record["reason"],
            &record["by"]
        ),
        (
            &json!(t0),
            &json!("void"),
            &json!("refund"),
            &json!("server")
        )
    );
    assert!(
        record["sig"].is_string() && record["cert"].is_string(),
        "{record}"
    );
    let t1 = tickets[1]["tid"].clone();
    s.post(
        "/v1/events/LIVE/redemptions",
        redemption("live-1", &t1, "North"),
    )
    .await;
    s.post(
        &format!("/v1/events/LIVE/tickets/{}/revert", t1.as_str().unwrap()),
        json!({ "actor": "Kim", "reason": "wrong person" }),
    )
    .await;
    let (_, data) = stream.next_event().await;
    assert_eq!(data["tickets"][0]["tid"], t1);
    assert_eq!(data["tickets"][0]["reverted"], json!(["live-1"]));
    drop(stream);
    // Reconnecting with the last id seen resumes after it: only the revert comes again.
    let mut resumed = Sse::open_with(&s, "/v1/events/LIVE/changes", Some(&after_void)).await;
    let (_, data) = resumed.next_event().await;
    assert_eq!(data["tickets"].as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data["tickets"][0]["tid"], t1);
    assert_ne!(last, after_void);
    drop(resumed);
    // Unknown events and bad cursors are client errors.
    let (status, _) = s.get("/v1/events/NOPE/changes").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = s.get("/v1/events/LIVE/changes?since=x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    s.stop().await;
}

/// The streams of an event share what one of them read (one read of the database for a
/// commit that wakes every gate's stream): each still gets every change once, in order, and
/// a stream at an older cursor gets what changed after its own.
async fn every_stream_of_an_event_gets_each_change_once_from_its_own_cursor(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("MANY", 120).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let void = |i: usize| {
        let s = &s;
        let t = tid(i);
        async move {
            let (status, body) = s
                .post(
                    &format!("/v1/events/MANY/tickets/{t}/void"),
                    json!({ "reason": "refund" }),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    // Reads a stream until it has seen `want` voided tickets; each ticket once.
    async fn voids_seen(stream: &mut Sse, want: usize) -> (Vec<String>, String) {
        let mut seen = Vec::new();
        let mut last = String::new();
        while seen.len() < want {
            let (id, data) = stream.next_event().await;
            for t in data["tickets"].as_array().unwrap() {
                if t["status"] == "void" {
                    let tid = t["tid"].as_str().unwrap().to_owned();
                    assert!(!seen.contains(&tid), "{tid} came twice");
                    seen.push(tid);
                }
            }
            last = id;
        }
        (seen, last)
    }
    let mut streams = Vec::new();
    for _ in 0..8 {
        let mut stream = Sse::open(&s, "/v1/events/MANY/changes").await;
        assert_eq!(
            stream.next_event().await.1["tickets"]
                .as_array()
                .unwrap()
                .len(),
            120
        );
        streams.push(stream);
    }
    void(0).await;
    let mut after_first = String::new();
    for stream in &mut streams {
        let (seen, last) = voids_seen(stream, 1).await;
        assert_eq!(seen, [tid(0)]);
        after_first = last;
    }
    // Rounds of ten voids at once, each its own commit, while every stream reads: none is
    // missed by a stream that took a delta read before it committed.
    let mut want = std::collections::BTreeSet::new();
    for round in 0..10 {
        let these: Vec<usize> = (1 + round * 10..=10 + round * 10).collect();
        futures_util::future::join_all(these.iter().map(|&i| void(i))).await;
        let these: std::collections::BTreeSet<String> = these.into_iter().map(tid).collect();
        for stream in &mut streams {
            let (seen, _) = voids_seen(stream, 10).await;
            assert_eq!(
                seen.into_iter().collect::<std::collections::BTreeSet<_>>(),
                these
            );
        }
        want.extend(these);
    }
    // A stream that resumes after the first void, while the others are live: it gets the
    // hundred, not the live streams' latest delta; then the next void like everyone else.
    let mut late = Sse::open_with(&s, "/v1/events/MANY/changes", Some(&after_first)).await;
    let (seen, _) = voids_seen(&mut late, 100).await;
    assert_eq!(
        seen.into_iter().collect::<std::collections::BTreeSet<_>>(),
        want
    );
    void(101).await;
    streams.push(late);
    for stream in &mut streams {
        assert_eq!(voids_seen(stream, 1).await.0, [tid(101)]);
    }
    drop(streams);
    s.stop().await;
}

async fn journal_records_come_back_as_the_first_use(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("JRN", 2).await;
    let tid = tickets[0]["tid"].as_str().unwrap();
    let record = json!({
        "id": "j-1", "tid": tid, "direction": "entry", "node": "node-a", "gate": "North",
        "scanner": "s1", "at_ms": 1_800_000_000_000_i64,
        "hlc": { "wall_ms": 1_800_000_000_000_i64, "counter": 0, "node": "node-a" }, "seen": []
    });
    let mut first = redemption("j-1", &json!(tid), "North");
    first["record"] = record.clone();
    let (status, a) = s
        .post(
            "/v1/events/JRN/redemptions",
            json!({ "redemptions": [first] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["answers"][0]["verdict"], "admit");
    // A second gate's journal holds another admission of the same ticket: it learns the
    // first one, record and all, to write into its own ledger.
    let (_, b) = s
        .post(
            "/v1/events/JRN/redemptions",
            json!({ "redemptions": [redemption("j-2", &json!(tid), "South")] }),
        )
        .await;
    assert_eq!(b["answers"][0]["verdict"], "duplicate");
    assert_eq!(b["answers"][0]["first"]["record"], record);
    // A record that is not this redemption's is refused, and nothing is stored.
    let mut wrong = redemption("j-3", &tickets[1]["tid"], "North");
    wrong["record"] = record.clone();
    let (status, _) = s
        .post(
            "/v1/events/JRN/redemptions",
            json!({ "redemptions": [wrong] }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, c) = s
        .post(
            "/v1/events/JRN/redemptions",
            redemption("j-3", &tickets[1]["tid"], "North"),
        )
        .await;
    assert_eq!(
        c["verdict"], "admit",
        "j-3 was not stored by the refused upload"
    );
    s.stop().await;
}

/// A gate asks which of its peers' redemptions the server holds before it uploads them: each
/// held one comes back with the very answer its upload got (the first admission's record
/// with it), one the server does not hold, or holds for another event, as `null`; a
/// question too large, of ids that are not ids, or from an observer changes nothing.
async fn a_gate_learns_which_redemptions_the_server_holds_with_their_answers(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("HLD", 2).await;
    let other = s.event_with_tickets("HLD2", 1).await;
    let tid = tickets[0]["tid"].as_str().unwrap();
    let record = json!({
        "id": "h-1", "tid": tid, "direction": "entry", "node": "node-a", "gate": "North",
        "scanner": "s1", "at_ms": 1_800_000_000_000_i64,
        "hlc": { "wall_ms": 1_800_000_000_000_i64, "counter": 0, "node": "node-a" }, "seen": []
    });
    let mut first = redemption("h-1", &json!(tid), "North");
    first["record"] = record.clone();
    let journal = json!({ "redemptions": [first, redemption("h-2", &json!(tid), "South")] });
    let (status, uploaded) = s.post("/v1/events/HLD/redemptions", journal).await;
    assert_eq!(status, StatusCode::OK, "{uploaded}");
    let (status, _) = s
        .post(
            "/v1/events/HLD2/redemptions",
            redemption("x-1", &other[0]["tid"], "North"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let ask = json!({ "redemption_ids": ["h-2", "h-9", "h-1", "x-1", "h-2"] });
    let (status, held) = s.post("/v1/events/HLD/redemptions/held", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{held}");
    let answers = held["answers"].as_array().unwrap();
    assert_eq!(
        answers.len(),
        5,
        "one answer per id asked, in order: {held}"
    );
    assert_eq!(
        answers[0], uploaded["answers"][1],
        "h-2 as its upload was answered"
    );
    assert_eq!(answers[0]["first"]["record"], record);
    assert!(answers[1].is_null(), "h-9 was never uploaded");
    assert_eq!(answers[2], uploaded["answers"][0]);
    assert!(answers[3].is_null(), "x-1 is another event's: {held}");
    assert_eq!(answers[4], answers[0], "an id asked twice, answered twice");

    // Refused, each changing nothing.
    let too_many: Vec<String> = (0..=gatemesh_wire::MAX_JOURNAL)
        .map(|i| format!("h-{i}"))
        .collect();
    let (status, _) = s
        .post(
            "/v1/events/HLD/redemptions/held",
            json!({ "redemption_ids": too_many }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for bad in [
        json!({ "redemption_ids": [""] }),
        json!({ "redemption_ids": "h-1" }),
        json!({ "redemption_ids": ["h-1"], "and": 1 }),
    ] {
        let (status, body) = s.post("/v1/events/HLD/redemptions/held", bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let (status, _) = s
        .post("/v1/events/NOPE/redemptions/held", ask.clone())
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A gate of the event asks as the organizer does; an observer of it (a manager's laptop
    // uploads nothing) and a gate of another event are refused.
    let north = s.paired("HLD", "North-1", "gate").await;
    let observer = s.paired("HLD", "manager", "observer").await;
    let stranger = s.paired("HLD2", "Away-1", "gate").await;
    let (status, by_gate) = s
        .post_as(&north, "/v1/events/HLD/redemptions/held", ask.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{by_gate}");
    assert_eq!(by_gate, held);
    for (who, token) in [
        ("an observer", &observer),
        ("another event's gate", &stranger),
    ] {
        let (status, body) = s
            .post_as(token, "/v1/events/HLD/redemptions/held", ask.clone())
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{who}: {body}");
        assert!(
            body.get("answers").is_none(),
            "{who} learned nothing: {body}"
        );
    }
    let (status, again) = s.post("/v1/events/HLD/redemptions/held", ask).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, held, "asking stores nothing");
    s.stop().await;
}

async fn devices_pair_once_and_reach_only_their_own_event(backend: Backend) {
    let s = Running::start(backend).await;
    s.event_with_tickets("HOME", 2).await;
    s.event_with_tickets("AWAY", 1).await;
    let (status, code) = s
        .post("/v1/events/HOME/devices", json!({ "name": "North-1" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{code}");
    // The link: this server's URL, the code and the certificate it presents.
    let link = gatemesh_wire::PairingLink::parse(code["link"].as_str().unwrap()).unwrap();
    assert_eq!(
        (link.server.as_str(), link.code.as_str(), link.fingerprint),
        (s.base.as_str(), code["code"].as_str().unwrap(), Some(s.pin))
    );
    let code = code["code"].as_str().unwrap().to_owned();
    // The device's key is made on the device; only its signing request is sent.
    let request = gatemesh_mesh::pki::DeviceRequest::new().unwrap();
    // Pairing needs no token; a wrong code is refused.
    let pair_with = |code: String, csr: String| {
        let (client, base) = (s.client.clone(), s.base.clone());
        async move {
            let r = client
                .post(format!("{base}/v1/pair"))
                .json(&json!({ "code": code, "csr": csr }))
                .send()
                .await
                .unwrap();
            let status = r.status();
            let text = r.text().await.unwrap();
            assert!(!text.contains("PRIVATE KEY"), "a key on the wire: {text}");
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
    };
    let pair = |code: String| pair_with(code, request.csr_pem.clone());
    let (status, _) = pair("00000-00000".into()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A signing request that is not one refuses the pairing and leaves the code unspent.
    for bad in [
        "",
        "garbage",
        "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
    ] {
        let (status, body) = pair_with(code.clone(), bad.into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let r = s
        .client
        .post(format!("{}/v1/pair", s.base))
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "the CSR is required");
    // Typed in lower case with a space: still the code.
    let (status, paired) = pair(code.to_lowercase().replace('-', " ")).await;
    assert_eq!(status, StatusCode::OK, "{paired}");
    assert_eq!(
        (paired["event"].as_str(), paired["name"].as_str()),
        (Some("HOME"), Some("North-1"))
    );
    assert!(paired["identity"].get("device_key").is_none(), "{paired}");
    let (status, _) = pair(code.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a code is good once");

    // The certificate is for the device's own key: a mesh identity of this event, under the
    // server's CA.
    let cert = paired["identity"]["device_pem"].as_str().unwrap();
    request.certified_by(cert).unwrap();
    let id = identity_of(&request, &paired);
    assert_eq!(
        (id.peer.event.as_str(), id.peer.name.as_str()),
        ("HOME", "North-1")
    );

    // The credential opens its own event's gate endpoints, and nothing else.
    let token = paired["token"].as_str().unwrap();
    let with = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut r = s
            .client
            .request(method, format!("{}{path}", s.base))
            .bearer_auth(token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        async move { r.send().await.unwrap().status() }
    };
    assert_eq!(
        with(reqwest::Method::GET, "/v1/events/HOME/manifest", None).await,
        StatusCode::OK
    );
    assert_eq!(
        with(reqwest::Method::GET, "/v1/events/AWAY/manifest", None).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        with(reqwest::Method::GET, "/v1/events", None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        with(
            reqwest::Method::POST,
            "/v1/events/HOME/tickets",
            Some(json!({ "count": 1 }))
        )
        .await,
        StatusCode::UNAUTHORIZED
    );
    let beat = json!({ "counts": { "admit": 3 }, "uplink": { "backlog": 7 } });
    assert_eq!(
        with(
            reqwest::Method::POST,
            "/v1/events/HOME/heartbeat",
            Some(beat)
        )
        .await,
        StatusCode::OK
    );
    let (_, gates) = s.get("/v1/events/HOME/gates").await;
    let g = &gates["gates"][0];
    assert_eq!(
        (
            g["name"].as_str(),
            g["online"].as_bool(),
            g["paired"].as_bool()
        ),
        (Some("North-1"), Some(true), Some(true))
    );
    assert_eq!(g["heartbeat"]["uplink"]["backlog"], 7);

    // An observer (a manager's laptop) may watch but admits no one.
    let (_, code) = s
        .post(
            "/v1/events/HOME/devices",
            json!({ "name": "manager", "role": "observer" }),
        )
        .await;
    let (_, observer) = pair(code["code"].as_str().unwrap().to_owned()).await;
    let r = s
        .client
        .post(format!("{}/v1/events/HOME/redemptions", s.base))
        .bearer_auth(observer["token"].as_str().unwrap())
        .json(&redemption("obs-1", &json!("00000000000AB"), "manager"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let (status, _) = s
        .post("/v1/events/HOME/devices", json!({ "name": "bad name!" }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    s.stop().await;
}

/// A gate or observer credential decides on its own event's flags and nothing more: no
/// revert of a ticket nobody flagged (the organizer's), nothing in another event, and the
/// decision signed with the device's own name whatever `staff` says.
async fn devices_resolve_only_flags_of_their_event_and_sign_as_themselves(backend: Backend) {
    let s = Running::start(backend).await;
    // Ticket 3 is never admitted.
    let tickets = s.event_with_tickets("HOME", 4).await;
    let away = s.event_with_tickets("AWAY", 1).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let north = s.paired("HOME", "North-1", "gate").await;
    let observer = s.paired("HOME", "manager", "observer").await;
    let stranger = s.paired("AWAY", "Away-1", "gate").await;
    // Ticket 0 admitted once (nobody flagged it); tickets 1 and 2 by two gates' journals.
    for (gate, range) in [("North", 0..3), ("South", 1..3)] {
        let items: Vec<Value> = range
            .map(|i| redemption(&format!("{gate}-{i}"), &json!(tid(i)), gate))
            .collect();
        let (status, a) = s
            .post(
                "/v1/events/HOME/redemptions",
                json!({ "redemptions": items }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{a}");
    }
    let (_, away_admit) = s
        .post(
            "/v1/events/AWAY/redemptions",
            redemption("away-0", &away[0]["tid"], "Away-1"),
        )
        .await;
    assert_eq!(away_admit["verdict"], "admit");
    let resolve = |token: &'static str, eid: &'static str, t: String, action: &str, staff: &str| {
        let body = json!({ "action": action, "staff": staff, "note": "looked" });
        let path = format!("/v1/events/{eid}/flags/{t}/resolve");
        let token = match token {
            "north" => north.clone(),
            "observer" => observer.clone(),
            _ => stranger.clone(),
        };
        let s = &s;
        async move { s.post_as(&token, &path, body).await }
    };
    let admissions = |eid: &'static str, t: String| {
        let s = &s;
        async move {
            let (_, d) = s.get(&format!("/v1/events/{eid}/tickets/{t}")).await;
            d["admissions"].as_array().unwrap().len()
        }
    };

    // A gate cannot undo an admission nobody flagged: that revert is the organizer's.
    let (status, e) = resolve("north", "HOME", tid(0), "revert", "Alice").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    assert_eq!(e["error"]["code"], "forbidden", "{e}");
    assert_eq!(admissions("HOME", tid(0)).await, 1);
    // Nor act in another event, flagged or not, whatever the ticket.
    let (status, _) = resolve(
        "north",
        "AWAY",
        away[0]["tid"].as_str().unwrap().into(),
        "revert",
        "Alice",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        admissions("AWAY", away[0]["tid"].as_str().unwrap().into()).await,
        1
    );
    let (status, _) = resolve("stranger", "HOME", tid(1), "deny", "Alice").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A name that passes for another device's decision is refused, and changes nothing.
    let (status, _) = resolve("north", "HOME", tid(1), "deny", "manager / Alice").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, d) = s.get(&format!("/v1/events/HOME/tickets/{}", tid(1))).await;
    assert_eq!(
        (d["status"].as_str(), d["flagged"].as_bool()),
        (Some("active"), Some(true))
    );

    // On a flag of its own event a gate decides, under its own name: "organizer" is only
    // the person's name as typed.
    let (status, t) = resolve("north", "HOME", tid(1), "accept", "organizer").await;
    assert_eq!(status, StatusCode::OK, "{t}");
    let (_, d) = s.get(&format!("/v1/events/HOME/tickets/{}", tid(1))).await;
    assert_eq!(d["resolution"]["staff"], "North-1 / organizer", "{d}");
    // An observer (a manager's laptop) resolves flags too.
    let (status, _) = resolve("observer", "HOME", tid(2), "revert", "Alice").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(admissions("HOME", tid(2)).await, 0);
    // The same revert uploaded again by a gate whose ledger holds it (every gate uploads
    // its peers' decisions too): nothing is left to revert, so it is settled (409, which a
    // gate takes as done), not refused as the organizer's (403, which a gate shows staff
    // as skipped); nothing changes, nothing is audited.
    let (status, e) = resolve("north", "HOME", tid(2), "revert", "Alice").await;
    assert_eq!(status, StatusCode::CONFLICT, "{e}");
    assert_eq!(admissions("HOME", tid(2)).await, 0);
    // Admitted again since: that admission is nobody's flag, so its revert is the
    // organizer's again; and a ticket never admitted has no revert behind it to settle.
    let (status, a) = s
        .post(
            "/v1/events/HOME/redemptions",
            redemption("North-2b", &json!(tid(2)), "North"),
        )
        .await;
    assert_eq!(
        (status, a["verdict"].as_str()),
        (StatusCode::OK, Some("admit")),
        "{a}"
    );
    let (status, e) = resolve("north", "HOME", tid(2), "revert", "Alice").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    assert_eq!(admissions("HOME", tid(2)).await, 1);
    let (status, e) = resolve("north", "HOME", tid(3), "revert", "Alice").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    // The organizer still reverts the unflagged admission.
    let (status, _) = s
        .post(
            &format!("/v1/events/HOME/flags/{}/resolve", tid(0)),
            json!({ "action": "revert", "staff": "Kim" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    s.assert_audit(
        "HOME",
        &[
            ("resolve:accept", "North-1 / organizer"),
            ("resolve:revert", "manager / Alice"),
            ("resolve:revert", "Kim"),
        ],
    )
    .await;

    // An observer admits no one, alone or in a journal.
    let (status, _) = s
        .post_as(
            &observer,
            "/v1/events/HOME/redemptions",
            redemption("obs-1", &json!(tid(0)), "manager"),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s
        .post_as(
            &observer,
            "/v1/events/HOME/redemptions",
            json!({ "redemptions": [redemption("obs-2", &json!(tid(0)), "manager")] }),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(admissions("HOME", tid(0)).await, 0);
    s.stop().await;
}

/// A guesser at one address locks out only itself: a device pairing from another address
/// right after gets in (the limit used to be one for the whole server).
/// The server looks the code up, issues the certificate, and only then spends the code: when
/// issuing fails (here: the event's mesh CA key on disk is damaged), the code stays good for
/// the next try; and of requests racing with one code, exactly one pairs.
async fn a_pairing_the_server_fails_leaves_the_code_good_and_one_code_pairs_once(backend: Backend) {
    let s = Running::start(backend).await;
    s.event_with_tickets("FAIL", 1).await;
    // The first pairing makes the event's mesh CA.
    s.paired("FAIL", "North-1", "gate").await;
    let key = s._dir.as_ref().unwrap().path().join("mesh-ca/FAIL/ca.key");
    let good = std::fs::read(&key).unwrap();
    let (status, code) = s
        .post("/v1/events/FAIL/devices", json!({ "name": "North-2" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{code}");
    let code = code["code"].as_str().unwrap().to_owned();
    let pair = |code: String| {
        let (client, base) = (s.client.clone(), s.base.clone());
        let csr = gatemesh_mesh::pki::DeviceRequest::new().unwrap().csr_pem;
        async move {
            let r = client
                .post(format!("{base}/v1/pair"))
                .json(&json!({ "code": code, "csr": csr }))
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let (status, body) = pair(code.clone()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still good"),
        "{body}"
    );
    std::fs::write(&key, &good).unwrap();
    let (status, body) = pair(code.clone()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the code survives a failure: {body}"
    );
    assert_eq!(body["name"], "North-2");
    let (status, _) = pair(code).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "and is spent by the pairing");

    // Eight requests race with one code: one pairs, seven hear it is gone (or, once the
    // failed tries with this code reach the limiter's count, to wait).
    let (_, code) = s
        .post("/v1/events/FAIL/devices", json!({ "name": "North-3" }))
        .await;
    let code = code["code"].as_str().unwrap().to_owned();
    let answers = futures_util::future::join_all((0..8).map(|_| pair(code.clone()))).await;
    let ok: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::OK)
        .collect();
    assert_eq!(ok.len(), 1, "{answers:?}");
    assert!(
        answers.iter().all(|(status, _)| [
            StatusCode::OK,
            StatusCode::NOT_FOUND,
            StatusCode::TOO_MANY_REQUESTS
        ]
        .contains(status)),
        "{answers:?}"
    );
    let (_, gates) = s.get("/v1/events/FAIL/gates").await;
    let gates = gates["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 3, "{gates:?}");
    assert!(gates.iter().all(|g| g["paired"] == true), "{gates:?}");
    s.stop().await;
}

/// An event id as long as the rule allows (64) and a device name as long as its rule allows
/// (63) make a mesh identity that loads; one character more is refused where it enters.
async fn the_longest_event_id_and_device_name_pair(backend: Backend) {
    let s = Running::start(backend).await;
    let eid = format!("LONG-{}", "x".repeat(59));
    let name = format!("North-{}", "1".repeat(57));
    assert_eq!((eid.len(), name.len()), (64, 63));
    let (status, body) = s
        .post(
            "/v1/events",
            json!({ "id": format!("{eid}x"), "name": "Too long" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    s.event_with_tickets(&eid, 1).await;
    let (status, body) = s
        .post(
            &format!("/v1/events/{eid}/devices"),
            json!({ "name": format!("{name}1") }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (request, paired) = pair_device(&s, &eid, &name).await;
    let id = identity_of(&request, &paired);
    assert_eq!((id.peer.event, id.peer.name), (eid, name));
    s.stop().await;
}

async fn wrong_codes_from_one_address_do_not_stop_pairing_from_another(backend: Backend) {
    let s = Running::start(backend).await;
    s.event_with_tickets("LIMIT", 1).await;
    let (_, code) = s
        .post("/v1/events/LIMIT/devices", json!({ "name": "North-1" }))
        .await;
    let csr = gatemesh_mesh::pki::DeviceRequest::new().unwrap().csr_pem;
    let from = |ip: [u8; 4]| {
        gatemesh_node::edge::pinned_builder(Some(s.pin))
            .unwrap()
            .local_address(std::net::IpAddr::from(ip))
            .build()
            .unwrap()
    };
    let (guesser, device) = (from([127, 0, 0, 1]), from([127, 0, 0, 2]));
    let attempt = |client: &reqwest::Client, code: String| {
        let r = client
            .post(format!("{}/v1/pair", s.base))
            .json(&json!({ "code": code, "csr": csr }));
        async move { r.send().await.unwrap().status() }
    };
    let mut statuses = Vec::new();
    for i in 0..40 {
        statuses.push(attempt(&guesser, format!("{i:05}-00000")).await);
    }
    assert_eq!(statuses[0], StatusCode::NOT_FOUND);
    assert_eq!(statuses[39], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    // The guesser's right code is refused too, for now; the device's is not.
    let right = code["code"].as_str().unwrap().to_owned();
    assert_eq!(
        attempt(&guesser, right.clone()).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(attempt(&device, right).await, StatusCode::OK);
    s.stop().await;
}

async fn metrics_count_redemptions_by_gate_and_verdict(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("MET", 2).await;
    for (rid, t, gate) in [("m1", 0, "North"), ("m2", 0, "South"), ("m3", 1, "North")] {
        s.post(
            "/v1/events/MET/redemptions",
            redemption(rid, &tickets[t]["tid"], gate),
        )
        .await;
    }
    s.post(
        "/v1/events/MET/heartbeat",
        json!({
            "name": "North", "uplink": { "backlog": 12 },
            "refusals": { "not_on_list": 2, "void": 1 }
        }),
    )
    .await;
    let r = s
        .client
        .get(format!("{}/metrics", s.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    for line in [
        r#"gatemesh_redemptions_total{event="MET",gate="North",verdict="admit"} 2"#,
        r#"gatemesh_redemptions_total{event="MET",gate="South",verdict="duplicate"} 1"#,
        r#"gatemesh_gate_upload_backlog{event="MET",gate="North"} 12"#,
        r#"gatemesh_gate_refused_scans{event="MET",gate="North",reason="not_on_list"} 2"#,
        r#"gatemesh_gate_refused_scans{event="MET",gate="North",reason="void"} 1"#,
        "gatemesh_redemption_seconds_count 3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
    let r = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let (_, stats) = s.get("/v1/events/MET/stats").await;
    assert_eq!(
        (
            stats["admitted"].as_i64(),
            stats["answered_duplicate"].as_i64()
        ),
        (Some(2), Some(1))
    );
    s.stop().await;
}

/// The OpenAPI document is the API: an OpenAPI 3 document to an independent parser; the
/// router serves exactly the operations it lists (the router's own list, not one kept by
/// hand); and every operation, called for real, answers with a documented status and a body
/// that validates against its documented schema, undocumented fields included. SQLite only:
/// the document does not depend on the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_openapi_document_is_the_api() {
    let s = Running::start(Backend::Sqlite).await;

    // Served without a credential, and OpenAPI 3 to a parser that is not the generator.
    let r = s
        .client
        .get(format!("{}/v1/openapi.json", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    let spec = oas3::from_json(&text).expect("the document parses as OpenAPI 3");
    assert!(spec.openapi.starts_with("3."), "openapi: {}", spec.openapi);
    spec.validate_version().unwrap();
    let documented: BTreeSet<(String, String)> = spec
        .operations()
        .map(|(path, method, _)| (method.to_string(), path))
        .collect();
    let mut doc = ApiDoc::new(&s, serde_json::from_str(&text).unwrap());
    assert_eq!(doc.operations(), documented);
    for (method, path) in &documented {
        let op = doc.operation(method, path);
        assert!(op["operationId"].is_string(), "{method} {path}");
        assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()));
    }

    // A small event to call everything on.
    let tickets = s.event_with_tickets("DOC", 3).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();

    // The router and the document list the same operations.
    let routed = routed_operations(&s, &[("{eid}", "DOC".into()), ("{tid}", tid(0))]).await;
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty(),
        "routed, not documented: {undocumented:?}"
    );
    assert!(unrouted.is_empty(), "documented, not routed: {unrouted:?}");

    // Every operation called for real (each answer checked against the document), in an
    // order that gives each one something to work on.
    let t = |i: usize| json!(tickets[i]["tid"]);
    let (open, admin) = (None, Some(TOKEN));
    doc.get("/v1/health", open, 200).await;
    doc.get("/v1/keys", open, 200).await;
    doc.get("/.well-known/jwks.json", open, 200).await;
    doc.get("/healthz", open, 200).await;
    doc.get("/readyz", open, 200).await;
    doc.get("/v1/openapi.json", open, 200).await;
    doc.get("/v1/events", open, 401).await;
    let event = json!({
        "id": "DOC2", "name": "Doc night", "capacity": 10, "starts_at": "2026-11-29T19:00:00Z"
    });
    doc.post("/v1/events", admin, event, 201).await;
    doc.get("/v1/events", admin, 200).await;
    let issue = json!({ "count": 2, "format": "jwt", "seats": ["B-1", "B-2"] });
    let issued = doc.post("/v1/events/DOC/tickets", admin, issue, 201).await;
    assert_eq!(issued["tickets"][1]["seat"], "B-2");
    // Redemptions: an admit, a duplicate naming the first use, a journal whose second
    // admission of a ticket flags it, a reject, and bad input.
    let redeem = "/v1/events/DOC/redemptions";
    let a = doc
        .post(redeem, admin, redemption("d-1", &t(0), "North"), 200)
        .await;
    assert_eq!(a["verdict"], "admit");
    let a = doc
        .post(redeem, admin, redemption("d-2", &t(0), "South"), 200)
        .await;
    assert_eq!(a["first"]["gate"], "North");
    let journal = json!({ "redemptions": [
        redemption("d-3", &t(1), "North"),
        redemption("d-4", &t(1), "South"),
        redemption("d-5", &json!("NOPE"), "North"),
    ] });
    let a = doc.post(redeem, admin, journal, 200).await;
    assert_eq!(a["answers"][2]["reason"], "unknown_ticket");
    doc.post(redeem, admin, json!({ "tid": "x" }), 400).await;
    let held = "/v1/events/DOC/redemptions/held";
    let a = doc
        .post(
            held,
            admin,
            json!({ "redemption_ids": ["d-4", "d-9"] }),
            200,
        )
        .await;
    assert_eq!(a["answers"][0]["verdict"], "duplicate");
    assert!(a["answers"][1].is_null(), "{a}");
    doc.post(held, admin, json!({ "ids": ["d-4"] }), 400).await;
    let ticket = |i: usize| format!("/v1/events/DOC/tickets/{}", tid(i));
    doc.get(&ticket(1), admin, 200).await;
    let page = doc.get("/v1/events/DOC/tickets?limit=2", admin, 200).await;
    let after = page["next"].as_str().unwrap().to_owned();
    let page = doc
        .get(&format!("/v1/events/DOC/tickets?after={after}"), admin, 200)
        .await;
    assert_eq!(page["tickets"].as_array().map(Vec::len), Some(3), "{page}");
    doc.get("/v1/events/DOC/tickets?limit=0", admin, 400).await;
    let flags = doc.get("/v1/events/DOC/flags", admin, 200).await;
    assert_eq!(flags["flags"][0]["tid"], t(1));
    // The manifest and its live stream carry the flag with its admissions.
    let manifest = doc.get("/v1/events/DOC/manifest", admin, 200).await;
    let flagged = &manifest["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["tid"] == t(1));
    assert_eq!(flagged.unwrap()["admissions"].as_array().unwrap().len(), 2);
    let delta = doc.get("/v1/events/DOC/changes?since=0", admin, 200).await;
    assert_eq!(delta["tickets"].as_array().unwrap().len(), 5);
    doc.get("/v1/events/NOPE/manifest", admin, 404).await;
    let resolve = json!({ "action": "accept", "staff": "Kim", "note": "same person" });
    let flag = format!("/v1/events/DOC/flags/{}/resolve", tid(1));
    doc.post(&flag, admin, resolve, 200).await;
    // A revert, a transfer and a void, then the manifest with all of them in it.
    let revert = json!({ "actor": "Kim", "reason": "wrong person" });
    doc.post(&format!("{}/revert", ticket(0)), admin, revert, 200)
        .await;
    let transfer = json!({ "holder": "Robin" });
    let new = doc
        .post(&format!("{}/transfer", ticket(2)), admin, transfer, 201)
        .await;
    doc.get(&format!("{}/chain", ticket(2)), admin, 200).await;
    let void = format!(
        "/v1/events/DOC/tickets/{}/void",
        new["tid"].as_str().unwrap()
    );
    doc.post(&void, admin, json!({ "reason": "refund" }), 200)
        .await;
    doc.post(&void, admin, json!({ "reason": "refund" }), 409)
        .await;
    doc.get("/v1/events/DOC/manifest?since=0", admin, 200).await;
    doc.get("/v1/events/DOC/audit", admin, 200).await;
    doc.get("/v1/events/DOC/stats", admin, 200).await;
    // Devices: a pairing code, pairing, a heartbeat with the device's credential.
    let code = doc
        .post(
            "/v1/events/DOC/devices",
            admin,
            json!({ "name": "North-1" }),
            201,
        )
        .await;
    let csr = gatemesh_mesh::pki::DeviceRequest::new().unwrap().csr_pem;
    doc.post(
        "/v1/pair",
        open,
        json!({ "code": "00000-00000", "csr": csr }),
        404,
    )
    .await;
    doc.post(
        "/v1/pair",
        open,
        json!({ "code": code["code"], "csr": "x" }),
        400,
    )
    .await;
    let paired = doc
        .post(
            "/v1/pair",
            open,
            json!({ "code": code["code"], "csr": csr }),
            200,
        )
        .await;
    let device = paired["token"].as_str();
    let beat =
        json!({ "uplink": { "backlog": 2 }, "peers": [{ "name": "South-1", "connected": true }] });
    doc.post("/v1/events/DOC/heartbeat", device, beat, 200)
        .await;
    doc.get("/v1/events/DOC2/manifest", device, 403).await;
    doc.get("/v1/events/DOC/gates", device, 401).await;
    doc.get("/v1/events/DOC/gates", admin, 200).await;
    // Revoking it: not by a device; by the organizer, after which its credential is dead.
    let revoke = "/v1/events/DOC/devices/North-1/revoke";
    doc.post(revoke, device, json!({}), 403).await;
    doc.post(revoke, admin, json!({ "extra": 1 }), 400).await;
    doc.post(
        "/v1/events/DOC/devices/Nobody/revoke",
        admin,
        json!({}),
        404,
    )
    .await;
    let revoked = doc
        .post(revoke, admin, json!({ "reason": "lost" }), 200)
        .await;
    assert_eq!(revoked["revocations"].as_array().map(Vec::len), Some(1));
    doc.get("/v1/events/DOC/manifest", device, 401).await;
    let manifest = doc.get("/v1/events/DOC/manifest", admin, 200).await;
    assert_eq!(manifest["revocations"], revoked["revocations"]);
    doc.get("/metrics", admin, 200).await;
    // The event's check-in lists: released by the organizer only, read by every gate.
    let lists = "/v1/events/DOC/lists";
    doc.get(lists, admin, 404).await;
    let file = json!({
        "event": "DOC", "time_zone": "UTC",
        "lists": [{"id": "main", "name": "Main", "all_products": true}],
    });
    doc.call("PUT", lists, admin, Some(json!({ "event": "DOC" })), 400)
        .await;
    let released = doc.call("PUT", lists, admin, Some(file), 200).await;
    assert_eq!(released["version"], 1);
    doc.get(lists, admin, 200).await;
    // A body that is not JSON, and one over the limit.
    let r = s
        .client
        .post(format!("{}/v1/events", s.base))
        .bearer_auth(TOKEN)
        .body("id=x");
    doc.check("POST", "/v1/events", r.send().await.unwrap())
        .await;
    let big = json!({ "id": "BIG", "name": "x".repeat(70_000) });
    doc.post("/v1/events", admin, big, 413).await;

    let missed: Vec<_> = documented.difference(&doc.called).collect();
    assert!(
        missed.is_empty(),
        "operations this test did not call: {missed:?}"
    );
    s.stop().await;
}

/// Every (method, path) the router serves, asked of the router itself: the paths from its
/// `Debug` output (axum offers no other way to list routes; if that output changes, this
/// finds no path and fails, it cannot pass silently) and each path's methods from the `Allow`
/// header of the 405 that a method no route can have gets.
async fn routed_operations(s: &Running, ids: &[(&str, String)]) -> BTreeSet<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let opened = Server::open(dir.path(), None, Some(TOKEN.into())).unwrap();
    let router = format!("{:?}", gatemesh_server::api::router(opened.server));
    let (routes, _fallbacks) = router
        .split_once("fallback_router")
        .expect("axum's Router lists its routes before its fallback");
    let paths: BTreeSet<&str> = routes
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|p| p.starts_with('/'))
        .collect();
    assert!(paths.len() > 10, "no routes found in {router}");
    let probe = reqwest::Method::from_bytes(b"PROBE").unwrap();
    let mut routed = BTreeSet::new();
    for path in paths {
        let url = ids
            .iter()
            .fold(path.to_owned(), |p, (param, id)| p.replace(param, id));
        let r = s
            .client
            .request(probe.clone(), format!("{}{url}", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
        let allow = r.headers()["allow"].to_str().unwrap().to_owned();
        for method in allow.split(',').map(str::trim).filter(|m| *m != "HEAD") {
            routed.insert((method.to_owned(), path.to_owned()));
        }
    }
    routed
}

/// The served document, and what the test called of it.
struct ApiDoc {
    doc: Value,
    /// `components.schemas`, made strict: every object schema refuses properties it does not
    /// list, so a field a handler sends but the document does not name fails validation.
    strict: Value,
    called: BTreeSet<(String, String)>,
    client: reqwest::Client,
    base: String,
}

impl ApiDoc {
    fn new(s: &Running, doc: Value) -> Self {
        let mut schemas = doc["components"]["schemas"].clone();
        let originals = schemas.clone();
        for schema in schemas.as_object_mut().unwrap().values_mut() {
            flatten_all_of(schema, &originals);
            forbid_unknown_properties(schema);
        }
        Self {
            strict: json!({ "schemas": schemas }),
            doc,
            called: BTreeSet::new(),
            client: s.client.clone(),
            base: s.base.clone(),
        }
    }

    fn operations(&self) -> BTreeSet<(String, String)> {
        let mut ops = BTreeSet::new();
        for (path, item) in self.doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                    ops.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        ops
    }

    fn operation(&self, method: &str, path: &str) -> &Value {
        &self.doc["paths"][path][method.to_lowercase()]
    }

    /// The documented path a concrete one matches (`{…}` matches any segment).
    fn template(&self, method: &str, url: &str) -> String {
        let path = url.split('?').next().unwrap();
        let segments: Vec<&str> = path.split('/').collect();
        let matching: Vec<String> = self
            .operations()
            .into_iter()
            .filter(|(m, template)| {
                let t: Vec<&str> = template.split('/').collect();
                m == method
                    && t.len() == segments.len()
                    && t.iter()
                        .zip(&segments)
                        .all(|(t, s)| t == s || (t.starts_with('{') && t.ends_with('}')))
            })
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "{method} {url} is documented as {matching:?}"
        );
        matching[0].clone()
    }

    async fn get(&mut self, url: &str, token: Option<&str>, status: u16) -> Value {
        self.call("GET", url, token, None, status).await
    }

    async fn post(&mut self, url: &str, token: Option<&str>, body: Value, status: u16) -> Value {
        self.call("POST", url, token, Some(body), status).await
    }

    /// Calls `method url`, expects `status`, and checks the answer against the document.
    async fn call(
        &mut self,
        method: &str,
        url: &str,
        token: Option<&str>,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut r = self
            .client
            .request(method.clone(), format!("{}{url}", self.base));
        if let Some(token) = token {
            r = r.bearer_auth(token);
        }
        if let Some(body) = body {
            r = r.json(&body);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{method} {url}");
        let template = self.template(method.as_str(), url);
        let (_, answer) = self.check(method.as_str(), &template, r).await;
        // Routed: not the router's fallback (and no 405: no expected status is one).
        let fallback = json!({ "error": { "code": "not_found", "message": "no such endpoint" } });
        assert_ne!(answer, fallback, "{method} {url}");
        self.called.insert((method.to_string(), template));
        answer
    }

    /// Checks a response to `method template`: a documented status, the documented content
    /// type, and a JSON body (or a change event's data) valid against its schema.
    async fn check(
        &self,
        method: &str,
        template: &str,
        r: reqwest::Response,
    ) -> (StatusCode, Value) {
        let status = r.status();
        let documented = &self.operation(method, template)["responses"][status.as_str()];
        assert!(
            documented.is_object(),
            "{method} {template} answered {status}, which the document does not list"
        );
        let content = documented["content"]
            .as_object()
            .expect("a documented body");
        assert_eq!(content.len(), 1, "{method} {template} {status}");
        let (media_type, media) = content.iter().next().unwrap();
        let got = r.headers()["content-type"].to_str().unwrap().to_owned();
        let essence = |t: &str| t.split(';').next().unwrap().trim().to_owned();
        assert_eq!(
            essence(&got),
            essence(media_type),
            "{method} {template} {status}"
        );
        let schema = &media["schema"];
        let (value, schema) = match essence(media_type).as_str() {
            "application/json" => (r.json::<Value>().await.unwrap(), schema.clone()),
            "text/event-stream" => {
                // Each event's data is the documented event's `data`.
                let (_, data) = Sse::from(r).next_event().await;
                let event = self.resolve(schema);
                (data, event["properties"]["data"].clone())
            }
            _ => {
                assert_eq!(schema["type"], "string");
                (Value::String(r.text().await.unwrap()), schema.clone())
            }
        };
        let mut root = schema;
        root["components"] = self.strict.clone();
        let validator = jsonschema::draft202012::new(&root).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {template} {status}: {errors:#?}\nin {value:#}"
        );
        // The error shape is the same everywhere.
        if !status.is_success() {
            assert!(value["error"]["code"].is_string() && value["error"]["message"].is_string());
        }
        (status, value)
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => &self.doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
            None => schema,
        }
    }
}

/// An `allOf` of objects (serde's `flatten`) as one object schema, so that it can refuse
/// unknown properties like any other.
fn flatten_all_of(schema: &mut Value, originals: &Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(parts)) = map.remove("allOf") {
                let (mut properties, mut required) = (serde_json::Map::new(), Vec::new());
                for part in parts {
                    let part = match part["$ref"].as_str() {
                        Some(r) => originals[r.rsplit('/').next().unwrap()].clone(),
                        None => part,
                    };
                    properties.extend(part["properties"].as_object().unwrap().clone());
                    required.extend(part["required"].as_array().cloned().unwrap_or_default());
                }
                map.insert("type".into(), json!("object"));
                map.insert("properties".into(), Value::Object(properties));
                map.insert("required".into(), Value::Array(required));
            }
            map.values_mut().for_each(|v| flatten_all_of(v, originals));
        }
        Value::Array(list) => list.iter_mut().for_each(|v| flatten_all_of(v, originals)),
        _ => {}
    }
}

fn forbid_unknown_properties(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), json!(false));
            }
            map.values_mut().for_each(forbid_unknown_properties);
        }
        Value::Array(list) => list.iter_mut().for_each(forbid_unknown_properties),
        _ => {}
    }
}

/// Staff's decisions on flagged tickets: accept clears the flag, deny voids the ticket,
/// revert undoes its admissions so it admits again; each audited, and refused where there is
/// nothing to decide or no such ticket.
async fn staff_accept_deny_or_revert_a_flag(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("FLAG", 4).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    // Two gates' journals each hold an admission of tickets 0 to 2: the second flags them.
    for (gate, verdict) in [("North", "admit"), ("South", "duplicate")] {
        let items: Vec<Value> = (0..3)
            .map(|i| redemption(&format!("{gate}-{i}"), &json!(tid(i)), gate))
            .collect();
        let (status, a) = s
            .post(
                "/v1/events/FLAG/redemptions",
                json!({ "redemptions": items }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{a}");
        for answer in a["answers"].as_array().unwrap() {
            assert_eq!(answer["verdict"], verdict, "{a}");
        }
    }
    let (_, flags) = s.get("/v1/events/FLAG/flags").await;
    let flagged: Vec<&str> = flags["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["tid"].as_str().unwrap())
        .collect();
    assert_eq!(flagged.len(), 3, "{flags}");
    let at = &s;
    let resolve = move |t: String, action: &'static str| async move {
        at.post(
            &format!("/v1/events/FLAG/flags/{t}/resolve"),
            json!({ "action": action, "staff": "Kim", "note": "looked" }),
        )
        .await
    };
    let path = |t: String| format!("/v1/events/FLAG/tickets/{t}");

    let (status, t) = resolve(tid(0), "accept").await;
    assert_eq!(
        (status, t["status"].as_str()),
        (StatusCode::OK, Some("active"))
    );
    let (_, d) = s.get(&path(tid(0))).await;
    assert_eq!(
        (d["flagged"].as_bool(), d["resolution"]["action"].as_str()),
        (Some(false), Some("accept"))
    );
    assert_eq!(d["admissions"].as_array().unwrap().len(), 2, "{d}");

    let (status, t) = resolve(tid(1), "deny").await;
    assert_eq!(
        (status, t["status"].as_str()),
        (StatusCode::OK, Some("void"))
    );

    let (status, t) = resolve(tid(2), "revert").await;
    assert_eq!(
        (status, t["status"].as_str()),
        (StatusCode::OK, Some("active"))
    );
    let (_, d) = s.get(&path(tid(2))).await;
    assert_eq!(d["admissions"], json!([]), "{d}");
    let (_, again) = s
        .post(
            "/v1/events/FLAG/redemptions",
            redemption("again-2", &json!(tid(2)), "East"),
        )
        .await;
    assert_eq!(again["verdict"], "admit", "a reverted ticket admits again");

    let (_, m) = s.get("/v1/events/FLAG/manifest").await;
    let entry = |t: String| {
        m["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tid"] == t.as_str())
            .unwrap()
            .clone()
    };
    assert_eq!(entry(tid(1))["reason"], "denied: looked");
    assert_eq!(entry(tid(2))["reverted"], json!(["North-2", "South-2"]));
    assert_eq!(
        entry(tid(2))["resolution"]["covers"],
        json!(["North-2", "South-2"])
    );
    let (_, flags) = s.get("/v1/events/FLAG/flags").await;
    assert_eq!(flags["flags"], json!([]));

    // Nothing to decide: a flag already resolved, a ticket never flagged.
    assert_eq!(resolve(tid(0), "accept").await.0, StatusCode::CONFLICT);
    assert_eq!(resolve(tid(3), "deny").await.0, StatusCode::CONFLICT);
    // No such ticket, even where a gate's journal named it.
    let stranger = gatemesh_ticket::TicketId::generate().to_string();
    let (_, a) = s
        .post(
            "/v1/events/FLAG/redemptions",
            json!({ "redemptions": [redemption("ghost", &json!(stranger), "North")] }),
        )
        .await;
    assert_eq!(a["answers"][0]["reason"], "unknown_ticket");
    assert_eq!(
        resolve(stranger.clone(), "revert").await.0,
        StatusCode::NOT_FOUND
    );
    let (status, _) = s
        .post(
            &format!("/v1/events/FLAG/tickets/{stranger}/revert"),
            json!({ "actor": "Kim", "reason": "x" }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    s.assert_audit(
        "FLAG",
        &[
            ("resolve:accept", "Kim"),
            ("resolve:deny", "Kim"),
            ("resolve:revert", "Kim"),
        ],
    )
    .await;
    s.stop().await;
}

async fn exits_and_reentries_a_gate_allowed_are_not_copies(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("BACK", 1).await;
    let tid = tickets[0]["tid"].as_str().unwrap();
    let item = |id: &str, direction: &str, gate: &str, seen: &[&str]| {
        let mut r = redemption(id, &json!(tid), gate);
        r["record"] = json!({
            "id": id, "tid": tid, "direction": direction, "node": gate, "gate": gate,
            "scanner": "s1", "at_ms": 1_800_000_000_000_i64,
            "hlc": { "wall_ms": 1_800_000_000_000_i64, "counter": 0, "node": gate }, "seen": seen
        });
        r
    };
    let journal = json!({ "redemptions": [
        item("in-1", "entry", "North", &[]),
        item("out-1", "exit", "North", &["in-1"]),
        item("in-2", "entry", "North", &["in-1", "out-1"]),
    ]});
    let (status, a) = s.post("/v1/events/BACK/redemptions", journal).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    let got: Vec<(&str, &str)> = a["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["verdict"].as_str().unwrap(),
                a["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("admit", "valid"), ("admit", "exit"), ("admit", "reentry")]
    );
    let (_, stats) = s.get("/v1/events/BACK/stats").await;
    assert_eq!(
        stats["flagged"], 0,
        "a re-entry the gate allowed is no copy: {stats}"
    );
    // A gate that never heard of the first admission let someone in: that is a copy.
    let (_, b) = s
        .post(
            "/v1/events/BACK/redemptions",
            json!({ "redemptions": [item("in-3", "entry", "South", &[])] }),
        )
        .await;
    assert_eq!(b["answers"][0]["verdict"], "duplicate");
    let (_, stats) = s.get("/v1/events/BACK/stats").await;
    assert_eq!(stats["flagged"], 1);
    s.stop().await;
}

async fn journal_entries_count_once_per_check_in_scope(backend: Backend) {
    // A three-day pass: gates that never heard of each other's entries upload them. Each
    // event day of the main list, and the VIP area, counts its own first entry; only a
    // second entry of one scope made without knowing of the first is a copy.
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("DAYS", 1).await;
    let tid = tickets[0]["tid"].as_str().unwrap();
    let item = |id: &str, gate: &str, scope: Option<&str>| {
        let mut r = redemption(id, &json!(tid), gate);
        r["record"] = json!({
            "id": id, "tid": tid, "direction": "entry", "node": gate, "gate": gate,
            "scanner": "s1", "at_ms": 1_800_000_000_000_i64,
            "hlc": { "wall_ms": 1_800_000_000_000_i64, "counter": 0, "node": gate }, "seen": []
        });
        if let Some(scope) = scope {
            r["record"]["scope"] = json!(scope);
        }
        r
    };
    let upload = |item: Value| {
        let s = &s;
        async move {
            let (status, a) = s
                .post(
                    "/v1/events/DAYS/redemptions",
                    json!({ "redemptions": [item] }),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{a}");
            let (_, stats) = s.get("/v1/events/DAYS/stats").await;
            (a["answers"][0].clone(), stats["flagged"].clone())
        }
    };
    let (a, flagged) = upload(item("fri", "North", Some("main/2026-07-03"))).await;
    assert_eq!(
        (a["verdict"].as_str(), flagged),
        (Some("admit"), json!(0)),
        "{a}"
    );
    let (a, flagged) = upload(item("sat", "South", Some("main/2026-07-04"))).await;
    assert_eq!(
        (a["verdict"].as_str(), flagged),
        (Some("admit"), json!(0)),
        "{a}"
    );
    let (a, flagged) = upload(item("vip", "VipDoor", Some("vip"))).await;
    assert_eq!(
        (a["verdict"].as_str(), flagged),
        (Some("admit"), json!(0)),
        "{a}"
    );
    // Saturday again, at a gate that did not know of South's: a copy, naming South's.
    let (a, flagged) = upload(item("sat-2", "East", Some("main/2026-07-04"))).await;
    assert_eq!(a["verdict"], "duplicate", "{a}");
    assert_eq!(a["first"]["redemption_id"], "sat");
    assert_eq!(flagged, 1);
    // A record whose scope is no scope (a day that does not exist) is refused whole, and
    // nothing of the upload is stored.
    let mut bad = item("bad", "East", Some("main/2026-07-04"));
    bad["record"]["scope"] = json!("main/2026-02-30");
    let (status, _) = s
        .post(
            "/v1/events/DAYS/redemptions",
            json!({ "redemptions": [bad] }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, stats) = s.get("/v1/events/DAYS/stats").await;
    assert_eq!(stats["flagged"], 1);
    // An online scanner (no list) counts every admission: the ticket was used.
    let (_, online) = s
        .post(
            "/v1/events/DAYS/redemptions",
            redemption("online", &json!(tid), "Box office"),
        )
        .await;
    assert_eq!(online["verdict"], "duplicate", "{online}");
    assert_eq!(online["first"]["redemption_id"], "fri");
    s.stop().await;
}

/// Arbitrary JSON (and arbitrary bytes) posted to every endpoint that takes a body: never a
/// 5xx, always a JSON error for a 4xx, and nothing stored.
#[test]
fn arbitrary_bodies_get_4xx_and_change_nothing() {
    let runtime = fuzz::runtime();
    let s = runtime.block_on(Running::start(Backend::Sqlite));
    let tickets = runtime.block_on(s.event_with_tickets("FUZZ", 3));
    let tid = tickets[0]["tid"].as_str().unwrap().to_owned();
    // What is stored, as the API shows it.
    let snapshot = || {
        runtime.block_on(async {
            (
                s.get("/v1/events").await.1,
                s.get("/v1/events/FUZZ/manifest").await.1["tickets"].clone(),
                s.get("/v1/events/FUZZ/stats").await.1,
                s.get("/v1/events/FUZZ/audit").await.1,
                s.get("/v1/events/FUZZ/gates").await.1,
            )
        })
    };
    let paths = vec![
        "/v1/events".to_owned(),
        "/v1/events/FUZZ/tickets".to_owned(),
        format!("/v1/events/FUZZ/tickets/{tid}/void"),
        format!("/v1/events/FUZZ/tickets/{tid}/transfer"),
        format!("/v1/events/FUZZ/tickets/{tid}/revert"),
        "/v1/events/FUZZ/redemptions".to_owned(),
        format!("/v1/events/FUZZ/flags/{tid}/resolve"),
        "/v1/events/FUZZ/devices".to_owned(),
        "/v1/events/FUZZ/heartbeat".to_owned(),
        "/v1/pair".to_owned(),
    ];
    let body = fuzz::bodies(
        vec![
            "id",
            "name",
            "count",
            "format",
            "seats",
            "seat_prefix",
            "reason",
            "actor",
            "holder",
            "redemption_id",
            "tid",
            "gate",
            "scanner",
            "at",
            "record",
            "redemptions",
            "action",
            "staff",
            "note",
            "code",
            "role",
            "capacity",
            "starts_at",
            "x",
        ],
        vec![json!("2026-11-29T20:00:00Z"), json!(tid.clone())],
    );
    let api = fuzz::Api {
        client: &s.client,
        base: &s.base,
        token: Some(TOKEN),
        paths: fuzz::json_paths(paths),
    };
    fuzz::post_bodies(&runtime, api, body, snapshot);
    runtime.block_on(s.stop());
}

/// A device of `eid` enrolled under the server's own mesh CA (as pairing makes one), as its
/// signer and certificate.
fn enrolled(data: &Path, eid: &str, name: &str) -> (gatemesh_ledger::Signer, String) {
    enrolled_as(data, eid, name, gatemesh_wire::Role::Gate)
}

fn enrolled_as(
    data: &Path,
    eid: &str,
    name: &str,
    role: gatemesh_wire::Role,
) -> (gatemesh_ledger::Signer, String) {
    use base64::Engine;
    let out = tempfile::tempdir().unwrap();
    let ca = data.join("mesh-ca").join(eid);
    gatemesh_mesh::pki::enroll_into(&ca, out.path(), role, name, 1).unwrap();
    let identity = gatemesh_mesh::pki::Identity::load(out.path()).unwrap();
    let event = EventId::new(eid).unwrap();
    let (signer, _) = gatemesh_ledger::Signer::from_identity(&identity, &event).unwrap();
    let cert =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(identity.creds.chain[0].as_ref());
    (signer, cert)
}

/// Registers device `name` of event `eid` and pairs it with a new key: the key's request and
/// the server's answer (credential, identity).
async fn pair_device(
    s: &Running,
    eid: &str,
    name: &str,
) -> (gatemesh_mesh::pki::DeviceRequest, Value) {
    let (status, code) = s
        .post(
            &format!("/v1/events/{eid}/devices"),
            json!({ "name": name }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{code}");
    let request = gatemesh_mesh::pki::DeviceRequest::new().unwrap();
    let r = s
        .client
        .post(format!("{}/v1/pair", s.base))
        .json(&json!({ "code": code["code"], "csr": request.csr_pem }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    (request, r.json().await.unwrap())
}

/// The mesh identity a pairing answer makes with the key of `request`, as the gate's pairing
/// writes it to disk and loads it.
fn identity_of(
    request: &gatemesh_mesh::pki::DeviceRequest,
    paired: &Value,
) -> gatemesh_mesh::pki::Identity {
    let dir = tempfile::tempdir().unwrap();
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    std::fs::write(
        dir.path().join("device.pem"),
        text(&paired["identity"]["device_pem"]),
    )
    .unwrap();
    std::fs::write(dir.path().join("device.key"), request.key_pem()).unwrap();
    std::fs::write(
        dir.path().join("ca.pem"),
        text(&paired["identity"]["ca_pem"]),
    )
    .unwrap();
    gatemesh_mesh::pki::Identity::load(dir.path()).unwrap()
}

/// A journal item of `tid` whose record `signer` signed, then `edit` changed.
fn signed_item(
    signer: &gatemesh_ledger::Signer,
    cert: &str,
    eid: &str,
    tid: &str,
    gate: &str,
    edit: impl FnOnce(&mut gatemesh_ledger::Redemption),
) -> Value {
    let at_ms = gatemesh_wire::time::parse_ms("2026-11-29T20:00:00Z").unwrap();
    signed_item_at(signer, cert, eid, tid, gate, at_ms, edit)
}

/// [`signed_item`], admitted at `at_ms`.
fn signed_item_at(
    signer: &gatemesh_ledger::Signer,
    cert: &str,
    eid: &str,
    tid: &str,
    gate: &str,
    at_ms: i64,
    edit: impl FnOnce(&mut gatemesh_ledger::Redemption),
) -> Value {
    let node = signer.node().clone();
    let mut r = gatemesh_ledger::Redemption {
        manual: None,
        id: gatemesh_wire::RedemptionId::random(),
        tid: gatemesh_ticket::TicketId::new(tid).unwrap(),
        direction: gatemesh_ledger::Direction::Entry,
        node: node.clone(),
        gate: gate.into(),
        scanner: "s1".into(),
        at_ms,
        hlc: gatemesh_ledger::Hlc {
            wall_ms: at_ms,
            counter: 0,
            node,
        },
        seen: Vec::new(),
        unlisted: false,
        scope: None,
        sig: None,
    };
    signer
        .sign_redemption(&EventId::new(eid).unwrap(), &mut r)
        .unwrap();
    edit(&mut r);
    let mut record = serde_json::to_value(&r).unwrap();
    record["cert"] = cert.into();
    json!({ "redemption_id": r.id, "tid": tid, "gate": gate, "scanner": "s1",
            "at": gatemesh_wire::time::format_ms(at_ms), "record": record })
}

/// A paired gate's credential uploads journals: what its writers signed is taken; a record
/// in another device's name, an unsigned one or none at all refuses the whole upload, and
/// nothing of it is stored.
async fn a_devices_journal_carries_only_records_their_writers_signed(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("SIGN", 4).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let token = s.paired("SIGN", "North-1", "gate").await;
    let data = s._dir.as_ref().unwrap().path().to_owned();
    let (north, north_cert) = enrolled(&data, "SIGN", "North-1");
    let (south, south_cert) = enrolled(&data, "SIGN", "South-2");
    let path = "/v1/events/SIGN/redemptions";

    // North's own admission and South's (relayed by North's uplink): both taken.
    let honest = json!({ "redemptions": [
        signed_item(&north, &north_cert, "SIGN", &tid(0), "North 1", |_| {}),
        signed_item(&south, &south_cert, "SIGN", &tid(1), "South 2", |_| {}),
    ]});
    let (status, answers) = s.post_as(&token, path, honest).await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    assert_eq!(answers["answers"][1]["verdict"], "admit");

    let south_node = south.node().clone();
    let attacks = [
        // In South's name, signed by North's key, beside South's certificate.
        signed_item(&north, &south_cert, "SIGN", &tid(2), "South 2", |r| {
            r.node = south_node.clone();
            r.hlc.node = south_node.clone();
        }),
        // South's signed record with the ticket changed.
        signed_item(&south, &south_cert, "SIGN", &tid(2), "South 2", |r| {
            r.id = gatemesh_wire::RedemptionId::random();
        }),
        // Unsigned.
        signed_item(&north, &north_cert, "SIGN", &tid(2), "North 1", |r| {
            r.sig = None
        }),
        // No record at all.
        redemption("bare", &json!(tid(2)), "North 1"),
    ];
    for attack in attacks {
        let upload = json!({ "redemptions": [
            signed_item(&north, &north_cert, "SIGN", &tid(3), "North 1", |_| {}),
            attack,
        ]});
        let (status, body) = s.post_as(&token, path, upload).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    // Nothing of the refused uploads was stored: tickets 2 and 3 admit online.
    for i in [2, 3] {
        let (status, a) = s
            .post(
                path,
                redemption(&format!("online-{i}"), &json!(tid(i)), "Box"),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(a["verdict"], "admit", "ticket {i}: {a}");
    }
}

/// An admission taken online is stored as asked and relayed with a record the server's
/// identity signs: gates check it like any device's record, and every relay of it (a
/// journal's answer, the manifest, the flags) is the very same record. An online duplicate's
/// answer carries no record (a scanner has no ledger to write it into).
async fn online_admissions_reach_gates_signed_by_the_server(backend: Backend) {
    use base64::Engine;
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("SRV", 1).await;
    let tid = tickets[0]["tid"].as_str().unwrap().to_owned();
    let token = s.paired("SRV", "North-1", "gate").await;
    let data = s._dir.as_ref().unwrap().path().to_owned();
    let (north, north_cert) = enrolled(&data, "SRV", "North-1");
    let path = "/v1/events/SRV/redemptions";

    let (_, a) = s.post(path, redemption("box-1", &json!(tid), "Box")).await;
    assert_eq!(a["verdict"], "admit", "{a}");
    let (_, again) = s.post(path, redemption("box-2", &json!(tid), "Box")).await;
    assert_eq!(again["verdict"], "duplicate", "{again}");
    assert_eq!(again["first"]["redemption_id"], "box-1");
    assert!(
        again["first"].get("record").is_none_or(Value::is_null),
        "{again}"
    );

    // North admitted the same holder offline: its journal learns the first admission.
    let item = signed_item(&north, &north_cert, "SRV", &tid, "North 1", |_| {});
    let (status, b) = s
        .post_as(&token, path, json!({ "redemptions": [item] }))
        .await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["answers"][0]["verdict"], "duplicate");
    let record = b["answers"][0]["first"]["record"].clone();
    let event = EventId::new("SRV").unwrap();
    let ca = std::fs::read_to_string(data.join("mesh-ca/SRV/ca.pem")).unwrap();
    let trust = gatemesh_ledger::Trust::from_pem(&ca, &event).unwrap();
    let cert = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(record["cert"].as_str().unwrap())
        .unwrap();
    let mut bare = record.clone();
    bare.as_object_mut().unwrap().remove("cert");
    let r: gatemesh_ledger::Redemption = serde_json::from_value(bare).unwrap();
    let writer = gatemesh_ledger::check_redemption(&trust, &cert, &r).unwrap();
    assert_eq!(writer.role(), gatemesh_wire::Role::Server);
    // The server's identity lives for a season, not ten years.
    let season = gatemesh_wire::time::now_ms() + 401 * 86_400_000;
    assert!(writer.not_after_ms < season, "{}", writer.not_after_ms);
    assert_eq!(r.id.as_str(), "box-1");
    assert_ne!(&r.node, north.node());
    // A record altered in one field no longer checks.
    let mut altered = r.clone();
    altered.gate = "North 1".into();
    assert!(gatemesh_ledger::check_redemption(&trust, &cert, &altered).is_err());

    // The ticket is flagged: the manifest and the flags carry the same record.
    let (_, manifest) = s.get("/v1/events/SRV/manifest").await;
    let entry = manifest["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == json!(tid))
        .unwrap()
        .clone();
    assert_eq!(entry["flagged"], true, "{entry}");
    let relayed = entry["admissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["redemption_id"] == "box-1")
        .unwrap()["record"]
        .clone();
    assert_eq!(relayed, record);
    let (_, flags) = s.get("/v1/events/SRV/flags").await;
    let relayed = flags["flags"][0]["admissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["redemption_id"] == "box-1")
        .unwrap()["record"]
        .clone();
    assert_eq!(relayed, record);
}

/// The journal path of issue 14's adversary harness (`gatemesh-cli/tests/adversary`): a
/// paired gate's credential uploads what the attacker crafts — a record in another device's
/// name, one dated an hour ahead, a validly signed record replayed under another redemption
/// and ticket, 1,001 (and 10,000) entries of one ticket by one writer, an observer's signed
/// admission.
/// Each upload is refused whole (400, with its reason) and stores nothing.
async fn a_devices_journal_refuses_every_forgery_of_the_adversary_harness(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("EDGE", 4).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let token = s.paired("EDGE", "North-1", "gate").await;
    let data = s._dir.as_ref().unwrap().path().to_owned();
    let (north, north_cert) = enrolled(&data, "EDGE", "North-1");
    let (south, south_cert) = enrolled(&data, "EDGE", "South-2");
    let (desk, desk_cert) = enrolled_as(&data, "EDGE", "desk", gatemesh_wire::Role::Observer);
    let path = "/v1/events/EDGE/redemptions";
    let at = |ms: i64| gatemesh_wire::time::format_ms(ms);
    let south_node = south.node().clone();

    let ahead = gatemesh_wire::time::now_ms() + 3_600_000;
    let replayed = {
        // South's real record of ticket 1, sent as a redemption of ticket 2.
        let mut item = signed_item(&south, &south_cert, "EDGE", &tid(1), "South 2", |_| {});
        item["tid"] = tid(2).into();
        item["redemption_id"] = "replayed".into();
        item
    };
    let flood = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|_| signed_item(&north, &north_cert, "EDGE", &tid(2), "North 1", |_| {}))
            .collect()
    };
    let attacks: Vec<(&str, Vec<Value>, &str)> = vec![
        (
            "a record in another device's name",
            vec![signed_item(
                &north,
                &south_cert,
                "EDGE",
                &tid(2),
                "South 2",
                |r| {
                    r.node = south_node.clone();
                    r.hlc.node = south_node.clone();
                },
            )],
            "signature",
        ),
        (
            "a record an hour ahead",
            vec![{
                let mut item = signed_item(&north, &north_cert, "EDGE", &tid(2), "North 1", |_| {});
                // Signed as dated: the writer's own clock, an hour ahead.
                let mut r: gatemesh_ledger::Redemption =
                    serde_json::from_value(item["record"].clone()).unwrap();
                r.at_ms = ahead;
                r.hlc.wall_ms = ahead;
                north
                    .sign_redemption(&EventId::new("EDGE").unwrap(), &mut r)
                    .unwrap();
                let mut record = serde_json::to_value(&r).unwrap();
                record["cert"] = north_cert.clone().into();
                item["record"] = record;
                item["at"] = at(ahead).into();
                item
            }],
            "ahead of the server's clock",
        ),
        (
            "a signed record replayed under another key",
            vec![replayed],
            "redemption_id and tid",
        ),
        (
            "1,001 entries of one ticket",
            flood(1_001),
            "more than 1000 redemptions of ticket",
        ),
        (
            "an observer's admission",
            vec![signed_item(
                &desk,
                &desk_cert,
                "EDGE",
                &tid(2),
                "desk",
                |_| {},
            )],
            "may not write redemptions",
        ),
    ];
    for (name, attack, reason) in attacks {
        let mut items = vec![signed_item(
            &north,
            &north_cert,
            "EDGE",
            &tid(3),
            "North 1",
            |_| {},
        )];
        items.extend(attack);
        let (status, body) = s
            .post_as(&token, path, json!({ "redemptions": items }))
            .await;
        let body = body.to_string();
        let short = &body[..body.len().min(400)];
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {short}");
        assert!(body.contains(reason), "{name}: {short}");
    }
    // 10,000 of them (with their certificates) do not even fit a request body: the server
    // answers 413 and closes the connection, which a client still writing the body may see
    // first (a broken pipe) — either way nothing is stored (checked below).
    let sent = s
        .client
        .post(format!("{}{path}", s.base))
        .bearer_auth(&token)
        .json(&json!({ "redemptions": flood(10_000) }))
        .send()
        .await;
    match sent {
        Ok(r) => assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE),
        Err(e) => assert!(e.is_request(), "{e}"),
    }
    // Nothing of the refused uploads was stored: tickets 2 and 3 admit online.
    for i in [2, 3] {
        let (status, a) = s
            .post(
                path,
                redemption(&format!("online-{i}"), &json!(tid(i)), "Box"),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(a["verdict"], "admit", "ticket {i}: {a}");
    }
}

/// What a client did wrong is said in its own terms: a wrong token is wrong (not missing),
/// and a body of the wrong shape names no type of the server's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_what_the_client_got_wrong() {
    let s = Running::start(Backend::Sqlite).await;
    s.event_with_tickets("SAY", 1).await;
    let send = |token: Option<&str>, body: &str| {
        let mut r = s
            .client
            .post(format!("{}/v1/events/SAY/redemptions", s.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move {
            let r = r.send().await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = send(Some("not-the-admin-token-at-all"), "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("unknown credential"), "{body}");
    let r = s
        .client
        .post(format!("{}/v1/events", s.base))
        .bearer_auth("not-the-admin-token-at-all")
        .json(&json!({ "id": "X", "name": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("wrong admin token"), "{body}");
    let r = s
        .client
        .post(format!("{}/v1/events", s.base))
        .json(&json!({ "id": "X", "name": "x" }))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("no admin token"), "{body}");

    for bad in [r#"{"tid": 5}"#, "[]", r#"{"items": 3}"#, "7"] {
        let (status, body) = send(Some(TOKEN), bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(
            !msg.contains("enum") && !msg.contains("RedeemBody"),
            "{bad}: {msg}"
        );
    }
    s.stop().await;
}
