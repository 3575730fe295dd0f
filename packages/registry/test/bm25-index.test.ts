import { describe, expect, it } from "vitest";
import { Bm25Index } from "../src/search/bm25-index.js";
import { indexTerms, queryTerms } from "../src/search/text-terms.js";

/** A query's stems, each counting fully (what the index is asked for a plain query). */
const weighted = (query: string) => queryTerms(query).map((term) => ({ term, weight: 1 }));

const WORDS =
  "invoice payment translate spanish report weather forecast image resize audit python code review".split(
    " ",
  );

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

type Doc = { owner: number; fields: string[] };

/**
 * An index of `count` docs (ids 1..count) made by `docOf` from random sentences of WORDS, and the
 * same docs in a map for `expected`.
 */
function randomIndex(
  weights: number[],
  seed: number,
  count: number,
  docOf: (id: number, sentence: (words: number) => string) => Doc,
) {
  const index = new Bm25Index(weights);
  const docs = new Map<number, Doc>();
  const random = seeded(seed);
  const sentence = (words: number) =>
    Array.from({ length: words }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");
  for (let id = 1; id <= count; id++) {
    const doc = docOf(id, sentence);
    docs.set(id, doc);
    index.add(id, doc.owner, doc.fields);
  }
  return { index, docs };
}

/** BM25 as FTS5 defines it, computed the slow way over the live docs, owners by best doc. */
function expected(docs: Map<number, Doc>, weights: number[], query: string) {
  const terms = queryTerms(query);
  const stats = [...docs.values()].map(({ owner, fields }) => {
    const freq = new Map<string, number>();
    let length = 0;
    fields.forEach((text, f) => {
      for (const t of indexTerms(text)) {
        freq.set(t, (freq.get(t) ?? 0) + weights[f]);
        length++;
      }
    });
    return { owner, freq, length };
  });
  const n = stats.length;
  const avg = stats.reduce((sum, d) => sum + d.length, 0) / n;
  const best = new Map<number, number>();
  const dfOf = new Map(terms.map((term) => [term, stats.filter((d) => d.freq.has(term)).length]));
  for (const doc of stats) {
    let score = 0;
    for (const term of terms) {
      const f = doc.freq.get(term);
      if (!f) continue;
      const df = dfOf.get(term)!;
      const idf = Math.max(1e-6, Math.log((n - df + 0.5) / (df + 0.5)));
      score += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * doc.length) / avg));
    }
    if (score > 0 && score > (best.get(doc.owner) ?? 0)) best.set(doc.owner, score);
  }
  return [...best].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
}

describe("full-text index", () => {
  it("ranks owners by their best doc exactly as BM25, also after removals compact it", () => {
    const weights = [3, 1];
    const { index, docs } = randomIndex(weights, 3, 12_000, (id, sentence) => ({
      owner: id % 700,
      fields: [sentence(2), sentence(6)],
    }));
    // Enough removals to trigger a compaction (renumbering) of the index.
    for (let id = 1; id <= 9_000; id++) {
      index.remove(id);
      docs.delete(id);
    }
    for (const query of ["spanish invoices", "weather forecasting report", "reviewing python code"]) {
      const want = expected(docs, weights, query).slice(0, 10);
      const got = index.search(weighted(query), 10, () => true);
      expect(got.map((r) => r.owner)).toEqual(want.map(([owner]) => owner));
      for (const [i, r] of got.entries()) expect(r.score).toBeCloseTo(want[i][1], 3);
    }
    expect(index.size).toBe(3_000);
  });

  it("stays exact when rare terms let it probe the long lists only for the docs they touched", () => {
    const weights = [2, 1];
    const { index, docs } = randomIndex(weights, 11, 20_000, (id, sentence) => {
      // One doc in 150 mentions zebras; every doc has common words.
      const rare = id % 150 === 0 ? (id % 300 === 0 ? " zebra zebra" : " zebra") : "";
      return { owner: id % 2_000, fields: [sentence(2) + rare, sentence(5)] };
    });
    const odd = (owner: number) => owner % 2 === 1;
    for (const query of ["zebra report", "zebras with weather forecast reports", "python zebra"]) {
      for (const [accept, need] of [
        [() => true, 10],
        [odd, 5],
      ] as const) {
        const want = expected(docs, weights, query)
          .filter(([owner]) => accept(owner))
          .slice(0, need);
        const got = index.search(weighted(query), need, accept);
        expect(got.map((r) => r.owner)).toEqual(want.map(([owner]) => owner));
        for (const [i, r] of got.entries()) expect(r.score).toBeCloseTo(want[i][1], 4);
      }
    }
  });

  it("replaces a doc added again under its id, and filters owners", () => {
    const index = new Bm25Index([1]);
    index.add(1, 1, ["image resize"]);
    index.add(2, 2, ["weather forecast"]);
    index.add(3, 3, ["weather"]);
    index.add(1, 1, ["weather report"]);
    expect(index.size).toBe(3);
    expect(index.search(weighted("image"), 5, () => true)).toEqual([]);
    const owners = index.search(weighted("weather"), 5, (owner) => owner !== 3).map((r) => r.owner);
    expect(owners.sort()).toEqual([1, 2]);
  });

  it("stems and folds diacritics like FTS5's porter unicode61 tokenizer", () => {
    expect(indexTerms("Translating Résumés, TRANSLATION!")).toEqual(["translat", "resum", "translat"]);
    expect(queryTerms("Please find an agent that translates")).toEqual(["translat"]);
  });
});
