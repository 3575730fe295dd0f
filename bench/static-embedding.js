// Static token embeddings distilled from a sentence model: does a lookup table keep the model's relevance?
// `node bench/static-embedding.js <model folder>` (a BERT-shaped ONNX model with tokenizer.json, e.g. from
// `mq9 models fetch all-MiniLM-L6-v2-int8`). It runs every vocabulary token through the model once (its output
// vector at its own position; the table is cached beside this process's temp files), then embeds a text as the
// mean of its tokens' vectors, optionally centred on the vocabulary mean (an earlier variant weighted tokens by
// their document frequency in the evaluation cards themselves, which leaks the test set: removed), and ranks the labelled set's 150 cards for its 100 paraphrases by
// exact cosine, an agent by its best skill (the broker's semantic ranking). Prints recall@5 / recall@1, CPU
// per query text and the load average; figures only. An experiment for issue 21; the registry's own static
// embedder (registry.embedder "static") distils USE-lite, which needs no download.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { REPO_ROOT } from "./proc.js";

const modelDir = process.argv[2];
if (!modelDir || !existsSync(path.join(modelDir, "model.onnx"))) {
  process.stderr.write("usage: node bench/static-embedding.js <folder with model.onnx and tokenizer.json>\n");
  process.exit(2);
}
const load = () => `load ${loadavg()[0].toFixed(1)}`;
const { WordPieceTokenizer } = await import(
  path.join(REPO_ROOT, "packages", "registry", "dist", "embedding", "wordpiece-tokenizer.js")
);
const ort = await import("onnxruntime-node");
const tokenizer = WordPieceTokenizer.fromDirectory(modelDir);
const vocabSize = Object.keys(
  JSON.parse(readFileSync(path.join(modelDir, "tokenizer.json"), "utf8")).model.vocab,
).length;

async function distil() {
  const model = readFileSync(path.join(modelDir, "model.onnx"));
  const key = createHash("sha256").update(model).digest("hex").slice(0, 16);
  const cache = path.join(tmpdir(), `mq9-static-${key}.f32`);
  if (existsSync(cache)) return new Float32Array(readFileSync(cache).buffer.slice(0));
  const session = await ort.InferenceSession.create(path.join(modelDir, "model.onnx"), {
    intraOpNumThreads: 1,
  });
  let table;
  let width = 0;
  const batch = 512;
  const before = process.cpuUsage();
  for (let start = 0; start < vocabSize; start += batch) {
    const n = Math.min(batch, vocabSize - start);
    const ids = new BigInt64Array(n * 3);
    for (let r = 0; r < n; r++) {
      ids[r * 3] = BigInt(tokenizer.cls);
      ids[r * 3 + 1] = BigInt(start + r);
      ids[r * 3 + 2] = BigInt(tokenizer.sep);
    }
    const feeds = {};
    for (const name of session.inputNames) {
      const data =
        name === "input_ids"
          ? ids
          : name === "attention_mask"
            ? new BigInt64Array(n * 3).fill(1n)
            : new BigInt64Array(n * 3);
      feeds[name] = new ort.Tensor("int64", data, [n, 3]);
    }
    const out = (await session.run(feeds))[session.outputNames[0]];
    width = out.dims[2];
    table ??= new Float32Array(vocabSize * width);
    for (let r = 0; r < n; r++) {
      table.set(out.data.subarray((r * 3 + 1) * width, (r * 3 + 2) * width), (start + r) * width);
    }
    process.stderr.write(`\r[static] distilled ${start + n} / ${vocabSize} tokens`);
  }
  const cpu = process.cpuUsage(before);
  process.stderr.write(
    `\n[static] ${((cpu.user + cpu.system) / 1e6).toFixed(0)} s of CPU for the table (${load()})\n`,
  );
  await session.release();
  writeFileSync(cache, Buffer.from(table.buffer));
  return table;
}

function readRelevanceSet() {
  const source = readFileSync(
    path.join(REPO_ROOT, "packages", "registry", "test", "fixtures", "relevance-set.ts"),
    "utf8",
  );
  const agents = [...source.matchAll(/agent\(\s*"([^"]+)",\s*"([^"]+)",((?:\s*"[^"]+",?)+)\s*\)/g)].map(
    (m) => ({
      name: m[1],
      skills: [...m[3].matchAll(/"([^"]+)"/g)].map((s) => {
        const [name, description, tags] = s[1].split(" | ");
        return `${name}. ${description}. ${tags.split(",").join(" ")}`;
      }),
    }),
  );
  const queries = [...source.matchAll(/\{\s*query: "([^"]+)",\s*expect: "([^"]+)",?\s*\}/g)].map((m) => ({
    query: m[1],
    expect: m[2],
  }));
  return { agents, queries };
}

const table = await distil();
const width = table.length / vocabSize;
const { agents, queries } = readRelevanceSet();
const pieces = (text) => tokenizer.encode(text, 256).slice(1, -1);
const mean = new Float32Array(width);
for (let t = 0; t < vocabSize; t++)
  for (let k = 0; k < width; k++) mean[k] += table[t * width + k] / vocabSize;

function embed(text, { centre }) {
  const vector = new Float32Array(width);
  for (const id of pieces(text)) {
    for (let k = 0; k < width; k++) vector[k] += table[id * width + k] - (centre ? mean[k] : 0);
  }
  let norm = 0;
  for (let k = 0; k < width; k++) norm += vector[k] * vector[k];
  norm = Math.sqrt(norm) || 1;
  for (let k = 0; k < width; k++) vector[k] /= norm;
  return vector;
}
const dot = (a, b) => {
  let sum = 0;
  for (let k = 0; k < a.length; k++) sum += a[k] * b[k];
  return sum;
};

process.stdout.write(
  `static token embeddings from ${path.basename(path.resolve(modelDir))} (${vocabSize} tokens x ${width}), ${agents.length} cards, ${queries.length} paraphrases, exact search\n`,
);
for (const variant of [{ centre: false }, { centre: true }]) {
  const skillVectors = agents.map((a) => a.skills.map((s) => embed(s, variant)));
  let top1 = 0;
  let top5 = 0;
  for (const { query, expect } of queries) {
    const q = embed(query, variant);
    const ranked = agents
      .map((a, i) => ({ name: a.name, score: Math.max(...skillVectors[i].map((v) => dot(v, q))) }))
      .sort((x, y) => y.score - x.score);
    const at = ranked.findIndex((r) => r.name === expect);
    if (at === 0) top1++;
    if (at >= 0 && at < 5) top5++;
  }
  const before = process.cpuUsage();
  for (let i = 0; i < 2000; i++) embed(`${queries[i % queries.length].query} ${i}`, variant);
  const cpu = process.cpuUsage(before);
  const label = (variant.centre ? "centred" : "raw").padEnd(14);
  process.stdout.write(
    `  ${label} recall@5 ${(top5 / queries.length).toFixed(2)}  recall@1 ${(top1 / queries.length).toFixed(2)}  ${((cpu.user + cpu.system) / 2000).toFixed(0)} µs CPU per query text (${load()})\n`,
  );
}
