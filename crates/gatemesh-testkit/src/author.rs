//! Changes signed as their author signs them (`gatemesh-ledger`'s `authored.rs`), made here
//! apart from the ledger's code: for tests whose dishonest device, key in hand, crafts
//! changes with automerge itself and sends them as a gate would.

use std::collections::HashMap;

use automerge::{AutoCommit, Change, ChangeHash};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};

/// The bytes an author's signature of `change` covers: the domain, the event and the change
/// encoded with no message.
pub fn covered(change: &Change, event: &str) -> Vec<u8> {
    let mut e = change.decode();
    e.message = None;
    let mut message = format!("gatemesh-change-v1\0{event}\0").into_bytes();
    message.extend_from_slice(Change::from(e).raw_bytes());
    message
}

/// A change's message carrying `sig` as it is (a test may give either form).
pub fn signature_text(sig: &p256::ecdsa::Signature) -> String {
    format!("sig1:{}", B64.encode(sig.to_bytes()))
}

/// The signature a change's message carries, if it reads as one.
pub fn signature_of(change: &Change) -> Option<p256::ecdsa::Signature> {
    let text = change.message()?.strip_prefix("sig1:")?;
    p256::ecdsa::Signature::from_slice(&B64.decode(text).ok()?).ok()
}

/// Replaces `doc` with the same document in which every change since `since` written under
/// `doc`'s actor is signed by `sign` (a P-256 signature, r‖s, of the bytes given, in either
/// form): [`covered`] signed, `sig1:` and the low-s signature as its message. What builds on
/// a change re-signed is rewritten to its new hash; other authors' changes are kept as they
/// are. The actor stays.
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
            let sig = p256::ecdsa::Signature::from_slice(&sign(&covered(
                &Change::from(e.clone()),
                event,
            )))
            .expect("a P-256 signature, r‖s");
            e.message = Some(signature_text(&sig.normalize_s().unwrap_or(sig)));
        }
        let made = Change::from(e);
        renamed.insert(change.hash(), made.hash());
        out.apply_changes([made])
            .expect("the re-signed change applies");
    }
    out.set_actor(actor);
    *doc = out;
}
