//! The harnesses that play gatemesh against its real parts: the venue rehearsal behind
//! `gatemesh rehearse`, and the measurements behind `gatemesh bench …`.
//!
//! Both drive the real thing — `gatemesh server` and `gatemesh gate` processes, or a server and
//! a node started in this process — so they take the path of the `gatemesh` binary to run.
//! The binary owns the runtime, the output files and the exit code; this crate plays, measures
//! and returns the report as JSON.
//!
//! - [`rehearse`]: a whole event drawn from a seed (arrivals, copies, refunds, transfers,
//!   faults), played in scaled time against a server and N gates placed in network
//!   namespaces (`gatemesh-netns`) or on loopback, then checked end to end and charted.
//! - [`bench`](mod@bench): a gate, the mesh, a running server, the uplink; one module a subject.
//!
//! Both report latencies the same way (count, mean, p50/p95/p99, max in ms, rounded to the
//! microsecond).
//!
//! ```no_run
//! use clap::Parser;
//! use gatemesh_rehearse::rehearse::{self, Rehearsal};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     options: rehearse::Options,
//! }
//!
//! # fn main() -> anyhow::Result<()> {
//! let cli = Cli::parse_from(["rehearse", "--gates", "3", "--attendees", "500"]);
//! let rehearsal = Rehearsal::prepare(&cli.options, "target/debug/gatemesh".into())?;
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
//! let report = runtime.block_on(rehearsal.play())?;
//! print!("{}", rehearse::text(&report));
//! assert!(report["ok"] == true, "an invariant does not hold");
//! # Ok(())
//! # }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod bench;
pub mod rehearse;
mod stats;
