import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { connect, type Mq9Client } from "@mq9/client";
import { A2AAgent, TaskEvents } from "@mq9/client/a2a";
import { CoderExecutor, coderCard, startBroker, type TestBroker, userText } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mountA2AGateway } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

/** Finishes a task only when the test opens the gate; counts the tasks it ran. */
class Gate implements AgentExecutor {
  runs = 0;
  private open!: () => void;
  private opened = new Promise<void>((resolve) => {
    this.open = resolve;
  });
  release(): void {
    this.open();
  }
  reset(): void {
    this.opened = new Promise<void>((resolve) => {
      this.open = resolve;
    });
  }
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    this.runs++;
    const events = new TaskEvents(context, bus);
    events.start();
    events.working();
    await this.opened;
    events.artifact(`done: ${userText(context)}`);
    events.complete();
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

const message = (text: string, extra: Json = {}) => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});

/** Reads an SSE response as it comes: comments and data events in order. */
async function* sse(response: Response): AsyncGenerator<{ comment?: string; data?: Json }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let at = buffer.indexOf("\n\n");
    while (at >= 0) {
      const frame = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (frame.startsWith(":")) yield { comment: frame.slice(1).trim() };
      else if (frame.startsWith("data:")) yield { data: JSON.parse(frame.slice(5)) };
      at = buffer.indexOf("\n\n");
    }
  }
}

describe("A2A gateway: keepalives, repeated sends, context-only follow-ups", () => {
  let t: TestBroker;
  let base: string;
  let client: Mq9Client;
  const gate = new Gate();
  const agents: A2AAgent[] = [];
  const gatedCard = { name: "Gated", description: "Finishes when told", skills: [] };

  const post = (agent: string, method: string, params: Json, id: unknown = 1) =>
    fetch(`${base}/${agent}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });

  beforeAll(async () => {
    let url = "";
    t = await startBroker({
      http: {
        port: 0,
        routes: (app) =>
          mountA2AGateway(app, { client: () => connect(url), timeoutMs: 20_000, keepaliveMs: 150 }),
      },
    });
    url = t.url;
    base = `http://127.0.0.1:${t.broker.http!.port}/a2a`;
    client = await t.client();
    agents.push(
      await A2AAgent.start(client, { card: gatedCard, executor: gate, onError: () => {} }),
      await A2AAgent.start(client, { card: coderCard, executor: new CoderExecutor(), onError: () => {} }),
    );
  });

  afterAll(async () => {
    gate.release();
    for (const agent of agents) await agent.stop();
    await t.close();
  });

  it("the card says streaming; an idle stream gets keepalive comments until the agent answers", async () => {
    const card = (await (await fetch(`${base}/gated/.well-known/agent-card.json`)).json()) as Json;
    expect(card.capabilities.streaming).toBe(true);
    gate.reset();
    const response = await post("gated", "SendStreamingMessage", { message: message("slow one") });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const seen: string[] = [];
    let last: Json | undefined;
    for await (const frame of sse(response)) {
      if (frame.comment !== undefined) {
        seen.push("comment");
        // Keepalives after the task's first event: it works and has said nothing for a while.
        if (
          seen.includes("data") &&
          seen.slice(seen.indexOf("data")).filter((s) => s === "comment").length === 3
        )
          gate.release();
      } else {
        seen.push("data");
        last = frame.data;
      }
    }
    expect(seen.slice(seen.indexOf("data")).filter((s) => s === "comment").length).toBeGreaterThanOrEqual(3);
    expect(last!.result.task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("a stream to an agent that is away starts at once with keepalives, and carries the answer when it is back", async () => {
    const away = await A2AAgent.start(client, {
      card: { name: "Away", description: "Comes back later", skills: [] },
      executor: new CoderExecutor(),
      onError: () => {},
    });
    await away.stop({ unregister: false });
    const response = await post("away", "SendStreamingMessage", { message: message("are you there?") });
    const frames = sse(response);
    expect((await frames.next()).value).toEqual({ comment: "keepalive" });
    const back = await A2AAgent.start(client, {
      card: { name: "Away", description: "Comes back later", skills: [] },
      executor: new CoderExecutor(),
      onError: () => {},
    });
    let last: Json | undefined;
    for await (const frame of frames) if (frame.data) last = frame.data;
    expect(last!.result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    await back.stop();
  });

  it("a send repeated with the same messageId is answered from its task and runs once", async () => {
    gate.reset();
    gate.release();
    const runs = gate.runs;
    const m = message("only once");
    const first = (await (await post("gated", "SendMessage", { message: m })).json()) as Json;
    const again = (await (await post("gated", "SendMessage", { message: m }, 2)).json()) as Json;
    expect(first.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(again.id).toBe(2);
    expect(again.result.task.id).toBe(first.result.task.id);
    expect(again.result.task.artifacts).toEqual(first.result.task.artifacts);
    expect(gate.runs).toBe(runs + 1);
  });

  it("a repeat while the task still works follows it to the end (the stream a client gave up on)", async () => {
    gate.reset();
    const runs = gate.runs;
    const m = message("long one");
    const stream = sse(await post("gated", "SendStreamingMessage", { message: m }));
    let taskId: string | undefined;
    while (!taskId) taskId = ((await stream.next()).value as { data?: Json }).data?.result.task.id;
    const repeat = post("gated", "SendMessage", { message: m }, 9).then((r) => r.json() as Promise<Json>);
    await new Promise((resolve) => setTimeout(resolve, 300));
    gate.release();
    const answer = await repeat;
    expect(answer.id).toBe(9);
    expect(answer.result.task).toMatchObject({ id: taskId, status: { state: "TASK_STATE_COMPLETED" } });
    for await (const _ of stream) {
      // drain the first stream
    }
    expect(gate.runs).toBe(runs + 1);
  });

  it("input-required ends a call; a follow-up with only the contextId continues that task", async () => {
    const first = (await (
      await post("python.coder", "SendMessage", { message: message("write a script") })
    ).json()) as Json;
    const task = first.result.task;
    expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const follow = (await (
      await post("python.coder", "SendMessage", { message: message("3.12", { contextId: task.contextId }) })
    ).json()) as Json;
    expect(follow.result.task).toMatchObject({
      id: task.id,
      contextId: task.contextId,
      status: { state: "TASK_STATE_COMPLETED" },
    });
    // The context's task has ended: the next message in it starts a new task there.
    const next = (await (
      await post("python.coder", "SendMessage", {
        message: message("another", { contextId: task.contextId }),
      })
    ).json()) as Json;
    expect(next.result.task.id).not.toBe(task.id);
    expect(next.result.task.contextId).toBe(task.contextId);
    expect(next.result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });
});
