//! Releasing an event's check-in lists: the organizer's alone; a bad file is refused and
//! stores nothing; each release is the next version, signed by the server's identity as the
//! ledger record gates write (a gate's ledger takes it), and reaches gates in the manifest,
//! its deltas and the change stream.

use gatemesh_testkit::pg::Backend;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Running, Sse};

fn lists_file(eid: &str, vip: &[&str]) -> Value {
    json!({
        "event": eid, "time_zone": "Europe/Berlin", "default_product": "GA",
        "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
        "lists": [
            {"id": "main", "name": "Main entrance", "all_products": true},
            {"id": "vip", "name": "VIP area", "products": vip},
        ],
    })
}

async fn put_as(s: &Running, token: &str, path: &str, body: &Value) -> (StatusCode, Value) {
    let r = s
        .client
        .put(format!("{}{path}", s.base))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The release a manifest (or delta) carries, taken by a gate's ledger as its uplink would:
/// the version it checks in with.
fn taken_by_a_gate(data: &std::path::Path, eid: &str, record: &Value) -> u64 {
    use base64::Engine;
    let event = gatemesh_ticket::EventId::new(eid).unwrap();
    let ca = std::fs::read_to_string(data.join(format!("mesh-ca/{eid}/ca.pem"))).unwrap();
    let trust = gatemesh_ledger::Trust::from_pem(&ca, &event).unwrap();
    let mut ledger = gatemesh_ledger::Ledger::open(
        &event,
        gatemesh_ledger::NodeId::random(),
        &gatemesh_ledger::genesis(&event),
        None,
        [],
    )
    .unwrap();
    ledger.check_with(trust).unwrap();
    let cert = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(record["cert"].as_str().unwrap())
        .unwrap();
    let mut bare = record.clone();
    bare.as_object_mut().unwrap().remove("cert");
    let r: gatemesh_ledger::ListsRecord = serde_json::from_value(bare).unwrap();
    ledger.learn_device(&cert).unwrap();
    ledger
        .record_lists(&r, gatemesh_wire::time::now_ms())
        .unwrap();
    ledger.lists().unwrap().record.version
}

pub(crate) async fn released_lists_reach_gates_in_the_manifest_and_the_change_stream(
    backend: Backend,
) {
    let s = Running::start(backend).await;
    s.event_with_tickets("FEST", 1).await;
    let data = s._dir.as_ref().unwrap().path().to_owned();
    let path = "/v1/events/FEST/lists";
    let (status, _) = s.get(path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Refused, with what is wrong, and nothing stored: a file of another event, one naming
    // a product it does not declare, something that is no lists file; a device's credential.
    let token = s.paired("FEST", "North-1", "gate").await;
    for (body, says) in [
        (lists_file("OTHER", &["VIP"]), "for event OTHER"),
        (lists_file("FEST", &["BACKSTAGE"]), "BACKSTAGE"),
        (json!({"lists": "everyone"}), "not a lists file"),
    ] {
        let (status, answer) = put_as(&s, super::TOKEN, path, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer.to_string().contains(says), "{answer}");
    }
    let (status, _) = put_as(&s, &token, path, &lists_file("FEST", &["VIP"])).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, manifest) = s.get("/v1/events/FEST/manifest").await;
    assert!(manifest.get("lists").is_none(), "{manifest}");
    let (status, _) = s.get(path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Released: version 1, in the manifest as the server signed it.
    let (status, v1) = put_as(&s, super::TOKEN, path, &lists_file("FEST", &["VIP"])).await;
    assert_eq!(status, StatusCode::OK, "{v1}");
    assert_eq!(
        (v1["version"].as_u64(), v1["by"].as_str()),
        (Some(1), Some("organizer"))
    );
    let file = |v: Value| serde_json::from_value::<gatemesh_wire::ListsFile>(v).unwrap();
    assert_eq!(
        file(v1["lists"].clone()),
        file(lists_file("FEST", &["VIP"]))
    );
    let (_, manifest) = s.get("/v1/events/FEST/manifest").await;
    let cursor = manifest["cursor"].as_i64().unwrap();
    assert_eq!(manifest["lists"]["version"], 1, "{manifest}");
    assert_eq!(taken_by_a_gate(&data, "FEST", &manifest["lists"]), 1);
    // A device reads it too.
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // A delta after it has no lists; after the next release, version 2.
    let (_, delta) = s
        .get(&format!("/v1/events/FEST/manifest?since={cursor}"))
        .await;
    assert!(delta.get("lists").is_none(), "{delta}");
    let mut stream = Sse::open_with(&s, "/v1/events/FEST/changes", Some(&cursor.to_string())).await;
    let (status, v2) = put_as(&s, super::TOKEN, path, &lists_file("FEST", &["VIP", "GA"])).await;
    assert_eq!(status, StatusCode::OK, "{v2}");
    assert_eq!(v2["version"], 2);
    let (_, delta) = s
        .get(&format!("/v1/events/FEST/manifest?since={cursor}"))
        .await;
    assert_eq!(delta["lists"]["version"], 2, "{delta}");
    assert_eq!(taken_by_a_gate(&data, "FEST", &delta["lists"]), 2);
    // The change stream carries it as it commits.
    let (_, event) = loop {
        let (id, event) = stream.next_event().await;
        if event.get("lists").is_some() {
            break (id, event);
        }
    };
    assert_eq!(event["lists"]["version"], 2, "{event}");
    assert_eq!(
        event["lists"]["lists"]["lists"][1]["products"],
        json!(["VIP", "GA"])
    );
    drop(stream);
    let (_, latest) = s.get(path).await;
    assert_eq!(latest["version"], 2);
    s.assert_audit(
        "FEST",
        &[
            ("lists:release", "organizer"),
            ("lists:release", "organizer"),
        ],
    )
    .await;
    s.stop().await;
}
