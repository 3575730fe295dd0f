import { describe, expect, it } from "vitest";
import { JsonBytes } from "../src/json-bytes.js";

const written = (write: (out: JsonBytes) => void, sizeHint = 1): string => {
  const out = new JsonBytes(sizeHint);
  write(out);
  return out.done().toString("latin1");
};

describe("JSON written straight into bytes", () => {
  it("writes whole numbers as JSON.stringify does, from 0 to the largest safe integer", () => {
    const numbers = [
      0,
      1,
      9,
      10,
      99,
      100,
      1234567,
      2 ** 31,
      2 ** 32 + 1,
      1_800_000_000,
      Number.MAX_SAFE_INTEGER,
    ];
    for (let n = 0; n < 2000; n += 7) numbers.push(n);
    // Every digit count's edges, either side of 32 bits.
    for (let p = 1; p <= 1e15; p *= 10) numbers.push(p - 1, p, p + 1, 2 * p, 9 * p + 9);
    numbers.push(2 ** 32 - 2, 2 ** 32 - 1, 2 ** 32, 4_294_967_199, 1_796_140_105);
    for (const n of numbers) expect(written((out) => out.integer(n))).toBe(JSON.stringify(n));
  });

  it("writes bytes as the JSON array of their numbers, every byte value, from a tiny start", () => {
    const all = Uint8Array.from({ length: 256 }, (_, b) => b);
    expect(written((out) => out.byteList(all))).toBe(JSON.stringify(Array.from(all)));
    expect(written((out) => out.byteList(new Uint8Array()))).toBe("[]");
    expect(written((out) => out.byteList(Uint8Array.of(7)))).toBe("[7]");
  });

  it("keeps what a writeWith writer put in place, and nothing of one that gave up", () => {
    const text = written((out) => {
      out.ascii("a");
      out.writeWith(100, (buf, at) => buf.write("bcd", at, "latin1") + at, undefined);
      out.writeWith(100, (buf, at) => (buf.write("zzz", at, "latin1") ? -1 : -1), undefined);
      out.ascii("e");
    });
    expect(text).toBe("abcde");
  });

  it("writes other numbers as their JSON text too (negative, fractional, unsafe)", () => {
    for (const n of [-1, -0, 0.5, -12.75, 2 ** 60, 1e21])
      expect(written((out) => out.integer(n))).toBe(String(n));
  });

  it("grows past its size hint, whatever the pieces' lengths", () => {
    const pieces = ["", "a", '{"msg_id":', "x".repeat(24), "y".repeat(25), "z".repeat(300)];
    const text = written((out) => {
      for (const piece of pieces) {
        out.ascii(piece);
        out.integer(pieces.length * 1_000_003);
      }
    });
    expect(text).toBe(pieces.map((piece) => `${piece}${pieces.length * 1_000_003}`).join(""));
  });
});
