import { describe, expect, it } from "vitest";
import { SharedPoints } from "../src/vectors/shared-points.js";

const vector = (x: number) => Float32Array.from([x, 1 - x, 0.5]);

describe("SharedPoints — the docs on each point", () => {
  it("docsOn follows a point from one doc to several and back to none", () => {
    const points = new SharedPoints();
    const label = points.create(10, vector(0.1));
    expect(points.docsOn(label)).toBe(10);
    points.join(11, label);
    points.join(12, label);
    expect(points.docsOn(label)).toEqual([10, 11, 12]);
    expect(points.detach(10)).toBeUndefined();
    expect(points.detach(12)).toBeUndefined();
    expect(points.docsOn(label)).toBe(11);
    expect(points.detach(11)).toBe(label);
    expect(points.docsOn(label)).toBeUndefined();
    expect(points.pointCount).toBe(0);
  });

  it("docsOn reads labels far past the first ones, as a reloaded index gives them", () => {
    const points = new SharedPoints();
    points.reserve(99_999);
    const label = points.create(0, vector(0.2));
    expect(label).toBe(100_000);
    expect(points.docsOn(label)).toBe(0);
    points.join(7, label);
    expect(points.docsOn(label)).toEqual([0, 7]);
    expect(points.docsOn(label + 1)).toBeUndefined();
    points.restore(5, vector(0.3));
    points.join(3, 5);
    expect(points.docsOn(5)).toBe(3);
  });
});
