import { SendMessageRequest, Task } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import type { Mq9Client } from "@mq9/client";
import { connect } from "@mq9/client";
import {
  A2AAgent,
  A2AHeaders,
  normalizeCard,
  partsText,
  TaskEvents,
  withMailboxInterface,
} from "@mq9/client/a2a";
import {
  CoderExecutor,
  coderCard,
  SlowExecutor,
  slowCard,
  startBroker,
  type TestBroker,
  TranslatorExecutor,
  translatorCard,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mountA2AGateway } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

const request = (text: string, extra: Json = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra },
  });

const artifactText = (task: Json) =>
  (task.artifacts ?? []).flatMap((a: Json) => a.parts.map((p: Json) => partsText([p]))).join("");

/** Ends its turn while still working, without a final status. */
class QuitterExecutor implements AgentExecutor {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working("on it");
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

/**
 * An agent as mq9 0.x released it, speaking the mailbox binding by hand: its v0.3 stream
 * sends the stored task after the final status-update, marked last.
 */
function olderReleaseAgent(client: Mq9Client, mailbox: string) {
  const encode = (body: unknown) => new TextEncoder().encode(JSON.stringify(body));
  return client.consume(
    mailbox,
    async (message) => {
      const request = message.json() as Json;
      const h = message.headers;
      const task = { kind: "task", id: "t-old", contextId: "c-old" };
      const frames = [
        { ...task, status: { state: "submitted" } },
        {
          kind: "status-update",
          taskId: "t-old",
          contextId: "c-old",
          status: { state: "working" },
          final: false,
        },
        {
          kind: "status-update",
          taskId: "t-old",
          contextId: "c-old",
          status: { state: "completed" },
          final: true,
        },
        { ...task, status: { state: "completed" } },
      ];
      for (const [i, result] of frames.entries()) {
        const headers: Record<string, string> = { [A2AHeaders.requestId]: h[A2AHeaders.requestId] };
        if (i === frames.length - 1) headers[A2AHeaders.last] = "true";
        await client.send(h[A2AHeaders.replyTo], encode({ jsonrpc: "2.0", id: request.id, result }), {
          headers,
        });
      }
    },
    { group: "older.release", deliver: "earliest" },
  );
}

describe("A2A HTTP gateway on the broker's HTTP server", () => {
  let t: TestBroker;
  let base: string;
  const agents: A2AAgent[] = [];
  const slow = new SlowExecutor();
  const factory = new ClientFactory();

  const rpc = async (agent: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/${agent}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };

  /** The `data:` frames of an event stream, parsed, in order; the stream has ended when this resolves. */
  const sse = async (agent: string, body: Json, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/${agent}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify(body),
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    return text
      .split("\n\n")
      .filter((block) => block.startsWith("data: "))
      .map((block) => JSON.parse(block.slice(6)) as Json);
  };
  const v03Message = (text: string) => ({
    message: {
      kind: "message",
      messageId: crypto.randomUUID(),
      role: "user",
      parts: [{ kind: "text", text }],
    },
  });
  /** kind, state and final of each v0.3 frame. */
  const v03Frames = (frames: Json[]) =>
    frames.map((f) => [f.result.kind, f.result.status?.state, f.result.final]);

  beforeAll(async () => {
    let url = "";
    t = await startBroker({
      maxPayload: 256 * 1024,
      http: {
        port: 0,
        routes: (app) =>
          mountA2AGateway(app, { client: () => connect(url), maxBodyBytes: 64 * 1024, timeoutMs: 20_000 }),
      },
    });
    url = t.url;
    base = `http://127.0.0.1:${t.broker.http!.port}/a2a`;
    const client = await t.client();
    agents.push(
      await A2AAgent.start(client, {
        card: translatorCard,
        executor: new TranslatorExecutor(),
        onError: () => {},
      }),
      await A2AAgent.start(client, { card: coderCard, executor: new CoderExecutor(), onError: () => {} }),
      await A2AAgent.start(client, { card: slowCard, executor: slow, onError: () => {} }),
      await A2AAgent.start(client, {
        card: { name: "Quitter", description: "Stops without a final status", skills: [] },
        executor: new QuitterExecutor(),
        onError: () => {},
      }),
    );
  });

  afterAll(async () => {
    for (const agent of agents) await agent.stop();
    await t.close();
  });

  it("serves each agent's card at both well-known paths, pointing at the gateway", async () => {
    const response = await fetch(`${base}/translator/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("etag")).toMatch(/^W\//);
    const card = (await response.json()) as Json;
    expect(card.name).toBe("Translator");
    expect(card.supportedInterfaces[0]).toEqual({
      url: `${base}/translator`,
      protocolBinding: "JSONRPC",
      protocolVersion: "1.0",
    });
    expect(card.supportedInterfaces.map((i: Json) => i.protocolBinding)).toContain("urn:mq9:a2a:mailbox:v1");
    expect(card.url).toBe(`${base}/translator`);
    const legacy = await fetch(`${base}/translator/.well-known/agent.json`);
    expect(((await legacy.json()) as Json).name).toBe("Translator");
    const cached = await fetch(`${base}/translator/.well-known/agent-card.json`, {
      headers: { "if-none-match": response.headers.get("etag")! },
    });
    expect(cached.status).toBe(304);
  });

  it("an unmodified @a2a-js/sdk client created from the card URL: send, stream, get", async () => {
    const client = await factory.createFromUrl(`${base}/translator/`);
    const result = await client.sendMessage(request("hello"));
    const task = Task.toJSON(result as Task) as Json;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(task)).toBe("FR: HELLO");

    const kinds: string[] = [];
    for await (const event of client.sendMessageStream(request("good night")))
      kinds.push(event.payload!.$case);
    expect(kinds.slice(0, 3)).toEqual(["task", "statusUpdate", "artifactUpdate"]);
    expect(kinds).toContain("artifactUpdate");

    const fetched = await client.getTask({ tenant: "", id: task.id });
    expect(fetched.status?.state).toBe(3);
  });

  it("multi-turn and cancel through the SDK client", async () => {
    const coder = await factory.createFromUrl(`${base}/python.coder/`);
    const first = Task.toJSON((await coder.sendMessage(request("write a script"))) as Task) as Json;
    expect(first.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const second = Task.toJSON(
      (await coder.sendMessage(request("3.13", { taskId: first.id, contextId: first.contextId }))) as Task,
    ) as Json;
    expect(second.status.state).toBe("TASK_STATE_COMPLETED");

    const worker = await factory.createFromUrl(`${base}/slow.worker/`);
    const running = worker.sendMessage(request("work"));
    const taskId = await slow.started;
    const canceled = await worker.cancelTask({ tenant: "", id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(5);
    expect(((await running) as Task).status?.state).toBe(5);
  });

  it("v0.3 JSON-RPC (message/send, kind-tagged parts) is carried too", async () => {
    const { body } = await rpc("translator", {
      jsonrpc: "2.0",
      id: 7,
      method: "message/send",
      params: {
        message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "salut" }] },
      },
    });
    expect(body.id).toBe(7);
    expect(body.result.kind).toBe("task");
    expect(body.result.status.state).toBe("completed");
  });

  it("v0.3 message/stream: the SDK's events, ending with the final status-update (no task after it)", async () => {
    const frames = await sse("translator", {
      jsonrpc: "2.0",
      id: 9,
      method: "message/stream",
      params: v03Message("salut"),
    });
    expect(frames.map((f) => f.id)).toEqual([9, 9, 9, 9, 9]);
    expect(v03Frames(frames)).toEqual([
      ["task", "submitted", undefined],
      ["status-update", "working", false],
      ["artifact-update", undefined, undefined],
      ["artifact-update", undefined, undefined],
      ["status-update", "completed", true],
    ]);
    // At input-required the stream closes too, and its last event says so.
    const asked = await sse("python.coder", {
      jsonrpc: "2.0",
      id: 10,
      method: "message/stream",
      params: v03Message("write a script"),
    });
    expect(v03Frames(asked)).toEqual([
      ["task", "submitted", undefined],
      ["status-update", "input-required", true],
    ]);
  });

  it("v0.3 message/stream: a turn that ends without a final status ends with the task's status, final", async () => {
    const frames = await sse("quitter", {
      jsonrpc: "2.0",
      id: 11,
      method: "message/stream",
      params: v03Message("go"),
    });
    expect(v03Frames(frames)).toEqual([
      ["task", "submitted", undefined],
      ["status-update", "working", false],
      ["status-update", "working", true],
    ]);
  });

  it("v1 SendStreamingMessage: the Task, its updates, the final status, then the task as stored", async () => {
    const frames = await sse(
      "translator",
      {
        jsonrpc: "2.0",
        id: 12,
        method: "SendStreamingMessage",
        params: {
          message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "salut" }] },
        },
      },
      { "a2a-version": "1.0" },
    );
    const kinds = frames.map((f) => Object.keys(f.result)[0]);
    expect(kinds).toEqual([
      "task",
      "statusUpdate",
      "artifactUpdate",
      "artifactUpdate",
      "statusUpdate",
      "task",
    ]);
    expect(frames[4].result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(frames[5].result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(frames[5].result.task.id).toBe(frames[0].result.task.id);
    expect(artifactText(frames[5].result.task)).toBe("FR: SALUT");
  });

  it("v0.3 message/stream from an agent of an older release: the task it sends after the final status-update is not passed on", async () => {
    const client = await t.client();
    const mailbox = "older.release";
    await client.ensureMailbox({ name: mailbox, ttlSeconds: 0 });
    const card = withMailboxInterface(
      normalizeCard({ name: "Older Release", description: "mq9 0.x agent", skills: [] }),
      `mq9://127.0.0.1/${mailbox}`,
    );
    await client.register({ name: card.name, mailbox, payload: card.description, agent_card: card, ttl: 0 });
    await t.broker.registry!.indexed();
    const consumer = olderReleaseAgent(client, mailbox);
    try {
      const frames = await sse(mailbox, {
        jsonrpc: "2.0",
        id: 13,
        method: "message/stream",
        params: v03Message("hi"),
      });
      expect(v03Frames(frames)).toEqual([
        ["task", "submitted", undefined],
        ["status-update", "working", false],
        ["status-update", "completed", true],
      ]);
    } finally {
      await consumer.stop();
      await client.unregister({ mailbox });
    }
  });

  it("bad input: malformed JSON, not JSON-RPC, unknown agent, oversize body, terminal task", async () => {
    const malformed = await rpc("translator", "{oops");
    expect(malformed.body.error.code).toBe(-32700);

    const notRpc = await rpc("translator", { hello: 1 });
    expect(notRpc.body.error.code).toBe(-32600);

    const unknown = await rpc("nobody", { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/no registered agent/);
    expect((await fetch(`${base}/nobody/.well-known/agent-card.json`)).status).toBe(404);

    const huge = await rpc("translator", {
      jsonrpc: "2.0",
      id: 2,
      method: "SendMessage",
      params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x".repeat(100 * 1024) }] } },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.message).toMatch(/too large/);

    const done = await rpc("translator", {
      jsonrpc: "2.0",
      id: 3,
      method: "SendMessage",
      params: { message: { messageId: "m2", role: "ROLE_USER", parts: [{ text: "once" }] } },
    });
    const taskId = done.body.result.task.id;
    const again = await rpc("translator", {
      jsonrpc: "2.0",
      id: 4,
      method: "SendMessage",
      params: { message: { messageId: "m3", role: "ROLE_USER", taskId, parts: [{ text: "twice" }] } },
    });
    expect(again.body.id).toBe(4);
    expect(again.body.error.message).toMatch(/terminal state/);

    const still = await rpc("translator", {
      jsonrpc: "2.0",
      id: 5,
      method: "GetTask",
      params: { id: taskId },
    });
    expect(still.body.result.status.state).toBe("TASK_STATE_COMPLETED");
  });
});
