import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { connect } from "@mq9/client";
import { A2AAgent } from "@mq9/client/a2a";
import {
  boxName,
  MQ9_CLI as CLI,
  CoderExecutor,
  coderCard,
  startBroker,
  type TestBroker,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mountMcp, SharedToolContext } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

const EXPECTED_TOOLS = [
  "mq9_create_mailbox",
  "mq9_send_message",
  "mq9_fetch_messages",
  "mq9_ack_message",
  "mq9_query_mailbox",
  "mq9_delete_message",
  "mq9_register_agent",
  "mq9_discover_agents",
  "mq9_unregister_agent",
  "mq9_call_agent",
  "mq9_wait",
];

async function call(client: Client, name: string, args: Json = {}) {
  const result = (await client.callTool({ name, arguments: args })) as Json;
  return { result, data: result.structuredContent as Json, text: result.content?.[0]?.text as string };
}

/** Every tool, over one transport. */
function toolSuite(transportName: string, open: () => Promise<Client>, broker: () => TestBroker) {
  describe(`MCP over ${transportName}`, () => {
    let client: Client;

    beforeAll(async () => {
      client = await open();
    });
    afterAll(async () => {
      await client.close();
    });

    it("lists the tools, with schemas valid under OpenAI strict mode", async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(EXPECTED_TOOLS);
      for (const tool of tools) {
        const schema = tool.inputSchema as Json;
        expect(schema.type).toBe("object");
        expect(schema.additionalProperties).toBe(false);
        expect([...(schema.required ?? [])].sort()).toEqual(Object.keys(schema.properties ?? {}).sort());
        expect(tool.description!.length).toBeLessThan(300);
      }
    });

    it("mailbox tools: create, send, fetch, ack, query, delete, wait", async () => {
      const name = boxName("mcp");
      const created = await call(client, "mq9_create_mailbox", { name, ttl: null, desc: "test" });
      expect(created.data).toEqual({ mail_address: name, created: true });
      expect(JSON.parse(created.text)).toEqual(created.data);

      const sent = await call(client, "mq9_send_message", {
        mail_address: name,
        payload: "hello",
        priority: "urgent",
        key: null,
        tags: "a,b",
        delay: null,
        ttl: null,
      });
      expect(sent.data.msg_id).toBeTypeOf("number");
      await call(client, "mq9_send_message", { mail_address: name, payload: "second" });

      const fetched = await call(client, "mq9_fetch_messages", { mail_address: name, group_name: "g1" });
      expect(fetched.data.messages.map((m: Json) => m.payload)).toEqual(["hello", "second"]);
      expect(fetched.data.messages[0]).toMatchObject({ priority: "urgent", tags: ["a", "b"] });

      const last = fetched.data.messages[1].msg_id;
      expect(
        (await call(client, "mq9_ack_message", { mail_address: name, group_name: "g1", msg_id: last })).data,
      ).toEqual({ msg_id: last, acked: true });
      const again = await call(client, "mq9_fetch_messages", { mail_address: name, group_name: "g1" });
      expect(again.data.messages).toEqual([]);

      const queried = await call(client, "mq9_query_mailbox", { mail_address: name, tags: ["b"] });
      expect(queried.data.messages.map((m: Json) => m.payload)).toEqual(["hello"]);

      const deleted = await call(client, "mq9_delete_message", {
        mail_address: name,
        msg_id: sent.data.msg_id,
      });
      expect(deleted.data).toEqual({ msg_id: sent.data.msg_id, deleted: true });

      const replies = boxName("mcp.replies");
      await call(client, "mq9_create_mailbox", { name: replies });
      const waiting = call(client, "mq9_wait", { mail_address: replies, timeout_seconds: 20 });
      const other = await broker().client();
      await other.send(replies, "late reply");
      const waited = await waiting;
      expect(waited.data.timed_out).toBe(false);
      expect(waited.data.messages.map((m: Json) => m.payload)).toEqual(["late reply"]);

      const empty = await call(client, "mq9_wait", { mail_address: replies, timeout_seconds: 1 });
      expect(empty.data).toEqual({ messages: [], timed_out: true });
    });

    it("registry tools: register, discover, unregister", async () => {
      const name = `mcp.agent.${transportName}`;
      const registered = await call(client, "mq9_register_agent", {
        name,
        payload: "Summarises long legal contracts",
        mail_address: null,
        ttl: null,
      });
      expect(registered.data).toEqual({ name, registered: true });
      const found = await call(client, "mq9_discover_agents", { text: "legal contracts" });
      expect(found.data.agents.map((a: Json) => a.name)).toContain(name);
      expect((await call(client, "mq9_unregister_agent", { name })).data).toEqual({
        name,
        unregistered: true,
      });
      const gone = await call(client, "mq9_discover_agents", { text: "legal contracts" });
      expect(gone.data.agents.map((a: Json) => a.name)).not.toContain(name);
    });

    it("mq9_discover_agents finds MCP servers only when kind asks for them", async () => {
      const slug = transportName.toLowerCase().replace(/[^a-z0-9]+/g, "-");
      const url = `https://${slug}.tools.example.com/mcp`;
      const other = await broker().client();
      await other.register({
        kind: "mcp-server",
        url,
        name: `contract-tools-${slug}`,
        server_card: { tools: [{ name: "review_contract", description: "Reviews legal contracts" }] },
      });
      try {
        const agents = await call(client, "mq9_discover_agents", { text: "review_contract" });
        expect(agents.data.agents).toEqual([]);
        const servers = await call(client, "mq9_discover_agents", {
          text: "review_contract",
          kind: "mcp-server",
        });
        expect(servers.data.agents).toEqual([
          {
            name: `contract-tools-${slug}`,
            kind: "mcp-server",
            url,
            tools: [{ name: "review_contract", description: "Reviews legal contracts" }],
          },
        ]);
        const all = await call(client, "mq9_discover_agents", { text: "review_contract", kind: "all" });
        expect(all.data.agents.map((a: Json) => a.url)).toEqual([url]);
        const bad = await call(client, "mq9_discover_agents", { kind: "tools" });
        expect(bad.result.isError).toBe(true);
      } finally {
        await other.unregister({ url });
      }
    });

    it("mq9_call_agent: discovers by meaning, delegates, answers a question with task_id", async () => {
      const found = await call(client, "mq9_discover_agents", {
        semantic: "an agent that can write Python",
        limit: 1,
      });
      expect(found.data.agents[0]).toMatchObject({ name: "Python Coder", a2a: true });
      const first = await call(client, "mq9_call_agent", {
        agent: "Python Coder",
        message: "write hello world",
      });
      expect(first.data).toMatchObject({ state: "input-required", text: "Which Python version?" });
      const second = await call(client, "mq9_call_agent", {
        agent: "Python Coder",
        message: "3.12",
        task_id: first.data.task_id,
        context_id: first.data.context_id,
        timeout_seconds: 30,
      });
      expect(second.data.state).toBe("completed");
      expect(second.data.artifacts[0].text).toContain("# python 3.12");
    });

    it("errors are isError results with the broker's (or agent's) text", async () => {
      const missing = await call(client, "mq9_send_message", { mail_address: "no.such.box", payload: "x" });
      expect(missing.result.isError).toBe(true);
      expect(missing.text).toBe("mailbox no.such.box does not exist");

      const badName = await call(client, "mq9_create_mailbox", { name: "Bad Name" });
      expect(badName.result.isError).toBe(true);
      expect(badName.text).toMatch(/lowercase/);

      const badArgs = await call(client, "mq9_ack_message", { mail_address: "x" });
      expect(badArgs.result.isError).toBe(true);
      expect(badArgs.text).toMatch(/invalid arguments for mq9_ack_message: group_name/);

      const noAgent = await call(client, "mq9_call_agent", { agent: "nobody", message: "hi" });
      expect(noAgent.result.isError).toBe(true);
      expect(noAgent.text).toMatch(/no registered agent/);

      const badReset = await call(client, "mq9_fetch_messages", { mail_address: "x", reset_to: "yesterday" });
      expect(badReset.result.isError).toBe(true);
      expect(badReset.text).toMatch(/reset_to must be/);
    });
  });
}

let t: TestBroker;
let agent: A2AAgent;
let shared: SharedToolContext;

beforeAll(async () => {
  shared = new SharedToolContext(() => connect(`mq9://127.0.0.1:${t.port}`));
  t = await startBroker({
    http: { port: 0, routes: (app) => mountMcp(app, { context: () => shared.get() }) },
  });
  agent = await A2AAgent.start(await t.client(), {
    card: coderCard,
    executor: new CoderExecutor(),
    onError: () => {},
  });
  await t.broker.registry!.indexed();
});

afterAll(async () => {
  await agent.stop();
  await shared.close();
  await t.close();
});

toolSuite(
  "stdio",
  async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp", "--server", t.url],
        stderr: "pipe",
      }),
    );
    return client;
  },
  () => t,
);

toolSuite(
  "Streamable HTTP",
  async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${t.broker.http!.port}/mcp`)),
    );
    return client;
  },
  () => t,
);

describe("MCP over Streamable HTTP — the endpoint itself", () => {
  it("GET and DELETE are 405 (stateless endpoint)", async () => {
    const response = await fetch(`http://127.0.0.1:${t.broker.http!.port}/mcp`);
    expect(response.status).toBe(405);
  });
});
