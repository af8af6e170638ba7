//! Revoking devices: the organizer's alone; the device's credential stops working; the
//! revocation, signed by the event's mesh CA, reaches gates in the manifest and the change
//! stream; pairing a name again revokes the certificate it held.

use gatemesh_testkit::pg::Backend;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Running, Sse, pair_device, signed_item_at};

/// Pairs a new device: its credential, certificate (PEM) and CA (PEM).
async fn pair(s: &Running, eid: &str, name: &str) -> (String, String, String) {
    let (_, paired) = pair_device(s, eid, name).await;
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    (
        text(&paired["token"]),
        text(&paired["identity"]["device_pem"]),
        text(&paired["identity"]["ca_pem"]),
    )
}

fn fingerprint(pem: &str) -> String {
    use rustls_pki_types::{CertificateDer, pem::PemObject};
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    gatemesh_wire::CertFingerprint::of(der.as_ref()).to_string()
}

async fn get_as(s: &Running, token: &str, path: &str) -> StatusCode {
    s.client
        .get(format!("{}{path}", s.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
}

/// The revocations the manifest carries, checked against the event's CA.
async fn revocations(s: &Running, eid: &str, ca_pem: &str) -> Vec<gatemesh_wire::Revocation> {
    let (status, manifest) = s.get(&format!("/v1/events/{eid}/manifest")).await;
    assert_eq!(status, StatusCode::OK);
    let list: Vec<gatemesh_wire::Revocation> =
        serde_json::from_value(manifest["revocations"].clone()).unwrap_or_default();
    let trust = gatemesh_ledger::Trust::from_pem(ca_pem, &eid.parse().unwrap()).unwrap();
    for r in &list {
        trust.check_revocation(r).unwrap();
    }
    list
}

pub(crate) async fn a_revoked_device_is_refused_and_gates_hear_of_it(backend: Backend) {
    let s = Running::start(backend).await;
    s.event_with_tickets("REV", 1).await;
    let (north, north_cert, ca) = pair(&s, "REV", "North-1").await;
    let (south, south_cert, _) = pair(&s, "REV", "South-1").await;
    let mut stream = Sse::open(&s, "/v1/events/REV/changes").await;
    let (_, first) = stream.next_event().await;
    assert!(first.get("revocations").is_none(), "{first}");
    let revoke = "/v1/events/REV/devices/North-1/revoke";

    // A device may not revoke, not even itself; nothing changes.
    let (status, body) = s.post_as(&south, revoke, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = s.post_as(&north, revoke, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Bad input gets 4xx and changes nothing.
    for (path, body, expected) in [
        (
            "/v1/events/REV/devices/Nobody/revoke",
            json!({}),
            StatusCode::NOT_FOUND,
        ),
        (
            "/v1/events/NOPE/devices/North-1/revoke",
            json!({}),
            StatusCode::NOT_FOUND,
        ),
        (
            "/v1/events/REV/devices/bad%20name/revoke",
            json!({}),
            StatusCode::BAD_REQUEST,
        ),
        (
            revoke,
            json!({ "reason": "x", "extra": 1 }),
            StatusCode::BAD_REQUEST,
        ),
        (
            revoke,
            json!({ "since": "yesterday" }),
            StatusCode::BAD_REQUEST,
        ),
        (
            revoke,
            json!({ "reason": "x".repeat(501) }),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = s.post(path, body).await;
        assert_eq!(status, expected, "{path}: {answer}");
    }
    assert!(revocations(&s, "REV", &ca).await.is_empty());
    assert_eq!(
        get_as(&s, &north, "/v1/events/REV/manifest").await,
        StatusCode::OK
    );

    // The organizer revokes North, without a body.
    let (status, answer) = s.call(reqwest::Method::POST, revoke, None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let made: Vec<gatemesh_wire::Revocation> =
        serde_json::from_value(answer["revocations"].clone()).unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].cert.to_string(), fingerprint(&north_cert));
    assert_eq!(made[0].name.as_str(), "North-1");
    // Its credential stops working at once.
    assert_eq!(
        get_as(&s, &north, "/v1/events/REV/manifest").await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = s
        .post_as(&north, "/v1/events/REV/heartbeat", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get_as(&s, &south, "/v1/events/REV/manifest").await,
        StatusCode::OK
    );
    // The stream and the manifest carry it, signed by the event's CA.
    let (_, delta) = stream.next_event().await;
    let streamed: Vec<gatemesh_wire::Revocation> =
        serde_json::from_value(delta["revocations"].clone()).unwrap();
    assert_eq!(streamed, made);
    assert_eq!(revocations(&s, "REV", &ca).await, made);
    let cursor = delta["cursor"].as_i64().unwrap();
    let (_, later) = s
        .get(&format!("/v1/events/REV/manifest?since={cursor}"))
        .await;
    assert!(later.get("revocations").is_none(), "{later}");
    // Revoking it again finds nothing more to revoke.
    let (status, again) = s.call(reqwest::Method::POST, revoke, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["revocations"], json!([]));

    // Pairing South again revokes the certificate it held; the new one counts.
    let (south_again, south_new_cert, _) = pair(&s, "REV", "South-1").await;
    assert_eq!(
        get_as(&s, &south, "/v1/events/REV/manifest").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        get_as(&s, &south_again, "/v1/events/REV/manifest").await,
        StatusCode::OK
    );
    let (_, delta) = stream.next_event().await;
    let streamed: Vec<gatemesh_wire::Revocation> =
        serde_json::from_value(delta["revocations"].clone()).unwrap();
    assert_eq!(streamed.len(), 1);
    assert_eq!(streamed[0].cert.to_string(), fingerprint(&south_cert));
    let all = revocations(&s, "REV", &ca).await;
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|r| r.cert.to_string() != fingerprint(&south_new_cert))
    );
    // With a reason and a time, audited.
    let (status, answer) = s
        .post(
            "/v1/events/REV/devices/South-1/revoke",
            json!({ "reason": "laptop stolen", "since": "2026-11-29T18:00:00Z" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let r: gatemesh_wire::Revocation =
        serde_json::from_value(answer["revocations"][0].clone()).unwrap();
    assert_eq!(r.reason.as_str(), "laptop stolen");
    assert_eq!(
        r.since_ms,
        Some(gatemesh_wire::time::parse_ms("2026-11-29T18:00:00Z").unwrap())
    );
    let (_, audit) = s.get("/v1/events/REV/audit").await;
    let actions: Vec<&str> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["action"].as_str())
        .filter(|a| a.starts_with("revoke:"))
        .collect();
    assert_eq!(
        actions,
        [
            "revoke:North-1",
            "revoke:North-1",
            "revoke:South-1",
            "revoke:South-1"
        ]
    );
    s.stop().await;
}

/// Pairs a new device and keeps its key: its credential, its signer and its certificate
/// (base64url DER, as a journal record carries it).
async fn pair_signing(
    s: &Running,
    eid: &str,
    name: &str,
) -> (String, gatemesh_ledger::Signer, String) {
    use base64::Engine;
    use rustls_pki_types::{CertificateDer, pem::PemObject};
    let (request, paired) = pair_device(s, eid, name).await;
    let (cert_pem, ca_pem) = (
        paired["identity"]["device_pem"].as_str().unwrap(),
        paired["identity"]["ca_pem"].as_str().unwrap(),
    );
    let trust = gatemesh_ledger::Trust::from_pem(ca_pem, &eid.parse().unwrap()).unwrap();
    let signer = gatemesh_ledger::Signer::from_pem(&trust, cert_pem, &request.key_pem()).unwrap();
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
    let cert = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(der.as_ref());
    (paired["token"].as_str().unwrap().to_owned(), signer, cert)
}

/// A revoked gate's records from its cut on reach the server in an honest gate's journal (it
/// learned them over the mesh before it heard of the revocation): they are not stored and do
/// not count, as in every gate's ledger; its earlier records count as before.
pub(crate) async fn a_revoked_devices_later_records_do_not_count_whoever_relays_them(
    backend: Backend,
) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("ASIDE", 2).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let (_, north, north_cert) = pair_signing(&s, "ASIDE", "North-1").await;
    let (south_token, _, _) = pair_signing(&s, "ASIDE", "South-1").await;
    let (status, answer) = s
        .post(
            "/v1/events/ASIDE/devices/North-1/revoke",
            json!({ "reason": "laptop stolen", "since": "2026-11-29T19:00:00Z" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");

    let at = |t: &str| gatemesh_wire::time::parse_ms(t).unwrap();
    let before = signed_item_at(
        &north,
        &north_cert,
        "ASIDE",
        &tid(0),
        "North 1",
        at("2026-11-29T18:30:00Z"),
        |_| {},
    );
    let after = signed_item_at(
        &north,
        &north_cert,
        "ASIDE",
        &tid(1),
        "North 1",
        at("2026-11-29T19:30:00Z"),
        |_| {},
    );
    let path = "/v1/events/ASIDE/redemptions";
    let (status, b) = s
        .post_as(
            &south_token,
            path,
            json!({ "redemptions": [before, after] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["answers"][0]["verdict"], "admit", "{b}");
    assert_eq!(
        (&b["answers"][1]["verdict"], &b["answers"][1]["reason"]),
        (&json!("reject"), &json!("revoked_device")),
        "{b}"
    );
    let admissions = |t: Value| t["admissions"].as_array().map_or(0, Vec::len);
    let (_, t0) = s.get(&format!("/v1/events/ASIDE/tickets/{}", tid(0))).await;
    let (_, t1) = s.get(&format!("/v1/events/ASIDE/tickets/{}", tid(1))).await;
    assert_eq!((admissions(t0), admissions(t1.clone())), (1, 0), "{t1}");
    // The ticket the revoked gate "admitted" admits its holder.
    let (_, online) = s
        .post(path, super::redemption("box-1", &json!(tid(1)), "Box"))
        .await;
    assert_eq!(online["verdict"], "admit", "{online}");
}
