//! Durable storage of one node's ledger in SQLite (WAL).
//!
//! Tables: `meta` (event, node id, genesis bytes, the store's [`STORE_FORMAT`]), `changes`
//! (one row per Automerge change, keyed by its hash, so a damaged row is caught on load
//! rather than silently dropped), `snapshot` (a compacted document covering every change up to a
//! sequence number). A redemption's change is committed here before its verdict is
//! returned.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gatemesh_ticket::EventId;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::{doc::StoredChange, model::NodeId};

/// The form of what this version stores, in `meta` under `format`: 2, snapshots in the
/// store's deflated form or automerge's (a peer's document taken whole), and change rows
/// after them. Stores from before the key was kept (forms 1 and 2) get it when opened. A
/// store of a later form — written by a newer gatemesh — is refused by name and left as it
/// is, where reading it could have taken it for damaged.
pub const STORE_FORMAT: i64 = 2;

/// How hard each commit pushes to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=NORMAL` under WAL: every committed admission survives the process being
    /// killed; a power cut may lose the last moments.
    Process,
    /// `synchronous=FULL`: every committed admission also survives a power cut. The default:
    /// a gate must never forget an admission, and group commit keeps the cost to one fsync
    /// for many scans.
    #[default]
    Power,
}

/// Whether a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// As the store's [`Durability`] says: for anything this node wrote itself, which no
    /// one else may hold yet.
    AsOpened,
    /// Never (`synchronous=NORMAL` for this commit): for what a power cut may take without
    /// loss — changes only peers wrote (they hold them, and send them again) and this
    /// node's counters. The write-ahead log keeps commits in order, so one that waits for
    /// the disk takes every earlier one with it: nothing of this node's that survives a
    /// power cut builds on a peer's change that did not.
    Never,
}

/// Storage failures. A failed [`Store::append`] or [`Store::compact`] leaves the database as
/// it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite refused: the file cannot be opened or written, or stayed locked past 5 s.
    #[error("the database failed: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The store was set up for another event.
    #[error("this data directory belongs to event {found}, not {expected}")]
    WrongEvent {
        /// The event asked for.
        expected: EventId,
        /// The event the store holds.
        found: String,
    },
    /// A node id, genesis or change hash is missing or malformed.
    #[error("the database is damaged: {0}")]
    Corrupt(String),
    /// A newer gatemesh wrote this store in a form this one does not read.
    #[error(
        "this data directory was written by a newer gatemesh (store format {found}; this one \
         reads up to {STORE_FORMAT}): run that version, or export the ledger with it"
    )]
    Newer {
        /// The form the store says it is in.
        found: i64,
    },
}

/// What a node needs to reopen its ledger.
#[derive(Debug)]
pub struct Stored {
    /// This node's id, made on first use and kept for good.
    pub node: NodeId,
    /// The genesis this node started from.
    pub genesis: Vec<u8>,
    /// The compacted document, if the store was ever compacted.
    pub snapshot: Option<Vec<u8>>,
    /// Every change stored since the snapshot, in the order stored.
    pub changes: Vec<StoredChange>,
}

/// One node's ledger on disk: one SQLite file behind one connection, and a second one on a
/// thread of its own that copies the write-ahead log into the file ([`Checkpointer`]).
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Who copies the write-ahead log into the file.
    copier: Copier,
    durability: Durability,
    /// Whether `synchronous` is FULL on the connection now.
    full_now: bool,
    /// Rows up to this one (the snapshot's `through_seq`) may still be stored, folded into
    /// the snapshot and never read again: each commit deletes [`FOLDED_EACH`] of them, until
    /// none is left (0).
    folded_through: i64,
}

/// Most folded rows a commit deletes besides its own work ([`Store::compact_through`] and
/// every commit after it until none is left). Deleting 20,000 rows at once (each with its
/// hash in an index) kept a gate's writer from its scans for half a second on two busy
/// cores; a few hundred at a time cost each commit a millisecond.
pub const FOLDED_EACH: i64 = 256;

impl Store {
    /// Opens or creates the database at `path` in WAL mode, waiting up to 5 s for a lock.
    pub fn open(path: &Path, durability: Durability) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let sync = match durability {
            Durability::Process => "NORMAL",
            Durability::Power => "FULL",
        };
        conn.pragma_update(None, "synchronous", sync)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        // The log is copied into the file by the checkpointer, off the thread that commits;
        // this connection does it only if the log grew this large all the same.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_BACKSTOP_PAGES)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS changes (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 hash BLOB NOT NULL UNIQUE,
                 bytes BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS snapshot (
                 id INTEGER PRIMARY KEY CHECK (id = 1),
                 bytes BLOB NOT NULL,
                 through_seq INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS tally (key TEXT PRIMARY KEY, n INTEGER NOT NULL);",
        )?;
        Ok(Self {
            conn,
            path: path.to_owned(),
            copier: Copier::NotYet,
            durability,
            full_now: durability == Durability::Power,
            folded_through: 0,
        })
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    /// Writes this store's ledger as `node` from now on: a device that got a mesh identity
    /// writes under the node id its key makes (see `Ledger::may_become`).
    pub fn set_node(&mut self, node: &NodeId) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'node'",
            [node.as_str().as_bytes()],
        )?;
        Ok(())
    }

    /// Reads everything back, or sets the store up for `event` on first use: a fresh node id
    /// and this event's genesis. A store set up for another event is refused.
    pub fn load_or_init(&mut self, event: &EventId) -> Result<Stored, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let get = |key: &str| -> Result<Option<Vec<u8>>, rusqlite::Error> {
            tx.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
        };
        match get("event")? {
            None => {
                let node = NodeId::random();
                let genesis = crate::layout::genesis(event);
                let mut put = tx.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
                put.execute(params!["event", event.as_str().as_bytes()])?;
                put.execute(params!["node", node.as_str().as_bytes()])?;
                put.execute(params!["genesis", genesis])?;
            }
            Some(found) if found != event.as_str().as_bytes() => {
                return Err(StoreError::WrongEvent {
                    expected: event.clone(),
                    found: String::from_utf8_lossy(&found).into_owned(),
                });
            }
            Some(_) => {}
        }
        let format = get("format")?
            .map(|b| {
                std::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| StoreError::Corrupt("a store format that does not read".into()))
            })
            .transpose()?;
        match format {
            Some(found) if found > STORE_FORMAT => return Err(StoreError::Newer { found }),
            Some(found) if found == STORE_FORMAT => {}
            _ => {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('format', ?1)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [STORE_FORMAT.to_string().as_bytes()],
                )?;
            }
        }
        tx.commit()?;
        let node = self
            .meta("node")?
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| NodeId::parse(&s))
            .ok_or_else(|| StoreError::Corrupt("no valid node id".into()))?;
        let genesis = self
            .meta("genesis")?
            .ok_or_else(|| StoreError::Corrupt("no genesis".into()))?;
        let snapshot: Option<(Vec<u8>, i64)> = self
            .conn
            .query_row(
                "SELECT bytes, through_seq FROM snapshot WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let through = snapshot.as_ref().map_or(0, |s| s.1);
        // Rows a compaction folded and had not deleted yet when the gate stopped.
        self.folded_through = through;
        let mut stmt = self
            .conn
            .prepare("SELECT hash, bytes FROM changes WHERE seq > ?1 ORDER BY seq")?;
        let changes = stmt
            .query_map([through], |r| {
                let hash: Vec<u8> = r.get(0)?;
                Ok((hash, r.get::<_, Vec<u8>>(1)?))
            })?
            .map(|row| {
                let (hash, bytes) = row?;
                let hash: [u8; 32] = hash
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("a change hash is not 32 bytes".into()))?;
                Ok(StoredChange { hash, bytes })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Stored {
            node,
            genesis,
            snapshot: snapshot.map(|s| s.0),
            changes,
        })
    }

    /// Commits changes durably, in one transaction. Changes already stored are skipped.
    pub fn append(&mut self, changes: &[StoredChange]) -> Result<(), StoreError> {
        self.commit(changes, &[])
    }

    /// Commits changes and this node's counters (`tally`: key and value, each replacing
    /// what was stored under its key) in one transaction: counters ride along with the
    /// changes' commit, costing no sync of their own.
    pub fn commit(
        &mut self,
        changes: &[StoredChange],
        tally: &[(String, u64)],
    ) -> Result<(), StoreError> {
        self.commit_replacing(None, changes, tally, Wait::AsOpened)
    }

    /// [`Store::commit`], first replacing every change row stored so far, and the snapshot,
    /// with `replace` when given: a document (a snapshot) and rows after it that together
    /// hold everything the rows and the snapshot held, and more — a whole ledger a peer sent
    /// and what this node held that it lacked ([`crate::TakenWhole`]). One transaction: a
    /// crash leaves the store as it was or as it is to be. A compaction saved before it
    /// finds its snapshot older than this one and changes nothing
    /// ([`Store::compact_through`]).
    ///
    /// `wait`: whether the commit waits for the disk ([`Wait`]).
    pub fn commit_replacing(
        &mut self,
        replace: Option<(&[u8], &[StoredChange])>,
        changes: &[StoredChange],
        tally: &[(String, u64)],
        wait: Wait,
    ) -> Result<(), StoreError> {
        if replace.is_none() && changes.is_empty() && tally.is_empty() {
            return Ok(());
        }
        let full = self.durability == Durability::Power && wait == Wait::AsOpened;
        if full != self.full_now {
            self.conn
                .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })?;
            self.full_now = full;
        }
        let tx = self.conn.transaction_with_behavior(if replace.is_some() {
            TransactionBehavior::Immediate
        } else {
            TransactionBehavior::Deferred
        })?;
        let mut rows_first: &[StoredChange] = &[];
        if let Some((snapshot, rows)) = replace {
            // Past every row ever stored (AUTOINCREMENT's mark, which deleted rows do not
            // lower) and the stored snapshot's: a compaction saved from any earlier copy of
            // the ledger is older, and changes nothing.
            let through: i64 = tx.query_row(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0),
                            COALESCE((SELECT through_seq FROM snapshot WHERE id = 1), 0))",
                [],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO snapshot (id, bytes, through_seq) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET bytes = excluded.bytes,
                 through_seq = excluded.through_seq",
                params![snapshot, through],
            )?;
            tx.execute("DELETE FROM changes WHERE seq <= ?1", [through])?;
            rows_first = rows;
        }
        let folded_left = match replace {
            Some(_) => false,
            None => delete_folded(&tx, self.folded_through)?,
        };
        {
            let mut stmt =
                tx.prepare_cached("INSERT OR IGNORE INTO changes (hash, bytes) VALUES (?1, ?2)")?;
            for c in rows_first.iter().chain(changes) {
                stmt.execute(params![&c.hash[..], c.bytes])?;
            }
            let mut put = tx.prepare_cached(
                "INSERT INTO tally (key, n) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET n = ?2",
            )?;
            for (key, n) in tally {
                put.execute(params![key, i64::try_from(*n).unwrap_or(i64::MAX)])?;
            }
        }
        tx.commit()?;
        if !folded_left {
            self.folded_through = 0;
        }
        self.committed();
        Ok(())
    }

    /// Tells the checkpointer that the log grew, starting it on the first commit. One that
    /// cannot start leaves the copying to this connection for good, as SQLite does by
    /// default.
    fn committed(&mut self) {
        match &self.copier {
            Copier::Apart(c) => c.nudge(),
            Copier::Here => {}
            Copier::NotYet => match Checkpointer::start(&self.path) {
                Ok(c) => {
                    c.nudge();
                    self.copier = Copier::Apart(c);
                }
                Err(e) => {
                    tracing::warn!("the ledger's checkpointer did not start: {e}");
                    let _ =
                        self.conn
                            .pragma_update(None, "wal_autocheckpoint", DEFAULT_AUTOCHECKPOINT);
                    self.copier = Copier::Here;
                }
            },
        }
    }

    /// This node's counters as last committed (see [`Store::commit`]).
    pub fn tally(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT key, n FROM tally ORDER BY key")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Number of change rows not yet folded into the snapshot.
    pub fn pending_changes(&self) -> Result<i64, StoreError> {
        let through: i64 = self
            .conn
            .query_row("SELECT through_seq FROM snapshot WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()?
            .unwrap_or(0);
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM changes WHERE seq > ?1",
            [through],
            |r| r.get(0),
        )?)
    }

    /// Replaces the change rows stored so far with `snapshot`, a saved document that holds
    /// them all. One transaction: a crash leaves either the old rows or the new snapshot.
    pub fn compact(&mut self, snapshot: &[u8]) -> Result<(), StoreError> {
        let through = self.last_seq()?;
        self.compact_through(snapshot, through)
    }

    /// Where the change rows stored so far end: a document saved now holds every row up to
    /// it, for [`Store::compact_through`] once the save is done elsewhere.
    pub fn last_seq(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM changes", [], |r| {
                r.get(0)
            })?)
    }

    /// Replaces the change rows up to `through` ([`Store::last_seq`] when the document was
    /// copied) with `snapshot`, a saved document that holds them all; rows stored since stay
    /// and are applied after it on open. One transaction, as [`Store::compact`]: the rows it
    /// folds are never read again from then on, and are deleted [`FOLDED_EACH`] at a time,
    /// by it and the commits after it. A snapshot
    /// no newer than the one stored (`through` not past its) changes nothing: the stored one
    /// may hold more than its rows (a whole ledger taken from a peer,
    /// [`Store::commit_replacing`]).
    pub fn compact_through(&mut self, snapshot: &[u8], through: i64) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored: i64 = tx
            .query_row("SELECT through_seq FROM snapshot WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()?
            .unwrap_or(0);
        if through <= stored {
            return Ok(());
        }
        tx.execute(
            "INSERT INTO snapshot (id, bytes, through_seq) VALUES (1, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET bytes = excluded.bytes, through_seq = excluded.through_seq",
            params![snapshot, through],
        )?;
        let left = delete_folded(&tx, through)?;
        tx.commit()?;
        self.folded_through = if left { through } else { 0 };
        self.committed();
        Ok(())
    }

    /// Deletes at once, in one transaction, every change row folded into the snapshot and
    /// still stored: what the commits after a compaction do [`FOLDED_EACH`] at a time, so no
    /// scan waits for it. For a store nobody scans on (a bench's seed, which otherwise
    /// has each measured commit delete a share); returns how many rows went.
    pub fn delete_folded_now(&mut self) -> Result<usize, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let deleted = tx.execute(
            "DELETE FROM changes
             WHERE seq <= COALESCE((SELECT through_seq FROM snapshot WHERE id = 1), 0)",
            [],
        )?;
        tx.commit()?;
        self.folded_through = 0;
        Ok(deleted)
    }
}

/// Pages the write-ahead log may hold before the connection that commits copies it into the
/// database itself: 64 MiB, a backstop. SQLite's default (1,000 pages, 4 MiB) copies it on
/// the commit that crosses it, on the writer's thread, with an fsync of the database: a
/// scan's answer waited for it (the `process` tail in BENCHMARKS.md), and a compaction's
/// ~10 MB snapshot was copied again by the commit after it.
pub const WAL_BACKSTOP_PAGES: i64 = 16_384;
/// SQLite's own `wal_autocheckpoint`, for a store whose checkpointer could not start.
const DEFAULT_AUTOCHECKPOINT: i64 = 1_000;
/// Least time between two checkpoints: what the log took meanwhile goes in one.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// Who copies a store's write-ahead log into its database file.
#[derive(Debug)]
enum Copier {
    /// Nothing committed yet: a store opened only to be read starts no thread.
    NotYet,
    /// A checkpointer of its own.
    Apart(Checkpointer),
    /// The checkpointer could not start: the connection that commits, past SQLite's own
    /// mark.
    Here,
}

/// Copies a store's write-ahead log into its database (`PRAGMA wal_checkpoint(PASSIVE)`) on
/// a thread and connection of its own, at most every [`CHECKPOINT_EVERY`] after a commit.
/// A passive checkpoint takes no lock a writer needs: commits go on meanwhile, and what
/// they add is copied by the next one. Ends with the store (the thread is joined).
#[derive(Debug)]
struct Checkpointer {
    nudge: Option<mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    fn start(path: &Path) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let (nudge, nudged) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("ledger-checkpoint".into())
            .spawn(move || {
                let mut due = nudged.recv().is_ok();
                while due {
                    let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    if let Err(e) = copied {
                        tracing::warn!("copying the ledger's log into its file failed: {e}");
                    }
                    // Commits meanwhile make the next one due, at the end of the wait.
                    due = false;
                    let until = Instant::now() + CHECKPOINT_EVERY;
                    loop {
                        let left = until.saturating_duration_since(Instant::now());
                        match nudged.recv_timeout(left) {
                            Ok(()) => due = true,
                            Err(mpsc::RecvTimeoutError::Timeout) => break,
                            Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    if !due {
                        due = nudged.recv().is_ok();
                    }
                }
            })?;
        Ok(Self {
            nudge: Some(nudge),
            thread: Some(thread),
        })
    }

    /// The log grew: a checkpoint is due (one already due takes it too).
    fn nudge(&self) {
        if let Some(n) = &self.nudge {
            let _ = n.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Its channel closed, the thread ends after the checkpoint it may be making.
        self.nudge = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Deletes the first [`FOLDED_EACH`] rows up to `through` (folded into the snapshot): whether
/// some may be left.
fn delete_folded(tx: &rusqlite::Transaction<'_>, through: i64) -> Result<bool, StoreError> {
    if through <= 0 {
        return Ok(false);
    }
    let deleted = tx.execute(
        "DELETE FROM changes WHERE seq IN
           (SELECT seq FROM changes WHERE seq <= ?1 ORDER BY seq LIMIT ?2)",
        params![through, FOLDED_EACH],
    )?;
    Ok(deleted as i64 == FOLDED_EACH)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The connection's `synchronous` setting: 1 NORMAL, 2 FULL.
    fn synchronous(store: &Store) -> i64 {
        store
            .conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_commit_waits_for_the_disk_as_opened_unless_it_holds_nothing_to_lose() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite");
        let mut store = Store::open(&path, Durability::Power).unwrap();
        assert_eq!(synchronous(&store), 2);
        store
            .commit_replacing(None, &[numbered(1)], &[], Wait::Never)
            .unwrap();
        assert_eq!(synchronous(&store), 1);
        store.commit(&[numbered(2)], &[]).unwrap();
        assert_eq!(synchronous(&store), 2, "this node's own wait for the disk");
        store
            .commit_replacing(None, &[], &[("scans".into(), 3)], Wait::Never)
            .unwrap();
        assert_eq!(synchronous(&store), 1);
        drop(store);
        // Every commit is there, in order, whichever way it met the disk.
        let mut store = Store::open(&path, Durability::Process).unwrap();
        let event = gatemesh_ticket::EventId::new("ROCK-2026").unwrap();
        let stored = store.load_or_init(&event).unwrap();
        let hashes: Vec<[u8; 32]> = stored.changes.iter().map(|c| c.hash).collect();
        assert_eq!(hashes, [numbered(1).hash, numbered(2).hash]);
        assert_eq!(store.tally().unwrap(), [("scans".to_owned(), 3)]);
        // A store opened not to wait never does.
        store.commit(&[numbered(4)], &[]).unwrap();
        assert_eq!(synchronous(&store), 1);
    }

    /// Change rows stored, folded into the snapshot or not ([`Store::pending_changes`]
    /// counts those that are not).
    fn row_count(store: &Store) -> i64 {
        store
            .conn
            .query_row("SELECT COUNT(*) FROM changes", [], |r| r.get(0))
            .unwrap()
    }

    /// A row whose hash says `i`.
    fn numbered(i: u32) -> StoredChange {
        let mut hash = [0; 32];
        hash[..4].copy_from_slice(&i.to_be_bytes());
        StoredChange {
            hash,
            bytes: i.to_be_bytes().to_vec(),
        }
    }

    /// A store of event `ROCK-2026` set up in a fresh directory (kept while the first
    /// value lives), opened `Process`: its directory, path, event and store.
    fn fresh() -> (tempfile::TempDir, std::path::PathBuf, EventId, Store) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite");
        let event = EventId::new("ROCK-2026").unwrap();
        let mut store = Store::open(&path, Durability::Process).unwrap();
        store.load_or_init(&event).unwrap();
        (dir, path, event, store)
    }

    #[test]
    fn the_log_is_copied_into_the_file_by_the_checkpointer_not_by_the_commits() {
        let (_dir, path, event, mut store) = fresh();
        // The connection that commits copies nothing short of the backstop.
        let mark: i64 = store
            .conn
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap();
        assert_eq!(mark, WAL_BACKSTOP_PAGES);
        // Only a checkpoint writes the database file itself (in WAL mode): 8 MB of rows,
        // twice SQLite's own mark and far short of the backstop, reach it all the same.
        let file = || std::fs::metadata(&path).unwrap().len();
        let before = file();
        for i in 0..2_000u32 {
            let mut row = numbered(i);
            row.bytes = vec![i as u8; 4096];
            store.commit(&[row], &[]).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while file() < before + 8_000_000 {
            assert!(
                Instant::now() < deadline,
                "the log was not copied: the file is {} bytes",
                file()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Ended with the store; every row is there when it opens again.
        drop(store);
        let mut store = Store::open(&path, Durability::Process).unwrap();
        assert_eq!(store.load_or_init(&event).unwrap().changes.len(), 2_000);
    }

    #[test]
    fn rows_folded_into_a_snapshot_go_a_few_hundred_a_commit_and_are_never_read_again() {
        let (_dir, path, event, mut store) = fresh();
        let rows: Vec<StoredChange> = (0..1000).map(numbered).collect();
        store.commit(&rows, &[]).unwrap();
        let through = store.last_seq().unwrap();
        store.compact_through(b"snapshot", through).unwrap();
        assert_eq!(store.pending_changes().unwrap(), 0);
        assert_eq!(row_count(&store), 1000 - FOLDED_EACH, "one share at once");
        store.commit(&[numbered(1000)], &[]).unwrap();
        assert_eq!(row_count(&store), 1001 - 2 * FOLDED_EACH);
        // Reopened with some still stored: only what came after the snapshot is read, and
        // the commits after go on deleting the rest.
        drop(store);
        let mut store = Store::open(&path, Durability::Process).unwrap();
        let stored = store.load_or_init(&event).unwrap();
        assert_eq!(stored.snapshot.as_deref(), Some(&b"snapshot"[..]));
        let hashes: Vec<[u8; 32]> = stored.changes.iter().map(|c| c.hash).collect();
        assert_eq!(hashes, [numbered(1000).hash]);
        for i in 1001..1010 {
            store.commit(&[numbered(i)], &[]).unwrap();
        }
        assert_eq!(row_count(&store), 10, "every folded row gone");
        assert_eq!(store.pending_changes().unwrap(), 10);
        // Or all at once, and the rows after the snapshot kept.
        store.commit(&rows, &[]).unwrap();
        store
            .compact_through(b"at once", store.last_seq().unwrap())
            .unwrap();
        store.commit(&[numbered(2000)], &[]).unwrap();
        let left = 1010 - 2 * usize::try_from(FOLDED_EACH).unwrap();
        assert_eq!(store.delete_folded_now().unwrap(), left);
        assert_eq!(row_count(&store), 1);
        assert_eq!(store.delete_folded_now().unwrap(), 0);
        let stored = store.load_or_init(&event).unwrap();
        assert_eq!(stored.snapshot.as_deref(), Some(&b"at once"[..]));
        let hashes: Vec<[u8; 32]> = stored.changes.iter().map(|c| c.hash).collect();
        assert_eq!(hashes, [numbered(2000).hash]);
        // A whole ledger in place of everything deletes the folded rows with the rest.
        store.commit(&rows, &[]).unwrap();
        store
            .compact_through(b"second", store.last_seq().unwrap())
            .unwrap();
        store
            .commit_replacing(
                Some((b"whole", &[])),
                &[numbered(5000)],
                &[],
                Wait::AsOpened,
            )
            .unwrap();
        assert_eq!(row_count(&store), 1);
    }
}
