import { setTimeout as sleep } from "node:timers/promises";

/** What went wrong talking to an embedding server; `retryable` says whether trying later may help. */
export type EmbeddingServerErrorCode =
  | "unreachable"
  | "timeout"
  | "key_refused"
  | "rejected"
  | "server_error"
  | "bad_response"
  | "closed";

/**
 * A remote embedding server failed or answered something unusable. Its message names the server
 * by origin and path only, and never carries the API key, the request's headers or a response's
 * text about the key.
 */
export class EmbeddingServerError extends Error {
  override name = "EmbeddingServerError";
  constructor(
    message: string,
    readonly code: EmbeddingServerErrorCode,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface EmbeddingsRequestOptions {
  /** `{url}/embeddings`, with the base URL's query (Azure's api-version) kept. */
  endpoint: URL;
  /** The server as messages name it: origin and path, no query. */
  shown: string;
  apiKey?: string;
  timeoutMs: number;
  /** Further attempts after a 429, a 5xx, a timeout or a network error. */
  retries: number;
  /** Aborted when the embedder closes: waits and requests in flight end at once. */
  closing: AbortSignal;
}

/** Longest wait between attempts, whatever Retry-After asks for. */
const MAX_WAIT_MS = 60_000;

/** Exponential backoff with jitter: about 0.5 s, 1 s, 2 s, … up to 30 s. */
function backoffMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/** The wait a 429 or 503 asks for: OpenAI's `retry-after-ms`, or Retry-After in seconds or as a date. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.has("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return Math.min(ms, MAX_WAIT_MS);
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  return Number.isFinite(wait) ? Math.min(Math.max(0, wait), MAX_WAIT_MS) : undefined;
}

/** Text from a server, safe to put in a message: the key blanked out, one line, short. */
function quoted(text: string, apiKey: string | undefined): string {
  const clean = (apiKey ? text.split(apiKey).join("***") : text).replace(/\s+/g, " ").trim();
  return clean.length > 300 ? `${clean.slice(0, 300)}…` : clean;
}

/** The `error.message` of an OpenAI-style error body, else the body itself. */
function serverMessage(body: string, apiKey: string | undefined): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const message =
      typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof message === "string") return quoted(message, apiKey);
  } catch {
    // not JSON: the text as it came
  }
  return quoted(body, apiKey);
}

/** Why a network failure happened, from fetch's cause (ECONNREFUSED, ENOTFOUND, …). */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return (err as Error).message;
}

/**
 * POSTs `body` as JSON and resolves with the parsed JSON of a 2xx answer. Retries 429s, 5xxs,
 * timeouts and network errors with backoff (honouring Retry-After); anything else fails at once.
 * `onRejected` may ask for one more try with another body (a server refusing a field).
 */
export async function postEmbeddings(
  options: EmbeddingsRequestOptions,
  body: () => object,
  onRejected?: (status: number, message: string) => boolean,
): Promise<unknown> {
  const { endpoint, shown, apiKey, closing } = options;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  let last: EmbeddingServerError | undefined;
  for (let attempt = 0; ; attempt++) {
    if (closing.aborted) throw new EmbeddingServerError("the embedder is closed", "closed", false);
    let wait: number | undefined;
    try {
      const signal = AbortSignal.any([closing, AbortSignal.timeout(options.timeoutMs)]);
      const response = await fetch(endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify(body()),
        signal,
      });
      const text = await response.text();
      if (response.ok) {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new EmbeddingServerError(
            `the embedding server at ${shown} answered HTTP ${response.status} with something that is not JSON (${quoted(text.slice(0, 80), apiKey) || "an empty body"}); is the URL the API's base, ending in /v1?`,
            "bad_response",
            false,
          );
        }
      }
      const status = response.status;
      if (status === 401 || status === 403) {
        // Never the body: OpenAI's 401 quotes part of the key.
        throw new EmbeddingServerError(
          apiKey
            ? `the API key was refused by the embedding server at ${shown} (HTTP ${status}); check registry.embedderApiKey, MQ9_EMBEDDER_API_KEY or the variable registry.embedderApiKeyEnv names`
            : `the embedding server at ${shown} wants an API key (HTTP ${status}) and none is set; set MQ9_EMBEDDER_API_KEY, or name the variable holding it with registry.embedderApiKeyEnv`,
          "key_refused",
          false,
        );
      }
      const message = serverMessage(text, apiKey);
      if (status === 429 || status >= 500) {
        last = new EmbeddingServerError(
          `the embedding server at ${shown} answered HTTP ${status}${message ? ` (${message})` : ""}`,
          status === 429 ? "rejected" : "server_error",
          true,
        );
        wait = retryAfterMs(response.headers);
      } else if (onRejected?.(status, message)) {
        attempt--;
        continue;
      } else {
        const hint = status === 404 ? "; is the URL the API's base, ending in /v1?" : "";
        throw new EmbeddingServerError(
          `the embedding server at ${shown} refused the request with HTTP ${status}${message ? ` (${message})` : ""}${hint}`,
          "rejected",
          false,
        );
      }
    } catch (err) {
      if (err instanceof EmbeddingServerError) throw err;
      if (closing.aborted) throw new EmbeddingServerError("the embedder is closed", "closed", false);
      last =
        (err as Error).name === "TimeoutError"
          ? new EmbeddingServerError(
              `the embedding server at ${shown} did not answer within ${options.timeoutMs} ms`,
              "timeout",
              true,
            )
          : new EmbeddingServerError(
              `cannot reach the embedding server at ${shown} (${networkReason(err)}); is it running, and is the URL right?`,
              "unreachable",
              true,
              { cause: err },
            );
    }
    if (attempt >= options.retries) {
      const failed = last!;
      const tries = attempt + 1;
      throw new EmbeddingServerError(
        tries > 1 ? `${failed.message}, ${tries} times` : failed.message,
        failed.code,
        true,
        { cause: failed.cause },
      );
    }
    try {
      await sleep(wait ?? backoffMs(attempt), undefined, { signal: closing });
    } catch {
      throw new EmbeddingServerError("the embedder is closed", "closed", false);
    }
  }
}
