//! The replicated redemption ledger of one event.
//!
//! - [`Ledger`]: one Automerge document per event, started from a genesis that every node
//!   builds identically, written by each node under its own stable actor id. Redemptions,
//!   staff resolutions, ticket standings and the audit trail are flat-keyed JSON records;
//!   a ticket's records sit in one of [`SHARDS`] maps of their kind (see `layout.rs`).
//! - [`decide`]: the scan decision, a pure function of the signature check, the ticket's
//!   history, the manifest listing and the event's policy.
//! - [`Store`]: SQLite (WAL) storage of the document's changes; a redemption is committed
//!   there before its verdict is returned.
//!
//! Flags: two entries of one ticket where neither writer had seen the other's redemption
//! (each redemption lists the ones its gate knew) were made on both sides of a partition;
//! the ticket is flagged on every node that knows both, until staff resolve it.
//!
//! ```
//! use gatemesh_ledger::{Ledger, NodeId, genesis};
//! use gatemesh_ticket::EventId;
//!
//! let event = EventId::new("ROCK-2026").unwrap();
//! let ledger = Ledger::open(&event, NodeId::random(), &genesis(&event), None, []).unwrap();
//! assert_eq!(ledger.flagged().count(), 0);
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

mod admit;
mod authored;
mod decide;
mod doc;
mod layout;
mod model;
mod revoke;
mod seal;
mod sign;
mod snapshot;
mod state;
mod store;
mod summary;
mod tally;

pub use admit::{
    MAX_CHANGE_BYTES, MAX_CLOCK_AHEAD_MS, MAX_INFLATED_BYTES, MAX_PER_TICKET, MAX_SEEN, Vouched,
};
pub use decide::{
    Answer, EntryPolicy, FirstUse, Listing, Outcome, Policy, Reason, Scan, UnlistedPolicy, Verdict,
    decide,
};
pub use doc::{
    Ledger, LedgerError, LinkBooks, MAX_SYNC_MESSAGE, PeerSync, PushAhead, ReleasedLists,
    SYNC_CHANGES_MOST, SYNC_MESSAGE_MOST, Saving, StoredChange, SyncInParts, SyncServed,
    TakenWhole, WHOLE_BESIDES_MOST, precheck_pushed,
};
pub use layout::{SHARDS, genesis, shard_of, ticket_map, ticket_maps};
pub use model::{
    Action, AuditEntry, Direction, Hlc, ListsRecord, NodeId, Redemption, RedemptionId, Resolution,
    ResolutionId, Role, Standing, Status,
};
pub use revoke::{Revocation, cuts as revocation_cuts};
pub use seal::{SEAL_AFTER_MS, SEAL_EVERY};
pub use sign::{
    CaSigner, Device, DeviceRecord, Signer, Trust, check_redemption, check_redemption_vouched,
    node_of_key,
};
pub use state::TicketState;
pub use store::{Durability, STORE_FORMAT, Store, StoreError, Stored, Wait};
pub use summary::{
    CATCH_UP_LACK, CATCH_UP_STALL_MS, LeftOut, NEED_MOST, NEED_VERSION, RELAY_BACKUP_MS,
    RELAY_LOST_ANYWAY_MS, RELAY_STUCK_MS, Relay, RelayPlan, RelayedBy, SUMMARY_REACHES_MOST,
    SUMMARY_VERSION, SUMMARY_WRITERS_MOST, Summary, Tip, Told, Wants,
};
pub use tally::{Activity, EntryTally, GateActivity, Occupancy};
