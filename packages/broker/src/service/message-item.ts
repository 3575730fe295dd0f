import type { StoredMessage } from "../store/store.js";

/** "0".."255" and ",0"..",255": the header byte list is written from these without a join. */
const BYTE_TEXT = Array.from({ length: 256 }, (_, b) => String(b));
const COMMA_BYTE_TEXT = BYTE_TEXT.map((text) => `,${text}`);
/** A header name or value that can go into JSON text between quotes as it is. */
const PLAIN_JSON = /^[^"\\\u0000-\u001f\u007f-\uffff]*$/;

function jsonString(text: string): string {
  return PLAIN_JSON.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** `[78,65,...]`: the raw header block as JSON numbers. */
function headerBytesJson(header: Uint8Array): string {
  if (header.length === 0) return "[]";
  let out = `[${BYTE_TEXT[header[0]]}`;
  for (let i = 1; i < header.length; i++) out += COMMA_BYTE_TEXT[header[i]];
  return `${out}]`;
}

/**
 * The decoded header map as a JSON object: names lowercased and values trimmed as
 * `parseHeaderBlock` does, a later duplicate replacing an earlier one in place.
 */
function headerMapJson(header: Uint8Array): string {
  const text = Buffer.from(header.buffer, header.byteOffset, header.byteLength).toString("utf8");
  const names: string[] = [];
  const values: string[] = [];
  // The first line is the version line (NATS/1.0); the block ends at an empty line.
  let at = text.indexOf("\r\n");
  while (at >= 0) {
    at += 2;
    const end = text.indexOf("\r\n", at);
    const stop = end < 0 ? text.length : end;
    if (stop === at) break;
    const colon = text.indexOf(":", at);
    if (colon > at && colon < stop) {
      const name = text.slice(at, colon).trim().toLowerCase();
      const value = text.slice(colon + 1, stop).trim();
      const seen = names.indexOf(name);
      if (seen >= 0) values[seen] = value;
      else {
        names.push(name);
        values.push(value);
      }
    }
    at = end;
  }
  let out = "{";
  for (let i = 0; i < names.length; i++) {
    out += `${i === 0 ? "" : ","}${jsonString(names[i])}:${jsonString(values[i])}`;
  }
  return `${out}}`;
}

/**
 * The wire form of a stored message (`MessageItem`), written straight to JSON
 * text: payload in base64, the header block echoed as bytes (reference-broker
 * parity; left out when the FETCH asked for `include_header: false`) and as a
 * decoded map. Building the text directly avoids an object per message and a
 * number per header byte on the hot FETCH path.
 */
export function encodeMessageItem(message: StoredMessage, includeHeaderBytes = true): string {
  const payload = Buffer.from(message.payload.buffer, message.payload.byteOffset, message.payload.byteLength);
  let out = `{"msg_id":${message.id},"payload":"${payload.toString("base64")}","priority":"${message.priority}"`;
  if (message.header) {
    if (includeHeaderBytes) out += `,"header":${headerBytesJson(message.header)}`;
    out += `,"headers":${headerMapJson(message.header)}`;
  } else {
    out += ',"header":null';
  }
  if (message.key !== undefined) out += `,"key":${JSON.stringify(message.key)}`;
  if (message.tags) out += `,"tags":${JSON.stringify(message.tags)}`;
  return `${out},"create_time":${Math.floor(message.createdMs / 1000)}}`;
}
