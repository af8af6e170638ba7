import { describe, expect, it } from "vitest";
import { checkPairForm } from "./pairing";
import { PIN_TEXT } from "./rules";

const good = {
  server: "https://tix.example.org/",
  code: " ABCD-1234 ",
  name: "Alex ",
  pin: "4321",
};

describe("checkPairForm", () => {
  it("builds the pair command's arguments, camelCase, trimmed", () => {
    expect(checkPairForm(good)).toEqual({
      ok: {
        server: "https://tix.example.org",
        code: "ABCD-1234",
        managerName: "Alex",
        managerPin: "4321",
      },
    });
  });

  it("refuses what the desk would refuse, with a reason", () => {
    expect(checkPairForm({ ...good, server: "tix.example.org" })).toHaveProperty("error");
    expect(checkPairForm({ ...good, code: "  " })).toHaveProperty("error");
    expect(checkPairForm({ ...good, name: "" })).toHaveProperty("error");
    expect(checkPairForm({ ...good, pin: "123" })).toEqual({ error: PIN_TEXT });
    expect(checkPairForm({ ...good, pin: "12a4" })).toHaveProperty("error");
    // The desk's one rule: set-up refuses what the settings would (13 digits used to pass).
    expect(checkPairForm({ ...good, pin: "1234567890123" })).toEqual({ error: PIN_TEXT });
  });

  it("accepts a plain-http server on the LAN", () => {
    expect(checkPairForm({ ...good, server: "http://10.0.0.2:8080" })).toHaveProperty("ok");
  });
});
