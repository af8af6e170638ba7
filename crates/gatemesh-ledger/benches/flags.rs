//! The flag rule on one ticket with many entries, as the writer thread runs it at every
//! commit that touches the ticket and on open: n entries none of which saw another (what a
//! peer or the server's manifest could hand a gate; all flagged), and n entries each listing
//! every earlier one (gates in contact; none flagged). Then one scan decided on the first.
//! `cargo bench -p gatemesh-ledger --bench flags`
//!
//! `old-pairwise` is the rule as it was before it was counted (every pair, then a linear
//! dedup), copied here only as the baseline to compare against; the ledger no longer has it.

use std::collections::HashSet;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gatemesh_ledger::{
    Direction, Hlc, Listing, NodeId, Policy, Redemption, RedemptionId, Scan, TicketState, decide,
};
use gatemesh_ticket::{Claims, EventId, Format, KeyId, TicketId, Verified};

const T0: i64 = 1_795_000_000_000;

/// BASELINE ONLY: `TicketState::flagged` before this bench's commit, O(n²) pairs and an
/// O(n) dedup per pair.
fn old_pairwise(state: &TicketState) -> Vec<&Redemption> {
    fn concurrent(a: &Redemption, b: &Redemption) -> bool {
        !a.seen.contains(&b.id) && !b.seen.contains(&a.id)
    }
    let resolved: HashSet<&RedemptionId> =
        state.resolutions.iter().flat_map(|r| &r.covers).collect();
    let entries: Vec<&Redemption> = state
        .effective()
        .filter(|r| r.direction == Direction::Entry)
        .collect();
    let mut involved: Vec<&Redemption> = Vec::new();
    for (i, a) in entries.iter().enumerate() {
        for b in &entries[i + 1..] {
            let open = !resolved.contains(&a.id) || !resolved.contains(&b.id);
            if open && concurrent(a, b) {
                for r in [*a, *b] {
                    if !involved.iter().any(|x| x.id == r.id) {
                        involved.push(r);
                    }
                }
            }
        }
    }
    involved.sort_by(|a, b| a.hlc.cmp(&b.hlc));
    involved
}

/// One ticket's `n` entries from as many nodes; each lists the earlier ones when `chain`.
fn ticket(tid: &TicketId, n: usize, chain: bool) -> TicketState {
    let ids: Vec<RedemptionId> = (0..n).map(|_| RedemptionId::random()).collect();
    let redemptions = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let node = NodeId::random();
            let at_ms = T0 + i as i64;
            Redemption {
                manual: None,
                sig: None,
                id: id.clone(),
                tid: tid.clone(),
                direction: Direction::Entry,
                node: node.clone(),
                gate: "North 1".into(),
                scanner: "s1".into(),
                at_ms,
                hlc: Hlc {
                    wall_ms: at_ms,
                    counter: 0,
                    node,
                },
                seen: if chain { ids[..i].to_vec() } else { Vec::new() },
                unlisted: false,
                scope: None,
            }
        })
        .collect();
    TicketState {
        redemptions,
        ..TicketState::default()
    }
}

fn bench(c: &mut Criterion) {
    let tid = TicketId::generate();
    let mut group = c.benchmark_group("flagged");
    group.sample_size(10);
    for (shape, chain, sizes, old_sizes) in [
        (
            "concurrent",
            false,
            &[100, 1_000, 10_000][..],
            &[100, 1_000][..],
        ),
        ("chain", true, &[100, 1_000, 3_000][..], &[100, 1_000][..]),
    ] {
        for &n in sizes {
            let state = ticket(&tid, n, chain);
            let want = if chain { 0 } else { n };
            assert_eq!(state.flagged().len(), want);
            group.bench_function(BenchmarkId::new(format!("{shape}/linear"), n), |b| {
                b.iter(|| state.flagged().len())
            });
            if old_sizes.contains(&n) {
                assert_eq!(old_pairwise(&state).len(), want);
                group.bench_function(BenchmarkId::new(format!("{shape}/old-pairwise"), n), |b| {
                    b.iter(|| old_pairwise(&state).len())
                });
            }
        }
    }
    group.finish();

    // A scan of the attacked ticket: decided (a duplicate) without the flag rule.
    let state = ticket(&tid, 10_000, false);
    let node = NodeId::random();
    let verified = Ok(Verified {
        format: Format::Gm1,
        kid: KeyId::new("k").unwrap(),
        claims: Claims {
            tid: tid.clone(),
            eid: EventId::new("BENCH-2026").unwrap(),
            seat: None,
            iat: None,
            nbf: None,
            exp: None,
            product: None,
        },
    });
    let scan = Scan {
        node: &node,
        scanner: "s1",
        direction: Direction::Entry,
        now_ms: T0 + 20_000,
        answered_late: None,
    };
    let policy = Policy::default();
    c.bench_function("decide/concurrent/10000", |b| {
        b.iter(|| decide(&verified, Some(&state), Listing::Listed, &policy, &scan))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
