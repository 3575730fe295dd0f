import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { MQ9_CLI } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { invoiceCard } from "./fixtures/invoice-card.js";

type Json = Record<string, unknown>;

const card = invoiceCard;

describe("mq9 serve speaks ARD", () => {
  const data = tempDir();
  let serve: ServeProcess;
  let base: string;
  beforeAll(async () => {
    serve = await spawnServe([
      "--data",
      join(data, "broker"),
      "--registry-embedder",
      "none",
      "--ard-publisher",
      "agents.example.com",
    ]);
    base = `http://127.0.0.1:${serve.httpPort}`;
  });
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
    rmSync(data, { recursive: true, force: true });
  });

  it("an A2A card's entry points at the card the A2A gateway serves; the dashboard links the manifest", async () => {
    const file = join(data, "card.json");
    // The A2A SDKs' form: the card under agent_card, which the A2A gateway serves.
    writeFileSync(file, JSON.stringify({ mailbox: "agents.invoice", agent_card: card }));
    const imported = await runCli(["agent", "register", file, "--server", `mq9://127.0.0.1:${serve.port}`]);
    expect(imported.code, imported.stderr).toBe(0);
    const manifest = (await (await fetch(`${base}/.well-known/ard.json`)).json()) as { entries: Json[] };
    const entry = manifest.entries.find((e) => e.displayName === "Invoice Checker")!;
    expect(entry).toMatchObject({
      identifier: "urn:air:agents.example.com:agent:agents.invoice",
      type: "application/a2a-agent-card+json",
      url: `${base}/a2a/agents.invoice/.well-known/agent-card.json`,
      representativeQueries: card.skills[0].examples,
    });
    expect(entry.data).toBeUndefined();
    const served = (await (await fetch(String(entry.url))).json()) as Json;
    expect(served.name).toBe("Invoice Checker");
    const page = await (await fetch(`${base}/`)).text();
    if (!page.startsWith("the mq9 dashboard is not built")) {
      expect(page).toContain('<link rel="ai-catalog" href="/.well-known/ard.json"');
    }
  });

  it("a publisher that is not a domain name is refused at start", async () => {
    const result = await runCli([
      "serve",
      "--ard-publisher",
      "not a domain",
      "--port",
      "0",
      "--http-port",
      "0",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ard\.publisher: must be a domain name.*--ard-publisher/s);
  });
});

/** A publisher's site: paths to JSON documents, changed by the tests as they go. */
class Site {
  readonly served = new Map<string, unknown>();
  private server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const body = this.served.get(req.url ?? "");
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const a2aCard = (name: string, extra: Json = {}) => ({
  name,
  description: `${name} does its job`,
  version: "1.0.0",
  skills: [{ id: "s", name: `${name} skill`, description: `the ${name} skill`, tags: ["imported"] }],
  ...extra,
});

describe("mq9 agent import reads a publisher's ARD manifest", () => {
  const data = tempDir();
  const site = new Site();
  let serve: ServeProcess;
  const cli = (...args: string[]) => runCli([...args, "--server", `mq9://127.0.0.1:${serve.port}`]);
  const names = async () => {
    const { stdout } = await cli("agent", "discover", "--json");
    return stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as Json).mailbox as string)
      .sort();
  };
  const serverUrls = async () => {
    const { stdout } = await cli("agent", "discover", "--kind", "mcp-server", "--json");
    return stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as Json).url as string)
      .filter((url) => url !== `http://127.0.0.1:${serve.httpPort}/mcp`) // mq9's own MCP endpoint
      .sort();
  };
  const manifest = (entries: Json[]) => ({ specVersion: "1.0", host: { displayName: "Publisher" }, entries });
  const server = (name: string) => ({
    identifier: `urn:air:publisher.test:mcp:${name}`,
    displayName: name,
    type: "application/mcp-server-card+json",
    url: `https://${name}.example.com/mcp`,
  });
  const entry = (name: string, rest: Json) => ({
    identifier: `urn:air:publisher.test:agent:${name}`,
    displayName: name,
    type: "application/a2a-agent-card+json",
    ...rest,
  });

  beforeAll(async () => {
    await site.start();
    serve = await spawnServe(["--data", join(data, "broker"), "--registry-embedder", "none"]);
  });
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
    await site.close();
    rmSync(data, { recursive: true, force: true });
  });

  it("imports every A2A card, by url, inline and in nested catalogs, and MCP servers by url; skips other types and says so", async () => {
    site.served.set("/cards/alpha.json", a2aCard("alpha"));
    site.served.set("/cards/gamma.json", a2aCard("gamma"));
    site.served.set(
      "/catalogs/more.json",
      manifest([entry("gamma", { url: `${site.url}/cards/gamma.json` })]),
    );
    site.served.set(
      "/.well-known/ard.json",
      manifest([
        entry("alpha", { url: `${site.url}/cards/alpha.json` }),
        entry("beta", { data: a2aCard("beta") }),
        {
          identifier: "urn:air:publisher.test:server:weather",
          displayName: "Weather",
          type: "application/mcp-server-card+json",
          url: `${site.url}/mcp/weather.json`,
        },
        {
          identifier: "urn:air:publisher.test:catalog:more",
          displayName: "More",
          type: "application/ai-catalog+json",
          url: `${site.url}/catalogs/more.json`,
        },
        {
          identifier: "urn:air:publisher.test:skill:pptx",
          displayName: "pptx",
          type: "application/ai-skill",
          url: `${site.url}/skills/pptx`,
        },
      ]),
    );
    const host = site.url.replace("http://", "");
    const result = await cli("agent", "import", `http://${host}`, "--mailbox", "pub.{name}");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("imported alpha → pub.alpha");
    expect(result.stdout).toContain(`imported MCP server Weather → ${site.url}/mcp/weather.json`);
    expect(result.stdout).toContain("skipped urn:air:publisher.test:skill:pptx (application/ai-skill)");
    expect(await names()).toEqual(["pub.alpha", "pub.beta", "pub.gamma"]);
    expect(await serverUrls()).toEqual([`${site.url}/mcp/weather.json`]);
  });

  it("falls back to ai-catalog.json", async () => {
    site.served.delete("/.well-known/ard.json");
    site.served.set("/.well-known/ai-catalog.json", manifest([entry("delta", { data: a2aCard("delta") })]));
    const result = await cli("agent", "import", `${site.url}/`, "--mailbox", "pub.{name}");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(
      `imported delta → pub.delta (from ${site.url}/.well-known/ai-catalog.json)`,
    );
  });

  it("a bad manifest is refused whole, naming the entry and the rule; nothing is imported", async () => {
    const before = await names();
    const bad: [Json[], RegExp][] = [
      [
        [entry("one", { data: a2aCard("one") }), entry("two", {})],
        /entry 1 \(urn:air:publisher.test:agent:two\): exactly one of 'url' and 'data'/,
      ],
      [
        [{ ...entry("x", { data: a2aCard("x") }), identifier: "https://x.test/agent" }],
        /entry 0 .*'identifier' .*urn:air:/,
      ],
      [[entry("y", { data: { description: "no name" } })], /entry 0 .*not an A2A agent card/],
      [
        [entry("z", { url: `${site.url}/cards/missing.json` })],
        /entry 0 .*its url could not be read: .*HTTP 404/,
      ],
      [
        [
          entry("ok", { data: a2aCard("ok") }),
          {
            identifier: "urn:air:publisher.test:catalog:bad",
            displayName: "Bad",
            type: "application/ai-catalog+json",
            data: {
              specVersion: "1.0",
              entries: [{ identifier: "urn:air:publisher.test:agent:q", type: "x" }],
            },
          },
        ],
        /entry 1 .* → its data: entry 0 .*'displayName' is required/,
      ],
    ];
    for (const [entries, error] of bad) {
      const file = join(data, "bad.json");
      writeFileSync(file, JSON.stringify(manifest(entries)));
      const result = await cli("agent", "import", file, "--mailbox", "pub.{name}");
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(error);
    }
    // A REGISTER refused midway (too many skills) takes back the cards registered before it, and
    // puts back the earlier registration of alpha that it had replaced.
    const tooMany = a2aCard("huge", { skills: Array.from({ length: 300 }, (_, i) => ({ name: `s${i}` })) });
    const file = join(data, "refused.json");
    writeFileSync(
      file,
      JSON.stringify(
        manifest([
          entry("alpha", { data: a2aCard("alpha", { description: "alpha, changed" }) }),
          entry("fine", { data: a2aCard("fine") }),
          entry("huge", { data: tooMany }),
        ]),
      ),
    );
    const refused = await cli("agent", "import", file, "--mailbox", "pub.{name}");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/skills/);
    expect(await names()).toEqual(before);
    const alpha = await cli("agent", "get", "--mailbox", "pub.alpha", "--json");
    expect(JSON.parse(alpha.stdout)).toMatchObject({ description: "alpha does its job" });
  });

  it("an unreachable publisher gets a clear error", async () => {
    const closed = new Site();
    await closed.start();
    await closed.close();
    const result = await cli("agent", "import", closed.url, "--mailbox", "pub.{name}");
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /no ARD manifest or agent card found: .*ard\.json could not be reached \(ECONNREFUSED\)/,
    );
  });

  it("--every re-crawls and removes what left the manifest, agents and MCP servers alike", async () => {
    site.served.delete("/.well-known/ai-catalog.json");
    site.served.set(
      "/.well-known/ard.json",
      manifest([
        entry("left", { data: a2aCard("left") }),
        entry("stays", { data: a2aCard("stays") }),
        server("gone"),
        server("kept"),
      ]),
    );
    const child = spawn(
      process.execPath,
      [
        MQ9_CLI,
        "agent",
        "import",
        site.url,
        "--mailbox",
        "crawl.{name}",
        "--every",
        "1",
        "--server",
        `mq9://127.0.0.1:${serve.port}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    const waitFor = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await check()).toBe(true);
    };
    await waitFor(async () => (await names()).includes("crawl.left"));
    expect(await serverUrls()).toEqual(
      expect.arrayContaining(["https://gone.example.com/mcp", "https://kept.example.com/mcp"]),
    );
    site.served.set(
      "/.well-known/ard.json",
      manifest([entry("stays", { data: a2aCard("stays") }), server("kept")]),
    );
    await waitFor(async () => !(await names()).includes("crawl.left"));
    await waitFor(async () => !(await serverUrls()).includes("https://gone.example.com/mcp"));
    expect(await names()).toContain("crawl.stays");
    expect(await serverUrls()).toContain("https://kept.example.com/mcp");
    expect(out).toContain("removed crawl.left");
    expect(out).toContain("removed MCP server https://gone.example.com/mcp");
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  });
});
