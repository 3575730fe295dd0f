import type { Embedder } from "./embedder.js";
import { OnnxEmbedder } from "./onnx-embedder.js";
import { StaticEmbedder } from "./static-embedder.js";
import { UseEmbedder } from "./use-embedder.js";

/** Which embedder to run; plain data, so it can cross into a worker thread. */
export type EmbedderSpec =
  | { kind: "static"; tablePath?: string }
  | { kind: "use" }
  | {
      kind: "onnx";
      /** Folder with `model.onnx` (or `onnx/model.onnx`) and `tokenizer.json` or `vocab.txt`. */
      modelDir: string;
      /** Prefix for query texts (BGE: "Represent this sentence for searching relevant passages: "). */
      queryPrefix?: string;
      pooling?: "mean" | "cls";
      maxTokens?: number;
    };

/** Builds an embedder that runs in this thread. */
export function createEmbedder(spec: EmbedderSpec): Embedder {
  switch (spec.kind) {
    case "static":
      return new StaticEmbedder({ tablePath: spec.tablePath });
    case "use":
      return new UseEmbedder();
    case "onnx":
      return new OnnxEmbedder(spec);
  }
}
