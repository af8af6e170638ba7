//! The server's storage: one trait ([`Storage`]), SQLite ([`Sqlite`], one file, zero
//! set-up) and PostgreSQL ([`Postgres`], for several server instances) behind it, and one
//! test suite run against both.
//!
//! Every change to a ticket (issue, void, transfer, revert) takes the next value of one
//! sequence, so a manifest delta is "every ticket whose seq is above the cursor". The
//! sequence row is bumped inside the writing transaction: writers are serialised on it and
//! commit in sequence order, so a reader that saw cursor `c` has seen every change up to `c`.
//! Redemptions do not touch the sequence (they would serialise every gate on one row).
//!
//! A redemption is decided and stored in one transaction that first locks the ticket, so
//! concurrent requests for one ticket are serialised and exactly one of them admits; the
//! answer is stored under the redemption id, so a retry gets the same answer back.
//!
//! Each backend has its own SQL and its own transactions; what they do around the SQL is
//! written once: reading rows into these types (`rows`), and the decisions of a void, a
//! transfer, a revert, a resolution and a redemption (`rules`).

mod gather;
mod postgres;
mod rows;
mod rules;
pub(crate) use rules::deny_reason;
mod sqlite;

pub(crate) use self::rules::with_fresh_ids;
pub use self::{postgres::Postgres, sqlite::Sqlite};

use gatemesh_ticket::{EventId, Format, TicketId};
pub use gatemesh_wire::{
    Admission, Heartbeat, RedemptionAnswer, RedemptionRequest, ServerResolution, TicketStatus,
};
use gatemesh_wire::{DeviceName, RedemptionId, Role};
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{0} already exists")]
    Exists(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// The caller may not do this (a device reverting a ticket nobody flagged).
    #[error("{0}")]
    Forbidden(String),
    #[error("the database failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database failed: {0}")]
    Postgres(#[from] ::postgres::Error),
    #[error("no database connection: {0}")]
    Pool(#[from] r2d2::Error),
    /// The database named could not be reached when the server started.
    #[error("cannot reach PostgreSQL at {at}: {why}")]
    Unreachable {
        /// `HOST:PORT` as the URL names them.
        at: String,
        /// What connecting met (refused, timed out, a wrong password, …), with its cause: the
        /// client's error repeats its cause as its source, so it is kept as text.
        why: String,
    },
    #[error("the database holds something this server cannot read: {0}")]
    Corrupt(String),
    /// The server's identity could not sign a record it relays (its key unreadable).
    #[error("the server could not sign a record: {0}")]
    Signing(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub name: String,
    pub capacity: Option<u32>,
    /// RFC 3339.
    pub starts_at: Option<String>,
    /// RFC 3339.
    pub ends_at: Option<String>,
    /// The organizer lets gates find guests by name and order: the manifest carries each
    /// ticket's holder and order reference (otherwise no attendee's name reaches a gate).
    pub guest_search: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub tid: TicketId,
    pub eid: EventId,
    pub seat: Option<String>,
    pub format: Format,
    pub code: String,
    pub status: TicketStatus,
    pub transferred_to: Option<TicketId>,
    /// The ticket this one replaced, for a transfer chain.
    pub transferred_from: Option<TicketId>,
    pub holder: Option<String>,
    /// The order it was bought in (the organizer's reference), for finding a guest.
    pub order_ref: Option<String>,
    /// Its product as its code carries it (kept from issuing on, for gates finding a guest
    /// without the code; tickets issued before it was kept have none here).
    pub product: Option<gatemesh_ticket::Product>,
    /// Why it was voided, when it was.
    pub void_reason: Option<String>,
    /// Redemptions of this ticket that staff reverted (oldest first).
    pub reverted: Vec<RedemptionId>,
    /// Gates' journals hold more than one admission of it: staff must look.
    pub flagged: bool,
    /// Staff's latest decision on a flag.
    pub resolution: Option<ServerResolution>,
    /// Position in the change sequence.
    pub seq: i64,
    /// For a void or transferred ticket: the standing as a ledger record the server's
    /// identity signed when it changed (JSON, its certificate under `cert`), which gates
    /// write into their ledgers as it is.
    pub status_record: Option<String>,
}

/// A device the server knows: a gate or an observer of one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub eid: EventId,
    pub name: DeviceName,
    pub role: Role,
}

/// A device as a manager sees it: when it last reported, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateView {
    pub name: DeviceName,
    pub role: Role,
    /// It holds a credential (paired); devices that report with the organizer's token do not.
    pub paired: bool,
    pub last_seen_ms: Option<i64>,
    /// Its last heartbeat.
    pub heartbeat: Option<Heartbeat>,
}

/// What happened at an event, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub tickets: i64,
    pub void: i64,
    pub transferred: i64,
    /// Tickets with an admission that counts.
    pub admitted: i64,
    /// Redemption requests answered, by verdict.
    pub answered_admit: i64,
    pub answered_duplicate: i64,
    pub answered_reject: i64,
    pub flagged: i64,
}

/// Where a redemption comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A scanner asking the server before it lets someone in.
    Online,
    /// A gate's journal: the gate has already let the holder in. A second admission of a
    /// ticket from journals is a flag for staff, not a turned-away holder.
    Journal,
}

/// Who did what to which ticket, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditLine {
    pub tid: Option<String>,
    pub actor: String,
    pub action: String,
    pub reason: String,
    pub at: String,
}

/// What the server keeps. Implementations make `redeem` atomic and idempotent and call
/// [`Changes::bump`] (or have it called) after every committed ticket change.
/// Where the answer to a submitted online redemption arrives (see
/// [`Storage::submit_online`]); closed without an answer when the storage closes.
pub type Submitted = tokio::sync::oneshot::Receiver<Result<RedemptionAnswer, StoreError>>;

pub trait Storage: Send + Sync + 'static {
    /// Whether the database answers a trivial query now (readiness), waiting a few seconds
    /// at most for a connection.
    fn ping(&self) -> Result<(), StoreError>;
    fn create_event(&self, event: &Event) -> Result<(), StoreError>;
    fn events(&self) -> Result<Vec<Event>, StoreError>;
    fn event(&self, id: &EventId) -> Result<Option<Event>, StoreError>;
    /// Stores new tickets; fails without storing any if one id is already taken.
    fn insert_tickets(&self, tickets: &[Ticket]) -> Result<(), StoreError>;
    fn ticket(&self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError>;
    /// Voids an active ticket; `record` is the standing the server signed (see
    /// [`Ticket::status_record`]).
    fn void(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
        record: &str,
    ) -> Result<Ticket, StoreError>;
    /// One redemption in a transaction of its own. Online requests normally go through
    /// [`Storage::submit_online`], which gathers them; this is the path when it cannot.
    fn redeem(
        &self,
        eid: &EventId,
        request: &RedemptionRequest,
        origin: Origin,
    ) -> Result<RedemptionAnswer, StoreError>;
    /// An online redemption handed to a storage that gathers them itself (PostgreSQL): the
    /// answer arrives on the returned channel, and no thread waits for it meanwhile. `None`
    /// when this storage answers in [`Storage::redeem`] alone.
    fn submit_online(&self, _eid: &EventId, _request: &RedemptionRequest) -> Option<Submitted> {
        None
    }
    /// A gate's journal: every item as by [`Storage::redeem`] with [`Origin::Journal`], in
    /// order, committed together (one durable write for the batch, all or nothing; the gate
    /// sends a failed batch again and gets the same answers).
    fn redeem_journal(
        &self,
        eid: &EventId,
        requests: &[RedemptionRequest],
    ) -> Result<Vec<RedemptionAnswer>, StoreError> {
        requests
            .iter()
            .map(|r| self.redeem(eid, r, Origin::Journal))
            .collect()
    }
    /// The answers the event's redemptions `ids` were given, in order, each with its ticket:
    /// what a journal upload of it gets back. `None` for one the server does not hold, or
    /// holds for another event (which this asker learns nothing of).
    fn answers(
        &self,
        eid: &EventId,
        ids: &[RedemptionId],
    ) -> Result<Vec<Option<(TicketId, RedemptionAnswer)>>, StoreError>;
    /// Tickets changed after `since` (all with `None`), and the cursor to ask from next.
    fn manifest(&self, eid: &EventId, since: Option<i64>)
    -> Result<(i64, Vec<Ticket>), StoreError>;
    /// Replaces an active ticket by `new` (already signed, `transferred_from` set): the old
    /// one becomes `transferred` pointing to it. One transaction.
    /// `old` becomes transferred to `new`; `record` is the standing the server signed.
    fn transfer(
        &self,
        old: &TicketId,
        new: &Ticket,
        actor: &str,
        record: &str,
    ) -> Result<(), StoreError>;
    /// Undoes a ticket's admissions so it may be admitted again, as the organizer's signed
    /// `resolution` (action `revert`, covering every admission of the ticket reverted so far
    /// and now) says; returns how many admissions were reverted (none is a conflict, and so
    /// is one the resolution does not cover).
    fn revert(
        &self,
        eid: &EventId,
        tid: &TicketId,
        resolution: &ServerResolution,
    ) -> Result<usize, StoreError>;
    fn audit(&self, eid: &EventId) -> Result<Vec<AuditLine>, StoreError>;
    /// The admissions of a ticket that still count (first one first): online admits and
    /// every admission a gate's journal reported.
    fn admissions(&self, eid: &EventId, tid: &TicketId) -> Result<Vec<Admission>, StoreError>;
    /// The event's tickets in id order, the first `limit` after `after` (from the first with
    /// `None`), each with its admissions that count as [`Storage::admissions`] reads them but
    /// without their ledger records: one page of a listing, read in one snapshot.
    fn ticket_page(
        &self,
        eid: &EventId,
        after: Option<&TicketId>,
        limit: usize,
    ) -> Result<Vec<(Ticket, Vec<Admission>)>, StoreError>;
    /// Tickets flagged and not yet resolved.
    fn flags(&self, eid: &EventId) -> Result<Vec<Ticket>, StoreError>;
    /// Records staff's decision on a flagged ticket: `accept` clears the flag, `deny` voids
    /// the ticket, `revert` undoes its admissions. One transaction, audited. The organizer
    /// may also revert a ticket nobody flagged; a device (`by_device`) may not. `void_record`
    /// is the standing a `deny` gives an active ticket, as the server signed it (see
    /// [`Ticket::status_record`]).
    fn resolve(
        &self,
        eid: &EventId,
        tid: &TicketId,
        resolution: &ServerResolution,
        by_device: bool,
        void_record: Option<&str>,
    ) -> Result<Ticket, StoreError>;
    fn counts(&self, eid: &EventId) -> Result<Counts, StoreError>;
    /// Registers a device (or re-issues its pairing code): the code, by its hash, is good
    /// once until `expires_ms`. A device paired before keeps its credential until it pairs
    /// again.
    fn put_pairing(
        &self,
        device: &Device,
        code_hash: &str,
        expires_ms: i64,
    ) -> Result<(), StoreError>;
    /// The device an unexpired pairing code (by its hash) was made for, without spending it.
    fn pairing(&self, code_hash: &str, now_ms: i64) -> Result<Option<Device>, StoreError>;
    /// Spends a pairing code: the device's credential becomes `token_hash`. `None` when no
    /// unexpired code has this hash (of two requests spending one code, one gets `None`).
    fn pair(
        &self,
        code_hash: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Device>, StoreError>;
    /// The device whose credential hashes to `token_hash`.
    fn device(&self, token_hash: &str) -> Result<Option<Device>, StoreError>;
    /// Keeps a device's latest heartbeat (registering a device that reports with the
    /// organizer's token).
    fn heartbeat(&self, device: &Device, payload: &str, now_ms: i64) -> Result<(), StoreError>;
    fn gates(&self, eid: &EventId) -> Result<Vec<GateView>, StoreError>;
    /// Keeps the certificate issued to a device at pairing: its SHA-256 (`sha256:HEX`) and
    /// the node id its key makes, so that revoking the device, or pairing the name again,
    /// can name it.
    fn record_cert(
        &self,
        eid: &EventId,
        name: &DeviceName,
        cert: &str,
        node: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// A device's certificates not yet revoked, as `(cert, node)`.
    fn live_certs(
        &self,
        eid: &EventId,
        name: &DeviceName,
    ) -> Result<Vec<(String, String)>, StoreError>;
    /// Revokes a device's certificates in one transaction: each of `revocations` (the
    /// certificate and the CA-signed record as JSON) is kept under the next value of the
    /// change sequence, so manifest deltas and change streams carry it; with `credential`,
    /// the device's credential and pairing code stop working too. Audited.
    fn revoke(
        &self,
        eid: &EventId,
        name: &DeviceName,
        revocations: &[(String, String)],
        credential: bool,
        actor: &str,
        reason: &str,
    ) -> Result<(), StoreError>;
    /// The event's revocations (the signed records, JSON) kept after change `since` and up
    /// to `upto`, oldest first.
    fn revocations(&self, eid: &EventId, since: i64, upto: i64) -> Result<Vec<String>, StoreError>;
    /// Releases the event's check-in lists as its next version (1 for the first), in one
    /// transaction: `record` makes the signed record (JSON) of the version it is given, which
    /// is kept under the next value of the change sequence, so manifest deltas and change
    /// streams carry it; two releases at once (two servers) take two versions. Audited.
    /// Returns the version and the record.
    fn release_lists(
        &self,
        eid: &EventId,
        actor: &str,
        record: &mut dyn FnMut(u64) -> Result<String, StoreError>,
    ) -> Result<(u64, String), StoreError>;
    /// The event's latest release of its check-in lists (the signed record, JSON), when it
    /// was kept after change `since` and up to `upto`.
    fn lists(&self, eid: &EventId, since: i64, upto: i64) -> Result<Option<String>, StoreError>;
    /// Wakes whoever waits for ticket changes: the value grows after each committed change
    /// (by this process, or, on PostgreSQL, by any server on the same database).
    fn changes(&self) -> tokio::sync::watch::Receiver<u64>;
}

/// The wake-up signal behind [`Storage::changes`].
#[derive(Debug)]
pub(crate) struct Changes(tokio::sync::watch::Sender<u64>);

impl Changes {
    pub(crate) fn new() -> Self {
        Self(tokio::sync::watch::Sender::new(0))
    }

    pub(crate) fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// Milliseconds since 1970, now.
pub(crate) fn now_ms() -> i64 {
    gatemesh_wire::time::now_ms()
}

pub(crate) fn now() -> String {
    gatemesh_wire::time::now()
}
