//! Sync messages from a peer, fuzzed: noise, real messages with bytes flipped, cut or spliced,
//! and messages built field by field (known, unknown, repeated and unsorted hashes, bloom
//! filters with any parameters, change chunks that are real, damaged or of another event). Whatever arrives
//! is taken or refused with a typed error; a refusal leaves the ledger as it was; planning
//! the next message for that peer never panics; the real peer still syncs afterwards.

use std::sync::LazyLock;

use automerge::{ChangeHash, sync::BloomFilter};
use gatemesh_ledger::{
    AuditEntry, Ledger, LedgerError, NodeId, PeerSync, Redemption, Resolution, StoredChange,
    genesis,
};
use gatemesh_ticket::{EventId, TicketId};
use proptest::{prelude::*, sample::Index, test_runner::FileFailurePersistence};

use super::{Gate, T0, checking, event, now};

/// Two replicas that have diverged, saved, and the traffic of a real sync between them.
struct Fixture {
    /// The replica under test: three admissions, one of a ticket the peer admitted too.
    ours: Vec<u8>,
    /// The peer: everything `ours` had at the fork, then admissions of its own.
    theirs: Vec<u8>,
    /// Raw bytes of the peer's changes that `ours` lacks.
    their_changes: Vec<Vec<u8>>,
    /// Hashes a message may name: genesis, ours, then the peer's.
    hashes: Vec<ChangeHash>,
    /// Every message of a real sync between the two, both ways.
    real: Vec<Vec<u8>>,
    /// Chunks of another event: its genesis document and one change on top of it.
    foreign: Vec<Vec<u8>>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let (mut a, mut p) = (Gate::new("A"), Gate::new("P"));
    let shared = TicketId::generate();
    a.scan(&TicketId::generate(), "a1", T0);
    p.learn(&mut a);
    a.scan(&shared, "a1", T0 + 1);
    a.scan(&TicketId::generate(), "a1", T0 + 2);
    p.scan(&shared, "p1", T0 + 3);
    p.scan(&TicketId::generate(), "p1", T0 + 4);
    let (ours, theirs) = (a.ledger.save(), p.ledger.save());
    let their_changes = changes_beyond(&event(), Some(&ours), &theirs);
    let mut hashes = Ledger::open(&event(), NodeId::random(), &genesis(&event()), None, [])
        .expect("genesis opens")
        .heads();
    hashes.extend(
        changes_beyond(&event(), None, &ours)
            .iter()
            .map(|c| hash_of(c)),
    );
    hashes.extend(their_changes.iter().map(|c| hash_of(c)));
    let real = sync_transcript(&mut open(&ours), &mut open(&theirs));

    let jazz = EventId::new("JAZZ-2026").expect("an event id");
    let mut j = Gate::new("J");
    j.ledger = super::signed_ledger(&jazz, gatemesh_ledger::Role::Gate, "J");
    j.scan(&TicketId::generate(), "j1", T0);
    let mut foreign = vec![genesis(&jazz)];
    foreign.extend(changes_beyond(&jazz, None, &j.ledger.save()));
    Fixture {
        ours,
        theirs,
        their_changes,
        hashes,
        real,
        foreign,
    }
});

/// The raw changes of the saved document `doc` that a replica opened from `base` (or from
/// genesis) lacks.
fn changes_beyond(event: &EventId, base: Option<&[u8]>, doc: &[u8]) -> Vec<Vec<u8>> {
    checking(
        Ledger::open(event, NodeId::random(), &genesis(event), base, []).expect("the base opens"),
    )
    .merge_saved(doc, now())
    .expect("a document of the same event merges")
    .into_iter()
    .map(|c| c.bytes)
    .collect()
}

fn hash_of(change: &[u8]) -> ChangeHash {
    automerge::Change::from_bytes(change.to_vec())
        .expect("a stored change")
        .hash()
}

fn open(saved: &[u8]) -> Ledger {
    checking(
        Ledger::open(
            &event(),
            NodeId::random(),
            &genesis(&event()),
            Some(saved),
            [],
        )
        .expect("the fixture opens"),
    )
}

/// Runs a real sync between two replicas until both are quiet; returns every message.
fn sync_transcript(a: &mut Ledger, b: &mut Ledger) -> Vec<Vec<u8>> {
    let (mut sa, mut sb) = (PeerSync::default(), PeerSync::default());
    let mut out = Vec::new();
    for _ in 0..20 {
        let mut progressed = false;
        if let Some(m) = a.sync_message(&mut sa) {
            b.receive_sync(&mut sb, &m, now())
                .expect("a real message applies");
            out.push(m);
            progressed = true;
        }
        if let Some(m) = b.sync_message(&mut sb) {
            a.receive_sync(&mut sa, &m, now())
                .expect("a real message applies");
            out.push(m);
            progressed = true;
        }
        if !progressed {
            return out;
        }
    }
    panic!("sync did not converge");
}

/// What a replica holds, as its users see it.
#[derive(Debug, PartialEq)]
struct Content {
    heads: Vec<ChangeHash>,
    redemptions: Vec<Redemption>,
    resolutions: Vec<Resolution>,
    audit: Vec<AuditEntry>,
    flagged: Vec<TicketId>,
}

fn content(l: &mut Ledger) -> Content {
    let mut heads = l.heads();
    heads.sort();
    Content {
        heads,
        redemptions: l.redemptions(),
        resolutions: l.resolutions_where(|_| true),
        audit: l.audit(),
        flagged: l.flagged().cloned().collect(),
    }
}

// ---- inputs ----------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Set(Index, u8),
    Truncate(Index),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0..8u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1..64usize).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        let at = |i: &Index| i.index(bytes.len());
        match m {
            Mutation::Flip(i, bit) => {
                let at = at(i);
                bytes[at] ^= 1 << bit;
            }
            Mutation::Set(i, b) => {
                let at = at(i);
                bytes[at] = *b;
            }
            Mutation::Truncate(i) => bytes.truncate(at(i)),
            Mutation::Insert(i, more) => {
                let at = at(i);
                bytes.splice(at..at, more.iter().copied());
            }
            Mutation::Remove(i, n) => {
                let at = at(i);
                let end = (at + n).min(bytes.len());
                bytes.drain(at..end);
            }
        }
    }
    bytes
}

#[derive(Debug, Clone)]
enum HashPick {
    Known(Index),
    Any([u8; 32]),
}

fn hash_pick() -> impl Strategy<Value = HashPick> {
    prop_oneof![
        3 => any::<Index>().prop_map(HashPick::Known),
        1 => any::<[u8; 32]>().prop_map(HashPick::Any),
    ]
}

impl HashPick {
    fn hash(&self) -> ChangeHash {
        match self {
            HashPick::Known(i) => FIXTURE.hashes[i.index(FIXTURE.hashes.len())],
            HashPick::Any(bytes) => ChangeHash(*bytes),
        }
    }
}

#[derive(Debug, Clone)]
enum BloomPick {
    /// A filter built the normal way over some hashes.
    Of(Vec<HashPick>),
    /// Any parameters, with whatever bits the count implies (zero bits per entry, no
    /// probes, millions of probes, …).
    Params {
        entries: u32,
        bits_per_entry: u32,
        probes: u32,
        fill: u8,
    },
}

fn bloom_pick() -> impl Strategy<Value = BloomPick> {
    let param = || prop_oneof![0..16u32, Just(u32::MAX), any::<u32>()];
    prop_oneof![
        prop::collection::vec(hash_pick(), 0..4).prop_map(BloomPick::Of),
        (0..64u32, param(), param(), any::<u8>()).prop_map(
            |(entries, bits_per_entry, probes, fill)| BloomPick::Params {
                entries,
                bits_per_entry,
                probes,
                fill,
            }
        ),
    ]
}

fn leb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl BloomPick {
    /// The filter as the message carries it.
    fn bytes(&self) -> Vec<u8> {
        match self {
            BloomPick::Of(picks) => {
                let hashes: Vec<ChangeHash> = picks.iter().map(HashPick::hash).collect();
                BloomFilter::from_hashes(hashes.iter()).to_bytes()
            }
            BloomPick::Params {
                entries,
                bits_per_entry,
                probes,
                fill,
            } => {
                let mut bytes = Vec::new();
                for v in [entries, bits_per_entry, probes] {
                    leb128(&mut bytes, u64::from(*v));
                }
                let bits = (f64::from(*entries) * f64::from(*bits_per_entry) / 8.0).ceil();
                // Past a few KiB the filter is shorter than its parameters say: refused.
                bytes.extend(std::iter::repeat_n(*fill, (bits as usize).min(4096)));
                bytes
            }
        }
    }
}

#[derive(Debug, Clone)]
enum ChunkPick {
    Theirs(Index),
    Damaged(Index, Vec<Mutation>),
    /// The peer's whole document, as a V2 message carries it.
    TheirDocument,
    Foreign(Index),
    Noise(Vec<u8>),
}

fn chunk_pick() -> impl Strategy<Value = ChunkPick> {
    prop_oneof![
        3 => any::<Index>().prop_map(ChunkPick::Theirs),
        3 => (any::<Index>(), prop::collection::vec(mutation(), 1..4))
            .prop_map(|(i, m)| ChunkPick::Damaged(i, m)),
        1 => Just(ChunkPick::TheirDocument),
        1 => any::<Index>().prop_map(ChunkPick::Foreign),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(ChunkPick::Noise),
    ]
}

impl ChunkPick {
    fn bytes(&self) -> Vec<u8> {
        let f = &*FIXTURE;
        match self {
            ChunkPick::Theirs(i) => f.their_changes[i.index(f.their_changes.len())].clone(),
            ChunkPick::Damaged(i, m) => {
                mutate(f.their_changes[i.index(f.their_changes.len())].clone(), m)
            }
            ChunkPick::TheirDocument => f.theirs.clone(),
            ChunkPick::Foreign(i) => f.foreign[i.index(f.foreign.len())].clone(),
            ChunkPick::Noise(b) => b.clone(),
        }
    }
}

/// A message put together field by field.
#[derive(Debug, Clone)]
struct Crafted {
    v2: bool,
    /// Hashes sorted and unique, as automerge sends them (else in the order picked).
    canonical: bool,
    heads: Vec<HashPick>,
    need: Vec<HashPick>,
    have: Vec<(Vec<HashPick>, BloomPick)>,
    changes: Vec<ChunkPick>,
    /// Raw trailing flag bytes, length-prefixed as the format has them.
    flags: Option<Vec<u8>>,
}

fn crafted() -> impl Strategy<Value = Crafted> {
    (
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop::collection::vec(hash_pick(), 0..4),
        prop::collection::vec(hash_pick(), 0..3),
        prop::collection::vec(
            (prop::collection::vec(hash_pick(), 0..3), bloom_pick()),
            0..3,
        ),
        prop::collection::vec(chunk_pick(), 0..4),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..4)),
    )
        .prop_map(
            |(v2, canonical, heads, need, have, changes, flags)| Crafted {
                v2,
                canonical,
                heads,
                need,
                have,
                changes,
                flags,
            },
        )
}

impl Crafted {
    /// Encoded by hand, as automerge's `Message::encode` would, except that hashes may be
    /// out of order or repeated.
    fn encode(&self) -> Vec<u8> {
        let hashes = |out: &mut Vec<u8>, picks: &[HashPick]| {
            let mut hashes: Vec<ChangeHash> = picks.iter().map(HashPick::hash).collect();
            if self.canonical {
                hashes.sort();
                hashes.dedup();
            }
            leb128(out, hashes.len() as u64);
            for h in hashes {
                out.extend(h.0);
            }
        };
        fn bytes(out: &mut Vec<u8>, b: &[u8]) {
            leb128(out, b.len() as u64);
            out.extend(b);
        }
        let mut out = vec![if self.v2 { 0x43 } else { 0x42 }];
        hashes(&mut out, &self.heads);
        hashes(&mut out, &self.need);
        leb128(&mut out, self.have.len() as u64);
        for (last_sync, bloom) in &self.have {
            hashes(&mut out, last_sync);
            bytes(&mut out, &bloom.bytes());
        }
        leb128(&mut out, self.changes.len() as u64);
        for chunk in &self.changes {
            bytes(&mut out, &chunk.bytes());
        }
        if let Some(flags) = &self.flags {
            bytes(&mut out, flags);
        }
        out
    }
}

#[derive(Debug, Clone)]
enum Input {
    Noise(Vec<u8>),
    Mutated(Index, Vec<Mutation>),
    Crafted(Crafted),
    /// Chunks one after another, as a push frame carries a peer's commits (taken by
    /// `receive_changes`, not as a sync message).
    Pushed(Vec<ChunkPick>),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..512).prop_map(Input::Noise),
        2 => (any::<Index>(), prop::collection::vec(mutation(), 1..6))
            .prop_map(|(i, m)| Input::Mutated(i, m)),
        3 => crafted().prop_map(Input::Crafted),
        2 => prop::collection::vec(chunk_pick(), 0..5).prop_map(Input::Pushed),
    ]
}

impl Input {
    fn bytes(&self) -> Vec<u8> {
        let f = &*FIXTURE;
        match self {
            Input::Noise(b) => b.clone(),
            Input::Mutated(i, m) => mutate(f.real[i.index(f.real.len())].clone(), m),
            Input::Crafted(c) => c.encode(),
            Input::Pushed(chunks) => chunks.iter().flat_map(ChunkPick::bytes).collect(),
        }
    }
}

// ---- the property ----------------------------------------------------------------------

fn check(inputs: &[Input]) -> Result<(), TestCaseError> {
    let f = &*FIXTURE;
    let node = NodeId::random();
    // What the node's storage holds: the fixture's snapshot and every change handed over
    // since.
    let mut stored: Vec<StoredChange> = Vec::new();
    let reopen = |stored: &[StoredChange]| {
        Ledger::open(
            &event(),
            node.clone(),
            &genesis(&event()),
            Some(&f.ours),
            stored.iter().cloned(),
        )
        .map(checking)
    };
    let mut ours = reopen(&stored).expect("the fixture opens");
    let mut state = PeerSync::default();
    let their_hashes = &f.hashes[f.hashes.len() - f.their_changes.len()..];
    for input in inputs {
        let before = content(&mut ours);
        let taken = if let Input::Pushed(_) = input {
            ours.receive_changes(&mut state, &input.bytes(), now())
        } else {
            ours.receive_sync(&mut state, &input.bytes(), now())
        };
        match taken {
            Ok(new) => {
                for change in &new {
                    prop_assert!(
                        their_hashes.contains(&ChangeHash(change.hash)),
                        "only the peer's real changes are ever taken"
                    );
                }
                stored.extend(new);
                let mut reopened = reopen(&stored).expect("storage reopens");
                prop_assert_eq!(
                    content(&mut reopened),
                    content(&mut ours),
                    "the replica holds exactly what it handed to storage"
                );
            }
            Err(LedgerError::BadMessage(_)) => {
                prop_assert_eq!(content(&mut ours), before);
                // The node drops the connection, and with it this peer's state.
                state = PeerSync::default();
            }
            Err(e) => {
                // The message reached the document: the node reopens from storage.
                ours = reopen(&stored).expect("storage reopens");
                prop_assert_eq!(content(&mut ours), before, "refused with {}", e);
                state = PeerSync::default();
            }
        }
        // Planning what to send that peer next is bounded and never panics, whatever turn
        // of a round it is.
        for _ in 0..2 {
            let _ = ours.sync_message(&mut state);
        }
        let _ = ours.sync_followup(&mut state);
        state.start_round();
        let _ = ours.sync_message(&mut state);
    }
    // The real peer, on a fresh connection, still syncs both ways.
    let mut theirs = open(&f.theirs);
    sync_transcript(&mut ours, &mut theirs);
    let (a, b) = (content(&mut ours), content(&mut theirs));
    prop_assert_eq!(&a.heads, &b.heads);
    prop_assert_eq!(&a.redemptions, &b.redemptions);
    prop_assert_eq!(a.redemptions.len(), 5);
    Ok(())
}

/// What the fuzzer found: each of these used to be taken, and then planning the next message
/// for that peer panicked on the gate's writer thread (a hash needed twice, a bloom filter
/// without bits) or tried to allocate 16 GiB and loop for minutes (2^32-1 probes).
#[test]
fn messages_that_broke_planning_the_reply_are_refused() {
    let f = &*FIXTURE;
    let genesis_hash = HashPick::Any(f.hashes[0].0);
    let probing = |bits_per_entry, probes| Crafted {
        v2: false,
        canonical: true,
        heads: vec![genesis_hash.clone()],
        need: vec![],
        have: vec![(
            vec![],
            BloomPick::Params {
                entries: 1,
                bits_per_entry,
                probes,
                fill: 0,
            },
        )],
        changes: vec![],
        flags: None,
    };
    let need_twice = Crafted {
        canonical: false,
        have: vec![],
        need: vec![genesis_hash.clone(), genesis_hash.clone()],
        ..probing(0, 0)
    };
    for crafted in [need_twice, probing(0, 1), probing(10, u32::MAX)] {
        let mut ours = open(&f.ours);
        let before = content(&mut ours);
        let mut state = PeerSync::default();
        let refused = ours.receive_sync(&mut state, &crafted.encode(), now());
        assert!(
            matches!(refused, Err(LedgerError::BadMessage(_))),
            "{crafted:?}: {refused:?}"
        );
        assert_eq!(content(&mut ours), before);
        assert!(ours.sync_message(&mut state).is_some());
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_sync_message_is_taken_or_refused_and_a_refusal_changes_nothing(
        inputs in prop::collection::vec(input(), 1..4),
    ) {
        check(&inputs)?;
    }
}
