import { Errors, Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, type TestBroker } from "./harness.js";

onEachStore((startBroker) => {
  describe("MAILBOX.CREATE", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await startBroker();
    });
    afterAll(() => t.close());

    it("creates a named mailbox and echoes its address", async () => {
      expect(await t.request(Subjects.mailboxCreate, { name: "demo.agent.inbox", ttl: 0 })).toEqual({
        error: "",
        mail_address: "demo.agent.inbox",
      });
    });

    it("generates a 26-character lowercase base32hex name when none is given (empty body too)", async () => {
      const a = await t.request<{ mail_address: string }>(Subjects.mailboxCreate, { ttl: 60 });
      const b = await t.request<{ mail_address: string }>(Subjects.mailboxCreate);
      for (const reply of [a, b]) {
        expect(reply.error).toBe("");
        expect(reply.mail_address).toMatch(/^[0-9a-v]{26}$/);
      }
      expect(a.mail_address).not.toBe(b.mail_address);
    });

    it("refuses a duplicate with the reference text", async () => {
      await t.request(Subjects.mailboxCreate, { name: "dup.box" });
      expect(await t.request(Subjects.mailboxCreate, { name: "dup.box" })).toEqual({
        error: "mailbox dup.box already exists",
        code: "MAILBOX_EXISTS",
      });
    });

    it.each([
      ["", Errors.emptyName],
      ["Upper", Errors.badNameChars],
      ["has-hyphen", Errors.badNameChars],
      ["spa ce", Errors.badNameChars],
      ["ümlaut", Errors.badNameChars],
      [".lead", Errors.badNameEnds],
      ["trail.", Errors.badNameEnds],
      ["a..b", Errors.consecutiveDots],
      ["a".repeat(129), Errors.nameTooLong],
    ])("rejects the name %j with a clear error", async (name, error) => {
      expect(await t.request(Subjects.mailboxCreate, { name })).toEqual({ error, code: "INVALID_NAME" });
    });

    it("accepts the longest valid name", async () => {
      const name = "a".repeat(128);
      expect((await t.request(Subjects.mailboxCreate, { name })).error).toBe("");
    });

    it.each([
      ["{not json", "malformed JSON"],
      ['{"ttl":-1}', "'ttl' must be a non-negative integer"],
      ['{"ttl":"60"}', "'ttl' must be a non-negative integer"],
      ['{"name":5}', "'name' must be a string"],
      ["[1,2]", "expected a JSON object"],
    ])("answers a bad body %s with an error and keeps the connection", async (body, reason) => {
      const reply = await t.request(Subjects.mailboxCreate, body);
      expect(reply.error).toMatch(/^invalid MAILBOX\.CREATE payload: /);
      expect(reply.error).toContain(reason);
      expect(t.nc.isClosed()).toBe(false);
    });
  });
});
