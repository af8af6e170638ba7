//! A dishonest writer, playing the real sync protocol (and, separately, handing over a file)
//! with a document it changed with automerge itself: every way around the ledger's rules is
//! refused whole, the victim's records stay exactly as they were, and honest traffic —
//! including two gates writing the same learned admission — still goes through.

use automerge::{
    ActorId, AutoCommit, ObjId, ObjType, ROOT, ReadDoc,
    sync::{self, SyncDoc},
    transaction::Transactable,
};
use gatemesh_ledger::{
    Action, Hlc, Ledger, LedgerError, MAX_CHANGE_BYTES, MAX_CLOCK_AHEAD_MS, MAX_INFLATED_BYTES,
    NodeId, PeerSync, Redemption, RedemptionId, Standing, Status,
};
use gatemesh_ticket::TicketId;

use super::{Gate, T0, now};

/// Everything a victim holds that an attacker must not change.
#[derive(Debug, PartialEq)]
struct Held {
    redemptions: Vec<Redemption>,
    audit: Vec<gatemesh_ledger::AuditEntry>,
    flagged: Vec<TicketId>,
    standing: Vec<Standing>,
}

fn held(l: &Ledger, tickets: &[TicketId]) -> Held {
    Held {
        redemptions: l.redemptions(),
        audit: l.audit(),
        flagged: l.flagged().cloned().collect(),
        standing: tickets.iter().map(|t| l.ticket(t).standing()).collect(),
    }
}

/// A victim with two admissions and a void, and an attacker holding a copy of its document
/// and a stolen gate's key, which signs the changes it makes (`authored.rs`).
struct Scene {
    victim: Gate,
    attacker: AutoCommit,
    tickets: Vec<TicketId>,
    key: p256::ecdsa::SigningKey,
}

fn scene() -> Scene {
    let (thief, key) = thief_with_key();
    scene_with(thief, key)
}

/// [`scene`] with `thief` as the stolen gate, whose key is `key`.
fn scene_with(mut thief: Gate, key: p256::ecdsa::SigningKey) -> Scene {
    let mut victim = Gate::new("North");
    let tickets: Vec<TicketId> = (0..3).map(|_| TicketId::generate()).collect();
    victim.scan(&tickets[0], "n1", T0);
    victim.scan(&tickets[1], "n1", T0 + 1);
    super::server_says(
        &mut victim.ledger,
        &tickets[2],
        Standing::Void {
            reason: "refund".into(),
        },
        T0 + 2,
    );
    // The attacker is an enrolled device the victim has met (a stolen gate): its changes
    // are authored under its own node id, as every change from outside must be.
    thief.scan(&TicketId::generate(), "t1", T0);
    super::sync_pair(&mut thief.ledger, &mut victim.ledger);
    let mut attacker = AutoCommit::load(&victim.ledger.save()).unwrap();
    attacker.set_actor(ActorId::from(thief.ledger.node().as_str().as_bytes()));
    Scene {
        victim,
        attacker,
        tickets,
        key,
    }
}

fn map(doc: &AutoCommit, name: &str) -> ObjId {
    doc.get(ROOT, name).unwrap().unwrap().1
}

/// The first record of a map of ticket records: its shard and its key.
fn first_record(doc: &AutoCommit, name: &str) -> (ObjId, String) {
    let parent = map(doc, name);
    doc.keys(&parent)
        .find_map(|shard| {
            let shard = doc.get(&parent, shard.as_str()).unwrap().unwrap().1;
            let key = doc.keys(&shard).next()?;
            Some((shard, key))
        })
        .unwrap()
}

/// Plays the sync protocol between the attacker's document and the victim until one side
/// has nothing to say or the victim refuses a message.
fn sync_with(victim: &mut Ledger, attacker: &mut AutoCommit) -> Result<(), LedgerError> {
    let (mut theirs, mut ours) = (sync::State::new(), PeerSync::default());
    for _ in 0..20 {
        let mut progressed = false;
        if let Some(m) = attacker.sync().generate_sync_message(&mut theirs) {
            victim.receive_sync(&mut ours, &m.encode(), now())?;
            progressed = true;
        }
        if let Some(m) = victim.sync_message(&mut ours) {
            let m = sync::Message::decode(&m).unwrap();
            attacker
                .sync()
                .receive_sync_message(&mut theirs, m)
                .unwrap();
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    Ok(())
}

/// The attack, pushed, over sync and through a file: refused every way with a message naming
/// `expect`, and nothing the victim holds changes.
fn refused(mut s: Scene, attack: impl FnOnce(&mut AutoCommit), expect: &str) {
    attack(&mut s.attacker);
    s.attacker.commit();
    let before = held(&s.victim.ledger, &s.tickets);
    let heads = s.victim.ledger.heads();
    super::sign_as_author(&mut s.attacker, &heads, &s.key);
    let file = s.attacker.save();
    // Pushed, as a gate pushes its commits to its peers: refused the same way.
    let pushed: Vec<u8> = s
        .attacker
        .get_changes(&heads)
        .iter()
        .flat_map(|c| c.raw_bytes().to_vec())
        .collect();
    let by_push = s
        .victim
        .ledger
        .receive_changes(&mut PeerSync::default(), &pushed, now());
    match &by_push {
        Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
        other => panic!("the attack went through by push: {other:?} (wanted {expect:?})"),
    }
    assert_eq!(held(&s.victim.ledger, &s.tickets), before);
    // Read and checked ahead, off the writer, as a large push is: refused the same way.
    let vouched = gatemesh_ledger::Vouched::default();
    let ahead = gatemesh_ledger::PushAhead::check(
        pushed,
        &super::event(),
        &super::trust_of(&super::event()),
        &vouched,
    );
    let by_push_ahead =
        s.victim
            .ledger
            .receive_push_upto(&mut PeerSync::default(), ahead, now(), usize::MAX);
    match &by_push_ahead {
        Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
        other => {
            panic!("the attack went through by a push read ahead: {other:?} (wanted {expect:?})")
        }
    }
    assert_eq!(held(&s.victim.ledger, &s.tickets), before);
    let by_sync = sync_with(&mut s.victim.ledger, &mut s.attacker);
    match &by_sync {
        Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
        other => panic!("the attack went through by sync: {other:?} (wanted {expect:?})"),
    }
    // Sent whole, as a catch-up is: checked ahead off the writer, it is never taken in one
    // step, and its parts refuse it.
    let mut parts = super::prepared(
        &super::whole_message(&mut s.attacker),
        s.victim.ledger.node(),
    );
    assert!(
        s.victim.ledger.take_whole(&mut parts, now()).is_none(),
        "the attack was taken whole (wanted {expect:?})"
    );
    let by_parts =
        s.victim
            .ledger
            .take_sync_part(&mut PeerSync::default(), &mut parts, usize::MAX, now());
    match &by_parts {
        Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
        Err(LedgerError::WrongEvent { .. }) => {}
        other => panic!("the attack went through whole: {other:?} (wanted {expect:?})"),
    }
    assert_eq!(held(&s.victim.ledger, &s.tickets), before);
    // A file is refused too (one that rewrote `meta` already for naming another event).
    let by_file = s.victim.ledger.merge_saved(&file, now());
    match &by_file {
        Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
        Err(LedgerError::WrongEvent { .. }) => {}
        other => panic!("the attack went through by file: {other:?}"),
    }
    assert_eq!(held(&s.victim.ledger, &s.tickets), before);
    assert_eq!(s.victim.ledger.heads(), heads);
    // The victim still takes honest news afterwards.
    let mut peer = Gate::new("South");
    peer.learn(&mut s.victim);
    peer.scan(&TicketId::generate(), "s1", T0 + 10);
    s.victim.learn(&mut peer);
    assert_eq!(
        s.victim.ledger.redemption_count(),
        before.redemptions.len() + 1
    );
}

#[test]
fn deleting_another_gates_redemption_is_refused() {
    refused(
        scene(),
        |a| {
            let (m, key) = first_record(a, "redemptions");
            a.delete(&m, key.as_str()).unwrap();
        },
        "overwrites or deletes redemptions/",
    );
}

#[test]
fn replacing_a_root_map_is_refused() {
    refused(
        scene(),
        |a| {
            a.put_object(ROOT, "redemptions", ObjType::Map).unwrap();
        },
        "writes the document's root",
    );
}

#[test]
fn writing_meta_is_refused() {
    refused(
        scene(),
        |a| {
            let meta = map(a, "meta");
            a.put(&meta, "event", "ANOTHER").unwrap();
        },
        "which is no record map",
    );
}

#[test]
fn overwriting_another_gates_record_is_refused() {
    refused(
        scene(),
        |a| {
            let (m, key) = first_record(a, "redemptions");
            a.put(&m, key.as_str(), "{}").unwrap();
        },
        "overwrites or deletes redemptions/",
    );
}

#[test]
fn a_status_hidden_under_a_new_one_is_refused() {
    refused(
        scene(),
        |a| {
            let (m, key) = first_record(a, "status");
            a.put(&m, key.as_str(), "{}").unwrap();
        },
        "overwrites or deletes status/",
    );
}

/// A well-formed redemption of a fresh ticket, as the attacker writes it.
fn forged(tid: &TicketId, at_ms: i64) -> Redemption {
    let node = NodeId::random();
    Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: tid.clone(),
        direction: gatemesh_ledger::Direction::Entry,
        node: node.clone(),
        gate: "North".into(),
        scanner: "n1".into(),
        at_ms,
        hlc: Hlc {
            wall_ms: at_ms,
            counter: 0,
            node,
        },
        seen: Vec::new(),
        unlisted: false,
        scope: None,
    }
}

/// Puts `r` under its own key into the object `m`, wherever that is.
fn put_in(a: &mut AutoCommit, m: &ObjId, r: &Redemption) {
    a.put(
        m,
        format!("{},{}", r.tid, r.id),
        serde_json::to_string(r).unwrap(),
    )
    .unwrap();
}

/// Puts `r` under `key` in the shard of the ticket `key` names, where an honest gate would.
fn put_record(a: &mut AutoCommit, key: &str, r: &Redemption) {
    let tid = TicketId::new(key.split(',').next().unwrap()).unwrap();
    let m = gatemesh_ledger::ticket_map(a, "redemptions", &tid).unwrap();
    a.put(&m, key, serde_json::to_string(r).unwrap()).unwrap();
}

#[test]
fn a_record_in_another_tickets_shard_is_refused() {
    let s = scene();
    let tid = s.tickets[0].clone();
    refused(
        s,
        |a| {
            // Signed and well-formed, but where no reader of its ticket looks: a gate would
            // not see the admission, and the next scan of the ticket would be green.
            let r = forged(&tid, T0);
            let own = gatemesh_ledger::shard_of(&tid);
            let other = (0..gatemesh_ledger::SHARDS).find(|i| *i != own).unwrap();
            let parent = map(a, "redemptions");
            let m = a.get(&parent, format!("{other:02x}")).unwrap().unwrap().1;
            put_in(a, &m, &r);
        },
        "not its own",
    );
}

#[test]
fn writing_a_map_of_shards_itself_is_refused() {
    let s = scene();
    let tid = s.tickets[0].clone();
    refused(
        s,
        |a| {
            let r = forged(&tid, T0);
            put_in(a, &map(a, "redemptions"), &r);
        },
        "writes the redemptions map itself",
    );
}

#[test]
fn a_record_from_the_far_future_is_refused() {
    let s = scene();
    let tid = s.tickets[0].clone();
    refused(
        s,
        |a| {
            let r = forged(&tid, now() + MAX_CLOCK_AHEAD_MS + 60_000);
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
        },
        "ahead of this gate's clock",
    );
}

#[test]
fn a_record_under_another_key_is_refused() {
    let s = scene();
    let tid = s.tickets[1].clone();
    refused(
        s,
        |a| {
            // A real record replayed under a key of a fresh id: it would count twice.
            let r = forged(&tid, T0);
            put_record(a, &format!("{},{}", r.tid, RedemptionId::random()), &r);
        },
        "which is not its key",
    );
}

#[test]
fn something_that_is_no_record_is_refused() {
    refused(
        scene(),
        |a| {
            let x = TicketId::new("x").unwrap();
            let m = gatemesh_ledger::ticket_map(a, "resolutions", &x).unwrap();
            a.put(&m, "x,y", "not json").unwrap();
        },
        "does not read",
    );
}

fn message_of(chunks: Vec<Vec<u8>>) -> Vec<u8> {
    sync::Message {
        heads: Vec::new(),
        need: Vec::new(),
        have: Vec::new(),
        changes: chunks.into(),
        flags: None,
        version: sync::MessageVersion::V1,
    }
    .encode()
}

/// Refused as too large, by sync message, pushed (read ahead, off the writer) and in a
/// file, and nothing changed.
fn bomb_refused(
    victim: &mut Gate,
    by_sync: Option<Vec<u8>>,
    by_push: Option<Vec<u8>>,
    file: Option<Vec<u8>>,
) {
    let before = victim.ledger.redemptions();
    let heads = victim.ledger.heads();
    if let Some(message) = by_sync {
        let refusal = victim
            .ledger
            .receive_sync(&mut PeerSync::default(), &message, now());
        assert!(
            matches!(&refusal, Err(LedgerError::TooLarge { .. })),
            "{refusal:?}"
        );
    }
    if let Some(push) = by_push {
        let (event, vouched) = (super::event(), gatemesh_ledger::Vouched::default());
        let ahead =
            gatemesh_ledger::PushAhead::check(push, &event, &super::trust_of(&event), &vouched);
        assert_eq!(ahead.prechecked(), 0);
        let refusal =
            victim
                .ledger
                .receive_push_upto(&mut PeerSync::default(), ahead, now(), usize::MAX);
        assert!(
            matches!(&refusal, Err(LedgerError::TooLarge { .. })),
            "{refusal:?}"
        );
    }
    if let Some(file) = file {
        let refusal = victim.ledger.merge_saved(&file, now());
        assert!(
            matches!(&refusal, Err(LedgerError::TooLarge { .. })),
            "{refusal:?}"
        );
    }
    assert_eq!(victim.ledger.redemptions(), before);
    assert_eq!(victim.ledger.heads(), heads);
}

#[test]
fn a_compressed_bomb_is_refused_before_it_is_inflated() {
    // A compressed change chunk (type 2) whose body inflates past the bound of one change.
    let chunk = gatemesh_testkit::bomb::compressed_change(MAX_CHANGE_BYTES + 1);
    let mut victim = Gate::new("North");
    victim.scan(&TicketId::generate(), "n1", T0);
    // In a file, after the ledger's own document.
    let mut file = victim.ledger.save();
    file.extend(&chunk);
    bomb_refused(
        &mut victim,
        Some(message_of(vec![chunk.clone()])),
        Some(chunk),
        Some(file),
    );
}

#[test]
fn a_document_whose_columns_inflate_past_the_bound_is_refused() {
    // The victim's own document, one column replaced by DEFLATE data of 272 MiB: as a file
    // (`gatemesh import`) and as the whole-document chunk of a sync message.
    let mut victim = Gate::new("North");
    victim.scan(&TicketId::generate(), "n1", T0);
    let mut peer = Gate::new("South");
    peer.scan(&TicketId::generate(), "s1", T0);
    let bomb =
        gatemesh_testkit::bomb::document(&peer.ledger.save(), MAX_INFLATED_BYTES + (16 << 20));
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    bomb_refused(
        &mut victim,
        Some(message_of(vec![bomb.clone()])),
        None,
        Some(bomb),
    );
    // Honest documents still come in whole.
    let honest = peer.ledger.save();
    victim.ledger.merge_saved(&honest, now()).unwrap();
    assert_eq!(victim.ledger.redemption_count(), 2);
}

#[test]
fn many_compressed_changes_share_one_bound() {
    // Each under the bound of one change, together past the bound of a message or file.
    let each = MAX_CHANGE_BYTES - 1;
    let chunk = gatemesh_testkit::bomb::compressed_change(each);
    let chunks = vec![chunk; MAX_INFLATED_BYTES / each + 1];
    let mut victim = Gate::new("North");
    victim.scan(&TicketId::generate(), "n1", T0);
    let mut file = victim.ledger.save();
    file.extend(chunks.concat());
    bomb_refused(
        &mut victim,
        Some(message_of(chunks.clone())),
        Some(chunks.concat()),
        Some(file),
    );
}

#[test]
fn two_gates_writing_the_same_learned_admission_is_no_attack() {
    // Both learn gate C's admission from the server and write it, each in its own change,
    // with C's certificate (as the server relays it).
    let (mut a, mut b, mut c) = (Gate::new("A"), Gate::new("B"), Gate::new("C"));
    a.learn(&mut b);
    let tid = TicketId::generate();
    c.scan(&tid, "c1", T0);
    let learned = c.ledger.ticket(&tid).redemptions[0].clone();
    let cert = c.ledger.own_device().unwrap().cert_der.clone();
    for gate in [&mut a, &mut b] {
        gate.ledger.learn_device(&cert).unwrap();
        gate.ledger.record_redemption(&learned).unwrap();
    }
    super::sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(
        a.ledger.ticket(&tid).redemptions,
        std::slice::from_ref(&learned)
    );
    assert_eq!(b.ledger.ticket(&tid).redemptions, [learned]);
    assert_eq!(a.ledger.heads(), b.ledger.heads());
}

#[test]
fn honest_statuses_and_resolutions_sync_under_the_rules() {
    let (mut a, mut b) = (Gate::new("A"), Gate::new("B"));
    a.learn(&mut b);
    let tid = TicketId::generate();
    a.scan(&tid, "a1", T0);
    b.scan(&tid, "b1", T0 + 1);
    super::sync_pair(&mut a.ledger, &mut b.ledger);
    a.resolve(&tid, Action::Accept, T0 + 2);
    for (i, standing) in [
        Standing::Void {
            reason: "refund".into(),
        },
        Standing::Active,
    ]
    .into_iter()
    .enumerate()
    {
        super::server_says(&mut b.ledger, &tid, standing, T0 + 3 + i as i64);
    }
    super::sync_pair(&mut a.ledger, &mut b.ledger);
    assert_eq!(a.ledger.heads(), b.ledger.heads());
    assert_eq!(a.ledger.ticket(&tid).standing(), Standing::Active);
    assert!(a.ledger.flagged().next().is_none());
}

/// The genesis format 2 made: records without signatures, no `devices` map.
fn format_2_genesis() -> Vec<u8> {
    old_genesis(2, &["redemptions", "resolutions", "status", "audit"])
}

fn old_genesis(format: i64, roots: &[&str]) -> Vec<u8> {
    let mut doc = AutoCommit::new().with_actor(ActorId::from(&b"gatemesh-genesis"[..]));
    let meta = doc.put_object(ROOT, "meta", ObjType::Map).unwrap();
    doc.put(&meta, "event", super::event().as_str()).unwrap();
    doc.put(&meta, "format", format).unwrap();
    for root in roots {
        doc.put_object(ROOT, *root, ObjType::Map).unwrap();
    }
    doc.commit_with(
        automerge::transaction::CommitOptions::default()
            .with_time(0)
            .with_message("genesis"),
    );
    doc.save()
}

#[test]
fn a_ledger_of_the_old_format_is_refused_with_a_message_saying_so() {
    let old = format_2_genesis();
    let opened = Ledger::open(&super::event(), NodeId::random(), &old, None, []);
    let e = opened.unwrap_err();
    assert!(
        matches!(
            e,
            LedgerError::Format {
                found: 2,
                expected: 6
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("format 2"), "{e}");
    // Each older layout: format 3 had no revocations, format 4 kept each kind of ticket
    // record in one map, format 5 had no check-in lists.
    let maps = [
        "redemptions",
        "resolutions",
        "status",
        "audit",
        "devices",
        "revocations",
    ];
    for (format, roots) in [(3, &maps[..5]), (4, &maps[..]), (5, &maps[..])] {
        let old = old_genesis(format, roots);
        let e = Ledger::open(&super::event(), NodeId::random(), &old, None, []).unwrap_err();
        assert!(
            matches!(e, LedgerError::Format { found, expected: 6 } if found == format),
            "{e:?}"
        );
        assert!(e.to_string().contains(&format!("format {format}")), "{e}");
    }
    let mut g = Gate::new("North");
    let merged = g.ledger.merge_saved(&old, now());
    assert!(
        matches!(merged, Err(LedgerError::Format { found: 2, .. })),
        "{merged:?}"
    );
}

// ---- who wrote it: signatures, certificates and roles ------------------------------------

/// Syncs `from` into `to` until `to` refuses a message; the refusal's text.
fn refusal(from: &mut Ledger, to: &mut Ledger) -> String {
    let (mut sf, mut st) = (PeerSync::default(), PeerSync::default());
    for _ in 0..20 {
        if let Some(m) = from.sync_message(&mut sf) {
            match to.receive_sync(&mut st, &m, now()) {
                Err(LedgerError::Refused(why)) => return why,
                Err(e) => panic!("refused for another reason: {e}"),
                Ok(_) => {}
            }
        }
        if let Some(m) = to.sync_message(&mut st) {
            from.receive_sync(&mut sf, &m, now()).unwrap();
        }
    }
    panic!("everything was taken");
}

/// The victim's first redemption as stored, signature and all.
fn victims_record(s: &Scene) -> Redemption {
    s.victim.ledger.ticket(&s.tickets[0]).redemptions[0].clone()
}

#[test]
fn a_record_in_another_devices_name_is_refused() {
    // A device of the event writes an admission naming the victim's node, signed by itself.
    let s = scene();
    let victim = s.victim.ledger.node().clone();
    let mut thief = Gate::new("Thief");
    let tid = TicketId::generate();
    thief.scan(&tid, "t1", T0);
    let mut r = thief.ledger.ticket(&tid).redemptions[0].clone();
    r.node = victim.clone();
    r.hlc.node = victim;
    refused(
        s,
        |a| put_record(a, &format!("{},{}", r.tid, r.id), &r),
        "whose signature is not",
    );
}

#[test]
fn an_unsigned_record_in_an_enrolled_devices_name_is_refused() {
    let s = scene();
    let mut r = victims_record(&s);
    r.id = RedemptionId::random();
    r.tid = TicketId::generate();
    r.sig = None;
    refused(
        s,
        |a| put_record(a, &format!("{},{}", r.tid, r.id), &r),
        "an unsigned redemptions record",
    );
}

#[test]
fn a_signed_record_altered_in_one_field_is_refused() {
    // The victim's own admission, copied under a new id for another ticket: its signature
    // covered the old id and ticket.
    let s = scene();
    let mut r = victims_record(&s);
    r.id = RedemptionId::random();
    r.gate = "Elsewhere".into();
    refused(
        s,
        |a| put_record(a, &format!("{},{}", r.tid, r.id), &r),
        "whose signature is not",
    );
}

/// `thief` (an enrolled gate's ledger) admits `tid` at `at`, signed, as an honest gate would.
fn admit_at(thief: &mut Ledger, tid: &TicketId, at: i64) {
    let r = Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: tid.clone(),
        direction: gatemesh_ledger::Direction::Entry,
        node: thief.node().clone(),
        gate: "Thief".into(),
        scanner: "t".into(),
        at_ms: at,
        hlc: thief.tick(at),
        seen: Vec::new(),
        unlisted: false,
        scope: None,
    };
    thief.record_redemption(&r).unwrap();
}

#[test]
fn a_forged_signature_deep_in_a_large_batch_is_refused_whole() {
    // A large batch's signatures are checked on several threads: a forgery behind 150
    // honest records of an enrolled gate refuses the whole batch all the same.
    let mut thief = super::signed_ledger(&super::event(), gatemesh_ledger::Role::Gate, "Thief");
    let mut tid = TicketId::generate();
    for i in 0..150 {
        tid = TicketId::generate();
        let at = T0 + i;
        admit_at(&mut thief, &tid, at);
    }
    let mut honest = AutoCommit::load(&thief.save()).unwrap();
    let mut r = thief.ticket(&tid).redemptions[0].clone();
    r.id = RedemptionId::random();
    r.gate = "Elsewhere".into();
    refused(
        scene(),
        |a| {
            a.merge(&mut honest).unwrap();
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
        },
        "whose signature is not",
    );
}

#[test]
fn a_record_of_a_node_whose_certificate_nobody_holds_is_refused() {
    let s = scene();
    let r = forged(&TicketId::generate(), T0);
    refused(
        s,
        |a| put_record(a, &format!("{},{}", r.tid, r.id), &r),
        "whose certificate the ledger does not hold",
    );
}

#[test]
fn a_certificate_under_another_node_id_or_from_another_ca_is_refused() {
    let s = scene();
    let cert = s.victim.ledger.own_device().unwrap().cert_der.clone();
    let claim = gatemesh_ledger::DeviceRecord {
        node: NodeId::random(),
        cert: base64_url(&cert),
    };
    refused(
        s,
        |a| {
            let m = map(a, "devices");
            let json = serde_json::to_string(&claim).unwrap();
            a.put(&m, claim.node.as_str(), json).unwrap();
        },
        "whose key makes it",
    );

    // A certificate another CA made for this event's name.
    let other = gatemesh_mesh::pki::create_ca("ROCK-2026", 30).unwrap();
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&other.cert_pem, &other.key_pem).unwrap();
    let id =
        gatemesh_mesh::identity::PeerId::new("ROCK-2026", gatemesh_ledger::Role::Gate, "North");
    let pem = ca.enroll(&id, 30).unwrap();
    let trust = gatemesh_ledger::Trust::from_pem(&other.cert_pem, &super::event()).unwrap();
    let foreign = gatemesh_ledger::Signer::from_pem(&trust, &pem.cert_pem, &pem.key_pem).unwrap();
    let claim = gatemesh_ledger::DeviceRecord::of(foreign.device());
    refused(
        scene(),
        |a| {
            let m = map(a, "devices");
            let json = serde_json::to_string(&claim).unwrap();
            a.put(&m, claim.node.as_str(), json).unwrap();
        },
        "CA",
    );
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn an_observer_may_resolve_but_neither_admit_nor_set_a_standing() {
    let mut victim = Gate::new("North");
    let event = super::event();
    let tid = TicketId::generate();
    victim.scan(&tid, "n1", T0);
    let before = victim.ledger.redemptions();

    // Its redemption: signed, by a real observer certificate, and refused for the role.
    let mut observer = super::signed_ledger(&event, gatemesh_ledger::Role::Observer, "Desk");
    let at = T0 + 5;
    let r = Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: TicketId::generate(),
        direction: gatemesh_ledger::Direction::Entry,
        node: observer.node().clone(),
        gate: "Desk".into(),
        scanner: "d".into(),
        at_ms: at,
        hlc: observer.tick(at),
        seen: Vec::new(),
        unlisted: false,
        scope: None,
    };
    observer.record_redemption(&r).unwrap();
    let why = refusal(&mut observer, &mut victim.ledger);
    assert!(why.contains("may not write redemptions"), "{why}");
    assert_eq!(victim.ledger.redemptions(), before);

    // Its standing: refused the same way.
    let mut observer = super::signed_ledger(&event, gatemesh_ledger::Role::Observer, "Desk");
    let s = Status {
        sig: None,
        tid: tid.clone(),
        standing: Standing::Void {
            reason: "because".into(),
        },
        by: "Desk".into(),
        at_ms: at,
        hlc: observer.tick(at),
    };
    observer.record_status(&s, "void").unwrap();
    let why = refusal(&mut observer, &mut victim.ledger);
    assert!(why.contains("may not write status"), "{why}");
    assert_eq!(victim.ledger.ticket(&tid).standing(), Standing::Active);

    // A gate's standing: refused too (only the server's identity writes standings).
    let mut gate = super::signed_ledger(&event, gatemesh_ledger::Role::Gate, "South");
    let s = Status {
        hlc: gate.tick(at),
        ..s
    };
    gate.record_status(&s, "void").unwrap();
    let why = refusal(&mut gate, &mut victim.ledger);
    assert!(why.contains("may not write status"), "{why}");
    assert_eq!(victim.ledger.ticket(&tid).standing(), Standing::Active);

    // Its resolution of a flag: taken.
    let mut observer = super::signed_ledger(&event, gatemesh_ledger::Role::Observer, "Desk");
    super::sync_pair(&mut observer, &mut victim.ledger);
    let res = gatemesh_ledger::Resolution {
        sig: None,
        id: gatemesh_ledger::ResolutionId::random(),
        tid: tid.clone(),
        action: Action::Revert,
        staff: "Kim".into(),
        note: "let in by mistake".into(),
        node: observer.node().clone(),
        at_ms: at,
        hlc: observer.tick(at),
        covers: before.iter().map(|r| r.id.clone()).collect(),
        from_server: false,
    };
    observer.record_resolution(&res).unwrap();
    super::sync_pair(&mut observer, &mut victim.ledger);
    let resolutions = victim.ledger.ticket(&tid).resolutions;
    assert_eq!(resolutions.len(), 1);
    assert_eq!(resolutions[0].node, *observer.node());
}

#[test]
fn a_device_flooding_one_ticket_is_refused_and_the_victim_keeps_deciding() {
    // A real, enrolled gate writes more entries for one ticket than any holder makes.
    let mut victim = Gate::new("North");
    let tid = TicketId::generate();
    victim.scan(&tid, "n1", T0);
    let before = victim.ledger.redemptions();
    let mut thief = super::signed_ledger(&super::event(), gatemesh_ledger::Role::Gate, "Thief");
    for i in 0..=gatemesh_ledger::MAX_PER_TICKET {
        let at = T0 + i as i64;
        admit_at(&mut thief, &tid, at);
    }
    let why = refusal(&mut thief, &mut victim.ledger);
    assert!(
        why.contains("more than 1000 redemptions of ticket"),
        "{why}"
    );
    assert_eq!(victim.ledger.redemptions(), before);
    assert!(victim.ledger.flagged().next().is_none());
}

#[test]
fn what_the_server_relays_meets_the_rules_a_peers_record_would() {
    // A gate's uplink writes other devices' admissions the server relays. What its mesh
    // peers would refuse from it — a record dated ahead, a writer's 1,001st of one ticket —
    // it refuses too, and the rest still comes in.
    let event = super::event();
    let (thief, key) = super::device_with_key(&event, gatemesh_ledger::Role::Gate, "Thief");
    let mut victim = Gate::new("North");
    let tid = TicketId::generate();
    victim.scan(&tid, "n1", T0);
    let signed = |tid: &TicketId, at: i64, counter: u32| {
        let mut r = forged(tid, at);
        r.hlc.counter = counter;
        thief.sign_redemption(&event, &mut r).unwrap();
        r
    };
    // The thief's first 1,000 of the ticket, by sync in one change: within the bound.
    let mut doc = AutoCommit::load(&victim.ledger.save()).unwrap();
    doc.set_actor(ActorId::from(thief.node().as_str().as_bytes()));
    let devices = map(&doc, "devices");
    let device = gatemesh_ledger::DeviceRecord::of(thief.device());
    doc.put(
        &devices,
        device.node.as_str(),
        serde_json::to_string(&device).unwrap(),
    )
    .unwrap();
    for i in 0..gatemesh_ledger::MAX_PER_TICKET {
        let r = signed(&tid, T0 + 1, i as u32);
        put_record(&mut doc, &format!("{},{}", r.tid, r.id), &r);
    }
    doc.commit();
    super::sign_as_author(&mut doc, &victim.ledger.heads(), &key);
    sync_with(&mut victim.ledger, &mut doc).unwrap();
    let held = victim.ledger.redemption_count();
    assert_eq!(held, gatemesh_ledger::MAX_PER_TICKET + 1);

    let refused = |victim: &mut Gate, r: &Redemption, expect: &str| {
        let heads = victim.ledger.heads();
        match victim.ledger.record_relayed(r, now()) {
            Err(LedgerError::Refused(why)) => assert!(why.contains(expect), "{why}"),
            other => panic!("taken: {other:?}"),
        }
        assert_eq!(victim.ledger.heads(), heads);
    };
    refused(&mut victim, &signed(&tid, T0 + 2, 5000), "more than 1000");
    let ahead = now() + MAX_CLOCK_AHEAD_MS + 60_000;
    refused(
        &mut victim,
        &signed(&TicketId::generate(), ahead, 0),
        "ahead",
    );
    assert_eq!(victim.ledger.redemption_count(), held);
    // Within the rules, taken.
    victim
        .ledger
        .record_relayed(&signed(&TicketId::generate(), T0 + 3, 0), now())
        .unwrap();
    assert_eq!(victim.ledger.redemption_count(), held + 1);
}

// ---- the check-in lists: the server's word only ------------------------------------------

/// Puts release `r` into the attacker's document, where the server's would sit.
fn put_lists(a: &mut AutoCommit, r: &gatemesh_ledger::ListsRecord) {
    let m = map(a, "lists");
    let key = format!("{:016x},{}", r.version, r.hlc.node);
    a.put(&m, key, serde_json::to_string(r).unwrap()).unwrap();
}

#[test]
fn an_unsigned_release_of_the_lists_in_the_servers_name_is_refused() {
    let mut r = super::lists::release(1, super::lists::lists_file(&["VIP"]), T0);
    r.sig = None;
    refused(scene(), |a| put_lists(a, &r), "an unsigned lists record");
}

#[test]
fn a_release_of_the_lists_altered_after_the_server_signed_it_is_refused() {
    // The server let only VIP tickets into the VIP area; the attacker lets GA in too.
    let mut r = super::lists::release(1, super::lists::lists_file(&["VIP"]), T0);
    r.lists = super::lists::lists_file(&["VIP", "GA"]);
    refused(scene(), |a| put_lists(a, &r), "whose signature is not");
}

#[test]
fn a_release_of_the_lists_that_does_not_check_is_refused_though_the_server_signed_it() {
    let r = super::lists::release(1, super::lists::lists_file(&["BACKSTAGE"]), T0);
    refused(scene(), |a| put_lists(a, &r), "does not check");
}

#[test]
fn a_stolen_gate_that_releases_lists_itself_is_refused() {
    use p256::ecdsa::signature::Signer as _;
    // An enrolled gate signs a release with its own key, its certificate brought along.
    let (thief, key) =
        super::device_with_key(&super::event(), gatemesh_ledger::Role::Gate, "Thief");
    let mut r = super::lists::release(9, super::lists::lists_file(&["VIP", "GA"]), T0);
    r.hlc.node = thief.node().clone();
    r.sig = None;
    let mut message = Vec::new();
    for part in [&b"gatemesh-record-v1"[..], b"ROCK-2026", b"lists"] {
        message.extend_from_slice(part);
        message.push(0);
    }
    message.extend_from_slice(serde_json::to_string(&r).unwrap().as_bytes());
    let sig: p256::ecdsa::Signature = key.sign(&message);
    r.sig = Some(base64_url(&sig.to_bytes()));
    let claim = gatemesh_ledger::DeviceRecord::of(thief.device());
    refused(
        scene(),
        |a| {
            let devices = map(a, "devices");
            a.put(
                &devices,
                claim.node.as_str(),
                serde_json::to_string(&claim).unwrap(),
            )
            .unwrap();
            put_lists(a, &r);
        },
        "whose role may not write lists",
    );
}

#[test]
fn good_records_passed_on_under_an_author_that_is_no_device_are_refused() {
    // South's admission, as South signed it, with South's certificate, carried in a change
    // whose actor no certificate names: each record would be taken, the change is not.
    let mut s = scene();
    s.attacker.set_actor(ActorId::random());
    let mut south = Gate::new("South");
    let tid = TicketId::generate();
    south.scan(&tid, "s1", T0);
    let r = south.ledger.ticket(&tid).redemptions[0].clone();
    let cert = gatemesh_ledger::DeviceRecord::of(south.ledger.own_device().unwrap());
    refused(
        s,
        |a| {
            let devices = map(a, "devices");
            a.put(
                &devices,
                cert.node.as_str(),
                serde_json::to_string(&cert).unwrap(),
            )
            .unwrap();
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
        },
        "which is no device of this event",
    );
}

#[test]
fn a_certificate_found_good_once_vouches_for_nothing_else() {
    // Trust remembers certificates it found good (the server checks one beside every
    // redemption it is sent). What it remembers must not let anything else through.
    let event = super::event();
    let trust = super::trust_of(&event);
    let north = super::device_of(&event, gatemesh_ledger::Role::Gate, "North");
    let der = north.device().cert_der.clone();
    let first = trust.device(&der).unwrap();
    // A clone shares what was found; the same certificate names the same device.
    let again = trust.clone().device(&der).unwrap();
    assert_eq!(
        (first.node.clone(), first.peer.clone()),
        (again.node, again.peer)
    );

    // The same certificate with its signature altered, after the good one is remembered.
    let mut forged = der.clone();
    let last = forged.len() - 1;
    forged[last] ^= 0x01;
    let why = trust.device(&forged).unwrap_err();
    assert!(
        why.contains("did not sign") || why.contains("does not read"),
        "{why}"
    );

    // The same certificate to another CA's trust, and to this CA's trust for another event.
    let other = gatemesh_mesh::pki::create_ca(event.as_str(), 30).unwrap();
    let stranger = gatemesh_ledger::Trust::from_pem(&other.cert_pem, &event).unwrap();
    assert!(stranger.device(&der).unwrap_err().contains("CA"));
    let elsewhere = gatemesh_ticket::EventId::new("ELSEWHERE-2026").unwrap();
    assert!(super::trust_of(&elsewhere).device(&der).is_err());

    // A refused certificate is refused again: nothing is remembered of it.
    assert_eq!(trust.device(&forged).unwrap_err(), why);
}

#[test]
fn a_signature_found_good_once_vouches_only_for_that_record() {
    // The server is sent every admission by every gate; a signature found good is not
    // verified again. A record altered after it was vouched for is still refused, and the
    // checks that are not the signature's are made every time.
    let event = super::event();
    let trust = super::trust_of(&event);
    let vouched = gatemesh_ledger::Vouched::default();
    let mut south = Gate::new("South");
    let tid = TicketId::generate();
    south.scan(&tid, "s1", T0);
    let r = south.ledger.ticket(&tid).redemptions[0].clone();
    let cert = south.ledger.own_device().unwrap().cert_der.clone();
    for _ in 0..2 {
        gatemesh_ledger::check_redemption_vouched(&trust, &cert, &r, &vouched).unwrap();
    }
    let mut moved = r.clone();
    moved.gate = "Elsewhere".into();
    let why =
        gatemesh_ledger::check_redemption_vouched(&trust, &cert, &moved, &vouched).unwrap_err();
    assert!(why.contains("signature"), "{why}");
    // The same good record under another device's certificate: not its writer.
    let north = super::device_of(&event, gatemesh_ledger::Role::Gate, "North");
    let other = north.device().cert_der.clone();
    assert!(gatemesh_ledger::check_redemption_vouched(&trust, &other, &r, &vouched).is_err());
    // Under another event's trust: refused, whatever was vouched for here.
    let elsewhere = gatemesh_ticket::EventId::new("ELSEWHERE-2026").unwrap();
    let foreign = super::trust_of(&elsewhere);
    assert!(gatemesh_ledger::check_redemption_vouched(&foreign, &cert, &r, &vouched).is_err());
}

/// A stolen gate whose key the attacker holds, as a [`Gate`], with that key.
fn thief_with_key() -> (Gate, p256::ecdsa::SigningKey) {
    super::gate_with_key("Thief")
}

/// `record` of map `map` signed with `key`, as its writer's signature is made.
fn signed_with<R: serde::Serialize>(
    key: &p256::ecdsa::SigningKey,
    map: &str,
    record: &R,
) -> String {
    use p256::ecdsa::signature::Signer as _;
    let mut message = Vec::new();
    for part in [&b"gatemesh-record-v1"[..], b"ROCK-2026", map.as_bytes()] {
        message.extend_from_slice(part);
        message.push(0);
    }
    message.extend_from_slice(serde_json::to_string(record).unwrap().as_bytes());
    let sig: p256::ecdsa::Signature = key.sign(&message);
    base64_url(&sig.to_bytes())
}

/// A seal (`seal.rs`) of `node`'s history through `through`, signed with `key`.
fn seal_line(
    node: &NodeId,
    through: automerge::ChangeHash,
    at_ms: i64,
    key: &p256::ecdsa::SigningKey,
) -> gatemesh_ledger::AuditEntry {
    let mut line = gatemesh_ledger::AuditEntry {
        hlc: Hlc {
            wall_ms: at_ms,
            counter: 0,
            node: node.clone(),
        },
        at_ms,
        node: node.clone(),
        actor: "Thief".into(),
        action: "seal".into(),
        tid: None,
        detail: format!("vouches for its changes through {through}"),
        sig: None,
    };
    line.sig = Some(signed_with(key, "audit", &line));
    line
}

/// Puts `line` under its own key in the audit map.
fn put_audit(a: &mut AutoCommit, line: &gatemesh_ledger::AuditEntry) {
    let audit = map(a, "audit");
    let key = format!(
        "{:016x}.{:08x},{}",
        line.hlc.wall_ms, line.hlc.counter, line.hlc.node
    );
    a.put(&audit, key, serde_json::to_string(line).unwrap())
        .unwrap();
}

/// `forged` in `node`'s name, with a signature that is no one's.
fn forged_as(node: &NodeId, at_ms: i64) -> Redemption {
    let mut r = forged(&TicketId::generate(), at_ms);
    r.node = node.clone();
    r.hlc.node = node.clone();
    r.sig = Some(base64_url(&[7u8; 64]));
    r
}

#[test]
fn a_seal_vouches_for_no_record_its_writer_did_not_write() {
    // The thief puts an admission in North's name into a change of its own, then seals its
    // history with its own, good signature: a seal vouches for its writer's records only.
    let (thief, key) = thief_with_key();
    let thief_node = thief.ledger.node().clone();
    let s = scene_with(thief, key.clone());
    let north = s.victim.ledger.node().clone();
    refused(
        s,
        |a| {
            let r = forged_as(&north, T0 + 5);
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
            let carrying = a.commit().unwrap();
            put_audit(a, &seal_line(&thief_node, carrying, T0 + 6, &key));
        },
        "a redemptions record whose signature is not \"gate\"'s",
    );
}

/// North's history sealed (its seal in the document), and a thief holding a copy.
fn sealed_scene() -> (Scene, p256::ecdsa::SigningKey) {
    let (thief, key) = thief_with_key();
    let mut s = scene_with(thief, key.clone());
    s.victim.ledger.seal(T0 + 3).unwrap().unwrap();
    s.attacker = AutoCommit::load(&s.victim.ledger.save()).unwrap();
    (s, key)
}

#[test]
fn a_change_made_in_a_sealing_writers_name_after_its_seal_is_not_vouched_for() {
    // The thief writes, as North's actor, an admission in North's name: the change comes
    // after North's seal, which reaches back only through what North wrote. Sent whole to
    // a gate that holds nothing (the seal and the forgery in one message), or to North.
    let (mut s, _) = sealed_scene();
    let north = s.victim.ledger.node().clone();
    s.attacker.set_actor(s.victim.ledger.actor().clone());
    let r = forged_as(&north, T0 + 5);
    put_record(&mut s.attacker, &format!("{},{}", r.tid, r.id), &r);
    s.attacker.commit();
    super::sign_as_author(&mut s.attacker, &s.victim.ledger.heads(), &s.key);
    let mut late = Gate::new("Late");
    let mut parts = super::prepared(&super::whole_message(&mut s.attacker), late.ledger.node());
    assert!(parts.sealed() > 0, "North's own history is sealed");
    assert!(late.ledger.take_whole(&mut parts, now()).is_none());
    let why = late
        .ledger
        .take_sync_part(&mut PeerSync::default(), &mut parts, usize::MAX, now())
        .unwrap_err();
    assert!(
        why.to_string()
            .contains("a change in the name of \"gate\" that it did not sign"),
        "{why}"
    );
    assert_eq!(late.ledger.redemption_count(), 0);
    let why = sync_with(&mut late.ledger, &mut s.attacker).unwrap_err();
    assert!(why.to_string().contains("that it did not sign"), "{why}");
    assert_eq!(late.ledger.redemption_count(), 0);
}

#[test]
fn a_seal_its_writer_did_not_sign_vouches_for_nothing() {
    // The forgery in North's name and under North's actor, then a seal in North's name
    // over it, signed by the thief: refused, the seal and the admission alike (the changes
    // that carry them are North's, signed by the thief: `authored.rs`).
    let (s, key) = sealed_scene();
    let north = s.victim.ledger.node().clone();
    let north_actor = s.victim.ledger.actor().clone();
    refused(
        s,
        |a| {
            a.set_actor(north_actor);
            let r = forged_as(&north, T0 + 5);
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
            let carrying = a.commit().unwrap();
            put_audit(a, &seal_line(&north, carrying, T0 + 6, &key));
        },
        "a change in the name of \"gate\" that it did not sign",
    );
}

#[test]
fn a_writer_that_signs_records_badly_in_its_own_changes_has_them_taken_alike_by_every_path() {
    // A stolen gate, key in hand, writes an admission of its own with a signature that is no
    // one's, in a change it signs as its author, then seals its history with a good
    // signature. It could have signed the admission as well; what matters is that every
    // gate takes the same: the change vouches for its author's records (`authored.rs`), so
    // pushed alone, pushed with its seal, by sync, whole, or in a file, it is taken.
    let (thief, key) = thief_with_key();
    let thief_node = thief.ledger.node().clone();
    let mut s = scene_with(thief, key.clone());
    let mut attacker = s.attacker;
    let heads = s.victim.ledger.heads();
    let r = forged_as(&thief_node, T0 + 5);
    put_record(&mut attacker, &format!("{},{}", r.tid, r.id), &r);
    attacker.commit();
    super::sign_as_author(&mut attacker, &heads, &key);
    let carrying = attacker.get_heads()[0];
    put_audit(
        &mut attacker,
        &seal_line(&thief_node, carrying, T0 + 6, &key),
    );
    attacker.commit();
    super::sign_as_author(&mut attacker, &[carrying], &key);
    let pushed = |changes: &[automerge::Change]| -> Vec<u8> {
        changes
            .iter()
            .flat_map(|c| c.raw_bytes().to_vec())
            .collect()
    };
    let all = attacker.get_changes(&heads);
    assert_eq!(all.len(), 2);
    let count = |l: &Ledger| l.ticket(&r.tid).redemptions.len();

    let mut alone = reopened_copy(&mut s.victim.ledger);
    alone
        .receive_changes(&mut PeerSync::default(), &pushed(&all[..1]), now())
        .unwrap();
    let mut by_push = reopened_copy(&mut s.victim.ledger);
    by_push
        .receive_changes(&mut PeerSync::default(), &pushed(&all), now())
        .unwrap();
    let mut by_sync = reopened_copy(&mut s.victim.ledger);
    sync_with(&mut by_sync, &mut attacker).unwrap();
    let mut by_file = reopened_copy(&mut s.victim.ledger);
    by_file.merge_saved(&attacker.save(), now()).unwrap();
    let mut late = Gate::new("Late");
    let mut parts = super::prepared(&super::whole_message(&mut attacker), late.ledger.node());
    late.ledger
        .take_whole(&mut parts, now())
        .expect("taken whole");
    for l in [&alone, &by_push, &by_sync, &by_file, &late.ledger] {
        assert_eq!(count(l), 1);
    }
    // A record of another writer in the thief's change is verified on its own: refused.
    s.attacker = AutoCommit::load(&s.victim.ledger.save()).unwrap();
    s.attacker
        .set_actor(ActorId::from(thief_node.as_str().as_bytes()));
    let north = s.victim.ledger.node().clone();
    refused(
        s,
        |a| {
            let r = forged_as(&north, T0 + 7);
            put_record(a, &format!("{},{}", r.tid, r.id), &r);
        },
        "a redemptions record whose signature is not \"gate\"'s",
    );
}

/// A copy of `l` that checks what it takes, as another gate holding the same would.
fn reopened_copy(l: &mut Ledger) -> Ledger {
    super::checking(super::reopened(l))
}
