import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { OnnxEmbedder, ThreadedEmbedder, UseEmbedder } from "../src/index.js";
import { embedderConformance } from "./embedder-conformance.js";
import { tempDir } from "./harness.js";
import { TINY_BERT_DIMENSIONS, writeTinyBert } from "./tiny-bert.js";

const root = tempDir("mq9-models-");
const tinyBert = writeTinyBert(join(root, "tiny-bert"));
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
