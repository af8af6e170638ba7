//! Tickets issued to a holder in an order, for gates to find a guest by: the manifest names
//! them only for an event whose organizer lets gates find guests; a database from before
//! these columns existed is brought up to date.

use gatemesh_testkit::pg::Backend;
use reqwest::StatusCode;
use serde_json::json;

use super::Running;

/// A database of the schema before finding guests (SQLite version 3, PostgreSQL version 2)
/// is brought up to date when a server opens it: what it held stays, and the new columns
/// work.
pub(crate) async fn a_database_of_the_previous_schema_is_brought_up_to_date(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let db = backend.database();
    let s = Running::on(dir.path(), db.as_ref()).await;
    let before = s.event_with_tickets("OLD", 1).await;
    s.stop().await;
    // Back to the old layout, as an older gatemesh left it.
    let old = "ALTER TABLE events DROP COLUMN guest_search;
               ALTER TABLE tickets DROP COLUMN order_ref;
               ALTER TABLE tickets DROP COLUMN product;";
    match &db {
        None => {
            let conn = rusqlite::Connection::open(dir.path().join("server.sqlite")).unwrap();
            conn.execute_batch(old).unwrap();
            conn.pragma_update(None, "user_version", 3).unwrap();
        }
        Some(db) => {
            // The blocking client runs a runtime of its own: off this one's threads.
            let url = db.url.clone();
            tokio::task::spawn_blocking(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                client.batch_execute(old).unwrap();
                client
                    .execute(
                        "UPDATE gatemesh_meta SET value = '2' WHERE key = 'schema'",
                        &[],
                    )
                    .unwrap();
            })
            .await
            .unwrap();
        }
    }
    let s = Running::on(dir.path(), db.as_ref()).await;
    let tid = before[0]["tid"].as_str().unwrap();
    let (status, kept) = s.get(&format!("/v1/events/OLD/tickets/{tid}")).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let (status, issued) = s
        .post(
            "/v1/events/OLD/tickets",
            json!({ "count": 1, "holder": "Ada Lovelace", "order": "ORD-1", "product": "2" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    assert_eq!(issued["tickets"][0]["order"], "ORD-1");
    let (status, made) = s
        .post(
            "/v1/events",
            json!({ "id": "NEW", "name": "New", "guest_search": true }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["guest_search"], true);
    s.stop().await;
}

/// Tickets issued to a holder in an order: the manifest names them only for an event that
/// lets gates find guests; a name or order a gate could not show is refused.
pub(crate) async fn holders_and_orders_reach_gates_only_where_the_organizer_allows(
    backend: Backend,
) {
    let s = Running::start(backend).await;
    for (eid, search) in [("OPEN", true), ("CLOSED", false)] {
        let (status, _) = s
            .post(
                "/v1/events",
                json!({ "id": eid, "name": eid, "guest_search": search }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, issued) = s
            .post(
                &format!("/v1/events/{eid}/tickets"),
                json!({ "count": 1, "format": "jwt", "holder": "Ada Lovelace",
                        "order": "ORD-1001", "product": "VIP" }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{issued}");
        assert_eq!(issued["tickets"][0]["holder"], "Ada Lovelace");
        let (_, manifest) = s.get(&format!("/v1/events/{eid}/manifest")).await;
        let entry = &manifest["tickets"][0];
        if search {
            assert_eq!(
                (&entry["holder"], &entry["order"], &entry["product"]),
                (&json!("Ada Lovelace"), &json!("ORD-1001"), &json!("VIP")),
                "{manifest}"
            );
        } else {
            let text = manifest.to_string();
            assert!(
                !text.contains("Lovelace") && !text.contains("ORD-1001"),
                "{text}"
            );
        }
    }
    for body in [
        json!({ "count": 1, "holder": "" }),
        json!({ "count": 1, "holder": "x".repeat(201) }),
        json!({ "count": 1, "order": "a\u{7}b" }),
        json!({ "count": 1, "order": "o".repeat(65) }),
    ] {
        let (status, answer) = s.post("/v1/events/OPEN/tickets", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }
    s.stop().await;
}
