//! Finding a guest whose code cannot be scanned (a phone that died, a ticket left at home):
//! by part of their name, their order reference, their ticket id or their seat, in what the
//! server's manifest says of each ticket — which it says only when the organizer lets gates
//! find guests, so that otherwise no attendee's name reaches a gate. The index is kept in
//! memory only, taken from the manifest at each uplink's first contact and kept current by
//! the change stream: nothing of it is written to the gate's disk, and a gate without its
//! uplink since it started finds no one. A guest found is checked in by staff
//! ([`crate::Node::check_in_guest`]) as a manual admission naming them, audited and synced
//! like any other, so the next scan of the code is yellow.

use std::{collections::HashMap, sync::RwLock};

use gatemesh_ticket::{Product, TicketId};
use serde::Serialize;

/// Most guests one search answers.
pub const MOST_FOUND: usize = 20;
/// The shortest query searched (a single letter finds half the venue).
pub const SHORTEST_QUERY: usize = 2;

/// A ticket as the index knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guest {
    /// The ticket.
    pub tid: TicketId,
    /// Its seat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat: Option<String>,
    /// Who holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// The order it was bought in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// Its product, for the gate's lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<Product>,
}

/// A guest a search found, with whether and where they came in (every gate's records this
/// one holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FoundGuest {
    #[serde(flatten)]
    pub guest: Guest,
    /// The ticket's standing (a void ticket is found, and refused at check-in).
    pub standing: gatemesh_ledger::Standing,
    /// Entries that count.
    pub entries: usize,
    /// The first of them: the gate, and when (ms since 1970).
    pub first_gate: Option<String>,
    pub first_at_ms: Option<i64>,
}

impl FoundGuest {
    pub(crate) fn of(guest: Guest, state: &gatemesh_ledger::TicketState) -> Self {
        let entries: Vec<_> = state
            .effective()
            .filter(|r| r.direction == gatemesh_ledger::Direction::Entry)
            .collect();
        Self {
            guest,
            standing: state.standing(),
            entries: entries.len(),
            first_gate: entries.first().map(|r| r.gate.clone()),
            first_at_ms: entries.first().map(|r| r.at_ms),
        }
    }
}

/// The gate's index of guests, shared by the writer (which takes the server's news) and the
/// API (which searches it without going through the writer).
#[derive(Debug, Default)]
pub(crate) struct Guests(RwLock<HashMap<TicketId, Guest>>);

impl Guests {
    /// Takes what the server said of tickets: the whole manifest (`full`, replacing what was
    /// known) or a delta. A ticket the server names without a holder or an order (an event
    /// that does not let gates find guests) is left out.
    pub(crate) fn take(
        &self,
        full: bool,
        tickets: impl IntoIterator<Item = (TicketId, Option<Guest>)>,
    ) {
        let mut index = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if full {
            index.clear();
        }
        for (tid, guest) in tickets {
            match guest {
                Some(g) => {
                    index.insert(tid, g);
                }
                None => {
                    index.remove(&tid);
                }
            }
        }
    }

    /// The guest of `tid`, when the index has them.
    pub(crate) fn get(&self, tid: &TicketId) -> Option<Guest> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(tid)
            .cloned()
    }

    /// Whether the index holds anyone (the event lets gates find guests, and the manifest
    /// came).
    pub(crate) fn is_empty(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// At most [`MOST_FOUND`] guests whose name or order contains `query` (any case), or
    /// whose ticket id or seat is it or starts with it; by holder's name. Nothing for a query
    /// shorter than [`SHORTEST_QUERY`].
    pub(crate) fn search(&self, query: &str) -> Vec<Guest> {
        let q = query.trim().to_lowercase();
        if q.chars().count() < SHORTEST_QUERY {
            return Vec::new();
        }
        let contains = |field: &Option<String>| {
            field
                .as_deref()
                .is_some_and(|f| f.to_lowercase().contains(&q))
        };
        let starts = |field: &str| field.to_lowercase().starts_with(&q);
        let index = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut found: Vec<Guest> = index
            .values()
            .filter(|g| {
                contains(&g.holder)
                    || contains(&g.order)
                    || starts(g.tid.as_str())
                    || g.seat.as_deref().is_some_and(starts)
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| (&a.holder, a.tid.as_str()).cmp(&(&b.holder, b.tid.as_str())));
        found.truncate(MOST_FOUND);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest(tid: &str, holder: &str, order: &str, seat: &str) -> (TicketId, Option<Guest>) {
        let tid = TicketId::new(tid).unwrap();
        let g = Guest {
            tid: tid.clone(),
            seat: Some(seat.into()),
            holder: Some(holder.into()),
            order: Some(order.into()),
            product: None,
        };
        (tid, Some(g))
    }

    #[test]
    fn guests_are_found_by_part_of_a_name_an_order_a_ticket_or_a_seat() {
        let index = Guests::default();
        index.take(
            true,
            [
                guest("T1", "Ada Lovelace", "ORD-1001", "A-1"),
                guest("T2", "Alan Turing", "ORD-1002", "A-2"),
                guest("T3", "Grace Hopper", "ORD-2001", "B-7"),
            ],
        );
        let tids = |q: &str| -> Vec<String> {
            index
                .search(q)
                .into_iter()
                .map(|g| g.tid.to_string())
                .collect()
        };
        assert_eq!(tids("lovel"), ["T1"]);
        assert_eq!(tids("  HOPPER "), ["T3"]);
        assert_eq!(tids("ord-100"), ["T1", "T2"]);
        assert_eq!(tids("t2"), ["T2"]);
        assert_eq!(tids("b-7"), ["T3"]);
        assert!(tids("a").is_empty(), "one letter finds no one");
        assert!(tids("nobody").is_empty());
        // A delta: T2 changed hands to someone the event does not name; T4 is new.
        index.take(
            false,
            [
                (TicketId::new("T2").unwrap(), None),
                guest("T4", "Alan Kay", "ORD-3001", "C-1"),
            ],
        );
        assert_eq!(tids("alan"), ["T4"]);
        // The whole manifest again replaces everything.
        index.take(true, [guest("T9", "Edsger Dijkstra", "ORD-9", "D-1")]);
        assert!(tids("lovel").is_empty());
        assert_eq!(tids("dijk"), ["T9"]);
    }

    #[test]
    fn a_search_answers_at_most_twenty() {
        let index = Guests::default();
        index.take(
            true,
            (0..50).map(|i| guest(&format!("T{i}"), "Sam Smith", &format!("O{i}"), "X")),
        );
        assert_eq!(index.search("smith").len(), MOST_FOUND);
    }
}
