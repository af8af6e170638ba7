/**
 * The rules the desk checks, with their bounds from the generated bindings: the UI checks a
 * form before sending it (the desk checks again) and writes no bound of its own.
 * rules.test.ts holds these checks to what Rust answers (`PIN_EXAMPLES`).
 */

import { LIMITS, PIN_RULE } from "../bindings";

/** How many digits a PIN has, for labels ("4-12"). */
export const PIN_DIGITS = `${PIN_RULE.min_digits}-${PIN_RULE.max_digits}`;

/** The PIN rule in words (gatemesh_desk::check_pin). */
export const PIN_TEXT = `A PIN is ${PIN_DIGITS} digits`;

/** The PIN's problem in words, or null when the desk's rule takes it. */
export function pinProblem(pin: string): string | null {
  const ok =
    /^[0-9]*$/.test(pin) && pin.length >= PIN_RULE.min_digits && pin.length <= PIN_RULE.max_digits;
  return ok ? null : PIN_TEXT;
}

/** How many bytes the desk counts in a text (UTF-8), for the limits in `LIMITS`. */
export function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** A person's name as staff give it (trimmed): its problem in words, or null. */
export function nameProblem(name: string): string | null {
  const n = name.trim();
  if (n.length === 0) return "Enter the name";
  // The server records a gate's decision as "GATE / NAME": a name must not look like one.
  if (n.includes("/")) return "A name has no /";
  if (byteLength(n) > LIMITS.label_bytes) {
    return `A name is at most ${LIMITS.label_bytes} characters (fewer with accents or symbols)`;
  }
  return null;
}
