//! `TicketState::flagged` against the pairwise rule it replaced, on random small histories and
//! on one ticket with 10,000 entries.

use gatemesh_ticket::TicketId;
use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::TicketState;
use crate::model::{
    Action, Direction, Hlc, NodeId, Redemption, RedemptionId, Resolution, ResolutionId,
};

/// The flag rule as it was written before it was made linear: every pair of effective
/// entries in one scope, deduplicated by id in the order the pairs were met, stable-sorted
/// by HLC (and scope, among equal HLCs of different scopes). The model the fast version must
/// agree with, result for result, element for element.
fn pairwise(state: &TicketState) -> Vec<&Redemption> {
    fn concurrent(a: &Redemption, b: &Redemption) -> bool {
        !a.seen.contains(&b.id) && !b.seen.contains(&a.id)
    }
    let resolved: std::collections::HashSet<&RedemptionId> =
        state.resolutions.iter().flat_map(|r| &r.covers).collect();
    let entries: Vec<&Redemption> = state
        .effective()
        .filter(|r| r.direction == Direction::Entry)
        .collect();
    let mut involved: Vec<&Redemption> = Vec::new();
    for (i, a) in entries.iter().enumerate() {
        for b in &entries[i + 1..] {
            let open = !resolved.contains(&a.id) || !resolved.contains(&b.id);
            if open && concurrent(a, b) && a.scope == b.scope {
                for r in [*a, *b] {
                    if !involved.iter().any(|x| x.id == r.id) {
                        involved.push(r);
                    }
                }
            }
        }
    }
    involved.sort_by(|a, b| a.hlc.cmp(&b.hlc).then_with(|| a.scope.cmp(&b.scope)));
    involved
}

/// Ids records hold: few, so that some records share one.
const HELD: usize = 6;
/// Ids `seen` and `covers` may name on top of those: held by no record.
const DANGLING: usize = 2;

fn rid(i: usize) -> RedemptionId {
    RedemptionId::parse(&format!("r{i}")).unwrap()
}

fn node(i: usize) -> NodeId {
    NodeId::parse(&format!("n{i}")).unwrap()
}

fn hlc(wall_ms: i64, counter: u32, n: usize) -> Hlc {
    Hlc {
        wall_ms,
        counter,
        node: node(n),
    }
}

fn entry(id: RedemptionId, at_ms: i64, seen: Vec<RedemptionId>) -> Redemption {
    Redemption {
        manual: None,
        sig: None,
        id,
        tid: TicketId::new("T-1").unwrap(),
        direction: Direction::Entry,
        node: node(0),
        gate: "North 1".into(),
        scanner: "s1".into(),
        at_ms,
        hlc: hlc(at_ms, 0, 0),
        seen,
        unlisted: false,
        scope: None,
    }
}

fn resolution(action: Action, covers: Vec<RedemptionId>, at_ms: i64) -> Resolution {
    Resolution {
        sig: None,
        id: ResolutionId::random(),
        tid: TicketId::new("T-1").unwrap(),
        action,
        staff: "sam".into(),
        note: String::new(),
        node: node(0),
        at_ms,
        hlc: hlc(at_ms, 0, 0),
        covers,
        from_server: false,
    }
}

/// A redemption of one of the held ids: mostly entries, HLCs from a small range (so some are
/// equal), a `seen` of any ids, repeats and dangling ones included.
fn any_redemption() -> impl Strategy<Value = Redemption> {
    (
        0..HELD,
        prop::bool::weighted(0.2),
        (0i64..4, 0u32..2, 0usize..2),
        prop::collection::vec(0..HELD + DANGLING, 0..7),
    )
        .prop_map(|(id, exit, (wall, counter, n), seen)| Redemption {
            direction: if exit {
                Direction::Exit
            } else {
                Direction::Entry
            },
            hlc: hlc(wall, counter, n),
            // One id, one record, one scope (as in a ledger, where a second record under a
            // key is refused): ids spread over three scopes and none.
            scope: [
                None,
                Some("main/2026-07-03"),
                None,
                Some("main/2026-07-04"),
                Some("vip"),
            ][id % 5]
                .map(|s| gatemesh_wire::Scope::parse(s).unwrap()),
            ..entry(rid(id), wall, seen.into_iter().map(rid).collect())
        })
}

fn any_resolution() -> impl Strategy<Value = Resolution> {
    (
        prop_oneof![
            3 => Just(Action::Accept),
            2 => Just(Action::Deny),
            1 => Just(Action::Revert),
        ],
        prop::collection::vec(0..HELD + DANGLING, 0..5),
    )
        .prop_map(|(action, covers)| resolution(action, covers.into_iter().map(rid).collect(), 10))
}

/// A ticket's history, in HLC order as the ledger keeps it or in any order (the rule does
/// not depend on it).
fn any_history() -> impl Strategy<Value = TicketState> {
    (
        prop::collection::vec(any_redemption(), 0..11),
        prop::collection::vec(any_resolution(), 0..4),
        any::<bool>(),
    )
        .prop_map(|(mut redemptions, resolutions, sorted)| {
            if sorted {
                redemptions.sort_by(|a, b| a.hlc.cmp(&b.hlc));
            }
            TicketState {
                redemptions,
                resolutions,
                status: None,
            }
        })
}

/// The records as addresses: the same result means the very same records, in the same order.
fn records(flagged: Vec<&Redemption>) -> Vec<*const Redemption> {
    flagged.into_iter().map(std::ptr::from_ref).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4096,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn flagged_is_what_comparing_every_pair_gives(state in any_history()) {
        prop_assert_eq!(records(state.flagged()), records(pairwise(&state)));
    }
}

fn ids(n: usize) -> Vec<RedemptionId> {
    (0..n)
        .map(|i| RedemptionId::parse(&format!("e{i}")).unwrap())
        .collect()
}

/// 10,000 entries of one ticket, none of which saw another (what a peer or the server's
/// manifest could hand a gate), at increasing times.
fn concurrent_entries(n: usize) -> TicketState {
    TicketState {
        redemptions: ids(n)
            .into_iter()
            .enumerate()
            .map(|(i, id)| entry(id, i as i64, Vec::new()))
            .collect(),
        ..TicketState::default()
    }
}

#[test]
fn ten_thousand_concurrent_entries_are_all_flagged() {
    let state = concurrent_entries(10_000);
    let flagged = state.flagged();
    assert_eq!(flagged.len(), 10_000);
    assert!(
        flagged
            .iter()
            .zip(&state.redemptions)
            .all(|(f, r)| f.id == r.id)
    );
}

#[test]
fn ten_thousand_concurrent_entries_with_one_hlc_keep_the_list_order() {
    // Equal HLCs (the server's admissions of one millisecond) are ordered as the pairwise
    // loop met them; here, as listed.
    let mut state = concurrent_entries(10_000);
    for r in &mut state.redemptions {
        r.hlc = hlc(1, 0, 0);
    }
    let flagged = state.flagged();
    assert_eq!(flagged.len(), 10_000);
    assert!(
        flagged
            .iter()
            .zip(&state.redemptions)
            .all(|(f, r)| f.id == r.id)
    );
}

#[test]
fn ten_thousand_resolved_concurrent_entries_are_flagged_again_by_one_more() {
    let mut state = concurrent_entries(10_000);
    let all = state.redemption_ids();
    state
        .resolutions
        .push(resolution(Action::Accept, all.clone(), 20_000));
    assert!(state.flagged().is_empty(), "staff accepted them all");
    state.redemptions.push(entry(rid(0), 20_001, Vec::new()));
    assert_eq!(state.flagged().len(), 10_001, "a new one pairs with each");
    state.redemptions.pop();
    state.redemptions.push(entry(rid(0), 20_001, all));
    assert!(
        state.flagged().is_empty(),
        "one that saw them all is not concurrent"
    );
}

#[test]
fn entries_that_each_saw_every_earlier_one_are_not_flagged() {
    // What gates in contact write: each entry lists every redemption before it. For 10,000
    // that is 50 million ids (about 3 GB of records), so 1,000 here: half a million ids.
    let ids = ids(1_000);
    let state = TicketState {
        redemptions: ids
            .iter()
            .enumerate()
            .map(|(i, id)| entry(id.clone(), i as i64, ids[..i].to_vec()))
            .collect(),
        ..TicketState::default()
    };
    assert!(state.flagged().is_empty());
}

#[test]
fn a_ticket_is_single_use_per_scope() {
    // A three-day pass: entries on two days of the main list, concurrent (two gates apart)
    // on the second day, and one in the VIP area. Only the second day's pair is a copy.
    let scope = |s: &str| Some(gatemesh_wire::Scope::parse(s).unwrap());
    let mut state = concurrent_entries(4);
    for (r, s) in state.redemptions.iter_mut().zip([
        "main/2026-07-03",
        "main/2026-07-04",
        "main/2026-07-04",
        "vip",
    ]) {
        r.scope = scope(s);
    }
    let flagged: Vec<&RedemptionId> = state.flagged().iter().map(|r| &r.id).collect();
    assert_eq!(
        flagged,
        [&state.redemptions[1].id, &state.redemptions[2].id]
    );
    // What a gate decides a scan on the second day with: that day's entries, every
    // resolution; the first day's entry is no use of that day.
    let day_two = state.scoped(scope("main/2026-07-04").as_ref());
    assert_eq!(day_two.redemptions.len(), 2);
    assert_eq!(day_two.first_entry().unwrap().id, state.redemptions[1].id);
    assert!(
        state
            .scoped(scope("main/2026-07-05").as_ref())
            .first_entry()
            .is_none()
    );
    assert!(state.scoped(None).redemptions.is_empty());
}
