import { describe, expect, it } from "vitest";
import { TwoGenerationMap } from "../src/two-generation-map.js";

describe("TwoGenerationMap", () => {
  it("keeps at least the last half of its capacity and never more than all of it", () => {
    const map = new TwoGenerationMap<string, number>(100);
    const keys = Array.from({ length: 10_000 }, (_, i) => `k${i}`);
    for (const [i, key] of keys.entries()) map.set(key, i);
    const kept = keys.filter((key) => map.has(key));
    expect(kept.length).toBeGreaterThanOrEqual(50);
    expect(kept.length).toBeLessThanOrEqual(100);
    // What is kept is the newest.
    expect(kept).toEqual(keys.slice(keys.length - kept.length));
    for (const key of keys.slice(-50)) expect(map.get(key)).toBe(Number(key.slice(1)));
  });

  it("a key set again lives on with its newest value; delete forgets it in both generations", () => {
    const map = new TwoGenerationMap<string, string>(4);
    map.set("a", "old");
    map.set("b", "x");
    map.set("a", "new");
    for (const key of ["c", "d", "e"]) map.set(key, key);
    expect(map.has("b")).toBe(false);
    map.set("a", "newest");
    expect(map.get("a")).toBe("newest");
    map.delete("a");
    expect(map.has("a")).toBe(false);
    expect(map.get("a")).toBeUndefined();
  });

  it("a key read from the older generation moves to the newer one and outlives its peers", () => {
    const map = new TwoGenerationMap<number, string>(4);
    map.set(1, "hot");
    map.set(2, "cold"); // 1 and 2 are now the older generation
    map.set(3, "c");
    expect(map.get(1)).toBe("hot"); // moves to the newer generation, which fills and rotates
    map.set(4, "d");
    expect(map.get(1)).toBe("hot");
    expect(map.has(2)).toBe(false);
    expect(map.has(3)).toBe(false);
    map.clear();
    expect(map.has(1)).toBe(false);
  });
});
