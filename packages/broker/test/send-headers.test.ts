import { Headers, parseHeaderBlock, splitTags } from "@mq9/protocol";
import { randomHeaderBlocks } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { readSendHeaders } from "../src/engine/send-headers.js";

const OPTIONS = new Set<string>([Headers.priority, Headers.key, Headers.delay, Headers.ttl, Headers.tags]);
const bytes = (text: string) => new TextEncoder().encode(text);
/** parseHeaderBlock's reading, narrowed to the SEND options. */
const expected = (block: Uint8Array) =>
  new Map([...parseHeaderBlock(block)].filter(([name]) => OPTIONS.has(name)));

describe("the SEND option headers", () => {
  it("are read in any case, trimmed, the last of a repeated name winning, other headers left out", () => {
    const block = bytes(
      "NATS/1.0\r\nMQ9-Priority:  urgent \r\nmq9-reply-to: caller\r\nmq9-tags: a, b\r\nmq9-TAGS: c\r\nmq9-ttl:\t60\r\n\r\nmq9-key: after-the-end\r\n",
    );
    expect(readSendHeaders(block)).toEqual(
      new Map([
        ["mq9-priority", "urgent"],
        ["mq9-tags", "c"],
        ["mq9-ttl", "60"],
      ]),
    );
  });

  it.each([
    ["a, b,,c ,", ["a", "b", "c"]],
    ["solo", ["solo"]],
    ["", []],
    [" , ,", []],
    ["trace:9a8b", ["trace:9a8b"]],
  ])("mq9-tags %j splits into %j", (value, tags) => {
    expect(splitTags(value)).toEqual(tags);
  });

  it("do not take a control character for the dash or a digit of a name", () => {
    expect(readSendHeaders(bytes("NATS/1.0\r\nmq9\rkey: x\r\nmq\u00199-ttl: 5\r\n\r\n")).size).toBe(0);
  });

  it("agree with parseHeaderBlock on thousands of random blocks, non-ASCII ones included", () => {
    const pieces = [
      "mq9-key",
      "MQ9-TTL",
      "mq9-tags",
      "mq9-delay",
      "mq9-priority",
      "x-other",
      ":",
      " ",
      "\t",
      "\r",
      "\n",
      "\r\n",
      "é",
      "5",
      "a,b",
    ];
    for (const text of randomHeaderBlocks(11, 5000, pieces, { minPieces: 1, maxPieces: 5 })) {
      const block = bytes(text);
      expect(readSendHeaders(block), JSON.stringify(text)).toEqual(expected(block));
    }
  });
});
