import { type MessageItem, parseHeaderBlock } from "@mq9/protocol";
import type { StoredMessage } from "../store/store.js";

/** The wire form of a stored message: payload in base64, header echoed as bytes and as a map. */
export function toMessageItem(message: StoredMessage): MessageItem {
  const item: MessageItem = {
    msg_id: message.id,
    payload: Buffer.from(
      message.payload.buffer,
      message.payload.byteOffset,
      message.payload.byteLength,
    ).toString("base64"),
    priority: message.priority,
    header: message.header ? Array.from(message.header) : null,
    create_time: Math.floor(message.createdMs / 1000),
  };
  if (message.header) item.headers = Object.fromEntries(parseHeaderBlock(message.header));
  if (message.key !== undefined) item.key = message.key;
  if (message.tags) item.tags = message.tags;
  return item;
}
