//! What crosses the boundary between a gate and the central server, in one place both sides
//! depend on: a contract written once cannot drift.
//!
//! - The shared vocabulary: [`Verdict`], [`Reason`], [`Action`], [`Role`], [`Direction`],
//!   [`TicketStatus`] and [`Standing`].
//! - Ids and names, each with one rule checked on the way in and on the way out (serde goes
//!   through the same constructor): [`NodeId`], [`RedemptionId`], [`ResolutionId`],
//!   [`DeviceName`], [`Label`], [`Note`], and RFC 3339 times ([`time`], [`Timestamp`]).
//! - Every HTTP body the gate and the server exchange: the manifest and its change stream
//!   ([`Manifest`], [`ManifestEntry`]), redemptions and journals ([`RedemptionRequest`],
//!   [`RedemptionAnswer`]), pairing ([`Paired`], and the [`PairingLink`] that carries the server's URL, the code and
//!   its certificate's fingerprint), heartbeats ([`Heartbeat`]), the gates view
//!   ([`Gates`]) and errors ([`ErrorBody`]).
//! - Check-in lists ([`lists`]): an event's lists file, the lists a gate checks against and
//!   the pure decision of whether one admits a ticket's product now.
//! - [`Lenient`] lists: a reader that meets one item it cannot take skips and reports it,
//!   and takes the rest.
//!
//! No I/O and no runtime. With the `openapi` feature every body has a `utoipa` schema; with
//! `ts`, the vocabulary has TypeScript declarations.
//!
//! ```
//! use gatemesh_wire::{Manifest, Standing};
//!
//! let body = br#"{"cursor": 3, "tickets": [
//!     {"tid": "A1", "status": "void", "reason": "refund"},
//!     {"tid": "A2", "status": "lost"}
//! ]}"#;
//! let (manifest, skipped) = Manifest::read_lenient(body).unwrap();
//! assert_eq!(manifest.tickets[0].standing().unwrap(), Standing::Void { reason: "refund".into() });
//! assert_eq!(skipped[0].tid.as_deref(), Some("A2"));
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

mod device;
mod error;
mod id;
mod lenient;
mod link;
pub mod lists;
mod manifest;
mod redeem;
mod revoke;
pub mod time;
mod vocab;

pub use device::{
    GateStatus, Gates, Heartbeat, HeartbeatAck, IssuerKey, Keys, MeshIdentity, NewDevice,
    PairRequest, Paired, PairingCode, PeerReport, UplinkStatus, VerdictCounts,
};
pub use error::{ErrorBody, ErrorDetail, WireError};
pub use id::{DeviceName, Label, ListId, NodeId, Note, RedemptionId, ResolutionId};
pub use lenient::{Lenient, Skipped, split};
pub use link::{
    CertFingerprint, LINK_PREFIX, LinkError, MAX_LINK_LEN, PairingLink, valid_server_url,
};
pub use lists::{
    CapacityLevel, Entry, GateLists, ListAdmission, ListOccupancy, ListRefusal, Lists, ListsError,
    ListsFile, ListsRelease, Scope, WindowKey,
};
pub use manifest::{Admission, Manifest, ManifestEntry, ResolveRequest, ServerResolution, change};
pub use redeem::{
    HeldAnswers, HeldQuery, Journal, JournalAnswers, MAX_JOURNAL, MAX_RECORD_BYTES, RedeemBody,
    Redeemed, RedemptionAnswer, RedemptionRequest,
};
pub use revoke::{Revocation, RevokeRequest, Revoked};
pub use time::Timestamp;
pub use vocab::{Action, Direction, Reason, Role, Standing, TicketStatus, Verdict};
