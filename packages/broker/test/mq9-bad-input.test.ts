import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, type TestBroker, texts } from "./harness.js";

onEachStore((startBroker) => {
  describe("mq9 bad input", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await startBroker();
      await t.request(Subjects.mailboxCreate, { name: "bad.safe" });
      await t.request(Subjects.send("bad.safe"), "precious");
    });
    afterAll(() => t.close());

    it.each([
      "$mq9.AI.NOPE",
      "$mq9.AI.MAILBOX.LIST.bad.safe",
      "$mq9.AI.MAILBOX.INFO",
      "$mq9.AI.MSG.SEND",
      "$mq9.AI.MSG.PUBLISH.bad.safe",
      "$mq9.AI.MAILBOX.MSG.bad.safe.normal",
      "$mq9.AI.MSG.DELETE.nodot",
    ])("answers the unknown subject %s with an error reply and keeps the connection", async (subject) => {
      expect(await t.request(subject, {})).toEqual({
        error: `unrecognized mq9 subject: ${subject}`,
        code: "UNKNOWN_SUBJECT",
      });
      expect(t.nc.isClosed()).toBe(false);
    });

    it("keeps serving every client and loses nothing after a burst of bad requests", async () => {
      const other = await t.nats();
      const bad = [
        t.request(Subjects.fetch("bad.safe"), "{{{"),
        t.request(Subjects.ack("bad.safe"), "[]"),
        t.request(Subjects.query("bad.safe"), "\u0000\u0001"),
        t.request(Subjects.mailboxCreate, '{"name": 12}'),
        t.request(Subjects.send("bad.safe"), "x", { headers: { "mq9-ttl": "forever" } }),
      ];
      for (const reply of await Promise.all(bad)) expect(reply.error).not.toBe("");
      expect(texts(await t.request(Subjects.query("bad.safe"), {}, { nc: other }))).toEqual(["precious"]);
    });

    it("answers malformed agent registry bodies with a clear error", async () => {
      const reply = await t.request(Subjects.agentDiscover, "{oops");
      expect(reply.error).toMatch(/^invalid AGENT\.DISCOVER payload: malformed JSON/);
    });
  });
});
