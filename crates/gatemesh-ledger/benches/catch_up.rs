//! A gate answers a peer's catch-up after a partition: the peer lacks the last `LACK` of
//! `HELD` redemptions and starts a round; the answer carries them. Timed: making that answer
//! (`Ledger::sync_message` on the answering gate's writer), with the changes at hand (as
//! they came, kept in `Recent`) and with none at hand (the ledger opened from its saved
//! document, so automerge rebuilds each change from the document's operations).
//! `cargo bench -p gatemesh-ledger --bench catch_up`

use criterion::{Criterion, criterion_group, criterion_main};
use gatemesh_ledger::{
    Direction, Ledger, PeerSync, Redemption, RedemptionId, Role, Signer, Trust, genesis,
};
use gatemesh_ticket::{EventId, TicketId};

const HELD: usize = 8_000;
const LACK: usize = 2_000;
const T0: i64 = 1_795_000_000_000;

fn admit(ledger: &mut Ledger, i: usize) {
    let at_ms = T0 + i as i64 * 36;
    let r = Redemption {
        manual: None,
        sig: None,
        id: RedemptionId::random(),
        tid: TicketId::generate(),
        direction: Direction::Entry,
        node: ledger.node().clone(),
        gate: "North".into(),
        scanner: "s1".into(),
        at_ms,
        hlc: ledger.tick(at_ms),
        seen: vec![],
        unlisted: false,
        scope: None,
    };
    ledger.record_redemption(&r).unwrap();
}

/// Syncs `a` and `b` until neither has anything to say.
fn sync(a: &mut Ledger, b: &mut Ledger) {
    let (mut sa, mut sb) = (PeerSync::default(), PeerSync::default());
    for _ in 0..50 {
        let mut said = false;
        if let Some(m) = a.sync_message(&mut sa) {
            b.receive_sync(&mut sb, &m, T0).unwrap();
            said = true;
        }
        if let Some(m) = b.sync_message(&mut sb) {
            a.receive_sync(&mut sa, &m, T0).unwrap();
            said = true;
        }
        if !said {
            return;
        }
    }
    panic!("did not converge");
}

fn bench(c: &mut Criterion) {
    let event = EventId::new("BENCH-2026").unwrap();
    let ca = gatemesh_mesh::pki::create_ca(event.as_str(), 30).unwrap();
    let trust = Trust::from_pem(&ca.cert_pem, &event).unwrap();
    let signer = |name: &str| {
        let ca = gatemesh_mesh::pki::MeshCa::from_pem(&ca.cert_pem, &ca.key_pem).unwrap();
        let id = gatemesh_mesh::identity::PeerId::new(event.as_str(), Role::Gate, name);
        let pem = ca.enroll(&id, 30).unwrap();
        Signer::from_pem(&trust, &pem.cert_pem, &pem.key_pem).unwrap()
    };
    let open = |name: &str, saved: Option<&[u8]>| {
        let signer = signer(name);
        let mut ledger =
            Ledger::open(&event, signer.node().clone(), &genesis(&event), saved, []).unwrap();
        ledger.sign_with(signer, trust.clone()).unwrap();
        ledger
    };
    let (mut north, mut south) = (open("North", None), open("South", None));
    for i in 0..HELD - LACK {
        admit(&mut north, i);
    }
    sync(&mut north, &mut south);
    for i in HELD - LACK..HELD {
        admit(&mut north, i);
    }
    let saved = north.save();
    let mut reopened = open("North-2", Some(&saved));
    // South's round start, told North's summary first (as it comes every second), and
    // North told South's, so that North sends the gap, not its whole ledger.
    let start = |south: &mut Ledger, answering: &mut Ledger| {
        let plan = gatemesh_ledger::RelayPlan {
            now_ms: T0,
            noted_before: 0,
            me: "",
            most: 0,
            catch_up_most: 0,
            frame_most: 0,
        };
        let mut theirs = PeerSync::default();
        let mut ours = PeerSync::default();
        let summary = south.summary_message(&[], gatemesh_ledger::Wants::Relays);
        answering.relay(&mut ours, &summary, &plan).unwrap();
        let summary = answering.summary_message(&[], gatemesh_ledger::Wants::Relays);
        south.relay(&mut theirs, &summary, &plan).unwrap();
        theirs.start_round();
        let m = south.sync_message(&mut theirs).unwrap();
        answering.receive_sync(&mut ours, &m, T0).unwrap();
        ours.answer_round();
        ours
    };
    let mut group = c.benchmark_group(format!("catch-up-{LACK}-of-{HELD}"));
    group.sample_size(10);
    for (name, ledger) in [("at-hand", &mut north), ("rebuilt", &mut reopened)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut took = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let mut state = start(&mut south, ledger);
                    let at = std::time::Instant::now();
                    let m = ledger.sync_message(&mut state).unwrap();
                    took += at.elapsed();
                    assert!(m.len() > LACK * 100, "{} bytes", m.len());
                }
                took
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
