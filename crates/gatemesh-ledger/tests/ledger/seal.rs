//! A writer's seal over its own history (`seal.rs`): when a gate writes one, and what a gate
//! that takes a sealed history verifies — only what no seal vouches for, and it ends where
//! verifying everything ends. (What a seal must not let through: `attacks.rs`.)

use gatemesh_ledger::{
    Durability, Ledger, Role, SEAL_AFTER_MS, SEAL_EVERY, Signer, Store, Verdict,
};
use gatemesh_ticket::TicketId;

use super::{CA, Gate, T0, event, genesis, now, prepared, sync_pair, trust_of, whole_message};

/// The seal lines of a ledger's audit trail.
fn seals(l: &Ledger) -> usize {
    l.audit().iter().filter(|a| a.action == "seal").count()
}

/// North admits `n` tickets, sealing when due as a gate's writer does after each batch.
fn north_with(n: usize) -> Gate {
    let mut north = Gate::new("North");
    for i in 0..n {
        let at = T0 + i as i64;
        north.scan(&TicketId::generate(), "n1", at);
        north.ledger.seal_if_due(at).unwrap();
    }
    north
}

#[test]
fn a_gate_seals_every_few_hundred_changes_or_soon_after_its_last_one() {
    // North's identity, to open its ledger again after a restart.
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&CA.cert_pem, &CA.key_pem).unwrap();
    let id = gatemesh_mesh::identity::PeerId::new(event().as_str(), Role::Gate, "North");
    let pem = ca.enroll(&id, 30).unwrap();
    let signer = || Signer::from_pem(&trust_of(&event()), &pem.cert_pem, &pem.key_pem).unwrap();
    let opened = |saved: Option<&[u8]>| {
        let signer = signer();
        let mut l = Ledger::open(
            &event(),
            signer.node().clone(),
            &genesis(&event()),
            saved,
            [],
        )
        .unwrap();
        l.sign_with(signer, trust_of(&event())).unwrap();
        l
    };
    let mut north = Gate {
        name: "North",
        ledger: opened(None),
        policy: Default::default(),
        late: Default::default(),
    };
    for i in 0..SEAL_EVERY - 1 {
        let at = T0 + i as i64;
        north.scan(&TicketId::generate(), "n1", at);
        north.ledger.seal_if_due(at).unwrap();
    }
    assert_eq!(seals(&north.ledger), 0, "not due yet");
    north.scan(&TicketId::generate(), "n1", T0 + 1_000);
    let seal = north.ledger.seal_if_due(T0 + 1_000).unwrap();
    assert!(seal.is_some(), "the {SEAL_EVERY}th change of its own");
    let line = north.ledger.audit().pop().unwrap();
    assert_eq!(
        (line.action.as_str(), line.tid.as_ref(), &line.node),
        ("seal", None, north.ledger.node())
    );
    assert!(line.detail.starts_with("vouches for its changes through "));
    // Nothing new, nothing to seal, however long it waits.
    let later = T0 + 10 * SEAL_AFTER_MS;
    assert!(north.ledger.seal_if_due(later).unwrap().is_none());
    // One change: sealed once SEAL_AFTER_MS have passed since it was first seen unsealed.
    north.scan(&TicketId::generate(), "n1", later);
    assert!(north.ledger.seal_if_due(later).unwrap().is_none());
    assert!(
        north
            .ledger
            .seal_if_due(later + SEAL_AFTER_MS - 1)
            .unwrap()
            .is_none()
    );
    assert!(
        north
            .ledger
            .seal_if_due(later + SEAL_AFTER_MS)
            .unwrap()
            .is_some()
    );
    assert_eq!(seals(&north.ledger), 2);
    // Reopened (a restart) with a seal as its last change, it has nothing to seal.
    let mut reopened = opened(Some(&north.ledger.save()));
    assert!(
        reopened
            .seal_if_due(later + 10 * SEAL_AFTER_MS)
            .unwrap()
            .is_none()
    );
    // Its clock read back from ticket records only, a seal made at the very time of its last
    // one takes a key of its own, never the earlier line's (peers refuse overwrites).
    assert!(reopened.seal(later + SEAL_AFTER_MS).unwrap().is_some());
    assert_eq!(seals(&reopened), 3);
    // Reopened with an admission as its last change, it seals once SEAL_AFTER_MS have
    // passed, as before the restart.
    let mut admitted = Gate {
        name: "North",
        ledger: opened(Some(&north.ledger.save())),
        policy: Default::default(),
        late: Default::default(),
    };
    let at = later + 2 * SEAL_AFTER_MS;
    admitted.scan(&TicketId::generate(), "n1", at);
    let mut again = opened(Some(&admitted.ledger.save()));
    assert!(again.seal_if_due(at).unwrap().is_none());
    assert!(again.seal_if_due(at + SEAL_AFTER_MS).unwrap().is_some());
    let mut checker = Gate::new("East");
    sync_pair(&mut reopened, &mut checker.ledger);
    assert_eq!(seals(&checker.ledger), 3, "and a peer takes all three");
    // A gate with no mesh identity has nothing to sign a seal with.
    let mut unsigned = Gate {
        name: "Plain",
        ledger: Ledger::open(
            &event(),
            gatemesh_ledger::NodeId::random(),
            &genesis(&event()),
            None,
            [],
        )
        .unwrap(),
        policy: Default::default(),
        late: Default::default(),
    };
    unsigned.scan(&TicketId::generate(), "p1", T0);
    assert!(unsigned.ledger.seal(T0 + SEAL_AFTER_MS).unwrap().is_none());
    assert_eq!(seals(&unsigned.ledger), 0);
}

#[test]
fn a_late_gate_verifies_only_the_signatures_no_seal_vouches_for_and_ends_where_verifying_all_does()
{
    // North admitted 600: sealed after 256 and after 512 of its own changes (the second seal
    // reaching the first), 88 admissions after the last seal.
    let n = 600;
    let mut north = north_with(n);
    assert_eq!(seals(&north.ledger), 2);
    let sealed_admissions = 2 * SEAL_EVERY;
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    let whole = whole_message(&mut doc);

    // A late gate checking ahead, as a gate does off its writer: every one of North's
    // changes the seals reach is taken on the seals' word, its records (and the first seal
    // line among them) too; the rest are verified change by change (the 88 admissions and
    // the second seal's change, each signed by North, vouching for North's records in it),
    // and both seals, each verified before it counts.
    let mut west = Gate::new("West");
    let mut parts = prepared(&whole, west.ledger.node());
    assert_eq!(parts.sealed(), sealed_admissions + 1);
    assert_eq!(parts.prechecked(), n - sealed_admissions + 1 + 2);
    assert!(parts.is_ready_whole(), "checked and derived whole");
    west.ledger
        .take_whole(&mut parts, now())
        .expect("taken whole");
    west.ledger
        .finish_sync(&mut Default::default(), parts)
        .unwrap();

    // A gate taking the same history by the sync protocol, each message checked in one step
    // (no precheck): the seals come with the changes they vouch for, and the same rule holds.
    let mut east = Gate::new("East");
    sync_pair(&mut north.ledger, &mut east.ledger);

    // And one that verifies every signature: the history without its seals reaches nothing
    // but what North wrote, signed.
    for gate in [&mut west, &mut east] {
        assert_eq!(gate.ledger.redemption_count(), n);
        assert_eq!(seals(&gate.ledger), 2);
        assert_eq!(gate.ledger.redemptions(), north.ledger.redemptions());
        assert_eq!(
            super::sorted_heads(&mut gate.ledger),
            super::sorted_heads(&mut north.ledger)
        );
    }
    // A ticket North admitted is a duplicate at both.
    let first = north.ledger.redemptions()[0].tid.clone();
    assert_eq!(west.scan(&first, "w1", now()).verdict, Verdict::Duplicate);
    assert_eq!(east.scan(&first, "e1", now()).verdict, Verdict::Duplicate);
}

#[test]
fn a_whole_ledger_is_stored_as_the_peers_document_and_what_the_gate_held_besides() {
    // West compacted its first 40 admissions into a snapshot and stored 10 more as rows;
    // North, which holds 300 of its own, has none of West's. West takes North's whole ledger,
    // admitting 3 while it is checked and 2 more before the batch is stored; a compaction
    // West started before is still saving. Stored as North's document plus what West held
    // besides, it reopens as the very ledger West holds, and the late compaction changes
    // nothing.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gate.sqlite");
    let mut store = Store::open(&path, Durability::Power).unwrap();
    store.load_or_init(&event()).unwrap();
    let signer = super::device_of(&event(), Role::Gate, "West");
    store.set_node(signer.node()).unwrap();
    let stored = store.load_or_init(&event()).unwrap();
    let mut west = Ledger::open(&event(), stored.node, &stored.genesis, None, []).unwrap();
    west.sign_with(signer, trust_of(&event())).unwrap();
    let admit = |l: &mut Ledger, at: i64| {
        let tid = TicketId::generate();
        let r = super::redemption(l, &tid, at);
        (tid, l.record_redemption(&r).unwrap().unwrap())
    };
    let mut own = Vec::new();
    for i in 0..40 {
        let (tid, c) = admit(&mut west, T0 + i);
        store.append(&[c]).unwrap();
        own.push(tid);
    }
    store.compact(&west.snapshot()).unwrap();
    for i in 0..10 {
        let (tid, c) = admit(&mut west, T0 + 40 + i);
        store.append(&[c]).unwrap();
        own.push(tid);
    }

    let mut north = north_with(300);
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    let mut parts = prepared(&whole_message(&mut doc), west.node());
    assert!(parts.is_ready_whole());
    assert_eq!(west.hand_besides(&mut parts), 50, "all of West's own");
    for i in 0..3 {
        let (tid, c) = admit(&mut west, T0 + 100 + i);
        store.append(&[c]).unwrap();
        own.push(tid);
    }
    // A compaction starts, copying West as it is: every row it stored so far.
    let (saving, saving_through) = (west.to_save(), store.last_seq().unwrap());
    parts.take_besides(now());
    let whole = west.take_whole(&mut parts, now()).expect("taken whole");
    assert_eq!(whole.new, 300 + 1, "North's admissions and its seal");
    assert_eq!(
        whole.rows.len(),
        53,
        "West's 50 in a first round, its 3 since in the last"
    );
    west.finish_sync(&mut Default::default(), parts).unwrap();
    let mut batch = Vec::new();
    for i in 0..2 {
        let (tid, c) = admit(&mut west, T0 + 200 + i);
        batch.push(c);
        own.push(tid);
    }
    store
        .commit_replacing(
            Some((&whole.snapshot, &whole.rows)),
            &batch,
            &[],
            gatemesh_ledger::Wait::AsOpened,
        )
        .unwrap();
    assert_eq!(store.pending_changes().unwrap(), 55);
    store
        .compact_through(&saving.save(), saving_through)
        .unwrap();
    assert_eq!(
        store.pending_changes().unwrap(),
        55,
        "a compaction saved before changes nothing"
    );

    let mut reopened = super::reopened_from(store.load_or_init(&event()).unwrap());
    assert_eq!(reopened.redemption_count(), 300 + own.len());
    for tid in &own {
        assert_eq!(reopened.ticket(tid).redemptions.len(), 1);
    }
    for r in north.ledger.redemptions() {
        assert_eq!(reopened.ticket(&r.tid).redemptions.len(), 1);
    }
    assert_eq!(
        super::sorted_heads(&mut reopened),
        super::sorted_heads(&mut west),
        "the store holds every change West holds"
    );
}
