import { rmSync } from "node:fs";
import { Subjects } from "@mq9/protocol";
import { describe, expect, it } from "vitest";
import type { Logger } from "../src/index.js";
import { flipByteOf, startTestBroker, tempDir, texts } from "./harness.js";

/** A logger that keeps what was logged at error level. */
function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  const none = () => {};
  return {
    errors,
    debug: none,
    info: none,
    warn: none,
    error: (obj, msg) => errors.push(typeof obj === "string" ? obj : (msg ?? "")),
  };
}

describe("stored bytes are checked on read", () => {
  it("never serves a message whose record was damaged on disk: reads of it fail, are logged and counted, the others are served", async () => {
    const dataDir = tempDir();
    const first = await startTestBroker({ dataDir });
    await first.request(Subjects.mailboxCreate, { name: "crc.box" });
    for (const text of ["message zero", "message one", "message two"]) {
      expect((await first.request(Subjects.send("crc.box"), text)).error).toBe("");
    }
    await first.close();
    flipByteOf(dataDir, "message one", 2);

    const logger = recordingLogger();
    const t = await startTestBroker({ dataDir, logger, http: { port: 0 } });
    try {
      const fetchFrom = (fromId: number, num = 10) =>
        t.request(Subjects.fetch("crc.box"), {
          deliver: "from_id",
          from_id: fromId,
          config: { num_msgs: num, max_wait_ms: 0 },
        });
      const failed = await fetchFrom(0);
      expect(failed.error).toMatch(/message 1 is corrupt on disk .*checksum.*delete it \(MSG\.DELETE\)/);
      expect(failed.messages).toBeUndefined();
      expect((await t.request(Subjects.query("crc.box"), {})).error).toMatch(/message 1 is corrupt/);
      // A group gets the error too, and nothing is leased.
      const group = { group_name: "g", deliver: "earliest", config: { max_wait_ms: 0 } };
      expect((await t.request(Subjects.fetch("crc.box"), group)).error).toMatch(/message 1 is corrupt/);
      // The messages around it are served as stored.
      expect(texts(await fetchFrom(0, 1))).toEqual(["message zero"]);
      expect(texts(await fetchFrom(2))).toEqual(["message two"]);

      const metrics = await (await fetch(`http://127.0.0.1:${t.broker.http?.port}/metrics`)).text();
      expect(metrics).toMatch(/^mq9_store_corrupt_records_total 1$/m);
      expect(logger.errors.some((m) => /does not match its checksum/.test(m))).toBe(true);

      // Deleting it lets every reader past it.
      expect((await t.request(Subjects.delete("crc.box", 1))).error).toBe("");
      expect(texts(await fetchFrom(0))).toEqual(["message zero", "message two"]);
      expect(texts(await t.request(Subjects.fetch("crc.box"), group))).toEqual([
        "message zero",
        "message two",
      ]);
    } finally {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
