import { describe, expect, it } from "vitest";
import {
  parseDiscoverRequest,
  parseRegisterRequest,
  parseReportRequest,
  parseUnregisterRequest,
} from "../src/index.js";

const body = (value: unknown) =>
  new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

describe("AGENT.* request validators", () => {
  it("REGISTER: the body is kept verbatim; the mailbox loses its mq9:// prefix; tags are normalised", () => {
    const text = JSON.stringify({
      mailbox: "mq9://localhost:4332/agents.a",
      name: "a",
      tags: [" Finance", "ＦＩＮＡＮＣＥ"],
      skills: [{ name: "sum", tags: ["Math"] }],
      ttl: 30,
    });
    const parsed = parseRegisterRequest(body(text));
    expect(parsed).toMatchObject({
      ok: true,
      value: { mailbox: "agents.a", name: "a", tags: ["finance", "math"], ttlS: 30, bodyJson: text },
    });
  });

  it("REGISTER: each bad body gets its own error text, an empty one the protocol's own", () => {
    expect(parseRegisterRequest(body(""))).toEqual({ ok: false, error: "payload must not be empty" });
    expect(parseRegisterRequest(body("null"))).toEqual({ ok: false, error: "payload must not be empty" });
    expect(parseRegisterRequest(body("{oops"))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^invalid AGENT\.REGISTER payload: malformed JSON/),
    });
    expect(parseRegisterRequest(body({ name: "a" }))).toEqual({
      ok: false,
      error:
        "invalid AGENT.REGISTER payload: missing field 'mailbox': give the mail_address where other agents can send to this agent",
    });
    expect(parseRegisterRequest(body({ mailbox: "a", ttl: -1 }))).toEqual({
      ok: false,
      error: "invalid AGENT.REGISTER payload: 'ttl' must be a non-negative whole number of seconds, got -1",
    });
    expect(parseRegisterRequest(new Uint8Array([0x7b, 0xff, 0x7d]))).toEqual({
      ok: false,
      error: "invalid AGENT.REGISTER payload: the body is not valid UTF-8; send a JSON object",
    });
    expect(
      parseRegisterRequest(body({ mailbox: "a", skills: [1, 2, 3] }), { maxCardBytes: 1000, maxSkills: 2 }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("the card has 3 skills; at most 2") });
  });

  it("REGISTER of an MCP server: keyed by its normalised url, its card's tools indexed as skills", () => {
    const parsed = parseRegisterRequest(
      body({
        kind: "mcp-server",
        url: "https://Tools.Example.com/mcp",
        tags: ["Weather"],
        server_card: {
          name: "weather",
          version: "1.0",
          tools: [{ name: "get_weather", description: "now" }],
        },
      }),
    );
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        kind: "mcp-server",
        mailbox: "mcp-server:https://tools.example.com/mcp",
        url: "https://tools.example.com/mcp",
        name: "weather",
        version: "1.0",
        tags: ["weather"],
        skills: [{ name: "get_weather", description: "now" }],
      },
    });
    // Without a name anywhere, the host names it; an agent is still the default kind.
    expect(parseRegisterRequest(body({ kind: "mcp-server", url: "http://h.test:81/x" }))).toMatchObject({
      value: { name: "h.test:81" },
    });
    expect(parseRegisterRequest(body({ mailbox: "a.b" }))).toMatchObject({ value: { kind: "agent" } });
    expect(parseRegisterRequest(body({ kind: "agent", mailbox: "a.b" }))).toMatchObject({
      value: { kind: "agent", mailbox: "a.b" },
    });
    expect(parseUnregisterRequest(body({ url: "https://tools.example.com/mcp" }))).toEqual({
      ok: true,
      value: { mailbox: "mcp-server:https://tools.example.com/mcp" },
    });
    expect(parseDiscoverRequest(body({}))).toMatchObject({ value: { kinds: ["agent"] } });
    expect(parseDiscoverRequest(body({ kind: ["mcp-server", "agent", "agent"] }))).toMatchObject({
      value: { kinds: ["mcp-server", "agent"] },
    });
  });

  it("UNREGISTER and REPORT name an agent by mailbox or name; REPORT keeps its body as the status", () => {
    expect(parseUnregisterRequest(body({ name: " a " }))).toEqual({
      ok: true,
      value: { mailbox: undefined, name: "a" },
    });
    expect(parseUnregisterRequest(body({}))).toEqual({
      ok: false,
      error: "invalid AGENT.UNREGISTER payload: give the agent's 'mailbox' or 'name'",
    });
    expect(parseUnregisterRequest(body({ name: "" }))).toEqual({
      ok: false,
      error: "agent name must not be empty",
    });
    expect(parseReportRequest(body(""))).toEqual({
      ok: false,
      error: "invalid AGENT.REPORT payload: the body is empty; send a JSON object",
    });
    const report = JSON.stringify({ mailbox: "mq9://h/agents.a", status: "busy" });
    expect(parseReportRequest(body(report))).toEqual({
      ok: true,
      value: { mailbox: "agents.a", name: undefined, statusJson: report },
    });
  });

  it("DISCOVER: an empty body is every agent, page 1; typos and bad values are named", () => {
    expect(parseDiscoverRequest(body(""))).toMatchObject({
      ok: true,
      value: { online: false, includeAgentInfo: true, limit: 20, offset: 0 },
    });
    expect(parseDiscoverRequest(body({ limit: 5, page: 3, tags: "Finance" }))).toMatchObject({
      ok: true,
      value: { limit: 5, offset: 10, tags: ["finance"] },
    });
    expect(parseDiscoverRequest(body({ query: "x" }))).toMatchObject({
      ok: false,
      error: expect.stringMatching(
        /^invalid AGENT\.DISCOVER payload: unknown field 'query'; did you mean 'text' or 'semantic'\?/,
      ),
    });
    expect(parseDiscoverRequest(body({ min_score: 2 }))).toEqual({
      ok: false,
      error: "invalid AGENT.DISCOVER payload: 'min_score' must be a number from 0 to 1, got 2",
    });
    expect(parseDiscoverRequest(body({ offset: 4, page: 2 }))).toEqual({
      ok: false,
      error: "invalid AGENT.DISCOVER payload: give 'offset' or 'page', not both",
    });
  });
});
