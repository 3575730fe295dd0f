import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  BusNames,
  createEnvelope,
  newId,
  type Orchestrator,
  sendEnvelope,
  type TaskState,
  TaskStore,
} from "../src/index.js";
import { gate, startWorld, until, type World } from "./harness.js";

const twoSteps = `name: two-steps
steps:
  - id: slow
    agent: rs-slow
  - id: next
    agent: rs-next
    depends_on: slow
`;

describe("orchestrator restart", () => {
  let world: World;
  const calls = { slow: 0, next: 0 };
  let release = gate();
  let started = gate();

  beforeEach(async () => {
    world = await startWorld({ templates: { "two.yaml": twoSteps } });
    calls.slow = 0;
    calls.next = 0;
    release = gate();
    started = gate();
    await world.agent({ name: "rs-slow", capabilities: [] }, async (m) => {
      calls.slow++;
      started.open();
      await release.promise;
      return `slow(${m.payload})`;
    });
    await world.agent({ name: "rs-next", capabilities: [] }, (m) => {
      calls.next++;
      return `next(${m.payload})`;
    });
  });
  afterEach(() => world.close());

  async function restart(first: Orchestrator): Promise<Orchestrator> {
    await first.close();
    return world.startOrchestrator();
  }

  it("resumes a running task: the reply that came while it was down is picked up, no step runs twice", async () => {
    const first = await world.startOrchestrator();
    const task = await first.submit("two-steps", "x");
    await started.promise;
    await first.close();
    release.open();
    // The answer waits in the orchestrator's inbox while nobody reads it.
    const second = await world.startOrchestrator();
    const done = await second.wait(task.task_id, 20_000);
    expect(done.status).toBe("completed");
    expect(done.result).toBe("next(slow(x))");
    expect(calls).toEqual({ slow: 1, next: 1 });
    expect(done.steps.slow.attempts).toBe(1);
  });

  it("resumes a running task whose answer comes after the restart", async () => {
    const first = await world.startOrchestrator();
    const task = await first.submit("two-steps", "y");
    await started.promise;
    const second = await restart(first);
    expect((await second.task(task.task_id))?.steps.slow.status).toBe("running");
    release.open();
    const done = await second.wait(task.task_id, 20_000);
    expect(done.result).toBe("next(slow(y))");
    expect(calls).toEqual({ slow: 1, next: 1 });
  });

  /** A task as the store holds it after a crash right after writing a dispatch, before or after sending it. */
  async function crashedWhileDispatching(sent: boolean): Promise<TaskState> {
    const client = await world.client();
    const names = new BusNames();
    const store = new TaskStore(client, names);
    // The orchestrator ran before the crash, so its mailboxes exist.
    for (const name of [names.inbox, names.router, names.tasks, names.deadLetters]) {
      await client.createMailbox({ name });
    }
    const now = Date.now();
    const msgId = newId();
    const task: TaskState = {
      task_id: newId(),
      task_type: "two-steps",
      trace_id: newId(),
      status: "dispatching",
      priority: "normal",
      payload: "z",
      created_at: now,
      updated_at: now,
      order: ["slow", "next"],
      steps: {
        slow: {
          id: "slow",
          status: "dispatching",
          attempts: 1,
          agent: "rs-slow",
          dispatch: { msg_id: msgId, agent: "rs-slow", mailbox: "agent.rs.slow", created_at: now },
          history: [],
        },
        next: { id: "next", status: "pending", attempts: 0, history: [] },
      },
      completed_order: [],
      compensations: [],
      revision: 0,
    };
    await store.save(task);
    if (sent) {
      const envelope = createEnvelope({
        msg_type: "query",
        source: "orchestrator",
        target: "rs-slow",
        payload: "z",
        trace_id: task.trace_id,
        reply_to: names.inbox,
        task_id: task.task_id,
        step_id: "slow",
      });
      envelope.msg_id = msgId;
      envelope.created_at = now;
      await sendEnvelope(client, "agent.rs.slow", envelope, { key: `q.${msgId}` });
    }
    return task;
  }

  for (const sent of [false, true]) {
    it(`a crash between writing a dispatch and ${sent ? "after" : "before"} sending it: the step runs exactly once`, async () => {
      const task = await crashedWhileDispatching(sent);
      release.open();
      const orchestrator = await world.startOrchestrator();
      const done = await orchestrator.wait(task.task_id, 20_000);
      expect(done.status).toBe("completed");
      expect(done.result).toBe("next(slow(z))");
      expect(calls).toEqual({ slow: 1, next: 1 });
      const client = await world.client();
      const inbox = await client.query("agent.rs.slow", { key: `q.${task.steps.slow.dispatch!.msg_id}` });
      expect(inbox).toHaveLength(1);
    });
  }

  it("a timeout armed before the restart still fires after it", async () => {
    world.template(
      "short.yaml",
      `name: short
timeout: 400ms
steps:
  - id: slow
    agent: rs-slow
`,
    );
    const first = await world.startOrchestrator();
    await until("the new template", () => first.templates.get("short"));
    const task = await first.submit("short", "t");
    await started.promise;
    const second = await restart(first);
    const done = await second.wait(task.task_id, 20_000);
    expect(done.status).toBe("timeout");
    expect(done.error).toMatch(/^the task did not finish within its timeout of 0.4 s$/);
    release.open();
  });
});
