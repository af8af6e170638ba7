use gatemesh_ticket::{Product, ProductNumber};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::time::parse_ms;

const HOUR: i64 = 3_600_000;

fn festival() -> Value {
    json!({
        "event": "FEST-2026",
        "time_zone": "Europe/Berlin",
        "day_starts": "05:00",
        "default_product": "GA",
        "products": [
            {"code": "GA", "number": 1},
            {"code": "VIP", "number": 2, "name": "VIP"},
            {"code": "3DAY", "number": 3, "name": "3-day pass"},
            {"code": "FRI", "number": 4, "name": "Friday"},
            {"code": "CREW"}
        ],
        "lists": [
            {"id": "main", "name": "Main entrance", "products": ["GA", "3DAY", "VIP"],
             "once_per_day": true, "capacity": 5000},
            {"id": "friday", "name": "Friday", "products": ["FRI"],
             "windows": [{"from": "2026-07-03T03:00:00Z", "until": "2026-07-04T03:00:00Z"}]},
            {"id": "vip", "name": "VIP area", "products": ["VIP"], "entry": "reentry"},
            {"id": "backstage", "name": "Backstage", "products": ["CREW"]},
            {"id": "all", "name": "Everyone", "all_products": true,
             "windows": [{"until": "2026-07-01T00:00:00Z"}, {"from": "2026-07-02T00:00:00Z"}]}
        ]
    })
}

fn lists(v: &Value) -> Result<Lists, ListsError> {
    Lists::from_json(v.to_string().as_bytes())
}

fn gate(ids: &[&str]) -> GateLists {
    let ids: Vec<ListId> = ids.iter().map(|i| ListId::parse(i).unwrap()).collect();
    lists(&festival()).unwrap().for_gate(&ids).unwrap()
}

fn product(p: &str) -> Product {
    Product::parse(p).unwrap()
}

fn at(s: &str) -> i64 {
    parse_ms(s).unwrap()
}

#[test]
fn the_vip_door_takes_vip_and_backstage_and_nothing_else() {
    let door = gate(&["vip", "backstage"]);
    let now = at("2026-07-03T18:00:00Z");
    let vip = door.check(Some(&product("VIP")), now).unwrap();
    assert_eq!((vip.list.as_str(), vip.entry), ("vip", Entry::Reentry));
    assert_eq!(vip.scope().to_string(), "vip");
    let crew = door.check(Some(&product("CREW")), now).unwrap();
    assert_eq!(crew.list.as_str(), "backstage");
    // GM1 tickets carry the number: VIP is 2.
    let by_number = door.check(Some(&Product::Number(ProductNumber::new(2).unwrap())), now);
    assert_eq!(by_number.unwrap().list.as_str(), "vip");
    for refused in [
        Some(product("GA")),
        None,
        Some(product("NOPE")),
        Some(product("99")),
    ] {
        let err = door.check(refused.as_ref(), now).unwrap_err();
        assert_eq!(err.reason(), Reason::NotOnList, "{refused:?}: {err}");
    }
    let err = door.check(None, now).unwrap_err();
    assert_eq!(
        err.to_string(),
        "product GA is not on this gate's lists (vip, backstage)"
    );
}

#[test]
fn a_friday_ticket_is_valid_on_friday_only() {
    let door = gate(&["main", "friday"]);
    let fri = product("FRI");
    // Friday 23:59 and Saturday 04:59 in Berlin are Friday's; Saturday 05:00 is not.
    for ok in [
        "2026-07-03T03:00:00Z",
        "2026-07-03T21:59:00Z",
        "2026-07-04T02:59:59.999Z",
    ] {
        let a = door.check(Some(&fri), at(ok)).unwrap();
        assert_eq!(a.scope().to_string(), "friday/w0", "{ok}");
    }
    for (late, reason) in [
        (
            "2026-07-04T03:00:00Z",
            "no longer (its last window ended 2026-07-04T03:00:00Z)",
        ),
        ("2026-07-02T12:00:00Z", "only from 2026-07-03T03:00:00Z"),
    ] {
        let err = door.check(Some(&fri), at(late)).unwrap_err();
        assert_eq!(err.reason(), Reason::NotValidNow, "{late}");
        assert_eq!(
            err.to_string(),
            format!("list friday admits this ticket {reason}")
        );
    }
    // Saturday at the main entrance: a Friday ticket is still not on that list.
    let main = gate(&["main"]);
    let err = main
        .check(Some(&fri), at("2026-07-04T12:00:00Z"))
        .unwrap_err();
    assert_eq!(err.reason(), Reason::NotOnList);
}

#[test]
fn everyone_is_out_from_the_lists_exit_time_of_the_day() {
    let mut file = festival();
    file["lists"][0]["exit_all_at"] = json!("23:00");
    let read = lists(&file).unwrap();
    let main = read.for_gate(&[ListId::parse("main").unwrap()]).unwrap();
    let ga = product("GA");
    let out = |t: &str| main.check(Some(&ga), at(t)).unwrap().everyone_out_ms;
    // 00:30 in Berlin (summer, UTC+2): the 23:00 just gone; 22:00: the day before's.
    assert_eq!(
        out("2026-07-03T22:30:00Z"),
        Some(at("2026-07-03T21:00:00Z"))
    );
    assert_eq!(
        out("2026-07-03T20:00:00Z"),
        Some(at("2026-07-02T21:00:00Z"))
    );
    assert_eq!(
        out("2026-07-03T21:00:00Z"),
        Some(at("2026-07-03T21:00:00Z"))
    );
    // A list without one, and a time that is no time of day.
    let vip = read.for_gate(&[ListId::parse("vip").unwrap()]).unwrap();
    assert_eq!(
        vip.check(Some(&product("VIP")), at("2026-07-03T22:30:00Z"))
            .unwrap()
            .everyone_out_ms,
        None
    );
    for bad in ["24:00", "7:00", "23h", ""] {
        file["lists"][0]["exit_all_at"] = json!(bad);
        assert!(
            matches!(lists(&file), Err(ListsError::ExitAllAt(..))),
            "{bad}"
        );
    }
}

#[test]
fn scopes_that_do_not_read() {
    for bad in [
        "",
        "/",
        "vip/",
        "vip/w",
        "vip/w01",
        "vip/w1000",
        "vip/wx",
        "vip/2026-7-03",
        "vip/2026-02-30",
        "vip/2026-07-03/x",
        "v ip",
        "vip/W0",
        "vip//w0",
    ] {
        assert_eq!(Scope::parse(bad), None, "{bad:?}");
    }
    assert_eq!(
        Scope::parse("vip/w999").unwrap().window,
        WindowKey::Window(999)
    );
}

#[test]
fn a_three_day_pass_counts_once_per_event_day() {
    let main = gate(&["main"]);
    let pass = product("3DAY");
    let scope = |t: &str| main.check(Some(&pass), at(t)).unwrap().scope().to_string();
    assert_eq!(scope("2026-07-03T10:00:00Z"), "main/2026-07-03");
    // 02:00 on Saturday in Berlin still belongs to Friday's day (05:00 boundary).
    assert_eq!(scope("2026-07-04T00:00:00Z"), "main/2026-07-03");
    assert_eq!(scope("2026-07-04T03:00:00Z"), "main/2026-07-04");
    // A ticket without a product is the default product, GA, which main admits.
    assert_eq!(
        main.check(None, at("2026-07-04T03:00:00Z"))
            .unwrap()
            .product
            .unwrap()
            .as_str(),
        "GA"
    );
}

#[test]
fn a_list_of_all_products_takes_any_ticket_in_its_windows() {
    let all = gate(&["all"]);
    for p in [None, Some(product("ZZZ")), Some(product("200"))] {
        assert_eq!(
            all.check(p.as_ref(), at("2026-06-30T00:00:00Z"))
                .unwrap()
                .window,
            WindowKey::Window(0)
        );
        assert_eq!(
            all.check(p.as_ref(), at("2026-07-05T00:00:00Z"))
                .unwrap()
                .window,
            WindowKey::Window(1)
        );
        let err = all
            .check(p.as_ref(), at("2026-07-01T12:00:00Z"))
            .unwrap_err();
        assert_eq!(
            err,
            ListRefusal::NotValidNow {
                list: ListId::parse("all").unwrap(),
                next_ms: Some(at("2026-07-02T00:00:00Z")),
                ended_ms: None,
            }
        );
    }
}

#[test]
fn a_gate_choosing_no_list_takes_all_and_an_unknown_list_is_refused() {
    let l = lists(&festival()).unwrap();
    assert_eq!(l.for_gate(&[]).unwrap().chosen().count(), 5);
    let err = l.for_gate(&[ListId::parse("vipp").unwrap()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there is no list vipp (the file has main, friday, vip, backstage, all)"
    );
    assert!(l.check_event(&"FEST-2026".parse().unwrap()).is_ok());
    assert!(matches!(
        l.check_event(&"OTHER".parse().unwrap()),
        Err(ListsError::WrongEvent { .. })
    ));
    assert_eq!(l.number_of(&"VIP".parse().unwrap()).unwrap().get(), 2);
    assert_eq!(
        l.number_of(&"CREW".parse().unwrap()),
        Err(ListsError::NoNumber("CREW".parse().unwrap()))
    );
}

/// Every rule of the file, broken once: each is refused with the error that names it.
#[test]
fn a_bad_file_says_what_is_wrong() {
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, &str)> = vec![
        (
            |v| v["time_zone"] = json!("Mars/Olympus"),
            "time_zone \"Mars/Olympus\"",
        ),
        (|v| v["day_starts"] = json!("5:00"), "day_starts must be"),
        (|v| v["day_starts"] = json!("24:00"), "day_starts must be"),
        (|v| v["lists"] = json!([]), "the file has no lists"),
        (
            |v| v["lists"][1]["id"] = json!("main"),
            "list main is given twice",
        ),
        (
            |v| v["products"][1]["code"] = json!("GA"),
            "product GA is declared twice",
        ),
        (
            |v| v["products"][1]["number"] = json!(1),
            "product number 1 is given to two",
        ),
        (
            |v| v["products"][1]["number"] = json!(0),
            "product number must be 1-255",
        ),
        (
            |v| v["default_product"] = json!("XX"),
            "default_product names product XX",
        ),
        (
            |v| v["lists"][2]["products"] = json!(["VIP", "ZZ"]),
            "list vip names product ZZ",
        ),
        (
            |v| v["lists"][2]["products"] = json!([]),
            "list vip must name its products",
        ),
        (
            |v| v["lists"][2]["products"] = json!(["VIP", "VIP"]),
            "list vip must name",
        ),
        (
            |v| v["lists"][4]["products"] = json!(["GA"]),
            "list all must name its products",
        ),
        (
            |v| v["lists"][1]["windows"][0]["until"] = json!("2026-07-03T03:00:00Z"),
            "list friday, window 0: until must be after from",
        ),
        (
            |v| v["lists"][4]["windows"][1]["from"] = json!("2026-06-30T00:00:00Z"),
            "list all, window 1: it overlaps",
        ),
        (
            |v| v["lists"][0]["capacity"] = json!(0),
            "list main: a capacity is at least 1",
        ),
        (
            |v| v["lists"][0]["capacity"] = json!(-1),
            "not a lists file",
        ),
        (
            |v| v["lists"][0]["entry"] = json!("twice"),
            "not a lists file",
        ),
        (
            |v| v["lists"][0]["colour"] = json!("red"),
            "unknown field `colour`",
        ),
        (|v| v["lists"][0]["id"] = json!("a b"), "list id"),
        (
            |v| v["products"][0]["code"] = json!("G A"),
            "product code must be",
        ),
        (
            |v| v["lists"][1]["windows"][0]["from"] = json!("Friday"),
            "RFC 3339",
        ),
        (|v| v["event"] = json!("no spaces"), "event id"),
        (
            |v| {
                v.as_object_mut().unwrap().remove("time_zone");
            },
            "missing field `time_zone`",
        ),
    ];
    for (edit, expect) in cases {
        let mut v = festival();
        edit(&mut v);
        let err = lists(&v).expect_err(expect).to_string();
        assert!(err.contains(expect), "expected {expect:?}, got {err:?}");
    }
    assert!(Lists::from_json(b"not json").is_err());
    assert!(Lists::from_json(b"").is_err());
}

#[test]
fn days_across_the_clock_changes_in_berlin() {
    let days = EventDays::new("Europe/Berlin", "05:00").unwrap();
    let date = |s: &str| s.parse::<civil::Date>().unwrap();
    let len = |d: &str| {
        let d = date(d);
        days.start_ms(d.tomorrow().unwrap()).unwrap() - days.start_ms(d).unwrap()
    };
    assert_eq!(len("2026-03-28"), 23 * HOUR); // clocks go forward on the 29th at 02:00
    assert_eq!(len("2026-03-29"), 24 * HOUR);
    assert_eq!(len("2026-10-24"), 25 * HOUR); // and back on the 25th at 03:00
    // A boundary inside the gap (02:30 on the 29th of March does not exist): the day starts
    // at 03:30, and 03:10 belongs to the day before.
    let gap = EventDays::new("Europe/Berlin", "02:30").unwrap();
    assert_eq!(
        gap.start_ms(date("2026-03-29")),
        Some(at("2026-03-29T01:30:00Z"))
    );
    assert_eq!(
        gap.day_of(at("2026-03-29T01:10:00Z")),
        Some(date("2026-03-28"))
    );
    // A boundary inside the fold (02:30 happens twice on the 25th of October): the first.
    assert_eq!(
        gap.start_ms(date("2026-10-25")),
        Some(at("2026-10-25T00:30:00Z"))
    );
    // The second 02:10 (01:10Z) reads as before the boundary but is after its first one.
    assert_eq!(
        gap.day_of(at("2026-10-25T01:10:00Z")),
        Some(date("2026-10-25"))
    );
}

const ZONES: &[&str] = &[
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe", // half-hour DST
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Pacific/Apia", // skipped a whole day (2011-12-30)
    "UTC",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every instant is in exactly one event day, which starts at or before it and ends
    /// (where the next starts) after it, whatever the zone, its clock changes and the boundary.
    #[test]
    fn every_instant_falls_in_the_day_that_holds_it(
        zone in proptest::sample::select(ZONES),
        h in 0i8..24,
        m in proptest::sample::select(&[0i8, 15, 30, 45, 59][..]),
        t in -2_000_000_000_000i64..4_000_000_000_000,
    ) {
        let days = EventDays::new(zone, &format!("{h:02}:{m:02}")).unwrap();
        let day = days.day_of(t).unwrap();
        let start = days.start_ms(day).unwrap();
        let next = days.start_ms(day.tomorrow().unwrap()).unwrap();
        prop_assert!(start <= t && t < next, "{zone} {h}:{m} {t}: {day} is {start}..{next}");
        // A day lasts 23-25 hours, or 48 where a zone skipped a date.
        prop_assert!((22 * HOUR..=49 * HOUR).contains(&(next - start)), "{day}: {}", next - start);
        prop_assert_eq!(days.day_of(start), Some(day));
        prop_assert_eq!(days.day_of(next - 1), Some(day));
        prop_assert_ne!(days.day_of(next), Some(day));
    }

    /// The same, where it is hard: a day boundary within 90 minutes of a clock change's
    /// local time (so in its gap or its fold), and an instant within 3 hours of the change.
    #[test]
    fn days_hold_at_boundaries_in_gaps_and_folds(
        zone in proptest::sample::select(&ZONES[..5]),
        from in 1_600_000_000_000i64..1_900_000_000_000,
        nth in 0usize..4,
        shift in -90i32..90,
        dt in -3 * HOUR..3 * HOUR,
    ) {
        let tz = tzdb().get(zone).unwrap();
        let start = jiff::Timestamp::from_millisecond(from).unwrap();
        let Some(change) = tz.following(start).nth(nth) else { return Ok(()) };
        let at_change = change.timestamp().as_millisecond();
        let local = tz.to_datetime(change.timestamp()).time();
        let minutes = (i32::from(local.hour()) * 60 + i32::from(local.minute()) + shift)
            .rem_euclid(24 * 60);
        let boundary = format!("{:02}:{:02}", minutes / 60, minutes % 60);
        let days = EventDays::new(zone, &boundary).unwrap();
        let t = at_change + dt;
        let day = days.day_of(t).unwrap();
        let begin = days.start_ms(day).unwrap();
        let next = days.start_ms(day.tomorrow().unwrap()).unwrap();
        prop_assert!(begin <= t && t < next, "{zone} {boundary} {t}: {day} is {begin}..{next}");
    }

    /// Around each clock change of a year, one instant a minute: days never go back and
    /// never skip forward by more than one.
    #[test]
    fn days_advance_one_at_a_time(
        zone in proptest::sample::select(ZONES),
        h in 0i8..24,
        from in 1_700_000_000_000i64..1_800_000_000_000,
    ) {
        let days = EventDays::new(zone, &format!("{h:02}:30")).unwrap();
        let mut last = days.day_of(from).unwrap();
        for i in 1..(3 * 24 * 60) {
            let d = days.day_of(from + i * 60_000).unwrap();
            prop_assert!(d == last || Some(d) == last.tomorrow().ok(), "{last} then {d}");
            last = d;
        }
    }

    /// A scope reads back from its key, and only a scope's key reads: one scope, one key.
    #[test]
    fn a_scope_is_its_key_and_nothing_else_reads(
        list in "[A-Za-z0-9._-]{1,64}",
        window in prop_oneof![
            Just(WindowKey::Always),
            (0..MAX_WINDOWS).prop_map(WindowKey::Window),
            (1900i16..2200, 1i8..13, 1i8..29).prop_map(|(y, m, d)| {
                WindowKey::Day(civil::date(y, m, d).to_string())
            }),
        ],
        other in "\\PC{0,80}",
    ) {
        let scope = Scope { list: ListId::parse(&list).unwrap(), window };
        let key = scope.to_string();
        prop_assert_eq!(Scope::parse(&key), Some(scope.clone()));
        let json = serde_json::to_string(&scope).unwrap();
        prop_assert_eq!(serde_json::from_str::<Scope>(&json).unwrap(), scope);
        if let Some(read) = Scope::parse(&other) {
            prop_assert_eq!(read.to_string(), other);
        }
    }

    #[test]
    fn arbitrary_files_never_panic(bytes: Vec<u8>) {
        let _ = Lists::from_json(&bytes);
    }
}
