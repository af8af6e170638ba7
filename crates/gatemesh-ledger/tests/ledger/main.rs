//! The ledger across nodes and restarts: decisions, flags after a partition, resolutions,
//! idempotent merges, durable storage, refusal of foreign data.

mod attacks;
mod authored;
mod lists;
mod relay;
mod revoke;
mod seal;
mod sync_fuzz;

use gatemesh_ledger::{
    Action, Answer, Direction, Durability, EntryPolicy, Ledger, LedgerError, Listing, NodeId,
    Outcome, Policy, Reason, Redemption, RedemptionId, Resolution, ResolutionId, Role, Scan,
    Signer, Standing, Status, Store, StoreError, Trust, UnlistedPolicy, Verdict, decide, genesis,
};
use gatemesh_ticket::{
    Claims, EventId, Format, IssuerKey, Keyring, TicketId, Verified, Verifier, VerifyError,
};

const T0: i64 = 1_780_000_000_000;
/// This node's clock when it takes a peer's message or a file: now, and at least a day
/// after the scans at `T0` (some tests scan at the real time).
fn now() -> i64 {
    gatemesh_wire::time::now_ms().max(T0 + 86_400_000)
}

fn event() -> EventId {
    EventId::new("ROCK-2026").unwrap()
}

/// The event's mesh CA, made once for the whole test binary.
static CA: std::sync::LazyLock<gatemesh_mesh::pki::CaPem> =
    std::sync::LazyLock::new(|| gatemesh_mesh::pki::create_ca("ROCK-2026", 30).unwrap());

fn trust_of(event: &EventId) -> Trust {
    Trust::from_pem(&CA.cert_pem, event).unwrap()
}

/// A device of `event` enrolled under the CA, as its signer.
fn device_of(event: &EventId, role: Role, name: &str) -> Signer {
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&CA.cert_pem, &CA.key_pem).unwrap();
    let id = gatemesh_mesh::identity::PeerId::new(event.as_str(), role, name);
    let pem = ca.enroll(&id, 30).unwrap();
    Signer::from_pem(&trust_of(event), &pem.cert_pem, &pem.key_pem).unwrap()
}

/// A device of `event` enrolled under the CA, as two signers of the one identity: for a
/// test that opens the device's ledger again after handing the first to it.
fn device_twice(event: &EventId, role: Role, name: &str) -> (Signer, Signer) {
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&CA.cert_pem, &CA.key_pem).unwrap();
    let id = gatemesh_mesh::identity::PeerId::new(event.as_str(), role, name);
    let pem = ca.enroll(&id, 30).unwrap();
    let signer = || Signer::from_pem(&trust_of(event), &pem.cert_pem, &pem.key_pem).unwrap();
    (signer(), signer())
}

/// A device of `event` enrolled under the CA, as its signer, with its private key: for an
/// attacker holding a stolen device, who signs whatever it likes.
fn device_with_key(event: &EventId, role: Role, name: &str) -> (Signer, p256::ecdsa::SigningKey) {
    use p256::pkcs8::DecodePrivateKey;
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&CA.cert_pem, &CA.key_pem).unwrap();
    let id = gatemesh_mesh::identity::PeerId::new(event.as_str(), role, name);
    let pem = ca.enroll(&id, 30).unwrap();
    let signer = Signer::from_pem(&trust_of(event), &pem.cert_pem, &pem.key_pem).unwrap();
    let key = p256::ecdsa::SigningKey::from_pkcs8_pem(&pem.key_pem).unwrap();
    (signer, key)
}

/// The changes of `a` since `heads` written under its actor, signed with `key` as their
/// author signs them (`authored.rs`): a dishonest device signs what it writes so.
pub(crate) fn sign_as_author(
    a: &mut automerge::AutoCommit,
    heads: &[automerge::ChangeHash],
    key: &p256::ecdsa::SigningKey,
) {
    use p256::ecdsa::signature::Signer as _;
    gatemesh_testkit::author::sign_as_author(a, heads, "ROCK-2026", |message| {
        let sig: p256::ecdsa::Signature = key.sign(message);
        sig.to_bytes().to_vec()
    });
}

/// A gate whose key a test holds, to sign as the gate (dishonestly) would: the [`Gate`], and
/// the key.
fn gate_with_key(name: &'static str) -> (Gate, p256::ecdsa::SigningKey) {
    let event = event();
    let (signer, key) = device_with_key(&event, Role::Gate, name);
    let mut ledger =
        Ledger::open(&event, signer.node().clone(), &genesis(&event), None, []).unwrap();
    ledger.sign_with(signer, trust_of(&event)).unwrap();
    let gate = Gate {
        name,
        ledger,
        policy: Policy::default(),
        late: Default::default(),
    };
    (gate, key)
}

/// The server's identity of [`event`] (role `server`): the only writer of standings.
static SERVER: std::sync::LazyLock<Signer> =
    std::sync::LazyLock::new(|| device_of(&event(), Role::Server, "server"));

/// Writes `standing` of `tid` into `ledger` as the server signed it (its certificate learned
/// first), as a gate takes the server's word.
fn server_says(ledger: &mut Ledger, tid: &TicketId, standing: Standing, at_ms: i64) {
    let s = server_status(tid, standing, at_ms);
    ledger.learn_device(&SERVER.device().cert_der).unwrap();
    ledger.record_status(&s, "from the server").unwrap();
}

/// The server's signed record of `standing` of `tid`.
fn server_status(tid: &TicketId, standing: Standing, at_ms: i64) -> Status {
    let mut s = Status {
        sig: None,
        tid: tid.clone(),
        standing,
        by: "server".into(),
        at_ms,
        hlc: gatemesh_ledger::Hlc {
            wall_ms: at_ms,
            counter: 0,
            node: SERVER.node().clone(),
        },
    };
    SERVER.sign_status(&event(), &mut s).unwrap();
    s
}

/// A ledger of `event` written by a new device of `role`, signing and checking.
fn signed_ledger(event: &EventId, role: Role, name: &str) -> Ledger {
    let signer = device_of(event, role, name);
    let mut ledger = Ledger::open(event, signer.node().clone(), &genesis(event), None, []).unwrap();
    ledger.sign_with(signer, trust_of(event)).unwrap();
    ledger
}

fn ledger() -> Ledger {
    signed_ledger(&event(), Role::Gate, "gate")
}

/// `ledger`, checking what it takes against the CA.
fn checking(mut ledger: Ledger) -> Ledger {
    let event = ledger.event().clone();
    ledger.check_with(trust_of(&event)).unwrap();
    ledger
}

/// A gate as far as the ledger is concerned: decide, and record what the decision says.
struct Gate {
    name: &'static str,
    ledger: Ledger,
    policy: Policy,
    /// How late it answered its own entries, as a gate's writer notes it.
    late: std::collections::HashMap<RedemptionId, i64>,
}

impl Gate {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            ledger: ledger(),
            policy: Policy::default(),
            late: std::collections::HashMap::new(),
        }
    }

    fn scan_dir(
        &mut self,
        tid: &TicketId,
        scanner: &str,
        now_ms: i64,
        direction: Direction,
    ) -> Answer {
        let verified: Result<Verified, VerifyError> = Ok(verified(tid));
        let state = self.ledger.ticket(tid);
        let node = self.ledger.node().clone();
        let scan = Scan {
            node: &node,
            scanner,
            direction,
            now_ms,
            answered_late: Some(&self.late),
        };
        match decide(
            &verified,
            Some(&state),
            Listing::NoManifest,
            &self.policy,
            &scan,
        ) {
            Outcome::Answer(a) => a,
            Outcome::Record {
                direction,
                reason,
                unlisted,
            } => {
                let r = Redemption {
                    manual: None,
                    sig: None,
                    id: RedemptionId::random(),
                    tid: tid.clone(),
                    direction,
                    node: node.clone(),
                    gate: self.name.into(),
                    scanner: scanner.into(),
                    at_ms: now_ms,
                    hlc: self.ledger.tick(now_ms),
                    seen: state.redemption_ids(),
                    unlisted,
                    scope: None,
                };
                self.ledger.record_redemption(&r).unwrap();
                Answer {
                    verdict: Verdict::Admit,
                    reason,
                    first: None,
                    redemption_id: Some(r.id),
                    transferred_to: None,
                }
            }
        }
    }

    fn scan(&mut self, tid: &TicketId, scanner: &str, now_ms: i64) -> Answer {
        self.scan_dir(tid, scanner, now_ms, Direction::Entry)
    }

    fn resolve(&mut self, tid: &TicketId, action: Action, now_ms: i64) {
        let state = self.ledger.ticket(tid);
        let r = Resolution {
            sig: None,
            id: ResolutionId::random(),
            tid: tid.clone(),
            action,
            staff: "sam".into(),
            note: "checked the wristband".into(),
            node: self.ledger.node().clone(),
            at_ms: now_ms,
            hlc: self.ledger.tick(now_ms),
            covers: state.flagged().iter().map(|r| r.id.clone()).collect(),
            from_server: false,
        };
        self.ledger.record_resolution(&r).unwrap();
    }

    /// Takes in everything `other` knows.
    fn learn(&mut self, other: &mut Gate) {
        let bytes = other.ledger.save();
        self.ledger.merge_saved(&bytes, now()).unwrap();
    }
}

fn verified(tid: &TicketId) -> Verified {
    Verified {
        format: Format::Gm1,
        kid: gatemesh_ticket::KeyId::new("k").unwrap(),
        claims: Claims {
            tid: tid.clone(),
            eid: event(),
            seat: None,
            iat: None,
            nbf: None,
            exp: None,
            product: None,
        },
    }
}

fn flagged(g: &Gate) -> Vec<TicketId> {
    g.ledger.flagged().cloned().collect()
}

#[test]
fn admit_then_double_fire_then_duplicate_naming_the_first_gate() {
    let mut a = Gate::new("North 1");
    let tid = TicketId::generate();
    let first = a.scan(&tid, "s1", T0);
    assert_eq!(
        (first.verdict, first.reason),
        (Verdict::Admit, Reason::Valid)
    );
    // The same scanner again within 10 s: the same green answer, the same redemption.
    let again = a.scan(&tid, "s1", T0 + 9_000);
    assert_eq!(again.verdict, Verdict::Admit);
    assert_eq!(again.redemption_id, first.redemption_id);
    // Another scanner, or the same one later: yellow, naming the first use.
    for (scanner, at) in [("s2", T0 + 1_000), ("s1", T0 + 11_000)] {
        let dup = a.scan(&tid, scanner, at);
        assert_eq!(
            (dup.verdict, dup.reason),
            (Verdict::Duplicate, Reason::AlreadyAdmitted)
        );
        let f = dup.first.unwrap();
        assert_eq!(
            (f.gate.as_str(), f.scanner.as_str(), f.at_ms),
            ("North 1", "s1", T0)
        );
    }
    assert_eq!(a.ledger.ticket(&tid).redemptions.len(), 1);
}

/// A gate that answered an entry late (its writer behind, the scanner asking again meanwhile)
/// counts the repeat window from its answer: an ask of the same scanner within the window
/// after the answer gets the first answer, not "already admitted" for a holder never told.
#[test]
fn an_entry_answered_late_repeats_for_the_window_after_its_answer() {
    let mut a = Gate::new("North 1");
    let tid = TicketId::generate();
    let first = a.scan(&tid, "s1", T0);
    assert_eq!(first.verdict, Verdict::Admit);
    // Presented at T0, answered 6 s later.
    a.late.insert(first.redemption_id.clone().unwrap(), 6_000);
    for at in [T0 + 4_000, T0 + 12_000, T0 + 16_000] {
        let again = a.scan(&tid, "s1", at);
        assert_eq!(
            (again.verdict, &again.redemption_id),
            (Verdict::Admit, &first.redemption_id),
            "presented {} ms after the first",
            at - T0
        );
    }
    // Past the window after the answer, or another scanner: yellow, naming the first.
    for (scanner, at) in [("s1", T0 + 16_001), ("s2", T0 + 12_000)] {
        let dup = a.scan(&tid, scanner, at);
        assert_eq!(
            (dup.verdict, dup.reason),
            (Verdict::Duplicate, Reason::AlreadyAdmitted),
            "{scanner} at +{}",
            at - T0
        );
    }
    // Before its presentation is never a repeat, however late the answer.
    a.late.insert(first.redemption_id.clone().unwrap(), 60_000);
    assert_eq!(a.scan(&tid, "s1", T0 - 1).verdict, Verdict::Duplicate);
    assert_eq!(a.ledger.ticket(&tid).redemptions.len(), 1);
}

#[test]
fn a_double_fire_stays_green_when_a_concurrent_entry_arrives_in_between() {
    // A screenshot is admitted at A and, a moment later, the original at B; A's entry
    // reaches B between the two shots of B's double-firing scanner.
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    let tid = TicketId::generate();
    assert_eq!(a.scan(&tid, "a1", T0).verdict, Verdict::Admit);
    let first = b.scan(&tid, "b1", T0 + 50);
    assert_eq!(first.verdict, Verdict::Admit);
    b.learn(&mut a);
    let again = b.scan(&tid, "b1", T0 + 250);
    assert_eq!(again.verdict, Verdict::Admit, "the same green answer");
    assert_eq!(again.redemption_id, first.redemption_id);
    assert_eq!(
        b.ledger.ticket(&tid).redemptions.len(),
        2,
        "nothing new recorded"
    );
    assert_eq!(
        flagged(&b),
        vec![tid.clone()],
        "and the two entries are flagged"
    );
    // Another scanner at B is told of the first use, which is A's.
    let dup = b.scan(&tid, "b2", T0 + 300);
    assert_eq!(dup.verdict, Verdict::Duplicate);
    assert_eq!(dup.first.unwrap().gate, "A");
}

#[test]
fn an_own_admit_dated_in_the_future_is_no_repeat() {
    // The node's clock was a second ahead when it admitted, then was stepped back: the same
    // scanner's next scan is told of the first use, as any other scanner is, and nothing is
    // recorded. Once the clock passes the record, the window holds again.
    let mut a = Gate::new("North 1");
    let tid = TicketId::generate();
    let first = a.scan(&tid, "s1", T0 + 1_000);
    assert_eq!(first.verdict, Verdict::Admit);
    let again = a.scan(&tid, "s1", T0);
    assert_eq!(
        (again.verdict, again.reason),
        (Verdict::Duplicate, Reason::AlreadyAdmitted)
    );
    assert_eq!(
        again.first.as_ref().map(|f| &f.redemption_id),
        first.redemption_id.as_ref()
    );
    assert_eq!(again, a.scan(&tid, "s2", T0), "what another scanner gets");
    assert_eq!(a.ledger.ticket(&tid).redemptions.len(), 1);
    let later = a.scan(&tid, "s1", T0 + 2_000);
    assert_eq!(later.verdict, Verdict::Admit);
    assert_eq!(later.redemption_id, first.redemption_id);
}

#[test]
fn the_repeat_window_takes_a_record_a_second_old_and_not_one_a_second_ahead() {
    // A record of this node and scanner, as a peer could forge it: a second in the past it is
    // a double fire; a second in the future the scan is decided as if another scanner had
    // written it (here: a duplicate).
    let tid = TicketId::generate();
    let node = NodeId::random();
    let history = |at_ms: i64, scanner: &str| gatemesh_ledger::TicketState {
        redemptions: vec![Redemption {
            manual: None,
            sig: None,
            id: RedemptionId::random(),
            tid: tid.clone(),
            direction: Direction::Entry,
            node: node.clone(),
            gate: "North 1".into(),
            scanner: scanner.into(),
            at_ms,
            hlc: gatemesh_ledger::Hlc {
                wall_ms: at_ms,
                counter: 0,
                node: node.clone(),
            },
            seen: vec![],
            unlisted: false,
            scope: None,
        }],
        ..Default::default()
    };
    let decide_at = |state: &gatemesh_ledger::TicketState| {
        let scan = Scan {
            node: &node,
            scanner: "s1",
            direction: Direction::Entry,
            now_ms: T0,
            answered_late: None,
        };
        let verified = Ok(verified(&tid));
        decide(
            &verified,
            Some(state),
            Listing::NoManifest,
            &Policy::default(),
            &scan,
        )
    };

    let past = history(T0 - 1_000, "s1");
    match decide_at(&past) {
        Outcome::Answer(a) => {
            assert_eq!((a.verdict, a.reason), (Verdict::Admit, Reason::Valid));
            assert_eq!(a.redemption_id.as_ref(), Some(&past.redemptions[0].id));
        }
        other => panic!("a double fire is answered, not recorded: {other:?}"),
    }

    let future = history(T0 + 1_000, "s1");
    let mut by_another_scanner = future.clone();
    by_another_scanner.redemptions[0].scanner = "s2".into();
    let answer = |state| match decide_at(state) {
        Outcome::Answer(a) => (
            a.verdict,
            a.reason,
            a.first.map(|f| f.redemption_id),
            a.redemption_id,
        ),
        other => panic!("a duplicate is answered, not recorded: {other:?}"),
    };
    let first = Some(future.redemptions[0].id.clone());
    assert_eq!(
        answer(&future),
        (Verdict::Duplicate, Reason::AlreadyAdmitted, first, None)
    );
    assert_eq!(answer(&future), answer(&by_another_scanner));
}

#[test]
fn an_admit_at_one_gate_is_a_duplicate_at_another_after_sync() {
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    let tid = TicketId::generate();
    a.scan(&tid, "a1", T0);
    b.learn(&mut a);
    let dup = b.scan(&tid, "b1", T0 + 5_000);
    assert_eq!(dup.verdict, Verdict::Duplicate);
    assert_eq!(dup.first.unwrap().gate, "A");
    assert!(
        flagged(&b).is_empty(),
        "a sequential second scan is a duplicate, not a flag"
    );
}

#[test]
fn admits_on_both_sides_of_a_partition_are_flagged_in_either_merge_order() {
    for a_learns_first in [true, false] {
        let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
        let tid = TicketId::generate();
        let other = TicketId::generate();
        assert_eq!(a.scan(&tid, "a1", T0).verdict, Verdict::Admit);
        assert_eq!(b.scan(&tid, "b1", T0 + 1).verdict, Verdict::Admit);
        b.scan(&other, "b1", T0 + 2);
        if a_learns_first {
            a.learn(&mut b);
            b.learn(&mut a);
        } else {
            b.learn(&mut a);
            a.learn(&mut b);
        }
        for g in [&a, &b] {
            assert_eq!(flagged(g), vec![tid.clone()]);
            assert_eq!(g.ledger.ticket(&tid).flagged().len(), 2);
        }
        // Merging again changes nothing.
        let before = a.ledger.save();
        a.learn(&mut b);
        a.learn(&mut b);
        assert_eq!(a.ledger.save(), before);
        assert_eq!(flagged(&a), vec![tid.clone()]);
    }
}

#[test]
fn resolutions_replicate_and_clear_or_confirm_flags() {
    for (action, next) in [
        (Action::Accept, Verdict::Duplicate),
        (Action::Deny, Verdict::Reject),
        (Action::Revert, Verdict::Admit),
    ] {
        let (mut a, mut b, mut c) = (Gate::new("A"), Gate::new("B"), Gate::new("C"));
        let tid = TicketId::generate();
        a.scan(&tid, "a1", T0);
        b.scan(&tid, "b1", T0);
        c.learn(&mut a);
        c.learn(&mut b);
        assert_eq!(flagged(&c), vec![tid.clone()]);
        c.resolve(&tid, action, T0 + 60_000);
        a.learn(&mut c);
        b.learn(&mut c);
        for g in [&mut a, &mut b, &mut c] {
            assert!(flagged(g).is_empty(), "{action:?}");
            let audit = g.ledger.audit();
            assert_eq!(audit.len(), 1);
            assert_eq!(audit[0].action, format!("resolve:{}", action.as_str()));
            assert_eq!(audit[0].actor, "sam");
        }
        let answer = a.scan(&tid, "a2", T0 + 120_000);
        assert_eq!(answer.verdict, next, "{action:?}");
        if action == Action::Deny {
            assert_eq!(answer.reason, Reason::Denied);
        }
    }
}

#[test]
fn a_third_concurrent_admit_after_a_resolution_flags_again() {
    let (mut a, mut b, mut c) = (Gate::new("A"), Gate::new("B"), Gate::new("C"));
    let tid = TicketId::generate();
    a.scan(&tid, "a1", T0);
    b.scan(&tid, "b1", T0);
    c.scan(&tid, "c1", T0); // C is still cut off
    a.learn(&mut b);
    a.resolve(&tid, Action::Accept, T0 + 1_000);
    assert!(flagged(&a).is_empty());
    a.learn(&mut c);
    assert_eq!(flagged(&a), vec![tid]);
}

#[test]
fn standings_void_and_transfer_are_refused() {
    let mut a = Gate::new("A");
    let (void, moved, new) = (
        TicketId::generate(),
        TicketId::generate(),
        TicketId::generate(),
    );
    for (tid, standing) in [
        (
            &void,
            Standing::Void {
                reason: "refund".into(),
            },
        ),
        (&moved, Standing::Transferred { to: new.clone() }),
    ] {
        server_says(&mut a.ledger, tid, standing, T0);
    }
    assert_eq!(a.scan(&void, "a1", T0 + 1).reason, Reason::Void);
    let t = a.scan(&moved, "a1", T0 + 1);
    assert_eq!(
        (t.reason, t.transferred_to),
        (Reason::Transferred, Some(new.clone()))
    );
    assert_eq!(a.scan(&new, "a1", T0 + 1).verdict, Verdict::Admit);
    assert_eq!(a.ledger.audit().len(), 2);
}

#[test]
fn a_double_fire_stays_green_when_a_refund_arrives_in_between() {
    // A scanner reads the code twice; the refund reaches the gate between the two reads.
    // The holder in front of it was admitted under the standing the gate knew: the second
    // read is the same green answer. Another scanner, or the same one after the window,
    // refuses the ticket as void.
    let mut a = Gate::new("A");
    let tid = TicketId::generate();
    let first = a.scan(&tid, "a1", T0);
    assert_eq!(first.verdict, Verdict::Admit);
    let void = Standing::Void {
        reason: "refund".into(),
    };
    server_says(&mut a.ledger, &tid, void, T0 + 100);
    let again = a.scan(&tid, "a1", T0 + 300);
    assert_eq!(
        (again.verdict, again.redemption_id),
        (Verdict::Admit, first.redemption_id)
    );
    assert_eq!(a.scan(&tid, "a2", T0 + 400).reason, Reason::Void);
    assert_eq!(a.scan(&tid, "a1", T0 + 60_000).reason, Reason::Void);
    assert_eq!(a.ledger.ticket(&tid).redemptions.len(), 1);
}

#[test]
fn reentry_needs_an_exit_scan_between_entries() {
    let mut a = Gate::new("A");
    a.policy.entry = EntryPolicy::Reentry;
    let tid = TicketId::generate();
    assert_eq!(
        a.scan_dir(&tid, "out", T0, Direction::Exit).reason,
        Reason::NotInside
    );
    assert_eq!(a.scan(&tid, "in", T0).reason, Reason::Valid);
    assert_eq!(a.scan(&tid, "in2", T0 + 1).verdict, Verdict::Duplicate);
    assert_eq!(
        a.scan_dir(&tid, "out", T0 + 2, Direction::Exit).reason,
        Reason::Exit
    );
    assert_eq!(a.scan(&tid, "in", T0 + 60_000).reason, Reason::Reentry);
    let mut single = Gate::new("B");
    assert_eq!(
        single.scan_dir(&tid, "out", T0, Direction::Exit).reason,
        Reason::ExitNotAllowed
    );
}

#[test]
fn manifest_listing_and_unlisted_policy() {
    let node = NodeId::random();
    let tid = TicketId::generate();
    let scan = Scan {
        node: &node,
        scanner: "s",
        direction: Direction::Entry,
        now_ms: T0,
        answered_late: None,
    };
    let ok = Ok(verified(&tid));
    let mut policy = Policy::default();
    let admit = decide(&ok, None, Listing::Unlisted, &policy, &scan);
    assert_eq!(
        admit,
        Outcome::Record {
            direction: Direction::Entry,
            reason: Reason::Unlisted,
            unlisted: true
        }
    );
    policy.unlisted = UnlistedPolicy::Reject;
    assert!(matches!(
        decide(&ok, None, Listing::Unlisted, &policy, &scan),
        Outcome::Answer(Answer {
            verdict: Verdict::Reject,
            reason: Reason::UnknownTicket,
            ..
        })
    ));
    assert!(matches!(
        decide(&ok, None, Listing::Listed, &policy, &scan),
        Outcome::Record { .. }
    ));
}

#[test]
fn every_ticket_refusal_maps_to_its_reason() {
    let key = IssuerKey::generate(None);
    let v = Verifier::new(Keyring::from_keys([key.public()]).unwrap()).for_event(event());
    let node = NodeId::random();
    let scan = Scan {
        node: &node,
        scanner: "s",
        direction: Direction::Entry,
        now_ms: T0,
        answered_late: None,
    };
    let tid = TicketId::generate();
    let claims = |eid: &str, nbf, exp| Claims {
        tid: tid.clone(),
        eid: EventId::new(eid).unwrap(),
        seat: None,
        iat: None,
        nbf,
        exp,
        product: None,
    };
    let now = T0 / 1000;
    let cases = [
        ("garbage".to_owned(), Reason::Unreadable),
        (
            key.sign(&claims("JAZZ", None, None), Format::Jwt).unwrap(),
            Reason::WrongEvent,
        ),
        (
            key.sign(&claims("ROCK-2026", None, Some(now - 1)), Format::Gm1)
                .unwrap(),
            Reason::Expired,
        ),
        (
            key.sign(&claims("ROCK-2026", Some(now + 60), None), Format::Gm1)
                .unwrap(),
            Reason::NotYetValid,
        ),
        (
            IssuerKey::generate(None)
                .sign(&claims("ROCK-2026", None, None), Format::Gm1)
                .unwrap(),
            Reason::UnknownKey,
        ),
    ];
    for (code, reason) in cases {
        let out = decide(
            &v.verify(&code, now),
            None,
            Listing::NoManifest,
            &Policy::default(),
            &scan,
        );
        assert!(
            matches!(out, Outcome::Answer(Answer { verdict: Verdict::Reject, reason: r, .. }) if r == reason),
            "{reason:?}: {out:?}"
        );
    }
}

#[test]
fn foreign_or_broken_imports_change_nothing() {
    let mut a = Gate::new("A");
    let tid = TicketId::generate();
    a.scan(&tid, "a1", T0);
    let before = a.ledger.save();

    let other_event = EventId::new("JAZZ-2026").unwrap();
    let mut jazz = signed_ledger(&other_event, Role::Gate, "jazz");
    assert!(matches!(
        a.ledger.merge_saved(&jazz.save(), now()),
        Err(LedgerError::WrongEvent { .. })
    ));
    let mut truncated = Gate::new("B");
    truncated.scan(&TicketId::generate(), "b1", T0);
    let bytes = truncated.ledger.save();
    for bad in [&b"not a ledger"[..], &bytes[..bytes.len() / 2], &[]] {
        assert!(a.ledger.merge_saved(bad, now()).is_err());
    }
    assert_eq!(a.ledger.save(), before);
}

fn redemption(ledger: &mut Ledger, tid: &TicketId, at_ms: i64) -> Redemption {
    Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: tid.clone(),
        direction: Direction::Entry,
        node: ledger.node().clone(),
        gate: "A".into(),
        scanner: "a1".into(),
        at_ms,
        hlc: ledger.tick(at_ms),
        seen: vec![],
        unlisted: false,
        scope: None,
    }
}

/// A store set up in a directory of its own (kept while the `TempDir` lives), its path, and
/// the unsigned ledger it opens as.
fn fresh_store() -> (tempfile::TempDir, std::path::PathBuf, Store, Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gate.sqlite");
    let mut store = Store::open(&path, Durability::Power).unwrap();
    let stored = store.load_or_init(&event()).unwrap();
    let ledger = Ledger::open(&event(), stored.node, &stored.genesis, None, []).unwrap();
    (dir, path, store, ledger)
}

#[test]
fn storage_restores_the_same_ledger_and_node_after_restart_and_compaction() {
    let (_dir, path, mut store, mut ledger) = fresh_store();
    let node = ledger.node().clone();
    let tids: Vec<TicketId> = (0..50).map(|_| TicketId::generate()).collect();
    for (i, tid) in tids.iter().enumerate() {
        let r = redemption(&mut ledger, tid, T0 + i as i64);
        let change = ledger.record_redemption(&r).unwrap().expect("a new change");
        store.append(&[change]).unwrap();
        if i == 20 {
            store.compact(&ledger.save()).unwrap();
        }
    }
    assert_eq!(store.pending_changes().unwrap(), 29);
    let expected = ledger.save();
    drop((store, ledger));

    let mut store = Store::open(&path, Durability::Power).unwrap();
    let again = store.load_or_init(&event()).unwrap();
    assert_eq!(again.node, node, "the node id survives a restart");
    assert_eq!(again.genesis, genesis(&event()));
    assert_eq!(again.changes.len(), 29);
    let mut ledger = reopened_from(again);
    assert_eq!(ledger.save(), expected);
    for tid in &tids {
        assert_eq!(ledger.ticket(tid).redemptions.len(), 1);
    }
    // The clock moved past everything stored: new records sort after the old ones.
    let last = ledger.ticket(tids.last().unwrap()).redemptions[0]
        .hlc
        .clone();
    assert!(ledger.tick(T0) > last);
    // The data directory of one event refuses another.
    let jazz = EventId::new("JAZZ-2026").unwrap();
    assert!(matches!(
        store.load_or_init(&jazz),
        Err(StoreError::WrongEvent { .. })
    ));
}

#[test]
fn a_snapshot_saved_elsewhere_folds_only_the_rows_it_holds() {
    // The gate copies its document, saves it on another thread and stores the snapshot
    // when it is done: rows stored meanwhile stay rows, and a snapshot older than the one
    // stored is not taken.
    let (_dir, path, mut store, mut ledger) = fresh_store();
    let tids: Vec<TicketId> = (0..30).map(|_| TicketId::generate()).collect();
    let admit = |ledger: &mut Ledger, store: &mut Store, tids: &[TicketId]| {
        for tid in tids {
            let r = redemption(ledger, tid, T0);
            store
                .append(&[ledger.record_redemption(&r).unwrap().unwrap()])
                .unwrap();
        }
    };
    admit(&mut ledger, &mut store, &tids[..10]);
    let (old_copy, old_through) = (ledger.to_save(), store.last_seq().unwrap());
    admit(&mut ledger, &mut store, &tids[10..20]);
    let (copy, through) = (ledger.to_save(), store.last_seq().unwrap());
    admit(&mut ledger, &mut store, &tids[20..]);
    let saved = std::thread::spawn(move || copy.save()).join().unwrap();
    store.compact_through(&saved, through).unwrap();
    assert_eq!(
        store.pending_changes().unwrap(),
        10,
        "the rows stored meanwhile"
    );
    store
        .compact_through(&old_copy.save(), old_through)
        .unwrap();
    assert_eq!(
        store.pending_changes().unwrap(),
        10,
        "an older snapshot is not taken"
    );
    let expected = ledger.save();
    drop((store, ledger));
    let mut store = Store::open(&path, Durability::Power).unwrap();
    let mut ledger = reopened_from(store.load_or_init(&event()).unwrap());
    assert_eq!(ledger.save(), expected);
    for tid in &tids {
        assert_eq!(ledger.ticket(tid).redemptions.len(), 1);
    }
}

#[test]
fn a_store_written_by_a_newer_gatemesh_is_refused_by_name_and_left_as_it_is() {
    use gatemesh_ledger::STORE_FORMAT;
    let (_dir, path, mut store, mut ledger) = fresh_store();
    let r = redemption(&mut ledger, &TicketId::generate(), T0);
    store
        .append(&[ledger.record_redemption(&r).unwrap().unwrap()])
        .unwrap();
    drop(store);
    let sql = rusqlite::Connection::open(&path).unwrap();
    let meta = |key: &str| -> Option<String> {
        sql.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .ok()
        .map(|b| String::from_utf8(b).unwrap())
    };
    let rows = || -> i64 {
        sql.query_row("SELECT COUNT(*) FROM changes", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(meta("format"), Some(STORE_FORMAT.to_string()));
    // A store from before the format was kept gets it when opened.
    sql.execute("DELETE FROM meta WHERE key = 'format'", [])
        .unwrap();
    Store::open(&path, Durability::Power)
        .unwrap()
        .load_or_init(&event())
        .unwrap();
    assert_eq!(meta("format"), Some(STORE_FORMAT.to_string()));
    // A newer gatemesh wrote it: refused by name, nothing changed.
    let newer = STORE_FORMAT + 1;
    sql.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'format'",
        [newer.to_string().as_bytes()],
    )
    .unwrap();
    let why = Store::open(&path, Durability::Power)
        .unwrap()
        .load_or_init(&event())
        .unwrap_err();
    assert!(
        matches!(why, StoreError::Newer { found } if found == newer),
        "{why}"
    );
    assert!(why.to_string().contains("newer gatemesh"), "{why}");
    assert_eq!(meta("format"), Some(newer.to_string()));
    assert_eq!(rows(), 1);
    // One that does not read is damaged, not taken for an old one.
    sql.execute("UPDATE meta SET value = X'7a' WHERE key = 'format'", [])
        .unwrap();
    let why = Store::open(&path, Durability::Power)
        .unwrap()
        .load_or_init(&event())
        .unwrap_err();
    assert!(matches!(why, StoreError::Corrupt(_)), "{why}");
    assert_eq!(meta("format"), Some("z".into()));
}

/// The ledger a store's rows open as, after a restart.
fn reopened_from(stored: gatemesh_ledger::Stored) -> Ledger {
    Ledger::open(
        &event(),
        stored.node,
        &stored.genesis,
        stored.snapshot.as_deref(),
        stored.changes,
    )
    .unwrap()
}

#[test]
fn a_damaged_change_row_is_caught_on_load() {
    let event = event();
    let mut g = Gate::new("A");
    let tid = TicketId::generate();
    let node = g.ledger.node().clone();
    let r = redemption(&mut g.ledger, &tid, T0);
    let mut change = g.ledger.record_redemption(&r).unwrap().unwrap();
    let n = change.bytes.len();
    change.bytes[n - 3] ^= 0x40;
    let err = Ledger::open(&event, node, &genesis(&event), None, [change]).unwrap_err();
    assert!(matches!(err, LedgerError::Corrupt(_)), "{err}");
}

#[test]
fn genesis_is_the_same_bytes_everywhere() {
    // Every node of an event builds the genesis itself; if an engine upgrade ever encoded
    // it differently, nodes would create the root maps twice. This pins the bytes.
    let g = genesis(&event());
    assert_eq!(g, genesis(&event()));
    let hash = sha_hex(&g);
    assert_eq!(
        hash,
        include_str!("genesis-rock-2026.fnv64").trim(),
        "genesis bytes changed"
    );
}

fn sha_hex(bytes: &[u8]) -> String {
    // FNV-1a 64 is enough to pin bytes in a test; no crypto needed here.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Runs the sync protocol between two ledgers until neither has anything to send; returns
/// the changes each side learned.
/// What `l` builds on, in order: two ledgers that hold the same history give the same.
fn sorted_heads(l: &mut Ledger) -> Vec<automerge::ChangeHash> {
    let mut heads = l.heads();
    heads.sort();
    heads
}

fn sync_pair(a: &mut Ledger, b: &mut Ledger) -> (usize, usize) {
    let mut states = Default::default();
    sync_pair_watched(a, b, &mut states, 20, |_, _| {})
}

/// [`sync_pair`] with the two sides' states given (`a`'s of `b`, `b`'s of `a`), at most
/// `rounds` exchanges, and every message shown to `watch` (`true` when `a` sent it).
fn sync_pair_watched(
    a: &mut Ledger,
    b: &mut Ledger,
    (sa, sb): &mut (gatemesh_ledger::PeerSync, gatemesh_ledger::PeerSync),
    rounds: usize,
    mut watch: impl FnMut(bool, &[u8]),
) -> (usize, usize) {
    let (mut learned_a, mut learned_b) = (0, 0);
    for _ in 0..rounds {
        let mut progressed = false;
        if let Some(m) = a.sync_message(sa) {
            watch(true, &m);
            learned_b += b.receive_sync(sb, &m, now()).unwrap().len();
            progressed = true;
        }
        if let Some(m) = b.sync_message(sb) {
            watch(false, &m);
            learned_a += a.receive_sync(sa, &m, now()).unwrap().len();
            progressed = true;
        }
        if !progressed {
            return (learned_a, learned_b);
        }
    }
    panic!("sync did not converge");
}

/// The first byte of a sync message that may carry a whole document (automerge's V2).
const WHOLE_MESSAGE: u8 = 0x43;

/// Syncs `north` and `south` with messages of at most `most` bytes of changes and whole
/// ledgers of at most `whole`; asserts that no message carried more, and that each side sent
/// at least three messages with changes. Returns what each learned.
fn sync_in_small_messages(
    north: &mut Gate,
    south: &mut Gate,
    (most, whole): (usize, usize),
) -> (usize, usize) {
    let mut states = (
        gatemesh_ledger::PeerSync::with_message_most(most, whole),
        gatemesh_ledger::PeerSync::with_message_most(most, whole),
    );
    let mut carrying = [0usize; 2];
    let learned = sync_pair_watched(
        &mut north.ledger,
        &mut south.ledger,
        &mut states,
        200,
        |from_north, m| {
            let changes = gatemesh_ledger::SyncInParts::parse(m).unwrap().left();
            // Heads, what it needs and a bloom filter of what it has: well under 4 KiB here.
            assert!(
                changes <= 1 || m.len() <= most + 4096,
                "a message of {} bytes, {changes} changes",
                m.len()
            );
            if changes > 0 {
                carrying[usize::from(from_north)] += 1;
            }
        },
    );
    assert!(
        carrying.iter().all(|&n| n >= 3),
        "the gap went in several messages each way: {carrying:?}"
    );
    let (mut hn, mut hs) = (north.ledger.heads(), south.ledger.heads());
    hn.sort();
    hs.sort();
    assert_eq!(hn, hs, "both hold the same history");
    learned
}

/// Both sides admit `n` tickets, `both` of them on both sides.
fn apart(north: &mut Gate, south: &mut Gate, n: usize, both: &[TicketId], t0: i64) {
    for i in 0..n {
        let at = t0 + i as i64;
        match both.get(i) {
            Some(tid) => {
                north.scan(tid, "n1", at);
                south.scan(tid, "s1", at);
            }
            None => {
                north.scan(&TicketId::generate(), "n1", at);
                south.scan(&TicketId::generate(), "s1", at);
            }
        }
    }
}

#[test]
fn a_gap_larger_than_one_message_goes_in_several() {
    // North and South held the same 120 admissions, then were apart: each admitted 150
    // more, 12 of the same tickets on both sides. Healed, each lacks more than a third of
    // the other's ledger, where automerge sends the whole document; here one larger than
    // 16 KiB is not sent (as one over 31 MiB is not: over a mesh frame's limit), and the
    // changes go in messages of at most 8 KiB of changes each.
    const MOST: (usize, usize) = (8 * 1024, 16 * 1024);
    let t0 = 1_795_000_000_000;
    let (mut north, mut south) = (Gate::new("North"), Gate::new("South"));
    for i in 0..120 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    sync_pair(&mut north.ledger, &mut south.ledger);
    let both: Vec<TicketId> = (0..12).map(|_| TicketId::generate()).collect();
    apart(&mut north, &mut south, 150, &both, t0 + 1_000);
    let learned = sync_in_small_messages(&mut north, &mut south, MOST);
    assert_eq!(learned, (150, 150), "each learned the other's gap");
    for g in [&north, &south] {
        assert_eq!(flagged(g).len(), 12, "every ticket admitted on both sides");
        assert_eq!(g.ledger.redemption_count(), 120 + 2 * 150);
    }
    // Apart again, for less than a third of the ledger: automerge sends the changes in one
    // chunk, which goes as changes one by one, 8 KiB at a time.
    apart(&mut north, &mut south, 60, &[], t0 + 2_000);
    let learned = sync_in_small_messages(&mut north, &mut south, (MOST.0, usize::MAX));
    assert_eq!(learned, (60, 60));
    assert_eq!(north.ledger.redemption_count(), 120 + 2 * 150 + 2 * 60);
}

#[test]
fn a_gate_that_holds_nothing_yet_gets_the_whole_ledger_in_one_message() {
    let mut north = Gate::new("North");
    for i in 0..300 {
        north.scan(&TicketId::generate(), "n1", 1_795_000_000_000 + i);
    }
    let mut late = Gate::new("Late");
    let mut states = Default::default();
    let mut from_north = Vec::new();
    sync_pair_watched(
        &mut north.ledger,
        &mut late.ledger,
        &mut states,
        20,
        |north, m| {
            if north {
                from_north.push((m[0], m.len()));
            }
        },
    );
    assert_eq!(late.ledger.redemption_count(), 300);
    let whole: Vec<_> = from_north
        .iter()
        .filter(|(kind, _)| *kind == WHOLE_MESSAGE)
        .collect();
    assert_eq!(whole.len(), 1, "one whole ledger: {from_north:?}");
}

/// After a partition a gate lacks a third or more of its peer's ledger, for which automerge
/// sends the whole document: the peer checks every change of it and loads it whole. A peer
/// whose summary says it holds most of the ledger gets the changes it lacks; one that
/// lacks most still gets the whole document.
#[test]
fn a_peer_that_holds_most_of_the_ledger_gets_its_gap_not_the_whole_ledger() {
    let t0 = 1_795_000_000_000;
    // North and South hold 100 admissions; apart, North admits 80 more: South lacks 80 of
    // North's ~180 changes (over a third). Returns what South learned and the kinds of
    // North's messages.
    let heal = |told: bool, late: bool| {
        let (mut north, mut south) = (Gate::new("North"), Gate::new("South"));
        for i in 0..100 {
            north.scan(&TicketId::generate(), "n1", t0 + i);
        }
        if !late {
            sync_pair(&mut north.ledger, &mut south.ledger);
        }
        for i in 0..80 {
            north.scan(&TicketId::generate(), "n1", t0 + 1_000 + i);
        }
        let mut states: (gatemesh_ledger::PeerSync, gatemesh_ledger::PeerSync) = Default::default();
        if told {
            // South's summary, as it comes every second: North keeps it.
            let summary = south
                .ledger
                .summary_message(&[], gatemesh_ledger::Wants::Relays);
            let plan = gatemesh_ledger::RelayPlan {
                now_ms: t0 + 2_000,
                noted_before: 0,
                me: "North",
                most: 0,
                catch_up_most: 0,
                frame_most: 0,
            };
            north.ledger.relay(&mut states.0, &summary, &plan).unwrap();
        }
        let mut sent = Vec::new();
        let (_, learned) = sync_pair_watched(
            &mut north.ledger,
            &mut south.ledger,
            &mut states,
            20,
            |from_north, m| {
                if from_north {
                    sent.push(m[0]);
                }
            },
        );
        assert_eq!(south.ledger.redemption_count(), 180);
        (learned, sent)
    };
    let (learned, sent) = heal(false, false);
    assert_eq!(learned, 80);
    assert!(
        sent.contains(&WHOLE_MESSAGE),
        "automerge's own rule: {sent:?}"
    );
    let (learned, sent) = heal(true, false);
    assert_eq!(learned, 80);
    assert!(!sent.contains(&WHOLE_MESSAGE), "its gap only: {sent:?}");
    // A gate that holds nothing gets the whole ledger, its summary told or not.
    let (learned, sent) = heal(true, true);
    assert!(learned >= 180, "{learned}");
    assert!(sent.contains(&WHOLE_MESSAGE), "{sent:?}");
}

/// North answers South's round after a partition: how many changes North's messages carried
/// and South learned, North's summary told to South and South's to North first (as they
/// come every second), so that neither sends a whole ledger.
fn heal_told(north: &mut Ledger, south: &mut Ledger, t0: i64) -> (usize, usize) {
    let plan = gatemesh_ledger::RelayPlan {
        now_ms: t0,
        noted_before: 0,
        me: "",
        most: 0,
        catch_up_most: 0,
        frame_most: 0,
    };
    let mut states: (gatemesh_ledger::PeerSync, gatemesh_ledger::PeerSync) = Default::default();
    let summary = south.summary_message(&[], gatemesh_ledger::Wants::Relays);
    north.relay(&mut states.0, &summary, &plan).unwrap();
    let summary = north.summary_message(&[], gatemesh_ledger::Wants::Relays);
    south.relay(&mut states.1, &summary, &plan).unwrap();
    let mut carried = 0;
    let (_, learned) = sync_pair_watched(north, south, &mut states, 20, |from_north, m| {
        assert_ne!(m[0], WHOLE_MESSAGE);
        if from_north {
            carried += gatemesh_ledger::SyncInParts::parse(m).unwrap().left();
        }
    });
    assert_eq!(sorted_heads(north), sorted_heads(south));
    (carried, learned)
}

/// automerge 0.12 keeps no change's bytes: it rebuilds each change a sync message carries
/// from the document's operations, at a cost that grows with the ledger (after a 32-gate
/// heal, 7 s of a writer for one peer's catch-up). The changes at hand, as they came, go
/// instead; only those no longer at hand are rebuilt, and the peer gets the same changes.
#[test]
fn a_catch_up_is_answered_with_the_changes_at_hand_and_only_older_ones_are_rebuilt() {
    let t0 = 1_795_000_000_000;
    let parted = || {
        let (mut north, mut south) = (Gate::new("North"), Gate::new("South"));
        for i in 0..300 {
            north.scan(&TicketId::generate(), "n1", t0 + i);
        }
        sync_pair(&mut north.ledger, &mut south.ledger);
        let both: Vec<TicketId> = (0..10).map(|_| TicketId::generate()).collect();
        apart(&mut north, &mut south, 80, &both, t0 + 1_000);
        (north, south)
    };
    // Every change South lacks is at hand: none is rebuilt.
    let (mut north, mut south) = parted();
    let before = north.ledger.sync_served();
    let (carried, learned) = heal_told(&mut north.ledger, &mut south.ledger, t0 + 2_000);
    assert_eq!((carried, learned), (80, 80), "each change once");
    let served = north.ledger.sync_served();
    assert_eq!(served.rebuilt - before.rebuilt, 0, "{served:?}");
    assert_eq!(served.at_hand - before.at_hand, 80, "{served:?}");
    assert_eq!(flagged(&south).len(), 10);
    // North opened again from its saved document holds no change at hand: South's gap is
    // rebuilt, and the 20 North admits after opening are at hand. South gets all 100.
    let (mut north, mut south) = parted();
    // (A replacement laptop, say: another device, its ledger opened from North's.)
    let signer = device_of(&event(), Role::Gate, "North2");
    let saved = north.ledger.save();
    let mut ledger = Ledger::open(
        &event(),
        signer.node().clone(),
        &genesis(&event()),
        Some(&saved),
        [],
    )
    .unwrap();
    ledger.sign_with(signer, trust_of(&event())).unwrap();
    let mut again = Gate {
        name: "North2",
        ledger,
        policy: Policy::default(),
        late: Default::default(),
    };
    for i in 0..20 {
        again.scan(&TicketId::generate(), "n1", t0 + 3_000 + i);
    }
    let (carried, learned) = heal_told(&mut again.ledger, &mut south.ledger, t0 + 4_000);
    assert_eq!((carried, learned), (100, 100));
    let served = again.ledger.sync_served();
    assert_eq!((served.rebuilt, served.at_hand), (80, 20), "{served:?}");
    assert_eq!(flagged(&south).len(), 10);
    assert_eq!(south.ledger.redemption_count(), 300 + 2 * 80 + 20);
}

#[test]
fn the_sync_protocol_converges_and_flags_concurrent_admits() {
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    let (shared, only_a) = (TicketId::generate(), TicketId::generate());
    a.scan(&shared, "a1", T0);
    a.scan(&only_a, "a1", T0);
    b.scan(&shared, "b1", T0);
    let (learned_a, learned_b) = sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!((learned_a, learned_b), (1, 2));
    for g in [&a, &b] {
        assert_eq!(flagged(g), vec![shared.clone()]);
        assert_eq!(g.ledger.ticket(&only_a).redemptions.len(), 1);
    }
    assert_eq!(
        sorted_heads(&mut a.ledger),
        sorted_heads(&mut b.ledger),
        "both replicas hold the same history"
    );
    assert_eq!(sync_pair(&mut a.ledger, &mut b.ledger), (0, 0));
}

#[test]
fn garbage_sync_messages_are_refused_and_change_nothing() {
    let mut a = Gate::new("A");
    a.scan(&TicketId::generate(), "a1", T0);
    let before = a.ledger.save();
    let mut state = gatemesh_ledger::PeerSync::default();
    for bad in [&b""[..], b"\x00\x01garbage", &[0x42; 4096]] {
        assert!(a.ledger.receive_sync(&mut state, bad, now()).is_err());
    }
    // A well-formed message from another event's ledger.
    let jazz = EventId::new("JAZZ-2026").unwrap();
    let mut other = signed_ledger(&jazz, Role::Gate, "jazz");
    let mut os = gatemesh_ledger::PeerSync::default();
    let hello = other.sync_message(&mut os).unwrap();
    let _ = a.ledger.receive_sync(&mut state, &hello, now());
    assert_eq!(a.ledger.save(), before);
}

const MINUTE: i64 = 60_000;

/// The same ledger opened again from its saved document, as another node would.
fn reopened(l: &mut Ledger) -> Ledger {
    let saved = l.save();
    Ledger::open(
        &event(),
        NodeId::random(),
        &genesis(&event()),
        Some(&saved),
        [],
    )
    .unwrap()
}

/// What a dashboard counts by reading every redemption, over 30 minutes from `first_ms`.
fn counted_by_reading(l: &Ledger, first_ms: i64) -> gatemesh_ledger::Activity {
    let mut gates = std::collections::BTreeMap::<String, gatemesh_ledger::GateActivity>::new();
    let mut entered = std::collections::HashSet::new();
    for r in l.redemptions() {
        if r.direction != Direction::Entry {
            continue;
        }
        entered.insert(r.tid.clone());
        let g = gates
            .entry(r.gate.clone())
            .or_insert_with(|| gatemesh_ledger::GateActivity {
                gate: r.gate.clone(),
                entries: 0,
                last_ms: 0,
                per_minute: vec![0; 30],
            });
        g.entries += 1;
        g.last_ms = g.last_ms.max(r.at_ms);
        if (first_ms..first_ms + 30 * MINUTE).contains(&r.at_ms) {
            g.per_minute[((r.at_ms - first_ms) / MINUTE) as usize] += 1;
        }
    }
    gatemesh_ledger::Activity {
        gates: gates.into_values().collect(),
        tickets_entered: entered.len(),
    }
}

#[test]
fn the_entry_tally_is_what_reading_every_redemption_counts() {
    let t0 = 1_795_000_000_000;
    let (mut a, mut b) = (ledger(), ledger());
    let record = |l: &mut Ledger, tid: &TicketId, gate: &str, direction, at_ms| {
        let mut r = redemption(l, tid, at_ms);
        r.gate = gate.into();
        r.direction = direction;
        l.record_redemption(&r).unwrap();
    };
    let tickets: Vec<TicketId> = (0..60).map(|_| TicketId::generate()).collect();
    for (i, tid) in tickets.iter().enumerate() {
        // Spread over 17 minutes, some before the window and some after it.
        let at = t0 + (i as i64 - 5) * 17_000;
        let gate = if i % 3 == 0 { "North" } else { "South" };
        record(&mut a, tid, gate, Direction::Entry, at);
        if i % 5 == 0 {
            // A copy at another gate on the other side of a partition: flagged after sync.
            record(&mut b, tid, "East", Direction::Entry, at + 1);
        }
        if i % 7 == 0 {
            record(&mut a, tid, gate, Direction::Exit, at + 30_000);
            record(&mut a, tid, gate, Direction::Entry, at + 45 * MINUTE);
        }
    }
    for l in [&a, &b] {
        assert_eq!(
            l.entry_tally().activity(t0, MINUTE, 30),
            counted_by_reading(l, t0)
        );
    }
    sync_pair(&mut a, &mut b);
    assert!(a.flagged().count() > 0, "the copies are flagged");
    for l in [&a, &b] {
        let activity = l.entry_tally().activity(t0, MINUTE, 30);
        assert_eq!(activity, counted_by_reading(l, t0));
        assert_eq!(activity.tickets_entered, 60);
        assert_eq!(activity.gates.len(), 3, "North, South and East");
    }
    assert_eq!(a.entry_tally(), b.entry_tally());
    // Reopened from its saved document, the ledger counts the same.
    let reopened = reopened(&mut a);
    assert_eq!(reopened.entry_tally(), a.entry_tally());
}

#[test]
fn arrivals_list_every_redemption_once_in_the_order_learned() {
    let (mut a, mut b) = (ledger(), ledger());
    let (t1, t2, t3) = (
        TicketId::generate(),
        TicketId::generate(),
        TicketId::generate(),
    );
    let ra = redemption(&mut a, &t1, T0);
    a.record_redemption(&ra).unwrap();
    let ra2 = redemption(&mut a, &t2, T0 + 1);
    a.record_redemption(&ra2).unwrap();
    let rb = redemption(&mut b, &t3, T0 + 2);
    b.record_redemption(&rb).unwrap();
    let ids = |l: &Ledger, from| -> Vec<RedemptionId> {
        l.arrivals(from).iter().map(|(_, id)| id.clone()).collect()
    };
    assert_eq!(ids(&a, 0), vec![ra.id.clone(), ra2.id.clone()]);
    // Learned from a peer: after what it already had, each once however often it is synced.
    sync_pair(&mut a, &mut b);
    sync_pair(&mut a, &mut b);
    assert_eq!(
        ids(&a, 0),
        vec![ra.id.clone(), ra2.id.clone(), rb.id.clone()]
    );
    assert_eq!(ids(&a, 2), vec![rb.id.clone()]);
    assert!(a.arrivals(3).is_empty() && a.arrivals(99).is_empty());
    let (tid, id) = &a.arrivals(2)[0];
    let held = b.redemption(tid, id).expect("b holds its own");
    assert!(held.sig.is_some() && held.id == rb.id, "b signed it");
    assert_eq!(a.redemption(tid, id).as_ref(), Some(&held));
    assert_eq!(a.redemption(&t1, id), None, "another ticket's key");
    // A reopened ledger is another value: positions from the old one do not apply.
    let reopened = reopened(&mut a);
    assert_ne!(reopened.epoch(), a.epoch());
    let mut all = ids(&reopened, 0);
    all.sort();
    let mut expected = vec![ra.id, ra2.id, rb.id];
    expected.sort();
    assert_eq!(all, expected);
}

/// A peer's change that arrives before the change it builds on (automerge's sync does this
/// when a bloom filter wrongly says this node has a change) — here, a gate's second
/// admission before its first, which carries its certificate: it is not refused, it waits
/// outside the document, this node asks for what it builds on, and both land, checked,
/// when that arrives.
#[test]
fn a_change_that_arrives_before_the_one_it_builds_on_waits_for_it() {
    use automerge::sync::{Message, MessageVersion};
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    let (t1, t2) = (TicketId::generate(), TicketId::generate());
    a.scan(&t1, "a1", T0);
    a.scan(&t2, "a1", T0 + 1);
    let mut doc = automerge::AutoCommit::load(&a.ledger.save()).unwrap();
    let genesis = b.ledger.heads();
    let ours: Vec<automerge::Change> = doc.get_changes(&genesis);
    let (first, second) = (&ours[ours.len() - 2], &ours[ours.len() - 1]);
    assert_eq!(second.deps(), [first.hash()]);
    let heads = a.ledger.heads();
    let message = |changes: Vec<Vec<u8>>| {
        Message {
            heads: heads.clone(),
            need: Vec::new(),
            have: Vec::new(),
            changes: changes.into(),
            flags: None,
            version: MessageVersion::V1,
        }
        .encode()
    };
    let mut peer = gatemesh_ledger::PeerSync::default();
    let learned = b
        .ledger
        .receive_sync(
            &mut peer,
            &message(vec![second.raw_bytes().to_vec()]),
            now(),
        )
        .unwrap();
    assert!(learned.is_empty());
    assert!(b.ledger.redemptions().is_empty());
    let ask = Message::decode(&b.ledger.sync_message(&mut peer).unwrap()).unwrap();
    assert!(ask.need.contains(&first.hash()), "{:?}", ask.need);
    let learned = b
        .ledger
        .receive_sync(&mut peer, &message(vec![first.raw_bytes().to_vec()]), now())
        .unwrap();
    assert_eq!(learned.len(), 2);
    assert_eq!(b.ledger.redemptions(), a.ledger.redemptions());
}

#[test]
fn a_peer_that_sends_what_this_node_already_learned_is_told_it_has_caught_up() {
    use gatemesh_ledger::PeerSync;
    let (mut a, mut b, mut c) = (Gate::new("A"), Gate::new("B"), Gate::new("C"));
    // B and C are in session and have told each other what they hold (nothing yet).
    let (mut b_of_c, mut c_of_b) = (PeerSync::default(), PeerSync::default());
    for _ in 0..4 {
        if let Some(m) = b.ledger.sync_message(&mut b_of_c) {
            c.ledger.receive_sync(&mut c_of_b, &m, now()).unwrap();
        }
        if let Some(m) = c.ledger.sync_message(&mut c_of_b) {
            b.ledger.receive_sync(&mut b_of_c, &m, now()).unwrap();
        }
    }
    assert_eq!(b.ledger.peer_lag(&b_of_c), Some(0));
    // A admits; C hears of it from A, then B hears of it too and passes it on to C.
    a.scan(&TicketId::generate(), "a1", T0);
    sync_pair(&mut a.ledger, &mut c.ledger);
    sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(b.ledger.peer_lag(&b_of_c), Some(1));
    let passed_on = b.ledger.sync_message(&mut b_of_c).expect("B passes it on");
    let learned = c
        .ledger
        .receive_sync(&mut c_of_b, &passed_on, now())
        .unwrap();
    assert!(learned.is_empty(), "C knew it already");
    // C must still say what it holds, or B believes forever that C lacks it.
    let answer = c
        .ledger
        .sync_message(&mut c_of_b)
        .expect("C answers with its heads");
    b.ledger.receive_sync(&mut b_of_c, &answer, now()).unwrap();
    assert_eq!(b.ledger.peer_lag(&b_of_c), Some(0));
    assert_eq!(
        c.ledger.sync_message(&mut c_of_b),
        None,
        "and then stays quiet"
    );
    assert_eq!(b.ledger.sync_message(&mut b_of_c), None);
}

#[test]
fn a_ledger_of_thousands_of_tickets_derives_on_open_what_it_derived_as_it_went() {
    // Opening (or taking a large batch) derives thousands of tickets at once, reading each
    // shard front to back; as the ledger went, it derived them one seek at a time. Both
    // must agree: flags (with staff's resolutions), counts, tallies, arrivals.
    let t0 = 1_795_000_000_000;
    let (mut a, mut b) = (Gate::new("North"), Gate::new("East"));
    let tickets: Vec<TicketId> = (0..2600).map(|_| TicketId::generate()).collect();
    for (i, tid) in tickets.iter().enumerate() {
        let at = t0 + i as i64 * 10;
        a.scan(tid, "n1", at);
        if i % 50 == 0 {
            // Admitted on the other side of a partition too: flagged once they meet.
            b.scan(tid, "e1", at + 1);
        }
        if i % 97 == 0 {
            a.scan_dir(tid, "n1", at + 5, Direction::Exit);
        }
    }
    sync_pair(&mut a.ledger, &mut b.ledger);
    let flagged = flagged(&a);
    assert_eq!(
        flagged.len(),
        52,
        "every copy across the partition is flagged"
    );
    a.resolve(&flagged[0], Action::Accept, t0 + MINUTE);
    let reopened = reopened(&mut a.ledger);
    let live: Vec<TicketId> = a.ledger.flagged().cloned().collect();
    assert_eq!(reopened.flagged().cloned().collect::<Vec<_>>(), live);
    assert_eq!(live.len(), 51, "the accepted one is no longer flagged");
    assert_eq!(reopened.redemption_count(), a.ledger.redemption_count());
    assert_eq!(reopened.entry_tally(), a.ledger.entry_tally());
    assert_eq!(reopened.arrivals(0).len(), a.ledger.redemption_count());
}

/// Runs the sync protocol between `a` and `b` until neither has anything to send, `b`
/// taking each of `a`'s messages in parts of at most `part` changes (their signatures
/// checked first when `precheck`) and calling `between(b)` after every part but the last
/// (the gate deciding scans meanwhile). Returns how many parts `b` took and how many
/// changes it learned.
fn sync_taking_parts(
    a: &mut Ledger,
    b: &mut Gate,
    (part, precheck): (usize, bool),
    mut between: impl FnMut(&mut Gate),
) -> (usize, usize) {
    use gatemesh_ledger::{PeerSync, SyncInParts};
    let (mut sa, mut sb) = (PeerSync::default(), PeerSync::default());
    let (mut parts_taken, mut learned) = (0, 0);
    for _ in 0..20 {
        let mut progressed = false;
        if let Some(m) = a.sync_message(&mut sa) {
            let mut parts = SyncInParts::parse(&m).unwrap();
            if precheck {
                parts.precheck(
                    &event(),
                    &trust_of(&event()),
                    &gatemesh_ledger::Vouched::default(),
                );
                // North's history, certificate and all: nearly every record's signature.
                assert!(
                    parts.left() < 100 || parts.prechecked() * 10 > parts.left() * 9,
                    "{} of {}",
                    parts.prechecked(),
                    parts.left()
                );
            }
            loop {
                learned += b
                    .ledger
                    .take_sync_part(&mut sb, &mut parts, part, now())
                    .unwrap()
                    .len();
                parts_taken += 1;
                if parts.left() == 0 {
                    break;
                }
                between(b);
            }
            b.ledger.finish_sync(&mut sb, parts).unwrap();
            progressed = true;
        }
        if let Some(m) = b.ledger.sync_message(&mut sb) {
            a.receive_sync(&mut sa, &m, now()).unwrap();
            progressed = true;
        }
        if !progressed {
            return (parts_taken, learned);
        }
    }
    panic!("sync did not converge");
}

/// Gates North and East, East's ledger sharing the signatures its prechecks find good (and
/// the certificates it holds) in the set returned.
fn north_and_east_sharing_vouched() -> (Gate, Gate, std::sync::Arc<gatemesh_ledger::Vouched>) {
    let (north, mut east) = (Gate::new("North"), Gate::new("East"));
    let vouched = std::sync::Arc::new(gatemesh_ledger::Vouched::default());
    east.ledger.share_vouched(vouched.clone());
    (north, east, vouched)
}

#[test]
fn records_a_gate_signed_or_verified_are_not_verified_again_when_a_peer_sends_them_back() {
    // East signs its 40 admissions, and each change that carries one, and verifies the
    // signatures of North's 60 changes as it takes them (North's records in them are
    // vouched for by those: `authored.rs`). After a heal a peer sends East the whole ledger,
    // both sides' changes: its precheck finds all 100 good without verifying one (what it
    // verifies joins the shared set, which stays as it was).
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    for i in 0..60 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    for i in 0..40 {
        east.scan(&TicketId::generate(), "e1", t0 + i);
    }
    assert_eq!(
        vouched.len(),
        80,
        "East's own signatures, records and changes"
    );
    sync_pair(&mut north.ledger, &mut east.ledger);
    assert_eq!(
        vouched.len(),
        140,
        "and North's changes, verified as East took them"
    );
    // North's whole ledger, as it sends it to a gate that holds nothing.
    let whole = answer_to_first_message(&mut north.ledger, &mut Gate::new("Late").ledger);
    let precheck = |vouched: &gatemesh_ledger::Vouched| {
        prechecked(&whole, &trust_of(&event()), vouched).prechecked()
    };
    assert_eq!(precheck(&vouched), 100);
    assert_eq!(vouched.len(), 140, "nothing verified again");
    // A gate that shares nothing verifies every one.
    let fresh = gatemesh_ledger::Vouched::default();
    assert_eq!(precheck(&fresh), 100);
    assert_eq!(fresh.len(), 100);
}

#[test]
fn a_message_that_carries_no_certificates_is_prechecked_with_those_the_ledger_holds() {
    // North and East met and hold each other's certificates; then North admitted 20
    // while apart. North's message after the heal carries its changes, not its certificate
    // (East holds it): the precheck finds North's signatures good with the certificate
    // East's ledger shares, so the writer does not verify them between scans.
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    for i in 0..60 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    sync_pair(&mut north.ledger, &mut east.ledger);
    for i in 0..20 {
        north.scan(&TicketId::generate(), "n1", t0 + 100 + i);
    }
    let message = answer_to_first_message(&mut north.ledger, &mut east.ledger);
    let sent = new_changes_sent(&message);
    let precheck = |vouched: &gatemesh_ledger::Vouched| {
        prechecked(&message, &trust_of(&event()), vouched).prechecked()
    };
    assert_eq!(precheck(&vouched), sent);
    // A precheck with no ledger's certificates at hand finds nothing to check them with.
    assert_eq!(precheck(&gatemesh_ledger::Vouched::default()), 0);
    // Nor with those of a ledger of another CA: a certificate is only as good as the CA
    // it was checked against.
    let other_ca = gatemesh_mesh::pki::create_ca("ROCK-2026", 30).unwrap();
    let other = Trust::from_pem(&other_ca.cert_pem, &event()).unwrap();
    assert_eq!(prechecked(&message, &other, &vouched).prechecked(), 0);
}

#[test]
fn a_push_checked_ahead_is_taken_without_verifying_its_signatures_again() {
    // North and East met; then North admitted 30 while apart, and relays them to East as
    // one push. Checked ahead with what East's ledger shares (its certificates, the
    // signatures found good), the 30 are found good; East's writer then takes the push and
    // verifies none of them (the shared set does not grow). Bytes that are no push are
    // found nothing in.
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    for i in 0..10 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    sync_pair(&mut north.ledger, &mut east.ledger);
    let push: Vec<u8> = (0..30)
        .flat_map(|i| {
            let r = redemption(&mut north.ledger, &TicketId::generate(), t0 + 100 + i);
            north.ledger.record_redemption(&r).unwrap().unwrap().bytes
        })
        .collect();
    let trust = trust_of(&event());
    let before = vouched.len();
    assert_eq!(
        gatemesh_ledger::precheck_pushed(&push, &event(), &trust, &vouched),
        30
    );
    assert_eq!(vouched.len(), before + 30);
    let taken = east
        .ledger
        .receive_changes(&mut gatemesh_ledger::PeerSync::default(), &push, now())
        .unwrap();
    assert_eq!(taken.len(), 30);
    assert_eq!(vouched.len(), before + 30, "nothing verified on the writer");
    assert_eq!(east.ledger.redemption_count(), 40);
    for junk in [&b"not a push"[..], &push[..push.len() - 1], &[]] {
        assert_eq!(
            gatemesh_ledger::precheck_pushed(junk, &event(), &trust, &vouched),
            0
        );
    }
}

#[test]
fn a_push_read_ahead_is_taken_as_the_writer_would_take_it_read_there() {
    // North relays 10 changes East and West hold and 30 they lack, as one push. East's
    // writer reads the push itself; West's takes it as read and checked ahead, off the
    // writer. Both take the same changes, part by part, with the same books, and West's
    // writer verifies nothing.
    let mut north = Gate::new("North");
    let (mut east, mut west, vouched) = {
        let (_, east, vouched) = north_and_east_sharing_vouched();
        let mut west = Gate::new("West");
        west.ledger.share_vouched(vouched.clone());
        (east, west, vouched)
    };
    let t0 = 1_795_000_000_000;
    let changes: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let r = redemption(&mut north.ledger, &TicketId::generate(), t0 + i);
            north.ledger.record_redemption(&r).unwrap().unwrap().bytes
        })
        .collect();
    for gate in [&mut east, &mut west] {
        gate.ledger
            .receive_changes(
                &mut gatemesh_ledger::PeerSync::default(),
                &changes[..10].concat(),
                now(),
            )
            .unwrap();
    }
    let push = changes.concat();
    let ahead =
        gatemesh_ledger::PushAhead::check(push.clone(), &event(), &trust_of(&event()), &vouched);
    assert_eq!(
        ahead.prechecked(),
        40,
        "every signature found good (the 10 held, found before, cost a digest)"
    );
    let before = vouched.len();
    let (mut from_east, mut from_west) = (
        gatemesh_ledger::PeerSync::default(),
        gatemesh_ledger::PeerSync::default(),
    );
    let by_east = east
        .ledger
        .receive_changes_upto(&mut from_east, &push, now(), 12)
        .unwrap();
    let by_west = west
        .ledger
        .receive_push_upto(&mut from_west, ahead, now(), 12)
        .unwrap();
    assert_eq!((by_east.len(), by_west.len()), (12, 12));
    loop {
        let (e, w) = (
            east.ledger
                .take_waiting(&mut from_east, 12, now())
                .unwrap()
                .len(),
            west.ledger
                .take_waiting(&mut from_west, 12, now())
                .unwrap()
                .len(),
        );
        assert_eq!(e, w);
        if e == 0 {
            break;
        }
    }
    assert_eq!(from_east.books(), from_west.books());
    assert_eq!((from_west.books().came, from_west.books().held), (40, 10));
    assert_eq!(east.ledger.heads(), west.ledger.heads());
    assert_eq!(west.ledger.redemption_count(), 40);
    assert_eq!(vouched.len(), before, "nothing verified on West's writer");
    // Bytes that are no push are kept as they came, and refused on the writer as before.
    let junk = gatemesh_ledger::PushAhead::check(
        b"not a push".to_vec(),
        &event(),
        &trust_of(&event()),
        &vouched,
    );
    assert_eq!(junk.prechecked(), 0);
    let refusal =
        west.ledger
            .receive_push_upto(&mut gatemesh_ledger::PeerSync::default(), junk, now(), 12);
    assert!(
        matches!(refusal, Err(gatemesh_ledger::LedgerError::BadMessage(_))),
        "{refusal:?}"
    );
    assert_eq!(east.ledger.heads(), west.ledger.heads());
}

#[test]
fn a_writers_later_pushes_are_checked_ahead_with_the_certificate_its_first_push_carried() {
    // North and East never met. After the heal North's changes reach East in several
    // pushes, and only the first carries North's certificate. Each push is checked ahead
    // on its own, before East's writer took the one before: the later pushes are checked
    // with the certificate the first carried, so the writer verifies none of them.
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    let mut pushes: Vec<Vec<u8>> = (0..3)
        .map(|push| {
            (0..20)
                .flat_map(|i| {
                    let tid = TicketId::generate();
                    let r = redemption(&mut north.ledger, &tid, t0 + push * 100 + i);
                    north.ledger.record_redemption(&r).unwrap().unwrap().bytes
                })
                .collect()
        })
        .collect();
    let trust = trust_of(&event());
    // Alone, only the first can be checked ahead: it carries North's certificate.
    let alone = |push: &[u8]| {
        let fresh = gatemesh_ledger::Vouched::default();
        gatemesh_ledger::precheck_pushed(push, &event(), &trust, &fresh)
    };
    assert_eq!(alone(&pushes[0]), 20);
    assert_eq!((alone(&pushes[1]), alone(&pushes[2])), (0, 0));
    for push in &pushes {
        assert_eq!(
            gatemesh_ledger::precheck_pushed(push, &event(), &trust, &vouched),
            20,
            "every change of each push found good ahead"
        );
    }
    let before = vouched.len();
    let mut from_north = gatemesh_ledger::PeerSync::default();
    for push in pushes.drain(..) {
        let taken = east
            .ledger
            .receive_changes(&mut from_north, &push, now())
            .unwrap();
        assert_eq!(taken.len(), 20);
    }
    assert_eq!(vouched.len(), before, "nothing verified on the writer");
    assert_eq!(east.ledger.redemption_count(), 60);
}

#[test]
fn a_reopened_ledger_shares_every_certificate_its_document_holds() {
    // East took North's changes, certificate and all, then restarted: its reopened
    // ledger has checked none of North's records since. North's relay after a heal
    // carries no certificate (East holds it), and is checked ahead with the one East's
    // document holds, not left to the writer.
    let (mut north, mut east, _) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    for i in 0..10 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    sync_pair(&mut north.ledger, &mut east.ledger);
    let mut restarted = checking(reopened(&mut east.ledger));
    let vouched = std::sync::Arc::new(gatemesh_ledger::Vouched::default());
    restarted.share_vouched(vouched.clone());
    let push: Vec<u8> = (0..20)
        .flat_map(|i| {
            let r = redemption(&mut north.ledger, &TicketId::generate(), t0 + 100 + i);
            north.ledger.record_redemption(&r).unwrap().unwrap().bytes
        })
        .collect();
    let trust = trust_of(&event());
    let fresh = gatemesh_ledger::Vouched::default();
    assert_eq!(
        gatemesh_ledger::precheck_pushed(&push, &event(), &trust, &fresh),
        0,
        "the push carries no certificate"
    );
    assert_eq!(
        gatemesh_ledger::precheck_pushed(&push, &event(), &trust, &vouched),
        20
    );
}

#[test]
fn a_sealed_push_taken_in_parts_verifies_nothing_on_the_writer() {
    // North admitted 300 while apart and sealed them; it relays them to East as one push,
    // which East's writer takes 50 at a time. The seal is in the last part: checked with
    // its own seals only, each earlier part's changes were verified one by one on the
    // writer. The precheck, which reads the whole push, keeps what the seal vouches for.
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    north.scan(&TicketId::generate(), "n1", t0);
    sync_pair(&mut north.ledger, &mut east.ledger);
    let mut push: Vec<u8> = (0..300)
        .flat_map(|i| {
            let r = redemption(&mut north.ledger, &TicketId::generate(), t0 + 100 + i);
            north.ledger.record_redemption(&r).unwrap().unwrap().bytes
        })
        .collect();
    push.extend(north.ledger.seal(t0 + 500).unwrap().unwrap().bytes);
    let trust = trust_of(&event());
    gatemesh_ledger::precheck_pushed(&push, &event(), &trust, &vouched);
    let before = vouched.len();
    let mut from_north = gatemesh_ledger::PeerSync::default();
    let mut taken = east
        .ledger
        .receive_changes_upto(&mut from_north, &push, now(), 50)
        .unwrap()
        .len();
    loop {
        let more = east
            .ledger
            .take_waiting(&mut from_north, 50, now())
            .unwrap();
        if more.is_empty() {
            break;
        }
        taken += more.len();
    }
    assert_eq!(taken, 301);
    assert_eq!(east.ledger.redemption_count(), 301);
    assert_eq!(vouched.len(), before, "nothing verified on the writer");
}

#[test]
fn certificates_a_ledger_file_brought_are_shared_with_the_prechecks() {
    // East learned North's certificate from North's ledger file (`gatemesh import`), not
    // from a peer: North's message after that carries its new changes but not its
    // certificate, and the precheck finds them good with the one the import brought.
    let (mut north, mut east, vouched) = north_and_east_sharing_vouched();
    let t0 = 1_795_000_000_000;
    for i in 0..60 {
        north.scan(&TicketId::generate(), "n1", t0 + i);
    }
    east.ledger
        .merge_saved(&north.ledger.save(), now())
        .unwrap();
    for i in 0..20 {
        north.scan(&TicketId::generate(), "n1", t0 + 100 + i);
    }
    let message = answer_to_first_message(&mut north.ledger, &mut east.ledger);
    let sent = new_changes_sent(&message);
    assert_eq!(
        prechecked(&message, &trust_of(&event()), &vouched).prechecked(),
        sent
    );
}

/// How many changes `message` (North's answer to East's first message, after North made 20
/// changes East lacks) carries: North's 20, or 19 when East's bloom filter of what it holds
/// wrongly held the first of them (about one time in a hundred; the rest build on it, so
/// they go). Nothing else.
fn new_changes_sent(message: &[u8]) -> usize {
    let sent = gatemesh_ledger::SyncInParts::parse(message).unwrap().left();
    assert!(
        (19..=20).contains(&sent),
        "North's new changes, and nothing else: {sent}"
    );
    sent
}

/// A refund or a transfer, written here or taken from a peer, is news for the gate's
/// viewers once, with the standing that holds; a ticket derived again for another reason,
/// or a ledger opened on what it held, is not.
#[test]
fn a_changed_standing_is_news_once_wherever_it_came_from() {
    let mut a = signed_ledger(&event(), Role::Gate, "gate-a");
    let mut b = signed_ledger(&event(), Role::Gate, "gate-b");
    sync_pair(&mut a, &mut b);
    assert!(a.take_newly_standing().is_empty());
    let (refunded, transferred, to) = (
        TicketId::generate(),
        TicketId::generate(),
        TicketId::generate(),
    );
    let void = Standing::Void {
        reason: "refund".into(),
    };
    server_says(&mut a, &refunded, void.clone(), T0);
    assert_eq!(a.take_newly_standing(), [(refunded.clone(), void.clone())]);
    assert!(a.take_newly_standing().is_empty(), "told once");
    // The refunded ticket presented and recorded anyway: derived again, not news.
    let r = redemption(&mut a, &refunded, T0 + 1);
    a.record_redemption(&r).unwrap();
    assert!(a.take_newly_standing().is_empty(), "derived again");
    // Taken from a peer: news there.
    sync_pair(&mut a, &mut b);
    assert_eq!(b.take_newly_standing(), [(refunded.clone(), void.clone())]);
    let moved = Standing::Transferred { to: to.clone() };
    server_says(&mut b, &transferred, moved.clone(), T0 + 2);
    let _ = b.take_newly_standing();
    sync_pair(&mut a, &mut b);
    assert_eq!(a.take_newly_standing(), [(transferred.clone(), moved)]);
    // Reinstated later: news again, with what holds now.
    server_says(&mut a, &refunded, Standing::Active, T0 + 3);
    assert_eq!(a.take_newly_standing(), [(refunded, Standing::Active)]);
    // A ledger opened on all of it: nothing is news.
    let mut reopened = Ledger::open(&event(), a.node().clone(), &a.save(), None, []).unwrap();
    assert!(reopened.take_newly_standing().is_empty());
}

/// The server's standing held by a gate whose uplink heard it, while another gate of the
/// mesh writes it: it counts at once and is news then; written by the other gate and taken
/// from it, it is not news again; a held status loses to a later one written; one the
/// server did not sign is refused and nothing is held.
#[test]
fn a_held_standing_counts_at_once_and_is_not_news_again_when_another_gate_writes_it() {
    let mut a = signed_ledger(&event(), Role::Gate, "gate-a");
    let mut b = signed_ledger(&event(), Role::Gate, "gate-b");
    a.learn_device(&SERVER.device().cert_der).unwrap();
    sync_pair(&mut a, &mut b);
    let void = Standing::Void {
        reason: "refund".into(),
    };
    let (refunded, reinstated, forged) = (
        TicketId::generate(),
        TicketId::generate(),
        TicketId::generate(),
    );
    let held = server_status(&refunded, void.clone(), T0);
    a.hold_status(held.clone()).unwrap();
    assert_eq!(a.ticket(&refunded).standing(), void);
    assert_eq!(a.take_newly_standing(), [(refunded.clone(), void.clone())]);
    assert!(a.written_status(&refunded).is_none(), "held, not written");
    // B's turn came first: it writes the very record (the server signed it once and sent it
    // to both), and A takes it.
    b.learn_device(&SERVER.device().cert_der).unwrap();
    b.record_status(&held, "from the server").unwrap();
    sync_pair(&mut a, &mut b);
    assert!(a.take_newly_standing().is_empty(), "not news again");
    assert_eq!(a.written_status(&refunded), Some(held));
    a.release_held(&refunded);
    assert_eq!(
        (a.ticket(&refunded).standing(), a.held_statuses()),
        (void.clone(), 0)
    );
    assert!(a.take_newly_standing().is_empty());
    // A reinstatement written later wins over a void held from before it.
    server_says(&mut b, &reinstated, Standing::Active, T0 + 10);
    sync_pair(&mut a, &mut b);
    a.hold_status(server_status(&reinstated, void.clone(), T0 + 5))
        .unwrap();
    assert_eq!(a.ticket(&reinstated).standing(), Standing::Active);
    // Not the server's signature: refused, nothing held.
    let mut bad = server_status(&forged, void, T0);
    bad.standing = Standing::Void {
        reason: "a refund nobody made".into(),
    };
    assert!(a.hold_status(bad).is_err());
    assert_eq!(a.ticket(&forged).standing(), Standing::Active);
    assert_eq!(a.held_statuses(), 1);
}

/// A status held when a whole ledger is taken in this one's place stays held in the new one:
/// the door still refuses the refunded ticket at once, and its standing is not news again.
#[test]
fn a_held_standing_outlives_a_whole_ledger_taken_in_its_place() {
    let mut a = signed_ledger(&event(), Role::Gate, "gate-a");
    let mut north = signed_ledger(&event(), Role::Gate, "gate-n");
    a.learn_device(&SERVER.device().cert_der).unwrap();
    for i in 0..50 {
        let r = redemption(&mut north, &TicketId::generate(), T0 + i);
        north.record_redemption(&r).unwrap();
    }
    let refunded = TicketId::generate();
    let void = Standing::Void {
        reason: "refund".into(),
    };
    a.hold_status(server_status(&refunded, void.clone(), T0))
        .unwrap();
    assert_eq!(a.take_newly_standing(), [(refunded.clone(), void.clone())]);
    let mut doc = automerge::AutoCommit::load(&north.save()).unwrap();
    let mut parts = prepared(&whole_message(&mut doc), a.node());
    assert!(parts.is_ready_whole());
    a.take_whole(&mut parts, now()).expect("taken whole");
    assert_eq!(a.redemption_count(), 50);
    assert_eq!(
        (a.ticket(&refunded).standing(), a.held_statuses()),
        (void, 1)
    );
    assert!(a.take_newly_standing().is_empty(), "not news again");
}

/// A peer's first message says what it holds in a bloom filter, which holds about one change
/// in a hundred that the peer lacks by mistake. The gate's answer then carries none of its
/// changes, and only the gate's heads show the peer what it lacks: the answer goes out even
/// when the gate already holds the peer's heads (it took the peer's changes before), so the
/// two share heads. A mesh test hung on this in about one run in fifty: a peer that syncs by
/// automerge's protocol alone never got the admission it was to tamper with.
#[test]
fn a_first_message_whose_filter_hides_a_change_by_mistake_still_gets_the_gates_heads() {
    let mut gate = signed_ledger(&event(), Role::Gate, "gate-a");
    let mut peer = signed_ledger(&event(), Role::Gate, "gate-p");
    sync_pair(&mut gate, &mut peer);
    // The one change of the gate's that the peer lacks.
    let r = redemption(&mut gate, &TicketId::generate(), T0);
    let hidden = gate.record_redemption(&r).unwrap().unwrap();
    let hidden = automerge::ChangeHash(hidden.hash);
    // The peer admits until its filter holds that change by mistake; the gate takes each of
    // its changes, so it holds the peer's heads.
    let mut tries = 0;
    let (hello, mut at_peer) = loop {
        tries += 1;
        assert!(tries < 5_000, "no filter held the gate's change");
        let r = redemption(&mut peer, &TicketId::generate(), T0 + tries);
        let made = peer.record_redemption(&r).unwrap().unwrap();
        gate.receive_changes(
            &mut gatemesh_ledger::PeerSync::default(),
            &made.bytes,
            now(),
        )
        .unwrap();
        let mut at_peer = gatemesh_ledger::PeerSync::default();
        let hello = peer.sync_message(&mut at_peer).unwrap();
        let decoded = automerge::sync::Message::decode(&hello).unwrap();
        if decoded.have[0].bloom.contains_hash(&hidden) {
            break (hello, at_peer);
        }
    };
    let mut at_gate = gatemesh_ledger::PeerSync::default();
    gate.receive_sync(&mut at_gate, &hello, now()).unwrap();
    let answer = gate
        .sync_followup(&mut at_gate)
        .expect("the gate answers a first message with its heads");
    let decoded = automerge::sync::Message::decode(&answer).unwrap();
    assert!(decoded.changes.is_empty(), "the filter hid the change");
    assert!(decoded.heads.contains(&hidden));
    // Each side follows up as a mesh session does, until neither has more to say.
    let mut next = Some(answer);
    for _ in 0..10 {
        let Some(m) = next.take() else { break };
        peer.receive_sync(&mut at_peer, &m, now()).unwrap();
        let Some(reply) = peer.sync_followup(&mut at_peer) else {
            break;
        };
        gate.receive_sync(&mut at_gate, &reply, now()).unwrap();
        next = gate.sync_followup(&mut at_gate);
    }
    assert_eq!(sorted_heads(&mut peer), sorted_heads(&mut gate));
}

/// What `from` sends `to` after `to`'s first sync message (the changes `to` lacks, or its
/// whole ledger when `to` holds nothing).
fn answer_to_first_message(from: &mut Ledger, to: &mut Ledger) -> Vec<u8> {
    let (mut to_from, mut to_to) = Default::default();
    let hello = to.sync_message(&mut to_from).unwrap();
    from.receive_sync(&mut to_to, &hello, now()).unwrap();
    from.sync_message(&mut to_to).unwrap()
}

/// `message` parsed and prechecked against `trust`, with what `vouched` holds.
fn prechecked(
    message: &[u8],
    trust: &Trust,
    vouched: &gatemesh_ledger::Vouched,
) -> gatemesh_ledger::SyncInParts {
    let mut parts = gatemesh_ledger::SyncInParts::parse(message).unwrap();
    parts.precheck(&event(), trust, vouched);
    parts
}

#[test]
fn a_message_taken_in_parts_with_scans_between_ends_where_one_taken_whole_does() {
    for precheck in [false, true] {
        taken_in_parts_ends_where_taken_whole(precheck);
    }
}

/// West takes in parts (its signatures checked first when `precheck`) what East takes whole.
fn taken_in_parts_ends_where_taken_whole(precheck: bool) {
    // North holds 400 admissions (some with exits); East and West were apart from it and
    // admitted some of the same tickets. East takes North's history in one message, West in
    // parts of 7 changes, admitting new tickets (and one of North's) between parts.
    let (mut north, mut east, mut west) =
        (Gate::new("North"), Gate::new("East"), Gate::new("West"));
    let tickets: Vec<TicketId> = (0..400).map(|_| TicketId::generate()).collect();
    for (i, tid) in tickets.iter().enumerate() {
        let at = T0 + i as i64 * 10;
        north.scan(tid, "n1", at);
        if i % 40 == 0 {
            east.scan(tid, "e1", at + 1);
            west.scan(tid, "w1", at + 1);
        }
        if i % 9 == 0 {
            north.scan_dir(tid, "n1", at + 5, Direction::Exit);
        }
    }
    sync_pair(&mut north.ledger, &mut east.ledger);
    let mut north_of_west = checking(reopened(&mut north.ledger));
    let mut own = Vec::new();
    let (parts, _) = sync_taking_parts(&mut north_of_west, &mut west, (7, precheck), |west| {
        let tid = TicketId::generate();
        assert_eq!(west.scan(&tid, "w1", T0 + MINUTE).verdict, Verdict::Admit);
        own.push(tid);
    });
    assert!(parts > 60, "{parts} parts");
    // What West holds of North's is what East holds; its own admissions reached North.
    let of_north = |l: &Ledger| {
        let mut ids: Vec<_> = l
            .redemptions()
            .into_iter()
            .filter(|r| r.gate == "North")
            .map(|r| r.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(of_north(&west.ledger), of_north(&east.ledger));
    assert_eq!(
        flagged(&west).len(),
        10,
        "every copy across the partition is flagged"
    );
    assert_eq!(flagged(&west), flagged(&east));
    for tid in &own {
        assert_eq!(north_of_west.ticket(tid).redemptions.len(), 1);
    }
    let (mut hw, mut hn) = (west.ledger.heads(), north_of_west.heads());
    hw.sort();
    hn.sort();
    assert_eq!(hw, hn, "both replicas hold the same history");
    // And the two agree: nothing more to say either way.
    let (_, learned) = sync_taking_parts(&mut north_of_west, &mut west, (7, precheck), |_| {
        panic!("a part")
    });
    assert_eq!(learned, 0);
    // A ticket North admitted is a duplicate at West, as at East.
    assert_eq!(
        west.scan(&tickets[399], "w1", T0 + MINUTE).verdict,
        Verdict::Duplicate
    );
}

#[test]
fn a_forged_record_in_a_later_part_refuses_that_part_and_keeps_what_came_before() {
    use automerge::transaction::Transactable;
    // Parts are checked one at a time, as pushes are: what came before the forgery is
    // honest and stays; the forged part and all after it never reach the document.
    let ((mut north, key), mut west) = (gate_with_key("North"), Gate::new("West"));
    for i in 0..30 {
        north.scan(&TicketId::generate(), "n1", T0 + i);
    }
    // A dishonest North: its changes under its own node id, as every change must be.
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    doc.set_actor(automerge::ActorId::from(
        north.ledger.node().as_str().as_bytes(),
    ));
    // A whole history in one message, as a catch-up sends it.
    let message_of = |doc: &mut automerge::AutoCommit| {
        automerge::sync::Message {
            heads: doc.get_heads(),
            need: Vec::new(),
            have: Vec::new(),
            changes: doc
                .get_changes(&[])
                .iter()
                .map(|c| c.raw_bytes().to_vec())
                .collect::<Vec<_>>()
                .into(),
            flags: None,
            version: automerge::sync::MessageVersion::V1,
        }
        .encode()
    };
    let honest_message = message_of(&mut doc);
    let forged_tid = TicketId::generate();
    let mut r = redemption(&mut north.ledger, &forged_tid, T0 + 100);
    r.gate = "Forged".into();
    let map = gatemesh_ledger::ticket_map(&doc, "redemptions", &forged_tid).unwrap();
    let record = format!("{},{}", r.tid, r.id);
    doc.put(&map, record, serde_json::to_string(&r).unwrap())
        .unwrap();
    doc.commit();
    // Its change signed by North, as a dishonest North signs what it writes.
    sign_as_author(&mut doc, &north.ledger.heads(), &key);
    let message = message_of(&mut doc);
    let mut peer = gatemesh_ledger::PeerSync::default();
    let mut parts = gatemesh_ledger::SyncInParts::parse(&message).unwrap();
    // Signatures checked ahead keep only good ones: the forged record is still refused,
    // also when the same message, honest, was checked ahead before.
    let vouched = gatemesh_ledger::Vouched::default();
    let mut honest = gatemesh_ledger::SyncInParts::parse(&honest_message).unwrap();
    honest.precheck(&event(), &trust_of(&event()), &vouched);
    assert!(honest.prechecked() >= 30, "{}", honest.prechecked());
    let mut again = gatemesh_ledger::SyncInParts::parse(&honest_message).unwrap();
    again.precheck(&event(), &trust_of(&event()), &vouched);
    assert_eq!(again.prechecked(), honest.prechecked());
    parts.precheck(&event(), &trust_of(&event()), &vouched);
    assert_eq!(
        parts.prechecked(),
        honest.prechecked() + 1,
        "the forged change's signature is North's; the record in it has none"
    );
    let mut taken = 0;
    let refused = loop {
        match west.ledger.take_sync_part(&mut peer, &mut parts, 4, now()) {
            Ok(new) => taken += new.len(),
            Err(e) => break e.to_string(),
        }
        assert!(parts.left() > 0, "the forged part was taken");
    };
    assert!(
        refused.contains("an unsigned redemptions record"),
        "{refused}"
    );
    // North's 30 admissions are one chain, the forged change last: of them, only the ones
    // that shared its part of 4 are lost.
    assert!(taken >= 30 - 3, "the honest parts before it stay ({taken})");
    assert_eq!(west.ledger.redemption_count(), taken);
    assert!(west.ledger.ticket(&forged_tid).redemptions.is_empty());
}

/// Who is inside each scope, counted by reading every redemption: per ticket and scope, the
/// latest in HLC order that no revert undid.
fn inside_by_reading(l: &Ledger, scope: &gatemesh_wire::Scope) -> u64 {
    let mut latest: std::collections::HashMap<TicketId, (gatemesh_ledger::Hlc, Direction)> =
        Default::default();
    for r in l.redemptions() {
        if r.scope.as_ref() != Some(scope) {
            continue;
        }
        let state = l.ticket(&r.tid);
        if !state.effective().any(|e| e.id == r.id) {
            continue;
        }
        let e = latest
            .entry(r.tid.clone())
            .or_insert((r.hlc.clone(), r.direction));
        if r.hlc >= e.0 {
            *e = (r.hlc.clone(), r.direction);
        }
    }
    latest
        .values()
        .filter(|(_, d)| *d == Direction::Entry)
        .count() as u64
}

#[test]
fn who_is_inside_each_scope_is_what_reading_every_redemption_counts() {
    let t0 = 1_795_000_000_000;
    let scope = |s: &str| gatemesh_wire::Scope::parse(s).unwrap();
    let (friday, saturday, vip) = (
        scope("main/2026-07-03"),
        scope("main/2026-07-04"),
        scope("vip"),
    );
    let (mut a, mut b) = (ledger(), ledger());
    let record = |l: &mut Ledger, tid: &TicketId, s: &gatemesh_wire::Scope, direction, at_ms| {
        let mut r = redemption(l, tid, at_ms);
        r.scope = Some(s.clone());
        r.direction = direction;
        r.seen = l.ticket(tid).redemption_ids();
        l.record_redemption(&r).unwrap();
    };
    let tickets: Vec<TicketId> = (0..90).map(|_| TicketId::generate()).collect();
    for (i, tid) in tickets.iter().enumerate() {
        let at = t0 + i as i64 * 1000;
        record(&mut a, tid, &friday, Direction::Entry, at);
        if i % 2 == 0 {
            record(&mut a, tid, &friday, Direction::Exit, at + 100);
        }
        if i % 3 == 0 {
            record(&mut b, tid, &saturday, Direction::Entry, at + 86_400_000);
        }
        if i % 5 == 0 {
            record(&mut b, tid, &vip, Direction::Entry, at + 200);
            if i % 10 == 0 {
                record(&mut b, tid, &vip, Direction::Exit, at + 300);
            }
        }
    }
    let figures = |l: &Ledger| {
        [&friday, &saturday, &vip].map(|s| (l.occupancy().inside(s), inside_by_reading(l, s)))
    };
    sync_pair(&mut a, &mut b);
    for l in [&a, &b] {
        let f = figures(l);
        assert!(f.iter().all(|(kept, read)| kept == read), "{f:?}");
        assert_eq!(f.map(|(kept, _)| kept), [45, 30, 9]);
    }
    // Staff revert one Friday entry of a holder still inside: one fewer inside on Friday.
    let undone = &tickets[1];
    let state = a.ticket(undone);
    let entry = state
        .redemptions
        .iter()
        .find(|r| r.scope.as_ref() == Some(&friday))
        .unwrap();
    let resolution = gatemesh_ledger::Resolution {
        sig: None,
        id: gatemesh_ledger::ResolutionId::random(),
        tid: undone.clone(),
        action: Action::Revert,
        staff: "sam".into(),
        note: "scanned by mistake".into(),
        node: a.node().clone(),
        at_ms: t0 + MINUTE,
        hlc: a.tick(t0 + MINUTE),
        covers: vec![entry.id.clone()],
        from_server: false,
    };
    a.record_resolution(&resolution).unwrap();
    assert_eq!(a.occupancy().inside(&friday), 44);
    assert_eq!(figures(&a)[0], (44, 44));
    let reopened = reopened(&mut a);
    assert_eq!(reopened.occupancy(), a.occupancy());
}

/// A sync message that carries `doc` whole, as automerge sends a catch-up.
fn whole_message(doc: &mut automerge::AutoCommit) -> Vec<u8> {
    automerge::sync::Message {
        heads: doc.get_heads(),
        need: Vec::new(),
        have: Vec::new(),
        changes: vec![doc.save()].into(),
        flags: None,
        version: automerge::sync::MessageVersion::V2,
    }
    .encode()
}

/// `message` parsed, its signatures checked ahead and, when it is a whole document, checked
/// and derived for `node`, as a gate does off its writer.
fn prepared(message: &[u8], node: &NodeId) -> gatemesh_ledger::SyncInParts {
    let mut parts = gatemesh_ledger::SyncInParts::parse(message).unwrap();
    let (event, trust) = (event(), trust_of(&event()));
    parts.precheck(&event, &trust, &gatemesh_ledger::Vouched::default());
    // An error leaves the message to its parts.
    let _ = parts.prepare_whole(node, &event, &trust, now());
    parts
}

#[test]
fn a_whole_ledger_checked_ahead_is_taken_in_one_step_with_the_scans_made_meanwhile() {
    // North holds 200 admissions. West, late, admitted five of its own and one of North's
    // tickets (a copy across the gap) before North's whole ledger reached it. West takes it
    // in one step and ends where taking it in parts ends: North's history and its own, the
    // copy flagged and reported once, what to store making the same ledger after a
    // restart, and its next records signed and in clock order.
    let (mut north, mut west) = (Gate::new("North"), Gate::new("West"));
    let tickets: Vec<TicketId> = (0..200).map(|_| TicketId::generate()).collect();
    for (i, tid) in tickets.iter().enumerate() {
        north.scan(tid, "n1", T0 + i as i64);
    }
    let own: Vec<TicketId> = (0..5).map(|_| TicketId::generate()).collect();
    for tid in &own {
        west.scan(tid, "w1", T0 + 10);
    }
    west.scan(&tickets[7], "w1", T0 + 20);
    let _ = west.ledger.take_newly_flagged();
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    let mut parts = prepared(&whole_message(&mut doc), west.ledger.node());
    assert!(parts.is_ready_whole());
    // What West did while the document was checked goes onto it off the writer; what it
    // does after that, on the writer as it takes the document.
    assert!(west.ledger.hand_besides(&mut parts) >= 6);
    parts.take_besides(now());
    assert!(parts.is_ready_whole());
    let meanwhile = TicketId::generate();
    assert_eq!(west.scan(&meanwhile, "w1", T0 + 30).verdict, Verdict::Admit);
    let mut state = gatemesh_ledger::PeerSync::default();
    let stored = west
        .ledger
        .take_whole(&mut parts, now())
        .expect("taken whole");
    assert_eq!(parts.left(), 0);
    west.ledger.finish_sync(&mut state, parts).unwrap();
    assert_eq!(west.ledger.redemption_count(), 200 + 6 + 1);
    assert_eq!(west.ledger.take_newly_flagged(), vec![tickets[7].clone()]);
    assert_eq!(flagged(&west), vec![tickets[7].clone()]);
    assert_eq!(
        west.scan(&tickets[100], "w1", now()).verdict,
        Verdict::Duplicate
    );
    // What take_whole returned is what to store: North's document as it came and what West
    // held besides it, rows after it. It reopens as the same ledger.
    let mut heads = west.ledger.heads();
    let mut reopened = Ledger::open(
        &event(),
        west.ledger.node().clone(),
        &genesis(&event()),
        Some(&stored.snapshot),
        stored.rows,
    )
    .unwrap();
    assert_eq!(reopened.redemption_count(), 200 + 6 + 1);
    let mut again = reopened.heads();
    heads.sort();
    again.sort();
    assert_eq!(again, heads, "nothing West took is left unstored");
    // West signs on, after every reading it gave before; North takes its records.
    let later = TicketId::generate();
    assert_eq!(west.scan(&later, "w1", T0 + 10).verdict, Verdict::Admit);
    let hlc = |g: &Gate, tid: &TicketId| g.ledger.ticket(tid).redemptions[0].hlc.clone();
    assert!(hlc(&west, &later) > hlc(&west, &own[4]));
    sync_pair(&mut north.ledger, &mut west.ledger);
    // West's five, its copy of North's ticket and the two after; a duplicate writes none.
    assert_eq!(north.ledger.redemption_count(), 200 + 5 + 1 + 2);
    for tid in own.iter().chain([&meanwhile, &later]) {
        assert_eq!(north.ledger.ticket(tid).redemptions.len(), 1);
    }
    assert_eq!(
        sorted_heads(&mut north.ledger),
        sorted_heads(&mut west.ledger)
    );
}

#[test]
fn a_whole_ledger_with_a_forged_record_is_not_taken_in_one_step_and_its_parts_refuse_it() {
    use automerge::transaction::Transactable;
    // A dishonest North slips one record it did not sign into its whole ledger (in a change
    // it signed). Checked ahead, the document is not made ready; the parts then refuse it,
    // and West holds what it held.
    let ((mut north, key), mut west) = (gate_with_key("North"), Gate::new("West"));
    for i in 0..30 {
        north.scan(&TicketId::generate(), "n1", T0 + i);
    }
    west.scan(&TicketId::generate(), "w1", T0);
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    doc.set_actor(automerge::ActorId::from(
        north.ledger.node().as_str().as_bytes(),
    ));
    let forged_tid = TicketId::generate();
    let mut r = redemption(&mut north.ledger, &forged_tid, T0 + 100);
    r.gate = "Forged".into();
    let map = gatemesh_ledger::ticket_map(&doc, "redemptions", &forged_tid).unwrap();
    doc.put(
        &map,
        format!("{},{}", r.tid, r.id),
        serde_json::to_string(&r).unwrap(),
    )
    .unwrap();
    doc.commit();
    sign_as_author(&mut doc, &north.ledger.heads(), &key);
    let before = west.ledger.save();
    let mut parts = prepared(&whole_message(&mut doc), west.ledger.node());
    assert!(!parts.is_ready_whole(), "a forged record made it ready");
    assert!(west.ledger.take_whole(&mut parts, now()).is_none());
    let mut state = gatemesh_ledger::PeerSync::default();
    let refused = west
        .ledger
        .take_sync_part(&mut state, &mut parts, usize::MAX, now())
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("an unsigned redemptions record"),
        "{refused}"
    );
    assert_eq!(west.ledger.save(), before);
}

#[test]
fn a_whole_ledger_made_ready_for_another_node_is_taken_in_parts() {
    // Made ready for East, the document is no ledger of West's: take_whole leaves it, and
    // West's parts take it as they would have.
    let (mut north, mut west, east) = (Gate::new("North"), Gate::new("West"), Gate::new("East"));
    for i in 0..40 {
        north.scan(&TicketId::generate(), "n1", T0 + i);
    }
    let mut doc = automerge::AutoCommit::load(&north.ledger.save()).unwrap();
    let mut parts = prepared(&whole_message(&mut doc), east.ledger.node());
    assert!(parts.is_ready_whole());
    assert!(west.ledger.take_whole(&mut parts, now()).is_none());
    let mut state = gatemesh_ledger::PeerSync::default();
    let taken = west
        .ledger
        .take_sync_part(&mut state, &mut parts, usize::MAX, now())
        .unwrap();
    west.ledger.finish_sync(&mut state, parts).unwrap();
    assert_eq!(
        taken.len(),
        40,
        "North's 40 admissions, its device with the first"
    );
    assert_eq!(west.ledger.redemption_count(), 40);
}
