import { Errors } from "./errors.js";
import { JsonBytes } from "./json-bytes.js";
import {
  BOTH_HEADER_FORMS,
  headerInTail,
  type ItemHeaderParts,
  type ItemTail,
  itemSizeHint,
  type WireMessage,
  writeMessageItem,
} from "./message-item.js";
import type { Mq9Reply } from "./messages.js";
import type { Mq9Error, Mq9ErrorCode } from "./mq9-error.js";

/**
 * A reply before encoding. FETCH and QUERY carry the stored messages themselves, and
 * `headerParts` (a FETCH's `include_header` and `include_headers`) says which header forms
 * they carry; DISCOVER carries its entries as the UTF-8 JSON pieces the registry keeps.
 */
export type ReplyBody = Mq9Reply & {
  messages?: readonly WireMessage[];
  agentsJson?: (readonly Uint8Array[])[];
  headerParts?: ItemHeaderParts;
  /** A FETCH that asked for payload_format "raw": the payloads follow the JSON (see encodeReply). */
  rawPayloads?: boolean;
  /** With rawPayloads, a FETCH that asked for header_format "raw": each header block follows the JSON too. */
  rawHeaders?: boolean;
} & Record<string, unknown>;

/** A reply's JSON as a transport writes it out: text, or pieces (text or UTF-8 bytes) in order. */
export type ReplyPayload = string | readonly (string | Uint8Array)[];

/**
 * The reply of a stored SEND: `msg_id` -1 for a delayed message. The client reads this exact form
 * fastest. `duplicate`: the SEND repeated an idempotency key within the window, nothing was stored,
 * and `msg_id` is the original's.
 */
export function encodeSendReply(msgId: number, duplicate = false): string {
  return duplicate ? `{"error":"","msg_id":${msgId},"duplicate":true}` : `{"error":"","msg_id":${msgId}}`;
}

/** A failure as the broker answers it: the unchanged text and, as an mq9 extension, its code. */
export type ErrorReply = { error: string; code: Mq9ErrorCode };

/**
 * The reply of a failed request: the error's text, word for word what other SDKs match on, and
 * its stable `code` (an mq9 extension; clients that do not know it ignore it).
 */
export function errorReplyOf(error: Mq9Error): ErrorReply {
  return { error: error.message, code: error.code };
}

/** The reply of a request that failed for a reason the broker did not foresee (logged where it happened). */
export function internalErrorReply(err: unknown): ErrorReply {
  return { error: Errors.internal(err instanceof Error ? err.message : String(err)), code: "INTERNAL" };
}

/**
 * The JSON of a reply, for the transport to write out: text (written as UTF-8) for a short reply,
 * bytes for one with messages, written item by item (see writeMessageItem); DISCOVER entries are
 * spliced in as the UTF-8 bytes they are kept as.
 * With `rawPayloads` the items carry `payload_len`, and one newline and then every payload, back
 * to back in item order, follow the JSON: no base64, a quarter fewer bytes, the stored bytes
 * written as they are. With `rawHeaders` as well, each item's header block goes there too, just
 * before its payload, and the item carries `header_len` instead of the `header` byte list and
 * the `headers` map (a keyed message's two costliest fields to write and to parse).
 */
export function encodeReply(reply: ReplyBody): ReplyPayload {
  // Most replies (SEND, ACK, CREATE) carry neither: no copy of the object needed.
  if (reply.messages === undefined && reply.agentsJson === undefined && reply.headerParts === undefined) {
    return JSON.stringify(reply);
  }
  const { messages, headerParts, agentsJson, rawPayloads, rawHeaders, ...rest } = reply;
  if (agentsJson) return spliceAgents(JSON.stringify(rest), agentsJson);
  if (!messages) return JSON.stringify(rest);
  const tail: ItemTail = rawPayloads !== true ? "none" : rawHeaders ? "header-and-payload" : "payload";
  return messagePieces(JSON.stringify(rest), messages, headerParts ?? BOTH_HEADER_FORMS, tail);
}

/** DISCOVER entries arrive as UTF-8 JSON pieces: passed on as they are, not parsed and written again. */
function spliceAgents(head: string, agents: readonly (readonly Uint8Array[])[]): Uint8Array[] {
  const parts: Uint8Array[] = [Buffer.from(`${head.slice(0, -1)},"agents":[`)];
  agents.forEach((pieces, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(...pieces);
  });
  parts.push(CLOSE_AGENTS);
  return parts;
}

const COMMA = Buffer.from(",");
const CLOSE_AGENTS = Buffer.from("]}");

function messagePieces(
  head: string,
  messages: readonly WireMessage[],
  headerParts: ItemHeaderParts,
  tail: ItemTail,
): Uint8Array[] {
  let size = head.length * 3 + 16;
  for (const message of messages) size += itemSizeHint(message, tail);
  const out = new JsonBytes(size);
  out.text(`${head.slice(0, -1)},"messages":[`);
  for (let i = 0; i < messages.length; i++) {
    if (i > 0) out.ascii(",");
    writeMessageItem(out, messages[i], headerParts, tail);
  }
  if (tail === "none") {
    out.ascii("]}");
    return [out.done()];
  }
  out.ascii("]}\n");
  // The bytes go out as they are: the transport copies them once, into its output.
  const pieces: Uint8Array[] = [out.done()];
  for (const message of messages) {
    if (message.header && headerInTail(message, headerParts, tail)) pieces.push(message.header);
    if (message.payload.byteLength > 0) pieces.push(message.payload);
  }
  return pieces;
}
