/**
 * Failures of the app's commands. The desk refuses with an `ErrorView` — `{code, message}`,
 * generated from gatemesh_desk::ErrorView: decide on `code`, show `message`. Other failures
 * (a thrown Error, an IPC failure as a plain string) have no code.
 */

import type { ErrorCode, ErrorView } from "../bindings";

/** Whether a failure is the desk's own refusal. */
export function isErrorView(e: unknown): e is ErrorView {
  return (
    typeof e === "object" &&
    e !== null &&
    "code" in e &&
    typeof e.code === "string" &&
    "message" in e &&
    typeof e.message === "string"
  );
}

/** The desk's code for a failure, or null when it did not come from the desk. */
export function errorCode(e: unknown): ErrorCode | null {
  return isErrorView(e) ? e.code : null;
}

/** A failure in words, for people (never to decide on: use `errorCode`). */
export function errorText(e: unknown): string {
  if (typeof e === "string") return e.length > 0 ? e : "Something went wrong";
  if (e instanceof Error) return e.message.length > 0 ? e.message : e.name;
  if (typeof e === "object" && e !== null && "message" in e) {
    const m = e.message;
    if (typeof m === "string" && m.length > 0) return m;
  }
  return "Something went wrong";
}

/** The desk forgot who was signed in. */
export function isSignedOutError(e: unknown): boolean {
  return errorCode(e) === "signed_out";
}
