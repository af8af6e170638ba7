//! Revoked devices: a revocation counts only as the event's CA signed it, spreads like any
//! record, and sets aside the revoked writer's records from its cut on — on every replica,
//! whatever order it learned them in — while the earlier ones still count.

use automerge::{AutoCommit, ObjType, ROOT, ReadDoc, transaction::Transactable};
use gatemesh_ledger::{CaSigner, Ledger, LedgerError, Revocation, Verdict};
use gatemesh_ticket::TicketId;
use gatemesh_wire::{CertFingerprint, DeviceName, Label, Note};

use super::{CA, Gate, T0, event, now, sync_pair};

fn ca() -> CaSigner {
    CaSigner::from_pem(&event(), &CA.cert_pem, &CA.key_pem).unwrap()
}

/// The revocation of `gate`'s device at `at_ms`, unsigned.
fn revocation_of(gate: &Gate, at_ms: i64, since_ms: Option<i64>) -> Revocation {
    let device = gate.ledger.own_device().unwrap();
    Revocation {
        node: device.node.clone(),
        name: DeviceName::parse(&device.peer.name).unwrap(),
        cert: CertFingerprint::of(&device.cert_der),
        at_ms,
        since_ms,
        by: Label::parse("organizer").unwrap(),
        reason: Note::parse("stolen").unwrap(),
        sig: None,
    }
}

fn signed(mut r: Revocation) -> Revocation {
    ca().sign(&mut r).unwrap();
    r
}

fn tid(s: &str) -> TicketId {
    TicketId::new(s).unwrap()
}

#[test]
fn a_revocation_the_event_ca_did_not_sign_is_refused() {
    let (mut a, c) = (Gate::new("A"), Gate::new("C"));
    // Unsigned.
    let r = revocation_of(&c, T0, None);
    assert!(matches!(
        a.ledger.record_revocation(&r),
        Err(LedgerError::Refused(_))
    ));
    // Signed by another CA (a gate's key would do no better: it is no CA key of this event).
    let other = gatemesh_mesh::pki::create_ca("ROCK-2026", 30).unwrap();
    assert!(CaSigner::from_pem(&event(), &CA.cert_pem, &other.key_pem).is_err());
    let forger = CaSigner::from_pem(&event(), &other.cert_pem, &other.key_pem).unwrap();
    let mut forged = r.clone();
    forger.sign(&mut forged).unwrap();
    assert!(matches!(
        a.ledger.record_revocation(&forged),
        Err(LedgerError::Refused(_))
    ));
    // Signed by this CA, then altered.
    let mut altered = signed(r.clone());
    altered.since_ms = Some(0);
    assert!(matches!(
        a.ledger.record_revocation(&altered),
        Err(LedgerError::Refused(_))
    ));
    // Signed by this CA's key, for another event.
    let jazz = gatemesh_ticket::EventId::new("JAZZ-2026").unwrap();
    let elsewhere = CaSigner::from_pem(&jazz, &CA.cert_pem, &CA.key_pem).unwrap();
    let mut replayed = r.clone();
    elsewhere.sign(&mut replayed).unwrap();
    assert!(matches!(
        a.ledger.record_revocation(&replayed),
        Err(LedgerError::Refused(_))
    ));
    assert!(a.ledger.revocations().is_empty());
    // The genuine one is taken, once.
    let good = signed(r);
    assert!(a.ledger.record_revocation(&good).unwrap().is_some());
    assert!(a.ledger.record_revocation(&good).unwrap().is_none());
    assert_eq!(a.ledger.revocations(), &[good]);
}

#[test]
fn a_revocation_a_peer_forged_into_its_document_is_refused_whole() {
    let (mut a, mut c) = (Gate::new("A"), Gate::new("C"));
    let t = tid("T1");
    c.scan(&t, "s", T0);
    // C writes its own "revocation" of A straight into its document, and hands it over.
    let mut doc = AutoCommit::load(&c.ledger.save()).unwrap();
    let map = match doc.get(ROOT, "revocations").unwrap() {
        Some((automerge::Value::Object(ObjType::Map), id)) => id,
        other => panic!("no revocations map: {other:?}"),
    };
    let mut r = revocation_of(&a, T0, Some(0));
    r.sig = Some("AAAA".into());
    doc.put(&map, r.key(), serde_json::to_string(&r).unwrap())
        .unwrap();
    doc.commit();
    let err = a.ledger.merge_saved(&doc.save(), now()).unwrap_err();
    assert!(matches!(err, LedgerError::Refused(_)), "{err}");
    assert!(a.ledger.revocations().is_empty());
    assert!(
        a.ledger.redemptions().is_empty(),
        "nothing of the file was taken"
    );
    // Without the forgery, C's records are taken.
    a.learn(&mut c);
    assert_eq!(a.ledger.redemptions().len(), 1);
}

#[test]
fn a_revoked_writers_records_from_the_revocation_on_do_not_count() {
    let (mut a, mut c) = (Gate::new("A"), Gate::new("C"));
    let (before, after) = (tid("BEFORE"), tid("AFTER"));
    assert_eq!(c.scan(&before, "s", T0).verdict, Verdict::Admit);
    assert_eq!(c.scan(&after, "s", T0 + 2_000).verdict, Verdict::Admit);
    let revocation = signed(revocation_of(&c, T0 + 1_000, None));
    // A learns the revocation first and C's records after; B the other way round.
    let mut b = Gate::new("B");
    a.ledger.record_revocation(&revocation).unwrap();
    a.learn(&mut c);
    b.learn(&mut c);
    assert_eq!(b.scan(&after, "s", T0 + 3_000).verdict, Verdict::Duplicate);
    let mut b = Gate::new("B");
    b.learn(&mut c);
    b.ledger.record_revocation(&revocation).unwrap();
    for g in [&mut a, &mut b] {
        // Kept in the document, set aside, shown.
        assert_eq!(g.ledger.redemptions().len(), 2);
        let aside = g.ledger.set_aside();
        assert_eq!(aside.len(), 1);
        assert_eq!(aside[0].tid, after);
        assert!(g.ledger.ticket(&after).redemptions.is_empty());
        // Before the cut it still counts.
        assert_eq!(g.ledger.ticket(&before).redemptions.len(), 1);
        let tally = g.ledger.entry_tally().activity(T0, 60_000, 1);
        assert_eq!(
            tally.tickets_entered, 1,
            "only the entry before the cut is tallied"
        );
    }
    assert_eq!(a.scan(&after, "s", T0 + 3_000).verdict, Verdict::Admit);
    assert_eq!(a.scan(&before, "s", T0 + 3_000).verdict, Verdict::Duplicate);
    // An admission of the revoked gate concurrent with A's raises no flag.
    c.scan(&tid("BOTH"), "s", T0 + 4_000);
    a.scan(&tid("BOTH"), "s", T0 + 4_000);
    a.learn(&mut c);
    assert_eq!(a.ledger.flagged().count(), 0);
}

#[test]
fn since_sets_aside_records_made_before_the_revocation() {
    let (mut a, mut c) = (Gate::new("A"), Gate::new("C"));
    let (early, middle) = (tid("EARLY"), tid("MIDDLE"));
    c.scan(&early, "s", T0);
    c.scan(&middle, "s", T0 + 2_000);
    a.learn(&mut c);
    let r = signed(revocation_of(&c, T0 + 5_000, Some(T0 + 1_000)));
    a.ledger.record_revocation(&r).unwrap();
    assert_eq!(a.ledger.ticket(&early).redemptions.len(), 1);
    assert!(a.ledger.ticket(&middle).redemptions.is_empty());
    assert_eq!(a.scan(&middle, "s", T0 + 6_000).verdict, Verdict::Admit);
}

#[test]
fn a_revocation_spreads_by_sync_and_survives_a_restart() {
    let (mut a, mut b, mut c) = (Gate::new("A"), Gate::new("B"), Gate::new("C"));
    let t = tid("LATE");
    c.scan(&t, "s", T0 + 2_000);
    b.learn(&mut c);
    let r = signed(revocation_of(&c, T0 + 1_000, None));
    a.ledger.record_revocation(&r).unwrap();
    assert!(b.ledger.ticket(&t).redemptions.len() == 1);
    sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(b.ledger.revocations(), std::slice::from_ref(&r));
    assert!(b.ledger.ticket(&t).redemptions.is_empty());
    assert_eq!(b.ledger.set_aside().len(), 1);
    assert!(b.ledger.revoked_certs().contains(&r.cert.0));
    // The revoked device, told, knows it is.
    assert!(!c.ledger.own_revoked());
    sync_pair(&mut b.ledger, &mut c.ledger);
    assert!(c.ledger.own_revoked());
    assert!(!b.ledger.own_revoked());
    let reopened: Ledger = super::reopened(&mut b.ledger);
    assert!(reopened.ticket(&t).redemptions.is_empty());
    assert_eq!(reopened.set_aside().len(), 1);
}
