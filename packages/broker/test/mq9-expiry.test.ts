import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, sleep, type TestBroker, texts } from "./harness.js";

/** Polls until `check` holds, or gives up after `limitMs` (a bound on waiting, not a speed check). */
async function eventually(check: () => Promise<boolean>, limitMs = 8000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not reached");
    await sleep(50);
  }
}

onEachStore((startBroker) =>
  describe("expiry and delayed delivery", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await startBroker();
    });
    afterAll(() => t.close());

    it("a delayed message answers msg_id -1, stays invisible until due, then arrives with a real id", async () => {
      await t.request(Subjects.mailboxCreate, { name: "delay.box" });
      const sentAt = Date.now();
      expect(await t.request(Subjects.send("delay.box"), "later", { headers: { "mq9-delay": "1" } })).toEqual(
        {
          error: "",
          msg_id: -1,
        },
      );
      await t.request(Subjects.send("delay.box"), "now");
      const early = texts(await t.request(Subjects.query("delay.box"), {}));
      const checkedAt = Date.now();
      if (checkedAt - sentAt < 1000) expect(early).toEqual(["now"]);
      await eventually(async () => texts(await t.request(Subjects.query("delay.box"), {})).length === 2);
      const [, later] = (await t.request(Subjects.query("delay.box"), {})).messages as { msg_id: number }[];
      expect(later.msg_id).toBe(1);
    });

    it("a due delayed message wakes a waiting long-poll", async () => {
      await t.request(Subjects.mailboxCreate, { name: "delay.wake" });
      const waiting = t.request(Subjects.fetch("delay.wake"), {
        group_name: "g",
        deliver: "earliest",
        config: { max_wait_ms: 4000 },
      });
      await t.request(Subjects.send("delay.wake"), "tick", { headers: { "mq9-delay": "1" } });
      expect(texts(await waiting)).toEqual(["tick"]);
    });

    it("a message with mq9-ttl is visible until its TTL has passed, then gone", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ttl.box" });
      const sentAt = Date.now();
      await t.request(Subjects.send("ttl.box"), "brief", { headers: { "mq9-ttl": "1" } });
      await t.request(Subjects.send("ttl.box"), "lasting");
      const seen = texts(await t.request(Subjects.query("ttl.box"), {}));
      if (Date.now() - sentAt < 1000) expect(seen).toEqual(["brief", "lasting"]);
      await eventually(async () => texts(await t.request(Subjects.query("ttl.box"), {})).length === 1);
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1000);
      expect(
        texts(
          await t.request(Subjects.fetch("ttl.box"), { deliver: "earliest", config: { max_wait_ms: 0 } }),
        ),
      ).toEqual(["lasting"]);
    });

    it("an expired mailbox is gone with its messages and groups; the name can be created again, empty", async () => {
      const sentAt = Date.now();
      await t.request(Subjects.mailboxCreate, { name: "mbox.ttl", ttl: 1 });
      await t.request(Subjects.send("mbox.ttl"), "x");
      await t.request(Subjects.fetch("mbox.ttl"), {
        group_name: "g",
        deliver: "earliest",
        config: { max_wait_ms: 0 },
      });
      await eventually(async () => (await t.request(Subjects.send("mbox.ttl"), "y")).error !== "");
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1000);
      expect(await t.request(Subjects.send("mbox.ttl"), "y")).toEqual({
        error: "mailbox mbox.ttl does not exist",
        code: "MAILBOX_NOT_FOUND",
      });
      expect((await t.request(Subjects.fetch("mbox.ttl"), {})).error).toBe("mailbox mbox.ttl does not exist");
      expect((await t.request(Subjects.query("mbox.ttl"), {})).error).toBe("mailbox mbox.ttl does not exist");
      expect((await t.request(Subjects.mailboxCreate, { name: "mbox.ttl" })).error).toBe("");
      expect(texts(await t.request(Subjects.query("mbox.ttl"), {}))).toEqual([]);
      // The old group had message 0 leased; a fresh group state lets the new message 0 through.
      await t.request(Subjects.send("mbox.ttl"), "z");
      const fresh = { group_name: "g", deliver: "earliest", config: { max_wait_ms: 0 } };
      expect(texts(await t.request(Subjects.fetch("mbox.ttl"), fresh))).toEqual(["z"]);
    });

    it("a mailbox created with ttl 0 never expires", async () => {
      await t.request(Subjects.mailboxCreate, { name: "forever", ttl: 0 });
      await sleep(1200);
      expect((await t.request(Subjects.send("forever"), "still here")).error).toBe("");
    });
  }),
);
