//! The gate-supervisor desk: everything the desktop app shows and does, over a running
//! gate ([`gatemesh_node::Node`]). The Tauri shell (`src-tauri`) only forwards calls here, so
//! this is where the app's behaviour lives and is tested.
//!
//! - `config`: the app's set-up ([`DeskConfig`], `app.json` in its directory: the event, the
//!   gate's name, the issuer keys, an optional mesh identity and server, the entry policy)
//!   and its staff ([`StaffEntry`]: PINs as Argon2id hashes, and a [`StaffRole`]: `staff` may
//!   scan, `supervisor` also resolves flags, `manager` also changes the set-up).
//! - `session`: the sign-in rules — growing delays after wrong PINs, a lock after
//!   [`LOCK_AFTER_FAILURES`] that a manager lifts, an idle sign-out — on a [`Clock`].
//! - `view`: what crosses into the web UI — the view models the screens show and the
//!   [`DeskEvent`]s they react to; `bindings` writes them as TypeScript
//!   (`ui/src/bindings.ts`; a test keeps the file in step).
//! - `desk`: the running [`Desk`] — its gate (and the demo's second gate), who is signed in,
//!   and every command the screens send; each needs a signed-in person of the right role
//!   but the sign-in itself, [`Desk::info`] (what the sign-in screen shows) and sign-out.
//! - `demo`: a demo event that sets itself up on first start: keys, a printable batch of
//!   tickets, a mesh CA, and a second gate on loopback (static peers, never mDNS) so the
//!   mesh and the dashboard have something to show.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use gatemesh_desk::{Desk, StaffRole};
//! let desk = Desk::demo(std::path::Path::new("/tmp/gatemesh-demo")).await?;
//! let who = desk.sign_in("Kim", "2222").await?;
//! assert_eq!(who.role, StaffRole::Supervisor);
//! desk.shutdown().await;
//! # Ok(()) }
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod bindings;
mod config;
mod demo;
mod desk;
mod error;
mod frame;
mod session;
mod view;

pub use bindings::typescript_bindings;
pub use config::{
    DeskConfig, GATE_NAME_MAX, IDLE_SIGN_OUT_DEFAULT_MIN, IDLE_SIGN_OUT_MAX_MIN, PIN_MAX_DIGITS,
    PIN_MIN_DIGITS, StaffEntry, StaffRole, check_gate_name, check_idle_minutes, check_pin,
};
pub use demo::{DEMO_STAFF, DEMO_TICKETS, set_up_demo};
pub use desk::Desk;
pub use error::{DeskError, ErrorCode, ErrorView};
pub use frame::{MAX_FRAME_SIDE, decode_frame};
/// The shared vocabulary, as the views and commands use it (and the bindings declare it).
pub use gatemesh_wire::{Action, Reason, Verdict};
pub use session::{Clock, LOCK_AFTER_FAILURES, SystemClock, delay_after};
pub use view::{
    AppInfo, AuditView, DemoPin, DeskEvent, FileSetup, FirstUseView, FlagView, FlagsView, GateRow,
    GuestView, GuestsView, ListChoice, ListView, RedemptionView, RefusalCount, ScanView,
    SettingsView, StaffView, StatusView, UplinkState, desk_event,
};
