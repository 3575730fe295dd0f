import type { AddressInfo } from "node:net";
import { Subjects } from "@mq9/protocol";
import { weatherToolsServer } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

type Json = Record<string, unknown>;

const MCP = "application/mcp-server-card+json";
const A2A = "application/a2a-agent-card+json";
/** ARD's identifier rule (spec §4.2.1). */
const URN = /^urn:air:[a-zA-Z0-9.-]+(:[a-zA-Z0-9._-]+){2,}$/;

const forecaster = {
  name: "forecaster",
  mailbox: "ard.forecaster",
  description: "An agent that forecasts the weather",
  skills: [{ name: "forecast", description: "Forecast the weather for a city", tags: ["weather"] }],
};
const weatherTools = weatherToolsServer;
const ledger = {
  kind: "mcp-server",
  url: "http://127.0.0.1:9/ledger/mcp",
  name: "ledger-tools",
  description: "Bookkeeping tools: weather has nothing to do with it",
};

async function http(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

describe("ARD lists MCP servers beside agents", () => {
  let t: TestBroker;
  let base: string;
  beforeAll(async () => {
    t = await startTestBroker({
      registry: { embedder: "none" },
      http: { port: 0, ard: { publisher: "agents.example.com" } },
    });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
    for (const body of [forecaster, weatherTools, ledger]) {
      expect((await t.request(Subjects.agentRegister, body)).error).toBe("");
    }
  });
  afterAll(() => t.close());

  it("manifest: a server with its card inline is data, one without is a url reference", async () => {
    const manifest = await http(base, "GET", "/.well-known/ard.json");
    expect(manifest.status).toBe(200);
    const entries = manifest.body.entries as Json[];
    const servers = entries.filter((e) => e.type === MCP);
    expect(servers).toEqual([
      {
        identifier: "urn:air:agents.example.com:mcp:127.0.0.1-9-ledger-mcp",
        displayName: "ledger-tools",
        type: MCP,
        url: "http://127.0.0.1:9/ledger/mcp",
        description: "Bookkeeping tools: weather has nothing to do with it",
        updatedAt: expect.any(String),
        metadata: { "mq9.url": "http://127.0.0.1:9/ledger/mcp" },
      },
      {
        identifier: "urn:air:agents.example.com:mcp:tools.example.com-mcp",
        displayName: "weather-tools",
        type: MCP,
        data: weatherTools.server_card,
        description: "Live weather data for any city",
        tags: ["weather"],
        capabilities: ["get_weather", "get_forecast"],
        version: "1.2.0",
        updatedAt: expect.any(String),
        metadata: { "mq9.url": "https://tools.example.com/mcp" },
      },
    ]);
    for (const entry of servers) {
      expect(entry.identifier).toMatch(URN);
      expect(("url" in entry ? 1 : 0) + ("data" in entry ? 1 : 0)).toBe(1);
    }
    expect(entries.filter((e) => e.type === A2A).map((e) => e.displayName)).toEqual(["forecaster"]);
  });

  it("search: agents and servers in one answer, filterable by type", async () => {
    const both = await http(base, "POST", "/api/v1/ard/search", { query: { text: "weather" } });
    expect(both.status).toBe(200);
    const names = (answer: { body: Json }) =>
      (answer.body.results as Json[]).map((r) => r.displayName).sort();
    expect(names(both)).toEqual(["forecaster", "ledger-tools", "weather-tools"]);
    const servers = await http(base, "POST", "/api/v1/ard/search", {
      query: { text: "weather", filter: { type: [MCP] } },
    });
    expect(names(servers)).toEqual(["ledger-tools", "weather-tools"]);
    const agents = await http(base, "POST", "/api/v1/ard/search", {
      query: { text: "weather", filter: { type: [A2A] } },
    });
    expect(names(agents)).toEqual(["forecaster"]);
    const byTool = await http(base, "POST", "/api/v1/ard/search", {
      query: { text: "forecast", filter: { capabilities: ["get_forecast"] } },
    });
    expect(names(byTool)).toEqual(["weather-tools"]);
  });

  it("listing, lookup and explore see the servers; an unknown server is NOT_FOUND", async () => {
    const listed = await http(
      base,
      "GET",
      `/api/v1/ard/agents?filter=${encodeURIComponent(`type = '${MCP}'`)}`,
    );
    expect(listed.status).toBe(200);
    expect(listed.body.total).toBe(2);
    expect((await http(base, "GET", "/api/v1/ard/agents")).body.total).toBe(3);
    const id = "urn:air:agents.example.com:mcp:tools.example.com-mcp";
    const one = await http(base, "GET", `/api/v1/ard/agents/${encodeURIComponent(id)}`);
    expect(one).toMatchObject({
      status: 200,
      body: { identifier: id, displayName: "weather-tools", type: MCP },
    });
    const missing = await http(
      base,
      "GET",
      `/api/v1/ard/agents/${encodeURIComponent("urn:air:agents.example.com:mcp:nowhere.example.com-mcp")}`,
    );
    expect(missing).toMatchObject({ status: 404, body: { errorCode: "NOT_FOUND" } });
    expect(missing.body.message).toMatch(/no live MCP server has it/);
    const explored = await http(base, "POST", "/api/v1/ard/explore", {
      resultType: { facets: [{ field: "type" }] },
    });
    expect(explored.body.facets).toEqual({
      type: {
        buckets: [
          { value: MCP, count: 2 },
          { value: A2A, count: 1 },
        ],
      },
    });
  });

  it("DISCOVER still answers agents only", async () => {
    const reply = await t.request(Subjects.agentDiscover, { text: "weather" });
    expect((reply.agents as Json[]).map((a) => a.name)).toEqual(["forecaster"]);
  });
});

describe("ARD import of MCP servers", () => {
  let t: TestBroker;
  let base: string;
  let site: import("node:http").Server;
  let siteUrl: string;
  const served = new Map<string, unknown>();
  beforeAll(async () => {
    const { createServer } = await import("node:http");
    site = createServer((req, res) => {
      const body = served.get(req.url ?? "");
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    t = await startTestBroker({ registry: { embedder: "none" }, http: { port: 0 } });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
  });
  afterAll(async () => {
    await t.close();
    await new Promise((resolve) => site.close(resolve));
  });
  const servers = async () =>
    ((await t.request(Subjects.agentDiscover, { kind: "mcp-server" })).agents as Json[])
      .map((a) => `${a.name} ${a.url}`)
      .sort();
  const serverEntry = (name: string, rest: Json) => ({
    identifier: `urn:air:publisher.test:mcp:${name}`,
    displayName: name,
    type: MCP,
    ...rest,
  });

  it("registers MCP server entries by URL (or their inline card's); no mailbox needed", async () => {
    served.set("/.well-known/ard.json", {
      specVersion: "1.0",
      entries: [
        serverEntry("weather", {
          url: "https://weather.example.com/mcp",
          description: "Weather",
          tags: ["w"],
        }),
        serverEntry("inline", {
          data: {
            name: "inline",
            remotes: [{ type: "streamable-http", url: "https://inline.example.com/mcp" }],
          },
        }),
        serverEntry("legacy", { type: "application/mcp-server+json", url: "https://legacy.example.com/mcp" }),
        serverEntry("nowhere", { data: { name: "nowhere" } }),
      ],
    });
    const answer = await http(base, "POST", "/api/v1/ard/import", { source: siteUrl });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      imported: [],
      servers: [
        {
          identifier: "urn:air:publisher.test:mcp:weather",
          name: "weather",
          url: "https://weather.example.com/mcp",
        },
        {
          identifier: "urn:air:publisher.test:mcp:inline",
          name: "inline",
          url: "https://inline.example.com/mcp",
        },
        {
          identifier: "urn:air:publisher.test:mcp:legacy",
          name: "legacy",
          url: "https://legacy.example.com/mcp",
        },
      ],
      skipped: [{ identifier: "urn:air:publisher.test:mcp:nowhere", type: MCP }],
      from: `${siteUrl}/.well-known/ard.json`,
    });
    expect(await servers()).toEqual([
      "inline https://inline.example.com/mcp",
      "legacy https://legacy.example.com/mcp",
      "weather https://weather.example.com/mcp",
    ]);
    const [inline] = (await t.request(Subjects.agentDiscover, { kind: "mcp-server", name: "inline" }))
      .agents as Json[];
    expect(inline.server_card).toMatchObject({ name: "inline" });
  });

  it("a manifest with A2A cards needs a mailbox; a refused server takes back the rest", async () => {
    const before = await servers();
    served.set("/mixed.json", {
      specVersion: "1.0",
      entries: [
        serverEntry("s1", { url: "https://s1.example.com/mcp" }),
        {
          identifier: "urn:air:publisher.test:agent:a1",
          displayName: "a1",
          type: A2A,
          data: { name: "a1", description: "an agent" },
        },
      ],
    });
    const noMailbox = await http(base, "POST", "/api/v1/ard/import", { source: `${siteUrl}/mixed.json` });
    expect(noMailbox).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(noMailbox.body.message).toMatch(/lists A2A cards: give the mailbox/);
    served.set("/refused.json", {
      specVersion: "1.0",
      entries: [
        serverEntry("fine", { url: "https://fine.example.com/mcp" }),
        serverEntry("second", { url: "https://second.example.com/mcp" }),
        serverEntry("huge", {
          data: {
            name: "huge",
            url: "https://huge.example.com/mcp",
            tools: Array.from({ length: 300 }, (_, i) => ({ name: `t${i}` })),
          },
        }),
      ],
    });
    const refused = await http(base, "POST", "/api/v1/ard/import", { source: `${siteUrl}/refused.json` });
    expect(refused).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(refused.body.message).toMatch(/300 tools/);
    expect(await servers()).toEqual(before);
  });

  it("a refused re-import puts back an MCP server it had replaced", async () => {
    await t.request(Subjects.agentRegister, {
      kind: "mcp-server",
      url: "https://kept.example.com/mcp",
      name: "kept",
      description: "the kept tools",
    });
    const before = await servers();
    served.set("/again.json", {
      specVersion: "1.0",
      entries: [
        serverEntry("kept", { url: "https://kept.example.com/mcp", description: "changed" }),
        serverEntry("huge", {
          data: {
            name: "huge",
            url: "https://huge.example.com/mcp",
            tools: Array.from({ length: 300 }, (_, i) => ({ name: `t${i}` })),
          },
        }),
      ],
    });
    const refused = await http(base, "POST", "/api/v1/ard/import", { source: `${siteUrl}/again.json` });
    expect(refused).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(await servers()).toEqual(before);
    const [kept] = (await t.request(Subjects.agentDiscover, { kind: "mcp-server", name: "kept" }))
      .agents as Json[];
    expect(kept.description).toBe("the kept tools");
  });
});
