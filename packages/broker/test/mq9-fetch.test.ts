import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, sleep, type TestBroker, texts } from "./harness.js";

type Items = { msg_id: number; payload: string; priority: string }[];

onEachStore((startBroker, where) =>
  describe("MSG.FETCH", () => {
    let t: TestBroker;
    let n = 0;
    const box = async () => {
      const name = `fetch.box${n++}`;
      await t.request(Subjects.mailboxCreate, { name });
      return name;
    };
    const send = (mailbox: string, body: string, headers?: Record<string, string>) =>
      t.request(Subjects.send(mailbox), body, { headers });
    const fetch = (mailbox: string, body: Record<string, unknown>, nc = t.nc) =>
      t.request(Subjects.fetch(mailbox), { config: { max_wait_ms: 0 }, ...body }, { nc });

    beforeAll(async () => {
      t = await startBroker({ leaseMs: 30_000 });
    });
    afterAll(() => t.close());

    it("returns critical, then urgent, then normal, FIFO within each priority", async () => {
      const b = await box();
      const sends: [string, string][] = [
        ["n1", "normal"],
        ["c1", "critical"],
        ["u1", "urgent"],
        ["n2", "normal"],
        ["c2", "critical"],
        ["u2", "urgent"],
        ["n3", "normal"],
      ];
      for (const [body, priority] of sends) await send(b, body, { "mq9-priority": priority });
      expect(texts(await fetch(b, { deliver: "earliest" }))).toEqual([
        "c1",
        "c2",
        "u1",
        "u2",
        "n1",
        "n2",
        "n3",
      ]);
      expect(
        texts(
          await fetch(b, { group_name: "g", deliver: "earliest", config: { num_msgs: 3, max_wait_ms: 0 } }),
        ),
      ).toEqual(["c1", "c2", "u1"]);
    });

    it('stateless fetches store nothing: earliest returns the same batch every time; "" counts as no group', async () => {
      const b = await box();
      await send(b, "a");
      await send(b, "b");
      for (let i = 0; i < 2; i++) expect(texts(await fetch(b, { deliver: "earliest" }))).toEqual(["a", "b"]);
      expect(texts(await fetch(b, { group_name: "", deliver: "earliest" }))).toEqual(["a", "b"]);
      expect(texts(await fetch(b, { group_name: null, deliver: "earliest" }))).toEqual(["a", "b"]);
    });

    it("stateless latest returns only messages that arrive after the call, waiting for them", async () => {
      const b = await box();
      await send(b, "old");
      const pending = fetch(b, { config: { max_wait_ms: 4000 } });
      await sleep(100);
      await send(b, "new");
      expect(texts(await pending)).toEqual(["new"]);
    });

    it("a new group with latest starts at its first FETCH and keeps that position", async () => {
      const b = await box();
      await send(b, "before");
      expect(texts(await fetch(b, { group_name: "g" }))).toEqual([]);
      await send(b, "after");
      expect(texts(await fetch(b, { group_name: "g" }))).toEqual(["after"]);
    });

    it("from_id and from_time start where they say", async () => {
      const b = await box();
      const ids: number[] = [];
      for (const body of ["m0", "m1", "m2", "m3"]) ids.push((await send(b, body)).msg_id as number);
      expect(texts(await fetch(b, { deliver: "from_id", from_id: ids[2] }))).toEqual(["m2", "m3"]);
      expect(texts(await fetch(b, { group_name: "g", deliver: "from_id", from_id: ids[3] }))).toEqual(["m3"]);
      const past = Math.floor(Date.now() / 1000) - 60;
      expect(texts(await fetch(b, { deliver: "from_time", from_time: past }))).toHaveLength(4);
      const future = Math.floor(Date.now() / 1000) + 60;
      expect(texts(await fetch(b, { deliver: "from_time", from_time: future }))).toEqual([]);
      expect(texts(await fetch(b, { group_name: "t", deliver: "from_time", from_time: past }))).toHaveLength(
        4,
      );
    });

    it("num_msgs limits the batch and 0 returns an empty one", async () => {
      const b = await box();
      for (let i = 0; i < 5; i++) await send(b, `m${i}`);
      expect(texts(await fetch(b, { deliver: "earliest", config: { num_msgs: 2, max_wait_ms: 0 } }))).toEqual(
        ["m0", "m1"],
      );
      expect(texts(await fetch(b, { deliver: "earliest", config: { num_msgs: 0, max_wait_ms: 0 } }))).toEqual(
        [],
      );
    });

    it("a reply stays within the byte budget but always carries at least one message", async () => {
      const small = await startBroker({ fetchMaxBytes: 2500 });
      try {
        await small.request(Subjects.mailboxCreate, { name: "budget" });
        for (let i = 0; i < 5; i++) await small.request(Subjects.send("budget"), "x".repeat(1000));
        await small.request(Subjects.send("budget"), "y".repeat(10_000));
        const first = await small.request(Subjects.fetch("budget"), {
          group_name: "g",
          deliver: "earliest",
          config: { max_wait_ms: 0 },
        });
        expect(texts(first)).toHaveLength(2);
        const items = first.messages as Items;
        await small.request(Subjects.ack("budget"), {
          group_name: "g",
          mail_address: "budget",
          msg_id: items[1].msg_id,
        });
        const rest: string[] = [];
        for (;;) {
          const next = await small.request(Subjects.fetch("budget"), {
            group_name: "g",
            config: { max_wait_ms: 0 },
          });
          const batch = next.messages as Items;
          if (batch.length === 0) break;
          rest.push(...texts(next));
          await small.request(Subjects.ack("budget"), {
            group_name: "g",
            mail_address: "budget",
            msg_id: batch.at(-1)!.msg_id,
          });
        }
        expect(rest.map((s) => s.length)).toEqual([1000, 1000, 1000, 10_000]);
      } finally {
        await small.close();
      }
    });

    it("long-poll wakes the moment a matching message is stored", async () => {
      const b = await box();
      const waiting = fetch(b, { group_name: "g", deliver: "earliest", config: { max_wait_ms: 4000 } });
      await sleep(150);
      await send(b, "wake up");
      expect(texts(await waiting)).toEqual(["wake up"]);
    });

    it("long-poll with nothing arriving answers an empty batch after max_wait_ms", async () => {
      const b = await box();
      expect(await fetch(b, { group_name: "g", config: { max_wait_ms: 200 } })).toEqual({
        error: "",
        messages: [],
      });
    });

    it("competing members of one group never receive the same leased message", async () => {
      const b = await box();
      for (let i = 0; i < 40; i++) await send(b, `job${i}`);
      const clients = await Promise.all([t.nats(), t.nats(), t.nats(), t.nats()]);
      const batches = await Promise.all(
        clients.map((nc) =>
          fetch(
            b,
            { group_name: "workers", deliver: "earliest", config: { num_msgs: 10, max_wait_ms: 0 } },
            nc,
          ),
        ),
      );
      const seen = batches.flatMap(texts);
      expect(seen).toHaveLength(40);
      expect(new Set(seen).size).toBe(40);
      expect(await fetch(b, { group_name: "workers" })).toEqual({ error: "", messages: [] });
    });

    // A cluster node does not see its clients' sockets: it claims, then gives the leases back
    // once NATS says the reply reached no one (packages/cli/test/cluster.test.ts, "fetch — a
    // long-poll whose client's socket was cut").
    it.skipIf(where.cluster)("a long-poll of a client that disconnected claims nothing", async () => {
      const b = await box();
      const leaving = await t.nats();
      const pending = fetch(
        b,
        { group_name: "g", deliver: "earliest", config: { max_wait_ms: 4000 } },
        leaving,
      ).catch(() => undefined);
      await sleep(100);
      await leaving.close();
      await pending;
      await sleep(100);
      await send(b, "for the living");
      expect(texts(await fetch(b, { group_name: "g" }))).toEqual(["for the living"]);
    });

    it("an un-ACKed message comes back after its lease, to any member", async () => {
      const b = await box();
      await send(b, "retry me");
      const first = await fetch(b, {
        group_name: "g",
        deliver: "earliest",
        config: { max_wait_ms: 0, lease_ms: 200 },
      });
      expect(texts(first)).toEqual(["retry me"]);
      expect(texts(await fetch(b, { group_name: "g" }))).toEqual([]);
      await sleep(300);
      const other = await t.nats();
      expect(texts(await fetch(b, { group_name: "g" }, other))).toEqual(["retry me"]);
    });

    it("independent groups each receive every message", async () => {
      const b = await box();
      for (const body of ["a", "b", "c"]) await send(b, body);
      for (const group of ["g1", "g2"]) {
        expect(texts(await fetch(b, { group_name: group, deliver: "earliest" }))).toEqual(["a", "b", "c"]);
      }
    });

    it("force_deliver restarts a group from its deliver policy", async () => {
      const b = await box();
      for (const body of ["a", "b"]) await send(b, body);
      const batch = (await fetch(b, { group_name: "g", deliver: "earliest" })).messages as Items;
      await t.request(Subjects.ack(b), { group_name: "g", mail_address: b, msg_id: batch[1].msg_id });
      expect(texts(await fetch(b, { group_name: "g", deliver: "earliest" }))).toEqual([]);
      expect(texts(await fetch(b, { group_name: "g", deliver: "earliest", force_deliver: true }))).toEqual([
        "a",
        "b",
      ]);
    });

    it("refuses an unknown mailbox and bad bodies with clear errors", async () => {
      const missing = { error: "mailbox no.box does not exist", code: "MAILBOX_NOT_FOUND" };
      expect(await fetch("no.box", {})).toEqual(missing);
      // A group FETCH too, at once however long it may wait (the request's timeout is shorter).
      const groupFetch = { group_name: "g", config: { max_wait_ms: 30_000 } };
      expect(await t.request(Subjects.fetch("no.box"), groupFetch, { timeout: 10_000 })).toEqual(missing);
      for (const deliver of ["earliest", "latest", "from_id"]) {
        expect(await fetch("no.box", { group_name: "g", deliver, from_id: 0 })).toEqual(missing);
      }
      expect(await fetch("no.box", { group_name: "g", config: { num_msgs: 0 } })).toEqual(missing);
      const b = await box();
      const bad = async (body: string) => (await t.request(Subjects.fetch(b), body)).error;
      expect(await bad("")).toBe("invalid MSG.FETCH payload: the body is empty; send a JSON object");
      expect(await bad("{oops")).toMatch(/^invalid MSG\.FETCH payload: malformed JSON/);
      expect(await bad('{"deliver":"newest"}')).toBe(
        "invalid MSG.FETCH payload: 'deliver' must be one of earliest, latest, from_time, from_id, got 'newest'",
      );
      expect(await bad('{"config":{"num_msgs":-1}}')).toBe(
        "invalid MSG.FETCH payload: 'num_msgs' must be a non-negative integer, got -1",
      );
      expect(await bad('{"force_deliver":"yes"}')).toBe(
        "invalid MSG.FETCH payload: 'force_deliver' must be true or false",
      );
    });
  }),
);
