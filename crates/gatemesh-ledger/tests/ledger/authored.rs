//! Nobody makes a change in another device's name (`authored.rs`): a stolen gate that relays
//! a writer's change altered — its genuine, signed records re-wrapped under another hash —
//! or a change of its own under the writer's name, is refused; the writer's own change, and
//! everything it writes after, still comes in. Before change signatures, a gate that took
//! such a change held it as the writer's for good and refused the real one
//! (`DuplicateSeqNumber`), and with it every later change of that writer.

use automerge::{AutoCommit, Change, ChangeHash, ExpandedChange};
use gatemesh_ledger::{Ledger, LedgerError, PeerSync};
use gatemesh_testkit::author;
use gatemesh_ticket::TicketId;

use super::{Gate, T0, now};

/// North admitted a ticket (one change, signed by North); a stolen gate holds it; East,
/// the victim, holds everything but that change. The change, as North wrote it.
struct Scene {
    north: Gate,
    thief: Gate,
    thief_key: p256::ecdsa::SigningKey,
    east: Gate,
    genuine: Change,
}

fn scene() -> Scene {
    let mut north = Gate::new("North");
    let (mut thief, thief_key) = super::gate_with_key("Thief");
    let mut east = Gate::new("East");
    north.scan(&TicketId::generate(), "n1", T0);
    super::sync_pair(&mut north.ledger, &mut thief.ledger);
    super::sync_pair(&mut north.ledger, &mut east.ledger);
    super::sync_pair(&mut thief.ledger, &mut east.ledger);
    let before = north.ledger.heads();
    north.scan(&TicketId::generate(), "n1", T0 + 1);
    super::sync_pair(&mut north.ledger, &mut thief.ledger);
    let genuine = changes_since(&mut north.ledger, &before).remove(0);
    Scene {
        north,
        thief,
        thief_key,
        east,
        genuine,
    }
}

fn changes_since(l: &mut Ledger, heads: &[ChangeHash]) -> Vec<Change> {
    AutoCommit::load(&l.save()).unwrap().get_changes(heads)
}

/// Pushes `change` to `to`, as a peer pushes what it makes or relays.
fn push(to: &mut Ledger, change: &Change) -> Result<(), LedgerError> {
    to.receive_changes(&mut PeerSync::default(), change.raw_bytes(), now())
        .map(|_| ())
}

/// `change` with `message`, encoded again: the same records, actor and sequence number,
/// under another hash.
fn rewrapped(change: &Change, message: Option<String>) -> Change {
    let mut e: ExpandedChange = change.decode();
    e.message = message;
    let out = Change::from(e);
    assert_ne!(out.hash(), change.hash());
    assert_eq!(
        (out.actor_id(), out.seq()),
        (change.actor_id(), change.seq())
    );
    out
}

/// The other, high-s form of a low-s signature: as good an ECDSA signature of the same
/// bytes (ring verifies it).
fn high_s(low: &p256::ecdsa::Signature) -> p256::ecdsa::Signature {
    p256::ecdsa::Signature::from_scalars(low.r().to_bytes(), (-*low.s()).to_bytes()).unwrap()
}

/// `change`'s message signed with `key`, as its author's signature is made, in the low-s
/// form, or the high-s one when `high`.
fn signed_with(change: &Change, key: &p256::ecdsa::SigningKey, high: bool) -> String {
    use p256::ecdsa::signature::Signer as _;
    let sig: p256::ecdsa::Signature = key.sign(&author::covered(change, "ROCK-2026"));
    let low = sig.normalize_s().unwrap_or(sig);
    author::signature_text(&if high { high_s(&low) } else { low })
}

/// The signature of North's genuine change in its other, high-s form, under another change
/// hash.
fn high_s_of(genuine: &Change) -> String {
    let low = author::signature_of(genuine).unwrap();
    assert!(low.normalize_s().is_none(), "a gate writes the low-s form");
    author::signature_text(&high_s(&low))
}

#[test]
fn a_writers_change_rewrapped_by_another_device_is_refused_and_the_real_one_still_comes() {
    let Scene {
        mut north,
        thief_key,
        mut east,
        genuine,
        ..
    } = scene();
    let forgeries = [
        (
            rewrapped(&genuine, Some("redemption".into())),
            "an unsigned change",
        ),
        (rewrapped(&genuine, None), "an unsigned change"),
        (
            rewrapped(&genuine, Some(signed_with(&genuine, &thief_key, false))),
            "a change in the name of \"gate\" that it did not sign",
        ),
        (
            rewrapped(&genuine, Some(high_s_of(&genuine))),
            "high-s form",
        ),
    ];
    let heads = east.ledger.heads();
    let count = east.ledger.redemption_count();
    for (forged, expect) in &forgeries {
        match push(&mut east.ledger, forged) {
            Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
            other => panic!("a re-wrapped change was taken: {other:?} (wanted {expect:?})"),
        }
        // Whole, in a file: refused the same.
        let mut doc = AutoCommit::load(&east.ledger.save()).unwrap();
        doc.apply_changes([forged.clone()]).unwrap();
        let why = east.ledger.merge_saved(&doc.save(), now()).unwrap_err();
        assert!(why.to_string().contains(expect), "{why}");
        assert_eq!(east.ledger.heads(), heads);
        assert_eq!(east.ledger.redemption_count(), count);
    }
    // North's own change, relayed unaltered by anyone, or synced: taken, and what North
    // writes after it too.
    push(&mut east.ledger, &genuine).unwrap();
    assert_eq!(east.ledger.redemption_count(), count + 1);
    let tid = TicketId::generate();
    north.scan(&tid, "n1", T0 + 2);
    super::sync_pair(&mut north.ledger, &mut east.ledger);
    assert_eq!(east.ledger.ticket(&tid).redemptions.len(), 1);
    assert_eq!(
        super::sorted_heads(&mut east.ledger),
        super::sorted_heads(&mut north.ledger)
    );
}

#[test]
fn a_change_of_a_devices_own_under_another_devices_name_is_refused() {
    // The thief's own admission (its record signed by itself) or nothing at all, written
    // under North's actor with North's next sequence number: either would have taken the
    // number from North's real change. Refused, unsigned or signed by the thief.
    let Scene {
        mut north,
        mut thief,
        thief_key,
        mut east,
        ..
    } = scene();
    let tid = TicketId::generate();
    let before = thief.ledger.heads();
    thief.scan(&tid, "t1", T0 + 3);
    let own = changes_since(&mut thief.ledger, &before).remove(0);
    let heads = east.ledger.heads();
    let north_actor = north.ledger.actor().clone();
    let north_next = north.ledger.summary().tip(&north_actor).unwrap().seq + 1;
    let as_north = |ops: bool, message: Option<String>| {
        let mut e = own.decode();
        e.actor_id = north_actor.clone();
        e.seq = north_next;
        // On what East holds, so that East checks it now rather than waiting for more.
        e.deps = heads.clone();
        e.deps.sort();
        if !ops {
            e.operations.clear();
        }
        e.message = message;
        Change::from(e)
    };
    for ops in [true, false] {
        let unsigned = as_north(ops, None);
        let why = push(&mut east.ledger, &unsigned).unwrap_err();
        assert!(why.to_string().contains("an unsigned change"), "{why}");
        let by_thief = as_north(ops, Some(signed_with(&unsigned, &thief_key, false)));
        let why = push(&mut east.ledger, &by_thief).unwrap_err();
        assert!(why.to_string().contains("that it did not sign"), "{why}");
    }
    assert_eq!(east.ledger.heads(), heads);
    // North's next change takes that sequence number, and comes in.
    north.scan(&TicketId::generate(), "n1", T0 + 4);
    super::sync_pair(&mut north.ledger, &mut east.ledger);
    assert!(east.ledger.ticket(&tid).redemptions.is_empty());
    let held = east.ledger.heads();
    for h in north.ledger.heads() {
        assert!(held.contains(&h), "East holds North's newest change");
    }
}

#[test]
fn a_gate_writes_each_change_signed_in_its_one_form() {
    // Every change a gate makes carries its signature (low-s), and decodes and encodes to
    // itself: what it applies is what its peers take, byte for byte.
    let (mut north, key) = super::gate_with_key("North");
    for i in 0..5 {
        north.scan(&TicketId::generate(), "n1", T0 + i);
    }
    north.ledger.seal(T0 + 10).unwrap().unwrap();
    let changes = changes_since(&mut north.ledger, &[]);
    let own: Vec<&Change> = changes
        .iter()
        .filter(|c| c.actor_id() == north.ledger.actor())
        .collect();
    assert_eq!(own.len(), 6);
    for c in own {
        assert_eq!(Change::from(c.decode()).hash(), c.hash());
        // Signed by North's key over the change with no message, as this test's kit reads
        // it (ECDSA is randomised, so compare by verifying).
        use p256::ecdsa::signature::Verifier as _;
        let sig = author::signature_of(c).expect("a signature in its message");
        assert!(sig.normalize_s().is_none(), "low-s");
        key.verifying_key()
            .verify(&author::covered(c, "ROCK-2026"), &sig)
            .unwrap();
    }
}

#[test]
fn a_history_written_before_change_signatures_reaches_a_new_gate_under_its_writers_seal() {
    // North's store holds admissions it wrote before changes were signed: automerge's own
    // transactions, each record signed, the change not (its message names what it writes).
    // A new gate refuses them, naming why; North, upgraded, seals its history with its
    // first batch, and the new gate then takes all of it.
    use automerge::{ReadDoc, transaction::Transactable};
    let event = super::event();
    let signer = super::device_of(&event, gatemesh_ledger::Role::Gate, "North");
    let node = signer.node().clone();
    let mut doc = AutoCommit::load(&gatemesh_ledger::genesis(&event)).unwrap();
    doc.set_actor(automerge::ActorId::from(node.as_str().as_bytes()));
    let devices = doc.get(automerge::ROOT, "devices").unwrap().unwrap().1;
    let own = gatemesh_ledger::DeviceRecord::of(signer.device());
    doc.put(
        &devices,
        node.as_str(),
        serde_json::to_string(&own).unwrap(),
    )
    .unwrap();
    let mut tickets = Vec::new();
    for i in 0..3 {
        let tid = TicketId::generate();
        let mut r = gatemesh_ledger::Redemption {
            manual: None,
            sig: None,
            id: gatemesh_ledger::RedemptionId::random(),
            tid: tid.clone(),
            direction: gatemesh_ledger::Direction::Entry,
            node: node.clone(),
            gate: "North".into(),
            scanner: "n1".into(),
            at_ms: T0 + i,
            hlc: gatemesh_ledger::Hlc {
                wall_ms: T0 + i,
                counter: 0,
                node: node.clone(),
            },
            seen: vec![],
            unlisted: false,
            scope: None,
        };
        signer.sign_redemption(&event, &mut r).unwrap();
        let m = gatemesh_ledger::ticket_map(&doc, "redemptions", &tid).unwrap();
        doc.put(
            &m,
            format!("{},{}", r.tid, r.id),
            serde_json::to_string(&r).unwrap(),
        )
        .unwrap();
        doc.commit_with(
            automerge::transaction::CommitOptions::default().with_message("redemption".to_owned()),
        );
        tickets.push(tid);
    }
    let genesis_heads = AutoCommit::load(&gatemesh_ledger::genesis(&event))
        .unwrap()
        .get_heads();
    let stored: Vec<gatemesh_ledger::StoredChange> = doc
        .get_changes(&genesis_heads)
        .iter()
        .map(gatemesh_ledger::StoredChange::from)
        .collect();
    assert_eq!(stored.len(), 3);
    let mut north = Ledger::open(
        &event,
        node,
        &gatemesh_ledger::genesis(&event),
        None,
        stored,
    )
    .unwrap();
    north.sign_with(signer, super::trust_of(&event)).unwrap();

    let mut west = Gate::new("West");
    let why = west
        .ledger
        .merge_saved(&north.save(), now())
        .unwrap_err()
        .to_string();
    assert!(why.contains("written by an earlier gatemesh"), "{why}");
    assert_eq!(west.ledger.redemption_count(), 0);

    // Upgraded, North seals with its first batch, however recent its last change.
    let seal = north.seal_if_due(T0 + 10).unwrap();
    assert!(seal.is_some(), "an unsigned history is sealed at once");
    super::sync_pair(&mut north, &mut west.ledger);
    assert_eq!(west.ledger.redemption_count(), 3);
    for tid in &tickets {
        assert_eq!(
            west.scan(tid, "w1", now()).verdict,
            gatemesh_ledger::Verdict::Duplicate
        );
    }
    // A signed history, reopened, waits for its usual count or time.
    let (first, again) = super::device_twice(&event, gatemesh_ledger::Role::Gate, "South");
    let node = first.node().clone();
    let mut south = Ledger::open(
        &event,
        node.clone(),
        &gatemesh_ledger::genesis(&event),
        None,
        [],
    )
    .unwrap();
    south.sign_with(first, super::trust_of(&event)).unwrap();
    let mut south = Gate {
        name: "South",
        ledger: south,
        policy: Default::default(),
        late: Default::default(),
    };
    south.scan(&TicketId::generate(), "s1", T0);
    let saved = south.ledger.save();
    let mut reopened = Ledger::open(
        &event,
        node,
        &gatemesh_ledger::genesis(&event),
        Some(&saved),
        [],
    )
    .unwrap();
    reopened.sign_with(again, super::trust_of(&event)).unwrap();
    assert!(reopened.seal_if_due(T0 + 10).unwrap().is_none());
    assert!(
        reopened
            .seal_if_due(T0 + 10 + gatemesh_ledger::SEAL_AFTER_MS)
            .unwrap()
            .is_some()
    );
}

#[test]
fn a_device_that_signs_two_changes_of_one_number_is_refused_by_name() {
    // A stolen gate, key in hand, signs two histories: its admission as its next change to
    // East, and another change of that number (empty) to a gate that joins later. Whichever
    // a gate took first, the other is refused as what it is, naming the device, before it
    // reaches automerge (which would fail half-way, and the gate reload its ledger each
    // time it is offered).
    let Scene {
        mut thief,
        thief_key,
        mut east,
        genuine,
        ..
    } = scene();
    push(&mut east.ledger, &genuine).unwrap();
    let before = thief.ledger.heads();
    thief.scan(&TicketId::generate(), "t1", T0 + 3);
    let first = changes_since(&mut thief.ledger, &before).remove(0);
    let other = {
        let mut e = first.decode();
        e.operations.clear();
        e.message = None;
        let blank = Change::from(e.clone());
        e.message = Some(signed_with(&blank, &thief_key, false));
        Change::from(e)
    };
    assert_eq!(
        (other.actor_id(), other.seq()),
        (first.actor_id(), first.seq())
    );
    push(&mut east.ledger, &first).unwrap();
    let heads = east.ledger.heads();
    let why = push(&mut east.ledger, &other).unwrap_err().to_string();
    assert!(
        why.contains("a second change numbered") && why.contains("signed two histories"),
        "{why}"
    );
    assert!(
        why.contains("\"Thief\" (this ledger holds another)"),
        "{why}"
    );
    assert_eq!(east.ledger.heads(), heads);
    // Both in one batch, to a gate that holds neither.
    let mut fresh = Gate::new("Fresh");
    let mut bytes: Vec<u8> = changes_since(&mut east.ledger, &[])
        .iter()
        .flat_map(|c| c.raw_bytes().to_vec())
        .collect();
    bytes.extend_from_slice(other.raw_bytes());
    let why = fresh
        .ledger
        .receive_changes(&mut PeerSync::default(), &bytes, now())
        .unwrap_err()
        .to_string();
    assert!(why.contains("the same batch brings another"), "{why}");
    assert_eq!(fresh.ledger.redemption_count(), 0);
}
