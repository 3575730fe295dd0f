import type { MailboxRow, MailboxStatements } from "./sqlite-statements.js";
import type { MailboxRecord } from "./store.js";

/** Whether the mailbox has not expired at `nowMs`. */
export function isLive(row: MailboxRow, nowMs: number): boolean {
  return row.expires_ms === null || row.expires_ms > nowMs;
}

/** The record a mailbox row stands for. */
export function mailboxRecordOf(row: MailboxRow): MailboxRecord {
  return {
    address: row.address,
    ttlSeconds: row.ttl_s,
    desc: row.description,
    createdMs: row.created_ms,
    expiresMs: row.expires_ms ?? undefined,
    owner: row.owner ?? undefined,
    maxDeliver: row.max_deliver ?? undefined,
    deadLetter: row.dead_letter ?? undefined,
  };
}

/**
 * The mailboxes of the embedded store, their rows cached by address: the process owns the
 * database (an exclusive lock), so no one else changes them.
 */
export class MailboxRows {
  private readonly cache = new Map<string, MailboxRow>();

  constructor(private readonly stmt: MailboxStatements) {}

  /** The mailbox's row, live or expired; undefined when there is none. */
  row(address: string): MailboxRow | undefined {
    let row = this.cache.get(address);
    if (!row) {
      row = this.stmt.byAddress.get(address);
      if (row) this.cache.set(address, row);
    }
    return row;
  }

  /** The mailbox's row while it is live. */
  live(address: string, nowMs: number): MailboxRow | undefined {
    const row = this.row(address);
    return row && isLive(row, nowMs) ? row : undefined;
  }

  insert(record: MailboxRecord): void {
    this.stmt.insert.run(
      record.address,
      record.ttlSeconds,
      record.desc,
      record.createdMs,
      record.expiresMs ?? null,
      record.owner ?? null,
      record.maxDeliver ?? null,
      record.deadLetter ?? null,
    );
  }

  /** Deletes the mailbox's row (its contents are the caller's). */
  remove(row: MailboxRow): void {
    this.stmt.remove.run(row.id);
    this.cache.delete(row.address);
  }
}
