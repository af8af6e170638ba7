/**
 * Checks of the set-up-from-files form and the settings forms before they go to the desk
 * (which checks again), and who may change the settings.
 */

import {
  IDLE_SIGN_OUT,
  LIMITS,
  STAFF_ROLES,
  type FileSetup,
  type SettingsView,
  type StaffRole,
  type StaffView,
} from "../bindings";
import { atLeast } from "./roles";
import { byteLength, nameProblem, pinProblem } from "./rules";

export interface FileSetupForm {
  event: string;
  gate: string;
  /** As typed; empty means no capacity. */
  capacity: string;
  pem: string;
  /** Empty: this gate alone, no mesh. */
  identity: string;
  name: string;
  pin: string;
}

/** The `setup_files` command's arguments. */
export interface FileSetupRequest {
  setup: FileSetup;
  managerName: string;
  managerPin: string;
}

export interface SettingsForm {
  gateName: string;
  reentry: boolean;
  rejectUnlisted: boolean;
  /** Minutes without a command before the app signs the person out. */
  idleSignOutMin: number;
}

export interface StaffForm {
  name: string;
  role: StaffRole;
  pin: string;
}

/** What an event id may be (as the desk's `EventId`): letters, digits, `.`, `_`, `-`. */
const EVENT_ID = /^[A-Za-z0-9._-]{1,64}$/;
const MAX_CAPACITY = 4_294_967_295;

/** A gate name's problem in words, or null. */
export function gateNameProblem(name: string): string | null {
  const n = name.trim();
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u001f\u007f-\u009f]/.test(n);
  if (n.length === 0 || byteLength(n) > LIMITS.gate_name_bytes || control) {
    return `A gate name is 1-${LIMITS.gate_name_bytes} printable characters`;
  }
  return null;
}

/** A capacity as typed: null when empty, a count, or a problem. */
export function parseCapacity(text: string): { ok: number | null } | { error: string } {
  const t = text.trim();
  if (t.length === 0) return { ok: null };
  if (!/^\d+$/.test(t)) return { error: "The capacity is a whole number of people, or empty" };
  const n = Number(t);
  if (n < 1 || n > MAX_CAPACITY) return { error: "The capacity is at least 1 person, or empty" };
  return { ok: n };
}

/** Whether the text looks like a PEM public key (the desk parses it for real). */
export function looksLikePem(text: string): boolean {
  return /-----BEGIN [A-Z ]*PUBLIC KEY-----[\s\S]+-----END [A-Z ]*PUBLIC KEY-----/.test(text);
}

/** Whether the text looks like a JWK Set with at least one key (`issuer.jwks.json`; the desk
 * checks each key for real). */
export function looksLikeJwks(text: string): boolean {
  if (!text.startsWith("{")) return false;
  try {
    const set: unknown = JSON.parse(text);
    if (typeof set !== "object" || set === null || !("keys" in set)) return false;
    return Array.isArray(set.keys) && set.keys.length > 0;
  } catch {
    return false;
  }
}

/** The request to send, or the first problem in words. */
export function checkFileSetupForm(f: FileSetupForm): { ok: FileSetupRequest } | { error: string } {
  const event = f.event.trim();
  if (event.length === 0) return { error: "Enter the event id from the organizer" };
  if (!EVENT_ID.test(event)) {
    return { error: "An event id is letters, digits, '.', '_' and '-' (at most 64)" };
  }
  const gateProblem = gateNameProblem(f.gate);
  if (gateProblem !== null) return { error: gateProblem };
  const capacity = parseCapacity(f.capacity);
  if ("error" in capacity) return capacity;
  const pem = f.pem.trim();
  if (pem.length === 0) {
    return { error: "Paste the issuer's public key, or choose its .pem or .jwks.json file" };
  }
  if (!looksLikePem(pem) && !looksLikeJwks(pem)) {
    return {
      error:
        'The issuer key is a PEM public key (-----BEGIN PUBLIC KEY-----…) or a JWK Set ({"keys": […]})',
    };
  }
  const identity = f.identity.trim();
  const name = f.name.trim();
  if (name.length === 0) return { error: "Enter your name" };
  const problem = nameProblem(name) ?? pinProblem(f.pin);
  if (problem !== null) return { error: problem };
  return {
    ok: {
      setup: {
        event,
        gate_name: f.gate.trim(),
        issuer_pem: `${pem}\n`,
        identity_dir: identity.length > 0 ? identity : null,
        capacity: capacity.ok,
      },
      managerName: name,
      managerPin: f.pin,
    },
  };
}

/** The `update_settings` arguments, or the first problem in words. */
export function checkSettingsForm(f: SettingsForm): { ok: SettingsForm } | { error: string } {
  const problem = gateNameProblem(f.gateName);
  if (problem !== null) return { error: problem };
  if (
    !Number.isInteger(f.idleSignOutMin) ||
    f.idleSignOutMin < 1 ||
    f.idleSignOutMin > IDLE_SIGN_OUT.max_min
  ) {
    return { error: `The idle sign-out is 1-${IDLE_SIGN_OUT.max_min} minutes` };
  }
  return { ok: { ...f, gateName: f.gateName.trim() } };
}

/** The `put_staff` arguments, or the first problem in words. */
export function checkStaffForm(f: StaffForm): { ok: StaffForm } | { error: string } {
  const name = f.name.trim();
  if (name.length === 0) return { error: "Enter the person's name" };
  const tooLong = nameProblem(name);
  if (tooLong !== null) return { error: tooLong };
  if (!STAFF_ROLES.includes(f.role)) return { error: "Choose a role" };
  const badPin = pinProblem(f.pin);
  if (badPin !== null) return { error: badPin };
  return { ok: { name, role: f.role, pin: f.pin } };
}

/** Change the gate name, the entry policy and the staff: managers only. */
export function canEditSettings(who: StaffView | null): boolean {
  return atLeast(who, "manager");
}

export const SETTINGS_HINT = "Only a manager can change these settings.";

/** Whether removing `name` would leave no manager (the desk refuses that). */
export function isLastManager(staff: readonly StaffView[], name: string): boolean {
  return (
    staff.some((s) => s.name === name && s.role === "manager") &&
    staff.filter((s) => s.role === "manager").length <= 1
  );
}

/** The notice for a saved change that waits for the next start, or null. */
export function restartNotice(s: SettingsView): string | null {
  if (!s.restart_needed) return null;
  return (
    "Saved. The gate uses the new name/policy after the app starts again; " +
    `it records admissions as ${s.running_gate_name} until then.`
  );
}

/** The entry policy in words. */
export function policyText(reentry: boolean, rejectUnlisted: boolean): string {
  return (
    (reentry ? "Re-entry allowed" : "Single entry") +
    "; " +
    (rejectUnlisted
      ? "tickets missing from the manifest are refused"
      : "valid tickets missing from the manifest are admitted and marked")
  );
}
