import { describe, expect, it } from "vitest";
import { niceCeil, percentOf, scaleChart, seriesStyle, type ChartBox } from "./chart";

const BOX: ChartBox = { width: 310, height: 120, left: 10, right: 0, top: 10, bottom: 10 };

const pts = (s: string): [number, number][] =>
  s.split(" ").map((p) => p.split(",").map(Number) as [number, number]);

describe("niceCeil", () => {
  it("rounds up to 1, 2 or 5 times a power of ten", () => {
    expect(niceCeil(0)).toBe(1);
    expect(niceCeil(1)).toBe(1);
    expect(niceCeil(1.5)).toBe(2);
    expect(niceCeil(3)).toBe(5);
    expect(niceCeil(7)).toBe(10);
    expect(niceCeil(10)).toBe(10);
    expect(niceCeil(11)).toBe(20);
    expect(niceCeil(480)).toBe(500);
    expect(niceCeil(Number.NaN)).toBe(1);
  });
});

describe("scaleChart", () => {
  it("puts the oldest minute left, the newest right, zero at the bottom", () => {
    const series = Array.from({ length: 31 }, (_, i) => (i === 30 ? 10 : 0));
    const c = scaleChart([series], BOX);
    const p = pts(c.points[0] ?? "");
    expect(p).toHaveLength(31);
    expect(p[0]).toEqual([10, 110]);
    expect(p[30]).toEqual([310, 10]);
    expect(c.max).toBe(10);
  });

  it("scales every series by the highest value of all of them", () => {
    const c = scaleChart(
      [
        [0, 5],
        [0, 20],
      ],
      BOX,
    );
    expect(c.max).toBe(20);
    expect(pts(c.points[0] ?? "")[1]?.[1]).toBe(85); // 5 of 20: a quarter of 100 px up
    expect(pts(c.points[1] ?? "")[1]?.[1]).toBe(10);
  });

  it("aligns a shorter series with the newest minute", () => {
    const c = scaleChart([[1, 1, 1, 1, 1], [1]], BOX);
    expect(pts(c.points[1] ?? "")).toEqual([[310, 10]]);
  });

  it("draws a flat line for a quiet event, with 1 on top", () => {
    const c = scaleChart([[0, 0, 0]], BOX);
    expect(c.max).toBe(1);
    expect(pts(c.points[0] ?? "").every(([, y]) => y === 110)).toBe(true);
    expect(c.ticks.map((t) => t.value)).toEqual([0, 1]);
  });

  it("copes with no gates and with one minute", () => {
    expect(scaleChart([], BOX).points).toEqual([]);
    expect(pts(scaleChart([[4]], BOX).points[0] ?? "")).toEqual([[160, 30]]); // 4 of 5
  });

  it("labels zero, the middle and the top", () => {
    const c = scaleChart([[3, 8]], BOX);
    expect(c.ticks).toEqual([
      { value: 0, y: 110 },
      { value: 5, y: 60 },
      { value: 10, y: 10 },
    ]);
  });
});

describe("seriesStyle and percentOf", () => {
  it("tells the first gates apart by colour and later ones by dashes too", () => {
    const first = Array.from({ length: 7 }, (_, i) => seriesStyle(i).color);
    expect(new Set(first).size).toBe(7);
    expect(seriesStyle(0).dash).toBe("");
    expect(seriesStyle(7).color).toBe(seriesStyle(0).color);
    expect(seriesStyle(7).dash).not.toBe("");
  });

  it("fills a bar within 0–100 %, none without a capacity", () => {
    expect(percentOf(50, 200)).toBe(25);
    expect(percentOf(250, 200)).toBe(100);
    expect(percentOf(5, null)).toBeNull();
    expect(percentOf(5, 0)).toBeNull();
  });
});
