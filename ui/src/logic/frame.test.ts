import { describe, expect, it } from "vitest";
import { captureSize, lumaFrame, RepeatFilter } from "./frame";

describe("lumaFrame", () => {
  it("puts width and height first, little-endian", () => {
    const f = lumaFrame(new Uint8ClampedArray(300 * 2 * 4), 300, 2);
    expect(f.length).toBe(8 + 600);
    expect([...f.subarray(0, 8)]).toEqual([0x2c, 0x01, 0, 0, 2, 0, 0, 0]);
  });

  it("turns RGBA into luma: black, white, pure green brighter than pure blue", () => {
    const rgba = [0, 0, 0, 255, 255, 255, 255, 255, 0, 255, 0, 255, 0, 0, 255, 255];
    const f = lumaFrame(rgba, 4, 1);
    expect(f[8]).toBe(0);
    expect(f[9]).toBe(255);
    expect(f[10]).toBeGreaterThan(140);
    expect(f[11]).toBeLessThan(40);
  });

  it("refuses sizes the decoder would refuse", () => {
    expect(() => lumaFrame([], 0, 1)).toThrow(RangeError);
    expect(() => lumaFrame(new Uint8Array(4), 2, 1)).toThrow(RangeError);
    expect(() => lumaFrame(new Uint8Array(4), 5000, 1)).toThrow(RangeError);
  });
});

describe("captureSize", () => {
  it("scales wide frames down, keeping the aspect ratio", () => {
    expect(captureSize(1280, 720, 800)).toEqual({ width: 800, height: 450 });
    expect(captureSize(640, 480, 800)).toEqual({ width: 640, height: 480 });
    expect(captureSize(0, 0)).toBeNull();
  });
});

describe("RepeatFilter", () => {
  it("passes a code held in front of the camera once, again after a quiet spell", () => {
    const f = new RepeatFilter(1000);
    expect(f.accept("A", 0)).toBe(true);
    expect(f.accept("A", 200)).toBe(false);
    expect(f.accept("A", 1100)).toBe(false); // still seen 900 ms ago
    expect(f.accept("B", 1150)).toBe(true);
    expect(f.accept("A", 2500)).toBe(true);
  });
});
