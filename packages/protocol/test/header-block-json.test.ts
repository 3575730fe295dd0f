import { randomHeaderBlocks, TRICKY_HEADER_PIECES } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { headerBlockJson, plainBlockJson } from "../src/header-block-json.js";
import { headerMapJson, parseHeaderBlock } from "../src/headers.js";

const bytes = (text: string) => new TextEncoder().encode(text);
/** What the general path (parse, then JSON) makes of a block. */
const general = (block: Uint8Array) => headerMapJson(parseHeaderBlock(block));

describe("header block JSON", () => {
  it("writes a plain ASCII block on the byte path, lowercasing names and trimming both sides", () => {
    const block = bytes(
      "NATS/1.0\r\nMQ9-Priority:  urgent \r\nmq9-reply-to:\tcaller.inbox\r\nno colon\r\n:x\r\n\r\n",
    );
    const json = plainBlockJson(block);
    expect(json).toBe('{"mq9-priority":"urgent","mq9-reply-to":"caller.inbox"}');
    expect(json).toBe(general(block));
  });

  it.each([
    [
      "a repeated name (the later value replaces the earlier in place)",
      "NATS/1.0\r\nA: 1\r\nB: 2\r\na: 3\r\n\r\n",
    ],
    ["a quote in a value", 'NATS/1.0\r\nk: a"b\r\n\r\n'],
    ["a backslash", "NATS/1.0\r\nk: a\\b\r\n\r\n"],
    ["non-ASCII text", "NATS/1.0\r\nk: ünïcode\r\n\r\n"],
    ["a lone CR at a line start", "NATS/1.0\r\n\rk: v\r\n\r\n"],
    ["a lone LF in a value", "NATS/1.0\r\nk: v\nw\r\n\r\n"],
    ["a last line without CRLF", "NATS/1.0\r\nk: v"],
    ["a version line without CRLF", "NATS/1.0"],
  ])("leaves %s to the general path, which gets it right", (_, text) => {
    const block = bytes(text);
    expect(plainBlockJson(block)).toBeUndefined();
    expect(headerBlockJson(block)).toBe(general(block));
    expect(() => JSON.parse(headerBlockJson(block))).not.toThrow();
  });

  it("agrees with the general path on thousands of random blocks", () => {
    let byteSide = 0;
    for (const text of randomHeaderBlocks(7, 5000, TRICKY_HEADER_PIECES)) {
      const block = bytes(text);
      expect(headerBlockJson(block), JSON.stringify(text)).toBe(general(block));
      if (plainBlockJson(block) !== undefined) byteSide++;
    }
    // Both paths were exercised.
    expect(byteSide).toBeGreaterThan(500);
    expect(byteSide).toBeLessThan(4500);
  });

  it("takes blocks larger than its scratch buffer", () => {
    const value = "v".repeat(10_000);
    const block = bytes(`NATS/1.0\r\nbig: ${value}\r\n\r\n`);
    expect(plainBlockJson(block)).toBe(`{"big":"${value}"}`);
  });
});
