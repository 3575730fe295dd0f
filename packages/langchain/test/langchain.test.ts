import { AIMessage, AIMessageChunk, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { StructuredTool } from "@langchain/core/tools";
import { FakeListChatModel, FakeStreamingChatModel } from "@langchain/core/utils/testing";
import { END, interrupt, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import type { Mq9Client } from "@mq9/client";
import { A2AClient, partsText } from "@mq9/client/a2a";
import { boxName, type ShouterBroker, startBroker, startShouterBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mq9Tools, serveGraph } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: tool results and A2A wire JSON, read field by field
type Json = Record<string, any>;

/**
 * A LangGraph agent loop: a fake chat model that asks for one tool call, a ToolNode that runs
 * it, then the tool's result as the final answer.
 */
function toolCallingGraph(tools: StructuredTool[], name: string, args: Json) {
  const model = new FakeStreamingChatModel({
    chunks: [
      new AIMessageChunk({ content: "", tool_calls: [{ id: "call-1", name, args, type: "tool_call" }] }),
    ],
  }).bindTools(tools);
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => {
      const last = state.messages.at(-1);
      if (last instanceof ToolMessage) return { messages: [new AIMessage(String(last.content))] };
      return { messages: [await model.invoke(state.messages)] };
    })
    .addNode("tools", new ToolNode(tools))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile();
}

const lastText = (messages: BaseMessage[]) => String(messages.at(-1)?.content);

describe("@mq9/langchain — the mq9 tools in a LangGraph graph, against a real broker", () => {
  let shouting: ShouterBroker;
  let client: Mq9Client;

  beforeAll(async () => {
    shouting = await startShouterBroker();
    ({ client } = shouting);
  });
  afterAll(() => shouting?.close());

  it("offers every tool with the MCP server's names, descriptions and schemas", () => {
    const call = mq9Tools({ client }).find((tool) => tool.name === "mq9_call_agent")!;
    expect(call.description).toMatch(/^Give a task to an A2A agent/);
    expect(call.schema).toMatchObject({
      type: "object",
      required: ["agent", "message"],
      additionalProperties: false,
    });
  });

  it("a fake chat model calls mq9_call_agent (optional arguments left out): `mq9 agent serve` answers", async () => {
    const graph = toolCallingGraph(mq9Tools({ client, tools: ["mq9_call_agent"] }), "mq9_call_agent", {
      agent: "Shouter",
      message: "hello from langgraph",
    });
    const { messages } = await graph.invoke({ messages: [{ role: "user", content: "Ask the shouter." }] });
    const answer = JSON.parse(lastText(messages));
    expect(answer).toMatchObject({ agent: "Shouter", state: "completed" });
    expect(answer.artifacts[0].text).toBe("HELLO FROM LANGGRAPH\n");
  });

  it("a failing call reaches the model as the tool's error, in the broker's words", async () => {
    const graph = toolCallingGraph(mq9Tools({ client }), "mq9_send_message", {
      mail_address: "no.such.box",
      payload: "x",
      priority: null,
      key: null,
      tags: null,
      delay: null,
      ttl: null,
    });
    const { messages } = await graph.invoke({ messages: [{ role: "user", content: "Send x." }] });
    expect(lastText(messages)).toMatch(/mailbox no.such.box does not exist/);
  });

  it("arguments that do not fit the schema are refused; nothing is sent", async () => {
    const box = boxName("langchain");
    await client.createMailbox({ name: box });
    const graph = toolCallingGraph(mq9Tools({ client }), "mq9_send_message", {
      mail_address: box,
      payload: 7,
    });
    const { messages } = await graph.invoke({ messages: [{ role: "user", content: "Send seven." }] });
    expect(lastText(messages)).toMatch(/did not match expected schema[\s\S]*payload/);
    expect(await client.query(box, {})).toEqual([]);
  });
});

describe("@mq9/langchain — serveGraph: a LangGraph graph as an A2A agent", () => {
  let t: TestBroker;

  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
  });
  afterAll(async () => {
    await t.close();
  });

  it("answers tasks sent with @mq9/client; the context id is the graph's thread", async () => {
    const model = new FakeListChatModel({ responses: ["pong"] });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => {
        const reply = await model.invoke(state.messages);
        const heard = state.messages.filter((m) => m.type === "human").length;
        return { messages: [new AIMessage(`${reply.content} (${heard} from you)`)] };
      })
      .addEdge(START, "agent")
      .compile({ checkpointer: new MemorySaver() });
    const served = await serveGraph(await t.client(), graph, {
      card: { name: "Pong Graph", description: "Answers pong." },
    });
    const caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
    const first = await caller.send("Pong Graph", "ping", { contextId: "thread-1" });
    expect(first.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(partsText(first.task?.artifacts?.[0]?.parts)).toBe("pong (1 from you)");
    const second = await caller.send("Pong Graph", "ping again", { contextId: "thread-1" });
    expect(partsText(second.task?.artifacts?.[0]?.parts)).toBe("pong (2 from you)");
    const other = await caller.send("Pong Graph", "ping", { contextId: "thread-2" });
    expect(partsText(other.task?.artifacts?.[0]?.parts)).toBe("pong (1 from you)");
    await served.stop();
    await caller.close();
  });

  it("an interrupt() asks the caller (input-required); the follow-up resumes the graph", async () => {
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => {
        const version = interrupt("Which Python version?") as string;
        return { messages: [new AIMessage(`${state.messages[0].content} for Python ${version}`)] };
      })
      .addEdge(START, "agent")
      .compile({ checkpointer: new MemorySaver() });
    const served = await serveGraph(await t.client(), graph, {
      card: { name: "Asking Graph", description: "Asks first." },
    });
    const caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
    const first = await caller.send("Asking Graph", "write hello");
    expect(first.task?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(partsText(first.task?.status.message?.parts)).toBe("Which Python version?");
    const second = await caller.send("Asking Graph", "3.12", {
      taskId: first.task!.id,
      contextId: first.task!.contextId,
    });
    expect(second.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(partsText(second.task?.artifacts?.[0]?.parts)).toBe("write hello for Python 3.12");
    await served.stop();
    await caller.close();
  });

  it("a graph whose result has no message list fails the task, saying what to set", async () => {
    const graph = { invoke: async () => ({ answer: 42 }) };
    const served = await serveGraph(await t.client(), graph, {
      card: { name: "Odd Graph", description: "Has no messages." },
    });
    const caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
    const { task } = await caller.send("Odd Graph", "hi");
    expect(task?.status.state).toBe("TASK_STATE_FAILED");
    expect(partsText(task?.status.message?.parts)).toMatch(/no 'messages' list; set messagesKey/);
    await served.stop();
    await caller.close();
  });
});
