use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Claims, EventId, KeyId, Keyring, MAX_CODE_LEN};

/// The two wire formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Compact JWS, ES256 (see [`crate::jwt`]).
    Jwt,
    /// `GM1:` + base45, for small QR symbols (see [`crate::gm1`]).
    Gm1,
}

impl Format {
    /// The name used on the command line and in JSON: `jwt` or `gm1`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jwt => "jwt",
            Self::Gm1 => "gm1",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jwt" => Ok(Self::Jwt),
            "gm1" => Ok(Self::Gm1),
            other => Err(format!(
                "unknown ticket format {other:?} (expected jwt or gm1)"
            )),
        }
    }
}

/// Why a code is not a valid ticket here, as the gate reports it. The names are the
/// verdict reasons of the product (`bad_signature`, …) and are stable on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// Not a ticket code at all, or a damaged one.
    Unreadable,
    /// Forged or altered, or signed with an algorithm other than ES256.
    BadSignature,
    /// Signed by a key this gate does not hold.
    UnknownKey,
    /// A ticket of another event, or a GM1 ticket checked without an event.
    WrongEvent,
    /// At or past its `exp`.
    Expired,
    /// Before its `nbf`.
    NotYetValid,
}

impl Reason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreadable => "unreadable",
            Self::BadSignature => "bad_signature",
            Self::UnknownKey => "unknown_key",
            Self::WrongEvent => "wrong_event",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused code. [`VerifyError::reason`] gives the typed reason; `Display` gives a
/// sentence for people. Nothing in a refusal echoes the whole code back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// Too long, neither format, or broken structure: encoding, layout, JSON, unknown flags
    /// or `crit`. The text says what, for people.
    #[error("not a ticket: {0}")]
    Unreadable(String),
    /// No key of the ring with the code's id or tag signed it, the signature is not 64 bytes,
    /// or the header names an algorithm other than ES256.
    #[error("the signature does not match: {0}")]
    BadSignature(String),
    /// The code names (JWT) or tags (GM1) a key that is not in the ring.
    #[error("signed with key {kid:?}, which this gate does not hold")]
    UnknownKey {
        /// The JWT's `kid`, quoted and cut to 40 characters; for GM1, `tag` and the key tag
        /// in hex.
        kid: String,
    },
    /// The ticket's event is not the verifier's, or a GM1 code met a verifier with no event.
    #[error("the ticket is for another event{}", found.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    WrongEvent {
        /// The event a JWT names; `None` for GM1, which carries only a tag.
        found: Option<EventId>,
    },
    /// Checked at or after `exp` plus the leeway.
    #[error("the ticket expired at {} (checked at {})", rfc3339(*exp), rfc3339(*at))]
    Expired {
        /// The ticket's `exp`, seconds since 1970.
        exp: i64,
        /// When it was checked, seconds since 1970.
        at: i64,
    },
    /// Checked before `nbf` minus the leeway.
    #[error("the ticket is valid only from {} (checked at {})", rfc3339(*nbf), rfc3339(*at))]
    NotYetValid {
        /// The ticket's `nbf`, seconds since 1970.
        nbf: i64,
        /// When it was checked, seconds since 1970.
        at: i64,
    },
}

/// Seconds since 1970 as people and the rest of gatemesh write instants (RFC 3339, UTC); an
/// instant out of that range as the number it is.
fn rfc3339(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{secs} s since 1970"))
}

impl VerifyError {
    /// The typed reason, for the verdict; branch on this, never on the text.
    pub fn reason(&self) -> Reason {
        match self {
            Self::Unreadable(_) => Reason::Unreadable,
            Self::BadSignature(_) => Reason::BadSignature,
            Self::UnknownKey { .. } => Reason::UnknownKey,
            Self::WrongEvent { .. } => Reason::WrongEvent,
            Self::Expired { .. } => Reason::Expired,
            Self::NotYetValid { .. } => Reason::NotYetValid,
        }
    }
}

/// A ticket whose signature, event and validity all checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The format the code was in.
    pub format: Format,
    /// The key that signed it.
    pub kid: KeyId,
    /// What the ticket says; `iat` is always `None` for GM1.
    pub claims: Claims,
}

/// Checks codes against a keyring, an event and a moment.
///
/// GM1 tickets carry only a tag of their event and sign the full event id, so they can only
/// be checked by a verifier that knows its event ([`Verifier::for_event`]); a verifier with
/// no event refuses them as `wrong_event`. JWT tickets name their event and are checked
/// against it when one is set.
#[derive(Debug, Clone)]
pub struct Verifier {
    keyring: Keyring,
    event: Option<EventId>,
    leeway: i64,
}

impl Verifier {
    /// A verifier of `keyring` with no event and no leeway: it refuses every GM1 code.
    pub fn new(keyring: Keyring) -> Self {
        Self {
            keyring,
            event: None,
            leeway: 0,
        }
    }

    /// Accepts only tickets of `event`; needed for GM1.
    pub fn for_event(mut self, event: EventId) -> Self {
        self.event = Some(event);
        self
    }

    /// Seconds of clock skew forgiven at both ends of the validity window. Gate laptops'
    /// clocks drift; the issuer's intent is a day or an evening, not a second.
    pub fn with_leeway(mut self, seconds: u32) -> Self {
        self.leeway = i64::from(seconds);
        self
    }

    /// The event set by [`Verifier::for_event`].
    pub fn event(&self) -> Option<&EventId> {
        self.event.as_ref()
    }

    /// The keys it accepts.
    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// Verifies one scanned code at time `at` (seconds since 1970).
    ///
    /// Surrounding whitespace (a scanner's Enter or Tab) is ignored. Order of checks:
    /// structure, key, signature, then event and validity, so nothing unsigned is ever
    /// trusted.
    pub fn verify(&self, code: &str, at: i64) -> Result<Verified, VerifyError> {
        if code.len() > MAX_CODE_LEN {
            return Err(VerifyError::Unreadable(format!(
                "{} bytes is longer than any ticket ({MAX_CODE_LEN} at most)",
                code.len()
            )));
        }
        let code = code.trim();
        let verified = match detect(code) {
            Some(Format::Gm1) => {
                let event = self
                    .event
                    .as_ref()
                    .ok_or(VerifyError::WrongEvent { found: None })?;
                crate::gm1::verify(code, &self.keyring, event)?
            }
            Some(Format::Jwt) => crate::jwt::verify(code, &self.keyring)?,
            None => {
                return Err(VerifyError::Unreadable(
                    "neither a GM1 code nor a JWT".into(),
                ));
            }
        };
        if let Some(event) = &self.event
            && &verified.claims.eid != event
        {
            return Err(VerifyError::WrongEvent {
                found: Some(verified.claims.eid),
            });
        }
        if let Some(exp) = verified.claims.exp
            && at >= exp.saturating_add(self.leeway)
        {
            return Err(VerifyError::Expired { exp, at });
        }
        if let Some(nbf) = verified.claims.nbf
            && at < nbf.saturating_sub(self.leeway)
        {
            return Err(VerifyError::NotYetValid { nbf, at });
        }
        Ok(verified)
    }
}

/// Which format a code claims to be, by its shape alone. GM1 is matched without regard to
/// case: base45 has no lower-case letters, and a scanner typing with Caps Lock on inverts
/// them.
pub fn detect(code: &str) -> Option<Format> {
    if code
        .get(..4)
        .is_some_and(|head| head.eq_ignore_ascii_case(crate::gm1::PREFIX))
    {
        Some(Format::Gm1)
    } else if code.bytes().filter(|&b| b == b'.').count() == 2 {
        Some(Format::Jwt)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_in_messages_read_as_rfc3339() {
        let expired = VerifyError::Expired {
            exp: 1_780_000_000,
            at: 1_780_000_100,
        };
        assert_eq!(
            expired.to_string(),
            "the ticket expired at 2026-05-28T20:26:40Z (checked at 2026-05-28T20:28:20Z)"
        );
        let early = VerifyError::NotYetValid {
            nbf: 1_780_000_100,
            at: 1_780_000_000,
        };
        assert_eq!(
            early.to_string(),
            "the ticket is valid only from 2026-05-28T20:28:20Z (checked at 2026-05-28T20:26:40Z)"
        );
        // An instant no calendar holds is still said.
        let odd = VerifyError::Expired {
            exp: i64::MIN,
            at: 0,
        };
        assert!(odd.to_string().contains("s since 1970"), "{odd}");
    }
}
