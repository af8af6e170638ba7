//! What a gate's uplink does with its peers' admissions, against the real server (SQLite and
//! PostgreSQL) and three gates over real QUIC on loopback: A and C on the server's uplink,
//! B with none. A peer's admission is left to its writer for the gate's grace; then the
//! gate asks the server whether it holds it, and uploads it only if not (it asks after a
//! tenth of the grace too, to upload none). So C's admission reaches the server once, from
//! C (A finds it held, within the grace), and B's, whose writer has no uplink, through A or
//! C; B's next one, B known to lag, after a tenth of the grace.

use std::time::Duration;

use gatemesh_ledger::{Direction, Verdict};
use gatemesh_node::Node;
use gatemesh_rehearse::bench::revoke::{Drill, connected};
use gatemesh_testkit::{on_both_backends, pg::Backend};
use serde_json::json;

on_both_backends!(
    a_peers_admission_reaches_the_server_once_and_a_peer_without_uplink_through_the_others
);

/// The gates' grace for their peers' admissions: long beside an upload on a loaded test
/// machine (C's own goes at once), short for a test.
const GRACE: Duration = Duration::from_secs(8);

/// Waits up to 60 s until `check` holds.
async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    let (within, every) = (Duration::from_secs(60), Duration::from_millis(50));
    gatemesh_testkit::poll_async(what, within, every, check).await;
}

/// Admits `code` at `node`; the redemption's id.
async fn admit(node: &Node, code: &str) -> String {
    let result = node.scan(code, "s1", Direction::Entry).await.unwrap();
    assert_eq!(result.verdict, Verdict::Admit);
    result.redemption_id.unwrap().to_string()
}

/// The server's answer to the redemption `id`, `null` while it holds none.
async fn at_server(drill: &Drill, id: &str) -> serde_json::Value {
    let held = drill
        .post(
            &format!("/v1/events/{}/redemptions/held", drill.event()),
            json!({ "redemption_ids": [id] }),
        )
        .await
        .unwrap();
    held["answers"][0].clone()
}

fn uploaded(node: &Node) -> (u64, u64, usize) {
    let s = node.uplink_status().unwrap();
    (s.uploaded, s.found_held, s.backlog)
}

async fn a_peers_admission_reaches_the_server_once_and_a_peer_without_uplink_through_the_others(
    backend: Backend,
) {
    let db = backend.database();
    let drill = Drill::start_with(
        db.as_ref()
            .map(|d| gatemesh_server::Database::Postgres(d.url.clone())),
        GRACE,
    )
    .await
    .unwrap();
    let (a, b) = (&drill.a, &drill.b);
    let codes = drill.tickets(3).await.unwrap();
    let c = drill.join("gate-c").await.unwrap();
    eventually("A, B and C are meshed and A and C stream", async || {
        connected(a, "gate-c")
            && connected(b, "gate-c")
            && connected(a, "gate-b")
            && [a, &c.node]
                .iter()
                .all(|g| g.uplink_status().is_some_and(|s| s.streaming))
    })
    .await;
    assert!(b.uplink_status().is_none(), "B has no uplink");

    // C's admission: C uploads it at once; A holds it too, and asks the server about it
    // after a tenth of its grace, to upload none: it finds it held well within the grace,
    // with nothing left to upload (where it waited out the whole grace, and counted it as
    // backlog meanwhile).
    let by_c = admit(&c.node, &codes[0]).await;
    gatemesh_testkit::poll_async(
        "A found C's admission held within its grace",
        GRACE,
        Duration::from_millis(50),
        async || uploaded(a) == (0, 1, 0),
    )
    .await;
    assert_eq!(at_server(&drill, &by_c).await["verdict"], "admit");
    assert_eq!(uploaded(&c.node).0, 1, "C uploaded its own");

    // B's admission: B has no uplink, so once their graces passed A or C finds the server
    // without it and uploads it; then neither has anything left to upload.
    let by_b = admit(b, &codes[1]).await;
    tokio::time::sleep(GRACE / 2).await;
    assert!(
        at_server(&drill, &by_b).await.is_null(),
        "within the grace nobody uploads a peer's admission"
    );
    eventually("the server holds B's admission", async || {
        at_server(&drill, &by_b).await["verdict"] == "admit"
    })
    .await;
    eventually("A and C have nothing left to upload", async || {
        uploaded(a).2 == 0 && uploaded(&c.node).2 == 0
    })
    .await;
    // B's next admission: A and C found B's last one missing at the server after their
    // grace, so they ask about B's after a tenth of it, and it is there well within the
    // grace (a whole grace at least, as it was, and the flag of a copy B admitted waited as
    // long).
    let by_b_next = admit(b, &codes[2]).await;
    gatemesh_testkit::poll_async(
        "the server holds B's next admission within the grace",
        GRACE,
        Duration::from_millis(50),
        async || at_server(&drill, &by_b_next).await["verdict"] == "admit",
    )
    .await;
    // Each gate's own part of its peers' (C's one and B's two for A; B's two for C): each
    // uploaded, or found held, once its grace passed (a gate that found B's first held
    // waits a whole grace for the next).
    eventually(
        "A and C have each done with their peers' admissions",
        async || {
            let ((ua, ha, left_a), (uc, hc, left_c)) = (uploaded(a), uploaded(&c.node));
            ua + ha == 3 && uc + hc == 3 && left_a == 0 && left_c == 0
        },
    )
    .await;
    let (ua, uc) = (uploaded(a).0, uploaded(&c.node).0);
    // C's own once; each of B's by one of them, or by both when both asked before either's
    // upload landed. Whoever did not upload it found it held.
    assert!(
        (3..=5).contains(&(ua + uc)),
        "uploaded: A {ua}, C {uc} (C's own, and B's two)"
    );

    c.node.shutdown().await;
    drill.shutdown().await;
}
