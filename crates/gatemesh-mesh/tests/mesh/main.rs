//! Mutual TLS over real QUIC sockets on loopback: who gets in, who does not, and frames.

use std::{net::SocketAddr, time::Duration};

use gatemesh_mesh::{
    identity::{PeerId, Role},
    net::{MAX_FRAME, dial, mesh_endpoint, quinn_client_config, read_frame, write_frame},
    pki::{Credentials, MeshCa, ca_cert_from_pem, create_ca},
    tls::{MeshTrust, SERVER_NAME},
};
use quinn::Endpoint;
use tokio::time::timeout;

const EVENT: &str = "ROCK-2026";
const T: Duration = Duration::from_secs(5);

struct Ca {
    cert_pem: String,
    ca: MeshCa,
}

fn ca(event: &str) -> Ca {
    let pem = create_ca(event, 30).unwrap();
    Ca {
        ca: MeshCa::from_pem(&pem.cert_pem, &pem.key_pem).unwrap(),
        cert_pem: pem.cert_pem,
    }
}

/// An endpoint holding a certificate from `issuer` for `id`, trusting `trusted` for `event`.
fn endpoint(issuer: &Ca, trusted: &Ca, id: &PeerId, event: &str) -> (Endpoint, MeshTrust) {
    let device = issuer.ca.enroll(id, 30).unwrap();
    let creds = Credentials::from_pem(&device.cert_pem, &device.key_pem).unwrap();
    let trust = MeshTrust::new(ca_cert_from_pem(&trusted.cert_pem).unwrap(), event).unwrap();
    (
        mesh_endpoint(&trust, &creds, "127.0.0.1:0".parse().unwrap()).unwrap(),
        trust,
    )
}

fn addr(ep: &Endpoint) -> SocketAddr {
    ep.local_addr().unwrap()
}

/// Accepts one connection; `Ok` only if the handshake (client certificate included) passed.
async fn accept_one(ep: &Endpoint) -> Result<quinn::Connection, String> {
    let incoming = timeout(T, ep.accept()).await.unwrap().unwrap();
    timeout(T, incoming)
        .await
        .unwrap()
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn same_ca_same_event_connects_and_exchanges_frames() {
    let c = ca(EVENT);
    let (a, _) = endpoint(&c, &c, &PeerId::new(EVENT, Role::Gate, "gate-a"), EVENT);
    let (b, _) = endpoint(
        &c,
        &c,
        &PeerId::new(EVENT, Role::Observer, "manager"),
        EVENT,
    );
    let server = tokio::spawn({
        let a = a.clone();
        async move {
            let conn = accept_one(&a).await.unwrap();
            let peer = gatemesh_mesh::net::peer_identity(&conn, EVENT).unwrap();
            let (mut send, mut recv) = conn.accept_bi().await.unwrap();
            let frame = read_frame(&mut recv).await.unwrap().unwrap();
            write_frame(&mut send, &frame).await.unwrap();
            send.finish().unwrap();
            let _ = conn.closed().await;
            peer
        }
    });
    let (conn, peer) = timeout(T, dial(&b, addr(&a), EVENT))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(peer, PeerId::new(EVENT, Role::Gate, "gate-a"));
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let big = vec![7u8; 200_000];
    write_frame(&mut send, &big).await.unwrap();
    assert_eq!(read_frame(&mut recv).await.unwrap().unwrap(), big);
    assert_eq!(
        read_frame(&mut recv).await.unwrap(),
        None,
        "a clean end of stream"
    );
    conn.close(0u32.into(), b"bye");
    assert_eq!(
        server.await.unwrap(),
        PeerId::new(EVENT, Role::Observer, "manager")
    );
}

/// `client` dials `server` while `server` accepts; returns what each side saw.
async fn attempt(client: &Endpoint, server: &Endpoint) -> (Result<(), String>, Result<(), String>) {
    let accepting = tokio::spawn({
        let server = server.clone();
        async move { accept_one(&server).await.map(|_| ()) }
    });
    let dialed = match timeout(T, dial(client, addr(server), EVENT)).await {
        Ok(Ok((conn, _))) => {
            // TLS 1.3: the client may finish before the server refuses its certificate.
            let _ = timeout(T, conn.closed()).await;
            Ok(())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    };
    (dialed, accepting.await.unwrap())
}

#[tokio::test]
async fn a_device_of_another_ca_is_refused_both_ways() {
    let (real, rogue) = (ca(EVENT), ca("ELSEWHERE"));
    let (a, _) = endpoint(
        &real,
        &real,
        &PeerId::new(EVENT, Role::Gate, "gate-a"),
        EVENT,
    );
    // Trusts our CA, so it would accept us; its own certificate is from another CA.
    let (r, _) = endpoint(
        &rogue,
        &real,
        &PeerId::new(EVENT, Role::Gate, "gate-r"),
        EVENT,
    );
    let (_, ours) = attempt(&r, &a).await;
    assert!(ours.is_err(), "our side refuses the rogue client");
    let (dialed, _) = attempt(&a, &r).await;
    let err = dialed.unwrap_err();
    assert!(err.contains("UnknownIssuer"), "{err}");
}

#[tokio::test]
async fn a_device_of_another_event_is_refused_in_the_handshake() {
    let c = ca(EVENT);
    let (a, _) = endpoint(&c, &c, &PeerId::new(EVENT, Role::Gate, "gate-a"), EVENT);
    // Same CA, certificate for another event, willing to talk to ours.
    let (j, _) = endpoint(
        &c,
        &c,
        &PeerId::new("JAZZ-2026", Role::Gate, "gate-j"),
        EVENT,
    );
    let (_, ours) = attempt(&j, &a).await;
    let refused = ours.unwrap_err();
    assert!(refused.contains("not accepted here"), "{refused}");
    let (dialed, _) = attempt(&a, &j).await;
    let err = dialed.unwrap_err();
    assert!(err.contains("not accepted here"), "{err}");
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused() {
    let c = ca(EVENT);
    let (a, trust) = endpoint(&c, &c, &PeerId::new(EVENT, Role::Gate, "gate-a"), EVENT);
    let mut anonymous = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    anonymous.set_default_client_config(quinn_client_config(&trust, None).unwrap());
    let server = tokio::spawn({
        let a = a.clone();
        async move { accept_one(&a).await.map(|_| ()) }
    });
    if let Ok(Ok(conn)) = timeout(T, anonymous.connect(addr(&a), SERVER_NAME).unwrap()).await {
        // TLS 1.3: the client finishes first; the refusal arrives as the connection closes.
        let _ = timeout(T, conn.closed()).await;
    }
    assert!(
        server
            .await
            .unwrap()
            .unwrap_err()
            .contains("no certificates")
    );
}

#[tokio::test]
async fn an_oversized_frame_is_refused_before_it_is_read() {
    let c = ca(EVENT);
    let (a, _) = endpoint(&c, &c, &PeerId::new(EVENT, Role::Gate, "gate-a"), EVENT);
    let (b, _) = endpoint(&c, &c, &PeerId::new(EVENT, Role::Gate, "gate-b"), EVENT);
    let server = tokio::spawn({
        let a = a.clone();
        async move {
            let conn = accept_one(&a).await.unwrap();
            let (_send, mut recv) = conn.accept_bi().await.unwrap();
            read_frame(&mut recv)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    });
    let (conn, _) = dial(&b, addr(&a), EVENT).await.unwrap();
    let (mut send, _recv) = conn.open_bi().await.unwrap();
    assert!(
        write_frame(&mut send, &vec![0; MAX_FRAME + 1])
            .await
            .is_err(),
        "the sender refuses too"
    );
    send.write_all(&((MAX_FRAME as u32) + 1).to_be_bytes())
        .await
        .unwrap();
    let err = server.await.unwrap().unwrap_err();
    assert!(err.contains("frame"), "{err}");
}
