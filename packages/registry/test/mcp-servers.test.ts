import { rmSync } from "node:fs";
import { Subjects } from "@mq9/protocol";
import { weatherToolsServer } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

type Json = Record<string, unknown>;

const weatherServer = weatherToolsServer;
const weatherAgent = {
  name: "forecaster",
  mailbox: "agents.forecaster",
  description: "An agent that forecasts the weather",
  tags: ["weather"],
};

interface Discovered {
  error: string;
  agents: Json[];
  total?: number;
}

async function discover(t: TestBroker, body: Json): Promise<Discovered> {
  return (await t.request(Subjects.agentDiscover, body)) as unknown as Discovered;
}

const names = (reply: Discovered) => reply.agents.map((a) => a.name);

describe("MCP servers in the registry (REGISTER kind, DISCOVER kind)", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" } });
    expect((await t.request(Subjects.agentRegister, weatherAgent)).error).toBe("");
    expect((await t.request(Subjects.agentRegister, weatherServer)).error).toBe("");
  });
  afterAll(() => t.close());

  it("DISCOVER answers agents only unless its kind asks for MCP servers", async () => {
    for (const body of [{}, { text: "weather" }, { tags: ["weather"] }, { semantic: "weather" }]) {
      const agents = await discover(t, body);
      expect(agents.error, JSON.stringify(body)).toBe("");
      expect(names(agents), JSON.stringify(body)).toEqual(["forecaster"]);
      // The first entry's mailbox is one an SDK can send to.
      expect(agents.agents[0].mailbox).toBe("agents.forecaster");
    }
    expect((await discover(t, {})).total).toBe(1);
    const servers = await discover(t, { kind: "mcp-server", text: "weather" });
    expect(servers.error).toBe("");
    expect(names(servers)).toEqual(["weather-tools"]);
    expect(servers.agents[0]).toMatchObject({ kind: "mcp-server", url: "https://tools.example.com/mcp" });
    expect(servers.agents[0].mailbox).toBeUndefined();
    expect(names(await discover(t, { kind: "mcp-server", text: "forecast" }))).toEqual(["weather-tools"]);
    const both = await discover(t, { kind: ["agent", "mcp-server"] });
    expect(names(both)).toEqual(["forecaster", "weather-tools"]);
    expect(both.total).toBe(2);
    expect((await discover(t, { kind: "mcp-server" })).total).toBe(1);
  });

  it("registering the same URL again replaces the server; UNREGISTER and REPORT find it by url", async () => {
    const url = "https://replace.example.com/mcp";
    expect((await t.request(Subjects.agentRegister, { kind: "mcp-server", url, name: "first" })).error).toBe(
      "",
    );
    expect(
      (await t.request(Subjects.agentRegister, { kind: "mcp-server", url: `${url}`, name: "second" })).error,
    ).toBe("");
    expect(names(await discover(t, { kind: "mcp-server", name: "first" }))).toEqual([]);
    expect(names(await discover(t, { kind: "mcp-server", name: "second" }))).toEqual(["second"]);
    expect((await t.request(Subjects.agentReport, { url, report_info: "up" })).error).toBe("");
    const [reported] = (await discover(t, { kind: "mcp-server", name: "second", include_status: true }))
      .agents;
    expect(reported._status).toMatchObject({ report_info: "up" });
    expect((await t.request(Subjects.agentUnregister, { url })).error).toBe("");
    expect(names(await discover(t, { kind: "mcp-server", name: "second" }))).toEqual([]);
  });

  it("bad registrations get clear errors and change nothing", async () => {
    const before = await discover(t, { kind: ["agent", "mcp-server"] });
    const refused: [Json, RegExp][] = [
      [{ kind: "mcp-server", name: "no-url" }, /an MCP server needs 'url'/],
      [{ kind: "mcp-server", url: "ftp://x.example.com/mcp" }, /'url' must be an http\(s\) URL/],
      [{ kind: "mcp-server", url: "not a url" }, /is not a URL/],
      [{ kind: "mcp-server", url: 42 }, /'url' must be a string/],
      [
        { kind: "mcp-server", url: "https://x.example.com/mcp", mailbox: "x.inbox" },
        /'mailbox' belongs to agents: an MCP server .* has no mailbox/,
      ],
      [
        { kind: "mcp-server", url: "https://x.example.com/mcp", agent_card: { name: "x" } },
        /'agent_card' belongs to agents/,
      ],
      [{ kind: "mcp-server", url: "https://x.example.com/mcp", skills: [] }, /'skills' belongs to agents/],
      [
        { kind: "mcp-server", url: "https://x.example.com/mcp", server_card: "x" },
        /'server_card' must be a JSON object/,
      ],
      [
        { kind: "tool", name: "x", mailbox: "x.inbox" },
        /unknown 'kind' "tool": give "agent" or "mcp-server"/,
      ],
      [{ kind: 3, name: "x", mailbox: "x.inbox" }, /unknown 'kind' 3/],
      [{ name: "x" }, /missing field 'mailbox'/],
    ];
    for (const [body, error] of refused) {
      const reply = await t.request(Subjects.agentRegister, body);
      expect(reply.error, JSON.stringify(body)).toMatch(error);
    }
    expect((await t.request(Subjects.agentDiscover, { kind: "tools" })).error).toMatch(
      /'kind' must be "agent" or "mcp-server", or an array of them; got "tools"/,
    );
    expect((await t.request(Subjects.agentDiscover, { kind: [] })).error).toMatch(/'kind' must be/);
    expect((await t.request(Subjects.agentDiscover, { type: "mcp-server" })).error).toMatch(
      /unknown field 'type'; did you mean 'kind'\?/,
    );
    expect((await t.request(Subjects.agentUnregister, { url: "x", mailbox: "a.b" })).error).toMatch(
      /give 'mailbox' \(an agent\) or 'url' \(an MCP server\), not both/,
    );
    expect(await discover(t, { kind: ["agent", "mcp-server"] })).toEqual(before);
  });
});

describe("MCP servers across a restart", () => {
  it("the kind survives: the server stays out of agent answers and is found as a server", async () => {
    const first = await startTestBroker({ registry: { embedder: "none" } });
    const dataDir = first.dataDir;
    expect((await first.request(Subjects.agentRegister, weatherServer)).error).toBe("");
    expect((await first.request(Subjects.agentRegister, weatherAgent)).error).toBe("");
    await first.broker.close();
    const second = await startTestBroker({ registry: { embedder: "none" }, dataDir });
    try {
      expect(names(await discover(second, {}))).toEqual(["forecaster"]);
      expect(names(await discover(second, { kind: "mcp-server" }))).toEqual(["weather-tools"]);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("MCP servers with users configured", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker({
      registry: { embedder: "none" },
      auth: {
        users: [
          { user: "alice", password: "alice-pw" },
          { user: "bob", password: "bob-pw" },
          { user: "root", token: "root-token", admin: true },
          {
            user: "reader",
            password: "reader-pw",
            permissions: {
              publish: { allow: ["$mq9.AI.>"], deny: [Subjects.agentRegister] },
              subscribe: { allow: ["_INBOX.>"] },
            },
          },
        ],
      },
    });
  });
  afterAll(() => t.close());

  it("REGISTER of an MCP server needs REGISTER's rights, and only its owner changes it", async () => {
    const alice = await t.nats({ user: "alice", pass: "alice-pw" });
    const bob = await t.nats({ user: "bob", pass: "bob-pw" });
    const request = async (nc: typeof alice, subject: string, body: Json) =>
      JSON.parse(new TextDecoder().decode((await nc.request(subject, JSON.stringify(body))).data)) as Json;
    const server = { kind: "mcp-server", url: "https://alice.example.com/mcp", name: "alice-tools" };
    expect((await request(alice, Subjects.agentRegister, server)).error).toBe("");
    expect((await request(bob, Subjects.agentRegister, { ...server, name: "bob-tools" })).error).toMatch(
      /permission denied: the registration of mcp-server:https:\/\/alice.example.com\/mcp belongs to another user/,
    );
    expect((await request(bob, Subjects.agentUnregister, { url: server.url })).error).toMatch(
      /permission denied/,
    );
    const listed = JSON.parse(
      new TextDecoder().decode(
        (await bob.request(Subjects.agentDiscover, JSON.stringify({ kind: "mcp-server" }))).data,
      ),
    ) as Discovered;
    expect(names(listed)).toEqual(["alice-tools"]);
    // A user who may not REGISTER may not register an MCP server either.
    const reader = await t.nats({ user: "reader", pass: "reader-pw" });
    await expect(
      reader.request(
        Subjects.agentRegister,
        JSON.stringify({ ...server, url: "https://r.example.com/mcp" }),
        {
          timeout: 2_000,
        },
      ),
    ).rejects.toThrow(/permission|timeout/i);
    expect(names(await discover(t, { kind: "mcp-server" }))).toEqual(["alice-tools"]);
    await reader.close();
    await alice.close();
    await bob.close();
  });
});

describe("MCP servers ranked by meaning", () => {
  it("semantic and hybrid DISCOVERs keep to the kinds asked for", async () => {
    const t = await startTestBroker();
    try {
      expect((await t.request(Subjects.agentRegister, weatherAgent)).error).toBe("");
      expect((await t.request(Subjects.agentRegister, weatherServer)).error).toBe("");
      await t.broker.registry!.indexed();
      for (const extra of [{}, { text: "weather" }]) {
        const query = { semantic: "wind speed in a city", ...extra };
        expect(names(await discover(t, query))).toEqual(["forecaster"]);
        expect(names(await discover(t, { ...query, kind: "mcp-server" }))).toEqual(["weather-tools"]);
        expect(names(await discover(t, { ...query, kind: ["agent", "mcp-server"] })).sort()).toEqual([
          "forecaster",
          "weather-tools",
        ]);
      }
    } finally {
      await t.close();
    }
  });
});
