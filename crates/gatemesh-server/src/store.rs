//! The server's storage: one trait, and SQLite behind it (PostgreSQL comes next, behind the
//! same trait and the same tests).
//!
//! Every change to a ticket takes the next value of one sequence (`seq`), so a manifest delta
//! is "every ticket whose seq is above the cursor". A redemption is decided and stored in one
//! immediate transaction: concurrent requests for one ticket are serialised by SQLite's
//! writer lock, and exactly one of them admits.

use std::{path::Path, sync::Mutex};

use gatemesh_ledger::{Reason, Verdict};
use gatemesh_ticket::{EventId, Format, TicketId};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
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
    #[error("the database failed: {0}")]
    Sql(#[from] rusqlite::Error),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub name: String,
    pub capacity: Option<u32>,
    pub starts_at: Option<String>,
    pub ends_at: Option<String>,
}

/// A ticket's standing at the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Void,
    Transferred,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Void => "void",
            Self::Transferred => "transferred",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "void" => Self::Void,
            "transferred" => Self::Transferred,
            _ => Self::Active,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub tid: TicketId,
    pub eid: EventId,
    pub seat: Option<String>,
    pub format: Format,
    pub code: String,
    pub status: Status,
    pub transferred_to: Option<TicketId>,
    /// The ticket this one replaced, for a transfer chain.
    pub transferred_from: Option<TicketId>,
    pub holder: Option<String>,
    /// Position in the event's change sequence.
    pub seq: i64,
}

/// A gate's claim that it admitted (or tried to admit) a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedemptionRequest {
    pub redemption_id: String,
    pub tid: TicketId,
    pub gate: String,
    pub scanner: String,
    /// When the gate scanned, RFC 3339.
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstUse {
    pub redemption_id: String,
    pub gate: String,
    pub scanner: String,
    pub at: String,
}

/// The server's answer; stored with the request, so a retry gets exactly this back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedemptionAnswer {
    pub verdict: Verdict,
    pub reason: Reason,
    pub first: Option<FirstUse>,
}

/// What the server keeps. Implementations must make `redeem` atomic and idempotent.
pub trait Storage: Send + Sync + 'static {
    fn create_event(&self, event: &Event) -> Result<(), StoreError>;
    fn events(&self) -> Result<Vec<Event>, StoreError>;
    fn event(&self, id: &EventId) -> Result<Option<Event>, StoreError>;
    /// Stores new tickets; fails without storing any if one id is already taken.
    fn insert_tickets(&self, tickets: &[Ticket]) -> Result<(), StoreError>;
    fn ticket(&self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError>;
    fn void(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
    ) -> Result<Ticket, StoreError>;
    fn redeem(
        &self,
        eid: &EventId,
        request: &RedemptionRequest,
    ) -> Result<RedemptionAnswer, StoreError>;
    /// Tickets changed after `since` (all with `None`), and the cursor to ask from next.
    fn manifest(&self, eid: &EventId, since: Option<i64>)
    -> Result<(i64, Vec<Ticket>), StoreError>;
    /// Replaces an active ticket by `new` (already signed, `transferred_from` set): the old
    /// one becomes `transferred` pointing to it. One transaction.
    fn transfer(&self, old: &TicketId, new: &Ticket, actor: &str) -> Result<(), StoreError>;
    /// Undoes a ticket's admission so it may be admitted again; returns how many admissions
    /// were reverted (none is a conflict).
    fn revert(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
    ) -> Result<usize, StoreError>;
    fn audit(&self, eid: &EventId) -> Result<Vec<AuditLine>, StoreError>;
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

/// Layout version of the SQLite file, kept in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 1;

/// SQLite storage: one file, zero set-up.
#[derive(Debug)]
pub struct Sqlite {
    conn: Mutex<Connection>,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let tables: i64 = conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        if tables > 0 && version != SCHEMA_VERSION {
            return Err(StoreError::Conflict(format!(
                "{} holds schema version {version}; this gatemesh reads version {SCHEMA_VERSION}",
                path.display()
            )));
        }
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS events (
                 id TEXT PRIMARY KEY, name TEXT NOT NULL, capacity INTEGER,
                 starts_at TEXT, ends_at TEXT);
             CREATE TABLE IF NOT EXISTS seq (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
             INSERT OR IGNORE INTO seq (id, value) VALUES (1, 0);
             CREATE TABLE IF NOT EXISTS tickets (
                 eid TEXT NOT NULL REFERENCES events (id), tid TEXT NOT NULL,
                 seat TEXT, format TEXT NOT NULL, code TEXT NOT NULL,
                 status TEXT NOT NULL, transferred_to TEXT, transferred_from TEXT,
                 holder TEXT, seq INTEGER NOT NULL,
                 PRIMARY KEY (eid, tid));
             CREATE INDEX IF NOT EXISTS tickets_by_seq ON tickets (eid, seq);
             CREATE TABLE IF NOT EXISTS redemptions (
                 redemption_id TEXT PRIMARY KEY, eid TEXT NOT NULL, tid TEXT NOT NULL,
                 gate TEXT NOT NULL, scanner TEXT NOT NULL, at TEXT NOT NULL,
                 verdict TEXT NOT NULL, answer TEXT NOT NULL,
                 reverted INTEGER NOT NULL DEFAULT 0);
             CREATE INDEX IF NOT EXISTS redemptions_by_ticket ON redemptions (eid, tid);
             CREATE TABLE IF NOT EXISTS audit (
                 id INTEGER PRIMARY KEY AUTOINCREMENT, eid TEXT NOT NULL, tid TEXT,
                 actor TEXT NOT NULL, action TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL);",
        )?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back),
        // so a poisoned lock is still safe to use.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn next_seq(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<i64> {
    tx.query_row(
        "UPDATE seq SET value = value + 1 WHERE id = 1 RETURNING value",
        [],
        |r| r.get(0),
    )
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn ticket_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ticket> {
    let text = |i: usize| r.get::<_, String>(i);
    let bad = |i: usize| {
        rusqlite::Error::InvalidColumnType(i, "ticket".into(), rusqlite::types::Type::Text)
    };
    Ok(Ticket {
        tid: TicketId::new(text(0)?).map_err(|_| bad(0))?,
        eid: EventId::new(text(1)?).map_err(|_| bad(1))?,
        seat: r.get(2)?,
        format: text(3)?.parse().map_err(|_| bad(3))?,
        code: text(4)?,
        status: Status::parse(&text(5)?),
        transferred_to: r
            .get::<_, Option<String>>(6)?
            .and_then(|t| TicketId::new(t).ok()),
        transferred_from: r
            .get::<_, Option<String>>(7)?
            .and_then(|t| TicketId::new(t).ok()),
        holder: r.get(8)?,
        seq: r.get(9)?,
    })
}

const TICKET_COLUMNS: &str =
    "tid, eid, seat, format, code, status, transferred_to, transferred_from, holder, seq";

impl Storage for Sqlite {
    fn create_event(&self, e: &Event) -> Result<(), StoreError> {
        let n = self.conn().execute(
            "INSERT OR IGNORE INTO events (id, name, capacity, starts_at, ends_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![e.id.as_str(), e.name, e.capacity, e.starts_at, e.ends_at],
        )?;
        if n == 0 {
            return Err(StoreError::Exists(format!("event {}", e.id)));
        }
        Ok(())
    }

    fn events(&self) -> Result<Vec<Event>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT id, name, capacity, starts_at, ends_at FROM events ORDER BY id")?;
        let rows = stmt.query_map([], event_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn event(&self, id: &EventId) -> Result<Option<Event>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, name, capacity, starts_at, ends_at FROM events WHERE id = ?1",
                [id.as_str()],
                event_from_row,
            )
            .optional()?)
    }

    fn insert_tickets(&self, tickets: &[Ticket]) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for t in tickets {
            insert_ticket(&tx, t)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn ticket(&self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND tid = ?2"),
                [eid.as_str(), tid.as_str()],
                ticket_from_row,
            )
            .optional()?)
    }

    fn void(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
    ) -> Result<Ticket, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        require_active(&tx, eid, tid)?;
        let seq = next_seq(&tx)?;
        tx.execute(
            "UPDATE tickets SET status = 'void', seq = ?3 WHERE eid = ?1 AND tid = ?2",
            params![eid.as_str(), tid.as_str(), seq],
        )?;
        audit_line(&tx, eid, tid, actor, "void", reason)?;
        let ticket = tx.query_row(
            &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND tid = ?2"),
            [eid.as_str(), tid.as_str()],
            ticket_from_row,
        )?;
        tx.commit()?;
        Ok(ticket)
    }

    fn redeem(
        &self,
        eid: &EventId,
        req: &RedemptionRequest,
    ) -> Result<RedemptionAnswer, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored: Option<(String, String)> = tx
            .query_row(
                "SELECT eid, answer FROM redemptions WHERE redemption_id = ?1",
                [&req.redemption_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((stored_eid, answer)) = stored {
            // A retry: the stored answer, whatever happened since.
            if stored_eid != eid.as_str() {
                return Err(StoreError::Conflict(format!(
                    "redemption {} belongs to another event",
                    req.redemption_id
                )));
            }
            return serde_json::from_str(&answer).map_err(|e| StoreError::Conflict(e.to_string()));
        }
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM tickets WHERE eid = ?1 AND tid = ?2",
                [eid.as_str(), req.tid.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        let reject = |reason| RedemptionAnswer {
            verdict: Verdict::Reject,
            reason,
            first: None,
        };
        let answer = match status.as_deref().map(Status::parse) {
            None => reject(Reason::UnknownTicket),
            Some(Status::Void) => reject(Reason::Void),
            Some(Status::Transferred) => reject(Reason::Transferred),
            Some(Status::Active) => {
                let first = tx
                    .query_row(
                        "SELECT redemption_id, gate, scanner, at FROM redemptions
                         WHERE eid = ?1 AND tid = ?2 AND verdict = 'admit' AND reverted = 0
                         ORDER BY rowid LIMIT 1",
                        [eid.as_str(), req.tid.as_str()],
                        |r| {
                            Ok(FirstUse {
                                redemption_id: r.get(0)?,
                                gate: r.get(1)?,
                                scanner: r.get(2)?,
                                at: r.get(3)?,
                            })
                        },
                    )
                    .optional()?;
                match first {
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
                }
            }
        };
        let verdict = match answer.verdict {
            Verdict::Admit => "admit",
            Verdict::Duplicate => "duplicate",
            Verdict::Reject => "reject",
        };
        let json =
            serde_json::to_string(&answer).map_err(|e| StoreError::Conflict(e.to_string()))?;
        tx.execute(
            "INSERT INTO redemptions (redemption_id, eid, tid, gate, scanner, at, verdict, answer)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                req.redemption_id,
                eid.as_str(),
                req.tid.as_str(),
                req.gate,
                req.scanner,
                req.at,
                verdict,
                json
            ],
        )?;
        tx.commit()?;
        Ok(answer)
    }

    fn transfer(&self, old: &TicketId, new: &Ticket, actor: &str) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let eid = &new.eid;
        require_active(&tx, eid, old)?;
        let seq = next_seq(&tx)?;
        tx.execute(
            "UPDATE tickets SET status = 'transferred', transferred_to = ?3, seq = ?4
             WHERE eid = ?1 AND tid = ?2",
            params![eid.as_str(), old.as_str(), new.tid.as_str(), seq],
        )?;
        insert_ticket(&tx, new)?;
        audit_line(&tx, eid, old, actor, "transfer", &format!("to {}", new.tid))?;
        tx.commit()?;
        Ok(())
    }

    fn revert(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let n = tx.execute(
            "UPDATE redemptions SET reverted = 1 WHERE eid = ?1 AND tid = ?2 AND verdict = 'admit' AND reverted = 0",
            [eid.as_str(), tid.as_str()],
        )?;
        if n == 0 {
            return Err(StoreError::Conflict(format!(
                "ticket {tid} has no admission to revert"
            )));
        }
        audit_line(&tx, eid, tid, actor, "revert", reason)?;
        tx.commit()?;
        Ok(n)
    }

    fn audit(&self, eid: &EventId) -> Result<Vec<AuditLine>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT tid, actor, action, reason, at FROM audit WHERE eid = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([eid.as_str()], |r| {
            Ok(AuditLine {
                tid: r.get(0)?,
                actor: r.get(1)?,
                action: r.get(2)?,
                reason: r.get(3)?,
                at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn manifest(
        &self,
        eid: &EventId,
        since: Option<i64>,
    ) -> Result<(i64, Vec<Ticket>), StoreError> {
        let mut conn = self.conn();
        // One read transaction: the cursor and the rows come from the same snapshot.
        let tx = conn.transaction()?;
        let cursor: i64 = tx.query_row("SELECT value FROM seq WHERE id = 1", [], |r| r.get(0))?;
        let tickets = {
            let mut stmt = tx.prepare(&format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq"
            ))?;
            let rows = stmt.query_map(
                params![eid.as_str(), since.unwrap_or(0), cursor],
                ticket_from_row,
            )?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        tx.commit()?;
        Ok((cursor, tickets))
    }
}

fn audit_line(
    tx: &rusqlite::Transaction<'_>,
    eid: &EventId,
    tid: &TicketId,
    actor: &str,
    action: &str,
    reason: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![eid.as_str(), tid.as_str(), actor, action, reason, now()],
    )?;
    Ok(())
}

/// Refuses to change a ticket that does not exist or is no longer active.
fn require_active(
    tx: &rusqlite::Transaction<'_>,
    eid: &EventId,
    tid: &TicketId,
) -> Result<(), StoreError> {
    let status: Option<String> = tx
        .query_row(
            "SELECT status FROM tickets WHERE eid = ?1 AND tid = ?2",
            [eid.as_str(), tid.as_str()],
            |r| r.get(0),
        )
        .optional()?;
    match status.as_deref().map(Status::parse) {
        None => Err(StoreError::NotFound(format!("ticket {tid}"))),
        Some(Status::Active) => Ok(()),
        Some(other) => Err(StoreError::Conflict(format!(
            "ticket {tid} is {}",
            other.as_str()
        ))),
    }
}

/// Inserts a new active ticket at the next sequence number; a taken id is `Exists`.
fn insert_ticket(tx: &rusqlite::Transaction<'_>, t: &Ticket) -> Result<(), StoreError> {
    let seq = next_seq(tx)?;
    let from = t.transferred_from.as_ref().map(TicketId::as_str);
    let inserted = tx
        .prepare_cached(
            "INSERT INTO tickets
               (tid, eid, seat, format, code, status, transferred_to, transferred_from, holder, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, 'active', NULL, ?6, ?7, ?8)",
        )?
        .execute(params![
            t.tid.as_str(),
            t.eid.as_str(),
            t.seat,
            t.format.as_str(),
            t.code,
            from,
            t.holder,
            seq
        ]);
    match inserted {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Err(StoreError::Exists(format!("ticket {}", t.tid)))
        }
        Err(e) => Err(e.into()),
    }
}

fn event_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    let id: String = r.get(0)?;
    Ok(Event {
        id: EventId::new(id).map_err(|_| {
            rusqlite::Error::InvalidColumnType(0, "id".into(), rusqlite::types::Type::Text)
        })?,
        name: r.get(1)?,
        capacity: r.get(2)?,
        starts_at: r.get(3)?,
        ends_at: r.get(4)?,
    })
}
