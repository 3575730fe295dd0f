import { OtlpReceiver, type ReceivedSpan, registerTestTracing, type TestTracing } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Orchestrator } from "../src/index.js";
import { startWorld, type World } from "./harness.js";

const PRODUCER = 4;
const CONSUMER = 5;

const templates = {
  "traced.yaml": `name: traced
steps:
  - id: upper
    capability: tr.upper
  - id: exclaim
    capability: tr.exclaim
    depends_on: upper
  - id: wrap
    capability: tr.wrap
    depends_on: exclaim
`,
};

describe("OpenTelemetry: a task, its steps and hops as one trace", () => {
  let receiver: OtlpReceiver;
  let tracing: TestTracing;
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    tracing = registerTestTracing(receiver.url, "agents");
    world = await startWorld({ templates, broker: { telemetry: { otlpEndpoint: receiver.url } } });
    orchestrator = await world.startOrchestrator();
  });
  afterAll(async () => {
    await world.close();
    await tracing.shutdown();
    await receiver.close();
  });

  it("a three-step task: task → steps → hops → SEND → the agent's handling, in the envelope's trace", async () => {
    await world.agent({ name: "tr-upper", capabilities: ["tr.upper"] }, (m) =>
      String(m.payload).toUpperCase(),
    );
    await world.agent({ name: "tr-exclaim", capabilities: ["tr.exclaim"] }, (m) => `${m.payload}!`);
    await world.agent({ name: "tr-wrap", capabilities: ["tr.wrap"] }, (m) => `[${m.payload}]`);
    const submitted = await orchestrator.submit("traced", "hi");
    const task = await orchestrator.wait(submitted.task_id, 20_000);
    expect(task.status).toBe("completed");
    await tracing.flush();
    await world.broker.telemetry?.flush();

    const inTrace = (s: ReceivedSpan) => s.traceId === task.trace_id;
    const childOf = (parent: ReceivedSpan) => (s: ReceivedSpan) =>
      inTrace(s) && s.parentSpanId === parent.spanId;
    const root = await receiver.span("task traced", (s) => s.name === "task traced");
    expect(root.traceId).toBe(task.trace_id);
    expect(root.attributes).toMatchObject({
      "mq9.task.id": task.task_id,
      "mq9.task.type": "traced",
      "mq9.task.status": "completed",
    });
    // The dashboard's timeline and the span agree on when the task ran.
    expect(Math.round(root.startMs)).toBe(task.created_at);
    expect(Math.round(root.endMs)).toBe(task.finished_at);

    for (const [id, agent] of [
      ["upper", "tr-upper"],
      ["exclaim", "tr-exclaim"],
      ["wrap", "tr-wrap"],
    ] as const) {
      const step = await receiver.span(`step ${id}`, (s) => s.name === `step ${id}` && childOf(root)(s));
      expect(step.attributes).toMatchObject({
        "mq9.step.id": id,
        "mq9.step.status": "completed",
        "mq9.agent": agent,
      });
      expect(Math.round(step.startMs)).toBe(task.steps[id].started_at);
      expect(Math.round(step.endMs)).toBe(task.steps[id].finished_at);

      const hop = await receiver.span(
        `the hop of ${id}`,
        (s) => s.name === `hop ${id} → ${agent}` && childOf(step)(s),
      );
      expect(hop.attributes).toMatchObject({
        "mq9.agent": agent,
        "mq9.hop.attempt": 1,
        "mq9.hop.outcome": "completed",
      });

      const send = await receiver.span(`the SEND of ${id}`, (s) => s.kind === PRODUCER && childOf(hop)(s));
      expect(send.attributes["messaging.system"]).toBe("mq9");
      await receiver.span(`the broker's SEND of ${id}`, (s) => s.name === "mq9 msg.send" && childOf(send)(s));
      const handled = await receiver.span(
        `${agent} handling it`,
        (s) => s.kind === CONSUMER && childOf(send)(s),
      );
      expect(handled.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    }
  });
});
