//! One ticket's history as the ledger knows it, and what follows from it: who is inside,
//! whether the ticket is flagged, whether staff denied it.

use std::collections::{BTreeMap, HashSet};

use gatemesh_wire::Scope;

use crate::model::{Action, Direction, Redemption, RedemptionId, Resolution, Standing, Status};

mod flags;
#[cfg(test)]
mod tests;

/// Everything recorded about one ticket. Lists are kept in HLC order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TicketState {
    /// Every redemption, reverted ones included.
    pub redemptions: Vec<Redemption>,
    /// Every staff resolution.
    pub resolutions: Vec<Resolution>,
    /// The winning status, if any was written.
    pub status: Option<Status>,
}

impl TicketState {
    /// Whether the ledger holds no record of the ticket.
    pub fn is_empty(&self) -> bool {
        self.redemptions.is_empty() && self.resolutions.is_empty() && self.status.is_none()
    }

    fn reverted(&self) -> HashSet<&RedemptionId> {
        self.resolutions
            .iter()
            .filter(|r| r.action == Action::Revert)
            .flat_map(|r| &r.covers)
            .collect()
    }

    /// Redemptions that still count: every one not undone by a `revert`.
    pub fn effective(&self) -> impl Iterator<Item = &Redemption> {
        let reverted = self.reverted();
        self.redemptions
            .iter()
            .filter(move |r| !reverted.contains(&r.id))
    }

    /// The earliest effective entry: the admission a duplicate is compared against.
    pub fn first_entry(&self) -> Option<&Redemption> {
        self.effective().find(|r| r.direction == Direction::Entry)
    }

    /// The entry that has the holder inside now, under re-entry rules: the latest effective
    /// redemption, if it is an entry.
    pub fn inside_since(&self) -> Option<&Redemption> {
        self.effective()
            .last()
            .filter(|r| r.direction == Direction::Entry)
    }

    /// Entries made while their gates could not see each other, not yet all resolved by
    /// staff. Empty when the ticket is not flagged.
    ///
    /// Among the effective entries, two are concurrent when neither's `seen` lists the other's
    /// id; the pair is open while at least one of them is covered by no resolution. The result
    /// is every entry in an open concurrent pair, one per id, sorted by HLC. Counted without
    /// comparing pairs (see `state/flags.rs`): O((n + Σ|seen|) log n) for n entries.
    ///
    /// Entries count against their scope ([`Redemption::scope`]): two entries of one ticket
    /// on different lists, or on different days of a once-per-day list, are no copies of
    /// each other however concurrent.
    pub fn flagged(&self) -> Vec<&Redemption> {
        let resolved: HashSet<&RedemptionId> =
            self.resolutions.iter().flat_map(|r| &r.covers).collect();
        let entries: Vec<&Redemption> = self
            .effective()
            .filter(|r| r.direction == Direction::Entry)
            .collect();
        // The everyday case: one scope (a gate without lists, or a ticket used on one list).
        let first_scope = entries.first().map(|r| &r.scope);
        if entries.iter().all(|r| Some(&r.scope) == first_scope) {
            return flags::flagged(&entries, &resolved);
        }
        let mut scopes: BTreeMap<&Option<Scope>, Vec<&Redemption>> = BTreeMap::new();
        for r in entries {
            scopes.entry(&r.scope).or_default().push(r);
        }
        let mut flagged: Vec<&Redemption> = scopes
            .values()
            .flat_map(|entries| flags::flagged(entries, &resolved))
            .collect();
        flagged.sort_by(|a, b| a.hlc.cmp(&b.hlc));
        flagged
    }

    /// The ticket's history as one scope sees it: its redemptions in `scope` only (with
    /// every resolution and the standing, which concern the ticket whatever the list). What
    /// a gate decides a scan under a list and window with.
    pub fn scoped(&self, scope: Option<&Scope>) -> TicketState {
        TicketState {
            redemptions: self
                .redemptions
                .iter()
                .filter(|r| r.scope.as_ref() == scope)
                .cloned()
                .collect(),
            resolutions: self.resolutions.clone(),
            status: self.status.clone(),
        }
    }

    /// Whether staff's latest word on this ticket was `deny`.
    pub fn denied(&self) -> bool {
        self.resolutions
            .iter()
            .rev()
            .find(|r| matches!(r.action, Action::Accept | Action::Deny))
            .is_some_and(|r| r.action == Action::Deny)
    }

    /// The winning status's standing; active when none was written.
    pub fn standing(&self) -> Standing {
        self.status
            .as_ref()
            .map_or(Standing::Active, |s| s.standing.clone())
    }

    /// The ids of every redemption, reverted ones included, in HLC order.
    pub fn redemption_ids(&self) -> Vec<crate::model::RedemptionId> {
        self.redemptions.iter().map(|r| r.id.clone()).collect()
    }
}
