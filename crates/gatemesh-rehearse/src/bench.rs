//! `gatemesh bench …`: numbers measured on this machine through the code paths the product
//! uses, one module a subject — [`gate`] (one gate: scans, dashboard, HTTP, cold start,
//! merge), [`mesh`] (two gates over QUIC, on loopback or across a bridge), [`heal`] (a partition of
//! many gates healing), [`server`] (a
//! running central server over its API), [`voids`] (a burst of refunds at it while gates
//! follow its change stream), [`uplink`] (what the server's word costs a
//! gate) and [`revoke`] (how soon every gate refuses a revoked one). Each returns its report as JSON; `checks.ok = false` in it means a correctness
//! check failed while measuring.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

pub mod fanout;
pub mod gate;
pub mod heal;
mod local;
pub mod mesh;
pub mod revoke;
pub mod server;
pub mod uplink;
pub mod voids;

/// Measure a gate.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Scan latency and throughput, cold start, memory and merge time of one gate.
    Gate(gate::Args),
    /// CPU time and bytes on the wire per admission at one gate, sync included, against the
    /// ledger's size and the number of peers connected over QUIC.
    Fanout(fanout::Args),
    /// Propagation between two gates over the QUIC mesh on loopback, convergence after a
    /// partition, bytes on the wire per redemption.
    Mesh(mesh::Args),
    /// A partition of many gates healing in this process: CPU per change moved, changes
    /// received twice, and the scans made meanwhile.
    Heal(heal::Args),
    /// Propagation from a gate in this process to a `gatemesh gate` elsewhere (another
    /// network namespace across a bridge: `scripts/bench-mesh-bridge.sh`).
    MeshRemote(mesh::RemoteArgs),
    /// Redemptions per second and latency of a running `gatemesh server` over its HTTP API,
    /// with distinct tickets or all clients racing on one ticket (which must be admitted
    /// exactly once).
    Server(server::Args),
    /// A box office's burst of voids against a running `gatemesh server` while gates follow
    /// the event's change stream: latency, voids per second, and that every stream showed
    /// every void.
    Voids(voids::Args),
    /// What the server's word costs a gate: manifest bytes in full and as a delta, and the
    /// push latency of a void to a gate connected by its uplink.
    Uplink(uplink::Args),
    /// From the organizer revoking a gate at the server until every gate refuses it, one
    /// of them with no uplink (it learns by the mesh).
    Revoke(revoke::Args),
}

impl Args {
    /// Where the report should be written as JSON too (`--report`).
    pub fn report(&self) -> Option<&Path> {
        match &self.what {
            What::Fanout(a) => a.report.as_deref(),
            What::Gate(a) => a.report.as_deref(),
            What::Mesh(a) => a.report.as_deref(),
            What::Heal(a) => a.report.as_deref(),
            What::MeshRemote(a) => a.report.as_deref(),
            What::Server(a) => a.report.as_deref(),
            What::Voids(a) => a.report.as_deref(),
            What::Uplink(a) => a.report.as_deref(),
            What::Revoke(a) => a.report.as_deref(),
        }
    }
}

/// Runs the bench `args` name; `gatemesh` is the binary whose gate process the gate bench
/// starts cold.
pub async fn run(args: &Args, gatemesh: &Path) -> Result<Value> {
    match &args.what {
        What::Fanout(a) => fanout::run(a).await,
        What::Gate(a) => gate::run(a, gatemesh).await,
        What::Mesh(a) => mesh::run(a).await,
        What::Heal(a) => heal::run(a).await,
        What::MeshRemote(a) => mesh::run_remote(a).await,
        What::Server(a) => server::run(a).await,
        What::Voids(a) => voids::run(a).await,
        What::Uplink(a) => uplink::run(a).await,
        What::Revoke(a) => revoke::run(a).await,
    }
}

/// A scratch directory for one bench run (the caller removes it when done).
fn scratch_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("gatemesh-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Writes `command` (`enable`, `disable`) to a `perf record --control fifo:PATH` FIFO, if
/// there is one: a bench's profile then holds what it measures alone, not its set-up.
fn perf(control: Option<&Path>, command: &str) -> Result<()> {
    if let Some(fifo) = control {
        std::fs::write(fifo, format!("{command}\n"))
            .with_context(|| format!("writing {command} to {}", fifo.display()))?;
    }
    Ok(())
}

/// Seconds since 1970, now.
fn unix_now() -> i64 {
    gatemesh_wire::time::now_ms().div_euclid(1000)
}
