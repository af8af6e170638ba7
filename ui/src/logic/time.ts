/** Times as door staff read them: "2 min ago", "14:02:07", "4 s apart". */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A length of time, coarse enough to read at a glance: "45 s", "2 min 5 s", "1 h 3 min". */
export function formatDuration(ms: number): string {
  const d = Math.max(0, Math.round(ms));
  if (d < MINUTE) return `${Math.floor(d / SECOND)} s`;
  if (d < 10 * MINUTE) {
    const m = Math.floor(d / MINUTE);
    const s = Math.floor((d % MINUTE) / SECOND);
    return s === 0 ? `${m} min` : `${m} min ${s} s`;
  }
  if (d < HOUR) return `${Math.floor(d / MINUTE)} min`;
  if (d < DAY) {
    const h = Math.floor(d / HOUR);
    const m = Math.floor((d % HOUR) / MINUTE);
    return m === 0 ? `${h} h` : `${h} h ${m} min`;
  }
  return `${Math.floor(d / DAY)} d`;
}

/**
 * How long ago `thenMs` was, seen at `nowMs`. Under five seconds (or a clock slightly
 * ahead of ours) is "just now".
 */
export function timeAgo(thenMs: number, nowMs: number): string {
  const d = nowMs - thenMs;
  if (d < 5 * SECOND) return "just now";
  return `${formatDuration(d)} ago`;
}

/** Same, for a value that may be missing. */
export function timeAgoOrDash(thenMs: number | null, nowMs: number): string {
  return thenMs === null ? "—" : timeAgo(thenMs, nowMs);
}

/** How far apart two moments are: "4 s apart", "same second". */
export function timeApart(aMs: number, bMs: number): string {
  const d = Math.abs(aMs - bMs);
  if (d < SECOND) return "same second";
  return `${formatDuration(d)} apart`;
}

const pad = (n: number): string => String(n).padStart(2, "0");

/** Local wall-clock time, 24-hour: "14:02:07". */
export function formatClock(ms: number): string {
  const t = new Date(ms);
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

/** Local time, hours and minutes only: "14:02". */
export function formatHourMinute(ms: number): string {
  const t = new Date(ms);
  return `${pad(t.getHours())}:${pad(t.getMinutes())}`;
}

/** Local date and time, for audit lines that may be from another day: "2026-11-06 14:02:07". */
export function formatDateTime(ms: number): string {
  const t = new Date(ms);
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ${formatClock(ms)}`;
}
