//! Revocation across the mesh, against the real server (SQLite and PostgreSQL) and three
//! gates over real QUIC on loopback (static peers, no mDNS): A and C on the server's
//! uplink, B with none. The organizer revokes C; A learns by the change stream, B by the
//! mesh from A; both refuse C and close its connections; C's admissions made after the
//! revocation are kept but count at neither, those before still do; C, once told, syncs
//! with no one and says so.

use std::time::Duration;

use gatemesh_ledger::{Direction, Verdict};
use gatemesh_node::Node;
use gatemesh_rehearse::bench::revoke::{Drill, connected, refuses};
use gatemesh_testkit::{on_both_backends, pg::Backend};

on_both_backends!(
    a_gate_revoked_at_the_server_is_refused_everywhere_and_its_later_admissions_do_not_count
);

/// Waits up to 20 s until `check` holds.
async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    let (within, every) = (Duration::from_secs(20), Duration::from_millis(20));
    gatemesh_testkit::poll_async(what, within, every, check).await;
}

async fn verdict(node: &Node, code: &str) -> Verdict {
    node.scan(code, "s1", Direction::Entry)
        .await
        .unwrap()
        .verdict
}

async fn a_gate_revoked_at_the_server_is_refused_everywhere_and_its_later_admissions_do_not_count(
    backend: Backend,
) {
    let db = backend.database();
    let drill = Drill::start(
        db.as_ref()
            .map(|d| gatemesh_server::Database::Postgres(d.url.clone())),
    )
    .await
    .unwrap();
    let (a, b) = (&drill.a, &drill.b);
    let codes = drill.tickets(4).await.unwrap();
    let c = drill.join("gate-c").await.unwrap();
    eventually("A, B and C are meshed and C streams", async || {
        connected(a, "gate-c")
            && connected(b, "gate-c")
            && connected(a, "gate-b")
            && c.node.uplink_status().is_some_and(|s| s.streaming)
    })
    .await;
    assert!(b.uplink_status().is_none(), "B has no uplink");
    // C admits a ticket before it is revoked: that admission stands everywhere.
    let (before, after_a, after_b) = (&codes[0], &codes[1], &codes[2]);
    assert_eq!(verdict(&c.node, before).await, Verdict::Admit);
    eventually("A and B hold C's admission", async || {
        let (ra, _) = a.records().await.unwrap();
        let (rb, _) = b.records().await.unwrap();
        ra.iter().any(|r| r.gate == "gate-c") && rb.iter().any(|r| r.gate == "gate-c")
    })
    .await;

    // Revoked at the server: A hears by the stream, B (no uplink) by the mesh from A.
    let answer = drill.revoke("gate-c").await.unwrap();
    assert_eq!(answer["revocations"].as_array().map(Vec::len), Some(1));
    eventually("A and B refuse C", async || {
        refuses(a, "gate-c") && refuses(b, "gate-c")
    })
    .await;
    for g in [a, b] {
        let report = g.revocations().await.unwrap();
        assert_eq!(report.revocations.len(), 1);
        assert_eq!(report.revocations[0].name.as_str(), "gate-c");
        assert!(!report.revoked, "A and B are not revoked themselves");
    }
    // A and B still sync with each other.
    assert!(connected(a, "gate-b") && connected(b, "gate-a"));
    // C stays refused: it keeps dialling and never becomes a peer again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(refuses(a, "gate-c") && refuses(b, "gate-c"));

    // C, not yet told, admits two more tickets; its ledger reaches A and B by hand.
    assert_eq!(verdict(&c.node, after_a).await, Verdict::Admit);
    assert_eq!(verdict(&c.node, after_b).await, Verdict::Admit);
    let exported = c.node.export_ledger().await.unwrap();
    a.import_ledger(exported.clone()).await.unwrap();
    b.import_ledger(exported).await.unwrap();
    for g in [a, b] {
        let set_aside = g.revocations().await.unwrap().set_aside;
        assert_eq!(set_aside.len(), 2, "C's two later admissions are set aside");
        assert!(set_aside.iter().all(|r| r.gate == "gate-c"));
    }
    // Its later admissions count for nothing: the tickets still admit at A and at B…
    assert_eq!(verdict(a, after_a).await, Verdict::Admit);
    assert_eq!(verdict(b, after_b).await, Verdict::Admit);
    // …and the one before the revocation still counts.
    assert_eq!(verdict(a, before).await, Verdict::Duplicate);
    assert_eq!(verdict(b, before).await, Verdict::Duplicate);

    // C told of its revocation (a ledger from A, by hand): it syncs with no one, and says so.
    c.node
        .import_ledger(a.export_ledger().await.unwrap())
        .await
        .unwrap();
    eventually("C knows it is revoked and has no peers", async || {
        c.node.revocations().await.unwrap().revoked && c.node.peers().is_empty()
    })
    .await;

    c.node.shutdown().await;
    drill.shutdown().await;
}
