import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnvelope, type Orchestrator, sendEnvelope } from "../src/index.js";
import { startWorld, until, type World } from "./harness.js";

describe("the trace of a long trace", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    world = await startWorld();
    orchestrator = await world.startOrchestrator();
  });
  afterAll(() => world.close());

  it("keeps its beginning past 100 messages per mailbox, and pages", async () => {
    let sunk = 0;
    await world.agent({ name: "t-sink", capabilities: [], max_concurrency: 16 }, (m) => {
      if (m.msg_type === "query") sunk++;
    });
    await world.agent({ name: "t-fan", capabilities: [] }, async (m, context) => {
      if (m.msg_type !== "query") return;
      for (let i = 0; i < 150; i++) await context.send({ target: "t-sink", payload: i });
    });
    const client = await world.client();
    const start = createEnvelope({ msg_type: "query", source: "tester", target: "t-fan", payload: "go" });
    await sendEnvelope(client, orchestrator.names.router, start);
    await until("the sink to get all 150", () => sunk === 150, 60_000);
    // 1 + 150 in the router mailbox, 1 in t-fan's, 150 in t-sink's.
    const whole = await orchestrator.trace(start.trace_id);
    expect(whole.total).toBe(302);
    expect(whole.messages[0]).toMatchObject({ msg_id: start.msg_id, mailbox: orchestrator.names.router });
    const sinkPayloads = whole.messages.filter((m) => m.mailbox === "agent.t.sink").map((m) => m.payload);
    expect(new Set(sinkPayloads).size).toBe(150);
    const page = await orchestrator.trace(start.trace_id, { offset: 300, limit: 100 });
    expect(page).toMatchObject({ total: 302 });
    expect(page.messages).toHaveLength(2);
    expect(page.next_offset).toBeUndefined();
    const first = await orchestrator.trace(start.trace_id, { limit: 100 });
    expect(first.next_offset).toBe(100);
  }, 90_000);
});
