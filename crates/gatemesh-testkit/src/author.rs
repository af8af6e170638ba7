//! Changes signed as their author signs them (`gatemesh-ledger`'s `authored.rs`), made here
//! apart from the ledger's code: for tests whose dishonest device, key in hand, crafts
//! changes with automerge itself and sends them as a gate would.

use std::collections::HashMap;

use automerge::{AutoCommit, Change, ChangeHash};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};

/// Replaces `doc` with the same document in which every change since `since` written under
/// `doc`'s actor is signed by `sign` (a P-256 signature, r‖s, of the bytes given, in either
/// form): encoded with no message, the domain, the event and those bytes signed, `sig1:`
/// and the low-s signature as its message. What builds on a change re-signed is rewritten
/// to its new hash; other authors' changes are kept as they are. The actor stays.
pub fn sign_as_author(
    doc: &mut AutoCommit,
    since: &[ChangeHash],
    event: &str,
    sign: impl Fn(&[u8]) -> Vec<u8>,
) {
    let actor = doc.get_actor().clone();
    let mut out = doc
        .fork_at(since)
        .expect("the changes to sign build on `since`");
    let mut renamed: HashMap<ChangeHash, ChangeHash> = HashMap::new();
    for change in doc.get_changes(since) {
        let mut e = change.decode();
        e.deps = e
            .deps
            .iter()
            .map(|d| renamed.get(d).copied().unwrap_or(*d))
            .collect();
        e.deps.sort();
        if e.actor_id == actor {
            e.message = None;
            let blank = Change::from(e.clone());
            let mut message = format!("gatemesh-change-v1\0{event}\0").into_bytes();
            message.extend_from_slice(blank.raw_bytes());
            let sig = p256::ecdsa::Signature::from_slice(&sign(&message))
                .expect("a P-256 signature, r‖s");
            let sig = sig.normalize_s().unwrap_or(sig);
            e.message = Some(format!("sig1:{}", B64.encode(sig.to_bytes())));
        }
        let made = Change::from(e);
        renamed.insert(change.hash(), made.hash());
        out.apply_changes([made])
            .expect("the re-signed change applies");
    }
    out.set_actor(actor);
    *doc = out;
}
