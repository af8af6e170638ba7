//! SQLite storage: one file, zero set-up. One connection behind a mutex; every write is an
//! immediate transaction, so SQLite's writer lock serialises them. Online redemptions are
//! gathered (see [`super::gather`]): one thread stores every request waiting in one
//! transaction, each in a savepoint of its own, so they share one durable write. Voids and
//! transfers asked for while another write holds the connection are stored together the
//! same way ([`Sqlite::grouped`]).

use std::{
    path::Path,
    sync::{Arc, Mutex},
};

use gatemesh_ticket::{EventId, TicketId};
use gatemesh_wire::{RedemptionId, Verdict};
use rusqlite::{Connection, TransactionBehavior, params};

use super::{
    Admission, AuditLine, Changes, Counts, Device, Event, GateView, Origin, RedemptionAnswer,
    RedemptionRequest, ServerResolution, Storage, StoreError, Submitted, Ticket, TicketStatus,
    gather::{self, Job, Queue, Waiting},
    now,
    rows::{self, Columns, TICKET_COLUMNS, from_json, parse, to_json},
    rules::{self, Change, Tx},
};

/// Layout version of the SQLite file, kept in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 4;

/// SQLite storage: one file, zero set-up.
#[derive(Debug)]
pub struct Sqlite {
    conn: Arc<Mutex<Connection>>,
    changes: Changes,
    /// Online redemptions on their way to the gatherer (`None` when it could not start).
    gather: Option<Queue>,
    /// Voids and transfers waiting for the connection ([`Sqlite::grouped`]).
    standings: Mutex<Vec<Asked>>,
}

/// A change of a ticket's standing the box office asked for (a refund's void, a transfer),
/// waiting to be stored with the others that came meanwhile.
#[derive(Debug)]
enum Standing {
    Void {
        eid: EventId,
        tid: TicketId,
        actor: String,
        reason: String,
        record: String,
    },
    Transfer {
        old: TicketId,
        new: Box<Ticket>,
        actor: String,
        record: String,
    },
}

/// A [`Standing`] waiting for a grouped write, and where its answer goes: the ticket voided
/// (nothing for a transfer).
#[derive(Debug)]
struct Asked {
    job: Standing,
    reply: std::sync::mpsc::Sender<Result<Option<Ticket>, StoreError>>,
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
        if tables > 0 && version == 3 {
            // Version 4 added finding guests: an event's permission, a ticket's order.
            conn.execute_batch(
                "BEGIN;
                 ALTER TABLE events ADD COLUMN guest_search INTEGER NOT NULL DEFAULT 0;
                 ALTER TABLE tickets ADD COLUMN order_ref TEXT;
                 ALTER TABLE tickets ADD COLUMN product TEXT;
                 PRAGMA user_version = 4;
                 COMMIT;",
            )?;
        } else if tables > 0 && version != SCHEMA_VERSION {
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
                 starts_at TEXT, ends_at TEXT, guest_search INTEGER NOT NULL DEFAULT 0);
             CREATE TABLE IF NOT EXISTS seq (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
             INSERT OR IGNORE INTO seq (id, value) VALUES (1, 0);
             CREATE TABLE IF NOT EXISTS tickets (
                 eid TEXT NOT NULL REFERENCES events (id), tid TEXT NOT NULL,
                 seat TEXT, format TEXT NOT NULL, code TEXT NOT NULL,
                 status TEXT NOT NULL, transferred_to TEXT, transferred_from TEXT,
                 holder TEXT, void_reason TEXT, reverted TEXT NOT NULL DEFAULT '',
                 flagged INTEGER NOT NULL DEFAULT 0, resolution TEXT,
                 seq INTEGER NOT NULL, status_record TEXT, order_ref TEXT, product TEXT,
                 PRIMARY KEY (eid, tid));
             CREATE INDEX IF NOT EXISTS tickets_by_seq ON tickets (eid, seq);
             CREATE INDEX IF NOT EXISTS tickets_flagged ON tickets (eid) WHERE flagged = 1;
             CREATE TABLE IF NOT EXISTS redemptions (
                 redemption_id TEXT PRIMARY KEY, eid TEXT NOT NULL, tid TEXT NOT NULL,
                 gate TEXT NOT NULL, scanner TEXT NOT NULL, at TEXT NOT NULL,
                 record TEXT, journal INTEGER NOT NULL,
                 verdict TEXT NOT NULL, answer TEXT NOT NULL,
                 reverted INTEGER NOT NULL DEFAULT 0);
             CREATE INDEX IF NOT EXISTS redemptions_by_ticket ON redemptions (eid, tid);
             CREATE TABLE IF NOT EXISTS devices (
                 eid TEXT NOT NULL REFERENCES events (id), name TEXT NOT NULL, role TEXT NOT NULL,
                 code_hash TEXT UNIQUE, code_expires_ms INTEGER, token_hash TEXT UNIQUE,
                 last_seen_ms INTEGER, heartbeat TEXT,
                 PRIMARY KEY (eid, name));
             CREATE TABLE IF NOT EXISTS audit (
                 id INTEGER PRIMARY KEY AUTOINCREMENT, eid TEXT NOT NULL, tid TEXT,
                 actor TEXT NOT NULL, action TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS device_certs (
                 cert TEXT PRIMARY KEY, eid TEXT NOT NULL, name TEXT NOT NULL, node TEXT NOT NULL,
                 issued_ms INTEGER NOT NULL, revoked_ms INTEGER);
             CREATE INDEX IF NOT EXISTS device_certs_by_device ON device_certs (eid, name);
             CREATE TABLE IF NOT EXISTS revocations (
                 seq INTEGER PRIMARY KEY, eid TEXT NOT NULL, cert TEXT NOT NULL,
                 record TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS revocations_by_event ON revocations (eid, seq);
             CREATE TABLE IF NOT EXISTS lists (
                 seq INTEGER PRIMARY KEY, eid TEXT NOT NULL, version INTEGER NOT NULL,
                 record TEXT NOT NULL, UNIQUE (eid, version));",
        )?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        let conn = Arc::new(Mutex::new(conn));
        let (tx, rx) = gather::queue();
        let gatherer = {
            let conn = conn.clone();
            std::thread::Builder::new()
                .name("sqlite-gather".into())
                .spawn(move || gatherer(&conn, &rx))
        };
        Ok(Self {
            conn,
            changes: Changes::new(),
            // Without the thread every redemption is stored alone, as before gathering.
            gather: gatherer.is_ok().then_some(tx),
            standings: Mutex::default(),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// Runs `f` in an immediate transaction that changes tickets, commits, then tells
    /// change-feed listeners.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&mut tx)?;
        tx.commit()?;
        drop(conn);
        self.changes.bump();
        Ok(out)
    }

    /// Stores a void or a transfer with every other one waiting for the connection, in one
    /// transaction (each in a savepoint of its own, so one refused leaves nothing behind and
    /// the others stand): a box office's burst of refunds shares durable writes and one wake
    /// of the change streams, where one transaction each made them queue for the connection
    /// one by one. No timer: alone, a void waits for nothing.
    fn grouped(&self, job: Standing) -> Result<Option<Ticket>, StoreError> {
        let (reply, answer) = std::sync::mpsc::channel();
        unpoisoned(&self.standings).push(Asked { job, reply });
        // Whoever holds the connection next stores every job waiting, this one among them
        // unless one that held it before took it (and answered it before letting go).
        let mut conn = self.conn();
        let waiting = std::mem::take(&mut *unpoisoned(&self.standings));
        if !waiting.is_empty() {
            let answers = store_standings(&mut conn, &waiting).unwrap_or_else(|_| {
                // The transaction failed as a whole (a full disk, say): each alone, so each
                // gets its own answer or error.
                waiting
                    .iter()
                    .map(|w| store_standings(&mut conn, std::slice::from_ref(w))?.remove(0))
                    .collect()
            });
            drop(conn);
            if answers.iter().any(Result::is_ok) {
                self.changes.bump();
            }
            for (w, a) in waiting.into_iter().zip(answers) {
                let _ = w.reply.send(a);
            }
        } else {
            drop(conn);
        }
        answer.recv().unwrap_or_else(|_| {
            Err(StoreError::Conflict(
                "the write was lost before it was stored".into(),
            ))
        })
    }
}

/// Every waiting void and transfer in one immediate transaction, each in a savepoint.
fn store_standings(
    conn: &mut Connection,
    waiting: &[Asked],
) -> Result<Vec<Result<Option<Ticket>, StoreError>>, StoreError> {
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut answers = Vec::with_capacity(waiting.len());
    for w in waiting {
        tx.execute_batch("SAVEPOINT standing")?;
        let stored = match &w.job {
            Standing::Void {
                eid,
                tid,
                actor,
                reason,
                record,
            } => rules::void(&mut tx, eid, tid, actor, reason, record).map(Some),
            Standing::Transfer {
                old,
                new,
                actor,
                record,
            } => rules::transfer(&mut tx, old, new, actor, record).map(|()| None),
        };
        if stored.is_err() {
            tx.execute_batch("ROLLBACK TO standing")?;
        }
        tx.execute_batch("RELEASE standing")?;
        answers.push(stored);
    }
    tx.commit()?;
    Ok(answers)
}

fn unpoisoned<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    // A panic while holding the lock leaves SQLite consistent (transactions roll back), so a
    // poisoned lock is still safe to use.
    conn.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Stores every request waiting in one transaction, until the queue closes. (Online
/// redemptions never flag a ticket, so no change-feed listener needs telling.)
fn gatherer(conn: &Mutex<Connection>, waiting: &Waiting) {
    while let Some(jobs) = gather::take_waiting(waiting) {
        let mut conn = lock(conn);
        let answers = redeem_gathered(&mut conn, &jobs).unwrap_or_else(|_| {
            // The transaction failed as a whole (a full disk, say): each request alone, so
            // each gets its own answer or error.
            jobs.iter()
                .map(|j| redeem_alone(&mut conn, &j.eid, &j.req, Origin::Online).map(|(a, _)| a))
                .collect()
        });
        drop(conn);
        gather::answer(jobs, answers);
    }
}

/// Every job in one transaction, each in a savepoint: a request refused (an id another event
/// holds) leaves nothing behind and the others stand.
fn redeem_gathered(
    conn: &mut Connection,
    jobs: &[Job],
) -> Result<Vec<Result<RedemptionAnswer, StoreError>>, StoreError> {
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut answers = Vec::with_capacity(jobs.len());
    for job in jobs {
        let one = tx.savepoint()?;
        match redeem_in(&one, &job.eid, &job.req, Origin::Online) {
            Ok((answer, _)) => {
                one.commit()?;
                answers.push(Ok(answer));
            }
            // Dropping the savepoint rolls it back.
            Err(e) => answers.push(Err(e)),
        }
    }
    tx.commit()?;
    Ok(answers)
}

/// One request in a transaction of its own.
fn redeem_alone(
    conn: &mut Connection,
    eid: &EventId,
    req: &RedemptionRequest,
    origin: Origin,
) -> Result<(RedemptionAnswer, bool), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let done = redeem_in(&tx, eid, req, origin)?;
    tx.commit()?;
    Ok(done)
}

/// Takes `n` values of the change sequence; returns the first.
fn take_seq(tx: &Connection, n: usize) -> rusqlite::Result<i64> {
    let last: i64 = tx.query_row(
        "UPDATE seq SET value = value + ?1 WHERE id = 1 RETURNING value",
        [n as i64],
        |r| r.get(0),
    )?;
    Ok(last - n as i64 + 1)
}

/// The first row `sql` returns, read by `read`.
fn one<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    read: impl FnOnce(&rusqlite::Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    rows.next()?.map(read).transpose()
}

/// Every row `sql` returns, each read by `read`.
fn all<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    read: impl FnMut(&rusqlite::Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_and_then(params, read)?;
    rows.collect()
}

/// The redemptions that count as admissions of their ticket: online admits and every
/// admission a gate's journal reported, not reverted.
const COUNTED: &str = "reverted = 0 AND (verdict = 'admit' OR (journal = 1 AND verdict <> 'exit'))";

fn read_ticket(
    conn: &Connection,
    eid: &EventId,
    tid: &TicketId,
) -> Result<Option<Ticket>, StoreError> {
    one(
        conn,
        &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND tid = ?2"),
        [eid.as_str(), tid.as_str()],
        |r| rows::ticket(r),
    )
}

fn status_of(
    conn: &Connection,
    eid: &EventId,
    tid: &TicketId,
) -> Result<Option<TicketStatus>, StoreError> {
    one(
        conn,
        "SELECT status FROM tickets WHERE eid = ?1 AND tid = ?2",
        [eid.as_str(), tid.as_str()],
        |r| rows::status(r),
    )
}

/// The statements of the shared rules. They run in an immediate transaction, which holds
/// SQLite's writer lock already: reading a status needs no lock of its own.
impl Tx for rusqlite::Transaction<'_> {
    fn lock_status(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Option<TicketStatus>, StoreError> {
        status_of(self, eid, tid)
    }

    fn ticket(&mut self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError> {
        read_ticket(self, eid, tid)
    }

    fn take_seq(&mut self, n: usize) -> Result<i64, StoreError> {
        Ok(take_seq(self, n)?)
    }

    fn insert_tickets(&mut self, tickets: &[Ticket], first: i64) -> Result<(), StoreError> {
        let mut insert = self.prepare_cached(
            "INSERT INTO tickets
               (tid, eid, seat, format, code, status, transferred_from, holder, seq, order_ref,
                product)
             VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, ?7, ?8, ?9, ?10)",
        )?;
        for (t, seq) in tickets.iter().zip(first..) {
            let from = t.transferred_from.as_ref().map(TicketId::as_str);
            let inserted = insert.execute(params![
                t.tid.as_str(),
                t.eid.as_str(),
                t.seat,
                t.format.as_str(),
                t.code,
                from,
                t.holder,
                seq,
                t.order_ref,
                rows::product_column(t.product.as_ref()),
            ]);
            match inserted {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    return Err(rules::taken(&t.tid));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn update(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        seq: i64,
        change: Change<'_>,
    ) -> Result<(), StoreError> {
        let sql = match change {
            Change::Void(_) => {
                "UPDATE tickets SET status = 'void', void_reason = ?3, seq = ?4 WHERE eid = ?1 AND tid = ?2"
            }
            Change::TransferredTo(_) => {
                "UPDATE tickets SET status = 'transferred', transferred_to = ?3, seq = ?4
                 WHERE eid = ?1 AND tid = ?2"
            }
            Change::Resolution(_) => {
                "UPDATE tickets SET flagged = 0, resolution = ?3, seq = ?4 WHERE eid = ?1 AND tid = ?2"
            }
            Change::Reverted(_) => {
                "UPDATE tickets SET reverted = ?3, seq = ?4 WHERE eid = ?1 AND tid = ?2"
            }
        };
        let value = change.value();
        self.execute(
            sql,
            params![eid.as_str(), tid.as_str(), value.as_ref(), seq],
        )?;
        Ok(())
    }

    fn status_record(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        record: &str,
    ) -> Result<(), StoreError> {
        self.execute(
            "UPDATE tickets SET status_record = ?3 WHERE eid = ?1 AND tid = ?2",
            params![eid.as_str(), tid.as_str(), record],
        )?;
        Ok(())
    }

    fn revert_admissions(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Vec<RedemptionId>, StoreError> {
        let ids = all(
            self,
            &format!(
                "SELECT redemption_id FROM redemptions
                 WHERE eid = ?1 AND tid = ?2 AND {COUNTED} ORDER BY rowid"
            ),
            [eid.as_str(), tid.as_str()],
            |r| parse(&r.text(0)?, "redemption id"),
        )?;
        self.execute(
            &format!(
                "UPDATE redemptions SET reverted = 1 WHERE eid = ?1 AND tid = ?2 AND {COUNTED}"
            ),
            [eid.as_str(), tid.as_str()],
        )?;
        Ok(ids)
    }

    fn audit(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        action: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![eid.as_str(), tid.as_str(), actor, action, reason, now()],
        )?;
        Ok(())
    }
}

impl Storage for Sqlite {
    fn ping(&self) -> Result<(), StoreError> {
        self.conn().query_row("SELECT 1", [], |_| Ok(()))?;
        Ok(())
    }

    fn create_event(&self, e: &Event) -> Result<(), StoreError> {
        let n = self.conn().execute(
            "INSERT OR IGNORE INTO events (id, name, capacity, starts_at, ends_at, guest_search)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                e.id.as_str(),
                e.name,
                e.capacity,
                e.starts_at,
                e.ends_at,
                e.guest_search
            ],
        )?;
        if n == 0 {
            return Err(StoreError::Exists(format!("event {}", e.id)));
        }
        Ok(())
    }

    fn events(&self) -> Result<Vec<Event>, StoreError> {
        all(
            &self.conn(),
            &format!("SELECT {} FROM events ORDER BY id", rows::EVENT_COLUMNS),
            [],
            |r| rows::event(r),
        )
    }

    fn event(&self, id: &EventId) -> Result<Option<Event>, StoreError> {
        one(
            &self.conn(),
            &format!("SELECT {} FROM events WHERE id = ?1", rows::EVENT_COLUMNS),
            [id.as_str()],
            |r| rows::event(r),
        )
    }

    fn insert_tickets(&self, tickets: &[Ticket]) -> Result<(), StoreError> {
        self.write(|tx| rules::insert_tickets(tx, tickets))
    }

    fn ticket(&self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError> {
        read_ticket(&self.conn(), eid, tid)
    }

    fn void(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
        record: &str,
    ) -> Result<Ticket, StoreError> {
        self.grouped(Standing::Void {
            eid: eid.clone(),
            tid: tid.clone(),
            actor: actor.into(),
            reason: reason.into(),
            record: record.into(),
        })?
        .ok_or_else(|| StoreError::NotFound(format!("ticket {tid}")))
    }

    fn redeem(
        &self,
        eid: &EventId,
        req: &RedemptionRequest,
        origin: Origin,
    ) -> Result<RedemptionAnswer, StoreError> {
        let (answer, flagged) = redeem_alone(&mut self.conn(), eid, req, origin)?;
        if flagged {
            self.changes.bump();
        }
        Ok(answer)
    }

    fn submit_online(&self, eid: &EventId, req: &RedemptionRequest) -> Option<Submitted> {
        gather::submit(self.gather.as_ref(), eid, req)
    }

    fn redeem_journal(
        &self,
        eid: &EventId,
        requests: &[RedemptionRequest],
    ) -> Result<Vec<RedemptionAnswer>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut answers = Vec::with_capacity(requests.len());
        let mut any_flag = false;
        for r in requests {
            let (answer, flagged) = redeem_in(&tx, eid, r, Origin::Journal)?;
            any_flag |= flagged;
            answers.push(answer);
        }
        tx.commit()?;
        drop(conn);
        if any_flag {
            self.changes.bump();
        }
        Ok(answers)
    }

    fn answers(
        &self,
        eid: &EventId,
        ids: &[RedemptionId],
    ) -> Result<Vec<Option<(TicketId, RedemptionAnswer)>>, StoreError> {
        let conn = self.conn();
        ids.iter()
            .map(|id| {
                one(
                    &conn,
                    "SELECT tid, answer FROM redemptions WHERE redemption_id = ?1 AND eid = ?2",
                    [id.as_str(), eid.as_str()],
                    |r| Ok((parse(&r.text(0)?, "ticket id")?, from_json(&r.text(1)?)?)),
                )
            })
            .collect()
    }

    fn transfer(
        &self,
        old: &TicketId,
        new: &Ticket,
        actor: &str,
        record: &str,
    ) -> Result<(), StoreError> {
        self.grouped(Standing::Transfer {
            old: old.clone(),
            new: Box::new(new.clone()),
            actor: actor.into(),
            record: record.into(),
        })
        .map(drop)
    }

    fn revert(
        &self,
        eid: &EventId,
        tid: &TicketId,
        resolution: &ServerResolution,
    ) -> Result<usize, StoreError> {
        self.write(|tx| rules::revert(tx, eid, tid, resolution))
    }

    fn audit(&self, eid: &EventId) -> Result<Vec<AuditLine>, StoreError> {
        all(
            &self.conn(),
            "SELECT tid, actor, action, reason, at FROM audit WHERE eid = ?1 ORDER BY id",
            [eid.as_str()],
            |r| rows::audit_line(r),
        )
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
        let tickets = all(
            &tx,
            &format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq"
            ),
            params![eid.as_str(), since.unwrap_or(0), cursor],
            |r| rows::ticket(r),
        )?;
        tx.commit()?;
        Ok((cursor, tickets))
    }

    fn admissions(&self, eid: &EventId, tid: &TicketId) -> Result<Vec<Admission>, StoreError> {
        all(
            &self.conn(),
            &format!(
                "SELECT redemption_id, gate, scanner, at, record FROM redemptions
                 WHERE eid = ?1 AND tid = ?2 AND {COUNTED} ORDER BY rowid"
            ),
            [eid.as_str(), tid.as_str()],
            |r| rows::admission(r),
        )
    }

    fn ticket_page(
        &self,
        eid: &EventId,
        after: Option<&TicketId>,
        limit: usize,
    ) -> Result<Vec<(Ticket, Vec<Admission>)>, StoreError> {
        let mut conn = self.conn();
        // One read transaction: the admissions are those of the tickets as read.
        let tx = conn.transaction()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let tickets = all(
            &tx,
            &format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND tid > ?2 ORDER BY tid LIMIT ?3"
            ),
            params![eid.as_str(), after.map_or("", TicketId::as_str), limit],
            |r| rows::ticket(r),
        )?;
        let (Some(first), Some(last)) = (tickets.first(), tickets.last()) else {
            return Ok(Vec::new());
        };
        // The page's tickets are one range of the index the admissions are read by.
        let admissions = all(
            &tx,
            &format!(
                "SELECT redemption_id, gate, scanner, at, NULL, tid FROM redemptions
                 WHERE eid = ?1 AND tid >= ?2 AND tid <= ?3 AND {COUNTED} ORDER BY tid, rowid"
            ),
            [eid.as_str(), first.tid.as_str(), last.tid.as_str()],
            |r| Ok((r.text(5)?, rows::admission(r)?)),
        )?;
        tx.commit()?;
        Ok(rows::with_admissions(tickets, admissions))
    }

    fn flags(&self, eid: &EventId) -> Result<Vec<Ticket>, StoreError> {
        all(
            &self.conn(),
            &format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = ?1 AND flagged = 1 ORDER BY seq"
            ),
            [eid.as_str()],
            |r| rows::ticket(r),
        )
    }

    fn resolve(
        &self,
        eid: &EventId,
        tid: &TicketId,
        resolution: &ServerResolution,
        by_device: bool,
        void_record: Option<&str>,
    ) -> Result<Ticket, StoreError> {
        self.write(|tx| rules::resolve(tx, eid, tid, resolution, by_device, void_record))
    }

    fn counts(&self, eid: &EventId) -> Result<Counts, StoreError> {
        let conn = self.conn();
        let mut tickets = conn.prepare_cached(
            "SELECT COUNT(*), COALESCE(SUM(status = 'void'), 0), COALESCE(SUM(status = 'transferred'), 0),
                    COALESCE(SUM(flagged), 0)
             FROM tickets WHERE eid = ?1",
        )?;
        let mut answers = conn.prepare_cached(
            "SELECT COALESCE(SUM(verdict = 'admit'), 0), COALESCE(SUM(verdict = 'duplicate'), 0),
                    COALESCE(SUM(verdict = 'reject'), 0),
                    COUNT(DISTINCT CASE WHEN verdict = 'admit' AND reverted = 0 THEN tid END)
             FROM redemptions WHERE eid = ?1",
        )?;
        let mut tickets = tickets.query([eid.as_str()])?;
        let mut answers = answers.query([eid.as_str()])?;
        match (tickets.next()?, answers.next()?) {
            (Some(t), Some(a)) => rows::counts(t, a),
            _ => Err(StoreError::Corrupt("an aggregate returned no row".into())),
        }
    }

    fn put_pairing(&self, d: &Device, code_hash: &str, expires_ms: i64) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO devices (eid, name, role, code_hash, code_expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (eid, name) DO UPDATE SET role = ?3, code_hash = ?4, code_expires_ms = ?5",
            params![
                d.eid.as_str(),
                d.name.as_str(),
                d.role.as_str(),
                code_hash,
                expires_ms
            ],
        )?;
        Ok(())
    }

    fn pairing(&self, code_hash: &str, now_ms: i64) -> Result<Option<Device>, StoreError> {
        one(
            &self.conn(),
            "SELECT eid, name, role FROM devices WHERE code_hash = ?1 AND code_expires_ms >= ?2",
            params![code_hash, now_ms],
            |r| rows::device(r),
        )
    }

    fn pair(
        &self,
        code_hash: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Device>, StoreError> {
        one(
            &self.conn(),
            "UPDATE devices SET token_hash = ?2, code_hash = NULL, code_expires_ms = NULL
             WHERE code_hash = ?1 AND code_expires_ms >= ?3
             RETURNING eid, name, role",
            params![code_hash, token_hash, now_ms],
            |r| rows::device(r),
        )
    }

    fn device(&self, token_hash: &str) -> Result<Option<Device>, StoreError> {
        one(
            &self.conn(),
            "SELECT eid, name, role FROM devices WHERE token_hash = ?1",
            [token_hash],
            |r| rows::device(r),
        )
    }

    fn heartbeat(&self, d: &Device, payload: &str, now_ms: i64) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO devices (eid, name, role, last_seen_ms, heartbeat) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (eid, name) DO UPDATE SET last_seen_ms = ?4, heartbeat = ?5",
            params![d.eid.as_str(), d.name.as_str(), d.role.as_str(), now_ms, payload],
        )?;
        Ok(())
    }

    fn gates(&self, eid: &EventId) -> Result<Vec<GateView>, StoreError> {
        all(
            &self.conn(),
            "SELECT name, role, token_hash IS NOT NULL, last_seen_ms, heartbeat FROM devices
             WHERE eid = ?1 ORDER BY name",
            [eid.as_str()],
            |r| rows::gate(r),
        )
    }

    fn record_cert(
        &self,
        eid: &EventId,
        name: &gatemesh_wire::DeviceName,
        cert: &str,
        node: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO device_certs (cert, eid, name, node, issued_ms) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (cert) DO NOTHING",
            params![cert, eid.as_str(), name.as_str(), node, now_ms],
        )?;
        Ok(())
    }

    fn live_certs(
        &self,
        eid: &EventId,
        name: &gatemesh_wire::DeviceName,
    ) -> Result<Vec<(String, String)>, StoreError> {
        all(
            &self.conn(),
            "SELECT cert, node FROM device_certs
             WHERE eid = ?1 AND name = ?2 AND revoked_ms IS NULL ORDER BY issued_ms",
            [eid.as_str(), name.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn revoke(
        &self,
        eid: &EventId,
        name: &gatemesh_wire::DeviceName,
        revocations: &[(String, String)],
        credential: bool,
        actor: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let at = super::now_ms();
        self.write(|tx| {
            if credential {
                tx.execute(
                    "UPDATE devices SET token_hash = NULL, code_hash = NULL, code_expires_ms = NULL
                     WHERE eid = ?1 AND name = ?2",
                    params![eid.as_str(), name.as_str()],
                )?;
            }
            if !revocations.is_empty() {
                let first = take_seq(tx, revocations.len())?;
                for ((cert, record), seq) in revocations.iter().zip(first..) {
                    tx.execute(
                        "UPDATE device_certs SET revoked_ms = ?2 WHERE cert = ?1",
                        params![cert, at],
                    )?;
                    tx.execute(
                        "INSERT INTO revocations (seq, eid, cert, record) VALUES (?1, ?2, ?3, ?4)",
                        params![seq, eid.as_str(), cert, record],
                    )?;
                }
            }
            tx.execute(
                "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES (?1, NULL, ?2, ?3, ?4, ?5)",
                params![
                    eid.as_str(),
                    actor,
                    format!("revoke:{}", name.as_str()),
                    reason,
                    now()
                ],
            )?;
            Ok(())
        })
    }

    fn revocations(&self, eid: &EventId, since: i64, upto: i64) -> Result<Vec<String>, StoreError> {
        all(
            &self.conn(),
            "SELECT record FROM revocations WHERE eid = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
            params![eid.as_str(), since, upto],
            |r| Ok(r.get(0)?),
        )
    }

    fn release_lists(
        &self,
        eid: &EventId,
        actor: &str,
        record: &mut dyn FnMut(u64) -> Result<String, StoreError>,
    ) -> Result<(u64, String), StoreError> {
        self.write(|tx| {
            let last: i64 = tx.query_row(
                "SELECT COALESCE(MAX(version), 0) FROM lists WHERE eid = ?1",
                [eid.as_str()],
                |r| r.get(0),
            )?;
            let version = u64::try_from(last).unwrap_or(0) + 1;
            let json = record(version)?;
            let seq = take_seq(tx, 1)?;
            tx.execute(
                "INSERT INTO lists (seq, eid, version, record) VALUES (?1, ?2, ?3, ?4)",
                params![seq, eid.as_str(), last + 1, json],
            )?;
            tx.execute(
                "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES (?1, NULL, ?2, 'lists:release', ?3, ?4)",
                params![eid.as_str(), actor, format!("version {version}"), now()],
            )?;
            Ok((version, json))
        })
    }

    fn lists(&self, eid: &EventId, since: i64, upto: i64) -> Result<Option<String>, StoreError> {
        Ok(all(
            &self.conn(),
            "SELECT record FROM lists WHERE eid = ?1 AND seq > ?2 AND seq <= ?3
             ORDER BY version DESC LIMIT 1",
            params![eid.as_str(), since, upto],
            |r| Ok(r.get(0)?),
        )?
        .pop())
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Decides and stores one redemption inside `tx`; says whether it flagged the ticket.
fn redeem_in(
    tx: &Connection,
    eid: &EventId,
    req: &RedemptionRequest,
    origin: Origin,
) -> Result<(RedemptionAnswer, bool), StoreError> {
    // Every statement here is prepared once per connection (a journal runs them per item).
    let stored: Option<(String, String)> = one(
        tx,
        "SELECT eid, answer FROM redemptions WHERE redemption_id = ?1",
        [req.redemption_id.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if let Some((stored_eid, answer)) = stored {
        // A retry: the stored answer, whatever happened since.
        if stored_eid != eid.as_str() {
            return Err(rules::elsewhere(&req.redemption_id));
        }
        return Ok((from_json(&answer)?, false));
    }
    let status = status_of(tx, eid, &req.tid)?;
    // A gate's record names the check-in list and window it counts against: the first
    // admission is looked for in that scope only. An online request, or a gate without
    // lists, counts every admission (as a gate without lists does).
    let scope = rules::scope_of(origin, req.record.as_ref());
    let first = if status == Some(TicketStatus::Active) {
        // The first admission's ledger record goes only to a gate's journal (the gate takes
        // it into its ledger); an online scanner needs none.
        let record = if origin == Origin::Journal {
            "record"
        } else {
            "NULL"
        };
        one(
            tx,
            &format!(
                "SELECT redemption_id, gate, scanner, at, {record} FROM redemptions
             WHERE eid = ?1 AND tid = ?2 AND verdict = 'admit' AND reverted = 0
               AND (?3 IS NULL OR json_extract(record, '$.scope') = ?3)
             ORDER BY rowid LIMIT 1"
            ),
            params![eid.as_str(), req.tid.as_str(), scope],
            |r| rows::admission(r),
        )?
    } else {
        None
    };
    let facts = rules::journal_facts(origin, req.record.as_ref());
    let (answer, stored_verdict) = rules::journal_answer(&facts, rules::answer(status, first));
    // A gate already let this holder in, and someone else was in first: staff must look.
    let flag = origin == Origin::Journal && answer.verdict == Verdict::Duplicate;
    if flag {
        let seq = take_seq(tx, 1)?;
        tx.execute(
            "UPDATE tickets SET flagged = 1, seq = ?3 WHERE eid = ?1 AND tid = ?2",
            params![eid.as_str(), req.tid.as_str(), seq],
        )?;
    }
    let record = req.record.as_ref().map(to_json).transpose()?;
    tx.prepare_cached(
        "INSERT INTO redemptions
               (redemption_id, eid, tid, gate, scanner, at, record, journal, verdict, answer)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        req.redemption_id.as_str(),
        eid.as_str(),
        req.tid.as_str(),
        req.gate.as_str(),
        req.scanner.as_str(),
        req.at.to_string(),
        record,
        origin == Origin::Journal,
        stored_verdict,
        to_json(&answer)?
    ])?;
    Ok((answer, flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh event `id` in `st`.
    fn event(st: &Sqlite, id: &str) -> EventId {
        let eid = EventId::new(id).unwrap();
        st.create_event(&Event {
            id: eid.clone(),
            name: id.to_lowercase(),
            capacity: None,
            starts_at: None,
            ends_at: None,
            guest_search: false,
        })
        .unwrap();
        eid
    }

    fn ticket(eid: &EventId, n: u32) -> Ticket {
        Ticket {
            tid: TicketId::new(format!("T{n:04}")).unwrap(),
            eid: eid.clone(),
            seat: None,
            format: gatemesh_ticket::Format::Gm1,
            code: format!("code-{n}"),
            status: TicketStatus::Active,
            transferred_to: None,
            transferred_from: None,
            holder: None,
            order_ref: None,
            product: None,
            void_reason: None,
            reverted: Vec::new(),
            flagged: false,
            resolution: None,
            seq: 0,
            status_record: None,
        }
    }

    fn asked(
        job: Standing,
    ) -> (
        Asked,
        std::sync::mpsc::Receiver<Result<Option<Ticket>, StoreError>>,
    ) {
        let (reply, answer) = std::sync::mpsc::channel();
        (Asked { job, reply }, answer)
    }

    /// Voids and transfers stored in one transaction each stand or fall alone: a transfer
    /// that fails after it wrote (its new ticket's id is taken) leaves its old ticket as it
    /// was, and the voids beside it are stored.
    #[test]
    fn standings_stored_together_each_stand_or_fall_alone() {
        let dir = tempfile::tempdir().unwrap();
        let st = Sqlite::open(&dir.path().join("s.sqlite")).unwrap();
        let eid = event(&st, "GROUP");
        let tickets: Vec<Ticket> = (0..4).map(|n| ticket(&eid, n)).collect();
        st.insert_tickets(&tickets).unwrap();
        let void = |n: usize| Standing::Void {
            eid: eid.clone(),
            tid: tickets[n].tid.clone(),
            actor: "box-office".into(),
            reason: "refund".into(),
            record: format!("{{\"void\":{n}}}"),
        };
        let jobs = vec![
            void(0),
            // Its new ticket's id is ticket 3's: refused after the old one was updated.
            Standing::Transfer {
                old: tickets[1].tid.clone(),
                new: Box::new(ticket(&eid, 3)),
                actor: "box-office".into(),
                record: "{}".into(),
            },
            // Voided twice in one group: the second is a conflict.
            void(2),
            void(2),
            Standing::Void {
                eid: eid.clone(),
                tid: TicketId::new("NOSUCH").unwrap(),
                actor: "box-office".into(),
                reason: "refund".into(),
                record: "{}".into(),
            },
        ];
        let (asks, _answers): (Vec<_>, Vec<_>) = jobs.into_iter().map(asked).unzip();
        let answers = store_standings(&mut st.conn(), &asks).unwrap();
        assert!(matches!(&answers[0], Ok(Some(t)) if t.status == TicketStatus::Void));
        assert!(
            matches!(answers[1], Err(StoreError::Exists(_))),
            "{:?}",
            answers[1]
        );
        assert!(matches!(&answers[2], Ok(Some(t)) if t.tid == tickets[2].tid));
        assert!(
            matches!(answers[3], Err(StoreError::Conflict(_))),
            "{:?}",
            answers[3]
        );
        assert!(
            matches!(answers[4], Err(StoreError::NotFound(_))),
            "{:?}",
            answers[4]
        );
        let status = |n: usize| st.ticket(&eid, &tickets[n].tid).unwrap().unwrap();
        assert_eq!(status(0).status, TicketStatus::Void);
        let kept = status(1);
        assert_eq!(
            (kept.status, kept.transferred_to, kept.status_record),
            (TicketStatus::Active, None, None)
        );
        assert_eq!(status(2).status, TicketStatus::Void);
        assert_eq!(status(3).status, TicketStatus::Active);
        let audit: Vec<String> = st
            .audit(&eid)
            .unwrap()
            .into_iter()
            .map(|a| {
                format!(
                    "{}:{}",
                    a.action,
                    a.tid.map(|t| t.to_string()).unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(audit, ["void:T0000", "void:T0002"]);
    }

    /// Many voids asked at once from many threads: each gets its own answer, every ticket is
    /// voided once, and the change feed hears of them.
    #[test]
    fn voids_asked_at_once_each_get_their_own_answer() {
        let dir = tempfile::tempdir().unwrap();
        let st = Arc::new(Sqlite::open(&dir.path().join("s.sqlite")).unwrap());
        let eid = event(&st, "BURST");
        let tickets: Vec<Ticket> = (0..40).map(|n| ticket(&eid, n)).collect();
        st.insert_tickets(&tickets).unwrap();
        let mut feed = st.changes();
        feed.mark_unchanged();
        let threads: Vec<_> = (0..80)
            .map(|i| {
                let (st, eid, tid) = (st.clone(), eid.clone(), tickets[i % 40].tid.clone());
                std::thread::spawn(move || st.void(&eid, &tid, "box-office", "refund", "{}"))
            })
            .collect();
        let answers: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let voided: Vec<&Ticket> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(voided.len(), 40);
        let mut tids: Vec<&TicketId> = voided.iter().map(|t| &t.tid).collect();
        tids.sort();
        tids.dedup();
        assert_eq!(tids.len(), 40);
        assert!(
            answers
                .iter()
                .filter_map(|a| a.as_ref().err())
                .all(|e| matches!(e, StoreError::Conflict(_)))
        );
        assert!(feed.has_changed().unwrap());
        assert_eq!(st.audit(&eid).unwrap().len(), 40);
    }
}
