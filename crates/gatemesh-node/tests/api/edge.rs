//! Trust at the edge, through the real server over HTTPS on loopback (both backends): a
//! gate pairs by the server's link and pins its certificate, for pairing and for the uplink;
//! a man in the middle with another certificate gets nothing; plain HTTP off loopback is
//! refused before anything is sent.

use std::sync::atomic::Ordering;

use gatemesh_node::{
    Node, UplinkConfig,
    edge::EdgeError,
    pairing::{PairError, PairingLink},
};
use gatemesh_testkit::{mitm::Mitm, on_both_backends, pg::Backend};
use serde_json::json;

use super::contract::Central;

on_both_backends!(pairing_by_link_pins_the_server_for_good);

async fn pairing_by_link_pins_the_server_for_good(backend: Backend) {
    let central = Central::on(backend).await;
    central.event("EDGE", 2).await;
    let code = central
        .post("/v1/events/EDGE/devices", json!({ "name": "North-1" }))
        .await;
    let link = PairingLink::parse(code["link"].as_str().unwrap()).unwrap();
    let upstream = central.base.trim_start_matches("https://").parse().unwrap();
    let mitm = Mitm::start(upstream).await;

    // The same link, reached through the man in the middle: refused, nothing spent.
    let intercepted = PairingLink {
        server: format!("https://{}", mitm.addr),
        ..link.clone()
    };
    let err = gatemesh_node::pairing::pair(&intercepted)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PairError::WrongCertificate { fingerprint, .. } if fingerprint == central.pin),
        "{err}"
    );
    assert!(!err.is_unavailable());
    assert_eq!(mitm.connections.load(Ordering::Relaxed), 1);
    assert_eq!(mitm.intercepted.load(Ordering::Relaxed), 0);

    // The real link: paired, with the pin kept for the uplink.
    let pairing = gatemesh_node::pairing::pair(&link).await.unwrap();
    assert_eq!(pairing.fingerprint, Some(central.pin));
    let dir = tempfile::tempdir().unwrap();
    pairing
        .write_identity(&dir.path().join("identity"))
        .unwrap();
    let file = pairing.gate_file();
    let config = |name: &str| {
        let mut c = gatemesh_node::Config::new(
            dir.path().join(name),
            gatemesh_ticket::EventId::new("EDGE").unwrap(),
            name.into(),
        );
        c.keyring = central.keyring();
        c
    };
    let node = Node::start(config("North-1")).unwrap();
    node.start_uplink(UplinkConfig {
        server: file.server.clone(),
        token: file.token.clone(),
        fingerprint: file.fingerprint,
        peer_grace: gatemesh_node::PEER_GRACE,
    })
    .unwrap();
    super::contract::until("the uplink streams over HTTPS", async || {
        node.uplink_status()
            .is_some_and(|s| s.streaming && s.cursor.is_some())
    })
    .await;

    // The same credential and pin through the man in the middle: the uplink never gets in.
    let other = Node::start(config("North-2")).unwrap();
    other
        .start_uplink(UplinkConfig {
            server: format!("https://{}", mitm.addr),
            token: file.token.clone(),
            fingerprint: file.fingerprint,
            peer_grace: gatemesh_node::PEER_GRACE,
        })
        .unwrap();
    super::contract::until("the uplink refused the other certificate", async || {
        mitm.connections.load(Ordering::Relaxed) > 1
            && other
                .uplink_status()
                .is_some_and(|s| s.last_error.is_some())
    })
    .await;
    let status = other.uplink_status().unwrap();
    assert!(!status.streaming && status.cursor.is_none(), "{status:?}");
    assert_eq!(status.last_contact_ms, None);
    assert_eq!(
        mitm.intercepted.load(Ordering::Relaxed),
        0,
        "no handshake completed"
    );
    node.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn plain_http_off_loopback_and_unpinned_https_are_refused_before_sending() {
    // TEST-NET-1: nothing is ever sent there; the gate refuses before it connects.
    let plain = PairingLink::new("http://192.0.2.7:8080", "ABCDE-12345", None).unwrap();
    let err = gatemesh_node::pairing::pair(&plain).await.unwrap_err();
    assert!(
        matches!(err, PairError::Server(EdgeError::PlainHttp(_))),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(gatemesh_node::Config::new(
        dir.path().join("gate"),
        gatemesh_ticket::EventId::new("EDGE").unwrap(),
        "North-1".into(),
    ))
    .unwrap();
    for (server, fingerprint) in [
        ("http://192.0.2.7:8080", None),
        ("https://192.0.2.7:8443", None),
        ("192.0.2.7:8443", None),
    ] {
        let refused = node.start_uplink(UplinkConfig {
            server: server.into(),
            token: "t".into(),
            fingerprint,
            peer_grace: gatemesh_node::PEER_GRACE,
        });
        assert!(refused.is_err(), "{server}");
    }
    assert!(node.uplink_status().is_none());
    node.shutdown().await;
}
