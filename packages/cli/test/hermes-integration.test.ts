import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readCardFile } from "@mq9/bridge";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CLI } from "./cli-harness.js";

const root = fileURLToPath(new URL("../../../integrations/hermes/", import.meta.url));
const json = (file: string) => JSON.parse(readFileSync(join(root, file), "utf8"));

describe("integrations/hermes — the config-only Hermes plugin", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker();
  });
  afterAll(async () => {
    await t.close();
  });

  it("is an Agent Plugins v1 package: manifest, MCP entry, skills named like their folders", () => {
    const manifest = json("plugin.json");
    expect(manifest.$schema).toBe("https://agent-plugins.org/schemas/1.0.0/plugin.schema.json");
    expect(manifest.name).toMatch(/^[a-z0-9][a-z0-9.-]*$/);
    expect(json("mcp.json").mcpServers.mq9).toMatchObject({ type: "stdio", command: "mq9" });
    for (const skill of readdirSync(join(root, "skills"))) {
      const text = readFileSync(join(root, "skills", skill, "SKILL.md"), "utf8");
      const front = parse(text.split("---")[1]) as { name: string; description: string };
      expect(front.name).toBe(skill);
      expect(front.description.length).toBeGreaterThan(50);
      expect(text).toMatch(/mq9_discover_agents[\s\S]*mq9_call_agent/);
    }
  });

  it("the config.yaml snippet starts an MCP server Hermes can list the tools of", async () => {
    const config = parse(readFileSync(join(root, "config.yaml"), "utf8")) as {
      mcp_servers: { mq9: { command: string; args: string[] } };
    };
    const { command, args } = config.mcp_servers.mq9;
    expect(command).toBe("mq9");
    const client = new Client({ name: "hermes-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Hermes' own ${VAR} placeholder
        args: [CLI, ...args.map((a) => (a === "${MQ9_SERVER}" ? t.url : a))],
        stderr: "pipe",
      }),
    );
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["mq9_discover_agents", "mq9_call_agent"]),
    );
    await client.close();
  });

  it("mcp.json runs as installed: `mq9` by name from PATH, no unexpanded variables, MQ9_SERVER from the env", async () => {
    const text = readFileSync(join(root, "mcp.json"), "utf8");
    // Hermes expands only ${PLUGIN_ROOT} and ${PLUGIN_DATA} in a plugin's mcp.json.
    expect(text.replace(/\$\{PLUGIN_(ROOT|DATA)\}/g, "")).not.toContain("${");
    const { command, args } = json("mcp.json").mcpServers.mq9 as { command: string; args: string[] };
    const bin = mkdtempSync(join(tmpdir(), "mq9-bin-"));
    writeFileSync(join(bin, "mq9"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(bin, "mq9"), 0o755);
    const client = new Client({ name: "hermes-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command,
        args,
        env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME ?? "/", MQ9_SERVER: t.url },
        stderr: "pipe",
      }),
    );
    const result = await client.callTool({ name: "mq9_discover_agents", arguments: {} });
    expect(result.isError).toBeFalsy();
    await client.close();
  });

  it("the example agent cards load for mq9 agent serve", () => {
    expect(readCardFile(join(root, "example/python-coder.yaml")).skills).toHaveLength(1);
    expect(readCardFile(join(root, "example/reviewer.yaml")).name).toBe("Code Reviewer");
  });
});
