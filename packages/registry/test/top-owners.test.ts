import { describe, expect, it } from "vitest";
import { TopOwners } from "../src/search/top-owners.js";

describe("top owners", () => {
  it("keeps each owner at its best doc, best first, ties to the lower owner", () => {
    const top = new TopOwners(3, () => true);
    for (const [owner, score] of [
      [5, 1],
      [2, 3],
      [9, 3],
      [5, 4],
      [7, 2],
      [1, 2],
      [2, 1],
    ]) {
      top.offer(owner, score);
    }
    expect(top.ranked).toEqual([
      { owner: 5, score: 4 },
      { owner: 2, score: 3 },
      { owner: 9, score: 3 },
    ]);
    expect(top.floor).toBe(3);
    // Equal to the floor with a lower owner number wins the last place.
    top.offer(3, 3);
    expect(top.ranked.map((r) => r.owner)).toEqual([5, 2, 3]);
  });

  it("asks about an owner once, and only when it would enter", () => {
    const asked: number[] = [];
    const top = new TopOwners(1, (owner) => {
      asked.push(owner);
      return owner % 2 === 0;
    });
    top.offer(3, 5);
    top.offer(3, 6);
    top.offer(4, 2);
    top.offer(6, 1);
    top.offer(8, 9);
    expect(top.ranked).toEqual([{ owner: 8, score: 9 }]);
    expect(asked).toEqual([3, 4, 8]);
    expect(top.floor).toBe(9);
  });
});
