import { Subjects } from "@mq9/protocol";
import { describe, expect, it } from "vitest";
import { startTestBroker } from "./harness.js";
import { RawClient, waitUntil } from "./nats-harness.js";

describe("liveness — a frozen client is found dead in bounded time", () => {
  it("a client that stops answering PING while it holds a long-poll FETCH is closed as stale", async () => {
    const t = await startTestBroker({
      pingIntervalMs: 200,
      maxPingsOut: 2,
      maxWaitMs: 120_000,
      registry: false,
    });
    try {
      await t.request(Subjects.mailboxCreate, { name: "frozen.box" });
      const frozen = await RawClient.connect(t.broker.port);
      await frozen.waitFor("INFO");
      const fetch = JSON.stringify({ group_name: "g", config: { max_wait_ms: 120_000 } });
      frozen.send(
        `CONNECT {"verbose":false}\r\nSUB _INBOX.frozen.* 1\r\nPUB ${Subjects.fetch("frozen.box")} _INBOX.frozen.1 ${fetch.length}\r\n${fetch}\r\nPING\r\n`,
      );
      await frozen.waitFor("PONG");
      // From here on the client reads but never answers: every PING it gets stays unanswered.
      await frozen.waitFor("PING", 10_000);
      await frozen.waitFor("-ERR 'Stale Connection'", 10_000);
      await frozen.waitClosed(10_000);
      // The healthy client, pinged just as often, answers and stays.
      expect(t.nc.isClosed()).toBe(false);
      await waitUntil(() => t.broker.connectionCount === 1, 5000, "the frozen connection to be dropped");
      expect((await t.request(Subjects.send("frozen.box"), "after")).error).toBe("");
    } finally {
      await t.close();
    }
  });
});
