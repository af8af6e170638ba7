//! The event's ticket list, when the gate is given one: which tickets exist and which are
//! void or transferred. Two file forms: the `tickets.csv` that `gatemesh issue` writes, and
//! the JSON manifest the server serves (`gatemesh-wire`'s `Manifest`; `status` may be left
//! out for active tickets). A file is the operator's own: any entry it cannot take fails the
//! load with the ticket named, rather than being skipped.

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
};

use anyhow::{Context, Result, bail};
use gatemesh_ledger::Standing;
use gatemesh_ticket::TicketId;

/// Largest manifest file read: about 1.5 million tickets as JSON.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct Manifest {
    pub listed: HashSet<TicketId>,
    /// Tickets whose standing is not plain active.
    pub standings: BTreeMap<TicketId, Standing>,
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Self> {
        let len = std::fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        if len > MAX_BYTES {
            bail!(
                "{} is {len} bytes; manifests are read up to {MAX_BYTES}",
                path.display()
            );
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if text.trim_start().starts_with('{') {
            Self::from_json(&text)
                .with_context(|| format!("{} is not a valid JSON manifest", path.display()))
        } else {
            Self::from_csv(&text)
                .with_context(|| format!("{} is not a valid tickets.csv", path.display()))
        }
    }

    pub fn from_json(text: &str) -> Result<Self> {
        let parsed: gatemesh_wire::Manifest = serde_json::from_str(text)?;
        let mut m = Self::default();
        for t in parsed.tickets {
            match t.standing()? {
                Standing::Active => {}
                standing => {
                    m.standings.insert(t.tid.clone(), standing);
                }
            }
            m.listed.insert(t.tid);
        }
        Ok(m)
    }

    pub fn from_csv(text: &str) -> Result<Self> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let col = reader
            .headers()?
            .iter()
            .position(|h| h == "tid")
            .context("no tid column")?;
        let mut m = Self::default();
        for (i, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("line {}", i + 2))?;
            let tid = TicketId::new(record.get(col).unwrap_or_default())
                .with_context(|| format!("line {}", i + 2))?;
            m.listed.insert(tid);
        }
        Ok(m)
    }
}
