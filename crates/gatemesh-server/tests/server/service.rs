//! The server as a service: its issuer keys as a JWK Set that `jose` verifies tickets with,
//! keys kept listed after a rotation, and liveness / readiness that follow the database.

use std::time::Duration;

use gatemesh_server::{Database, Server};
use gatemesh_testkit::{jose, pg, poll_async};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, KeyId, PublicKey, TicketId};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Running, TOKEN};

/// A GET without any credential.
async fn get_open(s: &Running, path: &str) -> (StatusCode, Value) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn jwt(key: &IssuerKey, eid: &str) -> String {
    let claims = Claims {
        tid: TicketId::generate(),
        eid: EventId::new(eid).unwrap(),
        seat: None,
        iat: Some(1_780_000_000),
        nbf: None,
        exp: None,
        product: None,
    };
    key.sign(&claims, Format::Jwt).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jose_verifies_tickets_with_the_served_jwks_and_retired_keys_stay_listed() {
    let dir = tempfile::tempdir().unwrap();
    // The key of before a rotation, kept as a JWK Set under its chosen id.
    let old = IssuerKey::generate(Some(KeyId::new("rock-2025").unwrap()));
    let retired = dir.path().join(gatemesh_server::RETIRED);
    std::fs::create_dir_all(&retired).unwrap();
    std::fs::write(
        retired.join("rock-2025.jwks.json"),
        gatemesh_ticket::jwks([&old.public()]).to_string(),
    )
    .unwrap();
    let s = Running::on_database(dir.path(), None).await;
    let tickets = s.event_with_tickets("JWKS", 2).await;
    let (_, issued) = s
        .post(
            "/v1/events/JWKS/tickets",
            json!({ "count": 2, "format": "jwt" }),
        )
        .await;
    let mut tokens: Vec<String> = issued["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["code"].as_str().unwrap().to_owned())
        .collect();
    assert!(tokens[0].starts_with("ey"), "{}", tokens[0]);
    assert!(tickets[0]["code"].as_str().unwrap().starts_with("GM1:"));
    tokens.push(jwt(&old, "JWKS"));
    let stranger = IssuerKey::generate(None);
    tokens.push(jwt(&stranger, "JWKS"));

    // Served without a credential: the current key first, then the retired one.
    let (status, set) = get_open(&s, "/.well-known/jwks.json").await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let (_, keys) = get_open(&s, "/v1/keys").await;
    let current = keys["keys"][0]["kid"].as_str().unwrap().to_owned();
    let kids: Vec<&str> = set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, [current.as_str(), "rock-2025"]);
    assert_eq!(keys["keys"][1]["kid"], "rock-2025", "{keys}");
    let ours = PublicKey::from_jwks(&set.to_string()).unwrap();
    assert_eq!(ours[1], old.public());

    // jose, fed the set as a JOSE consumer is: the server's and the retired key's tickets
    // verify, a stranger's does not; its RFC 7638 thumbprint is where our derived id comes
    // from. The server's plain issuer.pub.pem goes to importSPKI as written.
    let pem = std::fs::read_to_string(dir.path().join("issuer.pub.pem")).unwrap();
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    let answer = jose(
        "jwks.mjs",
        &json!({ "jwks": set, "spki_pem": pem, "tokens": tokens }),
    );
    let valid = |which: &str| -> Vec<bool> {
        answer[which]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["valid"].as_bool().unwrap())
            .collect()
    };
    assert_eq!(valid("jwks"), [true, true, true, false], "{answer}");
    assert_eq!(answer["jwks"][2]["kid"], "rock-2025");
    assert_eq!(
        answer["jwks"][3]["error"], "ERR_JWKS_NO_MATCHING_KEY",
        "{answer}"
    );
    assert_eq!(valid("spki"), [true, true, false, false], "{answer}");
    assert_eq!(
        &answer["thumbprints"][0].as_str().unwrap()[..16],
        current,
        "{answer}"
    );
    s.stop().await;
}

#[test]
fn a_bad_retired_key_file_stops_the_server_opening_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let retired = dir.path().join(gatemesh_server::RETIRED);
    std::fs::create_dir_all(&retired).unwrap();
    for (text, says) in [
        ("{not json", "not JSON"),
        (
            r#"{"keys":[{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}]}"#,
            "crv is \"P-384\"",
        ),
        (r#"{"keys":[{"kty":"EC","crv":"P-256","y":"AA"}]}"#, "\"x\""),
    ] {
        std::fs::write(retired.join("old.jwks.json"), text).unwrap();
        let e = Server::open(dir.path(), None, Some(TOKEN.into())).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("old.jwks.json") && e.contains(says), "{e}");
    }
}

/// `/readyz` answers 503 with the cause while PostgreSQL is down and 200 once it is back;
/// `/healthz` answers 200 throughout. On a cluster of the test's own, so stopping it stops
/// no other test.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_follows_the_database_and_liveness_does_not() {
    let cluster = pg::Cluster::start();
    let dir = tempfile::tempdir().unwrap();
    let s = Running::on_database(dir.path(), Some(Database::Postgres(cluster.url.clone()))).await;
    assert_eq!(
        get_open(&s, "/readyz").await,
        (StatusCode::OK, json!({ "ready": true }))
    );
    assert_eq!(get_open(&s, "/healthz").await.0, StatusCode::OK);

    cluster.stop();
    let (status, body) = get_open(&s, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the database does not answer: "),
        "{message}"
    );
    assert_eq!(
        get_open(&s, "/healthz").await,
        (StatusCode::OK, json!({ "ok": true }))
    );

    cluster.restart();
    poll_async(
        "/readyz answers 200 again",
        Duration::from_secs(30),
        Duration::from_millis(200),
        async || get_open(&s, "/readyz").await.0 == StatusCode::OK,
    )
    .await;
    s.stop().await;
}
