import { writeHeaderBlockJson } from "./header-block-json.js";
import { JsonBytes } from "./json-bytes.js";
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

/** Which header forms an item carries: the raw block as bytes, the decoded map. */
export interface ItemHeaderParts {
  bytes: boolean;
  map: boolean;
}

/** Both header forms: what a FETCH gets unless it leaves one out. */
export const BOTH_HEADER_FORMS: ItemHeaderParts = { bytes: true, map: true };

/**
 * What of an item follows the reply's JSON as bytes instead of being written inside it: nothing
 * (the reference form), its payload (payload_format "raw"), or its header block and then its
 * payload (with header_format "raw" as well).
 */
export type ItemTail = "none" | "payload" | "header-and-payload";

/** Whether `message`'s header block goes after the JSON: it has one, some form of it was asked for, and the tail carries headers. */
export function headerInTail(message: WireMessage, parts: ItemHeaderParts, tail: ItemTail): boolean {
  return tail === "header-and-payload" && message.header !== undefined && (parts.bytes || parts.map);
}

/**
 * The wire form of a stored message (`MessageItem`), written straight to JSON
 * bytes: payload in base64, the header block echoed as bytes (reference-broker
 * parity; left out when the FETCH asked for `include_header: false`) and as a
 * decoded map (left out for `include_headers: false`). With a `tail` the item carries the
 * payload's length (`payload_len`) instead of the payload, and with "header-and-payload" the
 * header block's length (`header_len`) instead of both header forms, for a reply whose bytes
 * follow its JSON. Writing the bytes directly avoids an object per message and a number per
 * header byte on the hot FETCH path.
 */
export function writeMessageItem(
  out: JsonBytes,
  message: WireMessage,
  parts: ItemHeaderParts = BOTH_HEADER_FORMS,
  tail: ItemTail = "none",
): void {
  // Numbers are written as digits and constant pieces as they are: no string is made per
  // message unless it has headers, a key or tags.
  out.ascii('{"msg_id":');
  out.integer(message.id);
  if (tail !== "none") {
    // The payload follows the reply's JSON (see encodeReply); the item says how long it is.
    out.ascii(',"payload_len":');
    out.integer(message.payload.byteLength);
    out.ascii(',"priority":"');
  } else {
    out.ascii(',"payload":"');
    out.base64(message.payload);
    out.ascii('","priority":"');
  }
  out.ascii(message.priority);
  const header = message.header;
  if (header && headerInTail(message, parts, tail)) {
    // The block follows the JSON, just before the payload: the client decodes what it reads.
    out.ascii('","header_len":');
    out.integer(header.byteLength);
  } else if (header) {
    // Both forms are written straight from the block's bytes: no string per message.
    if (parts.bytes) {
      out.ascii('","header":');
      out.byteList(header);
    } else {
      out.ascii('"');
    }
    if (parts.map) {
      out.ascii(',"headers":');
      writeHeaderBlockJson(out, header);
    }
  } else {
    out.ascii('","header":null');
  }
  if (message.key !== undefined) {
    out.ascii(',"key":');
    out.text(JSON.stringify(message.key));
  }
  if (message.tags) {
    out.ascii(',"tags":');
    out.text(JSON.stringify(message.tags));
  }
  out.ascii(',"create_time":');
  out.integer(Math.floor(message.createdMs / 1000));
  if (message.deliveryCount !== undefined) {
    out.ascii(',"delivery_count":');
    out.integer(message.deliveryCount);
  }
  out.ascii("}");
}

/** One message item as JSON text (see writeMessageItem). */
export function encodeMessageItem(
  message: WireMessage,
  parts: ItemHeaderParts = BOTH_HEADER_FORMS,
  tail: ItemTail = "none",
): string {
  const out = new JsonBytes(itemSizeHint(message, tail));
  writeMessageItem(out, message, parts, tail);
  return out.done().toString();
}

/** Bytes an item of `message` takes without its headers and strings: the writer grows past it when needed. */
export function itemSizeHint(message: WireMessage, tail: ItemTail = "none"): number {
  return 160 + (tail !== "none" ? 0 : Math.ceil(message.payload.byteLength / 3) * 4);
}
