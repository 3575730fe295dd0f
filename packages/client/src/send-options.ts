import { Headers, Mq9Error, type Priority } from "@mq9/protocol";
import { type MsgHdrs, headers as natsHeaders } from "nats";

/** Options of one SEND; each becomes an `mq9-*` header. */
export interface SendOptions {
  /** Default normal. FETCH hands out critical, then urgent, then normal. */
  priority?: Priority;
  /** Compaction key: a newer message with the same key replaces the older one in this mailbox. */
  key?: string;
  /** Seconds before the message becomes visible; the reply's msgId is then -1. */
  delay?: number;
  /** Seconds after which the message expires unread. */
  ttl?: number;
  /** Tags that QUERY can filter on. */
  tags?: readonly string[];
  /** Further headers, e.g. `mq9-reply-to`; stored and returned with the message. */
  headers?: Readonly<Record<string, string>>;
}

function seconds(name: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      `${name} must be a whole, non-negative number of seconds, got ${value}`,
      {
        retryable: false,
      },
    );
  }
  return String(value);
}

/** The NATS headers for a SEND, or undefined when no option needs one (a plain PUB is cheaper). */
export function sendHeaders(options: SendOptions | undefined): MsgHdrs | undefined {
  if (!options) return undefined;
  const { priority, key, delay, ttl, tags, headers } = options;
  if (
    priority === undefined &&
    key === undefined &&
    delay === undefined &&
    ttl === undefined &&
    tags === undefined &&
    headers === undefined
  ) {
    return undefined;
  }
  const h = natsHeaders();
  if (headers) for (const [name, value] of Object.entries(headers)) h.set(name, value);
  if (priority !== undefined) h.set(Headers.priority, priority);
  if (key !== undefined) h.set(Headers.key, key);
  if (delay !== undefined) h.set(Headers.delay, seconds("delay", delay));
  if (ttl !== undefined) h.set(Headers.ttl, seconds("ttl", ttl));
  if (tags !== undefined && tags.length > 0) h.set(Headers.tags, tags.join(","));
  return h;
}
