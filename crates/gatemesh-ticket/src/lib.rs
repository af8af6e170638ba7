//! Signed gatemesh tickets.
//!
//! A ticket is signed once, at purchase, with the issuer's P-256 private key. Gates hold only
//! public keys and verify offline, so a stolen gate laptop can check tickets but never forge
//! them. Two wire formats carry the same [`Claims`]:
//!
//! - **JWT** (compact JWS, `alg: ES256`): interoperable with the `jose` library and any JOSE
//!   stack; needs a QR symbol of about version 10.
//! - **GM1** (`GM1:` + base45): our compact format; a ticket with a 12-character seat label
//!   fits a QR symbol of version 6 at error-correction level M. See [`gm1`] for the layout.
//!
//! This crate is pure: no I/O, no clock, no runtime. Time comes in as a parameter, which keeps
//! verification deterministic and easy to property-test.
//!
//! ```
//! use gatemesh_ticket::{
//!     Claims, EventId, Format, IssuerKey, Keyring, Product, ProductNumber, TicketId, Verifier,
//! };
//!
//! let key = IssuerKey::generate(None);
//! let event = EventId::new("ROCK-2026").unwrap();
//! let claims = Claims {
//!     tid: TicketId::generate(),
//!     eid: event.clone(),
//!     seat: Some("A-12".parse().unwrap()),
//!     iat: None, // GM1 does not carry it
//!     nbf: None,
//!     exp: Some(1_893_456_000),
//!     product: Some(Product::Number(ProductNumber::new(2).unwrap())),
//! };
//! let code = key.sign(&claims, Format::Gm1).unwrap();
//!
//! let keyring = Keyring::from_keys([key.public()]).unwrap();
//! let verifier = Verifier::new(keyring).for_event(event);
//! let ticket = verifier.verify(&code, 1_780_000_000).unwrap();
//! assert_eq!(ticket.claims, claims);
//! assert_eq!(ticket.format, Format::Gm1);
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

mod claims;
pub mod gm1;
mod id;
mod jwk;
pub mod jwt;
mod keys;
mod product;
mod verify;

pub use claims::{Claims, EventId, InvalidField, Seat};
pub use id::TicketId;
pub use jwk::{JwksError, jwks};
pub use keys::{IssuerKey, KeyError, KeyId, Keyring, PublicKey};
pub use product::{Product, ProductCode, ProductNumber};
pub use verify::{Format, Reason, Verified, Verifier, VerifyError, detect};

/// Longest code any parser here looks at. Both formats stay far below it (a JWT ticket is
/// about 330 bytes, GM1 about 150); anything longer is refused before any decoding work.
pub const MAX_CODE_LEN: usize = 4096;

/// Sign failures. Signing only fails on claims a format cannot carry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// GM1 carries validity times as unsigned 32-bit seconds since 1970 (until 2106).
    #[error("GM1 carries times between 1970 and 2106; {field} = {value} is outside")]
    TimeOutOfRange {
        /// `exp` or `nbf`.
        field: &'static str,
        /// The refused value, seconds since 1970.
        value: i64,
    },
    /// GM1 carries a product's number, not its code: the lists file maps codes to numbers.
    #[error(
        "GM1 carries product numbers (1-255), not codes; {code:?} needs its number from the event's product table"
    )]
    ProductNotNumbered {
        /// The code given.
        code: String,
    },
    /// GM1 carries the 64-bit ticket ids that [`TicketId::generate`] makes, nothing else.
    #[error("GM1 carries only 13-character gatemesh ticket ids; {tid:?} is not one")]
    TicketIdNotCompact {
        /// The refused id.
        tid: String,
    },
}
