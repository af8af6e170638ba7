//! The desk behind the desktop app, without a window: the demo sets itself up once, its two
//! gates meet on loopback, staff roles hold, and the views say what happened.

use std::time::{Duration, Instant};

use gatemesh_desk::{Action, Desk, DeskError, StaffRole, Verdict};

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
    assert!(matches!(desk.sign_in("0000"), Err(DeskError::WrongPin)));

    // Staff scan; only supervisors resolve.
    let sam = desk.sign_in("1111").unwrap();
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
    desk.sign_in("2222").unwrap();
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

    // Started again: the same event, nothing set up twice, the ledger kept.
    let desk = Desk::demo(&root).await.unwrap();
    assert_eq!(tickets(&root), list);
    desk.sign_in("3333").unwrap();
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
    desk.sign_in("1111").unwrap();
    assert!(matches!(
        desk.put_staff("Lee", StaffRole::Staff, "4444"),
        Err(DeskError::NotAllowed(StaffRole::Staff))
    ));
    desk.sign_in("3333").unwrap();
    let s = desk
        .put_staff("Lee", StaffRole::Supervisor, "4444")
        .unwrap();
    assert!(
        s.staff
            .iter()
            .any(|p| p.name == "Lee" && p.role == StaffRole::Supervisor)
    );
    assert!(
        matches!(
            desk.put_staff("Max", StaffRole::Staff, "4444"),
            Err(DeskError::Conflict(_))
        ),
        "two people may not share a PIN"
    );
    for pin in ["12", "1234567890123", "12a4"] {
        assert!(
            matches!(
                desk.put_staff("Max", StaffRole::Staff, pin),
                Err(DeskError::BadInput(_))
            ),
            "{pin}"
        );
    }
    assert_eq!(desk.sign_in("4444").unwrap().name, "Lee");
    desk.sign_in("3333").unwrap();
    desk.remove_staff("Lee").unwrap();
    assert!(matches!(desk.sign_in("4444"), Err(DeskError::WrongPin)));
    assert!(
        matches!(desk.remove_staff("Alex"), Err(DeskError::Conflict(_))),
        "the last manager stays"
    );
    let s = desk.update_settings("North-Door", true, false).unwrap();
    assert!(s.restart_needed);
    assert_eq!(
        (s.gate_name.as_str(), s.running_gate_name.as_str()),
        ("North-Door", "Main-Entrance")
    );
    desk.shutdown().await;
    let desk = Desk::demo(&demo).await.unwrap();
    let s = desk.settings();
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
    desk.sign_in("9999").unwrap();
    let list = tickets(&demo);
    assert_eq!(
        desk.scan(&list[5].1, "Lane 1").await.unwrap().verdict,
        Verdict::Admit
    );
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
