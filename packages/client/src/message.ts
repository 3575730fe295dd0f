import {
  Headers,
  isPriority,
  type MessageItem,
  type Priority,
  parseHeaderBlock,
  splitTags,
} from "@mq9/protocol";
import { decodeItemPayload } from "./payload.js";

const decoder = new TextDecoder();

/**
 * One message as FETCH or QUERY returned it. Payload and headers are decoded on
 * first use, so a consumer that only looks at some fields pays for those only.
 */
export class Mq9Message {
  /** Increasing within the mailbox; the id to ACK or DELETE. */
  readonly msgId: number;
  readonly priority: Priority;
  /** Unix seconds at which the message was stored (for a delayed one: when it became due). */
  readonly createTime: number;
  /**
   * How many times the group has been handed this message, this time included (1 on first
   * delivery); undefined for a stateless fetch or a broker that does not count (an mq9 extension).
   */
  readonly deliveryCount: number | undefined;
  private readonly item: MessageItem;
  private decodedPayload: Uint8Array | undefined;
  private decodedHeaders: Record<string, string> | undefined;
  private headerBytes: Uint8Array | null | undefined;

  constructor(item: MessageItem) {
    this.item = item;
    this.msgId = item.msg_id;
    // A missing or unknown priority is normal, as every official SDK reads it.
    this.priority = typeof item.priority === "string" && isPriority(item.priority) ? item.priority : "normal";
    this.createTime = item.create_time ?? 0;
    this.deliveryCount = typeof item.delivery_count === "number" ? item.delivery_count : undefined;
  }

  /** The message bytes exactly as sent. */
  get payload(): Uint8Array {
    this.decodedPayload ??= this.item.payload_bytes ?? decodeItemPayload(this.item.payload ?? "");
    return this.decodedPayload;
  }

  /** The raw NATS header block of the SEND, or null when it was sent without one or fetched with `headerBytes: false`. */
  get header(): Uint8Array | null {
    if (this.headerBytes === undefined) {
      const item = this.item;
      // Raw header form: a view of the reply's bytes, as the payload is.
      this.headerBytes =
        item.header_bytes ?? (Array.isArray(item.header) ? Uint8Array.from(item.header) : null);
    }
    return this.headerBytes;
  }

  /** The SEND's headers by lowercased name (`mq9-priority`, `mq9-reply-to`, …). */
  get headers(): Record<string, string> {
    if (this.decodedHeaders === undefined) {
      const header = this.header;
      this.decodedHeaders = this.item.headers ?? (header ? Object.fromEntries(parseHeaderBlock(header)) : {});
    }
    return this.decodedHeaders;
  }

  /** The compaction key (`mq9-key`), if the message had one. */
  get key(): string | undefined {
    return this.item.key ?? this.headers[Headers.key];
  }

  /** The message's tags (`mq9-tags`); empty when it had none. */
  get tags(): string[] {
    if (this.item.tags) return this.item.tags;
    const raw = this.headers[Headers.tags];
    return raw === undefined ? [] : splitTags(raw);
  }

  /** The payload decoded as UTF-8 text. */
  text(): string {
    return decoder.decode(this.payload);
  }

  /** The payload parsed as JSON; throws a SyntaxError when it is not JSON. */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }
}
