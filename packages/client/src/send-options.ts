import { encodeHeaderBlock, Headers, Mq9Error, type Priority } from "@mq9/protocol";

/** Options of one SEND; each becomes an `mq9-*` header. */
export interface SendOptions {
  /** Default normal. FETCH hands out critical, then urgent, then normal. */
  priority?: Priority;
  /** Compaction key: a newer message with the same key replaces the older one in this mailbox. */
  key?: string;
  /** Seconds before the message becomes visible; the reply's msgId is then -1. */
  delaySeconds?: number;
  /** Seconds after which the message expires unread. */
  ttlSeconds?: number;
  /** @deprecated The old name of `delaySeconds`; still read when `delaySeconds` is not given. */
  delay?: number;
  /** @deprecated The old name of `ttlSeconds`; still read when `ttlSeconds` is not given. */
  ttl?: number;
  /** Tags that QUERY can filter on. */
  tags?: readonly string[];
  /** Further headers, e.g. `mq9-reply-to`; stored and returned with the message. */
  headers?: Readonly<Record<string, string>>;
  /**
   * Idempotency key (the `mq9-idempotency-key` header): the broker stores a SEND with a key it has seen in
   * this mailbox within its dedup window (default 2 minutes) only once, and answers a repeat with
   * the first one's msg_id. With a key, send() retries by itself (see `retry`).
   */
  idempotencyKey?: string;
  /**
   * Retry a SEND whose outcome is not known (OUTCOME_UNKNOWN, a timeout, a lost connection) or
   * that failed for a passing reason, without storing it twice: `true` (or retry options) makes
   * one idempotency key for the send when none is given; `false` never retries. Default: retry
   * when an `idempotencyKey` is given. Retries stop after `withinMs` (default 60 000), well inside
   * the broker's dedup window, after which a retry could store the message again.
   */
  retry?: boolean | SendRetryOptions;
}

/** How send() retries (see SendOptions.retry). */
export interface SendRetryOptions {
  /** Attempts in all, the first included (default 10). */
  attempts?: number;
  /** First pause; it doubles on every failure (default 100). */
  initialDelayMs?: number;
  /** Longest pause (default 5 000). */
  maxDelayMs?: number;
  /** No attempt starts this long after the first one (default 60 000). */
  withinMs?: number;
}

export const DEFAULT_SEND_RETRY: Required<SendRetryOptions> = {
  attempts: 10,
  initialDelayMs: 100,
  maxDelayMs: 5_000,
  withinMs: 60_000,
};

/** The idempotency key and retry plan of a send, or undefined when it is not retried. */
export function sendRetryOf(
  options: SendOptions | undefined,
): { key: string; retry: Required<SendRetryOptions> } | undefined {
  const retry = options?.retry;
  if (options === undefined || retry === false) return undefined;
  if (retry === undefined && options.idempotencyKey === undefined) return undefined;
  const key = options.idempotencyKey ?? crypto.randomUUID();
  return { key, retry: { ...DEFAULT_SEND_RETRY, ...(typeof retry === "object" ? retry : {}) } };
}

function seconds(name: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      `${name} must be a whole, non-negative number of seconds, got ${value}`,
      {
        retryable: false,
      },
    );
  }
  return String(value);
}

/** A NATS header block ready to publish; nats.js needs nothing from headers but `encode()`. */
export interface EncodedHeaders {
  encode(): Uint8Array;
}

/** RFC 822 field names: printable ASCII except colon (what nats.js accepts). */
const HEADER_NAME = /^[!-9;-~]+$/;
/** Names already checked: a sender uses the same few names again and again. */
const checkedNames = new Set<string>();

function checkName(name: string): void {
  if (checkedNames.has(name)) return;
  if (!HEADER_NAME.test(name)) {
    throw badHeader(`header name '${name}' must be printable ASCII without spaces or ':'`);
  }
  if (checkedNames.size >= 1024) checkedNames.clear();
  checkedNames.add(name);
}

function badHeader(why: string): Mq9Error {
  return new Mq9Error("INVALID_REQUEST", why, { retryable: false });
}

/**
 * The NATS headers for a SEND, or undefined when no option needs one (a plain PUB is cheaper).
 * The block is written directly (a later header of the same name replaces an earlier one,
 * values are trimmed, names and values validated as nats.js does), without nats.js's
 * per-header bookkeeping.
 */
export function sendHeaders(options: SendOptions | undefined): EncodedHeaders | undefined {
  if (!options) return undefined;
  const { priority, key, tags, headers, idempotencyKey } = options;
  const delay = options.delaySeconds ?? options.delay;
  const ttl = options.ttlSeconds ?? options.ttl;
  if (
    priority === undefined &&
    key === undefined &&
    delay === undefined &&
    ttl === undefined &&
    tags === undefined &&
    headers === undefined &&
    idempotencyKey === undefined
  ) {
    return undefined;
  }
  const h = new Map<string, string>();
  if (headers) for (const name of Object.keys(headers)) h.set(name, headers[name]);
  if (priority !== undefined) h.set(Headers.priority, priority);
  if (key !== undefined) h.set(Headers.key, key);
  if (delay !== undefined) h.set(Headers.delay, seconds("delaySeconds", delay));
  if (ttl !== undefined) h.set(Headers.ttl, seconds("ttlSeconds", ttl));
  if (tags !== undefined && tags.length > 0) h.set(Headers.tags, tags.join(","));
  if (idempotencyKey !== undefined) {
    if (idempotencyKey === "") throw badHeader("idempotencyKey must not be empty");
    h.set(Headers.idempotencyKey, idempotencyKey);
  }
  let text = "NATS/1.0";
  for (const [name, value] of h) {
    checkName(name);
    if (value.includes("\r") || value.includes("\n"))
      throw badHeader(`the value of header '${name}' must not contain CR or LF`);
    text += `\r\n${name}: ${value.trim()}`;
  }
  const block: Uint8Array = Buffer.from(`${text}\r\n\r\n`);
  return { encode: () => block };
}

/** A header block of `headers` as they are (names and values already valid). */
export function encodedHeaders(headers: Readonly<Record<string, string>>): EncodedHeaders {
  const block = encodeHeaderBlock(Object.entries(headers));
  return { encode: () => block };
}
