import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import type { StoredMessage } from "./store.js";

/** The rows of one SEND group, whose ids run from `firstId` without gaps. */
interface Batch {
  firstId: number;
  rows: readonly AppendedRow[];
  bytes: number;
}

/** Payload and header bytes plus a rough allowance for the row itself. */
const ROW_OVERHEAD = 128;

/**
 * The most recently stored messages, up to a byte budget, oldest dropped
 * first. A claim right after a SEND (a consumer keeping up) finds its
 * messages here instead of reading each row and its bytes back. Kept as the
 * rows of each SEND group, not message by message: one entry per group,
 * and a message object is made only when one is read. Ids are never reused
 * and stored messages never change, so an entry of a message deleted since
 * is harmless: lookups start from ids the database still has.
 */
export class RecentMessages {
  private batches: Batch[] = [];
  /** Index of the oldest batch still kept (dropped ones are cut off in bulk). */
  private oldest = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * Keeps rows stored together, in id order; their payload and header must be bytes nobody
   * overwrites (views of the group's log record).
   */
  keep(rows: readonly AppendedRow[]): void {
    if (this.maxBytes <= 0 || rows.length === 0) return;
    let start = 0;
    for (let i = 1; i <= rows.length; i++) {
      // A gap in the ids starts another batch, so that ids map to places by subtraction.
      if (i < rows.length && rows[i].id === rows[i - 1].id + 1) continue;
      this.keepBatch(start === 0 && i === rows.length ? rows : rows.slice(start, i));
      start = i;
    }
  }

  get(id: number): StoredMessage | undefined {
    const batch = this.batchOf(id);
    if (batch === undefined) return undefined;
    const row = batch.rows[id - batch.firstId];
    return {
      id,
      priority: PRIORITIES[row.priority],
      key: row.key ?? undefined,
      tags: row.tags === null ? undefined : (JSON.parse(row.tags) as string[]),
      header: row.header ?? undefined,
      payload: row.payload,
      createdMs: row.createdMs,
      expiresMs: row.expiresMs ?? undefined,
    };
  }

  private keepBatch(rows: readonly AppendedRow[]): void {
    let bytes = 0;
    for (const row of rows) bytes += row.payload.length + (row.header?.length ?? 0) + ROW_OVERHEAD;
    this.batches.push({ firstId: rows[0].id, rows, bytes });
    this.bytes += bytes;
    while (this.bytes > this.maxBytes && this.oldest < this.batches.length) {
      this.bytes -= this.batches[this.oldest++].bytes;
    }
    if (this.oldest > 1024 && this.oldest * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.oldest);
      this.oldest = 0;
    }
  }

  /** The kept batch holding `id`: a binary search, batches being in id order. */
  private batchOf(id: number): Batch | undefined {
    let low = this.oldest;
    let high = this.batches.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const batch = this.batches[mid];
      if (id < batch.firstId) high = mid - 1;
      else if (id >= batch.firstId + batch.rows.length) low = mid + 1;
      else return batch;
    }
    return undefined;
  }
}
