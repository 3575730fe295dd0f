import { describe, expect, it } from "vitest";
import { FlatVectors, TopK } from "../src/vectors/flat-vectors.js";

const vector = (id: number) => Float32Array.from({ length: 8 }, (_, k) => id * 10 + k);

describe("flat vectors", () => {
  it("keeps every remaining vector intact while it grows and gives memory back", () => {
    const flat = new FlatVectors(8);
    for (let id = 1; id <= 5000; id++) flat.set(id, vector(id));
    // Remove in the order an index build takes them, down to a few, shrinking several times.
    for (let id = 1; id <= 4990; id++) expect(flat.delete(flat.firstIds(1)[0])).toBe(true);
    expect(flat.size).toBe(10);
    for (let id = 1; id <= 5000; id++) {
      const stored = flat.get(id);
      if (stored) expect([...stored]).toEqual([...vector(id)]);
    }
    const top = new TopK(3);
    flat.scan(
      Float32Array.from({ length: 8 }, () => 1),
      top,
      String,
    );
    expect(top.hits).toHaveLength(3);
    for (const hit of top.hits) expect([...flat.get(hit.id)!]).toEqual([...vector(hit.id)]);
    // And it still grows again.
    for (let id = 6000; id < 9000; id++) flat.set(id, vector(id));
    expect([...flat.get(8999)!]).toEqual([...vector(8999)]);
    expect(flat.size).toBe(3010);
  });
});
