import { describe, expect, it } from "vitest";
import type { ScanView } from "../bindings";
import { formatClock } from "./time";
import { idleModel, scanKey, SeenScans, verdictModel } from "./verdict";

const NOW = 1_800_000_000_000;

const scan = (over: Partial<ScanView>): ScanView => ({
  verdict: "admit",
  reason: "valid",
  tid: "T-1",
  seat: "A-3",
  scanner: "Lane 1",
  first: null,
  transferred_to: null,
  at_ms: NOW,
  list: null,
  detail: null,
  ...over,
});

describe("verdictModel", () => {
  it("gives each verdict its own colour, icon and title", () => {
    const a = verdictModel(scan({}), NOW);
    const d = verdictModel(
      scan({
        verdict: "duplicate",
        reason: "already_admitted",
        first: { gate: "Side-Door", scanner: "Lane 2", at_ms: NOW - 120_000 },
      }),
      NOW,
    );
    const r = verdictModel(scan({ verdict: "reject", reason: "bad_signature", seat: null }), NOW);
    expect([a.className, d.className, r.className]).toEqual([
      "verdict-admit",
      "verdict-duplicate",
      "verdict-reject",
    ]);
    expect(new Set([a.icon, d.icon, r.icon, idleModel().icon]).size).toBe(4);
    expect([a.title, d.title, r.title]).toEqual(["ADMIT", "DUPLICATE", "REJECT"]);
  });

  it("shows the seat and the reason in words", () => {
    const m = verdictModel(scan({}), NOW);
    expect(m.kind).toBe("admit");
    expect(m.seat).toBe("A-3");
    expect(m.reason).toBe("Valid ticket");
  });

  it("tells where, when and how long ago a duplicate was first used", () => {
    const at = NOW - 120_000;
    const m = verdictModel(
      scan({
        verdict: "duplicate",
        reason: "already_admitted",
        first: { gate: "Side-Door", scanner: "Lane 2", at_ms: at },
      }),
      NOW,
    );
    expect(m.lines[0]).toBe(`First used at Side-Door, Lane 2, at ${formatClock(at)} (2 min ago)`);
  });

  it("says so when a duplicate's first use is unknown", () => {
    const m = verdictModel(scan({ verdict: "duplicate", reason: "already_admitted" }), NOW);
    expect(m.lines[0]).toMatch(/not known/);
  });

  it("names the new ticket of a transferred one", () => {
    const m = verdictModel(
      scan({ verdict: "reject", reason: "transferred", transferred_to: "T-NEW" }),
      NOW,
    );
    expect(m.lines).toContain("New ticket: T-NEW");
    expect(m.reason).toMatch(/transferred/);
  });

  it("still works for an unreadable code with no ticket", () => {
    const m = verdictModel(
      scan({ verdict: "reject", reason: "unreadable", tid: null, seat: null }),
      NOW,
    );
    expect(m.seat).toBeNull();
    expect(m.lines).toEqual([`Lane 1 · ${formatClock(NOW)}`]);
  });

  it("tells an observer why it does not scan", () => {
    expect(idleModel(true).reason).toMatch(/observer/);
    expect(idleModel().kind).toBe("idle");
  });
});

describe("SeenScans", () => {
  it("shows a scan reported twice (answer and event) once", () => {
    const seen = new SeenScans();
    const s = scan({});
    expect(seen.firstTime(s)).toBe(true);
    expect(seen.firstTime({ ...s })).toBe(false);
    expect(seen.firstTime({ ...s, at_ms: NOW + 1 })).toBe(true);
    expect(seen.firstTime({ ...s, scanner: "Lane 2" })).toBe(true);
  });

  it("forgets the oldest beyond its limit", () => {
    const seen = new SeenScans(2);
    const a = scan({ at_ms: 1 });
    seen.firstTime(a);
    seen.firstTime(scan({ at_ms: 2 }));
    seen.firstTime(scan({ at_ms: 3 }));
    expect(seen.firstTime(a)).toBe(true);
  });

  it("keys on what tells scans apart", () => {
    expect(scanKey(scan({}))).not.toBe(scanKey(scan({ reason: "unlisted" })));
  });
});

describe("the check-in list line", () => {
  it("names the list and who is inside, warning from 90 % of the capacity", () => {
    const at = (inside: number, level: "ok" | "near" | "full") =>
      verdictModel(scan({ list: { name: "VIP area", inside, capacity: 10, level } }), NOW).list;
    expect(at(5, "ok")).toEqual({ text: "VIP area · 5 / 10 inside", level: "ok", warning: null });
    expect(at(9, "near")?.warning).toBe("Nearly full");
    expect(at(10, "full")?.warning).toBe("Full: tell your supervisor");
    const open = verdictModel(
      scan({ list: { name: "Main entrance", inside: 1200, capacity: null, level: "ok" } }),
      NOW,
    ).list;
    expect(open?.text).toBe("Main entrance · 1200 inside");
    expect(verdictModel(scan({}), NOW).list).toBeNull();
    expect(idleModel().list).toBeNull();
  });

  it("says what a list refused, in words", () => {
    const m = verdictModel(
      scan({
        verdict: "reject",
        reason: "not_valid_now",
        detail: "list friday admits this ticket no longer",
      }),
      NOW,
    );
    expect(m.lines).toContain("list friday admits this ticket no longer");
  });
});
