/**
 * Keyboard-wedge scanners (USB or Bluetooth barcode readers) type a code as keystrokes,
 * a few milliseconds apart, usually ending with Enter. This state machine tells such a
 * burst from a person typing: a code ends with Enter, or with an idle gap after at least
 * `minLength` characters. Time comes in as a parameter, so it is tested without timers.
 */

/** The parts of a `KeyboardEvent` the reader looks at. */
export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  altKey: boolean;
  metaKey: boolean;
  /** AltGr (`getModifierState("AltGraph")`): some layouts type `@` or `:` with it. */
  altGraph?: boolean;
}

/** What to do with one keystroke. */
export interface KeyOutcome {
  /** The key belongs to a scan: the caller stops its default action (a focused button). */
  consumed: boolean;
  /** A finished code, when this keystroke ended one. */
  code: string | null;
}

export interface WedgeOptions {
  /** Silence that ends a code (ms). Wedge scanners type every few ms; people don't. */
  idleMs: number;
  /** Fewer characters than this are a person's stray keys, not a scan. */
  minLength: number;
  /** Codes longer than this are cut off (a stuck key must not grow memory). */
  maxLength: number;
}

export const WEDGE_DEFAULTS: WedgeOptions = { idleMs: 100, minLength: 4, maxLength: 4096 };

/** Keys that only modify others and never type a character themselves. */
const NON_CHARACTER = new Set([
  "Shift",
  "Control",
  "Alt",
  "AltGraph",
  "Meta",
  "CapsLock",
  "NumLock",
  "ScrollLock",
  "Fn",
  "OS",
  "Dead",
]);

export class WedgeReader {
  private buffer = "";
  private lastAt = 0;
  private readonly options: WedgeOptions;

  constructor(options: Partial<WedgeOptions> = {}) {
    this.options = { ...WEDGE_DEFAULTS, ...options };
  }

  /** Characters typed so far in the current burst. */
  get pending(): string {
    return this.buffer;
  }

  /** Feeds one keydown at time `now` (ms). */
  key(k: KeyLike, now: number): KeyOutcome {
    // A burst left over from long ago (a timer that never ran) ends before this key.
    const stale = this.buffer.length > 0 && now - this.lastAt > this.options.idleMs;
    const flushed = stale ? this.take() : null;

    if (NON_CHARACTER.has(k.key)) return { consumed: false, code: flushed };
    if (k.ctrlKey || k.metaKey || (k.altKey && k.altGraph !== true)) {
      // A shortcut (Ctrl+R, Alt+Tab): not part of a code, and it breaks any burst.
      return { consumed: false, code: flushed ?? this.discard() };
    }
    if (k.key === "Enter") {
      if (this.buffer.length === 0) return { consumed: flushed !== null, code: flushed };
      return { consumed: true, code: this.take() };
    }
    if (Array.from(k.key).length !== 1) {
      // Tab, arrows, F-keys, Escape…: a person at the keyboard.
      return { consumed: false, code: flushed ?? this.discard() };
    }
    if (this.buffer.length < this.options.maxLength) this.buffer += k.key;
    this.lastAt = now;
    return { consumed: true, code: flushed };
  }

  /** When `tick` should next be called, or null when nothing is pending. */
  deadline(): number | null {
    return this.buffer.length === 0 ? null : this.lastAt + this.options.idleMs;
  }

  /** Ends a burst after its idle gap; returns the code when it was long enough. */
  tick(now: number): string | null {
    if (this.buffer.length === 0 || now - this.lastAt < this.options.idleMs) return null;
    return this.take();
  }

  /** Forgets a half-typed burst (the screen changed, focus moved). */
  reset(): void {
    this.buffer = "";
  }

  private take(): string | null {
    const code = this.buffer.trim();
    this.buffer = "";
    return code.length >= this.options.minLength ? code : null;
  }

  private discard(): null {
    this.buffer = "";
    return null;
  }
}

/** The parts of an element that tell whether a person is typing into it. */
export interface TargetLike {
  tagName: string;
  type?: string;
  isContentEditable?: boolean;
  readOnly?: boolean;
  disabled?: boolean;
}

/** `<input>` types that take free text; buttons, checkboxes and the like do not. */
const TEXT_INPUT_TYPES = new Set([
  "",
  "text",
  "password",
  "search",
  "number",
  "email",
  "url",
  "tel",
]);

/** True when keys should go to the focused field rather than to the scan reader. */
export function isTypingTarget(t: TargetLike | null): boolean {
  if (t === null) return false;
  if (t.isContentEditable === true) return true;
  const tag = t.tagName.toUpperCase();
  if (tag === "TEXTAREA") return t.readOnly !== true && t.disabled !== true;
  if (tag === "INPUT") {
    if (t.readOnly === true || t.disabled === true) return false;
    return TEXT_INPUT_TYPES.has((t.type ?? "").toLowerCase());
  }
  return false;
}
