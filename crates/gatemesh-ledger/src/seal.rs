//! A writer's seal over its own history: one signature that vouches for thousands of
//! records, so that a gate joining late does not verify each of them.
//!
//! Every record carries its writer's signature (`sign.rs`), and a gate that takes a
//! 100,000-redemption ledger in one catch-up verified 100,000 ECDSA signatures (3.4 s of
//! its 7.7 s on two cores). But a writer's changes are already bound together by
//! automerge's change hashes: each change's hash covers its bytes (its actor, every record
//! it writes, signatures and all) and the hashes of the changes it builds on. So a writer
//! that signs the hash of its newest change vouches, with that one signature, for every
//! change *of its own* in that change's history, byte for byte.
//!
//! - **The seal** is an audit line of the writer's ([`ACTION`], no ticket, the detail naming
//!   the change hash, [`detail`]), signed like every record: over the event, the map and the
//!   line, so it cannot be replayed into another event or read as another record. A gate
//!   writes one every [`SEAL_EVERY`] changes of its own, or [`SEAL_AFTER_MS`] after the
//!   first change since its last seal ([`crate::Ledger::seal`]). Earlier versions take it as
//!   the audit line it is.
//! - **What it vouches for** ([`sealed`]): the changes of a batch taken from outside that
//!   are the sealing writer's (their actor is its node id) and lie in the history of the
//!   sealed change — found by walking the batch's own hash links from the sealed change
//!   back. Such a change is taken without verifying its author's signature of it
//!   (`authored.rs`), and so are its author's records in it (every other rule still
//!   applies: key, clock, role, a signature present). Everything else is verified as
//!   before: records a change relays for another writer (a server's void a gate brought
//!   in), the signatures of changes no seal of their author reaches, changes of an author
//!   whose seal does not verify.
//! - **The same rule everywhere**: a batch checked in one step (a push, a sync message, a
//!   ledger file) and a catch-up checked ahead ([`crate::SyncInParts::precheck`]) both
//!   take a seal only from the batch itself, so what one gate takes another takes too. A
//!   change that arrives before its writer's seal has its signature verified.
//!
//! What a seal cannot do: vouch for another device's changes (only its author's records in
//! its author's changes count), or for a change altered on the way (its hash would not be
//! the one the sealed history links to: finding another change under the same hash means
//! breaking SHA-256). A dishonest device can seal (or sign a change of) records whose own
//! signatures are bad; it could as well have signed them, so that gains it nothing, and
//! every gate takes the records alike.

use std::collections::HashMap;

use automerge::{Change, ChangeHash};

use crate::model::NodeId;

/// The action of a seal's audit line.
pub(crate) const ACTION: &str = "seal";
/// A gate seals its history after this many changes of its own since the last seal: fewer
/// than this many of a busy writer's records a late gate verifies one by one (~60 µs each;
/// 32 gates' tails ~0.5 s of one core), for one audit line per this many admissions.
pub const SEAL_EVERY: usize = 256;
/// ... or this long after the first change since the last seal, whichever comes first: the
/// tail of a gate that went quiet, or that restarted. Long, so that 32 gates of a two-hour
/// event add a few hundred lines to the audit trail, not tens of thousands.
pub const SEAL_AFTER_MS: i64 = 5 * 60_000;

/// The detail of a seal's audit line: the change it seals.
pub(crate) fn detail(through: &ChangeHash) -> String {
    format!("vouches for its changes through {through}")
}

/// The change a seal's detail names, if it is one.
pub(crate) fn through(detail: &str) -> Option<ChangeHash> {
    let hex = detail.strip_prefix("vouches for its changes through ")?;
    if hex.len() != 64 {
        return None;
    }
    hex.parse().ok()
}

/// Which changes of `changes` a seal of `seals` vouches for, each with its author: a
/// change is vouched for when its author (its actor, a node id) sealed a change of the
/// batch that builds on it, or sealed the change itself. `seals` are (writer, sealed
/// change) pairs whose signatures were checked.
///
/// The batch's own links only: a change reached through one the batch does not carry
/// (held already) is not counted, and neither is one out of causal order (a change listed
/// after one that builds on it; automerge lists a document's and a sync message's changes
/// in causal order), so a doubtful case costs a verification, never a record unchecked.
pub(crate) fn sealed(
    changes: &[Change],
    seals: &[(NodeId, ChangeHash)],
) -> HashMap<ChangeHash, NodeId> {
    let mut writers: Vec<&NodeId> = seals.iter().map(|(w, _)| w).collect();
    writers.sort();
    writers.dedup();
    if writers.is_empty() || changes.is_empty() {
        return HashMap::new();
    }
    let index: HashMap<ChangeHash, usize> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| (c.hash(), i))
        .collect();
    // One bit per sealing writer, per change: "a seal of this writer builds on it".
    let words = writers.len().div_ceil(64);
    let mut bits = vec![0u64; changes.len() * words];
    let bit = |w: usize| (w / 64, 1u64 << (w % 64));
    for (writer, hash) in seals {
        let (Ok(w), Some(&i)) = (writers.binary_search(&writer), index.get(hash)) else {
            continue;
        };
        let (word, mask) = bit(w);
        bits[i * words + word] |= mask;
    }
    // From the newest back: a change's bits are final once every change after it (all
    // that can build on it, in causal order) has passed them on.
    let mut row = vec![0u64; words];
    for i in (0..changes.len()).rev() {
        row.copy_from_slice(&bits[i * words..(i + 1) * words]);
        if row.iter().all(|w| *w == 0) {
            continue;
        }
        for dep in changes[i].deps() {
            if let Some(&j) = index.get(dep)
                && j < i
            {
                for (k, w) in row.iter().enumerate() {
                    bits[j * words + k] |= w;
                }
            }
        }
    }
    let mut out = HashMap::new();
    for (i, change) in changes.iter().enumerate() {
        let Some(author) = crate::authored::node_of(change.actor_id()) else {
            continue;
        };
        let Ok(w) = writers.binary_search(&&author) else {
            continue;
        };
        let (word, mask) = bit(w);
        if bits[i * words + word] & mask != 0 {
            out.insert(change.hash(), author);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use automerge::{ActorId, AutoCommit, ROOT, transaction::Transactable};

    use super::*;

    fn node(i: u8) -> NodeId {
        NodeId::parse(&format!("{:0>26}", i)).unwrap()
    }

    fn commit(doc: &mut AutoCommit, key: &str) -> ChangeHash {
        doc.put(ROOT, key, key).unwrap();
        doc.commit().unwrap()
    }

    #[test]
    fn a_seal_vouches_for_its_writers_history_and_nothing_else() {
        let (a, b) = (node(1), node(2));
        let mut da = AutoCommit::new().with_actor(ActorId::from(a.as_str().as_bytes()));
        let a1 = commit(&mut da, "a1");
        let mut db = da.fork().with_actor(ActorId::from(b.as_str().as_bytes()));
        let b1 = commit(&mut db, "b1");
        da.merge(&mut db).unwrap();
        let a2 = commit(&mut da, "a2");
        let a3 = commit(&mut da, "a3"); // after the seal's change
        let changes: Vec<Change> = da.get_changes(&[]);
        // A's seal over a2: a1 and a2 are A's and in its history; b1 is B's; a3 is after it.
        let got = sealed(&changes, &[(a.clone(), a2)]);
        let mut expect = HashMap::new();
        expect.insert(a1, a.clone());
        expect.insert(a2, a.clone());
        assert_eq!(got, expect);
        assert!(!got.contains_key(&b1) && !got.contains_key(&a3));
        // B's seal over A's a2 vouches for B's b1 (in its history) only.
        let got = sealed(&changes, &[(b.clone(), a2)]);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![(b1, b.clone())]);
        // A seal of a change the batch does not carry vouches for nothing.
        let elsewhere = commit(&mut AutoCommit::new(), "x");
        assert!(sealed(&changes, &[(a.clone(), elsewhere)]).is_empty());
        // Out of causal order (the sealed change listed first): nothing is taken on trust.
        let mut reversed = changes.clone();
        reversed.reverse();
        let got = sealed(&reversed, &[(a.clone(), a2)]);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![(a2, a)]);
    }

    #[test]
    fn many_writers_each_get_their_own_bit() {
        let writers: Vec<NodeId> = (0..70).map(node).collect();
        let mut doc = AutoCommit::new();
        let mut seals = Vec::new();
        let mut own = HashMap::new();
        for w in &writers {
            doc.set_actor(ActorId::from(w.as_str().as_bytes()));
            let h = commit(&mut doc, w.as_str());
            own.insert(h, w.clone());
            // Every other writer seals; the rest are reached by later seals' history but
            // are not theirs, so they stay out.
            if own.len() % 2 == 0 {
                seals.push((w.clone(), h));
            }
        }
        let changes: Vec<Change> = doc.get_changes(&[]);
        let got = sealed(&changes, &seals);
        assert_eq!(got.len(), 35);
        for (h, w) in &got {
            assert_eq!(own.get(h), Some(w));
            assert!(seals.iter().any(|(s, sh)| s == w && sh == h));
        }
    }

    #[test]
    fn a_seal_detail_reads_back_and_nothing_else_does() {
        let h = commit(&mut AutoCommit::new(), "k");
        assert_eq!(through(&detail(&h)), Some(h));
        assert_eq!(through("vouches for its changes through 00"), None);
        assert_eq!(through(&detail(&h).replace("through", "until")), None);
        assert_eq!(
            through(&format!("{}z", &detail(&h)[..detail(&h).len() - 1])),
            None
        );
    }
}
