//! After the event: what a gate keeps on its disk removed (`gatemesh gate --forget`).
//!
//! A gate's data directory holds its ledger (every redemption of the event: ticket ids,
//! times, gates, staff names and notes, manual check-ins), its uplink's acknowledgements and
//! its API token. Nothing admitted may be lost, so the directory is removed only when the
//! server has acknowledged every redemption the ledger holds, or when the operator says, in
//! as many words, that those not sent may go. A gate that is running is not touched.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use gatemesh_ledger::Durability;
use gatemesh_ticket::EventId;

/// The files a gate writes in its data directory; nothing else there is removed.
const WRITTEN: [&str; 8] = [
    "ledger.sqlite",
    "ledger.sqlite-wal",
    "ledger.sqlite-shm",
    "uplink.sqlite",
    "uplink.sqlite-wal",
    "uplink.sqlite-shm",
    "api.token",
    "gate.lock",
];

/// Why a data directory was not forgotten.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error("{0} is not a gate's data directory (it has no ledger.sqlite)")]
    NotAGate(PathBuf),
    #[error(
        "{unsent} of the {held} redemptions this gate holds have not reached the server{}: \
         start the gate with its uplink until its backlog is 0 (or keep an export of its \
         ledger, GET /v1/export), then forget it; --discard-unsent forgets them all the same",
        if *.uplink { "" } else { " (this gate never had an uplink)" }
    )]
    Unsent {
        unsent: usize,
        held: usize,
        /// Whether the gate ever had an uplink.
        uplink: bool,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// What was forgotten.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Forgotten {
    /// The files removed.
    pub removed: Vec<PathBuf>,
    /// Files in the directory that a gate does not write, left where they were (the directory
    /// stays when there are any).
    pub left: Vec<PathBuf>,
    /// Redemptions the ledger held, and of them those the server had not acknowledged.
    pub redemptions: usize,
    pub unsent: usize,
}

/// Removes gate `dir`'s data for `event` (see the module docs). Refused while a gate runs on
/// it, and while redemptions it holds have not reached the server unless `discard_unsent`.
pub fn forget(dir: &Path, event: &EventId, discard_unsent: bool) -> Result<Forgotten, ForgetError> {
    use anyhow::Context;
    if !dir.join("ledger.sqlite").is_file() {
        return Err(ForgetError::NotAGate(dir.to_owned()));
    }
    let lock = crate::lock_data_dir(dir)?;
    let (held, unsent, uplink) = {
        let (_store, ledger) = crate::open_ledger(dir, event, Durability::Process, None)?;
        let acks = dir.join("uplink.sqlite");
        let sent: HashSet<String> = if acks.is_file() {
            let conn = rusqlite::Connection::open_with_flags(
                &acks,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .with_context(|| format!("opening {}", acks.display()))?;
            let mut stmt = conn
                .prepare("SELECT rid FROM sent")
                .with_context(|| format!("reading {}", acks.display()))?;
            stmt.query_map([], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect())
                .with_context(|| format!("reading {}", acks.display()))?
        } else {
            HashSet::new()
        };
        let redemptions = ledger.redemptions();
        let unsent = redemptions
            .iter()
            .filter(|r| !sent.contains(r.id.as_str()))
            .count();
        (redemptions.len(), unsent, acks.is_file())
    };
    if unsent > 0 && !discard_unsent {
        return Err(ForgetError::Unsent {
            unsent,
            held,
            uplink,
        });
    }
    let mut removed = Vec::new();
    for name in WRITTEN {
        let path = dir.join(name);
        if path.exists() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            removed.push(path);
        }
    }
    drop(lock);
    let mut left: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    left.sort();
    if left.is_empty() {
        std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(Forgotten {
        removed,
        left,
        redemptions: held,
        unsent,
    })
}
