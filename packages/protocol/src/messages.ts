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
export const DELIVER_POLICIES: readonly DeliverPolicy[] = ["earliest", "latest", "from_time", "from_id"];

export interface FetchConfig {
  num_msgs?: number;
  max_wait_ms?: number;
  /** How long a delivered, un-ACKed message stays with this member of the group. */
  lease_ms?: number;
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
  config?: FetchConfig;
}

/** One message as FETCH and QUERY return it. */
export interface MessageItem {
  msg_id: number;
  /** Standard base64 (with padding) of the stored bytes. */
  payload: string;
  priority: Priority;
  /**
   * Raw NATS header block of the SEND as byte values, or null when sent without headers;
   * absent when the FETCH asked for `include_header: false`.
   */
  header?: number[] | null;
  /** Decoded header map (extra to the reference broker; ignored by SDKs that do not know it). */
  headers?: Record<string, string>;
  key?: string;
  tags?: string[];
  /** Unix seconds. */
  create_time: number;
}

export interface MessagesReply extends Mq9Reply {
  messages: MessageItem[];
}

export interface AckRequest {
  group_name: string;
  mail_address?: string;
  msg_id: number;
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
