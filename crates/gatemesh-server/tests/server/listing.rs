//! The organizer's listing of an event's tickets, a page at a time: every ticket of the event
//! once, in id order, each as its own read gives it (admissions without their records); the
//! organizer's alone; bad paging refused.

use std::collections::BTreeMap;

use gatemesh_testkit::pg::Backend;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Running, redemption};

/// Every page from the first, `limit` at a time: the tickets and how many pages.
async fn every_page(s: &Running, eid: &str, limit: usize) -> (Vec<Value>, usize) {
    let (mut tickets, mut pages) = (Vec::new(), 0);
    let mut path = format!("/v1/events/{eid}/tickets?limit={limit}");
    loop {
        let (status, page) = s.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        let on_page = page["tickets"].as_array().unwrap();
        assert!(on_page.len() <= limit, "{page}");
        tickets.extend(on_page.iter().cloned());
        match page["next"].as_str() {
            Some(next) => {
                assert_eq!(on_page.len(), limit, "a page before the last is full");
                assert_eq!(on_page.last().unwrap()["tid"], next);
                path = format!("/v1/events/{eid}/tickets?limit={limit}&after={next}");
            }
            None => return (tickets, pages),
        }
    }
}

/// A ticket's own read with its admissions' records taken out: what the listing gives.
fn without_records(mut ticket: Value) -> Value {
    for a in ticket["admissions"].as_array_mut().unwrap() {
        a.as_object_mut().unwrap().remove("record");
    }
    ticket
}

pub(crate) async fn the_ticket_listing_pages_through_every_ticket_as_each_reads(backend: Backend) {
    let s = Running::start(backend).await;
    let tickets = s.event_with_tickets("LIST", 23).await;
    s.event_with_tickets("OTHER", 4).await;
    let tid = |i: usize| tickets[i]["tid"].as_str().unwrap().to_owned();
    let redeem = "/v1/events/LIST/redemptions";
    // What the listing must show: an online admission and its duplicate, a journal's two
    // admissions of one ticket (flagged), a reverted one, a void and a transfer.
    for (rid, i, gate) in [("l-1", 0, "North"), ("l-2", 0, "South")] {
        let (status, _) = s.post(redeem, redemption(rid, &json!(tid(i)), gate)).await;
        assert_eq!(status, StatusCode::OK);
    }
    let journal = json!({ "redemptions": [
        redemption("l-3", &json!(tid(1)), "North"),
        redemption("l-4", &json!(tid(1)), "South"),
        redemption("l-5", &json!(tid(2)), "North"),
    ] });
    assert_eq!(s.post(redeem, journal).await.0, StatusCode::OK);
    let revert = json!({ "actor": "Kim", "reason": "wrong person" });
    let path = format!("/v1/events/LIST/tickets/{}/revert", tid(2));
    assert_eq!(s.post(&path, revert).await.0, StatusCode::OK);
    let path = format!("/v1/events/LIST/tickets/{}/void", tid(3));
    assert_eq!(
        s.post(&path, json!({ "reason": "refund" })).await.0,
        StatusCode::OK
    );
    let path = format!("/v1/events/LIST/tickets/{}/transfer", tid(4));
    let (status, new) = s.post(&path, json!({ "holder": "Robin" })).await;
    assert_eq!(status, StatusCode::CREATED, "{new}");

    // Pages of 5 (24 tickets: 5 pages, the last of 4), one page of all, and pages of one
    // (each ticket first and last on its page; a last page empty).
    let (listed, pages) = every_page(&s, "LIST", 5).await;
    assert_eq!((listed.len(), pages), (24, 5));
    let (whole, pages) = every_page(&s, "LIST", 1000).await;
    assert_eq!(pages, 1);
    assert_eq!(whole, listed, "pages of 5 and one page list the same");
    let (singles, pages) = every_page(&s, "LIST", 1).await;
    assert_eq!(pages, 25);
    assert_eq!(singles, listed, "pages of 5 and of one list the same");
    // Each once, in id order, and only this event's.
    let ids: Vec<&str> = listed.iter().map(|t| t["tid"].as_str().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(listed.iter().all(|t| t["eid"] == "LIST"));
    let mut expected: Vec<String> = (0..23).map(tid).collect();
    expected.push(new["tid"].as_str().unwrap().to_owned());
    expected.sort();
    assert_eq!(ids, expected);
    // Each as its own read gives it, records aside.
    let mut by_id = BTreeMap::new();
    for t in &listed {
        let id = t["tid"].as_str().unwrap();
        let (status, alone) = s.get(&format!("/v1/events/LIST/tickets/{id}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(*t, without_records(alone), "{id}");
        by_id.insert(id.to_owned(), t.clone());
    }
    let admitted = |i: usize| -> Vec<String> {
        by_id[&tid(i)]["admissions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["redemption_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(admitted(0), ["l-1"]);
    assert_eq!(admitted(1), ["l-3", "l-4"]);
    assert_eq!(by_id[&tid(1)]["flagged"], true);
    assert!(admitted(2).is_empty(), "reverted");
    assert_eq!(by_id[&tid(3)]["status"], "void");
    assert_eq!(by_id[&tid(4)]["status"], "transferred");
    assert_eq!(by_id[&tid(4)]["transferred_to"], new["tid"]);
    // After the last ticket: an empty last page.
    let last = ids.last().unwrap();
    let (status, page) = s
        .get(&format!("/v1/events/LIST/tickets?after={last}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page, json!({ "tickets": [], "next": null }));

    // Bad paging, an unknown event, and no organizer: refused, typed.
    for (query, want) in [
        ("?limit=0", StatusCode::BAD_REQUEST),
        ("?limit=1001", StatusCode::BAD_REQUEST),
        ("?limit=-1", StatusCode::BAD_REQUEST),
        ("?limit=ten", StatusCode::BAD_REQUEST),
        ("?after=not%20an%20id", StatusCode::BAD_REQUEST),
        ("?cursor=3", StatusCode::BAD_REQUEST),
    ] {
        let (status, body) = s.get(&format!("/v1/events/LIST/tickets{query}")).await;
        assert_eq!(status, want, "{query}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{query}: {body}");
    }
    let (status, body) = s.get("/v1/events/NOPE/tickets").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let gate = s.paired("LIST", "North-1", "gate").await;
    for token in [None, Some(gate.as_str())] {
        let mut r = s.client.get(format!("{}/v1/events/LIST/tickets", s.base));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{token:?}");
        let body: Value = r.json().await.unwrap();
        assert!(body.get("tickets").is_none(), "{body}");
    }
    s.stop().await;
}
