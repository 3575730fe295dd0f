/**
 * `@mq9/registry/models` — the sentence-embedding models the onnx embedder knows, where they are
 * kept and how they are fetched. A subpath of its own, so that it loads no embedder.
 */
export { DEFAULT_MODEL, KNOWN_MODELS, type KnownModel } from "./known-models.js";
export {
  convertKnownModel,
  defaultModelsDir,
  type FetchModelOptions,
  fetchKnownModel,
  knownModel,
  pinnedModelProblem,
} from "./model-cache.js";
export type { PypiModelFile } from "./pypi-model-files.js";
