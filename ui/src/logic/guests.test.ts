import { describe, expect, it } from "vitest";
import type { GuestView } from "../bindings";
import { guestLine, searchable } from "./guests";
import { formatHourMinute } from "./time";

const AT = 1_800_000_000_000;

const guest = (over: Partial<GuestView>): GuestView => ({
  tid: "T-1",
  seat: "R-1",
  holder: "Ada Lovelace",
  order: "ORD-1001",
  entries: 0,
  first_gate: null,
  first_at_ms: null,
  ...over,
});

describe("guestLine", () => {
  it("names the guest, their order, seat and ticket, and that they are not in", () => {
    const l = guestLine(guest({}));
    expect(l.title).toBe("Ada Lovelace");
    expect(l.detail).toBe("Order ORD-1001 · Seat R-1 · Ticket T-1");
    expect(l.inside).toBe(false);
    expect(l.status).toBe("Not checked in");
  });

  it("says where and when a guest already came in", () => {
    const l = guestLine(guest({ entries: 1, first_gate: "North 1", first_at_ms: AT }));
    expect(l.inside).toBe(true);
    expect(l.status).toBe(`In at North 1, ${formatHourMinute(AT)}`);
  });

  it("leaves out what the ticket does not say", () => {
    const l = guestLine(guest({ holder: null, order: null, seat: null }));
    expect(l.title).toBe("No name on the ticket");
    expect(l.detail).toBe("Ticket T-1");
  });
});

describe("searchable", () => {
  it("takes two characters or more, spaces aside", () => {
    expect(searchable("a")).toBe(false);
    expect(searchable("  a ")).toBe(false);
    expect(searchable("ad")).toBe(true);
    expect(searchable("é1")).toBe(true);
  });
});
