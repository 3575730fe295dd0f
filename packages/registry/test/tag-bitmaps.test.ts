import { describe, expect, it } from "vitest";
import { forEachOwner, hasOwner, TagBitmaps } from "../src/search/tag-bitmaps.js";

const owners = (bits: Uint32Array) => {
  const out: number[] = [];
  forEachOwner(bits, (owner) => out.push(owner));
  return out;
};

describe("tag bitmaps", () => {
  it("intersects tags, across word boundaries and after growing past the first words", () => {
    const tags = new TagBitmaps();
    for (const owner of [0, 31, 32, 63, 1000, 5000]) tags.add("python", owner);
    for (const owner of [31, 32, 64, 5000]) tags.add("codegen", owner);
    const both = tags.intersect(["python", "codegen"]);
    expect(owners(both.bits)).toEqual([31, 32, 5000]);
    expect(both.count).toBe(3);
    expect(hasOwner(both.bits, 5000)).toBe(true);
    expect(hasOwner(both.bits, 64)).toBe(false);
    expect(hasOwner(both.bits, 1 << 20)).toBe(false);
  });

  it("forgets removed owners and tags nobody has any more", () => {
    const tags = new TagBitmaps();
    tags.add("a", 3);
    tags.add("a", 4);
    tags.remove("a", 3);
    expect(owners(tags.intersect(["a"]).bits)).toEqual([4]);
    tags.remove("a", 4);
    expect(tags.intersect(["a"]).count).toBe(0);
    expect(tags.intersect(["a", "unknown"]).count).toBe(0);
  });
});
