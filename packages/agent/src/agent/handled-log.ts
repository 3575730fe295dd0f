import type { Mq9Client } from "@mq9/client";
import { SeenMessages } from "../bus/loop-guard.js";

/** Notes per FETCH page when reading the log back. */
const PAGE = 100;

/** Most msg_ids per note; a fuller batch is written at once. */
const BATCH = 512;
/** Longest a handled msg_id waits to be written. */
const PACE_MS = 100;

/**
 * The msg_ids an agent handled that left no answer to find in the asker's mailbox (no
 * `reply_to`, or nothing returned), kept in a mailbox of the agent's own for a window, so
 * that a restarted instance, or another instance taking a redelivery, does not handle them
 * again. Notes are written in batches, at most one SEND per PACE_MS (or per BATCH ids) and
 * at stop, so a busy agent pays one SEND for many messages. A note does not hold back the
 * message's ACK: a crash before it is written can only lose notes of messages that were
 * ACKed, which are not delivered again.
 */
export class HandledLog {
  private pending: string[] = [];
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private readonly known = new SeenMessages();
  /** The next msg_id of the log mailbox not read yet. */
  private readFrom = 0;
  private reading?: Promise<void>;

  constructor(
    private readonly client: Mq9Client,
    private readonly mailbox: string,
    private readonly ttlSeconds: number,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Notes a handled msg_id; it is written with the next batch. */
  note(msgId: string): void {
    this.known.firstTime(msgId);
    this.pending.push(msgId);
    if (this.pending.length >= BATCH) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), PACE_MS);
      this.timer.unref();
    }
  }

  /** Writes what is noted and not written yet; resolves once it is stored. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const ids = this.pending;
    this.pending = [];
    if (ids.length > 0) {
      this.writing = this.writing.then(() =>
        this.client.send(this.mailbox, { msg_ids: ids }, { ttlSeconds: this.ttlSeconds }).then(
          () => undefined,
          (err: Error) =>
            this.onError(new Error(`could not note ${ids.length} handled messages: ${err.message}`)),
        ),
      );
    }
    return this.writing;
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
