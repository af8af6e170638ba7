//! PostgreSQL storage, for one or several server instances on one database.
//!
//! The synchronous `postgres` client with an r2d2 pool (storage calls already run on
//! blocking threads). A redemption is one round trip: the `gatemesh_redeem` function locks
//! the ticket row, returns a stored answer for a known redemption id, or decides and stores
//! a new one, all in one transaction. Every ticket change sends `NOTIFY gatemesh_changes` in
//! its transaction; each instance keeps one connection listening, so a void made through
//! one server wakes the change streams of all of them.

use std::{sync::Arc, time::Duration};

use fallible_iterator::FallibleIterator;
use gatemesh_ticket::{EventId, TicketId};
use gatemesh_wire::RedemptionId;
use postgres::{NoTls, Transaction};
use r2d2_postgres::PostgresConnectionManager;

use super::{
    Admission, AuditLine, Changes, Counts, Device, Event, GateView, Origin, RedemptionAnswer,
    RedemptionRequest, ServerResolution, Storage, StoreError, Submitted, Ticket, TicketStatus,
    gather::{self, Job, Queue, Waiting},
    now,
    rows::{self, Columns, TICKET_COLUMNS, from_json, parse, to_json},
    rules::{self, Change, Tx},
};

/// Bumped when the layout changes; kept in `gatemesh_meta`.
const SCHEMA_VERSION: i32 = 3;
const CHANNEL: &str = "gatemesh_changes";

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS gatemesh_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, capacity INTEGER,
    starts_at TEXT, ends_at TEXT, guest_search BOOLEAN NOT NULL DEFAULT FALSE);
CREATE TABLE IF NOT EXISTS seq (id INTEGER PRIMARY KEY CHECK (id = 1), value BIGINT NOT NULL);
INSERT INTO seq (id, value) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS tickets (
    eid TEXT NOT NULL REFERENCES events (id), tid TEXT NOT NULL,
    seat TEXT, format TEXT NOT NULL, code TEXT NOT NULL,
    status TEXT NOT NULL, transferred_to TEXT, transferred_from TEXT,
    holder TEXT, void_reason TEXT, reverted TEXT NOT NULL DEFAULT '',
    flagged BOOLEAN NOT NULL DEFAULT FALSE, resolution TEXT,
    seq BIGINT NOT NULL, status_record TEXT, order_ref TEXT, product TEXT,
    PRIMARY KEY (eid, tid));
CREATE INDEX IF NOT EXISTS tickets_by_seq ON tickets (eid, seq);
CREATE INDEX IF NOT EXISTS tickets_flagged ON tickets (eid) WHERE flagged;
CREATE TABLE IF NOT EXISTS redemptions (
    n BIGSERIAL, redemption_id TEXT PRIMARY KEY, eid TEXT NOT NULL, tid TEXT NOT NULL,
    gate TEXT NOT NULL, scanner TEXT NOT NULL, at TEXT NOT NULL,
    record TEXT, journal BOOLEAN NOT NULL,
    verdict TEXT NOT NULL, answer TEXT NOT NULL,
    reverted BOOLEAN NOT NULL DEFAULT FALSE);
CREATE INDEX IF NOT EXISTS redemptions_by_ticket ON redemptions (eid, tid);
CREATE TABLE IF NOT EXISTS devices (
    eid TEXT NOT NULL REFERENCES events (id), name TEXT NOT NULL, role TEXT NOT NULL,
    code_hash TEXT UNIQUE, code_expires_ms BIGINT, token_hash TEXT UNIQUE,
    last_seen_ms BIGINT, heartbeat TEXT,
    PRIMARY KEY (eid, name));
CREATE TABLE IF NOT EXISTS audit (
    id BIGSERIAL PRIMARY KEY, eid TEXT NOT NULL, tid TEXT,
    actor TEXT NOT NULL, action TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS device_certs (
    cert TEXT PRIMARY KEY, eid TEXT NOT NULL, name TEXT NOT NULL, node TEXT NOT NULL,
    issued_ms BIGINT NOT NULL, revoked_ms BIGINT);
CREATE INDEX IF NOT EXISTS device_certs_by_device ON device_certs (eid, name);
CREATE TABLE IF NOT EXISTS revocations (
    seq BIGINT PRIMARY KEY, eid TEXT NOT NULL, cert TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS revocations_by_event ON revocations (eid, seq);
CREATE TABLE IF NOT EXISTS lists (
    seq BIGINT PRIMARY KEY, eid TEXT NOT NULL, version BIGINT NOT NULL, record TEXT NOT NULL,
    UNIQUE (eid, version));

-- One redemption, decided and stored atomically. The ticket row lock serialises every
-- request for one ticket; each statement after it sees what the previous holder committed.
-- The answer's JSON has the shape of `RedemptionAnswer`.
CREATE OR REPLACE FUNCTION gatemesh_redeem(
    p_rid TEXT, p_eid TEXT, p_tid TEXT, p_gate TEXT, p_scanner TEXT, p_at TEXT,
    p_record TEXT, p_journal BOOLEAN) RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_status TEXT;
    v_eid TEXT;
    v_answer TEXT;
    v_verdict TEXT;
    v_reason TEXT;
    v_first JSON;
    v_seq BIGINT;
    -- The check-in scope a gate's record counts against (see `rules::scope_of`).
    v_scope TEXT := CASE WHEN p_journal THEN p_record::json ->> 'scope' END;
BEGIN
    -- An online request for a ticket already entered on is a duplicate whatever happens
    -- meanwhile, so the first pass takes no lock: the scans of a widely shared copy do not
    -- queue behind each other. Whether a request admits is decided on the second pass, under
    -- the ticket's lock, on what the previous holder committed. A journal item always
    -- locks (a duplicate there flags the ticket).
    FOR v_pass IN 1..2 LOOP
        IF p_journal OR v_pass = 2 THEN
            SELECT status INTO v_status FROM tickets WHERE eid = p_eid AND tid = p_tid FOR UPDATE;
        ELSE
            SELECT status INTO v_status FROM tickets WHERE eid = p_eid AND tid = p_tid;
        END IF;
        v_first := NULL;
        IF v_status = 'active' THEN
            -- The first admission's ledger record goes only to a gate's journal (the gate
            -- takes it into its ledger); an online scanner needs none, and parsing and
            -- storing it in every duplicate's answer is most of what a duplicate costs.
            SELECT json_build_object('redemption_id', redemption_id, 'gate', gate,
                                     'scanner', scanner, 'at', at,
                                     'record', CASE WHEN p_journal THEN record::json END)
              INTO v_first
              FROM redemptions
             WHERE eid = p_eid AND tid = p_tid AND verdict = 'admit' AND NOT reverted
               AND (v_scope IS NULL OR (record::json ->> 'scope') = v_scope)
             ORDER BY n LIMIT 1;
        END IF;
        EXIT WHEN p_journal OR v_first IS NOT NULL;
    END LOOP;
    SELECT eid, answer INTO v_eid, v_answer FROM redemptions WHERE redemption_id = p_rid;
    IF FOUND THEN
        IF v_eid <> p_eid THEN
            RAISE EXCEPTION 'redemption % belongs to another event', p_rid
                USING ERRCODE = 'GM001';
        END IF;
        RETURN v_answer;
    END IF;
    IF p_journal AND p_record IS NOT NULL AND (p_record::json ->> 'direction') = 'exit' THEN
        -- An exit scan (re-entry events): recorded, but no admission.
        v_verdict := 'exit'; v_reason := 'exit'; v_first := NULL;
    ELSIF v_status IS NULL THEN
        v_verdict := 'reject'; v_reason := 'unknown_ticket';
    ELSIF v_status = 'void' THEN
        v_verdict := 'reject'; v_reason := 'void';
    ELSIF v_status = 'transferred' THEN
        v_verdict := 'reject'; v_reason := 'transferred';
    ELSE
        IF v_first IS NULL THEN
            v_verdict := 'admit'; v_reason := 'valid';
        ELSIF p_journal AND p_record IS NOT NULL
              AND ((p_record::jsonb) -> 'seen') ? (v_first ->> 'redemption_id') THEN
            -- The gate knew of the first admission and let the holder back in.
            v_verdict := 'reentry'; v_reason := 'reentry';
        ELSE
            v_verdict := 'duplicate'; v_reason := 'already_admitted';
        END IF;
    END IF;
    v_answer := json_build_object(
        'verdict', CASE WHEN v_verdict IN ('exit', 'reentry') THEN 'admit' ELSE v_verdict END,
        'reason', v_reason, 'first', v_first)::text;
    IF p_journal AND v_verdict = 'duplicate' THEN
        -- A gate already let this holder in, and someone else was in first: staff must look.
        UPDATE seq SET value = value + 1 WHERE id = 1 RETURNING value INTO v_seq;
        UPDATE tickets SET flagged = TRUE, seq = v_seq WHERE eid = p_eid AND tid = p_tid;
        PERFORM pg_notify('gatemesh_changes', '');
    END IF;
    INSERT INTO redemptions (redemption_id, eid, tid, gate, scanner, at, record, journal,
                             verdict, answer)
    VALUES (p_rid, p_eid, p_tid, p_gate, p_scanner, p_at, p_record, p_journal,
            v_verdict, v_answer)
    ON CONFLICT (redemption_id) DO NOTHING;
    IF NOT FOUND THEN
        -- The same id arrived concurrently for an unknown ticket (no row to lock): the
        -- first one's answer stands.
        SELECT eid, answer INTO v_eid, v_answer FROM redemptions WHERE redemption_id = p_rid;
        IF v_eid <> p_eid THEN
            RAISE EXCEPTION 'redemption % belongs to another event', p_rid
                USING ERRCODE = 'GM001';
        END IF;
    END IF;
    RETURN v_answer;
END
$$;

-- Many online redemptions in one round trip and one transaction (the server gathers the
-- requests that arrive while the previous gathering is at the database). Tickets are taken in
-- one order by every gathering, so two of them never deadlock on each other. A redemption id
-- that belongs to another event answers NULL (the caller reports the conflict).
CREATE OR REPLACE FUNCTION gatemesh_redeem_many(
    p_rid TEXT[], p_eid TEXT[], p_tid TEXT[], p_gate TEXT[], p_scanner TEXT[], p_at TEXT[],
    p_record TEXT[])
    RETURNS TEXT[]
LANGUAGE plpgsql AS $$
DECLARE
    v_out TEXT[] := array_fill(NULL::TEXT, ARRAY[cardinality(p_rid)]);
    v_eid TEXT;
    i BIGINT;
BEGIN
    FOR i IN SELECT o FROM unnest(p_tid) WITH ORDINALITY AS t(tid, o) ORDER BY tid, o LOOP
        SELECT eid INTO v_eid FROM redemptions WHERE redemption_id = p_rid[i];
        IF NOT FOUND OR v_eid = p_eid[i] THEN
            v_out[i] := gatemesh_redeem(p_rid[i], p_eid[i], p_tid[i], p_gate[i], p_scanner[i],
                                        p_at[i], p_record[i], FALSE);
        END IF;
    END LOOP;
    RETURN v_out;
END
$$;
"#;

type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// PostgreSQL storage.
pub struct Postgres {
    /// Always `Some` until dropped.
    pool: Option<Pool>,
    changes: Arc<Changes>,
    /// Online redemptions on their way to the gatherers (`None` once closing).
    gather: Option<Queue>,
}

/// Threads that gather online redemptions (see [`super::gather`]); two, so one gathers while
/// the other waits for the database.
const GATHERERS: usize = 2;
/// The gatherers' connections' `application_name`.
const GATHERER_NAME: &str = "gatemesh-gather";

impl Drop for Postgres {
    fn drop(&mut self) {
        // Closing a connection blocks on its runtime, which panics on an async thread (the
        // last server handle often goes away on one): close them on a plain thread.
        // The gatherers end when their queue closes, dropping their pool handles.
        self.gather.take();
        if let Some(pool) = self.pool.take() {
            let _ = std::thread::Builder::new()
                .name("pg-close".into())
                .spawn(move || drop(pool));
        }
    }
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field(
                "connections",
                &self.pool.as_ref().map(|p| p.state().connections),
            )
            .finish_non_exhaustive()
    }
}

/// How long connecting may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An error and its causes on one line.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !text.ends_with(&c_text) {
            text = format!("{text}: {c_text}");
        }
        cause = c.source();
    }
    text
}

/// `HOST:PORT[, …]` of a configuration, for messages.
fn where_(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let host = match host {
                postgres::config::Host::Tcp(h) => h.clone(),
                postgres::config::Host::Unix(p) => p.display().to_string(),
            };
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Postgres {
    /// Connects (`postgres://user@host:port/db`), creates or checks the tables, and starts
    /// listening for changes made by any server on this database.
    pub fn open(url: &str, pool_size: u32) -> Result<Self, StoreError> {
        // The synchronous client runs a small runtime of its own, which cannot start on an
        // async thread: connect from a plain one, wherever this is called from.
        std::thread::scope(|scope| {
            scope
                .spawn(|| Self::connect(url, pool_size))
                .join()
                .unwrap_or_else(|_| Err(StoreError::Conflict("connecting panicked".into())))
        })
    }

    fn connect(url: &str, pool_size: u32) -> Result<Self, StoreError> {
        let config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| StoreError::Conflict(format!("database URL: {e}")))?;
        let mut config = config;
        if config.get_user().is_none() {
            // As libpq does: the user this process runs as.
            config.user(std::env::var("USER").as_deref().unwrap_or("postgres"));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // One plain connection first: a database that is not there fails now, naming where
        // and why, rather than after the pool's retries.
        config.connect(NoTls).map_err(|e| StoreError::Unreachable {
            at: where_(&config),
            why: with_causes(&e),
        })?;
        let manager = PostgresConnectionManager::new(config.clone(), NoTls);
        let pool = r2d2::Pool::builder()
            .max_size(pool_size.max(2))
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(manager)?;
        migrate(&mut *pool.get()?)?;
        let changes = Arc::new(Changes::new());
        listen(config.clone(), changes.clone())?;
        let (tx, rx) = gather::queue();
        // Named, so an operator sees them in `pg_stat_activity`.
        let mut own = config.clone();
        own.application_name(GATHERER_NAME);
        for n in 0..GATHERERS {
            let (config, pool, rx) = (own.clone(), pool.clone(), rx.clone());
            std::thread::Builder::new()
                .name(format!("pg-gather-{n}"))
                .spawn(move || gatherer(&config, &pool, &rx))
                .map_err(|e| StoreError::Conflict(format!("starting a gatherer: {e}")))?;
        }
        Ok(Self {
            pool: Some(pool),
            changes,
            gather: Some(tx),
        })
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<PostgresConnectionManager<NoTls>>, StoreError> {
        let pool = self
            .pool
            .as_ref()
            .ok_or_else(|| StoreError::Conflict("the storage is closing".into()))?;
        Ok(pool.get()?)
    }

    /// Runs `f` in a transaction that changes tickets: it takes the sequence, so these
    /// transactions commit one at a time, in sequence order.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction()?;
        let out = f(&mut tx)?;
        tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])?;
        tx.commit()?;
        Ok(out)
    }
}

fn migrate(client: &mut postgres::Client) -> Result<(), StoreError> {
    let mut tx = client.transaction()?;
    // Two servers starting at once on a new database must not both create the tables.
    tx.execute("SELECT pg_advisory_xact_lock(7413052)", &[])?;
    let known: bool = tx
        .query_one("SELECT to_regclass('gatemesh_meta') IS NOT NULL", &[])?
        .get(0);
    if known {
        let found: Option<String> = tx
            .query_opt("SELECT value FROM gatemesh_meta WHERE key = 'schema'", &[])?
            .map(|r| r.get(0));
        // Version 3 added finding guests (an event's permission, a ticket's order): columns
        // a version-2 database gets below.
        if let Some(v) = found.filter(|v| *v != SCHEMA_VERSION.to_string() && v != "2") {
            return Err(StoreError::Conflict(format!(
                "the database holds schema version {v}; this gatemesh reads version {SCHEMA_VERSION}"
            )));
        }
    }
    tx.batch_execute(SCHEMA)?;
    tx.batch_execute(
        "ALTER TABLE events ADD COLUMN IF NOT EXISTS guest_search BOOLEAN NOT NULL DEFAULT FALSE;
         ALTER TABLE tickets ADD COLUMN IF NOT EXISTS order_ref TEXT;
         ALTER TABLE tickets ADD COLUMN IF NOT EXISTS product TEXT;",
    )?;
    tx.execute(
        "INSERT INTO gatemesh_meta (key, value) VALUES ('schema', $1)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&SCHEMA_VERSION.to_string()],
    )?;
    tx.commit()?;
    Ok(())
}

/// One connection per process does `LISTEN`; a notification (or a reconnect, after which
/// some may have been missed) wakes every change stream, which then re-reads from its cursor.
fn listen(config: postgres::Config, changes: Arc<Changes>) -> Result<(), StoreError> {
    let mut first = Some(config.connect(NoTls)?);
    std::thread::Builder::new()
        .name("pg-listen".into())
        .spawn(move || {
            loop {
                let client = match first.take() {
                    Some(c) => Ok(c),
                    None => config.connect(NoTls),
                };
                let mut client = match client {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!("change listener: {e}; retrying");
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                };
                if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
                    tracing::warn!("change listener: {e}; retrying");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
                changes.bump();
                let mut notes = client.notifications();
                let mut iter = notes.blocking_iter();
                loop {
                    match iter.next() {
                        Ok(Some(_)) => changes.bump(),
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!("change listener: {e}; reconnecting");
                            break;
                        }
                    }
                }
                if Arc::strong_count(&changes) == 1 {
                    // The storage is gone; so is the reason to listen.
                    return;
                }
            }
        })
        .map_err(|e| StoreError::Conflict(format!("starting the change listener: {e}")))?;
    Ok(())
}

/// The redemptions that count as admissions of their ticket: online admits and every
/// admission a gate's journal reported, not reverted.
const COUNTED: &str = "NOT reverted AND (verdict = 'admit' OR (journal AND verdict <> 'exit'))";

/// A read-only transaction that sees one snapshot of the database for all its reads.
fn snapshot(conn: &mut postgres::Client) -> Result<postgres::Transaction<'_>, StoreError> {
    Ok(conn
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?)
}

fn read_ticket(
    client: &mut impl postgres::GenericClient,
    eid: &EventId,
    tid: &TicketId,
) -> Result<Option<Ticket>, StoreError> {
    client
        .query_opt(
            &format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = $1 AND tid = $2"),
            &[&eid.as_str(), &tid.as_str()],
        )?
        .as_ref()
        .map(rows::ticket)
        .transpose()
}

/// The statements of the shared rules. Every transaction that runs them takes the sequence
/// row, so they commit one at a time; a ticket's row is locked before it is read.
impl Tx for Transaction<'_> {
    fn lock_status(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Option<TicketStatus>, StoreError> {
        self.query_opt(
            "SELECT status FROM tickets WHERE eid = $1 AND tid = $2 FOR UPDATE",
            &[&eid.as_str(), &tid.as_str()],
        )?
        .as_ref()
        .map(rows::status)
        .transpose()
    }

    fn ticket(&mut self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError> {
        read_ticket(self, eid, tid)
    }

    /// Locks the sequence row until commit.
    fn take_seq(&mut self, n: usize) -> Result<i64, StoreError> {
        let n = n as i64;
        let last: i64 = self
            .query_one(
                "UPDATE seq SET value = value + $1 WHERE id = 1 RETURNING value",
                &[&n],
            )?
            .get(0);
        Ok(last - n + 1)
    }

    fn insert_tickets(&mut self, tickets: &[Ticket], first: i64) -> Result<(), StoreError> {
        // Prepared once for the batch: one round trip a ticket.
        let insert = self.prepare(
            "INSERT INTO tickets
               (tid, eid, seat, format, code, status, transferred_from, holder, seq, order_ref,
                product)
             VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10)",
        )?;
        for (t, seq) in tickets.iter().zip(first..) {
            let from = t.transferred_from.as_ref().map(TicketId::as_str);
            let inserted = self.execute(
                &insert,
                &[
                    &t.tid.as_str(),
                    &t.eid.as_str(),
                    &t.seat,
                    &t.format.as_str(),
                    &t.code,
                    &from,
                    &t.holder,
                    &seq,
                    &t.order_ref,
                    &rows::product_column(t.product.as_ref()),
                ],
            );
            match inserted {
                Ok(_) => {}
                Err(e) if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => {
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
                "UPDATE tickets SET status = 'void', void_reason = $3, seq = $4
                 WHERE eid = $1 AND tid = $2"
            }
            Change::TransferredTo(_) => {
                "UPDATE tickets SET status = 'transferred', transferred_to = $3, seq = $4
                 WHERE eid = $1 AND tid = $2"
            }
            Change::Resolution(_) => {
                "UPDATE tickets SET flagged = FALSE, resolution = $3, seq = $4
                 WHERE eid = $1 AND tid = $2"
            }
            Change::Reverted(_) => {
                "UPDATE tickets SET reverted = $3, seq = $4 WHERE eid = $1 AND tid = $2"
            }
        };
        let value = change.value();
        self.execute(sql, &[&eid.as_str(), &tid.as_str(), &value.as_ref(), &seq])?;
        Ok(())
    }

    fn status_record(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
        record: &str,
    ) -> Result<(), StoreError> {
        self.execute(
            "UPDATE tickets SET status_record = $3 WHERE eid = $1 AND tid = $2",
            &[&eid.as_str(), &tid.as_str(), &record],
        )?;
        Ok(())
    }

    fn revert_admissions(
        &mut self,
        eid: &EventId,
        tid: &TicketId,
    ) -> Result<Vec<RedemptionId>, StoreError> {
        // RETURNING keeps no order: `n` puts them back in theirs.
        self.query(
            &format!(
                "UPDATE redemptions SET reverted = TRUE WHERE eid = $1 AND tid = $2 AND {COUNTED}
                 RETURNING redemption_id, n"
            ),
            &[&eid.as_str(), &tid.as_str()],
        )?
        .iter()
        .map(|r| Ok((r.int(1)?, r.text(0)?)))
        .collect::<Result<std::collections::BTreeMap<_, _>, StoreError>>()?
        .into_values()
        .map(|id| parse(&id, "redemption id"))
        .collect()
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
            "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &eid.as_str(),
                &tid.as_str(),
                &actor,
                &action,
                &reason,
                &now(),
            ],
        )?;
        Ok(())
    }
}

/// How long a readiness check waits for a database connection.
const PING_WAIT: Duration = Duration::from_secs(2);

impl Storage for Postgres {
    fn ping(&self) -> Result<(), StoreError> {
        let pool = self
            .pool
            .as_ref()
            .ok_or_else(|| StoreError::Conflict("the storage is closing".into()))?;
        pool.get_timeout(PING_WAIT)?.simple_query("SELECT 1")?;
        Ok(())
    }

    fn create_event(&self, e: &Event) -> Result<(), StoreError> {
        let capacity = e.capacity.map(|c| i32::try_from(c).unwrap_or(i32::MAX));
        let n = self.conn()?.execute(
            "INSERT INTO events (id, name, capacity, starts_at, ends_at, guest_search)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            &[
                &e.id.as_str(),
                &e.name,
                &capacity,
                &e.starts_at,
                &e.ends_at,
                &e.guest_search,
            ],
        )?;
        if n == 0 {
            return Err(StoreError::Exists(format!("event {}", e.id)));
        }
        Ok(())
    }

    fn events(&self) -> Result<Vec<Event>, StoreError> {
        self.conn()?
            .query(
                &format!("SELECT {} FROM events ORDER BY id", rows::EVENT_COLUMNS),
                &[],
            )?
            .iter()
            .map(rows::event)
            .collect()
    }

    fn event(&self, id: &EventId) -> Result<Option<Event>, StoreError> {
        self.conn()?
            .query_opt(
                &format!("SELECT {} FROM events WHERE id = $1", rows::EVENT_COLUMNS),
                &[&id.as_str()],
            )?
            .as_ref()
            .map(rows::event)
            .transpose()
    }

    fn insert_tickets(&self, tickets: &[Ticket]) -> Result<(), StoreError> {
        self.write(|tx| rules::insert_tickets(tx, tickets))
    }

    fn ticket(&self, eid: &EventId, tid: &TicketId) -> Result<Option<Ticket>, StoreError> {
        read_ticket(&mut *self.conn()?, eid, tid)
    }

    fn void(
        &self,
        eid: &EventId,
        tid: &TicketId,
        actor: &str,
        reason: &str,
        record: &str,
    ) -> Result<Ticket, StoreError> {
        self.write(|tx| rules::void(tx, eid, tid, actor, reason, record))
    }

    fn redeem(
        &self,
        eid: &EventId,
        req: &RedemptionRequest,
        origin: Origin,
    ) -> Result<RedemptionAnswer, StoreError> {
        redeem_on(&mut *self.conn()?, eid, req, origin)
    }

    fn submit_online(&self, eid: &EventId, req: &RedemptionRequest) -> Option<Submitted> {
        gather::submit(self.gather.as_ref(), eid, req)
    }

    fn redeem_journal(
        &self,
        eid: &EventId,
        requests: &[RedemptionRequest],
    ) -> Result<Vec<RedemptionAnswer>, StoreError> {
        let mut conn = self.conn()?;
        // A batch can meet a void (ticket lock, then the sequence) in the opposite order
        // and be chosen as a deadlock's victim: it is all or nothing, so it is run again.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = conn.transaction()?;
            let answers = requests
                .iter()
                .map(|r| redeem_on(&mut tx, eid, r, Origin::Journal))
                .collect::<Result<Vec<_>, _>>();
            let done = answers.and_then(|a| {
                tx.commit()?;
                Ok(a)
            });
            match done {
                Err(StoreError::Postgres(e)) if attempt < 3 && retryable(&e) => continue,
                other => return other,
            }
        }
    }

    fn answers(
        &self,
        eid: &EventId,
        ids: &[RedemptionId],
    ) -> Result<Vec<Option<(TicketId, RedemptionAnswer)>>, StoreError> {
        let asked: Vec<&str> = ids.iter().map(RedemptionId::as_str).collect();
        let held: std::collections::HashMap<String, (TicketId, RedemptionAnswer)> = self
            .conn()?
            .query(
                "SELECT redemption_id, tid, answer FROM redemptions
                 WHERE eid = $1 AND redemption_id = ANY($2)",
                &[&eid.as_str(), &asked],
            )?
            .iter()
            .map(|r| {
                Ok((
                    r.text(0)?,
                    (parse(&r.text(1)?, "ticket id")?, from_json(&r.text(2)?)?),
                ))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(asked.iter().map(|id| held.get(*id).cloned()).collect())
    }

    fn manifest(
        &self,
        eid: &EventId,
        since: Option<i64>,
    ) -> Result<(i64, Vec<Ticket>), StoreError> {
        let mut conn = self.conn()?;
        // One snapshot for the cursor and the rows.
        let mut tx = snapshot(&mut conn)?;
        let cursor: i64 = tx
            .query_one("SELECT value FROM seq WHERE id = 1", &[])?
            .get(0);
        let rows = tx.query(
            &format!(
                "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = $1 AND seq > $2 AND seq <= $3 ORDER BY seq"
            ),
            &[&eid.as_str(), &since.unwrap_or(0), &cursor],
        )?;
        tx.commit()?;
        let tickets = rows.iter().map(rows::ticket).collect::<Result<_, _>>()?;
        Ok((cursor, tickets))
    }

    fn transfer(
        &self,
        old: &TicketId,
        new: &Ticket,
        actor: &str,
        record: &str,
    ) -> Result<(), StoreError> {
        self.write(|tx| rules::transfer(tx, old, new, actor, record))
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
        self.conn()?
            .query(
                "SELECT tid, actor, action, reason, at FROM audit WHERE eid = $1 ORDER BY id",
                &[&eid.as_str()],
            )?
            .iter()
            .map(rows::audit_line)
            .collect()
    }

    fn admissions(&self, eid: &EventId, tid: &TicketId) -> Result<Vec<Admission>, StoreError> {
        self.conn()?
            .query(
                &format!(
                    "SELECT redemption_id, gate, scanner, at, record FROM redemptions
                     WHERE eid = $1 AND tid = $2 AND {COUNTED} ORDER BY n"
                ),
                &[&eid.as_str(), &tid.as_str()],
            )?
            .iter()
            .map(rows::admission)
            .collect()
    }

    fn ticket_page(
        &self,
        eid: &EventId,
        after: Option<&TicketId>,
        limit: usize,
    ) -> Result<Vec<(Ticket, Vec<Admission>)>, StoreError> {
        let mut conn = self.conn()?;
        // One snapshot: the admissions are those of the tickets as read.
        let mut tx = snapshot(&mut conn)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let tickets = tx
            .query(
                &format!(
                    "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = $1 AND tid > $2 ORDER BY tid LIMIT $3"
                ),
                &[&eid.as_str(), &after.map_or("", TicketId::as_str), &limit],
            )?
            .iter()
            .map(rows::ticket)
            .collect::<Result<Vec<_>, _>>()?;
        let (Some(first), Some(last)) = (tickets.first(), tickets.last()) else {
            return Ok(Vec::new());
        };
        // The page's tickets are one range of the index the admissions are read by.
        let admissions = tx
            .query(
                &format!(
                    "SELECT redemption_id, gate, scanner, at, NULL::text, tid FROM redemptions
                     WHERE eid = $1 AND tid >= $2 AND tid <= $3 AND {COUNTED} ORDER BY tid, n"
                ),
                &[&eid.as_str(), &first.tid.as_str(), &last.tid.as_str()],
            )?
            .iter()
            .map(|r| Ok((r.try_get::<_, String>(5)?, rows::admission(r)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        tx.commit()?;
        Ok(rows::with_admissions(tickets, admissions))
    }

    fn flags(&self, eid: &EventId) -> Result<Vec<Ticket>, StoreError> {
        self.conn()?
            .query(
                &format!(
                    "SELECT {TICKET_COLUMNS} FROM tickets WHERE eid = $1 AND flagged ORDER BY seq"
                ),
                &[&eid.as_str()],
            )?
            .iter()
            .map(rows::ticket)
            .collect()
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
        let mut conn = self.conn()?;
        let tickets = conn.query_one(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'void'),
                    COUNT(*) FILTER (WHERE status = 'transferred'), COUNT(*) FILTER (WHERE flagged)
             FROM tickets WHERE eid = $1",
            &[&eid.as_str()],
        )?;
        let answers = conn.query_one(
            "SELECT COUNT(*) FILTER (WHERE verdict = 'admit'), COUNT(*) FILTER (WHERE verdict = 'duplicate'),
                    COUNT(*) FILTER (WHERE verdict = 'reject'),
                    COUNT(DISTINCT tid) FILTER (WHERE verdict = 'admit' AND NOT reverted)
             FROM redemptions WHERE eid = $1",
            &[&eid.as_str()],
        )?;
        rows::counts(&tickets, &answers)
    }

    fn put_pairing(&self, d: &Device, code_hash: &str, expires_ms: i64) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO devices (eid, name, role, code_hash, code_expires_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (eid, name) DO UPDATE SET role = $3, code_hash = $4, code_expires_ms = $5",
            &[
                &d.eid.as_str(),
                &d.name.as_str(),
                &d.role.as_str(),
                &code_hash,
                &expires_ms,
            ],
        )?;
        Ok(())
    }

    fn pairing(&self, code_hash: &str, now_ms: i64) -> Result<Option<Device>, StoreError> {
        self.conn()?
            .query_opt(
                "SELECT eid, name, role FROM devices WHERE code_hash = $1 AND code_expires_ms >= $2",
                &[&code_hash, &now_ms],
            )?
            .as_ref()
            .map(rows::device)
            .transpose()
    }

    fn pair(
        &self,
        code_hash: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Device>, StoreError> {
        self.conn()?
            .query_opt(
                "UPDATE devices SET token_hash = $2, code_hash = NULL, code_expires_ms = NULL
                 WHERE code_hash = $1 AND code_expires_ms >= $3
                 RETURNING eid, name, role",
                &[&code_hash, &token_hash, &now_ms],
            )?
            .as_ref()
            .map(rows::device)
            .transpose()
    }

    fn device(&self, token_hash: &str) -> Result<Option<Device>, StoreError> {
        self.conn()?
            .query_opt(
                "SELECT eid, name, role FROM devices WHERE token_hash = $1",
                &[&token_hash],
            )?
            .as_ref()
            .map(rows::device)
            .transpose()
    }

    fn heartbeat(&self, d: &Device, payload: &str, now_ms: i64) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO devices (eid, name, role, last_seen_ms, heartbeat) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (eid, name) DO UPDATE SET last_seen_ms = $4, heartbeat = $5",
            &[&d.eid.as_str(), &d.name.as_str(), &d.role.as_str(), &now_ms, &payload],
        )?;
        Ok(())
    }

    fn gates(&self, eid: &EventId) -> Result<Vec<GateView>, StoreError> {
        self.conn()?
            .query(
                "SELECT name, role, token_hash IS NOT NULL, last_seen_ms, heartbeat FROM devices
                 WHERE eid = $1 ORDER BY name",
                &[&eid.as_str()],
            )?
            .iter()
            .map(rows::gate)
            .collect()
    }

    fn record_cert(
        &self,
        eid: &EventId,
        name: &gatemesh_wire::DeviceName,
        cert: &str,
        node: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO device_certs (cert, eid, name, node, issued_ms) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (cert) DO NOTHING",
            &[&cert, &eid.as_str(), &name.as_str(), &node, &now_ms],
        )?;
        Ok(())
    }

    fn live_certs(
        &self,
        eid: &EventId,
        name: &gatemesh_wire::DeviceName,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .conn()?
            .query(
                "SELECT cert, node FROM device_certs
                 WHERE eid = $1 AND name = $2 AND revoked_ms IS NULL ORDER BY issued_ms",
                &[&eid.as_str(), &name.as_str()],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
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
                     WHERE eid = $1 AND name = $2",
                    &[&eid.as_str(), &name.as_str()],
                )?;
            }
            if !revocations.is_empty() {
                let first = Tx::take_seq(tx, revocations.len())?;
                for ((cert, record), seq) in revocations.iter().zip(first..) {
                    tx.execute(
                        "UPDATE device_certs SET revoked_ms = $2 WHERE cert = $1",
                        &[cert, &at],
                    )?;
                    tx.execute(
                        "INSERT INTO revocations (seq, eid, cert, record) VALUES ($1, $2, $3, $4)",
                        &[&seq, &eid.as_str(), cert, record],
                    )?;
                }
            }
            tx.execute(
                "INSERT INTO audit (eid, tid, actor, action, reason, at) VALUES ($1, NULL, $2, $3, $4, $5)",
                &[
                    &eid.as_str(),
                    &actor,
                    &format!("revoke:{}", name.as_str()),
                    &reason,
                    &now(),
                ],
            )?;
            Ok(())
        })
    }

    fn revocations(&self, eid: &EventId, since: i64, upto: i64) -> Result<Vec<String>, StoreError> {
        Ok(self
            .conn()?
            .query(
                "SELECT record FROM revocations WHERE eid = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                &[&eid.as_str(), &since, &upto],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn release_lists(
        &self,
        eid: &EventId,
        actor: &str,
        record: &mut dyn FnMut(u64) -> Result<String, StoreError>,
    ) -> Result<(u64, String), StoreError> {
        self.write(|tx| {
            // Servers releasing at once take turns on the event's row: two versions, never one
            // twice.
            tx.execute(
                "SELECT 1 FROM events WHERE id = $1 FOR UPDATE",
                &[&eid.as_str()],
            )?;
            let last: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(version), 0) FROM lists WHERE eid = $1",
                    &[&eid.as_str()],
                )?
                .get(0);
            let version = u64::try_from(last).unwrap_or(0) + 1;
            let json = record(version)?;
            let seq = Tx::take_seq(tx, 1)?;
            tx.execute(
                "INSERT INTO lists (seq, eid, version, record) VALUES ($1, $2, $3, $4)",
                &[&seq, &eid.as_str(), &(last + 1), &json],
            )?;
            tx.execute(
                "INSERT INTO audit (eid, tid, actor, action, reason, at)
                 VALUES ($1, NULL, $2, 'lists:release', $3, $4)",
                &[&eid.as_str(), &actor, &format!("version {version}"), &now()],
            )?;
            Ok((version, json))
        })
    }

    fn lists(&self, eid: &EventId, since: i64, upto: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()?
            .query_opt(
                "SELECT record FROM lists WHERE eid = $1 AND seq > $2 AND seq <= $3
                 ORDER BY version DESC LIMIT 1",
                &[&eid.as_str(), &since, &upto],
            )?
            .map(|r| r.get(0)))
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// One redemption through `gatemesh_redeem`, on a connection or inside a transaction.
fn redeem_on(
    client: &mut impl postgres::GenericClient,
    eid: &EventId,
    req: &RedemptionRequest,
    origin: Origin,
) -> Result<RedemptionAnswer, StoreError> {
    let record = req.record.as_ref().map(to_json).transpose()?;
    let journal = origin == Origin::Journal;
    // Typed parameters: one round trip (an untyped query would prepare, execute and
    // close: three).
    use postgres::types::Type;
    let row = client.query_typed_one(
        "SELECT gatemesh_redeem($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            (&req.redemption_id.as_str(), Type::TEXT),
            (&eid.as_str(), Type::TEXT),
            (&req.tid.as_str(), Type::TEXT),
            (&req.gate.as_str(), Type::TEXT),
            (&req.scanner.as_str(), Type::TEXT),
            (&req.at.to_string(), Type::TEXT),
            (&record, Type::TEXT),
            (&journal, Type::BOOL),
        ],
    );
    match row {
        Ok(row) => from_json(row.get(0)),
        Err(e) if e.code().is_some_and(|c| c.code() == "GM001") => {
            Err(rules::elsewhere(&req.redemption_id))
        }
        Err(e) => Err(e.into()),
    }
}

/// Takes the jobs waiting (blocking for the first), runs them together, answers each; until
/// the queue closes. Each gatherer keeps a connection of its own (no pool checkout, and so no
/// test query, per gathering) and connects again when the database closed it.
fn gatherer(config: &postgres::Config, pool: &Pool, waiting: &Waiting) {
    // Connected before the first request, so it waits for no handshake.
    let mut own = config.connect(NoTls).ok();
    while let Some(jobs) = gather::take_waiting(waiting) {
        if own.as_ref().is_none_or(postgres::Client::is_closed) {
            own = config.connect(NoTls).ok();
        }
        let gathered = own.as_mut().map(|conn| redeem_many(conn, &jobs));
        let answers = match gathered {
            Some(Ok(answers)) => answers,
            // A deadlock with a void or a journal, a lost connection, an id raced in by
            // another event, no connection now: each request alone on a pooled (tested)
            // connection, so only its own error reaches it.
            _ => {
                own.take_if(|c| c.is_closed());
                jobs.iter()
                    .map(|j| {
                        let mut conn = pool.get()?;
                        redeem_on(&mut *conn, &j.eid, &j.req, Origin::Online)
                    })
                    .collect()
            }
        };
        gather::answer(jobs, answers);
    }
}

/// Many online redemptions in one call of `gatemesh_redeem_many`, answers in their order.
fn redeem_many(
    client: &mut postgres::Client,
    jobs: &[Job],
) -> Result<Vec<Result<RedemptionAnswer, StoreError>>, StoreError> {
    use postgres::types::Type;
    let col = |f: &dyn Fn(&Job) -> String| jobs.iter().map(f).collect::<Vec<String>>();
    let rids = col(&|j| j.req.redemption_id.to_string());
    let eids = col(&|j| j.eid.as_str().to_owned());
    let tids = col(&|j| j.req.tid.as_str().to_owned());
    let gates = col(&|j| j.req.gate.to_string());
    let scanners = col(&|j| j.req.scanner.to_string());
    let ats = col(&|j| j.req.at.to_string());
    let records = jobs
        .iter()
        .map(|j| j.req.record.as_ref().map(to_json).transpose())
        .collect::<Result<Vec<Option<String>>, _>>()?;
    let row = client.query_typed_one(
        "SELECT gatemesh_redeem_many($1, $2, $3, $4, $5, $6, $7)",
        &[
            (&rids, Type::TEXT_ARRAY),
            (&eids, Type::TEXT_ARRAY),
            (&tids, Type::TEXT_ARRAY),
            (&gates, Type::TEXT_ARRAY),
            (&scanners, Type::TEXT_ARRAY),
            (&ats, Type::TEXT_ARRAY),
            (&records, Type::TEXT_ARRAY),
        ],
    )?;
    let answers: Vec<Option<String>> = row.get(0);
    if answers.len() != jobs.len() {
        return Err(StoreError::Conflict("gathered answers do not match".into()));
    }
    Ok(answers
        .into_iter()
        .zip(jobs)
        .map(|(a, j)| match a {
            Some(text) => from_json(&text),
            None => Err(rules::elsewhere(&j.req.redemption_id)),
        })
        .collect())
}

fn retryable(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    })
}
