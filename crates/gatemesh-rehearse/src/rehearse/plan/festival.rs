//! The festival: three days, played one after the other in the rehearsal's time, with the
//! check-in lists the server releases. 3-day passes come in once a day at the main gates, day
//! tickets on their day only, VIP passes also at the VIP area's door; some holders come on the
//! wrong day or try the VIP door with a ticket it does not take, and the organizer changes the
//! lists at the start of the second day, while one gate's uplink is down.
//!
//! A day of the rehearsal is a window of the lists (`pass/w1`: the second day), so that days
//! pass in minutes; the calendar day (`once_per_day`) is the namespace tests' business.

use rand::{RngExt, SeedableRng, rngs::ChaCha8Rng, seq::SliceRandom};
use serde::Serialize;
use serde_json::{Value, json};

use super::{ACROSS_PARTITION, Faults, Plan, Step, What, Who, arrival, other, pick, present};

/// The festival's days.
pub const DAYS: usize = 3;
/// Holders arrive from this share of a day until that one; the rest is the night, so that a
/// scan delayed in a queue or by a restarting gate still falls on its day.
const OPEN: f64 = 0.02;
const CLOSE: f64 = 0.70;
/// A 3-day pass holder comes on each day with this chance (and on one day at least).
const COMES_EACH_DAY: f64 = 0.8;
/// Of VIP holders who come on a day, those who go on to the VIP area.
const TO_THE_VIP_AREA: f64 = 0.9;
/// Day ticket holders who also come on another day than theirs.
const WRONG_DAY: f64 = 0.04;
/// Holders of another ticket than VIP who try the VIP area's door.
const WRONG_DOOR: f64 = 0.02;
const REFUNDED: f64 = 0.02;
const SHARED: f64 = 0.03;

/// One of the festival's products.
struct Product {
    code: &'static str,
    /// What a GM1 ticket of it carries.
    number: u8,
    name: &'static str,
    /// Its share of the tickets.
    share: f64,
    /// A day ticket's day; `None`: every day.
    day: Option<usize>,
}

const PASS: usize = 0;
const VIP: usize = 1;
const PRODUCTS: [Product; 5] = [
    Product {
        code: "PASS",
        number: 1,
        name: "3-day pass",
        share: 0.45,
        day: None,
    },
    Product {
        code: "VIP",
        number: 2,
        name: "VIP 3-day pass",
        share: 0.10,
        day: None,
    },
    Product {
        code: "FRI",
        number: 3,
        name: "Friday",
        share: 0.15,
        day: Some(0),
    },
    Product {
        code: "SAT",
        number: 4,
        name: "Saturday",
        share: 0.15,
        day: Some(1),
    },
    Product {
        code: "SUN",
        number: 5,
        name: "Sunday",
        share: 0.15,
        day: Some(2),
    },
];

/// The lists of a main gate, in the order it checks them, and of the VIP area's door.
const MAIN_LISTS: [&str; 4] = ["pass", "fri", "sat", "sun"];
const VIP_LISTS: [&str; 1] = ["vip"];

/// How many tickets of one product are issued (tickets are issued product by product, in
/// this order).
#[derive(Debug, Clone, Serialize)]
pub struct Issued {
    pub code: &'static str,
    /// What its GM1 codes carry.
    pub number: u8,
    pub count: usize,
}

/// The festival's shape, for the rehearsal to set it up and the report to tell it.
#[derive(Debug, Clone, Serialize)]
pub struct Festival {
    pub days: usize,
    /// Event seconds in a day.
    pub day_s: f64,
    /// The gate at the VIP area's door (the last one); the others are main gates.
    pub vip_door: usize,
    /// When the organizer releases the lists' second version (event seconds).
    pub lists_changed_at: f64,
    pub issued: Vec<Issued>,
    /// VIP passes issued (the VIP area's capacity is set from it).
    vip: usize,
}

impl Festival {
    /// The lists gate `gate` checks in with (`gatemesh gate --list …`).
    pub fn lists_of(&self, gate: usize) -> &'static [&'static str] {
        if gate == self.vip_door {
            &VIP_LISTS
        } else {
            &MAIN_LISTS
        }
    }

    /// Version `version` of the event's lists file, its days starting at `t0_ms` (the
    /// wall clock when the doors open), each `day_ms` long. The first day's window opens
    /// an hour early and the last one's closes an hour late, so that only the days' own
    /// boundaries matter. The second version gives the VIP area room for every VIP holder
    /// (the first, for three in four).
    pub fn lists_file(&self, eid: &str, t0_ms: i64, day_ms: i64, version: u64) -> Value {
        const HOUR_MS: i64 = 3_600_000;
        let window = |k: usize| {
            let k = k as i64;
            let from = t0_ms + k * day_ms - if k == 0 { HOUR_MS } else { 0 };
            let until = t0_ms + (k + 1) * day_ms + if k == DAYS as i64 - 1 { HOUR_MS } else { 0 };
            json!({
                "from": gatemesh_wire::Timestamp::from_ms(from),
                "until": gatemesh_wire::Timestamp::from_ms(until),
            })
        };
        let every_day: Vec<Value> = (0..DAYS).map(window).collect();
        let capacity = if version >= 2 {
            self.vip
        } else {
            self.vip * 3 / 4
        }
        .max(1);
        let mut lists = vec![json!({
            "id": "pass", "name": "Festival entrance",
            "products": [PRODUCTS[PASS].code, PRODUCTS[VIP].code], "windows": every_day,
        })];
        for p in &PRODUCTS {
            if let Some(day) = p.day {
                lists.push(json!({
                    "id": p.code.to_lowercase(), "name": format!("{} tickets", p.name),
                    "products": [p.code], "windows": [window(day)],
                }));
            }
        }
        lists.push(json!({
            "id": "vip", "name": "VIP area", "products": [PRODUCTS[VIP].code],
            "windows": every_day, "capacity": capacity,
        }));
        json!({
            "event": eid,
            "time_zone": "Europe/Berlin",
            "products": PRODUCTS.iter().map(|p| json!({
                "code": p.code, "number": p.number, "name": p.name,
            })).collect::<Vec<_>>(),
            "lists": lists,
        })
    }
}

/// Where an entry of a ticket of `product` on day `day` counts: its list and window.
fn scope(product: usize, day: usize, at_vip_door: bool) -> String {
    match (at_vip_door, PRODUCTS[product].day) {
        (true, _) => format!("vip/w{day}"),
        (false, None) => format!("pass/w{day}"),
        (false, Some(_)) => format!("{}/w0", PRODUCTS[product].code.to_lowercase()),
    }
}

/// Draws the festival: `gates` gates (the last one the VIP area's door; at least two),
/// `attendees` tickets, `duration_s` event seconds for the three days.
pub fn draw(gates: usize, attendees: usize, duration_s: f64, seed: u64) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (d, day) = (duration_s, duration_s / DAYS as f64);
    let vip_door = gates - 1;
    let main: Vec<usize> = (0..vip_door).collect();
    // Side B: the later half of the main gates, and the VIP door.
    let mut side_b: Vec<usize> = main[main.len().div_ceil(2)..].to_vec();
    side_b.push(vip_door);
    let main_a: Vec<usize> = main
        .iter()
        .copied()
        .filter(|g| !side_b.contains(g))
        .collect();
    let main_b: Vec<usize> = main
        .iter()
        .copied()
        .filter(|g| side_b.contains(g))
        .collect();
    let faults = Faults {
        uplink_gate: 0,
        uplink_down: (0.85 * day, 1.5 * day),
        partition: (1.15 * day, 1.6 * day),
        side_b: side_b.clone(),
        killed_gate: vip_door,
        kill_at: 2.3 * day,
    };
    let (p0, p1) = faults.partition;

    // Tickets are issued product by product.
    let mut products = Vec::with_capacity(attendees);
    let mut issued = Vec::new();
    for (i, p) in PRODUCTS.iter().enumerate() {
        let left = attendees - products.len();
        let count = if i == PRODUCTS.len() - 1 {
            left
        } else {
            ((attendees as f64 * p.share).round() as usize).min(left)
        };
        products.extend(std::iter::repeat_n(i, count));
        issued.push(Issued {
            code: p.code,
            number: p.number,
            count,
        });
    }
    let product = |t: usize| products[t];

    // When in day `k` someone arrives, for a share `x` of the day's opening hours.
    let at_on = |k: usize, x: f64| (k as f64 + OPEN + x.clamp(0.0, 1.0) * (CLOSE - OPEN)) * day;
    let last_of = |k: usize| (k as f64 + CLOSE) * day;
    let first_of = |k: usize| (k as f64 + OPEN) * day;

    let mut order: Vec<usize> = (0..attendees).collect();
    order.shuffle(&mut rng);
    let take = |share: f64| ((attendees as f64 * share).round() as usize).max(1);
    let (refunded, rest) = order.split_at(take(REFUNDED).min(order.len()));
    let across: Vec<usize> = if main_a.is_empty() || main_b.is_empty() {
        Vec::new()
    } else {
        rest.iter()
            .copied()
            .filter(|&t| product(t) == PASS)
            .take(ACROSS_PARTITION.min(rest.len() / 4))
            .collect()
    };
    let rest: Vec<usize> = rest
        .iter()
        .copied()
        .filter(|t| !across.contains(t))
        .collect();
    let (shared, _) = rest.split_at(take(SHARED).min(rest.len()));

    let mut steps = Vec::new();
    let mut scan = |rng: &mut ChaCha8Rng, at: f64, gate, ticket, who, scope| {
        present(&mut steps, rng, at, (gate, ticket, who), scope);
    };
    let mut voids = Vec::new();
    for &t in &rest {
        let p = product(t);
        let days: Vec<usize> = match PRODUCTS[p].day {
            Some(k) => vec![k],
            None => {
                let mut days: Vec<usize> = (0..DAYS)
                    .filter(|_| rng.random_bool(COMES_EACH_DAY))
                    .collect();
                if days.is_empty() {
                    days.push(rng.random_range(0..DAYS));
                }
                days
            }
        };
        for (n, &k) in days.iter().enumerate() {
            let at = at_on(k, arrival(&mut rng));
            let g = pick(&mut rng, &main);
            scan(&mut rng, at, g, t, Who::Holder, Some(scope(p, k, false)));
            let later = |rng: &mut ChaCha8Rng, lo: f64, hi: f64| {
                (at + rng.random_range(lo..hi) * day).clamp(first_of(k), last_of(k))
            };
            if p == VIP && rng.random_bool(TO_THE_VIP_AREA) {
                let at = later(&mut rng, 0.02, 0.15);
                scan(
                    &mut rng,
                    at,
                    vip_door,
                    t,
                    Who::Holder,
                    Some(scope(p, k, true)),
                );
            } else if p != VIP && n == 0 && rng.random_bool(WRONG_DOOR) {
                let at = later(&mut rng, 0.02, 0.15);
                scan(&mut rng, at, vip_door, t, Who::WrongDoor, None);
            }
            if n == 0 && shared.contains(&t) {
                // A friend with a screenshot, the same day at another main gate.
                let f = other(&mut rng, &main, g);
                let at = later(&mut rng, -0.05, 0.12);
                scan(&mut rng, at, f, t, Who::Friend, Some(scope(p, k, false)));
            }
        }
        if PRODUCTS[p].day.is_some() && rng.random_bool(WRONG_DAY) {
            let k = days[0];
            let wrong = (k + rng.random_range(1..DAYS)) % DAYS;
            let at = at_on(wrong, arrival(&mut rng));
            let g = pick(&mut rng, &main);
            scan(&mut rng, at, g, t, Who::WrongDay, None);
        }
    }
    for &t in &across {
        // While the LAN is split on the second day: the holder on one side, the friend on
        // the other, on one list and day.
        let at = rng.random_range(p0 + 0.05 * (p1 - p0)..p0 + 0.5 * (p1 - p0));
        let a = main_a[rng.random_range(0..main_a.len())];
        let b = main_b[rng.random_range(0..main_b.len())];
        let in_scope = Some(scope(PASS, 1, false));
        scan(&mut rng, at, a, t, Who::Holder, in_scope.clone());
        let later = (at + rng.random_range(10.0..0.4 * (p1 - p0))).min(p1 - 1.0);
        scan(&mut rng, later, b, t, Who::Friend, in_scope);
    }
    for &t in refunded {
        // Refunded before the festival; half the holders come anyway, on a day they could
        // have come.
        let k = PRODUCTS[product(t)]
            .day
            .unwrap_or_else(|| rng.random_range(0..DAYS));
        let at = at_on(k, arrival(&mut rng));
        voids.push(Step {
            at: (at - rng.random_range(30.0..600.0)).max(0.0),
            what: What::Void { ticket: t },
        });
        if rng.random_bool(0.5) {
            let g = pick(&mut rng, &main);
            scan(&mut rng, at, g, t, Who::Refunded, None);
        }
    }
    steps.extend(voids);
    steps.extend(faults.steps(d));
    steps.push(Step {
        at: day,
        what: What::ReleaseLists { version: 2 },
    });
    steps.sort_by(|a, b| a.at.total_cmp(&b.at));
    Plan {
        gates,
        attendees,
        duration_s: d,
        festival: Some(Festival {
            days: DAYS,
            day_s: day,
            vip_door,
            lists_changed_at: day,
            issued,
            vip: products.iter().filter(|&&p| p == VIP).count(),
        }),
        faults,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use gatemesh_ticket::Product as Carried;
    use gatemesh_wire::{ListId, ListRefusal, Lists};

    use super::*;
    use crate::rehearse::plan::Scan;

    fn scans(plan: &Plan) -> Vec<(f64, &Scan)> {
        plan.steps
            .iter()
            .filter_map(|s| match &s.what {
                What::Scan(x) => Some((s.at, x)),
                _ => None,
            })
            .collect()
    }

    fn product_of(plan: &Plan, ticket: usize) -> &'static str {
        let mut first = 0;
        for i in &plan.festival.as_ref().unwrap().issued {
            if ticket < first + i.count {
                return i.code;
            }
            first += i.count;
        }
        panic!("ticket {ticket} was not issued");
    }

    #[test]
    fn the_same_seed_draws_the_same_festival() {
        crate::rehearse::plan::tests::same_seed_same_event(draw);
    }

    /// Every presentation, checked against the lists the server will release, at the instant
    /// the plan plays it: the gate's lists take it in the scope the plan says, or refuse it
    /// for the reason the plan expects. So a rehearsal failing on a scope is the gates', not
    /// the plan's.
    #[test]
    fn every_presentation_falls_where_the_lists_say() {
        let (speed, t0_ms) = (15.0, 1_800_000_000_000_i64);
        for gates in [2, 3, 5] {
            let plan = draw(gates, 1200, 1500.0, 3);
            let f = plan.festival.as_ref().unwrap();
            let day_ms = (f.day_s * 1000.0 / speed) as i64;
            for version in [1, 2] {
                let file = f.lists_file("fest", t0_ms, day_ms, version);
                let lists = Lists::from_json(file.to_string().as_bytes()).unwrap();
                for (at, s) in scans(&plan) {
                    let ids: Vec<ListId> = f
                        .lists_of(s.gate)
                        .iter()
                        .map(|l| ListId::parse(l).unwrap())
                        .collect();
                    let gate = lists.for_gate(&ids).unwrap();
                    let code = product_of(&plan, s.ticket);
                    let number = f.issued.iter().find(|i| i.code == code).unwrap().number;
                    let carried = Carried::parse(&number.to_string()).unwrap();
                    let at_ms = t0_ms + (at * 1000.0 / speed) as i64;
                    let got = gate.check(Some(&carried), at_ms);
                    match (s.who.refused_for(), got) {
                        // The lists take it; the refund refuses it.
                        (None, Ok(_)) if s.who == Who::Refunded => {}
                        (None, Ok(a)) => {
                            assert_eq!(Some(a.scope().to_string()), s.scope, "{s:?} at {at}")
                        }
                        (Some("not_on_list"), Err(ListRefusal::NotOnList { .. }))
                        | (Some("not_valid_now"), Err(ListRefusal::NotValidNow { .. })) => {
                            assert_eq!(s.scope, None)
                        }
                        (want, got) => panic!("{s:?} at {at}: want {want:?}, got {got:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn every_story_is_told_once_per_scope() {
        let plan = draw(4, 3000, 1500.0, 1);
        let f = plan.festival.as_ref().unwrap();
        let scans = scans(&plan);
        let mut holders: HashMap<(usize, &str), usize> = HashMap::new();
        for (_, s) in scans.iter().filter(|(_, s)| s.who == Who::Holder) {
            *holders
                .entry((s.ticket, s.scope.as_deref().unwrap()))
                .or_default() += 1;
        }
        assert!(
            holders.values().all(|&n| n == 1),
            "a holder comes once a day"
        );
        for who in [
            Who::Holder,
            Who::Friend,
            Who::Refunded,
            Who::WrongDay,
            Who::WrongDoor,
        ] {
            assert!(scans.iter().any(|(_, s)| s.who == who), "{who:?}");
        }
        // Passes come on several days; the VIP door sees VIP passes and those who try it.
        let days_of_passes = scans
            .iter()
            .filter(|(_, s)| s.scope.as_deref().is_some_and(|x| x.starts_with("pass/w2")))
            .count();
        assert!(days_of_passes > 0);
        for (_, s) in scans.iter().filter(|(_, s)| s.gate == f.vip_door) {
            assert!(
                (product_of(&plan, s.ticket) == "VIP") != (s.who == Who::WrongDoor),
                "{s:?}"
            );
        }
        // Across the partition, on one list and day: copies the LAN could not catch.
        let (p0, p1) = plan.faults.partition;
        let across = scans
            .iter()
            .filter(|(at, s)| {
                s.who == Who::Friend
                    && plan.faults.side_b.contains(&s.gate)
                    && (p0..p1).contains(at)
            })
            .count();
        assert!(across >= ACROSS_PARTITION, "{across}");
        assert!(plan.steps.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(
            plan.steps
                .iter()
                .any(|s| matches!(s.what, What::ReleaseLists { version: 2 }))
        );
    }
}
