import { describe, expect, test } from "vitest";
import type { ProtocolErrorText } from "../src/nats/errors.js";
import { type ProtocolHandler, ProtocolParser } from "../src/nats/parser.js";

/** Records every parsed operation as a readable string. */
function recorder(): ProtocolHandler & { ops: string[] } {
  const ops: string[] = [];
  return {
    ops,
    onConnect: (json) => ops.push(`CONNECT ${json.trim()}`),
    onPub: (subject, reply, h, data) =>
      ops.push(`PUB ${subject} ${reply ?? "-"} ${h} ${data.toString("latin1")}`),
    onSub: (subject, queue, sid) => ops.push(`SUB ${subject} ${queue ?? "-"} ${sid}`),
    onUnsub: (sid, max) => ops.push(`UNSUB ${sid} ${max}`),
    onPing: () => ops.push("PING"),
    onPong: () => ops.push("PONG"),
    onClientError: (text) => ops.push(`CLIENT-ERR ${text}`),
    onProtocolError: (text: ProtocolErrorText) => ops.push(`ERROR ${text}`),
  };
}

const limits = { maxControlLine: 128, maxPayload: 64 };
const stream = Buffer.from(
  'CONNECT {"verbose":false}\r\nsub a.* q 1\r\nSUB b 2\r\nPUB a.x r.1 5\r\nhe\r\no\r\n' +
    "HPUB b 12 14\r\nNATS/1.0\r\n\r\nhi\r\n\tPING \r\n\r\nPONG\nUNSUB 1 3\r\nPUB   e   0\r\n\r\n",
);
const expected = [
  'CONNECT {"verbose":false}',
  "SUB a.* q 1",
  "SUB b - 2",
  "PUB a.x r.1 -1 he\r\no",
  "PUB b - 12 NATS/1.0\r\n\r\nhi",
  "PING",
  "PONG",
  "UNSUB 1 3",
  "PUB e - -1 ",
];

function parse(chunks: Buffer[]): string[] {
  const handler = recorder();
  const parser = new ProtocolParser(handler, limits);
  for (const chunk of chunks) parser.feed(chunk);
  return handler.ops;
}

describe("nats parser — incremental input", () => {
  test("the same operations come out however the bytes are split in two", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(parse([stream.subarray(0, cut), stream.subarray(cut)]), `cut at ${cut}`).toEqual(expected);
    }
  });

  test("one byte at a time", () => {
    expect(parse([...stream].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  test("payload views from a whole chunk stay intact after later input", () => {
    const kept: Buffer[] = [];
    const handler = {
      ...recorder(),
      onPub: (_s: string, _r: string | undefined, _h: number, d: Buffer) => kept.push(d),
    };
    const parser = new ProtocolParser(handler, limits);
    parser.feed(Buffer.from("PUB a 3\r\nabc\r\nPUB a 3\r\nd"));
    parser.feed(Buffer.from("ef\r\n"));
    parser.feed(Buffer.from("PUB a 3\r\nxyz\r\n"));
    expect(kept.map((b) => b.toString())).toEqual(["abc", "def", "xyz"]);
  });
});

describe("nats parser — errors stop the parser", () => {
  const cases: [string, string][] = [
    ["NOPE\r\n", "ERROR Unknown Protocol Operation"],
    ["PUB a\r\n", "ERROR Unknown Protocol Operation"],
    ["PUB a -1\r\n", "ERROR Unknown Protocol Operation"],
    ["PUB a 1x\r\n", "ERROR Unknown Protocol Operation"],
    ["HPUB a 5 3\r\n", "ERROR Unknown Protocol Operation"],
    ["SUB a b c d\r\n", "ERROR Unknown Protocol Operation"],
    ["PING x\r\n", "ERROR Unknown Protocol Operation"],
    ["PUB a 65\r\n", "ERROR Maximum Payload Violation"],
    ["PUB a 2\r\nabX\r\n", "ERROR Unknown Protocol Operation"],
    [`SUB ${"x".repeat(200)} 1\r\n`, "ERROR Maximum Control Line Exceeded"],
    [`SUB ${"x".repeat(200)}`, "ERROR Maximum Control Line Exceeded"],
  ];
  test.each(cases)("%j → %s", (input, error) => {
    const ops = parse([Buffer.from(input), Buffer.from("PING\r\n")]);
    expect(ops).toEqual([error]);
  });
});
