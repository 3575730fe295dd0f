import {
  boxName,
  CoderExecutor,
  coderCard,
  eventually,
  GatedExecutor,
  gatedCard,
  SlowExecutor,
  slowCard,
  startBroker,
  type TestBroker,
  TranslatorExecutor,
  translatorCard,
  WriterExecutor,
  writerCard,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AAgent, A2AClient, partsText, ReplyInbox, RpcChannel } from "../src/a2a/index.js";
import { type Mq9Client, Mq9Error } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

/** All text of a task's artifacts; appended chunks are separate parts. */
const artifactText = (task: Json) =>
  (task.artifacts ?? []).flatMap((a: Json) => a.parts.map((p: Json) => partsText([p]))).join("");

describe("A2A over mq9 mailboxes", () => {
  let t: TestBroker;
  let agentSide: Mq9Client;
  let callerSide: Mq9Client;
  let caller: A2AClient;
  const agents: A2AAgent[] = [];

  beforeAll(async () => {
    t = await startBroker();
    agentSide = await t.client();
    callerSide = await t.client();
    agents.push(
      await A2AAgent.start(agentSide, {
        card: translatorCard,
        executor: new TranslatorExecutor(),
        onError: () => {},
      }),
      await A2AAgent.start(agentSide, { card: coderCard, executor: new CoderExecutor(), onError: () => {} }),
    );
    await t.broker.registry!.indexed();
    caller = new A2AClient(callerSide, { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    await caller.close();
    for (const agent of agents) await agent.stop();
    await t.close();
  });

  it("discover — by meaning, by text and by tag, each hit carrying its A2A card", async () => {
    const [byMeaning] = await caller.discover({ semantic: "an agent that can write Python", limit: 1 });
    expect(byMeaning.name).toBe("Python Coder");
    expect(byMeaning.mailbox).toBe("python.coder");
    expect((byMeaning.card.supportedInterfaces as unknown[])[0]).toMatchObject({
      protocolBinding: "urn:mq9:a2a:mailbox:v1",
      protocolVersion: "1.0",
    });
    const byText = await caller.discover({ text: "french" });
    expect(byText.map((a) => a.name)).toEqual(["Translator"]);
    const byTag = await caller.discover({ tags: ["python"] });
    expect(byTag.map((a) => a.name)).toEqual(["Python Coder"]);
  });

  it("send — awaits the final task with its artifacts", async () => {
    const { task } = await caller.send("Translator", "hello");
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(task!)).toBe("FR: HELLO");
  });

  it("resolve — a direct lookup by name or by mailbox; a card-less namesake does not shadow the agent", async () => {
    await callerSide.createMailbox({ name: "plain.namesake" });
    await callerSide.register({ name: "Translator", mailbox: "plain.namesake", payload: "no card here" });
    await t.broker.registry!.indexed();
    try {
      expect((await caller.resolve("Translator")).mailbox).toBe("translator");
      expect((await caller.resolve("python.coder")).name).toBe("Python Coder");
      await expect(caller.resolve("plain.namesake")).rejects.toMatchObject({ code: "NOT_AN_A2A_AGENT" });
    } finally {
      await callerSide.unregister({ mailbox: "plain.namesake" });
    }
  });

  it("stream — every event in order, ending with the stored task", async () => {
    const kinds: string[] = [];
    const events: Json[] = [];
    for await (const event of caller.stream("translator", "good morning")) {
      kinds.push(Object.keys(event)[0]);
      events.push(event);
    }
    expect(kinds).toEqual([
      "task",
      "statusUpdate",
      "artifactUpdate",
      "artifactUpdate",
      "statusUpdate",
      "task",
    ]);
    expect(events[3].artifactUpdate.append).toBe(true);
    expect(events.at(-1)!.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(events.at(-1)!.task)).toBe("FR: GOOD MORNING");
  });

  it("stream in v0.3 over the mailbox — the events end with the final status-update, marked last", async () => {
    const inbox = new ReplyInbox(callerSide, { replyGroup: "a2a.v03" });
    const channel = new RpcChannel(callerSide, inbox);
    const stream = async (mailbox: string, text: string) => {
      const frames: Json[] = [];
      const message = {
        kind: "message",
        messageId: crypto.randomUUID(),
        role: "user",
        parts: [{ kind: "text", text }],
      };
      for await (const reply of channel.call(
        mailbox,
        { jsonrpc: "2.0", method: "message/stream", params: { message } },
        { timeoutMs: 20_000, version: "0.3" },
      )) {
        const result = reply.response.result as Json;
        frames.push({
          kind: result.kind,
          state: result.status?.state,
          final: result.final,
          last: reply.last,
        });
      }
      return frames;
    };
    try {
      expect(await stream("translator", "good evening")).toEqual([
        { kind: "task", state: "submitted", final: undefined, last: false },
        { kind: "status-update", state: "working", final: false, last: false },
        { kind: "artifact-update", state: undefined, final: undefined, last: false },
        { kind: "artifact-update", state: undefined, final: undefined, last: false },
        { kind: "status-update", state: "completed", final: true, last: true },
      ]);
      expect(await stream("python.coder", "write a script")).toEqual([
        { kind: "task", state: "submitted", final: undefined, last: false },
        { kind: "status-update", state: "input-required", final: true, last: true },
      ]);
    } finally {
      await inbox.close();
    }
  });

  it("multi-turn — input-required pauses the task, a follow-up with its taskId resumes it", async () => {
    const first = await caller.send("Python Coder", "write a hello world script");
    expect(first.task?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(partsText(first.task?.status.message?.parts)).toBe("Which Python version?");
    const taskId = first.task!.id as string;
    const second = await caller.send("Python Coder", "3.12", {
      taskId,
      contextId: first.task!.contextId as string,
    });
    expect(second.task?.id).toBe(taskId);
    expect(second.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(second.task!)).toContain("# python 3.12");
    expect(second.task?.history?.length).toBeGreaterThanOrEqual(2);
  });

  it("cancel — a running task is canceled while the agent is busy", async () => {
    const slow = new SlowExecutor();
    const agent = await A2AAgent.start(agentSide, {
      card: slowCard,
      executor: slow,
      concurrency: 1,
      onError: () => {},
    });
    try {
      const pending = caller.send("slow.worker", "run");
      const taskId = await slow.started;
      const canceled = await caller.cancelTask("slow.worker", taskId);
      expect(canceled.status).toMatchObject({ state: "TASK_STATE_CANCELED" });
      const { task } = await pending;
      expect(task?.status.state).toBe("TASK_STATE_CANCELED");
      await expect(caller.getTask("slow.worker", taskId)).resolves.toMatchObject({
        status: { state: "TASK_STATE_CANCELED" },
      });
    } finally {
      await agent.stop();
    }
  });

  it("two agents talk to each other: the writer calls the translator through the broker", async () => {
    const writerClient = await t.client();
    const writer = await A2AAgent.start(writerClient, {
      card: writerCard,
      executor: new WriterExecutor(writerClient),
      onError: () => {},
    });
    try {
      const { task } = await caller.send(writer.card, "bonjour");
      expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
      expect(artifactText(task!)).toBe("writer got: FR: DRAFT: BONJOUR");
    } finally {
      await writer.stop();
    }
  });

  it("agent restart — the task store in its mailbox survives; the paused task resumes", async () => {
    const client = await t.client();
    const card = { ...coderCard, name: "Restartable Coder" };
    let agent = await A2AAgent.start(client, { card, executor: new CoderExecutor(), onError: () => {} });
    const first = await caller.send("restartable.coder", "write a script");
    const taskId = first.task!.id as string;
    expect(first.task?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    await agent.stop({ unregister: false });

    const again = await t.client();
    agent = await A2AAgent.start(again, { card, executor: new CoderExecutor(), onError: () => {} });
    try {
      await expect(caller.getTask("restartable.coder", taskId)).resolves.toMatchObject({
        id: taskId,
        status: { state: "TASK_STATE_INPUT_REQUIRED" },
      });
      const second = await caller.send("restartable.coder", "3.11", { taskId });
      expect(second.task?.status.state).toBe("TASK_STATE_COMPLETED");
    } finally {
      await agent.stop();
    }
  });

  it("caller offline while the task runs — the result waits in its reply mailbox", async () => {
    const gated = new GatedExecutor();
    const agent = await A2AAgent.start(agentSide, { card: gatedCard, executor: gated, onError: () => {} });
    const replyMailbox = boxName("caller.replies");
    try {
      const away = new A2AClient(await t.client(), { replyMailbox, timeoutMs: 20_000 });
      const { task } = await away.send("gated.translator", "see you", { returnImmediately: true });
      const taskId = task!.id as string;
      expect(task?.status.state).not.toBe("TASK_STATE_COMPLETED");
      await away.close();

      gated.release();
      await eventually(async () =>
        (await callerSide.query(replyMailbox)).some((m) => m.headers["mq9-a2a-last"]),
      );

      const back = new A2AClient(await t.client(), { replyMailbox, timeoutMs: 20_000 });
      const result = await back.waitForTask(taskId, { timeoutMs: 15_000 });
      expect(result.status).toMatchObject({ state: "TASK_STATE_COMPLETED" });
      expect(artifactText(result)).toBe("FR: SEE YOU");
      await back.close();
    } finally {
      await agent.stop();
    }
  });
});

describe("A2A over mq9 — bad input gets a clear A2A error, nothing is lost", () => {
  let t: TestBroker;
  let client: Mq9Client;
  let caller: A2AClient;
  let agent: A2AAgent;

  beforeAll(async () => {
    t = await startBroker({ maxPayload: 64 * 1024 });
    client = await t.client();
    agent = await A2AAgent.start(client, {
      card: translatorCard,
      executor: new TranslatorExecutor(),
      onError: () => {},
    });
    caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    await caller.close();
    await agent.stop();
    await t.close();
  });

  const rawCall = async (payload: string, headers: Record<string, string> = {}) => {
    const replies = await client.createMailbox({ ttlSeconds: 60 });
    await client.send("translator", payload, {
      headers: { "mq9-reply-to": replies, "mq9-a2a-request-id": "r1", ...headers },
    });
    for (let i = 0; i < 100; i++) {
      const [reply] = await client.fetch(replies, { deliver: "earliest", maxWaitMs: 500 });
      if (reply) return { body: reply.json<Json>(), headers: reply.headers };
    }
    throw new Error("no reply");
  };

  it("malformed JSON — a JSON-RPC parse error (-32700), marked last", async () => {
    const { body, headers } = await rawCall("{not json");
    expect(body.error.code).toBe(-32700);
    expect(body.error.message).toMatch(/Invalid JSON payload/);
    expect(headers["mq9-a2a-last"]).toBe("true");
  });

  it("a JSON object that is no A2A request — invalid request (-32600)", async () => {
    const { body } = await rawCall(JSON.stringify({ hello: "world" }));
    expect(body.error.code).toBe(-32600);
  });

  it("an unknown method — method not found (-32601)", async () => {
    const { body } = await rawCall(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "DoSomething", params: {} }),
    );
    expect(body.error.code).toBe(-32601);
  });

  it("an unsupported A2A version — version not supported (-32009)", async () => {
    const { body } = await rawCall(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
      { "a2a-version": "2.0" },
    );
    expect(body.error.code).toBe(-32009);
  });

  it("unknown agent — AGENT_NOT_FOUND says how to find one", async () => {
    await expect(caller.send("nobody.here", "hi")).rejects.toMatchObject({
      code: "AGENT_NOT_FOUND",
      message: expect.stringMatching(/discover/),
    });
  });

  it("oversize message — the broker refuses it before it reaches the agent", async () => {
    await expect(caller.send("translator", "x".repeat(100 * 1024))).rejects.toBeInstanceOf(Mq9Error);
  });

  it("a message for a terminal task — the SDK's unsupported-operation error; the agent keeps serving", async () => {
    const { task } = await caller.send("translator", "one");
    await expect(caller.send("translator", "two", { taskId: task!.id as string })).rejects.toThrow(
      /terminal state/,
    );
    const unknown = await caller.getTask("translator", "no-such-task").catch((e) => e);
    expect(unknown.message).toMatch(/not found/i);
    const after = await caller.send("translator", "still here");
    expect(after.task?.status.state).toBe("TASK_STATE_COMPLETED");
  });
});
