import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

/** ARD's identifier rule (spec §4.2.1): urn:air:<domain>:<segments…>, at least two after the publisher. */
const URN = /^urn:air:[a-zA-Z0-9.-]+(:[a-zA-Z0-9._-]+){2,}$/;

const translator = {
  name: "translator",
  mailbox: "ard.translator",
  description: "Translates documents between languages",
  version: "2.1.0",
  skills: [
    {
      id: "translate",
      name: "translate",
      description: "Translate a text into another language",
      tags: ["language", "translation"],
      examples: [
        "translate this contract into French",
        "what is hello in Japanese",
        "render my letter in German",
      ],
    },
  ],
};
const weather = {
  name: "weather",
  mailbox: "ard.weather",
  description: "Forecasts the weather for a city",
  skills: [
    {
      name: "forecast",
      description: "Forecast tomorrow's weather",
      tags: ["weather"],
      examples: ["rain in Oslo?"],
    },
  ],
};
const payroll = {
  name: "payroll",
  mailbox: "ard.payroll",
  description: "Calculates payroll and produces payslips",
  tags: ["finance"],
  skills: [{ name: "payslips", description: "Produce monthly payslips", tags: ["finance"] }],
};

type Json = Record<string, unknown>;

async function http(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

/** The rules of ARD §4 every entry obeys: required members, URN identifier, exactly one of url and data. */
function expectCatalogEntry(entry: Json): void {
  expect(typeof entry.identifier).toBe("string");
  expect(entry.identifier).toMatch(URN);
  expect(typeof entry.displayName).toBe("string");
  expect(typeof entry.type).toBe("string");
  expect(("url" in entry ? 1 : 0) + ("data" in entry ? 1 : 0)).toBe(1);
  if (entry.representativeQueries !== undefined) {
    expect((entry.representativeQueries as string[]).length).toBeGreaterThanOrEqual(2);
    expect((entry.representativeQueries as string[]).length).toBeLessThanOrEqual(5);
  }
  if (entry.updatedAt !== undefined) expect(Number.isNaN(Date.parse(String(entry.updatedAt)))).toBe(false);
}

describe("ARD: the manifest and the REST API", () => {
  let t: TestBroker;
  let base: string;
  beforeAll(async () => {
    t = await startTestBroker({
      registry: { embedder: "none" },
      http: { port: 0, ard: { publisher: "agents.example.com", manifestPageSize: 2 } },
    });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
    for (const card of [translator, weather, payroll]) {
      expect((await t.request(Subjects.agentRegister, card)).error).toBe("");
    }
  });
  afterAll(() => t.close());

  it("manifest: both well-known names, every registration, the registry entry, nested pages", async () => {
    const ard = await http(base, "GET", "/.well-known/ard.json");
    const legacy = await http(base, "GET", "/.well-known/ai-catalog.json");
    expect(ard.status).toBe(200);
    expect(legacy.status).toBe(200);
    expect(ard.body.specVersion).toBe("1.0");
    expect((ard.body.host as Json).displayName).toEqual(expect.any(String));
    const first = ard.body.entries as Json[];
    for (const entry of first) expectCatalogEntry(entry);
    const registry = first.find((e) => e.type === "application/ai-registry+json")!;
    expect(registry.url).toBe(`${base}/api/v1/ard`);
    // Two agents a page (manifestPageSize 2): the third is on a nested page.
    const nested = first.find((e) => e.type === "application/ai-catalog+json")!;
    expect(nested.url).toBe(`${base}/.well-known/ard.json?page=2`);
    const second = await http(base, "GET", "/.well-known/ard.json?page=2");
    expect(second.status).toBe(200);
    for (const entry of second.body.entries as Json[]) expectCatalogEntry(entry);
    const agents = [...first, ...(second.body.entries as Json[])].filter(
      (e) => e.type === "application/a2a-agent-card+json",
    );
    expect(agents.map((a) => a.displayName).sort()).toEqual(["payroll", "translator", "weather"]);
    const entry = agents.find((a) => a.displayName === "translator")!;
    expect(entry).toMatchObject({
      identifier: "urn:air:agents.example.com:agent:ard.translator",
      description: translator.description,
      version: "2.1.0",
      capabilities: ["translate"],
      tags: ["language", "translation"],
      representativeQueries: translator.skills[0].examples,
      metadata: { "mq9.mailbox": "ard.translator" },
    });
    // Without a card URL (no A2A gateway) the card is inline.
    expect((entry.data as Json).name).toBe("translator");
    // A prose payload is the description, as REGISTER reads it.
    const prose = await t.request(Subjects.agentRegister, {
      mailbox: "ard.prose",
      payload: "Writes limericks",
    });
    expect(prose.error).toBe("");
    const lookup = await http(
      base,
      "GET",
      `/api/v1/ard/agents/${encodeURIComponent("urn:air:agents.example.com:agent:ard.prose")}`,
    );
    expect(lookup.body.description).toBe("Writes limericks");
    await t.request(Subjects.agentUnregister, { mailbox: "ard.prose" });
    // One example is no set of representative queries (2–5).
    expect(agents.find((a) => a.displayName === "weather")!.representativeQueries).toBeUndefined();
    const past = await http(base, "GET", "/.well-known/ard.json?page=3");
    expect(past).toMatchObject({ status: 404, body: { errorCode: "NOT_FOUND" } });
  });

  it("search: ranked with scores 0..100 and source, filtered, paged", async () => {
    const found = await http(base, "POST", "/api/v1/ard/search", { query: { text: "translate a contract" } });
    expect(found.status).toBe(200);
    const results = found.body.results as Json[];
    expect(results[0]).toMatchObject({ displayName: "translator", source: `${base}/api/v1/ard` });
    for (const result of results) {
      expectCatalogEntry(result);
      expect(Number.isInteger(result.score)).toBe(true);
      expect(result.score as number).toBeGreaterThanOrEqual(0);
      expect(result.score as number).toBeLessThanOrEqual(100);
    }
    // The same answer as DISCOVER's, in the same order.
    const discover = await t.request(Subjects.agentDiscover, {
      semantic: "translate a contract",
      text: "translate a contract",
      min_score: 0.2,
    });
    expect(results.map((r) => (r.metadata as Json)["mq9.mailbox"])).toEqual(
      (discover.agents as Json[]).map((a) => a.mailbox),
    );
    const filtered = await http(base, "POST", "/api/v1/ard/search", {
      query: {
        text: "payslips or weather forecast",
        filter: { tags: ["finance", "nothing"], publisher: "agents.example.com" },
      },
    });
    expect((filtered.body.results as Json[]).map((r) => r.displayName)).toEqual(["payroll"]);
    const none = await http(base, "POST", "/api/v1/ard/search", {
      query: {
        text: "payslips or weather forecast",
        filter: { tags: "finance", type: "application/mcp-server-card+json" },
      },
    });
    expect(none.body.results).toEqual([]);
    const paged = await http(base, "POST", "/api/v1/ard/search", {
      query: { text: "payslips or weather forecast" },
      pageSize: 1,
    });
    expect((paged.body.results as Json[]).length).toBe(1);
    const next = await http(base, "POST", "/api/v1/ard/search", {
      query: { text: "payslips or weather forecast" },
      pageSize: 1,
      pageToken: paged.body.pageToken,
    });
    expect((next.body.results as Json[])[0].displayName).not.toBe(
      (paged.body.results as Json[])[0].displayName,
    );
    expect(next.body.pageToken).toBeUndefined();
  });

  it("search: bad requests get INVALID_ARGUMENT envelopes", async () => {
    for (const body of [
      { query: {} },
      { query: { text: "  " } },
      { query: { text: "x" }, federation: "everywhere" },
      { query: { text: "x" }, pageSize: 101 },
      { query: { text: "x" }, pageToken: "garbage" },
      { query: { text: "x" }, surprise: true },
      "{not json",
    ]) {
      const answer = await http(base, "POST", "/api/v1/ard/search", body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body).toEqual({ errorCode: "INVALID_ARGUMENT", message: expect.any(String) });
    }
  });

  it("lookup: by identifier; unknown is NOT_FOUND, malformed INVALID_ARGUMENT", async () => {
    const id = encodeURIComponent("urn:air:agents.example.com:agent:ard.weather");
    const found = await http(base, "GET", `/api/v1/ard/agents/${id}`);
    expect(found).toMatchObject({ status: 200, body: { displayName: "weather" } });
    expectCatalogEntry(found.body);
    for (const missing of [
      "urn:air:agents.example.com:agent:ard.gone",
      "urn:air:other.example.com:agent:ard.weather",
    ]) {
      const answer = await http(base, "GET", `/api/v1/ard/agents/${encodeURIComponent(missing)}`);
      expect(answer).toMatchObject({ status: 404, body: { errorCode: "NOT_FOUND" } });
    }
    const bad = await http(
      base,
      "GET",
      `/api/v1/ard/agents/${encodeURIComponent("https://x.example/agent")}`,
    );
    expect(bad).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(bad.body.message).toMatch(/must read urn:air:<publisher domain>:<namespace>:<name>/);
  });

  it("listing: Appendix A filters, ordering, paging", async () => {
    const all = await http(base, "GET", "/api/v1/ard/agents");
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    const byType = await http(
      base,
      "GET",
      `/api/v1/ard/agents?filter=${encodeURIComponent("type = 'application/a2a-agent-card+json' AND displayName = TRANS")}`,
    );
    expect((byType.body.items as Json[]).map((i) => i.displayName)).toEqual(["translator"]);
    const desc = await http(base, "GET", "/api/v1/ard/agents?orderBy=displayName%20DESC&pageSize=2");
    expect((desc.body.items as Json[]).map((i) => i.displayName)).toEqual(["weather", "translator"]);
    const rest = await http(
      base,
      "GET",
      `/api/v1/ard/agents?orderBy=displayName%20DESC&pageSize=2&pageToken=${desc.body.pageToken}`,
    );
    expect((rest.body.items as Json[]).map((i) => i.displayName)).toEqual(["payroll"]);
    const later = await http(
      base,
      "GET",
      `/api/v1/ard/agents?filter=${encodeURIComponent("updatedAfter > '2999-01-01T00:00:00Z'")}`,
    );
    expect(later.body.items).toEqual([]);
    for (const query of [
      "filter=type%20~%20x",
      "orderBy=color",
      "pageSize=0",
      "filter=createdAfter%20%3E%202020",
    ]) {
      const answer = await http(base, "GET", `/api/v1/ard/agents?${query}`);
      expect(answer, query).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    }
  });

  it("explore: facets over the matched set", async () => {
    const all = await http(base, "POST", "/api/v1/ard/explore", {
      resultType: { facets: [{ field: "type" }, { field: "tags", limit: 1 }, { field: "publisher" }] },
    });
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      resultType: "facets",
      facets: {
        type: { buckets: [{ value: "application/a2a-agent-card+json", count: 3 }] },
        tags: { buckets: [{ value: "finance", count: 1 }], otherCount: 3 },
        publisher: { buckets: [{ value: "agents.example.com", count: 3 }] },
      },
    });
    const narrowed = await http(base, "POST", "/api/v1/ard/explore", {
      query: { text: "payslips", filter: { tags: ["finance"] } },
      resultType: { facets: [{ field: "capabilities" }] },
    });
    expect(narrowed.body.facets).toEqual({ capabilities: { buckets: [{ value: "payslips", count: 1 }] } });
    const bad = await http(base, "POST", "/api/v1/ard/explore", { resultType: { facets: [] } });
    expect(bad).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
  });

  it("the OpenAPI document has the ARD routes with ARD's error envelope", async () => {
    const document = (await http(base, "GET", "/api/v1/openapi.json")).body as {
      paths: Record<string, Json>;
    };
    for (const path of [
      "/api/v1/ard/search",
      "/api/v1/ard/agents",
      "/api/v1/ard/agents/{identifier}",
      "/api/v1/ard/explore",
      "/.well-known/ard.json",
    ]) {
      expect(Object.keys(document.paths)).toContain(path);
    }
    const search = document.paths["/api/v1/ard/search"].post as { responses: Record<string, Json> };
    expect(JSON.stringify(search.responses["400"])).toContain("errorCode");
  });
});

describe("ARD federation", () => {
  let upstream: TestBroker;
  let local: TestBroker;
  let silent: import("node:http").Server;
  let base: string;
  let upstreamApi: string;
  let silentApi: string;
  beforeAll(async () => {
    const { createServer } = await import("node:http");
    // An upstream that takes every request and never answers.
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentApi = `http://127.0.0.1:${(silent.address() as import("node:net").AddressInfo).port}/api/v1/ard`;
    upstream = await startTestBroker({
      registry: { embedder: "none" },
      http: { port: 0, ard: { publisher: "upstream.example.com" } },
    });
    upstreamApi = `http://127.0.0.1:${upstream.broker.http!.port}/api/v1/ard`;
    local = await startTestBroker({
      registry: { embedder: "none" },
      http: {
        port: 0,
        ard: {
          publisher: "local.example.com",
          upstreams: [upstreamApi, silentApi],
          // Room for the real upstream on a busy machine; the silent one is cut at it.
          federationTimeoutMs: 1500,
        },
      },
    });
    base = `http://127.0.0.1:${local.broker.http!.port}`;
    expect((await local.request(Subjects.agentRegister, translator)).error).toBe("");
    expect(
      (await upstream.request(Subjects.agentRegister, { ...translator, mailbox: "up.translator" })).error,
    ).toBe("");
    expect((await upstream.request(Subjects.agentRegister, weather)).error).toBe("");
  });
  afterAll(async () => {
    await local.close();
    await upstream.close();
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  });

  const search = (federation: string | undefined, text: string) =>
    http(base, "POST", "/api/v1/ard/search", {
      query: { text },
      ...(federation ? { federation } : {}),
    });

  it("none: only the local index", async () => {
    const answer = await search("none", "translate or forecast the weather");
    expect((answer.body.results as Json[]).map((r) => r.identifier)).toEqual([
      "urn:air:local.example.com:agent:ard.translator",
    ]);
    expect(answer.body.referrals).toBeUndefined();
  });

  it("referrals: local results plus the upstream registries", async () => {
    const answer = await search("referrals", "translate or forecast the weather");
    expect((answer.body.results as Json[]).length).toBe(1);
    expect(answer.body.referrals).toEqual([
      expect.objectContaining({ type: "application/ai-registry+json", url: upstreamApi }),
      expect.objectContaining({ type: "application/ai-registry+json", url: silentApi }),
    ]);
    for (const referral of answer.body.referrals as Json[]) expect(referral.identifier).toMatch(URN);
  });

  it("auto (the default): merged, re-ranked, each source kept; a silent upstream does not hold the answer", async () => {
    const answer = await search(undefined, "translate or forecast the weather");
    expect(answer.status).toBe(200);
    const results = answer.body.results as Json[];
    const bySource = new Map(results.map((r) => [r.identifier, r.source]));
    expect(bySource.get("urn:air:local.example.com:agent:ard.translator")).toBe(`${base}/api/v1/ard`);
    expect(bySource.get("urn:air:upstream.example.com:agent:ard.weather")).toBe(upstreamApi);
    expect(bySource.get("urn:air:upstream.example.com:agent:up.translator")).toBe(upstreamApi);
    const scores = results.map((r) => r.score as number);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it("an upstream that is not a URL is refused at start", async () => {
    await expect(
      startTestBroker({
        registry: { embedder: "none" },
        http: { port: 0, ard: { upstreams: ["not a url"] } },
      }),
    ).rejects.toThrow(/ARD upstream 'not a url' is not an http\(s\) URL/);
  });
});

describe("ARD with users configured", () => {
  let t: TestBroker;
  let base: string;
  beforeAll(async () => {
    t = await startTestBroker({
      auth: {
        users: [
          { user: "root", token: "root-token", admin: true },
          { user: "alice", password: "alice-pw" },
        ],
      },
      registry: { embedder: "none" },
      http: { port: 0 },
    });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
  });
  afterAll(() => t.close());

  const ask = (path: string, authorization?: string) =>
    fetch(`${base}${path}`, {
      method: path.endsWith("/search") ? "POST" : "GET",
      headers: {
        "content-type": "application/json",
        ...(authorization ? { authorization } : {}),
      },
      body: path.endsWith("/search") ? JSON.stringify({ query: { text: "anything" } }) : undefined,
    });

  it("the manifest and the API need an admin; refusals come in ARD's envelope", async () => {
    const alice = `Basic ${Buffer.from("alice:alice-pw").toString("base64")}`;
    for (const path of ["/.well-known/ard.json", "/api/v1/ard/search", "/api/v1/ard/agents"]) {
      const anonymous = await ask(path);
      expect(anonymous.status, path).toBe(401);
      expect(await anonymous.json()).toEqual({
        errorCode: "UNAUTHENTICATED",
        message: expect.stringMatching(/authentication required/),
      });
      const notAdmin = await ask(path, alice);
      expect(notAdmin.status, path).toBe(403);
      expect(await notAdmin.json()).toEqual({
        errorCode: "PERMISSION_DENIED",
        message: expect.stringMatching(/not an admin/),
      });
      expect((await ask(path, "Bearer root-token")).status, path).toBe(200);
    }
  });
});

describe("ARD import over REST", () => {
  let t: TestBroker;
  let base: string;
  let site: import("node:http").Server;
  let siteUrl: string;
  const served = new Map<string, unknown>();
  const manifest = (entries: Json[]) => ({ specVersion: "1.0", entries });
  const card = (name: string) => ({
    name,
    description: `${name} agent`,
    skills: [{ name: `${name} skill` }],
  });
  const entry = (name: string, rest: Json) => ({
    identifier: `urn:air:publisher.test:agent:${name}`,
    displayName: name,
    type: "application/a2a-agent-card+json",
    ...rest,
  });
  beforeAll(async () => {
    const { createServer } = await import("node:http");
    site = createServer((req, res) => {
      const body = served.get(req.url ?? "");
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as import("node:net").AddressInfo).port}`;
    t = await startTestBroker({ registry: { embedder: "none" }, http: { port: 0 } });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
  });
  afterAll(async () => {
    await t.close();
    await new Promise((resolve) => site.close(resolve));
  });
  const mailboxes = async () =>
    ((await t.request(Subjects.agentDiscover, {})).agents as Json[]).map((a) => a.mailbox).sort();

  it("registers a site's manifest (falling back to ai-catalog.json), nested and by url", async () => {
    served.set("/cards/one.json", card("one"));
    served.set(
      "/.well-known/ai-catalog.json",
      manifest([
        entry("one", { url: `${siteUrl}/cards/one.json` }),
        {
          identifier: "urn:air:publisher.test:catalog:inner",
          displayName: "inner",
          type: "application/ai-catalog+json",
          data: manifest([entry("two", { data: card("two") })]),
        },
        {
          identifier: "urn:air:publisher.test:mcp:tools",
          displayName: "tools",
          type: "application/mcp-server-card+json",
          data: { name: "tools" },
        },
      ]),
    );
    const answer = await http(base, "POST", "/api/v1/ard/import", {
      source: siteUrl,
      mailbox: "pub.{name}",
      ttl: 0,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      imported: [
        { identifier: "urn:air:publisher.test:agent:one", name: "one", mailbox: "pub.one" },
        { identifier: "urn:air:publisher.test:agent:two", name: "two", mailbox: "pub.two" },
      ],
      servers: [],
      skipped: [{ identifier: "urn:air:publisher.test:mcp:tools", type: "application/mcp-server-card+json" }],
      from: `${siteUrl}/.well-known/ai-catalog.json`,
    });
    expect(await mailboxes()).toEqual(["pub.one", "pub.two"]);
  });

  it("refuses a bad manifest or an unreachable site whole; a refused REGISTER takes back the others", async () => {
    const before = await mailboxes();
    served.set(
      "/bad.json",
      manifest([entry("ok", { data: card("ok") }), entry("both", { data: card("x"), url: `${siteUrl}/x` })]),
    );
    const bad = await http(base, "POST", "/api/v1/ard/import", {
      source: `${siteUrl}/bad.json`,
      mailbox: "pub.{name}",
    });
    expect(bad).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(bad.body.message).toMatch(
      /entry 1 \(urn:air:publisher.test:agent:both\): exactly one of 'url' and 'data'/,
    );
    const gone = await http(base, "POST", "/api/v1/ard/import", {
      source: `${siteUrl}/nothing/`,
      mailbox: "pub.{name}",
    });
    expect(gone).toMatchObject({ status: 404, body: { errorCode: "NOT_FOUND" } });
    expect(gone.body.message).toMatch(/no ARD manifest found: .*ard\.json answered HTTP 404/);
    const huge = { ...card("huge"), skills: Array.from({ length: 300 }, (_, i) => ({ name: `s${i}` })) };
    served.set(
      "/refused.json",
      manifest([entry("fine", { data: card("fine") }), entry("huge", { data: huge })]),
    );
    const refused = await http(base, "POST", "/api/v1/ard/import", {
      source: `${siteUrl}/refused.json`,
      mailbox: "pub.{name}",
    });
    expect(refused).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(refused.body.message).toMatch(/skills/);
    const single = await http(base, "POST", "/api/v1/ard/import", {
      source: `${siteUrl}/refused.json`,
      mailbox: "pub.same",
    });
    expect(single.body.message).toMatch(/give a mailbox with \{name\}/);
    expect(await mailboxes()).toEqual(before);
  });

  it("a refused re-import puts back the registrations it had replaced, as they were", async () => {
    await t.request(Subjects.agentRegister, { ...card("kept"), mailbox: "pub.kept", tags: ["old"] });
    const before = await mailboxes();
    const huge = { ...card("huge"), skills: Array.from({ length: 300 }, (_, i) => ({ name: `s${i}` })) };
    served.set(
      "/again.json",
      manifest([
        entry("kept", { data: { ...card("kept"), description: "kept, changed" } }),
        entry("new", { data: card("new") }),
        entry("huge", { data: huge }),
      ]),
    );
    const refused = await http(base, "POST", "/api/v1/ard/import", {
      source: `${siteUrl}/again.json`,
      mailbox: "pub.{name}",
    });
    expect(refused).toMatchObject({ status: 400, body: { errorCode: "INVALID_ARGUMENT" } });
    expect(await mailboxes()).toEqual(before);
    const [kept] = (await t.request(Subjects.agentDiscover, { mailbox: "pub.kept" })).agents as Json[];
    expect(kept).toMatchObject({ description: "kept agent", tags: ["old"] });
  });
});
