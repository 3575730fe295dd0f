import type Database from "better-sqlite3";

interface Remembered {
  id: number;
  untilMs: number;
}

/**
 * The SQLite store's idempotency keys while it runs: which msg_id each mailbox's key stands for,
 * until when. SENDs are durable in the message log before their rows reach SQLite, so a repeat
 * is found here, not in `send_keys`; that table (written with the rows, from the same log
 * records) fills this at the next start. Keys go in the order their windows end (one window for
 * all), so a sweep takes them from the front.
 */
export class SendKeys {
  private readonly byMailbox = new Map<number, Map<string, Remembered>>();
  /** Every key remembered, oldest first; entries of dropped mailboxes or re-used keys are skipped. */
  private queue: { mbox: number; key: string; untilMs: number }[] = [];
  private head = 0;

  /** The msg_id the key stands for in the mailbox, while its window lasts. */
  lookup(mbox: number, key: string, nowMs: number): number | undefined {
    const found = this.byMailbox.get(mbox)?.get(key);
    return found !== undefined && found.untilMs > nowMs ? found.id : undefined;
  }

  remember(mbox: number, key: string, id: number, untilMs: number): void {
    let keys = this.byMailbox.get(mbox);
    if (keys === undefined) {
      keys = new Map();
      this.byMailbox.set(mbox, keys);
    }
    keys.set(key, { id, untilMs });
    this.queue.push({ mbox, key, untilMs });
  }

  /** Loads the keys SQLite holds whose window has not ended (at open, after the log's replay). */
  load(db: Database.Database, nowMs: number): void {
    const rows = db
      .prepare<[number], { mbox: number; id_key: string; msg_id: number; until_ms: number }>(
        "SELECT mbox, id_key, msg_id, until_ms FROM send_keys WHERE until_ms > ? ORDER BY until_ms",
      )
      .all(nowMs);
    for (const row of rows) this.remember(row.mbox, row.id_key, row.msg_id, row.until_ms);
  }

  forgetMailbox(mbox: number): void {
    this.byMailbox.delete(mbox);
  }

  /** Forgets the keys whose window has ended; memory stays bounded by the keys of one window. */
  sweep(nowMs: number): void {
    const queue = this.queue;
    while (this.head < queue.length && queue[this.head].untilMs <= nowMs) {
      const { mbox, key, untilMs } = queue[this.head++];
      const keys = this.byMailbox.get(mbox);
      const found = keys?.get(key);
      if (keys && found && found.untilMs === untilMs) {
        keys.delete(key);
        if (keys.size === 0) this.byMailbox.delete(mbox);
      }
    }
    if (this.head > 1024 && this.head * 2 > queue.length) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
  }
}
