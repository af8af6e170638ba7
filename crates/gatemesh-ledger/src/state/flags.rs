//! Which entries of one ticket are flagged, without comparing every pair.
//!
//! The rule (see `TicketState::flagged`): two effective entries are concurrent when neither's
//! `seen` lists the other's id; a pair is open unless both ids are covered by a resolution; an
//! entry is flagged when it is in an open concurrent pair. Comparing every pair was O(n²)
//! `seen` searches (and the dedup made it O(n³)): an attacker's few thousand concurrent
//! entries of one ticket held the writer thread for minutes.
//!
//! Here, each entry's open concurrent partners are *counted*, by inclusion-exclusion over the
//! entries it could pair with (every other entry if it is unresolved, the unresolved ones if
//! it is resolved): those it saw (A: their id is in its `seen`), those that saw it (B: its id
//! is in their `seen`), and both (A ∩ B), so that partners = candidates − |A| − |B| + |A ∩ B|.
//! Each term is a sum over the entry's own `seen`: |A| adds the holders of each id it lists,
//! |B| is one list looked up by its own id, |A ∩ B| asks, for each id it lists, how many
//! holders of that id list its id back. Ids are numbered first, `seen` lists are mapped to
//! those numbers with ids of no effective entry dropped and each number once, so the whole
//! count is O(n + Σ|seen|) hash lookups and binary searches, plus a sort of each `seen` list.
//! Ids listed that are no effective entry's (exits, reverted, unknown) cost one lookup each.
//!
//! Every count can be restricted to the entries before a position `m` (each list is kept in
//! entry order, so a binary search counts its prefix). That reproduces the old pairwise
//! loop's order exactly where it showed: the loop pushed each entry at its first pair
//! (i, j), i < j, in list order, kept the first entry it met of an id that occurs twice, and
//! stable-sorted by HLC, so entries with equal HLCs kept that push order. The push order is
//! the order of (i, k) where i is k's first partner before it, or k itself when it has none
//! (proof in `push_key`). Only entries that share an id or an HLC with another flagged entry
//! need that key; a binary search on the prefix counts finds their first partner in
//! O(|seen| log² n). Equal HLCs are real (two admissions the server reported in the same
//! millisecond carry the same server HLC); a second record with the same id only comes from
//! forged or broken data.

use std::collections::{HashMap, HashSet};

use crate::model::{Redemption, RedemptionId};

/// The flagged entries among `entries` (the effective entries, in the ticket's list order):
/// each in at least one open concurrent pair, one per id, sorted by HLC.
pub(super) fn flagged<'a>(
    entries: &[&'a Redemption],
    resolved: &HashSet<&RedemptionId>,
) -> Vec<&'a Redemption> {
    let n = entries.len();
    let index = Index::new(entries, resolved);
    let mut flagged: Vec<usize> = (0..n)
        .filter(|&k| index.partners_before(k, n) > 0)
        .collect();
    // Stable, so equal HLCs stay in list order until their push keys say otherwise.
    flagged.sort_by(|&a, &b| entries[a].hlc.cmp(&entries[b].hlc));

    let mut holders_flagged = vec![0usize; index.holders.len()];
    for &k in &flagged {
        holders_flagged[index.id[k]] += 1;
    }
    let same_hlc = |pos: usize, other: Option<usize>| {
        other
            .and_then(|o| flagged.get(o))
            .is_some_and(|&o| entries[o].hlc == entries[flagged[pos]].hlc)
    };
    let mut key: Vec<Option<(usize, usize)>> = vec![None; n];
    for (pos, &k) in flagged.iter().enumerate() {
        if holders_flagged[index.id[k]] > 1
            || same_hlc(pos, pos.checked_sub(1))
            || same_hlc(pos, Some(pos + 1))
        {
            key[k] = Some(index.push_key(k));
        }
    }

    // One entry per id: the one the pairwise loop pushed first.
    let mut kept: Vec<Option<usize>> = vec![None; index.holders.len()];
    for &k in &flagged {
        let slot = &mut kept[index.id[k]];
        if slot.is_none_or(|j| key[k] < key[j]) {
            *slot = Some(k);
        }
    }
    flagged.retain(|&k| kept[index.id[k]] == Some(k));
    // Every entry with an equal HLC has a key, so this is the old stable sort's order.
    flagged.sort_by(|&a, &b| {
        entries[a]
            .hlc
            .cmp(&entries[b].hlc)
            .then(key[a].cmp(&key[b]))
    });
    flagged.into_iter().map(|k| entries[k]).collect()
}

/// The entries of one ticket as numbers, with who saw whom, in entry order.
#[derive(Debug)]
struct Index {
    /// Per entry: the number of its id (ids numbered in order of first appearance).
    id: Vec<usize>,
    /// Per id: the entries with that id, ascending (more than one only in forged or broken
    /// data).
    holders: Vec<Vec<usize>>,
    /// Per id: no resolution covers it.
    open: Vec<bool>,
    /// `open_before[m]`: how many of the first `m` entries are open.
    open_before: Vec<usize>,
    /// Per entry: the ids its `seen` lists, sorted, each once, ids of no entry here dropped.
    sees: Vec<Vec<usize>>,
    /// Per id: the entries whose `seen` lists it, ascending.
    seen_by: Vec<Vec<usize>>,
    /// Per id: the open entries whose `seen` lists it, ascending.
    seen_by_open: Vec<Vec<usize>>,
    /// Per id held by more than one entry: `(seen id, holder)` for every id each holder
    /// lists, sorted. Empty for an id held once: its holder's `sees` answers.
    shared: Vec<Vec<(usize, usize)>>,
}

impl Index {
    fn new(entries: &[&Redemption], resolved: &HashSet<&RedemptionId>) -> Self {
        let n = entries.len();
        let mut number: HashMap<&RedemptionId, usize> = HashMap::with_capacity(n);
        let mut id = Vec::with_capacity(n);
        let mut holders: Vec<Vec<usize>> = Vec::with_capacity(n);
        let mut open = Vec::with_capacity(n);
        for (k, r) in entries.iter().enumerate() {
            let x = *number.entry(&r.id).or_insert_with(|| {
                holders.push(Vec::new());
                open.push(!resolved.contains(&r.id));
                holders.len() - 1
            });
            holders[x].push(k);
            id.push(x);
        }
        let mut open_before = Vec::with_capacity(n + 1);
        open_before.push(0);
        for &x in &id {
            open_before.push(open_before.last().copied().unwrap_or(0) + usize::from(open[x]));
        }
        let sees: Vec<Vec<usize>> = entries
            .iter()
            .map(|r| {
                let mut s: Vec<usize> = r
                    .seen
                    .iter()
                    .filter_map(|y| number.get(y))
                    .copied()
                    .collect();
                s.sort_unstable();
                s.dedup();
                s
            })
            .collect();
        let mut seen_by = vec![Vec::new(); holders.len()];
        let mut seen_by_open = vec![Vec::new(); holders.len()];
        for (k, s) in sees.iter().enumerate() {
            for &y in s {
                seen_by[y].push(k);
                if open[id[k]] {
                    seen_by_open[y].push(k);
                }
            }
        }
        let shared = holders
            .iter()
            .map(|h| {
                let mut pairs: Vec<(usize, usize)> = Vec::new();
                if h.len() > 1 {
                    pairs.extend(h.iter().flat_map(|&i| sees[i].iter().map(move |&y| (y, i))));
                    pairs.sort_unstable();
                }
                pairs
            })
            .collect();
        Self {
            id,
            holders,
            open,
            open_before,
            sees,
            seen_by,
            seen_by_open,
            shared,
        }
    }

    /// How many of the entries before position `m` are in an open concurrent pair with
    /// entry `k` (`m = n`: all of them).
    fn partners_before(&self, k: usize, m: usize) -> usize {
        let before = |list: &[usize]| list.partition_point(|&i| i < m);
        let own = self.id[k];
        // An unresolved entry pairs openly with any other; a resolved one with unresolved
        // ones only, and every list below then holds only those.
        let with_all = self.open[own];
        let (mut candidates, seen_it) = if with_all {
            (m, &self.seen_by[own])
        } else {
            (self.open_before[m], &self.seen_by_open[own])
        };
        let sees = &self.sees[k];
        let sees_itself = sees.binary_search(&own).is_ok();
        if with_all && k < m && !sees_itself {
            // Itself, which the terms below do not take away (when it lists its own id they
            // do: it is in A, B and A ∩ B once each).
            candidates -= 1;
        }
        let mut blocked = before(seen_it); // |B|
        let mut saw_back = 0; // |A ∩ B|
        for &x in sees.iter().filter(|&&x| with_all || self.open[x]) {
            blocked += before(&self.holders[x]); // |A|
            saw_back += self.holders_seeing(x, own, m);
        }
        debug_assert!(blocked <= candidates + saw_back, "inclusion-exclusion");
        (candidates + saw_back).saturating_sub(blocked)
    }

    /// How many holders of id `x` before position `m` list id `y` in their `seen`.
    fn holders_seeing(&self, x: usize, y: usize, m: usize) -> usize {
        match self.holders[x].as_slice() {
            &[i] => usize::from(i < m && self.sees[i].binary_search(&y).is_ok()),
            _ => {
                let pairs = &self.shared[x];
                pairs.partition_point(|&p| p < (y, m)) - pairs.partition_point(|&p| p < (y, 0))
            }
        }
    }

    /// Where the pairwise loop (pairs (i, j), i < j, in list order, pushing i then j) first
    /// pushed flagged entry `k`: `(i, k)` for its first partner `i < k`, else `(k, k)`.
    ///
    /// Why this orders pushes: an entry is first met at its smallest pair. With a partner
    /// before it, that is (i, k) for the first such i, met in the outer loop's round i; with
    /// none, (k, j) for its first partner after it, met first thing in round k (any entry l
    /// pushed in round k has k as its first partner and k < l). So rounds order the keys'
    /// first halves, and within a round, the entry whose round it is comes first, then the
    /// others by index.
    fn push_key(&self, k: usize) -> (usize, usize) {
        if self.partners_before(k, k) == 0 {
            return (k, k);
        }
        // The smallest i with a partner among the first i + 1 entries.
        let (mut lo, mut hi) = (0, k - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.partners_before(k, mid + 1) > 0 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        (lo, k)
    }
}
