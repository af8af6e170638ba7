//! Finding a guest whose code cannot be scanned, through the gate's HTTP API, with the real
//! server in-process: by part of a name and by order reference when the organizer lets
//! gates find guests; checked in as a manual admission naming the staff member, audited, so
//! the code scanned later is yellow; and with finding not allowed, no attendee's name
//! reaches the gate.

use gatemesh_node::{Config, UplinkConfig};
use gatemesh_ticket::EventId;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{
    Gate,
    contract::{Central, until},
    verdict,
};

/// Issues `count` tickets of `eid` to `holder` in `order`; their ids and codes.
async fn issue(central: &Central, eid: &str, holder: &str, order: &str) -> Vec<(String, String)> {
    let issued = central
        .post(
            &format!("/v1/events/{eid}/tickets"),
            json!({ "count": 2, "format": "jwt", "seat_prefix": "R-", "holder": holder,
                    "order": order, "product": "VIP" }),
        )
        .await;
    issued["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let text = |k: &str| t[k].as_str().unwrap().to_owned();
            (text("tid"), text("code"))
        })
        .collect()
}

/// A gate of `eid` with its API and its uplink to `central`.
async fn gate_with_uplink(central: &Central, eid: &str, dir: &std::path::Path) -> Gate {
    let code = central
        .post(
            &format!("/v1/events/{eid}/devices"),
            json!({ "name": "North-1" }),
        )
        .await;
    let link = gatemesh_wire::PairingLink::parse(code["link"].as_str().unwrap()).unwrap();
    let pairing = gatemesh_node::pairing::pair(&link).await.unwrap();
    let mut config = Config::new(dir.to_owned(), EventId::new(eid).unwrap(), "North 1".into());
    config.keyring = central.keyring();
    config.identity = Some(super::identity(eid, dir, "North 1"));
    let gate = Gate::serving(dir, config).await;
    gate.node
        .start_uplink(UplinkConfig {
            server: central.base.clone(),
            token: pairing.gate_file().token,
            fingerprint: Some(central.pin),
            peer_grace: gatemesh_node::PEER_GRACE,
        })
        .unwrap();
    gate
}

async fn search(gate: &Gate, q: &str) -> Value {
    let (status, found) = gate.get(&format!("/v1/guests?q={q}")).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    found
}

fn tids(found: &Value) -> Vec<&str> {
    found["guests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["tid"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_found_by_name_or_order_is_checked_in_by_staff_and_their_code_is_then_yellow() {
    let central = Central::start().await;
    let eid = "FIND-2026";
    central
        .event_with(eid, json!({ "guest_search": true }), 1)
        .await;
    let ada = issue(&central, eid, "Ada Lovelace", "ORD-1001").await;
    let alan = issue(&central, eid, "Alan Turing", "ORD-2002").await;
    let dir = tempfile::tempdir().unwrap();
    let gate = gate_with_uplink(&central, eid, dir.path()).await;
    until("the manifest's guests reach the gate", async || {
        search(&gate, "lovelace").await["guests"]
            .as_array()
            .is_some_and(|g| g.len() == 2)
    })
    .await;

    // By part of a name (any case), by order reference; one letter finds no one.
    let found = search(&gate, "LOVEL").await;
    assert_eq!(found["search"], true);
    let mut expected: Vec<&str> = ada.iter().map(|(t, _)| t.as_str()).collect();
    expected.sort();
    let mut got = tids(&found);
    got.sort();
    assert_eq!(got, expected);
    let first = &found["guests"][0];
    assert_eq!(
        (
            &first["holder"],
            &first["order"],
            &first["product"],
            &first["entries"]
        ),
        (
            &json!("Ada Lovelace"),
            &json!("ORD-1001"),
            &json!("VIP"),
            &json!(0)
        )
    );
    assert_eq!(first["standing"], json!({ "state": "active" }), "{first}");
    assert_eq!(tids(&search(&gate, "ord-2002").await).len(), 2);
    assert_eq!(tids(&search(&gate, &alan[0].0).await), [alan[0].0.as_str()]);
    assert!(tids(&search(&gate, "a").await).is_empty());

    // Checked in by staff: admitted, a manual admission naming them, audited.
    let (tid, code) = &ada[0];
    let (status, checked) = gate
        .post(
            &format!("/v1/guests/{tid}/check-in"),
            json!({ "staff": "Kim" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{checked}");
    assert_eq!(verdict(&checked), ("admit", "valid"));
    let (_, ticket) = gate.get(&format!("/v1/tickets/{tid}")).await;
    assert_eq!(
        ticket["redemptions"][0]["manual"], "Kim (api token)",
        "{ticket}"
    );
    let audit = gate.node.audit().await.unwrap();
    let line = audit
        .iter()
        .find(|a| a.action == "checkin:manual")
        .expect("an audit line for the manual admission");
    assert_eq!(
        (line.actor.as_str(), line.tid.as_ref().map(|t| t.as_str())),
        ("Kim (api token)", Some(tid.as_str()))
    );
    // The guest's code scanned afterwards is yellow, naming this gate; the search shows
    // them in.
    let scanned = gate.scan(code, "s1").await;
    assert_eq!(verdict(&scanned).0, "duplicate", "{scanned}");
    assert_eq!(scanned["first"]["gate"], "North 1");
    let found = search(&gate, tid).await;
    assert_eq!(found["guests"][0]["entries"], 1);
    assert_eq!(found["guests"][0]["first"]["gate"], "North 1");
    // Checked in again at once (a second click): the same green answer, the same admission.
    let (_, again) = gate
        .post(
            &format!("/v1/guests/{tid}/check-in"),
            json!({ "staff": "Kim" }),
        )
        .await;
    assert_eq!(verdict(&again), ("admit", "valid"), "{again}");
    assert_eq!(again["redemption_id"], checked["redemption_id"]);
    assert_eq!(search(&gate, tid).await["guests"][0]["entries"], 1);

    // Bad input: a ticket the manifest does not name, no staff, a bad id.
    for (path, body, status) in [
        (
            "/v1/guests/NOT-A-GUEST/check-in",
            json!({ "staff": "Kim" }),
            404,
        ),
        (
            &format!("/v1/guests/{}/check-in", alan[0].0) as &str,
            json!({ "staff": "" }),
            400,
        ),
        (
            "/v1/guests/bad%20id/check-in",
            json!({ "staff": "Kim" }),
            400,
        ),
        (
            &format!("/v1/guests/{}/check-in", alan[0].0),
            json!({}),
            400,
        ),
    ] {
        let (got, body) = gate.post(path, body).await;
        assert_eq!(got.as_u16(), status, "{path}: {body}");
    }
    let (status, _) = gate.get("/v1/guests").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        tids(&search(&gate, "turing").await).len(),
        2,
        "nothing changed"
    );
    gate.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_organizers_leave_no_attendee_name_reaches_a_gate() {
    let central = Central::start().await;
    let eid = "PRIVATE-2026";
    central.event(eid, 1).await;
    let ada = issue(&central, eid, "Ada Lovelace", "ORD-1001").await;
    // The manifest the gate gets names no one.
    let manifest = central.get(&format!("/v1/events/{eid}/manifest")).await;
    let text = manifest.to_string();
    assert!(
        !text.contains("Lovelace") && !text.contains("ORD-1001"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let gate = gate_with_uplink(&central, eid, dir.path()).await;
    until("the manifest reaches the gate", async || {
        gate.node.snapshot().await.unwrap().manifest_tickets == Some(3)
    })
    .await;
    let found = search(&gate, "lovelace").await;
    assert_eq!(found, json!({ "search": false, "guests": [] }));
    let (status, _) = gate
        .post(
            &format!("/v1/guests/{}/check-in", ada[0].0),
            json!({ "staff": "Kim" }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    gate.stop().await;
}
