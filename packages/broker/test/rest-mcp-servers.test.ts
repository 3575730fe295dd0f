import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

type Json = Record<string, unknown>;

const server = {
  kind: "mcp-server",
  url: "https://tools.example.com/mcp",
  description: "Live weather data",
  server_card: { name: "weather-tools", tools: [{ name: "get_weather", description: "Weather now" }] },
};

describe("REST: registering MCP servers", () => {
  let t: TestBroker;
  let base: string;
  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" }, http: { port: 0 } });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
  });
  afterAll(() => t.close());

  const http = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const names = (answer: { body: Json }) => (answer.body.agents as Json[]).map((a) => a.name);

  it("POST /api/v1/agents registers an agent or an MCP server; listings keep agents apart", async () => {
    expect(await http("POST", "/api/v1/agents/register", server)).toEqual({
      status: 200,
      body: { registered: true, kind: "mcp-server" },
    });
    expect(
      await http("POST", "/api/v1/agents/register", {
        name: "forecaster",
        mailbox: "rest.forecaster",
        payload: "weather",
      }),
    ).toEqual({ status: 200, body: { registered: true, kind: "agent" } });
    expect(names(await http("GET", "/api/v1/agents"))).toEqual(["forecaster"]);
    const servers = await http("GET", "/api/v1/agents?kind=mcp-server");
    expect(servers.body.agents).toEqual([
      expect.objectContaining({ name: "weather-tools", kind: "mcp-server", url: server.url, online: false }),
    ]);
    expect(names(await http("GET", "/api/v1/agents?kind=all"))).toEqual(["forecaster", "weather-tools"]);
    const found = await http("POST", "/api/v1/agents/discover", { query: "weather", kind: "mcp-server" });
    expect(names(found)).toEqual(["weather-tools"]);
    expect(names(await http("POST", "/api/v1/agents/discover", { query: "weather" }))).toEqual([
      "forecaster",
    ]);
  });

  it("bad registrations are 400 with REGISTER's reason and change nothing; unregister by url", async () => {
    const before = await http("GET", "/api/v1/agents?kind=all");
    const refused: [Json, RegExp][] = [
      [{ kind: "mcp-server", name: "x" }, /invalid request: body/],
      [{ kind: "mcp-server", url: "https://x.example.com/mcp", mailbox: "x.y" }, /invalid request: body/],
      [{ kind: "tool", url: "https://x.example.com/mcp" }, /invalid request: body/],
      [{ kind: "mcp-server", url: "ftp://x.example.com/mcp" }, /invalid request: body/],
      [{ kind: "mcp-server", url: "https://x.example.com/mcp", ttl: -1 }, /invalid request: body/],
      // What only REGISTER knows comes back in its words.
      [
        { mailbox: "x.y", skills: Array.from({ length: 300 }, (_, i) => ({ name: `s${i}` })) },
        /invalid AGENT.REGISTER payload: the card has 300 skills/,
      ],
    ];
    for (const [body, error] of refused) {
      const answer = await http("POST", "/api/v1/agents/register", body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error, JSON.stringify(body)).toMatch(error);
    }
    expect((await http("GET", "/api/v1/agents?kind=everything")).status).toBe(400);
    expect(await http("GET", "/api/v1/agents?kind=all")).toEqual(before);

    expect(await http("POST", "/api/v1/agents/unregister", { url: server.url })).toEqual({
      status: 200,
      body: { unregistered: true },
    });
    expect(names(await http("GET", "/api/v1/agents?kind=mcp-server"))).toEqual([]);
    expect((await http("POST", "/api/v1/agents/unregister", { colour: "red" })).status).toBe(400);
  });

  it("the OpenAPI document has the registration routes and the kind filters", async () => {
    const doc = (await http("GET", "/api/v1/openapi.json")).body as {
      paths: Record<string, Record<string, { requestBody?: Json; parameters?: { name: string }[] }>>;
    };
    const bodyOf = (path: string) => JSON.stringify(doc.paths[path].post.requestBody);
    expect(bodyOf("/api/v1/agents/register")).toContain("server_card");
    expect(bodyOf("/api/v1/agents/unregister")).toContain("url");
    expect(bodyOf("/api/v1/agents/discover")).toContain("mcp-server");
    expect(doc.paths["/api/v1/agents"].get.parameters?.map((p) => p.name)).toContain("kind");
  });
});
