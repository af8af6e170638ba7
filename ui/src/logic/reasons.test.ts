import { describe, expect, it } from "vitest";
import { REASON_CODES } from "../bindings";
import { isReasonCode, REASONS, reasonText } from "./reasons";

describe("reasonText", () => {
  it("has plain words for every reason Rust gives (REASON_CODES), and no others", () => {
    expect(Object.keys(REASONS).sort()).toEqual([...REASON_CODES].sort());
    for (const code of REASON_CODES) {
      expect(isReasonCode(code)).toBe(true);
      const text = reasonText(code);
      expect(text.length).toBeGreaterThan(8);
      expect(text).not.toContain("_");
    }
  });

  it("gives each reason its own words", () => {
    const texts = REASON_CODES.map(reasonText);
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
