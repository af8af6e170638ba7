import { describe, expect, it } from "vitest";
import {
  cleanNames,
  DEFAULT_SCANNERS,
  loadScanners,
  loadSelected,
  MAX_NAME,
  saveScanners,
  saveSelected,
  SCANNERS_KEY,
  type KeyValue,
} from "./scanners";

function memory(init: Record<string, string> = {}): KeyValue & { data: Record<string, string> } {
  const data = { ...init };
  return {
    data,
    getItem: (k) => data[k] ?? null,
    setItem: (k, v) => {
      data[k] = v;
    },
  };
}

describe("scanner names", () => {
  it("defaults to Lane 1 and Lane 2", () => {
    expect(loadScanners(memory())).toEqual(["Lane 1", "Lane 2"]);
    expect(loadScanners(null)).toEqual([...DEFAULT_SCANNERS]);
  });

  it("round-trips through storage", () => {
    const m = memory();
    saveScanners(m, ["North 1", "North 2", "Camera"]);
    expect(loadScanners(m)).toEqual(["North 1", "North 2", "Camera"]);
  });

  it("cleans names the gate would refuse", () => {
    expect(cleanNames(["  A ", "", "A", "B\u0007", "x".repeat(100)])).toEqual([
      "A",
      "B",
      "x".repeat(MAX_NAME),
    ]);
  });

  it("never saves an empty list", () => {
    const m = memory();
    expect(saveScanners(m, ["  ", ""])).toEqual(["Lane 1", "Lane 2"]);
  });

  it("survives a damaged entry", () => {
    expect(loadScanners(memory({ [SCANNERS_KEY]: "{not json" }))).toEqual(["Lane 1", "Lane 2"]);
    expect(loadScanners(memory({ [SCANNERS_KEY]: '{"a":1}' }))).toEqual(["Lane 1", "Lane 2"]);
    expect(loadScanners(memory({ [SCANNERS_KEY]: '[1, "Gate A"]' }))).toEqual(["Gate A"]);
  });

  it("remembers the chosen scanner while it exists", () => {
    const m = memory();
    const names = ["Lane 1", "Lane 2"];
    expect(loadSelected(m, names)).toBe("Lane 1");
    saveSelected(m, "Lane 2");
    expect(loadSelected(m, names)).toBe("Lane 2");
    expect(loadSelected(m, ["Lane 1"])).toBe("Lane 1");
  });
});
