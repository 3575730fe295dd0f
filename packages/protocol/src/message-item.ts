import { headerBlockJson } from "./header-block-json.js";
import type { Priority } from "./priority.js";

/** A stored message as a broker hands it to the encoder (the broker's store records fit it as they are). */
export interface WireMessage {
  id: number;
  priority: Priority;
  key?: string;
  tags?: readonly string[];
  /** The raw NATS header block of the SEND, when it had headers. */
  header?: Uint8Array;
  payload: Uint8Array;
  /** Unix milliseconds; the item carries whole seconds. */
  createdMs: number;
  /** Deliveries to the group that claimed it, this one included; absent for a stateless read. */
  deliveryCount?: number;
}

/** "0".."255" and ",0"..",255": the header byte list is written from these without a join. */
const BYTE_TEXT = Array.from({ length: 256 }, (_, b) => String(b));
const COMMA_BYTE_TEXT = BYTE_TEXT.map((text) => `,${text}`);

/** `[78,65,...]`: the raw header block as JSON numbers. */
function headerBytesJson(header: Uint8Array): string {
  if (header.length === 0) return "[]";
  let out = `[${BYTE_TEXT[header[0]]}`;
  for (let i = 1; i < header.length; i++) out += COMMA_BYTE_TEXT[header[i]];
  return `${out}]`;
}

/** Which header forms an item carries: the raw block as bytes, the decoded map. */
export interface ItemHeaderParts {
  bytes: boolean;
  map: boolean;
}

const BOTH: ItemHeaderParts = { bytes: true, map: true };

/**
 * The wire form of a stored message (`MessageItem`), written straight to JSON
 * text: payload in base64, the header block echoed as bytes (reference-broker
 * parity; left out when the FETCH asked for `include_header: false`) and as a
 * decoded map (left out for `include_headers: false`). `raw`: the item carries the payload's
 * length (`payload_len`) instead, for a reply whose payloads follow its JSON. Building the text
 * directly avoids an object per message and a number per header byte on the
 * hot FETCH path.
 */
export function encodeMessageItem(message: WireMessage, parts: ItemHeaderParts = BOTH, raw = false): string {
  let out: string;
  if (raw) {
    // The payload follows the reply's JSON (see encodeReply); the item says how long it is.
    out = `{"msg_id":${message.id},"payload_len":${message.payload.byteLength},"priority":"${message.priority}"`;
  } else {
    const payload = Buffer.from(
      message.payload.buffer,
      message.payload.byteOffset,
      message.payload.byteLength,
    );
    out = `{"msg_id":${message.id},"payload":"${payload.toString("base64")}","priority":"${message.priority}"`;
  }
  if (message.header) {
    if (parts.bytes) out += `,"header":${headerBytesJson(message.header)}`;
    if (parts.map) out += `,"headers":${headerBlockJson(message.header)}`;
  } else {
    out += ',"header":null';
  }
  if (message.key !== undefined) out += `,"key":${JSON.stringify(message.key)}`;
  if (message.tags) out += `,"tags":${JSON.stringify(message.tags)}`;
  out += `,"create_time":${Math.floor(message.createdMs / 1000)}`;
  return message.deliveryCount === undefined
    ? `${out}}`
    : `${out},"delivery_count":${message.deliveryCount}}`;
}
