import { describe, expect, it } from "vitest";
import { clearsPin, initialName, signInProblem } from "./signin";

describe("signInProblem", () => {
  it("says what to do for each refusal, by its code", () => {
    expect(signInProblem({ code: "wrong_pin", message: "wrong name or PIN" })).toBe(
      "Wrong PIN. Try again.",
    );
    expect(
      signInProblem({ code: "too_soon", message: "too many wrong PINs: wait 4 s and try again" }),
    ).toBe("too many wrong PINs: wait 4 s and try again.");
    expect(signInProblem({ code: "locked", message: "Sam is locked" })).toContain("Ask a manager");
    expect(signInProblem(new Error("no IPC"))).toBe("no IPC");
  });

  it("clears the PIN after a wrong or locked one, not while waiting", () => {
    expect(clearsPin({ code: "wrong_pin", message: "" })).toBe(true);
    expect(clearsPin({ code: "locked", message: "" })).toBe(true);
    expect(clearsPin({ code: "too_soon", message: "" })).toBe(false);
  });
});

describe("initialName", () => {
  it("picks the only name, and none of several", () => {
    expect(initialName(["Alex"])).toBe("Alex");
    expect(initialName(["Sam", "Kim"])).toBeNull();
    expect(initialName([])).toBeNull();
  });
});
