import type { AgentDiscoverReply } from "./agent-messages.js";
import type { DeleteReply, MailboxCreateReply, MessageItem, MessagesReply, Mq9Reply } from "./messages.js";
import { Mq9Error } from "./mq9-error.js";
import type { Parsed } from "./validate.js";

/** A decoded reply, or the Mq9Error it stands for (the broker's error, or a reply no mq9 broker sends). */
export type DecodedReply<T> = Parsed<T, Mq9Error>;

const decoder = new TextDecoder();

const SEND_REPLY_HEAD = new TextEncoder().encode('{"error":"","msg_id":');
const CLOSE_BRACE = 0x7d;
const MINUS = 0x2d;

/**
 * The msg_id of a SEND's reply, the most frequent one, in the exact form encodeSendReply writes,
 * read without decoding text and parsing JSON; undefined for anything else, which takes the
 * general path.
 */
function quickSendReplyId(data: Uint8Array): number | undefined {
  const head = SEND_REPLY_HEAD.length;
  const last = data.length - 1;
  if (last <= head || data[last] !== CLOSE_BRACE) return undefined;
  for (let i = 0; i < head; i++) if (data[i] !== SEND_REPLY_HEAD[i]) return undefined;
  let i = head;
  const negative = data[i] === MINUS;
  if (negative) i++;
  if (i >= last || last - i > 15) return undefined;
  let value = 0;
  for (; i < last; i++) {
    const digit = data[i] - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}

const ok = <T>(value: T): DecodedReply<T> => ({ ok: true, value });
const failed = <T>(error: Mq9Error): DecodedReply<T> => ({ ok: false, error });

/** The error for a success reply that lacks a field every mq9 broker sends. */
export function malformedReply(subject: string, field: string): Mq9Error {
  return new Mq9Error("INTERNAL", `${subject}: the reply has no valid '${field}'; is this an mq9 broker?`);
}

/**
 * Decodes a reply envelope. A non-empty `error` becomes an Mq9Error with the broker's text and
 * its `code` (or, from a broker that sends none, the code the text stands for).
 */
export function decodeReply<T extends object>(data: Uint8Array, subject: string): DecodedReply<T> {
  let reply: unknown;
  try {
    reply = JSON.parse(decoder.decode(data));
  } catch {
    return failed(new Mq9Error("INTERNAL", `${subject}: the reply is not JSON; is this an mq9 broker?`));
  }
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) {
    return failed(
      new Mq9Error("INTERNAL", `${subject}: the reply is not a JSON object; is this an mq9 broker?`),
    );
  }
  const { error, code } = reply as Partial<Mq9Reply>;
  if (typeof error === "string" && error !== "") return failed(Mq9Error.fromReply(error, code));
  return ok(reply as T);
}

/** The msg_id a SEND's reply carries (-1 for a delayed message). */
export function decodeSendReply(data: Uint8Array, subject: string): DecodedReply<number> {
  const quick = quickSendReplyId(data);
  if (quick !== undefined) return ok(quick);
  const reply = decodeReply<{ msg_id?: unknown }>(data, subject);
  if (!reply.ok) return reply;
  if (typeof reply.value.msg_id !== "number") return failed(malformedReply(subject, "msg_id"));
  return ok(reply.value.msg_id);
}

/** The mail address a MAILBOX.CREATE reply carries. */
export function decodeCreateReply(data: Uint8Array, subject: string): DecodedReply<string> {
  const reply = decodeReply<MailboxCreateReply>(data, subject);
  if (!reply.ok) return reply;
  if (typeof reply.value.mail_address !== "string") return failed(malformedReply(subject, "mail_address"));
  return ok(reply.value.mail_address);
}

/**
 * The message items of a FETCH or QUERY reply. `raw`: the FETCH asked for payload_format "raw",
 * so its payloads may follow the JSON (each item then gets `payload_bytes`); a broker that
 * ignored the request answers the usual form, which is read as such.
 */
export function decodeMessagesReply(
  data: Uint8Array,
  subject: string,
  raw = false,
): DecodedReply<MessageItem[]> {
  if (raw) {
    const lean = decodeRawMessages(data, subject);
    if (lean !== undefined) return lean;
  }
  const reply = decodeReply<MessagesReply>(data, subject);
  if (!reply.ok) return reply;
  if (!Array.isArray(reply.value.messages)) return failed(malformedReply(subject, "messages"));
  return ok(reply.value.messages);
}

const NEWLINE = 0x0a;

/**
 * A raw FETCH reply's items with their payloads, and with their header blocks where the items
 * carry `header_len` (header_format "raw"); undefined when the reply is not in that form.
 */
function decodeRawMessages(data: Uint8Array, subject: string): DecodedReply<MessageItem[]> | undefined {
  const end = data.indexOf(NEWLINE);
  if (end < 0) return undefined;
  let head: unknown;
  try {
    head = JSON.parse(decoder.decode(data.subarray(0, end)));
  } catch {
    return undefined;
  }
  const messages = (head as Partial<MessagesReply> | null)?.messages;
  if (!Array.isArray(messages) || messages.some((m) => typeof m?.payload_len !== "number")) return undefined;
  // The payloads are views of `data`, not copies: nats.js hands each reply in memory of its own
  // (a socket read's chunk, or the buffer it gathered a longer reply in), which nothing writes
  // again. A payload kept alive keeps the reply's bytes alive, as a copy of them would. Plain
  // Uint8Array views, as copies were, whether `data` is a Buffer or not.
  const bytes = new Uint8Array(data.buffer, data.byteOffset + end + 1, data.byteLength - end - 1);
  let at = 0;
  for (const item of messages) {
    // A header block, when the item says it has one there, comes just before its payload.
    const headerLength = item.header_len;
    if (headerLength !== undefined) {
      if (!validLength(headerLength, at, bytes.length)) return failed(malformedReply(subject, "header_len"));
      item.header_bytes = bytes.subarray(at, at + headerLength);
      at += headerLength;
    }
    const length = item.payload_len as number;
    if (!validLength(length, at, bytes.length)) return failed(malformedReply(subject, "payload_len"));
    item.payload = "";
    item.payload_bytes = bytes.subarray(at, at + length);
    at += length;
  }
  if (at !== bytes.length) return failed(malformedReply(subject, "payload_len"));
  return ok(messages);
}

/** Whether `length` bytes from `at` are a whole count that fits in `size`. */
function validLength(length: unknown, at: number, size: number): boolean {
  return typeof length === "number" && Number.isSafeInteger(length) && length >= 0 && at + length <= size;
}

/** A DELETE reply's `deleted` flag (a broker that leaves it out deleted the message). */
export function decodeDeleteReply(data: Uint8Array, subject: string): DecodedReply<boolean> {
  const reply = decodeReply<DeleteReply>(data, subject);
  if (!reply.ok) return reply;
  return ok(reply.value.deleted !== false);
}

/** A DISCOVER reply: its entries and paging fields. */
export function decodeDiscoverReply(data: Uint8Array, subject: string): DecodedReply<AgentDiscoverReply> {
  const reply = decodeReply<AgentDiscoverReply>(data, subject);
  if (!reply.ok) return reply;
  if (!Array.isArray(reply.value.agents)) return failed(malformedReply(subject, "agents"));
  return reply;
}
