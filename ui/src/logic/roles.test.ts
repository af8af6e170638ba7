import { describe, expect, it } from "vitest";
import { atLeast, canResolve, canScan } from "./roles";

const staff = { name: "Sam", role: "staff" } as const;
const supervisor = { name: "Kim", role: "supervisor" } as const;
const manager = { name: "Alex", role: "manager" } as const;

describe("roles", () => {
  it("lets supervisors and managers resolve flags, not staff or nobody", () => {
    expect(canResolve(staff)).toBe(false);
    expect(canResolve(null)).toBe(false);
    expect(canResolve(supervisor)).toBe(true);
    expect(canResolve(manager)).toBe(true);
  });

  it("orders the roles", () => {
    expect(atLeast(manager, "supervisor")).toBe(true);
    expect(atLeast(supervisor, "manager")).toBe(false);
    expect(atLeast(staff, "staff")).toBe(true);
  });

  it("lets anyone signed in scan, except on an observer", () => {
    expect(canScan(staff, false)).toBe(true);
    expect(canScan(null, false)).toBe(false);
    expect(canScan(manager, true)).toBe(false);
  });
});
