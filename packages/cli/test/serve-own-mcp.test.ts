import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { jsonLines, runCli, spawnServe, stopServe, tempDir } from "./cli-harness.js";

type Json = Record<string, unknown>;

const lines = jsonLines;
const stop = stopServe;

describe("mq9 serve registers its own MCP endpoint", () => {
  const data = tempDir();
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  it("as an MCP server with its tools, in DISCOVER (when asked) and ARD; replaced across a restart", async () => {
    const dir = join(data, "broker");
    let serve = await spawnServe(["--data", dir, "--registry-embedder", "none"]);
    const servers = async () => {
      const result = await runCli([
        "agent",
        "discover",
        "--kind",
        "mcp-server",
        "--json",
        "--server",
        `mq9://127.0.0.1:${serve.port}`,
      ]);
      expect(result.code, result.stderr).toBe(0);
      return lines(result.stdout);
    };
    try {
      const own = `http://127.0.0.1:${serve.httpPort}/mcp`;
      const [entry, ...others] = await servers();
      expect(others).toEqual([]);
      expect(entry).toMatchObject({ kind: "mcp-server", url: own, name: "mq9", ttl: 60 });
      const tools = (entry.server_card as { tools: { name: string }[] }).tools.map((tool) => tool.name);
      expect(tools).toContain("mq9_discover_agents");
      // Agents only by default: an SDK's discover()[0].mailbox never meets it.
      const agents = await runCli([
        "agent",
        "discover",
        "--json",
        "--server",
        `mq9://127.0.0.1:${serve.port}`,
      ]);
      expect(agents.stdout.trim()).toBe("");
      const manifest = (await (
        await fetch(`http://127.0.0.1:${serve.httpPort}/.well-known/ard.json`)
      ).json()) as {
        entries: Json[];
      };
      expect(manifest.entries.filter((e) => e.type === "application/mcp-server-card+json")).toEqual([
        expect.objectContaining({ displayName: "mq9", metadata: { "mq9.url": own } }),
      ]);

      // A restart (another HTTP port here) leaves one registration: the old one went at shutdown.
      await stop(serve);
      serve = await spawnServe(["--data", dir, "--registry-embedder", "none"]);
      expect((await servers()).map((s) => s.url)).toEqual([`http://127.0.0.1:${serve.httpPort}/mcp`]);
    } finally {
      await stop(serve);
    }
  });
});
