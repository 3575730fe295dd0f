import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "@mq9/broker";
import { SqliteDriver as Database } from "@mq9/broker/internal";
import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { embeddingText } from "../src/embedding/embedding-indexer.js";
import {
  type Embedder,
  type EmbedOptions,
  type LocalVectorStore,
  OnnxEmbedder,
  type VectorStore,
} from "../src/index.js";
import { DEFAULT_MODEL, defaultModelsDir } from "../src/models/index.js";
import { AGENTS } from "./fixtures/relevance-set.js";
import { registerCards, startTestBroker, type TestBroker, tempDir } from "./harness.js";

/*
 * The pair below, measured with the default model: the query is closer to plant-sitter's card than
 * to water-bot's, and a little closer to water-bot's one skill than to plant-sitter's.
 */
const QUERY = "keep my houseplants alive while I travel";
const CARD_MATCH = {
  name: "plant-sitter",
  tags: ["pair"],
  description: "Waters and cares for indoor plants while their owners are away.",
  skills: [{ id: "remind", name: "Schedule watering", description: "Set reminders for recurring tasks" }],
};
const SKILL_MATCH = {
  name: "water-bot",
  tags: ["pair"],
  description: "Controls irrigation valves for farms and golf courses.",
  skills: [
    {
      id: "timer",
      name: "Irrigation timer",
      description: "Water crops on a timer while the farmer is away",
    },
  ],
};

interface Reply {
  error: string;
  agents: { name: string; _score?: number }[];
  warning?: string;
}

const MODEL_DIR = join(defaultModelsDir(), DEFAULT_MODEL);

const discover = async (t: TestBroker, body: Record<string, unknown>) => {
  const reply = (await t.request(Subjects.agentDiscover, body)) as Reply;
  expect(reply.error).toBe("");
  return reply;
};
const names = (reply: Reply) => reply.agents.map((a) => a.name);

describe("card-score fusion (the default model, the default vector store)", () => {
  let fused: TestBroker;
  let skillsOnly: TestBroker;

  beforeAll(async () => {
    fused = await startTestBroker();
    skillsOnly = await startTestBroker({ registry: { cardWeight: 0 } });
    for (const t of [fused, skillsOnly]) await registerCards(t, [SKILL_MATCH, CARD_MATCH, ...AGENTS]);
  }, 300_000);
  afterAll(async () => {
    await fused?.close();
    await skillsOnly?.close();
  });

  // The two agents apart (a tag only they carry) and among all: other cards match the query too.
  it("ranks an agent whose card matches above one whose single skill matches slightly better", async () => {
    const pair = { semantic: QUERY, tags: ["pair"], limit: 5 };
    expect(names(await discover(skillsOnly, pair))).toEqual(["water-bot", "plant-sitter"]);
    expect(names(await discover(fused, pair))).toEqual(["plant-sitter", "water-bot"]);
    const all = (reply: Reply) => names(reply).filter((n) => n === "plant-sitter" || n === "water-bot");
    expect(all(await discover(skillsOnly, { semantic: QUERY, limit: 20 }))).toEqual([
      "water-bot",
      "plant-sitter",
    ]);
    expect(all(await discover(fused, { semantic: QUERY, limit: 20 }))).toEqual(["plant-sitter", "water-bot"]);
  });

  it("does the same in a hybrid query", async () => {
    const body = { semantic: QUERY, text: "water", tags: ["pair"], limit: 5 };
    expect(names(await discover(skillsOnly, body))).toEqual(["water-bot", "plant-sitter"]);
    expect(names(await discover(fused, body))).toEqual(["plant-sitter", "water-bot"]);
  });

  it("at weight 0 ranks and scores every agent by its best skill alone, and keeps no card vectors", async () => {
    const store = skillsOnly.broker.registry as unknown as {
      vectors: LocalVectorStore;
      embedder: Embedder;
    };
    expect((await store.vectors.cardAgents()).size).toBe(0);
    const cards = [SKILL_MATCH, CARD_MATCH, ...AGENTS];
    // The best skill of every agent, by an exact scan over the skill texts the registry embeds.
    const texts = cards.flatMap((card) =>
      card.skills.map((s) => ({
        agent: card.name,
        text: embeddingText({
          id: 0,
          mailbox: "",
          agentName: card.name,
          agentDescription: card.description,
          skillName: s.name,
          skillDescription: s.description,
          tags: ("tags" in s ? (s.tags as string[]) : []).join(" "),
          examples: "",
        }),
      })),
    );
    const skillVectors = await store.embedder.embed(
      texts.map((t) => t.text),
      { purpose: "document" },
    );
    for (const query of [QUERY, "turn a podcast episode into text", "find cheap flights to Lisbon"]) {
      const [q] = await store.embedder.embed([query], { purpose: "query" });
      const best = new Map<string, number>();
      texts.forEach((t, i) => {
        const s = skillVectors[i].reduce((sum, x, k) => sum + x * q[k], 0);
        best.set(t.agent, Math.max(best.get(t.agent) ?? -2, s));
      });
      const expected = [...best].sort((a, b) => b[1] - a[1]).map(([name]) => name);
      const reply = await discover(skillsOnly, { semantic: query, limit: 10, include_score: true });
      expect(names(reply)).toEqual(expected.slice(0, 10));
      // Fused scores differ from the skill scores: the fused broker ranks differently somewhere.
      const other = await discover(fused, { semantic: query, limit: 10, include_score: true });
      expect(other.agents.map((a) => a._score)).not.toEqual(reply.agents.map((a) => a._score));
    }
  });

  it("forgets an unregistered agent's card vector", async () => {
    const registry = fused.broker.registry as unknown as { vectors: LocalVectorStore };
    expect((await registry.vectors.cardAgents()).has("agent.water.bot")).toBe(true);
    const reply = await fused.request(Subjects.agentUnregister, { mailbox: "agent.water.bot" });
    expect(reply.error).toBe("");
    await fused.broker.registry!.indexed();
    expect((await registry.vectors.cardAgents()).has("agent.water.bot")).toBe(false);
  });
});

/** An embedder that holds document embeddings until released (queries pass): the backfill's pace, in the test's hands. */
class GatedEmbedder implements Embedder {
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });
  constructor(private readonly inner: Embedder) {}
  get id() {
    return this.inner.id;
  }
  get parallelism() {
    return this.inner.parallelism;
  }
  load() {
    return this.inner.load();
  }
  async embed(texts: string[], options?: EmbedOptions) {
    if (options?.purpose !== "query") await this.gate;
    return this.inner.embed(texts, options);
  }
  release() {
    this.opened();
  }
  close() {
    return this.inner.close();
  }
}

/** A logger that keeps every info line's message. */
function recordingLogger(lines: string[]): Logger {
  const logger: Logger = {
    info: (a: unknown, b?: unknown) => void lines.push(String(typeof a === "string" ? a : b)),
    warn: () => {},
    error: () => {},
    debug: () => {},
    child: () => logger,
  } as unknown as Logger;
  return logger;
}

/** Agents' card vectors, from the vector store the registry opened. */
const cardAgentsOf = (t: TestBroker) =>
  (t.broker.registry as unknown as { vectors: VectorStore }).vectors.cardAgents!();

describe.each([
  // The local store's file as older versions left it: no cards table.
  ["the default vector store", "local" as const, (dataDir: string) => dropLocalCards(dataDir)],
  // LanceDB creates its cards table at the first card written: at weight 0, none is.
  ["the LanceDB vector store", "lancedb" as const, () => {}],
])("a registry written before card vectors, in %s", (_label, vectorStore, makeOld) => {
  it("fills them in in the background after opening, and answers DISCOVER meanwhile", async () => {
    const dataDir = tempDir("mq9-card-backfill-");
    try {
      const old = await startTestBroker({
        dataDir,
        registry: { embedder: new OnnxEmbedder({ modelDir: MODEL_DIR }), cardWeight: 0, vectorStore },
      });
      await registerCards(old, [SKILL_MATCH, CARD_MATCH, ...AGENTS.slice(0, 40)]);
      const pair = { semantic: QUERY, tags: ["pair"], limit: 5 };
      const before = names(await discover(old, pair));
      expect((await cardAgentsOf(old)).size).toBe(0);
      await old.close();
      makeOld(dataDir);
      expect(before).toEqual(["water-bot", "plant-sitter"]);

      const lines: string[] = [];
      const gated = new GatedEmbedder(new OnnxEmbedder({ modelDir: MODEL_DIR }));
      const upgraded = await startTestBroker({
        dataDir,
        logger: recordingLogger(lines),
        registry: { embedder: gated, vectorStore },
      });
      try {
        const registry = upgraded.broker.registry as unknown as { cardsPending: number };
        expect(registry.cardsPending).toBe(42);
        // During the backfill: answered from the skills, as before, without an error.
        expect(names(await discover(upgraded, pair))).toEqual(before);
        expect(registry.cardsPending).toBe(42);
        gated.release();
        await upgraded.broker.registry!.indexed();
        expect(registry.cardsPending).toBe(0);
        expect((await cardAgentsOf(upgraded)).size).toBe(42);
        expect(lines.some((l) => l.includes("registered before card scoring"))).toBe(true);
        expect(lines.some((l) => l.includes("card vectors 100% filled in"))).toBe(true);
        expect(names(await discover(upgraded, pair))).toEqual(["plant-sitter", "water-bot"]);
        // A registration from now on brings its card with it; an unregistered one's goes.
        const reply = await upgraded.request(Subjects.agentUnregister, { mailbox: "agent.water.bot" });
        expect(reply.error).toBe("");
        await upgraded.broker.registry!.indexed();
        expect((await cardAgentsOf(upgraded)).has("agent.water.bot")).toBe(false);
        await registerCards(upgraded, [SKILL_MATCH]);
        expect((await cardAgentsOf(upgraded)).has("agent.water.bot")).toBe(true);
      } finally {
        await upgraded.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});

function dropLocalCards(dataDir: string): void {
  const file = new Database(join(dataDir, "registry-vectors", "vectors.db"));
  file.exec("DROP TABLE cards");
  file.close();
}
