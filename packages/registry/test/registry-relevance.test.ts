import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHINESE_AGENTS, GERMAN_AGENTS, MULTILINGUAL_QUERIES } from "./fixtures/multilingual-set.js";
import { AGENTS, QUERIES } from "./fixtures/relevance-set.js";
import { registerCards, startTestBroker, type TestBroker } from "./harness.js";

interface Scores {
  recallAt5: number;
  mrr: number;
}

/** recall@5: share of queries whose agent is in the top 5; MRR: mean of 1/rank (0 when not in the top 10). */
function score(rankings: string[][]): Scores {
  let hits = 0;
  let reciprocal = 0;
  rankings.forEach((ranked, i) => {
    const rank = ranked.indexOf(QUERIES[i].expect);
    if (rank >= 0 && rank < 5) hits++;
    if (rank >= 0) reciprocal += 1 / (rank + 1);
  });
  return { recallAt5: hits / rankings.length, mrr: reciprocal / rankings.length };
}

describe("discovery relevance on the labelled set (150 agent cards, 100 paraphrased queries)", () => {
  let t: TestBroker;
  const results: Record<string, Scores> = {};

  const rank = async (body: (query: string) => Record<string, unknown>) => {
    const rankings: string[][] = [];
    for (const { query } of QUERIES) {
      const reply = (await t.request(Subjects.agentDiscover, { ...body(query), limit: 10 })) as {
        error: string;
        agents: { name: string }[];
        warning?: string;
      };
      expect(reply.error).toBe("");
      expect(reply.warning).toBeUndefined();
      rankings.push(reply.agents.map((a) => a.name));
    }
    return score(rankings);
  };

  beforeAll(async () => {
    t = await startTestBroker();
    await registerCards(t, AGENTS);
  }, 300_000);
  afterAll(async () => {
    const rows = Object.entries(results).map(
      ([mode, s]) => `  ${mode.padEnd(10)} recall@5 ${s.recallAt5.toFixed(2)}   MRR ${s.mrr.toFixed(3)}`,
    );
    console.log(`relevance (${AGENTS.length} agents, ${QUERIES.length} queries):\n${rows.join("\n")}`);
    await t.close();
  });

  // Floors at what the fixed default model measures today (deterministic): a change that loses
  // relevance fails here rather than in a benchmark nobody reads.
  it("full-text (BM25) alone", async () => {
    results.text = await rank((query) => ({ text: query }));
    expect(results.text.recallAt5).toBeGreaterThanOrEqual(0.64);
  }, 180_000);

  it("semantic (default embedder) beats full-text alone", async () => {
    results.semantic = await rank((query) => ({ semantic: query }));
    expect(results.semantic.mrr).toBeGreaterThan(results.text.mrr);
    expect(results.semantic.recallAt5).toBeGreaterThan(results.text.recallAt5);
    expect(results.semantic.recallAt5).toBeGreaterThanOrEqual(0.8);
  }, 180_000);

  it("hybrid (semantic + text fused) never ranks worse than semantic alone", async () => {
    results.hybrid = await rank((query) => ({ semantic: query, text: query }));
    expect(results.hybrid.mrr).toBeGreaterThanOrEqual(results.semantic.mrr);
    expect(results.hybrid.recallAt5).toBeGreaterThanOrEqual(results.semantic.recallAt5);
    expect(results.hybrid.recallAt5).toBeGreaterThanOrEqual(0.87);
    expect(results.hybrid.mrr).toBeGreaterThanOrEqual(0.77);
  }, 180_000);
});

describe("discovery relevance in Chinese and German with the default install", () => {
  let t: TestBroker;
  // Floors a little under what the default model (all-MiniLM-L6-v2-int8, English-trained) measures:
  // by meaning alone it finds most cards in their own language, and fused with full text all of them.
  const byMode: Record<
    string,
    { body: (query: string) => Record<string, unknown>; at5: number; at1: number }
  > = {
    text: { body: (query) => ({ text: query }), at5: 0.9, at1: 0.75 },
    semantic: { body: (query) => ({ semantic: query }), at5: 0.8, at1: 0.65 },
    hybrid: { body: (query) => ({ semantic: query, text: query }), at5: 0.9, at1: 0.75 },
  };

  beforeAll(async () => {
    t = await startTestBroker();
    for (const card of [...AGENTS, ...CHINESE_AGENTS, ...GERMAN_AGENTS]) {
      const reply = await t.request(Subjects.agentRegister, {
        ...card,
        mailbox: `agent.${card.name.replace(/[^a-z0-9]+/g, ".")}`,
      });
      expect(reply.error).toBe("");
    }
    await t.broker.registry!.indexed();
  }, 300_000);
  afterAll(() => t.close());

  for (const [mode, { body, at5, at1 }] of Object.entries(byMode)) {
    it(`${mode}: a Chinese or German request finds its card (recall@5 ≥ ${at5}, recall@1 ≥ ${at1})`, async () => {
      let top1 = 0;
      let top5 = 0;
      for (const { query, expect: want } of MULTILINGUAL_QUERIES) {
        const reply = (await t.request(Subjects.agentDiscover, { ...body(query), limit: 5 })) as {
          agents: { name: string }[];
          warning?: string;
        };
        const rank = reply.agents.findIndex((a) => a.name === want);
        if (rank === 0) top1++;
        if (rank >= 0) top5++;
        if (mode !== "text") expect(reply.warning).toBeUndefined();
      }
      const n = MULTILINGUAL_QUERIES.length;
      console.log(
        `${mode} (${n} Chinese and German queries): recall@1 ${(top1 / n).toFixed(2)}, recall@5 ${(top5 / n).toFixed(2)}`,
      );
      expect(top5 / n).toBeGreaterThanOrEqual(at5);
      expect(top1 / n).toBeGreaterThanOrEqual(at1);
    }, 180_000);
  }
});
