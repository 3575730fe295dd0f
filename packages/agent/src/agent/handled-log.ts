import type { Mq9Client } from "@mq9/client";
import { SeenMessages } from "../bus/loop-guard.js";

interface Batch {
  ids: string[];
  done: Promise<void>;
  settle(error?: Error): void;
}

function newBatch(): Batch {
  let settle!: (error?: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  // Nobody may be waiting yet when it fails; the waiters that come get the rejection.
  done.catch(() => undefined);
  return { ids: [], done, settle };
}

/** Notes per FETCH page when reading the log back. */
const PAGE = 100;

/**
 * The msg_ids an agent handled that left no answer to find in the asker's mailbox (no
 * `reply_to`, or nothing returned), kept in a mailbox of the agent's own for a window, so
 * that a restarted instance, or another instance taking a redelivery, does not handle them
 * again. Notes are written in batches: one SEND per batch, the next batch gathering while
 * the previous one is in flight, so a busy agent pays one SEND for many messages.
 */
export class HandledLog {
  private current = newBatch();
  private flushing = false;
  private readonly known = new SeenMessages();
  /** The next msg_id of the log mailbox not read yet. */
  private readFrom = 0;
  private reading?: Promise<void>;

  constructor(
    private readonly client: Mq9Client,
    private readonly mailbox: string,
    private readonly ttlSeconds: number,
  ) {}

  /** Notes a handled msg_id; resolves once the note is stored. */
  note(msgId: string): Promise<void> {
    this.known.firstTime(msgId);
    const batch = this.current;
    batch.ids.push(msgId);
    if (!this.flushing) void this.flush();
    return batch.done;
  }

  /** Whether a msg_id was noted, by this instance or (read from the log) by any other. */
  async has(msgId: string): Promise<boolean> {
    if (this.known.has(msgId)) return true;
    this.reading ??= this.readNew().finally(() => {
      this.reading = undefined;
    });
    await this.reading;
    return this.known.has(msgId);
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.current.ids.length > 0) {
        const batch = this.current;
        this.current = newBatch();
        try {
          await this.client.send(this.mailbox, { msg_ids: batch.ids }, { ttlSeconds: this.ttlSeconds });
          batch.settle();
        } catch (err) {
          batch.settle(err as Error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Reads the notes stored since the last read (stateless FETCH, page by page). */
  private async readNew(): Promise<void> {
    for (;;) {
      const page = await this.client.fetch(this.mailbox, {
        deliver: "from_id",
        fromId: this.readFrom,
        batch: PAGE,
        maxWaitMs: 0,
      });
      for (const message of page) {
        this.readFrom = Math.max(this.readFrom, message.msgId + 1);
        for (const id of notedIds(message.text())) this.known.firstTime(id);
      }
      if (page.length < PAGE) return;
    }
  }
}

/** The msg_ids of one note; anything else found in the mailbox notes nothing. */
function notedIds(text: string): string[] {
  try {
    const ids = (JSON.parse(text) as { msg_ids?: unknown } | null)?.msg_ids;
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
  } catch {
    return [];
  }
}
