import { describe, expect, it } from "vitest";
import { RecordSlab } from "../src/store/record-slab.js";

describe("RecordSlab", () => {
  it("hands out pieces that do not overlap, each of the size asked for, on 8-byte boundaries", () => {
    const slab = new RecordSlab(1024);
    const pieces = [13, 8, 100, 1, 64].map((size) => slab.take(size));
    expect(pieces.map((p) => p.length)).toEqual([13, 8, 100, 1, 64]);
    for (const [i, piece] of pieces.entries()) piece.fill(i + 1);
    pieces.forEach((piece, i) => {
      expect(piece.every((b) => b === i + 1)).toBe(true);
      expect(piece.byteOffset % 8).toBe(0);
    });
    // All five came from one slab.
    expect(new Set(pieces.map((p) => p.buffer)).size).toBe(1);
  });

  it("starts a new slab when a piece does not fit, and gives a big record memory of its own", () => {
    const slab = new RecordSlab(1024);
    const first = slab.take(200);
    const rest = [200, 200, 200, 200, 200].map((size) => slab.take(size));
    // Five of 200 fill 1000 of the 1024 bytes; the sixth starts the next slab.
    expect(rest[3].buffer).toBe(first.buffer);
    expect(rest[4].buffer).not.toBe(first.buffer);
    const big = slab.take(257);
    expect(big.length).toBe(257);
    expect(big.buffer).not.toBe(rest[4].buffer);
    // The slab being filled goes on after the big one.
    expect(slab.take(8).buffer).toBe(rest[4].buffer);
    first.fill(7);
    expect(first.every((b) => b === 7)).toBe(true);
  });
});
