import { describe, expect, it } from "vitest";
import { Errors } from "../src/errors.js";
import { parseHeaderBlock } from "../src/headers.js";
import type { MessageItem } from "../src/messages.js";
import { Mq9Error } from "../src/mq9-error.js";
import { decodeMessagesReply, decodeReply, decodeSendReply } from "../src/reply-decoding.js";
import { encodeReply, encodeSendReply, errorReplyOf, internalErrorReply } from "../src/reply-encoding.js";

const bytes = (text: string) => new TextEncoder().encode(text);

/** The value of a decoded reply, or its error thrown (what the client does). */
function valueOfReply<T>(reply: { ok: true; value: T } | { ok: false; error: Mq9Error }): T {
  if (!reply.ok) throw reply.error;
  return reply.value;
}

/** The error a decoded reply stands for. */
function errorOf(reply: { ok: boolean; error?: Mq9Error }): Mq9Error {
  expect(reply.ok).toBe(false);
  return reply.error!;
}

describe("reply decoding", () => {
  it("reads a SEND reply, in the broker's exact form or any other JSON form, to the same msg_id", () => {
    for (const [text, id] of [
      [encodeSendReply(0), 0],
      [encodeSendReply(123456789), 123456789],
      [encodeSendReply(-1), -1],
      ['{ "error": "", "msg_id": 42 }', 42],
      ['{"msg_id":7,"error":""}', 7],
      ['{"error":"","msg_id":9007199254740991}', 9007199254740991],
      ['{"error":"","msg_id":1.5}', 1.5],
      ['{"error":"","msg_id":5,"extra":true}', 5],
    ] as const) {
      expect(valueOfReply(decodeSendReply(bytes(text), "s"))).toBe(id);
      expect(valueOfReply(decodeReply<{ msg_id: number }>(bytes(text), "s")).msg_id).toBe(id);
    }
    expect(valueOfReply(decodeReply(bytes('{"error":"","msg_id":5,"extra":true}'), "s"))).toEqual({
      error: "",
      msg_id: 5,
      extra: true,
    });
  });

  it("still reports errors and malformed replies", () => {
    for (const read of [decodeReply, decodeSendReply]) {
      expect(errorOf(read(bytes('{"error":"mailbox not found","msg_id":1}'), "s"))).toBeInstanceOf(Mq9Error);
      expect(errorOf(read(bytes('{"error":"","msg_id":12'), "s")).message).toMatch(/not JSON/);
      expect(errorOf(read(bytes('{"error":"","msg_id":}'), "s")).message).toMatch(/not JSON/);
      expect(errorOf(read(bytes("[1]"), "s")).message).toMatch(/not a JSON object/);
    }
    expect(errorOf(decodeSendReply(bytes('{"error":""}'), "s")).message).toMatch(/no valid 'msg_id'/);
    expect(errorOf(decodeSendReply(bytes('{"error":"","msg_id":"7"}'), "s")).message).toMatch(
      /no valid 'msg_id'/,
    );
  });

  it("takes an error's code from the reply, where the broker sends one", () => {
    const reply = bytes(
      JSON.stringify(errorReplyOf(new Mq9Error("MAILBOX_NOT_FOUND", "mailbox a does not exist"))),
    );
    expect(JSON.parse(new TextDecoder().decode(reply))).toEqual({
      error: "mailbox a does not exist",
      code: "MAILBOX_NOT_FOUND",
    });
    const error = errorOf(decodeSendReply(reply, "s"));
    expect([error.code, error.message]).toEqual(["MAILBOX_NOT_FOUND", "mailbox a does not exist"]);
    // The code is data: it wins over what the text would map to.
    const coded = errorOf(
      decodeReply(bytes('{"error":"mailbox a does not exist","code":"PERMISSION_DENIED"}'), "s"),
    );
    expect(coded.code).toBe("PERMISSION_DENIED");
    expect(JSON.parse(JSON.stringify(internalErrorReply(new Error("disk full"))))).toEqual({
      error: Errors.internal("disk full"),
      code: "INTERNAL",
    });
  });

  it("maps a reply without a code (or with one it does not know) by its text", () => {
    for (const [text, code] of [
      ['{"error":"mailbox a does not exist"}', "MAILBOX_NOT_FOUND"],
      ['{"error":"mailbox a already exists"}', "MAILBOX_EXISTS"],
      ['{"error":"agent not found","code":"SOMETHING_NEW"}', "AGENT_NOT_FOUND"],
      ['{"error":"internal error: x","code":42}', "INTERNAL"],
      ['{"error":"no idea"}', "INVALID_REQUEST"],
    ] as const) {
      expect(errorOf(decodeReply(bytes(text), "s")).code, text).toBe(code);
    }
  });

  it("raw payloads: what encodeReply writes decodes to the same items and bytes as base64", () => {
    const messages = [
      { id: 3, priority: "normal" as const, payload: bytes("a\nb"), createdMs: 5000, deliveryCount: 1 },
      { id: 4, priority: "urgent" as const, payload: new Uint8Array(0), createdMs: 6000, key: "k" },
      {
        id: 5,
        priority: "normal" as const,
        payload: Uint8Array.of(0, 10, 255),
        createdMs: 7000,
        tags: ["t"],
      },
    ];
    const join = (pieces: ReturnType<typeof encodeReply>) =>
      Buffer.concat((typeof pieces === "string" ? [pieces] : pieces).map((p) => Buffer.from(p)));
    const raw = valueOfReply(
      decodeMessagesReply(join(encodeReply({ error: "", messages, rawPayloads: true })), "s", true),
    );
    const base64 = valueOfReply(decodeMessagesReply(join(encodeReply({ error: "", messages })), "s", true));
    expect(raw.map((m) => [...(m.payload_bytes ?? [])])).toEqual([[97, 10, 98], [], [0, 10, 255]]);
    expect(base64.map((m) => [...Buffer.from(m.payload, "base64")])).toEqual([
      [97, 10, 98],
      [],
      [0, 10, 255],
    ]);
    expect(
      raw.map(({ msg_id, key, tags, delivery_count }) => ({ msg_id, key, tags, delivery_count })),
    ).toEqual(base64.map(({ msg_id, key, tags, delivery_count }) => ({ msg_id, key, tags, delivery_count })));
  });

  it("raw headers: each block follows the JSON just before its payload and reads as the JSON forms do", () => {
    const block = (text: string) => bytes(`NATS/1.0\r\n${text}\r\n\r\n`);
    const messages = [
      {
        id: 3,
        priority: "normal" as const,
        header: block("mq9-idempotency-key: k-1\r\nX-Trace:  a b "),
        payload: bytes("a\nb"),
        createdMs: 5000,
        deliveryCount: 1,
      },
      // No header block: no header_len, nothing before its payload.
      { id: 4, priority: "urgent" as const, payload: new Uint8Array(0), createdMs: 6000, key: "k" },
      // A header block and an empty payload: the block alone.
      {
        id: 5,
        priority: "normal" as const,
        header: block("A: 1\r\nb: 2\r\na: 3"),
        payload: new Uint8Array(0),
        createdMs: 7000,
      },
    ];
    const join = (pieces: ReturnType<typeof encodeReply>) =>
      Buffer.concat((typeof pieces === "string" ? [pieces] : pieces).map((p) => Buffer.from(p)));
    const wire = join(encodeReply({ error: "", messages, rawPayloads: true, rawHeaders: true }));
    const newline = wire.indexOf(0x0a);
    const head = JSON.parse(wire.subarray(0, newline).toString());
    expect(head.messages.map((m: MessageItem) => [m.header_len, m.header, m.headers])).toEqual([
      [messages[0].header?.length, undefined, undefined],
      [undefined, null, undefined],
      [messages[2].header?.length, undefined, undefined],
    ]);
    expect(wire.subarray(newline + 1)).toEqual(
      Buffer.concat([messages[0].header!, messages[0].payload, messages[2].header!]),
    );
    const raw = valueOfReply(decodeMessagesReply(wire, "s", true));
    const json = valueOfReply(decodeMessagesReply(join(encodeReply({ error: "", messages })), "s", true));
    expect(raw.map((m) => m.header_bytes && [...m.header_bytes])).toEqual(
      json.map((m) => (Array.isArray(m.header) ? m.header : undefined)),
    );
    expect(raw.map((m) => [...(m.payload_bytes ?? [])])).toEqual([[97, 10, 98], [], []]);
    // The map the JSON form carries is the block as parseHeaderBlock reads it.
    expect(
      raw.map((m) => (m.header_bytes ? Object.fromEntries(parseHeaderBlock(m.header_bytes)) : undefined)),
    ).toEqual(json.map((m) => m.headers));
    // Without raw payloads there is no tail: rawHeaders alone changes nothing.
    expect(join(encodeReply({ error: "", messages, rawHeaders: true }))).toEqual(
      join(encodeReply({ error: "", messages })),
    );
    // Neither header form asked for: no block anywhere.
    const bare = join(
      encodeReply({
        error: "",
        messages,
        rawPayloads: true,
        rawHeaders: true,
        headerParts: { bytes: false, map: false },
      }),
    );
    expect(bare.subarray(bare.indexOf(0x0a) + 1)).toEqual(Buffer.from("a\nb"));
    const bareItems = valueOfReply(decodeMessagesReply(bare, "s", true));
    expect(bareItems.map((m) => [m.header_len, m.header_bytes, m.header, m.headers])).toEqual([
      [undefined, undefined, undefined, undefined],
      [undefined, undefined, null, undefined],
      [undefined, undefined, undefined, undefined],
    ]);
  });

  it("raw headers: a header_len that does not fit the bytes sent is a malformed reply", () => {
    const item = (len: string) =>
      `{"error":"","messages":[{"msg_id":1,"payload_len":2,"priority":"normal","header_len":${len},"create_time":1}]}`;
    for (const [len, tail] of [
      ["5", "abcd"],
      ["-1", "ab"],
      ["1.5", "abc"],
      ['"2"', "abcd"],
    ]) {
      expect(errorOf(decodeMessagesReply(bytes(`${item(len)}\n${tail}`), "s", true)).message).toMatch(
        /header_len|payload_len/,
      );
    }
    const [m] = valueOfReply(decodeMessagesReply(bytes(`${item("3")}\nhhhpp`), "s", true));
    expect(m.header_bytes).toEqual(bytes("hhh"));
    expect(m.payload_bytes).toEqual(bytes("pp"));
  });

  it("raw payloads are views of the reply's bytes, one after another, not copies", () => {
    const head =
      '{"error":"","messages":[{"msg_id":1,"payload_len":2,"priority":"normal","create_time":1},{"msg_id":2,"payload_len":3,"priority":"normal","create_time":1}]}';
    // As nats.js hands it: a Buffer viewing part of a larger read.
    const read = Buffer.from(`xx${head}\nabcdeyy`);
    const data = read.subarray(2, read.length - 2);
    const [first, second] = valueOfReply(decodeMessagesReply(data, "s", true));
    expect(first.payload_bytes).toEqual(bytes("ab"));
    expect(second.payload_bytes).toEqual(bytes("cde"));
    expect(first.payload_bytes?.buffer).toBe(data.buffer);
    expect(second.payload_bytes?.byteOffset).toBe(data.byteOffset + head.length + 1 + 2);
    // Plain Uint8Arrays, as the SDK's payloads have always been.
    expect(Object.getPrototypeOf(first.payload_bytes)).toBe(Uint8Array.prototype);
  });

  it("raw payloads: lengths that do not add up to the bytes sent are a malformed reply", () => {
    const head = '{"error":"","messages":[{"msg_id":1,"payload_len":3,"priority":"normal","create_time":1}]}';
    for (const tail of ["ab", "abcd"]) {
      expect(errorOf(decodeMessagesReply(bytes(`${head}\n${tail}`), "s", true)).message).toContain(
        "payload_len",
      );
    }
    expect(valueOfReply(decodeMessagesReply(bytes(`${head}\nabc`), "s", true))[0].payload_bytes).toEqual(
      bytes("abc"),
    );
    // A broker's error reply, or a pretty-printed one from a broker that ignored the request, reads as JSON.
    expect(errorOf(decodeMessagesReply(bytes('{"error":"no","code":"INTERNAL"}'), "s", true)).code).toBe(
      "INTERNAL",
    );
    expect(
      valueOfReply(decodeMessagesReply(bytes('{\n "error": "",\n "messages": []\n}'), "s", true)),
    ).toEqual([]);
  });
});
