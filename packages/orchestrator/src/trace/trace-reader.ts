import type { DeadLetters } from "@mq9/agent/internal";
import {
  type BusNames,
  decodeEnvelope,
  type Envelope,
  type MessageType,
  readEnvelope,
  traceTag,
} from "@mq9/agent/internal";
import { type Mq9Client, Mq9Error, type Mq9Message } from "@mq9/client";

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
  /** Messages in the whole trace; `messages` is the page asked for (all of them by default). */
  total: number;
  /** Where the next page starts, when there is one (`?offset=`). */
  next_offset?: number;
  messages: TraceEntry[];
}

/** What QUERY returns at most; a mailbox that gives that many may hold more of the trace. */
const QUERY_LIMIT = 100;
/** Messages per stateless FETCH when a mailbox is read through for a long trace. */
const SCAN_BATCH = 1_000;
/** Most messages one mailbox is read through for one trace. */
const SCAN_LIMIT = 200_000;

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

  /**
   * Every message of the trace found in `mailboxes` (plus the orchestrator's own), in time
   * order; `page` cuts one page out of it. A QUERY by the trace's tag returns the latest
   * 100 of a mailbox; when a mailbox gives that many, it is read through from `since` (unix
   * ms, the trace's start when known) so a long trace keeps its beginning.
   */
  async read(
    traceId: string,
    mailboxes: Iterable<string>,
    options: { since?: number; offset?: number; limit?: number } = {},
  ): Promise<TraceView | undefined> {
    const boxes = new Set([this.names.inbox, this.names.router, ...mailboxes]);
    const tag = traceTag(traceId);
    const found = await Promise.all(
      [...boxes].map(async (mailbox) => {
        try {
          const latest = await this.client.query(mailbox, { tags: [tag], limit: QUERY_LIMIT });
          const messages =
            latest.length < QUERY_LIMIT ? latest : await this.scan(mailbox, traceId, latest, options.since);
          return messages.flatMap((m) => {
            try {
              const envelope = readEnvelope(m);
              return envelope.trace_id === traceId ? [{ envelope, mailbox }] : [];
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
    const offset = Math.max(0, options.offset ?? 0);
    const limit = options.limit ?? messages.length;
    const page = messages.slice(offset, offset + limit);
    const view: TraceView = {
      trace_id: traceId,
      started_at: start,
      duration_ms: Math.round((when(entries[entries.length - 1]) - start) * 1000) / 1000,
      total: messages.length,
      messages: page,
    };
    if (offset + page.length < messages.length) view.next_offset = offset + page.length;
    return view;
  }

  /**
   * Reads a mailbox through (stateless FETCH, from the trace's start) for the messages of a
   * trace longer than one QUERY, keeping the ones QUERY found (the latest) as well.
   */
  private async scan(
    mailbox: string,
    traceId: string,
    latest: Mq9Message[],
    since?: number,
  ): Promise<Mq9Message[]> {
    const byId = new Map<number, Mq9Message>(latest.map((m) => [m.msgId, m]));
    const marker = `"trace_id":"${traceId}"`;
    let fromId: number | undefined;
    for (let read = 0; read < SCAN_LIMIT; ) {
      const batch = await this.client.fetch(mailbox, {
        ...(fromId === undefined
          ? since === undefined
            ? { deliver: "earliest" as const }
            : { deliver: "from_time" as const, fromTime: Math.max(0, Math.floor(since / 1000) - 1) }
          : { deliver: "from_id" as const, fromId }),
        batch: SCAN_BATCH,
        maxWaitMs: 0,
        headerBytes: false,
        headerMap: false,
      });
      if (batch.length === 0) break;
      read += batch.length;
      let last = fromId ?? 0;
      for (const m of batch) {
        last = Math.max(last, m.msgId);
        if (!byId.has(m.msgId) && m.text().includes(marker)) byId.set(m.msgId, m);
      }
      if (batch.length < SCAN_BATCH) break;
      fromId = last + 1;
    }
    return [...byId.values()];
  }
}
