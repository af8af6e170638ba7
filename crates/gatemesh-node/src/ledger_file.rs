//! A gate's ledger as a file, for gates with no network at all (sneakernet): `gatemesh
//! export` writes one, `gatemesh import` merges one in. Importing is idempotent.
//!
//! Format: one text line `gatemesh-ledger 1 <event id>\n`, then the saved Automerge document.

use std::{io::Read, path::Path};

use anyhow::{Context, Result, bail, ensure};
use gatemesh_ledger::Durability;
use gatemesh_ticket::EventId;

const MAGIC: &str = "gatemesh-ledger 1 ";
/// Largest ledger file read (a 100,000-redemption ledger is about 1 MB).
const MAX_BYTES: u64 = 512 * 1024 * 1024;

pub fn write_ledger_file(path: &Path, event: &EventId, document: &[u8]) -> Result<()> {
    let mut out = format!("{MAGIC}{event}\n").into_bytes();
    out.extend_from_slice(document);
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, &out).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads a ledger file: its event and the document bytes.
pub fn read_ledger_file(path: &Path) -> Result<(EventId, Vec<u8>)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .with_context(|| format!("opening {}", path.display()))?
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        bytes.len() as u64 <= MAX_BYTES,
        "{} is larger than any ledger",
        path.display()
    );
    let Some(newline) = bytes.iter().take(200).position(|&b| b == b'\n') else {
        bail!("{} is not a gatemesh ledger file", path.display());
    };
    let header = std::str::from_utf8(&bytes[..newline])
        .ok()
        .and_then(|h| h.strip_prefix(MAGIC));
    let Some(event) = header.and_then(|e| EventId::new(e).ok()) else {
        bail!("{} is not a gatemesh ledger file", path.display());
    };
    Ok((event, bytes[newline + 1..].to_vec()))
}

/// Writes the ledger of a stopped gate's data directory to `out`.
/// Refuses a directory that holds no gate's ledger: a mistyped `--data` must not write an
/// empty ledger to the stick (nor make a new gate to merge into).
fn holds_a_gate(data_dir: &Path) -> Result<()> {
    ensure!(
        data_dir.join("ledger.sqlite").is_file(),
        "{} holds no gate's ledger (no ledger.sqlite there): pass the data directory the \
         gate ran with (`gatemesh gate --data DIR`)",
        data_dir.display()
    );
    Ok(())
}

pub fn export_ledger_file(data_dir: &Path, event: &EventId, out: &Path) -> Result<()> {
    holds_a_gate(data_dir)?;
    let _lock = crate::lock_data_dir(data_dir)?;
    let (_, mut ledger) = crate::open_ledger(data_dir, event, Durability::Power, None)?;
    write_ledger_file(out, event, &ledger.save())
}

/// Merges a ledger file into a stopped gate's data directory, checking every record against
/// the gate's device `identity` (its writer's signature and role); returns the number of
/// changes that were new. A file of another event, a damaged one or one with a single record
/// that fails the checks changes nothing.
pub fn import_ledger_file(
    data_dir: &Path,
    event: &EventId,
    file: &Path,
    identity: &gatemesh_mesh::pki::Identity,
) -> Result<usize> {
    let (file_event, document) = read_ledger_file(file)?;
    ensure!(
        &file_event == event,
        "{} holds the ledger of {file_event}, not {event}",
        file.display()
    );
    holds_a_gate(data_dir)?;
    let _lock = crate::lock_data_dir(data_dir)?;
    let keys = crate::keys_of(Some(identity), event)?;
    let (mut store, mut ledger) = crate::open_ledger(data_dir, event, Durability::Power, keys)?;
    let new = ledger
        .merge_saved(&document, gatemesh_wire::time::now_ms())
        .with_context(|| format!("merging {}", file.display()))?;
    store.append(&new)?;
    Ok(new.len())
}
