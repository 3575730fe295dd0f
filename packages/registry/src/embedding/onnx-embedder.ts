import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Embedder, EmbedderUnavailableError, type EmbedOptions, normalize } from "./embedder.js";
import { UNIGRAM_TOKENIZER_FILE, UnigramTokenizer } from "./unigram-tokenizer.js";
import { WordPieceTokenizer } from "./wordpiece-tokenizer.js";

export interface OnnxEmbedderOptions {
  /**
   * Folder with `model.onnx` (or `onnx/model.onnx`, or `model_quantized.onnx`) and its tokenizer:
   * `sentencepiece-unigram.json` (XLM-R models converted by `mq9 models fetch`), else WordPiece's
   * `tokenizer.json` or `vocab.txt`.
   */
  modelDir: string;
  /** Prepended to query texts; BGE models want "Represent this sentence for searching relevant passages: ", E5 models "query: ". */
  queryPrefix?: string;
  /** Prepended to document (skill) texts; E5 models want "passage: ". */
  documentPrefix?: string;
  /** How token vectors become one vector: mean over the attention mask (MiniLM, default) or the [CLS] token (BGE). */
  pooling?: "mean" | "cls";
  /** Longest input in tokens, [CLS] and [SEP] included. */
  maxTokens?: number;
}

/** The slice of onnxruntime-node's API used here (loaded only when an onnx embedder runs). */
interface OrtTensor {
  readonly dims: readonly number[];
  readonly data: Float32Array | BigInt64Array;
}
interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
interface Ort {
  InferenceSession: { create(path: string, options?: object): Promise<OrtSession> };
  Tensor: new (type: "int64", data: BigInt64Array, dims: number[]) => OrtTensor;
}

/** What the embedder needs of a tokenizer: ids framed by the model's start and end tokens. */
interface Tokenizer {
  readonly pad: number;
  encode(text: string, maxTokens: number): number[];
}

/** The tokenizer the folder holds: a unigram one when a conversion wrote it, else WordPiece. */
function tokenizerIn(dir: string): Tokenizer {
  const unigram = join(dir, UNIGRAM_TOKENIZER_FILE);
  return existsSync(unigram) ? UnigramTokenizer.fromFile(unigram) : WordPieceTokenizer.fromDirectory(dir);
}

interface LoadedModel {
  ort: Ort;
  session: OrtSession;
  tokenizer: Tokenizer;
}

/**
 * What one more model call costs, in padded token cells: each call has a fixed cost (about
 * that of a few short rows), so splitting a batch pays only when it saves more padding.
 */
const CALL_COST_CELLS = 24;

/**
 * Splits texts of these token lengths into model calls that waste least: sorted by length,
 * cut where the padding saved outweighs another call (padding to the longest row of a call is
 * the main waste of a mixed batch). Returns the indices of each call's rows.
 */
export function lengthGroups(lengths: number[]): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b]);
  const n = order.length;
  // best[j]: least cost of the first j sorted rows; a call over rows i..j-1 costs its fixed
  // cost plus its rows padded to row j-1 (the longest).
  const best = new Float64Array(n + 1);
  const cut = new Int32Array(n + 1);
  for (let j = 1; j <= n; j++) {
    best[j] = Number.POSITIVE_INFINITY;
    const width = lengths[order[j - 1]];
    for (let i = 0; i < j; i++) {
      const cost = best[i] + CALL_COST_CELLS + (j - i) * width;
      if (cost < best[j]) {
        best[j] = cost;
        cut[j] = i;
      }
    }
  }
  const groups: number[][] = [];
  for (let j = n; j > 0; j = cut[j]) groups.unshift(order.slice(cut[j], j));
  return groups;
}

const MODEL_FILES = ["model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx"];

async function importOrt(): Promise<Ort> {
  // A variable specifier: the runtime (and its native library) is loaded only when configured.
  const specifier = "onnxruntime-node";
  try {
    return (await import(specifier)) as Ort;
  } catch (err) {
    throw new EmbedderUnavailableError(
      "registry.embedder 'onnx' needs the package onnxruntime-node, which is not installed (npm i onnxruntime-node@1.30.0); or use --registry-embedder use",
      { cause: err },
    );
  }
}

/**
 * Sentence embeddings from a BERT-shaped ONNX model (MiniLM, BGE-small, …)
 * read from a local folder, on onnxruntime's CPU backend. No network.
 */
export class OnnxEmbedder implements Embedder {
  readonly id: string;
  private readonly modelDir: string;
  private loaded?: Promise<LoadedModel & { dimensions: number }>;

  constructor(private readonly options: OnnxEmbedderOptions) {
    this.modelDir = resolve(options.modelDir);
    // A document prefix changes the stored vectors: a new one must re-embed them.
    const documents = options.documentPrefix ? `:${JSON.stringify(options.documentPrefix)}` : "";
    this.id = `onnx:${this.modelDir}:${options.pooling ?? "mean"}${documents}`;
  }

  load(): Promise<number> {
    this.loaded ??= (async () => {
      const modelFile = MODEL_FILES.map((f) => join(this.modelDir, f)).find(existsSync);
      if (!modelFile) {
        throw new EmbedderUnavailableError(
          `no ONNX model in ${this.modelDir} (looked for ${MODEL_FILES.join(", ")}); fetch one with 'mq9 models fetch'`,
        );
      }
      let tokenizer: Tokenizer;
      try {
        tokenizer = tokenizerIn(this.modelDir);
      } catch (err) {
        throw new EmbedderUnavailableError((err as Error).message, { cause: err });
      }
      const ort = await importOrt();
      const session = await ort.InferenceSession.create(modelFile, {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        graphOptimizationLevel: "all",
      });
      const probe = await this.run({ ort, session, tokenizer }, ["probe"]);
      return { ort, session, tokenizer, dimensions: probe[0].length };
    })();
    return this.loaded.then((m) => m.dimensions);
  }

  private async run(model: LoadedModel, texts: string[]): Promise<Float32Array[]> {
    const maxTokens = this.options.maxTokens ?? 256;
    const encoded = texts.map((t) => model.tokenizer.encode(t, maxTokens));
    const vectors = new Array<Float32Array>(texts.length);
    for (const group of lengthGroups(encoded.map((row) => row.length))) {
      const rows = group.map((i) => encoded[i]);
      const out = await this.runRows(model, rows);
      group.forEach((i, k) => {
        vectors[i] = out[k];
      });
    }
    return vectors;
  }

  /** One model call over rows padded to the longest of them. */
  private async runRows(model: LoadedModel, encoded: number[][]): Promise<Float32Array[]> {
    const { ort, session, tokenizer } = model;
    const width = Math.max(...encoded.map((ids) => ids.length));
    const ids = new BigInt64Array(encoded.length * width);
    const mask = new BigInt64Array(encoded.length * width);
    const pad = BigInt(tokenizer.pad);
    encoded.forEach((row, r) => {
      for (let c = 0; c < width; c++) {
        ids[r * width + c] = c < row.length ? BigInt(row[c]) : pad;
        mask[r * width + c] = c < row.length ? 1n : 0n;
      }
    });
    const dims = [encoded.length, width];
    const feeds: Record<string, OrtTensor> = {};
    for (const name of session.inputNames) {
      if (name === "input_ids") feeds[name] = new ort.Tensor("int64", ids, dims);
      else if (name === "attention_mask") feeds[name] = new ort.Tensor("int64", mask, dims);
      else if (name === "token_type_ids")
        feeds[name] = new ort.Tensor("int64", new BigInt64Array(ids.length), dims);
      else
        throw new EmbedderUnavailableError(
          `the model in ${this.modelDir} wants an input '${name}' (not BERT-shaped)`,
        );
    }
    const outputs = await session.run(feeds);
    const output =
      outputs.sentence_embedding ??
      outputs.last_hidden_state ??
      outputs.token_embeddings ??
      outputs[session.outputNames[0]];
    const data = output.data as Float32Array;
    if (output.dims.length === 2) {
      const size = output.dims[1];
      return encoded.map((_, r) => normalize(data.slice(r * size, (r + 1) * size)));
    }
    const [, seq, size] = output.dims;
    return encoded.map((row, r) => {
      const vector = new Float32Array(size);
      if (this.options.pooling === "cls") vector.set(data.subarray(r * seq * size, r * seq * size + size));
      else {
        for (let t = 0; t < row.length; t++) {
          const base = (r * seq + t) * size;
          for (let k = 0; k < size; k++) vector[k] += data[base + k];
        }
        for (let k = 0; k < size; k++) vector[k] /= row.length;
      }
      return normalize(vector);
    });
  }

  async embed(texts: string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    await this.load();
    const model = await this.loaded!;
    const prefix =
      (options.purpose === "query" ? this.options.queryPrefix : this.options.documentPrefix) ?? "";
    return this.run(
      model,
      texts.map((t) => prefix + t),
    );
  }

  async close(): Promise<void> {
    const model = await this.loaded?.catch(() => undefined);
    await model?.session.release();
  }
}
