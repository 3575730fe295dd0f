import { type Embedder, EmbedderUnavailableError, normalize } from "./embedder.js";
import { SentencePieceTokenizer } from "./sentencepiece-tokenizer.js";
import { type DistilProgress, loadStaticTable, type StaticTable } from "./static-table.js";

/** Characters of a text that are embedded; the rest of a longer text adds little to a bag of tokens. */
export const STATIC_MAX_CHARS = 8192;

export interface StaticEmbedderOptions {
  /** A table file instead of the built or cached one. */
  tablePath?: string;
  /** Reports the distillation when no table exists yet (first start without a build). */
  progress?: DistilProgress;
}

/**
 * The default embedder: a static token table distilled from Universal Sentence
 * Encoder lite (see static-table.ts), so embedding a text is a tokenizer pass
 * and a sum of rows, tens of microseconds on one core, with no model running.
 * A text with no known token embeds as the unknown token's row.
 */
export class StaticEmbedder implements Embedder {
  readonly id = "use-lite-static-512-r1";
  private table?: Promise<{ table: StaticTable; tokenizer: SentencePieceTokenizer }>;
  private ready?: { table: StaticTable; tokenizer: SentencePieceTokenizer };

  constructor(private readonly options: StaticEmbedderOptions = {}) {}

  load(): Promise<number> {
    this.table ??= loadStaticTable(this.options).then((table) => {
      this.ready = { table, tokenizer: new SentencePieceTokenizer(table.vocabulary) };
      return this.ready;
    });
    return this.table.then(({ table }) => table.dimensions);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (!this.ready) await this.load();
    return texts.map((text) => this.embedOne(text));
  }

  /** Synchronous once loaded: what the registry's query path calls. */
  embedOne(text: string): Float32Array {
    if (!this.ready) throw new EmbedderUnavailableError("the static embedder is not loaded yet");
    if (typeof text !== "string") throw new TypeError("the static embedder embeds strings");
    const { table, tokenizer } = this.ready;
    const width = table.dimensions;
    const vector = new Float32Array(width);
    let known = 0;
    for (const id of tokenizer.encode(text.slice(0, STATIC_MAX_CHARS))) {
      if (id === tokenizer.unknownId) continue;
      known++;
      const offset = id * width;
      for (let k = 0; k < width; k++) vector[k] += table.rows[offset + k];
    }
    if (known === 0) vector.set(table.rows.subarray(0, width));
    return normalize(vector);
  }

  async close(): Promise<void> {}
}
