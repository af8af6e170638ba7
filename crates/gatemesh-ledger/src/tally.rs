//! Entry scans per gate, kept current as records arrive, so a dashboard reads them without
//! touching the document. Reading every redemption from the document parses every record
//! (about 100 ms at 50,000), and it happens on the thread that decides scans.

use std::collections::{BTreeMap, HashMap};

use gatemesh_ticket::TicketId;
use gatemesh_wire::Scope;

use crate::{
    model::{Direction, Redemption},
    state::TicketState,
};

/// The entry scans of one gate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct GateEntries {
    /// Wall times (ms) of its entries, with how many at each.
    at: BTreeMap<i64, u32>,
    total: u64,
}

impl GateEntries {
    fn add(&mut self, at_ms: i64) {
        *self.at.entry(at_ms).or_default() += 1;
        self.total += 1;
    }

    fn remove(&mut self, at_ms: i64) {
        if let Some(n) = self.at.get_mut(&at_ms) {
            *n -= 1;
            if *n == 0 {
                self.at.remove(&at_ms);
            }
            self.total -= 1;
        }
    }
}

/// Every gate's entry scans (reverted ones included: they happened at the door), and how
/// many tickets have at least one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryTally {
    gates: BTreeMap<String, GateEntries>,
    /// What each ticket contributes, to take it back when the ticket's records change.
    by_ticket: HashMap<TicketId, Vec<(String, i64)>>,
}

/// One gate's entries, as a dashboard shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateActivity {
    /// The gate's human name.
    pub gate: String,
    /// Every entry it recorded.
    pub entries: u64,
    /// Wall time (ms) of its latest entry.
    pub last_ms: i64,
    /// Entries per minute, oldest first, over the window asked for.
    pub per_minute: Vec<u32>,
}

/// Entries per gate over a window of minutes, and how many tickets have an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// Every gate with an entry, by name.
    pub gates: Vec<GateActivity>,
    /// Tickets with at least one entry, reverted ones included.
    pub tickets_entered: usize,
}

impl EntryTally {
    /// Replaces what `tid` contributes with what its redemptions say now.
    pub(crate) fn set(&mut self, tid: &TicketId, redemptions: &[Redemption]) {
        for (gate, at_ms) in self.by_ticket.remove(tid).unwrap_or_default() {
            if let Some(g) = self.gates.get_mut(&gate) {
                g.remove(at_ms);
                if g.total == 0 {
                    self.gates.remove(&gate);
                }
            }
        }
        let entries: Vec<(String, i64)> = redemptions
            .iter()
            .filter(|r| r.direction == Direction::Entry)
            .map(|r| (r.gate.clone(), r.at_ms))
            .collect();
        for (gate, at_ms) in &entries {
            self.gates.entry(gate.clone()).or_default().add(*at_ms);
        }
        if !entries.is_empty() {
            self.by_ticket.insert(tid.clone(), entries);
        }
    }

    /// Every gate with an entry, by name, with its entries per `minute_ms` over `minutes`
    /// windows starting at `first_ms`.
    pub fn activity(&self, first_ms: i64, minute_ms: i64, minutes: usize) -> Activity {
        let gates = self
            .gates
            .iter()
            .map(|(gate, g)| GateActivity {
                gate: gate.clone(),
                entries: g.total,
                last_ms: g.at.last_key_value().map_or(0, |(at, _)| *at),
                per_minute: (0..minutes as i64)
                    .map(|i| {
                        let from = first_ms + i * minute_ms;
                        g.at.range(from..from + minute_ms).map(|(_, n)| *n).sum()
                    })
                    .collect(),
            })
            .collect();
        Activity {
            gates,
            tickets_entered: self.by_ticket.len(),
        }
    }
}

/// Who is inside now, per check-in scope: the tickets whose latest redemption that still
/// counts (none reverted) in the scope is an entry. Every gate's records count, so each gate
/// knows the whole venue's figure as far as the mesh has carried it. Kept current as records
/// arrive, like [`EntryTally`]; redemptions of no scope (gates without lists) count nowhere.
/// Entry times are kept by the minute, so that a list's everyone-out time (`exit_all_at`,
/// a time of day) leaves out those who came in before it ([`Occupancy::inside_since`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// Per scope: how many are inside, and by the minute their latest entry was made.
    inside: HashMap<Scope, (u64, BTreeMap<i64, u64>)>,
    /// The scopes each ticket is inside and the minute of its entry there, to take it back
    /// when its records change.
    by_ticket: HashMap<TicketId, Vec<(Scope, i64)>>,
}

const MINUTE_MS: i64 = 60_000;

impl Occupancy {
    /// Takes `state` (the ticket's whole history) as the ticket's word, replacing what it
    /// said before.
    pub(crate) fn set(&mut self, tid: &TicketId, state: &TicketState) {
        if let Some(old) = self.by_ticket.remove(tid) {
            for (scope, minute) in old {
                if let Some((total, minutes)) = self.inside.get_mut(&scope) {
                    *total -= 1;
                    if let Some(n) = minutes.get_mut(&minute) {
                        *n -= 1;
                        if *n == 0 {
                            minutes.remove(&minute);
                        }
                    }
                    if *total == 0 {
                        self.inside.remove(&scope);
                    }
                }
            }
        }
        // The latest effective redemption in each scope, in HLC order.
        let mut latest: HashMap<&Scope, (Direction, i64)> = HashMap::new();
        for r in state.effective() {
            if let Some(scope) = &r.scope {
                latest.insert(scope, (r.direction, r.at_ms));
            }
        }
        let mut inside: Vec<(Scope, i64)> = latest
            .into_iter()
            .filter(|(_, (d, _))| *d == Direction::Entry)
            .map(|(s, (_, at_ms))| (s.clone(), at_ms.div_euclid(MINUTE_MS)))
            .collect();
        if inside.is_empty() {
            return;
        }
        inside.sort();
        for (scope, minute) in &inside {
            let (total, minutes) = self.inside.entry(scope.clone()).or_default();
            *total += 1;
            *minutes.entry(*minute).or_default() += 1;
        }
        self.by_ticket.insert(tid.clone(), inside);
    }

    /// Holders inside `scope` now.
    pub fn inside(&self, scope: &Scope) -> u64 {
        self.inside.get(scope).map_or(0, |(total, _)| *total)
    }

    /// Holders inside `scope` who came in at or after `since_ms` (a list's everyone-out
    /// time: those before it count as out), to the minute; all of them without one.
    pub fn inside_since(&self, scope: &Scope, since_ms: Option<i64>) -> u64 {
        let Some(since) = since_ms else {
            return self.inside(scope);
        };
        self.inside.get(scope).map_or(0, |(_, minutes)| {
            minutes
                .range(since.div_euclid(MINUTE_MS)..)
                .map(|(_, n)| n)
                .sum()
        })
    }
}
