import { type Mq9Client, Mq9Error } from "@mq9/client";
import { decodeEnvelope, type Envelope, type MessageType } from "../bus/envelope.js";
import { readEnvelope } from "../bus/envelope-io.js";
import { type BusNames, traceTag } from "../bus/names.js";
import type { DeadLetters } from "../routing/dead-letters.js";

/** One message of a trace as it sat in one mailbox. */
export interface TraceEntry {
  msg_id: string;
  msg_type: MessageType;
  source: string;
  target: string;
  /** The mailbox it was found in (a message the router forwarded appears in both). */
  mailbox: string;
  hops: number;
  created_at: number;
  /** Unix ms at which it was put in this mailbox. */
  sent_at: number;
  /** Milliseconds since the first message of the trace. */
  offset_ms: number;
  task_id?: string;
  step_id?: string;
  in_reply_to?: string;
  payload: unknown;
  /** Set for a dead letter: why nobody took it. */
  dead_reason?: string;
}

export interface TraceView {
  trace_id: string;
  started_at: number;
  duration_ms: number;
  messages: TraceEntry[];
}

/**
 * Reads a trace back from the messages themselves: every orchestrated message carries
 * its trace as an mq9 tag, so a QUERY by tag on the mailboxes it can be in finds it,
 * with no second write per message.
 */
export class TraceReader {
  constructor(
    private readonly client: Mq9Client,
    private readonly names: BusNames,
    private readonly deadLetters: DeadLetters,
  ) {}

  /** Every message of the trace found in `mailboxes` (plus the orchestrator's own), in time order. */
  async read(traceId: string, mailboxes: Iterable<string>): Promise<TraceView | undefined> {
    const boxes = new Set([this.names.inbox, this.names.router, ...mailboxes]);
    const tag = traceTag(traceId);
    const found = await Promise.all(
      [...boxes].map(async (mailbox) => {
        try {
          const messages = await this.client.query(mailbox, { tags: [tag], limit: 100 });
          return messages.flatMap((m) => {
            try {
              return [{ envelope: readEnvelope(m), mailbox }];
            } catch {
              return [];
            }
          });
        } catch (err) {
          if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return [];
          throw err;
        }
      }),
    );
    const entries: { envelope: Envelope; mailbox: string; dead?: string; at?: number }[] = found.flat();
    for (const letter of await this.deadLetters.list({ traceId })) {
      if (!letter.envelope) continue;
      try {
        entries.push({
          envelope: decodeEnvelope(letter.envelope),
          mailbox: this.deadLetters.mailbox,
          dead: letter.reason,
          at: letter.at,
        });
      } catch {
        // a dead letter that does not hold an envelope has no place in a trace
      }
    }
    if (entries.length === 0) return undefined;
    const when = (e: (typeof entries)[number]) => e.at ?? e.envelope.sent_at ?? e.envelope.created_at;
    entries.sort((a, b) => when(a) - when(b));
    const start = when(entries[0]);
    const messages = entries.map((e): TraceEntry => {
      const env = e.envelope;
      const entry: TraceEntry = {
        msg_id: env.msg_id,
        msg_type: env.msg_type,
        source: env.source,
        target: env.target,
        mailbox: e.mailbox,
        hops: env.hops,
        created_at: env.created_at,
        sent_at: when(e),
        offset_ms: Math.round((when(e) - start) * 1000) / 1000,
        payload: env.payload,
      };
      if (env.task_id) entry.task_id = env.task_id;
      if (env.step_id) entry.step_id = env.step_id;
      if (env.in_reply_to) entry.in_reply_to = env.in_reply_to;
      if (e.dead) entry.dead_reason = e.dead;
      return entry;
    });
    return {
      trace_id: traceId,
      started_at: start,
      duration_ms: Math.round((when(entries[entries.length - 1]) - start) * 1000) / 1000,
      messages,
    };
  }
}
