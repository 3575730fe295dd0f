import type { Priority } from "./priority.js";

/** The envelope every mq9 reply shares: `error` is "" on success. */
export interface Mq9Reply {
  error: string;
  /**
   * mq9 extension: the stable code of a failure (an `Mq9ErrorCode`), next to its unchanged text.
   * Absent on success, and in the replies of brokers that do not send it.
   */
  code?: string;
}

export interface MailboxCreateRequest {
  name?: string;
  /** Seconds; 0 or absent: the mailbox never expires. */
  ttl?: number;
  desc?: string;
  /**
   * mq9 extension: the default for the mailbox's groups of how many times a message is delivered
   * before it goes to the dead-letter mailbox (0 or absent: no limit).
   */
  max_deliver?: number;
  /** mq9 extension: where this mailbox's dead letters go; default `<mail_address>.dlq`. */
  dead_letter?: string;
}
export interface MailboxCreateReply extends Mq9Reply {
  mail_address: string;
}

export interface SendReply extends Mq9Reply {
  /** -1 for a delayed message, which gets its real id when it becomes due. */
  msg_id: number;
  /** True when the SEND repeated an idempotency key within the dedup window: nothing was stored, `msg_id` is the original's. */
  duplicate?: boolean;
}

export type DeliverPolicy = "earliest" | "latest" | "from_time" | "from_id";

/**
 * How a FETCH reply carries payloads: "base64" in each item (the reference form), or "raw" (an
 * mq9 extension): the bytes after the reply's JSON, see FetchRequest.payload_format.
 */
export type PayloadFormat = "base64" | "raw";
export const PAYLOAD_FORMATS: readonly PayloadFormat[] = ["base64", "raw"];
/**
 * How a FETCH reply with raw payloads carries each header block: "json" as the item's `header`
 * byte list and `headers` map (the reference form), or "raw" (an mq9 extension): the block's bytes
 * after the reply's JSON, just before its payload, see FetchRequest.header_format.
 */
export type HeaderFormat = "json" | "raw";
export const HEADER_FORMATS: readonly HeaderFormat[] = ["json", "raw"];
export const DELIVER_POLICIES: readonly DeliverPolicy[] = ["earliest", "latest", "from_time", "from_id"];

export interface FetchConfig {
  num_msgs?: number;
  max_wait_ms?: number;
  /** How long a delivered, un-ACKed message stays with this member of the group. */
  lease_ms?: number;
  /**
   * mq9 extension, remembered by the group: a message whose lease runs out (or is NAKed) for the
   * max_deliver-th time goes to the dead-letter mailbox instead of back to the group (0: no limit).
   */
  max_deliver?: number;
  /**
   * mq9 extension, remembered by the group: how long a message waits before it is delivered again
   * after its n-th failure (the n-th entry; the last one repeats). Milliseconds.
   */
  backoff_ms?: number[];
}

export interface FetchRequest {
  /** Absent, null or "": a stateless fetch that stores no position. */
  group_name?: string | null;
  deliver?: DeliverPolicy;
  from_time?: number;
  from_id?: number;
  force_deliver?: boolean;
  /**
   * false: items leave out the raw `header` bytes and carry only the decoded `headers`
   * map (an mq9 extension that halves the reply of header-heavy messages; default true).
   */
  include_header?: boolean;
  /**
   * false: items leave out the decoded `headers` map (an mq9 extension, for consumers
   * that read only the payload; default true).
   */
  include_headers?: boolean;
  /** mq9 extension: the consumer's name, shown with the leases it holds (default: its connection's name). */
  member?: string;
  /**
   * mq9 extension: "raw" asks for the lean reply: each item carries `payload_len` instead of a
   * base64 `payload`, and the payloads follow the JSON after one newline, back to back in item
   * order. Default "base64" (the reference form); a broker that does not know it answers that.
   */
  payload_format?: PayloadFormat;
  /**
   * mq9 extension, with payload_format "raw" only: "raw" sends each header block as bytes after
   * the JSON, just before its payload; the item carries `header_len` instead of `header` and
   * `headers`. Default "json"; a broker that does not know it answers that.
   */
  header_format?: HeaderFormat;
  config?: FetchConfig;
}

/** One message as FETCH and QUERY return it. */
export interface MessageItem {
  msg_id: number;
  /** Standard base64 (with padding) of the stored bytes; "" in a raw reply (see `payload_bytes`). */
  payload: string;
  /** Raw reply (FetchRequest.payload_format "raw"): how many payload bytes follow for this item. */
  payload_len?: number;
  /** Set by decodeMessagesReply from a raw reply: the payload itself (never on the wire). */
  payload_bytes?: Uint8Array;
  priority: Priority;
  /**
   * Raw NATS header block of the SEND as byte values, or null when sent without headers;
   * absent when the FETCH asked for `include_header: false`.
   */
  header?: number[] | null;
  /**
   * Raw header form (FetchRequest.header_format "raw"): how many bytes of header block follow for
   * this item, just before its payload; absent for a message sent without headers.
   */
  header_len?: number;
  /** Set by decodeMessagesReply from a raw header form: the header block itself (never on the wire). */
  header_bytes?: Uint8Array;
  /** Decoded header map (extra to the reference broker; ignored by SDKs that do not know it). */
  headers?: Record<string, string>;
  key?: string;
  tags?: string[];
  /** Unix seconds. */
  create_time: number;
  /** mq9 extension: how many times the group has been handed this message, this time included (FETCH with a group). */
  delivery_count?: number;
}

export interface MessagesReply extends Mq9Reply {
  messages: MessageItem[];
}

export interface AckRequest {
  group_name: string;
  mail_address?: string;
  msg_id: number;
}

/**
 * mq9 extension (`$mq9.AI.MSG.NAK.<mail_address>`): the consumer gives a message back without waiting
 * for its lease: delivered again after `delay_ms` (default: the group's backoff, else at once), or,
 * `terminal`, straight to the dead-letter mailbox.
 */
export interface NakRequest {
  group_name: string;
  msg_id: number;
  reason?: string;
  delay_ms?: number;
  terminal?: boolean;
}

/**
 * mq9 extension (`$mq9.AI.MSG.RETRY.<dead_letter_mailbox>`): moves dead letters back to the mailbox
 * they came from: one (`msg_id`) or all.
 */
export interface RetryRequest {
  msg_id?: number;
}

export interface RetryReply extends Mq9Reply {
  retried: number;
}

export interface QueryRequest {
  key?: string;
  tags?: string[];
  /** Unix seconds; only messages created strictly after it. */
  since?: number;
  limit?: number;
}

export interface DeleteReply extends Mq9Reply {
  deleted: boolean;
}
