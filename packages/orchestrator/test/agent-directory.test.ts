import type { Mq9Client } from "@mq9/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentDirectory, ORCHESTRATED_TAG } from "../src/index.js";
import { startWorld, until, type World } from "./harness.js";

const orchestrated = {
  name: "dir-worker",
  mailbox: "agent.dir.worker",
  tags: [ORCHESTRATED_TAG],
  ttl: 60,
  agent_manifest: { capabilities: ["dir.work"], weight: 1, max_concurrency: 1, heartbeat_ms: 1000 },
};
const plain = { name: "dir-plain", mailbox: "agent.dir.plain", payload: "a plain A2A agent" };

describe("agent directory", () => {
  let world: World;
  let client: Mq9Client;
  beforeAll(async () => {
    world = await startWorld();
    client = await world.client();
  });
  afterAll(() => world.close());

  it("re-reads only the orchestrated agents each refresh, and everyone on a full read", async () => {
    await client.register(orchestrated);
    await client.register(plain);
    const directory = new AgentDirectory(client, { refreshMs: 50, fullRefreshMs: 3_600_000 });
    await directory.start();
    try {
      expect(directory.list().map((a) => [a.name, a.alive])).toEqual([
        ["dir-plain", true],
        ["dir-worker", true],
      ]);
      await client.unregister({ mailbox: orchestrated.mailbox });
      await client.unregister({ mailbox: plain.mailbox });
      // The quick refreshes notice the orchestrated agent leaving...
      await until("the worker is seen gone", () => directory.get("dir-worker")?.alive === false);
      // ...and never ask for the others, which only a full read does.
      expect(directory.get("dir-plain")?.alive).toBe(true);
      await directory.refresh({ full: true });
      expect(directory.get("dir-plain")?.alive).toBe(false);
    } finally {
      await directory.stop();
    }
  });
});
