//! Room in the kernel's neighbour (ARP) table for many namespaces on one machine.
//!
//! The IPv4 neighbour table is one table for the whole machine, every namespace's entries
//! counted together against `net.ipv4.neigh.default.gc_thresh3` (1,024 by default). A
//! venue of 32 gates, each a namespace that talks to the 31 others and the server, holds
//! ~1,090 entries: past the bound, a new neighbour is refused (`neighbor table overflow!`
//! in the kernel's log, `ENOBUFS` to the sender) and some pairs of gates never reach each
//! other. On a venue's LAN each gate is its own machine, with 32 neighbours.

use std::path::Path;

use crate::Error;

const DIR: &str = "/proc/sys/net/ipv4/neigh/default";

/// The neighbour table's thresholds as this value found them, put back on drop unless
/// someone else changed them meanwhile.
#[derive(Debug)]
pub struct NeighbourRoom {
    /// `(file, found, set)` for each threshold raised.
    raised: Vec<(&'static str, u64, u64)>,
}

impl NeighbourRoom {
    /// Makes sure the table takes at least `entries` without refusing any (raising
    /// `gc_thresh2` to it and `gc_thresh3` to twice it, when they are lower). Needs root.
    pub fn at_least(entries: u64) -> Result<Self, Error> {
        let mut raised = Vec::new();
        for (file, want) in [("gc_thresh2", entries), ("gc_thresh3", entries * 2)] {
            let found = read(file)?;
            if found < want {
                write(file, want)?;
                raised.push((file, found, want));
            }
        }
        Ok(Self { raised })
    }
}

impl Drop for NeighbourRoom {
    fn drop(&mut self) {
        for (file, found, set) in self.raised.drain(..).rev() {
            // Another harness raised it further meanwhile: it is theirs to put back.
            if read(file).is_ok_and(|now| now == set) {
                let _ = write(file, found);
            }
        }
    }
}

fn read(file: &str) -> Result<u64, Error> {
    let path = Path::new(DIR).join(file);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Open {
        path: path.clone(),
        source,
    })?;
    text.trim().parse().map_err(|_| Error::Failed {
        command: format!("reading {}", path.display()),
        stderr: format!("not a number: {text:?}"),
    })
}

fn write(file: &str, value: u64) -> Result<(), Error> {
    let path = Path::new(DIR).join(file);
    std::fs::write(&path, value.to_string()).map_err(|source| Error::Open { path, source })
}
