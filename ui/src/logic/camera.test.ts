import { describe, expect, it } from "vitest";
import { cameraProblem } from "./camera";

const named = (name: string): { name: string } => ({ name });

describe("cameraProblem", () => {
  it("tells a missing camera from a refused one and a busy one", () => {
    const none = cameraProblem(named("NotFoundError"));
    const refused = cameraProblem(named("NotAllowedError"));
    const busy = cameraProblem(named("NotReadableError"));
    const silent = cameraProblem(named("TimeoutError"));
    expect(none).toMatch(/No camera found/);
    expect(refused).toMatch(/refused/);
    expect(busy).toMatch(/busy/);
    expect(silent).toMatch(/did not answer/);
    expect(new Set([none, refused, busy, silent]).size).toBe(4);
  });

  it("passes on an unexpected error's message", () => {
    expect(cameraProblem(new Error("kaput"))).toBe("The camera did not start: kaput");
    expect(cameraProblem("???")).toBe("The camera did not start.");
  });
});
