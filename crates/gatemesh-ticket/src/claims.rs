use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::{Product, TicketId};

/// What a ticket says about itself. Both formats carry exactly these fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The ticket, unique within its event.
    pub tid: TicketId,
    /// The event the ticket admits to.
    pub eid: EventId,
    /// The seat label, if the ticket has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat: Option<Seat>,
    /// Issued at, seconds since 1970. Informational only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// Not valid before, seconds since 1970.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Not valid at or after, seconds since 1970.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// The ticket's product (claim `prod`); `None` is the event's default product.
    #[serde(default, rename = "prod", skip_serializing_if = "Option::is_none")]
    pub product: Option<Product>,
}

/// A field value that does not meet its rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidField {
    /// An event id that is not 1-64 characters of `A-Z a-z 0-9 . _ -`.
    #[error("event id must be 1-64 characters of A-Z a-z 0-9 . _ -, got {0:?}")]
    EventId(String),
    /// A ticket id that is not 1-64 printable ASCII characters without `"`, `\` or `,`.
    #[error("ticket id must be 1-64 printable characters without spaces or quotes, got {0:?}")]
    TicketId(String),
    /// A seat label that is empty, longer than 64 bytes, holds a control character or
    /// starts or ends with white space.
    #[error(
        "seat label must be 1-64 bytes of printable text without surrounding spaces, got {0:?}"
    )]
    Seat(String),
    /// A key id that is not 1-64 characters of `A-Z a-z 0-9 . _ -`.
    #[error("key id must be 1-64 characters of A-Z a-z 0-9 . _ -, got {0:?}")]
    KeyId(String),
    /// A product code that is not 1-16 characters of `A-Z a-z 0-9 _ -`, or is all digits.
    #[error(
        "product code must be 1-16 characters of A-Z a-z 0-9 _ - and not all digits, got {0:?}"
    )]
    Product(String),
    /// A product number outside 1-255.
    #[error("product number must be 1-255, got {0}")]
    ProductNumber(u64),
}

/// Event ids end up in file names, URLs and mDNS TXT records, so they are kept plain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EventId(String);

pub(crate) fn is_plain_ident(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl EventId {
    /// `s` as an event id, when it is 1-64 characters of `A-Z a-z 0-9 . _ -`.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidField> {
        let s = s.into();
        if is_plain_ident(&s) {
            Ok(Self(s))
        } else {
            Err(InvalidField::EventId(s))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EventId {
    type Error = InvalidField;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<EventId> for String {
    fn from(e: EventId) -> Self {
        e.0
    }
}

impl FromStr for EventId {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A seat label as printed on the ticket and shown at the gate ("A-12", "Row 5 Seat 12").
///
/// Any printable text up to 64 bytes; labels made of `0-9 A-Z a-z`, space and `-` pack
/// into 6 bits a character in GM1, anything else costs a byte or more per character.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Seat(String);

impl Seat {
    /// Longest label, in bytes of UTF-8.
    pub const MAX_LEN: usize = 64;

    /// `s` as a seat label, when it is 1 to [`Seat::MAX_LEN`] bytes with no control character
    /// and no white space at either end.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidField> {
        let s = s.into();
        let ok = (1..=Self::MAX_LEN).contains(&s.len())
            && !s.chars().any(char::is_control)
            && s.trim() == s;
        if ok {
            Ok(Self(s))
        } else {
            Err(InvalidField::Seat(s))
        }
    }

    /// The label as printed.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Seat {
    type Error = InvalidField;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<Seat> for String {
    fn from(s: Seat) -> Self {
        s.0
    }
}

impl FromStr for Seat {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
