import { describe, expect, it } from "vitest";
import { IDLE_SIGN_OUT, type SettingsView } from "../bindings";
import {
  canEditSettings,
  checkFileSetupForm,
  checkSettingsForm,
  checkStaffForm,
  gateNameProblem,
  isLastManager,
  parseCapacity,
  restartNotice,
} from "./settings";
import { PIN_TEXT } from "./rules";

const PEM = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAabc=\n-----END PUBLIC KEY-----";

const good = {
  event: " DEMO-2026 ",
  gate: " Main-Entrance ",
  capacity: " 200 ",
  pem: `\n${PEM}\n\n`,
  identity: " /home/gate/identity ",
  name: " Alex ",
  pin: "4321",
};

describe("checkFileSetupForm", () => {
  it("builds the setup_files arguments: FileSetup in snake_case, trimmed", () => {
    expect(checkFileSetupForm(good)).toEqual({
      ok: {
        setup: {
          event: "DEMO-2026",
          gate_name: "Main-Entrance",
          issuer_pem: `${PEM}\n`,
          identity_dir: "/home/gate/identity",
          capacity: 200,
        },
        managerName: "Alex",
        managerPin: "4321",
      },
    });
  });

  it("sends null for an empty identity directory and capacity", () => {
    const r = checkFileSetupForm({ ...good, identity: "  ", capacity: "" });
    expect(r).toHaveProperty("ok.setup.identity_dir", null);
    expect(r).toHaveProperty("ok.setup.capacity", null);
  });

  it("takes a JWK Set as the issuer key, as the desk does", () => {
    const set = '{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA","kid":"box-office-2027"}]}';
    expect(checkFileSetupForm({ ...good, pem: ` ${set}\n` })).toHaveProperty(
      "ok.setup.issuer_pem",
      `${set}\n`,
    );
    for (const bad of ['{"keys":[]}', '{"kty":"EC"}', "{not json", '{"keys":"x"}']) {
      expect(checkFileSetupForm({ ...good, pem: bad })).toHaveProperty("error");
    }
  });

  it("refuses what the desk would refuse, with a reason", () => {
    expect(checkFileSetupForm({ ...good, event: "" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, event: "demo 2026" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, gate: "  " })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, capacity: "12.5" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, capacity: "0" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, pem: "" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, pem: "not a key" })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, name: " " })).toHaveProperty("error");
    expect(checkFileSetupForm({ ...good, pin: "123" })).toEqual({ error: PIN_TEXT });
    expect(checkFileSetupForm({ ...good, pin: "12a4" })).toHaveProperty("error");
  });
});

describe("parseCapacity and gateNameProblem", () => {
  it("reads a capacity", () => {
    expect(parseCapacity("")).toEqual({ ok: null });
    expect(parseCapacity("1500")).toEqual({ ok: 1500 });
    expect(parseCapacity("-3")).toHaveProperty("error");
    expect(parseCapacity("99999999999")).toHaveProperty("error");
  });

  it("checks a gate name as the desk does", () => {
    expect(gateNameProblem("Side-Door")).toBeNull();
    expect(gateNameProblem("")).not.toBeNull();
    expect(gateNameProblem("x".repeat(64))).not.toBeNull();
    expect(gateNameProblem("a\tb")).not.toBeNull();
  });
});

describe("checkSettingsForm and checkStaffForm", () => {
  it("trims the gate name and keeps the policy", () => {
    const form = { reentry: true, rejectUnlisted: false, idleSignOutMin: 15 };
    expect(checkSettingsForm({ ...form, gateName: " North " })).toEqual({
      ok: { ...form, gateName: "North" },
    });
    expect(checkSettingsForm({ ...form, gateName: " " })).toHaveProperty("error");
  });

  it("holds the idle sign-out to the desk's bounds", () => {
    const form = { gateName: "North", reentry: false, rejectUnlisted: false };
    for (const ok of [1, IDLE_SIGN_OUT.default_min, IDLE_SIGN_OUT.max_min]) {
      expect(checkSettingsForm({ ...form, idleSignOutMin: ok })).toHaveProperty("ok");
    }
    for (const bad of [0, IDLE_SIGN_OUT.max_min + 1, 1.5, Number.NaN]) {
      expect(checkSettingsForm({ ...form, idleSignOutMin: bad })).toHaveProperty("error");
    }
  });

  it("checks a staff member's name and PIN", () => {
    expect(checkStaffForm({ name: " Jo ", role: "supervisor", pin: "98765" })).toEqual({
      ok: { name: "Jo", role: "supervisor", pin: "98765" },
    });
    expect(checkStaffForm({ name: "", role: "staff", pin: "1234" })).toHaveProperty("error");
    expect(checkStaffForm({ name: "Jo", role: "staff", pin: "123" })).toHaveProperty("error");
    expect(checkStaffForm({ name: "Jo", role: "staff", pin: "1234567890123" })).toHaveProperty(
      "error",
    );
  });
});

describe("settings roles", () => {
  it("lets only managers change the settings", () => {
    expect(canEditSettings(null)).toBe(false);
    expect(canEditSettings({ name: "Sam", role: "staff" })).toBe(false);
    expect(canEditSettings({ name: "Kim", role: "supervisor" })).toBe(false);
    expect(canEditSettings({ name: "Alex", role: "manager" })).toBe(true);
  });

  it("knows the last manager", () => {
    const staff = [
      { name: "Alex", role: "manager" },
      { name: "Sam", role: "staff" },
    ] as const;
    expect(isLastManager(staff, "Alex")).toBe(true);
    expect(isLastManager(staff, "Sam")).toBe(false);
    expect(isLastManager([...staff, { name: "Lee", role: "manager" }], "Alex")).toBe(false);
  });
});

describe("restartNotice", () => {
  const s: SettingsView = {
    gate_name: "North",
    running_gate_name: "Main-Entrance",
    reentry: false,
    reject_unlisted: false,
    idle_sign_out_min: 15,
    restart_needed: true,
    staff: [],
    locked: [],
    server: null,
    mesh: false,
    discovery: true,
    peers: [],
    lists: [],
  };
  it("names the gate the running app records under", () => {
    expect(restartNotice(s)).toContain("records admissions as Main-Entrance until then");
    expect(restartNotice({ ...s, restart_needed: false })).toBeNull();
  });
});
