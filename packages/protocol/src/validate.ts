import { Errors } from "./errors.js";
import { Headers, splitTags } from "./headers.js";
import {
  type AckRequest,
  DELIVER_POLICIES,
  type DeliverPolicy,
  type FetchRequest,
  HEADER_FORMATS,
  type HeaderFormat,
  type MailboxCreateRequest,
  type NakRequest,
  PAYLOAD_FORMATS,
  type PayloadFormat,
  type QueryRequest,
  type RetryRequest,
} from "./messages.js";
import { Mq9Error } from "./mq9-error.js";
import { isPriority, type Priority } from "./priority.js";

/**
 * The outcome of reading something off the wire: the value, or what was wrong with it. A request
 * validator's error is the text the broker answers with; a reply decoder's is the Mq9Error the
 * caller sees.
 */
export type Parsed<T, E = string> = { ok: true; value: T } | { ok: false; error: E };

/**
 * A request body the caller must fix; its message is the reason inside the command's
 * "invalid … payload" text, or with `whole` the complete error text.
 */
export class BodyError extends Error {
  constructor(
    message: string,
    readonly whole = false,
  ) {
    super(message);
  }
}

export type JsonObject = Record<string, unknown>;

export interface ReadJsonOptions {
  /** An empty body (or the JSON `null` or `""`) counts as `{}`. */
  emptyAsObject?: boolean;
  /** The error for an empty body instead of the generic one. */
  emptyError?: BodyError;
  /** Refuse a body that is not valid UTF-8 (else decoded with replacement characters). */
  strictUtf8?: boolean;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true });
/** Shared: a decoder made per request body cost more than the decoding (decode() keeps no state). */
const lenientDecoder = new TextDecoder();

/** Decodes a request body as one JSON object, with its trimmed text. */
export function readJsonObject(
  body: Uint8Array,
  options: ReadJsonOptions = {},
): { obj: JsonObject; text: string } {
  let text: string;
  try {
    text = (options.strictUtf8 ? strictDecoder : lenientDecoder).decode(body).trim();
  } catch {
    throw new BodyError("the body is not valid UTF-8; send a JSON object");
  }
  const empty = () => {
    if (options.emptyAsObject) return { obj: {}, text: "{}" };
    throw options.emptyError ?? new BodyError("the body is empty; send a JSON object");
  };
  if (text === "") return empty();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new BodyError(`malformed JSON (${(err as Error).message})`);
  }
  // Python SDKs send the JSON string "" as an empty body for some commands.
  if (value === null || value === "") return empty();
  if (typeof value !== "object" || Array.isArray(value)) throw new BodyError("expected a JSON object");
  return { obj: value as JsonObject, text };
}

/** Decodes a request body as a JSON object; an empty body counts as `{}` where `emptyAsObject`. */
function readObject(body: Uint8Array, emptyAsObject: boolean): JsonObject {
  return readJsonObject(body, { emptyAsObject }).obj;
}

export function optional(obj: JsonObject, field: string): unknown {
  const value = obj[field];
  return value === null ? undefined : value;
}

export function optionalString(obj: JsonObject, field: string): string | undefined {
  const value = optional(obj, field);
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new BodyError(`'${field}' must be a string`);
  return value;
}

export function optionalUInt(obj: JsonObject, field: string): number | undefined {
  const value = optional(obj, field);
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new BodyError(`'${field}' must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A non-negative integer no larger than `max`, named in the error when it is. */
function optionalBoundedUInt(obj: JsonObject, field: string, max: number): number | undefined {
  const value = optionalUInt(obj, field);
  if (value !== undefined && value > max)
    throw new BodyError(`'${field}' must be at most ${max}, got ${value}`);
  return value;
}

function optionalBoundedString(obj: JsonObject, field: string, maxLength: number): string | undefined {
  const value = optionalString(obj, field);
  if (value !== undefined && value.length > maxLength) {
    throw new BodyError(`'${field}' must be at most ${maxLength} characters`);
  }
  return value;
}

/** Longest wait a backoff step or a NAK's delay may ask for: a week. */
export const MAX_REDELIVERY_DELAY_MS = 7 * 24 * 3600 * 1000;
/** Most steps a group's backoff may have. */
export const MAX_BACKOFF_STEPS = 50;
/** Largest max_deliver: beyond it a limit means nothing a consumer would notice. */
export const MAX_DELIVER_LIMIT = 1_000_000;
/** Longest member name and NAK reason kept with a lease. */
export const MAX_MEMBER_LENGTH = 128;
export const MAX_NAK_REASON_LENGTH = 1024;

function optionalBackoff(obj: JsonObject, field: string): number[] | undefined {
  const value = optional(obj, field);
  if (value === undefined) return undefined;
  const fine =
    Array.isArray(value) &&
    value.length <= MAX_BACKOFF_STEPS &&
    value.every(
      (v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0 && v <= MAX_REDELIVERY_DELAY_MS,
    );
  if (!fine) {
    throw new BodyError(
      `'${field}' must be an array of at most ${MAX_BACKOFF_STEPS} whole milliseconds, each 0..${MAX_REDELIVERY_DELAY_MS}`,
    );
  }
  return value as number[];
}

function requiredUInt(obj: JsonObject, field: string): number {
  const value = optionalUInt(obj, field);
  if (value === undefined) throw new BodyError(`missing field '${field}'`);
  return value;
}

function optionalBool(obj: JsonObject, field: string): boolean | undefined {
  const value = optional(obj, field);
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new BodyError(`'${field}' must be true or false`);
  return value;
}

/** The value of a request read off the wire; what was wrong with it is an INVALID_REQUEST whose text is the reply's. */
export function requestValue<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new Mq9Error("INVALID_REQUEST", parsed.error);
  return parsed.value;
}

/** Runs a reader that throws BodyError; its reason becomes the error text through `wrap`. */
export function parseWith<T>(read: () => T, wrap: (reason: string) => string): Parsed<T> {
  try {
    return { ok: true, value: read() };
  } catch (err) {
    if (err instanceof BodyError) return { ok: false, error: err.whole ? err.message : wrap(err.message) };
    throw err;
  }
}

export function parseCreateRequest(body: Uint8Array): Parsed<MailboxCreateRequest> {
  return parseWith(
    () => {
      const obj = readObject(body, true);
      return {
        name: optionalString(obj, "name"),
        ttl: optionalUInt(obj, "ttl"),
        desc: optionalString(obj, "desc"),
        max_deliver: optionalBoundedUInt(obj, "max_deliver", MAX_DELIVER_LIMIT),
        dead_letter: optionalString(obj, "dead_letter"),
      };
    },
    (reason) => Errors.invalidPayload("MAILBOX.CREATE", reason),
  );
}

export function parseFetchRequest(body: Uint8Array): Parsed<FetchRequest> {
  return parseWith(
    () => {
      const obj = readObject(body, false);
      const deliver = optionalString(obj, "deliver");
      if (deliver !== undefined && !DELIVER_POLICIES.includes(deliver as DeliverPolicy)) {
        throw new BodyError(`'deliver' must be one of ${DELIVER_POLICIES.join(", ")}, got '${deliver}'`);
      }
      const configValue = optional(obj, "config");
      if (configValue !== undefined && (typeof configValue !== "object" || Array.isArray(configValue))) {
        throw new BodyError("'config' must be an object");
      }
      const config = (configValue ?? {}) as JsonObject;
      const payloadFormat = optionalString(obj, "payload_format");
      if (payloadFormat !== undefined && !PAYLOAD_FORMATS.includes(payloadFormat as PayloadFormat)) {
        throw new BodyError(
          `'payload_format' must be one of ${PAYLOAD_FORMATS.join(", ")}, got '${payloadFormat}'`,
        );
      }
      const headerFormat = optionalString(obj, "header_format");
      if (headerFormat !== undefined && !HEADER_FORMATS.includes(headerFormat as HeaderFormat)) {
        throw new BodyError(
          `'header_format' must be one of ${HEADER_FORMATS.join(", ")}, got '${headerFormat}'`,
        );
      }
      // The raw header form rides on the raw payloads' bytes after the JSON.
      if (headerFormat === "raw" && payloadFormat !== "raw") {
        throw new BodyError("'header_format' \"raw\" needs 'payload_format' \"raw\"");
      }
      const fetch: FetchRequest = {
        group_name: optionalString(obj, "group_name"),
        deliver: deliver as DeliverPolicy | undefined,
        from_time: optionalUInt(obj, "from_time"),
        from_id: optionalUInt(obj, "from_id"),
        force_deliver: optionalBool(obj, "force_deliver"),
        include_header: optionalBool(obj, "include_header"),
        include_headers: optionalBool(obj, "include_headers"),
        member: optionalBoundedString(obj, "member", MAX_MEMBER_LENGTH),
        config: {
          num_msgs: optionalUInt(config, "num_msgs"),
          max_wait_ms: optionalUInt(config, "max_wait_ms"),
          lease_ms: optionalUInt(config, "lease_ms"),
          max_deliver: optionalBoundedUInt(config, "max_deliver", MAX_DELIVER_LIMIT),
          backoff_ms: optionalBackoff(config, "backoff_ms"),
        },
      };
      if (payloadFormat !== undefined) fetch.payload_format = payloadFormat as PayloadFormat;
      if (headerFormat !== undefined) fetch.header_format = headerFormat as HeaderFormat;
      return fetch;
    },
    (reason) => Errors.invalidPayload("MSG.FETCH", reason),
  );
}

export function parseAckRequest(body: Uint8Array): Parsed<AckRequest> {
  return parseWith(
    () => {
      const obj = readObject(body, false);
      const group = optionalString(obj, "group_name");
      if (group === undefined) throw new BodyError("missing field 'group_name'");
      return {
        group_name: group,
        mail_address: optionalString(obj, "mail_address"),
        msg_id: requiredUInt(obj, "msg_id"),
      };
    },
    (reason) => Errors.invalidPayload("MSG.ACK", reason),
  );
}

export function parseNakRequest(body: Uint8Array): Parsed<NakRequest> {
  return parseWith(
    () => {
      const obj = readObject(body, false);
      const group = optionalString(obj, "group_name");
      if (!group) throw new BodyError("missing field 'group_name' (a NAK gives a message back to a group)");
      return {
        group_name: group,
        msg_id: requiredUInt(obj, "msg_id"),
        reason: optionalBoundedString(obj, "reason", MAX_NAK_REASON_LENGTH),
        delay_ms: optionalBoundedUInt(obj, "delay_ms", MAX_REDELIVERY_DELAY_MS),
        terminal: optionalBool(obj, "terminal"),
      };
    },
    (reason) => Errors.invalidPayload("MSG.NAK", reason),
  );
}

export function parseRetryRequest(body: Uint8Array): Parsed<RetryRequest> {
  return parseWith(
    () => ({ msg_id: optionalUInt(readObject(body, true), "msg_id") }),
    (reason) => Errors.invalidPayload("MSG.RETRY", reason),
  );
}

export function parseQueryRequest(body: Uint8Array): Parsed<QueryRequest> {
  return parseWith(() => {
    const obj = readObject(body, true);
    const tags = optional(obj, "tags");
    if (tags !== undefined && (!Array.isArray(tags) || tags.some((t) => typeof t !== "string"))) {
      throw new BodyError("'tags' must be an array of strings");
    }
    return {
      key: optionalString(obj, "key"),
      tags: tags as string[] | undefined,
      since: optionalUInt(obj, "since"),
      limit: optionalUInt(obj, "limit"),
    };
  }, Errors.invalidQuery);
}

/** The options a SEND carries in its headers, as the broker reads them. */
export interface ParsedSendOptions {
  priority: Priority;
  key?: string;
  delaySeconds?: number;
  ttlSeconds?: number;
  tags?: string[];
  /** The idempotency key (`mq9-idempotency-key`, or `Nats-Msg-Id`). */
  msgId?: string;
}

/** Longest idempotency key: keys are kept in an index, and a UUID or a hash needs far less. */
export const MAX_MSG_ID_LENGTH = 256;

const wholeSeconds = /^\d+$/;

function secondsHeader(headers: Map<string, string>, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === undefined) return undefined;
  if (!wholeSeconds.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new BodyError(Errors.invalidHeader(name, raw, "a non-negative whole number of seconds"));
  }
  return Number(raw);
}

/** The idempotency key of a SEND: mq9-idempotency-key, else Nats-Msg-Id; an empty one is none. */
function msgIdHeader(headers: Map<string, string>): string | undefined {
  const name = headers.has(Headers.idempotencyKey) ? Headers.idempotencyKey : Headers.natsMsgId;
  const raw = headers.get(name);
  if (raw === undefined || raw === "") return undefined;
  if (raw.length > MAX_MSG_ID_LENGTH) {
    throw new BodyError(
      Errors.invalidHeader(name, `${raw.slice(0, 32)}…`, `at most ${MAX_MSG_ID_LENGTH} characters`),
    );
  }
  return raw;
}

/** Reads the mq9-* SEND headers (already lowercased by `parseHeaderBlock`). */
export function parseSendOptions(headers: Map<string, string> | undefined): Parsed<ParsedSendOptions> {
  if (!headers) return { ok: true, value: { priority: "normal" } };
  return parseWith(
    () => {
      const rawPriority = headers.get(Headers.priority);
      const priority = rawPriority === undefined || rawPriority === "" ? "normal" : rawPriority.toLowerCase();
      if (!isPriority(priority)) {
        throw new BodyError(
          Errors.invalidHeader(Headers.priority, rawPriority!, "critical, urgent or normal"),
        );
      }
      const tagsValue = headers.get(Headers.tags);
      const tags = tagsValue === undefined ? undefined : splitTags(tagsValue);
      return {
        priority,
        key: headers.get(Headers.key),
        delaySeconds: secondsHeader(headers, Headers.delay) || undefined,
        ttlSeconds: secondsHeader(headers, Headers.ttl) || undefined,
        tags: tags && tags.length > 0 ? tags : undefined,
        msgId: msgIdHeader(headers),
      };
    },
    (reason) => reason,
  );
}

const wholeNumber = /^\d+$/;

/** Reads the msg_id at the end of a DELETE subject (`$mq9.AI.MSG.DELETE.<mailbox>.<msg_id>`). */
export function parseMsgIdToken(token: string): Parsed<number> {
  const msgId = Number(token);
  if (!wholeNumber.test(token) || !Number.isSafeInteger(msgId)) {
    return { ok: false, error: Errors.invalidMsgId(token) };
  }
  return { ok: true, value: msgId };
}
