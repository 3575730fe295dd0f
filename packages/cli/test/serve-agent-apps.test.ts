import { type ChildProcess, spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { connect } from "@mq9/client";
import { A2AAgent } from "@mq9/client/a2a";
import { sendTextOverHttp, TranslatorExecutor, translatorCard } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, tempDir } from "./cli-harness.js";

describe("mq9 serve mounts the MCP endpoint and the A2A gateway on its HTTP port", () => {
  let child: ChildProcess;
  let port = 0;
  let httpPort = 0;

  beforeAll(async () => {
    child = spawn(
      process.execPath,
      [CLI, "serve", "--port", "0", "--http-port", "0", "--log-format", "json", "--data", tempDir()],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    await new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk) => {
        out += chunk;
        for (const line of out.split("\n")) {
          if (!line.includes('"httpPort"')) continue;
          const ready = JSON.parse(line) as { port: number; httpPort: number };
          port = ready.port;
          httpPort = ready.httpPort;
          resolve();
        }
      });
      child.on("exit", (code) => reject(new Error(`mq9 serve exited with ${code}`)));
    });
  });

  afterAll(async () => {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  });

  it("an MCP client lists the tools at /mcp; an A2A agent's card is served at /a2a/{agent}", async () => {
    const mcp = new Client({ name: "test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${httpPort}/mcp`)));
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toContain("mq9_call_agent");
    const created = (await mcp.callTool({
      name: "mq9_create_mailbox",
      arguments: { name: "served.box" },
    })) as {
      structuredContent: unknown;
    };
    expect(created.structuredContent).toEqual({ mail_address: "served.box", created: true });
    await mcp.close();

    const client = await connect(`mq9://127.0.0.1:${port}`);
    const agent = await A2AAgent.start(client, { card: translatorCard, executor: new TranslatorExecutor() });
    try {
      const card = await fetch(`http://127.0.0.1:${httpPort}/a2a/translator/.well-known/agent-card.json`);
      expect(((await card.json()) as { name: string }).name).toBe("Translator");
      expect(await sendTextOverHttp(`http://127.0.0.1:${httpPort}/a2a/translator`, "hi")).toBe(
        "TASK_STATE_COMPLETED",
      );
    } finally {
      await agent.stop();
      await client.close();
    }
  });
});
