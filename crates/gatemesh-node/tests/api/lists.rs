//! Check-in lists at the gate, through its HTTP API: a ticket whose product none of the
//! gate's lists admits, or admits only at another time, is refused before the ledger; a gate
//! without lists takes a ticket without a product exactly as before.

use gatemesh_ticket::{Claims, EventId, Format, Product, Seat, TicketId};
use gatemesh_wire::{ListId, Lists, lists::EventDays, time::format_ms};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{EVENT, Gate, Issuer, now_s, verdict};

const ZONE: &str = "Europe/Berlin";

impl Issuer {
    fn product_ticket(&self, product: Option<&str>, format: Format) -> (TicketId, String) {
        let tid = TicketId::generate();
        let claims = Claims {
            tid: tid.clone(),
            eid: EventId::new(EVENT).unwrap(),
            seat: Some(Seat::new("A-12").unwrap()),
            iat: None,
            nbf: None,
            exp: Some(now_s() + 3 * 86_400),
            product: product.map(|p| Product::parse(p).unwrap()),
        };
        (tid, self.key.sign(&claims, format).unwrap())
    }
}

/// A festival's lists: `friday` is the event day before today, `saturday` today (days start
/// at 05:00 in Berlin), `vip` and `backstage` always; GA and 3DAY enter through `main`.
fn festival() -> Value {
    let days = EventDays::new(ZONE, "05:00").unwrap();
    let today = days.day_of(now_s() * 1000).unwrap();
    let start = |d| format_ms(days.start_ms(d).unwrap());
    let (friday, saturday, sunday) = (today.yesterday().unwrap(), today, today.tomorrow().unwrap());
    json!({
        "event": EVENT, "time_zone": ZONE, "day_starts": "05:00", "default_product": "GA",
        "products": [
            {"code": "GA", "number": 1}, {"code": "VIP", "number": 2},
            {"code": "3DAY", "number": 3}, {"code": "FRI", "number": 4},
            {"code": "SAT", "number": 5}, {"code": "CREW", "number": 6}
        ],
        "lists": [
            {"id": "main", "name": "Main entrance", "products": ["GA", "3DAY"], "once_per_day": true},
            {"id": "friday", "name": "Friday", "products": ["FRI"],
             "windows": [{"from": start(friday), "until": start(saturday)}]},
            {"id": "saturday", "name": "Saturday", "products": ["SAT"],
             "windows": [{"from": start(saturday), "until": start(sunday)}]},
            {"id": "vip", "name": "VIP area", "products": ["VIP"]},
            {"id": "backstage", "name": "Backstage", "products": ["CREW"]}
        ]
    })
}

fn gate_lists(ids: &[&str]) -> gatemesh_wire::GateLists {
    let lists = Lists::from_json(festival().to_string().as_bytes()).unwrap();
    let ids: Vec<ListId> = ids.iter().map(|i| ListId::parse(i).unwrap()).collect();
    lists.for_gate(&ids).unwrap()
}

async fn redemptions(gate: &Gate, tid: &TicketId) -> usize {
    let (status, t) = gate.get(&format!("/v1/tickets/{tid}")).await;
    match status {
        StatusCode::NOT_FOUND => 0,
        StatusCode::OK => t["redemptions"].as_array().map_or(0, Vec::len),
        other => panic!("{other}: {t}"),
    }
}

#[tokio::test]
async fn a_ga_ticket_at_the_vip_door_is_refused_not_on_list() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(gate_lists(&["vip", "backstage"]).into());
    })
    .await;

    // VIP as a JWT (its code) and as GM1 (its number, 2), crew: in, under their lists.
    for (product, format, list) in [
        ("VIP", Format::Jwt, "vip"),
        ("2", Format::Gm1, "vip"),
        ("CREW", Format::Jwt, "backstage"),
    ] {
        let (_, code) = issuer.product_ticket(Some(product), format);
        let r = gate.scan(&code, "s1").await;
        assert_eq!(verdict(&r), ("admit", "valid"), "{product}: {r}");
        assert_eq!(r["list"], list);
    }

    // GA, a ticket with no product (the default, GA), a product the file does not know, a
    // GM1 number it does not know: red, and nothing written.
    for (product, format) in [
        (Some("GA"), Format::Jwt),
        (Some("1"), Format::Gm1),
        (None, Format::Gm1),
        (Some("NOPE"), Format::Jwt),
        (Some("77"), Format::Gm1),
    ] {
        let (tid, code) = issuer.product_ticket(product, format);
        let r = gate.scan(&code, "s1").await;
        assert_eq!(verdict(&r), ("reject", "not_on_list"), "{product:?}: {r}");
        assert!(
            r["detail"]
                .as_str()
                .unwrap()
                .ends_with("is not on this gate's lists (vip, backstage)"),
            "{r}"
        );
        assert!(r.get("list").is_none(), "{r}");
        assert_eq!(redemptions(&gate, &tid).await, 0);
    }
    // A forged VIP ticket is still forged: the signature is checked first.
    let forger = Issuer::new();
    let (_, forged) = forger.product_ticket(Some("VIP"), Format::Jwt);
    let r = gate.scan(&forged, "s1").await;
    assert_eq!(verdict(&r).0, "reject");
    assert_ne!(verdict(&r).1, "not_on_list", "{r}");

    let (_, s) = gate.get("/v1/status").await;
    assert_eq!(
        s["counts"],
        json!({ "admit": 3, "duplicate": 0, "reject": 6 })
    );
    gate.stop().await;
}

#[tokio::test]
async fn a_friday_ticket_on_saturday_is_refused_not_valid_now() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "Main 1", &issuer, |c| {
        c.check_in = Some(gate_lists(&["main", "friday", "saturday"]).into());
    })
    .await;

    // FRI is number 4 in GM1.
    let (fri, code) = issuer.product_ticket(Some("4"), Format::Gm1);
    let r = gate.scan(&code, "s1").await;
    assert_eq!(verdict(&r), ("reject", "not_valid_now"), "{r}");
    assert!(
        r["detail"]
            .as_str()
            .unwrap()
            .starts_with("list friday admits this ticket no longer"),
        "{r}"
    );
    assert_eq!(redemptions(&gate, &fri).await, 0);

    // Saturday's ticket is valid today, and a 3-day pass and an old ticket without a product
    // (GA) enter through main.
    for (product, format, list) in [
        (Some("SAT"), Format::Jwt, "saturday"),
        (Some("3"), Format::Gm1, "main"),
        (None, Format::Gm1, "main"),
    ] {
        let (tid, code) = issuer.product_ticket(product, format);
        let r = gate.scan(&code, "s1").await;
        assert_eq!(verdict(&r), ("admit", "valid"), "{product:?}: {r}");
        assert_eq!(r["list"], list);
        assert_eq!(redemptions(&gate, &tid).await, 1);
        // Still single entry: a second scanner's scan is yellow.
        let again = gate.scan(&code, "s2").await;
        assert_eq!(verdict(&again), ("duplicate", "already_admitted"));
    }
    gate.stop().await;
}

#[tokio::test]
async fn without_lists_a_ticket_without_a_product_is_taken_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "North 1", &issuer, |_| {}).await;
    let tid = TicketId::generate();
    let r = gate.scan(&issuer.ticket(&tid), "s1").await;
    assert_eq!(verdict(&r), ("admit", "valid"));
    // The same body as before lists existed: no list, no product.
    let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "at",
            "first",
            "reason",
            "redemption_id",
            "ticket",
            "transferred_to",
            "verdict"
        ]
    );
    assert_eq!(
        r["ticket"],
        json!({"tid": tid.as_str(), "eid": EVENT, "seat": "A-12"})
    );
    // A ticket with a product at a gate with no lists: every product is welcome.
    let (_, code) = issuer.product_ticket(Some("VIP"), Format::Jwt);
    let r = gate.scan(&code, "s1").await;
    assert_eq!(verdict(&r), ("admit", "valid"));
    assert_eq!(r["ticket"]["product"], "VIP");
    gate.stop().await;
}

#[test]
fn a_lists_file_for_another_event_stops_the_gate_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = festival();
    file["event"] = json!("OTHER-2026");
    let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
    let mut config = gatemesh_node::Config::new(
        dir.path().to_owned(),
        EventId::new(EVENT).unwrap(),
        "North 1".into(),
    );
    config.check_in = Some(lists.for_gate(&[]).unwrap().into());
    let err = gatemesh_node::Node::start(config).unwrap_err();
    assert!(err.to_string().contains("for event OTHER-2026"), "{err}");
    assert!(!dir.path().join("ledger.sqlite").exists());
}

/// Waits until the wall clock has passed `at_ms`.
async fn until(at_ms: i64) {
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        if now > at_ms {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(
            (at_ms - now).clamp(1, 500) as u64,
        ))
        .await;
    }
}

/// The next minute boundary at least 5 s away (ms since 1970), and its time of day in UTC
/// as a lists file writes one (`HH:MM`): a day boundary or a closing time a test can wait
/// for.
fn next_minute() -> (i64, String) {
    const MINUTE: i64 = 60_000;
    let now_ms = now_s() * 1000 + 1000;
    let mut at = (now_ms / MINUTE + 1) * MINUTE;
    if at - now_ms < 5_000 {
        at += MINUTE;
    }
    let hhmm = format!("{:02}:{:02}", (at / 3_600_000) % 24, (at / MINUTE) % 60);
    (at, hhmm)
}

#[tokio::test]
async fn a_three_day_pass_is_admitted_once_per_event_day() {
    // The event's days start at the next minute (UTC): the first scans fall on one event day,
    // those after that minute on the next. The gate's own clock decides, as at a festival.
    let (boundary, hhmm) = next_minute();
    let file = json!({
        "event": EVENT, "time_zone": "UTC", "day_starts": hhmm,
        "default_product": "GA",
        "products": [
            {"code": "GA", "number": 1}, {"code": "3DAY", "number": 3}, {"code": "CAMP", "number": 7}
        ],
        "lists": [
            {"id": "main", "name": "Main entrance", "products": ["3DAY"], "once_per_day": true},
            {"id": "camp", "name": "Campsite", "products": ["CAMP"], "once_per_day": true,
             "entry": "reentry"}
        ]
    });
    let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "Main 1", &issuer, |c| {
        c.check_in = Some(lists.for_gate(&[]).unwrap().into());
    })
    .await;
    let (tid, code) = issuer.product_ticket(Some("3"), Format::Gm1);
    let first = gate.scan(&code, "s1").await;
    assert_eq!(verdict(&first), ("admit", "valid"), "{first}");
    // The same day, at another lane: yellow, naming the first admission.
    let again = gate.scan(&code, "s2").await;
    assert_eq!(
        verdict(&again),
        ("duplicate", "already_admitted"),
        "{again}"
    );
    assert_eq!(again["first"]["redemption_id"], first["redemption_id"]);
    assert_eq!(again["first"]["gate"], "Main 1");
    // A camper comes in before the day's boundary.
    let (_, camper) = issuer.product_ticket(Some("7"), Format::Gm1);
    let came = gate.scan(&camper, "s1").await;
    assert_eq!(verdict(&came), ("admit", "valid"), "{came}");
    let day_one = came["occupancy"]["scope"].clone();

    // The next event day: green again, once.
    until(boundary).await;
    // The camper leaves after the boundary: the exit counts on the day they came in.
    let left = gate.scan_dir(&camper, "s1", "exit").await;
    assert_eq!(verdict(&left), ("admit", "exit"), "{left}");
    assert_eq!(left["occupancy"]["scope"], day_one);
    assert_eq!(left["occupancy"]["inside"], 0);
    let next_day = gate.scan(&code, "s2").await;
    assert_eq!(verdict(&next_day), ("admit", "valid"), "{next_day}");
    assert_ne!(next_day["redemption_id"], first["redemption_id"]);
    let again = gate.scan(&code, "s1").await;
    assert_eq!(
        verdict(&again),
        ("duplicate", "already_admitted"),
        "{again}"
    );
    assert_eq!(again["first"]["redemption_id"], next_day["redemption_id"]);
    assert_eq!(redemptions(&gate, &tid).await, 2);
    // Both entries are in the ticket's history, neither flagged: they are no copies.
    let (_, t) = gate.get(&format!("/v1/tickets/{tid}")).await;
    assert_eq!(t["flagged"], json!(false), "{t}");
    gate.stop().await;
}

#[tokio::test]
async fn a_ticket_counts_once_on_each_list_that_admits_it() {
    // A VIP ticket enters the grounds through main (all products, once) and the VIP area
    // through its own door (once): each list counts its own entry.
    let mut file = festival();
    file["lists"][0] = json!({"id": "main", "name": "Main entrance", "all_products": true});
    let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
    let (dir_main, dir_vip) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let issuer = Issuer::new();
    let main = Gate::start_with(dir_main.path(), "Main 1", &issuer, |c| {
        c.check_in = Some(
            lists
                .for_gate(&[ListId::parse("main").unwrap()])
                .unwrap()
                .into(),
        );
    })
    .await;
    let vip = Gate::start_with(dir_vip.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(
            lists
                .for_gate(&[ListId::parse("vip").unwrap()])
                .unwrap()
                .into(),
        );
    })
    .await;
    let (_, code) = issuer.product_ticket(Some("VIP"), Format::Jwt);
    let at_main = main.scan(&code, "m1").await;
    assert_eq!(verdict(&at_main), ("admit", "valid"), "{at_main}");
    assert_eq!(at_main["list"], "main");
    // The main gate's ledger reaches the VIP door (as the mesh would carry it).
    let mut file = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    file.extend(main.node.export_ledger().await.unwrap());
    let r = vip
        .client
        .post(format!("{}/v1/import", vip.base))
        .header("content-type", "application/octet-stream")
        .body(file)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let at_vip = vip.scan(&code, "v1").await;
    assert_eq!(verdict(&at_vip), ("admit", "valid"), "{at_vip}");
    assert_eq!(at_vip["list"], "vip");
    let again = vip.scan(&code, "v2").await;
    assert_eq!(
        verdict(&again),
        ("duplicate", "already_admitted"),
        "{again}"
    );
    assert_eq!(again["first"]["gate"], "VIP door");
    main.stop().await;
    vip.stop().await;
}

#[tokio::test]
async fn who_is_inside_counts_entries_minus_exits_and_warns_near_capacity() {
    let mut file = festival();
    file["lists"][3] = json!({
        "id": "vip", "name": "VIP area", "products": ["VIP"], "entry": "reentry", "capacity": 10
    });
    let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(
            lists
                .for_gate(&[ListId::parse("vip").unwrap()])
                .unwrap()
                .into(),
        );
    })
    .await;
    let codes: Vec<String> = (0..10)
        .map(|_| issuer.product_ticket(Some("VIP"), Format::Jwt).1)
        .collect();
    for (i, code) in codes.iter().enumerate() {
        let r = gate.scan(code, "v1").await;
        assert_eq!(verdict(&r), ("admit", "valid"), "{r}");
        let inside = i + 1;
        let level = match inside {
            10 => "full",
            9 => "near",
            _ => "ok",
        };
        assert_eq!(
            (
                r["occupancy"]["inside"].as_u64(),
                r["occupancy"]["level"].as_str()
            ),
            (Some(inside as u64), Some(level)),
            "{r}"
        );
        assert_eq!(r["occupancy"]["capacity"], 10);
    }
    // Full is a warning, not a refusal: staff decide. One holder leaves, one comes back.
    let out = gate.scan_dir(&codes[0], "v1", "exit").await;
    assert_eq!(verdict(&out), ("admit", "exit"), "{out}");
    assert_eq!(out["occupancy"]["inside"], 9);
    let (_, status) = gate.get("/v1/status").await;
    assert_eq!(
        status["lists"],
        json!([{"list": "vip", "name": "VIP area", "scope": "vip", "inside": 9,
                "capacity": 10, "level": "near"}])
    );
    let back = gate.scan(&codes[0], "v2").await;
    assert_eq!(verdict(&back), ("admit", "reentry"), "{back}");
    assert_eq!(back["occupancy"]["level"], "full");
    // A duplicate changes nothing inside.
    let again = gate.scan(&codes[1], "v2").await;
    assert_eq!(verdict(&again), ("duplicate", "already_admitted"));
    assert_eq!(again["occupancy"]["inside"], 10);
    gate.stop().await;
}

#[tokio::test]
async fn refused_scans_are_counted_by_reason() {
    // What a manager reads from each gate (its status, and its heartbeat to the server):
    // which refusals it answered, so forged or wrong tickets being tried show where.
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(gate_lists(&["vip"]).into());
    })
    .await;
    for _ in 0..2 {
        let (_, ga) = issuer.product_ticket(Some("GA"), Format::Jwt);
        assert_eq!(
            verdict(&gate.scan(&ga, "v1").await),
            ("reject", "not_on_list")
        );
    }
    let unreadable = gate.scan("not a ticket", "v1").await;
    assert_eq!(verdict(&unreadable).0, "reject");
    let (_, vip) = issuer.product_ticket(Some("VIP"), Format::Jwt);
    assert_eq!(verdict(&gate.scan(&vip, "v1").await).0, "admit");
    // The last scan before the restart a refusal: counted with no record to ride along with.
    let (_, ga) = issuer.product_ticket(Some("GA"), Format::Jwt);
    assert_eq!(verdict(&gate.scan(&ga, "v1").await).1, "not_on_list");
    let mut expected = serde_json::Map::new();
    expected.insert("not_on_list".into(), json!(3));
    expected.insert(unreadable["reason"].as_str().unwrap().into(), json!(1));
    let expected = Value::Object(expected);
    let (_, status) = gate.get("/v1/status").await;
    assert_eq!(status["refusals"], expected, "{status}");
    assert_eq!(status["counts"]["reject"], 4);
    gate.stop().await;

    // A restart (a laptop's lid closed, a crash) does not reset what a manager reads.
    let gate = Gate::start_with(dir.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(gate_lists(&["vip"]).into());
    })
    .await;
    let (_, status) = gate.get("/v1/status").await;
    assert_eq!(status["refusals"], expected, "{status}");
    assert_eq!(
        (&status["counts"]["reject"], &status["counts"]["admit"]),
        (&json!(4), &json!(1)),
        "{status}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn everyone_counts_as_out_at_the_lists_exit_time_and_may_come_back() {
    // The VIP area closes at the next minute (UTC) and did not scan its guests out: from
    // then on they count as out, and on this re-entry list they may come in again.
    let (closing, hhmm) = next_minute();
    let file = json!({
        "event": EVENT, "time_zone": "UTC", "default_product": "GA",
        "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
        "lists": [{"id": "vip", "name": "VIP area", "products": ["VIP"], "entry": "reentry",
                   "capacity": 100, "exit_all_at": hhmm}]
    });
    let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new();
    let gate = Gate::start_with(dir.path(), "VIP door", &issuer, |c| {
        c.check_in = Some(lists.for_gate(&[]).unwrap().into());
    })
    .await;
    let (_, first) = issuer.product_ticket(Some("VIP"), Format::Jwt);
    let (_, second) = issuer.product_ticket(Some("VIP"), Format::Jwt);
    for code in [&first, &second] {
        assert_eq!(verdict(&gate.scan(code, "v1").await), ("admit", "valid"));
    }
    let again = gate.scan(&first, "v2").await;
    assert_eq!(
        verdict(&again),
        ("duplicate", "already_admitted"),
        "still inside"
    );
    let inside = |status: &Value| status["lists"][0]["inside"].clone();
    assert_eq!(inside(&gate.get("/v1/status").await.1), 2);

    until(closing).await;
    assert_eq!(
        inside(&gate.get("/v1/status").await.1),
        0,
        "everyone is out"
    );
    let back = gate.scan(&first, "v2").await;
    assert_eq!(verdict(&back).0, "admit", "{back}");
    assert_eq!(back["occupancy"]["inside"], 1);
    gate.stop().await;
}

/// The event's lists as the test server releases them: `main` for everyone, `vip` for
/// `vip_products`.
fn released(eid: &str, vip_products: &[&str]) -> Value {
    json!({
        "event": eid, "time_zone": ZONE, "default_product": "GA",
        "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
        "lists": [
            {"id": "main", "name": "Main entrance", "all_products": true},
            {"id": "vip", "name": "VIP area", "products": vip_products},
        ],
    })
}

async fn release(central: &super::contract::Central, eid: &str, file: &Value) -> Value {
    let r = central
        .client()
        .put(format!("{}/v1/events/{eid}/lists", central.base))
        .bearer_auth(super::contract::TOKEN)
        .json(file)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The release a gate checks in with, if it checks with one.
fn version(node: &gatemesh_node::Node) -> Option<u64> {
    match node.check_in()?.source {
        gatemesh_node::ListsSource::Release { version, .. } => Some(version),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_at_the_server_reaches_a_gate_and_its_uplinkless_peer_by_the_next_scan() {
    use gatemesh_ledger::{Direction, Verdict};
    use gatemesh_mesh::session::MeshConfig;
    let eid = "LISTS-2026";
    let central = super::contract::Central::start().await;
    central.event(eid, 1).await;
    let ticket = async |product: &str| -> String {
        let issued = central
            .post(
                &format!("/v1/events/{eid}/tickets"),
                json!({ "count": 1, "format": "jwt", "product": product }),
            )
            .await;
        issued["tickets"][0]["code"].as_str().unwrap().to_owned()
    };
    let vip_list = vec![ListId::parse("vip").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let start = |name: &str, check_in: gatemesh_node::CheckIn, peers: Vec<std::net::SocketAddr>| {
        let data = dir.path().join(name);
        let mut config =
            gatemesh_node::Config::new(data.clone(), EventId::new(eid).unwrap(), name.into());
        config.keyring = central.keyring();
        config.identity = Some(super::identity(eid, &data, name));
        config.check_in = Some(check_in);
        let node = gatemesh_node::Node::start(config).unwrap();
        let addr = node
            .start_mesh(MeshConfig {
                identity: super::identity(eid, &data, name),
                bind: "127.0.0.1:0".parse().unwrap(),
                static_peers: peers,
                discovery: None,
                exchange_peers: false,
            })
            .unwrap();
        (node, addr)
    };
    // The VIP door with an uplink, started with a lists file in which VIP is VIP only; the
    // backstage gate has no uplink and no file: it meets the VIP door only, and refuses
    // everyone until the server's lists reach it.
    let file = Lists::from_json(released(eid, &["VIP"]).to_string().as_bytes()).unwrap();
    let (door, door_addr) = start(
        "vip-door",
        gatemesh_node::CheckIn {
            lists: vip_list.clone(),
            file: Some(file),
        },
        Vec::new(),
    );
    let (back, _) = start(
        "back",
        gatemesh_node::CheckIn {
            lists: vip_list.clone(),
            file: None,
        },
        vec![door_addr],
    );
    assert_eq!(
        door.check_in().unwrap().source,
        gatemesh_node::ListsSource::File
    );
    assert_eq!(
        back.check_in().unwrap().source,
        gatemesh_node::ListsSource::Awaiting
    );
    let (ga, vip) = (ticket("GA").await, ticket("VIP").await);
    let waiting = back.scan(&vip, "b1", Direction::Entry).await.unwrap();
    assert_eq!(
        (waiting.verdict, waiting.reason),
        (Verdict::Reject, gatemesh_ledger::Reason::NotOnList)
    );

    // Version 1: the door takes it from its uplink, the backstage gate from the door.
    release(&central, eid, &released(eid, &["VIP"])).await;
    let code = central
        .post(
            &format!("/v1/events/{eid}/devices"),
            json!({ "name": "vip-door" }),
        )
        .await;
    let link = gatemesh_wire::PairingLink::parse(code["link"].as_str().unwrap()).unwrap();
    let pairing = gatemesh_node::pairing::pair(&link).await.unwrap();
    door.start_uplink(gatemesh_node::UplinkConfig {
        server: central.base.clone(),
        token: pairing.gate_file().token,
        fingerprint: Some(central.pin),
        peer_grace: gatemesh_node::PEER_GRACE,
    })
    .unwrap();
    for node in [&door, &back] {
        super::contract::until("version 1 reaches both gates", async || {
            version(node) == Some(1)
        })
        .await;
    }
    for (node, lane) in [(&door, "d1"), (&back, "b1")] {
        let refused = node.scan(&ga, lane, Direction::Entry).await.unwrap();
        assert_eq!(
            (refused.verdict, refused.reason),
            (Verdict::Reject, gatemesh_ledger::Reason::NotOnList),
            "GA at {lane}"
        );
    }
    let admitted = back.scan(&vip, "b1", Direction::Entry).await.unwrap();
    assert_eq!(admitted.verdict, Verdict::Admit);

    // Version 2 lets GA into the VIP area: it counts at both from their next scan.
    let v2 = release(&central, eid, &released(eid, &["VIP", "GA"])).await;
    assert_eq!(v2["version"], 2);
    for node in [&door, &back] {
        super::contract::until("version 2 reaches both gates", async || {
            version(node) == Some(2)
        })
        .await;
    }
    let admitted = back.scan(&ga, "b1", Direction::Entry).await.unwrap();
    assert_eq!(admitted.verdict, Verdict::Admit);
    super::contract::until("the door holds both admissions", async || {
        door.snapshot().await.unwrap().redemptions == 2
    })
    .await;
    let again = door.scan(&ga, "d1", Direction::Entry).await.unwrap();
    assert_eq!(again.verdict, Verdict::Duplicate);
    assert_eq!(again.first.unwrap().gate, "back");
    door.shutdown().await;
    back.shutdown().await;
}
