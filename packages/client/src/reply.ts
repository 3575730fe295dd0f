import { Mq9Error } from "@mq9/protocol";

const decoder = new TextDecoder();

const SEND_REPLY_HEAD = new TextEncoder().encode('{"error":"","msg_id":');
const CLOSE_BRACE = 0x7d;
const MINUS = 0x2d;

/**
 * The msg_id of a SEND's reply, the most frequent one, in the exact form `{"error":"","msg_id":N}`,
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

/** The msg_id a SEND's reply carries; its error, or a reply without one, throws. */
export function sendReplyId(data: Uint8Array, subject: string): number {
  const quick = quickSendReplyId(data);
  if (quick !== undefined) return quick;
  const reply = parseReply<{ msg_id?: unknown }>(data, subject);
  if (typeof reply.msg_id !== "number") throw malformed(subject, "msg_id");
  return reply.msg_id;
}

/** Parses a reply envelope; a non-empty `error` becomes an Mq9Error with the broker's text. */
export function parseReply<T extends object>(data: Uint8Array, subject: string): T {
  let reply: unknown;
  try {
    reply = JSON.parse(decoder.decode(data));
  } catch {
    throw new Mq9Error("INTERNAL", `${subject}: the reply is not JSON; is this an mq9 broker?`);
  }
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) {
    throw new Mq9Error("INTERNAL", `${subject}: the reply is not a JSON object; is this an mq9 broker?`);
  }
  const error = (reply as { error?: unknown }).error;
  if (typeof error === "string" && error !== "") throw Mq9Error.fromReply(error);
  return reply as T;
}

/** The error for a success reply that lacks a field every mq9 broker sends. */
export function malformed(subject: string, field: string): Mq9Error {
  return new Mq9Error("INTERNAL", `${subject}: the reply has no valid '${field}'; is this an mq9 broker?`);
}
