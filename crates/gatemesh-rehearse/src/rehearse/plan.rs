//! The event a rehearsal plays, drawn from a seed before anything starts: who arrives when
//! and where, who shares a screenshot, which tickets are refunded or transferred, and when
//! the faults strike. The same seed gives the same event.

use rand::{RngExt, SeedableRng, rngs::ChaCha8Rng, seq::SliceRandom};
use serde::Serialize;

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

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub gates: usize,
    pub attendees: usize,
    pub duration_s: f64,
    pub faults: Faults,
    #[serde(skip)]
    pub steps: Vec<Step>,
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

/// Draws the event. Needs at least two gates (and four attendees per story to tell).
pub fn draw(gates: usize, attendees: usize, duration_s: f64, seed: u64) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = duration_s;
    // A main entrance takes more people than a side door.
    let weights: Vec<f64> = (0..gates).map(|g| 1.0 / (1.0 + 0.25 * g as f64)).collect();
    let total: f64 = weights.iter().sum();
    let pick_gate = |rng: &mut ChaCha8Rng| {
        let mut x = rng.random::<f64>() * total;
        for (g, w) in weights.iter().enumerate() {
            if x < *w {
                return g;
            }
            x -= w;
        }
        gates - 1
    };
    let other_gate = |rng: &mut ChaCha8Rng, not: usize| {
        let g = rng.random_range(0..gates - 1);
        if g >= not { g + 1 } else { g }
    };

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
        let double_fire_ms = rng
            .random_bool(DOUBLE_FIRE)
            .then(|| rng.random_range(60..300));
        steps.push(Step {
            at: at.clamp(0.0, d),
            what: What::Scan(Scan {
                gate,
                lane: rng.random_range(0..2),
                ticket,
                who,
                double_fire_ms,
            }),
        });
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

    let f = &faults;
    steps.push(Step {
        at: f.uplink_down.0,
        what: What::UplinkDown {
            gate: f.uplink_gate,
        },
    });
    steps.push(Step {
        at: f.uplink_down.1,
        what: What::UplinkUp {
            gate: f.uplink_gate,
        },
    });
    if !side_b.is_empty() {
        steps.push(Step {
            at: p0,
            what: What::Partition {
                side_b: side_b.clone(),
            },
        });
        steps.push(Step {
            at: p1,
            what: What::Heal,
        });
    }
    steps.push(Step {
        at: f.kill_at,
        what: What::Kill {
            gate: f.killed_gate,
            down_s: 0.01 * d,
        },
    });
    // Stable: a fault and a scan at the same instant keep the order above.
    steps.sort_by(|a, b| a.at.total_cmp(&b.at));
    Plan {
        gates,
        attendees,
        duration_s: d,
        faults,
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

    #[test]
    fn the_same_seed_draws_the_same_event() {
        let a = serde_json::to_string(&draw(4, 500, 1500.0, 7).steps).unwrap();
        let b = serde_json::to_string(&draw(4, 500, 1500.0, 7).steps).unwrap();
        let c = serde_json::to_string(&draw(4, 500, 1500.0, 8).steps).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
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
