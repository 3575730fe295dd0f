import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Embedder } from "../src/index.js";

export interface EmbedderSuiteOptions {
  /** Whether the model knows meaning (a real one), so paraphrases must land nearer than unrelated texts. */
  semantic: boolean;
}

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);

/** The behaviour every Embedder must show; run against the real model, not a stand-in. */
export function embedderConformance(
  name: string,
  create: () => Embedder,
  options: EmbedderSuiteOptions,
): void {
  describe(`Embedder conformance: ${name}`, () => {
    let embedder: Embedder;
    let dimensions: number;
    beforeAll(async () => {
      embedder = create();
      dimensions = await embedder.load();
    });
    afterAll(() => embedder.close());

    it("has a stable id and a fixed vector length", async () => {
      expect(typeof embedder.id).toBe("string");
      expect(embedder.id.length).toBeGreaterThan(0);
      expect(dimensions).toBeGreaterThan(0);
      expect(await embedder.load()).toBe(dimensions);
    });

    it("gives one unit-length vector per text, in order", async () => {
      const texts = ["translate a letter into French", "book a flight to Rome", "count calories in my lunch"];
      const vectors = await embedder.embed(texts);
      expect(vectors).toHaveLength(3);
      for (const v of vectors) {
        expect(v).toBeInstanceOf(Float32Array);
        expect(v).toHaveLength(dimensions);
        expect(v.every(Number.isFinite)).toBe(true);
        expect(Math.abs(Math.sqrt(cosine(v, v)) - 1)).toBeLessThan(1e-3);
      }
      const single = await embedder.embed([texts[1]]);
      expect(cosine(single[0], vectors[1])).toBeGreaterThan(0.999);
    });

    it("is deterministic and independent of the batch it is in", async () => {
      const [a] = await embedder.embed(["the same sentence twice"]);
      const [, b] = await embedder.embed([
        "a much longer and entirely different sentence in front",
        "the same sentence twice",
      ]);
      expect(cosine(a, b)).toBeGreaterThan(0.999);
    });

    it("takes an empty batch, an empty text, a long text and any script", async () => {
      expect(await embedder.embed([])).toEqual([]);
      const odd = await embedder.embed([
        "",
        "word ".repeat(5000),
        "日本語のテキスト",
        "emoji 🚀 and punctuation?!",
      ]);
      expect(odd).toHaveLength(4);
      for (const v of odd) expect(v.every(Number.isFinite)).toBe(true);
    });

    it("answers concurrent callers each with their own vectors", async () => {
      const texts = Array.from({ length: 40 }, (_, i) => `request number ${i} about topic ${i % 7}`);
      const together = await Promise.all(
        texts.map((t, i) => embedder.embed([t], { purpose: i % 2 ? "query" : "document" })),
      );
      // Embedded as what it was asked as: models with a query instruction embed the two differently.
      const [reference] = await embedder.embed([texts[13]], { purpose: "query" });
      expect(together).toHaveLength(40);
      if (!options.semantic) return;
      expect(cosine(together[13][0], reference)).toBeGreaterThan(0.99);
    });

    if (options.semantic) {
      it("puts paraphrases nearer than unrelated texts", async () => {
        const [query, paraphrase, unrelated] = await embedder.embed([
          "convert this paragraph into Spanish",
          "translate text between languages",
          "water the houseplants every week",
        ]);
        expect(cosine(query, paraphrase)).toBeGreaterThan(cosine(query, unrelated));
      });
    }
  });
}
