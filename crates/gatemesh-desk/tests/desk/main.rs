//! The desk behind the desktop app, without a window: the demo sets itself up once, its two
//! gates meet on loopback, staff roles hold, and the views say what happened.

use std::time::{Duration, Instant};

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use gatemesh_desk::{Action, Clock, Desk, DeskError, StaffRole, Verdict};

/// A clock the test moves: sign-in delays and the idle sign-out without waiting minutes.
#[derive(Debug)]
struct TestClock(AtomicI64);

impl TestClock {
    fn new() -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(1_800_000_000_000)))
    }

    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn tickets(root: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(root.join("tickets/tickets.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_owned(), f[4].to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_sets_itself_up_and_staff_roles_hold() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    let desk = Desk::demo(&root).await.unwrap();
    let info = desk.info();
    assert!(!info.needs_setup);
    assert_eq!(info.gate_name.as_deref(), Some("Main-Entrance"));
    assert_eq!(info.capacity, Some(200));
    assert_eq!(info.demo_pins.len(), 3);
    assert!(root.join("tickets/tickets.pdf").exists());
    let list = tickets(&root);
    assert_eq!(list.len(), 200);

    // Nobody signed in: no scans. A wrong PIN is refused.
    assert!(matches!(
        desk.scan(&list[0].1, "Lane 1").await,
        Err(DeskError::SignedOut)
    ));
    assert!(matches!(
        desk.sign_in("Sam", "0000").await,
        Err(DeskError::WrongPin)
    ));
    assert!(matches!(
        desk.sign_in("Nobody", "1111").await,
        Err(DeskError::WrongPin)
    ));

    // Staff scan; only supervisors resolve.
    // (Sam's wrong PIN above makes his next try wait a second.)
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let sam = desk.sign_in("Sam", "1111").await.unwrap();
    assert_eq!(sam.role, StaffRole::Staff);
    let first = desk.scan(&list[0].1, "Lane 1").await.unwrap();
    assert_eq!(first.verdict, Verdict::Admit);
    assert_eq!(first.seat.as_deref(), Some("A-1"));
    let again = desk.scan(&list[0].1, "Lane 2").await.unwrap();
    assert_eq!(again.verdict, Verdict::Duplicate);
    assert_eq!(
        again.first.as_ref().map(|f| f.gate.as_str()),
        Some("Main-Entrance")
    );
    assert!(matches!(
        desk.resolve(&list[0].0, Action::Revert, "x").await,
        Err(DeskError::NotAllowed(StaffRole::Staff))
    ));
    desk.sign_in("Kim", "2222").await.unwrap();
    desk.resolve(&list[0].0, Action::Revert, "wrong person")
        .await
        .unwrap();
    assert_eq!(
        desk.scan(&list[0].1, "Lane 1").await.unwrap().verdict,
        Verdict::Admit,
        "a reverted admission admits again"
    );
    let flags = desk.flags().await.unwrap();
    assert!(flags.open.is_empty());
    assert_eq!(flags.resolved[0].tid, list[0].0);
    assert!(
        flags.resolved[0]
            .audit
            .iter()
            .any(|a| a.action == "resolve:revert" && a.actor == "Kim")
    );

    // The side gate is a mesh peer on loopback; the dashboard lists both.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = desk.status().await.unwrap();
        let side = status.gates.iter().find(|g| g.name == "Side-Door");
        if side.is_some_and(|g| g.online) {
            let main = status.gates.iter().find(|g| g.this_gate).unwrap();
            assert_eq!(main.name, "Main-Entrance");
            assert_eq!(main.admitted, 2);
            assert_eq!(main.duplicates, Some(1));
            assert_eq!(
                status.admitted_total, 1,
                "one holder inside after the revert"
            );
            assert_eq!(main.per_minute.len(), 30);
            assert_eq!(
                main.per_minute.iter().sum::<u32>(),
                2,
                "both entries fall in the last 30 minutes"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the side gate never connected: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    desk.shutdown().await;

    // A PIN kept the old way (salted SHA-256, before Argon2id) still signs in, once, and is
    // kept as Argon2id from then on.
    let app = root.join("app.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&app).unwrap()).unwrap();
    let alex = config["staff"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["name"] == "Alex")
        .unwrap();
    alex["salt"] = "0123456789abcdef".into();
    alex["pin_hash"] = sha256_hex("0123456789abcdef:3333").into();
    std::fs::write(&app, serde_json::to_string(&config).unwrap()).unwrap();

    // Started again: the same event, nothing set up twice, the ledger kept.
    let desk = Desk::demo(&root).await.unwrap();
    assert_eq!(tickets(&root), list);
    desk.sign_in("Alex", "3333").await.unwrap();
    let kept = std::fs::read_to_string(&app).unwrap();
    assert!(!kept.contains("0123456789abcdef"), "{kept}");
    assert_eq!(kept.matches("$argon2id$").count(), 3, "{kept}");
    // (Another scanner: the same one within 10 s would get its first answer again.)
    assert_eq!(
        desk.scan(&list[0].1, "Lane 3").await.unwrap().verdict,
        Verdict::Duplicate
    );
    desk.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managers_change_staff_and_settings_and_an_event_sets_up_from_files() {
    use gatemesh_desk::{DeskError, FileSetup, StaffEntry};
    let dir = tempfile::tempdir().unwrap();
    // An organizer's files: the demo's key stands in for a real issuer's.
    let demo = dir.path().join("demo");
    let desk = Desk::demo(&demo).await.unwrap();
    // Staff may not change the set-up; managers may.
    desk.sign_in("Sam", "1111").await.unwrap();
    assert!(matches!(
        desk.put_staff("Lee", StaffRole::Staff, "4444"),
        Err(DeskError::NotAllowed(StaffRole::Staff))
    ));
    desk.sign_in("Alex", "3333").await.unwrap();
    let s = desk
        .put_staff("Lee", StaffRole::Supervisor, "4444")
        .unwrap();
    assert!(
        s.staff
            .iter()
            .any(|p| p.name == "Lee" && p.role == StaffRole::Supervisor)
    );
    // Sign-in asks for the name: two people may share a PIN.
    desk.put_staff("Max", StaffRole::Staff, "4444").unwrap();
    // One PIN rule for staff management, set-up and pairing (their managers are made by
    // `StaffEntry::new`) and sign-in: 13 digits are refused alike.
    for pin in ["12", "1234567890123", "12a4"] {
        assert!(
            matches!(
                StaffEntry::new("Max", StaffRole::Manager, pin),
                Err(DeskError::BadInput(_))
            ),
            "{pin}"
        );
        assert!(
            matches!(desk.sign_in("Max", pin).await, Err(DeskError::BadInput(_))),
            "{pin}"
        );
        assert!(
            matches!(
                desk.put_staff("Max", StaffRole::Staff, pin),
                Err(DeskError::BadInput(_))
            ),
            "{pin}"
        );
    }
    assert_eq!(desk.sign_in("Lee", "4444").await.unwrap().name, "Lee");
    assert_eq!(desk.sign_in("Max", "4444").await.unwrap().name, "Max");
    desk.sign_in("Alex", "3333").await.unwrap();
    desk.remove_staff("Lee").unwrap();
    assert!(matches!(
        desk.sign_in("Lee", "4444").await,
        Err(DeskError::WrongPin)
    ));
    desk.sign_in("Alex", "3333").await.unwrap();
    assert!(
        matches!(desk.remove_staff("Alex"), Err(DeskError::Conflict(_))),
        "the last manager stays"
    );
    let s = desk.update_settings("North-Door", true, false, 20).unwrap();
    assert_eq!(s.idle_sign_out_min, 20);
    for idle in [0, 241] {
        assert!(matches!(
            desk.update_settings("North-Door", true, false, idle),
            Err(DeskError::BadInput(_))
        ));
    }
    assert!(s.restart_needed);
    assert_eq!(
        (s.gate_name.as_str(), s.running_gate_name.as_str()),
        ("North-Door", "Main-Entrance")
    );
    desk.shutdown().await;
    let desk = Desk::demo(&demo).await.unwrap();
    desk.sign_in("Sam", "1111").await.unwrap();
    let s = desk.settings().unwrap();
    assert_eq!(
        (s.running_gate_name.as_str(), s.reentry, s.restart_needed),
        ("North-Door", true, false)
    );
    desk.shutdown().await;

    // A new app set up from files: the issuer key and an identity of the event.
    let pem = std::fs::read_to_string(demo.join("issuer.pub.pem")).unwrap();
    let event = desk_event_id(&demo);
    let fresh = dir.path().join("fresh");
    let setup = |identity: Option<String>| FileSetup {
        event: event.clone(),
        gate_name: "Gate-7".into(),
        issuer_pem: pem.clone(),
        identity_dir: identity,
        capacity: Some(200),
    };
    let managers = || vec![StaffEntry::new("Ana", StaffRole::Manager, "9999").unwrap()];
    let wrong = Desk::from_files(
        &fresh,
        FileSetup {
            issuer_pem: "not a key".into(),
            ..setup(None)
        },
        managers(),
    )
    .await;
    assert!(wrong.is_err());
    assert!(
        !fresh.join("app.json").exists(),
        "a refused set-up leaves nothing behind"
    );
    let desk = Desk::from_files(&fresh, setup(None), managers())
        .await
        .unwrap();
    desk.sign_in("Ana", "9999").await.unwrap();
    let list = tickets(&demo);
    assert_eq!(
        desk.scan(&list[5].1, "Lane 1").await.unwrap().verdict,
        Verdict::Admit
    );
    desk.shutdown().await;

    // The organizer adds check-in lists to its set-up (the lists file, in app.json): the
    // Scan screen names the list and warns as it fills.
    let path = fresh.join("app.json");
    let mut app: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    app["check_in"] = serde_json::json!({
        "event": event, "time_zone": "UTC", "default_product": "GA",
        "products": [{"code": "GA", "number": 1}],
        "lists": [{"id": "main", "name": "Main entrance", "all_products": true, "capacity": 3}]
    });
    app["lists"] = serde_json::json!(["main"]);
    std::fs::write(&path, app.to_string()).unwrap();
    let desk = Desk::open(&fresh).await.unwrap().unwrap();
    desk.sign_in("Ana", "9999").await.unwrap();
    let shown = |v: &gatemesh_desk::ScanView| {
        let l = v.list.as_ref().unwrap();
        (l.name.clone(), l.inside, l.capacity, l.level)
    };
    use gatemesh_wire::CapacityLevel::{Full, Ok as Fine};
    let second = desk.scan(&list[6].1, "Lane 1").await.unwrap();
    assert_eq!(second.verdict, Verdict::Admit);
    // Ticket 5 was admitted before the lists: under no list, it counts on none.
    assert_eq!(shown(&second), ("Main entrance".into(), 1, Some(3), Fine));
    let third = desk.scan(&list[7].1, "Lane 1").await.unwrap();
    assert_eq!(shown(&third).3, Fine, "2 of 3 is below 90 %");
    let fourth = desk.scan(&list[8].1, "Lane 1").await.unwrap();
    assert_eq!((fourth.verdict, shown(&fourth).3), (Verdict::Admit, Full));
    desk.shutdown().await;
}

fn desk_event_id(demo: &std::path::Path) -> String {
    let csv = std::fs::read_to_string(demo.join("tickets/tickets.csv")).unwrap();
    csv.lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_owned()
}

/// Every command but the sign-in, each with what it answered.
async fn every_command(
    desk: &Desk,
    (tid, code): &(String, String),
) -> Vec<(&'static str, Result<(), DeskError>)> {
    vec![
        ("status", desk.status().await.map(drop)),
        ("flags", desk.flags().await.map(drop)),
        ("settings", desk.settings().map(drop)),
        ("scan", desk.scan(code, "Lane 1").await.map(drop)),
        ("resolve", desk.resolve(tid, Action::Accept, "").await),
        ("decode_frame", desk.decode_frame(&[0; 8]).map(drop)),
        (
            "put_staff",
            desk.put_staff("Lee", StaffRole::Staff, "4444").map(drop),
        ),
        ("remove_staff", desk.remove_staff("Sam").map(drop)),
        ("unlock_staff", desk.unlock_staff("Sam").map(drop)),
        (
            "update_settings",
            desk.update_settings("X", false, false, 15).map(drop),
        ),
    ]
}

/// Every command but the sign-in wants someone signed in; guessing a PIN is slowed, then
/// locked until a manager unlocks; roles hold; an idle session ends on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_is_slowed_then_locked_and_idle_sessions_end() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let desk = Desk::demo_with_clock(&dir.path().join("demo"), clock.clone())
        .await
        .unwrap();
    let list = tickets(&dir.path().join("demo"));
    let signed_out = |r: Result<(), DeskError>, what: &str| {
        assert!(matches!(r, Err(DeskError::SignedOut)), "{what}: {r:?}");
    };
    // Nobody signed in: every command is refused, and nothing changes.
    for (what, r) in every_command(&desk, &list[1]).await {
        signed_out(r, what);
    }
    assert_eq!(desk.info().staff_names, ["Sam", "Kim", "Alex"]);

    // Guessing Sam's PIN: each wrong one makes the next try wait longer (a try too soon is
    // refused without a look at the PIN, right or wrong); the fifth locks the name.
    for (n, wait) in [(1, 1000u64), (2, 2000), (3, 4000), (4, 8000)] {
        assert!(
            matches!(desk.sign_in("Sam", "9999").await, Err(DeskError::WrongPin)),
            "{n}"
        );
        let early = desk.sign_in("Sam", "1111").await;
        assert!(
            matches!(early, Err(DeskError::TooSoon { wait_ms }) if wait_ms == wait),
            "{n}: {early:?}"
        );
        clock.advance(wait as i64 - 1);
        assert!(matches!(
            desk.sign_in("Sam", "1111").await,
            Err(DeskError::TooSoon { .. })
        ));
        clock.advance(1);
    }
    assert!(matches!(
        desk.sign_in("Sam", "9999").await,
        Err(DeskError::Locked(_))
    ));
    clock.advance(3_600_000);
    assert!(
        matches!(desk.sign_in("Sam", "1111").await, Err(DeskError::Locked(_))),
        "locked, even with the right PIN an hour later"
    );
    // Another name is not slowed by Sam's; a supervisor may not unlock, a manager may.
    let kim = desk.sign_in("Kim", "2222").await.unwrap();
    assert_eq!(kim.role, StaffRole::Supervisor);
    assert!(matches!(
        desk.unlock_staff("Sam"),
        Err(DeskError::NotAllowed(StaffRole::Supervisor))
    ));
    desk.sign_in("Alex", "3333").await.unwrap();
    assert_eq!(desk.settings().unwrap().locked, ["Sam"]);
    assert!(desk.unlock_staff("Sam").unwrap().locked.is_empty());
    let sam = desk.sign_in("Sam", "1111").await.unwrap();
    assert_eq!(sam.role, StaffRole::Staff);

    // Staff look and scan, but decide nothing and change nothing.
    assert!(desk.status().await.is_ok());
    assert!(desk.flags().await.is_ok());
    assert!(desk.settings().is_ok());
    assert_eq!(
        desk.scan(&list[1].1, "Lane 1").await.unwrap().verdict,
        Verdict::Admit
    );
    for (what, r) in every_command(&desk, &list[1]).await.into_iter().skip(4) {
        if what == "decode_frame" {
            continue;
        }
        assert!(
            matches!(r, Err(DeskError::NotAllowed(StaffRole::Staff))),
            "{what}: {r:?}"
        );
    }

    // Idle: looking (the screens' polls) keeps no one signed in; a command does.
    clock.advance(10 * 60_000);
    assert_eq!(
        desk.scan(&list[2].1, "Lane 1").await.unwrap().verdict,
        Verdict::Admit
    );
    clock.advance(14 * 60_000);
    assert!(
        desk.status().await.is_ok(),
        "24 min signed in, 14 since the scan"
    );
    clock.advance(60_000);
    assert!(matches!(desk.status().await, Err(DeskError::SignedOut)));
    assert!(desk.info().signed_in.is_none());
    assert!(matches!(
        desk.scan(&list[3].1, "Lane 1").await,
        Err(DeskError::SignedOut)
    ));

    // The idle time is the event's setting, and applies at once.
    desk.sign_in("Alex", "3333").await.unwrap();
    desk.update_settings("Main-Entrance", false, false, 1)
        .unwrap();
    clock.advance(59_999);
    assert!(desk.info().signed_in.is_some());
    clock.advance(1);
    assert!(desk.info().signed_in.is_none());
    desk.shutdown().await;

    // A lock outlives the app: it is kept with the staff list.
    let root = dir.path().join("demo");
    let desk = Desk::demo_with_clock(&root, clock.clone()).await.unwrap();
    for _ in 0..5 {
        let _ = desk.sign_in("Kim", "0000").await;
        clock.advance(10_000);
    }
    desk.shutdown().await;
    let desk = Desk::demo_with_clock(&root, clock.clone()).await.unwrap();
    assert!(matches!(
        desk.sign_in("Kim", "2222").await,
        Err(DeskError::Locked(_))
    ));
    desk.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_sets_up_from_a_jwk_set_and_keeps_its_key_ids() {
    use gatemesh_desk::{FileSetup, StaffEntry};
    use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, KeyId, TicketId, jwks};

    let dir = tempfile::tempdir().unwrap();
    let event = "JWKS-2026";
    // A key with a chosen id (keygen --kid), which only the JWK Set carries, and a second one.
    let chosen = IssuerKey::generate(Some(KeyId::new("box-office-2027").unwrap()));
    let other = IssuerKey::generate(None);
    let ticket = |key: &IssuerKey| {
        let claims = Claims {
            tid: TicketId::generate(),
            eid: EventId::new(event).unwrap(),
            seat: None,
            iat: None,
            nbf: None,
            exp: None,
            product: None,
        };
        key.sign(&claims, Format::Gm1).unwrap()
    };
    let setup = |issuer: String| FileSetup {
        event: event.into(),
        gate_name: "Gate-J".into(),
        issuer_pem: issuer,
        identity_dir: None,
        capacity: None,
    };
    let managers = || vec![StaffEntry::new("Ana", StaffRole::Manager, "9999").unwrap()];

    // Refused alike, and nothing written: a set with a private key in it, an empty set.
    let mut private = jwks([&chosen.public()]);
    private["keys"][0]["d"] = "c2VjcmV0".into();
    for bad in [private.to_string(), r#"{"keys":[]}"#.to_owned()] {
        let root = dir.path().join("refused");
        let refused = Desk::from_files(&root, setup(bad.clone()), managers()).await;
        assert!(
            matches!(&refused, Err(DeskError::BadInput(m)) if m.contains("JWK Set")),
            "{bad}: {:?}",
            refused.err()
        );
        assert!(
            !root.join("app.json").exists(),
            "{bad} left a set-up behind"
        );
    }

    let set = jwks([&chosen.public(), &other.public()]).to_string();
    let root = dir.path().join("gate");
    let desk = Desk::from_files(&root, setup(set), managers())
        .await
        .unwrap();
    desk.sign_in("Ana", "9999").await.unwrap();
    for key in [&chosen, &other] {
        assert_eq!(
            desk.scan(&ticket(key), "Lane 1").await.unwrap().verdict,
            Verdict::Admit,
            "a ticket signed by {}",
            key.kid()
        );
    }
    desk.shutdown().await;
    // The chosen id is kept across a restart, not re-derived from the key.
    let desk = Desk::open(&root).await.unwrap().unwrap();
    desk.sign_in("Ana", "9999").await.unwrap();
    assert_eq!(
        desk.scan(&ticket(&chosen), "Lane 2").await.unwrap().verdict,
        Verdict::Admit
    );
    desk.shutdown().await;
}

/// The demo names its holders and keeps its crew off the main entrance: staff find a guest
/// by part of their name and check them in under their own name; the guest's code is yellow
/// afterwards; a crew pass is refused for another list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_find_a_guest_by_name_and_check_them_in_and_crew_passes_stay_backstage() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    let desk = Desk::demo(&root).await.unwrap();
    let list = tickets(&root);
    // Nobody signed in: no search.
    assert!(matches!(
        desk.search_guests("Lovelace").await,
        Err(DeskError::SignedOut)
    ));
    desk.sign_in("Sam", "1111").await.unwrap();
    let found = desk.search_guests("edsger love").await.unwrap();
    assert!(found.search);
    let names: Vec<(&str, Option<&str>)> = found
        .guests
        .iter()
        .map(|g| (g.tid.as_str(), g.holder.as_deref()))
        .collect();
    assert_eq!(names, [(list[3].0.as_str(), Some("Edsger Lovelace"))]);
    assert_eq!(found.guests[0].entries, 0);
    assert!(desk.search_guests("e").await.unwrap().guests.is_empty());

    let checked = desk.check_in_guest(&list[3].0, "Lane 1").await.unwrap();
    assert_eq!(checked.verdict, Verdict::Admit);
    assert_eq!(
        checked.list.as_ref().map(|l| l.name.as_str()),
        Some("Main entrance")
    );
    let (state, _) = desk
        .node()
        .ticket(list[3].0.parse().unwrap())
        .await
        .unwrap();
    assert_eq!(state.redemptions[0].manual.as_deref(), Some("Sam"));
    let found = desk.search_guests("Edsger Lovelace").await.unwrap();
    assert_eq!(
        (
            found.guests[0].entries,
            found.guests[0].first_gate.as_deref()
        ),
        (1, Some("Main-Entrance"))
    );
    let again = desk.scan(&list[3].1, "Lane 2").await.unwrap();
    assert_eq!(again.verdict, Verdict::Duplicate);
    // Not a guest of the list: refused, nothing recorded.
    assert!(desk.check_in_guest("NOBODY", "Lane 1").await.is_err());

    let crew = desk.scan(&list[list.len() - 1].1, "Lane 1").await.unwrap();
    assert_eq!(
        (crew.verdict, crew.reason),
        (Verdict::Reject, gatemesh_wire::Reason::NotOnList)
    );
    // The Gates screen: who is inside the gate's list, and what it refused.
    let status = desk.status().await.unwrap();
    let lists: Vec<(&str, u64)> = status
        .lists
        .iter()
        .map(|l| (l.name.as_str(), l.inside))
        .collect();
    assert_eq!(lists, [("Main entrance", 1)]);
    let refused: Vec<(gatemesh_wire::Reason, u32)> = status
        .refusals
        .iter()
        .map(|r| (r.reason, r.count))
        .collect();
    assert_eq!(refused, [(gatemesh_wire::Reason::NotOnList, 1)]);

    // The manager opens the entrance to the crew: at once, and from every start after.
    assert!(matches!(
        desk.choose_lists(&["main".into(), "backstage".into()]),
        Err(DeskError::NotAllowed(_))
    ));
    desk.sign_in("Alex", "3333").await.unwrap();
    let chosen = |s: &gatemesh_desk::SettingsView| -> Vec<(String, bool)> {
        s.lists.iter().map(|l| (l.id.clone(), l.chosen)).collect()
    };
    assert_eq!(
        chosen(&desk.settings().unwrap()),
        [("main".into(), true), ("backstage".into(), false)]
    );
    assert!(matches!(
        desk.choose_lists(&["vip".into()]),
        Err(DeskError::Node(gatemesh_node::NodeError::BadInput(_)))
    ));
    let s = desk
        .choose_lists(&["main".into(), "backstage".into()])
        .unwrap();
    assert_eq!(
        chosen(&s),
        [("main".into(), true), ("backstage".into(), true)]
    );
    let crew = desk.scan(&list[list.len() - 1].1, "Lane 1").await.unwrap();
    assert_eq!(crew.verdict, Verdict::Admit);
    assert_eq!(crew.list.map(|l| l.name), Some("Backstage".into()));
    desk.shutdown().await;
    let desk = Desk::demo(&root).await.unwrap();
    desk.sign_in("Sam", "1111").await.unwrap();
    assert_eq!(
        chosen(&desk.settings().unwrap()),
        [("main".into(), true), ("backstage".into(), true)]
    );
    desk.shutdown().await;
}
