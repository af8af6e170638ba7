//! JWT tickets: compact JWS with `alg: ES256`, claims `tid`, `eid`, `seat`, `iat`, `nbf`,
//! `exp`.
//!
//! Strict on purpose: only ES256 (so no `none`, no HS256 keyed with a public key), only the
//! 64-byte `r || s` signature JWS specifies (not DER), canonical unpadded base64url, JSON
//! headers and claims with no duplicate members, no `crit` extensions. A `kid` header picks
//! the key; without one (as `jose`'s `SignJWT` makes by default) every key in the ring is
//! tried.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use crate::{Claims, IssuerKey, Keyring, PublicKey, Verified, VerifyError, verify::Format};

#[derive(Serialize)]
struct HeaderOut<'a> {
    alg: &'static str,
    kid: &'a str,
}

#[derive(Deserialize)]
struct HeaderIn {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

pub(crate) fn encode(key: &IssuerKey, claims: &Claims) -> String {
    // Serialising these plain structs to JSON cannot fail.
    let header = serde_json::to_vec(&HeaderOut {
        alg: "ES256",
        kid: key.kid().as_str(),
    })
    .unwrap_or_default();
    let payload = serde_json::to_vec(claims).unwrap_or_default();
    let mut out = URL_SAFE_NO_PAD.encode(header);
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(payload));
    let sig = key.sign_raw(out.as_bytes());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(sig));
    out
}

/// Shortens text taken from a token before it goes into an error message.
fn quoted(s: &str) -> String {
    let short: String = s.chars().take(40).collect();
    format!("{short:?}")
}

fn segment(part: Option<&str>, what: &str) -> Result<Vec<u8>, VerifyError> {
    let part = part
        .filter(|p| !p.is_empty())
        .ok_or_else(|| VerifyError::Unreadable(format!("the JWT has no {what}")))?;
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| VerifyError::Unreadable(format!("the JWT {what} is not base64url")))
}

/// Checks structure, key and signature; the caller checks event and validity times.
pub(crate) fn verify(code: &str, keyring: &Keyring) -> Result<Verified, VerifyError> {
    let mut parts = code.split('.');
    let (h, p, s) = (parts.next(), parts.next(), parts.next());
    if parts.next().is_some() {
        return Err(VerifyError::Unreadable(
            "a JWT has exactly three parts".into(),
        ));
    }
    let header: HeaderIn = serde_json::from_slice(&segment(h, "header")?)
        .map_err(|e| VerifyError::Unreadable(format!("the JWT header is not valid: {e}")))?;
    if header.alg != "ES256" {
        return Err(VerifyError::BadSignature(format!(
            "algorithm {} is not accepted, tickets are signed with ES256",
            quoted(&header.alg)
        )));
    }
    if header.crit.is_some() {
        return Err(VerifyError::Unreadable(
            "the JWT demands extensions (crit) we do not support".into(),
        ));
    }
    let payload = segment(p, "payload")?;
    let sig = segment(s, "signature")?;
    if sig.len() != 64 {
        return Err(VerifyError::BadSignature(format!(
            "an ES256 signature is 64 bytes, this one is {}",
            sig.len()
        )));
    }
    let mut raw = [0u8; 64];
    raw.copy_from_slice(&sig);
    // Both parts were present, so the signing input is the code up to the second dot.
    let signed_len = h.map_or(0, str::len) + 1 + p.map_or(0, str::len);
    let signed = &code.as_bytes()[..signed_len];
    let checks = |k: &PublicKey| k.verifies(signed, &raw);

    let key = match &header.kid {
        Some(kid) => {
            let key = keyring
                .by_str_kid(kid)
                .ok_or_else(|| VerifyError::UnknownKey { kid: quoted(kid) })?;
            checks(key).then_some(key)
        }
        None => keyring.iter().find(|k| checks(k)),
    }
    .ok_or_else(|| VerifyError::BadSignature("no issuer key this gate holds signed it".into()))?;

    let claims: Claims = serde_json::from_slice(&payload)
        .map_err(|e| VerifyError::Unreadable(format!("the ticket claims are not valid: {e}")))?;
    Ok(Verified {
        format: Format::Jwt,
        kid: key.kid().clone(),
        claims,
    })
}
