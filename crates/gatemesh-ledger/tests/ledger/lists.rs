//! The event's check-in lists as the server releases them into the ledger: every replica
//! ends on the latest release whatever order the releases reached it in, keeps it across a
//! restart, and audits where it took one; what is not the server's release of lists that
//! check is refused (the attacks are in `attacks.rs`).

use gatemesh_ledger::{Hlc, Ledger, LedgerError, ListsRecord};
use gatemesh_wire::ListsFile;

use super::{Gate, SERVER, T0, event, now, sync_pair};

/// A lists file of the test event: `main` for every product, `vip` for `products`.
pub(crate) fn lists_file(vip_products: &[&str]) -> ListsFile {
    serde_json::from_value(serde_json::json!({
        "event": event().as_str(),
        "time_zone": "Europe/Berlin",
        "default_product": "GA",
        "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
        "lists": [
            {"id": "main", "name": "Main entrance", "all_products": true},
            {"id": "vip", "name": "VIP area", "products": vip_products},
        ],
    }))
    .unwrap()
}

/// Release `version` of `lists`, as the server's identity signs it.
pub(crate) fn release(version: u64, lists: ListsFile, at_ms: i64) -> ListsRecord {
    let mut r = ListsRecord {
        version,
        lists,
        by: "organizer".into(),
        at_ms,
        hlc: Hlc {
            wall_ms: at_ms,
            counter: 0,
            node: SERVER.node().clone(),
        },
        sig: None,
    };
    SERVER.sign_lists(&event(), &mut r).unwrap();
    r
}

/// `ledger` takes `r` from its uplink: the server's certificate first, then the release.
fn from_uplink(ledger: &mut Ledger, r: &ListsRecord) -> Result<bool, LedgerError> {
    ledger.learn_device(&SERVER.device().cert_der)?;
    Ok(ledger.record_lists(r, now())?.is_some())
}

fn version(ledger: &Ledger) -> Option<u64> {
    ledger.lists().map(|l| l.record.version)
}

#[test]
fn every_replica_checks_in_with_the_latest_release_whatever_order_it_came_in() {
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    assert_eq!(version(&a.ledger), None);
    // Version 1 reaches A from the server, then B through A.
    assert!(from_uplink(&mut a.ledger, &release(1, lists_file(&["VIP"]), T0)).unwrap());
    assert_eq!(version(&a.ledger), Some(1));
    sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(version(&b.ledger), Some(1));
    let taken = b.ledger.lists().unwrap();
    let vip = taken
        .lists
        .file()
        .lists
        .iter()
        .find(|l| l.id.as_str() == "vip");
    assert_eq!(vip.unwrap().products.len(), 1);
    // Version 3 reaches B, and version 2 A, before they meet again: both end on 3.
    let v2 = release(2, lists_file(&["VIP", "GA"]), T0 + 1);
    let v3 = release(3, lists_file(&["GA"]), T0 + 2);
    assert!(from_uplink(&mut b.ledger, &v3).unwrap());
    assert!(from_uplink(&mut a.ledger, &v2).unwrap());
    assert_eq!(version(&a.ledger), Some(2));
    sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(version(&a.ledger), Some(3));
    assert_eq!(version(&b.ledger), Some(3));
    assert_eq!(a.ledger.lists().unwrap().record, v3);
    // Taking a release again writes nothing; an older one leaves the latest in place.
    assert!(!from_uplink(&mut a.ledger, &v3).unwrap());
    assert!(!from_uplink(&mut a.ledger, &v2).unwrap());
    assert_eq!(version(&a.ledger), Some(3));
    // A restart derives the same.
    let reopened = super::reopened(&mut a.ledger);
    assert_eq!(version(&reopened), Some(3));
    // Each gate audited the releases it took from its uplink, and the lines travel.
    let mut audited: Vec<String> = a
        .ledger
        .audit()
        .into_iter()
        .filter(|line| line.action == "lists:released")
        .map(|line| format!("{} by {}", line.detail, line.node == *b.ledger.node()))
        .collect();
    audited.sort();
    assert_eq!(
        audited,
        [
            "version 1 by false",
            "version 2 by false",
            "version 3 by true"
        ]
    );
}

#[test]
fn a_release_that_is_not_the_servers_or_does_not_check_is_refused_and_changes_nothing() {
    let mut a = Gate::new("A");
    // Lists of another event, signed by the server all the same.
    let mut other = lists_file(&["VIP"]);
    other.event = gatemesh_ticket::EventId::new("OTHER-2026").unwrap();
    let e = from_uplink(&mut a.ledger, &release(1, other, T0)).unwrap_err();
    assert!(e.to_string().contains("of event OTHER-2026"), "{e}");
    // (The server's certificate was learned; nothing after it is written.)
    let heads = a.ledger.heads();
    // A list naming a product the file does not declare.
    let e = from_uplink(&mut a.ledger, &release(1, lists_file(&["BACKSTAGE"]), T0)).unwrap_err();
    assert!(e.to_string().contains("does not check"), "{e}");
    // Dated next year.
    let ahead = now() + 365 * 86_400_000;
    let e = from_uplink(&mut a.ledger, &release(1, lists_file(&["VIP"]), ahead)).unwrap_err();
    assert!(e.to_string().contains("ahead of this gate's clock"), "{e}");
    // Signed by the server, then changed.
    let mut altered = release(1, lists_file(&["VIP"]), T0);
    altered.lists = lists_file(&["VIP", "GA"]);
    let e = from_uplink(&mut a.ledger, &altered).unwrap_err();
    assert!(e.to_string().contains("signature"), "{e}");
    // A gate's "release": its own record, which no peer would take.
    let mut own = release(1, lists_file(&["VIP"]), T0);
    own.hlc.node = a.ledger.node().clone();
    own.sig = None;
    let e = a.ledger.record_lists(&own, now()).unwrap_err();
    assert!(e.to_string().contains("not the event's server"), "{e}");
    assert_eq!(version(&a.ledger), None);
    assert_eq!(a.ledger.heads(), heads);
    assert!(a.ledger.audit().is_empty());
}
