//! Summaries and relays: what a peer lacks, by what it says it holds writer by writer,
//! relayed from the changes at hand (see `summary.rs`).

use gatemesh_ledger::{
    Ledger, LedgerError, PeerSync, RELAY_BACKUP_MS, RELAY_LOST_ANYWAY_MS, RELAY_STUCK_MS, Relay,
    RelayPlan, RelayedBy, Role, StoredChange, Summary, Wants,
};
use gatemesh_ticket::TicketId;

use super::{T0, event, now, redemption, signed_ledger};

/// A ledger of device `name`, signing and checking.
fn device(name: &str) -> Ledger {
    signed_ledger(&event(), Role::Gate, name)
}

/// `n` admissions at `ledger`: the changes it made, to pass on.
fn admit(ledger: &mut Ledger, n: usize) -> Vec<StoredChange> {
    (0..n)
        .map(|i| {
            let r = redemption(ledger, &TicketId::generate(), T0 + i as i64);
            ledger.record_redemption(&r).unwrap().unwrap()
        })
        .collect()
}

/// `changes` one after another, as a push carries them.
fn pushed(changes: &[StoredChange]) -> Vec<u8> {
    changes.iter().flat_map(|c| c.bytes.clone()).collect()
}

/// `changes` taken by `ledger`, pushed by a peer.
fn take_pushed(ledger: &mut Ledger, changes: &[StoredChange]) {
    ledger
        .receive_changes(&mut PeerSync::default(), &pushed(changes), now())
        .unwrap();
}

/// A plan for `me` that relays everything `ledger` took so far.
fn plan<'a>(ledger: &Ledger, me: &'a str, now_ms: i64) -> RelayPlan<'a> {
    RelayPlan {
        now_ms,
        noted_before: ledger.noted() + 1,
        me,
        most: 512,
        catch_up_most: 4096,
        frame_most: 256 * 1024,
    }
}

/// Takes every frame of `relay` into `ledger`, as pushes from one peer; how many changes
/// were new.
fn take(ledger: &mut Ledger, relay: &Relay) -> usize {
    let mut state = PeerSync::default();
    relay
        .frames
        .iter()
        .map(|f| ledger.receive_changes(&mut state, f, now()).unwrap().len())
        .sum()
}

fn reaching(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn a_writer_a_peer_cannot_reach_is_relayed_to_it_once_and_one_it_reaches_is_not() {
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 3);
    b.receive_changes(&mut PeerSync::default(), &pushed(&made), now())
        .unwrap();
    let mut to_c = PeerSync::default();

    // C reaches B and A: A pushes to C itself, B relays nothing.
    let says = c.summary_message(&reaching(&["gate-b", "gate-a"]), Wants::Relays);
    let relay = b
        .relay(&mut to_c, &says, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(relay, Relay::default());

    // C reaches only B: B, the one relayer C has, relays A's changes, in the order taken.
    let says = c.summary_message(&reaching(&["gate-b"]), Wants::Relays);
    let relay = b
        .relay(&mut to_c, &says, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!((relay.changes, relay.round), (3, None));
    assert_eq!(take(&mut c, &relay), 3);
    assert_eq!(c.redemption_count(), 3);
    assert_eq!(c.summary().tip(&actor(&a)), a.summary().tip(&actor(&a)));

    // The same summary again (C's next one crossed the relay): nothing is sent twice.
    let again = b
        .relay(&mut to_c, &says, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(again, Relay::default());
    // C's next summary: nothing lacked, nothing sent; B counts C as lacking nothing.
    let says = c.summary_message(&reaching(&["gate-b"]), Wants::Relays);
    let relay = b
        .relay(&mut to_c, &says, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(relay, Relay::default());
    assert_eq!(b.peer_lag(&to_c), Some(0));
}

fn actor(ledger: &Ledger) -> automerge::ActorId {
    ledger.actor().clone()
}

#[test]
fn own_changes_made_a_moment_ago_wait_and_another_writers_go_at_once() {
    // A's own admissions may be on their way to C by push (the session marks them pushed
    // once written): they wait. B relays A's at once: A does not reach C.
    let (mut a, mut b, c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let before = (a.noted(), b.noted());
    let made = admit(&mut a, 2);
    b.receive_changes(&mut PeerSync::default(), &pushed(&made), now())
        .unwrap();
    let says = c.summary_message(&reaching(&["gate-a", "gate-b"]), Wants::Relays);
    let young = |ledger: &Ledger, me: &'static str, noted: u64| RelayPlan {
        noted_before: noted + 1,
        ..plan(ledger, me, now())
    };
    let mut a_to_c = PeerSync::default();
    let by_a = a.relay(&mut a_to_c, &says, &young(&a, "gate-a", before.0));
    assert_eq!(by_a.unwrap(), Relay::default());
    let by_a = a.relay(&mut a_to_c, &says, &plan(&a, "gate-a", now()));
    assert_eq!(by_a.unwrap().changes, 2);
    let says = c.summary_message(&reaching(&["gate-b"]), Wants::Relays);
    let by_b = b.relay(
        &mut PeerSync::default(),
        &says,
        &young(&b, "gate-b", before.1),
    );
    assert_eq!(by_b.unwrap().changes, 2);
}

#[test]
fn a_writers_own_changes_pushed_to_a_peer_are_not_relayed_and_those_it_missed_are() {
    let (mut a, c) = (device("gate-a"), device("gate-c"));
    let made = admit(&mut a, 4);
    let mut to_c = PeerSync::default();
    // The first three were written to C's connection; the fourth never was.
    a.pushed(&mut to_c, made[..3].iter().map(|c| c.hash));
    let says = c.summary_message(&reaching(&["gate-a"]), Wants::Relays);
    let relay = a
        .relay(&mut to_c, &says, &plan(&a, "gate-a", now()))
        .unwrap();
    assert_eq!(relay.changes, 1);
    assert_eq!(relay.frames, vec![made[3].bytes.clone()]);
}

#[test]
fn a_push_made_past_a_gap_does_not_put_the_gap_on_its_way() {
    // C was apart from B, which admitted 20 meanwhile. Healed, B scans one more and pushes
    // it to C, where it waits past the gap; C asks B for the gap. B's own 20 go: only what
    // was written to C's connection is on its way, not every change before the push.
    // Counted so, B left its own part of the gap out for as long as it scanned, and C got
    // it once it counted as lost, 10 s on (the 8-gate heal's straggler).
    let (mut b, mut c) = (device("gate-b"), device("gate-c"));
    let apart = admit(&mut b, 20);
    let mut to_c = PeerSync::default();
    let first_says = c.summary_message(&reaching(&["gate-b"]), Wants::Nothing);
    b.relay(&mut to_c, &first_says, &plan(&b, "gate-b", now()))
        .unwrap();
    let after = admit(&mut b, 1);
    b.pushed(&mut to_c, after.iter().map(|c| c.hash));
    let mut from_b = PeerSync::default();
    c.receive_changes(&mut from_b, &pushed(&after), now())
        .unwrap();
    assert_eq!(from_b.waiting(), 1, "past the gap");
    let gap = c.summary_message_with(&reaching(&["gate-b"]), Wants::Gap, [&from_b]);
    let relay = b
        .relay(&mut to_c, &gap, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(relay.left_out.on_their_way, 0, "{:?}", relay.left_out);
    assert!(relay.changes >= apart.len(), "{relay:?}");
    // The gap taken frees the push that waited.
    for frame in &relay.frames {
        c.receive_changes(&mut from_b, frame, now()).unwrap();
    }
    assert_eq!(c.summary(), b.summary());
    // Pushes that follow what the peer holds count as sent, as before.
    let next = admit(&mut b, 2);
    let caught_up = c.summary_message(&reaching(&["gate-b"]), Wants::Relays);
    b.relay(&mut to_c, &caught_up, &plan(&b, "gate-b", now()))
        .unwrap();
    b.pushed(&mut to_c, next.iter().map(|c| c.hash));
    let relay = b
        .relay(&mut to_c, &caught_up, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(relay.changes, 0);
}

/// B and D holding two of A's admissions, and C holding none: C's two possible relayers of
/// A's changes.
fn two_relayers_of_a() -> (Ledger, Ledger, Ledger) {
    let (mut a, mut b, mut d) = (device("gate-a"), device("gate-b"), device("gate-d"));
    let made = admit(&mut a, 2);
    for relayer in [&mut b, &mut d] {
        take_pushed(relayer, &made);
    }
    (b, d, device("gate-c"))
}

#[test]
fn own_changes_pushed_and_still_lacked_long_after_go_again() {
    // A's pushes were counted as sent (written to a connection that was then replaced, or
    // to one that carried nothing more): C's summaries go on lacking them.
    let (mut a, c) = (device("gate-a"), device("gate-c"));
    let made = admit(&mut a, 3);
    let mut to_c = PeerSync::default();
    a.pushed(&mut to_c, made.iter().map(|c| c.hash));
    let says = c.summary_message(&reaching(&["gate-a"]), Wants::Relays);
    let t = now();
    let mut at = |ms| {
        let plan = plan(&a, "gate-a", t + ms);
        a.relay(&mut to_c, &says, &plan).unwrap().changes
    };
    assert_eq!(at(0), 0);
    assert_eq!(at(RELAY_STUCK_MS - 1), 0);
    assert_eq!(at(RELAY_STUCK_MS), 3);
    // Sent again: not once more at the next summary, only if lacked as long again.
    assert_eq!(at(RELAY_STUCK_MS + 1_000), 0);
    assert_eq!(at(2 * RELAY_STUCK_MS), 3);
    let again = RelayedBy {
        again: 6,
        ..RelayedBy::default()
    };
    assert_eq!(to_c.relayed_by(), again, "counted as sent again");
}

#[test]
fn a_peer_behind_on_everything_is_not_sent_again_what_it_has_yet_to_take() {
    // A's pushes to C were counted as sent, and C's summaries lack them long after; but
    // they lack B's newest changes too: C's writer is behind (a loaded machine), and what
    // A sent waits in its queue. Sending it again would only load C more. Once C holds a
    // change A took after it first saw the lack, what A sent before was lost on the way.
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 3);
    let mut to_c = PeerSync::default();
    a.pushed(&mut to_c, made.iter().map(|c| c.hash));
    let first_of_b = admit(&mut b, 1);
    take_pushed(&mut a, &first_of_b);
    let reach = reaching(&["gate-a", "gate-b"]);
    let behind = c.summary_message(&reach, Wants::Relays);
    let t = now();
    let at = |a: &mut Ledger, to_c: &mut PeerSync, ms, says: &[u8]| {
        let plan = plan(a, "gate-a", t + ms);
        a.relay(to_c, says, &plan).unwrap().changes
    };
    assert_eq!(at(&mut a, &mut to_c, 0, &behind), 0);
    let stuck = RELAY_STUCK_MS;
    assert_eq!(at(&mut a, &mut to_c, stuck, &behind), 0, "behind, not lost");
    assert_eq!(at(&mut a, &mut to_c, 2 * stuck, &behind), 0);
    // B admits again; A and C take it (C from B itself), and C's queue drains but for A's.
    let second_of_b = admit(&mut b, 1);
    take_pushed(&mut a, &second_of_b);
    take_pushed(&mut c, &[first_of_b, second_of_b].concat());
    // B's third is on its way to C: A's are not the only changes C lacks.
    take_pushed(&mut a, &admit(&mut b, 1));
    let past = c.summary_message(&reach, Wants::Relays);
    let again = at(&mut a, &mut to_c, 2 * stuck + 1, &past);
    assert_eq!(again, 3, "seen past them: lost");
}

#[test]
fn a_peer_that_lacks_several_writers_last_changes_gets_them_again_in_the_end() {
    // Everyone went quiet, and C lacks the last changes of A and of B: no sign that it is
    // past them, and more than one writer lacked. A sends them again after a longer wait.
    let (mut a, mut b, c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 2);
    let mut to_c = PeerSync::default();
    a.pushed(&mut to_c, made.iter().map(|c| c.hash));
    take_pushed(&mut a, &admit(&mut b, 1));
    let says = c.summary_message(&reaching(&["gate-a", "gate-b"]), Wants::Relays);
    let t = now();
    let mut at = |ms| {
        let plan = plan(&a, "gate-a", t + ms);
        a.relay(&mut to_c, &says, &plan).unwrap().changes
    };
    assert_eq!(at(0), 0);
    assert_eq!(at(RELAY_STUCK_MS), 0);
    assert_eq!(at(RELAY_LOST_ANYWAY_MS - 1), 0);
    // Its own two, and B's, whose link to C evidently carried nothing either (A is its
    // one other relayer).
    assert_eq!(at(RELAY_LOST_ANYWAY_MS), 3);
}

#[test]
fn a_writer_the_peer_reaches_but_still_lacks_long_after_is_relayed_by_the_others() {
    // C reaches A, B and D. A's own link to C carries nothing (its pushes never arrive):
    // while C's newest change of A's stays where it was, B and D relay A's changes, one
    // first and the other only if C still lacks them after the backup's wait.
    let (mut b, mut d, c) = two_relayers_of_a();
    let says = c.summary_message(&reaching(&["gate-a", "gate-b", "gate-d"]), Wants::Relays);
    let t = now();
    let (mut b_to_c, mut d_to_c) = (PeerSync::default(), PeerSync::default());
    let mut both = |ms: i64| {
        let by_b = b.relay(&mut b_to_c, &says, &plan(&b, "gate-b", t + ms));
        let by_d = d.relay(&mut d_to_c, &says, &plan(&d, "gate-d", t + ms));
        (by_b.unwrap().changes, by_d.unwrap().changes)
    };
    assert_eq!(both(0), (0, 0), "A pushes to C itself");
    assert_eq!(both(RELAY_STUCK_MS - 1), (0, 0));
    let first = both(RELAY_STUCK_MS);
    assert!(
        first == (2, 0) || first == (0, 2),
        "exactly one relays: {first:?}"
    );
    assert_eq!(both(RELAY_STUCK_MS + 1_000), (0, 0));
    let backup = both(RELAY_STUCK_MS + RELAY_BACKUP_MS);
    assert_eq!(
        backup,
        (first.1, first.0),
        "the other one relays after the backup's wait"
    );
}

#[test]
fn one_peer_relays_a_writer_first_and_the_others_only_if_it_is_still_lacked() {
    let (mut b, mut d, c) = two_relayers_of_a();
    // C reaches B and D, not A: one of them is A's first relayer to C.
    let says = c.summary_message(&reaching(&["gate-b", "gate-d"]), Wants::Relays);
    let t = now();
    let (mut b_to_c, mut d_to_c) = (PeerSync::default(), PeerSync::default());
    let by_b = b.relay(&mut b_to_c, &says, &plan(&b, "gate-b", t)).unwrap();
    let by_d = d.relay(&mut d_to_c, &says, &plan(&d, "gate-d", t)).unwrap();
    assert_eq!(
        (by_b.changes, by_d.changes),
        if by_b.changes > 0 { (2, 0) } else { (0, 2) },
        "exactly one relays at once"
    );
    let (late, late_state, late_name) = if by_b.changes > 0 {
        (&mut d, &mut d_to_c, "gate-d")
    } else {
        (&mut b, &mut b_to_c, "gate-b")
    };
    // C still lacks them a little later: the other waits on.
    let soon = late
        .relay(late_state, &says, &plan(late, late_name, t + 1_000))
        .unwrap();
    assert_eq!(soon.changes, 0);
    // … and relays them once C lacked them for the backup's wait.
    let backup = late
        .relay(
            late_state,
            &says,
            &plan(late, late_name, t + RELAY_BACKUP_MS),
        )
        .unwrap();
    assert_eq!(backup.changes, 2);
    // Each counts why it relayed.
    let (first, backup) = if by_b.changes > 0 {
        (b_to_c.relayed_by(), d_to_c.relayed_by())
    } else {
        (d_to_c.relayed_by(), b_to_c.relayed_by())
    };
    let by = |first, backup| RelayedBy {
        first,
        backup,
        ..RelayedBy::default()
    };
    assert_eq!((first, backup), (by(2, 0), by(0, 2)));
}

#[test]
fn a_gap_larger_than_a_relay_goes_in_parts_and_one_no_longer_at_hand_to_the_sync_protocol() {
    let (mut a, c) = (device("gate-a"), device("gate-c"));
    admit(&mut a, 25);
    let says = c.summary_message(&reaching(&["gate-a"]), Wants::Relays);
    let small = RelayPlan {
        most: 10,
        ..plan(&a, "gate-a", now())
    };
    // Each summary of the peer's is answered with the next part, in order, until the gap
    // is sent; no round.
    let mut state = PeerSync::default();
    let mut parts = Vec::new();
    for _ in 0..4 {
        let relay = a.relay(&mut state, &says, &small).unwrap();
        assert!(relay.round.is_none() && !relay.catch_up, "{relay:?}");
        parts.push(relay.changes);
    }
    assert_eq!(parts, [10, 10, 5, 0]);

    // A reopened from a snapshot holds its history, but not its changes' bytes.
    let node = a.node().clone();
    let snapshot = a.save();
    let mut reopened = Ledger::open(
        &event(),
        node,
        &gatemesh_ledger::genesis(&event()),
        Some(&snapshot),
        [],
    )
    .unwrap();
    assert_eq!(
        reopened.summary(),
        a.summary(),
        "the summary is the document's"
    );
    let relay = reopened
        .relay(
            &mut PeerSync::default(),
            &says,
            &plan(&reopened, "gate-a", now()),
        )
        .unwrap();
    assert!(
        relay.frames.is_empty() && relay.round.is_some(),
        "{relay:?}"
    );
}

#[test]
fn a_writer_whose_newest_change_differs_at_the_peer_calls_for_the_sync_protocol() {
    // A stolen device, key in hand, signs two changes of one number (two histories): one
    // gate holds the one, another the other. Each one's summary names a newest change of
    // that writer the other lacks at the same number: a relay cannot mend that, the sync
    // protocol's round is called for (where the second is refused by name).
    use p256::ecdsa::signature::Signer as _;
    let event = event();
    let (signer, key) = super::device_with_key(&event, Role::Gate, "thief");
    let mut thief = Ledger::open(
        &event,
        signer.node().clone(),
        &gatemesh_ledger::genesis(&event),
        None,
        [],
    )
    .unwrap();
    thief.sign_with(signer, super::trust_of(&event)).unwrap();
    let (mut one, mut two) = (device("gate-one"), device("gate-two"));
    super::sync_pair(&mut thief, &mut one);
    super::sync_pair(&mut thief, &mut two);
    let first = automerge::Change::from_bytes(admit(&mut thief, 1).remove(0).bytes).unwrap();
    let other = {
        let mut e = first.decode();
        e.time = 1;
        e.message = None;
        let blank = automerge::Change::from(e.clone());
        let sig: p256::ecdsa::Signature =
            key.sign(&gatemesh_testkit::author::covered(&blank, event.as_str()));
        e.message = Some(gatemesh_testkit::author::signature_text(
            &sig.normalize_s().unwrap_or(sig),
        ));
        automerge::Change::from(e)
    };
    assert_ne!(other.hash(), first.hash());
    let mut state = PeerSync::default();
    one.receive_changes(&mut state, first.raw_bytes(), now())
        .unwrap();
    two.receive_changes(&mut PeerSync::default(), other.raw_bytes(), now())
        .unwrap();
    let says = two.summary_message(&[], Wants::Relays);
    let relay = one
        .relay(&mut state, &says, &plan(&one, "gate-one", now()))
        .unwrap();
    assert!(relay.round.is_some(), "{relay:?}");
}

#[test]
fn two_copies_of_one_nodes_data_write_apart_and_every_peer_takes_both() {
    // A gate's data copied to a second laptop, or restored from an old backup, with its
    // identity: both copies open it and admit. Each opening writes under an actor of its
    // own, so neither writes the numbers the other did: a peer takes both (the same number
    // of one actor, different, would be refused for good), and the two take each other's.
    let event = event();
    let (first, second) = super::device_twice(&event, Role::Gate, "copied");
    let node = first.node().clone();
    let open = |snapshot: Option<&[u8]>, signer| {
        let mut l = Ledger::open(
            &event,
            node.clone(),
            &gatemesh_ledger::genesis(&event),
            snapshot,
            [],
        )
        .unwrap();
        l.sign_with(signer, super::trust_of(&event)).unwrap();
        l
    };
    let mut original = open(None, first);
    admit(&mut original, 2);
    let old_copy = original.save();
    let mut peer = device("gate-peer");
    super::sync_pair(&mut original, &mut peer);
    // The original goes on admitting; the copy, opened from the data as it was, too.
    let mut copy = open(Some(&old_copy), second);
    assert_ne!(copy.actor(), original.actor());
    let later = admit(&mut original, 2);
    let from_copy = admit(&mut copy, 2);
    let mut state = PeerSync::default();
    assert_eq!(
        peer.receive_changes(&mut state, &pushed(&later), now())
            .unwrap()
            .len(),
        2
    );
    peer.receive_changes(&mut state, &pushed(&from_copy), now())
        .unwrap();
    assert_eq!(peer.redemption_count(), 6);
    super::sync_pair(&mut peer, &mut copy);
    super::sync_pair(&mut peer, &mut original);
    for l in [&mut copy, &mut original] {
        assert_eq!(l.redemption_count(), 6);
        assert_eq!(l.heads(), peer.heads());
    }
}

#[test]
fn what_pushed_changes_wait_for_is_asked_for_by_hash_and_answered_from_what_is_at_hand() {
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    // B takes A's admission, then admits on top of it; C gets B's change first.
    let from_a = admit(&mut a, 1);
    b.receive_changes(&mut PeerSync::default(), &pushed(&from_a), now())
        .unwrap();
    let from_b = admit(&mut b, 1);
    let mut from_b_state = PeerSync::default();
    assert!(
        c.receive_changes(&mut from_b_state, &pushed(&from_b), now())
            .unwrap()
            .is_empty()
    );
    assert_eq!(from_b_state.waiting(), 1);
    let need = c.need_message(&from_b_state).expect("a request");
    let answer = b
        .answer_need(&mut PeerSync::default(), &need, 256 * 1024)
        .unwrap();
    assert_eq!((answer.changes, answer.round), (1, None));
    // B's answer comes as a push from B: the change that waited is taken with it.
    let taken: usize = answer
        .frames
        .iter()
        .map(|f| {
            c.receive_changes(&mut from_b_state, f, now())
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(taken, 2);
    assert_eq!(from_b_state.waiting(), 0);
    assert!(c.need_message(&from_b_state).is_none());
    // A request for a change B does not have at hand calls for a round.
    let mut unknown = vec![gatemesh_ledger::NEED_VERSION, 1];
    unknown.extend([9u8; 32]);
    let answer = b
        .answer_need(&mut PeerSync::default(), &unknown, 256 * 1024)
        .unwrap();
    assert!(answer.frames.is_empty() && answer.round.is_some());
}

#[test]
fn a_summary_or_request_that_does_not_read_is_refused_and_changes_nothing() {
    let (mut a, _) = (device("gate-a"), ());
    admit(&mut a, 2);
    let before = a.save();
    let mut state = PeerSync::default();
    for bytes in [
        vec![],
        vec![9],
        vec![
            gatemesh_ledger::SUMMARY_VERSION,
            0xff,
            0xff,
            0xff,
            0xff,
            0x0f,
        ],
    ] {
        let err = a
            .relay(&mut state, &bytes, &plan(&a, "gate-a", now()))
            .unwrap_err();
        assert!(matches!(err, LedgerError::BadMessage(_)), "{err}");
        let err = a.answer_need(&mut state, &bytes, 1024).unwrap_err();
        assert!(matches!(err, LedgerError::BadMessage(_)), "{err}");
    }
    assert_eq!(a.save(), before);
    assert_eq!(a.peer_lag(&state), None, "no summary was taken");
}

#[test]
fn a_peer_that_says_it_lacks_everything_gets_each_change_once_per_connection() {
    // An enrolled device gone dishonest sends the same summary over and over: what it is
    // relayed is bounded by what it lacks, once; the empty summary (it lacks even the
    // genesis, which is never at hand) gets a round of the sync protocol, nothing relayed.
    let (mut a, mut b, c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 30);
    b.receive_changes(&mut PeerSync::default(), &pushed(&made), now())
        .unwrap();
    let lacking = c.summary_message(&[], Wants::Relays);
    let mut state = PeerSync::default();
    let first = b
        .relay(&mut state, &lacking, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(first.changes, made.len());
    for _ in 0..5 {
        let again = b
            .relay(&mut state, &lacking, &plan(&b, "gate-b", now()))
            .unwrap();
        assert_eq!(again, Relay::default());
    }
    // Asking for a gap over and over: every writer's changes, still each once.
    let gap = c.summary_message(&[], Wants::Gap);
    let mut asked = PeerSync::default();
    let sent: Vec<usize> = (0..5)
        .map(|_| {
            b.relay(&mut asked, &gap, &plan(&b, "gate-b", now()))
                .unwrap()
                .changes
        })
        .collect();
    assert_eq!(sent, [made.len(), 0, 0, 0, 0]);
    let empty = Summary::default().encode(&[], gatemesh_ledger::Wants::Relays);
    let relay = b
        .relay(&mut state, &empty, &plan(&b, "gate-b", now()))
        .unwrap();
    assert!(
        relay.frames.is_empty() && relay.round.is_some(),
        "{relay:?}"
    );
}

/// Whether a peer catches up from this node is what its last summary asked: the gate does
/// not ask that peer for a gap of its own meanwhile (`CatchUpRelay`), and must not keep
/// thinking so once the peer asks for the usual relays, or for nothing, again.
#[test]
fn a_peer_catches_up_from_here_while_its_last_summary_asks_for_the_gap() {
    let (mut b, c) = (device("gate-b"), device("gate-c"));
    admit(&mut b, 3);
    let mut state = PeerSync::default();
    assert!(!b.catches_up_from_here(&state), "no summary yet");
    let says = |wants| c.summary_message(&[], wants);
    for (wants, asks) in [
        (Wants::Gap, true),
        (Wants::Relays, false),
        (Wants::Gap, true),
        (Wants::Nothing, false),
    ] {
        b.relay(&mut state, &says(wants), &plan(&b, "gate-b", now()))
            .unwrap();
        assert_eq!(b.catches_up_from_here(&state), asks, "{wants:?}");
    }
}

#[test]
fn a_peer_that_lacks_a_catch_ups_worth_asks_for_it_by_a_round_of_its_own() {
    // A gate joining late, or back after a long partition: its holder relays none of it and
    // starts no round (its first message would hold a bloom filter of every change it holds),
    // and the gate that lacks it starts the round, whose first message is small.
    let (mut a, mut c) = (device("gate-a"), device("gate-c"));
    admit(&mut a, gatemesh_ledger::CATCH_UP_LACK + 10);
    let c_says = c.summary_message(&reaching(&["gate-a"]), Wants::Relays);
    let by_a = a
        .relay(
            &mut PeerSync::default(),
            &c_says,
            &plan(&a, "gate-a", now()),
        )
        .unwrap();
    assert_eq!(by_a, Relay::default(), "A leaves it to C");
    let a_says = a.summary_message(&reaching(&["gate-c"]), Wants::Relays);
    let by_c = c
        .relay(
            &mut PeerSync::default(),
            &a_says,
            &plan(&c, "gate-c", now()),
        )
        .unwrap();
    assert!(by_c.catch_up && by_c.frames.is_empty(), "{by_c:?}");
}

#[test]
fn a_gate_that_lacks_a_partitions_worth_waits_for_relays_and_starts_a_round_only_if_they_stall() {
    // C holds most of A's ledger and lacks more than a catch-up's worth of it (a partition's
    // admissions, after it heals): they come by relays, each change at hand as it came. C
    // starts a round of its own only once it has taken nothing for a while.
    use gatemesh_ledger::{CATCH_UP_LACK, CATCH_UP_STALL_MS};
    let (mut a, mut c) = (device("gate-a"), device("gate-c"));
    let shared = admit(&mut a, CATCH_UP_LACK + 200);
    c.receive_changes(&mut PeerSync::default(), &pushed(&shared), now())
        .unwrap();
    let apart = admit(&mut a, CATCH_UP_LACK + 100);
    let a_says = a.summary_message(&reaching(&["gate-c"]), Wants::Relays);
    let mut state = PeerSync::default();
    let t = now();
    let mut by_c = |c: &mut Ledger, at: i64| {
        c.relay(&mut state, &a_says, &plan(c, "gate-c", at))
            .unwrap()
            .catch_up
    };
    assert!(!by_c(&mut c, t), "relays may bring it");
    assert!(!by_c(&mut c, t + CATCH_UP_STALL_MS - 1));
    // A relay brought some (any change taken counts: under load what C lacks of one peer
    // may not shrink while that peer admits): C waits again.
    c.receive_changes(&mut PeerSync::default(), &pushed(&apart[..50]), now())
        .unwrap();
    assert!(!by_c(&mut c, t + CATCH_UP_STALL_MS + 500));
    assert!(!by_c(&mut c, t + 2 * CATCH_UP_STALL_MS + 499));
    assert!(by_c(&mut c, t + 2 * CATCH_UP_STALL_MS + 500), "stalled");
    // A relays it all, in parts, and calls for no round: C does not lack most of it.
    let c_says = c.summary_message(&reaching(&["gate-a"]), Wants::Relays);
    let mut to_c = PeerSync::default();
    let (mut sent, mut parts) = (0, 0);
    loop {
        let relay = a
            .relay(&mut to_c, &c_says, &plan(&a, "gate-a", now()))
            .unwrap();
        assert!(relay.round.is_none() && !relay.catch_up, "{relay:?}");
        if relay.changes == 0 {
            break;
        }
        sent += take(&mut c, &relay);
        parts += 1;
    }
    assert_eq!((sent, parts), (apart.len() - 50, 5));
    assert_eq!(c.summary(), a.summary());
}

#[test]
fn a_ledger_knows_when_a_peers_last_summary_names_what_it_lacks() {
    // What keeps a gate telling a quiet peer its summary: the peer relays on it.
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let mut from_a = PeerSync::default();
    assert!(
        !b.lacks_what_peer_said(&from_a, "gate-a", &[]),
        "no summary from A yet"
    );
    let made = admit(&mut a, 2);
    b.relay(
        &mut from_a,
        &a.summary_message(&[], Wants::Relays),
        &plan(&b, "gate-b", now()),
    )
    .unwrap();
    assert!(b.lacks_what_peer_said(&from_a, "gate-a", &reaching(&["gate-a"])));
    b.receive_changes(&mut PeerSync::default(), &pushed(&made), now())
        .unwrap();
    assert!(
        !b.lacks_what_peer_said(&from_a, "gate-a", &reaching(&["gate-a"])),
        "B holds all A said it holds"
    );
}

#[test]
fn a_lack_counts_only_for_what_the_peer_would_relay() {
    // C writes; A and B take its first change (and so its device). A then takes C's later
    // changes, and says so: B lacks them. If B reaches C, C's pushes bring them and A
    // relays nothing; if not, A does, and B keeps telling A its summary until they come.
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let first = admit(&mut c, 1);
    for ledger in [&mut a, &mut b] {
        take_pushed(ledger, &first);
    }
    let later = admit(&mut c, 3);
    a.receive_changes(&mut PeerSync::default(), &pushed(&later), now())
        .unwrap();
    let mut from_a = PeerSync::default();
    b.relay(
        &mut from_a,
        &a.summary_message(&reaching(&["gate-c"]), Wants::Relays),
        &plan(&b, "gate-b", now()),
    )
    .unwrap();
    assert!(
        !b.lacks_what_peer_said(&from_a, "gate-a", &reaching(&["gate-a", "gate-c"])),
        "C pushes them to B"
    );
    assert!(
        b.lacks_what_peer_said(&from_a, "gate-a", &reaching(&["gate-a"])),
        "only a relay brings them to B"
    );
    // A writer whose device B does not know yet: counted, as only a relay may bring it.
    let (mut d, mut e) = (device("gate-d"), device("gate-e"));
    let by_d = admit(&mut d, 1);
    e.receive_changes(&mut PeerSync::default(), &pushed(&by_d), now())
        .unwrap();
    let mut from_e = PeerSync::default();
    b.relay(
        &mut from_e,
        &e.summary_message(&[], Wants::Relays),
        &plan(&b, "gate-b", now()),
    )
    .unwrap();
    assert!(b.lacks_what_peer_said(&from_e, "gate-e", &reaching(&["gate-d", "gate-e"])));
    b.receive_changes(&mut PeerSync::default(), &pushed(&by_d), now())
        .unwrap();
    assert!(!b.lacks_what_peer_said(&from_e, "gate-e", &reaching(&["gate-d", "gate-e"])));
}

/// A (11 admissions) and B, which holds back A's 10 later pushes: the first, which they
/// build on, has not reached B. Returns A, B, that first change and B's state for A.
fn held_back_by_b() -> (Ledger, Ledger, Vec<StoredChange>, PeerSync) {
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let first = admit(&mut a, 1);
    let later = admit(&mut a, 10);
    let mut from_a = PeerSync::default();
    let taken = b
        .receive_changes(&mut from_a, &pushed(&later), now())
        .unwrap();
    assert!(taken.is_empty());
    assert_eq!((from_a.waiting(), first.len()), (10, 1));
    (a, b, first, from_a)
}

#[test]
fn held_back_changes_are_taken_a_bounded_number_at_a_time_in_causal_order() {
    // A's pushes came before the change they build on (as after a heal, when the catch-up
    // part that brings it arrives from another peer): once it is here, they are taken at
    // most `most` a call, each call building only on what is here, until none waits.
    let (_, mut b, first, mut from_a) = held_back_by_b();
    b.receive_changes(&mut PeerSync::default(), &pushed(&first), now())
        .unwrap();
    let mut calls = Vec::new();
    loop {
        let new = b.take_waiting(&mut from_a, 4, now()).unwrap();
        if new.is_empty() {
            break;
        }
        calls.push(new.len());
    }
    assert_eq!(calls, [4, 4, 2]);
    assert_eq!(from_a.waiting(), 0);
    // B holds every admission A made.
    assert_eq!(b.redemptions().len(), 11);
}

/// What a peer relays of other writers is told apart from what it wrote itself: a gate
/// that asked it for a gap counts the second as the gap coming only while no other peer
/// offers it (a stolen device that writes records of its own as fast as it likes does not
/// look like one sending a gap).
#[test]
fn a_link_tells_what_the_peer_wrote_from_what_it_relayed() {
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let from_c = admit(&mut c, 2);
    take_pushed(&mut a, &from_c);
    let own = admit(&mut a, 3);
    // A sends B its own three and relays C's two, out of order: its own first, waiting
    // for C's certificate and changes.
    let mut from_a = PeerSync::of("gate-a");
    let taken = b
        .receive_changes(&mut from_a, &pushed(&own), now())
        .unwrap();
    assert!(taken.is_empty(), "A's changes build on C's");
    let taken = b
        .receive_changes(&mut from_a, &pushed(&from_c), now())
        .unwrap();
    assert_eq!(taken.len(), 5);
    let books = from_a.books();
    assert_eq!((books.taken, books.taken_own), (5, 3));
    assert_eq!(books.taken_of_others(), 2);
    // The same five from C: two are its own; from a state the node did not name, none is.
    let both = pushed(&[from_c.clone(), own.clone()].concat());
    for (state, own) in [(PeerSync::of("gate-c"), 2), (PeerSync::default(), 0)] {
        let (mut d, mut state) = (device("gate-d"), state);
        assert_eq!(
            d.receive_changes(&mut state, &both, now()).unwrap().len(),
            5
        );
        assert_eq!(state.books().taken_own, own);
    }
}

#[test]
fn a_catch_up_part_takes_at_most_its_size_with_the_held_back_changes_it_lets_in() {
    // B holds back A's 10 later pushes: the change they build on comes in a sync message,
    // taken in parts of 4. Each part takes at most 4 in all, its own and the held-back
    // ones it lets in (once, the first part took all 11: after a heal, 3,373 changes in
    // one part held the scans 0.84 s).
    let (mut a, mut b, _, mut from_a) = held_back_by_b();
    let hello = b.sync_message(&mut from_a).unwrap();
    let mut to_b = PeerSync::default();
    a.receive_sync(&mut to_b, &hello, now()).unwrap();
    let message = a.sync_message(&mut to_b).unwrap();
    let mut parts = gatemesh_ledger::SyncInParts::parse(&message).unwrap();
    let mut calls = Vec::new();
    while parts.left() > 0 {
        let new = b.take_sync_part(&mut from_a, &mut parts, 4, now()).unwrap();
        calls.push(new.len());
    }
    b.finish_sync(&mut from_a, parts).unwrap();
    // The 11 admissions, 4 a part (the message carries 12 changes; B held one of them).
    assert_eq!(calls, [4, 4, 3]);
    assert_eq!(from_a.waiting(), 0);
    assert_eq!(b.redemptions().len(), 11);
}

#[test]
fn changes_that_come_again_are_counted_as_held_already_and_taken_once() {
    // A pushes its 3 admissions to B; C relays 2 of them to B later, and A's push of all 3
    // comes again (a summary that lagged behind a busy writer): B takes each once, and
    // each connection counts what it brought that B held already.
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let made = admit(&mut a, 3);
    let mut from_a = PeerSync::default();
    let taken = b
        .receive_changes(&mut from_a, &pushed(&made), now())
        .unwrap();
    assert_eq!((taken.len(), from_a.books().sent_twice()), (3, 0));
    let mut from_c = PeerSync::default();
    let again = b
        .receive_changes(&mut from_c, &pushed(&made[1..]), now())
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(from_c.books().sent_twice(), 2);
    let again = b
        .receive_changes(&mut from_a, &pushed(&made), now())
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(from_a.books().sent_twice(), 3);
    assert_eq!(b.redemptions().len(), 3);
    let (books_a, books_c) = (from_a.books(), from_c.books());
    assert_eq!((books_a.came, books_a.taken, books_a.held), (6, 3, 3));
    assert_eq!((books_c.came, books_c.taken, books_c.held), (2, 0, 2));
}

#[test]
fn two_ledgers_show_one_digest_exactly_when_they_hold_the_same_changes() {
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let made = admit(&mut a, 2);
    let (mut from_a, mut from_b) = (PeerSync::default(), PeerSync::default());
    b.receive_changes(&mut from_a, &pushed(&made), now())
        .unwrap();
    let digest = a.digest();
    assert_eq!(digest.len(), 32);
    assert!(digest.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(b.digest(), digest);
    let more = admit(&mut b, 1);
    assert_ne!(b.digest(), a.digest());
    assert_ne!(b.digest(), digest);
    a.receive_changes(&mut from_b, &pushed(&more), now())
        .unwrap();
    assert_eq!(a.digest(), b.digest());
}

#[test]
fn changes_sent_again_while_they_wait_or_brought_by_another_peer_meanwhile_count_as_held() {
    // A's 2nd and 3rd admissions reach B before its 1st (they wait for it), and come again
    // from A while they wait; then C brings the 1st and 2nd. Of what A sent, only the 3rd
    // was news to B when it was taken: the two sent again and the 2nd count as held already.
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let made = admit(&mut a, 3);
    let mut from_a = PeerSync::default();
    for _ in 0..2 {
        let taken = b
            .receive_changes(&mut from_a, &pushed(&made[1..]), now())
            .unwrap();
        assert!(taken.is_empty());
        assert_eq!(from_a.waiting(), 2);
    }
    assert_eq!(from_a.books().sent_twice(), 2);
    let mut from_c = PeerSync::default();
    let taken = b
        .receive_changes(&mut from_c, &pushed(&made[..2]), now())
        .unwrap();
    assert_eq!((taken.len(), from_c.books().sent_twice()), (2, 0));
    let taken = b.take_waiting(&mut from_a, usize::MAX, now()).unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!((from_a.waiting(), from_a.books().sent_twice()), (0, 3));
    assert_eq!(b.redemptions().len(), 3);
    // Each connection's books say what became of every change it brought.
    let books = |p: &PeerSync| {
        let b = p.books();
        (
            b.came,
            b.taken,
            b.held,
            b.waiting_already,
            b.held_when_taken,
            b.dropped,
        )
    };
    assert_eq!(books(&from_a), (4, 1, 0, 2, 1, 0));
    assert_eq!(books(&from_c), (2, 2, 0, 0, 0, 0));
}

#[test]
fn a_gate_catching_up_from_one_peer_gets_every_writers_changes_from_it_and_none_from_the_others() {
    // After a partition heals, C lacks what A, B and P admitted apart. It reaches all of them
    // again: unasked, P would relay only its own changes (A and B push theirs to C). C asks P
    // for the gap: P sends every writer's changes C lacks, oldest first, a bounded part per
    // answer; the others, asked for nothing meanwhile, send nothing.
    let (mut a, mut b, mut p, mut c) = (
        device("gate-a"),
        device("gate-b"),
        device("gate-p"),
        device("gate-c"),
    );
    let everyone = reaching(&["gate-a", "gate-b", "gate-p"]);
    // Each knows every device (their first admissions came before the partition).
    let firsts: Vec<_> = [&mut a, &mut b, &mut p]
        .into_iter()
        .flat_map(|writer| admit(writer, 1))
        .collect();
    for ledger in [&mut a, &mut b, &mut p, &mut c] {
        ledger
            .receive_changes(&mut PeerSync::default(), &pushed(&firsts), now())
            .unwrap();
    }
    let by_a = admit(&mut a, 30);
    let by_b = admit(&mut b, 20);
    // P takes A's, admits, then takes B's.
    p.receive_changes(&mut PeerSync::default(), &pushed(&by_a), now())
        .unwrap();
    let by_p = admit(&mut p, 5);
    p.receive_changes(&mut PeerSync::default(), &pushed(&by_b), now())
        .unwrap();
    b.receive_changes(&mut PeerSync::default(), &pushed(&by_a), now())
        .unwrap();

    let usual = c.summary_message(&everyone, Wants::Relays);
    let relay = p
        .relay(&mut PeerSync::default(), &usual, &plan(&p, "gate-p", now()))
        .unwrap();
    assert_eq!(relay.changes, by_p.len(), "unasked: P's own");

    // Asked for nothing, B relays nothing (not even its own): C catches up from P.
    let nothing = c.summary_message(&everyone, Wants::Nothing);
    let relay = b
        .relay(
            &mut PeerSync::default(),
            &nothing,
            &plan(&b, "gate-b", now()),
        )
        .unwrap();
    assert_eq!(relay, Relay::default());

    let gap = c.summary_message(&everyone, Wants::Gap);
    let small = RelayPlan {
        catch_up_most: 40,
        ..plan(&p, "gate-p", now())
    };
    let mut to_c = PeerSync::default();
    let first = p.relay(&mut to_c, &gap, &small).unwrap();
    let second = p.relay(&mut to_c, &gap, &small).unwrap();
    let third = p.relay(&mut to_c, &gap, &small).unwrap();
    assert_eq!(
        (first.changes, second.changes, third.changes),
        (40, 15, 0),
        "a part per answer, each change once"
    );
    // Oldest first, in the order P took them: each part builds only on what C holds or the
    // part before (nothing waits at C).
    let order: Vec<_> = by_a.iter().chain(&by_p).chain(&by_b).collect();
    let mut sent = first.frames.concat();
    sent.extend(second.frames.concat());
    let expected: Vec<u8> = order.iter().flat_map(|c| c.bytes.clone()).collect();
    assert_eq!(sent, expected);
    let mut from_p = PeerSync::default();
    for relay in [&first, &second] {
        for frame in &relay.frames {
            c.receive_changes(&mut from_p, frame, now()).unwrap();
        }
        assert_eq!(from_p.waiting(), 0);
    }
    assert_eq!(c.summary(), p.summary());
}

#[test]
fn a_gap_asked_of_a_peer_that_no_longer_has_it_at_hand_brings_what_it_has_and_no_round() {
    // P was reopened from its data: the changes it held before are not at hand (a round of
    // the sync protocol rebuilds them), those it took since are. Asked for a gap, it sends
    // every writer's it has at hand and leaves the rest to the round C starts once nothing
    // comes.
    let (mut a, mut b, mut p, mut c) = (
        device("gate-a"),
        device("gate-b"),
        device("gate-p"),
        device("gate-c"),
    );
    for writer in [&mut a, &mut b] {
        let first = admit(writer, 1);
        for ledger in [&mut p, &mut c] {
            ledger
                .receive_changes(&mut PeerSync::default(), &pushed(&first), now())
                .unwrap();
        }
    }
    let old = admit(&mut a, 10);
    p.receive_changes(&mut PeerSync::default(), &pushed(&old), now())
        .unwrap();
    let node = p.node().clone();
    let mut p = super::checking(
        Ledger::open(
            &event(),
            node,
            &gatemesh_ledger::genesis(&event()),
            Some(&p.save()),
            [],
        )
        .unwrap(),
    );
    let new = admit(&mut b, 10);
    p.receive_changes(&mut PeerSync::default(), &pushed(&new), now())
        .unwrap();
    let gap = c.summary_message(&reaching(&["gate-a", "gate-b", "gate-p"]), Wants::Gap);
    let relay = p
        .relay(&mut PeerSync::default(), &gap, &plan(&p, "gate-p", now()))
        .unwrap();
    assert_eq!((relay.changes, relay.round), (new.len(), None), "{relay:?}");
    assert_eq!(take(&mut c, &relay), new.len());
}

#[test]
fn a_large_push_is_taken_a_bounded_number_at_a_time() {
    // A relayed gap comes as pushes of thousands of changes: a gate takes a part's worth
    // at once and the rest, held back and ready, in the calls after.
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let made = admit(&mut a, 10);
    let mut from_a = PeerSync::default();
    let taken = b
        .receive_changes_upto(&mut from_a, &pushed(&made), now(), 4)
        .unwrap();
    assert_eq!((taken.len(), from_a.waiting()), (4, 6));
    assert_eq!(b.redemption_count(), 4);
    assert!(b.need_message(&from_a).is_none(), "nothing is missing");
    let rest = b.take_waiting(&mut from_a, usize::MAX, now()).unwrap();
    assert_eq!((rest.len(), from_a.waiting()), (6, 0));
    assert_eq!(b.summary(), a.summary());
}

#[test]
fn what_a_peer_has_yet_to_take_is_not_relayed_to_it_again() {
    // After a heal C asks B for the gap: B sends A's 30 changes, and C takes 10 of them at
    // once, the rest a part at a time. Meanwhile C's summaries still lack 20 of A's — and
    // say they are on their way. A (pushing its own) and D (asked for the gap next) send
    // none of them; what C has not been sent at all still goes.
    let (mut a, mut b, mut c, mut d) = (
        device("gate-a"),
        device("gate-b"),
        device("gate-c"),
        device("gate-d"),
    );
    let made = admit(&mut a, 30);
    take_pushed(&mut b, &made);
    take_pushed(&mut d, &made);
    let mut from_b = PeerSync::default();
    let taken = c
        .receive_changes_upto(&mut from_b, &pushed(&made), now(), 10)
        .unwrap();
    assert_eq!((taken.len(), from_b.waiting()), (10, 20));
    let reach = reaching(&["gate-a", "gate-b", "gate-d"]);
    let says = c.summary_message_with(&reach, Wants::Relays, [&from_b]);
    let told = Summary::decode(&says).unwrap();
    assert_eq!(told.coming.get(&actor(&a)), Some(&30));
    assert_eq!(told.summary.tip(&actor(&a)).unwrap().seq, 10);

    let t = now();
    let relayed = |from: &mut Ledger, me: &str, says: &[u8], ms: i64| {
        let plan = plan(from, me, t + ms);
        from.relay(&mut PeerSync::default(), says, &plan)
            .unwrap()
            .changes
    };
    assert_eq!(
        relayed(&mut a, "gate-a", &says, 0),
        0,
        "its own, on their way"
    );
    let gap = c.summary_message_with(&reach, Wants::Gap, [&from_b]);
    assert_eq!(relayed(&mut d, "gate-d", &gap, 0), 0, "the gap, on its way");
    let left_out = d
        .relay(&mut PeerSync::default(), &gap, &plan(&d, "gate-d", t))
        .unwrap()
        .left_out;
    assert_eq!(
        left_out,
        gatemesh_ledger::LeftOut {
            coming: 20,
            ..Default::default()
        }
    );
    // Told nothing of it (the last version's summary), both would send the 20 again.
    let unaware = c.summary_message(&reach, Wants::Relays);
    assert_eq!(relayed(&mut a, "gate-a", &unaware, 0), 20);
    // A admits 5 more, which C was not sent: those go.
    admit(&mut a, 5);
    assert_eq!(relayed(&mut a, "gate-a", &says, 0), 5);
    // C takes the rest: nothing is coming any more.
    c.take_waiting(&mut from_b, usize::MAX, now()).unwrap();
    let taken_all = c.summary_message_with(&reach, Wants::Relays, [&from_b]);
    assert!(Summary::decode(&taken_all).unwrap().coming.is_empty());
}

#[test]
fn what_a_writer_pushed_past_a_gap_is_not_relayed_with_the_gap() {
    // C was partitioned from A, which admitted 20 meanwhile (B took them). Healed, A pushes
    // C its next 5 as it makes them: they wait at C for the 20, which C asks B for. C's
    // summary says the 5 wait past the gap: B relays the 20 and not the 5 (it relayed them
    // too, and half of what a stadium's heal relayed came twice).
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 26);
    take_pushed(&mut b, &made);
    // Before the partition.
    take_pushed(&mut c, &made[..1]);
    let mut from_a = PeerSync::default();
    let taken = c
        .receive_changes(&mut from_a, &pushed(&made[21..]), now())
        .unwrap();
    assert_eq!((taken.len(), from_a.waiting()), (0, 5));
    let reach = reaching(&["gate-a", "gate-b"]);
    let gap = c.summary_message_with(&reach, Wants::Gap, [&from_a]);
    let told = Summary::decode(&gap).unwrap();
    assert!(told.coming.is_empty());
    assert_eq!(told.beyond.get(&actor(&a)), Some(&(22, 26)));
    let mut to_c = PeerSync::default();
    let relay = b
        .relay(&mut to_c, &gap, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!((relay.changes, relay.round), (20, None));
    assert_eq!(
        relay.left_out,
        gatemesh_ledger::LeftOut {
            coming: 5,
            ..Default::default()
        }
    );
    // Asked again before C took them, B sends nothing: they are on their way.
    let again = b
        .relay(&mut to_c, &gap, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(
        (again.changes, again.left_out),
        (
            0,
            gatemesh_ledger::LeftOut {
                on_their_way: 20,
                coming: 5,
                ..Default::default()
            }
        )
    );
    // Taken, the 20 free the 5 that waited: C holds all, each taken once.
    let mut from_b = PeerSync::default();
    for frame in &relay.frames {
        c.receive_changes(&mut from_b, frame, now()).unwrap();
    }
    c.take_waiting(&mut from_a, usize::MAX, now()).unwrap();
    assert_eq!(c.summary(), a.summary());
    assert_eq!(from_a.books().sent_twice() + from_b.books().sent_twice(), 0);
}

#[test]
fn a_gap_leaves_what_a_writer_the_peer_reaches_made_a_moment_ago_to_its_pushes() {
    // C was partitioned from A, which admitted 20 meanwhile (B took them). Healed, C asks B
    // for the gap; A admits 5 more a moment before B reads C's summary, and pushes them to
    // both: C's summary, made before they came, does not say they wait. B relays the 20 and
    // not the 5 (its copy and A's would both come, one waiting while the other is taken).
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 1);
    take_pushed(&mut b, &made);
    take_pushed(&mut c, &made);
    take_pushed(&mut b, &admit(&mut a, 20));
    let a_moment_ago = b.noted() + 1;
    take_pushed(&mut b, &admit(&mut a, 5));
    let plan = RelayPlan {
        noted_before: a_moment_ago,
        ..plan(&b, "gate-b", now())
    };
    let gap = c.summary_message(&reaching(&["gate-a", "gate-b"]), Wants::Gap);
    let relay = b.relay(&mut PeerSync::default(), &gap, &plan).unwrap();
    assert_eq!(relay.changes, 20);
    // The answer says what it held back, and why.
    assert_eq!(
        relay.left_out,
        gatemesh_ledger::LeftOut {
            too_recent: 5,
            ..Default::default()
        }
    );
    // A writer C does not reach goes whole: nobody pushes it C's.
    let gap = c.summary_message(&reaching(&["gate-b"]), Wants::Gap);
    let relay = b.relay(&mut PeerSync::default(), &gap, &plan).unwrap();
    assert_eq!(relay.changes, 25);
    // Asked as usual, B relays nothing of A's, which reaches C.
    let says = c.summary_message(&reaching(&["gate-a", "gate-b"]), Wants::Relays);
    let relay = b.relay(&mut PeerSync::default(), &says, &plan).unwrap();
    assert_eq!(relay.changes, 0);
}

#[test]
fn changes_that_wait_for_one_never_sent_are_not_counted_as_coming() {
    // C was sent A's changes 6 to 10 but not 3 to 5: they wait, and nothing of A's is
    // coming (only changes one after another from A's newest held count). A change of the
    // next number that waits on a change nobody sent counts only if A signed it (the next
    // test): then what it waits on exists, A held it.
    let (mut a, mut c) = (device("gate-a"), device("gate-c"));
    let made = admit(&mut a, 10);
    take_pushed(&mut c, &made[..2]);
    let mut from_b = PeerSync::default();
    let taken = c
        .receive_changes_upto(&mut from_b, &pushed(&made[5..]), now(), usize::MAX)
        .unwrap();
    assert_eq!((taken.len(), from_b.waiting()), (0, 5));
    let says = c.summary_message_with(&[], Wants::Relays, [&from_b]);
    assert!(Summary::decode(&says).unwrap().coming.is_empty());
    // 3 to 5 came from another peer, waiting too (a part at a time): now 3 to 10 are.
    let mut from_d = PeerSync::default();
    c.receive_changes_upto(&mut from_d, &pushed(&made[2..5]), now(), 1)
        .unwrap();
    assert_eq!(from_d.waiting(), 2);
    let says = c.summary_message_with(&[], Wants::Relays, [&from_b, &from_d]);
    assert_eq!(
        Summary::decode(&says).unwrap().coming.get(&actor(&a)),
        Some(&10)
    );
}

#[test]
fn changes_in_a_writers_name_it_did_not_sign_are_never_said_to_be_coming() {
    // A stolen device pushes C changes in A's name that wait on a change nobody has (A's
    // own, re-wrapped with a dependency made up): said to be coming, they would hold back
    // A's relays to C. C does not say so, unsigned or signed by no one: the signature is
    // what shows A made a change, and so held what it builds on. A's genuine changes,
    // waiting the same way (taken a part at a time), are said to be coming.
    let (mut a, mut c) = (device("gate-a"), device("gate-c"));
    let made = admit(&mut a, 6);
    take_pushed(&mut c, &made[..1]);
    let made_up = |sc: &StoredChange, message: Option<String>| {
        let mut e = automerge::Change::from_bytes(sc.bytes.clone())
            .unwrap()
            .decode();
        e.deps.push(automerge::ChangeHash([7; 32]));
        e.message = message;
        automerge::Change::from(e).raw_bytes().to_vec()
    };
    let no_ones = format!("sig1:{}", "A".repeat(86));
    for message in [None, Some(no_ones)] {
        let bytes: Vec<u8> = made[1..]
            .iter()
            .flat_map(|sc| made_up(sc, message.clone()))
            .collect();
        let mut from_thief = PeerSync::default();
        let taken = c
            .receive_changes_upto(&mut from_thief, &bytes, now(), usize::MAX)
            .unwrap();
        assert_eq!((taken.len(), from_thief.waiting()), (0, 5), "{message:?}");
        let reach = reaching(&["gate-a"]);
        let says = c.summary_message_with(&reach, Wants::Relays, [&from_thief]);
        assert!(
            Summary::decode(&says).unwrap().coming.is_empty(),
            "{message:?}"
        );
        // So A sends C its changes 2 to 6, as to any peer that lacks them.
        let plan = plan(&a, "gate-a", now());
        let relay = a.relay(&mut PeerSync::default(), &says, &plan).unwrap();
        assert_eq!(relay.changes, 5, "{message:?}");
    }
    let mut from_b = PeerSync::default();
    c.receive_changes_upto(&mut from_b, &pushed(&made[1..]), now(), 0)
        .unwrap();
    let reach = reaching(&["gate-a"]);
    let says = c.summary_message_with(&reach, Wants::Relays, [&from_b]);
    assert_eq!(
        Summary::decode(&says).unwrap().coming.get(&actor(&a)),
        Some(&6)
    );
    let plan = plan(&a, "gate-a", now());
    let relay = a.relay(&mut PeerSync::default(), &says, &plan).unwrap();
    assert_eq!(relay.changes, 0, "on their way");
}

#[test]
fn what_a_peer_says_is_coming_is_sent_all_the_same_once_it_lacked_it_long() {
    // A peer's summary is its word: one that says A's changes are coming and never takes
    // them (a dishonest peer, or one whose writer is stuck) gets them all the same, once it
    // lacked A's changes for RELAY_LOST_ANYWAY_MS.
    let (mut a, mut c) = (device("gate-a"), device("gate-c"));
    let made = admit(&mut a, 9);
    take_pushed(&mut c, &made[..1]);
    let mut from_b = PeerSync::default();
    c.receive_changes_upto(&mut from_b, &pushed(&made[1..]), now(), 0)
        .unwrap();
    assert_eq!(from_b.waiting(), 8);
    let says = c.summary_message_with(&reaching(&["gate-a"]), Wants::Relays, [&from_b]);
    let t = now();
    let mut to_c = PeerSync::default();
    let mut at = |ms| {
        let plan = plan(&a, "gate-a", t + ms);
        a.relay(&mut to_c, &says, &plan).unwrap().changes
    };
    assert_eq!(at(0), 0);
    assert_eq!(at(RELAY_STUCK_MS), 0);
    assert_eq!(at(RELAY_LOST_ANYWAY_MS), 8);
}

#[test]
fn what_waits_here_from_another_peer_is_not_asked_for_by_hash() {
    // After a heal C takes A's changes a part at a time, relayed by D; B's fresh change
    // builds on them. Asking B for them would have B send the gap again: they are on their
    // way from D.
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let of_a = admit(&mut a, 3);
    take_pushed(&mut b, &of_a);
    let of_b = admit(&mut b, 1);
    let (mut from_d, mut from_b) = (PeerSync::default(), PeerSync::default());
    c.receive_changes_upto(&mut from_d, &pushed(&of_a), now(), 1)
        .unwrap();
    assert_eq!(from_d.waiting(), 2);
    c.receive_changes(&mut from_b, &pushed(&of_b), now())
        .unwrap();
    assert_eq!(from_b.waiting(), 1);
    assert!(c.need_message(&from_b).is_some(), "asked of B, alone");
    assert_eq!(c.need_message_besides(&from_b, [&from_d]), None);
    // Taking D's brings what B's change waited for: it is taken too.
    c.take_waiting(&mut from_d, usize::MAX, now()).unwrap();
    c.take_waiting(&mut from_b, usize::MAX, now()).unwrap();
    assert_eq!((from_d.waiting(), from_b.waiting()), (0, 0));
    assert_eq!(c.summary(), b.summary());
}

#[test]
fn changes_asked_for_by_hash_are_counted_as_asked() {
    let (mut a, mut b) = (device("gate-a"), device("gate-b"));
    let made = admit(&mut a, 2);
    let mut from_a = PeerSync::default();
    b.receive_changes(&mut from_a, &pushed(&made[1..]), now())
        .unwrap();
    let need = b.need_message(&from_a).expect("a request");
    let mut to_b = PeerSync::default();
    let answer = a.answer_need(&mut to_b, &need, 256 * 1024).unwrap();
    assert_eq!(answer.changes, 1);
    let asked = RelayedBy {
        asked: 1,
        ..RelayedBy::default()
    };
    assert_eq!(to_b.relayed_by(), asked);
}

/// Changes a link brought that its books do not place yet: those waiting.
fn unplaced(p: &PeerSync) -> u64 {
    let b = p.books();
    b.came - (b.taken + b.held + b.waiting_already + b.held_when_taken + b.dropped)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// However three peers' pushes of one writer's changes overlap, repeat and come out of
    /// order, each link's books place every change it brought once (taken, held already,
    /// sent again while waiting, held by the time it was taken, dropped), the rest waits,
    /// and the ledger took each change from exactly one link.
    #[test]
    fn every_change_a_link_brings_is_placed_once_in_its_books(
        sends in proptest::collection::vec((0usize..3, 0usize..8, 1usize..4), 1..14),
        most in 1usize..5,
    ) {
        let (mut a, mut b) = (device("gate-a"), device("gate-b"));
        let made = admit(&mut a, 8);
        let mut links = [PeerSync::default(), PeerSync::default(), PeerSync::default()];
        let mut taken = 0usize;
        let mut sent = [0u64; 3];
        for (link, from, len) in sends {
            let part = &made[from..(from + len).min(made.len())];
            sent[link] += part.len() as u64;
            taken += b
                .receive_changes_upto(&mut links[link], &pushed(part), now(), most)
                .unwrap()
                .len();
            for l in &mut links {
                taken += b.take_waiting(l, most, now()).unwrap().len();
            }
            for (l, sent) in links.iter().zip(sent) {
                proptest::prop_assert_eq!(l.books().came, sent);
                proptest::prop_assert_eq!(unplaced(l), l.waiting() as u64);
            }
        }
        loop {
            let more: usize = links
                .iter_mut()
                .map(|l| b.take_waiting(l, most, now()).unwrap().len())
                .sum();
            if more == 0 {
                break;
            }
            taken += more;
        }
        let books_taken: u64 = links.iter().map(|l| l.books().taken).sum();
        proptest::prop_assert_eq!(books_taken, taken as u64);
        proptest::prop_assert_eq!(taken, b.redemptions().len());
        for l in &links {
            proptest::prop_assert_eq!(unplaced(l), l.waiting() as u64);
        }
    }
}

#[test]
fn what_a_ledger_imported_is_at_hand_to_relay_to_a_peer_catching_up_from_it() {
    // A gate that took its side's records by an import (a replacement laptop loaded with the
    // ledger of the one it replaces) and is then asked for a partition's gap: it relays the
    // gap. Before, only what came by a peer was at hand; asked, it sent its own records alone,
    // and the gate catching up gave it up after 10 s and asked the next such peer.
    let (mut a, mut b, mut c) = (device("gate-a"), device("gate-b"), device("gate-c"));
    let made = admit(&mut a, 30);
    let own = admit(&mut b, 5);
    assert_eq!(b.merge_saved(&a.save(), now()).unwrap().len(), made.len());
    let gap = c.summary_message(&reaching(&["gate-b"]), Wants::Gap);
    let relay = b
        .relay(&mut PeerSync::default(), &gap, &plan(&b, "gate-b", now()))
        .unwrap();
    assert_eq!(relay.changes, made.len() + own.len(), "{:?}", relay.round);
    assert_eq!(take(&mut c, &relay), made.len() + own.len());
    assert_eq!(
        c.summary_message(&[], Wants::Relays),
        b.summary_message(&[], Wants::Relays)
    );
}
