import { describe, expect, it } from "vitest";
import { LIMITS, PIN_EXAMPLES, PIN_RULE } from "../bindings";
import { byteLength, nameProblem, PIN_TEXT, pinProblem } from "./rules";

describe("pinProblem", () => {
  it("agrees with Rust's check_pin on every PIN it was asked about", () => {
    for (const [pin, rustTakesIt] of PIN_EXAMPLES) {
      expect({ pin, taken: pinProblem(pin) === null }).toEqual({ pin, taken: rustTakesIt });
    }
  });

  it("is asked about both sides of both bounds", () => {
    const lengths = PIN_EXAMPLES.filter(([p]) => /^[0-9]+$/.test(p)).map(([p]) => p.length);
    for (const n of [
      PIN_RULE.min_digits - 1,
      PIN_RULE.min_digits,
      PIN_RULE.max_digits,
      PIN_RULE.max_digits + 1,
    ]) {
      expect(lengths).toContain(n);
    }
  });

  it("says the rule in words", () => {
    expect(pinProblem("123")).toBe(PIN_TEXT);
    expect(PIN_TEXT).toBe(`A PIN is ${PIN_RULE.min_digits}-${PIN_RULE.max_digits} digits`);
  });
});

describe("nameProblem", () => {
  it("counts bytes, as the desk does", () => {
    expect(nameProblem(" Jo ")).toBeNull();
    expect(nameProblem("  ")).not.toBeNull();
    expect(nameProblem("x".repeat(LIMITS.label_bytes))).toBeNull();
    expect(nameProblem("x".repeat(LIMITS.label_bytes + 1))).not.toBeNull();
    // 40 characters, 80 bytes: the desk would refuse it.
    expect(byteLength("é".repeat(40))).toBe(80);
    expect(nameProblem("é".repeat(40))).not.toBeNull();
  });

  it("refuses a / (the server writes a gate's decision as GATE / NAME)", () => {
    expect(nameProblem("North-1 / Ann")).not.toBeNull();
    expect(nameProblem("Ann-Marie")).toBeNull();
  });
});
