/**
 * The sign-in screen's words and choices: staff tap their name, then type their PIN. The
 * desk slows and then locks a name after wrong PINs; these say so in words people act on.
 */

import { errorCode, errorText } from "./errors";

/** What to tell the person after a refused sign-in. */
export function signInProblem(e: unknown): string {
  switch (errorCode(e)) {
    case "wrong_pin":
      return "Wrong PIN. Try again.";
    case "too_soon":
      // The message has the seconds to wait.
      return `${errorText(e)}.`;
    case "locked":
      return "Locked after too many wrong PINs. Ask a manager to unlock your name.";
    case "bad_input":
      return errorText(e);
    default:
      return errorText(e);
  }
}

/** Whether the refusal means the PIN field should be cleared for a new try. */
export function clearsPin(e: unknown): boolean {
  const code = errorCode(e);
  return code === "wrong_pin" || code === "locked" || code === "bad_input";
}

/** The name chosen when the screen opens: the only one, if there is one. */
export function initialName(names: readonly string[]): string | null {
  return names.length === 1 ? (names[0] ?? null) : null;
}

/** Why someone is back on the sign-in screen, after a refused command or poll. */
export const IDLE_NOTICE = "Signed out after a while without use. Sign in again.";
