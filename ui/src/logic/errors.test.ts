import { describe, expect, it } from "vitest";
import { errorText, isSignedOutError } from "./errors";

describe("errorText", () => {
  it("reads the desk's string errors and thrown Errors", () => {
    expect(errorText("wrong PIN")).toBe("wrong PIN");
    expect(errorText(new Error("boom"))).toBe("boom");
    expect(errorText({ message: "from IPC" })).toBe("from IPC");
    expect(errorText(undefined)).toBe("Something went wrong");
  });

  it("spots the desk forgetting who signed in", () => {
    expect(isSignedOutError("sign in first")).toBe(true);
    expect(isSignedOutError("wrong PIN")).toBe(false);
  });
});
