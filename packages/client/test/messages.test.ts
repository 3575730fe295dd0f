import { boxName, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mq9Client, Mq9Error, Mq9Message } from "../src/index.js";

let t: TestBroker;
let client: Mq9Client;

beforeAll(async () => {
  t = await startBroker();
  client = await t.client();
});
afterAll(() => t.close());

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Mq9Error);
  return (err as Mq9Error).code;
}

describe("mailboxes", () => {
  it("creates a named mailbox and returns its address", async () => {
    const name = boxName("named");
    expect(await client.createMailbox({ name, ttlSeconds: 60, desc: "for a test" })).toBe(name);
  });

  it("creates a generated mailbox when no name is given", async () => {
    const address = await client.createMailbox();
    expect(address).toMatch(/^[0-9a-v]{26}$/);
    expect(await client.send(address, "ok")).toBeGreaterThanOrEqual(0);
  });

  it("MAILBOX_EXISTS for a duplicate name, with the broker's text", async () => {
    const name = await client.createMailbox({ name: boxName() });
    const err = await client.createMailbox({ name }).catch((e: Mq9Error) => e);
    expect(err).toMatchObject({
      code: "MAILBOX_EXISTS",
      message: `mailbox ${name} already exists`,
      retryable: false,
    });
  });

  it("ensureMailbox creates a missing mailbox and leaves an existing one as it was", async () => {
    const name = boxName("ensured");
    expect(await client.ensureMailbox({ name, desc: "first" })).toBe(true);
    await client.send(name, "kept");
    expect(await client.ensureMailbox({ name, ttlSeconds: 1, desc: "second" })).toBe(false);
    expect((await client.query(name)).map((m) => m.text())).toEqual(["kept"]);
    // Only "already exists" is swallowed: other refusals still throw.
    expect(await codeOf(client.ensureMailbox({ name: "Upper.Case" }))).toBe("INVALID_NAME");
  });

  it("INVALID_NAME for a name the broker refuses", async () => {
    expect(await codeOf(client.createMailbox({ name: "Upper.Case" }))).toBe("INVALID_NAME");
    expect(await codeOf(client.createMailbox({ name: "a..b" }))).toBe("INVALID_NAME");
  });
});

describe("send and fetch", () => {
  it("sends bytes, strings and JSON and fetches them back as typed messages", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const ids = [
      await client.send(box, bytes),
      await client.send(box, "héllo"),
      await client.send(box, { task: "translate", n: 3 }),
    ];
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const messages = await client.fetch(box, { deliver: "earliest" });
    expect(messages.map((m) => m.msgId)).toEqual(ids);
    expect(messages[0]).toBeInstanceOf(Mq9Message);
    expect([...messages[0].payload]).toEqual([...bytes]);
    expect(messages[1].text()).toBe("héllo");
    expect(messages[2].json()).toEqual({ task: "translate", n: 3 });
    for (const m of messages) {
      expect(m.priority).toBe("normal");
      expect(m.header).toBeNull();
      expect(m.headers).toEqual({});
      expect(m.tags).toEqual([]);
      expect(Math.abs(m.createTime - Date.now() / 1000)).toBeLessThan(60);
    }
  });

  it("carries priority, key, tags and extra headers, and delivers critical, then urgent, then normal", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "n1");
    await client.send(box, "u1", { priority: "urgent", key: "k", tags: ["a", "b"] });
    await client.send(box, "c1", { priority: "critical", headers: { "mq9-reply-to": "me.inbox" } });
    await client.send(box, "n2", { priority: "normal" });
    const messages = await client.fetch(box, { group: "g", deliver: "earliest" });
    expect(messages.map((m) => m.text())).toEqual(["c1", "u1", "n1", "n2"]);
    expect(messages.map((m) => m.priority)).toEqual(["critical", "urgent", "normal", "normal"]);
    const urgent = messages[1];
    expect(urgent.key).toBe("k");
    expect(urgent.tags).toEqual(["a", "b"]);
    expect(new TextDecoder().decode(urgent.header!)).toContain("mq9-priority: urgent");
    expect(messages[0].headers["mq9-reply-to"]).toBe("me.inbox");
  });

  it("headerBytes false: the reply leaves out the raw header block; the decoded headers, key and tags stay", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "h1", {
      key: "k",
      tags: ["t"],
      headers: { "mq9-reply-to": "me.inbox", "X-Trace": " a b " },
    });
    const [lean] = await client.fetch(box, { deliver: "earliest", headerBytes: false });
    expect(lean.header).toBeNull();
    expect(lean.headers).toMatchObject({ "mq9-reply-to": "me.inbox", "x-trace": "a b", "mq9-key": "k" });
    expect(lean.key).toBe("k");
    expect(lean.tags).toEqual(["t"]);
    const [full] = await client.fetch(box, { deliver: "earliest" });
    expect(new TextDecoder().decode(full.header!)).toContain("X-Trace: a b\r\n");
    expect(full.headers).toEqual(lean.headers);
  });

  it("headerMap false: the reply leaves out the decoded map, which is then read from the raw block", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, '{"a":1}', { key: "k", tags: ["t"], headers: { "mq9-reply-to": "me.inbox" } });
    const raw = await client.nats.request(
      `$mq9.AI.MSG.FETCH.${box}`,
      JSON.stringify({ deliver: "earliest", include_headers: false }),
    );
    const [item] = JSON.parse(new TextDecoder().decode(raw.data)).messages;
    expect(item.headers).toBeUndefined();
    expect(Array.isArray(item.header)).toBe(true);
    const [mapless] = await client.fetch(box, { deliver: "earliest", headerMap: false });
    expect(mapless.headers).toMatchObject({ "mq9-reply-to": "me.inbox", "mq9-key": "k" });
    expect(mapless.json()).toEqual({ a: 1 });
    // Neither form: the payload, key and tags are all there is.
    const [bare] = await client.fetch(box, { deliver: "earliest", headerMap: false, headerBytes: false });
    expect(bare.header).toBeNull();
    expect(bare.headers).toEqual({});
    expect(bare.key).toBe("k");
    expect(bare.tags).toEqual(["t"]);
    expect(bare.json()).toEqual({ a: 1 });
  });

  it("raw payloads (the default): the payloads follow the reply's JSON as bytes, and read the same as base64 ones", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) % 256);
    await client.send(box, bytes, { key: "k", tags: ["t"], headers: { "x-trace": "ab" } });
    await client.send(box, "");
    await client.send(box, "line one\nline two");
    // On the wire: payload_len in each item, a newline, then the bytes back to back.
    const wire = await client.nats.request(
      `$mq9.AI.MSG.FETCH.${box}`,
      JSON.stringify({ deliver: "earliest", payload_format: "raw" }),
    );
    const newline = wire.data.indexOf(0x0a);
    const head = JSON.parse(new TextDecoder().decode(wire.data.subarray(0, newline)));
    expect(head.error).toBe("");
    expect(head.messages.map((m: { payload_len: number }) => m.payload_len)).toEqual([300, 0, 17]);
    expect(head.messages[0].payload).toBeUndefined();
    expect(wire.data.length - newline - 1).toBe(317);
    const raw = await client.fetch(box, { deliver: "earliest" });
    const base64 = await client.fetch(box, { deliver: "earliest", rawPayloads: false });
    expect(raw.map((m) => Buffer.from(m.payload).toString("hex"))).toEqual(
      base64.map((m) => Buffer.from(m.payload).toString("hex")),
    );
    expect(raw[0].payload).toEqual(bytes);
    expect(raw[2].text()).toBe("line one\nline two");
    expect(raw[0].key).toBe("k");
    expect(raw[0].tags).toEqual(["t"]);
    expect(raw[0].headers).toEqual(base64[0].headers);
  });

  it("raw headers (the default): header blocks follow the JSON before their payloads, and read the same as the JSON forms", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "p1", { key: "k", tags: ["t"], headers: { "X-Trace": " a b " } });
    await client.send(box, "p2");
    await client.send(box, "p3", { idempotencyKey: "once" });
    // On the wire: header_len instead of header and headers, the block just before its payload.
    const wire = await client.nats.request(
      `$mq9.AI.MSG.FETCH.${box}`,
      JSON.stringify({ deliver: "earliest", payload_format: "raw", header_format: "raw" }),
    );
    const newline = wire.data.indexOf(0x0a);
    const head = JSON.parse(new TextDecoder().decode(wire.data.subarray(0, newline)));
    const items = head.messages as Record<string, unknown>[];
    expect(items.map((m) => [typeof m.header_len, m.header, m.headers])).toEqual([
      ["number", undefined, undefined],
      ["undefined", null, undefined],
      ["number", undefined, undefined],
    ]);
    expect(items[0]).toMatchObject({ key: "k", tags: ["t"] });
    const tail = Buffer.from(wire.data.subarray(newline + 1)).toString();
    expect(tail).toMatch(
      /^NATS\/1\.0\r\n[\s\S]*X-Trace: a b\r\n[\s\S]*\r\n\r\np1p2NATS\/1\.0\r\n[\s\S]*\r\n\r\np3$/,
    );
    const raw = await client.fetch(box, { deliver: "earliest" });
    const json = await client.fetch(box, { deliver: "earliest", rawPayloads: false });
    const hex = (bytes: Uint8Array | null) => bytes && Buffer.from(bytes).toString("hex");
    expect(raw.map((m) => [hex(m.header), hex(m.payload), m.headers, m.key, m.tags])).toEqual(
      json.map((m) => [hex(m.header), hex(m.payload), m.headers, m.key, m.tags]),
    );
    expect(raw[0].headers).toMatchObject({ "x-trace": "a b", "mq9-key": "k", "mq9-tags": "t" });
    expect(raw[2].headers["mq9-idempotency-key"]).toBe("once");
    expect(raw[1].header).toBeNull();
    // headerMap false keeps the raw block, decoded on use; headerBytes false keeps the JSON map.
    const mapless = await client.fetch(box, { deliver: "earliest", headerMap: false });
    expect(mapless.map((m) => m.headers)).toEqual(json.map((m) => m.headers));
    const byteless = await client.fetch(box, { deliver: "earliest", headerBytes: false });
    expect(byteless.map((m) => [m.header, m.headers])).toEqual(json.map((m) => [null, m.headers]));
  });

  it("INVALID_REQUEST for a header_format the broker does not know, or raw without raw payloads; nothing is leased", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "x", { headers: { "x-a": "1" } });
    for (const [body, text] of [
      [
        { payload_format: "raw", header_format: "bytes" },
        "'header_format' must be one of json, raw, got 'bytes'",
      ],
      [{ header_format: "raw" }, `'header_format' "raw" needs 'payload_format' "raw"`],
    ] as const) {
      const reply = await client.nats.request(
        `$mq9.AI.MSG.FETCH.${box}`,
        JSON.stringify({ group_name: "g", deliver: "earliest", ...body }),
      );
      const answer = JSON.parse(new TextDecoder().decode(reply.data));
      expect(answer.code).toBe("INVALID_REQUEST");
      expect(answer.error).toContain(text);
    }
    const [m] = await client.fetch(box, { group: "g", deliver: "earliest" });
    expect(m.deliveryCount).toBe(1);
    expect(m.headers["x-a"]).toBe("1");
  });

  it("rawPayloads with a group: leases, delivery counts and ACKs as with base64 replies", async () => {
    const box = await client.createMailbox({ name: boxName() });
    for (let i = 0; i < 5; i++) await client.send(box, `m${i}`);
    const first = await client.fetch(box, { group: "g", deliver: "earliest", batch: 3, rawPayloads: true });
    expect(first.map((m) => [m.text(), m.deliveryCount])).toEqual([
      ["m0", 1],
      ["m1", 1],
      ["m2", 1],
    ]);
    await client.ack(box, "g", first[2].msgId);
    const rest = await client.fetch(box, { group: "g", batch: 10, rawPayloads: true });
    expect(rest.map((m) => m.text())).toEqual(["m3", "m4"]);
    // An empty raw reply: no items, nothing after the newline.
    expect(await client.fetch(box, { group: "other", deliver: "latest", rawPayloads: true })).toEqual([]);
  });

  it("INVALID_REQUEST for a payload_format the broker does not know; nothing is leased", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "x");
    const reply = await client.nats.request(
      `$mq9.AI.MSG.FETCH.${box}`,
      JSON.stringify({ group_name: "g", deliver: "earliest", payload_format: "binary" }),
    );
    const body = JSON.parse(new TextDecoder().decode(reply.data));
    expect(body.code).toBe("INVALID_REQUEST");
    expect(body.error).toContain("'payload_format' must be one of base64, raw, got 'binary'");
    const [m] = await client.fetch(box, { group: "g", deliver: "earliest", rawPayloads: true });
    expect(m.deliveryCount).toBe(1);
  });

  it("INVALID_REQUEST for a header name or value that cannot go into a NATS header block", async () => {
    const box = await client.createMailbox({ name: boxName() });
    // Bad input rejects the returned promise; send() itself never throws.
    expect(await codeOf(client.send("has space", "x"))).toBe("INVALID_NAME");
    expect(await codeOf(client.send(box, "x", { headers: { "bad name": "v" } }))).toBe("INVALID_REQUEST");
    expect(await codeOf(client.send(box, "x", { headers: { "x-ok": "line\r\nbreak" } }))).toBe(
      "INVALID_REQUEST",
    );
  });

  it("accepts an mq9:// URI as the target", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(`mq9://elsewhere:4332/${box}`, "via uri");
    const [m] = await client.fetch(`mq9://elsewhere/${box}`, { deliver: "earliest" });
    expect(m.text()).toBe("via uri");
  });

  it("a delayed message gets msg_id -1 and stays invisible until due", async () => {
    const box = await client.createMailbox({ name: boxName() });
    expect(await client.send(box, "later", { delaySeconds: 60 })).toBe(-1);
    // The deprecated name still works.
    expect(await client.send(box, "later too", { delay: 60 })).toBe(-1);
    expect(await client.fetch(box, { deliver: "earliest", maxWaitMs: 0 })).toEqual([]);
    expect(await client.query(box)).toEqual([]);
  });

  it("a message with a ttl is stored and readable before it expires", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "short-lived", { ttlSeconds: 3600 });
    await client.send(box, "old name", { ttl: 1800, ttlSeconds: 3600 });
    const stored = await client.query(box);
    expect(stored.map((m) => m.text())).toEqual(["short-lived", "old name"]);
    // The new name wins over the deprecated one.
    expect(stored.map((m) => m.headers["mq9-ttl"])).toEqual(["3600", "3600"]);
  });

  it("INVALID_REQUEST for bad option values, before or at the broker", async () => {
    const box = await client.createMailbox({ name: boxName() });
    expect(await codeOf(client.send(box, "x", { delaySeconds: -1 }))).toBe("INVALID_REQUEST");
    expect(await codeOf(client.send(box, "x", { priority: "high" as never }))).toBe("INVALID_REQUEST");
  });

  it("MAILBOX_NOT_FOUND for every message call on an unknown mailbox", async () => {
    const box = boxName("missing");
    for (const call of [
      client.send(box, "x"),
      client.fetch(box, { maxWaitMs: 0 }),
      client.ack(box, "g", 0),
      client.query(box),
      client.delete(box, 0),
    ]) {
      const err = await call.catch((e: Mq9Error) => e);
      expect(err).toMatchObject({ code: "MAILBOX_NOT_FOUND", message: `mailbox ${box} does not exist` });
    }
  });

  it("INVALID_NAME for a target that cannot be a subject, without a round trip", async () => {
    expect(await codeOf(client.send("two words", "x"))).toBe("INVALID_NAME");
    expect(await codeOf(client.fetch("a.*"))).toBe("INVALID_NAME");
  });

  it("fetch long-polls: a message sent while it waits is returned", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const waiting = client.fetch(box, { group: "g", maxWaitMs: 4_000 });
    setTimeout(() => void client.send(box, "arrived"), 100);
    expect((await waiting).map((m) => m.text())).toEqual(["arrived"]);
  });
});

describe("trace context without an OpenTelemetry SDK", () => {
  it("a SEND carries no traceparent of its own, and one given by hand travels as it is", async () => {
    const box = await client.createMailbox({ name: boxName("untraced") });
    await client.send(box, "plain");
    const given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await client.send(box, "handed on", { headers: { traceparent: given, tracestate: "k=v" } });
    const [plain, handed] = await client.fetch(box, { deliver: "earliest" });
    expect(plain.header).toBeNull();
    expect(handed.headers).toMatchObject({ traceparent: given, tracestate: "k=v" });
  });
});

describe("groups and ACK", () => {
  it("a group member does not get a leased message again; after the lease it does", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "job");
    const first = await client.fetch(box, { group: "w", deliver: "earliest", leaseMs: 300 });
    expect(first.map((m) => m.text())).toEqual(["job"]);
    expect(await client.fetch(box, { group: "w", maxWaitMs: 0 })).toEqual([]);
    const again = await client.fetch(box, { group: "w", maxWaitMs: 2_000 });
    expect(again.map((m) => m.msgId)).toEqual([first[0].msgId]);
  });

  it("ACK of the last message acknowledges the batch", async () => {
    const box = await client.createMailbox({ name: boxName() });
    for (const text of ["a", "b", "c"]) await client.send(box, text);
    const batch = await client.fetch(box, { group: "w", deliver: "earliest", leaseMs: 200 });
    await client.ack(box, "w", batch[2].msgId);
    expect(await client.fetch(box, { group: "w", maxWaitMs: 600 })).toEqual([]);
  });

  it("MESSAGE_NOT_FOUND for an ACK of a message never delivered to the group", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const id = await client.send(box, "x");
    await client.fetch(box, { group: "other", deliver: "earliest" });
    const err = await client.ack(box, "w", id).catch((e: Mq9Error) => e);
    expect(err).toMatchObject({ code: "MESSAGE_NOT_FOUND", message: "message not found" });
  });

  it("stateless fetch stores nothing: earliest returns the same messages again", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "x");
    const a = await client.fetch(box, { deliver: "earliest" });
    const b = await client.fetch(box, { deliver: "earliest" });
    expect(b.map((m) => m.msgId)).toEqual(a.map((m) => m.msgId));
  });

  it("from_id and forceDeliver restart a group", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const ids: number[] = [];
    for (const text of ["a", "b", "c"]) ids.push(await client.send(box, text));
    const all = await client.fetch(box, { group: "w", deliver: "earliest" });
    await client.ack(box, "w", all[2].msgId);
    const replay = await client.fetch(box, {
      group: "w",
      deliver: "from_id",
      fromId: ids[1],
      forceDeliver: true,
    });
    expect(replay.map((m) => m.text())).toEqual(["b", "c"]);
  });
});

describe("query and delete", () => {
  it("query by key returns the survivor of compaction; by tags any match; limit the most recent", async () => {
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "v1", { key: "status" });
    await client.send(box, "v2", { key: "status" });
    await client.send(box, "tagged", { tags: ["eu", "billing"] });
    await client.send(box, "plain");
    expect((await client.query(box, { key: "status" })).map((m) => m.text())).toEqual(["v2"]);
    expect((await client.query(box, { tags: ["billing", "nope"] })).map((m) => m.text())).toEqual(["tagged"]);
    expect((await client.query(box, { limit: 2 })).map((m) => m.text())).toEqual(["tagged", "plain"]);
    expect((await client.query(box, { since: 0 })).length).toBe(3);
  });

  it("delete removes one message; MESSAGE_NOT_FOUND the second time", async () => {
    const box = await client.createMailbox({ name: boxName() });
    const id = await client.send(box, "x");
    expect(await client.delete(box, id)).toBe(true);
    expect(await client.query(box)).toEqual([]);
    expect(await codeOf(client.delete(box, id))).toBe("MESSAGE_NOT_FOUND");
    expect(await codeOf(client.delete(box, -1))).toBe("INVALID_REQUEST");
  });
});
