import { serveTextAgent, type TextTurn } from "@mq9/agent/a2a";
import type { Mq9Client } from "@mq9/client";
import { type A2AAgent, A2AClient, partsText } from "@mq9/client/a2a";
import { eventually, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

const result = (task: Json) => partsText(task.artifacts?.[0]?.parts);

describe("serveTextAgent — a function that answers in text, as an A2A agent", () => {
  let t: TestBroker;
  let client: Mq9Client;
  let a2a: A2AClient;
  const agents: A2AAgent[] = [];
  const turns: TextTurn[] = [];

  const serve = async (name: string, answer: Parameters<typeof serveTextAgent>[1]["answer"]) => {
    const agent = await serveTextAgent(client, { card: { name, description: `${name} for tests` }, answer });
    agents.push(agent);
    return agent;
  };

  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
    client = await t.client();
    a2a = new A2AClient(await t.client(), { timeoutMs: 20_000 });
  });
  afterAll(async () => {
    for (const agent of agents) await agent.stop();
    await a2a.close();
    await t.close();
  });

  it("registers its card and answers: the answer is the artifact of a completed task", async () => {
    await serve("Shouter", (turn) => {
      turns.push(turn);
      return turn.text.toUpperCase();
    });
    const [found] = await a2a.discover({ text: "Shouter" });
    expect(found).toMatchObject({ name: "Shouter", mailbox: "shouter" });
    const { task } = await a2a.send("Shouter", "hello there", { contextId: "ctx-1" });
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(result(task!)).toBe("HELLO THERE");
    expect(turns.at(-1)).toMatchObject({ text: "hello there", history: [], contextId: "ctx-1" });
  });

  it("a { question } pauses the task; the follow-up sees the conversation so far", async () => {
    await serve("Asker", ({ text, history }) =>
      history.length === 0 ? { question: "Which language?" } : `${history[0].text} in ${text}`,
    );
    const first = await a2a.send("Asker", "write hello");
    expect(first.task?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(partsText(first.task?.status.message?.parts)).toBe("Which language?");
    const second = await a2a.send("Asker", "Python", {
      taskId: first.task!.id,
      contextId: first.task!.contextId,
    });
    expect(second.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(result(second.task!)).toBe("write hello in Python");
  });

  it("a throw fails the task with its message; the next task still runs", async () => {
    await serve("Picky", ({ text }) => {
      if (text === "bad") throw new Error("cannot do 'bad'");
      return "ok";
    });
    const failed = await a2a.send("Picky", "bad");
    expect(failed.task?.status.state).toBe("TASK_STATE_FAILED");
    expect(partsText(failed.task?.status.message?.parts)).toBe("cannot do 'bad'");
    expect(result((await a2a.send("Picky", "good")).task!)).toBe("ok");
  });

  it("a cancel aborts the turn's signal and cancels the task", async () => {
    let started = false;
    await serve("Slow", ({ signal }) => {
      started = true;
      return new Promise<string>((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason)),
      );
    });
    const sent = await a2a.send("Slow", "take your time", { returnImmediately: true });
    await eventually(() => started);
    const canceled = await a2a.cancelTask("Slow", sent.task!.id);
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
  });

  it("tasks sent while it is down wait in its mailbox and are answered when it is back", async () => {
    const first = await serve("Sleeper", ({ text }) => `awake: ${text}`);
    const card = first.card;
    await first.stop({ unregister: false });
    const waiting = a2a.send(card, "are you there?");
    await eventually(async () => (await client.query(first.mailbox, {})).length > 0);
    await serve("Sleeper", ({ text }) => `back: ${text}`);
    const { task } = await waiting;
    expect(result(task!)).toBe("back: are you there?");
  });
});
