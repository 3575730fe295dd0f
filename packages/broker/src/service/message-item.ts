import { parseHeaderBlock } from "@mq9/protocol";
import type { StoredMessage } from "../store/store.js";

/**
 * The wire form of a stored message (`MessageItem`), written straight to JSON
 * text: payload in base64, the header block echoed as bytes (reference-broker
 * parity) and as a decoded map. Building the text directly avoids an object
 * per message and a number per header byte on the hot FETCH path.
 */
export function encodeMessageItem(message: StoredMessage): string {
  const payload = Buffer.from(message.payload.buffer, message.payload.byteOffset, message.payload.byteLength);
  let out = `{"msg_id":${message.id},"payload":"${payload.toString("base64")}","priority":"${message.priority}","header":`;
  if (message.header) {
    const headers = Object.fromEntries(parseHeaderBlock(message.header));
    out += `[${message.header.join(",")}],"headers":${JSON.stringify(headers)}`;
  } else {
    out += "null";
  }
  if (message.key !== undefined) out += `,"key":${JSON.stringify(message.key)}`;
  if (message.tags) out += `,"tags":${JSON.stringify(message.tags)}`;
  return `${out},"create_time":${Math.floor(message.createdMs / 1000)}}`;
}
