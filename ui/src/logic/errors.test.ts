import { describe, expect, it } from "vitest";
import type { ErrorView } from "../bindings";
import { errorCode, errorText, isErrorView, isSignedOutError } from "./errors";

const signedOut: ErrorView = { code: "signed_out", message: "sign in first" };

describe("errorText", () => {
  it("reads the desk's errors, thrown Errors and IPC strings", () => {
    expect(errorText({ code: "wrong_pin", message: "wrong PIN" })).toBe("wrong PIN");
    expect(errorText(new Error("boom"))).toBe("boom");
    expect(errorText("command scan not found")).toBe("command scan not found");
    expect(errorText(undefined)).toBe("Something went wrong");
  });
});

describe("errorCode", () => {
  it("decides on the desk's code, never on its words", () => {
    expect(isErrorView(signedOut)).toBe(true);
    expect(errorCode(signedOut)).toBe("signed_out");
    expect(isSignedOutError(signedOut)).toBe(true);
    // The same words without the code are not the desk's refusal.
    expect(isSignedOutError("sign in first")).toBe(false);
    expect(isSignedOutError({ code: "not_allowed", message: "sign in first" })).toBe(false);
    expect(errorCode(new Error("boom"))).toBeNull();
    expect(errorCode({ message: "no code" })).toBeNull();
  });
});
