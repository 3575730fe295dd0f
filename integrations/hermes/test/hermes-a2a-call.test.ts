import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { connect, type Mq9Client } from "@mq9/client";
import { A2AAgent, TaskEvents } from "@mq9/client/a2a";
import { ensurePythonEnv, skipWithoutPython, userText } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type JsonLines, type Mq9Serve, mq9OnPath, mq9Serve, python, tempHome } from "./harness.js";

// biome-ignore lint/suspicious/noExplicitAny: the client prints JSON
type Json = Record<string, any>;

/** Works 35 s on each task (past a2a_call's 30 s read timeout), counting the tasks it ran. */
class ThirtyFiveSeconds implements AgentExecutor {
  runs = 0;
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    this.runs++;
    const events = new TaskEvents(context, bus);
    events.start();
    events.working("thinking");
    await new Promise((resolve) => setTimeout(resolve, 35_000));
    events.artifact(`done after 35 s: ${userText(context)}`);
    events.complete();
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

/** Asks which Python version first (input-required), then answers in the same task. */
class AsksFirst implements AgentExecutor {
  runs = 0;
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    this.runs++;
    const events = new TaskEvents(context, bus);
    events.start();
    if (!context.task) events.inputRequired("Which Python version?");
    else {
      events.artifact(`code for python ${userText(context)}`);
      events.complete();
    }
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

describe.skipIf(skipWithoutPython())("Hermes' a2a_call through the broker's A2A gateway", () => {
  let py: string;
  let broker: Mq9Serve;
  let client: Mq9Client;
  const agents: A2AAgent[] = [];
  const slow = new ThirtyFiveSeconds();
  const asks = new AsksFirst();
  const { env } = mq9OnPath();
  let hermes: JsonLines | undefined;
  const call = async (agent: string, message: string, contextId?: string) => {
    const run = python(
      py,
      "a2a_call_client.py",
      [`${broker.http}/a2a/${agent}`, message, ...(contextId ? [contextId] : [])],
      env,
    );
    const out = await run.next(() => true, 550_000);
    await run.exited;
    return out as Json;
  };

  beforeAll(async () => {
    py = await ensurePythonEnv();
    broker = await mq9Serve(env);
    client = await connect(broker.url);
    agents.push(
      await A2AAgent.start(client, {
        card: { name: "Slow Thinker", description: "Thinks for 35 seconds", skills: [] },
        executor: slow,
        onError: () => {},
      }),
      await A2AAgent.start(client, {
        card: { name: "Asking Coder", description: "Asks before it codes", skills: [] },
        executor: asks,
        onError: () => {},
      }),
    );
  }, 900_000);

  afterAll(async () => {
    await hermes?.close();
    for (const agent of agents) await agent.stop();
    await client?.close();
    await broker?.close();
  });

  it("a 35 s agent: keepalives hold the stream open, one task runs, the answer arrives on the stream", async () => {
    const out = await call("slow.thinker", "ponder");
    expect(out).toMatchObject({
      state: "TASK_STATE_COMPLETED",
      reply: "done after 35 s: ponder",
      fell_back: false,
    });
    expect(slow.runs).toBe(1);
  }, 300_000);

  it("input-required ends the call, and a follow-up carrying only the context_id continues the task", async () => {
    const first = await call("asking.coder", "write hello world");
    // The stream ends at input-required, a2a_call sends the same message again: answered from the task.
    expect(first).toMatchObject({ state: "TASK_STATE_INPUT_REQUIRED", reply: "Which Python version?" });
    expect(asks.runs).toBe(1);
    const second = await call("asking.coder", "3.12", first.context_id);
    expect(second).toMatchObject({
      state: "TASK_STATE_COMPLETED",
      reply: "code for python 3.12",
      context_id: first.context_id,
    });
    expect(asks.runs).toBe(2);
  }, 300_000);

  it("a Hermes agent served by the plugin, called with a2a_call: answer, input-required, follow-ups by context", async () => {
    hermes = python(
      py,
      "hermes_agent_harness.py",
      ["serve", "--home", tempHome(), "--server", broker.url, "--agent-id", "hermes.writer"],
      env,
    );
    await hermes.step("serving");
    const first = await call("hermes.writer", "write a haiku");
    expect(first).toMatchObject({
      state: "TASK_STATE_COMPLETED",
      reply: "stub answer: write a haiku",
      fell_back: false,
    });
    // The same context: Hermes gets the conversation so far.
    const second = await call("hermes.writer", "another one", first.context_id);
    expect(second).toMatchObject({
      state: "TASK_STATE_COMPLETED",
      reply: "stub answer: another one (turn 2)",
      context_id: first.context_id,
    });

    const asked = await call("hermes.writer", "ASK Which meter?");
    expect(asked).toMatchObject({ state: "TASK_STATE_INPUT_REQUIRED", reply: "Which meter?" });
    const answered = await call("hermes.writer", "five-seven-five", asked.context_id);
    expect(answered).toMatchObject({
      state: "TASK_STATE_COMPLETED",
      reply: "stub answer: five-seven-five (turn 2)",
    });
  }, 600_000);
});
