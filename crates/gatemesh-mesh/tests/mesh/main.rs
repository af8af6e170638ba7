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

/// What a ledger's owner was asked, in order: the kind of request and the peer.
type Asked = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, String)>>>;

/// A ledger's owner for a mesh under test: answers every request with nothing to send, and
/// keeps what it was asked, in order (the kind and the peer). With `hold`, the first summary
/// asked for that peer is answered only once told (the session that asked waits there).
fn owner(
    hold: Option<(&'static str, tokio::sync::oneshot::Receiver<()>)>,
) -> (gatemesh_mesh::session::SyncPort, Asked) {
    use gatemesh_mesh::session::{OurSummary, SyncPort, SyncRequest};
    let (requests, mut rx) = tokio::sync::mpsc::channel(256);
    let (pushes, _) = tokio::sync::broadcast::channel(64);
    let (_stats_tx, stats) = tokio::sync::watch::channel(std::sync::Arc::new(Vec::new()));
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = asked.clone();
    tokio::spawn(async move {
        let _stats = _stats_tx;
        let mut hold = hold;
        while let Some(request) = rx.recv().await {
            let note = |kind: &'static str, peer: &str| {
                kept.lock().unwrap().push((kind, peer.to_owned()));
            };
            match request {
                SyncRequest::Summary { peer, reply, .. } => {
                    note("summary", &peer);
                    match hold.take_if(|(held, _)| *held == peer) {
                        // Answered once told; the owner goes on meanwhile.
                        Some((_, go)) => {
                            tokio::spawn(async move {
                                let _ = go.await;
                                let _ = reply.send(OurSummary::default());
                            });
                        }
                        None => {
                            let _ = reply.send(OurSummary::default());
                        }
                    }
                }
                SyncRequest::Forget { peer } => note("forget", &peer),
                SyncRequest::Generate { peer, reply, .. } => {
                    note("generate", &peer);
                    let _ = reply.send(None);
                }
                SyncRequest::Receive { peer, reply, .. } => {
                    note("receive", &peer);
                    let _ = reply.send(Ok(()));
                }
                SyncRequest::Push { peer, reply, .. } => {
                    note("push", &peer);
                    let _ = reply.send(Ok(false));
                }
                SyncRequest::Pushed { peer, .. } => note("pushed", &peer),
                SyncRequest::TheirSummary { peer, reply, .. } => {
                    note("their summary", &peer);
                    let _ = reply.send(Ok(Default::default()));
                }
                SyncRequest::Need { peer, reply, .. } => {
                    note("need", &peer);
                    let _ = reply.send(Ok(Default::default()));
                }
            }
        }
    });
    (
        SyncPort {
            requests,
            pushes,
            stats,
        },
        asked,
    )
}

fn mesh_config(
    identity: &std::path::Path,
    peers: Vec<SocketAddr>,
) -> gatemesh_mesh::session::MeshConfig {
    gatemesh_mesh::session::MeshConfig {
        identity: gatemesh_mesh::pki::Identity::load(identity).unwrap(),
        bind: "127.0.0.1:0".parse().unwrap(),
        static_peers: peers,
        discovery: None,
        exchange_peers: false,
    }
}

/// B's side of a connection to A, made by hand (as a gate's dial loop makes one, but never
/// again by itself): the handshake, then the hello frame that opens the session.
async fn connect_as(
    identity: &gatemesh_mesh::pki::Identity,
    to: SocketAddr,
) -> (
    Endpoint,
    quinn::Connection,
    (quinn::SendStream, quinn::RecvStream),
) {
    let ep = mesh_endpoint(
        &identity.trust,
        &identity.creds,
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let (conn, _) = timeout(T, dial(&ep, to, EVENT)).await.unwrap().unwrap();
    let (mut send, recv) = conn.open_bi().await.unwrap();
    write_frame(&mut send, &[]).await.unwrap();
    (ep, conn, (send, recv))
}

/// An event's mesh CA and two gates enrolled under it, `a` and `b` (each a directory named
/// so, for [`mesh_config`]).
fn gates_a_and_b() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ca_dir = dir.path().join("ca");
    gatemesh_mesh::pki::write_new_ca(&ca_dir, EVENT, 30).unwrap();
    for name in ["a", "b"] {
        gatemesh_mesh::pki::enroll_into(&ca_dir, &dir.path().join(name), Role::Gate, name, 30)
            .unwrap();
    }
    dir
}

/// Waits (at most [`T`]) until `done`.
async fn until(done: impl Fn() -> bool) {
    timeout(T, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
}

/// A peer's connection lost and made again (or made both ways at once): the new one takes
/// the old one's place while the old session still runs. The old session's end must leave
/// the peer's sync state alone: forgetting it then wiped the new session's (what the peer
/// has, its last summary, a catch-up being taken) mid-round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_another_took_the_place_of_leaves_the_peers_state_alone() {
    let dir = gates_a_and_b();
    let (go, held) = tokio::sync::oneshot::channel();
    let (a_port, asked) = owner(Some(("b", held)));
    let a = gatemesh_mesh::session::Mesh::start(mesh_config(&dir.path().join("a"), vec![]), a_port)
        .unwrap();
    let a_addr = a.local_addr().unwrap();
    let summaries = || {
        asked
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, p)| *k == "summary" && p == "b")
            .count()
    };
    let b = gatemesh_mesh::pki::Identity::load(&dir.path().join("b")).unwrap();
    // B connects; A's owner holds its first summary for B: that session waits there.
    let (_ep1, first, _s1) = connect_as(&b, a_addr).await;
    until(|| summaries() == 1).await;
    // B again, on a connection of its own (the first lost, which A does not know yet): it
    // takes the first one's place at A, and its session asks for its own summary.
    let (ep2, second, _s2) = connect_as(&b, a_addr).await;
    let b2_addr = ep2.local_addr().unwrap().to_string();
    until(|| summaries() == 2).await;
    assert!(
        a.peers()
            .iter()
            .any(|p| p.name == "b" && p.connected && p.address == b2_addr),
        "{:?}",
        a.peers()
    );
    assert!(first.close_reason().is_some(), "A closed the first");
    // The old session goes on, and ends.
    go.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let asked = asked.lock().unwrap().clone();
    let new_session = asked
        .iter()
        .enumerate()
        .filter(|(_, (k, p))| *k == "summary" && p == "b")
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    let forgotten_late = asked
        .iter()
        .enumerate()
        .any(|(i, (k, p))| i > new_session && *k == "forget" && p == "b");
    assert!(
        !forgotten_late,
        "B forgotten while its new session syncs: {asked:?}"
    );
    // The new one started afresh: B's state was forgotten before it, once.
    let forgotten: Vec<usize> = asked
        .iter()
        .enumerate()
        .filter(|(_, (k, p))| *k == "forget" && p == "b")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(forgotten.len(), 1, "{asked:?}");
    assert!(second.close_reason().is_none());
    a.shutdown().await;
}

/// Whether a connection was closed by the peer as the losing one of a pair.
fn closed_as_duplicate(why: &quinn::ConnectionError) -> bool {
    matches!(
        why,
        quinn::ConnectionError::ApplicationClosed(c)
            if c.error_code == quinn::VarInt::from_u32(gatemesh_mesh::session::CLOSE_DUPLICATE)
    )
}

/// A partition heals and both gates dial each other. B's dial got through first and its
/// session runs; A's, whose handshake ends after (a loaded machine, a resent first packet),
/// is dropped before it opens a stream. Served, it took the running session's place on
/// both sides (the connection A dialled wins a tie: A's name is the smaller), and what was
/// asked and relayed on the first was asked and relayed again: at a 32-gate heal, dozens
/// of sessions thrown away seconds in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dial_that_ends_after_the_peer_connected_leaves_the_running_session_alone() {
    let dir = gates_a_and_b();
    let b = gatemesh_mesh::pki::Identity::load(&dir.path().join("b")).unwrap();
    // B's endpoint, not accepting yet: A's dial to it waits in its handshake.
    let ep_b = mesh_endpoint(&b.trust, &b.creds, "127.0.0.1:0".parse().unwrap()).unwrap();
    let (a_port, asked) = owner(None);
    let a = gatemesh_mesh::session::Mesh::start(
        mesh_config(&dir.path().join("a"), vec![addr(&ep_b)]),
        a_port,
    )
    .unwrap();
    // B's own dial to A gets through, and its session starts at A.
    let (first, _) = timeout(T, dial(&ep_b, a.local_addr().unwrap(), EVENT))
        .await
        .unwrap()
        .unwrap();
    let (mut send, _recv) = first.open_bi().await.unwrap();
    write_frame(&mut send, &[]).await.unwrap();
    until(|| {
        asked
            .lock()
            .unwrap()
            .iter()
            .any(|(k, p)| *k == "summary" && p == "b")
    })
    .await;
    // Now B answers A's dial (an attempt A gave up on, unanswered, is passed over).
    let theirs = timeout(Duration::from_secs(15), async {
        loop {
            let incoming = ep_b.accept().await.unwrap();
            if let Ok(Ok(conn)) = timeout(Duration::from_secs(3), incoming).await {
                break conn;
            }
        }
    })
    .await
    .expect("A dialled B");
    tokio::select! {
        why = theirs.closed() => assert!(
            closed_as_duplicate(&why),
            "{why}"
        ),
        why = first.closed() => panic!("the running session's connection was closed: {why}"),
        _ = tokio::time::sleep(T) => panic!("A kept both connections"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(first.close_reason().is_none(), "{:?}", first.close_reason());
    assert!(
        !asked
            .lock()
            .unwrap()
            .iter()
            .any(|(k, p)| *k == "forget" && p == "b"),
        "B's state was forgotten, as for a new session: {:?}",
        asked.lock().unwrap()
    );
    assert!(
        a.peers().iter().any(|p| p.name == "b" && p.connected),
        "{:?}",
        a.peers()
    );
    a.shutdown().await;
}

/// B crashed (no close sent) and restarted; A still holds the connection it dialled to the
/// old B, open until QUIC's idle timeout (10 s), and A's dial wins a tie (its name is the
/// smaller). The restarted B's connection, made once A has not heard the old one for
/// [`HEARD_WITHIN`], is let in: turned away as a duplicate, the restarted gate was out of
/// the mesh until the idle timeout (seconds of retries in the rehearsal's SIGKILL).
///
/// [`HEARD_WITHIN`]: gatemesh_mesh::session::HEARD_WITHIN
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_back_from_a_crash_is_let_in_without_waiting_for_its_old_connection_to_time_out() {
    let dir = gates_a_and_b();
    let b = gatemesh_mesh::pki::Identity::load(&dir.path().join("b")).unwrap();
    // The first B, on a runtime of its own: dropped, it sends nothing more, as a crash.
    let old_b = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ep_b = {
        let _inside = old_b.enter();
        mesh_endpoint(&b.trust, &b.creds, "127.0.0.1:0".parse().unwrap()).unwrap()
    };
    let b_addr = addr(&ep_b);
    old_b.spawn(async move {
        let conn = ep_b.accept().await.unwrap().await.unwrap();
        let (_send, mut recv) = conn.accept_bi().await.unwrap();
        while let Ok(Some(_)) = read_frame(&mut recv).await {}
        drop(ep_b);
    });
    let (a_port, _asked) = owner(None);
    let a = gatemesh_mesh::session::Mesh::start(
        mesh_config(&dir.path().join("a"), vec![b_addr]),
        a_port,
    )
    .unwrap();
    let connected_at = |address: String| {
        let a = &a;
        move || {
            a.peers()
                .iter()
                .any(|p| p.name == "b" && p.connected && p.address == address)
        }
    };
    until(connected_at(b_addr.to_string())).await;
    // While the first B is heard, a second connection of B's loses the tie to A's.
    let (_ep, early, _streams) = connect_as(&b, a.local_addr().unwrap()).await;
    let why = timeout(T, early.closed()).await.unwrap();
    assert!(closed_as_duplicate(&why), "{why}");
    assert!(connected_at(b_addr.to_string())(), "{:?}", a.peers());
    old_b.shutdown_background();
    // Restarted, B dials A once A has not heard the old B for HEARD_WITHIN (and well
    // before the old connection's idle timeout).
    tokio::time::sleep(gatemesh_mesh::session::HEARD_WITHIN + Duration::from_millis(1_500)).await;
    let (ep2, conn, _streams) = connect_as(&b, a.local_addr().unwrap()).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(
        conn.close_reason().is_none(),
        "the restarted B was turned away: {:?}",
        conn.close_reason()
    );
    assert!(connected_at(addr(&ep2).to_string())(), "{:?}", a.peers());
    a.shutdown().await;
}

/// A loaded owner takes no requests for a while (its queue full) as the session pushes its
/// commits to a peer: the marks of what was pushed wait, and reach it once it takes
/// requests again, every one. Dropped, as they were, each was a change the owner counted as
/// not sent and relayed again (~10,000 at a stadium).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_of_pushes_reach_an_owner_that_was_too_busy_to_take_them() {
    use gatemesh_mesh::session::{Commit, Mesh, OurSummary, SyncPort, SyncRequest};
    use std::sync::{Arc, Mutex};
    let dir = gates_a_and_b();
    let (requests, mut rx) = tokio::sync::mpsc::channel(2);
    let (pushes, _) = tokio::sync::broadcast::channel(gatemesh_mesh::session::PUSH_QUEUE);
    let (stats_tx, stats) = tokio::sync::watch::channel(Arc::new(Vec::new()));
    let (go, busy) = tokio::sync::oneshot::channel::<()>();
    let marked = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let kept = marked.clone();
    tokio::spawn(async move {
        let _stats = stats_tx;
        let _ = busy.await;
        while let Some(request) = rx.recv().await {
            match request {
                SyncRequest::Pushed { hashes, .. } => kept.lock().unwrap().extend(hashes),
                SyncRequest::Summary { reply, .. } => {
                    let _ = reply.send(OurSummary::default());
                }
                SyncRequest::Generate { reply, .. } => {
                    let _ = reply.send(None);
                }
                SyncRequest::Receive { reply, .. } => {
                    let _ = reply.send(Ok(()));
                }
                SyncRequest::Push { reply, .. } => {
                    let _ = reply.send(Ok(false));
                }
                SyncRequest::TheirSummary { reply, .. } => {
                    let _ = reply.send(Ok(Default::default()));
                }
                SyncRequest::Need { reply, .. } => {
                    let _ = reply.send(Ok(Default::default()));
                }
                SyncRequest::Forget { .. } => {}
            }
        }
    });
    let port = SyncPort {
        requests,
        pushes: pushes.clone(),
        stats,
    };
    let a = Mesh::start(mesh_config(&dir.path().join("a"), vec![]), port).unwrap();
    let b = gatemesh_mesh::pki::Identity::load(&dir.path().join("b")).unwrap();
    let (_ep, _conn, (_send, mut recv)) = connect_as(&b, a.local_addr().unwrap()).await;
    let pushed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = pushed.clone();
    tokio::spawn(async move {
        while let Ok(Some(frame)) = read_frame(&mut recv).await {
            if frame.first() == Some(&gatemesh_mesh::session::PUSH_FRAME) {
                let n = (frame.len() - 1) / 100;
                counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    until(|| a.peers().iter().any(|p| p.name == "b" && p.connected)).await;
    // 40 commits, one at a time: B gets each, and its mark finds the owner's queue full.
    for i in 0..40u8 {
        let commit = Commit {
            bytes: vec![i; 100],
            hashes: vec![[i; 32]],
        };
        pushes.send(Arc::new(commit)).unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    until(|| pushed.load(std::sync::atomic::Ordering::Relaxed) == 40).await;
    assert!(
        marked.lock().unwrap().is_empty(),
        "the owner took nothing yet"
    );
    go.send(()).unwrap();
    until(|| marked.lock().unwrap().len() == 40).await;
    a.shutdown().await;
}

/// A ledger's owner that answers each of a peer's summaries, while the session says there is
/// room, with `frames` push frames of `len` bytes (a large relay: a heal's gap), and each
/// request for changes by hash likewise; asks for the next at every tick; counts the bytes
/// of the pushes it takes.
fn relaying_owner(
    frames: usize,
    len: usize,
) -> (
    gatemesh_mesh::session::SyncPort,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use gatemesh_mesh::session::{Answer, OurSummary, SyncPort, SyncRequest};
    use std::sync::atomic::Ordering;
    let (requests, mut rx) = tokio::sync::mpsc::channel(256);
    let (pushes, _) = tokio::sync::broadcast::channel(64);
    let (stats_tx, stats) = tokio::sync::watch::channel(std::sync::Arc::new(Vec::new()));
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = taken.clone();
    tokio::spawn(async move {
        let _stats = stats_tx;
        while let Some(request) = rx.recv().await {
            match request {
                SyncRequest::Summary { reply, .. } => {
                    let _ = reply.send(OurSummary {
                        message: vec![1],
                        behind: true,
                        catching_up: true,
                    });
                }
                SyncRequest::TheirSummary { relay, reply, .. } => {
                    let answer = if relay {
                        Answer {
                            frames: vec![vec![7u8; len]; frames],
                            changes: frames,
                            round: false,
                        }
                    } else {
                        Answer::default()
                    };
                    let _ = reply.send(Ok(answer));
                }
                SyncRequest::Push { bytes, reply, .. } => {
                    counted.fetch_add(bytes.len(), Ordering::AcqRel);
                    let _ = reply.send(Ok(false));
                }
                SyncRequest::Generate { reply, .. } => {
                    let _ = reply.send(None);
                }
                SyncRequest::Receive { reply, .. } => {
                    let _ = reply.send(Ok(()));
                }
                SyncRequest::Need { reply, .. } => {
                    let _ = reply.send(Ok(Answer {
                        frames: vec![vec![7u8; len]; frames],
                        changes: frames,
                        round: false,
                    }));
                }
                SyncRequest::Pushed { .. } | SyncRequest::Forget { .. } => {}
            }
        }
    });
    (
        SyncPort {
            requests,
            pushes,
            stats,
        },
        taken,
    )
}

/// Two gates relaying each other megabytes at once (a heal's gap, each the one the other
/// asked) over one connection. A session that stopped reading the peer's frames while it
/// waited for room to send its own answer blocked the peer's sending side, which blocked the
/// peer's reading, and so on round: the connection stayed open and carried nothing more
/// either way, and changes admitted on either side never reached the other by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gates_relaying_each_other_megabytes_at_once_both_keep_receiving() {
    use std::sync::atomic::Ordering;
    let dir = gates_a_and_b();
    // 8 MiB an answer: more than a session's queue, the connection's windows and the peer's
    // unread frames hold together.
    let (frames, len) = (32, gatemesh_mesh::session::PUSH_MOST);
    let (a_port, a_taken) = relaying_owner(frames, len);
    let (b_port, b_taken) = relaying_owner(frames, len);
    let a = gatemesh_mesh::session::Mesh::start(mesh_config(&dir.path().join("a"), vec![]), a_port)
        .unwrap();
    let b = gatemesh_mesh::session::Mesh::start(
        mesh_config(&dir.path().join("b"), vec![a.local_addr().unwrap()]),
        b_port,
    )
    .unwrap();
    // Three answers' worth each way.
    let enough = 3 * frames * len;
    let got = timeout(Duration::from_secs(60), async {
        while a_taken.load(Ordering::Acquire) < enough || b_taken.load(Ordering::Acquire) < enough {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let (to_a, to_b) = (
        a_taken.load(Ordering::Acquire),
        b_taken.load(Ordering::Acquire),
    );
    assert!(
        got.is_ok(),
        "the connection stopped carrying relays: {to_a} bytes reached A, {to_b} reached B"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// An enrolled peer that asks for changes by hash again and again and reads nothing: what
/// the gate answers waits to go to it, counted. Past `OUT_WAITING_MOST` the gate ends the
/// connection, instead of queueing answers without end (or, as before, its session waiting
/// for room for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_asks_and_reads_nothing_loses_its_connection() {
    use gatemesh_mesh::session::{CLOSE_BAD_SYNC, NEED_FRAME, OUT_WAITING_MOST, PUSH_MOST};
    let dir = gates_a_and_b();
    // 8 MiB an answer.
    let (frames, len) = (32, PUSH_MOST);
    let (a_port, _) = relaying_owner(frames, len);
    let a = gatemesh_mesh::session::Mesh::start(mesh_config(&dir.path().join("a"), vec![]), a_port)
        .unwrap();
    let b = gatemesh_mesh::pki::Identity::load(&dir.path().join("b")).unwrap();
    let (_ep, conn, (mut send, _unread)) = connect_as(&b, a.local_addr().unwrap()).await;
    for _ in 0..OUT_WAITING_MOST / (frames * len) + 2 {
        if write_frame(&mut send, &[NEED_FRAME, 0]).await.is_err() {
            break;
        }
    }
    let closed = timeout(Duration::from_secs(30), conn.closed())
        .await
        .expect("the gate kept the connection of a peer that reads nothing");
    assert!(
        matches!(
            &closed,
            quinn::ConnectionError::ApplicationClosed(c) if c.error_code == CLOSE_BAD_SYNC.into()
        ),
        "{closed:?}"
    );
    a.shutdown().await;
}
