//! The invariants, checked on made-up scans: each holds when it should and fails when it
//! should.

use super::*;
use crate::rehearse::watch::Shot;

fn shot(verdict: &str, id: Option<&str>) -> Shot {
    Shot {
        verdict: verdict.into(),
        reason: String::new(),
        list: None,
        redemption_id: id.map(str::to_owned),
        latency_ms: 1.0,
    }
}

fn scan(ticket: usize, gate: usize, who: Who, sent_s: f64, first: Shot) -> ScanRecord {
    ScanRecord {
        gate,
        ticket,
        tid: format!("T{ticket}"),
        who,
        scope: None,
        sent_s,
        event_s: sent_s,
        waited_ms: 0.0,
        first,
        second: None,
        second_waited_ms: 0.0,
        second_apart_ms: 0.0,
    }
}

/// The server holds `entries` of ticket `T0`, flagged or not; everyone agrees.
fn server(entries: &[&str], flagged: bool) -> Agreement {
    let held = Held {
        entries: entries.iter().map(|e| (*e).to_owned()).collect(),
        flagged,
        standing: "active".into(),
        resolution: String::new(),
    };
    Agreement {
        disagreements: Vec::new(),
        server: HashMap::from([("T0".to_owned(), held)]),
        tickets: 1,
        skipped: Vec::new(),
        standing_writes: (0, 0),
        look: (0.0, 0.0),
        first_gate_s: 0.0,
        read_whole: 0,
    }
}

#[test]
fn a_gate_holding_the_first_gates_records_is_compared_by_them_and_by_its_own_flags() {
    // The server holds T0 admitted twice and flagged; gate 0's records say the same. Gate 1
    // holds the same records and shows the flag; gate 2 holds them too but does not.
    let mut agreement = server(&["r1", "r2"], true);
    let held = HashMap::from([(
        "T0".to_owned(),
        Held {
            entries: ["r1", "r2"].map(str::to_owned).into(),
            flagged: false,
            standing: "active".into(),
            resolution: String::new(),
        },
    )]);
    let view = |flags: &[&str]| GateView {
        backlog: 0,
        skipped: None,
        standing_writes: None,
        digest: "d".into(),
        flags: flags.iter().map(|t| (*t).to_owned()).collect(),
        held: None,
    };
    let tids = ["T0".to_owned()];
    agreement.compare(1, &view(&["T0"]), Some(&held), &tids);
    assert_eq!(agreement.disagreements, Vec::<String>::new());
    agreement.compare(2, &view(&[]), Some(&held), &tids);
    assert_eq!(agreement.disagreements.len(), 1);
    assert!(
        agreement.disagreements[0].contains("gate 2 2 entries, flagged false"),
        "{:?}",
        agreement.disagreements
    );
}

/// Two gates; gate 1 is cut off from gate 0 from event second 10 to 20.
fn plan() -> Plan {
    Plan {
        gates: 2,
        attendees: 1,
        duration_s: 100.0,
        faults: crate::rehearse::plan::Faults {
            uplink_gate: 0,
            uplink_down: (50.0, 60.0),
            partition: (10.0, 20.0),
            side_b: vec![1],
            killed_gate: 0,
            kill_at: 70.0,
        },
        festival: None,
        steps: Vec::new(),
    }
}

#[test]
fn a_copy_counts_as_reachable_unless_the_partition_stood_between_the_gates() {
    let caught = |gate, at| scan(0, gate, Who::Friend, at, shot("duplicate", None));
    let cases = [
        // (first admission's time, copy's gate and time, reachable)
        (1.0, (1, 5.0), true),    // before the partition
        (1.0, (1, 15.0), false),  // the copy during it, on the other side
        (12.0, (0, 15.0), true),  // during it, on the same side
        (12.0, (1, 25.0), false), // admitted during it, the copy after the heal
        (21.0, (1, 25.0), true),  // after it
    ];
    for (first, (gate, at), reachable) in cases {
        let holder = scan(0, 0, Who::Holder, first, shot("admit", Some("r1")));
        let c = Copies::of(
            &[holder, caught(gate, at)],
            &server(&["r1"], false),
            &plan(),
        );
        assert_eq!(
            (c.reachable, c.reachable_caught),
            if reachable { (1, 1) } else { (0, 0) },
            "first at {first}, copy at gate {gate} at {at}"
        );
    }
}

#[test]
fn a_copy_is_caught_or_flagged_everywhere_or_it_is_missed() {
    let holder = scan(0, 0, Who::Holder, 1.0, shot("admit", Some("r1")));
    let caught = scan(0, 1, Who::Friend, 2.0, shot("duplicate", None));
    let admitted = scan(0, 1, Who::Friend, 2.0, shot("admit", Some("r2")));

    let c = Copies::of(&[caught, holder.clone()], &server(&["r1"], false), &plan());
    assert_eq!(
        (c.copies, c.caught, c.flagged, c.missed.len()),
        (1, 1, 0, 0)
    );

    let c = Copies::of(
        &[holder.clone(), admitted.clone()],
        &server(&["r1", "r2"], true),
        &plan(),
    );
    assert_eq!(
        (c.copies, c.caught, c.flagged, c.missed.len()),
        (1, 0, 1, 0)
    );

    let c = Copies::of(
        &[holder.clone(), admitted.clone()],
        &server(&["r1", "r2"], false),
        &plan(),
    );
    assert_eq!(c.missed.len(), 1, "admitted and not flagged");

    // Flagged at the server is not enough while a gate disagrees.
    let mut split = server(&["r1", "r2"], true);
    split.disagreements.push("gate 1 differs".into());
    assert_eq!(
        Copies::of(&[holder, admitted], &split, &plan())
            .missed
            .len(),
        1
    );
}

#[test]
fn the_first_genuine_presentation_must_be_admitted() {
    let refunded = scan(0, 0, Who::Refunded, 1.0, shot("reject", None));
    let holder = scan(0, 1, Who::Holder, 2.0, shot("reject", None));
    let c = Copies::of(
        std::slice::from_ref(&refunded),
        &server(&[], false),
        &plan(),
    );
    assert!(c.false_rejects.is_empty(), "a refunded code is not genuine");
    let c = Copies::of(&[refunded, holder], &server(&[], false), &plan());
    assert_eq!(c.false_rejects.len(), 1);
    assert_eq!(c.copies, 0);
}

#[test]
fn of_two_presentations_that_overlapped_the_one_admitted_came_first() {
    // The friend's screenshot sent at gate 0 at 1.0 s waits 3 s for its answer (a busy
    // gate); the holder's code, sent at gate 1 at 2.0 s, is admitted, and reaches gate 0
    // before the friend's scan is decided there: a copy caught, not a false reject.
    let mut slow = shot("duplicate", None);
    slow.latency_ms = 3000.0;
    let friend = scan(0, 0, Who::Friend, 1.0, slow.clone());
    let holder = scan(0, 1, Who::Holder, 2.0, shot("admit", Some("r1")));
    let c = Copies::of(&[friend, holder.clone()], &server(&["r1"], false), &plan());
    assert!(c.false_rejects.is_empty(), "{:?}", c.false_rejects);
    assert_eq!((c.copies, c.caught, c.missed.len()), (1, 1, 0));
    // Answered before the holder's was sent: the friend's was first, and turned away.
    let mut quick = slow;
    quick.latency_ms = 500.0;
    let friend = scan(0, 0, Who::Friend, 1.0, quick);
    let c = Copies::of(&[friend, holder], &server(&["r1"], false), &plan());
    assert_eq!(c.false_rejects.len(), 1);
}

#[test]
fn a_refunded_code_passes_only_before_the_refund_reaches_that_gate() {
    let reached = HashMap::from([((0, 0), 5.0)]);
    let scans = [
        scan(0, 0, Who::Refunded, 4.0, shot("admit", Some("r1"))),
        scan(0, 0, Who::OldHolder, 6.0, shot("admit", Some("r2"))),
        scan(0, 1, Who::Refunded, 6.0, shot("admit", Some("r3"))),
        scan(0, 0, Who::Refunded, 7.0, shot("reject", None)),
        scan(0, 0, Who::Holder, 8.0, shot("admit", Some("r4"))),
    ];
    let c = Changed::of(&scans, &reached);
    assert_eq!((c.after_reach.len(), c.before_reach, c.refused), (1, 2, 1));
    assert!(
        c.after_reach[0].contains("OldHolder"),
        "{:?}",
        c.after_reach
    );
}

#[test]
fn a_double_fire_gets_the_same_answer_twice() {
    let mut same = scan(0, 0, Who::Holder, 1.0, shot("admit", Some("r1")));
    same.second = Some(shot("admit", Some("r1")));
    let mut other_id = same.clone();
    other_id.second = Some(shot("admit", Some("r2")));
    let mut yellow = same.clone();
    yellow.second = Some(shot("duplicate", None));
    let agreement = server(&["r1"], false);

    let f = Findings::of(
        std::slice::from_ref(&same),
        &HashMap::new(),
        &agreement,
        &plan(),
    );
    assert_eq!((f.double_fires, f.double_mismatch.len()), (1, 0));
    let f = Findings::of(
        &[same, other_id, yellow],
        &HashMap::new(),
        &agreement,
        &plan(),
    );
    assert_eq!((f.double_fires, f.double_mismatch.len()), (3, 2));
}

/// A second read that reached the gate only after it came back from a crash, past the
/// repeat window, is the code held up again: yellow is right. Within the window, or without
/// a crash to wait out, it is still a double fire and must get the first answer.
#[test]
fn a_double_fire_that_waited_out_a_restart_past_the_window_is_not_one() {
    let mut late = scan(0, 0, Who::Holder, 1.0, shot("admit", Some("r1")));
    late.second = Some(shot("duplicate", None));
    late.second_waited_ms = 9_000.0;
    late.second_apart_ms = 10_400.0;
    let mut waited_within = late.clone();
    waited_within.second_apart_ms = 9_600.0;
    let mut slow_without_a_crash = late.clone();
    slow_without_a_crash.second_waited_ms = 0.0;
    // Double fires, those past the window, and mismatched answers among the double fires.
    let counts = |scans: &[ScanRecord]| {
        let f = Findings::of(scans, &HashMap::new(), &server(&["r1"], false), &plan());
        (
            f.double_fires,
            f.double_fires_past_the_window,
            f.double_mismatch.len(),
        )
    };
    assert_eq!(counts(std::slice::from_ref(&late)), (0, 1, 0));
    assert_eq!(counts(&[waited_within, slow_without_a_crash]), (2, 0, 2));
}

#[test]
fn an_admission_a_scanner_saw_is_held_by_the_server() {
    let mut twice = scan(0, 0, Who::Holder, 1.0, shot("admit", Some("r1")));
    twice.second = Some(shot("admit", Some("r1")));
    let copy = scan(0, 1, Who::Friend, 2.0, shot("admit", Some("r2")));
    let scans = [twice, copy];

    let a = Admissions::of(&scans, &server(&["r1", "r2"], true).server);
    assert_eq!((a.lost.len(), a.told, a.server_entries), (0, 2, 2));
    let a = Admissions::of(&scans, &server(&["r1"], true).server);
    assert_eq!(a.lost, ["T0: r2"]);
    let told: HashMap<&str, HashSet<&str>> = admissions_told(&scans);
    assert_eq!(told["T0"].len(), 2, "the double fire told of r1 once");
}

/// A festival's presentation: `scope` is where the plan says it counts.
fn in_scope(ticket: usize, who: Who, sent_s: f64, scope: &str, first: Shot) -> ScanRecord {
    let mut s = scan(ticket, 0, who, sent_s, first);
    s.scope = Some(scope.to_owned());
    s
}

fn refused(reason: &str) -> Shot {
    let mut s = shot("reject", None);
    s.reason = reason.into();
    s
}

#[test]
fn each_day_on_each_list_is_a_ticket_s_own_story() {
    // A pass in on two days, and in the VIP area the first: no copy, nothing to flag.
    let scans = [
        in_scope(0, Who::Holder, 1.0, "pass/w0", shot("admit", Some("r1"))),
        in_scope(0, Who::Holder, 2.0, "vip/w0", shot("admit", Some("r2"))),
        in_scope(0, Who::Holder, 30.0, "pass/w1", shot("admit", Some("r3"))),
    ];
    let agreement = server(&["r1", "r2", "r3"], false);
    let c = Copies::of(&scans, &agreement, &plan());
    assert_eq!((c.copies, c.false_rejects.len()), (0, 0));
    let l = ListsFindings::of(&scans, &agreement);
    assert!(l.flagged_without_two_entries_in_a_scope.is_empty());
    // Flagged all the same: a flag nothing called for.
    let l = ListsFindings::of(&scans, &server(&["r1", "r2", "r3"], true));
    assert_eq!(l.flagged_without_two_entries_in_a_scope, ["T0"]);
    // A second entry the same day on the same list is a copy, and must be caught.
    let copy = in_scope(0, Who::Friend, 3.0, "pass/w0", shot("admit", Some("r4")));
    let c = Copies::of(&[scans[0].clone(), copy.clone()], &agreement, &plan());
    assert_eq!((c.copies, c.missed.len()), (1, 1));
    assert_eq!(
        twice_in_a_scope(&[scans[0].clone(), copy]),
        BTreeSet::from(["T0".to_owned()])
    );
}

#[test]
fn the_lists_must_refuse_the_wrong_day_and_door_and_only_them() {
    let wrong_day = |first| scan(0, 0, Who::WrongDay, 1.0, first);
    let wrong_door = |first| scan(1, 1, Who::WrongDoor, 1.0, first);
    let holder = |first| in_scope(2, Who::Holder, 1.0, "fri/w0", first);
    let agreement = server(&[], false);
    let right = [
        wrong_day(refused("not_valid_now")),
        wrong_door(refused("not_on_list")),
        holder(shot("admit", Some("r1"))),
    ];
    let l = ListsFindings::of(&right, &agreement);
    assert_eq!((l.wrong_day, l.wrong_door), ((1, 1), (1, 1)));
    assert!(l.not_refused_as_expected.is_empty() && l.refused_by_a_list_that_admits_it.is_empty());
    let wrong = [
        wrong_day(shot("admit", Some("r2"))),
        wrong_door(refused("not_valid_now")),
        holder(refused("not_on_list")),
        holder(refused("not_valid_now")),
    ];
    let l = ListsFindings::of(&wrong, &agreement);
    assert_eq!((l.wrong_day, l.wrong_door), ((1, 0), (1, 0)));
    assert_eq!(l.not_refused_as_expected.len(), 2);
    assert_eq!(l.refused_by_a_list_that_admits_it.len(), 2);
    // Refused presentations are no one's first entry.
    let c = Copies::of(&right[..2], &agreement, &plan());
    assert!(c.false_rejects.is_empty());
}

/// An item a gate's uplink skipped (what the server refused from it, shown to its staff) is
/// a fault in a rehearsal: the invariant names the gate and the last item.
#[test]
fn an_item_a_gates_uplink_skipped_fails_the_rehearsal() {
    let admitted = scan(0, 0, Who::Holder, 1.0, shot("admit", Some("r1")));
    let agreement = server(&["r1"], false);
    let findings = Findings::of(
        std::slice::from_ref(&admitted),
        &HashMap::new(),
        &agreement,
        &plan(),
    );
    let resolved = |skipped: Vec<(usize, u64, String)>| Resolution {
        flagged: 0,
        actions: BTreeMap::new(),
        flags_left: 0,
        agreement: Agreement {
            skipped,
            ..server(&["r1"], false)
        },
        converged_s: 0.0,
    };
    let skipped_invariant = |r: &Resolution| {
        findings
            .invariants(&agreement, r)
            .into_iter()
            .find(|i| i["name"] == "uplink_items_skipped")
            .unwrap()
    };
    let clean = skipped_invariant(&resolved(Vec::new()));
    assert_eq!(
        (clean["value"].as_u64(), clean["ok"].as_bool()),
        (Some(0), Some(true))
    );
    let faulty = skipped_invariant(&resolved(vec![(
        2,
        3,
        "resolution r9 of ticket T0: only the organizer reverts it".into(),
    )]));
    assert_eq!(
        (faulty["value"].as_u64(), faulty["ok"].as_bool()),
        (Some(3), Some(false))
    );
    assert!(
        faulty["examples"][0]
            .as_str()
            .is_some_and(|e| e.starts_with("gate 2: 3 skipped") && e.contains("r9")),
        "{faulty}"
    );
}
