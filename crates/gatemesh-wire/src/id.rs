//! Ids and names that travel: each has exactly one rule, checked when it is made and when it
//! is read (serde goes through the same constructor), so a value one side would refuse the
//! other refuses too.

use std::{fmt, str::FromStr};

use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::WireError;

/// Makes 128 random bits into 26 lower-case base32 characters.
fn random_id() -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    let value = u128::from_be_bytes(bytes);
    (0..26)
        .map(|i| ALPHABET[((value >> (5 * (25 - i))) & 0x1f) as usize] as char)
        .collect()
}

/// `A-Z a-z 0-9 . _ -`, `1..=max` characters: safe in keys, URLs, file names, logs, mDNS.
fn plain(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The string newtype boilerplate: serde through the checked constructor, `Display`,
/// `FromStr`, `as_str`.
macro_rules! checked_string {
    ($name:ident, $what:literal) => {
        impl $name {
            /// The value as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = WireError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s).ok_or_else(|| WireError::Invalid {
                    what: $what,
                    value: crate::error::shorten(s),
                })
            }
        }

        impl TryFrom<String> for $name {
            type Error = WireError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> Self {
                v.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

macro_rules! random_id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
        pub struct $name(String);

        impl $name {
            /// A fresh id: 128 random bits from the operating system.
            pub fn random() -> Self {
                Self(random_id())
            }

            /// 1-64 characters of `A-Z a-z 0-9 . _ -`: ids travel in keys, URLs and logs.
            pub fn parse(s: &str) -> Option<Self> {
                plain(s, 64).then(|| Self(s.to_owned()))
            }
        }

        checked_string!($name, $what);
    };
}

random_id_type!(
    /// A node (gate or observer) of the event, stable across restarts.
    NodeId,
    "node id"
);
random_id_type!(
    /// A redemption, unique across every node and the server: 128 random bits, so no
    /// coordination and no counter that a crash could roll back.
    RedemptionId,
    "redemption id"
);
random_id_type!(
    /// A staff resolution of a flagged ticket.
    ResolutionId,
    "resolution id"
);

/// A device's name within its event (`North-1`): 1-63 characters of `A-Z a-z 0-9 . _ -`, so
/// it fits an mDNS label and the `gatemesh://EVENT/ROLE/NAME` URI of its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct DeviceName(String);

impl DeviceName {
    /// The name, when it keeps the rule.
    pub fn parse(s: &str) -> Option<Self> {
        plain(s, 63).then(|| Self(s.to_owned()))
    }
}

checked_string!(
    DeviceName,
    "device name (1-63 characters of A-Z a-z 0-9 . _ -)"
);

/// A check-in list's id within its event (`main`, `vip`, `backstage`): 1-64 characters of
/// `A-Z a-z 0-9 . _ -`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct ListId(String);

impl ListId {
    /// The id, when it keeps the rule.
    pub fn parse(s: &str) -> Option<Self> {
        plain(s, 64).then(|| Self(s.to_owned()))
    }
}

checked_string!(ListId, "list id (1-64 characters of A-Z a-z 0-9 . _ -)");

/// A short name people gave something: a gate as it shows on screens ("North 1"), a
/// scanner, a member of staff. 1-64 bytes, not only spaces, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Label(String);

impl Label {
    /// The longest label, in bytes.
    pub const MAX: usize = 64;

    /// The label, when it keeps the rule.
    pub fn parse(s: &str) -> Option<Self> {
        let ok = (1..=Self::MAX).contains(&s.len())
            && !s.trim().is_empty()
            && !s.chars().any(char::is_control);
        ok.then(|| Self(s.to_owned()))
    }
}

checked_string!(Label, "name (1-64 bytes of printable text)");

impl Label {
    /// A person's name (a member of staff): a [`Label`] without `/`, so that a decision's
    /// author as the server records it, `DEVICE / PERSON` ([`Label::decided_at`]), reads one
    /// way only.
    pub fn person(s: &str) -> Option<Self> {
        Self::parse(s).filter(|l| !l.0.contains('/'))
    }

    /// Who decided, bound to where: the device name from the caller's credential, then the
    /// person signed in there (e.g. `North-1 / Alice`). `None` when `person` is no
    /// [`Label::person`] or the two together pass [`Label::MAX`].
    pub fn decided_at(device: &DeviceName, person: &str) -> Option<Self> {
        let person = Self::person(person)?;
        Self::parse(&format!("{} / {}", device.as_str(), person.0))
    }
}

/// A note staff wrote with a decision: at most [`Note::MAX`] bytes, no control characters but
/// line breaks and tabs. May be empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Note(String);

impl Note {
    /// The longest note, in bytes.
    pub const MAX: usize = 500;

    /// The note, when it keeps the rule.
    pub fn parse(s: &str) -> Option<Self> {
        let ok = s.len() <= Self::MAX
            && !s
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'));
        ok.then(|| Self(s.to_owned()))
    }
}

checked_string!(Note, "note (at most 500 bytes)");

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn random_ids_keep_their_own_rule() {
        for _ in 0..100 {
            let id = RedemptionId::random();
            assert_eq!(RedemptionId::parse(id.as_str()), Some(id.clone()));
            assert_eq!(id.as_str().len(), 26);
        }
    }

    #[test]
    fn serde_refuses_what_parse_refuses() {
        for bad in ["", "a b", "é", "a/b", &"x".repeat(65)] {
            let json = serde_json::to_string(bad).unwrap();
            assert!(
                serde_json::from_str::<RedemptionId>(&json).is_err(),
                "{bad:?}"
            );
            assert!(RedemptionId::parse(bad).is_none(), "{bad:?}");
        }
        assert!(serde_json::from_str::<DeviceName>(&format!("\"{}\"", "n".repeat(64))).is_err());
        assert!(serde_json::from_str::<Label>("\"North 1\"").is_ok());
        assert!(serde_json::from_str::<Label>("\"   \"").is_err());
        assert!(serde_json::from_str::<Label>("\"a\\u0000b\"").is_err());
        assert!(serde_json::from_str::<Note>("\"line one\\nline two\"").is_ok());
        assert!(serde_json::from_str::<Note>(&format!("\"{}\"", "n".repeat(501))).is_err());
    }

    #[test]
    fn a_decision_names_its_device_then_its_person() {
        let north = DeviceName::parse("North-1").unwrap();
        assert_eq!(
            Label::decided_at(&north, "Alice").unwrap().as_str(),
            "North-1 / Alice"
        );
        // A person's name cannot pass for another device's decision, nor be empty.
        for bad in ["North-2 / Bob", "a/b", "", "  ", "a\u{0}b"] {
            assert!(Label::person(bad).is_none(), "{bad:?}");
            assert!(Label::decided_at(&north, bad).is_none(), "{bad:?}");
        }
        // Together at most 64 bytes.
        assert!(Label::decided_at(&north, &"x".repeat(54)).is_some());
        assert!(Label::decided_at(&north, &"x".repeat(55)).is_none());
    }

    proptest! {
        // Whatever the text, the typed value and serde agree: both take it or both refuse.
        #[test]
        fn parse_and_serde_agree(s in ".{0,80}") {
            let json = serde_json::to_string(&s).unwrap();
            prop_assert_eq!(RedemptionId::parse(&s).is_some(), serde_json::from_str::<RedemptionId>(&json).is_ok());
            prop_assert_eq!(DeviceName::parse(&s).is_some(), serde_json::from_str::<DeviceName>(&json).is_ok());
            prop_assert_eq!(Label::parse(&s).is_some(), serde_json::from_str::<Label>(&json).is_ok());
            prop_assert_eq!(Note::parse(&s).is_some(), serde_json::from_str::<Note>(&json).is_ok());
        }
    }
}
