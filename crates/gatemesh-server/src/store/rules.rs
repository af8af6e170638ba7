//! The decisions both backends make around their SQL, written once: what a void, a
//! transfer, a revert and a resolution check and change, in which order, and what a
//! redemption is answered (SQLite decides it here; PostgreSQL in `gatemesh_redeem`, the same
//! rule in PL/pgSQL). A backend runs these inside its own write transaction and gives them
//! its statements through [`Tx`].

use std::borrow::Cow;

use gatemesh_ticket::{EventId, TicketId};
use gatemesh_wire::{Action, Reason, RedemptionId, Verdict};

use super::{
    Admission, Origin, RedemptionAnswer, ServerResolution, StoreError, Ticket, TicketStatus,
    rows::{join_ids, to_json},
};

/// One statement each, inside a backend's write transaction (its SQL, its locks).
pub(crate) trait Tx {
    /// The ticket's status; its row stays locked until the transaction ends.
    fn lock_status(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Option<TicketStatus>, StoreError>;
    fn ticket(&mut self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError>;
    /// Takes `n` values of the change sequence; returns the first.
    fn take_seq(&mut self, n: usize) -> Result<i64, StoreError>;
    /// Inserts new active tickets at sequence numbers `first`, `first + 1`, …; a taken id is
    /// [`StoreError::Exists`] (see [`taken`]).
    fn insert_tickets(&mut self, tickets: &[Ticket], first: i64) -> Result<(), StoreError>;
    /// Changes the ticket's row, which takes sequence value `seq`.
    fn update(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        seq: i64,
        change: Change<'_>,
    ) -> Result<(), StoreError>;
    /// Marks the ticket's admissions that count (see [`super::Storage::admissions`]) as
    /// reverted; returns their ids, oldest first.
    fn revert_admissions(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Vec<RedemptionId>, StoreError>;
    /// Keeps the standing the server signed for the ticket (see `Ticket::status_record`).
    fn status_record(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        record: &str,
    ) -> Result<(), StoreError>;
    fn audit(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        action: &str,
        reason: &str,
    ) -> Result<(), StoreError>;
}

/// What a rule changes in a ticket's row (besides its sequence value): one column's value,
/// and for a void or a transfer its status.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'a> {
    /// Void, for this reason.
    Void(&'a str),
    /// Transferred, to this ticket.
    TransferredTo(&'a TicketId),
    /// Its flag cleared, with staff's decision (as JSON).
    Resolution(&'a str),
    /// Its reverted redemptions, all of them.
    Reverted(&'a [RedemptionId]),
}

impl Change<'_> {
    /// The value for the column, as the column keeps it.
    pub(crate) fn value(&self) -> Cow<'_, str> {
        match *self {
            Change::Void(text) | Change::Resolution(text) => Cow::Borrowed(text),
            Change::TransferredTo(tid) => Cow::Borrowed(tid.as_str()),
            Change::Reverted(ids) => Cow::Owned(join_ids(ids)),
        }
    }
}

fn not_found(tid: &TicketId) -> StoreError {
    StoreError::NotFound(format!("ticket {tid}"))
}

/// What a redemption whose id another event holds is refused with (a retry is answered
/// only within the event that stored it).
pub(crate) fn elsewhere(redemption: &RedemptionId) -> StoreError {
    StoreError::Conflict(format!("redemption {redemption} belongs to another event"))
}

/// What inserting a ticket whose id is taken fails with.
pub(crate) fn taken(tid: &TicketId) -> StoreError {
    StoreError::Exists(format!("ticket {tid}"))
}

/// Runs `attempt` (which draws fresh random ticket ids and stores them) again while a drawn
/// id was taken, three times at most; `what` names what could not be drawn.
pub(crate) fn with_fresh_ids<T>(
    what: &str,
    mut attempt: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    for _ in 0..3 {
        match attempt() {
            Err(StoreError::Exists(_)) => continue,
            other => return other,
        }
    }
    Err(StoreError::Conflict(format!("could not draw {what}")))
}

/// Only an active ticket may be voided or transferred.
fn refuse_inactive(tid: &TicketId, status: Option<TicketStatus>) -> Result<(), StoreError> {
    match status {
        None => Err(not_found(tid)),
        Some(TicketStatus::Active) => Ok(()),
        Some(other) => Err(StoreError::Conflict(format!(
            "ticket {tid} is {}",
            other.as_str()
        ))),
    }
}

pub(crate) fn insert_tickets(tx: &mut impl Tx, tickets: &[Ticket]) -> Result<(), StoreError> {
    let first = tx.take_seq(tickets.len())?;
    tx.insert_tickets(tickets, first)
}

pub(crate) fn void(
    tx: &mut impl Tx,
    eid: &EventId,
    tid: &TicketId,
    actor: &str,
    reason: &str,
    record: &str,
) -> Result<Ticket, StoreError> {
    refuse_inactive(tid, tx.lock_status(eid, tid)?)?;
    let seq = tx.take_seq(1)?;
    tx.update(eid, tid, seq, Change::Void(reason))?;
    tx.status_record(eid, tid, record)?;
    tx.audit(eid, tid, actor, "void", reason)?;
    tx.ticket(eid, tid)?.ok_or_else(|| not_found(tid))
}

/// `old` becomes `transferred` to `new`, which is inserted right after it in the sequence.
pub(crate) fn transfer(
    tx: &mut impl Tx,
    old: &TicketId,
    new: &Ticket,
    actor: &str,
    record: &str,
) -> Result<(), StoreError> {
    let eid = &new.eid;
    refuse_inactive(old, tx.lock_status(eid, old)?)?;
    let seq = tx.take_seq(2)?;
    tx.update(eid, old, seq, Change::TransferredTo(&new.tid))?;
    tx.status_record(eid, old, record)?;
    tx.insert_tickets(std::slice::from_ref(new), seq + 1)?;
    tx.audit(eid, old, actor, "transfer", &format!("to {}", new.tid))
}

/// Undoes every admission of a ticket that counts (none is a conflict), as the organizer's
/// `revert` says: a resolution by the server's identity whose `covers` were read before this
/// transaction and whose record is signed. It covers every admission the ticket ever had
/// reverted, so the latest one is all a gate that joins later needs. An admission that came
/// in after `covers` was read makes it a conflict (try again), never a revert the signed
/// record does not name.
pub(crate) fn revert(
    tx: &mut impl Tx,
    eid: &EventId,
    tid: &TicketId,
    resolution: &ServerResolution,
) -> Result<usize, StoreError> {
    // The ticket lock keeps a redemption from slipping in between.
    if tx.lock_status(eid, tid)?.is_none() {
        return Err(not_found(tid));
    }
    let ids = tx.revert_admissions(eid, tid)?;
    if ids.is_empty() {
        return Err(StoreError::Conflict(format!(
            "ticket {tid} has no admission to revert"
        )));
    }
    if let Some(late) = ids.iter().find(|id| !resolution.covers.contains(id)) {
        return Err(StoreError::Conflict(format!(
            "ticket {tid} was admitted again meanwhile ({late}); try the revert again"
        )));
    }
    let seq = tx.take_seq(1)?;
    let mut reverted = tx.ticket(eid, tid)?.map(|t| t.reverted).unwrap_or_default();
    reverted.extend(ids.iter().cloned());
    tx.update(eid, tid, seq, Change::Reverted(&reverted))?;
    tx.update(eid, tid, seq, Change::Resolution(&to_json(resolution)?))?;
    tx.audit(
        eid,
        tid,
        resolution.staff.as_str(),
        "revert",
        resolution.note.as_str(),
    )?;
    Ok(ids.len())
}

/// Why a ticket a `deny` voids is void.
pub(crate) fn deny_reason(resolution: &ServerResolution) -> String {
    format!("denied: {}", resolution.note)
}

/// Staff's decision on a flag: `accept` clears it, `deny` also voids an active ticket,
/// `revert` undoes its admissions. The organizer's revert may answer no flag (a single
/// mistaken admission); a device's (`by_device`) acts on flagged tickets only, decided here
/// under the ticket's lock so a flag cleared meanwhile cannot let it through.
pub(crate) fn resolve(
    tx: &mut impl Tx,
    eid: &EventId,
    tid: &TicketId,
    resolution: &ServerResolution,
    by_device: bool,
    void_record: Option<&str>,
) -> Result<Ticket, StoreError> {
    if tx.lock_status(eid, tid)?.is_none() {
        return Err(not_found(tid));
    }
    let ticket = tx.ticket(eid, tid)?.ok_or_else(|| not_found(tid))?;
    if !ticket.flagged {
        // Every gate uploads the decisions its ledger holds, its peers' too: a revert
        // another gate's upload carried out already finds no admission left that counts
        // (what it covers was all reverted). Nothing to do, as for the organizer's revert of
        // nothing, and not the organizer's to decide either: settled, not refused. A ticket
        // never reverted (never admitted, or admitted once) stays the organizer's.
        if by_device
            && resolution.action == Action::Revert
            && !ticket.reverted.is_empty()
            && resolution
                .covers
                .iter()
                .all(|c| ticket.reverted.contains(c))
        {
            return Err(StoreError::Conflict(format!(
                "ticket {tid} has no admission left to revert: its admissions were reverted \
                 already"
            )));
        }
        if by_device && resolution.action == Action::Revert {
            return Err(StoreError::Forbidden(format!(
                "ticket {tid} is not flagged: only the organizer reverts it"
            )));
        }
        if resolution.action != Action::Revert {
            return Err(StoreError::Conflict(format!("ticket {tid} is not flagged")));
        }
    }
    // Every change below is this one change: they all keep this sequence value.
    let seq = tx.take_seq(1)?;
    tx.update(eid, tid, seq, Change::Resolution(&to_json(resolution)?))?;
    match resolution.action {
        Action::Accept => {}
        Action::Deny => {
            if ticket.status == TicketStatus::Active {
                let reason = deny_reason(resolution);
                tx.update(eid, tid, seq, Change::Void(&reason))?;
                // Gates take a standing only as the server's identity signed it.
                let record = void_record.ok_or_else(|| {
                    StoreError::Signing("a deny needs the void the server signed".into())
                })?;
                tx.status_record(eid, tid, record)?;
            }
        }
        Action::Revert => {
            let ids = tx.revert_admissions(eid, tid)?;
            if let Some(late) = ids.iter().find(|id| !resolution.covers.contains(id)) {
                return Err(StoreError::Conflict(format!(
                    "ticket {tid} was admitted again meanwhile ({late}); decide again"
                )));
            }
            let mut reverted = ticket.reverted.clone();
            reverted.extend(
                resolution
                    .covers
                    .iter()
                    .filter(|c| !ticket.reverted.contains(c))
                    .cloned(),
            );
            tx.update(eid, tid, seq, Change::Reverted(&reverted))?;
        }
    }
    let action = format!("resolve:{}", resolution.action.as_str());
    tx.audit(
        eid,
        tid,
        resolution.staff.as_str(),
        &action,
        resolution.note.as_str(),
    )?;
    tx.ticket(eid, tid)?.ok_or_else(|| not_found(tid))
}

/// The answer to a redemption of a ticket in `status`, given the first admission that still
/// counts (if any).
pub(crate) fn answer(status: Option<TicketStatus>, first: Option<Admission>) -> RedemptionAnswer {
    let reject = |reason| RedemptionAnswer {
        verdict: Verdict::Reject,
        reason,
        first: None,
    };
    match status {
        None => reject(Reason::UnknownTicket),
        Some(TicketStatus::Void) => reject(Reason::Void),
        Some(TicketStatus::Transferred) => reject(Reason::Transferred),
        Some(TicketStatus::Active) => match first {
            None => RedemptionAnswer {
                verdict: Verdict::Admit,
                reason: Reason::Valid,
                first: None,
            },
            Some(first) => RedemptionAnswer {
                verdict: Verdict::Duplicate,
                reason: Reason::AlreadyAdmitted,
                first: Some(first),
            },
        },
    }
}

/// The check-in scope a gate's journal item counts against (its record's `scope`, as the
/// gate wrote and signed it): its first admission is the first in that scope. `None` for
/// an online request or a gate without lists, which count every admission of the ticket.
pub(crate) fn scope_of(origin: Origin, record: Option<&serde_json::Value>) -> Option<&str> {
    record
        .filter(|_| origin == Origin::Journal)
        .and_then(|r| r.get("scope"))
        .and_then(serde_json::Value::as_str)
}

/// What a gate's journal item says beyond the ticket: an exit scan (re-entry events), or
/// the redemptions its gate already knew of when it admitted (its record's `seen`).
pub(crate) struct JournalFacts {
    pub exit: bool,
    pub seen: Vec<RedemptionId>,
}

pub(crate) fn journal_facts(origin: Origin, record: Option<&serde_json::Value>) -> JournalFacts {
    /// The two fields of a gate ledger's redemption the answer depends on (the API checked
    /// that the record is one before it got here), read in place: no copy of the record.
    #[derive(serde::Deserialize)]
    struct Facts {
        #[serde(default)]
        direction: gatemesh_wire::Direction,
        #[serde(default)]
        seen: Vec<gatemesh_wire::RedemptionId>,
    }
    let facts = record
        .filter(|_| origin == Origin::Journal)
        .and_then(|r| <Facts as serde::Deserialize>::deserialize(r).ok());
    match facts {
        Some(f) => JournalFacts {
            exit: f.direction == gatemesh_wire::Direction::Exit,
            seen: f.seen,
        },
        None => JournalFacts {
            exit: false,
            seen: Vec::new(),
        },
    }
}

/// The answer to a journal item, and the verdict stored with it. An exit is recorded but is
/// no admission; an entry whose gate already knew of the first admission is a re-entry the
/// gate allowed, not a copy; only an entry made without knowing of the first is a duplicate
/// (and flags the ticket) — the same rule the gates' ledgers apply.
pub(crate) fn journal_answer(
    facts: &JournalFacts,
    base: RedemptionAnswer,
) -> (RedemptionAnswer, &'static str) {
    if facts.exit {
        let exit = RedemptionAnswer {
            verdict: Verdict::Admit,
            reason: Reason::Exit,
            first: None,
        };
        return (exit, "exit");
    }
    match base.first {
        Some(first)
            if base.verdict == Verdict::Duplicate && facts.seen.contains(&first.redemption_id) =>
        {
            (
                RedemptionAnswer {
                    verdict: Verdict::Admit,
                    reason: Reason::Reentry,
                    first: Some(first),
                },
                "reentry",
            )
        }
        first => {
            let answer = RedemptionAnswer { first, ..base };
            let v = answer.verdict.as_str();
            (answer, v)
        }
    }
}
