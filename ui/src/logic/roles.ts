/** What each staff role may do in the app (the desk checks again; this only shapes the UI). */

import { STAFF_ROLES, type StaffRole, type StaffView } from "../bindings";

/** A role's rank: its place in `STAFF_ROLES`, which lists them least allowed first. */
const rank = (role: StaffRole): number => STAFF_ROLES.indexOf(role);

export function atLeast(who: StaffView | null, role: StaffRole): boolean {
  return who !== null && rank(who.role) >= rank(role);
}

/** Accept, deny or revert a flagged ticket: supervisors and managers. */
export function canResolve(who: StaffView | null): boolean {
  return atLeast(who, "supervisor");
}

/** Scan tickets: anyone signed in, on a device that is not an observer. */
export function canScan(who: StaffView | null, observer: boolean): boolean {
  return who !== null && !observer;
}

export const ROLE_LABEL: Record<StaffRole, string> = {
  staff: "Staff",
  supervisor: "Supervisor",
  manager: "Manager",
};

export const RESOLVE_HINT = "Only a supervisor or a manager can resolve flags.";
