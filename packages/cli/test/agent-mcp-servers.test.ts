import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLines, runCli, type ServeProcess, spawnServe, stopServe, tempDir } from "./cli-harness.js";

const lines = jsonLines;
const stop = stopServe;

describe("mq9 agent register --mcp-server", () => {
  const data = tempDir();
  let serve: ServeProcess;
  const cli = (...args: string[]) => runCli([...args, "--server", `mq9://127.0.0.1:${serve.port}`]);
  beforeAll(async () => {
    serve = await spawnServe(["--data", join(data, "broker"), "--registry-embedder", "none"]);
  });
  afterAll(async () => {
    await stop(serve);
    rmSync(data, { recursive: true, force: true });
  });
  const urls = async (...args: string[]) => {
    const result = await cli("agent", "discover", ...args, "--json");
    expect(result.code, result.stderr).toBe(0);
    return lines(result.stdout)
      .map((entry) => String(entry.url ?? entry.mailbox))
      .filter((url) => !url.endsWith(`:${serve.httpPort}/mcp`))
      .sort();
  };

  it("registers, reports, lists and unregisters a server by its URL; bad flags are refused", async () => {
    const card = join(data, "card.json");
    writeFileSync(
      card,
      JSON.stringify({ name: "weather-tools", tools: [{ name: "get_weather", description: "Weather now" }] }),
    );
    const url = "https://tools.example.com/mcp";
    const registered = await cli("agent", "register", card, "--mcp-server", url, "--ttl", "0");
    expect(registered.code, registered.stderr).toBe(0);
    expect(registered.stdout).toBe("registered MCP server https://tools.example.com/mcp\n");
    expect(await urls("weather", "--kind", "mcp-server")).toEqual([url]);
    expect(await urls("weather")).toEqual([]);
    const table = await cli("agent", "discover", "get_weather", "--kind", "all");
    expect(table.stdout).toMatch(/NAME\s+MAILBOX OR URL\s+DESCRIPTION/);
    expect(table.stdout).toMatch(/weather-tools\s+https:\/\/tools.example.com\/mcp/);
    expect((await cli("agent", "report", "--mcp-server", url, "--info", "up")).code).toBe(0);

    const refused: [string[], RegExp][] = [
      [["register", "--mcp-server", url, "--mailbox", "a.b"], /--mailbox belongs to agents/],
      [["register", "--mcp-server", "ftp://x.example.com"], /'url' must be an http\(s\) URL/],
      [["discover", "--kind", "tools"], /--kind must be agent, mcp-server or all, got 'tools'/],
      [
        ["unregister", "--mcp-server", url, "--mailbox", "a.b"],
        /--mailbox \(an agent\) or --mcp-server, not both/,
      ],
    ];
    for (const [args, error] of refused) {
      const result = await cli("agent", ...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(result.stderr, args.join(" ")).toMatch(error);
    }
    expect(await urls("--kind", "mcp-server")).toEqual([url]);

    const gone = await cli("agent", "unregister", "--mcp-server", url);
    expect(gone.code, gone.stderr).toBe(0);
    expect(await urls("--kind", "mcp-server")).toEqual([]);
  });
});
