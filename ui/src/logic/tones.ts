/** A distinct sound per verdict: what to play, separate from the Web Audio that plays it. */

import type { Verdict } from "../bindings";

export interface Note {
  /** Hz. */
  freq: number;
  /** Start, after the first note's start (ms). */
  at: number;
  /** Length (ms). */
  ms: number;
  wave: OscillatorType;
  /** 0–1. */
  gain: number;
}

export const TONES: Record<Verdict, readonly Note[]> = {
  // One short, bright rising blip.
  admit: [
    { freq: 880, at: 0, ms: 90, wave: "sine", gain: 0.35 },
    { freq: 1320, at: 90, ms: 140, wave: "sine", gain: 0.35 },
  ],
  // Two equal mid beeps: "look again".
  duplicate: [
    { freq: 660, at: 0, ms: 160, wave: "triangle", gain: 0.5 },
    { freq: 660, at: 260, ms: 160, wave: "triangle", gain: 0.5 },
  ],
  // A long, loud, low buzz that falls: hard to miss in a noisy hall.
  reject: [
    { freq: 220, at: 0, ms: 250, wave: "square", gain: 0.45 },
    { freq: 180, at: 260, ms: 250, wave: "square", gain: 0.45 },
    { freq: 150, at: 520, ms: 350, wave: "square", gain: 0.45 },
  ],
};
