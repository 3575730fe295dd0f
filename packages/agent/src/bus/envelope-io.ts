import type { Mq9Client, Mq9Message } from "@mq9/client";
import { decodeEnvelope, type Envelope, EnvelopeError, envelopeHeaders, mq9Priority } from "./envelope.js";
import { traceTag } from "./names.js";

/** Wall-clock unix ms with sub-millisecond precision, comparable across processes on one machine. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface SendEnvelopeOptions {
  /** Compaction key in the target mailbox. */
  key?: string;
  /** Seconds before the stored message expires; 0 or undefined: never. */
  ttl?: number;
  /** The target to put in the envelope as sent, when it differs from the envelope's (the router's choice). */
  target?: string;
}

/**
 * Puts an envelope in a mailbox: the JSON in the payload, the routing fields mirrored
 * in `mq9-*` headers, the envelope priority as the mq9 priority and the trace as a tag,
 * so plain mq9 tools (QUERY by tag, FETCH by priority) see what the orchestrator sees.
 * Returns the envelope as sent (with `sent_at`).
 */
export async function sendEnvelope(
  client: Mq9Client,
  mailbox: string,
  envelope: Envelope,
  options: SendEnvelopeOptions = {},
): Promise<Envelope> {
  const sent = stamped(envelope);
  if (options.target !== undefined) sent.target = options.target;
  const headers = envelopeHeaders(sent);
  if (sent.reply_to) headers["mq9-reply-to"] = sent.reply_to;
  await client.send(mailbox, JSON.stringify(sent), {
    // A hand-built envelope may carry the design's `deferred`, which mq9 spells `normal`.
    priority: mq9Priority(sent.priority),
    key: options.key,
    ttlSeconds: options.ttl ? options.ttl : undefined,
    tags: [traceTag(sent.trace_id)],
    headers,
  });
  return sent;
}

/** A copy of the envelope with `sent_at` now: the caller's stays as it was. */
function stamped(envelope: Envelope): Envelope {
  // A spread that adds a key its source lacks (a new envelope has no sent_at yet) builds the
  // copy on V8's slow path; copying first and adding the key after does not. A decoded
  // envelope has sent_at and spreads fast; one with an own `__proto__` key must be spread,
  // which copies that key as data where Object.assign would set the copy's prototype.
  if (envelope.sent_at !== undefined || Object.hasOwn(envelope, "__proto__")) {
    return { ...envelope, sent_at: preciseNow() };
  }
  const sent: Envelope = Object.assign({}, envelope);
  sent.sent_at = preciseNow();
  return sent;
}

/** Reads the envelope of a stored message; throws EnvelopeError when it is not one. */
export function readEnvelope(message: Mq9Message): Envelope {
  let body: unknown;
  try {
    body = message.json();
  } catch {
    throw new EnvelopeError(`msg_id ${message.msgId} is not JSON, so it cannot be an orchestrated message`);
  }
  return decodeEnvelope(body);
}
