import { describe, expect, it } from "vitest";
import { BestFirst } from "../src/vectors/best-first.js";
import { seededRandom } from "./vector-store-conformance.js";

/** Every position BestFirst hands out, in order. */
function drain(order: BestFirst): number[] {
  const out: number[] = [];
  for (let i = order.next(); i >= 0; i = order.next()) out.push(i);
  return out;
}

describe("BestFirst — a search's points, best exact score first", () => {
  it("hands out positions as a stable descending sort orders them, ties in position order", () => {
    const random = seededRandom(7);
    const order = new BestFirst();
    for (const n of [0, 1, 2, 3, 17, 188, 600]) {
      const scores = new Float64Array(n + 5);
      // Few distinct values, so that many scores tie.
      for (let i = 0; i < scores.length; i++) scores[i] = Math.round(random() * 12) / 12;
      order.start(scores, n);
      const expected = Array.from({ length: n }, (_, i) => i).sort((a, b) => scores[b] - scores[a]);
      expect(drain(order)).toEqual(expected);
      expect(order.next()).toBe(-1);
    }
  });

  it("starts over cleanly with fewer positions than the last search", () => {
    const order = new BestFirst();
    order.start(Float64Array.from([0.1, 0.9, 0.5, 0.7, 0.3]), 5);
    expect(order.next()).toBe(1);
    order.start(Float64Array.from([0.2, 0.8, 0.4]), 3);
    expect(drain(order)).toEqual([1, 2, 0]);
  });
});
