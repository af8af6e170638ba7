/**
 * Verdict tones through Web Audio. Browsers only let a page make sound after a person did
 * something, so the AudioContext is made on the first key or click (`unlockAudio`), and
 * until then verdicts are silent.
 */

import type { Verdict } from "./bindings";
import { TONES } from "./logic/tones";

let context: AudioContext | null = null;
let playing: OscillatorNode[] = [];

export function unlockAudio(): void {
  if (context !== null) {
    if (context.state === "suspended") void context.resume().catch(() => undefined);
    return;
  }
  if (typeof AudioContext === "undefined") return;
  try {
    context = new AudioContext();
  } catch {
    context = null; // No audio device: the colours and icons still tell the verdict.
  }
}

export function playVerdict(verdict: Verdict): void {
  const ctx = context;
  if (ctx === null) return;
  // A new verdict cuts the last one's sound short: the newest answer is the one that counts.
  for (const o of playing) {
    try {
      o.stop();
    } catch {
      // Already stopped.
    }
  }
  playing = [];
  const start = ctx.currentTime + 0.01;
  for (const note of TONES[verdict]) {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    const t0 = start + note.at / 1000;
    const t1 = t0 + note.ms / 1000;
    osc.type = note.wave;
    osc.frequency.setValueAtTime(note.freq, t0);
    // Short ramps in and out: no clicks.
    gain.gain.setValueAtTime(0, t0);
    gain.gain.linearRampToValueAtTime(note.gain, t0 + 0.01);
    gain.gain.setValueAtTime(note.gain, Math.max(t0 + 0.01, t1 - 0.02));
    gain.gain.linearRampToValueAtTime(0, t1);
    osc.connect(gain).connect(ctx.destination);
    osc.start(t0);
    osc.stop(t1 + 0.02);
    playing.push(osc);
  }
}
