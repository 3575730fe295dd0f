import { type Mq9Client, Mq9Error, type Mq9Message } from "@mq9/client";
import { Headers } from "@mq9/protocol";
import { decodeEnvelope, type Envelope } from "./envelope.js";
import { type BusNames, traceTag } from "./names.js";

/** A message nobody could take, and why. */
export interface DeadLetter {
  reason: string;
  /** Unix ms. */
  at: number;
  /** The message, when it was a readable envelope. */
  envelope?: Envelope;
  /** The message text, when it was not. */
  raw?: string;
  /** Its msg_id in the dead-letter mailbox. */
  id?: number;
}

/**
 * A dead letter as stored: one this bus wrote (a JSON letter), or a message the broker moved here
 * after its deliveries ran out (its own body, with `mq9-dlq-*` headers saying where and why).
 */
function letterOf(m: Mq9Message): DeadLetter {
  const h = m.headers;
  const from = h[Headers.dlqMailbox];
  if (from === undefined) return { ...m.json<DeadLetter>(), id: m.msgId };
  const letter: DeadLetter = {
    reason:
      h[Headers.dlqReason] ??
      `delivered ${h[Headers.dlqDeliveryCount] ?? "?"} times to group ${h[Headers.dlqGroup] ?? "?"} of ${from} without an ACK`,
    at: Number(h[Headers.dlqTime] ?? m.createTime) * 1000,
    id: m.msgId,
  };
  try {
    letter.envelope = decodeEnvelope(m.json());
  } catch {
    letter.raw = m.text();
  }
  return letter;
}

/** The dead-letter mailbox: undeliverable messages with their reason, readable by any mq9 tool. */
export class DeadLetters {
  constructor(
    private readonly client: Mq9Client,
    private readonly names: BusNames,
    private readonly ttlSeconds = 7 * 86_400,
  ) {}

  get mailbox(): string {
    return this.names.deadLetters;
  }

  /** Creates the mailbox unless it exists. */
  async ensureMailbox(): Promise<void> {
    await this.client.ensureMailbox({ name: this.mailbox });
  }

  /** Stores a dead letter; resolves with the letter as stored. */
  async put(reason: string, what: { envelope?: Envelope; raw?: string }): Promise<DeadLetter> {
    const letter: DeadLetter = { reason, at: Date.now(), ...what };
    const body = JSON.stringify(letter);
    const options = {
      ttlSeconds: this.ttlSeconds,
      tags: what.envelope ? [traceTag(what.envelope.trace_id), "dead"] : ["dead"],
      headers: { "mq9-dead-reason": reason.replace(/[\r\n]+/g, " ").slice(0, 500) },
    };
    try {
      await this.client.send(this.mailbox, body, options);
    } catch (err) {
      if (!(err instanceof Mq9Error) || err.code !== "MAILBOX_NOT_FOUND") throw err;
      await this.ensureMailbox();
      await this.client.send(this.mailbox, body, options);
    }
    return letter;
  }

  /** The most recent dead letters (at most 100), oldest first; of one trace when `traceId` is given. */
  async list(options: { limit?: number; traceId?: string } = {}): Promise<DeadLetter[]> {
    try {
      const messages = await this.client.query(this.mailbox, {
        limit: Math.min(options.limit ?? 100, 100),
        tags: options.traceId ? [traceTag(options.traceId)] : undefined,
      });
      return messages.map((m) => letterOf(m));
    } catch (err) {
      if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return [];
      throw err;
    }
  }
}
