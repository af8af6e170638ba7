import { describe, expect, it } from "vitest";
import { checkPairForm } from "./pairing";
import { PIN_TEXT } from "./rules";

const LINK =
  "gatemesh://pair?server=https://10.0.0.5:8443&code=ABCD-1234&fp=sha256:" + "0a".repeat(32);

const good = {
  link: ` ${LINK}\n`,
  name: "Alex ",
  pin: "4321",
};

describe("checkPairForm", () => {
  it("builds the pair command's arguments, camelCase, trimmed", () => {
    expect(checkPairForm(good)).toEqual({
      ok: {
        link: LINK,
        managerName: "Alex",
        managerPin: "4321",
      },
    });
  });

  it("refuses what the desk would refuse, with a reason", () => {
    expect(checkPairForm({ ...good, link: "https://10.0.0.5:8443" })).toHaveProperty("error");
    expect(checkPairForm({ ...good, link: "  " })).toHaveProperty("error");
    expect(checkPairForm({ ...good, name: "" })).toHaveProperty("error");
    expect(checkPairForm({ ...good, pin: "123" })).toEqual({ error: PIN_TEXT });
    expect(checkPairForm({ ...good, pin: "12a4" })).toHaveProperty("error");
    // The desk's one rule: set-up refuses what the settings would (13 digits used to pass).
    expect(checkPairForm({ ...good, pin: "1234567890123" })).toEqual({ error: PIN_TEXT });
  });

  it("leaves the link's parts to the desk, which pins its certificate", () => {
    // The desk parses the link with the server's own rules and refuses plain http off
    // loopback; the form only checks it is a link at all.
    expect(checkPairForm({ ...good, link: "gatemesh://pair?code=X" })).toHaveProperty("ok");
  });
});
