import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lengthGroups } from "../src/embedding/onnx-embedder.js";
import { queryHoldMs } from "../src/embedding/threaded-embedder.js";
import { OnnxEmbedder, ThreadedEmbedder, UseEmbedder } from "../src/index.js";
import { embedderConformance } from "./embedder-conformance.js";
import { tempDir } from "./harness.js";
import { TINY_BERT_DIMENSIONS, writeTinyBert } from "./tiny-bert.js";

const root = tempDir("mq9-models-");
const tinyBert = writeTinyBert(join(root, "tiny-bert"));
// A model whose call fails for any text with the word "poison" (see writeTinyBert).
const brittleBert = writeTinyBert(join(root, "brittle-bert"), { unembedded: ["poison"] });

/** Each vector equal to its reference to 5 decimals: batching must not change what a text gets. */
function expectSameVectors(vectors: ArrayLike<number>[], reference: ArrayLike<number>[]): void {
  expect(vectors).toHaveLength(reference.length);
  vectors.forEach((v, i) => {
    expect(Array.from(v)).toEqual(Array.from(reference[i]).map((x) => expect.closeTo(x, 5)));
  });
}
afterAll(() => rmSync(root, { recursive: true, force: true }));

embedderConformance("UseEmbedder (default, in this thread)", () => new UseEmbedder(), { semantic: true });

embedderConformance(
  "ThreadedEmbedder running UseEmbedder in a worker",
  () => new ThreadedEmbedder({ spec: { kind: "use" }, id: new UseEmbedder().id }),
  { semantic: true },
);

embedderConformance("OnnxEmbedder (tiny BERT-shaped model)", () => new OnnxEmbedder({ modelDir: tinyBert }), {
  semantic: false,
});

embedderConformance(
  "ThreadedEmbedder running OnnxEmbedder in a worker",
  () => new ThreadedEmbedder({ spec: { kind: "onnx", modelDir: tinyBert }, id: "onnx-tiny" }),
  { semantic: false },
);

describe("ThreadedEmbedder with a pool of workers", () => {
  it("splits concurrent batches over its workers and gives the vectors one model gives", async () => {
    const pool = new ThreadedEmbedder({ spec: { kind: "onnx", modelDir: tinyBert }, id: "p", workers: 3 });
    const single = new OnnxEmbedder({ modelDir: tinyBert });
    try {
      expect(pool.parallelism).toBe(3);
      const texts = Array.from({ length: 60 }, (_, i) => `skill text number ${i}`);
      const calls = Array.from({ length: 6 }, (_, i) => pool.embed(texts.slice(i * 10, i * 10 + 10)));
      const pooled = (await Promise.all(calls)).flat();
      const reference = await single.embed(texts);
      expect(pooled).toHaveLength(60);
      pooled.forEach((v, i) => {
        expect(Array.from(v)).toEqual(Array.from(reference[i]).map((x) => expect.closeTo(x, 5)));
      });
    } finally {
      await pool.close();
      await single.close();
    }
    await expect(pool.embed(["after close"])).rejects.toThrow(/closed/);
  });
});

describe("ThreadedEmbedder scheduling", () => {
  it("a query overtakes a long document batch after at most one chunk, and every text keeps its vector", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "s",
      workers: 1,
      documentChunk: 4,
    });
    const single = new OnnxEmbedder({ modelDir: tinyBert });
    try {
      await embedder.load();
      const finished: string[] = [];
      // Lengths in no order: chunks are cut by length, and vectors must come back in the caller's order.
      const docs = Array.from({ length: 40 }, (_, i) => `skill ${"word ".repeat((i * 7) % 11)}${i}`);
      const backlog = embedder.embed(docs).then((v) => {
        finished.push("documents");
        return v;
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const query = embedder.embed(["find me a translator"], { purpose: "query" }).then((v) => {
        finished.push("query");
        return v;
      });
      const [vectors] = await Promise.all([backlog, query]);
      expect(finished).toEqual(["query", "documents"]);
      const reference = await single.embed(docs);
      expectSameVectors(vectors, reference);
    } finally {
      await embedder.close();
      await single.close();
    }
  });

  it("a steady stream of queries still lets the documents through", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "s",
      workers: 1,
      maxBatch: 2,
      documentChunk: 2,
    });
    try {
      await embedder.load();
      let documentsDone = false;
      const backlog = embedder.embed(Array.from({ length: 8 }, (_, i) => `skill ${i}`)).then(() => {
        documentsDone = true;
      });
      // Eight callers, each asking again as soon as it is answered, two per batch: queries are always waiting.
      let queriesAfter = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, lane) => {
          for (let i = 0; !documentsDone; i++)
            await embedder.embed([`query ${lane}.${i}`], { purpose: "query" });
          queriesAfter++;
        }),
      );
      await backlog;
      expect(queriesAfter).toBe(8);
    } finally {
      await embedder.close();
    }
  });
});

describe("ThreadedEmbedder query window", () => {
  const state = { windowMs: 8, queryBatchInModel: true, waitingTexts: 3, fullBatch: 16, heldMs: 2 };

  it("holds a few queries only while another query batch is in the model, and only up to the window", () => {
    expect(queryHoldMs(state)).toBe(6);
    expect(queryHoldMs({ ...state, heldMs: 8 })).toBe(0);
    expect(queryHoldMs({ ...state, heldMs: 30 })).toBe(0);
    // An idle model (or one busy with skills only) takes a lone query at once.
    expect(queryHoldMs({ ...state, queryBatchInModel: false })).toBe(0);
    // A full batch goes at once.
    expect(queryHoldMs({ ...state, waitingTexts: 16 })).toBe(0);
    expect(queryHoldMs({ ...state, waitingTexts: 2, fullBatch: 2 })).toBe(0);
    expect(queryHoldMs({ ...state, windowMs: 0 })).toBe(0);
  });

  it("gives every query its own vector when queries trickle in and are held to share calls", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "w",
      workers: 2,
      queryWindowMs: 50,
    });
    const single = new OnnxEmbedder({ modelDir: tinyBert });
    try {
      await embedder.load();
      const texts = Array.from({ length: 48 }, (_, i) => `query ${"word ".repeat(i % 9)}${i}`);
      const asked: Promise<Float32Array[]>[] = [];
      for (const text of texts) {
        asked.push(embedder.embed([text], { purpose: "query" }));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const vectors = (await Promise.all(asked)).flat();
      const reference = await single.embed(texts, { purpose: "query" });
      expectSameVectors(vectors, reference);
    } finally {
      await embedder.close();
      await single.close();
    }
  });
});

describe("ThreadedEmbedder query batches", () => {
  it("gives each of many concurrent queries of mixed lengths its own vector, in shared calls", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "b",
      workers: 2,
    });
    const single = new OnnxEmbedder({ modelDir: tinyBert });
    try {
      await embedder.load();
      const before = embedder.batches;
      // Single texts and calls of several texts, short and long, all asked in one turn.
      const asks = Array.from({ length: 40 }, (_, i) =>
        Array.from(
          { length: 1 + (i % 3) },
          (_, k) => `${"please ".repeat((i * 5 + k) % 13)}translate text ${i}.${k}`,
        ),
      );
      const answers = await Promise.all(asks.map((texts) => embedder.embed(texts, { purpose: "query" })));
      for (const [i, texts] of asks.entries()) {
        expect(answers[i]).toHaveLength(texts.length);
        const reference = await single.embed(texts, { purpose: "query" });
        answers[i].forEach((v, k) => {
          expect(Array.from(v)).toEqual(Array.from(reference[k]).map((x) => expect.closeTo(x, 5)));
        });
      }
      // 80 texts in at most 32 a call: merged, not one call each.
      expect(embedder.batches - before).toBeLessThan(asks.length);
    } finally {
      await embedder.close();
      await single.close();
    }
  });

  it("cuts queries beyond the batch cap into calls of at most the cap, a long call too", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "c",
      workers: 1,
      maxBatch: 4,
    });
    const single = new OnnxEmbedder({ modelDir: tinyBert });
    try {
      await embedder.load();
      let before = embedder.batches;
      const lone = Array.from({ length: 10 }, (_, i) =>
        embedder.embed([`book a flight ${i}`], { purpose: "query" }),
      );
      await Promise.all(lone);
      // 10 queries, 4 a call: 4 + 4 + 2.
      expect(embedder.batches - before).toBe(3);
      before = embedder.batches;
      const texts = Array.from({ length: 9 }, (_, i) => `${"word ".repeat(i)}weather in rome ${i}`);
      const vectors = await embedder.embed(texts, { purpose: "query" });
      expect(embedder.batches - before).toBe(3);
      const reference = await single.embed(texts, { purpose: "query" });
      expectSameVectors(vectors, reference);
    } finally {
      await embedder.close();
      await single.close();
    }
  });

  it("a failed model call is tried again caller by caller: only the text the model cannot take fails", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: brittleBert },
      id: "f",
      workers: 1,
      maxBatch: 2,
    });
    try {
      await embedder.load();
      // One turn, one worker, two a call: [fine, poison] fails, then each alone; [fine, fine].
      const before = embedder.batches;
      const asked = ["book a flight", "poison the well", "rain in paris", "pay my invoice"].map((text) =>
        embedder.embed([text], { purpose: "query" }),
      );
      const settled = await Promise.allSettled(asked);
      expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
      expect(embedder.batches - before).toBe(4);
      const reason = (settled[1] as PromiseRejectedResult).reason as Error;
      expect(reason.message).toMatch(/^the embedding model failed on a batch of 1 query text: .+/);
      expect(reason.name).not.toBe("EmbedderUnavailableError");
      // The embedder keeps serving.
      expect(await embedder.embed(["weather in rome"], { purpose: "query" })).toHaveLength(1);
    } finally {
      await embedder.close();
    }
  });

  it("hands a lone query to an idle worker in the turn it arrives, however long the window", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: tinyBert },
      id: "l",
      workers: 2,
      queryWindowMs: 3_600_000,
    });
    try {
      await embedder.load();
      for (let i = 0; i < 3; i++) {
        const before = embedder.batches;
        const answer = embedder.embed([`find me a translator ${i}`], { purpose: "query" });
        // The pump is scheduled once the current turn is done: two turns later the query is in a call.
        for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
        expect(embedder.batches - before).toBe(1);
        await answer;
      }
    } finally {
      await embedder.close();
    }
  });
});

describe("OnnxEmbedder specifics", () => {
  it("gives the model's width and says clearly when the model is missing", async () => {
    const embedder = new OnnxEmbedder({ modelDir: tinyBert, pooling: "cls", queryPrefix: "query: " });
    expect(await embedder.load()).toBe(TINY_BERT_DIMENSIONS);
    const [doc] = await embedder.embed(["book a flight"]);
    const [query] = await embedder.embed(["book a flight"], { purpose: "query" });
    expect(doc).toHaveLength(TINY_BERT_DIMENSIONS);
    expect(query).toHaveLength(TINY_BERT_DIMENSIONS);
    await embedder.close();
    const missing = new OnnxEmbedder({ modelDir: join(root, "nothing-here") });
    await expect(missing.load()).rejects.toThrow(/no ONNX model in .*nothing-here.*mq9 models fetch/);
  });

  it("splits a batch by token length only where the padding saved pays for another call", async () => {
    expect(lengthGroups([12, 13, 12, 14])).toEqual([[0, 2, 1, 3]]);
    const mixed = [...Array.from({ length: 30 }, () => 10), 200, 210];
    const groups = lengthGroups(mixed);
    expect(groups).toHaveLength(2);
    expect(groups[1].sort()).toEqual([30, 31]);
    expect(groups.flat().sort((a, b) => a - b)).toEqual(mixed.map((_, i) => i));
    expect(lengthGroups([])).toEqual([]);
    const embedder = new OnnxEmbedder({ modelDir: tinyBert });
    const texts = ["short", "word ".repeat(150), "a little longer text here", "mid"];
    const together = await embedder.embed(texts);
    for (const [i, text] of texts.entries()) {
      const [alone] = await embedder.embed([text]);
      expect(Array.from(together[i])).toEqual(Array.from(alone).map((x) => expect.closeTo(x, 5)));
    }
    await embedder.close();
  });

  it("a worker embedder whose model is missing fails every call with the reason", async () => {
    const embedder = new ThreadedEmbedder({
      spec: { kind: "onnx", modelDir: join(root, "absent") },
      id: "x",
    });
    await expect(embedder.embed(["a"])).rejects.toThrow(/no ONNX model/);
    await expect(embedder.embed(["b"])).rejects.toThrow(/no ONNX model/);
    await embedder.close();
  });
});
