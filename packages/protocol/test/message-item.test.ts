import { randomHeaderBlocks, TRICKY_HEADER_PIECES } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { headerMapJson, parseHeaderBlock } from "../src/headers.js";
import { encodeMessageItem, type WireMessage } from "../src/message-item.js";
import type { MessageItem } from "../src/messages.js";
import { encodeReply, type ReplyPayload } from "../src/reply-encoding.js";

/** The reply as the bytes a client receives. */
const bytesOf = (payload: ReplyPayload): Buffer =>
  typeof payload === "string" ? Buffer.from(payload) : Buffer.concat(payload.map((p) => Buffer.from(p)));

const header = new TextEncoder().encode('NATS/1.0\r\nmq9-key: a"b\r\nmq9-reply-to: caller.inbox\r\n\r\n');

describe("message items on the wire", () => {
  it("are valid JSON with every field of the SDK contract, whatever the key, tags and bytes", () => {
    const message: WireMessage = {
      id: 42,
      priority: "urgent",
      key: 'quote " backslash \\ newline \n ünïcode',
      tags: ["a,b", "\u0000"],
      header,
      payload: new Uint8Array([0, 255, 10, 34, 92]),
      createdMs: 1_800_000_000_999,
    };
    const item = JSON.parse(encodeMessageItem(message)) as MessageItem;
    expect(item).toEqual({
      msg_id: 42,
      payload: Buffer.from([0, 255, 10, 34, 92]).toString("base64"),
      priority: "urgent",
      header: Array.from(header),
      headers: { "mq9-key": 'a"b', "mq9-reply-to": "caller.inbox" },
      key: message.key,
      tags: message.tags,
      create_time: 1_800_000_000,
    });
  });

  it("without the raw header bytes (include_header false) only the decoded map is written", () => {
    const block = new TextEncoder().encode(
      "NATS/1.0\r\nA: 1\r\nB:  two \r\na: 3\r\nno colon\r\n\r\nC: after\r\n",
    );
    const item = JSON.parse(
      encodeMessageItem(
        { id: 7, priority: "normal", header: block, payload: new Uint8Array(), createdMs: 0 },
        { bytes: false, map: true },
      ),
    );
    expect(item).toEqual({
      msg_id: 7,
      payload: "",
      priority: "normal",
      headers: { a: "3", b: "two" },
      create_time: 0,
    });
  });

  it("without the decoded map (include_headers false) only the raw bytes are written, or neither", () => {
    const message: WireMessage = {
      id: 3,
      priority: "normal",
      header,
      payload: new Uint8Array(),
      createdMs: 0,
    };
    expect(JSON.parse(encodeMessageItem(message, { bytes: true, map: false }))).toEqual({
      msg_id: 3,
      payload: "",
      priority: "normal",
      header: Array.from(header),
      create_time: 0,
    });
    expect(JSON.parse(encodeMessageItem(message, { bytes: false, map: false }))).toEqual({
      msg_id: 3,
      payload: "",
      priority: "normal",
      create_time: 0,
    });
  });

  it("carries any header block as its bytes and as the general path's map, plain or not", () => {
    for (const text of randomHeaderBlocks(11, 2000, TRICKY_HEADER_PIECES)) {
      const block = new TextEncoder().encode(text);
      const message: WireMessage = {
        id: 1,
        priority: "normal",
        header: block,
        payload: new Uint8Array(),
        createdMs: 0,
      };
      const item = JSON.parse(encodeMessageItem(message)) as MessageItem;
      expect(item.header).toEqual(Array.from(block));
      expect(item.headers).toEqual(JSON.parse(headerMapJson(parseHeaderBlock(block))));
    }
  });

  it("a message sent without headers has header null and nothing optional", () => {
    const item = JSON.parse(
      encodeMessageItem({ id: 0, priority: "normal", payload: new Uint8Array(), createdMs: 1000 }),
    );
    expect(item).toEqual({ msg_id: 0, payload: "", priority: "normal", header: null, create_time: 1 });
  });

  it("replies carry the message list after the envelope; errors carry none", () => {
    const messages: WireMessage[] = [
      { id: 1, priority: "critical", payload: new Uint8Array([104, 105]), createdMs: 2000 },
      { id: 2, priority: "normal", payload: new Uint8Array(), createdMs: 3000 },
    ];
    expect(JSON.parse(bytesOf(encodeReply({ error: "", messages })).toString())).toEqual({
      error: "",
      messages: [
        { msg_id: 1, payload: "aGk=", priority: "critical", header: null, create_time: 2 },
        { msg_id: 2, payload: "", priority: "normal", header: null, create_time: 3 },
      ],
    });
    expect(JSON.parse(bytesOf(encodeReply({ error: "", messages: [] })).toString())).toEqual({
      error: "",
      messages: [],
    });
    expect(bytesOf(encodeReply({ error: "mailbox x does not exist" })).toString()).toBe(
      '{"error":"mailbox x does not exist"}',
    );
  });

  it("a reply's items are the items written alone, whatever text and header they carry", () => {
    const messages: WireMessage[] = [
      {
        id: 1,
        priority: "urgent",
        key: "ключ ✓",
        tags: ["标签", "😀"],
        header,
        payload: Buffer.alloc(3000, 7),
        createdMs: 5000,
      },
      { id: 2, priority: "normal", payload: new Uint8Array([1]), createdMs: 6000, deliveryCount: 2 },
    ];
    const reply = JSON.parse(bytesOf(encodeReply({ error: "", messages })).toString());
    expect(reply.messages).toEqual(messages.map((m) => JSON.parse(encodeMessageItem(m))));
    expect(reply.messages[0].key).toBe("ключ ✓");
  });

  it("writes a long message list as one piece of bytes that is the whole JSON", () => {
    const many = Array.from({ length: 200 }, (_, i) => ({
      id: i,
      priority: "normal" as const,
      payload: Buffer.alloc(1024, i),
      createdMs: 1000,
    }));
    const payload = encodeReply({ error: "", messages: many });
    // Bytes, not text: no string of the reply's size is ever built.
    expect(Array.isArray(payload) && payload.every((piece) => piece instanceof Uint8Array)).toBe(true);
    const reply = JSON.parse(bytesOf(payload).toString());
    expect(reply.messages).toHaveLength(200);
    expect(Buffer.from(reply.messages[199].payload, "base64")).toEqual(Buffer.alloc(1024, 199));
  });
});
