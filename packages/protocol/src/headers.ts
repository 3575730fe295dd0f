/** Header names interpreted by MSG.SEND (matched case-insensitively). */
export const Headers = {
  priority: "mq9-priority",
  key: "mq9-key",
  delay: "mq9-delay",
  ttl: "mq9-ttl",
  tags: "mq9-tags",
  /**
   * Idempotency key: a repeat of a SEND with it, within the broker's dedup window, stores nothing.
   * Not `mq9-msg-id`: the orchestrator's envelopes carry their own message id under that name,
   * and an envelope handed to the router again must reach it (its loop guard counts on that).
   */
  idempotencyKey: "mq9-idempotency-key",
  /** The same, by the name nats users know from JetStream; mq9-idempotency-key wins when both are given. */
  natsMsgId: "nats-msg-id",
  /**
   * Set by the broker on a dead letter (mq9 extension): where and to whom it was delivered, how
   * often, why it failed last, and its id there. MSG.RETRY reads `mq9-dlq-mailbox` to send it back.
   */
  dlqMailbox: "mq9-dlq-mailbox",
  dlqGroup: "mq9-dlq-group",
  dlqMsgId: "mq9-dlq-msg-id",
  dlqDeliveryCount: "mq9-dlq-delivery-count",
  dlqReason: "mq9-dlq-reason",
  dlqTime: "mq9-dlq-time",
  /** Conventions of A2A over mq9; opaque to the broker. */
  replyTo: "mq9-reply-to",
  a2aMethod: "mq9-a2a-method",
  a2aType: "mq9-a2a-type",
  a2aLast: "mq9-a2a-last",
  a2aTaskId: "mq9-a2a-task-id",
  /** W3C trace context (https://www.w3.org/TR/trace-context/): kept with a message like any other header. */
  traceparent: "traceparent",
  tracestate: "tracestate",
} as const;

const HEADER_VERSION_LINE = "NATS/1.0";
/** Shared: a decoder per call cost more than the parsing on the SEND path. */
const decoder = new TextDecoder();

/**
 * Reads a NATS header block (`NATS/1.0\r\nKey: Value\r\n...\r\n\r\n`) into a map
 * with lowercased keys. A later duplicate overwrites an earlier one.
 */
export function parseHeaderBlock(block: Uint8Array | string): Map<string, string> {
  const text = typeof block === "string" ? block : decoder.decode(block);
  const headers = new Map<string, string>();
  const lines = text.split("\r\n");
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === "") break;
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

/** A header name or value that can go into JSON text between quotes as it is. */
const PLAIN_JSON = /^[^"\\\u0000-\u001f\u007f-\uffff]*$/;

function jsonString(text: string): string {
  return PLAIN_JSON.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** A header map (as `parseHeaderBlock` returns it) as a JSON object. */
export function headerMapJson(headers: ReadonlyMap<string, string>): string {
  const members: string[] = [];
  for (const [name, value] of headers) members.push(`${jsonString(name)}:${jsonString(value)}`);
  return `{${members.join(",")}}`;
}

/** Builds a NATS header block from name/value pairs. */
export function encodeHeaderBlock(headers: Iterable<[string, string]>): Uint8Array {
  let text = `${HEADER_VERSION_LINE}\r\n`;
  for (const [name, value] of headers) text += `${name}: ${value}\r\n`;
  return new TextEncoder().encode(`${text}\r\n`);
}

/** Splits an `mq9-tags` value (`a, b,,c`) into its non-empty, trimmed tags. */
export function splitTags(value: string): string[] {
  // One array, not three: every tagged SEND (the orchestrator's carry a trace tag) passes here.
  const tags: string[] = [];
  let start = 0;
  while (start <= value.length) {
    let end = value.indexOf(",", start);
    if (end < 0) end = value.length;
    const tag = value.slice(start, end).trim();
    if (tag !== "") tags.push(tag);
    start = end + 1;
  }
  return tags;
}
