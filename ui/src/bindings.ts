// Generated from crates/gatemesh-desk/src/lib.rs by ts-rs. Do not edit: run
// `UPDATE_BINDINGS=1 cargo test -p gatemesh-desk bindings` after changing those types.

export type StaffRole = "staff" | "supervisor" | "manager";

export type StaffView = { name: string, role: StaffRole, };

export type DemoPin = { name: string, role: StaffRole, pin: string, };

export type AppInfo = { 
/**
 * No event set up yet: the app opens on the set-up screen.
 */
needs_setup: boolean, event: string | null, gate_name: string | null, capacity: number | null, observer: boolean, signed_in: StaffView | null, demo_pins: Array<DemoPin>, 
/**
 * The gate's local HTTP API (`http://…`), when it runs.
 */
api: string | null, 
/**
 * Where the demo's printable tickets are.
 */
tickets_pdf: string | null, };

export type VerdictView = "admit" | "duplicate" | "reject";

export type FirstUseView = { gate: string, scanner: string, at_ms: number, };

export type ScanView = { verdict: VerdictView, 
/**
 * The typed reason (`valid`, `already_admitted`, `bad_signature`, …).
 */
reason: string, tid: string | null, seat: string | null, scanner: string, first: FirstUseView | null, transferred_to: string | null, at_ms: number, };

export type GateRow = { name: string, this_gate: boolean, online: boolean, last_seen_ms: number | null, 
/**
 * Admissions recorded by this gate (from the shared ledger, so peers count too).
 */
admitted: number, 
/**
 * Known for this gate only (peers do not share their turned-away scans).
 */
duplicates: number | null, rejects: number | null, 
/**
 * Admissions in the last full minute.
 */
scans_per_minute: number, 
/**
 * Admissions per minute for the last 30 minutes, oldest first.
 */
per_minute: Array<number>, 
/**
 * `connected`, `offline` (its uplink is down) or `none` (no server configured); this
 * gate only.
 */
uplink: string | null, pending_uploads: number | null, rtt_ms: number | null, };

export type StatusView = { event: string, gate_name: string, capacity: number | null, 
/**
 * Holders inside by the ledger, every gate counted.
 */
admitted_total: number, flagged: number, gates: Array<GateRow>, 
/**
 * The minute `per_minute` ends with (ms since 1970).
 */
minute_ms: number, };

export type RedemptionView = { id: string, gate: string, scanner: string, at_ms: number, 
/**
 * Made while this admission's gate could not see the others (part of the flag).
 */
concurrent: boolean, };

export type AuditView = { at_ms: number, actor: string, action: string, detail: string, };

export type FlagView = { tid: string, open: boolean, redemptions: Array<RedemptionView>, audit: Array<AuditView>, };

export type FlagsView = { open: Array<FlagView>, resolved: Array<FlagView>, };

export type ResolveAction = "accept" | "deny" | "revert";

export type SettingsView = { 
/**
 * The gate's name as saved (used from the next start).
 */
gate_name: string, 
/**
 * The name the running gate records admissions under.
 */
running_gate_name: string, reentry: boolean, reject_unlisted: boolean, 
/**
 * A saved change waits for the app to start again.
 */
restart_needed: boolean, staff: Array<StaffView>, server: string | null, 
/**
 * The gate has a mesh identity.
 */
mesh: boolean, discovery: boolean, peers: Array<string>, };

export type FileSetup = { event: string, gate_name: string, 
/**
 * The issuer's public key, PEM text.
 */
issuer_pem: string, 
/**
 * A device identity directory (`gatemesh enroll`), for the mesh.
 */
identity_dir: string | null, capacity: number | null, };

export type DeskEvent = { "type": "verdict", scan: ScanView, } | { "type": "flags" };
