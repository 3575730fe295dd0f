import { Defaults, Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Embedder, EmbedOptions } from "../src/embedding/embedder.js";
import { UseEmbedder } from "../src/embedding/use-embedder.js";
import { sleep, startTestBroker, type TestBroker } from "./harness.js";

type Agent = Record<string, unknown> & { name: string; mailbox: string };
type Discovered = {
  error: string;
  agents: Agent[];
  warning?: string;
  total?: number;
  has_more?: boolean;
  next_offset?: number;
  truncated?: boolean;
  pending_skills?: number;
};

const DEFAULT_INTENT_MIN_SCORE = Defaults.intentMinScore;
/** A mail address for an agent name (addresses take lowercase letters, digits and dots only). */
const box = (name: string) => `${name.replace(/[^a-z0-9]+/g, ".")}.inbox`;
const names = (reply: Discovered) => reply.agents.map((a) => a.name);

describe("discovery — lookups, field checks, paging, tags, full-text syntax", () => {
  let t: TestBroker;
  const discover = (body?: Record<string, unknown>) =>
    t.request<Discovered>(Subjects.agentDiscover, body) as Promise<Discovered>;
  const register = async (body: Record<string, unknown>) =>
    expect(await t.request(Subjects.agentRegister, body)).toEqual({ error: "" });

  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" } });
    await register({ name: "twin", mailbox: "twin.one.inbox", payload: "first twin" });
    await register({ name: "twin", mailbox: "twin.two.inbox", payload: "second twin" });
    await register({ name: "solo", mailbox: "solo.inbox", payload: "Translates contracts", tags: ["legal"] });
  }, 300_000);
  afterAll(() => t.close());

  it("lookup — by mailbox (bare or mq9:// form) and by name; unknown ones find nothing", async () => {
    expect(names(await discover({ mailbox: "solo.inbox" }))).toEqual(["solo"]);
    expect(names(await discover({ mailbox: "mq9://localhost:4332/solo.inbox" }))).toEqual(["solo"]);
    const twins = await discover({ name: "twin" });
    expect(twins.agents.map((a) => a.mailbox)).toEqual(["twin.one.inbox", "twin.two.inbox"]);
    expect(twins.total).toBe(2);
    expect(names(await discover({ name: "twin", mailbox: "twin.two.inbox" }))).toEqual(["twin"]);
    expect((await discover({ name: "nobody" })).agents).toEqual([]);
    expect((await discover({ mailbox: "no.such.inbox" })).agents).toEqual([]);
    // A lookup combines with the other filters and rankings.
    expect((await discover({ name: "solo", tags: ["finance"] })).agents).toEqual([]);
    expect(names(await discover({ name: "solo", text: "contracts" }))).toEqual(["solo"]);
    expect((await discover({ name: "twin", text: "contracts" })).agents).toEqual([]);
  });

  it("fields — a misspelled field is an error that names it; known ones still work", async () => {
    for (const [field, hint] of [
      ["tag", "tags"],
      ["query", "text' or 'semantic"],
      ["semantics", "semantic"],
      ["filter", "tags"],
    ]) {
      const reply = await discover({ [field]: "finance" });
      expect(reply.error).toContain(`unknown field '${field}'; did you mean '${hint}'?`);
      expect(reply.agents).toBeUndefined();
    }
    expect((await discover({ colour: "red" })).error).toMatch(
      /^invalid AGENT\.DISCOVER payload: unknown field 'colour' \(DISCOVER reads 'text', /,
    );
    // What the SDKs and MCP send: limit/page always, null for absent queries.
    expect((await discover({ text: null, semantic: null, limit: 20, page: 1 })).error).toBe("");
    expect((await discover({ min_score: 2 })).error).toMatch(/'min_score' must be a number from 0 to 1/);
    expect((await discover({ offset: 1, page: 2 })).error).toMatch(/give 'offset' or 'page', not both/);
  });

  it("register — a name that is not a string is refused; a blank one appears once, as the derived name", async () => {
    const reply = await t.request(Subjects.agentRegister, {
      name: 123,
      mailbox: "numbered.inbox",
      payload: "x",
    });
    expect(reply.error).toBe("invalid AGENT.REGISTER payload: 'name' must be a string, got 123");
    expect((await discover({ mailbox: "numbered.inbox" })).agents).toEqual([]);
    await register({ name: "", mailbox: "blank.name.inbox", payload: "nameless" });
    await register({ name: null, mailbox: "null.name.inbox", payload: "nameless" });
    for (const mailbox of ["blank.name.inbox", "null.name.inbox"]) {
      const raw = await t.nc.request(Subjects.agentDiscover, JSON.stringify({ mailbox }));
      const text = new TextDecoder().decode(raw.data);
      expect(text.match(/"name":/g)).toHaveLength(1);
      expect(JSON.parse(text).agents[0].name).toBe(mailbox);
    }
  });
});

describe("discovery — tag rule", () => {
  let t: TestBroker;
  const tagged = async (body: Record<string, unknown>) =>
    names((await t.request(Subjects.agentDiscover, body)) as unknown as Discovered).sort();

  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" } });
    const cards: [string, string[], string[]][] = [
      ["card-tagged", ["Finance"], []],
      ["skill-tagged", [], ["finance", "invoice"]],
      ["both", ["FINANCE"], ["tax"]],
      ["substring", ["financial", "refinance"], ["fin"]],
      ["other", ["weather"], ["forecast"]],
    ];
    for (const [name, cardTags, skillTags] of cards) {
      await t.request(Subjects.agentRegister, {
        name,
        mailbox: box(name),
        description: `${name} agent`,
        tags: cardTags,
        skills: [{ id: "s", name: `${name} skill`, tags: skillTags }],
      });
    }
  }, 300_000);
  afterAll(() => t.close());

  it("an agent carries the tags of its card and of its skills; whole tags, any case; several tags must all be carried", async () => {
    const finance = ["both", "card-tagged", "skill-tagged"];
    expect(await tagged({ tags: ["finance"] })).toEqual(finance);
    expect(await tagged({ tags: ["FINANCE"] })).toEqual(finance);
    expect(await tagged({ tags: "finance" })).toEqual(finance);
    expect(await tagged({ tags: [" Ｆinance "] })).toEqual(finance);
    expect(await tagged({ tags: ["fin"] })).toEqual(["substring"]);
    expect(await tagged({ tags: ["finance", "tax"] })).toEqual(["both"]);
    expect(await tagged({ tags: ["finance", "weather"] })).toEqual([]);
    const reply = (await t.request(Subjects.agentDiscover, { tags: ["finance"] })) as unknown as Discovered;
    expect(reply.total).toBe(3);
  });
});

describe("discovery — paging and the reply size cap", () => {
  let t: TestBroker;
  const maxPayload = 64 * 1024;

  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" }, maxPayload });
    for (let i = 0; i < 60; i++) {
      await t.request(Subjects.agentRegister, {
        name: `big.${String(i).padStart(2, "0")}`,
        mailbox: `big.${i}.inbox`,
        payload: `bulky agent ${"x".repeat(4000)}`,
      });
    }
  }, 300_000);
  afterAll(() => t.close());

  it("limit + offset or page, with total, has_more and next_offset", async () => {
    const first = (await t.request(Subjects.agentDiscover, {
      limit: 5,
      include_agent_info: false,
    })) as unknown as Discovered;
    expect(first).toMatchObject({ error: "", total: 60, has_more: true, next_offset: 5 });
    expect(names(first)).toEqual(["big.00", "big.01", "big.02", "big.03", "big.04"]);
    const byOffset = (await t.request(Subjects.agentDiscover, {
      limit: 5,
      offset: 5,
    })) as unknown as Discovered;
    const byPage = (await t.request(Subjects.agentDiscover, { limit: 5, page: 2 })) as unknown as Discovered;
    expect(names(byOffset)).toEqual(names(byPage));
    expect(names(byOffset)[0]).toBe("big.05");
    const last = (await t.request(Subjects.agentDiscover, { limit: 5, offset: 58 })) as unknown as Discovered;
    expect(last).toMatchObject({ total: 60, has_more: false });
    expect(last.next_offset).toBeUndefined();
    expect(names(last)).toEqual(["big.58", "big.59"]);
    const text = (await t.request(Subjects.agentDiscover, {
      text: "bulky",
      limit: 2,
    })) as unknown as Discovered;
    expect(text).toMatchObject({ total: 60, has_more: true, next_offset: 2 });
  });

  it("a page larger than the max payload is trimmed, says so, and pages on; the client stays connected", async () => {
    const seen: string[] = [];
    let offset = 0;
    let trimmedPages = 0;
    for (let round = 0; round < 20; round++) {
      const raw = await t.nc.request(Subjects.agentDiscover, JSON.stringify({ limit: 1000, offset }), {
        timeout: 10_000,
      });
      expect(raw.data.length).toBeLessThanOrEqual(maxPayload);
      const reply = JSON.parse(new TextDecoder().decode(raw.data)) as Discovered;
      expect(reply.error).toBe("");
      seen.push(...names(reply));
      if (reply.truncated) {
        trimmedPages++;
        expect(reply.warning).toMatch(
          /the reply holds \d+ of the 1000 agents asked for, to stay within the 65536-byte max payload/,
        );
      }
      if (!reply.has_more) break;
      offset = reply.next_offset!;
    }
    expect(trimmedPages).toBeGreaterThan(0);
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => `big.${String(i).padStart(2, "0")}`));
    expect(t.nc.isClosed()).toBe(false);
  });
});

describe("discovery — full-text query syntax and languages", () => {
  let t: TestBroker;
  const search = async (text: string) =>
    names((await t.request(Subjects.agentDiscover, { text })) as unknown as Discovered);

  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "none" } });
    const cards: [string, string][] = [
      ["translator", "Translates documents between English and Japanese"],
      ["transit", "Public transport timetables and connections"],
      ["zh-translator", "把中文合同翻译成英文和日文"],
      ["zh-invoice", "核对发票与采购订单，找出金额不一致的地方"],
      ["zh-weather", "提供城市天气预报和降雨提醒"],
      ["ja-invoice", "請求書を確認して、注文書と照合します"],
      ["de-invoice", "Prüft Rechnungen gegen Bestellungen und meldet Abweichungen"],
      ["de-translator", "Übersetzt Verträge und Briefe ins Englische"],
      ["de-compound", "Rechnungsprüfung und Zahlungsfreigabe für Lieferanten"],
    ];
    for (const [name, payload] of cards) {
      await t.request(Subjects.agentRegister, { name, mailbox: box(name), payload });
    }
  }, 300_000);
  afterAll(() => t.close());

  it("prefixes — a word that matches nothing whole is tried as a prefix; word* asks for it", async () => {
    // Every agent whose card has a word starting with "transl".
    const translators = ["de-translator", "translator", "zh-translator"];
    expect((await search("transl")).sort()).toEqual(translators);
    expect((await search("transl*")).sort()).toEqual(translators);
    expect((await search("trans*")).sort()).toEqual([
      "de-translator",
      "transit",
      "translator",
      "zh-translator",
    ]);
    expect((await search("translate"))[0]).toBe("translator");
    expect(await search("xylophone")).toEqual([]);
    expect(await search("tr")).toEqual([]);
  });

  it("Chinese and Japanese — words are segmented, so a query finds a card in its words", async () => {
    expect(await search("翻译合同")).toEqual(["zh-translator"]);
    expect((await search("检查发票"))[0]).toBe("zh-invoice");
    expect(await search("天气")).toEqual(["zh-weather"]);
    expect(await search("请帮我看看明天的天气预报")).toEqual(["zh-weather"]);
    expect(await search("請求書")).toEqual(["ja-invoice"]);
  });

  it("German — inflections meet (Rechnungen/Rechnung, prüfen/prüft) and compounds are found by their parts", async () => {
    expect((await search("Rechnung prüfen"))[0]).toBe("de-invoice");
    expect(await search("Verträge übersetzen")).toEqual(["de-translator"]);
    expect(await search("Vertrag")).toEqual(["de-translator"]);
    expect(await search("Zahlungsfreigabe")).toEqual(["de-compound"]);
    expect(await search("Freigabe")).toEqual(["de-compound"]);
    expect((await search("Rechnungsprüfung")).sort()).toEqual(["de-compound", "de-invoice"]);
  });
});

/** The real default model, whose document embeddings wait at a gate the test opens: a backlog that stays put. */
class GatedEmbedder implements Embedder {
  readonly id: string;
  private readonly inner = new UseEmbedder();
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.open = resolve;
  });
  constructor() {
    this.id = this.inner.id;
  }
  load(): Promise<number> {
    return this.inner.load();
  }
  async embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]> {
    if (options?.purpose !== "query" && !texts.some((t) => t.startsWith("Translate a document"))) {
      await this.gate;
    }
    return this.inner.embed(texts);
  }
  release(): void {
    this.open();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

describe("discovery — semantic queries never wait behind background embedding", () => {
  it("with hundreds of skills waiting, a semantic DISCOVER answers from what is embedded and says how many wait", async () => {
    const embedder = new GatedEmbedder();
    const t = await startTestBroker({ registry: { embedder } });
    try {
      for (let i = 0; i < 300; i++) {
        await t.request(Subjects.agentRegister, {
          name: `worker.${i}`,
          mailbox: `worker.${i}.inbox`,
          payload: `Handles job family ${i} for the nightly batch`,
        });
      }
      const waiting = (await t.request(Subjects.agentDiscover, {
        semantic: "who runs the nightly batch jobs?",
      })) as unknown as Discovered;
      expect(waiting.error).toBe("");
      expect(waiting.pending_skills).toBe(300);
      expect(waiting.agents).toEqual([]);
      expect(waiting.warning).toMatch(/^300 skills registered moments ago are not searchable by meaning yet/);
      // Hybrid still finds them by their words meanwhile.
      const hybrid = (await t.request(Subjects.agentDiscover, {
        semantic: "who runs the nightly batch jobs?",
        text: "family 7",
        limit: 1,
      })) as unknown as Discovered;
      expect(hybrid.pending_skills).toBe(300);
      expect(names(hybrid)).toEqual(["worker.7"]);
      embedder.release();
      await t.broker.registry!.indexed();
      const done = (await t.request(Subjects.agentDiscover, {
        semantic: "who runs the nightly batch jobs?",
      })) as unknown as Discovered;
      expect(done.pending_skills).toBeUndefined();
      expect(done.warning).toBeUndefined();
      expect(done.agents).toHaveLength(20);
    } finally {
      await t.close();
    }
  }, 180_000);
});

describe.each([
  { embedder: "onnx", label: "the default embedder" },
  { embedder: "use", label: "USE-lite" },
] as const)("discovery — calibrated scores and the relevance floor ($label)", ({ embedder }) => {
  let t: TestBroker;
  const ask = (body: Record<string, unknown>) =>
    t.request(Subjects.agentDiscover, body) as unknown as Promise<Discovered>;

  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder } });
    const agents: [string, string][] = [
      ["translator", "Translates documents between English, Chinese, Japanese and Korean."],
      ["payroll", "Computes salaries, withholding and payslips for employees."],
      ["weather", "Gives rain and temperature forecasts for cities."],
      ["zh-weather", "提供城市天气预报和降雨提醒"],
    ];
    for (const [name, payload] of agents) {
      await t.request(Subjects.agentRegister, { name, mailbox: box(name), payload });
    }
    await t.broker.registry!.indexed();
  }, 300_000);
  afterAll(() => t.close());

  // An English sentence model does not read the Chinese card, whose vector then sits a little
  // near every query: the floor keeps the English agents apart, and the Chinese one may clear it.
  const english = (found: string[]) => found.filter((name) => name !== "zh-weather");

  it("scores are 0..1 and unrelated agents sit at 0; min_score keeps only what clears it", async () => {
    const scored = await ask({ semantic: "put this letter into another language", include_score: true });
    expect(scored.agents[0].name).toBe("translator");
    const scores = scored.agents.map((a) => a._score as number);
    expect(scores.every((s) => s >= 0 && s <= 1)).toBe(true);
    expect(scores[0]).toBeGreaterThanOrEqual(DEFAULT_INTENT_MIN_SCORE);
    const others = scored.agents.slice(1).filter((a) => embedder === "use" || a.name !== "zh-weather");
    expect(others.every((a) => (a._score as number) < DEFAULT_INTENT_MIN_SCORE)).toBe(true);
    const floor = { min_score: DEFAULT_INTENT_MIN_SCORE };
    const kept = async (semantic: string) => {
      const found = names(await ask({ semantic, ...floor }));
      return embedder === "use" ? found : english(found);
    };
    expect(await kept("put this letter into another language")).toEqual(["translator"]);
    expect(await kept("how much will staff be paid this month")).toEqual(["payroll"]);
    expect(await kept("is it going to be sunny tomorrow")).toEqual(["weather"]);
    // A request nobody covers: nothing clears the floor (without it, the nearest still come back).
    const uncovered = "recompile the kernel with a realtime scheduler";
    expect((await ask({ semantic: uncovered, ...floor })).agents).toEqual([]);
    expect((await ask({ semantic: uncovered })).agents).toHaveLength(4);
    expect((await ask({ semantic: uncovered, text: uncovered, ...floor })).agents).toEqual([]);
  });

  it("a query asked again sees the agents registered, removed and expired in between", async () => {
    const query = "who can tell me whether to take an umbrella to Lisbon tomorrow";
    const first = async () => names(await ask({ semantic: query, limit: 1 }))[0];
    expect(await first()).toBe("weather");
    const register = (name: string, ttl?: number) =>
      t.request(Subjects.agentRegister, { name, mailbox: box(name), payload: query, ttl });
    expect(await register("umbrella")).toEqual({ error: "" });
    expect(await first()).toBe("umbrella");
    expect(await t.request(Subjects.agentUnregister, { mailbox: box("umbrella") })).toEqual({ error: "" });
    expect(await first()).toBe("weather");
    // Expiry changes nothing the search holds: the answer must still leave the agent out.
    expect(await register("brief", 1)).toEqual({ error: "" });
    expect(await first()).toBe("brief");
    await sleep(2100);
    expect(await first()).toBe("weather");
  });

  it("a query the embedder cannot read is answered by full text, and the reply says so", async () => {
    if (embedder !== "use") {
      // The sentence model has a piece for any text: gibberish is ranked by meaning, and nothing
      // it finds clears the floor of an intent; a Chinese request finds the Chinese card first.
      const gibberish = await ask({ semantic: "asdf jkl hjkl", include_score: true });
      expect(gibberish.agents.every((a) => (a._score as number) < 0.3)).toBe(true);
      expect(names(await ask({ semantic: "明天的天气预报", min_score: 0.1 }))[0]).toBe("zh-weather");
      return;
    }
    const gibberish = await ask({ semantic: "asdf jkl hjkl" });
    expect(gibberish.warning).toMatch(
      /^the query is outside what the embedder understands \(the embedder recognises no word of the query\); results are ranked by full-text instead$/,
    );
    expect((await ask({ semantic: "asdf jkl hjkl", min_score: 0.1 })).agents).toEqual([]);
    const chinese = await ask({ semantic: "明天的天气预报", min_score: 0.1 });
    expect(chinese.warning).toMatch(/the embedder reads English only and the query is in another script/);
    expect(names(chinese)).toEqual(["zh-weather"]);
    const german = await ask({ semantic: "Wie wird das Wetter morgen?" });
    expect(german.warning).toMatch(/the query reads as German/);
  });
});
