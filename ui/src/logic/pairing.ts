/** Checks of the pairing form before it goes to the desk (which checks again). */

import { nameProblem, pinProblem } from "./rules";

export interface PairForm {
  link: string;
  name: string;
  pin: string;
}

export interface PairRequest {
  link: string;
  managerName: string;
  managerPin: string;
}

/** How every pairing link starts (the server's `gatemesh://pair?server=…&code=…&fp=…`). */
export const LINK_PREFIX = "gatemesh://pair?";

/** The request to send, or the first problem in words. */
export function checkPairForm(f: PairForm): { ok: PairRequest } | { error: string } {
  // Pasted, typed, or typed by a scanner wedge from the organizer's QR code.
  const link = f.link.trim();
  if (link.length === 0) return { error: "Enter or scan the pairing link from the organizer" };
  if (!link.startsWith(LINK_PREFIX)) {
    return { error: `A pairing link starts with ${LINK_PREFIX}` };
  }
  const name = f.name.trim();
  if (name.length === 0) return { error: "Enter your name" };
  const problem = nameProblem(name) ?? pinProblem(f.pin);
  if (problem !== null) return { error: problem };
  return { ok: { link, managerName: name, managerPin: f.pin } };
}
