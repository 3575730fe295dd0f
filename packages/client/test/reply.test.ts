import { Mq9Error } from "@mq9/protocol";
import { describe, expect, it } from "vitest";
import { parseReply, sendReplyId } from "../src/reply.js";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("reply parsing", () => {
  it("reads a SEND reply, in the broker's exact form or any other JSON form, to the same msg_id", () => {
    for (const [text, id] of [
      ['{"error":"","msg_id":0}', 0],
      ['{"error":"","msg_id":123456789}', 123456789],
      ['{"error":"","msg_id":-1}', -1],
      ['{ "error": "", "msg_id": 42 }', 42],
      ['{"msg_id":7,"error":""}', 7],
      ['{"error":"","msg_id":9007199254740991}', 9007199254740991],
      ['{"error":"","msg_id":1.5}', 1.5],
      ['{"error":"","msg_id":5,"extra":true}', 5],
    ] as const) {
      expect(sendReplyId(bytes(text), "s")).toBe(id);
      expect(parseReply<{ msg_id: number }>(bytes(text), "s").msg_id).toBe(id);
    }
    expect(parseReply(bytes('{"error":"","msg_id":5,"extra":true}'), "s")).toEqual({
      error: "",
      msg_id: 5,
      extra: true,
    });
  });

  it("still reports errors and malformed replies", () => {
    for (const read of [parseReply, sendReplyId]) {
      expect(() => read(bytes('{"error":"mailbox not found","msg_id":1}'), "s")).toThrow(Mq9Error);
      expect(() => read(bytes('{"error":"","msg_id":12'), "s")).toThrow(/not JSON/);
      expect(() => read(bytes('{"error":"","msg_id":}'), "s")).toThrow(/not JSON/);
      expect(() => read(bytes("[1]"), "s")).toThrow(/not a JSON object/);
    }
    expect(() => sendReplyId(bytes('{"error":""}'), "s")).toThrow(/no valid 'msg_id'/);
    expect(() => sendReplyId(bytes('{"error":"","msg_id":"7"}'), "s")).toThrow(/no valid 'msg_id'/);
  });
});
