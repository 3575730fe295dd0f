import type { Mq9Client } from "@mq9/client";
import { A2AClient, partsText } from "@mq9/client/a2a";
import { boxName, type ShouterBroker, startBroker, startShouterBroker, type TestBroker } from "@mq9/testkit";
import {
  Agent,
  type AgentOutputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  Usage,
} from "@openai/agents-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mq9Tools, serveAgent } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: tool results and A2A wire JSON, read field by field
type Json = Record<string, any>;

const items = (request: ModelRequest): Json[] => (typeof request.input === "string" ? [] : request.input);
const say = (text: string): AgentOutputItem => ({
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});

/** A Model that answers from a script: what it is given in, what it says out. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];

  constructor(private readonly next: (request: ModelRequest) => AgentOutputItem[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return { usage: new Usage(), output: this.next(request), responseId: `r${this.requests.length}` };
  }

  // biome-ignore lint/correctness/useYield: these tests run without streaming
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
}

/** One tool call, then the tool's output as the final answer. */
const callOnce = (name: string, args: Json) =>
  new ScriptedModel((request) => {
    const output = items(request).find((item) => item.type === "function_call_result");
    if (output) return [say(typeof output.output === "string" ? output.output : output.output.text)];
    return [
      { type: "function_call", callId: "call-1", name, arguments: JSON.stringify(args), status: "completed" },
    ];
  });

const runner = new Runner({ tracingDisabled: true });

describe("@mq9/openai-agents — the mq9 tools in an Agent, against a real broker", () => {
  let shouting: ShouterBroker;
  let client: Mq9Client;

  beforeAll(async () => {
    shouting = await startShouterBroker();
    ({ client } = shouting);
  });
  afterAll(() => shouting?.close());

  it("offers every tool with the MCP server's names and strict schemas", () => {
    const tools = mq9Tools({ client });
    const call = tools.find((tool) => tool.name === "mq9_call_agent")!;
    expect(call.description).toMatch(/^Give a task to an A2A agent/);
    expect(call.strict).toBe(true);
    expect(call.parameters).toMatchObject({ type: "object", additionalProperties: false });
  });

  it("a scripted model calls mq9_call_agent: the agent served with `mq9 agent serve` answers", async () => {
    const agent = new Agent({
      name: "Caller",
      model: callOnce("mq9_call_agent", { agent: "Shouter", message: "hello from the agents sdk" }),
      tools: mq9Tools({ client, tools: ["mq9_call_agent"] }),
    });
    const result = await runner.run(agent, "Ask the shouter to shout.");
    const answer = JSON.parse(String(result.finalOutput));
    expect(answer).toMatchObject({ agent: "Shouter", state: "completed" });
    expect(answer.artifacts[0].text).toBe("HELLO FROM THE AGENTS SDK\n");
  });

  it("bad arguments come back to the model as the tool's error; nothing is sent", async () => {
    const box = boxName("agents.sdk");
    await client.createMailbox({ name: box });
    const agent = new Agent({
      name: "Sender",
      model: callOnce("mq9_send_message", { mail_address: box, payload: 7 }),
      tools: mq9Tools({ client }),
    });
    const result = await runner.run(agent, "Send seven.");
    expect(String(result.finalOutput)).toMatch(/invalid arguments for mq9_send_message: payload/);
    expect(await client.query(box, {})).toEqual([]);
  });

  it("an unknown tool name is refused when the tools are made", () => {
    expect(() => mq9Tools({ client, tools: ["mq9_nope"] })).toThrow(/unknown mq9 tool 'mq9_nope'/);
  });
});

describe("@mq9/openai-agents — serveAgent: an Agent as an A2A agent", () => {
  let t: TestBroker;

  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
  });
  afterAll(async () => {
    await t.close();
  });

  it("answers a task sent with @mq9/client; its card comes from the agent", async () => {
    const model = new ScriptedModel((request) => {
      const last = items(request).at(-1) as Json;
      return [say(`echo: ${typeof last.content === "string" ? last.content : last.content[0].text}`)];
    });
    const agent = new Agent({ name: "Echo Agent", handoffDescription: "Echoes the task.", model });
    const served = await serveAgent(await t.client(), agent, { runner });
    expect(served.card).toMatchObject({ name: "Echo Agent", description: "Echoes the task." });
    const caller = new A2AClient(await t.client(), { timeoutMs: 20_000 });
    const { task } = await caller.send("Echo Agent", "ping");
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(partsText(task?.artifacts?.[0]?.parts)).toBe("echo: ping");
    await served.stop();
    await caller.close();
  });
});
