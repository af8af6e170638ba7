/**
 * The typed reasons behind a verdict (`Reason` in the bindings, from gatemesh_wire::Reason),
 * in the words door staff read out to a guest. `Record<Reason, string>` makes the type check
 * fail when Rust gains or loses a reason; reasons.test.ts checks against `REASON_CODES`.
 */

import type { Reason } from "../bindings";

export const REASONS = {
  // admit
  valid: "Valid ticket",
  unlisted: "Valid ticket, not on the guest list (admitted and marked)",
  reentry: "Welcome back: re-entry after an exit scan",
  exit: "Exit recorded: the guest may come back in",
  // duplicate
  already_admitted: "Already used: this ticket is inside",
  // reject, from the ticket itself
  unreadable: "Not a ticket: the code could not be read",
  bad_signature: "Forged or damaged ticket: the signature does not match",
  unknown_key: "Signed by an unknown issuer",
  wrong_event: "Ticket for another event",
  expired: "Ticket expired",
  not_yet_valid: "Ticket not valid yet",
  // reject, from the ledger
  void: "Ticket cancelled or refunded",
  transferred: "Ticket replaced: it was transferred to someone else",
  unknown_ticket: "Unknown ticket: not on this event's list",
  denied: "Refused by staff after a check",
  not_inside: "Exit scan, but this ticket is not inside",
  exit_not_allowed: "Exits are not scanned at this event (single entry)",
  // reject, from the writer
  revoked_device: "Written by a device after it was revoked: not counted",
  // reject, from the gate's check-in lists
  not_on_list: "Not for this entrance: this ticket's product is not on this gate's lists",
  not_valid_now: "Not valid at this time: this ticket is for another day or hour",
} as const satisfies Record<Reason, string>;

export function isReasonCode(code: string): code is Reason {
  return Object.prototype.hasOwnProperty.call(REASONS, code);
}

/** Plain words for a reason code; a code this build does not know is still shown. */
export function reasonText(code: string): string {
  if (isReasonCode(code)) return REASONS[code];
  const words = code.replace(/_/g, " ").trim();
  return words.length === 0 ? "No reason given" : `Refused (${words})`;
}
