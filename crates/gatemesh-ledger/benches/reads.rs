//! What the gate's screens and its uplink read from a ledger of 50,000 redemptions, on the
//! thread that decides scans: the entry tally and the arrivals since the last look (what
//! they read now) against parsing every record (what the dashboard read before).
//! `cargo bench -p gatemesh-ledger --bench reads`

use std::collections::HashSet;

use criterion::{Criterion, criterion_group, criterion_main};
use gatemesh_ledger::{Direction, Ledger, NodeId, Redemption, RedemptionId, genesis};
use gatemesh_ticket::{EventId, TicketId};

const N: usize = 50_000;
const T0: i64 = 1_795_000_000_000;

fn bench(c: &mut Criterion) {
    let event = EventId::new("BENCH-2026").unwrap();
    let mut ledger = Ledger::open(&event, NodeId::random(), &genesis(&event), None, []).unwrap();
    let gates = ["North 1", "North 2", "South", "East"];
    for i in 0..N {
        let at_ms = T0 + i as i64 * 36;
        let r = Redemption {
            manual: None,
            sig: None,
            id: RedemptionId::random(),
            tid: TicketId::generate(),
            direction: Direction::Entry,
            node: ledger.node().clone(),
            gate: gates[i % gates.len()].into(),
            scanner: "s1".into(),
            at_ms,
            hlc: ledger.tick(at_ms),
            seen: vec![],
            unlisted: false,
            scope: None,
        };
        ledger.record_redemption(&r).unwrap();
    }
    let sent: HashSet<String> = ledger
        .arrivals(0)
        .iter()
        .map(|(_, id)| id.to_string())
        .collect();
    let end = ledger.arrivals(0).len();
    let last_minute = T0 + N as i64 * 36 - 29 * 60_000;

    let mut group = c.benchmark_group("ledger-50k");
    group.sample_size(20);
    group.bench_function("dashboard/entry-tally", |b| {
        b.iter(|| ledger.entry_tally().activity(last_minute, 60_000, 30))
    });
    group.bench_function("dashboard/every-record", |b| {
        b.iter(|| ledger.redemptions())
    });
    // What the uplink's look does: the arrivals from a position, less what was sent.
    let unsent_from = |from: usize| {
        ledger
            .arrivals(from)
            .iter()
            .filter(|(_, id)| !sent.contains(id.as_str()))
            .count()
    };
    group.bench_function("uplink/unsent-since-last-look", |b| {
        b.iter(|| unsent_from(end))
    });
    group.bench_function("uplink/unsent-from-the-start", |b| {
        b.iter(|| unsent_from(0))
    });
    group.bench_function("uplink/fetch-100-new", |b| {
        b.iter(|| {
            ledger
                .arrivals(end - 100)
                .iter()
                .filter_map(|(tid, id)| ledger.redemption(tid, id))
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
