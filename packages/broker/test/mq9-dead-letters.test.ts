import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, sleep, type TestBroker, texts } from "./harness.js";

type Item = { msg_id: number; delivery_count?: number; headers?: Record<string, string>; priority: string };

onEachStore((startBroker) =>
  describe("delivery counts, MSG.NAK, dead letters and MSG.RETRY", () => {
    let t: TestBroker;
    let n = 0;
    const box = async (extra: Record<string, unknown> = {}) => {
      const name = `dl.box${n++}`;
      expect(await t.request(Subjects.mailboxCreate, { name, ...extra })).toMatchObject({ error: "" });
      return name;
    };
    const send = (mailbox: string, body: string, headers?: Record<string, string>) =>
      t.request<{ msg_id: number }>(Subjects.send(mailbox), body, { headers });
    const fetch = async (
      mailbox: string,
      config: Record<string, unknown> = {},
      extra: Record<string, unknown> = {},
    ) =>
      (
        await t.request(Subjects.fetch(mailbox), {
          group_name: "g",
          deliver: "earliest",
          config: { max_wait_ms: 0, lease_ms: 150, ...config },
          ...extra,
        })
      ).messages as Item[];
    const nak = (mailbox: string, body: Record<string, unknown>) =>
      t.request<{ dead_letter?: boolean }>(Subjects.nak(mailbox), { group_name: "g", ...body });
    /** The dead letters of a mailbox, once `count` of them are there. */
    const deadLetters = async (mailbox: string, count: number) => {
      for (let i = 0; i < 200; i++) {
        const reply = await t.request(Subjects.fetch(`${mailbox}.dlq`), {
          deliver: "earliest",
          config: { max_wait_ms: 0 },
        });
        const items = (reply.messages ?? []) as Item[];
        if (items.length >= count) return { items, texts: texts(reply) };
        await sleep(50);
      }
      throw new Error(`fewer than ${count} dead letters in ${mailbox}.dlq`);
    };

    beforeAll(async () => {
      t = await startBroker();
    });
    afterAll(() => t.close());

    it("FETCH items of a group carry delivery_count: 1, then one more after each lease; stateless reads none", async () => {
      const b = await box();
      await send(b, "a");
      expect((await fetch(b)).map((m) => m.delivery_count)).toEqual([1]);
      await sleep(200);
      expect((await fetch(b)).map((m) => m.delivery_count)).toEqual([2]);
      const stateless = await t.request(Subjects.fetch(b), {
        deliver: "earliest",
        config: { max_wait_ms: 0 },
      });
      expect((stateless.messages as Item[])[0]).not.toHaveProperty("delivery_count");
    });

    it("max_deliver: the last lease's end moves the message, once, to <mailbox>.dlq with where and why", async () => {
      const b = await box();
      await send(b, "poison", { "mq9-priority": "urgent", "x-trace": "t1", "mq9-tags": "red" });
      await send(b, "fine");
      const first = await fetch(b, { max_deliver: 2, num_msgs: 1 });
      expect(texts({ messages: first })).toEqual(["poison"]);
      const fine = await fetch(b, { num_msgs: 1 });
      expect((await t.request(Subjects.ack(b), { group_name: "g", msg_id: fine[0].msg_id })).error).toBe("");
      await sleep(200);
      // Remembered by the group: this FETCH does not repeat it.
      expect((await fetch(b)).map((m) => m.delivery_count)).toEqual([2]);
      await sleep(200);
      expect(await fetch(b)).toEqual([]);
      const { items, texts: bodies } = await deadLetters(b, 1);
      expect(bodies).toEqual(["poison"]);
      expect(items[0].priority).toBe("urgent");
      expect(items[0].headers).toMatchObject({
        "x-trace": "t1",
        "mq9-tags": "red",
        "mq9-dlq-mailbox": b,
        "mq9-dlq-group": "g",
        "mq9-dlq-msg-id": String(first[0].msg_id),
        "mq9-dlq-delivery-count": "2",
      });
      await sleep(1200);
      expect((await deadLetters(b, 1)).items).toHaveLength(1);
      expect(await fetch(b)).toEqual([]);
    });

    it("CREATE's max_deliver and dead_letter apply to every group of the mailbox", async () => {
      const graves = `graves.of.box${n}`;
      const b = await box({ max_deliver: 1, dead_letter: graves });
      await send(b, "once");
      expect((await fetch(b)).map((m) => m.delivery_count)).toEqual([1]);
      await sleep(200);
      expect(await fetch(b)).toEqual([]);
      for (let i = 0; i < 100; i++) {
        const reply = await t.request(Subjects.fetch(graves), {
          deliver: "earliest",
          config: { max_wait_ms: 0 },
        });
        if (!reply.error && texts(reply).length > 0) {
          expect(texts(reply)).toEqual(["once"]);
          return;
        }
        await sleep(50);
      }
      throw new Error("no dead letter in the mailbox named at CREATE");
    });

    it("NAK: at once, after delay_ms, or terminal with its reason; a later ACK of its batch does not cover it", async () => {
      const b = await box();
      for (const body of ["now", "later", "never", "ok"]) await send(b, body);
      const batch = await fetch(b, { lease_ms: 30_000 });
      expect(await nak(b, { msg_id: batch[0].msg_id })).toEqual({ error: "", dead_letter: false });
      expect(await nak(b, { msg_id: batch[1].msg_id, delay_ms: 400, reason: "busy" })).toEqual({
        error: "",
        dead_letter: false,
      });
      expect(await nak(b, { msg_id: batch[2].msg_id, terminal: true, reason: "bad input" })).toEqual({
        error: "",
        dead_letter: true,
      });
      expect((await t.request(Subjects.ack(b), { group_name: "g", msg_id: batch[3].msg_id })).error).toBe("");
      const again = await fetch(b, { lease_ms: 30_000 });
      expect(texts({ messages: again })).toEqual(["now"]);
      expect(again[0].delivery_count).toBe(2);
      await sleep(450);
      expect(texts({ messages: await fetch(b, { lease_ms: 30_000 }) })).toEqual(["later"]);
      const { items } = await deadLetters(b, 1);
      expect(items[0].headers).toMatchObject({
        "mq9-dlq-reason": "bad input",
        "mq9-dlq-delivery-count": "1",
      });
    });

    it("backoff_ms: a failed message waits its step before it comes back", async () => {
      const b = await box();
      await send(b, "slow");
      await fetch(b, { backoff_ms: [600] });
      await sleep(250);
      expect(await fetch(b)).toEqual([]);
      await sleep(600);
      expect((await fetch(b)).map((m) => m.delivery_count)).toEqual([2]);
    });

    it("bad NAKs get clear errors and change nothing", async () => {
      const b = await box();
      await send(b, "held");
      const [held] = await fetch(b, { lease_ms: 30_000 });
      const cases: [unknown, RegExp][] = [
        ["{not json", /invalid MSG.NAK payload: malformed JSON/],
        [{ msg_id: held.msg_id, group_name: "" }, /missing field 'group_name'/],
        [{ group_name: "g" }, /missing field 'msg_id'/],
        [{ group_name: "g", msg_id: held.msg_id, delay_ms: -1 }, /'delay_ms' must be a non-negative integer/],
        [{ group_name: "g", msg_id: held.msg_id, reason: "x".repeat(2000) }, /'reason' must be at most 1024/],
        [{ group_name: "g", msg_id: held.msg_id, terminal: "yes" }, /'terminal' must be true or false/],
        [{ group_name: "g", msg_id: 9999 }, /message not found/],
        [{ group_name: "other", msg_id: held.msg_id }, /message not found/],
      ];
      for (const [body, error] of cases) {
        const reply = await t.request(Subjects.nak(b), body as Record<string, unknown>);
        expect(reply.error).toMatch(error);
      }
      expect((await t.request(Subjects.nak("no.such.box"), { group_name: "g", msg_id: 0 })).error).toBe(
        "mailbox no.such.box does not exist",
      );
      // Still leased to its member: nobody else gets it, and its ACK holds.
      expect(await fetch(b)).toEqual([]);
      expect((await t.request(Subjects.ack(b), { group_name: "g", msg_id: held.msg_id })).error).toBe("");
    });

    it("CREATE refuses a bad max_deliver or dead_letter and creates nothing", async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ name: "dl.bad1", max_deliver: -1 }, /'max_deliver' must be a non-negative integer/],
        [{ name: "dl.bad2", dead_letter: "Not Valid" }, /dead_letter: name may only contain/],
      ];
      for (const [body, error] of cases) {
        expect((await t.request(Subjects.mailboxCreate, body)).error).toMatch(error);
        expect((await t.request(Subjects.send(body.name as string), "x")).error).toMatch(/does not exist/);
      }
      const fetchCases: [Record<string, unknown>, RegExp][] = [
        [{ max_deliver: 1.5 }, /'max_deliver' must be a non-negative integer/],
        [{ backoff_ms: [1, "2"] }, /'backoff_ms' must be an array/],
        [{ backoff_ms: new Array(51).fill(1) }, /'backoff_ms' must be an array of at most 50/],
      ];
      const b = await box();
      for (const [config, error] of fetchCases) {
        const reply = await t.request(Subjects.fetch(b), { group_name: "g", config });
        expect(reply.error).toMatch(error);
      }
    });

    it("RETRY sends dead letters back (one or all) without their dead-letter headers; bad ones stay", async () => {
      const b = await box();
      for (const body of ["r1", "r2", "r3"]) await send(b, body, { "x-app": "7" });
      for (const m of await fetch(b, { lease_ms: 30_000 }))
        await nak(b, { msg_id: m.msg_id, terminal: true });
      const { items } = await deadLetters(b, 3);
      const dlq = `${b}.dlq`;
      expect(await t.request(Subjects.retry(dlq), { msg_id: items[0].msg_id })).toEqual({
        error: "",
        retried: 1,
      });
      expect(await t.request(Subjects.retry(dlq), {})).toEqual({ error: "", retried: 2 });
      expect((await t.request(Subjects.retry(dlq), { msg_id: items[0].msg_id })).error).toBe(
        "message not found",
      );
      const back = await fetch(b, { lease_ms: 30_000 });
      expect(texts({ messages: back }).sort()).toEqual(["r1", "r2", "r3"]);
      for (const m of back) {
        expect(m.headers).toMatchObject({ "x-app": "7" });
        expect(Object.keys(m.headers ?? {}).filter((h) => h.startsWith("mq9-dlq-"))).toEqual([]);
        expect(m.delivery_count).toBe(1);
      }
      // A message that is no dead letter stays where it is, with a clear error.
      const plain = await box();
      const { msg_id } = await send(plain, "not a dead letter");
      expect((await t.request(Subjects.retry(plain), { msg_id })).error).toMatch(
        /^message not found: .* is not a dead letter/,
      );
      expect(texts(await t.request(Subjects.query(plain), {}))).toEqual(["not a dead letter"]);
      expect((await t.request(Subjects.retry(plain), "{bad")).error).toMatch(/invalid MSG.RETRY payload/);
      expect((await t.request(Subjects.retry("no.such.dlq"), {})).error).toBe(
        "mailbox no.such.dlq does not exist",
      );
    });
  }),
);
