/** The scanner names of this desk ("Lane 1", "Lane 2", …), kept in localStorage. */

import { LIMITS } from "../bindings";

export const DEFAULT_SCANNERS: readonly string[] = ["Lane 1", "Lane 2"];
export const SCANNERS_KEY = "gatemesh.scanners";
export const SELECTED_KEY = "gatemesh.scanner";
/** The gate refuses longer names (a `Label`: 1-64 bytes of printable text). */
export const MAX_NAME = LIMITS.label_bytes;
export const MAX_SCANNERS = 16;

/** The part of `Storage` used here, so tests pass a plain object. */
export interface KeyValue {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

const isControl = (c: string): boolean => {
  const n = c.codePointAt(0) ?? 0;
  return n < 0x20 || (n >= 0x7f && n < 0xa0);
};

/** Trims, drops control characters, empty names and repeats, and caps length and count. */
export function cleanNames(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of names) {
    const name = Array.from(raw)
      .filter((c) => !isControl(c))
      .join("")
      .trim()
      .slice(0, MAX_NAME);
    if (name.length > 0 && !out.includes(name)) out.push(name);
    if (out.length === MAX_SCANNERS) break;
  }
  return out;
}

export function loadScanners(store: KeyValue | null): string[] {
  const text = store?.getItem(SCANNERS_KEY) ?? null;
  if (text === null) return [...DEFAULT_SCANNERS];
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed)) {
      const names = cleanNames(parsed.filter((n): n is string => typeof n === "string"));
      if (names.length > 0) return names;
    }
  } catch {
    // A damaged entry: fall back to the defaults below.
  }
  return [...DEFAULT_SCANNERS];
}

/** Saves the names; returns what was kept (never an empty list). */
export function saveScanners(store: KeyValue | null, names: readonly string[]): string[] {
  const clean = cleanNames(names);
  const kept = clean.length > 0 ? clean : [...DEFAULT_SCANNERS];
  store?.setItem(SCANNERS_KEY, JSON.stringify(kept));
  return kept;
}

/** The scanner chosen last time, when it still exists; else the first. */
export function loadSelected(store: KeyValue | null, names: readonly string[]): string {
  const chosen = store?.getItem(SELECTED_KEY) ?? null;
  if (chosen !== null && names.includes(chosen)) return chosen;
  return names[0] ?? DEFAULT_SCANNERS[0] ?? "Lane 1";
}

export function saveSelected(store: KeyValue | null, name: string): void {
  store?.setItem(SELECTED_KEY, name);
}
