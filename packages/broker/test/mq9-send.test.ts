import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, type TestBroker, texts } from "./harness.js";

onEachStore((startBroker, where) => {
  describe("MSG.SEND", () => {
    let t: TestBroker;
    const fetchAll = (box: string) =>
      t.request(Subjects.fetch(box), { deliver: "earliest", config: { num_msgs: 100, max_wait_ms: 0 } });

    beforeAll(async () => {
      t = await startBroker();
    });
    afterAll(() => t.close());

    it("stores a message and answers with increasing msg_ids starting at 0", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.ids" });
      const ids = [];
      for (const body of ["a", "b", "c"]) ids.push((await t.request(Subjects.send("send.ids"), body)).msg_id);
      expect(ids).toEqual([0, 1, 2]);
    });

    it("refuses an unknown mailbox with the reference text", async () => {
      expect(await t.request(Subjects.send("no.such.box"), "x")).toEqual({
        error: "mailbox no.such.box does not exist",
        code: "MAILBOX_NOT_FOUND",
      });
    });

    it("round-trips binary payloads as standard base64", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.binary" });
      const payload = new Uint8Array(1024).map((_, i) => (i * 7) % 256);
      await t.request(Subjects.send("send.binary"), payload);
      await t.request(Subjects.send("send.binary"), new Uint8Array());
      const reply = await fetchAll("send.binary");
      const items = reply.messages as { payload: string }[];
      expect(Buffer.from(items[0].payload, "base64").equals(Buffer.from(payload))).toBe(true);
      expect(items[0].payload).toBe(Buffer.from(payload).toString("base64"));
      expect(items[1].payload).toBe("");
    });

    it("returns message items with the SDK contract fields, header echoed as bytes and as a map", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.items" });
      const before = Math.floor(Date.now() / 1000);
      const first = await t.request<{ msg_id: number }>(Subjects.send("send.items"), "plain");
      const second = await t.request<{ msg_id: number }>(Subjects.send("send.items"), '{"k":1}', {
        headers: { "mq9-priority": "urgent", "mq9-reply-to": "caller.inbox", "mq9-tags": "a, b" },
      });
      const [urgent, plain] = (await fetchAll("send.items")).messages as Record<string, unknown>[];
      expect(plain).toMatchObject({
        msg_id: first.msg_id,
        payload: Buffer.from("plain").toString("base64"),
        priority: "normal",
        header: null,
      });
      expect(plain.create_time).toBeGreaterThanOrEqual(before);
      expect(urgent).toMatchObject({ msg_id: second.msg_id, priority: "urgent", tags: ["a", "b"] });
      expect(second.msg_id).toBeGreaterThan(first.msg_id);
      const header = Buffer.from(urgent.header as number[]).toString();
      expect(header.startsWith("NATS/1.0\r\n")).toBe(true);
      expect(header).toContain("mq9-reply-to: caller.inbox\r\n");
      expect(urgent.headers).toMatchObject({ "mq9-priority": "urgent", "mq9-reply-to": "caller.inbox" });
    });

    // A restart on the same data folder: the embedded store's (PostgreSQL's reads are the same either way).
    it.skipIf(where.store !== "sqlite")(
      "decodes the header map the same from recent memory and, after a restart, from the database",
      async () => {
        const headers = { "mq9-reply-to": 'a "quoted" inbox', "X-Note": "ünïcode\\path", "mq9-tags": "t" };
        const expected = { "mq9-reply-to": 'a "quoted" inbox', "x-note": "ünïcode\\path", "mq9-tags": "t" };
        const own = await startBroker();
        try {
          await own.request(Subjects.mailboxCreate, { name: "send.restart" });
          await own.request(Subjects.send("send.restart"), "x", { headers });
          const fetchOne = (b: TestBroker) =>
            b.request<{ messages: { headers: unknown }[] }>(Subjects.fetch("send.restart"), {
              deliver: "earliest",
              config: { num_msgs: 1, max_wait_ms: 0 },
            });
          expect((await fetchOne(own)).messages[0].headers).toEqual(expected);
          await own.broker.close();
          const again = await startBroker({ dataDir: own.dataDir });
          try {
            expect((await fetchOne(again)).messages[0].headers).toEqual(expected);
          } finally {
            await again.close();
          }
        } finally {
          await own.close();
        }
      },
    );

    it("accepts header names and priority values in any case", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.case" });
      const reply = await t.request(Subjects.send("send.case"), "x", {
        headers: { "MQ9-Priority": "CRITICAL" },
      });
      expect(reply.error).toBe("");
      expect((await fetchAll("send.case")).messages).toMatchObject([{ priority: "critical" }]);
    });

    it.each([
      [
        "mq9-priority",
        "high",
        "invalid mq9-priority header value 'high': expected critical, urgent or normal",
      ],
      [
        "mq9-delay",
        "-5",
        "invalid mq9-delay header value '-5': expected a non-negative whole number of seconds",
      ],
      [
        "mq9-delay",
        "soon",
        "invalid mq9-delay header value 'soon': expected a non-negative whole number of seconds",
      ],
      ["mq9-ttl", "-1", "invalid mq9-ttl header value '-1': expected a non-negative whole number of seconds"],
      [
        "mq9-ttl",
        "1.5",
        "invalid mq9-ttl header value '1.5': expected a non-negative whole number of seconds",
      ],
    ])("refuses %s: %s and stores nothing", async (name, value, error) => {
      const box = `send.bad.${name.slice(4)}.${Math.random().toString(36).slice(2, 8)}`;
      await t.request(Subjects.mailboxCreate, { name: box });
      expect(await t.request(Subjects.send(box), "x", { headers: { [name]: value } })).toEqual({
        error,
        code: "INVALID_REQUEST",
      });
      expect((await fetchAll(box)).messages).toEqual([]);
    });

    it("treats mq9-delay: 0 and mq9-ttl: 0 as 'now' and 'no TTL'", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.zero" });
      const reply = await t.request(Subjects.send("send.zero"), "z", {
        headers: { "mq9-delay": "0", "mq9-ttl": "0" },
      });
      expect(reply.error).toBe("");
      expect(reply.msg_id).toBeGreaterThanOrEqual(0);
      expect(texts(await fetchAll("send.zero"))).toEqual(["z"]);
    });

    it("stores a SEND published without a reply subject (fire and forget)", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.noreply" });
      t.nc.publish(Subjects.send("send.noreply"), new TextEncoder().encode("quiet"));
      await t.nc.flush();
      let got: string[] = [];
      for (let i = 0; i < 50 && got.length === 0; i++) {
        got = texts(await t.request(Subjects.query("send.noreply"), {}));
      }
      expect(got).toEqual(["quiet"]);
    });

    it("compacts by mq9-key: only the latest message of a key survives", async () => {
      await t.request(Subjects.mailboxCreate, { name: "send.compact" });
      for (let i = 1; i <= 5; i++) {
        await t.request(Subjects.send("send.compact"), `status ${i}`, { headers: { "mq9-key": "status" } });
      }
      await t.request(Subjects.send("send.compact"), "other", { headers: { "mq9-key": "other" } });
      expect(texts(await fetchAll("send.compact"))).toEqual(["status 5", "other"]);
      expect(texts(await t.request(Subjects.query("send.compact"), { key: "status" }))).toEqual(["status 5"]);
    });
  });
});
