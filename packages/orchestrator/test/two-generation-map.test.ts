import { describe, expect, it } from "vitest";
import { TwoGenerationMap } from "../src/bus/two-generation-map.js";

describe("TwoGenerationMap", () => {
  it("keeps at least the last half of its capacity and never more than all of it", () => {
    const map = new TwoGenerationMap<number>(100);
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
    const map = new TwoGenerationMap<string>(4);
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
});
