import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Orchestrator, TaskState } from "../src/index.js";
import { gate, startWorld, until, type World } from "./harness.js";

const templates: Record<string, string> = {
  "pipeline.yaml": `name: pipeline
steps:
  - id: upper
    capability: p.upper
  - id: exclaim
    capability: p.exclaim
    depends_on: upper
  - id: wrap
    agent: p-wrapper
    depends_on: exclaim
`,
  "fanout.yaml": `name: fanout
steps:
  - id: a
    capability: f.a
  - id: b
    capability: f.b
  - id: c
    capability: f.c
  - id: all
    merge: [a, b, c]
`,
  "dag.yaml": `name: dag
steps:
  - id: fetch
    capability: d.fetch
  - id: left
    capability: d.left
    depends_on: fetch
  - id: right
    capability: d.right
    depends_on: fetch
  - id: joined
    merge: [left, right]
  - id: report
    capability: d.report
    depends_on: joined
`,
  "when.yaml": `name: when
steps:
  - id: score
    capability: w.score
  - id: publish
    capability: w.publish
    when: "outputs.score.value >= 0.5"
  - id: archive
    capability: w.archive
    when: "outputs.score.value < 0.5 || payload.force == true"
`,
  "optional.yaml": `name: optional
steps:
  - id: good
    capability: o.good
  - id: flaky
    capability: o.flaky
    optional: true
  - id: merged
    merge: [good, flaky]
`,
  "retry.yaml": `name: retry
steps:
  - id: shaky
    capability: r.shaky
    retry: { count: 2, backoff: 50ms }
`,
  "timeout.yaml": `name: timeout
steps:
  - id: slow
    capability: t.slow
    timeout: 300ms
`,
  "saga.yaml": `name: saga
steps:
  - id: reserve
    capability: s.work
    compensate: s-undo
  - id: charge
    capability: s.work
    depends_on: reserve
    compensate: { agent: s-undo }
  - id: notify
    capability: s.quiet
    depends_on: charge
  - id: ship
    capability: s.work
    depends_on: notify
    compensate: { capability: s.undo }
  - id: confirm
    capability: s.fail
    depends_on: ship
`,
  "cancel.yaml": `name: cancel
steps:
  - id: first
    capability: c.quick
    compensate: c-undo
  - id: long
    capability: c.long
    depends_on: first
  - id: never
    capability: c.quick
    depends_on: long
`,
  "memory.yaml": `name: memory
steps:
  - id: write
    capability: m.write
  - id: read
    capability: m.read
    depends_on: write
`,
};

describe("scheduler", () => {
  let world: World;
  let orchestrator: Orchestrator;
  const run = async (type: string, payload: unknown): Promise<TaskState> => {
    const task = await orchestrator.submit(type, payload);
    return orchestrator.wait(task.task_id, 20_000);
  };

  beforeAll(async () => {
    world = await startWorld({ templates });
    orchestrator = await world.startOrchestrator();
  });
  afterAll(() => world.close());

  it("pipeline — each step gets the previous step's output", async () => {
    await world.agent({ name: "p-upper", capabilities: ["p.upper"] }, (m) => String(m.payload).toUpperCase());
    await world.agent({ name: "p-exclaim", capabilities: ["p.exclaim"] }, (m) => `${m.payload}!`);
    await world.agent({ name: "p-wrapper", capabilities: [] }, (m, _c, agent) =>
      agent.reply(m, "result", { text: `[${m.payload}]` }),
    );
    const task = await run("pipeline", "hello");
    expect(task.status).toBe("completed");
    expect(task.result).toEqual({ text: "[HELLO!]" });
    expect(task.steps.upper).toMatchObject({
      status: "completed",
      agent: "p-upper",
      attempts: 1,
      output: "HELLO",
    });
    expect(task.steps.wrap.agent).toBe("p-wrapper");
  });

  it("fan-out — independent steps run in parallel, then merge", async () => {
    const started = new Set<string>();
    const all = gate();
    for (const name of ["a", "b", "c"]) {
      await world.agent({ name: `f-${name}`, capabilities: [`f.${name}`] }, async (m) => {
        started.add(name);
        if (started.size === 3) all.open();
        // Each branch waits for the other two to have started: only parallel dispatch gets past this.
        await all.promise;
        return { branch: name, input: m.payload };
      });
    }
    const task = await run("fanout", { doc: 1 });
    expect(task.status).toBe("completed");
    expect(task.result).toEqual({
      a: { branch: "a", input: { doc: 1 } },
      b: { branch: "b", input: { doc: 1 } },
      c: { branch: "c", input: { doc: 1 } },
    });
  });

  it("DAG with merge — a diamond: both branches read the root, the merge feeds the last step", async () => {
    await world.agent({ name: "d-fetch", capabilities: ["d.fetch"] }, (m) => ({ text: `doc ${m.payload}` }));
    await world.agent(
      { name: "d-left", capabilities: ["d.left"] },
      (m) => `L(${(m.payload as { text: string }).text})`,
    );
    await world.agent(
      { name: "d-right", capabilities: ["d.right"] },
      (m) => `R(${(m.payload as { text: string }).text})`,
    );
    await world.agent({ name: "d-report", capabilities: ["d.report"] }, (m) => ({ report: m.payload }));
    const task = await run("dag", 7);
    expect(task.status).toBe("completed");
    expect(task.steps.joined.output).toEqual({ left: "L(doc 7)", right: "R(doc 7)" });
    expect(task.result).toEqual({ report: { left: "L(doc 7)", right: "R(doc 7)" } });
    const { completed_order: order } = task;
    expect(order.indexOf("joined")).toBeGreaterThan(Math.max(order.indexOf("left"), order.indexOf("right")));
  });

  it("when — a step runs or is skipped by a condition on earlier outputs and the payload", async () => {
    await world.agent({ name: "w-score", capabilities: ["w.score"] }, (m) => ({
      value: (m.payload as { score: number }).score,
    }));
    await world.agent({ name: "w-publish", capabilities: ["w.publish"] }, () => "published");
    await world.agent({ name: "w-archive", capabilities: ["w.archive"] }, () => "archived");
    const high = await run("when", { score: 0.9 });
    expect(high.status).toBe("completed");
    expect([high.steps.publish.status, high.steps.archive.status]).toEqual(["completed", "skipped"]);
    const low = await run("when", { score: 0.1 });
    expect([low.steps.publish.status, low.steps.archive.status]).toEqual(["skipped", "completed"]);
    const forced = await run("when", { score: 0.9, force: true });
    expect([forced.steps.publish.status, forced.steps.archive.status]).toEqual(["completed", "completed"]);
  });

  it("optional — a failed optional branch does not fail the task; the merge leaves it out", async () => {
    await world.agent({ name: "o-good", capabilities: ["o.good"] }, () => "fine");
    await world.agent({ name: "o-flaky", capabilities: ["o.flaky"] }, () => {
      throw new Error("flaky broke");
    });
    const task = await run("optional", null);
    expect(task.status).toBe("completed");
    expect(task.steps.flaky).toMatchObject({ status: "failed", error: "flaky broke" });
    expect(task.result).toEqual({ good: "fine" });
  });

  it("retry — failed attempts are retried with backoff until one succeeds", async () => {
    let calls = 0;
    await world.agent({ name: "r-shaky", capabilities: ["r.shaky"] }, () => {
      calls++;
      if (calls < 3) throw new Error(`attempt ${calls} failed`);
      return "third time lucky";
    });
    const task = await run("retry", null);
    expect(task.status).toBe("completed");
    expect(task.result).toBe("third time lucky");
    expect(task.steps.shaky.attempts).toBe(3);
    expect(task.steps.shaky.history.map((h) => [h.outcome, h.error])).toEqual([
      ["failed", "attempt 1 failed"],
      ["failed", "attempt 2 failed"],
      ["completed", undefined],
    ]);
    const [first, second] = task.steps.shaky.history;
    // The second attempt waited for the backoff after the first failed (less a clock tick).
    expect(second.started_at - first.finished_at).toBeGreaterThanOrEqual(45);
  });

  it("timeout — a step without an answer in time times out the task and the agent is told to stop", async () => {
    const aborted = gate<string>();
    await world.agent({ name: "t-slow", capabilities: ["t.slow"] }, async (_m, context) => {
      await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
      aborted.open("aborted");
    });
    const task = await run("timeout", null);
    expect(task.status).toBe("timeout");
    expect(task.steps.slow).toMatchObject({ status: "timeout", error: "no answer within 300 ms" });
    expect(task.error).toBe("step 'slow' timed out: no answer within 300 ms");
    expect(await aborted.promise).toBe("aborted");
  });

  it("compensation — a later failure undoes the completed steps in reverse order (saga)", async () => {
    const undone: string[] = [];
    await world.agent(
      { name: "s-worker", capabilities: ["s.work", "s.quiet"], max_concurrency: 4 },
      (m) => `did ${m.step_id}`,
    );
    await world.agent({ name: "s-failer", capabilities: ["s.fail"] }, () => {
      throw new Error("the warehouse is on fire");
    });
    const undo = (m: { msg_type: string; payload: unknown }) => {
      expect(m.msg_type).toBe("compensate");
      const { step_id, output } = m.payload as { step_id: string; output: string };
      undone.push(`${step_id}:${output}`);
      return { undone: step_id };
    };
    await world.agent({ name: "s-undo", capabilities: ["s.undo"] }, undo);
    const task = await run("saga", null);
    expect(task.status).toBe("failed");
    expect(task.error).toBe("step 'confirm' failed: the warehouse is on fire");
    await until(
      "compensation to finish",
      async () => (await orchestrator.task(task.task_id))?.compensation_status === "completed",
    );
    expect(undone).toEqual(["ship:did ship", "charge:did charge", "reserve:did reserve"]);
    const final = (await orchestrator.task(task.task_id))!;
    expect(final.compensations.map((c) => [c.step_id, c.status])).toEqual([
      ["ship", "completed"],
      ["charge", "completed"],
      ["reserve", "completed"],
    ]);
  });

  it("cancel — stops a running task, cancels its steps, compensates what completed; a second cancel is refused", async () => {
    const holding = gate();
    const stopped = gate<string>();
    const undone: string[] = [];
    await world.agent({ name: "c-quick", capabilities: ["c.quick"] }, () => "quick");
    await world.agent({ name: "c-long", capabilities: ["c.long"] }, async (_m, context) => {
      holding.open();
      await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
      stopped.open("stopped");
    });
    await world.agent({ name: "c-undo", capabilities: [] }, (m) => {
      undone.push((m.payload as { step_id: string }).step_id);
      return "ok";
    });
    const task = await orchestrator.submit("cancel", null);
    await holding.promise;
    const canceled = await orchestrator.cancel(task.task_id);
    expect(canceled.status).toBe("canceled");
    expect([canceled.steps.first.status, canceled.steps.long.status, canceled.steps.never.status]).toEqual([
      "completed",
      "canceled",
      "canceled",
    ]);
    expect(await stopped.promise).toBe("stopped");
    await until("the completed step to be compensated", () => undone.length === 1);
    expect(undone).toEqual(["first"]);
    await expect(orchestrator.cancel(task.task_id)).rejects.toMatchObject({
      code: "TASK_FINISHED",
      message: `task ${task.task_id} is already canceled; only a pending or running task can be canceled`,
    });
  });

  it("memory — steps of one trace share memory kept in a compacted mq9 mailbox", async () => {
    await world.agent({ name: "m-writer", capabilities: ["m.write"] }, async (_m, context) => {
      await context.memory.set("draft", { v: 1 });
      await context.memory.set("draft", { v: 2 });
      return "written";
    });
    await world.agent({ name: "m-reader", capabilities: ["m.read"] }, async (_m, context) => ({
      draft: await context.memory.get("draft"),
      payload: await context.memory.get("payload"),
      missing: (await context.memory.get("nothing")) ?? null,
    }));
    const task = await run("memory", { topic: "mq9" });
    expect(task.result).toEqual({ draft: { v: 2 }, payload: { topic: "mq9" }, missing: null });
    const client = await world.client();
    const stored = await client.query(orchestrator.names.memory(task.trace_id));
    // Compaction keeps one message per key.
    expect(stored.map((m) => m.key).sort()).toEqual(["mem.draft", "mem.payload"]);
  });

  it("unknown task type — refused with the known types", async () => {
    await expect(orchestrator.submit("no-such-type", {})).rejects.toMatchObject({
      code: "UNKNOWN_TASK_TYPE",
      message: expect.stringMatching(/^unknown task type 'no-such-type'; known types: cancel, dag, /),
    });
  });
});
