//! The event a rehearsal plays, drawn from a seed before anything starts: who arrives when
//! and where, who shares a screenshot, which tickets are refunded or transferred, and when
//! the faults strike. The same seed gives the same event.

use rand::{RngExt, SeedableRng, rngs::ChaCha8Rng, seq::SliceRandom};
use serde::Serialize;

pub mod festival;
pub use festival::Festival;

/// Who presents a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    /// The ticket's holder.
    Holder,
    /// A friend with a screenshot of someone else's ticket: a copy.
    Friend,
    /// A holder whose ticket was refunded, trying anyway.
    Refunded,
    /// The first holder of a transferred ticket, with the old code.
    OldHolder,
    /// The holder a ticket was transferred to, with the new code.
    NewHolder,
    /// A day ticket's holder on another day than theirs: refused `not_valid_now`.
    WrongDay,
    /// A holder at a door whose lists do not take their ticket (GA at the VIP area):
    /// refused `not_on_list`.
    WrongDoor,
}

impl Who {
    /// The reason a gate must give for refusing this presentation, for those that must be
    /// refused by the gate's lists whatever the ledger holds.
    pub fn refused_for(self) -> Option<&'static str> {
        match self {
            Who::WrongDay => Some("not_valid_now"),
            Who::WrongDoor => Some("not_on_list"),
            _ => None,
        }
    }
}

/// One presentation of a code at a scanner.
#[derive(Debug, Clone, Serialize)]
pub struct Scan {
    pub gate: usize,
    pub lane: usize,
    /// Index into the issued tickets.
    pub ticket: usize,
    pub who: Who,
    /// The scanner fires a second time this many (real) milliseconds later.
    pub double_fire_ms: Option<u64>,
    /// On an event with check-in lists, what the presentation counts against: the list and
    /// its window (`pass/w1`), as the gate writes a redemption's scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    Scan(Scan),
    /// A refund at the server.
    Void {
        ticket: usize,
    },
    /// A transfer at the server; the new holder's scan follows later.
    Transfer {
        ticket: usize,
    },
    UplinkDown {
        gate: usize,
    },
    UplinkUp {
        gate: usize,
    },
    /// The LAN splits: these gates see each other, but none of the rest.
    Partition {
        side_b: Vec<usize>,
    },
    Heal,
    /// The organizer releases this version of the event's check-in lists.
    ReleaseLists {
        version: u64,
    },
    /// SIGKILL, then a restart on the same data after `down_s` event seconds.
    Kill {
        gate: usize,
        down_s: f64,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Event seconds since the doors opened.
    pub at: f64,
    pub what: What,
}

/// When each fault strikes, in event seconds (for the report and the plot).
#[derive(Debug, Clone, Serialize)]
pub struct Faults {
    pub uplink_gate: usize,
    pub uplink_down: (f64, f64),
    pub partition: (f64, f64),
    pub side_b: Vec<usize>,
    pub killed_gate: usize,
    pub kill_at: f64,
}

impl Faults {
    /// The faults as steps of an event `duration_s` long: the uplink lost and back, the LAN
    /// split and healed (when side B has a gate), the SIGKILL (down 1 % of the event).
    fn steps(&self, duration_s: f64) -> Vec<Step> {
        let mut steps = vec![
            Step {
                at: self.uplink_down.0,
                what: What::UplinkDown {
                    gate: self.uplink_gate,
                },
            },
            Step {
                at: self.uplink_down.1,
                what: What::UplinkUp {
                    gate: self.uplink_gate,
                },
            },
        ];
        if !self.side_b.is_empty() {
            steps.push(Step {
                at: self.partition.0,
                what: What::Partition {
                    side_b: self.side_b.clone(),
                },
            });
            steps.push(Step {
                at: self.partition.1,
                what: What::Heal,
            });
        }
        steps.push(Step {
            at: self.kill_at,
            what: What::Kill {
                gate: self.killed_gate,
                down_s: 0.01 * duration_s,
            },
        });
        steps
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub gates: usize,
    pub attendees: usize,
    pub duration_s: f64,
    pub faults: Faults,
    /// The festival's days, products and doors, when the scenario is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub festival: Option<Festival>,
    #[serde(skip)]
    pub steps: Vec<Step>,
}

/// What kind of event a rehearsal plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// One evening, one entry per ticket at any gate: refunds, transfers, copies.
    Concert,
    /// Three days with check-in lists released by the server: 3-day passes once a day, day
    /// tickets on their day only, a VIP area with a door of its own; the lists change
    /// mid-event.
    Festival,
}

/// Shares of the tickets that take part in each story.
const REFUNDED: f64 = 0.02;
const TRANSFERRED: f64 = 0.02;
const SHARED: f64 = 0.03;
const DOUBLE_FIRE: f64 = 0.03;
/// Screenshots deliberately shared across the partition while it lasts.
const ACROSS_PARTITION: usize = 12;

/// When a holder arrives, as a share of the entry window: a Beta(2, 4) curve (the second
/// smallest of five uniforms) — a rush soon after doors open and a long tail of late-comers.
fn arrival(rng: &mut ChaCha8Rng) -> f64 {
    let mut u: [f64; 5] = std::array::from_fn(|_| rng.random::<f64>());
    u.sort_by(f64::total_cmp);
    u[1]
}

/// One of `gates` for a holder: a main entrance (the first) takes more people than a side
/// door.
fn pick(rng: &mut ChaCha8Rng, gates: &[usize]) -> usize {
    let weight = |i: usize| 1.0 / (1.0 + 0.25 * i as f64);
    let total: f64 = (0..gates.len()).map(weight).sum();
    let mut x = rng.random::<f64>() * total;
    for (i, &g) in gates.iter().enumerate() {
        if x < weight(i) {
            return g;
        }
        x -= weight(i);
    }
    gates[gates.len() - 1]
}

/// Another of `gates` than `not`, any one alike (`not` itself when it is the only one).
fn other(rng: &mut ChaCha8Rng, gates: &[usize], not: usize) -> usize {
    let others: Vec<usize> = gates.iter().copied().filter(|&g| g != not).collect();
    if others.is_empty() {
        not
    } else {
        others[rng.random_range(0..others.len())]
    }
}

/// One presentation at `at`: `(gate, ticket, who)`, on one of the gate's two lanes, its
/// scanner sometimes firing twice.
fn present(
    steps: &mut Vec<Step>,
    rng: &mut ChaCha8Rng,
    at: f64,
    (gate, ticket, who): (usize, usize, Who),
    scope: Option<String>,
) {
    let double_fire_ms = rng
        .random_bool(DOUBLE_FIRE)
        .then(|| rng.random_range(60..300));
    steps.push(Step {
        at,
        what: What::Scan(Scan {
            gate,
            lane: rng.random_range(0..2),
            ticket,
            who,
            double_fire_ms,
            scope,
        }),
    });
}

/// Draws the event. Needs at least two gates (and four attendees per story to tell).
pub fn draw(gates: usize, attendees: usize, duration_s: f64, seed: u64) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = duration_s;
    let all: Vec<usize> = (0..gates).collect();
    let pick_gate = |rng: &mut ChaCha8Rng| pick(rng, &all);
    let other_gate = |rng: &mut ChaCha8Rng, not: usize| other(rng, &all, not);

    let side_b: Vec<usize> = (gates.div_ceil(2)..gates).collect();
    let faults = Faults {
        uplink_gate: 1 % gates,
        uplink_down: (0.15 * d, 0.45 * d),
        partition: (0.30 * d, 0.55 * d),
        side_b: side_b.clone(),
        killed_gate: gates - 1,
        kill_at: 0.70 * d,
    };

    // Every ticket plays one story.
    let mut order: Vec<usize> = (0..attendees).collect();
    order.shuffle(&mut rng);
    let take = |share: f64| ((attendees as f64 * share).round() as usize).max(1);
    let (refunded, rest) = order.split_at(take(REFUNDED).min(order.len()));
    let (transferred, rest) = rest.split_at(take(TRANSFERRED).min(rest.len()));
    let across = ACROSS_PARTITION.min(rest.len() / 4);
    let (across_partition, rest) = rest.split_at(if side_b.is_empty() { 0 } else { across });
    let (shared, plain) = rest.split_at(take(SHARED).min(rest.len()));

    let mut steps = Vec::new();
    let scan = |steps: &mut Vec<Step>, rng: &mut ChaCha8Rng, at: f64, gate, ticket, who| {
        present(steps, rng, at.clamp(0.0, d), (gate, ticket, who), None);
    };

    for &t in plain {
        let at = arrival(&mut rng) * d;
        let g = pick_gate(&mut rng);
        scan(&mut steps, &mut rng, at, g, t, Who::Holder);
    }
    for &t in shared {
        // Holder and friend arrive within minutes of each other, at different gates, in
        // either order.
        let at = arrival(&mut rng) * d;
        let g = pick_gate(&mut rng);
        scan(&mut steps, &mut rng, at, g, t, Who::Holder);
        let f = other_gate(&mut rng, g);
        let later = at + rng.random_range(-120.0..300.0);
        scan(&mut steps, &mut rng, later, f, t, Who::Friend);
    }
    let (p0, p1) = faults.partition;
    let side_a: Vec<usize> = (0..gates).filter(|g| !side_b.contains(g)).collect();
    for &t in across_partition {
        // While the LAN is split: the holder on one side, the friend on the other.
        let at = rng.random_range(p0 + 0.05 * (p1 - p0)..p0 + 0.5 * (p1 - p0));
        let a = side_a[rng.random_range(0..side_a.len())];
        let b = side_b[rng.random_range(0..side_b.len())];
        scan(&mut steps, &mut rng, at, a, t, Who::Holder);
        let later = at + rng.random_range(10.0..0.4 * (p1 - p0));
        scan(&mut steps, &mut rng, later.min(p1 - 1.0), b, t, Who::Friend);
    }
    for &t in refunded {
        // Refunded some minutes before the doors; half the holders come anyway.
        let at = (0.1 + 0.85 * arrival(&mut rng)) * d;
        let void_at = (at - rng.random_range(30.0..600.0)).max(0.0);
        steps.push(Step {
            at: void_at,
            what: What::Void { ticket: t },
        });
        if rng.random_bool(0.5) {
            let g = pick_gate(&mut rng);
            scan(&mut steps, &mut rng, at, g, t, Who::Refunded);
        }
    }
    for &t in transferred {
        let at = (0.1 + 0.85 * arrival(&mut rng)) * d;
        let transfer_at = (at - rng.random_range(30.0..600.0)).max(0.0);
        steps.push(Step {
            at: transfer_at,
            what: What::Transfer { ticket: t },
        });
        let g = pick_gate(&mut rng);
        scan(&mut steps, &mut rng, at, g, t, Who::NewHolder);
        if rng.random_bool(0.5) {
            let g = pick_gate(&mut rng);
            let later = at + rng.random_range(-60.0..300.0);
            scan(
                &mut steps,
                &mut rng,
                later.max(transfer_at + 30.0),
                g,
                t,
                Who::OldHolder,
            );
        }
    }

    steps.extend(faults.steps(d));
    // Stable: a fault and a scan at the same instant keep the order above.
    steps.sort_by(|a, b| a.at.total_cmp(&b.at));
    Plan {
        gates,
        attendees,
        duration_s: d,
        faults,
        festival: None,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scans(plan: &Plan) -> Vec<&Scan> {
        plan.steps
            .iter()
            .filter_map(|s| match &s.what {
                What::Scan(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// `draw` (a scenario's) gives the same steps for a seed, and others for another seed.
    pub(super) fn same_seed_same_event(draw: fn(usize, usize, f64, u64) -> Plan) {
        let steps = |seed| serde_json::to_string(&draw(4, 900, 1500.0, seed).steps).unwrap();
        assert_eq!(steps(7), steps(7));
        assert_ne!(steps(7), steps(8));
    }

    #[test]
    fn the_same_seed_draws_the_same_event() {
        same_seed_same_event(draw);
    }

    #[test]
    fn every_holder_comes_once_and_every_story_is_told() {
        let plan = draw(4, 3000, 1500.0, 1);
        let scans = scans(&plan);
        let holders: std::collections::HashSet<usize> = scans
            .iter()
            .filter(|s| s.who == Who::Holder)
            .map(|s| s.ticket)
            .collect();
        let holder_scans = scans.iter().filter(|s| s.who == Who::Holder).count();
        assert_eq!(holders.len(), holder_scans, "no holder comes twice");
        for who in [Who::Friend, Who::Refunded, Who::OldHolder, Who::NewHolder] {
            assert!(scans.iter().any(|s| s.who == who), "{who:?}");
        }
        assert!(scans.iter().any(|s| s.double_fire_ms.is_some()));
        // Friends go to a gate other than the holder's.
        for f in scans.iter().filter(|s| s.who == Who::Friend) {
            let h = scans
                .iter()
                .find(|s| s.ticket == f.ticket && s.who == Who::Holder)
                .unwrap();
            assert_ne!(h.gate, f.gate);
        }
        assert!(plan.steps.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(
            plan.steps
                .iter()
                .all(|s| (0.0..=plan.duration_s).contains(&s.at))
        );
    }

    #[test]
    fn copies_are_shared_across_the_partition_while_it_lasts() {
        let plan = draw(4, 3000, 1500.0, 3);
        let (p0, p1) = plan.faults.partition;
        let side_b = &plan.faults.side_b;
        let across = plan
            .steps
            .iter()
            .filter(|s| {
                matches!(&s.what, What::Scan(x) if x.who == Who::Friend && side_b.contains(&x.gate))
                    && (p0..p1).contains(&s.at)
            })
            .count();
        assert!(across >= ACROSS_PARTITION, "{across}");
    }

    #[test]
    fn the_arrival_curve_peaks_early() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut bins = [0usize; 4];
        for _ in 0..10_000 {
            bins[(arrival(&mut rng) * 4.0) as usize] += 1;
        }
        assert!(
            bins[0] > bins[2] && bins[1] > bins[2] && bins[2] > bins[3],
            "{bins:?}"
        );
    }
}
