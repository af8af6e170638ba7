import { describe, expect, it } from "vitest";
import { isReasonCode, REASONS, reasonText } from "./reasons";

// Every reason the ledger can give (gatemesh_ledger::Reason, snake_case).
const LEDGER_REASONS = [
  "valid",
  "unlisted",
  "reentry",
  "exit",
  "already_admitted",
  "unreadable",
  "bad_signature",
  "unknown_key",
  "wrong_event",
  "expired",
  "not_yet_valid",
  "void",
  "transferred",
  "unknown_ticket",
  "denied",
  "not_inside",
  "exit_not_allowed",
];

describe("reasonText", () => {
  it("has plain words for every reason the ledger gives, and no others", () => {
    expect(Object.keys(REASONS).sort()).toEqual([...LEDGER_REASONS].sort());
    for (const code of LEDGER_REASONS) {
      expect(isReasonCode(code)).toBe(true);
      const text = reasonText(code);
      expect(text.length).toBeGreaterThan(8);
      expect(text).not.toContain("_");
    }
  });

  it("gives each reason its own words", () => {
    const texts = LEDGER_REASONS.map(reasonText);
    expect(new Set(texts).size).toBe(texts.length);
  });

  it("says what matters to door staff", () => {
    expect(reasonText("valid")).toBe("Valid ticket");
    expect(reasonText("wrong_event")).toMatch(/another event/);
    expect(reasonText("void")).toMatch(/refunded/);
    expect(reasonText("already_admitted")).toMatch(/Already used/);
  });

  it("still shows a reason this build does not know", () => {
    expect(isReasonCode("toString")).toBe(false);
    expect(reasonText("banned_for_life")).toBe("Refused (banned for life)");
    expect(reasonText("")).toBe("No reason given");
  });
});
