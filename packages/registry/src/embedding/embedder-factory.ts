import type { Embedder } from "./embedder.js";
import { OnnxEmbedder, type OnnxEmbedderOptions } from "./onnx-embedder.js";
import { OpenAiEmbedder, type OpenAiEmbedderOptions } from "./openai-embedder.js";
import { StaticEmbedder } from "./static-embedder.js";
import { UseEmbedder } from "./use-embedder.js";

/** Which embedder to run; plain data, so it can cross into a worker thread. */
export type EmbedderSpec =
  | { kind: "static"; tablePath?: string }
  | { kind: "use" }
  | ({ kind: "onnx" } & OnnxEmbedderOptions)
  | ({ kind: "openai" } & OpenAiEmbedderOptions);

/** Builds an embedder that runs in this thread. */
export function createEmbedder(spec: EmbedderSpec): Embedder {
  switch (spec.kind) {
    case "static":
      return new StaticEmbedder({ tablePath: spec.tablePath });
    case "use":
      return new UseEmbedder();
    case "onnx":
      return new OnnxEmbedder(spec);
    case "openai":
      return new OpenAiEmbedder(spec);
  }
}
