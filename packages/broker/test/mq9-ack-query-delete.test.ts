import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, sleep, type TestBroker, texts } from "./harness.js";

type Items = { msg_id: number }[];

onEachStore((startBroker) =>
  describe("MSG.ACK, MSG.QUERY, MSG.DELETE", () => {
    let t: TestBroker;
    let n = 0;
    const box = async () => {
      const name = `aqd.box${n++}`;
      await t.request(Subjects.mailboxCreate, { name });
      return name;
    };
    const send = (mailbox: string, body: string, headers?: Record<string, string>) =>
      t.request<{ msg_id: number }>(Subjects.send(mailbox), body, { headers });
    const fetch = (mailbox: string, body: Record<string, unknown> = {}) =>
      t.request(Subjects.fetch(mailbox), {
        group_name: "g",
        deliver: "earliest",
        config: { max_wait_ms: 0, lease_ms: 100 },
        ...body,
      });
    const ack = (mailbox: string, msgId: number, group = "g") =>
      t.request(Subjects.ack(mailbox), { group_name: group, mail_address: mailbox, msg_id: msgId });

    beforeAll(async () => {
      t = await startBroker();
    });
    afterAll(() => t.close());

    it("ACK of the last message acknowledges the whole batch (cumulative ack)", async () => {
      const b = await box();
      for (const body of ["a", "b", "c"]) await send(b, body);
      await send(b, "!", { "mq9-priority": "critical" });
      const batch = (await fetch(b)).messages as Items;
      expect(await ack(b, batch.at(-1)!.msg_id)).toEqual({ error: "" });
      await sleep(150);
      expect((await fetch(b)).messages).toEqual([]);
    });

    it("ACK of a middle message acknowledges only what came before it in that batch", async () => {
      const b = await box();
      for (const body of ["a", "b", "c", "d"]) await send(b, body);
      const batch = (await fetch(b)).messages as Items;
      await ack(b, batch[1].msg_id);
      await sleep(150);
      expect(texts(await fetch(b))).toEqual(["c", "d"]);
    });

    it("ACK of every message in turn never skips or repeats (what SDK consume loops do)", async () => {
      const b = await box();
      await send(b, "n0");
      await send(b, "n1");
      await send(b, "c2", { "mq9-priority": "critical" });
      const batch = (await fetch(b)).messages as Items;
      expect(texts({ messages: batch })).toEqual(["c2", "n0", "n1"]);
      for (const m of batch) expect((await ack(b, m.msg_id)).error).toBe("");
      await sleep(150);
      expect((await fetch(b)).messages).toEqual([]);
    });

    it("an ACKed message is never delivered again to that group, another group still gets it", async () => {
      const b = await box();
      const { msg_id } = await send(b, "once");
      await fetch(b);
      await ack(b, msg_id);
      await sleep(150);
      expect((await fetch(b)).messages).toEqual([]);
      expect(texts(await fetch(b, { group_name: "other" }))).toEqual(["once"]);
    });

    it("ACK errors: never delivered, unknown mailbox, bad body; an empty group is accepted", async () => {
      const b = await box();
      const { msg_id } = await send(b, "x");
      expect(await ack(b, msg_id)).toEqual({ error: "message not found", code: "MESSAGE_NOT_FOUND" });
      expect(await ack("no.box", 1)).toEqual({
        error: "mailbox no.box does not exist",
        code: "MAILBOX_NOT_FOUND",
      });
      expect(await ack(b, msg_id, "")).toEqual({ error: "" });
      expect((await t.request(Subjects.ack(b), { mail_address: b, msg_id: 1 })).error).toBe(
        "invalid MSG.ACK payload: missing field 'group_name'",
      );
      expect((await t.request(Subjects.ack(b), { group_name: "g", msg_id: -1 })).error).toBe(
        "invalid MSG.ACK payload: 'msg_id' must be a non-negative integer, got -1",
      );
      expect((await t.request(Subjects.ack(b), "nope")).error).toMatch(
        /^invalid MSG\.ACK payload: malformed JSON/,
      );
    });

    it("QUERY filters by key, tags (any of them), since (exclusive) and limit, and touches no group", async () => {
      const b = await box();
      await send(b, "t1", { "mq9-tags": "billing,urgent" });
      await send(b, "t2", { "mq9-tags": "support" });
      await send(b, "k1", { "mq9-key": "state" });
      await send(b, "plain");
      const q = async (body: Record<string, unknown>) => texts(await t.request(Subjects.query(b), body));
      expect(await q({})).toEqual(["t1", "t2", "k1", "plain"]);
      expect(await q({ limit: 2 })).toEqual(["k1", "plain"]);
      expect(await q({ key: "state" })).toEqual(["k1"]);
      expect(await q({ key: "absent" })).toEqual([]);
      expect(await q({ tags: ["support", "urgent"] })).toEqual(["t1", "t2"]);
      expect(await q({ tags: ["nothing"] })).toEqual([]);
      const now = Math.floor(Date.now() / 1000);
      expect(await q({ since: now - 100 })).toHaveLength(4);
      expect(await q({ since: now })).toEqual([]);
      expect(texts(await fetch(b))).toHaveLength(4);
    });

    it("QUERY caps limit at 100 and explains bad bodies", async () => {
      const b = await box();
      for (let i = 0; i < 105; i++) await send(b, `m${i}`);
      const all = texts(await t.request(Subjects.query(b), { limit: 500 }));
      expect(all).toHaveLength(100);
      expect(all[0]).toBe("m5");
      expect((await t.request(Subjects.query(b), { tags: "x" })).error).toBe(
        "invalid query request: 'tags' must be an array of strings",
      );
      expect((await t.request(Subjects.query("no.box"), {})).error).toBe("mailbox no.box does not exist");
    });

    it("DELETE removes one message; unknown ids and bad tokens get clear errors", async () => {
      const b = await box();
      const { msg_id } = await send(b, "doomed");
      await send(b, "kept");
      expect(await t.request(Subjects.delete(b, msg_id), {})).toEqual({ error: "", deleted: true });
      expect(texts(await t.request(Subjects.query(b), {}))).toEqual(["kept"]);
      expect(await t.request(Subjects.delete(b, msg_id), "")).toEqual({
        error: "message not found",
        code: "MESSAGE_NOT_FOUND",
      });
      expect(await t.request(`$mq9.AI.MSG.DELETE.${b}.abc`)).toEqual({
        error: "invalid msg_id: abc",
        code: "INVALID_REQUEST",
      });
      expect(await t.request(`$mq9.AI.MSG.DELETE.${b}.-3`)).toEqual({
        error: "invalid msg_id: -3",
        code: "INVALID_REQUEST",
      });
      expect(await t.request(Subjects.delete("no.box", 1))).toEqual({
        error: "mailbox no.box does not exist",
        code: "MAILBOX_NOT_FOUND",
      });
    });
  }),
);
