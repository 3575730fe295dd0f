import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onEachStore, type TestBroker } from "./harness.js";

type Discovered = { error: string; agents: { name: string }[]; warning?: string };

// The design's invariant: a client reads its own writes wherever its next request lands. In a
// cluster, the REGISTER goes through one nats-server and the DISCOVER through the other, so NATS
// hands about half of the pairs to two different nodes.
onEachStore((startBroker) => {
  describe("AGENT.REGISTER then AGENT.DISCOVER", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await startBroker({ registry: { embedder: "none" } });
    });
    afterAll(() => t.close());

    it("300 DISCOVERs, each right after its REGISTER from another connection, find the agent by mailbox, name and text", async () => {
      const other = await t.nats();
      const misses: string[] = [];
      for (let i = 0; i < 300; i++) {
        const name = `reads-${i}`;
        const mailbox = `reads.agent${i}.inbox`;
        const word = `qx${i.toString(36)}term`;
        const registered = await t.request(Subjects.agentRegister, {
          name,
          mailbox,
          payload: `answers ${word} questions`,
        });
        expect(registered.error).toBe("");
        const queries = { mailbox: { mailbox }, name: { name }, text: { text: word } };
        for (const [by, query] of Object.entries(queries)) {
          const reply = await t.request<Discovered>(Subjects.agentDiscover, query, { nc: other });
          expect(reply.warning).toBeUndefined();
          if (!reply.agents.some((agent) => agent.name === name)) misses.push(`${name} by ${by}`);
        }
      }
      expect(misses).toEqual([]);
    }, 120_000);
  });
});
