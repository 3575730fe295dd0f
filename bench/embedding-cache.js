// An embedder wrapper for benchmarks: vectors kept on disk, keyed by the inner embedder's id, the
// purpose and a hash of the text, so that a scale run embeds 100,000 skill texts once, not every time.
// The file is append-only: [20-byte SHA-1 of id, purpose and text][dims float32] per vector.
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

const KEY_BYTES = 20;

export function embeddingCacheDir() {
  return process.env.BENCH_CACHE_DIR ?? path.join(homedir(), ".cache", "mq9-bench");
}

/** The cache file of an embedder's vectors of `dims` dimensions. */
export function embeddingCacheFile(id, dims) {
  return path.join(embeddingCacheDir(), `${id.replace(/[^A-Za-z0-9._-]+/g, "_")}-${dims}.bin`);
}

/** Each record of a cache file as `{ key, vector }` (key in hex), in file order; a torn last record (a run stopped mid-write) is ignored. */
export function readCacheRecords(file, dims) {
  const bytes = readFileSync(file);
  const record = KEY_BYTES + dims * 4;
  const records = [];
  for (let at = 0; at + record <= bytes.length; at += record) {
    const vector = new Float32Array(dims);
    new Uint8Array(vector.buffer).set(bytes.subarray(at + KEY_BYTES, at + record));
    records.push({ key: bytes.toString("hex", at, at + KEY_BYTES), vector });
  }
  return records;
}

export class CachedEmbedder {
  /** @param inner an Embedder (see packages/registry/src/embedding/embedder.ts) */
  constructor(inner) {
    this.inner = inner;
    this.id = inner.id;
    this.parallelism = inner.parallelism;
    this.vectors = new Map();
    this.hits = 0;
    this.misses = 0;
  }

  async load() {
    const dims = await this.inner.load();
    this.dims = dims;
    mkdirSync(embeddingCacheDir(), { recursive: true });
    this.file = embeddingCacheFile(this.id, dims);
    if (this.vectors.size === 0 && existsSync(this.file)) {
      for (const { key, vector } of readCacheRecords(this.file, dims)) this.vectors.set(key, vector);
    }
    return dims;
  }

  key(text, purpose) {
    return createHash("sha1").update(`${this.id}\0${purpose}\0${text}`).digest("hex");
  }

  async embed(texts, options = {}) {
    const purpose = options.purpose ?? "document";
    const keys = texts.map((t) => this.key(t, purpose));
    const missing = [];
    keys.forEach((k, i) => {
      if (!this.vectors.has(k)) missing.push(i);
    });
    this.hits += texts.length - missing.length;
    this.misses += missing.length;
    if (missing.length > 0) {
      const fresh = await this.inner.embed(
        missing.map((i) => texts[i]),
        options,
      );
      const chunks = [];
      missing.forEach((i, j) => {
        this.vectors.set(keys[i], fresh[j]);
        chunks.push(
          Buffer.from(keys[i], "hex"),
          Buffer.from(fresh[j].buffer, fresh[j].byteOffset, fresh[j].byteLength),
        );
      });
      appendFileSync(this.file, Buffer.concat(chunks));
    }
    return keys.map((k) => this.vectors.get(k));
  }

  /** A view for one broker: its registry closes its embedder on shutdown, the cache outlives it. */
  shared() {
    return {
      id: this.id,
      parallelism: this.parallelism,
      load: () => this.load(),
      embed: (texts, options) => this.embed(texts, options),
      close: async () => {},
    };
  }

  close() {
    return this.inner.close();
  }
}
