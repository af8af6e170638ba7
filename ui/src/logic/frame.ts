/**
 * Camera frames for the gate's QR decoder: 8 bytes (width, height as little-endian u32),
 * then one luma byte per pixel. The decoder refuses frames over 4096 px a side.
 */

export const MAX_SIDE = 4096;

/** Rec. 601 luma of RGBA pixels, in integer arithmetic, behind the size header. */
export function lumaFrame(rgba: ArrayLike<number>, width: number, height: number): Uint8Array {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError("a frame needs a positive whole size");
  }
  if (width > MAX_SIDE || height > MAX_SIDE) throw new RangeError("frame too large");
  const n = width * height;
  if (rgba.length < n * 4) throw new RangeError("fewer pixels than the size says");
  const out = new Uint8Array(8 + n);
  const view = new DataView(out.buffer);
  view.setUint32(0, width, true);
  view.setUint32(4, height, true);
  for (let i = 0, p = 0; i < n; i++, p += 4) {
    const r = rgba[p] ?? 0;
    const g = rgba[p + 1] ?? 0;
    const b = rgba[p + 2] ?? 0;
    out[8 + i] = (77 * r + 150 * g + 29 * b + 128) >> 8;
  }
  return out;
}

/** A capture size no wider than `maxWidth`, keeping the aspect ratio. */
export function captureSize(
  videoWidth: number,
  videoHeight: number,
  maxWidth = 800,
): { width: number; height: number } | null {
  if (videoWidth <= 0 || videoHeight <= 0) return null;
  const scale = Math.min(1, maxWidth / videoWidth, MAX_SIDE / videoHeight);
  return {
    width: Math.max(1, Math.round(videoWidth * scale)),
    height: Math.max(1, Math.round(videoHeight * scale)),
  };
}

/**
 * A code held in front of the camera is seen in frame after frame: pass it on once, and
 * again only after `quietMs` without seeing it.
 */
export class RepeatFilter {
  private readonly lastSeen = new Map<string, number>();
  constructor(private readonly quietMs = 5000) {}

  /** True when `code`, seen at `now`, should be scanned. */
  accept(code: string, now: number): boolean {
    const last = this.lastSeen.get(code);
    this.lastSeen.set(code, now);
    for (const [c, t] of this.lastSeen) if (now - t > this.quietMs * 4) this.lastSeen.delete(c);
    return last === undefined || now - last > this.quietMs;
  }
}
