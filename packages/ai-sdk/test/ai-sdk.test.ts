import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from "@ai-sdk/provider";
import type { Mq9Client } from "@mq9/client";
import { A2AClient, partsText } from "@mq9/client/a2a";
import { boxName, type ShouterBroker, startBroker, startShouterBroker, type TestBroker } from "@mq9/testkit";
import { generateText, stepCountIs, ToolLoopAgent } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mq9Tools, serveAgent } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: tool results and A2A wire JSON, read field by field
type Json = Record<string, any>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const say = (text: string): LanguageModelV3GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: "stop" },
  usage,
  warnings: [],
});
const callTool = (toolName: string, input: Json): LanguageModelV3GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: "call-1", toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
/** The last tool result the model was shown, as JSON. */
function lastToolResult(options: LanguageModelV3CallOptions): Json {
  const part = options.prompt.flatMap((m) => (m.role === "tool" ? m.content : [])).at(-1) as Json;
  return part.output;
}
/** The user's last words in the prompt. */
const lastUserText = (options: LanguageModelV3CallOptions) =>
  ((options.prompt.filter((m) => m.role === "user").at(-1)?.content ?? []) as Json[])
    .map((p) => (p.type === "text" ? p.text : ""))
    .join("");

/** A model that makes one tool call, then reports what the tool returned. */
function scriptedModel(toolName: string, input: Json) {
  return new MockLanguageModelV3({
    doGenerate: async (options) =>
      options.prompt.some((m) => m.role === "tool")
        ? say(JSON.stringify(lastToolResult(options)))
        : callTool(toolName, input),
  });
}

describe("@mq9/ai-sdk — the mq9 tools in generateText, against a real broker", () => {
  let shouting: ShouterBroker;
  let client: Mq9Client;

  beforeAll(async () => {
    shouting = await startShouterBroker();
    ({ client } = shouting);
  });
  afterAll(() => shouting?.close());

  it("offers every tool with the MCP server's names and descriptions", () => {
    const tools = mq9Tools({ client });
    expect(Object.keys(tools)).toContain("mq9_call_agent");
    expect(tools.mq9_call_agent.description).toMatch(/^Give a task to an A2A agent/);
  });

  it("a scripted model calls mq9_call_agent: the agent served with `mq9 agent serve` answers", async () => {
    const result = await generateText({
      model: scriptedModel("mq9_call_agent", { agent: "Shouter", message: "hello from the ai sdk" }),
      tools: mq9Tools({ client, tools: ["mq9_call_agent"] }),
      stopWhen: stepCountIs(3),
      prompt: "Ask the shouter to shout.",
    });
    const answer = JSON.parse(result.text);
    expect(answer.type).toBe("json");
    expect(answer.value).toMatchObject({ agent: "Shouter", state: "completed" });
    expect(answer.value.artifacts[0].text).toBe("HELLO FROM THE AI SDK\n");
  });

  it("bad arguments from the model come back to it as a tool error; nothing is sent", async () => {
    const box = boxName("ai.sdk");
    await client.createMailbox({ name: box });
    const result = await generateText({
      model: scriptedModel("mq9_send_message", { mail_address: box, payload: 7 }),
      tools: mq9Tools({ client }),
      stopWhen: stepCountIs(3),
      prompt: "Send seven.",
    });
    const error = result.steps[0].content.find((part) => part.type === "tool-error") as Json;
    expect(String(error.error)).toMatch(/invalid arguments for mq9_send_message: payload/);
    expect(await client.query(box, {})).toEqual([]);
  });
});

describe("@mq9/ai-sdk — serveAgent: an AI SDK agent as an A2A agent", () => {
  let t: TestBroker;

  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
  });
  afterAll(async () => {
    await t.close();
  });

  it("answers a task sent with @mq9/client, and stops taking tasks when stopped", async () => {
    const agent = new ToolLoopAgent({
      model: new MockLanguageModelV3({
        doGenerate: async (options) => say(`echo: ${lastUserText(options)}`),
      }),
    });
    const served = await serveAgent(await t.client(), agent, {
      card: { name: "Echo Agent", description: "Echoes the task." },
    });
    const caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
    const { task } = await caller.send("Echo Agent", "ping");
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(partsText(task?.artifacts?.[0]?.parts)).toBe("echo: ping");

    await served.stop();
    expect(await caller.discover({ text: "Echo Agent" })).toEqual([]);
    await caller.close();
  });
});
