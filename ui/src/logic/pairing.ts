/** Checks of the pairing form before it goes to the desk (which checks again). */

import { nameProblem, pinProblem } from "./rules";

export interface PairForm {
  server: string;
  code: string;
  name: string;
  pin: string;
}

export interface PairRequest {
  server: string;
  code: string;
  managerName: string;
  managerPin: string;
}

/** The request to send, or the first problem in words. */
export function checkPairForm(f: PairForm): { ok: PairRequest } | { error: string } {
  const server = f.server.trim().replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+/i.test(server)) {
    return { error: "The server address starts with http:// or https://" };
  }
  const code = f.code.trim();
  if (code.length === 0) return { error: "Enter the pairing code from the organizer" };
  const name = f.name.trim();
  if (name.length === 0) return { error: "Enter your name" };
  const problem = nameProblem(name) ?? pinProblem(f.pin);
  if (problem !== null) return { error: problem };
  return { ok: { server, code, managerName: name, managerPin: f.pin } };
}
