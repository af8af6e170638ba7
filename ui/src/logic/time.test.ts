import { describe, expect, it } from "vitest";
import {
  formatClock,
  formatDateTime,
  formatDuration,
  timeAgo,
  timeAgoOrDash,
  timeApart,
} from "./time";

const NOW = 1_800_000_000_000;
const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe("timeAgo", () => {
  it("says just now for the last few seconds and for a clock a little ahead", () => {
    expect(timeAgo(NOW, NOW)).toBe("just now");
    expect(timeAgo(NOW - 4 * S, NOW)).toBe("just now");
    expect(timeAgo(NOW + 30 * S, NOW)).toBe("just now");
  });

  it("counts seconds, then minutes, then hours", () => {
    expect(timeAgo(NOW - 12 * S, NOW)).toBe("12 s ago");
    expect(timeAgo(NOW - 2 * M, NOW)).toBe("2 min ago");
    expect(timeAgo(NOW - (2 * M + 5 * S), NOW)).toBe("2 min 5 s ago");
    expect(timeAgo(NOW - 25 * M - 40 * S, NOW)).toBe("25 min ago");
    expect(timeAgo(NOW - (H + 3 * M), NOW)).toBe("1 h 3 min ago");
    expect(timeAgo(NOW - 2 * H, NOW)).toBe("2 h ago");
    expect(timeAgo(NOW - 50 * H, NOW)).toBe("2 d ago");
  });

  it("shows a dash for a time nobody knows", () => {
    expect(timeAgoOrDash(null, NOW)).toBe("—");
    expect(timeAgoOrDash(NOW - 90 * S, NOW)).toBe("1 min 30 s ago");
  });
});

describe("timeApart and formatDuration", () => {
  it("measures either order", () => {
    expect(timeApart(NOW, NOW + 4 * S)).toBe("4 s apart");
    expect(timeApart(NOW + 4 * S, NOW)).toBe("4 s apart");
    expect(timeApart(NOW, NOW + 300)).toBe("same second");
    expect(timeApart(NOW, NOW + 3 * M)).toBe("3 min apart");
  });

  it("never goes negative", () => {
    expect(formatDuration(-5000)).toBe("0 s");
  });
});

describe("clock formats", () => {
  it("pads to 24-hour local time", () => {
    const t = new Date(2026, 10, 6, 9, 5, 7).getTime();
    expect(formatClock(t)).toBe("09:05:07");
    expect(formatDateTime(t)).toBe("2026-11-06 09:05:07");
  });
});
