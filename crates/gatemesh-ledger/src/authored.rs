//! Every change is signed by its author: nobody makes a change in another device's name.
//!
//! Each record carries its writer's signature (`sign.rs`), but the automerge change that
//! carries records is more than its records: its author (actor), its sequence number, the
//! changes it builds on, its time and message — all in the bytes its hash covers. Automerge
//! 0.12 holds one change per author and sequence number: once a gate holds a change as
//! author N's 7th, it refuses every other (`DuplicateSeqNumber`), and with it every change
//! that builds on that one. So a device that could put a change in N's name — N's own
//! genuine records re-wrapped with another message, or a record of its own, or nothing at
//! all — would cut every gate it reaches first off from N's admissions for good, and soon
//! from everyone's. The records' signatures do not stop that; this does:
//!
//! - **The signature** ([`sign`]): a gate writes its change whole (`Ledger::commit_own`),
//!   encodes it with an empty message, signs [`DOMAIN`], the event and those bytes with its
//!   mesh key, and commits the change with the signature as its message ([`PREFIX`], then
//!   base64url of the 64-byte r‖s). The change it applies to its own document is that one,
//!   byte for byte.
//! - **One form only** ([`claim`]): an ECDSA signature has a second valid form (s and n−s)
//!   and a change could be encoded more than one way; either would give the same signed
//!   content another hash. So a change from outside must be automerge's canonical encoding
//!   of what it decodes to, and its signature the low-s form (this module writes only that),
//!   in the one base64 text of its bytes.
//! - **The rule** (`admit.rs`): a change from outside is taken only when its author (its
//!   actor, a node id) is a device of this event that signed it, or whose seal (`seal.rs`)
//!   vouches for it by hash. A record in such a change whose writer is the change's author
//!   is vouched for by the change and not verified again; records a change relays for
//!   another writer are verified one by one, as always.
//!
//! Changes written before this rule carry no signature (their message names what they
//! write): a batch takes them only under their author's seal, which an upgraded gate writes
//! soon after it opens (`Ledger::open`).
//!
//! **One actor per opening** ([`incarnation`]): a node writes under its node id, `~`, and
//! 40 random bits, fresh each time its ledger is opened. Two copies of one node's data — a
//! restored backup, a replaced disk filled from an old copy, a spare laptop given the data
//! directory — would otherwise each write the node's next numbers, and every peer holding
//! one would refuse the other (the rule above cannot tell an honest old copy from a thief).
//! A change's author is the node its actor names ([`node_of`]), with or without an
//! incarnation: earlier versions wrote under the bare node id.

use std::num::NonZeroU64;

use automerge::{ActorId, Change, ChangeHash, ExpandedChange, legacy};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use gatemesh_ticket::EventId;
use gatemesh_wire::NodeId;

use crate::{LedgerError, sign::Signer};

/// Separates a change's signature from anything else a mesh key signs (a record's starts
/// with `gatemesh-record-v1`).
const DOMAIN: &[u8] = b"gatemesh-change-v1";
/// How a signed change's message starts; the signature follows.
pub(crate) const PREFIX: &str = "sig1:";

/// Between a node id and the incarnation of its actor (node ids never hold it).
const INCARNATION: char = '~';
/// Characters of an incarnation.
const INCARNATION_LEN: usize = 8;

/// The actor `node` writes under from this opening of its ledger on: its id, `~`, and 40
/// random bits as eight base32 characters (the start of a fresh random id). No other
/// opening, of this copy of its data or of any other, writes under it.
pub(crate) fn incarnation(node: &NodeId) -> ActorId {
    let bits = NodeId::random();
    ActorId::from(format!("{node}{INCARNATION}{}", &bits.as_str()[..INCARNATION_LEN]).as_bytes())
}

/// The node whose change this is: the node id its actor names, with an incarnation after
/// it or (written by an earlier version) without. `None` for an actor that names none.
pub(crate) fn node_of(actor: &ActorId) -> Option<NodeId> {
    let text = std::str::from_utf8(actor.to_bytes()).ok()?;
    let node = match text.split_once(INCARNATION) {
        Some((node, bits))
            if bits.len() == INCARNATION_LEN && bits.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            node
        }
        Some(_) => return None,
        None => text,
    };
    NodeId::parse(node)
}

/// This node's next change, before it is signed.
pub(crate) struct Draft {
    pub actor: ActorId,
    pub seq: u64,
    pub start_op: NonZeroU64,
    /// Sorted.
    pub deps: Vec<ChangeHash>,
    /// Seconds since 1970, as automerge keeps a change's time.
    pub time: i64,
    pub ops: Vec<legacy::Op>,
}

/// The bytes a change's signature covers: the domain, the event and the change encoded
/// with no message.
fn message(event: &EventId, blank: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(DOMAIN.len() + event.as_str().len() + blank.len() + 2);
    for part in [DOMAIN, event.as_str().as_bytes()] {
        out.extend_from_slice(part);
        out.push(0);
    }
    out.extend_from_slice(blank);
    out
}

/// The change `draft` makes, signed by `signer` (unsigned without one: a node with no mesh
/// identity, whose changes no peer takes anyway).
pub(crate) fn sign(
    draft: Draft,
    event: &EventId,
    signer: Option<&Signer>,
) -> Result<Change, LedgerError> {
    let mut expanded = ExpandedChange {
        operations: draft.ops,
        actor_id: draft.actor,
        hash: None,
        seq: draft.seq,
        start_op: draft.start_op,
        time: draft.time,
        message: None,
        deps: draft.deps,
        extra_bytes: Vec::new(),
        author: None,
    };
    let Some(signer) = signer else {
        return Ok(Change::from(expanded));
    };
    let blank = Change::from(expanded.clone());
    let sig = low_s(&signer.sign_raw(&message(event, blank.raw_bytes()))?)?;
    expanded.message = Some(format!("{PREFIX}{}", B64.encode(sig)));
    Ok(Change::from(expanded))
}

/// The low-s form of a 64-byte r‖s P-256 signature (ring makes either form).
fn low_s(sig: &[u8]) -> Result<[u8; 64], LedgerError> {
    let parsed = p256::ecdsa::Signature::from_slice(sig)
        .map_err(|_| LedgerError::Identity("signing made no P-256 signature".into()))?;
    Ok(parsed.normalize_s().unwrap_or(parsed).to_bytes().into())
}

/// What `change`'s author signed, if it is a signed change in its one form: the bytes its
/// signature covers and the signature (base64url), to verify with the author's key. Says
/// why not otherwise.
pub(crate) fn claim(change: &Change, event: &EventId) -> Result<(Vec<u8>, String), String> {
    let Some(text) = change.message() else {
        return Err("an unsigned change (no signature of its author)".into());
    };
    let Some(sig) = text.strip_prefix(PREFIX) else {
        return Err(format!(
            "an unsigned change (written by an earlier gatemesh, its message {:?}; its \
             author's seal would vouch for it)",
            text.chars().take(40).collect::<String>()
        ));
    };
    let bytes = B64
        .decode(sig)
        .ok()
        .filter(|b| b.len() == 64 && B64.encode(b) == sig)
        .ok_or("a change whose signature does not read")?;
    let parsed = p256::ecdsa::Signature::from_slice(&bytes)
        .map_err(|_| "a change whose signature is no P-256 signature")?;
    if parsed.normalize_s().is_some() {
        return Err("a change signed in the high-s form (only the low-s form is taken)".into());
    }
    let mut expanded = change.decode();
    if Change::from(expanded.clone()).hash() != change.hash() {
        return Err("a change not in automerge's canonical encoding".into());
    }
    expanded.message = None;
    let blank = Change::from(expanded);
    Ok((message(event, blank.raw_bytes()), sig.to_owned()))
}

/// Whether `change`'s message is a signature (not what it says of the change: [`claim`]).
pub(crate) fn is_signed(change: &Change) -> bool {
    change.message().is_some_and(|m| m.starts_with(PREFIX))
}

#[cfg(test)]
mod tests {
    use automerge::{AutoCommit, ROOT, transaction::Transactable};

    use super::*;

    #[test]
    fn each_opening_has_an_actor_of_its_own_that_names_its_node() {
        let node = NodeId::random();
        let (one, two) = (incarnation(&node), incarnation(&node));
        assert_ne!(one, two);
        for actor in [&one, &two] {
            assert_eq!(node_of(actor), Some(node.clone()));
            assert_eq!(
                actor.to_bytes().len(),
                node.as_str().len() + 1 + INCARNATION_LEN
            );
        }
        // Earlier versions wrote under the bare node id: still that node's.
        assert_eq!(
            node_of(&ActorId::from(node.as_str().as_bytes())),
            Some(node.clone())
        );
        // Anything else names no node.
        for bad in [
            format!("{node}~"),
            format!("{node}~abc"),
            format!("{node}~abcdefgh~abcdefgh"),
            format!("{node}~abcd/fgh"),
            "~abcdefgh".to_owned(),
            format!("{node} x"),
        ] {
            assert_eq!(node_of(&ActorId::from(bad.as_bytes())), None, "{bad}");
        }
        assert_eq!(node_of(&ActorId::from(&[0xff, 0xfe][..])), None);
    }

    /// A change of `actor` on `deps`, its message a well-formed low-s signature (of nothing).
    fn change_on(deps: Vec<ChangeHash>, actor: &[u8]) -> Change {
        let mut sig = [0u8; 64];
        sig[31] = 1;
        sig[63] = 1;
        Change::from(ExpandedChange {
            operations: Vec::new(),
            actor_id: ActorId::from(actor),
            hash: None,
            seq: 1,
            start_op: NonZeroU64::MIN.saturating_add(10),
            time: 0,
            message: Some(format!("{PREFIX}{}", B64.encode(sig))),
            deps,
            extra_bytes: Vec::new(),
            author: None,
        })
    }

    /// `change` with its bytes from `at` on rewritten by `edit`, its length and checksum
    /// made good again: what a forger re-encoding by hand sends.
    fn edited(change: &Change, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        use sha2::Digest;
        let raw = change.raw_bytes();
        let mut at = 9;
        while raw[at] & 0x80 != 0 {
            at += 1;
        }
        let mut body = raw[at + 1..].to_vec();
        edit(&mut body);
        let mut hashed = vec![raw[8]];
        let mut len = body.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            hashed.push(if len > 0 { byte | 0x80 } else { byte });
            if len == 0 {
                break;
            }
        }
        hashed.extend_from_slice(&body);
        let mut out = raw[..4].to_vec();
        out.extend_from_slice(&sha2::Sha256::digest(&hashed)[..4]);
        out.extend_from_slice(&hashed);
        out
    }

    #[test]
    fn a_change_in_another_encoding_of_the_same_content_is_not_claimed() {
        // Two changes a change can build on; automerge writes them in order. The same
        // change with them the other way round reads as the same content (automerge's
        // parser takes it) under another hash: refused, whatever its signature says.
        let hashes: Vec<ChangeHash> = ["a", "b"]
            .iter()
            .map(|k| {
                let mut doc = AutoCommit::new();
                doc.put(ROOT, *k, *k).unwrap();
                doc.commit().unwrap()
            })
            .collect();
        let mut deps = hashes;
        deps.sort();
        let event = EventId::new("ROCK-2026").unwrap();
        let canonical = change_on(deps, b"north");
        assert!(claim(&canonical, &event).is_ok());
        let swapped = edited(&canonical, |body| {
            assert_eq!(body[0], 2, "two changes built on");
            let first = body[1..33].to_vec();
            body.copy_within(33..65, 1);
            body[33..65].copy_from_slice(&first);
        });
        let parsed = Change::try_from(&swapped[..]).expect("automerge reads it");
        assert_ne!(parsed.hash(), canonical.hash());
        let why = claim(&parsed, &event).unwrap_err();
        assert!(why.contains("canonical encoding"), "{why}");
    }

    #[test]
    fn a_signature_in_another_text_or_form_is_not_claimed() {
        let event = EventId::new("ROCK-2026").unwrap();
        let good = change_on(Vec::new(), b"north");
        let with = |message: Option<String>| {
            let mut e = good.decode();
            e.message = message;
            claim(&Change::from(e), &event)
        };
        let text = good.message().unwrap().to_owned();
        assert!(with(Some(text.clone())).is_ok());
        for (message, expect) in [
            (None, "unsigned"),
            (Some("redemption".to_owned()), "earlier gatemesh"),
            (Some(format!("{text}=")), "does not read"),
            // The last character's two spare bits set: the same bytes in another text.
            (
                Some(format!("{}B", &text[..text.len() - 1])),
                "does not read",
            ),
            (
                Some(format!("{PREFIX}{}", B64.encode([0u8; 64]))),
                "no P-256",
            ),
        ] {
            let why = with(message).unwrap_err();
            assert!(why.contains(expect), "{why}");
        }
    }

    #[test]
    fn a_high_s_signature_is_made_low_and_a_low_one_kept() {
        // Any valid (r, s) pair in range will do for the arithmetic.
        let mut sig = [0u8; 64];
        sig[31] = 7;
        sig[32] = 0xff;
        sig[63] = 1;
        let low = low_s(&sig).unwrap();
        assert_ne!(low, sig, "s past n/2 is replaced by n - s");
        assert_eq!(low[..32], sig[..32]);
        assert_eq!(low_s(&low).unwrap(), low);
    }
}
