use std::{fmt, str::FromStr};

use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::InvalidField;

/// A ticket id, unique within its event.
///
/// Ids that gatemesh makes are 64 random bits written as 13 characters of Crockford base32
/// (`0-9 A-Z` without `I L O U`), short enough to type at a gate and to fit GM1. Tickets from
/// other systems may carry any id of 1-64 printable characters; those travel only as JWT.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TicketId(String);

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const COMPACT_LEN: usize = 13;

impl TicketId {
    /// `s` as a ticket id, when it is 1-64 printable ASCII characters other than `"`, `\` and
    /// `,` (the ledger keys records by `<tid>,<id>`). Any such id travels as JWT; only
    /// compact ones travel as GM1.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidField> {
        let s = s.into();
        let ok = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b','));
        if ok {
            Ok(Self(s))
        } else {
            Err(InvalidField::TicketId(s))
        }
    }

    /// A fresh random id from the operating system's generator. Callers that must never
    /// repeat an id within an event (batch issue, the server) still check it against the
    /// ids already issued: 64 random bits make a clash unlikely, not impossible.
    pub fn generate() -> Self {
        Self::from_compact(OsRng.next_u64())
    }

    /// The 13-character id that spells `value`; [`TicketId::compact`] reads it back.
    pub fn from_compact(value: u64) -> Self {
        let mut out = [0u8; COMPACT_LEN];
        for (i, slot) in out.iter_mut().enumerate() {
            let shift = 5 * (COMPACT_LEN - 1 - i);
            // The first character holds the top 4 bits only (13 * 5 = 65).
            *slot = CROCKFORD[((value >> shift) & 0x1f) as usize];
        }
        Self(out.iter().map(|&b| b as char).collect())
    }

    /// The 64-bit value of a gatemesh-made id, `None` for any other id. Only the canonical
    /// upper-case spelling counts, so one ticket has exactly one id string.
    pub fn compact(&self) -> Option<u64> {
        let bytes = self.0.as_bytes();
        if bytes.len() != COMPACT_LEN {
            return None;
        }
        let mut value: u64 = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let digit = CROCKFORD.iter().position(|&c| c == b)? as u64;
            if i == 0 && digit > 0xf {
                return None;
            }
            value = (value << 5) | digit;
        }
        Some(value)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TicketId {
    type Error = InvalidField;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<TicketId> for String {
    fn from(t: TicketId) -> Self {
        t.0
    }
}

impl FromStr for TicketId {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compact_extremes() {
        assert_eq!(TicketId::from_compact(0).as_str(), "0000000000000");
        assert_eq!(TicketId::from_compact(u64::MAX).as_str(), "FZZZZZZZZZZZZ");
        assert_eq!(TicketId::new("GZZZZZZZZZZZZ").unwrap().compact(), None);
        assert_eq!(TicketId::new("T-JOSE-0001").unwrap().compact(), None);
        assert_eq!(TicketId::new("fzzzzzzzzzzzz").unwrap().compact(), None);
    }

    #[test]
    fn generated_ids_are_valid_and_differ() {
        let a = TicketId::generate();
        let b = TicketId::generate();
        assert_ne!(a, b);
        assert!(a.compact().is_some());
        assert_eq!(TicketId::new(a.as_str()).unwrap(), a);
    }

    proptest! {
        #[test]
        fn compact_round_trips(v: u64) {
            let id = TicketId::from_compact(v);
            prop_assert_eq!(id.compact(), Some(v));
        }

        #[test]
        fn any_string_never_panics(s: String) {
            if let Ok(id) = TicketId::new(s) {
                let _ = id.compact();
            }
        }
    }
}
