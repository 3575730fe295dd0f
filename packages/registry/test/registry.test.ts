import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sleep, startTestBroker, type TestBroker, tempDir } from "./harness.js";

type Agent = Record<string, unknown> & { name: string; mailbox: string };
type Discovered = { error: string; agents: Agent[]; warning?: string };

/** An A2A v1.0 AgentCard (proto JSON), as an agent serves it at /.well-known/agent-card.json. */
const v1Card = {
  name: "invoice-checker",
  description: "Validates invoices against purchase orders.",
  version: "0.4.0",
  supportedInterfaces: [
    { url: "mq9://localhost/agent.invoice.inbox", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  ],
  capabilities: { streaming: true },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["application/json"],
  skills: [
    {
      id: "check-invoice",
      name: "Check invoice",
      description: "Compare an invoice with its purchase order and list mismatches.",
      tags: ["finance", "invoice"],
      examples: ["Check invoice INV-7 against PO-12"],
    },
    {
      id: "vat",
      name: "VAT breakdown",
      description: "Split the value added tax of an invoice per rate.",
      tags: ["finance", "tax"],
    },
  ],
};

/** An A2A v0.3 AgentCard (url + preferredTransport + protocolVersion at the top). */
const v03Card = {
  name: "weather-oracle",
  description: "Forecasts for any city.",
  url: "https://weather.example/a2a",
  preferredTransport: "JSONRPC",
  protocolVersion: "0.3.0",
  version: "2.1.0",
  capabilities: { streaming: false },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [
    {
      id: "forecast",
      name: "Forecast",
      description: "Hourly rain, wind and temperature forecast for the next seven days.",
      tags: ["weather", "forecast"],
      examples: ["Will it rain in Lisbon tomorrow?"],
    },
  ],
};

const names = (reply: Discovered) => reply.agents.map((a) => a.name);

describe("agent registry over the wire", () => {
  let t: TestBroker;
  const discover = (body?: Record<string, unknown> | string) =>
    t.request<Discovered>(Subjects.agentDiscover, body) as Promise<Discovered>;

  beforeAll(async () => {
    t = await startTestBroker();
  });
  afterAll(() => t.close());

  it("register — SDK bodies are returned unchanged by DISCOVER, with agent_info added", async () => {
    const body = {
      name: "demo.js.translator",
      mailbox: "demo.translator.inbox",
      payload: "Multilingual translation agent. Supports EN, ZH, JA, KO. Input: text + target language.",
      extra: { nested: [1, 2, 3] },
    };
    expect(await t.request(Subjects.agentRegister, body)).toEqual({ error: "" });
    const reply = await discover({ text: "translator" });
    expect(reply.error).toBe("");
    expect(reply.agents).toEqual([{ ...body, agent_info: body.payload }]);
  });

  it("discover — include_agent_info: false leaves out the derived agent_info, not a body's own", async () => {
    const card = {
      name: "lean-card",
      mailbox: "lean.card.inbox",
      description: "Counts herons",
      skills: [{ id: "h", name: "Herons", description: "Counts herons at dawn.", tags: ["birds"] }],
    };
    await t.request(Subjects.agentRegister, card);
    const own = {
      name: "lean-own",
      mailbox: "lean.own.inbox",
      description: "lean pelican",
      agent_info: "mine",
    };
    await t.request(Subjects.agentRegister, own);
    const full = (await discover({ text: "herons" })).agents[0];
    expect(JSON.parse(full.agent_info as string)).toEqual(card);
    const lean = (await discover({ text: "herons", include_agent_info: false })).agents[0];
    expect(lean).toEqual(card);
    expect((await discover({ text: "pelican", include_agent_info: false })).agents).toEqual([own]);
    // Both shapes are cached side by side; the full one is still the default, null included.
    expect((await discover({ text: "herons" })).agents[0]).toEqual(full);
    expect((await discover({ text: "herons", include_agent_info: null })).agents[0]).toEqual(full);
    expect((await discover({ include_agent_info: "no" })).error).toMatch(
      /'include_agent_info' must be true or false/,
    );
  });

  it("register — A2A v1.0 and v0.3 cards (bare, and as agent_card) are indexed by their skills", async () => {
    await t.request(Subjects.agentRegister, { ...v1Card, mailbox: "agent.invoice.inbox" });
    await t.request(Subjects.agentRegister, {
      name: "weather.mailbox",
      mailbox: "mq9://localhost:4332/agent.weather.inbox",
      payload: v03Card.description,
      agent_card: v03Card,
    });
    const byTag = await discover({ tags: ["tax"] });
    expect(byTag.agents).toHaveLength(1);
    expect(byTag.agents[0]).toMatchObject({
      name: "invoice-checker",
      mailbox: "agent.invoice.inbox",
      version: "0.4.0",
    });
    expect(byTag.agents[0].skills).toEqual(v1Card.skills);
    expect(names(await discover({ text: "purchase order mismatches" }))).toEqual(["invoice-checker"]);
    expect(names(await discover({ text: "rain wind" }))).toEqual(["weather.mailbox"]);
    const weather = (await discover({ tags: ["Weather"] })).agents[0];
    expect(weather.mailbox).toBe("mq9://localhost:4332/agent.weather.inbox");
    expect(weather.agent_card).toEqual(v03Card);
    expect(weather.agent_info).toBe(v03Card.description);
  });

  it("register — RobustMQ's form with the card as a JSON string in payload is indexed too", async () => {
    const card = {
      ...v03Card,
      name: "tide-tables",
      skills: [
        { id: "t", name: "Tides", description: "High and low tide times for harbours.", tags: ["sea"] },
      ],
    };
    await t.request(Subjects.agentRegister, { mailbox: "agent.tides", payload: JSON.stringify(card) });
    const [entry] = (await discover({ text: "harbours" })).agents;
    expect(entry).toMatchObject({
      name: "tide-tables",
      mailbox: "agent.tides",
      agent_info: JSON.stringify(card),
    });
  });

  it("register — a second REGISTER of the same mailbox replaces the first", async () => {
    await t.request(Subjects.agentRegister, {
      name: "shape.shifter",
      mailbox: "shifter.inbox",
      payload: "Bakes sourdough bread",
    });
    await t.request(Subjects.agentRegister, {
      name: "shape.shifter",
      mailbox: "shifter.inbox",
      payload: "Tunes pianos",
    });
    expect(names(await discover({ text: "sourdough" }))).toEqual([]);
    expect(names(await discover({ text: "pianos" }))).toEqual(["shape.shifter"]);
    const all = await discover({ limit: 1000 });
    expect(all.agents.filter((a) => a.mailbox === "shifter.inbox")).toHaveLength(1);
  });

  it("unregister — by mailbox (SDKs) and by name (RobustMQ/MCP); unknown agents are not an error", async () => {
    await t.request(Subjects.agentRegister, {
      name: "gone.a",
      mailbox: "gone.a.inbox",
      payload: "zebra keeper",
    });
    await t.request(Subjects.agentRegister, {
      name: "gone.b",
      mailbox: "gone.b.inbox",
      payload: "zebra painter",
    });
    expect(await t.request(Subjects.agentUnregister, { mailbox: "gone.a.inbox" })).toEqual({ error: "" });
    expect(names(await discover({ text: "zebra" }))).toEqual(["gone.b"]);
    expect(await t.request(Subjects.agentUnregister, { name: "gone.b" })).toEqual({ error: "" });
    expect(names(await discover({ text: "zebra" }))).toEqual([]);
    expect(await t.request(Subjects.agentUnregister, { name: "never.was" })).toEqual({ error: "" });
    expect(await t.request(Subjects.agentUnregister, { mailbox: "mq9://localhost/never.was" })).toEqual({
      error: "",
    });
  });

  it("report — records status and last-seen, visible with include_status; unknown agent is an error", async () => {
    await t.request(Subjects.agentRegister, {
      name: "beat",
      mailbox: "beat.inbox",
      payload: "metronome heartbeat",
    });
    const [plain] = (await discover({ text: "metronome" })).agents;
    expect(plain).not.toHaveProperty("_status");
    const [before] = (await discover({ text: "metronome", include_status: true })).agents;
    expect(before._status).toBeNull();
    expect(typeof before._last_seen).toBe("number");
    const report = { name: "beat", mailbox: "beat.inbox", report_info: "healthy", load: 0.3 };
    expect(await t.request(Subjects.agentReport, report)).toEqual({ error: "" });
    const [after] = (await discover({ text: "metronome", include_status: true })).agents;
    expect(after._status).toEqual(report);
    expect(after._last_seen as number).toBeGreaterThanOrEqual(before._last_seen as number);
    expect(await t.request(Subjects.agentReport, { mailbox: "nobody.inbox" })).toEqual({
      error: "agent not found",
      code: "AGENT_NOT_FOUND",
    });
    expect(await t.request(Subjects.agentReport, { name: "nobody" })).toEqual({
      error: "agent not found",
      code: "AGENT_NOT_FOUND",
    });
  });

  it("discover — list-all orders by name and always paginates", async () => {
    const fresh = await startTestBroker();
    try {
      for (const n of ["c", "a", "e", "b", "d"]) {
        await fresh.request(Subjects.agentRegister, {
          name: `p.${n}`,
          mailbox: `p.${n}.inbox`,
          payload: "pager",
        });
      }
      const page = async (body: Record<string, unknown>) =>
        names((await fresh.request(Subjects.agentDiscover, body)) as unknown as Discovered);
      expect(await page({})).toEqual(["p.a", "p.b", "p.c", "p.d", "p.e"]);
      expect(await page({ limit: 2 })).toEqual(["p.a", "p.b"]);
      expect(await page({ limit: 2, page: 3 })).toEqual(["p.e"]);
      expect(await page({ limit: 2, page: 4 })).toEqual([]);
      expect(await page({ limit: 2, page: 0 })).toEqual(["p.a", "p.b"]);
      expect(await page({ limit: 0 })).toHaveLength(5);
      expect(await page({ text: "pager", limit: 2, page: 3 })).toHaveLength(1);
      // The embedder loads at the first need: on a loaded machine that alone can outlast a request timeout.
      await fresh.broker.registry!.indexed();
      expect(await page({ semantic: "pager", limit: 2, page: 3 })).toHaveLength(1);
      expect(await page({ semantic: "pager", limit: 2, page: 9 })).toEqual([]);
      expect(await fresh.request(Subjects.agentDiscover, "")).toMatchObject({ error: "" });
    } finally {
      await fresh.close();
    }
  });

  it("discover — tag filters intersect, and combine with every ranking", async () => {
    const fresh = await startTestBroker();
    try {
      const reg = (name: string, tags: string[], payload: string) =>
        fresh.request(Subjects.agentRegister, { name, mailbox: `${name}.inbox`, payload, tags });
      await reg("py.gen", ["python", "codegen"], "Writes Python code from a specification");
      await reg("py.lint", ["python", "lint"], "Reviews Python code for style problems");
      await reg("go.gen", ["go", "codegen"], "Writes Go code from a specification");
      const ask = async (body: Record<string, unknown>) =>
        names((await fresh.request(Subjects.agentDiscover, body)) as unknown as Discovered);
      expect(await ask({ tags: ["python", "codegen"] })).toEqual(["py.gen"]);
      expect(await ask({ tags: ["python"] })).toEqual(["py.gen", "py.lint"]);
      expect(await ask({ tags: ["python", "rust"] })).toEqual([]);
      expect((await ask({ tags: ["codegen"], text: "specification" })).sort()).toEqual(["go.gen", "py.gen"]);
      expect(await ask({ tags: ["python"], text: "specification" })).toEqual(["py.gen"]);
      expect(await ask({ tags: ["go"], semantic: "review my python for style issues" })).toEqual(["go.gen"]);
      expect(await ask({ tags: ["python"], semantic: "review code style", text: "style" })).toEqual([
        "py.lint",
        "py.gen",
      ]);
    } finally {
      await fresh.close();
    }
  });

  it("discover — semantic finds paraphrases full-text cannot; hybrid keeps the semantic winner", async () => {
    const fresh = await startTestBroker();
    try {
      const reg = (name: string, payload: string) =>
        fresh.request(Subjects.agentRegister, { name, mailbox: `${name}.inbox`, payload });
      await reg("translator", "Translates documents between English, Chinese, Japanese and Korean.");
      await reg("payroll", "Computes salaries, withholding and payslips for employees.");
      await reg("weather", "Gives rain and temperature forecasts for cities.");
      const ask = async (body: Record<string, unknown>) =>
        (await fresh.request(Subjects.agentDiscover, body)) as unknown as Discovered;
      const query = "put this letter into another language";
      expect(names(await ask({ text: query }))).toEqual([]);
      const semantic = await ask({ semantic: query });
      expect(semantic.warning).toBeUndefined();
      expect(names(semantic)[0]).toBe("translator");
      expect(names(semantic)).toHaveLength(3);
      expect(names(await ask({ semantic: "how much will staff be paid this month" }))[0]).toBe("payroll");
      expect(names(await ask({ semantic: query, text: query }))[0]).toBe("translator");
      expect(
        names(await ask({ semantic: "is it going to be sunny", text: "temperature", limit: 1 })),
      ).toEqual(["weather"]);
      // Scores only on request, best first, so callers can apply their own threshold.
      expect(semantic.agents[0]._score).toBeUndefined();
      const scored = (await ask({ semantic: query, include_score: true })).agents.map(
        (a) => a._score as number,
      );
      expect(scored).toHaveLength(3);
      expect(scored.every((score) => typeof score === "number")).toBe(true);
      expect([...scored].sort((a, b) => b - a)).toEqual(scored);
      expect(scored[0]).toBeGreaterThan(scored[2]);
      const byText = (await ask({ text: "salaries", include_score: true })).agents;
      expect(byText.map((a) => [a.name, typeof a._score])).toEqual([["payroll", "number"]]);
    } finally {
      await fresh.close();
    }
  });

  it("discover — online keeps only agents heard from within their ttl", async () => {
    await t.request(Subjects.agentRegister, {
      name: "live.one",
      mailbox: "live.one.inbox",
      payload: "quokka",
      ttl: 60,
    });
    await t.request(Subjects.agentRegister, {
      name: "static.one",
      mailbox: "static.one.inbox",
      payload: "quokka",
    });
    expect(names(await discover({ text: "quokka" })).sort()).toEqual(["live.one", "static.one"]);
    expect(names(await discover({ text: "quokka", online: true }))).toEqual(["live.one"]);
    expect(names(await discover({ semantic: "quokka", online: true }))).toEqual(["live.one"]);
  });

  it("ttl — a registration is discoverable until its ttl passes, renewed by REPORT, then purged", async () => {
    const registeredAt = Date.now();
    await t.request(Subjects.agentRegister, {
      name: "brief",
      mailbox: "brief.inbox",
      payload: "axolotl",
      ttl: 2,
    });
    await t.request(Subjects.agentRegister, {
      name: "renewed",
      mailbox: "renewed.inbox",
      payload: "axolotl",
      ttl: 2,
    });
    const seen = names(await discover({ text: "axolotl" })).sort();
    if (Date.now() - registeredAt < 2000) expect(seen).toEqual(["brief", "renewed"]);
    await sleep(1200);
    const reportedAt = Date.now();
    const report = await t.request(Subjects.agentReport, { mailbox: "renewed.inbox", report_info: "alive" });
    if (reportedAt - registeredAt < 2000) expect(report).toEqual({ error: "" });
    for (;;) {
      const now = names(await discover({ text: "axolotl" }));
      if (!now.includes("brief")) break;
      await sleep(50);
    }
    // Expired, perhaps not purged yet: its vector may still rank first, and is passed over.
    const bySemantic = names(await discover({ semantic: "axolotl", limit: 1 }));
    if (Date.now() - reportedAt < 2000) expect(bySemantic).toEqual(["renewed"]);
    expect(Date.now() - registeredAt).toBeGreaterThanOrEqual(2000);
    const left = names(await discover({ text: "axolotl" }));
    if (Date.now() - reportedAt < 2000) expect(left).toEqual(["renewed"]);
    expect(await t.request(Subjects.agentReport, { mailbox: "brief.inbox" })).toEqual({
      error: "agent not found",
      code: "AGENT_NOT_FOUND",
    });
  });

  it("bad input — clear errors; the connection keeps working", async () => {
    const err = async (subject: string, body: Record<string, unknown> | string | Uint8Array) =>
      ((await t.request(subject, body)) as { error: string }).error;
    expect(await err(Subjects.agentRegister, { name: "x", payload: "no mailbox" })).toMatch(
      /^invalid AGENT\.REGISTER payload: missing field 'mailbox'/,
    );
    expect(await err(Subjects.agentRegister, v1Card)).toMatch(/missing field 'mailbox'/);
    expect(await err(Subjects.agentRegister, "")).toBe("payload must not be empty");
    expect(await err(Subjects.agentRegister, "{not json")).toMatch(
      /^invalid AGENT\.REGISTER payload: malformed JSON/,
    );
    expect(await err(Subjects.agentRegister, "[1,2]")).toMatch(/expected a JSON object/);
    expect(await err(Subjects.agentRegister, { mailbox: 42 })).toMatch(/'mailbox' must be a string/);
    expect(await err(Subjects.agentRegister, { mailbox: "a.b", ttl: -1 })).toMatch(
      /'ttl' must be a non-negative/,
    );
    const huge = { name: "huge", mailbox: "huge.inbox", payload: "x".repeat(1024 * 1024 - 200) };
    expect(await err(Subjects.agentRegister, huge)).toMatch(
      /the registration is \d+ bytes; the limit is 262144 bytes/,
    );
    const many = {
      name: "many",
      mailbox: "many.inbox",
      skills: Array.from({ length: 5000 }, (_, i) => ({ name: `s${i}` })),
    };
    expect(await err(Subjects.agentRegister, many)).toMatch(/has 5000 skills; at most 256/);
    expect(await err(Subjects.agentUnregister, {})).toMatch(/give the agent's 'mailbox' or 'name'/);
    expect(await err(Subjects.agentUnregister, { name: "" })).toBe("agent name must not be empty");
    expect(await err(Subjects.agentUnregister, "")).toMatch(/^invalid AGENT\.UNREGISTER payload/);
    expect(await err(Subjects.agentReport, "nope")).toMatch(/^invalid AGENT\.REPORT payload: malformed JSON/);
    expect(await err(Subjects.agentDiscover, { limit: -5 })).toMatch(
      /'limit' must be a non-negative integer/,
    );
    expect(await err(Subjects.agentDiscover, { tags: "python" })).toBe("");
    expect(await err(Subjects.agentDiscover, { tags: [1] })).toMatch(/'tags' must be an array of strings/);
    expect(await err(Subjects.agentDiscover, { text: 5 })).toMatch(/'text' must be a string/);
    expect(await err(Subjects.agentDiscover, { online: "yes" })).toMatch(/'online' must be true or false/);
    expect(await err(Subjects.agentDiscover, new Uint8Array([0xff, 0xfe]))).toMatch(/not valid UTF-8/);
    expect(await err(Subjects.agentDiscover, { text: '" OR * NEAR(' })).toBe("");
    expect(
      await err(Subjects.agentRegister, { name: "ok.after", mailbox: "ok.after.inbox", payload: "fine" }),
    ).toBe("");
  });
});

describe("agent registry persistence and fallback", () => {
  it("registrations and their vectors survive a restart", async () => {
    const first = await startTestBroker();
    const dataDir = first.dataDir;
    await first.request(Subjects.agentRegister, {
      name: "keeper",
      mailbox: "keeper.inbox",
      payload: "Bookkeeping and ledgers",
    });
    await first.broker.registry!.indexed();
    await first.broker.close();
    const second = await startTestBroker({ dataDir });
    try {
      const reply = (await second.request(Subjects.agentDiscover, {
        semantic: "accounting books",
      })) as unknown as Discovered;
      expect(names(reply)).toEqual(["keeper"]);
      expect(reply.warning).toBeUndefined();
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("without an embedder, semantic queries fall back to full-text and say so", async () => {
    const t = await startTestBroker({ registry: { embedder: "none" } });
    try {
      await t.request(Subjects.agentRegister, {
        name: "a",
        mailbox: "a.inbox",
        payload: "Translates documents",
      });
      await t.request(Subjects.agentRegister, { name: "b", mailbox: "b.inbox", payload: "Bakes bread" });
      const reply = (await t.request(Subjects.agentDiscover, {
        semantic: "translates letters",
      })) as unknown as Discovered;
      expect(reply.warning).toMatch(
        /semantic search is unavailable \(registry.embedder is 'none'\); results are ranked by full-text/,
      );
      expect(names(reply)).toEqual(["a", "b"]);
    } finally {
      await t.close();
    }
  });

  it("an embedder that fails to load: semantic queries fall back to full-text with the reason", async () => {
    const modelDir = tempDir("mq9-broken-model-");
    writeFileSync(join(modelDir, "model.onnx"), "this is not an onnx model");
    writeFileSync(join(modelDir, "vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\nbread\n");
    const t = await startTestBroker({ registry: { embedder: "onnx", modelDir } });
    try {
      await t.request(Subjects.agentRegister, {
        name: "baker",
        mailbox: "baker.inbox",
        payload: "Bakes bread",
      });
      const reply = (await t.request(Subjects.agentDiscover, { semantic: "bread" })) as unknown as Discovered;
      expect(reply.error).toBe("");
      expect(reply.warning).toMatch(
        /^semantic search is unavailable \(.+\); results are ranked by full-text instead$/,
      );
      expect(names(reply)).toEqual(["baker"]);
    } finally {
      await t.close();
      rmSync(modelDir, { recursive: true, force: true });
    }
  });

  it("a broker with the registry turned off says so", async () => {
    const t = await startTestBroker({ registry: false });
    try {
      expect(await t.request(Subjects.agentDiscover, {})).toEqual({
        error: "the agent registry is turned off in this broker",
        code: "INVALID_REQUEST",
      });
    } finally {
      await t.close();
    }
  });
});
